/* test-sim-engine.c - the engine model on small hand-computed cases:
 * TTFT/ITL arithmetic, prefix-cache hits, max_num_seqs, chunked prefill,
 * preemption on KV exhaustion, LRU eviction order, the step API for
 * multi-turn drivers, multi-step windows, KV retention pins, and
 * determinism.
 *
 * Costs are sums of powers of two (sim-costs.h) so every expected time is
 * exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim-costs.h"

#define MAX_ITERS 64
struct iter_log {
    size_t n;
    struct atr_iter_info it[MAX_ITERS];
};

static void log_iter(void *ctx, const struct atr_iter_info *it)
{
    struct iter_log *l = ctx;
    if (l->n < MAX_ITERS)
        l->it[l->n++] = *it;
}

static struct atr_engine *mk(double (*cost)(void *, const struct atr_iter_work *),
                             uint64_t kv_tokens, struct iter_log *log,
                             void (*tweak)(struct atr_engine_cfg *))
{
    struct atr_engine_cfg cfg;
    struct atr_error err;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = kv_tokens;
    if (log) {
        log->n = 0;
        cfg.on_iter = log_iter;
        cfg.iter_ctx = log;
    }
    if (tweak)
        tweak(&cfg);
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    return e;
}

static void add(struct atr_engine *e, uint64_t id, double at, uint32_t prompt,
                uint32_t out, const uint64_t *ids, size_t n_ids)
{
    struct atr_error err;
    struct atr_sim_req q = { id, at, prompt, out, ids, n_ids };
    assert_non_null(atr_engine_add(e, &q, &err));
}

/* Runs to the end; returns records indexed by id (ids 0..n-1). */
static void run_all(struct atr_engine *e, const struct atr_sim_record **by_id, size_t n)
{
    struct atr_error err;
    size_t got = 0;
    while (atr_engine_next_time(e) < INFINITY) {
        assert_int_equal(atr_engine_step(e, &err), 0);
        size_t k;
        struct atr_sim_record *const *f = atr_engine_finished(e, &k);
        for (size_t i = 0; i < k; i++) {
            assert_true(f[i]->id < n);
            by_id[f[i]->id] = f[i];
            got++;
        }
    }
    assert_int_equal(got, n);
    assert_int_equal(atr_engine_pending(e), 0);
}

static void test_ttft_itl_constant(void **state)
{
    (void)state;
    struct iter_log log;
    struct atr_engine *e = mk(cost_const, 1024, &log, NULL);
    const struct atr_sim_record *r[1];
    add(e, 0, 0.5, 100, 4, NULL, 0);
    run_all(e, r, 1);
    assert_true(r[0]->first_scheduled == 0.5);
    assert_true(r[0]->first_token == 0.5 + C0);
    for (int k = 0; k < 4; k++)
        assert_true(atr_engine_token_times(e, r[0])[k] == 0.5 + (k + 1) * C0);
    assert_true(r[0]->finish == 0.5 + 4 * C0);
    assert_int_equal(r[0]->tokens_done, 4);
    assert_int_equal(log.n, 4);
    assert_int_equal(log.it[0].work.prefill_tokens, 100);
    assert_int_equal(log.it[0].work.decode_seqs, 0);
    assert_int_equal(log.it[1].work.decode_seqs, 1);
    assert_int_equal(log.it[1].work.decode_ctx_tokens, 101);
    assert_int_equal(log.it[3].work.decode_ctx_tokens, 103);
    assert_int_equal(log.it[0].kv_blocks_used, 7);      /* ceil(100/16) */
    atr_engine_free(e);
}

/* C0 for a step the scheduler precedes, C0 / 2 for a later step of a
 * multi-step window (no scheduler CPU). */
static double cost_window(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    return w->window_step ? C0 / 2 : C0;
}

static void four_steps_v0(struct atr_engine_cfg *c)
{
    c->prefill_first = true;
    c->chunked_prefill = false;
    c->max_num_batched_tokens = 4096;
    c->num_scheduler_steps = 4;
}

/* vLLM V0's multi-step scheduling: a decode-only batch runs 4 steps
 * without the scheduler, its tokens all delivered at the window's end; a
 * prompt arriving during a window waits for its end (prefill first, one
 * step); a request done inside a window still runs to its end. */
