/* test-tenants.c - several traces at once: the report math (mean, p50,
 * inflation and its unknowns), the summary entry, tenants that really run
 * concurrently (each step waits for the other tenant's), serialised sink
 * calls, both phases, and on real cgroups the tenant groups' cpu weights
 * and their removal. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/json.h"
#include "runner/tenants.h"

/* ---- report math ---- */

static void samples(struct atr_samples *s, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        atr_samples_add(s, v[i]);
}

static void test_math(void **state)
{
    (void)state;
    struct atr_samples s = ATR_SAMPLES_INIT;
    assert_true(isnan(atr_tenant_mean(&s)));
    assert_true(isnan(atr_tenant_p50(&s)));
    samples(&s, (const double[]){10, 1, 3, 2}, 4);
    assert_float_equal(atr_tenant_mean(&s), 4.0, 1e-12);
    assert_float_equal(atr_tenant_p50(&s), 2.5, 1e-12);   /* mean of the middle two */
    assert_float_equal(atr_tenant_mean(&s), 4.0, 1e-12);  /* sorting kept the values */
    atr_samples_release(&s);
    assert_float_equal(atr_tenant_inflation(30, 20), 1.5, 1e-12);
    assert_float_equal(atr_tenant_inflation(10, 20), 0.5, 1e-12);
    assert_true(isnan(atr_tenant_inflation(30, 0)));
    assert_true(isnan(atr_tenant_inflation(30, -1)));
    assert_true(isnan(atr_tenant_inflation(NAN, 20)));
    assert_true(isnan(atr_tenant_inflation(30, NAN)));
    assert_string_equal(atr_tenant_phase_name(ATR_TENANT_SHARED), "shared");
    assert_string_equal(atr_tenant_phase_name(ATR_TENANT_ALONE), "alone");
}

/* The entry parsed back: number of key, or NAN when null. */
static double entry_num(const struct atr_json *o, const char *key)
{
    const struct atr_json *v = atr_json_get(o, key);
    assert_non_null(v);
    if (v->type == ATR_JSON_NULL)
        return NAN;
    assert_int_equal(v->type, ATR_JSON_NUMBER);
    return v->u.num;
}

static void test_report_json(void **state)
{
    (void)state;
    struct atr_tenant_report r = {.tenant = 1, .weight = 400, .weight_applied = true, .steps = 3};
    r.trace_id = strdup("t\"1");
    samples(&r.shared, (const double[]){30, 20, 100}, 3);
    samples(&r.alone, (const double[]){10, 10, 40}, 3);
    struct atr_buf b = ATR_BUF_INIT;
    atr_tenant_report_json(&r, "static-toolcall", &b);
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *o;
    struct atr_json_err je;
    assert_int_equal(atr_json_parse(&a, b.data, b.len, NULL, &o, &je), 0);
    assert_string_equal(atr_json_get_str(o, "config", NULL), "static-toolcall");
    assert_string_equal(atr_json_get_str(o, "trace_id", NULL), "t\"1");
    assert_float_equal(entry_num(o, "tenant"), 1, 0);
    assert_float_equal(entry_num(o, "weight"), 400, 0);
    assert_float_equal(entry_num(o, "steps"), 3, 0);
    assert_int_equal(atr_json_get(o, "weight_applied")->type, ATR_JSON_TRUE);
    assert_float_equal(entry_num(o, "latency_mean_ms_shared"), 50, 1e-9);
    assert_float_equal(entry_num(o, "latency_mean_ms_alone"), 20, 1e-9);
    assert_float_equal(entry_num(o, "latency_p50_ms_shared"), 30, 1e-9);
    assert_float_equal(entry_num(o, "latency_p50_ms_alone"), 10, 1e-9);
    assert_float_equal(entry_num(o, "inflation_mean"), 2.5, 1e-9);
    assert_float_equal(entry_num(o, "inflation_p50"), 3.0, 1e-9);
    atr_tenant_report_release(&r);
    /* --no-baseline: nothing alone, so no inflation, and no crash. */
    struct atr_tenant_report nb = {.tenant = 0, .weight = 100};
    samples(&nb.shared, (const double[]){5}, 1);
    atr_buf_clear(&b);
    atr_tenant_report_json(&nb, "none", &b);
    assert_int_equal(atr_json_parse(&a, b.data, b.len, NULL, &o, &je), 0);
    assert_true(isnan(entry_num(o, "latency_mean_ms_alone")));
    assert_true(isnan(entry_num(o, "inflation_mean")));
    assert_true(isnan(entry_num(o, "inflation_p50")));
    assert_float_equal(entry_num(o, "latency_p50_ms_shared"), 5, 1e-9);
    assert_string_equal(atr_json_get_str(o, "trace_id", NULL), "");
    atr_tenant_report_release(&nb);
    atr_arena_release(&a);
    atr_buf_release(&b);
}

