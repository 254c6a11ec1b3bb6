/* sim-costs.h - the two iteration-cost fixtures of the engine's unit tests
 * (test-sim-engine.c, test-sim-radix.c): a constant cost per iteration and
 * one that adds a cost per computed token. Both are powers of two, so every
 * expected time is exact in binary floating point. */
#ifndef ATR_TEST_SIM_COSTS_H
#define ATR_TEST_SIM_COSTS_H

#include "sim/engine.h"

#define C0 (1.0 / 1024)       /* per-iteration cost */
#define CT (1.0 / 1048576)    /* per computed token */

static inline double cost_const(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    (void)w;
    return C0;
}

static inline double cost_tokens(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    return C0 + (double)(w->prefill_tokens + w->decode_seqs) * CT;
}

#endif
