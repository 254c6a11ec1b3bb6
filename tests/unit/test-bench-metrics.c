/* test-bench-metrics.c - a run's benchmark figures (bench/metrics.h): the
 * real ISO-Bench console block, benchmark_throughput and benchmark_latency
 * lines, hostile text, atr's own summary, and the JSON members written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/metrics.h"

#define EPS 1e-9

static size_t parse(struct atr_bench_metrics *m, const char *text)
{
    return atr_bench_metrics_parse(m, text, strlen(text));
}

/* The members write() gives, wrapped in an object as result files are
 * written (Python's separators). */
static void write_json(const struct atr_bench_metrics *m, char *out, size_t cap)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_bench_metrics_write(&w, m);
    atr_jw_object_end(&w);
    assert_int_equal(atr_jw_finish(&w), 0);
    assert_true(b.len < cap);
    memcpy(out, b.data, b.len + 1);
    atr_buf_release(&b);
}

static void test_init(void **state)
{
    struct atr_bench_metrics m;
    memset(&m, 0x55, sizeof m);
    atr_bench_metrics_init(&m);
    assert_true(isnan(m.req_s) && isnan(m.ttft.p99) && isnan(m.e2el.mean));
    assert_true(isnan(m.avg_latency_s) && isnan(m.duration_s));
    assert_int_equal(m.completed, -1);
    assert_int_equal(m.failed, -1);
    assert_int_equal(m.n_figures, 0);
    char json[64];
    write_json(&m, json, sizeof json);
    assert_string_equal(json, "{}");
}

/* From e206b543_human_result.json's raw_output: the block is printed twice,
 * the second time without counts or section rules. */
static const char iso_raw[] =
    "100%|##########| 100/100 [00:02<00:00, 49.40it/s]\n"
    "============ Serving Benchmark Result ============\n"
    "Successful requests:                     100       \n"
    "Benchmark duration (s):                  2.02      \n"
    "Total input tokens:                      23100     \n"
    "Total generated tokens:                  6400      \n"
    "Request throughput (req/s):              49.40     \n"
    "Output token throughput (tok/s):         3161.47   \n"
    "Total Token throughput (tok/s):          14572.41  \n"
    "---------------Time to First Token----------------\n"
    "Mean TTFT (ms):                          574.18    \n"
    "Median TTFT (ms):                        533.96    \n"
    "P99 TTFT (ms):                           920.66    \n"
    "-----Time per Output Token (excl. 1st token)------\n"
    "Mean TPOT (ms):                          22.76     \n"
    "Median TPOT (ms):                        23.42     \n"
    "P99 TPOT (ms):                           30.25     \n"
    "---------------Inter-token Latency----------------\n"
    "Mean ITL (ms):                           22.66     \n"
    "Median ITL (ms):                         16.98     \n"
    "P99 ITL (ms):                            273.01    \n"
    "==================================================\n"
    "============ Serving Benchmark Result ============\n"
    "Request throughput (req/s):              49.40     \n"
    "Output token throughput (tok/s):         3161.47   \n"
    "Total Token throughput (tok/s):          14572.41  \n"
    "Mean TTFT (ms):                          574.18    \n"
    "Median TTFT (ms):                        533.96    \n"
    "P99 TTFT (ms):                           920.66    \n"
    "Mean TPOT (ms):                          22.76     \n"
    "Median TPOT (ms):                        23.42     \n"
    "P99 TPOT (ms):                           30.25     \n"
    "Mean ITL (ms):                           22.66     \n"
    "Median ITL (ms):                         16.98     \n"
    "P99 ITL (ms):                            273.01    \n"
    "==================================================\n"
    "BENCHMARK_DONE\n";

