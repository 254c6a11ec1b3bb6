/* test-gen.c - the seeded RNG and its distributions, and `atr gen`'s traces:
 * determinism, prefix sharing, exact request sizes, arrivals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "util/rng.h"
#include "trace/writer.h"

/* ---- rng ---- */

static void test_rng_streams(void **state)
{
    struct atr_rng a, b, c;
    atr_rng_seed(&a, 42, 0);
    atr_rng_seed(&b, 42, 0);
    atr_rng_seed(&c, 42, 1);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = atr_rng_next(&a);
        assert_int_equal(x, atr_rng_next(&b));
        same_c += x == atr_rng_next(&c);
    }
    assert_int_equal(same_c, 0);
}

/* xoshiro256** itself, from the reference state {1, 2, 3, 4}. */
static void test_rng_reference(void **state)
{
    struct atr_rng r = {{1, 2, 3, 4}};
    assert_int_equal(atr_rng_next(&r), 11520);
    assert_int_equal(atr_rng_next(&r), 0);
    assert_int_equal(atr_rng_next(&r), 1509978240);
}

static void test_det_log_exp(void **state)
{
    static const double xs[] = {1e-300, 1e-9, 0.001, 0.5, 0.7071, 1, 1.5, 2, 10, 12345.678, 1e300};
    for (size_t k = 0; k < sizeof xs / sizeof *xs; k++)
        assert_true(fabs(atr_det_log(xs[k]) - log(xs[k])) <= 1e-13 * fmax(1, fabs(log(xs[k]))));
    static const double es[] = {-50, -3.3, -0.1, 0, 0.25, 1, 7.5, 100, 600};
    for (size_t k = 0; k < sizeof es / sizeof *es; k++)
        assert_true(fabs(atr_det_exp(es[k]) - exp(es[k])) <= 1e-13 * exp(es[k]));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_distributions(void **state)
{
    enum { N = 20000 };
    static double v[N];
    struct atr_rng r;
    atr_rng_seed(&r, 7, 0);
    for (int i = 0; i < N; i++)
        v[i] = atr_rng_lognormal(&r, 150, 0.8);
    qsort(v, N, sizeof *v, cmp_double);
    assert_true(fabs(v[N / 2] - 150) < 150 * 0.05);
    double sum = 0, gsum = 0, nsum = 0, nsq = 0;
    for (int i = 0; i < N; i++) {
        sum += atr_rng_exponential(&r, 1000);
        gsum += atr_rng_gamma(&r, 0.5, 4);     /* mean 2 */
        double z = atr_rng_normal(&r);
        nsum += z;
        nsq += z * z;
    }
    assert_true(fabs(sum / N - 1000) < 40);
    assert_true(fabs(gsum / N - 2) < 0.1);
    assert_true(fabs(nsum / N) < 0.03);
    assert_true(fabs(nsq / N - 1) < 0.04);
    uint32_t w[3] = {1, 0, 3};
    size_t counts[3] = {0};
    for (int i = 0; i < N; i++)
        counts[atr_rng_choice(&r, w, 3)]++;
    assert_int_equal(counts[1], 0);
    assert_true(fabs((double)counts[2] / N - 0.75) < 0.02);
    for (int i = 0; i < 1000; i++) {
        int64_t x = atr_rng_range(&r, -3, 3);
        assert_true(x >= -3 && x <= 3);
        assert_true(atr_rng_lognormal_int(&r, 10, 3, 5, 20) >= 5);
    }
}

/* ---- generator ---- */

/* Every trace of a generator, serialised. */
static char *gen_text(const struct atr_gen_opts *o)
{
    struct atr_error err;
    struct atr_gen *g = atr_gen_new(o, &err);
    assert_non_null(g);
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_write_opts wo = {.expand = true};
    while (atr_gen_next(g, &t) == 1)
        atr_trace_write(&b, &t, &wo);
    atr_trace_release(&t);
    atr_gen_free(g);
    return b.data;                  /* owned by the caller */
}

static void test_deterministic(void **state)
{
    for (int kind = 0; kind < 3; kind++) {
        struct atr_gen_opts o = {.kind = (enum atr_gen_kind)kind, .traces = 4, .seed = 9,
                                 .rate = 2};
        char *a = gen_text(&o), *b = gen_text(&o);
        o.seed = 10;
        char *c = gen_text(&o);
        assert_string_equal(a, b);
        assert_true(strcmp(a, c) != 0);
        /* trace i does not depend on how many follow */
        o.seed = 9;
        o.traces = 2;
        char *d = gen_text(&o);
        assert_memory_equal(a, d, strlen(d));
        free(a), free(b), free(c), free(d);
    }
}

/* Generates n traces of o into ts[]. */
static void gen_traces(const struct atr_gen_opts *o, struct atr_trace *ts, size_t n)
{
    struct atr_error err;
    struct atr_gen *g = atr_gen_new(o, &err);
    assert_non_null(g);
    for (size_t i = 0; i < n; i++) {
        ts[i] = (struct atr_trace)ATR_TRACE_INIT;
        assert_int_equal(atr_gen_next(g, &ts[i]), 1);
    }
    struct atr_trace extra = ATR_TRACE_INIT;
    assert_int_equal(atr_gen_next(g, &extra), 0);
    atr_trace_release(&extra);
    atr_gen_free(g);
}

static size_t common_prefix(const struct atr_step *a, const struct atr_step *b)
{
    size_t k = 0;
    while (k < a->n_hash_ids && k < b->n_hash_ids && a->hash_ids[k] == b->hash_ids[k])
        k++;
    return k;
}

/* Shared system prompt across traces; growing context within a trace. */
static void test_swe_prefixes(void **state)
{
    struct atr_gen_opts o = {.kind = ATR_GEN_SWE, .traces = 3, .seed = 5, .rate = 1};
    struct atr_trace ts[3];
    gen_traces(&o, ts, 3);
    /* the system prompt is ~2170 tokens: > 100 blocks of 16 in common */
    assert_true(common_prefix(&ts[0].steps[0], &ts[1].steps[0]) >= 100);
    assert_true(common_prefix(&ts[1].steps[0], &ts[2].steps[0]) >= 100);
    /* the task differs: the first calls are not identical */
    assert_true(common_prefix(&ts[0].steps[0], &ts[1].steps[0]) < ts[0].steps[0].n_hash_ids);
    for (int k = 0; k < 3; k++) {
        const struct atr_trace *t = &ts[k];
        assert_true(t->n_steps >= 2 && t->n_steps % 2 == 0);
        assert_int_equal(t->steps[0].input_tokens >= 1500, 1);
        assert_int_equal(t->steps[0].input_tokens <= 6000, 1);
        const struct atr_step *prev = NULL;
        for (size_t i = 0; i < t->n_steps; i++) {
            const struct atr_step *s = &t->steps[i];
            assert_int_equal(s->kind, i % 2 ? ATR_STEP_TOOL : ATR_STEP_LLM);
            assert_true(s->dur_ms >= 1);
            if (i)
                assert_int_equal(s->t_ms, t->steps[i - 1].t_ms + t->steps[i - 1].dur_ms);
            if (s->kind == ATR_STEP_TOOL) {
                assert_non_null(s->tool);
                if (strcmp(s->tool, "bash") == 0)
                    assert_true(s->command && *s->command && s->exit_code >= 0);
                else
                    assert_true(strcmp(s->tool, "editor") == 0 && s->path && s->action);
                continue;
            }
            assert_int_equal(s->n_hash_ids, (s->input_tokens + 15) / 16);
            if (prev) {
                size_t full = (size_t)prev->input_tokens / 16;
                assert_true(common_prefix(prev, s) >= full);
                assert_true(s->input_tokens > prev->input_tokens);
            }
            prev = s;
        }
        atr_trace_release(&ts[k]);
    }
}

static void check_requests(uint64_t in, uint64_t out, uint64_t shared, uint32_t bs)
{
    struct atr_gen_opts o = {.kind = ATR_GEN_REQUESTS, .traces = 5, .seed = 3,
                             .rate = INFINITY, .block_size = bs, .input_tokens = in,
                             .output_tokens = out, .shared_prefix = shared};
    struct atr_trace ts[5];
    gen_traces(&o, ts, 5);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(ts[k].n_steps, 1);
        assert_int_equal(ts[k].start_ms, 0);
        assert_int_equal(ts[k].steps[0].input_tokens, in);
        assert_int_equal(ts[k].steps[0].output_tokens, out);
        assert_int_equal(ts[k].steps[0].n_hash_ids, (in + bs - 1) / bs);
        if (k) {
            /* exactly the shared full blocks in common, then unique */
            assert_int_equal(common_prefix(&ts[0].steps[0], &ts[k].steps[0]), shared / bs);
        }
    }
    for (int k = 0; k < 5; k++)
        atr_trace_release(&ts[k]);
}

