/* metrics.c - vLLM's benchmark figures from per-request records, and the
 * result JSON, printed block and per-request lines built from them. */
#include "stats/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/percentile.h"

/* Beyond this many one-second buckets (about 3 years) the peak figures are
 * refused: the run's clock is broken, and the arrays would be huge. */
#define MAX_BUCKETS ((size_t)1 << 27)

/* numpy's pairwise summation (add.reduce on a contiguous float64 array,
 * block 128, eight accumulators), so mean and std match numpy bit for bit. */
static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (size_t j = 0; j < 8; j++)
            r[j] = a[j];
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
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

static double np_mean(const double *a, size_t n)
{
    return pairwise_sum(a, n) / (double)n;
}

/* Population standard deviation (ddof = 0) the way numpy's _var does it. */
static double np_std(const double *a, size_t n)
{
    double m = np_mean(a, n);
    double *d = malloc(n * sizeof *d);
    if (!d)
        abort();
    for (size_t i = 0; i < n; i++) {
        double x = a[i] - m;
        d[i] = x * x;
    }
    double v = pairwise_sum(d, n) / (double)n;
    free(d);
    return sqrt(v);
}

/* np.median: the middle value, or the mean of the two middle values as
 * (a + b) / 2, which can differ in the last bit from percentile 50. */
static double np_median(struct atr_samples *s)
{
    (void)atr_samples_percentile(s, 50);   /* sorts s->v */
    size_t n = s->n;
    if (n % 2)
        return s->v[n / 2];
    return (0.0 + s->v[n / 2 - 1] + s->v[n / 2]) / 2;
}

static size_t pct_count(const struct atr_llm_bench_config *cfg)
{
    return cfg->n_percentiles ? cfg->n_percentiles : 1;
}

static double pct_at(const struct atr_llm_bench_config *cfg, size_t i)
{
    return cfg->n_percentiles ? cfg->percentiles[i] : 99.0;
}

/* Figures of one metric in ms; an empty set gives zeros (vLLM's `x or 0`).
 * Computed in seconds and scaled last, in vLLM's order. */
static void stat_fill(struct atr_samples *s, const struct atr_llm_bench_config *cfg,
                      struct atr_llm_stat *st)
{
    memset(st, 0, sizeof *st);
    if (s->n == 0)
        return;
    st->mean = np_mean(s->v, s->n) * 1000;
    st->std = np_std(s->v, s->n) * 1000;
    st->median = np_median(s) * 1000;
    for (size_t i = 0; i < pct_count(cfg); i++)
        st->p[i] = atr_samples_percentile(s, pct_at(cfg, i)) * 1000;
}

static double pct_ms(struct atr_samples *s, double p)
{
    return s->n ? atr_samples_percentile(s, p) * 1000 : 0.0;
}

/* First token time: the first chunk, or the end of a response that came
 * in one piece (no chunks). */
static double first_token_s(const struct atr_llm_record *r)
{
    return r->n_chunks ? r->chunk_s[0] : r->end_s;
}

static double ttft_of(const struct atr_llm_record *r)
{
    return first_token_s(r) - r->start_s;
}

/* TPOT as vLLM's goodput sees it: 0 for one output token or none. */
static double tpot_of(const struct atr_llm_record *r)
{
    if (r->output_tokens <= 1)
        return 0.0;
    return ((r->end_s - r->start_s) - ttft_of(r)) / (double)(r->output_tokens - 1);
}

/* vLLM: good when every configured SLO (ms, compared in seconds) >= metric. */
static bool is_good(const struct atr_llm_record *r, const struct atr_llm_bench_config *c)
{
    if (c->slo_ttft_ms >= 0 && !(c->slo_ttft_ms / 1000 >= ttft_of(r)))
        return false;
    if (c->slo_tpot_ms >= 0 && !(c->slo_tpot_ms / 1000 >= tpot_of(r)))
        return false;
    if (c->slo_e2el_ms >= 0 && !(c->slo_e2el_ms / 1000 >= r->end_s - r->start_s))
        return false;
    return true;
}

