/* test-llm-metrics.c - vLLM benchmark figures on hand-computed request
 * sets: the result JSON and printed block against golden files in
 * tests/data/llm/, failures counted but not averaged, "inf" rates,
 * goodput, empty and all-failed runs, per-request lines, per-session
 * figures of multi-turn workloads, configured percentiles and exact
 * inter-token gap percentiles. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/writer.h"
#include "stats/metrics.h"
#include "stats/percentile.h"
#include "stats/result.h"

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/llm/%s", ATR_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static const double c0[] = {0.25, 0.5, 0.75, 1.0};
static const double c1[] = {1.0, 1.5};
static const double c2[] = {2.0, 2.125, 2.25, 2.5};
static const double c3[] = {2.625};

/* Five requests, concurrency 2 (R2 waits 0.5 s for a slot, R3 is sent
 * 0.125 s late, R4 fails before it is sent; the others leave 1 ms after
 * their start). Every figure is worked out in five.json. */
static const struct atr_llm_record five[] = {
    {0, 0.0, 0.0, 0.0, 0.001, 1.0, c0, 4, 100, 4, 0, true, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0},
    {1, 0.5, 0.5, 0.5, 0.501, 1.5, c1, 2, 200, 3, 64, true, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0},
    {2, 1.0, 1.0, 1.5, 1.501, 2.5, c2, 4, 100, 5, 32, true, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0},
    {3, 1.5, 1.625, 1.625, 1.626, 2.625, c3, 1, 50, 1, 0, true, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0},
    {4, 2.0, 2.0, 2.5, 0, 3.0, NULL, 0, 0, 0, 0, false, "http 500", NULL, 0, 0, NULL, 0, false, false, NULL, 0},
};

static struct atr_llm_bench_config base_cfg(void)
{
    struct atr_llm_bench_config c;
    memset(&c, 0, sizeof c);
    c.date = "20260101-000000";
    c.backend = "openai";
    c.model_id = "m/x";
    c.num_prompts = 5;
    c.request_rate = 2.0;
    c.burstiness = 1.0;
    c.max_concurrency = 2;
    c.slo_ttft_ms = c.slo_tpot_ms = c.slo_e2el_ms = -1;
    c.e2el_section = true;
    return c;
}

static void check_outputs(const struct atr_llm_record *r, size_t n,
                          const struct atr_llm_bench_config *c,
                          const char *json_golden, const char *block_golden)
{
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, n, c, &s, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, c), 0);
    assert_string_equal(b.data, slurp(json_golden));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, c), 0);
    assert_string_equal(b.data, slurp(block_golden));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

static void test_five_golden(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    check_outputs(five, 5, &c, "five.json", "five.txt");
}

/* Request rate inf is the string "inf" and drops the "configured" line;
 * no successes gives zeros like vLLM's all-failed file. */
static void test_all_failed_inf(void **state)
{
    (void)state;
    const struct atr_llm_record f[] = {
        {0, 0, 0, 0, 0, 0.5, NULL, 0, 0, 0, 0, false, "http 500", NULL, 0, 0, NULL, 0, false, false, NULL, 0},
        {1, 0, 0, 0, 0, 0.25, NULL, 0, 0, 0, 0, false, "http 500", NULL, 0, 0, NULL, 0, false, false, NULL, 0},
        {2, 0, 0, 0, 0, 1.0, NULL, 0, 0, 0, 0, false, "http 500", NULL, 0, 0, NULL, 0, false, false, NULL, 0},
    };
    struct atr_llm_bench_config c = base_cfg();
    c.num_prompts = 3;
    c.request_rate = INFINITY;
    c.max_concurrency = 0;
    check_outputs(f, 3, &c, "all-failed.json", "all-failed.txt");
}

/* No request rate (sessions of several turns) is null and no "configured"
 * line; the schedule goes under "atr" and into the block. */