static void test_multi_step_window(void **state)
{
    (void)state;
    struct iter_log log;
    struct atr_engine *e = mk(cost_window, 4096, &log, four_steps_v0);
    const struct atr_sim_record *r[2];
    add(e, 0, 0, 100, 7, NULL, 0);        /* prefill, then windows of 4 and 4 */
    add(e, 1, C0 + C0 / 4, 50, 2, NULL, 0); /* arrives inside the first window */
    run_all(e, r, 2);
    double w = C0 + 3 * C0 / 2;           /* a window: one full step, three later */
    const double *t0 = atr_engine_token_times(e, r[0]);
    assert_true(r[0]->first_token == C0);
    for (int k = 1; k <= 4; k++)          /* tokens 2-5 at the first window's end */
        assert_true(t0[k] == C0 + w);
    assert_true(r[1]->first_scheduled == C0 + w);   /* waited for that end */
    assert_true(r[1]->first_token == 2 * C0 + w);   /* its prefill, one step */
    /* then both decode: request 0's last two tokens and request 1's last
     * one in a window of 4 that both run to its end */
    assert_true(t0[5] == 2 * C0 + 2 * w && t0[6] == t0[5]);
    assert_true(r[0]->finish == 2 * C0 + 2 * w);
    assert_true(r[1]->finish == 2 * C0 + 2 * w);
    assert_int_equal(r[0]->tokens_done, 7);
    assert_int_equal(r[1]->tokens_done, 2);
    /* iterations: prefill, 4 steps, prefill, 4 steps; later steps flagged,
     * a token further on each, started where the step before ended */
    assert_int_equal(log.n, 10);
    assert_false(log.it[1].work.window_step);
    assert_true(log.it[2].work.window_step && log.it[4].work.window_step);
    assert_int_equal(log.it[1].work.decode_ctx_tokens, 101);
    assert_int_equal(log.it[4].work.decode_ctx_tokens, 104);
    assert_true(log.it[2].start == 2 * C0 && log.it[3].start == 2 * C0 + C0 / 2);
    assert_int_equal(log.it[5].work.prefill_tokens, 50);
    assert_int_equal(log.it[9].work.decode_seqs, 2);
    assert_int_equal(atr_engine_pending(e), 0);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.iterations, 10);
    assert_int_equal(st.decode_tokens, 4 + 8);
    atr_engine_free(e);
}

static void test_ttft_itl_token_cost(void **state)
{
    (void)state;
    struct atr_engine *e = mk(cost_tokens, 1024, NULL, NULL);
    const struct atr_sim_record *r[2];
    add(e, 0, 0, 100, 3, NULL, 0);
    add(e, 1, 0, 50, 2, NULL, 0);
    run_all(e, r, 2);
    double t1 = C0 + 150 * CT;          /* both prefills in one batch */
    double t2 = t1 + C0 + 2 * CT;       /* two decodes */
    double t3 = t2 + C0 + 1 * CT;       /* A alone */
    assert_true(r[0]->first_token == t1 && r[1]->first_token == t1);
    assert_true(atr_engine_token_times(e, r[1])[1] == t2 && r[1]->finish == t2);
    assert_true(atr_engine_token_times(e, r[0])[1] == t2 && r[0]->finish == t3);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.iterations, 3);
    assert_true(st.busy_seconds == t3);
    assert_int_equal(st.batch_hist[2], 2);
    assert_int_equal(st.batch_hist[1], 1);
    assert_int_equal(st.prefill_tokens, 150);
    assert_int_equal(st.decode_tokens, 3);
    atr_engine_free(e);
}

