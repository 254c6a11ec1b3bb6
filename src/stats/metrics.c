/* metrics.c - vLLM's benchmark figures from per-request records (the
 * outputs built from them are in result.c). */
#include "stats/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "stats/percentile.h"
#include "util/alloc.h"

/* Beyond this many one-second buckets (about 3 years) the peak figures are
 * refused: the run's clock is broken, and the arrays would be huge. */
#define MAX_BUCKETS ((size_t)1 << 27)

/* numpy's pairwise summation (add.reduce on a contiguous float64 array,
 * block 128, eight accumulators), so mean and std match numpy bit for bit.
 * This is one leaf: n <= 128 values. The eight accumulators are independent
 * lanes (a vectorising compiler may run them side by side; no sum changes). */
static double pairwise_leaf(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
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

/* A term of the variance's sum, (a - m)^2, made the way numpy makes
 * x = a - m; x * x (no fused multiply-add: -ffp-contract=off). */
static inline double square_about(double a, double m)
{
    double x = a - m;
    return x * x;
}

/* A leaf of the variance's sum: the squares about m, summed as
 * pairwise_leaf sums. n <= 128. */
static double pairwise_leaf_sq(const double *a, size_t n, double m)
{
    double sq[128];
    for (size_t i = 0; i < n; i++)
        sq[i] = square_about(a[i], m);
    return pairwise_leaf(sq, n);
}

/* The split of n > 128 values into numpy's two halves: the left one a
 * multiple of 8. */
static size_t pairwise_split(size_t n)
{
    size_t n2 = n / 2;
    return n2 - n2 % 8;
}

/* The whole of numpy's pairwise sum over a[0..n), or over the squares
 * (a[i] - m)^2 when sq: leaves of at most 128, left before right. The
 * squares are made leaf by leaf rather than in a copy of the samples (8
 * bytes per sample less at peak). */
static double pairwise_sum(const double *a, size_t n, double m, bool sq)
{
    if (n <= 128)
        return sq ? pairwise_leaf_sq(a, n, m) : pairwise_leaf(a, n);
    size_t n2 = pairwise_split(n);
    return pairwise_sum(a, n2, m, sq) + pairwise_sum(a + n2, n - n2, m, sq);
}

static double np_mean(const double *a, size_t n)
{
    return pairwise_sum(a, n, 0, false) / (double)n;
}

/* Population standard deviation (ddof = 0) the way numpy's _var does it,
 * about the mean m = np_mean(a, n) the caller already has. */
static double np_std(const double *a, size_t n, double m)
{
    return sqrt(pairwise_sum(a, n, m, true) / (double)n);
}

/* np.median: the middle value, or the mean of the two middle values as
 * (a + b) / 2, which can differ in the last bit from percentile 50. */
static double np_median(struct atr_samples *s)
{
    size_t n = s->n;
    if (n % 2)
        return atr_samples_kth(s, n / 2);
    double a = atr_samples_kth(s, n / 2 - 1);
    return (0.0 + a + atr_samples_kth(s, n / 2)) / 2;
}

size_t atr_llm_pct_count(const struct atr_llm_bench_config *cfg)
{
    return cfg->n_percentiles ? cfg->n_percentiles : 1;
}

double atr_llm_pct_at(const struct atr_llm_bench_config *cfg, size_t i)
{
    return cfg->n_percentiles ? cfg->percentiles[i] : 99.0;
}

size_t atr_llm_pct_list(const struct atr_llm_bench_config *cfg, bool sessions,
                        double out[ATR_LLM_MAX_PCT])
{
    /* Sessions are long: their median and tail both matter, one high point
     * alone says little. */
    static const double session_default[] = {90, 99};
    if (sessions && !cfg->n_percentiles) {
        memcpy(out, session_default, sizeof session_default);
        return 2;
    }
    size_t n = atr_llm_pct_count(cfg);
    for (size_t i = 0; i < n; i++)
        out[i] = atr_llm_pct_at(cfg, i);
    return n;
}

/* Figures of one metric in ms at percentiles pct[0..n); an empty set gives
 * zeros (vLLM's `x or 0`). Computed in seconds and scaled last, in vLLM's
 * order. */
static void stat_fill_at(struct atr_samples *s, const double *pct, size_t n,
                         struct atr_llm_stat *st)
{
    memset(st, 0, sizeof *st);
    if (s->n == 0)
        return;
    double m = np_mean(s->v, s->n);
    st->mean = m * 1000;
    st->std = np_std(s->v, s->n, m) * 1000;
    st->median = np_median(s) * 1000;
    for (size_t i = 0; i < n; i++)
        st->p[i] = atr_samples_percentile(s, pct[i]) * 1000;
}

/* st back from ms to the samples' own unit. */
static void stat_unscale(struct atr_llm_stat *st, size_t n)
{
    st->mean /= 1000;
    st->median /= 1000;
    st->std /= 1000;
    for (size_t i = 0; i < n; i++)
        st->p[i] /= 1000;
}

static void stat_fill(struct atr_samples *s, const struct atr_llm_bench_config *cfg,
                      struct atr_llm_stat *st)
{
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(cfg, false, pct);
    stat_fill_at(s, pct, n, st);
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

double atr_llm_ttft_s(const struct atr_llm_record *r)
{
    return first_token_s(r) - r->start_s;
}

double atr_llm_sent_s(const struct atr_llm_record *r)
{
    return r->sent_s > 0 ? r->sent_s : r->start_s;
}

/* TPOT as vLLM's goodput sees it: 0 for one output token or none. */
double atr_llm_tpot_s(const struct atr_llm_record *r)
{
    if (r->output_tokens <= 1)
        return 0.0;
    return ((r->end_s - r->start_s) - atr_llm_ttft_s(r)) / (double)(r->output_tokens - 1);
}

/* vLLM: good when every configured SLO (ms, compared in seconds) >= metric. */
static bool is_good(const struct atr_llm_record *r, const struct atr_llm_bench_config *c)
{
    if (c->slo_ttft_ms >= 0 && !(c->slo_ttft_ms / 1000 >= atr_llm_ttft_s(r)))
        return false;
    if (c->slo_tpot_ms >= 0 && !(c->slo_tpot_ms / 1000 >= atr_llm_tpot_s(r)))
        return false;
    if (c->slo_e2el_ms >= 0 && !(c->slo_e2el_ms / 1000 >= r->end_s - r->start_s))
        return false;
    return true;
}

/* ---- inter-token gaps, without an array of them ----
 * They are most of a summary's samples (one per output token) and, from a
 * simulation, repeat: every request decoding in an iteration gets that
 * iteration's duration. So they are never copied out of the records: mean
 * and std read them twice in record order (numpy's pairwise sums over the
 * same sequence, so the same bits), and the percentiles come from the
 * distinct values, with counts, of the few buckets that hold the ranks
 * asked for (exact; see "the gaps' percentiles" below). */

struct gap_reader {
    const struct atr_llm_record *r;
    size_t i, c;                    /* the next gap: r[i].chunk_s[c] - [c - 1] */
};

static size_t gap_count(const struct atr_llm_record *r, size_t n)
{
    size_t gaps = 0;
    for (size_t i = 0; i < n; i++)
        gaps += r[i].success && r[i].n_chunks > 1 ? r[i].n_chunks - 1 : 0;
    return gaps;
}

/* The next run of gaps, at most max (> 0) and all of one record's: *t is
 * the chunk time before its first gap; returns its length. The caller knows
 * how many gaps there are and asks for no more. */
static size_t gap_next_run(struct gap_reader *g, size_t max, const double **t)
{
    for (;; g->i++, g->c = 1) {
        const struct atr_llm_record *r = &g->r[g->i];
        if (r->success && g->c < r->n_chunks) {
            size_t take = r->n_chunks - g->c < max ? r->n_chunks - g->c : max;
            *t = r->chunk_s + (g->c - 1);      /* c >= 1 */
            g->c += take;
            return take;
        }
    }
}

struct gap_value {
    double v;
    uint64_t n;                     /* how many times */
};

/* Distinct gaps (by bit pattern) with counts, in an open-addressing table;
 * then their values sorted, with running totals. */
struct gap_set {
    struct gap_value *t;
    size_t cap, len;
    unsigned shift;                 /* slot = (bits * odd) >> shift */
    double *sorted;                 /* the distinct values, ascending */
    uint64_t *upto;                 /* gaps <= sorted[i] */
};

static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static struct gap_value *gap_set_slot(const struct gap_set *s, double v)
{
    uint64_t b = bits_of(v);
    size_t i = (size_t)((b * 0x9e3779b97f4a7c15ULL) >> s->shift);
    while (s->t[i].n && bits_of(s->t[i].v) != b)
        i = (i + 1) & (s->cap - 1);
    return &s->t[i];
}

static void gap_set_grow(struct gap_set *s)
{
    struct gap_set old = *s;
    s->cap = old.cap ? 2 * old.cap : 1024;
    s->shift = 64;
    for (size_t c = s->cap; c > 1; c >>= 1)
        s->shift--;
    s->t = xcalloc(s->cap, sizeof *s->t);
    for (size_t i = 0; i < old.cap; i++)
        if (old.t[i].n)
            *gap_set_slot(s, old.t[i].v) = old.t[i];
    free(old.t);
}

static void gap_set_add(struct gap_set *s, double v)
{
    if (2 * (s->len + 1) > s->cap)
        gap_set_grow(s);
    struct gap_value *g = gap_set_slot(s, v);
    if (!g->n) {
        g->v = v;
        s->len++;
    }
    g->n++;
}

/* Sorts the distinct values and counts the gaps up to each. */
static void gap_set_rank(struct gap_set *s)
{
    s->sorted = xcalloc(s->len, sizeof *s->sorted);
    s->upto = xcalloc(s->len, sizeof *s->upto);
    size_t m = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->t[i].n)
            s->sorted[m++] = s->t[i].v;
    atr_sort_doubles(s->sorted, m);
    for (size_t i = 0; i < m; i++)
        s->upto[i] = (i ? s->upto[i - 1] : 0) + gap_set_slot(s, s->sorted[i])->n;
}

/* ---- the gaps' percentiles, counted in buckets first ----
 * A table of every distinct gap was most of a summary's memory (tens of MB
 * at 100k requests: issue 16). The first pass counts the gaps per bucket
 * of the 16 top bits of their order key (below); only the buckets holding
 * a rank the summary asks for go into the table, as the second pass (the
 * variance's) reads the gaps again.
 * A key orders as its value does (sign flipped, or every bit when
 * negative), so the buckets are runs of the sorted values. The passes,
 * which see every gap, index the counts by the gap's own 16 top bits (one
 * shift); only the walk in bucket order maps a bucket to them. */
#define GAP_BUCKETS 65536
#define GAP_MAX_RANKS (2 + 2 * ATR_LLM_MAX_PCT)

/* The 16 top bits of v: where a pass counts it. */
static unsigned gap_top(double v)
{
    return (unsigned)(bits_of(v) >> 48);
}

static unsigned gap_bucket(double v)
{
    uint64_t b = bits_of(v);
    /* every bit flipped when negative, else the sign bit: no branch */
    uint64_t flip = (uint64_t)-(int64_t)(b >> 63) | (1ULL << 63);
    return (unsigned)((b ^ flip) >> 48);
}

/* The 16 top bits of the values in bucket b (gap_bucket undone). */
static unsigned gap_top_of_bucket(unsigned b)
{
    return b < 0x8000 ? ~b & 0xffff : b ^ 0x8000;
}

struct gap_select {
    uint64_t *hist;                 /* gaps per bucket, by gap_top (GAP_BUCKETS) */
    unsigned char *wanted;          /* by gap_top: the buckets that go into set */
    struct gap_set set;
    size_t ranks[GAP_MAX_RANKS];    /* noted by gap_note */
    size_t n_ranks;
};

/* One reading of the gaps in record order: the pairwise sum of the gaps
 * (sq false) or of their squares about m (sq true), as pairwise_sum would
 * make it over an array of them. The first reading also counts the gaps per
 * bucket; the second, when the wanted buckets are known, keeps their gaps in
 * the set, so no third reading is needed for the percentiles. */
struct gap_pass {
    struct gap_reader g;
    double m;
    bool sq;
    struct gap_select *q;
};

/* The first pass's terms: the gaps of the run after t[0], into a[0..n),
 * each counted in its bucket. */
static void gap_terms_counted(uint64_t *hist, const double *t, size_t n, double *a)
{
    for (size_t j = 0; j < n; j++) {
        double d = t[j + 1] - t[j];
        hist[gap_top(d)]++;
        a[j] = d;
    }
}

/* The second pass's terms: the gaps' squares about m, the gaps of the
 * wanted buckets kept in the set on the way. */
static void gap_terms_sq_kept(struct gap_select *q, const double *t, size_t n, double m,
                              double *a)
{
    const unsigned char *wanted = q->wanted;   /* not reloaded after each add */
    for (size_t j = 0; j < n; j++) {
        double d = t[j + 1] - t[j];
        if (wanted[gap_top(d)])
            gap_set_add(&q->set, d);
        a[j] = square_about(d, m);
    }
}

/* The terms of the next n gaps into a, a record's run at a time: made as
 * they are read, so each gap is touched once per pass. */
static void gap_terms(struct gap_pass *p, double *a, size_t n)
{
    for (size_t k = 0; k < n;) {
        const double *t;
        size_t take = gap_next_run(&p->g, n - k, &t);
        if (p->sq)
            gap_terms_sq_kept(p->q, t, take, p->m, a + k);
        else
            gap_terms_counted(p->q->hist, t, take, a + k);
        k += take;
    }
}

/* pairwise_sum over the next n gaps' terms: the same splits, the same
 * 128-value leaves, left before right. */
static double gap_sum(struct gap_pass *p, size_t n)
{
    if (n <= 128) {
        double a[128];
        gap_terms(p, a, n);
        return pairwise_leaf(a, n);
    }
    size_t n2 = pairwise_split(n);
    double left = gap_sum(p, n2);
    return left + gap_sum(p, n - n2);
}

/* The bucket of the k-th smallest gap, and how many gaps lie below it. */
static unsigned gap_rank_bucket(const struct gap_select *q, size_t k, size_t *below)
{
    unsigned b = 0;
    *below = 0;
    while (*below + q->hist[gap_top_of_bucket(b)] <= k)
        *below += q->hist[gap_top_of_bucket(b++)];
    return b;
}

/* A kth callback that only notes which ranks are asked for. */
static double gap_note(void *ctx, size_t k)
{
    struct gap_select *q = ctx;
    if (q->n_ranks < GAP_MAX_RANKS)
        q->ranks[q->n_ranks++] = k;
    return 0;
}

/* Marks the buckets holding the noted ranks (q->hist complete). */
static void gap_want_ranks(struct gap_select *q)
{
    q->wanted = xcalloc(GAP_BUCKETS, 1);
    for (size_t i = 0; i < q->n_ranks; i++) {
        size_t below;
        q->wanted[gap_top_of_bucket(gap_rank_bucket(q, q->ranks[i], &below))] = 1;
    }
}

/* The k-th smallest gap: its bucket's run in the sorted set, the gaps
 * below that run skipped. */
static double gap_select_kth(void *ctx, size_t k)
{
    const struct gap_select *q = ctx;
    const struct gap_set *s = &q->set;
    size_t below, lo = 0, hi = s->len;
    unsigned b = gap_rank_bucket(q, k, &below);
    while (lo < hi) {               /* the run's first value */
        size_t mid = lo + (hi - lo) / 2;
        if (gap_bucket(s->sorted[mid]) < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t want = (lo ? s->upto[lo - 1] : 0) + (k - below);
    hi = s->len - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->upto[mid] > want)
            hi = mid;
        else
            lo = mid + 1;
    }
    return s->sorted[lo];
}

static void gap_select_release(struct gap_select *q)
{
    free(q->hist);
    free(q->wanted);
    free(q->set.t);
    free(q->set.sorted);
    free(q->set.upto);
}

/* The ranks the summary of `gaps` gaps asks for: the median's and the
 * percentiles'. */
static void gap_note_ranks(struct gap_select *q, size_t gaps, const double *pct, size_t np)
{
    gap_note(q, gaps / 2);
    if (gaps % 2 == 0)
        gap_note(q, gaps / 2 - 1);
    for (size_t i = 0; i < np; i++)
        atr_percentile_by_rank(gaps, pct[i], gap_note, q);
}

/* stat_fill_at for the inter-token gaps of r[0..n), in two readings of
 * the gaps: the mean and the buckets' counts, then the variance and the
 * gaps of the buckets holding the ranks asked for. */
static void itl_fill(const struct atr_llm_record *r, size_t n,
                     const struct atr_llm_bench_config *cfg, struct atr_llm_stat *st)
{
    memset(st, 0, sizeof *st);
    size_t gaps = gap_count(r, n);
    if (gaps == 0)
        return;
    struct gap_select q = { .hist = xcalloc(GAP_BUCKETS, sizeof *q.hist) };
    double pct[ATR_LLM_MAX_PCT];
    size_t np = atr_llm_pct_list(cfg, false, pct);
    gap_note_ranks(&q, gaps, pct, np);
    struct gap_pass p = { { r, 0, 1 }, 0, false, &q };
    double m = gap_sum(&p, gaps) / (double)gaps;
    st->mean = m * 1000;
    gap_want_ranks(&q);
    p = (struct gap_pass){ { r, 0, 1 }, m, true, &q };
    st->std = sqrt(gap_sum(&p, gaps) / (double)gaps) * 1000;
    gap_set_rank(&q.set);
    double median = gaps % 2 ? gap_select_kth(&q, gaps / 2)
        : (0.0 + gap_select_kth(&q, gaps / 2 - 1) + gap_select_kth(&q, gaps / 2)) / 2;
    st->median = median * 1000;
    for (size_t i = 0; i < np; i++)
        st->p[i] = atr_percentile_by_rank(gaps, pct[i], gap_select_kth, &q) * 1000;
    gap_select_release(&q);
}

struct sets {
    struct atr_samples ttft, tpot, e2el, ttft_send, e2el_send, queue, lag, send_lag;
};

static void sets_release(struct sets *k)
{
    atr_samples_release(&k->ttft);
    atr_samples_release(&k->tpot);
    atr_samples_release(&k->e2el);
    atr_samples_release(&k->ttft_send);
    atr_samples_release(&k->e2el_send);
    atr_samples_release(&k->queue);
    atr_samples_release(&k->lag);
    atr_samples_release(&k->send_lag);
}

static void add_success(struct sets *k, const struct atr_llm_record *r,
                        struct atr_llm_summary *s, const struct atr_llm_bench_config *c)
{
    double ttft = atr_llm_ttft_s(r);
    s->completed++;
    s->total_input += r->prompt_tokens;
    s->total_output += r->output_tokens;
    if (r->cached_tokens > 0)      /* -1: the server did not say */
        s->cached_tokens += r->cached_tokens;
    atr_samples_add(&k->ttft, ttft);
    atr_samples_add(&k->e2el, r->end_s - r->start_s);
    atr_samples_add(&k->ttft_send, first_token_s(r) - r->send_s);
    atr_samples_add(&k->e2el_send, r->end_s - r->send_s);
    if (r->output_tokens > 1)
        atr_samples_add(&k->tpot, atr_llm_tpot_s(r));
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
static void count_failures(const struct atr_llm_record *r, size_t n, struct atr_llm_summary *s)
{
    size_t nf = (size_t)s->failed;
    if (nf == 0)
        return;
    const char **v = xcalloc(nf, sizeof *v);
    s->failures = xcalloc(nf, sizeof *s->failures);
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
        s->failures[s->n_failures].reason = xstrdup(v[i]);
        s->failures[s->n_failures++].count = 1;
    }
    free(v);
}

/* Output tokens of the successful records per second from lo, into
 * tok[0..nb): each chunk carries its record's usage tokens over its chunks
 * (a server may send several tokens per chunk), a record without chunks
 * all of them at its end, so the buckets sum to the run's output tokens. */
static void count_tokens(const struct atr_llm_record *r, size_t n, double lo,
                         double *tok, size_t nb)
{
    double top = (double)nb;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].success || r[i].output_tokens <= 0)
            continue;
        const double *t = r[i].n_chunks ? r[i].chunk_s : &r[i].end_s;
        size_t nc = r[i].n_chunks ? r[i].n_chunks : 1;
        double w = (double)r[i].output_tokens / (double)nc;
        for (size_t c = 0; c < nc; c++) {
            /* (int64_t)x is floor(x) for x in [0, nb): one instruction */
            double x = t[c] - lo;
            if (x >= 0 && x < top)
                tok[(int64_t)x] += w;
        }
    }
}

