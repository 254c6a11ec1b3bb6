/* test-bench-results.c - the benchmark result reader (bench/results.h):
 * ISO-Bench error texts to outcomes, atr's own files, vLLM and SGLang
 * figures, names to variant and agent, errors with line:col and the
 * all-or-nothing add, on small hand-written results and the real files in
 * tests/data/bench. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/report.h"
#include "bench/results.h"

static int add(struct atr_bench_set *s, const char *name, const char *json, struct atr_error *err)
{
    return atr_bench_read_text(s, name, json, strlen(json), err);
}

/* The outcome of an ISO-Bench file with this status, error and console tail. */
static enum atr_bench_outcome iso(const char *status, const char *error, const char *raw)
{
    char json[512];
    snprintf(json, sizeof json, "{\"human_commit\": \"abcd1234\", \"status\": \"%s\","
             " \"error\": %s, \"raw_output\": \"%s\", \"metrics\": {}}", status, error, raw);
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(add(&s, "abcd1234_agent_result.json", json, &err), 0);
    assert_int_equal(s.n, 1);
    enum atr_bench_outcome o = s.v[0].outcome;
    atr_bench_set_release(&s);
    return o;
}

static void test_iso_outcomes(void **state)
{
    assert_int_equal(iso("success", "null", ""), ATR_BENCH_SUCCESS);
    assert_int_equal(iso("error", "\"Server crashed after applying patch\"", ""),
                     ATR_BENCH_SERVER_CRASHED);
    assert_int_equal(iso("error", "\"No metrics in output\"", ""), ATR_BENCH_NO_METRICS);
    assert_int_equal(iso("timeout", "\"took too long\"", ""), ATR_BENCH_BENCHMARK_TIMEOUT);
    assert_int_equal(iso("error", "\"Server crashed after applying patch\"",
                         "torch.OutOfMemoryError: CUDA out of memory"), ATR_BENCH_OOM);
    assert_int_equal(iso("error", "\"Server failed to start within 300s\"", ""),
                     ATR_BENCH_STARTUP_TIMEOUT);
    assert_int_equal(iso("error", "\"patch does not apply\"", ""), ATR_BENCH_PATCH_FAILED);
    assert_int_equal(iso("error", "\"image not found\"", ""), ATR_BENCH_OTHER_ERROR);
}

static void test_atr_file(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(add(&s, "results/0a1b2c3d_agent_codex_result.json",
                         "{\"human_commit\": \"0a1b2c3d\", \"model\": \"m\", \"status\": \"error\","
                         " \"error\": \"killed\", \"outcome\": \"oom\", \"metrics\": {}}", &err), 0);
    assert_string_equal(s.v[0].kind, "atr");
    assert_int_equal(s.v[0].outcome, ATR_BENCH_OOM);
    assert_int_equal(s.v[0].status, ATR_BENCH_ERROR);
    assert_string_equal(s.v[0].variant, "agent");
    assert_string_equal(s.v[0].agent, "codex");
    assert_false(s.v[0].has_latency);
    atr_bench_set_release(&s);
}

/* A repeat's file: "repeat" read, its "_r<K>" not part of the agent; a
 * name ending so in a file without "repeat" is the agent's own name. */