struct sets {
    struct atr_samples ttft, tpot, itl, e2el, ttft_send, e2el_send, queue, lag;
};

static void sets_release(struct sets *k)
{
    atr_samples_release(&k->ttft);
    atr_samples_release(&k->tpot);
    atr_samples_release(&k->itl);
    atr_samples_release(&k->e2el);
    atr_samples_release(&k->ttft_send);
    atr_samples_release(&k->e2el_send);
    atr_samples_release(&k->queue);
    atr_samples_release(&k->lag);
}

static void add_success(struct sets *k, const struct atr_llm_record *r,
                        struct atr_llm_summary *s, const struct atr_llm_bench_config *c)
{
    double ttft = ttft_of(r);
    s->completed++;
    s->total_input += r->prompt_tokens;
    s->total_output += r->output_tokens;
    s->cached_tokens += r->cached_tokens;
    atr_samples_add(&k->ttft, ttft);
    atr_samples_add(&k->e2el, r->end_s - r->start_s);
    atr_samples_add(&k->ttft_send, first_token_s(r) - r->send_s);
    atr_samples_add(&k->e2el_send, r->end_s - r->send_s);
    if (r->output_tokens > 1)
        atr_samples_add(&k->tpot, tpot_of(r));
    for (size_t i = 1; i < r->n_chunks; i++)
        atr_samples_add(&k->itl, r->chunk_s[i] - r->chunk_s[i - 1]);
    if (s->goodput_configured && is_good(r, c))
        s->good_completed++;
}

static int cmp_reason(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x, y);
}

/* Failures grouped by reason, sorted by reason so output never depends on
 * record order. */
static int count_failures(const struct atr_llm_record *r, size_t n,
                          struct atr_llm_summary *s, struct atr_error *err)
{
    size_t nf = (size_t)s->failed;
    if (nf == 0)
        return 0;
    const char **v = malloc(nf * sizeof *v);
    s->failures = calloc(nf, sizeof *s->failures);
    if (!v || !s->failures) {
        free(v);
        return atr_error_set(err, "out of memory counting failures");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!r[i].success)
            v[k++] = r[i].error ? r[i].error : "unknown";
    qsort(v, nf, sizeof *v, cmp_reason);
    for (size_t i = 0; i < nf; i++) {
        if (s->n_failures && strcmp(s->failures[s->n_failures - 1].reason, v[i]) == 0) {
            s->failures[s->n_failures - 1].count++;
            continue;
        }
        s->failures[s->n_failures].reason = strdup(v[i]);
        if (!s->failures[s->n_failures].reason) {
            free(v);
            return atr_error_set(err, "out of memory counting failures");
        }
        s->failures[s->n_failures++].count = 1;
    }
    free(v);
    return 0;
}

/* Second buckets from the first successful start: chunks per second and
 * requests active in each second (vLLM's max_output_tokens_per_s and
 * max_concurrent_requests). */
static int peaks(const struct atr_llm_record *r, size_t n, struct atr_llm_summary *s,
                 struct atr_error *err)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (r[i].success) {
            lo = fmin(lo, r[i].start_s);
            hi = fmax(hi, r[i].end_s);
        }
    if (s->completed == 0)
        return 0;
    double span = ceil(hi - lo);
    if (!(span >= 0) || span + 1 > (double)MAX_BUCKETS)
        return atr_error_set(err, "request times span %g s: clock out of range", hi - lo);
    size_t nb = (size_t)span + 1;
    int64_t *tok = calloc(nb, sizeof *tok), *conc = calloc(nb, sizeof *conc);
    if (!tok || !conc) {
        free(tok);
        free(conc);
        return atr_error_set(err, "out of memory bucketing %zu seconds", nb);
    }
    for (size_t i = 0; i < n; i++) {
        if (!r[i].success)
            continue;
        for (size_t c = 0; c < r[i].n_chunks; c++) {
            double b = floor(r[i].chunk_s[c] - lo);
            if (b >= 0 && b < (double)nb)
                tok[(size_t)b]++;
        }
        size_t b0 = (size_t)floor(r[i].start_s - lo), b1 = (size_t)floor(r[i].end_s - lo);
        for (size_t b = b0; b <= b1 && b < nb; b++)
            conc[b]++;
    }
    for (size_t b = 0; b < nb; b++) {
        if ((double)tok[b] > s->max_output_tokens_per_s)
            s->max_output_tokens_per_s = (double)tok[b];
        if (conc[b] > s->max_concurrent_requests)
            s->max_concurrent_requests = conc[b];
    }
    free(tok);
    free(conc);
    return 0;
}