/* ---- real runs ---- */

static char tmpdir[64];

/* The files the tenants' first steps make. */
static void remove_flags(void)
{
    char p[96];
    for (char c = 'a'; c <= 'b'; c++) {
        snprintf(p, sizeof p, "%s/%c", tmpdir, c);
        unlink(p);
    }
}

struct seen {
    atomic_int inside;          /* sink calls in progress: must stay <= 1 */
    bool overlapped;
    unsigned calls[2][2];       /* [tenant][phase] */
    int exit_codes_bad;
    const struct atr_replay *rp;
    char cpu_file[2][PATH_MAX + 32];    /* tenant groups' weight files to read */
    long long weight_seen[2];
};

static int record(void *ctx, unsigned tenant, enum atr_tenant_phase phase,
                  const struct atr_step_metrics *m, struct atr_error *err)
{
    (void)err;
    struct seen *s = ctx;
    if (atomic_fetch_add(&s->inside, 1) != 0)
        s->overlapped = true;
    if (tenant < 2)
        s->calls[tenant][phase]++;
    if (!m->skipped && m->exit_code != 0)
        s->exit_codes_bad++;
    if (tenant < 2 && s->cpu_file[tenant][0]) {
        FILE *f = fopen(s->cpu_file[tenant], "r");
        if (f) {
            if (fscanf(f, "%lld", &s->weight_seen[tenant]) != 1)
                s->weight_seen[tenant] = -2;
            fclose(f);
        }
    }
    atomic_fetch_sub(&s->inside, 1);
    return 0;
}

static void add_bash(struct atr_trace *t, const char *cmd)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    s->tool = "bash";
    s->command = atr_arena_strdup(&t->arena, cmd);
}

/* Two traces whose first steps each wait (bounded: 10 s) for a file the
 * other makes: both exit 0 only if the tenants really run at once. */
static void make_traces(struct atr_trace t[2])
{
    char cmd[512];
    for (int k = 0; k < 2; k++) {
        t[k].trace_id = k ? "tenant-b" : "tenant-a";
        snprintf(cmd, sizeof cmd, "touch %s/%c; i=0; while [ ! -e %s/%c ] && [ $i -lt 1000 ]; "
                 "do sleep 0.01; i=$((i+1)); done; [ -e %s/%c ]", tmpdir, 'a' + k, tmpdir,
                 'b' - k, tmpdir, 'b' - k);
        add_bash(&t[k], cmd);
        add_bash(&t[k], "true");
    }
    struct atr_step *s = atr_trace_add_step(&t[1], ATR_STEP_TOOL);   /* skipped */
    s->tool = "editor";
}

static struct atr_replay *new_replay(enum atr_replay_config c)
{
    struct atr_replay_opts o = {.config = c, .limits = ATR_CG_LIMITS_NONE, .sandbox = false,
                                .max_output = 4096, .timeout_ms = 20000, .interval_ms = 50};
    struct atr_error err = {""};
    struct atr_replay *rp = atr_replay_new(&o, &err);
    if (!rp)
        fail_msg("replay: %s", err.msg);
    return rp;
}

static void check_reports(struct atr_tenant_report *reps, bool baseline)
{
    assert_int_equal(reps[0].steps, 2);
    assert_int_equal(reps[1].steps, 2);     /* the editor step did not run */
    assert_int_equal(reps[0].shared.n, 2);
    assert_int_equal(reps[1].alone.n, baseline ? 2 : 0);
    assert_string_equal(reps[0].trace_id, "tenant-a");
    assert_string_equal(reps[1].trace_id, "tenant-b");
    assert_true(atr_tenant_mean(&reps[0].shared) > 0);
}