static void test_no_request_rate_schedule(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.request_rate = NAN;
    c.schedule = "poisson";
    c.session_rate = 2;
    c.time_scale = 1;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"request_rate\": null, \"burstiness\": 1.0"));
    assert_non_null(strstr(b.data, "\"schedule\": {\"arrival\": \"poisson\", "
                                   "\"session_rate\": 2.0, \"time_scale\": 1.0}"));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_null(strstr(b.data, "Request rate configured"));
    assert_non_null(strstr(b.data, "Arrival schedule:                        poisson   \n"
                                   "Session start rate (/s):                 2.00      \n"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

static void test_failures_excluded_and_grouped(void **state)
{
    (void)state;
    struct atr_llm_record r[7];
    memcpy(r, five, sizeof five);
    /* a failure with huge latency and tokens must not move any figure */
    r[5] = (struct atr_llm_record){5, 0, 0, 0, 0, 2.9, c0, 4, 999, 999, 7, false, "stream cut", NULL, 0, 0, NULL, 0, false, false, NULL, 0};
    r[6] = (struct atr_llm_record){6, 0, 0, 0, 0, 2.0, NULL, 0, 0, 0, 0, false, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0};
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, 7, &c, &s, &err), 0);
    assert_int_equal(s.completed, 4);
    assert_int_equal(s.failed, 3);
    assert_int_equal(s.total_input, 450);
    assert_int_equal(s.total_output, 13);
    assert_int_equal(s.cached_tokens, 96);
    assert_true(s.ttft.mean == 562.5);
    assert_true(s.itl.mean == 250.0);
    assert_int_equal(s.n_failures, 3);   /* sorted by reason */
    assert_string_equal(s.failures[0].reason, "http 500");
    assert_string_equal(s.failures[1].reason, "stream cut");
    assert_string_equal(s.failures[2].reason, "unknown");
    assert_int_equal(s.failures[0].count, 1);
    atr_llm_summary_release(&s);
}

/* SLOs: ttft 600 ms and tpot 300 ms pass R0-R2 (R3's TTFT is 1 s): 3 good
 * in 3 s. Adding e2el 999 ms fails everyone (all E2EL are 1 s). */
static void test_goodput(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.slo_ttft_ms = 600;
    c.slo_tpot_ms = 300;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), 0);
    assert_int_equal(s.good_completed, 3);
    assert_true(s.request_goodput == 1.0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"request_goodput\": 1.0,"));
    assert_non_null(strstr(b.data, "\"goodput\": {\"slo_ms\": {\"ttft\": 600.0, \"tpot\": 300.0}, "
                                   "\"good_requests\": 3, \"request_goodput\": 1.0}"));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\nRequest goodput (req/s):                 1.00      \n"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
    c.slo_e2el_ms = 999;
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), 0);
    assert_int_equal(s.good_completed, 0);
    atr_llm_summary_release(&s);
}

static void test_empty(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.incomplete = true;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(NULL, 0, &c, &s, &err), 0);
    assert_int_equal(s.completed, 0);
    assert_true(s.duration == 0.0 && s.request_throughput == 0.0 && s.ttft.p[0] == 0.0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"atr\": {\"incomplete\": true, "));
    assert_non_null(strstr(b.data, "\"failures_by_reason\": {}}}"));
    assert_null(strstr(b.data, "nan"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

static void test_percentile_keys(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.n_percentiles = 2;
    c.percentiles[0] = 50;
    c.percentiles[1] = 99.9;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"p50_ttft_ms\": 500.0, \"p99.9_ttft_ms\": "));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\nP99.9 ITL (ms):"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

/* s's ITL median and percentiles (those of c) are those of the gaps
 * (seconds; sorted here). */
static void assert_itl_ranks(const struct atr_llm_summary *s, double *gaps, size_t ng,
                             const struct atr_llm_bench_config *c)
{
    atr_sort_doubles(gaps, ng);
    double median = ng % 2 ? gaps[ng / 2] : (0.0 + gaps[ng / 2 - 1] + gaps[ng / 2]) / 2;
    assert_true(s->itl.median == median * 1000);
    for (size_t i = 0; i < c->n_percentiles; i++)
        assert_true(s->itl.p[i] == atr_percentile_sorted(gaps, ng, c->percentiles[i]) * 1000);
}

/* The inter-token gap percentiles are found within 16-bit buckets of the
 * gaps (stats/metrics.c): they must equal those of the sorted gaps, here
 * with gaps over many buckets, repeats, zeros and ranks at every edge. */
static void test_itl_percentiles_exact(void **state)
{
    (void)state;
    enum { NREC = 60, NCH = 90 };
    static double times[NREC][NCH];
    static struct atr_llm_record r[NREC];
    static double gaps[NREC * NCH];
    size_t ng = 0;
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < NREC; i++) {
        size_t n = 1 + i % NCH;
        double t = (double)i;
        for (size_t c = 0; c < n; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double g = x % 5 == 0 ? 0.025 : x % 7 == 0 ? 0.0
                                          : ldexp((double)(x % 1000), -(int)(x % 40));
            if (c > 0) {
                double prev = t;
                t += g;
                gaps[ng++] = t - prev;
            }
            times[i][c] = t;
        }
        r[i] = (struct atr_llm_record){ .id = i, .start_s = (double)i, .end_s = t,
                                        .chunk_s = times[i], .n_chunks = n,
                                        .output_tokens = (int64_t)n, .success = true };
    }
    struct atr_llm_bench_config c = base_cfg();
    const double pct[] = {0, 1, 25, 50, 90, 99, 99.9, 100};
    c.n_percentiles = sizeof pct / sizeof *pct;
    memcpy(c.percentiles, pct, sizeof pct);
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, NREC, &c, &s, &err), 0);
    assert_itl_ranks(&s, gaps, ng, &c);
    atr_llm_summary_release(&s);
}