static void test_prefix_sharing(void **state)
{
    (void)state;
    struct iter_log log;
    struct atr_engine *e = mk(cost_tokens, 4096, &log, NULL);
    static const uint64_t a[] = { 1, 2, 3, 4, 5, 6 };
    static const uint64_t b[] = { 1, 2, 3, 7, 8, 9 };
    static const uint64_t c[] = { 1, 2, 3, 4, 5, 6 };
    const struct atr_sim_record *r[4];
    add(e, 0, 0, 100, 2, a, 6);
    add(e, 1, 1.0, 100, 2, b, 6);          /* after A is done */
    add(e, 2, 2.0, 100, 1, c, 6);          /* all 6 full blocks hit */
    add(e, 3, 3.0, 96, 1, c, 6);           /* last token recomputed: 5 blocks */
    run_all(e, r, 4);
    assert_int_equal(r[0]->cached_tokens, 0);
    assert_int_equal(r[1]->cached_tokens, 48);
    assert_int_equal(r[2]->cached_tokens, 96);
    assert_int_equal(r[3]->cached_tokens, 80);
    /* B's first iteration computes 52 tokens over a 48-token context. */
    assert_int_equal(log.it[2].work.prefill_tokens, 52);
    assert_int_equal(log.it[2].work.prefill_ctx_tokens, 48);
    assert_true(r[1]->first_token == 1.0 + C0 + 52 * CT);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.cached_tokens, 48 + 96 + 80);
    assert_int_equal(st.prompt_tokens, 396);
    assert_true(st.prefix_hit_rate == 224.0 / 396.0);
    atr_engine_free(e);
}

static void one_seq(struct atr_engine_cfg *cfg) { cfg->max_num_seqs = 1; }

static void test_max_num_seqs_serializes(void **state)
{
    (void)state;
    struct atr_engine *e = mk(cost_const, 1024, NULL, one_seq);
    const struct atr_sim_record *r[3];
    for (uint64_t i = 0; i < 3; i++)
        add(e, i, 0, 10, 2, NULL, 0);
    run_all(e, r, 3);
    for (int i = 0; i < 3; i++) {
        assert_true(r[i]->first_scheduled == 2 * i * C0);
        assert_true(r[i]->first_token == (2 * i + 1) * C0);
        assert_true(r[i]->finish == (2 * i + 2) * C0);
    }
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.batch_hist[1], 6);
    atr_engine_free(e);
}

static void no_chunking(struct atr_engine_cfg *cfg) { cfg->chunked_prefill = false; }

static void test_chunked_prefill(void **state)
{
    (void)state;
    struct iter_log log;
    struct atr_engine *e = mk(cost_tokens, 32768, &log, NULL);
    const struct atr_sim_record *r[1];
    add(e, 0, 0, 20000, 2, NULL, 0);
    run_all(e, r, 1);
    assert_int_equal(log.n, 4);
    assert_int_equal(log.it[0].work.prefill_tokens, 8192);
    assert_int_equal(log.it[1].work.prefill_tokens, 8192);
    assert_int_equal(log.it[2].work.prefill_tokens, 3616);
    assert_int_equal(log.it[2].work.prefill_ctx_tokens, 16384);
    assert_int_equal(log.it[3].work.decode_seqs, 1);
    double t3 = (C0 + 8192 * CT) + (C0 + 8192 * CT) + (C0 + 3616 * CT);
    assert_true(r[0]->first_token == t3);
    assert_true(r[0]->finish == t3 + C0 + CT);
    atr_engine_free(e);

    struct atr_error err;
    e = mk(cost_tokens, 32768, NULL, no_chunking);
    struct atr_sim_req q = { 0, 0, 20000, 2, NULL, 0 };
    assert_null(atr_engine_add(e, &q, &err));
    atr_engine_free(e);
}

static void test_preemption(void **state)
{
    (void)state;
    /* 10 blocks of 16; three 40-token prompts take 9. At 49 tokens A takes
     * the last free block, B finds none and preempts C (latest admitted). */
    struct atr_engine *e = mk(cost_const, 160, NULL, NULL);
    const struct atr_sim_record *r[3];
    for (uint64_t i = 0; i < 3; i++)
        add(e, i, 0, 40, 40, NULL, 0);
    run_all(e, r, 3);
    assert_int_equal(r[0]->preemptions, 0);
    assert_true(r[2]->preemptions >= 1);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    uint64_t sum = 0;
    for (int i = 0; i < 3; i++) {
        sum += r[i]->preemptions;
        assert_int_equal(r[i]->tokens_done, 40);
        const double *t = atr_engine_token_times(e, r[i]);
        for (int k = 1; k < 40; k++)
            assert_true(t[k] > t[k - 1]);
        assert_true(r[i]->finish == t[39]);
    }
    assert_int_equal(st.preemptions, sum);
    assert_true(st.kv_blocks_peak <= 10);
    assert_int_equal(st.requests_finished, 3);
    /* A runs undisturbed: prefill then 39 decodes, one iteration each. */
    assert_true(r[0]->finish == 40 * C0);
    atr_engine_free(e);
}