static void test_iso_block(void **state)
{
    struct atr_bench_metrics m;
    assert_int_equal(parse(&m, iso_raw), 14);
    assert_int_equal(m.completed, 100);
    assert_int_equal(m.failed, -1);
    assert_float_equal(m.duration_s, 2.02, EPS);
    assert_float_equal(m.req_s, 49.40, EPS);
    assert_float_equal(m.out_tok_s, 3161.47, EPS);
    assert_float_equal(m.total_tok_s, 14572.41, EPS);
    assert_float_equal(m.ttft.mean, 574.18, EPS);
    assert_float_equal(m.tpot.median, 23.42, EPS);
    assert_float_equal(m.itl.p99, 273.01, EPS);
    assert_true(isnan(m.ttft.p90) && isnan(m.e2el.mean));
    /* The file's own metrics object, member for member, then the counts. */
    char json[1024];
    write_json(&m, json, sizeof json);
    assert_string_equal(json,
        "{\"ttft_mean_ms\": 574.18, \"ttft_median_ms\": 533.96, \"ttft_p99_ms\": 920.66, "
        "\"tpot_mean_ms\": 22.76, \"tpot_median_ms\": 23.42, \"tpot_p99_ms\": 30.25, "
        "\"itl_mean_ms\": 22.66, \"itl_median_ms\": 16.98, \"itl_p99_ms\": 273.01, "
        "\"request_throughput_req_s\": 49.40, \"output_token_throughput_tok_s\": 3161.47, "
        "\"total_token_throughput_tok_s\": 14572.41, \"completed\": 100, "
        "\"duration_s\": 2.02}");
}

/* Newer vLLM: lower-case "token", P90, E2EL, failures; \r\n line ends and
 * colour codes before a line. */
static void test_newer_block(void **state)
{
    struct atr_bench_metrics m;
    const char *t = "Successful requests:  98\r\n"
                    "Failed requests:  2\r\n"
                    "Total token throughput (tok/s):  12.5\r\n"
                    "\x1b[1m\x1b[32mP90 TTFT (ms):  40.5\x1b[0m\r\n"
                    "  P99.9 TTFT (ms):  99.0\r\n"
                    "Mean E2EL (ms):  1000.25\r\n"
                    "P90 E2EL (ms):  1500\r\n"
                    "P99 E2EL (ms):  2000.125\r\n"
                    "Peak output token throughput (tok/s):  77.00\r\n";
    assert_int_equal(parse(&m, t), 7);
    assert_int_equal(m.completed, 98);
    assert_int_equal(m.failed, 2);
    assert_float_equal(m.total_tok_s, 12.5, EPS);
    assert_true(isnan(m.out_tok_s));
    assert_float_equal(m.ttft.p90, 40.5, EPS);
    assert_true(isnan(m.ttft.p99));
    assert_float_equal(m.e2el.mean, 1000.25, EPS);
    assert_float_equal(m.e2el.p90, 1500, EPS);
    assert_float_equal(m.e2el.p99, 2000.125, EPS);
}

static void test_throughput_lines(void **state)
{
    struct atr_bench_metrics m;
    assert_int_equal(parse(&m, "Processed prompts: 100%\r"
                               "Throughput: 4.52 requests/s, 2314.12 total tokens/s, "
                               "578.53 output tokens/s\n"), 3);
    assert_float_equal(m.req_s, 4.52, EPS);
    assert_float_equal(m.total_tok_s, 2314.12, EPS);
    assert_float_equal(m.out_tok_s, 578.53, EPS);

    /* Older scripts: one token figure, prompt and output together. */
    assert_int_equal(parse(&m, "Throughput: 4.52 requests/s, 2314.12 tokens/s"), 2);
    assert_float_equal(m.req_s, 4.52, EPS);
    assert_float_equal(m.total_tok_s, 2314.12, EPS);
    assert_true(isnan(m.out_tok_s));

    /* Taken as far as the line reads right. */
    assert_int_equal(parse(&m, "Throughput: 4.52 requests/s, inf tokens/s"), 1);
    assert_int_equal(parse(&m, "Throughput: 4.52 tokens/s"), 0);
}