/* Successful requests active in each second from lo, into conc[0..nb)
 * (conc has room for nb + 1): +1 where a request's first second starts, -1
 * after its last, then running totals; the same counts as one increment per
 * second a request spans, in one step per request. */
static void count_active(const struct atr_llm_record *r, size_t n, double lo,
                         int64_t *conc, size_t nb)
{
    for (size_t i = 0; i < n; i++) {
        if (!r[i].success)
            continue;
        size_t b0 = (size_t)floor(r[i].start_s - lo), b1 = (size_t)floor(r[i].end_s - lo);
        if (b0 > b1 || b0 >= nb)
            continue;
        conc[b0]++;
        conc[b1 < nb ? b1 + 1 : nb]--;
    }
    for (size_t b = 1; b < nb; b++)
        conc[b] += conc[b - 1];
}

/* The peak output-token rate: vLLM's, the most tokens in one of the
 * one-second buckets from the first successful start (nb of them, the last
 * a partial second counted over a whole one), raised to the run's own rate,
 * its tokens over the span from that start to the last successful end,
 * where that is higher. vLLM's alone reads below the mean on a run shorter
 * than a second (its one bucket is divided by a whole second) and when a
 * run's busiest part is its last partial second; the buckets hold every
 * output token, and the duration is at least the span, so this peak is
 * never below the mean output throughput. */