static void test_lru_eviction_order(void **state)
{
    (void)state;
    struct atr_engine *e = mk(cost_const, 128, NULL, NULL);   /* 8 blocks */
    static const uint64_t a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
    static const uint64_t c[] = { 7, 8, 9, 10 }, d[] = { 1, 2, 3 };
    static const uint64_t f[] = { 4, 5, 6, 11 };
    const struct atr_sim_record *r[5];
    /* A frees 3,2,1 (tail first) -> LRU 3 2 1; B -> 3 2 1 6 5 4 with 2
     * free blocks; C needs 4: evicts 3 then 2. D hits 1 only, evicting 6
     * and 5; E then hits 4 only. */
    add(e, 0, 0, 48, 1, a, 3);
    add(e, 1, 1, 48, 1, b, 3);
    add(e, 2, 2, 64, 1, c, 4);
    add(e, 3, 3, 48, 1, d, 3);
    add(e, 4, 4, 64, 1, f, 4);
    run_all(e, r, 5);
    assert_int_equal(r[2]->cached_tokens, 0);
    assert_int_equal(r[3]->cached_tokens, 16);
    assert_int_equal(r[4]->cached_tokens, 16);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.evictions, 2 + 2 + 3);
    atr_engine_free(e);
}

static void retain_10s(struct atr_engine_cfg *cfg) { cfg->retain_s = 10; }

/* KV retention (retain_s): 8 blocks. A (blocks 1 2 3, a session with a
 * turn to come: marked) and X (30 31 32, a session's last turn) finish at
 * once; B (5 blocks of its own) at 2 must evict 3. Without pins it takes
 * the oldest, A's, and A's next turn A2 (1 2 3 4) at 3 hits nothing; with
 * A pinned it takes X's instead (the cost: another session's cache) and
 * A2 hits all 3. Nobody waits either way. */
static bool run_retain6;      /* B of 6 blocks */

static void run_retain(bool pins, const struct atr_sim_record **r, struct atr_engine_stats *st,
                       struct atr_engine **out)
{
    struct atr_engine *e = mk(cost_const, 128, NULL, pins ? retain_10s : NULL);
    static const uint64_t a[] = { 1, 2, 3 }, x[] = { 30, 31, 32 };
    static const uint64_t b[] = { 20, 21, 22, 23, 24, 25 }, a2[] = { 1, 2, 3, 4 };
    struct atr_error err;
    struct atr_sim_req q = { 0, 0, 48, 1, a, 3 };
    const struct atr_sim_record *ra = atr_engine_add(e, &q, &err);
    assert_non_null(ra);
    atr_engine_set_retain(e, ra);
    add(e, 1, 1, 48, 1, x, 3);
    add(e, 2, 2, run_retain6 ? 96 : 80, 1, b, run_retain6 ? 6 : 5);
    add(e, 3, 3, 64, 1, a2, 4);
    run_all(e, r, 4);
    atr_engine_get_stats(e, st);
    *out = e;
}

static void test_kv_retain(void **state)
{
    (void)state;
    const struct atr_sim_record *r[4];
    struct atr_engine_stats st;
    struct atr_engine *e;
    run_retain(false, r, &st, &e);
    assert_int_equal(r[3]->cached_tokens, 0);
    assert_int_equal(st.kv_pins, 0);
    atr_engine_free(e);
    run_retain(true, r, &st, &e);
    assert_int_equal(r[3]->cached_tokens, 48);
    assert_true(r[2]->first_scheduled < 2.5 && r[3]->first_scheduled < 3.5);  /* no waits */
    assert_int_equal(st.kv_pins, 1);
    assert_int_equal(st.kv_pins_dropped, 0);
    assert_int_equal(st.evictions, 3 + 1);   /* X's for B, one of B's for A2 */
    atr_engine_free(e);
    /* a pin gives way when nothing else can be evicted: B of 6 blocks needs
     * one of A's too, and takes it rather than wait */
    run_retain6 = true;
    run_retain(true, r, &st, &e);
    run_retain6 = false;
    assert_int_equal(st.kv_pins_dropped, 1);
    assert_true(r[2]->first_scheduled < 2.5);
    assert_true(r[3]->cached_tokens < 48);
    atr_engine_free(e);
}

