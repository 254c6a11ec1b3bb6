/* test-compare.c - `atr compare`'s reader of atr, vLLM and SGLang result
 * files, the cuts against naive, the row order, and the Markdown and JSON
 * output (session columns only when a row has them), on small hand-written
 * results whose figures are checked by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/compare.h"

#define EPS 1e-9

static int add(struct atr_compare *c, const char *name, const char *json, struct atr_error *err)
{
    return atr_compare_add_json(c, name, json, strlen(json), err);
}

static const struct atr_compare_row *only_row(struct atr_compare *c)
{
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_int_equal(n, 1);
    return r;
}

/* ---- the three kinds ---- */

static void test_atr_result(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "runs/r.prefix-cache.json",
                         "{\"backend\": \"sim\", \"model_id\": \"m\", \"request_rate\": 10.0,"
                         " \"request_throughput\": 2.5, \"output_throughput\": 80.0,"
                         " \"mean_ttft_ms\": 10.0, \"median_ttft_ms\": 9.0, \"p99_ttft_ms\": 30.0,"
                         " \"mean_e2el_ms\": 100.0, \"median_e2el_ms\": 90.0, \"p99_e2el_ms\": 300.0,"
                         " \"atr\": {\"cached_tokens\": 5, \"prefix_cache_hit_rate\": 0.75,"
                         " \"policy\": \"prefix-cache\", \"target\": \"sim:rtx3090/qwen3-4b-awq\","
                         " \"engine\": {\"profile\": \"other/x\"}}}",
                         &err),
                     0);
    const struct atr_compare_row *r = only_row(c);
    assert_string_equal(r->kind, "atr");
    assert_string_equal(r->target, "sim:rtx3090/qwen3-4b-awq");
    assert_string_equal(r->policy, "prefix-cache");
    assert_string_equal(r->file, "runs/r.prefix-cache.json");
    assert_float_equal(r->ttft_mean_ms, 10, EPS);
    assert_float_equal(r->ttft_p50_ms, 9, EPS);
    assert_float_equal(r->ttft_p99_ms, 30, EPS);
    assert_float_equal(r->e2el_mean_ms, 100, EPS);
    assert_float_equal(r->e2el_p50_ms, 90, EPS);
    assert_float_equal(r->e2el_p99_ms, 300, EPS);
    assert_float_equal(r->request_throughput, 2.5, EPS);
    assert_float_equal(r->output_throughput, 80, EPS);
    assert_float_equal(r->prefix_hit_rate, 0.75, EPS);
    assert_true(isnan(r->e2el_cut_pct) && isnan(r->ttft_cut_pct));
    atr_compare_free(c);
}

/* Without atr.target and atr.policy: sim:PROFILE and the file stem. */
static void test_atr_result_engine_profile(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "out/naive.json.gz",
                         "{\"backend\": \"sim\", \"model_id\": \"m\", \"mean_ttft_ms\": 1,"
                         " \"mean_e2el_ms\": 2, \"atr\": {\"engine\": {\"profile\": \"h100/x\"}}}",
                         &err),
                     0);
    const struct atr_compare_row *r = only_row(c);
    assert_string_equal(r->target, "sim:h100/x");
    assert_string_equal(r->policy, "naive");
    assert_true(isnan(r->prefix_hit_rate));
    atr_compare_free(c);
}

/* vLLM writes "request_rate": "inf"; older files have no e2el keys. */
static void test_vllm_result(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "vllm-run.json",
                         "{\"backend\": \"vllm\", \"model_id\": \"Qwen/Qwen3-4B-AWQ\","
                         " \"request_rate\": \"inf\", \"request_goodput\": null,"
                         " \"request_throughput\": 5.0, \"output_throughput\": 100.0,"
                         " \"mean_ttft_ms\": 20.0, \"median_ttft_ms\": 18.0, \"p99_ttft_ms\": 50.0,"
                         " \"mean_tpot_ms\": 6.0}",
                         &err),
                     0);
    const struct atr_compare_row *r = only_row(c);
    assert_string_equal(r->kind, "vllm");
    assert_string_equal(r->target, "vllm:Qwen/Qwen3-4B-AWQ");
    assert_string_equal(r->policy, "vllm-run");
    assert_float_equal(r->ttft_mean_ms, 20, EPS);
    assert_true(isnan(r->e2el_mean_ms) && isnan(r->e2el_p50_ms) && isnan(r->e2el_p99_ms));
    assert_true(isnan(r->prefix_hit_rate));
    atr_compare_free(c);
}

