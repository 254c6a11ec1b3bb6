/* threads.h - one run on an HTTP target split over N threads (`atr
 * replay llm --threads N`), each with its own event loop and client (a
 * share of the sessions, every N-th one), all on one clock (they start
 * together after every thread's warm-up), their records joined into one
 * result. */
#ifndef ATR_EXP_THREADS_H
#define ATR_EXP_THREADS_H

#include "exp/exp.h"

#define ATR_EXP_MAX_THREADS 256

struct atr_exp_threads {
    unsigned n;
    struct atr_exp_result parts[ATR_EXP_MAX_THREADS];
};

/* Runs cfg on the HTTP target t over th->n threads (2..ATR_EXP_MAX_THREADS):
 * thread k gets the sessions of cfg->keep (all without) whose rank among
 * them is k modulo n, and its share of cfg->max_concurrency (which must
 * be 0 or at least n) and of the connection pool. On 0, *out holds every
 * record (in no set order) and points into th; release both with atr_exp_threads_release. -1 with err set
 * (the first thread's error) when one failed; nothing to release then. */
int atr_exp_threads_run(struct atr_exp_threads *th, const struct atr_target *t,
                    const struct atr_exp_cfg *cfg, struct atr_exp_result *out,
                    struct atr_error *err);
void atr_exp_threads_release(struct atr_exp_threads *th, struct atr_exp_result *out);

#endif
