/* test-replay-summary.c - the tool replay's summary: a live record and the
 * metrics.jsonl line written for it count the same (to the byte of
 * summary.json), line parse errors with their place, the figures as
 * structs, traces as runs of consecutive steps, failures by cause, and a
 * tenant's line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json/writer.h"
#include "runner/summary.h"
#include "runner/tenants.h"

/* A measured step with figures that sit on the line's rounding edges. */
static struct atr_step_metrics measured(const char *trace, double latency)
{
    static const double seen[] = {12.25, -0.04, NAN, 7.05};
    static const double bound[] = {1000.95, 2000.04, 3.15, -5};
    struct atr_step_metrics m = {
        .trace_id = trace, .step_id = 1, .tool = "bash", .cmd = "true",
        .latency_ms = latency, .cpu_ms = 1.0004, .cpu_user_ms = 1, .cpu_sys_ms = 0,
        .max_rss_mb = 2.00049999, .rss_is_tree = true, .mem_high_events = 3,
        .mem_max_events = -1, .oom_kills = 1, .mem_some_ms = 0.0004,
        .mem_full_ms = -1, .cpu_some_ms = 5.5555, .exit_code = 0,
        .ctl_adjustments = 2, .ctl_max_high = 1 << 20,
        .ctl_seen_us = seen, .ctl_bound_us = bound, .ctl_samples = 4,
    };
    return m;
}

static void add_live(struct atr_replay_summary *s, struct atr_arena *a, const char *config,
                     const struct atr_step_metrics *m)
{
    struct atr_replay_step st;
    atr_arena_clear(a);
    atr_replay_step_from_metrics(&st, config, m, a);
    assert_int_equal(atr_replay_summary_add(s, &st, "live", 1, NULL), 0);
}

static void add_line(struct atr_replay_summary *s, struct atr_arena *a, const char *config,
                     const struct atr_step_metrics *m)
{
    struct atr_buf line = ATR_BUF_INIT;
    struct atr_replay_step st;
    atr_step_metrics_json(&line, config, m);
    atr_arena_clear(a);
    assert_int_equal(atr_replay_step_parse(&st, line.data, line.len - 1, a, "f", 1, NULL), 0);
    assert_int_equal(atr_replay_summary_add(s, &st, "f", 1, NULL), 0);
    atr_buf_release(&line);
}

/* The steps of the comparison: measured, skipped, failed, timed out, and
 * one without a cgroup (nulls, no controller). */
static size_t steps(struct atr_step_metrics *m)
{
    m[0] = measured("t1", 10.0006);
    m[1] = measured("t1", 20.12349);
    m[1].skipped = "not a shell command";
    m[2] = measured("t2", NAN);
    m[2].exit_code = 3;
    m[2].missing_cwd = "/testbed";
    m[3] = measured("t2", 30.4446);
    m[2].pids_max_hit = 4;
    m[3].timed_out = true;
    m[3].exit_code = -9;
    m[3].disk_full = true;
    m[3].mem_max_events = 2;
    m[4] = measured("t3", -1);
    m[4].ctl_adjustments = -1;
    m[4].cpu_ms = -1;
    m[4].oom_kills = -1;
    m[4].pids_max_hit = -1;
    return 5;
}

static void test_live_equals_line(void **state)
{
    (void)state;
    struct atr_step_metrics m[8];
    size_t n = steps(m);
    struct atr_replay_summary *live = atr_replay_summary_new(), *read = atr_replay_summary_new();
    struct atr_arena a = ATR_ARENA_INIT;
    for (size_t i = 0; i < n; i++) {
        const char *config = i % 2 ? "dynamic" : "none";
        add_live(live, &a, config, &m[i]);
        add_line(read, &a, config, &m[i]);
    }
    struct atr_buf x = ATR_BUF_INIT, y = ATR_BUF_INIT;
    atr_replay_summary_json(live, "b", false, &x);
    atr_replay_summary_json(read, "b", false, &y);
    assert_int_equal(x.len, y.len);
    assert_memory_equal(x.data, y.data, x.len);
    atr_buf_release(&x);
    atr_buf_release(&y);
    atr_arena_release(&a);
    atr_replay_summary_free(live);
    atr_replay_summary_free(read);
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_replay_step st;
    struct atr_error err;
    assert_int_equal(atr_replay_step_parse(&st, "not json", 8, &a, "m.jsonl", 4, &err), -1);
    assert_true(strncmp(err.msg, "m.jsonl:4:1: ", 13) == 0);
    const char *no_trace = "{\"config\":\"none\"}";
    assert_int_equal(atr_replay_step_parse(&st, no_trace, strlen(no_trace), &a, "m.jsonl", 7,
                                           &err), -1);
    assert_string_equal(err.msg,
                        "m.jsonl:7:1: expected a metrics object with \"config\" and \"trace_id\"");
    /* A minimal line: unknown figures, a missing exit code fails the step. */
    const char *bare = "{\"config\":\"none\",\"trace_id\":\"t\"}";
    assert_int_equal(atr_replay_step_parse(&st, bare, strlen(bare), &a, "m.jsonl", 8, &err), 0);
    assert_false(st.skipped);
    assert_true(st.latency_ms < 0 && st.oom_kills < 0);
    assert_int_equal(st.exit_code, -1);
    atr_arena_release(&a);
}