static void test_run_concurrent(void **state)
{
    (void)state;
    struct atr_trace t[2] = {ATR_TRACE_INIT, ATR_TRACE_INIT};
    make_traces(t);
    struct atr_replay *rp = new_replay(ATR_CFG_NONE);
    struct atr_tenant_report reps[2];
    memset(reps, 0, sizeof reps);
    struct seen s;
    memset(&s, 0, sizeof s);
    struct atr_tenants_opts o = {NULL, 0, true};
    struct atr_error err = {""};
    if (atr_tenants_run(rp, t, 2, &o, record, &s, reps, &err) < 0)
        fail_msg("tenants: %s", err.msg);
    assert_false(s.overlapped);
    assert_int_equal(s.exit_codes_bad, 0);   /* each waited for the other: concurrent */
    assert_int_equal(s.calls[0][ATR_TENANT_SHARED], 2);
    assert_int_equal(s.calls[1][ATR_TENANT_SHARED], 3);
    assert_int_equal(s.calls[0][ATR_TENANT_ALONE], 2);
    assert_int_equal(s.calls[1][ATR_TENANT_ALONE], 3);
    check_reports(reps, true);
    assert_int_equal(reps[0].weight, 100);
    assert_false(reps[0].weight_applied);    /* config none: no groups */
    for (int k = 0; k < 2; k++) {
        atr_tenant_report_release(&reps[k]);
        atr_trace_release(&t[k]);
    }
    atr_replay_free(rp);
}

static void test_run_bad_count(void **state)
{
    (void)state;
    struct atr_replay *rp = new_replay(ATR_CFG_NONE);
    struct atr_error err = {""};
    struct atr_tenants_opts o = {NULL, 0, true};
    assert_int_equal(atr_tenants_run(rp, NULL, 0, &o, record, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "want 1..32"));
    atr_replay_free(rp);
}

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Real groups: tenant<k> below the run root with its weight, removed at
 * the end; no baseline this time. */
static void test_run_cgroups(void **state)
{
    (void)state;
    struct atr_replay *rp = new_replay(ATR_CFG_STATIC_TOOLCALL);
    const struct atr_cg_host *h = atr_replay_host(rp);
    const struct atr_cg *root = atr_replay_root(rp);
    if (!root || (!h->cpu[0] && !h->v2_cpu)) {
        atr_replay_free(rp);
        skip();   /* no cgroups or no cpu controller here: nothing to weigh */
    }
    struct atr_trace t[2] = {ATR_TRACE_INIT, ATR_TRACE_INIT};
    make_traces(t);
    remove_flags();
    struct seen s;
    memset(&s, 0, sizeof s);
    bool v1 = h->cpu[0] != 0;
    for (int k = 0; k < 2; k++)
        snprintf(s.cpu_file[k], sizeof s.cpu_file[k], "%s/tenant%d/%s", v1 ? root->cpu : root->v2,
                 k, v1 ? "cpu.shares" : "cpu.weight");
    int64_t weights[2] = {300, 50};
    struct atr_tenants_opts o = {weights, 2, false};
    struct atr_tenant_report reps[2];
    memset(reps, 0, sizeof reps);
    struct atr_error err = {""};
    int rc = atr_tenants_run(rp, t, 2, &o, record, &s, reps, &err);
    bool left0 = exists(s.cpu_file[0]), left1 = exists(s.cpu_file[1]);
    for (int k = 0; k < 2; k++)
        atr_trace_release(&t[k]);
    atr_replay_free(rp);
    if (rc < 0)
        fail_msg("tenants: %s", err.msg);
    assert_int_equal(s.exit_codes_bad, 0);
    assert_int_equal(s.calls[0][ATR_TENANT_ALONE] + s.calls[1][ATR_TENANT_ALONE], 0);
    check_reports(reps, false);
    assert_true(reps[0].weight_applied);
    assert_int_equal(reps[0].weight, 300);
    assert_int_equal(reps[1].weight, 50);
    assert_int_equal(s.weight_seen[0], v1 ? 300 * 1024 / 100 : 300);
    assert_int_equal(s.weight_seen[1], v1 ? 50 * 1024 / 100 : 50);
    assert_false(left0);
    assert_false(left1);
    for (int k = 0; k < 2; k++)
        atr_tenant_report_release(&reps[k]);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/atr-test-tenants-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remove_flags();
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_math),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_run_bad_count),
        cmocka_unit_test(test_run_concurrent),
        cmocka_unit_test(test_run_cgroups),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