/* Sessions: the next turn arrives `think` after the previous finished and
 * repeats the whole previous prompt plus new blocks. */
#define SESS 8
#define TURNS 5

struct flat {
    uint64_t id;
    double first_token, finish, t_last;
    uint32_t cached, preempt;
};

static size_t run_workload(struct flat *out, size_t cap)
{
    static uint64_t ids[SESS][TURNS * 8];
    struct atr_engine *e = mk(cost_tokens, 16 * 64, NULL, NULL);
    struct atr_error err;
    uint32_t turn[SESS] = { 0 };
    for (int s = 0; s < SESS; s++) {
        for (int k = 0; k < TURNS * 8; k++)
            ids[s][k] = (uint64_t)(k < 4 ? k : 1000 * (s + 1) + k);   /* shared system prompt */
        add(e, (uint64_t)s * TURNS, 0.001 * s, 128, 20 + s, ids[s], 8);
    }
    size_t n = 0;
    while (atr_engine_next_time(e) < INFINITY) {
        assert_int_equal(atr_engine_step(e, &err), 0);
        size_t k;
        struct atr_sim_record *const *f = atr_engine_finished(e, &k);
        for (size_t i = 0; i < k; i++) {
            const struct atr_sim_record *r = f[i];
            assert_true(n < cap);
            out[n++] = (struct flat){ r->id, r->first_token, r->finish,
                                      atr_engine_token_times(e, r)[r->tokens_done - 1],
                                      r->cached_tokens, r->preemptions };
            uint32_t s = (uint32_t)(r->id / TURNS);
            if (++turn[s] < TURNS)
                add(e, r->id + 1, r->finish + 0.01, 128 * (turn[s] + 1), 20 + s,
                    ids[s], 8 * (turn[s] + 1));
        }
    }
    assert_int_equal(n, SESS * TURNS);
    atr_engine_free(e);
    return n;
}

static void test_sessions_and_determinism(void **state)
{
    (void)state;
    static struct flat a[SESS * TURNS], b[SESS * TURNS];
    size_t na = run_workload(a, SESS * TURNS);
    size_t nb = run_workload(b, SESS * TURNS);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof(a));
    /* later turns reuse the previous turn's prompt blocks */
    uint64_t cached = 0;
    for (size_t i = 0; i < na; i++)
        cached += a[i].cached;
    assert_true(cached > 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(cost_const, 160, NULL, NULL);
    struct atr_sim_req big = { 0, 0, 150, 20, NULL, 0 };   /* 170 tokens > 160 */
    assert_null(atr_engine_add(e, &big, &err));
    add(e, 1, 1.0, 10, 1, NULL, 0);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    size_t n;
    atr_engine_finished(e, &n);
    assert_int_equal(n, 1);
    struct atr_sim_req late = { 2, 0.5, 10, 1, NULL, 0 };   /* before the clock */
    assert_null(atr_engine_add(e, &late, &err));
    atr_engine_free(e);
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost_const;
    cfg.kv_capacity_tokens = 8;        /* less than one block */
    assert_null(atr_engine_new(&cfg, &err));
}

static void skip_oversized(struct atr_engine_cfg *cfg)
{
    cfg->skip_oversized = true;
}

/* skip_oversized: a request the cache cannot hold comes back rejected at
 * once (no tokens, finish = arrival), never runs, is counted apart, and
 * the others run as if it had not been sent. */