/* SGLang: bare Infinity, *_e2e_latency_ms keys, JSONL of several runs,
 * request throughput from completed / duration when absent. */
static void test_sglang_jsonl(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "dir/sg.jsonl",
                         "{\"backend\": \"sglang\", \"request_rate\": Infinity,"
                         " \"mean_e2e_latency_ms\": 976.0, \"median_e2e_latency_ms\": 950.0,"
                         " \"p99_e2e_latency_ms\": 1400.0, \"mean_ttft_ms\": 700.0,"
                         " \"request_throughput\": 1.5, \"output_throughput\": 33.0}\n"
                         "\n"
                         "{\"backend\": \"sglang\", \"request_rate\": Infinity,"
                         " \"mean_e2e_latency_ms\": 500.0, \"median_ttft_ms\": NaN,"
                         " \"completed\": 10, \"duration\": 4.0}\n",
                         &err),
                     0);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].kind, "sglang");
    assert_string_equal(r[0].target, "sglang");
    assert_string_equal(r[0].policy, "sg#1");
    assert_string_equal(r[1].policy, "sg#3");
    assert_float_equal(r[0].e2el_mean_ms, 976, EPS);
    assert_float_equal(r[0].e2el_p50_ms, 950, EPS);
    assert_float_equal(r[0].e2el_p99_ms, 1400, EPS);
    assert_float_equal(r[0].request_throughput, 1.5, EPS);
    assert_true(isnan(r[1].ttft_mean_ms) && isnan(r[1].ttft_p50_ms));
    assert_float_equal(r[1].request_throughput, 2.5, EPS);
    atr_compare_free(c);
}

/* A JSONL text of one object is a plain document: no "#LINE". */
static void test_single_line_jsonl(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "one.jsonl", "{\"mean_e2e_latency_ms\": 1}\n\n", &err), 0);
    assert_string_equal(only_row(c)->policy, "one");
    atr_compare_free(c);
}

/* ---- errors: file:line:col, and nothing added ---- */

static void expect_error(const char *json, const char *want)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "ok.json", "{\"mean_ttft_ms\": 1}", &err), 0);
    assert_int_equal(atr_compare_add_json(c, "f.json", json, strlen(json), &err), -1);
    if (strstr(err.msg, want) != err.msg) {
        fprintf(stderr, "got '%s', wanted prefix '%s'\n", err.msg, want);
        fail();
    }
    assert_null(strchr(err.msg, '\n'));
    size_t n;
    atr_compare_rows(c, &n);
    assert_int_equal(n, 1);
    atr_compare_free(c);
}