static void fill_sets(const struct atr_llm_record *r, size_t n, struct sets *k,
                      struct atr_llm_summary *s, const struct atr_llm_bench_config *c)
{
    for (size_t i = 0; i < n; i++) {
        if (r[i].success)
            add_success(k, &r[i], s, c);
        else
            s->failed++;
        atr_samples_add(&k->lag, r[i].send_s - r[i].scheduled_s);
        if (r[i].start_s >= r[i].send_s)   /* a request cut before its slot has no wait */
            atr_samples_add(&k->queue, r[i].start_s - r[i].send_s);
    }
}

static void fill_duration(const struct atr_llm_record *r, size_t n, struct atr_llm_summary *s)
{
    double first = INFINITY, last = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        first = fmin(first, r[i].send_s);
        last = fmax(last, r[i].end_s);
    }
    s->duration = n && last > first ? last - first : 0.0;
    if (s->duration <= 0)
        return;   /* nothing measured: throughputs stay 0, never NaN */
    s->request_throughput = (double)s->completed / s->duration;
    s->output_throughput = (double)s->total_output / s->duration;
    s->total_token_throughput = (double)(s->total_input + s->total_output) / s->duration;
    s->request_goodput = (double)s->good_completed / s->duration;
}

int atr_llm_summarize(const struct atr_llm_record *r, size_t n,
                      const struct atr_llm_bench_config *cfg,
                      struct atr_llm_summary *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    if (cfg->n_percentiles > ATR_LLM_MAX_PCT)
        return atr_error_set(err, "at most %d percentiles", ATR_LLM_MAX_PCT);
    out->goodput_configured = cfg->slo_ttft_ms >= 0 || cfg->slo_tpot_ms >= 0 ||
                              cfg->slo_e2el_ms >= 0;
    struct sets k = {ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT,
                     ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT};
    fill_sets(r, n, &k, out, cfg);
    fill_duration(r, n, out);
    stat_fill(&k.ttft, cfg, &out->ttft);
    stat_fill(&k.tpot, cfg, &out->tpot);
    stat_fill(&k.itl, cfg, &out->itl);
    stat_fill(&k.e2el, cfg, &out->e2el);
    stat_fill(&k.ttft_send, cfg, &out->ttft_send);
    stat_fill(&k.e2el_send, cfg, &out->e2el_send);
    out->queue_mean_ms = k.queue.n ? np_mean(k.queue.v, k.queue.n) * 1000 : 0.0;
    out->queue_p99_ms = pct_ms(&k.queue, 99);
    out->lag_p50_ms = pct_ms(&k.lag, 50);
    out->lag_p99_ms = pct_ms(&k.lag, 99);
    sets_release(&k);
    if (peaks(r, n, out, err) < 0 || count_failures(r, n, out, err) < 0) {
        atr_llm_summary_release(out);
        return -1;
    }
    return 0;
}

void atr_llm_summary_release(struct atr_llm_summary *s)
{
    for (size_t i = 0; i < s->n_failures; i++)
        free(s->failures[i].reason);
    free(s->failures);
    s->failures = NULL;
    s->n_failures = 0;
}

