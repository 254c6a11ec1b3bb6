/* policy.h - runtime policies for LLM serving of agent traffic
 * (docs/policies.md): which replica serves a request, how the request is
 * rewritten (prompt, max_tokens), and what the policy learns from the
 * answer. Used by `atr sim run` and `atr replay llm` (--policy NAME).
 *
 * Policies see metadata only, never content: token counts, prefix block
 * ids, turn position, tool names and times, output lengths of earlier
 * turns. The driver calls, per request:
 *   atr_policy_decide   -> a decision (replica, salt, prompt rewrite, cap)
 *   atr_policy_started  when the request is handed to its replica
 *   atr_policy_finished when it ended (output tokens, cached tokens)
 * Policies: naive, prefix-cache, prefix-route, compaction, max-tokens,
 * learned (src/policy/<name>.c).
 *
 * Memory: a policy owns its state; ids it returns in a decision stay valid
 * until atr_policy_finished for that request (or atr_policy_free). The
 * request's own ids are borrowed for the call. */
#ifndef ATR_POLICY_POLICY_H
#define ATR_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/workload.h"
#include "util/error.h"

/* What a policy may know of one request. */
struct atr_policy_req {
    uint64_t id;                 /* dense, in send order */
    size_t session;              /* workload index of its session */
    size_t turn;                 /* 0-based llm turn in the session */
    uint32_t prompt_tokens;      /* as recorded */
    const uint64_t *ids;         /* prefix block ids (block_size tokens each), may be NULL */
    uint32_t n_ids;
    uint32_t block_size;
    double now;                  /* driver clock, seconds */
    double think_s;              /* recorded tool time just before this turn */
    const char *prev_tool;       /* tool of the step before this turn, or NULL */
    double since_last_s;         /* now - the previous turn's end in this session (0 on turn 0) */
    uint32_t prev_output_tokens; /* output of the previous turn (0 on turn 0) */
    double mean_output_tokens;   /* mean output of the session's earlier turns (0 on turn 0) */
    /* The recorded output length: the truth a replay forces. Policies must
     * not decide from it (max-tokens reads it only to count truncations in
     * atr_policy_finished). */
    uint32_t recorded_output_tokens;
};

/* The decision; the driver fills the defaults (replica 0, no salt, the
 * request's own prompt and ids, no cap) before atr_policy_decide. */
struct atr_policy_decision {
    unsigned replica;            /* 0 .. n_replicas-1 */
    bool salt;                   /* make the prompt unique: no prefix reuse */
    uint32_t prompt_tokens;      /* after rewriting (compaction) */
    const uint64_t *ids;         /* after rewriting; see Memory */
    uint32_t n_ids;
    uint32_t max_tokens;         /* output cap sent (max-tokens); 0 = none */
    int delegate;                /* learned: index in atr_policy_names it chose; else -1 */
};

/* How a request ended, for atr_policy_finished. */
struct atr_policy_outcome {
    bool success;
    uint32_t output_tokens;      /* produced (from usage) */
    uint32_t cached_tokens;
    double ttft_s, e2el_s;
};

struct atr_policy_cfg {
    unsigned n_replicas;         /* >= 1 */
    uint32_t block_size;         /* of the ids, 16 */
    /* Policy options, "key=value,key=value" (e.g. "budget=8192"), or NULL;
     * unknown keys are an error naming the known ones. "name.key=value"
     * applies to policy `name` only (e.g. "compaction.budget=8192"). */
    const char *options;
    uint64_t seed;
};

/* Counters every policy reports (zero where they do not apply). */
struct atr_policy_stats {
    uint64_t requests;
    uint64_t salted;             /* naive */
    uint64_t tokens_saved;       /* compaction: prompt tokens removed */
    uint64_t compactions;        /* compaction: times a session was compacted */
    uint64_t blocks_invalidated; /* compaction: cached blocks its rewrites made unusable */
    uint64_t truncated;          /* max-tokens: requests whose cap was below the recorded output */
    uint64_t tokens_cut;         /* max-tokens: output tokens lost to the cap */
    uint64_t reserved_tokens;    /* max-tokens: sum of caps sent */
    uint64_t reserve_saved;      /* max-tokens: sum of (default reservation - cap) */
    uint64_t routed_by_match;    /* prefix-route: sent to the best prefix match */
    uint64_t routed_by_load;     /* prefix-route: sent to the least loaded */
    uint64_t per_delegate[8];    /* learned: decisions per policy (atr_policy_names order) */
};

/* What a driver keeps of each session for its policy requests. */
struct atr_session_history {
    double last_end;             /* end of the previous turn */
    uint32_t last_output;        /* its output tokens */
    double output_sum;           /* over the session's finished turns */
};

/* Fills r for turn `turn` of session `session` of w at time now, and d with
 * the defaults (replica 0, no salt, the turn's own prompt and ids, no cap).
 * r borrows the workload's ids and strings. */
void atr_policy_request_init(struct atr_policy_req *r, struct atr_policy_decision *d,
                             const struct atr_workload *w, size_t session, size_t turn,
                             const struct atr_session_history *h, uint64_t id, double now);
/* Records a finished turn of the session. */
void atr_session_history_add(struct atr_session_history *h, double end, uint32_t output);

struct atr_policy;

/* NULL-terminated, in this order: naive, prefix-cache, prefix-route,
 * compaction, max-tokens, learned. */
extern const char *const atr_policy_names[];

/* NULL with err set for an unknown name or bad options. */
struct atr_policy *atr_policy_new(const char *name, const struct atr_policy_cfg *cfg,
                                  struct atr_error *err);
void atr_policy_free(struct atr_policy *p);
const char *atr_policy_name(const struct atr_policy *p);

/* Checks, before a run, that the policies names[0..n) can be made with
 * options (atr_policy_cfg.options): known names, known keys, values in
 * range, and every "name.key=value" naming one of them (it would be
 * ignored otherwise). 0, or -1 with err set. */
int atr_policy_check(const char *const *names, size_t n, const char *options,
                     struct atr_error *err);

void atr_policy_decide(struct atr_policy *p, const struct atr_policy_req *r,
                       struct atr_policy_decision *d);
void atr_policy_started(struct atr_policy *p, const struct atr_policy_req *r,
                        const struct atr_policy_decision *d);
void atr_policy_finished(struct atr_policy *p, const struct atr_policy_req *r,
                         const struct atr_policy_decision *d,
                         const struct atr_policy_outcome *o);
void atr_policy_get_stats(const struct atr_policy *p, struct atr_policy_stats *out);

/* The members "policy": NAME and "policy_stats": {...} of a result's "atr"
 * object (every counter; "delegates" only for the learned policy). */
struct atr_jw;
void atr_policy_stats_write(struct atr_jw *w, const char *name, const struct atr_policy_stats *s);

/* Requests in flight on each replica, as seen through started/finished. */
const uint32_t *atr_policy_load(const struct atr_policy *p);

#endif