/* numpy's pairwise sum (block 128, eight accumulators), written out here
 * over a plain array, apart from the summary's version that reads the gaps
 * out of the records. */
static double np_pairwise(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        memcpy(r, a, sizeof r);
        size_t i;
        for (i = 8; i < n - n % 8; i += 8)
            for (size_t j = 0; j < 8; j++)
                r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return np_pairwise(a, n2) + np_pairwise(a + n2, n - n2);
}

/* The mean and std of gaps[0..n) as numpy makes them. */
static void np_mean_std(const double *gaps, size_t n, double *sq, double *mean, double *std)
{
    double m = np_pairwise(gaps, n) / (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = gaps[i] - m;
        sq[i] = d * d;
    }
    *mean = m;
    *std = sqrt(np_pairwise(sq, n) / (double)n);
}

/* The gaps' mean, std and percentiles, which the summary makes in two
 * passes over the records (sums leaf by leaf, buckets by top bits), equal
 * numpy's over the array of gaps, bit for bit: many leaves, runs of gaps
 * that cross leaves, failed records in between, negative gaps, -0.0,
 * zeros and repeats. A changed summation order shows in the last bit of
 * only some sums, so the mean and std are checked over many prefixes of
 * the records. */
static void test_itl_matches_array(void **state)
{
    (void)state;
    enum { NREC = 400, NCH = 700 };
    static double times[NREC][NCH];
    static struct atr_llm_record r[NREC];
    static double gaps[NREC * NCH], sq[NREC * NCH];
    static size_t upto[NREC + 1];           /* gaps of r[0..i) */
    uint64_t x = 2463534242ULL;
    for (size_t i = 0; i < NREC; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % NCH), ng = upto[i];
        bool ok = x % 11 != 0;
        double t = 3.0 + (double)i / 7;
        for (size_t c = 0; c < n; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double g = x % 9 == 0 ? 0.03125 : x % 13 == 0 ? -0.0
                     : x % 17 == 0 ? -ldexp((double)(x % 97), -9)
                                   : (double)(x % 100003) / 999983 / (double)(1 + x % 1000);
            double prev = t;
            t = c ? t + g : t;
            if (c > 0 && ok)
                gaps[ng++] = t - prev;
            times[i][c] = t;
        }
        upto[i + 1] = ng;
        r[i] = (struct atr_llm_record){ .id = i, .start_s = (double)i / 7, .end_s = t,
                                        .chunk_s = times[i], .n_chunks = n,
                                        .output_tokens = (int64_t)n, .success = ok,
                                        .error = ok ? NULL : "http 500" };
    }
    size_t ng = upto[NREC];
    assert_true(ng > 50000);
    struct atr_llm_bench_config c = base_cfg();
    const double pct[] = {0, 0.5, 10, 50, 75, 99, 99.99, 100};
    c.n_percentiles = sizeof pct / sizeof *pct;
    memcpy(c.percentiles, pct, sizeof pct);
    struct atr_llm_summary s;
    struct atr_error err;
    for (size_t k = 1; k < NREC; k += 9) {
        double mean, std;
        if (upto[k] == 0)
            continue;
        assert_int_equal(atr_llm_summarize(r, k, &c, &s, &err), 0);
        np_mean_std(gaps, upto[k], sq, &mean, &std);
        assert_true(s.itl.mean == mean * 1000);
        assert_true(s.itl.std == std * 1000);
        atr_llm_summary_release(&s);
    }
    assert_int_equal(atr_llm_summarize(r, NREC, &c, &s, &err), 0);
    assert_itl_ranks(&s, gaps, ng, &c);
    atr_llm_summary_release(&s);
}

