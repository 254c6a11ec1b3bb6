/* test-retention.c - the KV retention curve (stats/retention.h) on made-up
 * sessions: a turn's pause lands in its bin, the shareable prefix is the
 * previous prompt plus its reply (never more than the prompt), cached
 * tokens are capped at it, turns without cached counts or after a failed
 * turn are unknown, sessions never mix. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "stats/metrics.h"

static struct atr_llm_record turn(const char *id, int64_t k, double send, double end,
                                  int64_t prompt, int64_t out, int64_t cached)
{
    struct atr_llm_record r;
    memset(&r, 0, sizeof r);
    r.trace_id = id;
    r.turn = k;
    r.scheduled_s = r.send_s = r.start_s = r.sent_s = send;
    r.end_s = end;
    r.prompt_tokens = prompt;
    r.output_tokens = out;
    r.cached_tokens = cached;
    r.success = true;
    return r;
}

static void test_bins(void **state)
{
    struct atr_llm_record r[] = {
        turn("b", 1, 10.05, 11, 300, 10, 250),   /* pause 0.05 s after b/0: bin 0 */
        turn("a", 0, 0, 1, 100, 20, -1),
        turn("a", 1, 3, 4, 200, 30, 120),        /* pause 2 s: bin 2, 120 of 120 */
        turn("b", 0, 9, 10, 200, 50, -1),
        turn("a", 2, 64, 65, 240, 10, 100),      /* pause 60 s: bin 4, 100 of 230 */
        turn("a", 3, 66, 67, 260, 10, -1),       /* no cached count: unknown */
    };
    struct atr_retention rt;
    atr_retention_of(r, sizeof r / sizeof *r, &rt);
    assert_int_equal(rt.turns, 3);
    assert_int_equal(rt.unknown, 1);
    assert_int_equal(rt.bins[0].turns, 1);
    assert_int_equal(rt.bins[0].shareable, 250);    /* 200 + 50 */
    assert_int_equal(rt.bins[0].cached, 250);
    assert_int_equal(rt.bins[2].turns, 1);
    assert_true(fabs(atr_retention_reuse(&rt.bins[2]) - 1.0) < 1e-12);
    assert_int_equal(rt.bins[4].shareable, 230);
    assert_true(fabs(atr_retention_reuse(&rt.bins[4]) - 100.0 / 230) < 1e-12);
    assert_true(isnan(atr_retention_reuse(&rt.bins[6])));
    assert_true(isinf(rt.bins[6].hi_s) && rt.bins[6].lo_s == 600);
}

static void test_caps_and_failures(void **state)
{
    struct atr_llm_record r[] = {
        turn("s", 0, 0, 1, 500, 100, -1),
        turn("s", 1, 1.5, 2, 400, 10, 450),      /* shareable capped at the prompt: 400 */
        turn("s", 2, 3, 4, 500, 10, 10),
        turn("s", 3, 5, 6, 600, 10, 600),        /* after a failed turn: unknown */
    };
    r[2].success = false;
    struct atr_retention rt;
    atr_retention_of(r, 4, &rt);
    assert_int_equal(rt.turns, 1);
    assert_int_equal(rt.unknown, 2);
    assert_int_equal(rt.bins[1].shareable, 400);
    assert_int_equal(rt.bins[1].cached, 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins),
        cmocka_unit_test(test_caps_and_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