static void test_requests_exact(void **state)
{
    check_requests(200, 64, 0, 16);
    check_requests(6, 1, 0, 16);
    check_requests(1000, 300, 512, 16);
    check_requests(777, 33, 100, 64);
    check_requests(513, 7, 40, 7);
    check_requests(50, 5, 4, 2);       /* the shared part is only the framing */
}

/* Ranges: every request's counts inside them, its hash ids and shared
 * prefix following its own prompt length; trace i the same whatever
 * --traces says. */
static void test_requests_ranges(void **state)
{
    enum { N = 200 };
    struct atr_gen_opts o = {.kind = ATR_GEN_REQUESTS, .traces = N, .seed = 5,
                             .rate = INFINITY, .block_size = 16, .input_tokens = 100,
                             .input_tokens_max = 400, .output_tokens = 2,
                             .output_tokens_max = 9, .shared_prefix = 64};
    static struct atr_trace ts[N], few[3];
    gen_traces(&o, ts, N);
    int64_t lo_in = INT64_MAX, hi_in = 0, lo_out = INT64_MAX, hi_out = 0;
    for (int k = 0; k < N; k++) {
        const struct atr_step *s = &ts[k].steps[0];
        lo_in = s->input_tokens < lo_in ? s->input_tokens : lo_in;
        hi_in = s->input_tokens > hi_in ? s->input_tokens : hi_in;
        lo_out = s->output_tokens < lo_out ? s->output_tokens : lo_out;
        hi_out = s->output_tokens > hi_out ? s->output_tokens : hi_out;
        assert_int_equal(s->max_tokens, s->output_tokens);
        assert_int_equal(s->n_hash_ids, (s->input_tokens + 15) / 16);
        if (k)
            assert_int_equal(common_prefix(&ts[0].steps[0], s), 64 / 16);
    }
    assert_true(lo_in >= 100 && hi_in <= 400 && hi_in - lo_in > 250);
    assert_int_equal(lo_out, 2);
    assert_int_equal(hi_out, 9);
    o.traces = 3;
    gen_traces(&o, few, 3);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(few[k].steps[0].input_tokens, ts[k].steps[0].input_tokens);
        assert_int_equal(few[k].steps[0].output_tokens, ts[k].steps[0].output_tokens);
        atr_trace_release(&few[k]);
    }
    for (int k = 0; k < N; k++)
        atr_trace_release(&ts[k]);
}

