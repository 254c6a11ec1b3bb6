/* test-exp.c - the experiment interface: target specs and their names, a
 * workload on a simulator target under a policy (records, engine and
 * policy figures as structs, fresh replicas per run, a subset of
 * sessions), the result object's "atr" members, and the comparison row
 * taken from the summary equal to the one read back from that object. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exp/exp.h"
#include "json/json.h"
#include "report/compare.h"
#include "util/arena.h"

#define SWE ATR_TEST_DATA "/gen/swe-seed7.ndjson"
#define STRATA ATR_TEST_DATA "/gen/strata.ndjson"

static void test_target_specs(void **state)
{
    (void)state;
    struct atr_target t;
    struct atr_error err;
    char name[256];
    assert_int_equal(atr_target_parse(&t, "sim:h100/llama-3.1-8b", 2, &err), 0);
    assert_int_equal(t.kind, ATR_TARGET_SIM);
    t.replicas = 4;
    t.engine.longest_prefix_first = true;
    atr_target_name(&t, name, sizeof name);
    assert_string_equal(name, "sim:h100/llama-3.1-8b tp=2 x4 sglang");
    atr_target_release(&t);

    assert_int_equal(atr_target_parse(&t, "http://a:1/v1/,https://b:2//", 1, &err), 0);
    assert_int_equal(t.kind, ATR_TARGET_HTTP);
    assert_int_equal(t.n_urls, 2);
    assert_string_equal(t.urls[0], "http://a:1");
    assert_string_equal(t.urls[1], "https://b:2");
    atr_target_name(&t, name, sizeof name);
    assert_string_equal(name, "http://a:1/v1/,https://b:2//");
    atr_target_release(&t);

    assert_int_equal(atr_target_parse(&t, "ftp://x", 1, &err), ATR_TARGET_BAD_SPEC);
    assert_non_null(strstr(err.msg, "not 'ftp://x'"));
    atr_target_release(&t);
    assert_int_equal(atr_target_parse(&t, "http://a:1,ftp://b", 1, &err), ATR_TARGET_BAD_SPEC);
    assert_non_null(strstr(err.msg, "URLs, not 'ftp://b'"));
    atr_target_release(&t);
    assert_int_equal(atr_target_parse(&t, "sim:h100/no-such-model", 1, &err), -1);
    atr_target_release(&t);
}

struct fixture {
    struct atr_workload w;
    struct atr_schedule s;
    struct atr_target t;
};

static void fixture_open(struct fixture *f, const char *path)
{
    struct atr_error err;
    char *paths[] = {(char *)path};
    memset(f, 0, sizeof *f);
    assert_int_equal(atr_workload_load(&f->w, paths, 1, NULL, 16, &err), 0);
    atr_schedule_defaults(&f->s);
    assert_int_equal(atr_target_sim(&f->t, "h100/llama-3.1-8b", 1, &err), 0);
}

static void fixture_close(struct fixture *f)
{
    atr_target_release(&f->t);
    atr_workload_release(&f->w);
}

static void test_sim_run(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open(&f, SWE);
    struct atr_exp_cfg cfg = { .workload = &f.w, .schedule = &f.s, .policy = "prefix-cache" };
    struct atr_exp_result a, b;
    struct atr_error err;
    assert_int_equal(atr_exp_run(&f.t, &cfg, &a, &err), 0);
    assert_int_equal(a.n, f.w.n_turns);
    assert_int_equal(a.total, a.n);
    assert_string_equal(a.policy, "prefix-cache");
    assert_int_equal(a.policy_stats.requests, a.n);
    assert_true(a.has_engine);
    assert_int_equal(a.engine.requests_finished, a.n);
    assert_true(a.engine.prefix_hit_rate > 0);     /* an agent's turns share prefixes */
    /* A second run gets fresh replicas: the same figures, not a warm cache. */
    assert_int_equal(atr_exp_run(&f.t, &cfg, &b, &err), 0);
    assert_int_equal(b.engine.cached_tokens, a.engine.cached_tokens);
    assert_true(b.recs[b.n - 1].end_s == a.recs[a.n - 1].end_s);
    atr_exp_result_release(&a);
    atr_exp_result_release(&b);

    cfg.policy = "no-such-policy";
    assert_int_equal(atr_exp_run(&f.t, &cfg, &a, &err), -1);
    assert_non_null(strstr(err.msg, "no-such-policy"));
    fixture_close(&f);
}