static void test_errors(void **state)
{
    expect_error("", "f.json:1:1: expected a JSON value");
    expect_error("{\"mean_ttft_ms\": 1,\n \"x\": ", "f.json:2:7: expected a JSON value");
    expect_error("[{\"mean_ttft_ms\": 1}]", "f.json:1:1: expected a result object, found array");
    expect_error("\n  {\"hello\": 1}", "f.json:2:3: expected a benchmark result: vLLM's");
    expect_error("{\"format\": \"atr-sweep/1\", \"runs\": []}",
                 "f.json:1:1: expected \"runs\", an array of runs, in an atr-sweep/1 result");
    expect_error("{\"mean_ttft_ms\": {}}",
                 "f.json:1:18: expected a number for \"mean_ttft_ms\", found object");
    expect_error("{\"mean_ttft_ms\": 1, \"atr\": {\"prefix_cache_hit_rate\": true}}",
                 "f.json:1:54: expected a number for \"prefix_cache_hit_rate\"");
    expect_error("\x7f" "ELF\x01\x02", "f.json:1:1: expected a JSON value");
    /* JSONL: the first line is good, later lines fail at their own line. */
    expect_error("{\"mean_ttft_ms\": 1}\n{\"mean_ttft_ms\": 2}\n{\"mean_ttft_ms\": ",
                 "f.json:3:18: expected a JSON value");
    expect_error("{\"mean_ttft_ms\": 1}\n\n  {\"ttft\": 2}",
                 "f.json:3:3: expected a benchmark result");
    expect_error("{\"mean_ttft_ms\": 1}\n[1]", "f.json:2:1: expected a result object");
    /* Not JSONL: a pretty document cut short reports the document's error. */
    expect_error("{\n \"mean_ttft_ms\": 1\n\n", "f.json:4:1: expected ',' or '}'");
}

/* ---- cuts and order ---- */

static void add_sim(struct atr_compare *c, const char *target, const char *policy, double ttft,
                    double e2el)
{
    char json[512];
    struct atr_error err;
    snprintf(json, sizeof json,
             "{\"mean_ttft_ms\": %g, \"mean_e2el_ms\": %g,"
             " \"atr\": {\"policy\": \"%s\", \"target\": \"%s\"}}",
             ttft, e2el, policy, target);
    assert_int_equal(add(c, "x.json", json, &err), 0);
}

static void test_cuts_and_order(void **state)
{
    struct atr_compare *c = atr_compare_new();
    add_sim(c, "sim:b", "zeta", 1, 1);
    add_sim(c, "sim:a", "learned", 40, 300);
    add_sim(c, "sim:a", "prefix-cache", 50, 198);
    add_sim(c, "sim:b", "alpha", 1, 1);
    add_sim(c, "sim:a", "naive", 100, 644);
    add_sim(c, "sim:a", "custom", 200, 1288);
    add_sim(c, "sim:a", "naive", 1, 1);      /* a second naive: cut against the first */
    add_sim(c, "sim:a", "prefix-route", 0, 0);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_int_equal(n, 8);
    const char *want[][2] = {
        {"sim:b", "alpha"}, {"sim:b", "zeta"}, {"sim:a", "naive"}, {"sim:a", "naive"},
        {"sim:a", "prefix-cache"}, {"sim:a", "prefix-route"}, {"sim:a", "learned"},
        {"sim:a", "custom"},
    };
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(r[i].target, want[i][0]);
        assert_string_equal(r[i].policy, want[i][1]);
    }
    assert_true(isnan(r[0].e2el_cut_pct) && isnan(r[1].ttft_cut_pct));   /* no naive */
    assert_true(isnan(r[2].e2el_cut_pct) && isnan(r[2].ttft_cut_pct));   /* baseline */
    assert_float_equal(r[2].e2el_mean_ms, 644, EPS);
    assert_float_equal(r[3].e2el_cut_pct, (644.0 - 1) / 644 * 100, 1e-9);
    assert_float_equal(r[4].e2el_cut_pct, (644.0 - 198) / 644 * 100, 1e-9);
    assert_float_equal(r[4].ttft_cut_pct, 50, 1e-9);
    assert_float_equal(r[5].e2el_cut_pct, 100, 1e-9);
    assert_float_equal(r[7].e2el_cut_pct, -100, 1e-9);                  /* slower */
    atr_compare_free(c);
}

