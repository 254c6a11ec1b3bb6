/* test-sim-slots.c - the llama.cpp engine flavour (docs/sim-engine.md,
 * "llama.cpp flavour"): slot choice by prefix similarity, else least
 * recently used; each slot's own cache; the RAM prompt cache restoring a
 * prompt into another slot; queueing when every slot is busy; a slot's
 * context limit; decodes before prompt chunks; and the same results twice.
 *
 * Costs are powers of two (sim-costs.h) so expected times are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/slots.h"
#include "sim-costs.h"

/* 4 x 16-token blocks: ids chained per prompt family (a: 1,2,3,4; b: 11..) */
static const uint64_t A[] = {1, 2, 3, 4}, A2[] = {1, 2, 3, 4, 5, 6}, B[] = {11, 12, 13, 14};

static struct atr_engine *mk(unsigned slots, uint64_t ctx, uint64_t ram_tokens,
                             double (*cost)(void *, const struct atr_iter_work *))
{
    struct atr_engine_cfg cfg;
    struct atr_error err;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = ctx;
    cfg.slots = slots;
    cfg.slot_similarity = 0.1;
    cfg.prompt_cache_tokens = ram_tokens;
    cfg.max_num_batched_tokens = 2048;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    return e;
}

static const struct atr_sim_record *add(struct atr_engine *e, uint64_t id, double at,
                                        uint32_t prompt, uint32_t out, const uint64_t *ids,
                                        size_t n)
{
    struct atr_error err;
    struct atr_sim_req q = { id, at, prompt, out, ids, n };
    const struct atr_sim_record *r = atr_engine_add(e, &q, &err);
    assert_non_null(r);
    return r;
}

static void run(struct atr_engine *e)
{
    struct atr_error err;
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
}

/* The slot rules on their own: LRU of equals is the last slot; a prompt
 * sharing more than 10 % with an idle slot's cache goes there and hits. */
static void test_slot_choice_by_prefix(void **state)
{
    (void)state;
    struct atr_slots_cfg c = { 3, 16, 0.1, 0 };
    struct atr_slots *s = atr_slots_new(&c);
    uint32_t cached;
    int a = atr_slots_take(s, A, 4, 70, &cached);
    assert_int_equal(a, 2);                  /* all unused: the last of equals */
    assert_int_equal(cached, 0);
    int b = atr_slots_take(s, B, 4, 70, &cached);
    assert_int_equal(b, 1);
    atr_slots_release(s, (unsigned)a, A, 4, 74);
    atr_slots_release(s, (unsigned)b, B, 4, 74);
    /* A's continuation: slot a holds 64 of its 100 tokens */
    assert_int_equal(atr_slots_take(s, A2, 6, 100, &cached), a);
    assert_int_equal(cached, 64);
    /* a new family: no slot is similar; slot 0 was never used (LRU) */
    static const uint64_t C[] = {21, 22};
    assert_int_equal(atr_slots_take(s, C, 2, 40, &cached), 0);
    assert_int_equal(cached, 0);
    /* B again while slot b is the only idle one: its cache hits, but a
     * whole prompt is never a hit: the last token runs */
    assert_int_equal(atr_slots_take(s, B, 4, 64, &cached), b);
    assert_int_equal(cached, 63);
    assert_int_equal(atr_slots_take(s, A, 4, 64, &cached), -1);    /* all busy */
    struct atr_slots_stats st;
    atr_slots_get_stats(s, &st);
    assert_int_equal(st.by_prefix, 2);
    assert_int_equal(st.by_lru, 3);
    atr_slots_free(s);
}

/* The RAM cache's limit: a save past it evicts the oldest prompt, and a
 * prompt it no longer holds is not restored. */
static void test_ram_cache_limit(void **state)
{
    (void)state;
    struct atr_slots_cfg c = { 1, 16, 0.1, 100 };
    struct atr_slots *s = atr_slots_new(&c);
    uint32_t cached;
    assert_int_equal(atr_slots_take(s, A, 4, 70, &cached), 0);
    atr_slots_release(s, 0, A, 4, 74);
    assert_int_equal(atr_slots_take(s, B, 4, 70, &cached), 0);    /* saves A */
    atr_slots_release(s, 0, B, 4, 74);
    assert_int_equal(atr_slots_take(s, A2, 6, 100, &cached), 0);  /* saves B: A goes */
    assert_int_equal(cached, 0);
    struct atr_slots_stats st;
    atr_slots_get_stats(s, &st);
    assert_int_equal(st.ram_saves, 2);
    assert_int_equal(st.ram_evictions, 1);
    assert_int_equal(st.ram_restores, 0);
    assert_int_equal(st.ram_entries, 1);
    assert_int_equal(st.ram_tokens, 74);
    atr_slots_free(s);
}

/* In the engine: a session's second turn lands in the slot of its first
 * and hits its prefix there; another session's turn in the other slot
 * does not, and does not disturb it. */
