/* test-policy.c - each policy's decisions on small hand-made cases: naive
 * (salt, round robin), prefix-cache (round robin, ids untouched),
 * prefix-route (match, smallest tree, load override, eviction), compaction
 * (budget, stable head, reuse across turns, counters), max-tokens
 * (initial, session and global quantiles, truncation), and option errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static struct atr_policy *make(const char *name, unsigned replicas, const char *options)
{
    struct atr_policy_cfg cfg = { .n_replicas = replicas, .block_size = 16,
                                  .options = options, .seed = 1 };
    struct atr_error err = { "" };
    struct atr_policy *p = atr_policy_new(name, &cfg, &err);
    if (!p)
        fail_msg("%s: %s", name, err.msg);
    return p;
}

/* The error atr_policy_new gives, or fails when it succeeds. */
static const char *make_error(const char *name, const char *options)
{
    static struct atr_error err;
    struct atr_policy_cfg cfg = { .n_replicas = 2, .block_size = 16, .options = options };
    struct atr_policy *p = atr_policy_new(name, &cfg, &err);
    if (p) {
        atr_policy_free(p);
        fail_msg("%s with '%s' was accepted", name, options);
    }
    return err.msg;
}

/* A request and its default decision, as the drivers fill them. */
struct call {
    struct atr_policy_req r;
    struct atr_policy_decision d;
};

static struct call call_of(uint64_t id, size_t session, size_t turn, uint32_t tokens,
                           const uint64_t *ids, uint32_t n)
{
    struct call c = {
        .r = { .id = id, .session = session, .turn = turn, .prompt_tokens = tokens,
               .ids = ids, .n_ids = n, .block_size = 16, .recorded_output_tokens = 100 },
        .d = { .prompt_tokens = tokens, .ids = ids, .n_ids = n, .delegate = -1 },
    };
    return c;
}

static unsigned route(struct atr_policy *p, uint64_t id, const uint64_t *ids, uint32_t n)
{
    struct call c = call_of(id, 0, 0, n * 16, ids, n);
    atr_policy_decide(p, &c.r, &c.d);
    return c.d.replica;
}

static struct atr_policy_stats stats_of(const struct atr_policy *p)
{
    struct atr_policy_stats s;
    atr_policy_get_stats(p, &s);
    return s;
}

static void test_naive(void **state)
{
    (void)state;
    struct atr_policy *p = make("naive", 3, NULL);
    uint64_t ids[2] = { 1, 2 };
    unsigned want[4] = { 0, 1, 2, 0 };
    for (int i = 0; i < 4; i++) {
        struct call c = call_of((uint64_t)i, 0, (size_t)i, 32, ids, 2);
        atr_policy_decide(p, &c.r, &c.d);
        assert_int_equal(c.d.replica, want[i]);
        assert_true(c.d.salt);
        assert_ptr_equal(c.d.ids, ids);
        assert_int_equal(c.d.max_tokens, 0);
    }
    assert_int_equal(stats_of(p).salted, 4);
    assert_int_equal(stats_of(p).requests, 4);
    atr_policy_free(p);
}

static void test_prefix_cache(void **state)
{
    (void)state;
    struct atr_policy *p = make("prefix-cache", 2, NULL);
    uint64_t ids[3] = { 7, 8, 9 };
    for (int i = 0; i < 3; i++) {
        struct call c = call_of((uint64_t)i, 0, (size_t)i, 50, ids, 3);
        atr_policy_decide(p, &c.r, &c.d);
        assert_int_equal(c.d.replica, (unsigned)(i % 2));
        assert_false(c.d.salt);
        assert_ptr_equal(c.d.ids, ids);
        assert_int_equal(c.d.n_ids, 3);
        assert_int_equal(c.d.prompt_tokens, 50);
    }
    assert_int_equal(stats_of(p).salted, 0);
    atr_policy_free(p);
}