static void test_skip_oversized(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(cost_const, 160, NULL, skip_oversized);
    assert_false(atr_engine_fits(e, 150, 20));     /* 11 blocks of 10 */
    assert_true(atr_engine_fits(e, 150, 10));
    struct atr_sim_req big = { 7, 0.25, 150, 20, NULL, 0 };
    const struct atr_sim_record *r = atr_engine_add(e, &big, &err);
    assert_non_null(r);
    assert_true(r->rejected);
    assert_true(r->finish == 0.25);
    assert_int_equal(r->tokens_done, 0);
    assert_null(atr_engine_token_times(e, r));
    assert_int_equal(atr_engine_pending(e), 0);
    assert_true(atr_engine_next_time(e) == INFINITY);
    add(e, 1, 0.5, 10, 2, NULL, 0);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    size_t n;
    struct atr_sim_record *const *f = atr_engine_finished(e, &n);
    assert_int_equal(n, 1);
    assert_int_equal(f[0]->id, 1);
    assert_true(f[0]->finish == 0.5 + 2 * C0);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.requests_rejected, 1);
    assert_int_equal(st.requests_added, 1);
    assert_int_equal(atr_engine_abort(e, r), 0);           /* already over */
    assert_false(r->aborted);
    assert_int_equal(atr_engine_release_record(e, r), 0);
    atr_engine_free(e);
}

/* Aborts at every stage: before arrival, waiting, mid-iteration, between
 * iterations. The others finish as if the aborted ones had left, blocks come
 * back, and every record can be released. */
static void test_abort(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(cost_const, 1 << 12, NULL, NULL);
    struct atr_sim_req q0 = { 0, 0, 32, 8, NULL, 0 }, q1 = { 1, 0, 32, 8, NULL, 0 },
                       q2 = { 2, 1, 32, 8, NULL, 0 };
    const struct atr_sim_record *r0 = atr_engine_add(e, &q0, &err);
    const struct atr_sim_record *r1 = atr_engine_add(e, &q1, &err);
    const struct atr_sim_record *r2 = atr_engine_add(e, &q2, &err);
    assert_non_null(r0);
    assert_non_null(r1);
    assert_non_null(r2);
    /* r2 has not arrived yet: aborted and released before its event. */
    assert_int_equal(atr_engine_abort(e, r2), 0);
    assert_int_equal(atr_engine_release_record(e, r2), 0);
    /* Run into the first iteration: r0 and r1 are in the batch. */
    while (atr_engine_num_running(e) == 0)
        assert_int_equal(atr_engine_step(e, &err), 0);
    assert_int_equal(atr_engine_step(e, &err), 0);       /* the iteration starts */
    assert_true(atr_engine_kv_blocks_used(e) > 0);
    assert_int_equal(atr_engine_abort(e, r1), 0);       /* mid-iteration */
    assert_true(r1->aborted);
    assert_int_equal(atr_engine_release_record(e, r1), 0); /* deferred */
    assert_int_equal(atr_engine_pending(e), 1);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_int_equal(r0->tokens_done, 8);
    assert_false(r0->aborted);
    assert_int_equal(atr_engine_kv_blocks_used(e), 0);
    assert_int_equal(atr_engine_pending(e), 0);
    /* Already finished: abort changes nothing. */
    assert_int_equal(atr_engine_abort(e, r0), 0);
    assert_false(r0->aborted);
    assert_int_equal(atr_engine_release_record(e, r0), 0);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.requests_aborted, 2);
    assert_int_equal(st.requests_finished, 1);
    /* A running request between iterations, and one that waits. */
    struct atr_sim_req q3 = { 3, atr_engine_now(e), 32, 8, NULL, 0 };
    const struct atr_sim_record *r3 = atr_engine_add(e, &q3, &err);
    assert_int_equal(atr_engine_run_until(e, atr_engine_now(e) + 3 * C0, &err), 0);
    assert_true(r3->tokens_done > 0 && r3->tokens_done < 8);
    assert_int_equal(atr_engine_abort(e, r3), 0);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_true(r3->tokens_done < 8);
    assert_int_equal(atr_engine_release_record(e, r3), 0);
    assert_int_equal(atr_engine_kv_blocks_used(e), 0);
    atr_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ttft_itl_constant),
        cmocka_unit_test(test_ttft_itl_token_cost),
        cmocka_unit_test(test_multi_step_window),
        cmocka_unit_test(test_prefix_sharing),
        cmocka_unit_test(test_max_num_seqs_serializes),
        cmocka_unit_test(test_chunked_prefill),
        cmocka_unit_test(test_preemption),
        cmocka_unit_test(test_lru_eviction_order),
        cmocka_unit_test(test_sessions_and_determinism),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_skip_oversized),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_kv_retain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