static void test_too_many_configs(void **state)
{
    (void)state;
    struct atr_replay_summary *s = atr_replay_summary_new();
    struct atr_replay_step st = {.trace_id = "t", .skipped = true};
    struct atr_error err;
    char name[16];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "c%d", i);
        st.config = name;
        assert_int_equal(atr_replay_summary_add(s, &st, "m.jsonl", (unsigned long)i + 1, &err), 0);
    }
    st.config = "c8";
    assert_int_equal(atr_replay_summary_add(s, &st, "m.jsonl", 9, &err), -1);
    assert_string_equal(err.msg, "m.jsonl:9:1: too many configurations (at most 8)");
    assert_int_equal(atr_replay_summary_n_configs(s), 8);
    atr_replay_summary_free(s);
}

static void test_figures(void **state)
{
    (void)state;
    struct atr_step_metrics m[8];
    size_t n = steps(m);
    struct atr_replay_summary *s = atr_replay_summary_new();
    struct atr_arena a = ATR_ARENA_INIT;
    for (size_t i = 0; i < n; i++)
        add_live(s, &a, "static-env", &m[i]);
    m[0].trace_id = "t1";         /* t1 again after t3: a new run of steps */
    add_live(s, &a, "static-env", &m[0]);
    add_live(s, &a, "none", &m[1]);
    assert_int_equal(atr_replay_summary_n_configs(s), 2);
    struct atr_replay_config_summary c;
    atr_replay_summary_config(s, 0, &c);
    assert_string_equal(c.config, "static-env");
    assert_int_equal(c.traces, 4);
    assert_int_equal(c.total_steps, 6);
    assert_int_equal(c.ran_steps, 5);
    assert_int_equal(c.skipped_steps, 1);
    assert_int_equal(c.failed_steps, 2);
    assert_int_equal(c.timed_out_steps, 1);
    /* latencies as the lines have them: 10.001 (twice), 30.445 */
    assert_float_equal(c.latency_max_ms, 30.445, 1e-12);
    assert_float_equal(c.latency_p50_ms, 10.001, 1e-12);
    assert_float_equal(c.cpu_ms_total, 4.0, 1e-12);      /* 4 x 1.000; one unknown */
    assert_float_equal(c.max_rss_mb, 2.0, 1e-12);
    assert_int_equal(c.mem_high_events_total, 15);
    assert_int_equal(c.mem_max_events_total, 2);
    /* steps at a limit: memory.max, pids.max (4 refusals: one step), disk */
    assert_int_equal(c.mem_max_hit_steps, 1);
    assert_int_equal(c.pids_max_hit_steps, 1);
    assert_int_equal(c.disk_full_steps, 1);
    assert_int_equal(c.oom_kills, 4);
    assert_int_equal(c.ctl_adjustments, 8);
    /* seen per step: 12.2 (12.25 is a tie: even), -0.0 (counted), 7.0 or 7.1 */
    assert_false(isnan(c.ctl_reaction_p50_us));
    atr_replay_summary_config(s, 1, &c);
    assert_int_equal(c.total_steps, 1);
    assert_true(isnan(c.latency_p50_ms));               /* written null */
    assert_true(isnan(c.ctl_reaction_p99_us));
    atr_arena_release(&a);
    atr_replay_summary_free(s);
}

/* One step per cause, in the order the causes are tried: a timed-out
 * step that was also OOM-killed is a timeout, exit 127 in a missing cwd
 * is "command not found", any other exit there is "missing directory". */
