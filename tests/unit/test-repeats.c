/* test-repeats.c - the table over repeats (report/repeats.h): runs grouped
 * by target and policy, the ratio of medians against naive, failed runs
 * counted and left out, the method each line names, and the checks
 * (mixed metric sets, one repeat twice). Interval widths are stats/ci's
 * (its own tests); here only what this module decides. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/repeats.h"

static struct atr_compare_row row(const char *policy, double scale)
{
    return (struct atr_compare_row){
        .target = "sim:x", .policy = policy, .ttft_p50_ms = 100 * scale,
        .ttft_p99_ms = 200 * scale, .e2el_p50_ms = 1000 * scale, .e2el_p99_ms = 2000 * scale,
        .request_throughput = 10 / scale, .output_throughput = 500 / scale,
        .ttft_mean_ms = NAN, .e2el_mean_ms = NAN, .session_mean_ms = NAN,
        .session_p50_ms = NAN, .session_p99_ms = NAN,
    };
}

/* The line of policy p and metric m in the table text. */
static const char *line_of(const char *text, const char *p, const char *m)
{
    char key[128];
    snprintf(key, sizeof key, "| %s", p);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)len, l);
        if (strstr(buf, key) && strstr(buf, m))
            return l;
    }
    return NULL;
}

static void test_ratio_and_failures(void **state)
{
    (void)state;
    struct atr_repeats *r = atr_repeats_new(5, ATR_REPEATS_MARGIN);
    const double noise[] = {1.00, 1.01, 0.99, 1.02, 0.98};
    for (unsigned k = 1; k <= 5; k++) {
        struct atr_compare_row a = row("naive", noise[k - 1]);
        struct atr_compare_row b = row("prefix-cache", 0.5 * noise[k - 1]);
        atr_repeats_add_row(r, &a, k);
        if (k == 3)
            atr_repeats_add_failed(r, "sim:x", "prefix-cache", k);
        else
            atr_repeats_add_row(r, &b, k);
    }
    struct atr_error err;
    assert_int_equal(atr_repeats_check(r, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_repeats_write_markdown(&b, r), 0);
    const char *l = line_of(b.data, "prefix-cache", "TTFT p50 ms");
    assert_non_null(l);
    assert_non_null(strstr(l, "| 4 "));            /* runs: the failed one left out */
    assert_non_null(strstr(l, "| 0.50"));          /* ratio of the medians, 0.5025 */
    assert_non_null(strstr(l, "| repeats"));
    l = line_of(b.data, "naive", "req/s");
    assert_non_null(l);
    assert_non_null(strstr(l, "| 5 "));
    assert_non_null(strstr(b.data, "failed runs, left out of the intervals: sim:x "
                                   "prefix-cache 1 of 5\n"));
    assert_null(strstr(b.data, "avg"));            /* a figure no run has is no line */
    atr_buf_release(&b);
    atr_repeats_free(r);
}

static void test_checks(void **state)
{
    (void)state;
    struct atr_repeats *r = atr_repeats_new(0, ATR_REPEATS_MARGIN);
    struct atr_compare_row a = row("naive", 1), b = row("naive", 1.1);
    b.ttft_p99_ms = NAN;
    atr_repeats_add_row(r, &a, 1);
    atr_repeats_add_row(r, &b, 2);
    struct atr_error err;
    assert_int_equal(atr_repeats_check(r, &err), -1);
    assert_string_equal(err.msg, "sim:x, policy naive: mixed metric sets: repeat 1 has "
                                 "TTFT p99 ms, repeat 2 not");
    atr_repeats_free(r);

    r = atr_repeats_new(0, ATR_REPEATS_MARGIN);
    atr_repeats_add_row(r, &a, 1);
    atr_repeats_add_row(r, &a, 1);
    assert_int_equal(atr_repeats_check(r, &err), -1);
    assert_string_equal(err.msg, "sim:x, policy naive: repeat 1 is there twice");
    atr_repeats_free(r);

    /* a row where nothing completed counts as failed, its figures unread */
    r = atr_repeats_new(0, ATR_REPEATS_MARGIN);
    struct atr_compare_row dead = row("naive", 1);
    dead.request_throughput = 0;
    dead.ttft_p99_ms = NAN;
    atr_repeats_add_row(r, &a, 1);
    atr_repeats_add_row(r, &dead, 2);
    assert_int_equal(atr_repeats_check(r, &err), 0);
    atr_repeats_free(r);
}

/* One run per policy with request-level values: within-run intervals, and
 * a throughput (one number per run) has none. */
static void test_within_run(void **state)
{
    (void)state;
    struct atr_llm_record recs[40];
    double chunks[40];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 40; i++) {
        recs[i].id = (uint64_t)i;
        recs[i].start_s = i;
        chunks[i] = i + 0.1 + 0.001 * (i % 7);
        recs[i].chunk_s = &chunks[i];
        recs[i].n_chunks = 1;
        recs[i].end_s = i + 1;
        recs[i].success = true;
    }
    struct atr_llm_summary sum;
    struct atr_llm_bench_config bc = {.date = "x", .slo_ttft_ms = -1, .slo_tpot_ms = -1,
                                      .slo_e2el_ms = -1};
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(recs, 40, &bc, &sum, &err), 0);
    struct atr_repeats *r = atr_repeats_new(1, ATR_REPEATS_MARGIN);
    atr_repeats_add_run(r, "sim:x", "naive", 1, &sum, &bc, recs, 40);
    atr_repeats_add_run(r, "sim:x", "prefix-cache", 1, &sum, &bc, recs, 40);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_repeats_write_markdown(&b, r), 0);
    const char *l = line_of(b.data, "prefix-cache", "TTFT p50 ms");
    assert_non_null(l);
    assert_non_null(strstr(l, "requests-block"));
    l = line_of(b.data, "prefix-cache", "req/s");
    assert_non_null(l);
    assert_non_null(strstr(l, "| none"));
    assert_non_null(strstr(l, "inconclusive"));    /* no interval: no verdict */
    atr_buf_release(&b);
    atr_repeats_free(r);
    atr_llm_summary_release(&sum);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ratio_and_failures),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_within_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