/* The peaks, counted per second from the first successful start, equal a
 * direct count: requests that start and end in the same second, span many,
 * end on a whole second, fail (not counted), and chunks at both ends. */
static void test_peaks_match_direct_count(void **state)
{
    (void)state;
    enum { NREC = 300, NCH = 40, NB = 400 };
    static double times[NREC][NCH];
    static struct atr_llm_record r[NREC];
    uint64_t x = 88172645463325252ULL;
    double lo = INFINITY;
    for (size_t i = 0; i < NREC; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double start = 5.0 + (double)(x % 1500) / 10, t = start;
        size_t n = (size_t)(x >> 20) % NCH;
        for (size_t c = 0; c < n; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            t += (double)(x % 8) / 4;
            times[i][c] = t;
        }
        bool ok = x % 7 != 0;
        double end = n ? t : start + (double)(x % 3);
        r[i] = (struct atr_llm_record){ .id = i, .start_s = start, .end_s = end,
                                        .chunk_s = times[i], .n_chunks = n,
                                        .output_tokens = (int64_t)n, .success = ok,
                                        .error = ok ? NULL : "http 500" };
        if (ok)
            lo = fmin(lo, start);
    }
    int64_t tok[NB] = {0}, conc[NB] = {0}, max_tok = 0, max_conc = 0;
    for (size_t i = 0; i < NREC; i++) {
        if (!r[i].success)
            continue;
        for (size_t c = 0; c < r[i].n_chunks; c++)
            tok[(size_t)floor(r[i].chunk_s[c] - lo)]++;
        for (size_t b = (size_t)floor(r[i].start_s - lo); b <= (size_t)floor(r[i].end_s - lo); b++)
            conc[b]++;
    }
    for (size_t b = 0; b < NB; b++) {
        max_tok = tok[b] > max_tok ? tok[b] : max_tok;
        max_conc = conc[b] > max_conc ? conc[b] : max_conc;
    }
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, NREC, &c, &s, &err), 0);
    assert_true(max_conc > 10);
    assert_int_equal(s.max_concurrent_requests, max_conc);
    assert_true(s.max_output_tokens_per_s == (double)max_tok);   /* above the run's mean here */
    atr_llm_summary_release(&s);
}

/* The token peak is never below the mean output throughput: a run shorter
 * than a second (vLLM's whole-second bucket halves a half-second run's
 * rate), a short tail after whole seconds, and chunks of several tokens
 * (usage tokens, not chunks, are counted). */
static void test_peak_not_below_mean(void **state)
{
    (void)state;
    static const double half[] = {0.1, 0.2, 0.3, 0.4, 0.5};     /* 0.5 s run */
    static const double tail[] = {0.5, 1.5, 2.0, 2.05, 2.1};    /* 2.1 s, last 0.1 s busy */
    static const double few[] = {0.5, 1.0};                     /* 2 chunks of 10 tokens */
    const struct { const double *t; size_t n; int64_t tokens; } runs[] = {
        {half, 5, 5}, {tail, 5, 5}, {few, 2, 20},
    };
    struct atr_llm_bench_config c = base_cfg();
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        struct atr_llm_record r = {.id = 0, .send_s = 0, .start_s = 0,
                                   .end_s = runs[k].t[runs[k].n - 1], .chunk_s = runs[k].t,
                                   .n_chunks = runs[k].n, .output_tokens = runs[k].tokens,
                                   .success = true};
        struct atr_llm_summary s;
        struct atr_error err;
        assert_int_equal(atr_llm_summarize(&r, 1, &c, &s, &err), 0);
        if (s.max_output_tokens_per_s < s.output_throughput) {
            fprintf(stderr, "run %zu: peak %.3f below the mean %.3f\n", k,
                    s.max_output_tokens_per_s, s.output_throughput);
            fail();
        }
        atr_llm_summary_release(&s);
    }
}