static void test_add_row(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_compare_row row = {
        .policy = "prefix-cache", .target = "sim:t", .ttft_mean_ms = 1, .e2el_mean_ms = 25,
        .ttft_p50_ms = NAN, .ttft_p99_ms = NAN, .e2el_p50_ms = NAN, .e2el_p99_ms = NAN,
        .request_throughput = NAN, .output_throughput = NAN, .prefix_hit_rate = 0.5,
    };
    atr_compare_add_row(c, &row);
    row.policy = "naive", row.e2el_mean_ms = 100, row.ttft_mean_ms = 0;
    atr_compare_add_row(c, &row);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_int_equal(n, 2);
    assert_string_equal(r[0].policy, "naive");
    assert_string_equal(r[1].kind, "atr");
    assert_float_equal(r[1].e2el_cut_pct, 75, EPS);
    assert_true(isnan(r[1].ttft_cut_pct));   /* naive's mean TTFT is 0 */
    atr_compare_free(c);
}

/* ---- output ---- */

static struct atr_compare *small_table(void)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "p.json",
                         "{\"mean_ttft_ms\": 50.04, \"median_ttft_ms\": 40, \"p99_ttft_ms\": 90,"
                         " \"mean_e2el_ms\": 198, \"request_throughput\": 5.051,"
                         " \"output_throughput\": 161.66, \"atr\": {\"policy\": \"prefix-cache\","
                         " \"target\": \"sim:a|b\", \"prefix_cache_hit_rate\": 0.9314}}",
                         &err),
                     0);
    assert_int_equal(add(c, "n.json",
                         "{\"mean_ttft_ms\": 100, \"mean_e2el_ms\": 644, \"median_e2el_ms\": 600,"
                         " \"p99_e2el_ms\": 900, \"atr\": {\"policy\": \"naive\","
                         " \"target\": \"sim:a|b\", \"prefix_cache_hit_rate\": 0}}",
                         &err),
                     0);
    return c;
}

static void test_markdown(void **state)
{
    struct atr_compare *c = small_table();
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_compare_write_markdown(&b, c), 0);
    const char *want =
        "| target       | policy       | avg TTFT ms | p50 TTFT ms | p99 TTFT ms | avg E2E ms |"
        " p50 E2E ms | p99 E2E ms | req/s | out tok/s | prefix hit | E2E cut | TTFT cut |\n"
        "| ------------ | ------------ | ----------: | ----------: | ----------: | ---------: |"
        " ---------: | ---------: | ----: | --------: | ---------: | ------: | -------: |\n"
        "| sim:a&#124;b | naive        |       100.0 |         n/a |         n/a |      644.0 |"
        "      600.0 |      900.0 |   n/a |       n/a |       0.0% |     n/a |      n/a |\n"
        "| sim:a&#124;b | prefix-cache |        50.0 |        40.0 |        90.0 |      198.0 |"
        "        n/a |        n/a |  5.05 |     161.7 |      93.1% |  69.25% |   49.96% |\n";
    assert_string_equal(b.data, want);
    atr_buf_release(&b);
    atr_compare_free(c);
}

static void test_json(void **state)
{
    struct atr_compare *c = small_table();
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_compare_write_json(&b, c), 0);
    const char *want =
        "[\n"
        "{\"file\":\"n.json\",\"kind\":\"atr\",\"target\":\"sim:a|b\",\"policy\":\"naive\","
        "\"mean_ttft_ms\":100.0,\"p50_ttft_ms\":null,\"p99_ttft_ms\":null,"
        "\"mean_e2el_ms\":644.0,\"p50_e2el_ms\":600.0,\"p99_e2el_ms\":900.0,"
        "\"request_throughput\":null,\"output_throughput\":null,\"prefix_cache_hit_rate\":0.0,"
        "\"e2el_cut_pct\":null,\"ttft_cut_pct\":null},\n"
        "{\"file\":\"p.json\",\"kind\":\"atr\",\"target\":\"sim:a|b\",\"policy\":\"prefix-cache\","
        "\"mean_ttft_ms\":50.04,\"p50_ttft_ms\":40.0,\"p99_ttft_ms\":90.0,"
        "\"mean_e2el_ms\":198.0,\"p50_e2el_ms\":null,\"p99_e2el_ms\":null,"
        "\"request_throughput\":5.051,\"output_throughput\":161.66,"
        "\"prefix_cache_hit_rate\":0.9314,\"e2el_cut_pct\":69.25465838509317,"
        "\"ttft_cut_pct\":49.96}\n"
        "]\n";
    assert_string_equal(b.data, want);
    atr_buf_release(&b);
    atr_compare_free(c);

    c = atr_compare_new();
    assert_int_equal(atr_compare_write_json(&b, c), 0);
    assert_string_equal(b.data, "[]\n");
    atr_buf_release(&b);
    atr_compare_free(c);
}

