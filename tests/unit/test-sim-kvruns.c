/* test-sim-kvruns.c - the KV cache kept as runs (sim/kvruns.c) against the
 * same cache kept block by block (block_cache), vLLM's and SGLang's
 * flavours (one in three seeds): seeded random workloads
 * built to hit the hard cases - prompts that repeat, share prefixes of any
 * length or contain one another, requests prefilling the same blocks at
 * once (vLLM's private duplicates), a cache small enough to evict and
 * preempt all the time, chunked prefill or V0's prefill-first scheduler
 * with multi-step windows, prompts whose ids stop before their last
 * blocks, aborts - must give every request the same times,
 * cached tokens and preemptions, and the engine the same figures. Ids
 * that are not chains (a hostile trace) may simulate differently, but
 * must still run every request to its end and give every block back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"

struct rng {
    uint64_t x;
};

static uint64_t rnd(struct rng *g)
{
    g->x ^= g->x << 13;
    g->x ^= g->x >> 7;
    g->x ^= g->x << 17;
    return g->x;
}

static uint32_t rnd_below(struct rng *g, uint32_t n)
{
    return (uint32_t)(rnd(g) % n);
}

/* A cost that depends on everything in the batch, so that any difference
 * in scheduling shows in the times. */
static double cost(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    return 1e-3 + 1e-6 * (double)w->prefill_tokens + 2e-5 * (double)w->decode_seqs +
           1e-8 * (double)(w->decode_ctx_tokens + w->prefill_ctx_tokens);
}

#define MAX_REQS 160
#define MAX_IDS 96

struct workload {
    uint32_t n;
    uint64_t ids[MAX_REQS][MAX_IDS];   /* each request's own chain */
    struct atr_sim_req q[MAX_REQS];
    double abort_at[MAX_REQS];         /* 0: never */
};

/* Prompts as paths in a random tree of ids: each starts as a prefix of an
 * earlier prompt (its whole, a part, or nothing) and goes on with fresh
 * ids, so equal ids always have equal prefixes (chained, as vLLM's). */
static void workload_make(struct workload *w, uint64_t seed)
{
    struct rng g = { seed * 0x9e3779b97f4a7c15ULL + 1 };
    w->n = 40 + rnd_below(&g, MAX_REQS - 40);
    double t = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        uint32_t blocks = 1 + rnd_below(&g, MAX_IDS - 2), shared = 0;
        if (i > 0 && rnd_below(&g, 4)) {
            uint32_t from = rnd_below(&g, i);
            uint32_t len = (uint32_t)w->q[from].n_hash_ids;
            shared = rnd_below(&g, 3) ? len : rnd_below(&g, len + 1);
            if (shared > blocks) {                     /* the same, or a little more */
                blocks = shared + rnd_below(&g, 3);
                blocks = blocks < MAX_IDS ? blocks : MAX_IDS;
            }
            memcpy(w->ids[i], w->ids[from], shared * sizeof(uint64_t));
        }
        for (uint32_t k = shared; k < blocks; k++)
            w->ids[i][k] = rnd(&g);
        uint32_t tokens = blocks * 16 - rnd_below(&g, 16);   /* last block partial */
        uint32_t n_ids = rnd_below(&g, 8) ? tokens / 16 : rnd_below(&g, tokens / 16 + 1);
        if (rnd_below(&g, 3))           /* bursts: many arrive at the same time */
            t += (double)rnd_below(&g, 40) * 1e-3;
        w->q[i] = (struct atr_sim_req){
            .id = i, .arrival = t, .prompt_tokens = tokens,
            .output_tokens = 1 + rnd_below(&g, 60),
            .hash_ids = w->ids[i], .n_hash_ids = n_ids,
        };
        w->abort_at[i] = rnd_below(&g, 12) == 0 ? t + (double)rnd_below(&g, 200) * 1e-3 : 0;
    }
}

struct config {
    uint64_t kv_tokens;
    unsigned max_seqs, max_batched;
    bool no_chunked, no_prefix;
    bool sglang;                /* radix cache and longest-prefix-first */
    bool prefill_first;         /* V0's scheduler (no chunking only) */
    unsigned steps;             /* multi-step windows (prefill_first only) */
};

static struct config config_make(uint64_t seed)
{
    struct rng g = { seed * 0xd1b54a32d192ed03ULL + 7 };
    struct config c = { 0 };
    c.kv_tokens = 16 * (100 + rnd_below(&g, 900));     /* tight: evicts, preempts */
    c.max_seqs = 4 + rnd_below(&g, 60);
    c.max_batched = 256 + 16 * rnd_below(&g, 200);
    c.no_chunked = rnd_below(&g, 5) == 0;
    if (c.no_chunked && c.max_batched < MAX_IDS * 16 + 64)
        c.max_batched = MAX_IDS * 16 + 64;
    c.no_prefix = rnd_below(&g, 10) == 0;
    c.sglang = rnd_below(&g, 3) == 0;
    /* drawn last, so the fields above are what they were for every seed */
    c.prefill_first = c.no_chunked && rnd_below(&g, 2);
    c.steps = c.prefill_first && rnd_below(&g, 2) ? 2 + rnd_below(&g, 7) : 1;
    return c;
}