static void test_repeat_names(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(add(&s, "r/c0ffee00_baseline_r2_result.json",
                         "{\"human_commit\": \"c0ffee00\", \"status\": \"success\", \"outcome\":"
                         " \"success\", \"variant\": \"baseline\", \"agent\": null, \"repeat\": 2}",
                         &err), 0);
    assert_int_equal(add(&s, "r/c0ffee00_agent_fast_r3_result.json",
                         "{\"human_commit\": \"c0ffee00\", \"status\": \"success\", \"repeat\": 3,"
                         " \"metrics\": {\"itl_median_ms\": 4.5, \"tpot_median_ms\": 5.5,"
                         " \"itl_p99_ms\": 9}}", &err), 0);
    assert_int_equal(add(&s, "r/c0ffee00_agent_x_r2_result.json",
                         "{\"human_commit\": \"c0ffee00\", \"status\": \"success\"}", &err), 0);
    assert_int_equal(s.v[0].repeat, 2);
    assert_string_equal(s.v[0].variant, "baseline");
    assert_null(s.v[0].agent);
    assert_int_equal(s.v[1].repeat, 3);
    assert_string_equal(s.v[1].agent, "fast");
    assert_true(s.v[1].itl_p50_ms == 4.5 && s.v[1].tpot_p50_ms == 5.5 && s.v[1].itl_p99_ms == 9);
    assert_int_equal(s.v[2].repeat, 1);
    assert_string_equal(s.v[2].agent, "x_r2");
    assert_int_equal(add(&s, "bad.json", "{\"human_commit\": \"c\", \"status\": \"success\",\n"
                         " \"repeat\": 0}", &err), -1);
    assert_string_equal(err.msg, "bad.json:2:12: expected a positive integer as \"repeat\"");
    assert_int_equal(s.n, 3);
    atr_bench_set_release(&s);
}

/* A folder lists a run's repeats in order after its first run. */
static void test_repeat_order(void **state)
{
    char dir[] = "/tmp/atr-test-bench-XXXXXX";
    const char *tmp = getenv("TMPDIR");
    char *path = NULL;
    if (tmp && asprintf(&path, "%s/atr-test-bench-XXXXXX", tmp) < 0)
        fail();
    char *d = mkdtemp(path ? path : dir);
    assert_non_null(d);
    static const char *const names[] = {"c_human_r10", "c_human_r2", "c_human", "c_baseline"};
    for (size_t i = 0; i < 4; i++) {
        char f[512];
        snprintf(f, sizeof f, "%s/%s_result.json", d, names[i]);
        FILE *fp = fopen(f, "w");
        assert_non_null(fp);
        fprintf(fp, "{\"human_commit\": \"c\", \"status\": \"success\", \"repeat\": %s}\n",
                i == 0 ? "10" : i == 1 ? "2" : "1");
        fclose(fp);
    }
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(atr_bench_read_dir(&s, d, &err), 0);
    assert_int_equal(s.n, 4);
    static const unsigned want[] = {1, 1, 2, 10};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(s.v[i].repeat, want[i]);
    assert_string_equal(s.v[0].variant, "baseline");
    for (size_t i = 0; i < 4; i++) {
        char f[512];
        snprintf(f, sizeof f, "%s/%s_result.json", d, names[i]);
        unlink(f);
    }
    rmdir(d);
    free(path);
    atr_bench_set_release(&s);
}

static void test_iso_metrics(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(atr_bench_read_file(&s, ATR_TEST_DATA "/bench/iso-bench/e206b543_human_result.json",
                                         &err), 0);
    const struct atr_bench_result *r = &s.v[0];
    assert_string_equal(r->kind, "iso-bench");
    assert_string_equal(r->commit, "e206b543");
    assert_string_equal(r->variant, "human");
    assert_null(r->agent);
    assert_float_equal(r->req_s, 49.4, 1e-9);
    assert_float_equal(r->tok_s, 3161.47, 1e-9);
    assert_float_equal(r->ttft_p99_ms, 920.66, 1e-9);
    assert_float_equal(r->tpot_p99_ms, 30.25, 1e-9);
    assert_true(r->has_latency);
    atr_bench_set_release(&s);
}