/* Session completion columns: read from atr.sessions, in the table (in
 * seconds) and the JSON only when some row has them; a vLLM row shows -. */
static void test_session_columns(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "s.json",
                         "{\"mean_ttft_ms\": 10, \"mean_e2el_ms\": 100,"
                         " \"atr\": {\"policy\": \"naive\", \"target\": \"sim:t\","
                         " \"sessions\": {\"completed\": 2, \"failed\": 0,"
                         " \"mean_completion_ms\": 4500.0, \"median_completion_ms\": 4250.0,"
                         " \"p90_completion_ms\": 4900.0}}}",
                         &err),
                     0);
    assert_int_equal(add(c, "v.json", "{\"backend\": \"vllm\", \"model_id\": \"m\","
                                      " \"mean_ttft_ms\": 20, \"mean_e2el_ms\": 200}", &err),
                     0);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_float_equal(r[0].session_mean_ms, 4500, EPS);
    assert_float_equal(r[0].session_p50_ms, 4250, EPS);
    assert_true(isnan(r[0].session_p99_ms));        /* run without p99 */
    assert_true(isnan(r[1].session_mean_ms));
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_compare_write_markdown(&b, c), 0);
    assert_non_null(strstr(b.data, "| p99 E2E ms | avg session s | p50 session s |"
                                   " p99 session s | req/s |"));
    assert_non_null(strstr(b.data, "|          4.50 |          4.25 |           n/a |"));
    assert_non_null(strstr(b.data, "|           n/a |           n/a |           n/a |"));
    atr_buf_clear(&b);
    assert_int_equal(atr_compare_write_json(&b, c), 0);
    assert_non_null(strstr(b.data, "\"mean_session_ms\":4500.0,\"p50_session_ms\":4250.0,"
                                   "\"p99_session_ms\":null,\"request_throughput\""));
    assert_non_null(strstr(b.data, "\"mean_session_ms\":null,\"p50_session_ms\":null,"));
    atr_buf_release(&b);
    atr_compare_free(c);
}

/* The retention knob's cost from atr.engine: columns only once a row has
 * pins; the run without the knob shows its evictions, n/a pins; a bad
 * figure is an error at its place. */
static void test_kv_columns(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(add(c, "off.json", "{\"mean_e2el_ms\": 100, \"atr\": {\"policy\": \"naive\","
                                        " \"engine\": {\"profile\": \"t\", \"evictions\": 7}}}",
                         &err),
                     0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_compare_write_markdown(&b, c), 0);
    assert_null(strstr(b.data, "evictions"));         /* no pins yet: no columns */
    assert_int_equal(add(c, "on.json", "{\"mean_e2el_ms\": 90, \"atr\": {\"policy\": \"kv\","
                                       " \"engine\": {\"profile\": \"t\", \"evictions\": 9,"
                                       " \"kv_pins\": 12, \"kv_pins_dropped\": 3}}}",
                         &err),
                     0);
    atr_buf_clear(&b);
    assert_int_equal(atr_compare_write_markdown(&b, c), 0);
    assert_non_null(strstr(b.data, "| prefix hit | kv pins | pins dropped | evictions | E2E cut |"));
    assert_non_null(strstr(b.data, "|     n/a |          n/a |         7 |"));
    assert_non_null(strstr(b.data, "|      12 |            3 |         9 |"));
    atr_buf_clear(&b);
    assert_int_equal(atr_compare_write_json(&b, c), 0);
    assert_non_null(strstr(b.data, "\"kv_pins\":null,\"kv_pins_dropped\":null,\"evictions\":7.0,"));
    assert_non_null(strstr(b.data, "\"kv_pins\":12.0,\"kv_pins_dropped\":3.0,\"evictions\":9.0,"));
    atr_buf_release(&b);
    assert_int_equal(add(c, "bad.json",
                         "{\"mean_e2el_ms\": 1, \"atr\": {\"engine\": {\"kv_pins\": \"x\"}}}", &err),
                     -1);
    assert_non_null(strstr(err.msg, "bad.json:1:51: "));
    assert_non_null(strstr(err.msg, "expected a number for \"kv_pins\""));
    atr_compare_free(c);
}

