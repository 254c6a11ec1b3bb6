/* run.h - a workload's sessions through engine replicas in virtual time,
 * as a client would have sent them, under a runtime policy (atr sim run,
 * atr replay llm --target sim:GPU/MODEL).
 *
 * A session's first turn is sent at its scheduled start, each next turn
 * when the previous one finished plus its (scaled) think time; a DAG
 * session's turn once all its parent turns finished, at the latest parent
 * end plus the tool time after it (sched/workload.h), a failed parent
 * counting as finished. A turn whose session has one to come is marked for
 * the engine's KV retention (atr_engine_set_retain, --kv-retain). With
 * max_concurrency, a sent turn waits in a FIFO for a free slot, and the
 * wait is kept in its record (send_s -> start_s), as the real client does.
 * When a turn gets its slot the policy decides its replica and rewrites it
 * (src/policy/policy.h): a salted request has no prefix-cache keys, a
 * compacted one its new prompt length and ids, a capped one
 * min(recorded output, cap) output tokens.
 *
 * A turn whose prompt and output are longer than max_model_len gets a
 * failed record (ATR_SIM_CONTEXT_ERROR) at once, as the API server answers
 * 400 (atr_context_check, the rule `atr sim serve` applies), and its
 * session goes on with its next turn after the think time. A turn too long
 * for the KV cache stops the run with an error naming its trace and turn,
 * unless the engines have skip_oversized: then it is failed the same way
 * ("prompt too long for the KV cache"), as a client gets vLLM's error
 * response. A turn not over timeout_s after it got its slot fails
 * ("timeout", as the HTTP client's --timeout), and so does one whose
 * engine sent nothing for stall_timeout_s ("stall", --stall-timeout: the
 * server's answer begins at the slot, then each token comes): it leaves
 * its engine then, as vLLM aborts a request whose client went away.
 *
 * Memory: *out is malloc'd (caller frees); each record's chunk_s points
 * into its engine (atr_engine_token_times) and stays valid until that
 * engine is freed. The policy is borrowed. */
#ifndef ATR_SIM_RUN_H
#define ATR_SIM_RUN_H

#include <stddef.h>

#include "stats/metrics.h"
#include "policy/policy.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/engine.h"
#include "sim/frontend.h"

struct atr_sim_run_cfg {
    const struct atr_workload *workload;
    const double *starts;            /* per session, from atr_schedule_starts */
    const struct atr_schedule *schedule;
    unsigned max_concurrency;        /* 0 = unlimited */
    struct atr_policy *policy;       /* NULL: every request as recorded, to replica 0 */
    /* Optional: called as each turn ends, with the turns ended so far and
     * the workload's total (a display throttles itself). */
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
    /* Seconds of the server's front end per request (struct atr_profile's
     * frontend_s): a turn reaches its engine that much after it got its
     * slot, and its record counts from the slot, so TTFT and E2EL include
     * it and TPOT does not. */
    double frontend_s;
    /* Seconds per prompt token of tokenising it in the front end, which
     * each replica's does one prompt at a time, in the order they came:
     * in a burst, a turn also waits for the prompts before it. */
    double frontend_token_s;
    /* Prompt + output tokens a turn may have (the model's context
     * length); 0: no limit. */
    uint64_t max_model_len;
    /* Seconds from its slot after which a turn fails, as the HTTP client's
     * whole-request timeout; 0: none. */
    double timeout_s;
    /* Seconds without a token (from the slot, then from each token) after
     * which a turn fails, as the HTTP client's stall timeout; 0: none. */
    double stall_timeout_s;
    /* Optional: called as each turn gets its slot, with what the policy
     * decided to send (the decision and its ids live only for the call). */
    void (*on_decision)(void *ctx, const char *trace_id, size_t turn,
                        const struct atr_policy_decision *dec);
    void *decision_ctx;
    /* Optional: called with each turn's record as it is made (finish
     * order, just after on_progress), its token times set: a live copy
     * of the records (FILE.partial). The record and its chunk_s are valid
     * only for the call (the engine's log they point into moves). */
    void (*on_record)(void *ctx, const struct atr_llm_record *rec);
    void *record_ctx;
};

/* The errors of a turn that can never run, as failures_by_reason groups
 * them: the KV cache cannot hold it, or (without chunked prefill) it is
 * longer than the token budget of a step. */
#define ATR_SIM_OVERSIZED_ERROR "prompt too long for the KV cache"
#define ATR_SIM_OVER_BUDGET_ERROR "prompt longer than max_num_batched_tokens"
/* A turn past timeout_s or stall_timeout_s: the HTTP client's reasons. */
#define ATR_SIM_TIMEOUT_ERROR "timeout"
#define ATR_SIM_STALL_ERROR "stall"

/* Runs until every turn finished, over engines[0..n_engines) (the policy's
 * replicas). Records come in finish order. */
int atr_sim_run(struct atr_engine *const *engines, unsigned n_engines,
                const struct atr_sim_run_cfg *cfg, struct atr_llm_record **out, size_t *n_out,
                struct atr_error *err);

#endif