static void test_latency_script(void **state)
{
    struct atr_bench_metrics m;
    const char *t = "Warming up...\n"
                    "Profiling iterations: 100%|###| 30/30\n"
                    "Avg latency: 1.2345 seconds\n"
                    "10% percentile latency: 1.1 seconds\n"
                    "25% percentile latency: 1.15 seconds\n"
                    "50% percentile latency: 1.2 seconds\n"
                    "75% percentile latency: 1.25 seconds\n"
                    "90% percentile latency: 1.3 seconds\n"
                    "99% percentile latency: 1.5 seconds\n";
    assert_int_equal(parse(&m, t), 5);
    assert_float_equal(m.avg_latency_s, 1.2345, EPS);
    assert_float_equal(m.e2el.mean, 1234.5, 1e-6);
    assert_float_equal(m.e2el.median, 1200, 1e-6);
    assert_float_equal(m.e2el.p90, 1300, 1e-6);
    assert_float_equal(m.e2el.p99, 1500, 1e-6);
    char json[512];
    write_json(&m, json, sizeof json);
    assert_string_equal(json, "{\"e2el_mean_ms\": 1234.50, \"e2el_median_ms\": 1200.00, "
                              "\"e2el_p90_ms\": 1300.00, \"e2el_p99_ms\": 1500.00, "
                              "\"avg_latency_s\": 1.23}");
}

static void test_last_wins(void **state)
{
    struct atr_bench_metrics m;
    assert_int_equal(parse(&m, "Mean TTFT (ms): 1\nMean TTFT (ms): 2\n"
                               "Throughput: 1 requests/s\nRequest throughput (req/s): 3\n"), 2);
    assert_float_equal(m.ttft.mean, 2, EPS);
    assert_float_equal(m.req_s, 3, EPS);
    /* A later line with no figure (cut off, nan) leaves the earlier one. */
    assert_int_equal(parse(&m, "P99 TTFT (ms): 920.66\nP99 TTFT (ms): nan\nP99 TTFT (ms):"), 1);
    assert_float_equal(m.ttft.p99, 920.66, EPS);
}