/* ---- writers ---------------------------------------------------------- */

/* Python repr: the fewest significant digits that read back exactly,
 * positional for decimal exponents in [-4, 16), else d.ddde+XX. */
int atr_llm_put_pyfloat(struct atr_buf *b, double v)
{
    if (!isfinite(v))
        return atr_buf_puts(b, "null");
    char tmp[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    int exp10 = atoi(strchr(tmp, 'e') + 1);
    if (v == 0 || exp10 < -4 || exp10 >= 16)
        return v == 0 ? atr_buf_puts(b, signbit(v) ? "-0.0" : "0.0") : atr_buf_puts(b, tmp);
    int decimals = prec - 1 - exp10;
    snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, v);
    if (atr_buf_puts(b, tmp) < 0)
        return -1;
    return decimals > 0 ? 0 : atr_buf_puts(b, ".0");
}

static int put_key(struct atr_buf *b, const char *key)
{
    if (b->len && b->data[b->len - 1] != '{' && atr_buf_puts(b, ", ") < 0)
        return -1;
    return atr_buf_printf(b, "\"%s\": ", key);
}

static int kv_num(struct atr_buf *b, const char *key, double v)
{
    return put_key(b, key) < 0 ? -1 : atr_llm_put_pyfloat(b, v);
}

static int kv_int(struct atr_buf *b, const char *key, int64_t v)
{
    return put_key(b, key) < 0 ? -1 : atr_buf_put_i64(b, v);
}

static int kv_bool(struct atr_buf *b, const char *key, bool v)
{
    return put_key(b, key) < 0 ? -1 : atr_buf_puts(b, v ? "true" : "false");
}

static int put_str_or_null(struct atr_buf *b, const char *s)
{
    if (!s)
        return atr_buf_puts(b, "null");
    if (atr_buf_putc(b, '"') < 0)
        return -1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int rc = *p == '"' || *p == '\\' ? atr_buf_printf(b, "\\%c", *p)
                 : *p < 0x20             ? atr_buf_printf(b, "\\u%04x", *p)
                                         : atr_buf_putc(b, (char)*p);
        if (rc < 0)
            return -1;
    }
    return atr_buf_putc(b, '"');
}

static int kv_str(struct atr_buf *b, const char *key, const char *s)
{
    return put_key(b, key) < 0 ? -1 : put_str_or_null(b, s);
}

/* "99" for integral percentiles, else Python's str(float), as vLLM names keys. */
static void pct_word(double p, char *out, size_t cap)
{
    if (p == floor(p))
        snprintf(out, cap, "%d", (int)p);
    else
        snprintf(out, cap, "%.15g", p);
}

static int kv_stat(struct atr_buf *b, const char *name, const struct atr_llm_stat *st,
                   const struct atr_llm_bench_config *cfg)
{
    char key[64], w[32];
    snprintf(key, sizeof key, "mean_%s_ms", name);
    if (kv_num(b, key, st->mean) < 0)
        return -1;
    snprintf(key, sizeof key, "median_%s_ms", name);
    if (kv_num(b, key, st->median) < 0)
        return -1;
    snprintf(key, sizeof key, "std_%s_ms", name);
    if (kv_num(b, key, st->std) < 0)
        return -1;
    for (size_t i = 0; i < pct_count(cfg); i++) {
        pct_word(pct_at(cfg, i), w, sizeof w);
        snprintf(key, sizeof key, "p%s_%s_ms", w, name);
        if (kv_num(b, key, st->p[i]) < 0)
            return -1;
    }
    return 0;
}