/* A run's summary gives its session figures only for a multi-turn
 * workload, p99 from the session percentiles (default {90, 99}). */
static void test_summary_sessions(void **state)
{
    struct atr_llm_summary s;
    memset(&s, 0, sizeof s);
    struct atr_llm_bench_config cfg;
    memset(&cfg, 0, sizeof cfg);
    s.sessions.completion = (struct atr_llm_stat){.mean = 3000, .median = 2000, .p = {5000, 6000}};
    struct atr_compare *c = atr_compare_new();
    atr_compare_add_summary(c, "sim:t", "naive", &s, &cfg);     /* single turns */
    s.sessions.multi_turn = true;
    atr_compare_add_summary(c, "sim:t", "learned", &s, &cfg);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_true(isnan(r[0].session_mean_ms) && isnan(r[0].session_p99_ms));
    assert_float_equal(r[1].session_mean_ms, 3000, EPS);
    assert_float_equal(r[1].session_p50_ms, 2000, EPS);
    assert_float_equal(r[1].session_p99_ms, 6000, EPS);
    assert_true(isnan(r[1].ttft_p99_ms) == false);    /* requests: {99}, p[0] */
    atr_compare_free(c);
}

/* Rounded figures never show as "-0.0". */
static void test_negative_zero(void **state)
{
    struct atr_compare *c = atr_compare_new();
    add_sim(c, "t", "naive", 100, 1000);
    add_sim(c, "t", "other", 100.001, 1000.01);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_compare_write_markdown(&b, c), 0);
    assert_null(strstr(b.data, "-0.00%"));
    assert_non_null(strstr(b.data, " 0.00% |"));
    atr_buf_release(&b);
    atr_compare_free(c);
}

static void test_files(void **state)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    assert_int_equal(atr_compare_add_file(c, ATR_TEST_DATA "/compare/sglang_1015_1000_1024_128.jsonl",
                                          &err), 0);
    assert_int_equal(atr_compare_add_file(c, ATR_TEST_DATA "/compare/atr-rtx3090-naive.json",
                                          &err), 0);
    size_t n;
    const struct atr_compare_row *r = atr_compare_rows(c, &n);
    assert_int_equal(n, 3);
    assert_string_equal(r[0].policy, "sglang_1015_1000_1024_128#1");
    assert_float_equal(r[0].e2el_mean_ms, 42764.518483904474, 1e-9);
    assert_float_equal(r[0].request_throughput, 996 / 84.80149696883745, 1e-9);
    assert_string_equal(r[2].target, "sim:rtx3090/qwen3-4b-awq x2");
    assert_int_equal(atr_compare_add_file(c, ATR_TEST_DATA "/compare/nonexistent.json", &err), -1);
    assert_non_null(strstr(err.msg, "nonexistent.json: "));
    atr_compare_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atr_result),
        cmocka_unit_test(test_atr_result_engine_profile),
        cmocka_unit_test(test_vllm_result),
        cmocka_unit_test(test_sglang_jsonl),
        cmocka_unit_test(test_single_line_jsonl),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cuts_and_order),
        cmocka_unit_test(test_add_row),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_session_columns),
        cmocka_unit_test(test_kv_columns),
        cmocka_unit_test(test_summary_sessions),
        cmocka_unit_test(test_negative_zero),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
