/* test-sim-calibrate.c - the fit of `atr sim calibrate` (src/exp/calibrate.c):
 * timings made from known constants give those constants back; a constant
 * the timings push below zero is dropped, not kept negative; too few
 * points are refused; the profile written is one the loader takes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exp/calibrate.h"
#include "sim/cost.h"

static const struct atr_calib_fit truth = { 60e-6, 8e-6, 0.15e-6, 0.6e-6, 90e-6, 2e-3, 0, 0 };

/* The probe's points as the cost model says they take. */
static size_t points(struct atr_calib_point *p, const struct atr_calib_fit *c, double noise)
{
    static const uint32_t prompts[] = {256, 1024, 3072};
    size_t n = 0;
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < 5; i++) {
            unsigned conc = i < 3 ? 1 : 4;
            double P = prompts[i < 3 ? i : i - 3], ctx = P + 32;
            double ttft = c->frontend_s + ceil(P / 512) * c->ubatch_s + P * c->token_s +
                          P * (P + 1) / 2 * c->pair_s + c->seq_s;
            double gap = c->ubatch_s + conc * (c->token_s + c->seq_s) + conc * ctx * c->ctx_s;
            double f = 1 + noise * (rep - 1);     /* the median is the middle rep */
            for (unsigned k = 0; k < conc; k++)
                p[n++] = (struct atr_calib_point){ conc, (uint32_t)P, 64, ttft * f, gap * f, gap * f };
        }
    return n;
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-6 * want) {
        print_error("got %g, want %g\n", got, want);
        fail();
    }
}

static void test_fit_recovers_constants(void **state)
{
    (void)state;
    struct atr_calib_point p[64];
    struct atr_calib_fit f;
    struct atr_error err;
    /* one rep 30 % slow, one 30 % fast: the medians are exact */
    size_t n = points(p, &truth, 0.3);
    assert_int_equal(atr_calib_fit(p, n, 512, &f, &err), 0);
    near(f.ubatch_s, truth.ubatch_s);
    near(f.token_s, truth.token_s);
    near(f.pair_s, truth.pair_s);
    near(f.ctx_s, truth.ctx_s);
    near(f.seq_s, truth.seq_s);
    near(f.frontend_s, truth.frontend_s);
    assert_true(f.rms_rel < 1e-9);
    assert_int_equal(f.n_used, 8);   /* 3 TTFTs, 5 gaps: one row per distinct point */
}

/* Timings whose best fit wants a negative front end: it is dropped (0)
 * and the others refitted, never written negative. */
static void test_fit_none_negative(void **state)
{
    (void)state;
    struct atr_calib_fit c = truth;
    c.frontend_s = 0;
    struct atr_calib_point p[64];
    size_t n = points(p, &c, 0);
    for (size_t i = 0; i < n; i++)
        if (p[i].concurrency == 1)
            p[i].ttft_s *= 0.97;               /* faster than any front end allows */
    struct atr_calib_fit f;
    struct atr_error err;
    assert_int_equal(atr_calib_fit(p, n, 512, &f, &err), 0);
    assert_true(f.ubatch_s >= 0 && f.token_s >= 0 && f.pair_s >= 0 && f.ctx_s >= 0 &&
                f.seq_s >= 0 && f.frontend_s >= 0);
}

static void test_fit_too_few(void **state)
{
    (void)state;
    struct atr_calib_point p[2] = {
        { 1, 256, 64, 0.01, 0.001, 0.001 }, { 1, 256, 64, 0.011, 0.001, 0.001 },
    };
    struct atr_calib_fit f;
    struct atr_error err;
    assert_int_equal(atr_calib_fit(p, 2, 512, &f, &err), -1);
    assert_non_null(strstr(err.msg, "cannot determine the cost constants"));
}

/* The file written loads as a device and costs iterations from the fit. */
static void test_profile_loads(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/atr-calib-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/gpus", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/gpus/mine.json", dir);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_calib_profile_json(&b, &truth, "my \"CPU\"", "a note"), 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fwrite(b.data, 1, b.len, fp);
    fclose(fp);
    atr_buf_release(&b);
    struct atr_error err;
    assert_int_equal(atr_profiles_load(dir, &err), 0);
    struct atr_profile p;
    assert_int_equal(atr_profile_find("mine/atr-tiny", 1, &p, &err), 0);
    assert_string_equal(p.gpu->full_name, "my \"CPU\"");
    assert_int_equal(atr_profile_set_flavour(&p, "llama.cpp"), 0);
    assert_true(p.llama_cpu);
    assert_true(p.frontend_s == truth.frontend_s);
    /* one decoding sequence at 1000 tokens of context */
    struct atr_iter_work w = {0};
    atr_iter_add_decode(&w, 1000);
    near(atr_iter_seconds(&p, &w), truth.ubatch_s + truth.token_s + 1000 * truth.ctx_s +
                                       truth.seq_s);
    /* the vLLM flavour on the same device ignores the llama_* constants */
    assert_int_equal(atr_profile_set_flavour(&p, "vllm"), 0);
    assert_false(p.llama_cpu);
    unlink(path);
    snprintf(path, sizeof path, "%s/gpus", dir);
    rmdir(path);
    rmdir(dir);
    assert_int_equal(atr_profiles_load(NULL, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_constants),
        cmocka_unit_test(test_fit_none_negative),
        cmocka_unit_test(test_fit_too_few),
        cmocka_unit_test(test_profile_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
