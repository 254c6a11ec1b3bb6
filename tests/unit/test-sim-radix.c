/* test-sim-radix.c - the engine's SGLang flavour (radix_cache) beside its
 * vLLM flavour on hand-computed cases: a prefix hit that ends inside a
 * block (a shared tail) under radix only, one copy of a block computed by
 * two requests at once, and eviction that takes a chain's leaves first
 * where vLLM's per-block LRU drops an inner block and strands its children
 * (docs/sim-engine.md, "SGLang flavour"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim-costs.h"

struct first_iter {
    bool seen;
    double after;                /* record the first iteration starting at or after this */
    struct atr_iter_info it;
};

static void on_iter(void *ctx, const struct atr_iter_info *it)
{
    struct first_iter *f = ctx;
    if (!f->seen && it->start >= f->after) {
        f->seen = true;
        f->it = *it;
    }
}

/* blocks: the cache kept block by block (shared tails need it). */
static struct atr_engine *mk_cache(bool radix, bool blocks,
                                   double (*cost)(void *, const struct atr_iter_work *),
                                   uint64_t kv_tokens, struct first_iter *fi)
{
    struct atr_engine_cfg cfg;
    struct atr_error err;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = kv_tokens;
    cfg.longest_prefix_first = radix;
    cfg.radix_cache = radix;
    cfg.block_cache = blocks;
    if (fi) {
        cfg.on_iter = on_iter;
        cfg.iter_ctx = fi;
    }
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    return e;
}

static struct atr_engine *mk(bool radix, double (*cost)(void *, const struct atr_iter_work *),
                             uint64_t kv_tokens, struct first_iter *fi)
{
    return mk_cache(radix, false, cost, kv_tokens, fi);
}

static const struct atr_sim_record *add(struct atr_engine *e, uint64_t id, double at,
                                        uint32_t prompt, uint32_t out, const uint64_t *ids,
                                        size_t n_ids)
{
    struct atr_error err;
    struct atr_sim_req q = { id, at, prompt, out, ids, n_ids };
    const struct atr_sim_record *r = atr_engine_add(e, &q, &err);
    assert_non_null(r);
    return r;
}

static void tail(struct atr_engine *e, const struct atr_sim_record *r, uint64_t id,
                 uint32_t block, uint32_t tokens)
{
    struct atr_error err;
    assert_int_equal(atr_engine_set_tail(e, r, id, block, tokens, &err), 0);
}

static void run_all(struct atr_engine *e)
{
    struct atr_error err;
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_int_equal(atr_engine_pending(e), 0);
}

/* Prompts of 100 tokens share 3 full blocks and then 10 more tokens (tail
 * 77 starts block 3). Under radix the second one's hit is 58 tokens and
 * its first chunk computes 42 over a 58-token context; vLLM stops at the
 * block boundary (48). A different tail (78) gets the blocks only, and a
 * 55-token prompt gets 6 tail tokens: its last token is computed. */
static void check_partial_block(bool radix)
{
    struct first_iter fi = { .after = 1.0 };
    struct atr_engine *e = mk_cache(radix, radix, cost_tokens, 4096, &fi);
    static const uint64_t a[] = { 1, 2, 3, 4, 5, 6 }, b[] = { 1, 2, 3, 8, 9, 10 };
    static const uint64_t c[] = { 1, 2, 3, 11, 12, 13 }, d[] = { 1, 2, 3 };
    const struct atr_sim_record *ra = add(e, 0, 0, 100, 2, a, 6);
    tail(e, ra, 77, 3, 10);
    const struct atr_sim_record *rb = add(e, 1, 1.0, 100, 2, b, 6);
    tail(e, rb, 77, 3, 10);
    const struct atr_sim_record *rc = add(e, 2, 2.0, 100, 2, c, 6);
    tail(e, rc, 78, 3, 5);
    const struct atr_sim_record *rd = add(e, 3, 3.0, 55, 1, d, 3);
    tail(e, rd, 77, 3, 10);
    run_all(e);
    assert_int_equal(ra->cached_tokens, 0);
    assert_int_equal(rb->cached_tokens, radix ? 58 : 48);
    assert_int_equal(rc->cached_tokens, 48);
    assert_int_equal(rd->cached_tokens, radix ? 54 : 48);
    assert_true(fi.seen);
    assert_int_equal(fi.it.work.prefill_tokens, radix ? 42 : 52);
    assert_int_equal(fi.it.work.prefill_ctx_tokens, radix ? 58 : 48);
    assert_true(rb->first_token == 1.0 + C0 + (radix ? 42 : 52) * CT);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.cached_tokens, radix ? 58 + 48 + 54 : 3 * 48);
    atr_engine_free(e);
}