static double peak_rate(const struct atr_llm_record *r, size_t n, double lo, double span,
                        size_t nb, int64_t total_output)
{
    double *tok = xcalloc(nb, sizeof *tok), peak = 0;
    count_tokens(r, n, lo, tok, nb);
    for (size_t b = 0; b < nb; b++)
        peak = fmax(peak, tok[b]);
    free(tok);
    return span > 0 ? fmax(peak, (double)total_output / span) : peak;
}

/* Requests active in each second from the first successful start (vLLM's
 * max_concurrent_requests) and the peak output-token rate. */
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
    int64_t *conc = xcalloc(nb + 1, sizeof *conc);
    count_active(r, n, lo, conc, nb);
    for (size_t b = 0; b < nb; b++)
        if (conc[b] > s->max_concurrent_requests)
            s->max_concurrent_requests = conc[b];
    free(conc);
    s->max_output_tokens_per_s = peak_rate(r, n, lo, hi - lo, nb, s->total_output);
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
        atr_samples_add(&k->send_lag, atr_llm_sent_s(&r[i]) - r[i].scheduled_s);
        if (r[i].start_s >= r[i].send_s)   /* a request cut before its slot has no wait */
            atr_samples_add(&k->queue, r[i].start_s - r[i].send_s);
    }
}