/* More than ATR_LLM_MAX_PCT percentiles is refused, not truncated. */
static void test_too_many_percentiles(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.n_percentiles = ATR_LLM_MAX_PCT + 1;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), -1);
    assert_non_null(strstr(err.msg, "at most 8 percentiles"));
}

/* Three sessions, records in no particular order, and one request of no
 * session. Session a: turns at 0-1 s, 2-2.5 s, sent at 3.5 s and started
 * at 4 s (queued), ended at 5 s: completion 5 s, model 1 + 0.5 + 1.5 = 3 s,
 * think 2 s. Session b: 1-2 s and 4-5 s: completion 4 s, model 2 s, think
 * 2 s. Session c: its second turn failed, so the session failed. */
static const struct atr_llm_record sessions[] = {
    {0, 0.0, 0.0, 0.0, 0, 1.0, c0, 4, 100, 4, 0, true, NULL, "a", 0, 0, NULL, 0, false, false, NULL, 0},
    {1, 1.0, 1.0, 1.0, 0, 2.0, c1, 2, 100, 3, 0, true, NULL, "b", 0, 0, NULL, 0, false, false, NULL, 0},
    {2, 3.5, 3.5, 4.0, 0, 5.0, c3, 1, 100, 1, 0, true, NULL, "a", 2, 0, NULL, 0, false, false, NULL, 0},
    {3, 0.0, 0.0, 0.0, 0, 1.0, c0, 4, 100, 4, 0, true, NULL, "c", 0, 0, NULL, 0, false, false, NULL, 0},
    {4, 2.0, 2.0, 2.0, 0, 2.5, c3, 1, 100, 1, 0, true, NULL, "a", 1, 0, NULL, 0, false, false, NULL, 0},
    {5, 4.0, 4.0, 4.0, 0, 5.0, c2, 4, 100, 5, 0, true, NULL, "b", 1, 0, NULL, 0, false, false, NULL, 0},
    {6, 2.0, 2.0, 2.0, 0, 3.0, NULL, 0, 0, 0, 0, false, "http 500", "c", 1, 0, NULL, 0, false, false, NULL, 0},
    {7, 0.5, 0.5, 0.5, 0, 9.0, c1, 2, 100, 3, 0, true, NULL, NULL, 0, 0, NULL, 0, false, false, NULL, 0},
};
#define N_SESSION_RECS (sizeof sessions / sizeof sessions[0])

static void test_sessions_hand_computed(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(sessions, N_SESSION_RECS, &c, &s, &err), 0);
    const struct atr_llm_sessions *ss = &s.sessions;
    assert_true(ss->multi_turn);
    assert_int_equal(ss->completed, 2);
    assert_int_equal(ss->failed, 1);
    /* completion {5, 4} s, model {3, 2} s, think {2, 2} s; default p90, p99 */
    assert_float_equal(ss->completion.mean, 4500, 1e-9);
    assert_float_equal(ss->completion.median, 4500, 1e-9);
    assert_float_equal(ss->completion.std, 500, 1e-9);
    assert_float_equal(ss->completion.p[0], 4900, 1e-9);
    assert_float_equal(ss->completion.p[1], 4990, 1e-9);
    assert_float_equal(ss->model.mean, 2500, 1e-9);
    assert_float_equal(ss->model.p[0], 2900, 1e-9);
    assert_float_equal(ss->model.p[1], 2990, 1e-9);
    assert_float_equal(ss->think.mean, 2000, 1e-9);
    assert_float_equal(ss->think.std, 0, 1e-9);
    assert_float_equal(ss->think.p[1], 2000, 1e-9);
    assert_int_equal(s.completed, 7);    /* request figures are untouched */
    atr_llm_summary_release(&s);
}

