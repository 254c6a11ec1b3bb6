/* llm-threads.h - `atr replay llm --threads N`: one run split over N
 * threads, each with its own event loop and client (a share of the
 * sessions, every N-th one), all on one clock (they start together after
 * every thread's warm-up), their records joined into one result. */
#ifndef ATR_CLI_LLM_THREADS_H
#define ATR_CLI_LLM_THREADS_H

#include "exp/exp.h"

#define LLM_MAX_THREADS 256

struct llm_threads {
    unsigned n;
    struct atr_exp_result parts[LLM_MAX_THREADS];
};

/* Runs cfg on the HTTP target t over th->n threads (2..LLM_MAX_THREADS):
 * thread k gets the sessions of cfg->keep (all without) whose rank among
 * them is k modulo n, and its share of cfg->max_concurrency (which must
 * be 0 or at least n) and of the connection pool. On 0, *out holds every record (in no set order) and
 * points into th; release both with llm_threads_release. -1 with err set
 * (the first thread's error) when one failed; nothing to release then. */
int llm_threads_run(struct llm_threads *th, const struct atr_target *t,
                    const struct atr_exp_cfg *cfg, struct atr_exp_result *out,
                    struct atr_error *err);
void llm_threads_release(struct llm_threads *th, struct atr_exp_result *out);

#endif