/* ---- prompt lengths: the server's count against atr's ---- */

static bool prompt_comparable(const struct atr_llm_record *r)
{
    return r->success && r->intended_prompt_tokens > 0 && r->prompt_tokens >= 0;
}

/* The excess every prompt shares (BOS, the chat template's tokens) is the
 * least difference seen; what is left over is the tokenizer disagreeing
 * with atr's one-token words, as a fraction of the intended length. */
static void check_prompts(const struct atr_llm_record *r, size_t n, struct atr_llm_summary *s)
{
    int64_t least = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!prompt_comparable(&r[i]))
            continue;
        s->prompt_checked++;
        int64_t d = r[i].prompt_tokens - r[i].intended_prompt_tokens;
        if (d < least)
            least = d;
    }
    if (!s->prompt_checked)
        return;
    s->prompt_template_tokens = least > 0 ? least : 0;
    for (size_t i = 0; i < n; i++) {
        if (!prompt_comparable(&r[i]))
            continue;
        int64_t d = r[i].prompt_tokens - r[i].intended_prompt_tokens - s->prompt_template_tokens;
        double rel = fabs((double)d) / (double)r[i].intended_prompt_tokens;
        s->prompt_mismatch += rel > 0.01;
        if (rel > s->prompt_max_rel_error)
            s->prompt_max_rel_error = rel;
    }
}