static int write_header(struct atr_buf *b, const struct atr_llm_bench_config *c)
{
    if (kv_str(b, "date", c->date) < 0 || kv_str(b, "endpoint_type", c->backend) < 0 ||
        kv_str(b, "backend", c->backend) < 0 || kv_str(b, "label", NULL) < 0 ||
        kv_str(b, "model_id", c->model_id) < 0 ||
        kv_str(b, "tokenizer_id", c->tokenizer_id ? c->tokenizer_id : c->model_id) < 0 ||
        kv_int(b, "num_prompts", c->num_prompts) < 0)
        return -1;
    int rc = isinf(c->request_rate) ? kv_str(b, "request_rate", "inf")
                                    : kv_num(b, "request_rate", c->request_rate);
    if (rc < 0 || kv_num(b, "burstiness", c->burstiness) < 0)
        return -1;
    if (c->max_concurrency > 0)
        return kv_int(b, "max_concurrency", c->max_concurrency);
    return kv_str(b, "max_concurrency", NULL);
}

static int write_totals(struct atr_buf *b, const struct atr_llm_summary *s)
{
    if (kv_num(b, "duration", s->duration) < 0 || kv_int(b, "completed", s->completed) < 0 ||
        kv_int(b, "failed", s->failed) < 0 ||
        kv_int(b, "total_input_tokens", s->total_input) < 0 ||
        kv_int(b, "total_output_tokens", s->total_output) < 0 ||
        kv_num(b, "request_throughput", s->request_throughput) < 0)
        return -1;
    int rc = s->goodput_configured ? kv_num(b, "request_goodput", s->request_goodput)
                                   : kv_str(b, "request_goodput", NULL);
    if (rc < 0 || kv_num(b, "output_throughput", s->output_throughput) < 0 ||
        kv_num(b, "total_token_throughput", s->total_token_throughput) < 0 ||
        kv_num(b, "max_output_tokens_per_s", s->max_output_tokens_per_s) < 0)
        return -1;
    return kv_int(b, "max_concurrent_requests", s->max_concurrent_requests);
}

static int write_slo(struct atr_buf *b, const char *key, double ms)
{
    return ms >= 0 ? kv_num(b, key, ms) : 0;
}

static int write_goodput(struct atr_buf *b, const struct atr_llm_summary *s,
                         const struct atr_llm_bench_config *c)
{
    if (!s->goodput_configured)
        return kv_str(b, "goodput", NULL);
    if (put_key(b, "goodput") < 0 || atr_buf_puts(b, "{\"slo_ms\": {") < 0 ||
        write_slo(b, "ttft", c->slo_ttft_ms) < 0 || write_slo(b, "tpot", c->slo_tpot_ms) < 0 ||
        write_slo(b, "e2el", c->slo_e2el_ms) < 0 || atr_buf_putc(b, '}') < 0 ||
        kv_int(b, "good_requests", s->good_completed) < 0 ||
        kv_num(b, "request_goodput", s->request_goodput) < 0)
        return -1;
    return atr_buf_putc(b, '}');
}

static int write_failures(struct atr_buf *b, const struct atr_llm_summary *s)
{
    if (put_key(b, "failures_by_reason") < 0 || atr_buf_putc(b, '{') < 0)
        return -1;
    for (size_t i = 0; i < s->n_failures; i++) {
        if ((i && atr_buf_puts(b, ", ") < 0) || put_str_or_null(b, s->failures[i].reason) < 0 ||
            atr_buf_puts(b, ": ") < 0 || atr_buf_put_i64(b, s->failures[i].count) < 0)
            return -1;
    }
    return atr_buf_putc(b, '}');
}

