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

#include <stdbool.h>
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
    /* DAG sessions only (atr_session.dag): the earlier turns it waits for,
     * all of them, and the recorded tool time after each (the longest tool
     * path from it): it is due when every parent's end plus that time has
     * passed. think_s is then the longest of those; n_parents 0: a root,
     * due at the session's start plus think_s (the first turn: at the
     * start, as a chain's). Into the session's dag_parents/dag_think_s.
     * Chains leave them NULL/0 and wait for the previous turn. */
    const uint32_t *parents;
    const double *parent_think_s;
    uint32_t n_parents;
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
    /* A trace whose steps name parents (atr-trace/1.1): its turns wait for
     * their parent turns, the nearest llm steps above them in the graph
     * (tool steps in between give think_s: the longest tool path from a
     * parent). Such a session may have several turns in flight; a driver
     * sends a turn once all its parents are over, plus think_s.
     * dag_parents holds every turn's parent list (owned). */
    bool dag;
    uint32_t *dag_parents;
    double *dag_think_s;
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

/* The turns turn k of s waits for: *out points at them (n returned), or
 * at *one holding k - 1 in a chain; 0 for a chain's first turn and a
 * DAG's roots. */
uint32_t atr_turn_parents(const struct atr_session *s, size_t k, uint32_t *one,
                          const uint32_t **out);

/* Where a driver is in one session: each turn's parents not over yet and
 * the latest end among those over, kept only for DAG sessions (a chain's
 * next turn is simply the one after). Memory: malloc'd by
 * atr_dag_state_init, freed by atr_dag_state_release. */
struct atr_dag_state {
    uint32_t *left;              /* per turn: parents not over */
    double *ready_s;             /* per turn: when it is due, from its parents over so far */
    uint32_t *child_at;          /* turn k's children: children[child_at[k]..child_at[k+1]) */
    uint32_t *children;
    double *child_think_s;       /* the tool time on each of those edges */
};

/* For a DAG session: every turn's count of parents; roots are ready. */
void atr_dag_state_init(struct atr_dag_state *st, const struct atr_session *s);
void atr_dag_state_release(struct atr_dag_state *st);
/* Turn k is over at end_s: writes into ready[] the turns that it made
 * ready (their parents all over), at most the session's turns, in turn
 * order, and returns how many. Each is due at ready_s[j]: the latest of
 * its parents' ends plus the tool time after each, times time_scale.
 * A failed turn is over too: its children go on, as a chain's next turn
 * does after a failure, so a session never waits forever. */
size_t atr_dag_turn_over(struct atr_dag_state *st, size_t k, double end_s, double time_scale,
                         uint32_t *ready);

#endif