/* ---- sessions ---- */

/* Records ordered by session (trace_id), then turn, then send time. */
static int cmp_session(const void *pa, const void *pb)
{
    const struct atr_llm_record *a = *(const struct atr_llm_record *const *)pa;
    const struct atr_llm_record *b = *(const struct atr_llm_record *const *)pb;
    int c = strcmp(a->trace_id, b->trace_id);
    if (c)
        return c;
    if (a->turn != b->turn)
        return a->turn < b->turn ? -1 : 1;
    return (a->send_s > b->send_s) - (a->send_s < b->send_s);
}

/* ---- session order without sorting every record by its id ----
 * qsort by cmp_session was most of the sessions' cost: a strcmp of trace
 * ids for each of n log n comparisons. The records are grouped by id in a
 * hash table instead, only the distinct ids are sorted, and each group's
 * records, kept in input order, are sorted by turn and send time only
 * when they are not so already. That is the order a stable sort (glibc's
 * merge sort, which the qsort was) gives, ties included. */
struct session_group {
    const char *id;
    size_t n, at;                   /* records; where they start in v */
};

/* Distinct ids, in order of first appearance, and an open-addressing
 * index of them; both grow with the ids, not with the records. */
struct session_table {
    size_t *slot;                   /* group index + 1; 0: empty */
    size_t cap;                     /* slots, a power of two */
    struct session_group *g;
    size_t n, g_cap;
};

