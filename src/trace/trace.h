/* trace.h - the in-memory form of one atr-trace v1 trace (docs/trace-format.md).
 *
 * Memory: a trace owns an arena; every string, step array, hash id list and
 * JSON node reachable from it is allocated there. atr_trace_clear empties the
 * trace for reuse (the reader's streaming loop), atr_trace_release frees it.
 * Readers fill one trace at a time, so memory is bounded by the largest trace. */
#ifndef ATR_TRACE_TRACE_H
#define ATR_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"

#define ATR_TRACE_FORMAT "atr-trace/1"
/* Written instead for a trace whose steps name parents or agents (a DAG):
 * readers of /1 would replay it as a chain without a word. */
#define ATR_TRACE_FORMAT_DAG "atr-trace/1.1"
#define ATR_UNSET INT64_MIN          /* an absent integer field */
#define ATR_DEFAULT_BLOCK_SIZE 16

/* Values of atr_step.tokens_from. */
#define ATR_TOKENS_RECORDED "recorded"
#define ATR_TOKENS_SCALED "scaled"
#define ATR_TOKENS_ESTIMATED "estimated"

enum atr_step_kind { ATR_STEP_LLM, ATR_STEP_TOOL };

struct atr_step {
    uint32_t i;                  /* index in the trace, 0-based, dense */
    enum atr_step_kind kind;
    int64_t t_ms, dur_ms;        /* observed start (relative to the trace) and duration */
    /* The steps this one waits for, indices below i, in the trace arena.
     * NULL: absent, the previous step (none for step 0), so a chain needs
     * none; non-NULL with n_parents 0: a root. atr_step_parents reads both. */
    uint32_t *parents;
    uint32_t n_parents;
    const char *agent;           /* the sub-agent it belongs to; NULL: the main agent */

    /* kind == llm */
    int64_t input_tokens, output_tokens, cached_tokens;
    uint64_t *hash_ids;          /* the full list in memory, unless read with compact_ids */
    uint32_t n_hash_ids;         /* the full list's length, always */
    /* compact_ids only: the full list is the first prefix_blocks ids of
     * step prefix_step's full list, then hash_ids[0..n_hash_ids -
     * prefix_blocks); 0 blocks = hash_ids is the full list. */
    uint32_t prefix_step, prefix_blocks;
    int64_t recorded_input_tokens, recorded_output_tokens; /* source's real counts
                                                  (old traces, proxy journals) */
    /* Where input_tokens/output_tokens came from: "recorded" (the source's
     * own usage), "scaled" (estimates scaled to the source's recorded
     * totals) or "estimated"; NULL when unknown (hand-made traces).
     * output_tokens_from only when the output's origin differs. Static
     * strings (ATR_TOKENS_*), never in the arena. */
    const char *tokens_from, *output_tokens_from;
    /* The estimator's figures beside recorded or scaled counts (what
     * `atr stats` measures its error with), ATR_UNSET otherwise. */
    int64_t estimated_input_tokens, estimated_output_tokens;
    int64_t max_tokens;          /* request's max_tokens when the source has it */

    /* kind == tool */
    const char *tool;            /* "bash", "editor", "browser", or the source's name */
    const char *command;         /* bash: the command line */
    const char *action;          /* editor/browser: "view", "str_replace", "click", ... */
    const char *path;            /* editor: the file */
    const char *file_op;         /* editor: create, overwrite, insert, replace, view */
    int64_t bytes, old_bytes;    /* editor: bytes the edit writes / a replace removes */
    const char *selector;        /* browser: element selector */
    const char *url;             /* browser: page url */
    const char *cwd;
    int64_t timeout_ms;
    int64_t exit_code;

    struct atr_json *messages;   /* llm: the real content, only with keep_content:
                                    messages added since the previous llm step */
    struct atr_json *output;     /* llm: the reply (STRING), only with keep_content */
    const char *command_head;    /* set by readers of redacted traces */
    struct atr_json *extra;      /* unknown fields, an OBJECT, kept through convert */
};

struct atr_trace {
    const char *trace_id;
    const char *source;          /* the reader that made it: "swe-agent", ... */
    int64_t start_ms;
    uint32_t block_size;
    struct atr_json *meta;       /* OBJECT or NULL */
    struct atr_json *extra;      /* unknown top-level fields, OBJECT or NULL */
    struct atr_step *steps;
    size_t n_steps, cap_steps;
    struct atr_arena arena;      /* owns everything above */
};

#define ATR_TRACE_INIT {0}

/* Appends a step with every integer field ATR_UNSET and i = its index.
 * The pointer is valid until the next atr_trace_add_step. */
struct atr_step *atr_trace_add_step(struct atr_trace *t, enum atr_step_kind kind);
void atr_trace_clear(struct atr_trace *t);
void atr_trace_release(struct atr_trace *t);

/* The steps s waits for: *out points at s->parents, or at *one holding
 * the previous step when parents are absent. Returns how many. */
uint32_t atr_step_parents(const struct atr_step *s, uint32_t *one, const uint32_t **out);
/* Whether any step names parents or an agent (the trace is a DAG). */
bool atr_trace_is_dag(const struct atr_trace *t);
/* Puts the steps in start order with every parent before its children:
 * of the steps whose parents are all placed, the one with the smallest
 * t_ms (ties: the earlier index) comes next; one that starts before a
 * parent is moved to that parent's start (a clock that runs backwards),
 * so t_ms never decreases. Renumbers i, parents and prefix references;
 * writes a parent list that is just the previous step as absent (NULL
 * parents on entry mean the previous step, as in the file). Steps without
 * t_ms count as starting with the step before them. Returns the number of
 * steps moved, or -1 when parents form a cycle: the trace is unchanged
 * and *cycle is a step on a cycle or after one. Scratch memory is malloc'd and freed. */
long atr_trace_order_steps(struct atr_trace *t, uint32_t *cycle);

/* Meta helpers: meta values are JSON nodes in the trace arena. */
void atr_trace_meta_set_str(struct atr_trace *t, const char *key, const char *val);
void atr_trace_meta_set_i64(struct atr_trace *t, const char *key, int64_t val);

/* The command head used by stats and sampling: the program name of a
 * command line ("pytest", "pip", "git", ...), skipping env assignments,
 * `cd X &&`, sudo, timeout, `python -m`. Writes at most cap-1 bytes. */
void atr_command_head(const char *command, char *out, size_t cap);

#endif