static void test_requests_too_small(void **state)
{
    struct atr_error err;
    struct atr_gen_opts o = {.kind = ATR_GEN_REQUESTS, .traces = 1, .input_tokens = 5};
    assert_null(atr_gen_new(&o, &err));
    assert_non_null(strstr(err.msg, "--input-tokens"));
    /* 99 shared + 1 footer token leave no room for the unique id word */
    o.input_tokens = 100;
    o.shared_prefix = 99;
    assert_null(atr_gen_new(&o, &err));
    o.shared_prefix = 98;
    struct atr_gen *g = atr_gen_new(&o, &err);
    assert_non_null(g);
    atr_gen_free(g);
    o.shared_prefix = 3;
    assert_null(atr_gen_new(&o, &err));
    assert_non_null(strstr(err.msg, "--shared-prefix"));
}

static void test_arrivals(void **state)
{
    enum { N = 2000 };
    struct atr_gen_opts o = {.kind = ATR_GEN_REQUESTS, .traces = N, .seed = 1, .rate = 4,
                             .input_tokens = 20, .output_tokens = 2};
    struct atr_error err;
    struct atr_gen *g = atr_gen_new(&o, &err);
    struct atr_trace t = ATR_TRACE_INIT;
    int64_t first = -1, last = 0;
    while (atr_gen_next(g, &t) == 1) {
        if (first < 0)
            first = t.start_ms;
        assert_true(t.start_ms >= last);
        last = t.start_ms;
    }
    assert_int_equal(first, 0);
    /* mean gap 250 ms: the last of 2000 arrives near 500 s */
    assert_true(last > 470000 && last < 530000);
    atr_trace_release(&t);
    atr_gen_free(g);
}

static void test_chat(void **state)
{
    struct atr_gen_opts o = {.kind = ATR_GEN_CHAT, .traces = 20, .seed = 2, .rate = 1};
    struct atr_trace ts[20];
    gen_traces(&o, ts, 20);
    int shared = 0;
    for (int k = 0; k < 20; k++) {
        assert_true(ts[k].n_steps >= 2 && ts[k].n_steps <= 12);
        for (size_t i = 0; i < ts[k].n_steps; i++)
            assert_int_equal(ts[k].steps[i].kind, ATR_STEP_LLM);
        for (size_t i = 1; i < ts[k].n_steps; i++)
            assert_true(ts[k].steps[i].t_ms >= ts[k].steps[i - 1].t_ms + ts[k].steps[i - 1].dur_ms);
        if (k)
            shared += common_prefix(&ts[0].steps[0], &ts[k].steps[0]) > 0;
    }
    /* 4 system prompts over 20 traces: some share trace 0's */
    assert_true(shared > 0 && shared < 19);
    for (int k = 0; k < 20; k++)
        atr_trace_release(&ts[k]);
}

static void test_keep_content(void **state)
{
    struct atr_gen_opts o = {.kind = ATR_GEN_SWE, .traces = 1, .seed = 1, .keep_content = true};
    struct atr_trace t;
    gen_traces(&o, &t, 1);
    assert_non_null(t.steps[0].messages);
    assert_int_equal(t.steps[0].messages->u.kids.count, 2);      /* system + task */
    assert_non_null(t.steps[0].output);
    atr_trace_release(&t);
}

static void test_kind_names(void **state)
{
    enum atr_gen_kind k;
    assert_true(atr_gen_kind_parse("requests", &k));
    assert_int_equal(k, ATR_GEN_REQUESTS);
    assert_string_equal(atr_gen_kind_name(k), "requests");
    assert_false(atr_gen_kind_parse("Swe", &k));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_streams),
        cmocka_unit_test(test_rng_reference),
        cmocka_unit_test(test_det_log_exp),
        cmocka_unit_test(test_distributions),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_swe_prefixes),
        cmocka_unit_test(test_requests_exact),
        cmocka_unit_test(test_requests_ranges),
        cmocka_unit_test(test_requests_too_small),
        cmocka_unit_test(test_arrivals),
        cmocka_unit_test(test_chat),
        cmocka_unit_test(test_keep_content),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