/* The slot of id: its group's, or the empty one where it would go. */
static size_t session_slot(const struct session_table *t, const char *id)
{
    size_t k = (size_t)XXH3_64bits(id, strlen(id)) & (t->cap - 1);
    while (t->slot[k] && strcmp(t->g[t->slot[k] - 1].id, id) != 0)
        k = (k + 1) & (t->cap - 1);
    return k;
}

static void session_table_grow(struct session_table *t)
{
    free(t->slot);
    t->cap = t->cap ? 2 * t->cap : 64;
    t->slot = xcalloc(t->cap, sizeof *t->slot);
    for (size_t j = 0; j < t->n; j++)
        t->slot[session_slot(t, t->g[j].id)] = j + 1;
}

/* The group of id, added (empty) if new. */
static size_t session_group_of(struct session_table *t, const char *id)
{
    if (2 * (t->n + 1) > t->cap)
        session_table_grow(t);
    size_t k = session_slot(t, id);
    if (t->slot[k])
        return t->slot[k] - 1;
    if (t->n == t->g_cap) {
        t->g_cap = t->g_cap ? 2 * t->g_cap : 64;
        t->g = xreallocarray(t->g, t->g_cap, sizeof *t->g);
    }
    t->g[t->n] = (struct session_group){ id, 0, 0 };
    t->slot[k] = ++t->n;
    return t->n - 1;
}

