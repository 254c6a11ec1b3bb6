/* workload.h - the llm turns of traces as sessions, the unit every LLM
 * driver replays (atr sim run, atr replay llm).
 *
 * A session is one trace: its llm steps in order, each with its prompt and
 * output length, its prefix block ids, and the recorded tool time between
 * it and the previous turn (the "think time" a session waits after a reply
 * before sending the next turn). Block ids are re-based to one block size
 * (the engine's, 16 by default): a trace recorded with larger blocks (e.g.
 * Mooncake's 512) has each id split into derived sub-block ids, so a shared
 * 512-token prefix is still shared as 32 blocks of 16; smaller blocks are
 * merged in groups. Derived ids keep prefix identity because the source ids
 * are chained hashes.
 *
 * Memory: the workload owns everything (malloc); atr_workload_release frees
 * it. */
#ifndef ATR_SCHED_WORKLOAD_H
#define ATR_SCHED_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct atr_turn {
    uint32_t prompt_tokens;      /* >= 1 */
    uint32_t output_tokens;      /* >= 1: the recorded reply length (forced on replay) */
    const uint64_t *ids;         /* prefix block ids in the workload's block size, or NULL;
                                    into one of the session's id_chains (read-only) */
    uint32_t n_ids;              /* never more than prompt_tokens / block_size */
    double think_s;              /* recorded tool time before this turn */
    const char *prev_tool;       /* tool of the last step before this turn, or NULL;
                                    one of the session's tools */
};

struct atr_session {
    char *trace_id;
    double offset_s;             /* trace start relative to the earliest trace */
    struct atr_turn *turns;
    size_t n_turns;
    /* The turns' block ids: a turn whose ids start with all of an earlier
     * turn's shares that turn's array (agent prompts repeat their history,
     * so a copy per turn would grow quadratically). */
    uint64_t **id_chains;
    size_t n_id_chains;
    /* The distinct tool names its turns point to (a copy a turn was 3 % of
     * a simulation's memory). */
    char **tools;
    size_t n_tools;
};

struct atr_workload {
    struct atr_session *sessions;
    size_t n_sessions;
    size_t n_turns;              /* over all sessions */
    uint32_t block_size;
};

#define ATR_WORKLOAD_INIT { NULL, 0, 0, 0 }

/* Reads every trace of paths[0..n) (format NULL: sniffed) into w, with
 * block ids re-based to block_size (0 = 16). Traces without llm steps give
 * empty sessions, which drivers skip. */
int atr_workload_load(struct atr_workload *w, char *const *paths, size_t n,
                      const char *format, uint32_t block_size, struct atr_error *err);
void atr_workload_release(struct atr_workload *w);

#endif