static void test_causes(void **state)
{
    (void)state;
    struct atr_step_metrics m[8];
    for (int i = 0; i < 8; i++) {
        m[i] = measured("t", 1);
        m[i].oom_kills = 0;
    }
    m[0].exit_code = 137, m[0].timed_out = true, m[0].oom_kills = 1;
    m[1].exit_code = 137, m[1].oom_kills = 2;
    m[2].exit_code = 127, m[2].missing_cwd = "/testbed";
    m[3].exit_code = 2, m[3].missing_cwd = "/workspace";
    m[4].exit_code = 1;
    m[5].missing_cwd = "/testbed";          /* ran fine there: not a failure */
    m[6].skipped = "not a shell command";
    m[7].exit_code = 1, m[7].file_op = "view", m[7].path = m[7].missing_file = "/testbed/a.py";
    static const enum atr_replay_cause want[8] = {
        ATR_CAUSE_TIMEOUT, ATR_CAUSE_OOM, ATR_CAUSE_NOT_FOUND, ATR_CAUSE_NO_DIR, ATR_CAUSE_EXIT,
        ATR_CAUSE_COUNT, ATR_CAUSE_COUNT, ATR_CAUSE_NO_FILE,
    };
    /* timeout and OOM are the step's own doing; the rest wanted the image */
    static const char *const cls[8] = {"failed", "failed", "env_missing", "env_missing",
                                       "failed", "ok", "skipped", "env_missing"};
    struct atr_replay_summary *s = atr_replay_summary_new();
    struct atr_arena a = ATR_ARENA_INIT;
    for (int i = 0; i < 8; i++) {
        struct atr_replay_step st;
        atr_arena_clear(&a);
        atr_replay_step_from_metrics(&st, "none", &m[i], &a);
        assert_int_equal(atr_replay_step_cause(&st), want[i]);
        assert_string_equal(atr_replay_class_name(st.skipped, want[i]), cls[i]);
        struct atr_buf line = ATR_BUF_INIT;
        atr_step_metrics_json(&line, "none", &m[i]);
        char key[48];
        snprintf(key, sizeof key, "\"class\":\"%s\"", cls[i]);
        assert_non_null(strstr(line.data, key));
        atr_buf_release(&line);
        add_line(s, &a, "none", &m[i]);     /* the line carries what the cause needs */
    }
    struct atr_replay_config_summary c;
    atr_replay_summary_config(s, 0, &c);
    assert_int_equal(c.failed_steps, 6);
    for (int k = 0; k < ATR_CAUSE_COUNT; k++)
        assert_int_equal(c.failures[k], 1);
    assert_int_equal(c.env_missing_steps, 3);
    assert_int_equal(c.own_failed_steps, 3);
    assert_int_equal(c.n_per_trace, 1);
    assert_int_equal(c.per_trace[0].ran, 7);
    assert_int_equal(c.per_trace[0].ok, 1);
    assert_int_equal(c.per_trace[0].env_missing, 3);
    assert_int_equal(c.per_trace[0].failed, 3);
    assert_int_equal(c.per_trace[0].skipped, 1);
    assert_int_equal(c.missing_cwd_steps, 3);
    assert_string_equal(c.missing_cwd, "/testbed");
    struct atr_buf j = ATR_BUF_INIT;
    atr_replay_summary_json(s, NULL, false, &j);
    assert_non_null(strstr(j.data, "\"failed_steps\":6,\"timed_out_steps\":1,\"failures\":"
                                   "{\"timeout\":1,\"oom\":1,\"command_not_found\":1,"
                                   "\"missing_directory\":1,\"missing_file\":1,"
                                   "\"nonzero_exit\":1},"
                                   "\"missing_cwd_steps\":3,\"missing_cwd\":\"/testbed\","
                                   "\"env_missing_steps\":3,\"own_failed_steps\":3,"));
    assert_non_null(strstr(j.data, "\"per_trace\":[{\"trace_id\":\"t\",\"steps\":8,\"ran\":7,"
                                   "\"ok\":1,\"env_missing\":3,\"failed\":3,\"skipped\":1}]"));
    atr_buf_release(&j);
    atr_arena_release(&a);
    atr_replay_summary_free(s);
}

static void test_members_and_tenant_line(void **state)
{
    (void)state;
    struct atr_replay_summary *s = atr_replay_summary_new();
    struct atr_buf whole = ATR_BUF_INIT, composed = ATR_BUF_INIT;
    atr_replay_summary_json(s, NULL, true, &whole);
    assert_string_equal(whole.data, "{\"backend\":null,\"incomplete\":true,\"configs\":[]}\n");
    struct atr_jw w;
    atr_jw_init(&w, &composed, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_replay_summary_members(s, NULL, true, &w);
    atr_jw_kv_int(&w, "extra", 1);
    atr_jw_object_end(&w);
    assert_int_equal(atr_jw_finish(&w), 0);
    assert_string_equal(composed.data,
                        "{\"backend\":null,\"incomplete\":true,\"configs\":[],\"extra\":1}");
    /* A tenant's line is the step's line with "tenant" and "phase" last. */
    struct atr_step_metrics m = measured("t", 1);
    atr_buf_clear(&whole);
    atr_buf_clear(&composed);
    atr_step_metrics_json(&whole, "none", &m);
    atr_tenant_metrics_json(&composed, "none", 2, ATR_TENANT_ALONE, &m);
    const char *tail = ",\"tenant\":2,\"phase\":\"alone\"}\n";
    assert_int_equal(composed.len, whole.len - 2 + strlen(tail));
    assert_memory_equal(composed.data, whole.data, whole.len - 2);
    assert_string_equal(composed.data + whole.len - 2, tail);
    atr_buf_release(&whole);
    atr_buf_release(&composed);
    atr_replay_summary_free(s);
}

static void test_metrics_fixed(void **state)
{
    (void)state;
    assert_true(atr_metrics_fixed(1.23456, 3) == 1.235);
    assert_true(atr_metrics_fixed(12.25, 1) == 12.2);   /* printf: the binary 12.25 is a tie */
    assert_true(atr_metrics_fixed(1e16 + 2, 3) == 1e16 + 2);
    assert_true(isnan(atr_metrics_fixed(NAN, 3)));
    assert_true(signbit(atr_metrics_fixed(-0.0001, 3)));   /* "-0.000" */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_equals_line),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_too_many_configs),
        cmocka_unit_test(test_figures),
        cmocka_unit_test(test_causes),
        cmocka_unit_test(test_members_and_tenant_line),
        cmocka_unit_test(test_metrics_fixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