static void test_prefix_route_match(void **state)
{
    (void)state;
    struct atr_policy *p = make("prefix-route", 2, NULL);
    uint64_t a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 9 }, c[2] = { 50, 51 },
             d[3] = { 50, 51, 52 };
    assert_int_equal(route(p, 0, a, 4), 0);       /* empty trees: the lower index */
    assert_int_equal(route(p, 1, b, 4), 0);       /* 3/4 matched on 0 */
    assert_int_equal(stats_of(p).routed_by_match, 1);
    assert_int_equal(route(p, 2, c, 2), 1);       /* no match: the smallest tree */
    assert_int_equal(route(p, 3, d, 3), 1);       /* 2/3 on 1 */
    assert_int_equal(stats_of(p).routed_by_match, 2);
    assert_int_equal(stats_of(p).routed_by_load, 0);
    atr_policy_free(p);

    /* A threshold above the match sends B to the smallest tree instead. */
    p = make("prefix-route", 2, "cache_threshold=0.8");
    assert_int_equal(route(p, 0, a, 4), 0);
    assert_int_equal(route(p, 1, b, 4), 1);
    assert_int_equal(stats_of(p).routed_by_match, 0);
    atr_policy_free(p);
}

static void test_prefix_route_load(void **state)
{
    (void)state;
    struct atr_policy *p = make("prefix-route", 2, "balance_abs=2,balance_rel=1.5");
    uint64_t a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 9 }, e[4] = { 1, 2, 3, 10 };
    assert_int_equal(route(p, 0, a, 4), 0);
    struct call busy[3];
    for (int i = 0; i < 3; i++) {                 /* three in flight on replica 0 */
        busy[i] = call_of(10 + (uint64_t)i, 1, 0, 64, a, 4);
        busy[i].d.replica = 0;
        atr_policy_started(p, &busy[i].r, &busy[i].d);
    }
    assert_int_equal(atr_policy_load(p)[0], 3);
    /* 3 - 0 > 2 and 3 > 0 * 1.5: imbalanced, the match is overridden. */
    assert_int_equal(route(p, 1, b, 4), 1);
    assert_int_equal(stats_of(p).routed_by_load, 1);
    struct atr_policy_outcome o = { .success = true, .output_tokens = 5 };
    atr_policy_finished(p, &busy[0].r, &busy[0].d, &o);
    /* 2 - 0 is not > 2: balanced again; E matches 3/4 on both replicas
     * now, the tie goes to the lower load (replica 1). */
    assert_int_equal(route(p, 2, e, 4), 1);
    assert_int_equal(stats_of(p).routed_by_match, 1);
    for (int i = 1; i < 3; i++)
        atr_policy_finished(p, &busy[i].r, &busy[i].d, &o);
    atr_policy_free(p);

    /* sgl-router's 64 does not call 3 against 0 imbalanced; atr's default
     * (2) does. */
    p = make("prefix-route", 2, "balance_abs=64");
    assert_int_equal(route(p, 0, a, 4), 0);
    struct call one = call_of(10, 1, 0, 64, a, 4);
    for (int i = 0; i < 3; i++)
        atr_policy_started(p, &one.r, &one.d);
    assert_int_equal(route(p, 1, b, 4), 0);
    assert_int_equal(stats_of(p).routed_by_load, 0);
    atr_policy_free(p);
    p = make("prefix-route", 2, NULL);
    assert_int_equal(route(p, 0, a, 4), 0);
    for (int i = 0; i < 3; i++)
        atr_policy_started(p, &one.r, &one.d);
    assert_int_equal(route(p, 1, b, 4), 1);
    assert_int_equal(stats_of(p).routed_by_load, 1);
    atr_policy_free(p);
}

/* Four sessions sharing a system prompt start at once on two replicas of
 * two slots: without slots known, the shared prefix draws three onto
 * replica 0 (3 - 0 > 2 only for the fourth), one more than it has slots;
 * with slots=2 a full replica sends the third to the free one. */