static void test_sessions_outputs(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(sessions, N_SESSION_RECS, &c, &s, &err), 0);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"failures_by_reason\": {\"http 500\": 1}, "
                                   "\"sessions\": {\"completed\": 2, \"failed\": 1, "
                                   "\"mean_completion_ms\": 4500.0, "
                                   "\"median_completion_ms\": 4500.0, "
                                   "\"std_completion_ms\": 500.0, \"p90_completion_ms\": "));
    assert_non_null(strstr(b.data, "\"mean_model_time_ms\": 2500.0, "));
    assert_non_null(strstr(b.data, "\"p99_think_time_ms\": 2000.0, \"kv_retention\": {"));
    assert_non_null(strstr(b.data, "\"p99_ttft_ms\": "));   /* requests keep {99} */
    assert_null(strstr(b.data, "\"p90_ttft_ms\""));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_non_null(strstr(b.data,
                           "\n-----------------Session Metrics------------------\n"
                           "Completed sessions:                      2         \n"
                           "Failed sessions:                         1         \n"
                           "Mean completion time (ms):               4500.00   \n"
                           "Median completion time (ms):             4500.00   \n"
                           "P90 completion time (ms):                4900.00   \n"
                           "P99 completion time (ms):                4990.00   \n"
                           "Mean model time (ms):                    2500.00   \n"));
    assert_non_null(strstr(b.data, "\nP99 think/tool time (ms):                2000.00   \n"
                                   "==================================================\n"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

/* One turn per session (each request its own trace) is not a multi-turn
 * workload: no "sessions" object, no section, the same bytes as without
 * trace ids. */
static void test_single_turn_sessions_silent(void **state)
{
    (void)state;
    struct atr_llm_record r[5];
    memcpy(r, five, sizeof five);
    const char *ids[5] = {"t0", "t1", "t2", "t3", "t4"};
    for (int i = 0; i < 5; i++)
        r[i].trace_id = ids[i];
    struct atr_llm_bench_config c = base_cfg();
    check_outputs(r, 5, &c, "five.json", "five.txt");
}

/* --percentiles applies to session figures too, with vLLM's key words. */
static void test_session_percentile_keys(void **state)
{
    (void)state;
    struct atr_llm_bench_config c = base_cfg();
    c.n_percentiles = 2;
    c.percentiles[0] = 50;
    c.percentiles[1] = 99.9;
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(sessions, N_SESSION_RECS, &c, &s, &err), 0);
    assert_float_equal(s.sessions.completion.p[0], 4500, 1e-9);
    assert_float_equal(s.sessions.completion.p[1], 4999, 1e-9);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"p50_completion_ms\": 4500.0, \"p99.9_completion_ms\": "));
    assert_null(strstr(b.data, "p90_completion_ms"));
    assert_non_null(strstr(b.data, "\"p99.9_e2el_from_send_ms\": "));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\nP99.9 think/tool time (ms):"));
    assert_non_null(strstr(b.data, "\nP50 TPOT (ms):"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

static void test_request_lines(void **state)
{
    (void)state;
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_request_line(&b, &five[2]), 0);
    assert_int_equal(atr_llm_write_request_line(&b, &five[4]), 0);
    assert_string_equal(b.data, slurp("requests.ndjson"));
    atr_buf_release(&b);
}

/* Request-line times are whole nanoseconds, written with integer code:
 * digits past the nanosecond round, the fraction keeps one digit, signs
 * and values past the fast path's range are right. */
static void test_request_line_times(void **state)
{
    (void)state;
    const struct atr_llm_record r = {
        7, 0.1, 123.4567890126, 123.4567890124, 0, 1e10, NULL, 0, 0, 0, 0,
        false, "stall", NULL, 0, 0, NULL, 0, false, false, NULL, 0};
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_request_line(&b, &r), 0);
    assert_non_null(strstr(b.data, "\"scheduled_s\": 0.1, \"send_s\": 123.456789013, "
                                   "\"start_s\": 123.456789012, \"sent_s\": null, "
                                   "\"end_s\": 10000000000.0, "
                                   "\"schedule_lag_ms\": 123356.789013, "
                                   "\"send_lag_ms\": 123356.789012, \"queue_ms\": 0.0"));
    atr_buf_release(&b);
}

/* A server that says nothing of its cache (-1) adds nothing to the cached
 * total (it took one token off for each such request before). */
static void test_cached_absent(void **state)
{
    (void)state;
    struct atr_llm_record r[2] = {five[0], five[1]};
    r[0].cached_tokens = -1;
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, 2, &c, &s, &err), 0);
    assert_int_equal(s.cached_tokens, 64);
    atr_llm_summary_release(&s);
}

