/* test-sweep.c - the rate sweep's pure parts: the --slo parser, SLOs
 * against a summary, the evenly spaced rates, the bisection against a fake
 * measure(rate); and a small sweep on the simulator (determinism, run
 * kinds, the goodput rate between the passing and failing rates). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "exp/sweep.h"

static void test_slo_parse(void **state)
{
    (void)state;
    struct atr_slo s;
    struct atr_error err;
    char key[32];
    assert_int_equal(atr_slo_parse(&s, "ttft_p99=500ms,tpot_p50=0.05s,e2el_p90=2s,itl_p99=7ms",
                                   &err), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.items[0].metric, ATR_SLO_TTFT);
    assert_int_equal(s.items[0].pct, 99);
    assert_true(s.items[0].ms == 500);
    assert_int_equal(s.items[1].metric, ATR_SLO_TPOT);
    assert_int_equal(s.items[1].pct, 50);
    assert_true(fabs(s.items[1].ms - 50) < 1e-9);
    assert_true(s.items[2].ms == 2000);
    atr_slo_key(&s.items[3], key, sizeof key);
    assert_string_equal(key, "itl_p99");

    /* A key given twice keeps the last. */
    assert_int_equal(atr_slo_parse(&s, "ttft_p99=1s,ttft_p99=2ms", &err), 0);
    assert_int_equal(s.n, 1);
    assert_true(s.items[0].ms == 2);

    const char *bad[] = {"", "ttft_p99", "ttft_p99=5", "ttft_p95=5ms", "ttfx_p99=5ms",
                         "ttft_p99=-1ms", "ttft_p99=5ms,", "ttft_p99=5 ms", "ttft_p99=ms",
                         "ttft_p99=nanms", "ttft_p99=5m"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (strcmp(bad[i], "ttft_p99=5ms,") == 0)
            assert_int_equal(atr_slo_parse(&s, bad[i], &err), 0);   /* a trailing comma is fine */
        else
            assert_int_equal(atr_slo_parse(&s, bad[i], &err), -1);
    }
    assert_int_equal(atr_slo_parse(&s, "ttft_p98=5ms", &err), -1);
    assert_non_null(strstr(err.msg, "ttft_p98"));
}

static void test_slo_met(void **state)
{
    (void)state;
    struct atr_slo s;
    struct atr_error err;
    assert_int_equal(atr_slo_parse(&s, "ttft_p99=100ms,tpot_p50=10ms", &err), 0);
    struct atr_llm_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.completed = 10;
    sum.ttft.p[2] = 100;       /* p99 (percentiles 50, 90, 99) */
    sum.tpot.p[0] = 9.5;
    assert_true(atr_slo_met(&s, &sum));
    sum.ttft.p[2] = 100.5;
    assert_false(atr_slo_met(&s, &sum));
    sum.ttft.p[2] = 1;
    sum.tpot.p[0] = NAN;       /* never passes on a figure that is not there */
    assert_false(atr_slo_met(&s, &sum));
    sum.tpot.p[0] = 1;
    sum.completed = 0;
    assert_false(atr_slo_met(&s, &sum));
}

static void test_rates(void **state)
{
    (void)state;
    double r[4];
    atr_sweep_rates(1, 5, 4, r);
    assert_true(r[0] == 2 && r[1] == 3 && r[2] == 4 && r[3] == 5);
    atr_sweep_rates(3, 2, 2, r);
    assert_true(r[0] == 2 && r[1] == 2);
}

/* A fake system: rates up to `limit` meet the SLOs. */
struct fake {
    double limit;
    unsigned calls;
    double seen[16];
    int fail_at;               /* call number that errors, 0: none */
};

static int fake_measure(void *ctx, double rate, bool *meets, struct atr_error *err)
{
    struct fake *f = ctx;
    f->seen[f->calls++] = rate;
    if (f->fail_at && (int)f->calls == f->fail_at)
        return atr_error_set(err, "boom");
    *meets = rate <= f->limit;
    return 0;
}

static void test_bisect(void **state)
{
    (void)state;
    struct atr_error err;
    double best;
    struct fake f = {.limit = 7.3};
    int n = atr_sweep_bisect(5, 10, 0.05, 6, fake_measure, &f, &best, &err);
    /* 7.5 no, 6.25 yes, 6.875 yes, 7.1875 yes: [7.1875, 7.5] is within 5 %. */
    assert_int_equal(n, 4);
    assert_true(f.seen[0] == 7.5 && f.seen[1] == 6.25 && f.seen[2] == 6.875);
    assert_true(best == 7.1875);
    assert_true(best <= f.limit);

    /* The step cap: a tight tolerance stops after max_steps. */
    f = (struct fake){.limit = 7.3};
    n = atr_sweep_bisect(5, 10, 1e-9, 6, fake_measure, &f, &best, &err);
    assert_int_equal(n, 6);
    assert_true(best <= 7.3 && best > 7.3 - 5.0 / 64);

    /* Already within the tolerance: no measurement, lo is the answer. */
    f = (struct fake){.limit = 7.3};
    n = atr_sweep_bisect(9.8, 10, 0.05, 6, fake_measure, &f, &best, &err);
    assert_int_equal(n, 0);
    assert_true(best == 9.8);

    /* A failing measurement stops it. */
    f = (struct fake){.limit = 7.3, .fail_at = 2};
    assert_int_equal(atr_sweep_bisect(5, 10, 0.05, 6, fake_measure, &f, &best, &err), -1);
    assert_string_equal(err.msg, "boom");
}