static unsigned place_four(const char *options, unsigned *on)
{
    struct atr_policy *p = make("prefix-route", 2, options);
    uint64_t ids[4][4] = { { 1, 2, 3, 10 }, { 1, 2, 3, 20 }, { 1, 2, 3, 30 }, { 1, 2, 3, 40 } };
    struct call c[4];
    on[0] = on[1] = 0;
    for (int i = 0; i < 4; i++) {
        c[i] = call_of((uint64_t)i, (size_t)i, 0, 64, ids[i], 4);
        atr_policy_decide(p, &c[i].r, &c[i].d);
        atr_policy_started(p, &c[i].r, &c[i].d);
        on[c[i].d.replica]++;
    }
    unsigned by_load = (unsigned)stats_of(p).routed_by_load;
    atr_policy_free(p);
    return by_load;
}

static void test_prefix_route_slots(void **state)
{
    (void)state;
    unsigned on[2];
    assert_int_equal(place_four(NULL, on), 1);
    assert_int_equal(on[0], 3);
    assert_int_equal(place_four("slots=2", on), 1);
    assert_int_equal(on[0], 2);
    assert_int_equal(on[1], 2);
    /* Every replica full: the match stands (nowhere is a slot free). */
    struct atr_policy *p = make("prefix-route", 2, "slots=1");
    uint64_t a[2] = { 1, 2 }, b[2] = { 5, 6 };
    struct call x = call_of(0, 0, 0, 32, a, 2), y = call_of(1, 1, 0, 32, b, 2);
    atr_policy_decide(p, &x.r, &x.d);
    atr_policy_started(p, &x.r, &x.d);
    atr_policy_decide(p, &y.r, &y.d);
    atr_policy_started(p, &y.r, &y.d);
    assert_int_not_equal(x.d.replica, y.d.replica);
    assert_int_equal(route(p, 2, a, 2), x.d.replica);
    assert_int_equal(stats_of(p).routed_by_load, 0);
    atr_policy_free(p);
    assert_non_null(strstr(make_error("prefix-route", "slots=-1"), "slots"));
}

static void test_prefix_route_eviction(void **state)
{
    (void)state;
    /* One replica: what the tree kept shows in routed_by_match. */
    struct atr_policy *p = make("prefix-route", 1, "tree_blocks=16,cache_threshold=0.6");
    uint64_t x[8], y[8], z[2] = { 300, 301 }, q[5];
    for (int i = 0; i < 8; i++) {
        x[i] = 100 + (uint64_t)i;
        y[i] = 200 + (uint64_t)i;
    }
    route(p, 0, x, 8);
    route(p, 1, y, 8);                            /* 16 blocks: full */
    route(p, 2, z, 2);                            /* 18: the 4 oldest leaves go (x5..x8) */
    memcpy(q, x, 4 * sizeof *q);
    q[4] = 999;
    uint64_t before = stats_of(p).routed_by_match;
    route(p, 3, q, 5);                            /* x1..x4 kept: 4/5 */
    assert_int_equal(stats_of(p).routed_by_match, before + 1);
    route(p, 4, x, 8);                            /* x5.. gone: 4/8 is not > 0.6 */
    assert_int_equal(stats_of(p).routed_by_match, before + 1);
    route(p, 5, z, 2);                            /* the newest chain is whole */
    assert_int_equal(stats_of(p).routed_by_match, before + 2);
    atr_policy_free(p);
}

static void test_prefix_route_many(void **state)
{
    (void)state;
    /* Many sessions through a small tree: growth, eviction and matches
     * stay consistent (ASan checks the table), and a session's next turn
     * goes where its last one went while loads are balanced. */
    struct atr_policy *p = make("prefix-route", 4, "tree_blocks=3000");
    enum { SESSIONS = 64, TURNS = 6, STEP = 20 };
    uint64_t ids[TURNS * STEP];
    unsigned last[SESSIONS];
    uint64_t id = 0, same = 0;
    for (int t = 0; t < TURNS; t++)
        for (int s = 0; s < SESSIONS; s++) {
            uint32_t n = (uint32_t)((t + 1) * STEP);
            for (uint32_t i = 0; i < n; i++)
                ids[i] = ((uint64_t)s << 32) | i;
            unsigned r = route(p, id++, ids, n);
            assert_true(r < 4);
            same += t && r == last[s];
            last[s] = r;
        }
    assert_int_equal(same, (TURNS - 1) * SESSIONS);
    atr_policy_free(p);

    /* The same through trees far too small: eviction under way. */
    p = make("prefix-route", 4, "tree_blocks=500");
    for (int t = 0; t < TURNS; t++)
        for (int s = 0; s < SESSIONS; s++) {
            uint32_t n = (uint32_t)((t + 1) * STEP);
            for (uint32_t i = 0; i < n; i++)
                ids[i] = ((uint64_t)s << 32) | i;
            assert_true(route(p, id++, ids, n) < 4);
        }
    atr_policy_free(p);
}