static void test_partial_block_hit_radix(void **state)
{
    (void)state;
    check_partial_block(true);
}

static void test_no_partial_block_hit_vllm(void **state)
{
    (void)state;
    check_partial_block(false);
}

static void test_tail_bad_input(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk_cache(true, true, cost_const, 1024, NULL);
    const struct atr_sim_record *r = add(e, 0, 0, 40, 1, NULL, 0);
    assert_int_equal(atr_engine_set_tail(e, r, 5, 1, 16, &err), -1);     /* a whole block */
    assert_int_equal(atr_engine_set_tail(e, r, 5, 1, 0, &err), -1);
    run_all(e);
    assert_int_equal(r->cached_tokens, 0);
    atr_engine_free(e);
    e = mk(true, cost_const, 1024, NULL);          /* runs: no tails */
    r = add(e, 0, 0, 40, 1, NULL, 0);
    assert_int_equal(atr_engine_set_tail(e, r, 5, 1, 8, &err), -1);
    assert_non_null(strstr(err.msg, "block_cache"));
    run_all(e);
    atr_engine_free(e);
}

/* A (48 tokens, ids 1-3) and B (80 tokens, ids 1-5) prefill in the same
 * iteration, so B computes blocks 1-3 again. vLLM keeps B's copies private
 * and caches A's: when A ends its 3 blocks queue first (LRU a3 a2 a1 b5 b4)
 * and C, needing 2 more blocks than are free, evicts a3 and a2, stranding
 * b4 and b5 (cached, but behind a missing id). Radix keeps one copy (B
 * takes A's), so B's release queues the chain leaf first (b5 b4 a3 a2 a1):
 * C evicts b5 and b4 and E still finds ids 1-3. E's other blocks then
 * come from C's, evicted. */
static void check_leaf_first(bool radix)
{
    struct atr_engine *e = mk(radix, cost_const, 256, NULL);    /* 16 blocks */
    static const uint64_t a[] = { 1, 2, 3 }, b[] = { 1, 2, 3, 4, 5 };
    static const uint64_t c[] = { 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33 };
    static const uint64_t f[] = { 1, 2, 3, 4, 5, 6 };
    const struct atr_sim_record *ra = add(e, 0, 0, 48, 1, a, 3);
    const struct atr_sim_record *rb = add(e, 1, 0, 80, 3, b, 5);
    struct atr_error err;
    assert_int_equal(atr_engine_run_until(e, 0.5, &err), 0);
    assert_true(ra->finish == C0 && rb->finish == 3 * C0);
    const struct atr_sim_record *rc = add(e, 2, 1.0, 208, 1, c, 13);
    const struct atr_sim_record *rf = add(e, 3, 2.0, 97, 1, f, 6);
    run_all(e);
    assert_int_equal(rc->cached_tokens, 0);
    assert_int_equal(rf->cached_tokens, radix ? 48 : 16);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.evictions, radix ? 2 + 4 : 2 + 6);   /* then E's blocks past its hits */
    atr_engine_free(e);
}

static void test_leaf_first_eviction_radix(void **state)
{
    (void)state;
    check_leaf_first(true);
}

static void test_inner_block_evicted_vllm(void **state)
{
    (void)state;
    check_leaf_first(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_block_hit_radix),
        cmocka_unit_test(test_no_partial_block_hit_vllm),
        cmocka_unit_test(test_tail_bad_input),
        cmocka_unit_test(test_leaf_first_eviction_radix),
        cmocka_unit_test(test_inner_block_evicted_vllm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