static int cmp_group(const void *pa, const void *pb)
{
    const struct session_group *a = *(const struct session_group *const *)pa;
    const struct session_group *b = *(const struct session_group *const *)pb;
    return strcmp(a->id, b->id);
}

/* v[0..m) sorted by cmp_session (one trace id throughout), left as it is
 * when already in order. */
static void session_sort_group(const struct atr_llm_record **v, size_t m)
{
    for (size_t i = 1; i < m; i++)
        if (cmp_session(&v[i - 1], &v[i]) > 0) {
            qsort(v, m, sizeof *v, cmp_session);
            return;
        }
}

/* The m records of r[0..n) that have a trace_id, into v in session order. */
static void session_order(const struct atr_llm_record *r, size_t n,
                          const struct atr_llm_record **v, size_t m)
{
    struct session_table t = { NULL, 0, NULL, 0, 0 };
    size_t *group = xcalloc(m ? m : 1, sizeof *group);      /* of each record */
    for (size_t i = 0, k = 0; i < n; i++)
        if (r[i].trace_id) {
            size_t j = session_group_of(&t, r[i].trace_id);   /* may move t.g */
            t.g[j].n++;
            group[k++] = j;
        }
    struct session_group **by_id = xcalloc(t.n ? t.n : 1, sizeof *by_id);
    for (size_t j = 0; j < t.n; j++)
        by_id[j] = &t.g[j];
    qsort(by_id, t.n, sizeof *by_id, cmp_group);
    for (size_t j = 0, at = 0; j < t.n; at += by_id[j++]->n)
        by_id[j]->at = at;
    for (size_t i = 0, k = 0; i < n; i++)
        if (r[i].trace_id)
            v[t.g[group[k++]].at++] = &r[i];
    for (size_t j = 0, at = 0; j < t.n; at += by_id[j++]->n)
        session_sort_group(v + at, by_id[j]->n);
    free(by_id);
    free(group);
    free(t.g);
    free(t.slot);
}

struct session_sets {
    struct atr_samples completion, model, think;
    double slo_ms;               /* --goodput session:MS, or 0 */
    struct atr_samples critical, parallel;     /* DAG sessions */
};

/* The longest chain of model times through a session's records v[0..n)
 * (in turn order): each turn's own time plus the longest of its parents'.
 * A parent without a record (a run stopped early) adds nothing. */
static double critical_path(const struct atr_llm_record *const *v, size_t n)
{
    int64_t top = v[n - 1]->turn;
    if (top < 0)
        return 0;
    double *cp = xcalloc((size_t)top + 1, sizeof *cp), best = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t k = v[i]->turn;
        if (k < 0 || k > top)
            continue;
        double up = 0;
        uint32_t one = (uint32_t)(k - 1);
        const uint32_t *par = v[i]->dag ? v[i]->parents : &one;
        uint32_t np = v[i]->dag ? v[i]->n_parents : k > 0;  /* a chain: the turn before */
        for (uint32_t j = 0; j < np; j++)
            if ((int64_t)par[j] < k)
                up = fmax(up, cp[par[j]]);
        cp[k] = up + (v[i]->end_s - v[i]->send_s);
        best = fmax(best, cp[k]);
    }
    free(cp);
    return best;
}

