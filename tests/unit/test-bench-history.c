/* test-bench-history.c - bench/history.c on result texts built here:
 * series and points (repeats of a commit), order by time and as read, the
 * baseline window, a planted step flagged where it starts, failed results,
 * and the errors (one point, mixed metrics, nothing measured). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/history.h"

/* One atr bench result of agent "a" at commit c0de00NN measured on day
 * NN, with throughput req_s and a TTFT p99; status "error" when req_s < 0. */
static void add(struct atr_bench_set *s, int night, double req_s, const char *variant)
{
    char text[512], name[64];
    if (req_s < 0)
        snprintf(text, sizeof text,
                 "{\"human_commit\": \"c0de%04x\", \"status\": \"error\", \"error\": \"Server "
                 "crashed\", \"variant\": \"%s\", \"timestamp\": \"2026-11-%02d 03:00:00\"}",
                 night, variant, night);
    else
        snprintf(text, sizeof text,
                 "{\"human_commit\": \"c0de%04x\", \"status\": \"success\", \"outcome\": "
                 "\"success\", \"variant\": \"%s\", \"timestamp\": \"2026-11-%02d 03:00:00\", "
                 "\"metrics\": {\"request_throughput_req_s\": %.17g, \"ttft_p99_ms\": %.17g}}",
                 night, variant, night, req_s, 1000 / req_s);
    snprintf(name, sizeof name, "n%d_%s.json", night, variant);
    struct atr_error err;
    assert_int_equal(atr_bench_read_text(s, name, text, strlen(text), &err), 0);
}

static const struct atr_history_opts opts = {5, 0.05, ATR_CI_SEED};

/* Nights added out of order; a little noise, a 20 % drop from night 9. */
static const double level[13] = {0, 100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.4, 80, 80.5, 79.6,
                                  80.2};

static void test_order_and_step(void **state)
{
    struct atr_bench_set s = {0};
    static const int order[] = {5, 1, 12, 3, 9, 7, 2, 11, 4, 6, 10, 8};
    for (size_t i = 0; i < 12; i++)
        add(&s, order[i], level[order[i]], "agent");
    struct atr_history h;
    struct atr_error err;
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), 0);
    assert_int_equal(h.n, 1);
    const struct atr_history_series *se = &h.s[0];
    assert_true(se->by_time);
    assert_int_equal(se->n, 12);
    assert_true(se->has[ATR_HM_REQ_S] && se->has[ATR_HM_TTFT_P99] && !se->has[ATR_HM_TOK_S]);
    for (size_t k = 0; k < 12; k++) {
        char want[16];
        snprintf(want, sizeof want, "c0de%04zx", k + 1);
        assert_string_equal(se->p[k].commit, want);
    }
    assert_false(se->p[0].cell[ATR_HM_REQ_S].compared);
    const struct atr_history_cell *c = &se->p[8].cell[ATR_HM_REQ_S];
    assert_true(c->compared && c->regression);
    assert_int_equal(c->baseline_runs, 5);
    assert_float_equal(c->ratio.point, 80 / 100.2, 1e-12);   /* median of nights 4-8 */
    assert_true(se->p[8].cell[ATR_HM_TTFT_P99].regression);   /* latency: 1.25x */
    /* only the step's first point is flagged, and both metrics there */
    assert_int_equal(h.regressions, 2);
    atr_history_release(&h);
    atr_bench_set_release(&s);
}

/* Two results of one commit are one point of two runs; failed results
 * are counted there and measured nowhere; two variants are two series. */