static void test_per_slot_cache_hit(void **state)
{
    (void)state;
    struct atr_engine *e = mk(2, 2 * 256, 0, cost_const);
    const struct atr_sim_record *r0 = add(e, 0, 0, 70, 2, A, 4);
    const struct atr_sim_record *r1 = add(e, 1, 0, 70, 2, B, 4);
    run(e);
    assert_int_equal(r0->cached_tokens, 0);
    assert_int_equal(r1->cached_tokens, 0);
    const struct atr_sim_record *r2 = add(e, 2, atr_engine_now(e), 100, 2, A2, 6);
    const struct atr_sim_record *r3 = add(e, 3, atr_engine_now(e), 70, 2, B, 4);
    run(e);
    assert_int_equal(r2->cached_tokens, 64);
    assert_int_equal(r3->cached_tokens, 64);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.cached_tokens, 128);
    assert_int_equal(st.preemptions, 0);
    atr_engine_free(e);
}

/* Without the RAM cache a prompt whose slot was taken by another family
 * is lost; with it, the slot taken saves its prompt and the next request
 * of that family restores it into whichever slot it gets. */
static void test_ram_cache_restores(void **state)
{
    (void)state;
    uint32_t hit[2];
    for (int ram = 0; ram < 2; ram++) {
        struct atr_engine *e = mk(1, 256, ram ? 4096 : 0, cost_const);
        add(e, 0, 0, 70, 2, A, 4);
        run(e);
        add(e, 1, atr_engine_now(e), 70, 2, B, 4);    /* takes the only slot */
        run(e);
        const struct atr_sim_record *r = add(e, 2, atr_engine_now(e), 100, 2, A2, 6);
        run(e);
        hit[ram] = r->cached_tokens;
        atr_engine_free(e);
    }
    assert_int_equal(hit[0], 0);
    assert_int_equal(hit[1], 64);
}

/* Three requests, two slots: the third waits for a slot (FCFS) and starts
 * in the iteration after the first one finished; at most two run at once. */
static void test_queue_when_slots_busy(void **state)
{
    (void)state;
    struct atr_engine *e = mk(2, 2 * 256, 0, cost_const);
    const struct atr_sim_record *r[3];
    for (int i = 0; i < 3; i++)
        r[i] = add(e, (uint64_t)i, 0, 32, 4, NULL, 0);
    run(e);
    /* prefill (1 iteration) then 3 more decode iterations: 4 x C0 */
    assert_true(r[0]->finish == 4 * C0 && r[1]->finish == 4 * C0);
    assert_true(r[2]->first_scheduled == 4 * C0);
    assert_true(r[2]->finish == 8 * C0);
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    assert_int_equal(st.batch_hist_len, 3);      /* max_num_seqs = slots */
    assert_int_equal(st.batch_hist[2], 4);
    atr_engine_free(e);
}

/* -c 512 over 4 slots: 128 tokens a slot. 100 + 28 fits; 100 + 29 does
 * not, even though the whole context could hold it. */
static void test_context_limit_per_slot(void **state)
{
    (void)state;
    struct atr_engine *e = mk(4, 512, 0, cost_const);
    assert_true(atr_engine_fits(e, 100, 28));
    assert_false(atr_engine_fits(e, 100, 29));
    struct atr_error err;
    struct atr_sim_req q = { 9, 0, 100, 29, NULL, 0 };
    assert_null(atr_engine_add(e, &q, &err));
    assert_non_null(strstr(err.msg, "a slot's context (128 tokens)"));
    atr_engine_free(e);
}

static struct atr_iter_work seen[8];
static size_t n_seen;

static double cost_log(void *ctx, const struct atr_iter_work *w)
{
    if (n_seen < 8)
        seen[n_seen++] = *w;
    return cost_tokens(ctx, w);
}

/* A long prompt arriving while another request decodes: the decode goes
 * into every batch first, the prompt is processed 2048 tokens a batch. */
static void test_decodes_first(void **state)
{
    (void)state;
    n_seen = 0;
    struct atr_engine *e = mk(2, 2 * 8192, 0, cost_log);
    add(e, 0, 0, 16, 8, NULL, 0);
    add(e, 1, C0 / 2, 5000, 1, NULL, 0);
    run(e);
    assert_true(n_seen >= 4);
    assert_int_equal(seen[1].decode_seqs, 1);    /* r0 decodes beside r1's chunks */
    assert_int_equal(seen[1].prefill_tokens, 2047);
    assert_int_equal(seen[2].prefill_tokens, 2047);
    assert_int_equal(seen[3].prefill_tokens, 5000 - 2 * 2047);
    atr_engine_free(e);
}

/* The same workload twice gives the same records, bit for bit. */
static void test_deterministic(void **state)
{
    (void)state;
    double t[2][6];
    for (int k = 0; k < 2; k++) {
        struct atr_engine *e = mk(2, 2 * 512, 1024, cost_tokens);
        const struct atr_sim_record *r[6];
        for (int i = 0; i < 6; i++)
            r[i] = add(e, (uint64_t)i, i * C0, i % 2 ? 70 : 100, 3,
                       i % 2 ? B : A2, i % 2 ? 4 : 6);
        run(e);
        for (int i = 0; i < 6; i++)
            t[k][i] = r[i]->finish + r[i]->cached_tokens;
        atr_engine_free(e);
    }
    assert_memory_equal(t[0], t[1], sizeof t[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_choice_by_prefix),
        cmocka_unit_test(test_per_slot_cache_hit),
        cmocka_unit_test(test_ram_cache_restores),
        cmocka_unit_test(test_ram_cache_limit),
        cmocka_unit_test(test_queue_when_slots_busy),
        cmocka_unit_test(test_context_limit_per_slot),
        cmocka_unit_test(test_decodes_first),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