static void test_vllm_sglang(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(atr_bench_read_dir(&s, ATR_TEST_DATA "/bench/sglang", &err), 0);
    assert_int_equal(s.n, 2);        /* one per JSONL line, bare Infinity read */
    assert_string_equal(s.v[0].kind, "sglang");
    assert_float_equal(s.v[0].req_s, 996 / 84.80149696883745, 1e-9);   /* completed / duration */
    assert_true(s.v[0].has_latency);
    assert_int_equal(add(&s, "v.json", "{\"backend\": \"vllm\", \"model_id\": \"m\","
                         " \"completed\": 0, \"request_throughput\": 0.0}", &err), 0);
    assert_string_equal(s.v[2].kind, "vllm");
    assert_int_equal(s.v[2].outcome, ATR_BENCH_NO_METRICS);
    assert_int_equal(s.v[2].status, ATR_BENCH_ERROR);
    atr_bench_set_release(&s);
}

static void test_errors(void **state)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(add(&s, "a.json", "{\"status\": \"success\",\n \"outcome\": \"fine\"}", &err), -1);
    assert_string_equal(err.msg, "a.json:2:13: expected a known outcome (docs/bench.md)");
    assert_int_equal(add(&s, "a.json", "[1]", &err), -1);
    assert_string_equal(err.msg, "a.json:1:1: expected a result object, found array");
    assert_int_equal(add(&s, "a.json", "{\"status\": \"success\", \"metrics\": {\"ttft_p99_ms\": \"9x\"}}",
                         &err), -1);
    assert_string_equal(err.msg, "a.json:1:50: expected a number for \"ttft_p99_ms\", found string");
    /* all or nothing: the good first line is not kept */
    assert_int_equal(add(&s, "r.jsonl", "{\"backend\": \"sglang\"}\n\n{\"backend\": 1,", &err), -1);
    assert_string_equal(err.msg, "r.jsonl:3:15: expected string key after ',', found end of input");
    assert_int_equal(s.n, 0);
    atr_bench_set_release(&s);
}

/* A text named .json that is JSONL (stdin, a file SGLang appended to) is
 * read line by line, from a buffer without a terminating NUL (ASan checks
 * no byte past it is read); each line keeps its number. */
static void test_jsonl_by_content(void **state)
{
    (void)state;
    static const char text[] = "{\"backend\": \"sglang\", \"completed\": 2, \"duration\": 1}\n"
                               "  \n{\"mean_ttft_ms\": 5, \"atr\": {\"policy\": \"naive\"}}\n \t";
    size_t len = sizeof text - 1;
    char *exact = malloc(len);
    memcpy(exact, text, len);
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(atr_bench_read_text(&s, "r.json", exact, len, &err), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.v[0].line, 1);
    assert_int_equal(s.v[1].line, 3);
    assert_string_equal(s.v[1].kind, "atr");
    assert_string_equal(s.v[1].policy, "naive");
    assert_float_equal(s.v[1].ttft_mean_ms, 5, 1e-12);
    atr_bench_set_release(&s);
    free(exact);
}

/* Shards of one run under one name make one group. */
static void test_report_merge(void **state)
{
    struct atr_bench_report *r = atr_bench_report_new(5);
    struct atr_bench_set s = {0};
    struct atr_error err;
    assert_int_equal(atr_bench_read_dir(&s, ATR_TEST_DATA "/bench/iso-bench", &err), 0);
    atr_bench_report_add(r, "g", &s);
    assert_int_equal(s.n, 0);
    assert_int_equal(atr_bench_read_dir(&s, ATR_TEST_DATA "/bench/codex/results", &err), 0);
    atr_bench_report_add(r, "g", &s);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_bench_report_json(&b, r), 0);
    assert_non_null(strstr(b.data, "\"group\": \"g\", \"total\": 7, \"success\": 3, \"error\": 4"));
    atr_buf_release(&b);
    atr_bench_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_outcomes),
        cmocka_unit_test(test_atr_file),
        cmocka_unit_test(test_repeat_names),
        cmocka_unit_test(test_repeat_order),
        cmocka_unit_test(test_iso_metrics),
        cmocka_unit_test(test_vllm_sglang),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_jsonl_by_content),
        cmocka_unit_test(test_report_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