/* atr's extras, under one "atr" key so no vLLM reader trips on them. */
static int write_extras(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *c)
{
    double hit = s->total_input ? (double)s->cached_tokens / (double)s->total_input : 0.0;
    if (put_key(b, "atr") < 0 || atr_buf_putc(b, '{') < 0 ||
        kv_bool(b, "incomplete", c->incomplete) < 0 ||
        kv_num(b, "mean_client_queue_ms", s->queue_mean_ms) < 0 ||
        kv_num(b, "p99_client_queue_ms", s->queue_p99_ms) < 0 ||
        kv_num(b, "p50_schedule_lag_ms", s->lag_p50_ms) < 0 ||
        kv_num(b, "p99_schedule_lag_ms", s->lag_p99_ms) < 0 ||
        kv_stat(b, "ttft_from_send", &s->ttft_send, c) < 0 ||
        kv_stat(b, "e2el_from_send", &s->e2el_send, c) < 0 ||
        kv_int(b, "cached_tokens", s->cached_tokens) < 0 ||
        kv_num(b, "prefix_cache_hit_rate", hit) < 0 || write_goodput(b, s, c) < 0 ||
        write_failures(b, s) < 0)
        return -1;
    if (c->extra_members && (atr_buf_puts(b, ", ") < 0 || atr_buf_puts(b, c->extra_members) < 0))
        return -1;
    return atr_buf_putc(b, '}');
}

int atr_llm_write_result_json(struct atr_buf *b, const struct atr_llm_summary *s,
                              const struct atr_llm_bench_config *cfg)
{
    if (atr_buf_putc(b, '{') < 0 || write_header(b, cfg) < 0 || write_totals(b, s) < 0 ||
        kv_stat(b, "ttft", &s->ttft, cfg) < 0 || kv_stat(b, "tpot", &s->tpot, cfg) < 0 ||
        kv_stat(b, "itl", &s->itl, cfg) < 0 || kv_stat(b, "e2el", &s->e2el, cfg) < 0 ||
        write_extras(b, s, cfg) < 0)
        return -1;
    return atr_buf_putc(b, '}');
}

/* Python's "{:<40} {:<10.2f}" and "{:<40} {:<10}". */
static int line_f(struct atr_buf *b, const char *label, double v)
{
    return atr_buf_printf(b, "%-40s %-10.2f\n", label, v);
}

static int line_i(struct atr_buf *b, const char *label, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return atr_buf_printf(b, "%-40s %-10s\n", label, num);
}

/* "{s:{c}^{n}}": centred in 50 columns, the extra fill char on the right. */
static int header_line(struct atr_buf *b, const char *title, char fill)
{
    size_t len = strlen(title), pad = len < 50 ? 50 - len : 0;
    char line[64];
    memset(line, fill, pad / 2);
    memcpy(line + pad / 2, title, len < 50 ? len : 50);
    memset(line + pad / 2 + (len < 50 ? len : 50), fill, pad - pad / 2);
    line[(len < 50 ? len : 50) + pad] = '\0';
    return atr_buf_printf(b, "%s\n", line);
}

static int block_metric(struct atr_buf *b, const char *name, const char *title,
                        const struct atr_llm_stat *st, const struct atr_llm_bench_config *c)
{
    char label[64], w[32];
    if (header_line(b, title, '-') < 0)
        return -1;
    snprintf(label, sizeof label, "Mean %s (ms):", name);
    if (line_f(b, label, st->mean) < 0)
        return -1;
    snprintf(label, sizeof label, "Median %s (ms):", name);
    if (line_f(b, label, st->median) < 0)
        return -1;
    for (size_t i = 0; i < pct_count(c); i++) {
        pct_word(pct_at(c, i), w, sizeof w);
        snprintf(label, sizeof label, "P%s %s (ms):", w, name);
        if (line_f(b, label, st->p[i]) < 0)
            return -1;
    }
    return 0;
}

static int block_totals(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *c)
{
    if (line_i(b, "Successful requests:", s->completed) < 0 ||
        line_i(b, "Failed requests:", s->failed) < 0)
        return -1;
    if (c->max_concurrency > 0 && line_i(b, "Maximum request concurrency:", c->max_concurrency) < 0)
        return -1;
    if (!isinf(c->request_rate) && line_f(b, "Request rate configured (RPS):", c->request_rate) < 0)
        return -1;
    if (line_f(b, "Benchmark duration (s):", s->duration) < 0 ||
        line_i(b, "Total input tokens:", s->total_input) < 0 ||
        line_i(b, "Total generated tokens:", s->total_output) < 0 ||
        line_f(b, "Request throughput (req/s):", s->request_throughput) < 0)
        return -1;
    if (s->goodput_configured && line_f(b, "Request goodput (req/s):", s->request_goodput) < 0)
        return -1;
    if (line_f(b, "Output token throughput (tok/s):", s->output_throughput) < 0 ||
        line_f(b, "Peak output token throughput (tok/s):", s->max_output_tokens_per_s) < 0 ||
        line_f(b, "Peak concurrent requests:", (double)s->max_concurrent_requests) < 0)
        return -1;
    return line_f(b, "Total Token throughput (tok/s):", s->total_token_throughput);
}