/* Runs w under c, aborting as w says, and appends every figure to out. */
static void run(const struct workload *w, const struct config *c, bool blocks, double *out,
                size_t *n_out)
{
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = c->kv_tokens;
    cfg.max_num_seqs = c->max_seqs;
    cfg.max_num_batched_tokens = c->max_batched;
    cfg.chunked_prefill = !c->no_chunked;
    cfg.prefix_caching = !c->no_prefix;
    cfg.radix_cache = cfg.longest_prefix_first = c->sglang;
    cfg.prefill_first = c->prefill_first;
    cfg.num_scheduler_steps = c->steps;
    cfg.skip_oversized = true;
    cfg.block_cache = blocks;
    struct atr_error err;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    const struct atr_sim_record *rec[MAX_REQS];
    for (uint32_t i = 0; i < w->n; i++)
        assert_non_null(rec[i] = atr_engine_add(e, &w->q[i], &err));
    for (uint32_t i = 0; i < w->n; i++) {       /* aborts, in arrival order */
        if (w->abort_at[i] == 0)
            continue;
        assert_int_equal(atr_engine_run_until(e, w->abort_at[i], &err), 0);
        assert_int_equal(atr_engine_abort(e, rec[i]), 0);
    }
    assert_int_equal(atr_engine_run_until(e, 1e30, &err), 0);
    size_t n = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        const struct atr_sim_record *r = rec[i];
        out[n++] = r->cached_tokens;
        out[n++] = r->preemptions;
        out[n++] = r->tokens_done;
        out[n++] = r->first_scheduled;
        out[n++] = r->first_token;
        out[n++] = r->finish;
        out[n++] = r->aborted;
        const double *times = atr_engine_token_times(e, r);
        for (uint32_t k = 0; k < r->tokens_done; k++)
            out[n++] = times[k];
    }
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    out[n++] = (double)st.iterations;
    out[n++] = (double)st.preemptions;
    out[n++] = (double)st.evictions;
    out[n++] = (double)st.cached_tokens;
    out[n++] = (double)st.prefill_tokens;
    out[n++] = st.kv_blocks_peak;
    out[n++] = st.kv_blocks_mean;
    *n_out = n;
    atr_engine_free(e);
}

#define SEEDS 1000
#define MAX_FIGURES (MAX_REQS * (8 + 64) + 16)

static void test_runs_equal_blocks(void **state)
{
    (void)state;
    static struct workload w;
    static double a[MAX_FIGURES], b[MAX_FIGURES];
    uint64_t evictions = 0, preemptions = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        workload_make(&w, seed);
        struct config c = config_make(seed);
        size_t na, nb;
        run(&w, &c, false, a, &na);
        run(&w, &c, true, b, &nb);
        for (size_t i = 0; i < (na < nb ? na : nb); i++)
            if (a[i] != b[i] && !(isnan(a[i]) && isnan(b[i]))) {   /* NaN: not yet */
                fprintf(stderr, "seed %llu: figure %zu: runs %.17g, blocks %.17g\n",
                        (unsigned long long)seed, i, a[i], b[i]);
                fail();
            }
        assert_int_equal(na, nb);
        evictions += (uint64_t)a[na - 5];
        preemptions += (uint64_t)a[na - 6];
    }
    /* the workloads did exercise what they were built for */
    assert_true(evictions > 10000);
    assert_true(preemptions > 100);
}

/* Ids from an alphabet of four: every id repeats at every depth, within a
 * prompt and across them, which no chained id does. */
static void test_ids_not_chains(void **state)
{
    (void)state;
    static struct workload w;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        workload_make(&w, seed);
        struct rng g = { seed };
        for (uint32_t i = 0; i < w.n; i++)
            for (uint32_t k = 0; k < MAX_IDS; k++)
                w.ids[i][k] = rnd_below(&g, 4);
        struct config c = config_make(seed);
        struct atr_engine_cfg cfg;
        atr_engine_cfg_defaults(&cfg);
        cfg.iter_seconds = cost;
        cfg.kv_capacity_tokens = c.kv_tokens;
        cfg.max_num_seqs = c.max_seqs;
        cfg.max_num_batched_tokens = c.max_batched;
        cfg.chunked_prefill = !c.no_chunked;
        cfg.skip_oversized = true;
        struct atr_error err;
        struct atr_engine *e = atr_engine_new(&cfg, &err);
        assert_non_null(e);
        for (uint32_t i = 0; i < w.n; i++)
            assert_non_null(atr_engine_add(e, &w.q[i], &err));
        assert_int_equal(atr_engine_run_until(e, 1e30, &err), 0);
        struct atr_engine_stats st;
        atr_engine_get_stats(e, &st);
        assert_int_equal(st.requests_finished + st.requests_rejected, w.n);
        assert_int_equal(atr_engine_kv_blocks_used(e), 0);
        atr_engine_free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_equal_blocks),
        cmocka_unit_test(test_ids_not_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