static int run_sweep_n(const char *slo_spec, unsigned repeats, bool poisson, struct atr_buf *out,
                       struct atr_sweep_result *r)
{
    struct atr_target t;
    struct atr_error err;
    struct atr_slo slo;
    assert_int_equal(atr_target_parse(&t, "sim:h100/llama-3.1-8b", 1, &err), 0);
    if (slo_spec)
        assert_int_equal(atr_slo_parse(&slo, slo_spec, &err), 0);
    struct atr_workload w;
    atr_workload_generated(&w, 40, 256, 64);
    struct atr_sweep_cfg cfg = {
        .workload = &w, .n_rates = 3, .seed = 1, .slo = slo_spec ? &slo : NULL,
        .repeats = repeats, .poisson = poisson,
        .desc = {.generated = true, .requests = 40, .prompt_tokens = 256, .output_tokens = 64},
    };
    int rc = atr_sweep_run(&t, &cfg, r, &err);
    if (rc == 0)
        assert_int_equal(atr_sweep_write(out, &t, &cfg, r), 0);
    atr_workload_release(&w);
    atr_target_release(&t);
    return rc;
}

static int run_sweep(const char *slo_spec, struct atr_buf *out, struct atr_sweep_result *r)
{
    return run_sweep_n(slo_spec, 0, false, out, r);
}

static void test_sim_sweep(void **state)
{
    (void)state;
    struct atr_buf a = ATR_BUF_INIT, b = ATR_BUF_INIT;
    struct atr_sweep_result r, r2;
    assert_int_equal(run_sweep("ttft_p99=35ms", &a, &r), 0);
    assert_true(r.n >= 5);
    assert_int_equal(r.runs[0].kind, ATR_SWEEP_SYNCHRONOUS);
    assert_int_equal(r.runs[1].kind, ATR_SWEEP_THROUGHPUT);
    assert_true(isnan(r.runs[0].rate) && isnan(r.runs[1].rate));
    for (size_t i = 2; i < 5; i++) {
        assert_int_equal(r.runs[i].kind, ATR_SWEEP_RATE);
        assert_true(r.runs[i].rate > r.runs[0].m.sessions_per_s);
        assert_int_equal(r.runs[i].m.completed, 40);
    }
    assert_true(r.runs[4].rate == r.runs[1].m.sessions_per_s);
    assert_true(r.runs[0].meets);
    assert_true(r.has_goodput);
    assert_true(r.runs[r.goodput_run].meets);
    assert_true(r.goodput_rate >= r.runs[0].m.sessions_per_s);
    /* No passing run above the goodput rate. */
    for (size_t i = 0; i < r.n; i++)
        if (r.runs[i].kind != ATR_SWEEP_THROUGHPUT && r.runs[i].kind != ATR_SWEEP_SYNCHRONOUS)
            assert_true(!r.runs[i].meets || r.runs[i].rate <= r.goodput_rate);
    assert_non_null(strstr(a.data, "\"format\":\"atr-sweep/1\""));

    /* The same seed gives the same bytes. */
    assert_int_equal(run_sweep("ttft_p99=35ms", &b, &r2), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    atr_sweep_result_release(&r2);

    /* An SLO nothing meets: no goodput, no bisection. */
    atr_buf_clear(&b);
    assert_int_equal(run_sweep("ttft_p50=1ms", &b, &r2), 0);
    assert_false(r2.has_goodput);
    assert_int_equal(r2.n, 5);
    assert_non_null(strstr(b.data, "\"goodput\":null"));
    atr_sweep_result_release(&r2);
    atr_sweep_result_release(&r);
    atr_buf_release(&a);
    atr_buf_release(&b);
}

/* --repeat: sync and max alternate, then every rate once per repeat; a
 * rate meets the SLOs only when all its repeats do; each run says its
 * repeat, and Poisson repeats are fresh draws. */
static void test_sweep_repeats(void **state)
{
    (void)state;
    struct atr_buf a = ATR_BUF_INIT;
    struct atr_sweep_result r;
    assert_int_equal(run_sweep_n("ttft_p99=35ms", 2, true, &a, &r), 0);
    assert_true(r.n >= 10);
    const enum atr_sweep_kind kinds[] = {ATR_SWEEP_SYNCHRONOUS, ATR_SWEEP_THROUGHPUT,
                                         ATR_SWEEP_SYNCHRONOUS, ATR_SWEEP_THROUGHPUT};
    const unsigned reps[] = {1, 1, 2, 2, 1, 1, 1, 2, 2, 2};
    for (size_t i = 0; i < 10; i++) {
        if (i < 4)
            assert_int_equal(r.runs[i].kind, kinds[i]);
        else
            assert_int_equal(r.runs[i].kind, ATR_SWEEP_RATE);
        assert_int_equal(r.runs[i].repeat, reps[i]);
    }
    for (size_t i = 4; i < 7; i++) {
        assert_true(r.runs[i].rate == r.runs[i + 3].rate);            /* the same rates */
        assert_true(r.runs[i].meets == r.runs[i + 3].meets);          /* decided together */
        assert_true(r.runs[i].m.duration_s != r.runs[i + 3].m.duration_s);   /* fresh gaps */
    }
    assert_non_null(strstr(a.data, "\"repeats\":2"));
    assert_non_null(strstr(a.data, "\"repeat\":2"));
    atr_sweep_result_release(&r);
    atr_buf_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slo_parse),
        cmocka_unit_test(test_slo_met),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_bisect),
        cmocka_unit_test(test_sim_sweep),
        cmocka_unit_test(test_sweep_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