/* One session, v[0..n) (its records in turn order), into the sets. */
static void add_session(const struct atr_llm_record *const *v, size_t n,
                        struct session_sets *k, struct atr_llm_sessions *out)
{
    double first = INFINITY, last = -INFINITY, model = 0;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        first = fmin(first, v[i]->send_s);
        last = fmax(last, v[i]->end_s);
        model += v[i]->end_s - v[i]->send_s;
        ok &= v[i]->success;
    }
    out->multi_turn |= n > 1;
    if (!ok) {
        out->failed++;
        return;
    }
    out->completed++;
    if (out->goodput_configured && (last - first) * 1000 <= k->slo_ms)
        out->good_completed++;
    atr_samples_add(&k->completion, last - first);
    atr_samples_add(&k->model, model);
    /* A chain's turns never overlap, so only rounding (or a DAG's
     * branches) can make this negative. */
    atr_samples_add(&k->think, fmax(0.0, (last - first) - model));
    /* Kept for every session, reported once one is a DAG: then a chain's
     * critical path (its model time) belongs to the same distribution. */
    out->dag |= v[0]->dag;
    atr_samples_add(&k->critical, critical_path(v, n));
    atr_samples_add(&k->parallel, last > first ? model / (last - first) : 1.0);
}

/* Groups the records by trace_id and fills s->sessions. */
static void fill_sessions(const struct atr_llm_record *r, size_t n,
                          const struct atr_llm_bench_config *cfg, struct atr_llm_summary *s)
{
    const struct atr_llm_record **v = xcalloc(n ? n : 1, sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += r[i].trace_id != NULL;
    session_order(r, n, v, m);
    struct session_sets k = {ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT,
                             cfg->slo_session_ms > 0 ? cfg->slo_session_ms : 0,
                             ATR_SAMPLES_INIT, ATR_SAMPLES_INIT};
    s->sessions.goodput_configured = cfg->slo_session_ms > 0;
    for (size_t i = 0, j; i < m; i = j) {
        for (j = i + 1; j < m && strcmp(v[j]->trace_id, v[i]->trace_id) == 0; j++)
            ;
        add_session(v + i, j - i, &k, &s->sessions);
    }
    double pct[ATR_LLM_MAX_PCT];
    size_t np = atr_llm_pct_list(cfg, true, pct);
    stat_fill_at(&k.completion, pct, np, &s->sessions.completion);
    stat_fill_at(&k.model, pct, np, &s->sessions.model);
    stat_fill_at(&k.think, pct, np, &s->sessions.think);
    if (s->sessions.dag) {
        stat_fill_at(&k.critical, pct, np, &s->sessions.critical_path);
        stat_fill_at(&k.parallel, pct, np, &s->sessions.parallelism);
        stat_unscale(&s->sessions.parallelism, np);   /* a ratio: not in ms */
    }
    atr_samples_release(&k.critical);
    atr_samples_release(&k.parallel);
    atr_samples_release(&k.completion);
    atr_samples_release(&k.model);
    atr_samples_release(&k.think);
    free(v);
    if (s->sessions.multi_turn)
        atr_retention_of(r, n, &s->sessions.retention);
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
    /* The gaps first: their table is freed before the sets are made, so a
     * summary's peak memory is the larger of the two, not their sum. */
    itl_fill(r, n, cfg, &out->itl);
    fill_sets(r, n, &k, out, cfg);
    fill_duration(r, n, out);
    stat_fill(&k.ttft, cfg, &out->ttft);
    stat_fill(&k.tpot, cfg, &out->tpot);
    stat_fill(&k.e2el, cfg, &out->e2el);
    stat_fill(&k.ttft_send, cfg, &out->ttft_send);
    stat_fill(&k.e2el_send, cfg, &out->e2el_send);
    out->queue_mean_ms = k.queue.n ? np_mean(k.queue.v, k.queue.n) * 1000 : 0.0;
    out->queue_p99_ms = pct_ms(&k.queue, 99);
    out->lag_p50_ms = pct_ms(&k.lag, 50);
    out->lag_p99_ms = pct_ms(&k.lag, 99);
    out->send_lag_p50_ms = pct_ms(&k.send_lag, 50);
    out->send_lag_p99_ms = pct_ms(&k.send_lag, 99);
    sets_release(&k);
    fill_sessions(r, n, cfg, out);
    if (out->sessions.goodput_configured && out->duration > 0)
        out->sessions.goodput = (double)out->sessions.good_completed / out->duration;
    check_prompts(r, n, out);
    count_failures(r, n, out);
    if (peaks(r, n, out, err) < 0) {
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
