/* test-sim-fidelity.c - the engine with the cost model against published
 * vLLM figures (docs/sim.md, "Validation"; bench/sim-fidelity runs them
 * all). The ISO-Bench burst on h100/llama-3.1-8b: 100 requests of 200 input
 * and 64 output tokens sent at once gave 45-55 req/s, 2800-3500 output
 * tok/s, mean TTFT 0.57-0.67 s, mean TPOT 23-31 ms (checked inside those
 * ranges widened by 20%), and the e206b543 record (231 input tokens) 49.40
 * req/s (checked within 5%). Then a calibration figure at batch 1 and a
 * held-out one, each within the error bench/sim-fidelity reports plus a
 * margin. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "sim/cost.h"
#include "sim/engine.h"

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

/* lo..hi widened by 20% on each side. */
static void assert_in_widened(double v, double lo, double hi)
{
    if (!(v >= lo * 0.8 && v <= hi * 1.2))
        fail_msg("%.3f outside %.3f..%.3f widened by 20%%", v, lo, hi);
}

/* v within rel (0.05 = 5%) of the published figure. */
static void assert_near(double v, double published, double rel, const char *what)
{
    if (!(fabs(v - published) <= rel * published))
        fail_msg("%s: %.3f is %+.1f%% off the published %.3f (allowed %.0f%%)", what, v,
                 100 * (v - published) / published, published, 100 * rel);
}

struct outcome {
    double req_s, out_tok_s;
    double ttft, tpot;     /* means, seconds */
};

/* n requests of in/out tokens on spec: all at time 0 (one_at_a_time
 * false), or each sent when the one before finished (concurrency 1). */
static struct outcome run_requests(const char *spec, unsigned n, uint32_t in, uint32_t out,
                                   bool one_at_a_time)
{
    struct atr_profile p;
    struct atr_error err;
    if (atr_profile_find(spec, 1, &p, &err) < 0)
        fail_msg("%s: %s", spec, err.msg);
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = profile_cost;
    cfg.cost_ctx = &p;
    cfg.kv_capacity_tokens = p.kv_capacity_tokens;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    struct outcome o = {0};
    double last = 0;
    size_t done_n = 0;
    for (unsigned i = 0; i < n; i++) {
        double at = one_at_a_time ? atr_engine_now(e) : 0;
        struct atr_sim_req r = {.id = i, .arrival = at, .prompt_tokens = in, .output_tokens = out};
        assert_non_null(atr_engine_add(e, &r, &err));
        if (!one_at_a_time && i + 1 < n)
            continue;
        assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
        size_t k;
        struct atr_sim_record *const *done = atr_engine_finished(e, &k);
        for (size_t j = 0; j < k; j++) {
            o.ttft += done[j]->first_token - done[j]->arrival;
            o.tpot += (done[j]->finish - done[j]->first_token) / (done[j]->output_tokens - 1);
            last = done[j]->finish > last ? done[j]->finish : last;
        }
        done_n += k;
    }
    assert_int_equal(done_n, n);
    atr_engine_free(e);
    o.req_s = n / last;
    o.out_tok_s = (double)n * out / last;
    o.ttft /= n;
    o.tpot /= n;
    return o;
}

static void test_h100_llama8b_burst(void **state)
{
    (void)state;
    struct outcome o = run_requests("h100/llama-3.1-8b", 100, 200, 64, false);
    assert_in_widened(o.req_s, 45, 55);
    assert_in_widened(o.out_tok_s, 2800, 3500);
    assert_in_widened(1000 * o.tpot, 23, 31);           /* mean TPOT, ms */
    assert_in_widened(o.ttft, 0.57, 0.67);              /* mean TTFT, s */

    /* the e206b543 record: 23,100 prompt tokens over 100 requests */
    o = run_requests("h100/llama-3.1-8b", 100, 231, 64, false);
    assert_near(o.req_s, 49.40, 0.05, "req/s");
    assert_near(1000 * o.tpot, 22.76, 0.10, "mean TPOT (ms)");
    assert_near(1000 * o.ttft, 574.18, 0.20, "mean TTFT (ms)");
}

/* Calibration figure, Qwen2.5 speed benchmark (vLLM 0.6.3, A100 80GB,
 * batch 1, 2048 tokens): 0.5B 311.55 tok/s and 7B 84.28 tok/s. The model
 * gets -6.5% and -3.3%; the 0.5B one is overhead-bound (its weights stream
 * in under a third of the step). */
static void test_a100_qwen25_batch1(void **state)
{
    (void)state;
    struct outcome o = run_requests("a100-80g/qwen2.5-0.5b", 1, 1, 2048, false);
    assert_near(o.out_tok_s, 311.55, 0.10, "0.5B tok/s");
    o = run_requests("a100-80g/qwen2.5-7b", 1, 1, 2048, false);
    assert_near(o.out_tok_s, 84.28, 0.10, "7B tok/s");
}

/* Held out (never fitted): tt-inference-server's vLLM reference runs on an
 * A100, one request at a time, 128 in / 128 out: mean TPOT 4.2 ms for
 * Qwen3-0.6B and 4.6 ms for Qwen3-1.7B. The model gets -10% and +14%. */
static void test_a100_qwen3_concurrency1(void **state)
{
    (void)state;
    struct outcome o = run_requests("a100-80g/qwen3-0.6b", 8, 128, 128, true);
    assert_near(1000 * o.tpot, 4.2, 0.20, "0.6B mean TPOT (ms)");
    o = run_requests("a100-80g/qwen3-1.7b", 8, 128, 128, true);
    assert_near(1000 * o.tpot, 4.6, 0.20, "1.7B mean TPOT (ms)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_llama8b_burst),
        cmocka_unit_test(test_a100_qwen25_batch1),
        cmocka_unit_test(test_a100_qwen3_concurrency1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