static void test_repeats_failed_series(void **state)
{
    struct atr_bench_set s = {0};
    for (int night = 1; night <= 6; night++) {
        add(&s, night, 100 + night % 2, "agent");
        add(&s, night, 100.5 - night % 2, "agent");
        add(&s, night, 50, "human");
    }
    add(&s, 3, -1, "agent");
    struct atr_history h;
    struct atr_error err;
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), 0);
    assert_int_equal(h.n, 2);
    assert_int_equal(h.results, 19);
    assert_int_equal(h.failed, 1);
    const struct atr_history_series *a = &h.s[0];
    assert_string_equal(a->label, "agent");
    assert_string_equal(h.s[1].label, "human");
    assert_int_equal(a->n, 6);
    assert_int_equal(a->p[2].ok, 2);
    assert_int_equal(a->p[2].failed, 1);
    assert_int_equal(a->p[5].cell[ATR_HM_REQ_S].runs, 2);
    assert_int_equal(a->p[5].cell[ATR_HM_REQ_S].baseline_runs, 10);
    assert_int_equal(h.regressions, 0);
    atr_history_release(&h);
    atr_bench_set_release(&s);
}

/* The window: with --window 2 the baseline is the 2 points before. */
static void test_window(void **state)
{
    struct atr_bench_set s = {0};
    for (int night = 1; night <= 6; night++)
        add(&s, night, level[night], "agent");
    struct atr_history h;
    struct atr_error err;
    struct atr_history_opts o = opts;
    o.window = 2;
    assert_int_equal(atr_history_build(&h, &s, &o, &err), 0);
    assert_int_equal(h.s[0].p[5].cell[ATR_HM_REQ_S].baseline_runs, 2);
    assert_int_equal(h.s[0].p[1].cell[ATR_HM_REQ_S].baseline_runs, 1);
    assert_string_equal(h.s[0].p[1].cell[ATR_HM_REQ_S].ratio.method, "none");
    atr_history_release(&h);
    atr_bench_set_release(&s);
}

static void test_errors(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_history h;
    struct atr_error err;
    add(&s, 1, 100, "agent");
    add(&s, 1, 101, "agent");
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), -1);
    assert_non_null(strstr(err.msg, "one point only"));
    assert_int_equal(h.n, 0);
    atr_bench_set_release(&s);

    add(&s, 1, -1, "agent");
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), -1);
    assert_non_null(strstr(err.msg, "no result that measured anything (1 failed)"));
    atr_bench_set_release(&s);

    add(&s, 1, 100, "agent");
    const char *bare = "{\"human_commit\": \"c0de0002\", \"status\": \"success\", \"outcome\": "
                       "\"success\", \"variant\": \"agent\", \"metrics\": "
                       "{\"request_throughput_req_s\": 99}}";
    assert_int_equal(atr_bench_read_text(&s, "bare.json", bare, strlen(bare), &err), 0);
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), -1);
    assert_non_null(strstr(err.msg, "bare.json: no p99 TTFT ms, which n1_agent.json has"));
    atr_bench_set_release(&s);
}

/* Without times: the order read, and the count of untimed results. */
static void test_untimed(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    for (int i = 3; i >= 1; i--) {
        char text[128], name[32];
        snprintf(text, sizeof text, "{\"request_throughput\": %d, \"mean_ttft_ms\": 5}", 10 + i);
        snprintf(name, sizeof name, "run%d.json", i);
        assert_int_equal(atr_bench_read_text(&s, name, text, strlen(text), &err), 0);
    }
    struct atr_history h;
    assert_int_equal(atr_history_build(&h, &s, &opts, &err), 0);
    assert_false(h.s[0].by_time);
    assert_int_equal(h.s[0].untimed, 3);
    assert_string_equal(h.s[0].p[0].file, "run3.json");
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_history_markdown(&b, &h), 0);
    assert_non_null(strstr(b.data, "Ordered as read: 3 of its results"));
    atr_buf_clear(&b);
    assert_int_equal(atr_history_json(&b, &h), 0);
    assert_non_null(strstr(b.data, "\"order\": \"read\""));
    atr_buf_release(&b);
    atr_history_release(&h);
    atr_bench_set_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_step),
        cmocka_unit_test(test_repeats_failed_series),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_untimed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