static void test_hostile(void **state)
{
    struct atr_bench_metrics m;
    static const char *const refused[] = {
        "P99 TTFT (ms):",
        "P99 TTFT (ms):      ",
        "P99 TTFT (ms): inf",
        "P99 TTFT (ms): nan",
        "P99 TTFT (ms): -1.5",
        "P99 TTFT (ms): -0",
        "P99 TTFT (ms): 1e400",
        "P99 TTFT (ms): 0x10",
        "P99 TTFT (ms): 1.2.3",
        "P99 TTFT (ms): 12ms",
        "P99 TTFT (ms): 1234567890123456789012345678901234567890123456789012345678901234567890",
        "P99 TTFT (ms): 1234567890123456789012345678901234567890123456789012345678901234567890...",
        "P99 TTFT",
        "P99 TTFT (ms) 5",
        "Successful requests: 1.5",
        "Successful requests: 1e300",
        "Avg latency: -1 seconds",
        "99% percentile latency: inf seconds",
        "Throughput: nan requests/s, 5 tokens/s",
        "\x1b[",
        "\x1b[1",
        "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_int_equal(parse(&m, refused[i]), 0);
    /* Finite in seconds, past a double in ms: the seconds stay. */
    assert_int_equal(parse(&m, "Avg latency: 1e307 seconds"), 1);
    assert_true(isnan(m.e2el.mean));

    /* NULs inside and between lines; a length short of the text's end. */
    const char nul[] = "Mean TTFT (ms): 5\0\nMean ITL\0(ms): 6\n\0Median ITL (ms): 7\n"
                       "Median ITL (ms): 8\n\0\0";
    assert_int_equal(atr_bench_metrics_parse(&m, nul, sizeof nul - 1), 2);
    assert_float_equal(m.ttft.mean, 5, EPS);
    assert_true(isnan(m.itl.mean));
    assert_float_equal(m.itl.median, 8, EPS);
    const char *cut = "Mean TTFT (ms): 123456";
    assert_int_equal(atr_bench_metrics_parse(&m, cut, strlen(cut) - 3), 1);
    assert_float_equal(m.ttft.mean, 123, EPS);
    assert_int_equal(atr_bench_metrics_parse(&m, cut, 0), 0);
    assert_int_equal(atr_bench_metrics_parse(&m, NULL, 0), 0);

    /* A very long line with a figure's label buried in it is no figure. */
    static char big[100000];
    memset(big, 'x', sizeof big);
    memcpy(big + 5000, "Mean TTFT (ms): 5", 17);
    assert_int_equal(atr_bench_metrics_parse(&m, big, sizeof big), 0);
}

static void test_from_summary(void **state)
{
    struct atr_llm_bench_config cfg = {.percentiles = {50, 90, 99}, .n_percentiles = 3};
    struct atr_llm_summary s = {
        .completed = 9, .failed = 1, .duration = 3.5,
        .request_throughput = 2.5714, .output_throughput = 100.126,
        .total_token_throughput = 400.5,
        .ttft = {.mean = 10, .median = 9, .std = 1, .p = {9, 12, 15}},
        .tpot = {.mean = 2, .median = 2, .p = {2, 3, 4}},
        .itl = {.mean = 1, .median = 1, .p = {1, 2, NAN}},
        .e2el = {.mean = 100, .median = 90, .p = {90, 120, 150}},
    };
    struct atr_bench_metrics m;
    atr_bench_metrics_from_summary(&m, &s, &cfg);
    assert_int_equal(m.n_figures, 21);   /* 23 less itl_p99 (NAN) and avg_latency_s */
    assert_float_equal(m.ttft.p90, 12, EPS);
    assert_float_equal(m.ttft.p99, 15, EPS);
    assert_true(isnan(m.itl.p99));
    char json[1024];
    write_json(&m, json, sizeof json);
    assert_string_equal(json,
        "{\"ttft_mean_ms\": 10.00, \"ttft_median_ms\": 9.00, \"ttft_p90_ms\": 12.00, "
        "\"ttft_p99_ms\": 15.00, \"tpot_mean_ms\": 2.00, \"tpot_median_ms\": 2.00, "
        "\"tpot_p90_ms\": 3.00, \"tpot_p99_ms\": 4.00, \"itl_mean_ms\": 1.00, "
        "\"itl_median_ms\": 1.00, \"itl_p90_ms\": 2.00, \"e2el_mean_ms\": 100.00, "
        "\"e2el_median_ms\": 90.00, \"e2el_p90_ms\": 120.00, \"e2el_p99_ms\": 150.00, "
        "\"request_throughput_req_s\": 2.57, \"output_token_throughput_tok_s\": 100.13, "
        "\"total_token_throughput_tok_s\": 400.50, \"completed\": 9, \"failed\": 1, "
        "\"duration_s\": 3.50}");

    /* vLLM's default {99}: no p90. */
    struct atr_llm_bench_config dflt = {0};
    atr_bench_metrics_from_summary(&m, &s, &dflt);
    assert_float_equal(m.ttft.p99, 9, EPS);   /* p[0] is 99 here */
    assert_true(isnan(m.ttft.p90));

    /* Nothing completed: counts and duration, no metrics. */
    s.completed = 0;
    s.failed = 10;
    atr_bench_metrics_from_summary(&m, &s, &cfg);
    assert_int_equal(m.n_figures, 3);
    write_json(&m, json, sizeof json);
    assert_string_equal(json, "{\"completed\": 0, \"failed\": 10, \"duration_s\": 3.50}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_iso_block),
        cmocka_unit_test(test_newer_block),
        cmocka_unit_test(test_throughput_lines),
        cmocka_unit_test(test_latency_script),
        cmocka_unit_test(test_last_wins),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_from_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