static void test_prefix_route_options(void **state)
{
    (void)state;
    const char *m = make_error("prefix-route", "foo=1");
    assert_non_null(strstr(m, "unknown option 'foo'"));
    assert_non_null(strstr(m, "cache_threshold"));
    assert_non_null(strstr(m, "tree_blocks"));
    m = make_error("prefix-route", "cache_threshold=2");
    assert_non_null(strstr(m, "cache_threshold wants a number in [0, 1]"));
    m = make_error("prefix-route", "balance_rel=0.5");
    assert_non_null(strstr(m, "balance_rel"));
    m = make_error("prefix-route", "tree_blocks=abc");
    assert_non_null(strstr(m, "tree_blocks"));
}

/* A session's prompt: the chain 1000.. of n blocks. */
static void chain(uint64_t *ids, uint32_t n, uint64_t base)
{
    for (uint32_t i = 0; i < n; i++)
        ids[i] = base + i;
}

static void test_compaction_below_budget(void **state)
{
    (void)state;
    struct atr_policy *p = make("compaction", 2, NULL);
    uint64_t ids[250];
    chain(ids, 250, 1000);
    struct call c = call_of(0, 0, 0, 4000, ids, 250);
    atr_policy_decide(p, &c.r, &c.d);
    assert_ptr_equal(c.d.ids, ids);
    assert_int_equal(c.d.n_ids, 250);
    assert_int_equal(c.d.prompt_tokens, 4000);
    struct atr_policy_outcome o = { .success = true, .output_tokens = 10 };
    atr_policy_finished(p, &c.r, &c.d, &o);
    struct atr_policy_stats s = stats_of(p);
    assert_int_equal(s.tokens_saved, 0);
    assert_int_equal(s.compactions, 0);
    assert_int_equal(s.blocks_invalidated, 0);
    atr_policy_free(p);
}