int atr_llm_write_block(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *cfg)
{
    if (header_line(b, " Serving Benchmark Result ", '=') < 0 || block_totals(b, s, cfg) < 0 ||
        block_metric(b, "TTFT", "Time to First Token", &s->ttft, cfg) < 0 ||
        block_metric(b, "TPOT", "Time per Output Token (excl. 1st token)", &s->tpot, cfg) < 0 ||
        block_metric(b, "ITL", "Inter-token Latency", &s->itl, cfg) < 0)
        return -1;
    if (cfg->e2el_section && block_metric(b, "E2EL", "End-to-end Latency", &s->e2el, cfg) < 0)
        return -1;
    return header_line(b, "", '=');
}

static int put_ms_or_null(struct atr_buf *b, const char *key, bool have, double s)
{
    if (put_key(b, key) < 0)
        return -1;
    return have ? atr_llm_put_pyfloat(b, s * 1000) : atr_buf_puts(b, "null");
}

static int write_itls(struct atr_buf *b, const struct atr_llm_record *r)
{
    if (put_key(b, "itl_ms") < 0 || atr_buf_putc(b, '[') < 0)
        return -1;
    for (size_t i = 1; i < r->n_chunks; i++)
        if ((i > 1 && atr_buf_puts(b, ", ") < 0) ||
            atr_llm_put_pyfloat(b, (r->chunk_s[i] - r->chunk_s[i - 1]) * 1000) < 0)
            return -1;
    return atr_buf_putc(b, ']');
}

int atr_llm_write_request_line(struct atr_buf *b, const struct atr_llm_record *r)
{
    bool ok = r->success, first = r->success && r->n_chunks > 0;
    if (atr_buf_putc(b, '{') < 0 || kv_int(b, "id", (int64_t)r->id) < 0 ||
        (r->trace_id && (kv_str(b, "trace_id", r->trace_id) < 0 ||
                         kv_int(b, "turn", r->turn) < 0)) ||
        kv_bool(b, "success", ok) < 0 ||
        kv_str(b, "error", ok ? NULL : (r->error ? r->error : "unknown")) < 0 ||
        kv_num(b, "scheduled_s", r->scheduled_s) < 0 || kv_num(b, "send_s", r->send_s) < 0 ||
        kv_num(b, "start_s", r->start_s) < 0 || kv_num(b, "end_s", r->end_s) < 0 ||
        kv_num(b, "schedule_lag_ms", (r->send_s - r->scheduled_s) * 1000) < 0 ||
        kv_num(b, "queue_ms", (r->start_s - r->send_s) * 1000) < 0 ||
        put_ms_or_null(b, "ttft_ms", first, first ? ttft_of(r) : 0) < 0 ||
        put_ms_or_null(b, "tpot_ms", ok && r->output_tokens > 1, tpot_of(r)) < 0 ||
        put_ms_or_null(b, "e2el_ms", ok, r->end_s - r->start_s) < 0 || write_itls(b, r) < 0 ||
        kv_int(b, "prompt_tokens", r->prompt_tokens) < 0 ||
        kv_int(b, "output_tokens", r->output_tokens) < 0 ||
        kv_int(b, "cached_tokens", r->cached_tokens) < 0)
        return -1;
    return atr_buf_puts(b, "}\n");
}