static void test_keep_subset(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open(&f, STRATA);
    assert_true(f.w.n_sessions >= 2 && f.w.sessions[1].n_turns > 0);
    bool *keep = calloc(f.w.n_sessions, sizeof *keep);
    keep[1] = true;
    struct atr_exp_cfg cfg = { .workload = &f.w, .schedule = &f.s, .keep = keep };
    struct atr_exp_result r;
    struct atr_error err;
    assert_int_equal(atr_exp_run(&f.t, &cfg, &r, &err), 0);
    assert_int_equal(r.n, f.w.sessions[1].n_turns);
    for (size_t i = 0; i < r.n; i++)
        assert_ptr_equal(r.recs[i].trace_id, f.w.sessions[1].trace_id);
    assert_null(r.policy);
    atr_exp_result_release(&r);
    free(keep);
    fixture_close(&f);
}

static void assert_same(double x, double y)
{
    assert_true(x == y || (isnan(x) && isnan(y)));
}

/* The result object names its target, policy and engine; its comparison
 * row read back equals the one taken from the summary directly. */
static void test_result_and_row(void **state)
{
    (void)state;
    struct fixture f;
    fixture_open(&f, SWE);
    struct atr_exp_cfg cfg = { .workload = &f.w, .schedule = &f.s, .policy = "naive" };
    struct atr_exp_result r;
    struct atr_error err;
    assert_int_equal(atr_exp_run(&f.t, &cfg, &r, &err), 0);
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(&f.t, &cfg, &r, "20261125-000000", &bc);
    struct atr_llm_summary sum;
    assert_int_equal(atr_llm_summarize(r.recs, r.n, &bc, &sum, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_exp_write_result(&b, &f.t, &r, &sum, &bc), 0);

    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_json *root;
    struct atr_json_err je;
    assert_int_equal(atr_json_parse(&arena, b.data, b.len, NULL, &root, &je), 0);
    const struct atr_json *atr = atr_json_get(root, "atr");
    assert_string_equal(atr_json_get_str(atr, "target", NULL), "sim:h100/llama-3.1-8b");
    assert_string_equal(atr_json_get_str(atr, "policy", NULL), "naive");
    assert_non_null(atr_json_get(atr, "policy_stats"));
    assert_string_equal(atr_json_get_str(atr_json_get(atr, "engine"), "flavour", NULL), "vllm");
    assert_string_equal(atr_json_get_str(root, "backend", NULL), "sim");

    struct atr_compare *c = atr_compare_new();
    atr_compare_add_summary(c, "sim:h100/llama-3.1-8b", "naive", &sum, &bc);
    assert_int_equal(atr_compare_add_json(c, "naive", b.data, b.len, &err), 0);
    size_t n;
    const struct atr_compare_row *x = atr_compare_rows(c, &n), *y = x + 1;
    assert_int_equal(n, 2);
    assert_string_equal(x->target, y->target);
    assert_string_equal(x->policy, y->policy);
    assert_same(x->ttft_mean_ms, y->ttft_mean_ms);
    assert_same(x->ttft_p50_ms, y->ttft_p50_ms);
    assert_same(x->ttft_p99_ms, y->ttft_p99_ms);
    assert_same(x->e2el_mean_ms, y->e2el_mean_ms);
    assert_same(x->e2el_p50_ms, y->e2el_p50_ms);
    assert_same(x->e2el_p99_ms, y->e2el_p99_ms);
    assert_same(x->request_throughput, y->request_throughput);
    assert_same(x->output_throughput, y->output_throughput);
    assert_same(x->prefix_hit_rate, y->prefix_hit_rate);
    assert_false(isnan(x->e2el_p99_ms));
    atr_compare_free(c);
    atr_arena_release(&arena);
    atr_buf_release(&b);
    atr_llm_summary_release(&sum);
    atr_exp_result_release(&r);
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_specs),
        cmocka_unit_test(test_sim_run),
        cmocka_unit_test(test_keep_subset),
        cmocka_unit_test(test_result_and_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