/* The server's prompt_tokens against the intended length: the least excess
 * (a BOS, here 1) is the template's; past it, R2 is 4 % long and counts,
 * R1's 0.5 % does not. Records without an intended length (R3) or failed
 * (R4) are not compared; the result has the figures, the lines the fields. */
static void test_prompt_check(void **state)
{
    (void)state;
    struct atr_llm_record r[5];
    memcpy(r, five, sizeof five);
    r[0].intended_prompt_tokens = 99;     /* 100 counted: BOS */
    r[1].intended_prompt_tokens = 198;    /* 200: one off past the BOS (0.5 %) */
    r[2].intended_prompt_tokens = 95;     /* 100: four off past it (4.2 %) */
    r[4].intended_prompt_tokens = 7;
    r[4].error_detail = "request (7 tokens) exceeds the available context size";
    struct atr_llm_bench_config c = base_cfg();
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, 5, &c, &s, &err), 0);
    assert_int_equal(s.prompt_checked, 3);
    assert_int_equal(s.prompt_template_tokens, 1);
    assert_int_equal(s.prompt_mismatch, 1);
    assert_float_equal(s.prompt_max_rel_error, 4.0 / 95.0, 1e-12);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_non_null(strstr(b.data, "\"prompt_tokens_check\": {\"requests\": 3, "
                                   "\"template_tokens\": 1, \"mismatch\": 1, "
                                   "\"max_rel_error\": 0.042105263157894736}"));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);   /* 96 of 450 prompt tokens */
    assert_non_null(strstr(b.data, "Total Token throughput (tok/s):          154.33    \n"
                                   "Cached prompt tokens:                    96        \n"
                                   "Prefix cache hit rate (%):               21.33     \n"));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_request_line(&b, &r[4]), 0);
    assert_non_null(strstr(b.data, "\"intended_prompt_tokens\": 7, \"error_detail\": "
                                   "\"request (7 tokens) exceeds the available context size\"}"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
    /* Without intended lengths (the simulator) the result has no such key. */
    assert_int_equal(atr_llm_summarize(five, 5, &c, &s, &err), 0);
    assert_int_equal(s.prompt_checked, 0);
    assert_int_equal(atr_llm_write_result_json(&b, &s, &c), 0);
    assert_null(strstr(b.data, "prompt_tokens_check"));
    atr_buf_clear(&b);
    assert_int_equal(atr_llm_write_block(&b, &s, &c), 0);
    assert_null(strstr(b.data, "Cached prompt tokens"));
    atr_buf_release(&b);
    atr_llm_summary_release(&s);
}

static void expect_float(double v, const char *want)
{
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_json_put_pyfloat(&b, v), 0);
    assert_string_equal(b.data, want);
    atr_buf_release(&b);
}

/* Python repr: what json.dump writes for a float. */
static void test_pyfloat(void **state)
{
    (void)state;
    expect_float(1.0, "1.0");
    expect_float(100.0, "100.0");
    expect_float(0.1, "0.1");
    expect_float(1e-05, "1e-05");
    expect_float(0.0001, "0.0001");
    expect_float(1e16, "1e+16");
    expect_float(1234567890123456.0, "1234567890123456.0");
    expect_float(1.0 / 3, "0.3333333333333333");
    expect_float(-2.5, "-2.5");
    expect_float(0.0, "0.0");
    expect_float(NAN, "null");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_five_golden),
        cmocka_unit_test(test_all_failed_inf),
        cmocka_unit_test(test_failures_excluded_and_grouped),
        cmocka_unit_test(test_goodput),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_percentile_keys),
        cmocka_unit_test(test_too_many_percentiles),
        cmocka_unit_test(test_itl_percentiles_exact),
        cmocka_unit_test(test_itl_matches_array),
        cmocka_unit_test(test_peaks_match_direct_count),
        cmocka_unit_test(test_peak_not_below_mean),
        cmocka_unit_test(test_sessions_hand_computed),
        cmocka_unit_test(test_sessions_outputs),
        cmocka_unit_test(test_single_turn_sessions_silent),
        cmocka_unit_test(test_session_percentile_keys),
        cmocka_unit_test(test_request_lines),
        cmocka_unit_test(test_request_line_times),
        cmocka_unit_test(test_pyfloat),
        cmocka_unit_test(test_cached_absent),
        cmocka_unit_test(test_prompt_check),
        cmocka_unit_test(test_no_request_rate_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