static bool contains_id(const uint64_t *ids, uint32_t n, uint64_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static void test_compaction_session(void **state)
{
    (void)state;
    /* Defaults: budget 8192, head 2304 (144 blocks), tail 2048, summary
     * 256 (16 blocks). */
    struct atr_policy *p = make("compaction", 2, NULL);
    struct atr_policy_outcome o = { .success = true, .output_tokens = 10 };
    static uint64_t ids[875];
    chain(ids, 875, 1000);

    /* Turn 0: 10000 tokens, 625 blocks. The middle [144, 497) goes:
     * (10000 - 2048) / 16 = 497. */
    struct call t0 = call_of(0, 0, 0, 10000, ids, 625);
    atr_policy_decide(p, &t0.r, &t0.d);
    assert_int_equal(t0.d.prompt_tokens, 10000 - (497 - 144) * 16 + 256);
    assert_int_equal(t0.d.n_ids, 144 + 16 + (625 - 497));
    assert_ptr_not_equal(t0.d.ids, ids);
    assert_memory_equal(t0.d.ids, ids, 144 * sizeof *ids);
    for (uint32_t i = 144; i < t0.d.n_ids; i++)
        assert_false(contains_id(ids, 875, t0.d.ids[i]));
    uint64_t turn0[288];
    memcpy(turn0, t0.d.ids, sizeof turn0);
    struct atr_policy_stats s = stats_of(p);
    assert_int_equal(s.compactions, 1);
    assert_int_equal(s.tokens_saved, 10000 - 4608);
    assert_int_equal(s.blocks_invalidated, 0);    /* nothing was cached before it */
    atr_policy_finished(p, &t0.r, &t0.d, &o);

    /* Another session below the budget is left alone meanwhile. */
    struct call other = call_of(1, 1, 0, 3000, ids, 187);
    atr_policy_decide(p, &other.r, &other.d);
    assert_ptr_equal(other.d.ids, ids);
    atr_policy_finished(p, &other.r, &other.d, &o);

    /* Turn 1 extends turn 0 (10500 tokens, 656 blocks): mapped the same
     * way, 5108 tokens, below the budget: no new compaction, and its
     * first 288 ids are turn 0's exactly. */
    struct call t1 = call_of(2, 0, 1, 10500, ids, 656);
    atr_policy_decide(p, &t1.r, &t1.d);
    assert_int_equal(t1.d.prompt_tokens, 10500 - 5648 + 256);
    assert_int_equal(t1.d.n_ids, 144 + 16 + (656 - 497));
    assert_memory_equal(t1.d.ids, turn0, sizeof turn0);
    assert_false(contains_id(ids, 875, t1.d.ids[300]));
    uint64_t turn1_144 = t1.d.ids[144];
    s = stats_of(p);
    assert_int_equal(s.compactions, 1);
    assert_int_equal(s.tokens_saved, (10000 - 4608) + (10500 - 5108));
    atr_policy_finished(p, &t1.r, &t1.d, &o);

    /* Turn 2 (14000 tokens, 875 blocks) maps to 8608 > 8192: compacted
     * again from the head on, under a new epoch; the 319 - 144 blocks of
     * turn 1 past the head are lost to the cache. */
    struct call t2 = call_of(3, 0, 2, 14000, ids, 875);
    atr_policy_decide(p, &t2.r, &t2.d);
    uint32_t mid = (14000 - 2048) / 16;
    assert_int_equal(t2.d.prompt_tokens, 14000 - (mid - 144) * 16 + 256);
    assert_int_equal(t2.d.n_ids, 144 + 16 + (875 - mid));
    assert_memory_equal(t2.d.ids, ids, 144 * sizeof *ids);
    assert_true(t2.d.ids[144] != turn1_144);
    s = stats_of(p);
    assert_int_equal(s.compactions, 2);
    assert_int_equal(s.blocks_invalidated, 319 - 144);
    /* Left unfinished: atr_policy_free releases its ids. */
    atr_policy_free(p);
}

static void test_compaction_options(void **state)
{
    (void)state;
    struct atr_policy *p = make("compaction", 1, "budget=1000,keep_head=160,keep_tail=320,"
                                                 "summary=32");
    static uint64_t ids[100];
    chain(ids, 100, 5);
    struct call c = call_of(0, 0, 0, 1600, ids, 100);
    atr_policy_decide(p, &c.r, &c.d);
    /* head 10 blocks, middle [10, 80) -> 2 summary blocks, tail 20 */
    assert_int_equal(c.d.n_ids, 10 + 2 + 20);
    assert_int_equal(c.d.prompt_tokens, 1600 - 70 * 16 + 32);
    atr_policy_free(p);

    const char *m = make_error("compaction", "keep_head=4096,keep_tail=4096");
    assert_non_null(strstr(m, "below budget"));
    m = make_error("compaction", "budget=0");
    assert_non_null(strstr(m, "budget wants a number"));
    m = make_error("compaction", "tail=3");
    assert_non_null(strstr(m, "unknown option 'tail'"));
    assert_non_null(strstr(m, "keep_tail"));
}

static uint32_t cap_for(struct atr_policy *p, uint64_t id, size_t session)
{
    struct call c = call_of(id, session, 0, 100, NULL, 0);
    atr_policy_decide(p, &c.r, &c.d);
    return c.d.max_tokens;
}

/* One call of session s that produced `out` tokens (recorded `recorded`). */
static void run_call(struct atr_policy *p, uint64_t id, size_t session, uint32_t out,
                     uint32_t recorded)
{
    struct call c = call_of(id, session, 0, 100, NULL, 0);
    c.r.recorded_output_tokens = recorded;
    atr_policy_decide(p, &c.r, &c.d);
    atr_policy_started(p, &c.r, &c.d);
    struct atr_policy_outcome o = { .success = true, .output_tokens = out };
    atr_policy_finished(p, &c.r, &c.d, &o);
}

static void test_max_tokens(void **state)
{
    (void)state;
    struct atr_policy *p = make("max-tokens", 2, NULL);
    assert_int_equal(cap_for(p, 0, 0), 640);      /* 512 * 1.25 */
    run_call(p, 1, 0, 100, 100);                  /* cap 640 */
    assert_int_equal(cap_for(p, 2, 0), 125);      /* global {100} */
    run_call(p, 3, 0, 200, 200);                  /* cap 125: truncated by 75 */
    run_call(p, 4, 0, 300, 300);                  /* global {100,200}: cap 250, cut 50 */
    run_call(p, 5, 1, 2000, 2000);                /* global {100,200,300}: cap 375 */
    /* session 0 has three: its 0.9 quantile is 300; session 1 has one:
     * the global {100,200,300,2000} gives 2000. */
    assert_int_equal(cap_for(p, 6, 0), 375);
    assert_int_equal(cap_for(p, 7, 1), 2500);
    assert_int_equal(cap_for(p, 8, 9), 2500);
    struct atr_policy_stats s = stats_of(p);
    assert_int_equal(s.truncated, 3);
    assert_int_equal(s.tokens_cut, 75 + 50 + 1625);
    assert_int_equal(s.reserved_tokens, 640 + 125 + 250 + 375);
    assert_int_equal(s.reserve_saved, 4 * 4096 - (640 + 125 + 250 + 375));
    atr_policy_free(p);

    /* Quantile and clamps from the options. */
    p = make("max-tokens", 1, "quantile=0.5,max=240,min=20");
    run_call(p, 0, 0, 100, 100);
    run_call(p, 1, 0, 200, 200);
    run_call(p, 2, 0, 300, 300);
    assert_int_equal(cap_for(p, 3, 0), 240);      /* 200 * 1.25 = 250, clamped */
    run_call(p, 4, 1, 1, 1);
    run_call(p, 5, 1, 1, 1);
    run_call(p, 6, 1, 2, 2);
    assert_int_equal(cap_for(p, 7, 1), 20);       /* {1,1,2}: 1 * 1.25 -> 2, clamped up */
    atr_policy_free(p);
}

static void test_max_tokens_reservoir(void **state)
{
    (void)state;
    /* The global history keeps the last 4096 outputs: old ones leave. */
    struct atr_policy *p = make("max-tokens", 1, "min=1,margin=1");
    uint64_t id = 0;
    for (int i = 0; i < 4096; i++)
        run_call(p, id++, (size_t)i, 1000, 1000);
    assert_int_equal(cap_for(p, id++, 99999), 1000);
    for (int i = 0; i < 4096; i++)
        run_call(p, id++, (size_t)(5000 + i), 10, 10);
    assert_int_equal(cap_for(p, id++, 99999), 10);
    atr_policy_free(p);
}

static void test_max_tokens_options(void **state)
{
    (void)state;
    const char *m = make_error("max-tokens", "min=100,max=50");
    assert_non_null(strstr(m, "min (100) is above max (50)"));
    m = make_error("max-tokens", "quantile=1.5");
    assert_non_null(strstr(m, "quantile wants a number in [0, 1]"));
    m = make_error("max-tokens", "budget=5");
    assert_non_null(strstr(m, "unknown option 'budget'"));
    assert_non_null(strstr(m, "quantile"));
    m = make_error("max-tokens", "margin");
    assert_non_null(strstr(m, "not key=value"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive),
        cmocka_unit_test(test_prefix_cache),
        cmocka_unit_test(test_prefix_route_match),
        cmocka_unit_test(test_prefix_route_load),
        cmocka_unit_test(test_prefix_route_slots),
        cmocka_unit_test(test_prefix_route_eviction),
        cmocka_unit_test(test_prefix_route_many),
        cmocka_unit_test(test_prefix_route_options),
        cmocka_unit_test(test_compaction_below_budget),
        cmocka_unit_test(test_compaction_session),
        cmocka_unit_test(test_compaction_options),
        cmocka_unit_test(test_max_tokens),
        cmocka_unit_test(test_max_tokens_reservoir),
        cmocka_unit_test(test_max_tokens_options),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
