/* metrics.c - one run's benchmark figures (metrics.h): from atr's own
 * summary, or scraped line by line from what a vLLM benchmark script printed. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/metrics.h"

/* Every figure, in the order result files write them (ISO-Bench's: the
 * latencies, then the throughputs; then what ISO-Bench lacks). One table
 * drives init, counting and writing, so the three cannot disagree. */
struct field {
    const char *key;
    size_t off;
    bool is_count;   /* int64_t, -1 absent; else double, NAN absent */
};

#define LAT(name, member)                                                          \
    {#name "_mean_ms", offsetof(struct atr_bench_metrics, member.mean), false},     \
    {#name "_median_ms", offsetof(struct atr_bench_metrics, member.median), false}, \
    {#name "_p90_ms", offsetof(struct atr_bench_metrics, member.p90), false},       \
    {#name "_p99_ms", offsetof(struct atr_bench_metrics, member.p99), false}

static const struct field fields[] = {
    LAT(ttft, ttft), LAT(tpot, tpot), LAT(itl, itl), LAT(e2el, e2el),
    {"request_throughput_req_s", offsetof(struct atr_bench_metrics, req_s), false},
    {"output_token_throughput_tok_s", offsetof(struct atr_bench_metrics, out_tok_s), false},
    {"total_token_throughput_tok_s", offsetof(struct atr_bench_metrics, total_tok_s), false},
    {"completed", offsetof(struct atr_bench_metrics, completed), true},
    {"failed", offsetof(struct atr_bench_metrics, failed), true},
    {"duration_s", offsetof(struct atr_bench_metrics, duration_s), false},
    {"avg_latency_s", offsetof(struct atr_bench_metrics, avg_latency_s), false},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static double *dbl_at(struct atr_bench_metrics *m, size_t off)
{
    return (double *)((char *)m + off);
}

static int64_t *count_at(struct atr_bench_metrics *m, size_t off)
{
    return (int64_t *)((char *)m + off);
}

static bool field_present(const struct atr_bench_metrics *m, const struct field *f)
{
    const char *p = (const char *)m + f->off;
    if (f->is_count)
        return *(const int64_t *)p >= 0;
    return !isnan(*(const double *)p);
}

static size_t count_figures(struct atr_bench_metrics *m)
{
    size_t n = 0;
    for (size_t i = 0; i < N_FIELDS; i++)
        n += field_present(m, &fields[i]);
    m->n_figures = n;
    return n;
}

void atr_bench_metrics_init(struct atr_bench_metrics *m)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (fields[i].is_count)
            *count_at(m, fields[i].off) = -1;
        else
            *dbl_at(m, fields[i].off) = NAN;
    }
    m->n_figures = 0;
}

/* ---- from atr's own summary ---- */

/* A figure is a finite number >= 0; anything else is no figure at all. */
static double figure(double v)
{
    return isfinite(v) && !signbit(v) ? v : NAN;
}

/* The index of percentile p in the config's list, or -1. */
static int pct_index(const struct atr_llm_bench_config *cfg, double p)
{
    size_t n = atr_llm_pct_count(cfg);
    for (size_t i = 0; i < n && i < ATR_LLM_MAX_PCT; i++)
        if (atr_llm_pct_at(cfg, i) == p)
            return (int)i;
    return -1;
}

/* The summary's stats are already in ms (stats/metrics.c scales them). */
static void latency_from_stat(struct atr_bench_latency *l, const struct atr_llm_stat *st,
                              int i90, int i99)
{
    l->mean = figure(st->mean);
    l->median = figure(st->median);
    l->p90 = i90 >= 0 ? figure(st->p[i90]) : NAN;
    l->p99 = i99 >= 0 ? figure(st->p[i99]) : NAN;
}

void atr_bench_metrics_from_summary(struct atr_bench_metrics *m, const struct atr_llm_summary *s,
                                    const struct atr_llm_bench_config *cfg)
{
    atr_bench_metrics_init(m);
    m->completed = s->completed >= 0 ? s->completed : -1;
    m->failed = s->failed >= 0 ? s->failed : -1;
    m->duration_s = figure(s->duration);
    /* Nothing completed: the zeros stats/metrics.c leaves are no
     * measurement, and a result file must say "no metrics", not 0 ms. */
    if (s->completed > 0) {
        int i90 = pct_index(cfg, 90), i99 = pct_index(cfg, 99);
        latency_from_stat(&m->ttft, &s->ttft, i90, i99);
        latency_from_stat(&m->tpot, &s->tpot, i90, i99);
        latency_from_stat(&m->itl, &s->itl, i90, i99);
        latency_from_stat(&m->e2el, &s->e2el, i90, i99);
        m->req_s = figure(s->request_throughput);
        m->out_tok_s = figure(s->output_throughput);
        m->total_tok_s = figure(s->total_token_throughput);
    }
    count_figures(m);
}

/* ---- parsing console output ----
 *
 * The text is untrusted and not NUL-terminated: every read is checked
 * against `end`, and a number is copied into a small local buffer before
 * strtod sees it. */

struct cursor {
    const char *p, *end;
};

static void skip_blanks(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* Leading blanks and ANSI CSI sequences (ESC [ params final): colour codes
 * that tqdm and loggers put before a line. */
static void skip_line_junk(struct cursor *c)
{
    for (;;) {
        skip_blanks(c);
        if (c->end - c->p < 2 || c->p[0] != '\x1b' || c->p[1] != '[')
            return;
        c->p += 2;
        while (c->p < c->end && !(*c->p >= 0x40 && *c->p <= 0x7e))
            c->p++;
        if (c->p < c->end)
            c->p++;
    }
}

/* Consumes lit if the text starts with it, ignoring case (vLLM versions
 * differ: "Total Token throughput" and "Total token throughput"). */
static bool eat(struct cursor *c, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || strncasecmp(c->p, lit, n) != 0)
        return false;
    c->p += n;
    return true;
}

static bool is_num_char(char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' ||
           ch == '-';
}

static bool is_word_char(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '_';
}

/* A figure after optional blanks: a finite number >= 0 written with digits
 * (inf, nan, 1e400, -3, 0x10 and 12ms are refused). Whatever follows that
 * is not a letter or digit ends it: a blank, a ',', a colour code. */
static bool eat_number(struct cursor *c, double *out)
{
    char tok[64];
    size_t n = 0;
    skip_blanks(c);
    while (c->p + n < c->end && is_num_char(c->p[n]) && n < sizeof tok - 1) {
        tok[n] = c->p[n];
        n++;
    }
    /* A number char after the token: longer than any figure (tok is full). */
    if (n == 0 || (c->p + n < c->end && (is_word_char(c->p[n]) || is_num_char(c->p[n]))))
        return false;
    tok[n] = '\0';
    char *stop;
    double v = strtod(tok, &stop);
    if (stop != tok + n || !isfinite(v) || signbit(v))
        return false;
    c->p += n;
    *out = v;
    return true;
}

/* A request count: a whole number small enough to be exact in a double. */
static bool eat_count(struct cursor *c, int64_t *out)
{
    double v;
    if (!eat_number(c, &v) || v != floor(v) || v > 1e15)
        return false;
    *out = (int64_t)v;
    return true;
}

/* The "Serving Benchmark Result" lines that are not latencies (key is the
 * printed label here). */
static const struct field serving_lines[] = {
    {"Successful requests:", offsetof(struct atr_bench_metrics, completed), true},
    {"Failed requests:", offsetof(struct atr_bench_metrics, failed), true},
    {"Benchmark duration (s):", offsetof(struct atr_bench_metrics, duration_s), false},
    {"Request throughput (req/s):", offsetof(struct atr_bench_metrics, req_s), false},
    {"Output token throughput (tok/s):", offsetof(struct atr_bench_metrics, out_tok_s), false},
    {"Total token throughput (tok/s):", offsetof(struct atr_bench_metrics, total_tok_s), false},
};

/* Reads the value into the field. A line whose value is no figure is
 * skipped like an unknown line: an earlier print of the figure stands
 * (a cut-off last line must not erase a complete earlier one). */
static bool parse_field(struct atr_bench_metrics *m, const struct field *f, struct cursor *c)
{
    if (f->is_count)
        return eat_count(c, count_at(m, f->off));
    return eat_number(c, dbl_at(m, f->off));
}

static bool parse_serving_line(struct atr_bench_metrics *m, struct cursor *c)
{
    for (size_t i = 0; i < sizeof serving_lines / sizeof serving_lines[0]; i++)
        if (eat(c, serving_lines[i].key))
            return parse_field(m, &serving_lines[i], c);
    return false;
}

/* "Mean TTFT (ms):", "P99 E2EL (ms):" and the rest. The trailing space of
 * "P99 " keeps "P99.9 TTFT (ms):" (other percentiles) out. */
static bool parse_latency_line(struct atr_bench_metrics *m, struct cursor *c)
{
    static const char *const stats[] = {"Mean ", "Median ", "P90 ", "P99 "};
    static const char *const names[] = {"TTFT", "TPOT", "ITL", "E2EL"};
    struct atr_bench_latency *lats[] = {&m->ttft, &m->tpot, &m->itl, &m->e2el};
    for (size_t s = 0; s < 4; s++) {
        if (!eat(c, stats[s]))
            continue;
        for (size_t n = 0; n < 4; n++) {
            if (!eat(c, names[n]))
                continue;
            if (!eat(c, " (ms):"))
                return false;
            double *slot[] = {&lats[n]->mean, &lats[n]->median, &lats[n]->p90, &lats[n]->p99};
            return eat_number(c, slot[s]);
        }
        return false;
    }
    return false;
}

/* benchmark_throughput: "Throughput: R requests/s, T total tokens/s, O
 * output tokens/s"; older versions stop after "T tokens/s", which also
 * counted prompt and output tokens together. Figures are taken as far as
 * the line reads right. */
static bool parse_throughput_line(struct atr_bench_metrics *m, struct cursor *c)
{
    double req, total, out;
    if (!eat(c, "Throughput:") || !eat_number(c, &req))
        return false;
    skip_blanks(c);
    if (!eat(c, "requests/s"))
        return false;
    m->req_s = req;
    skip_blanks(c);
    if (!eat(c, ",") || !eat_number(c, &total))
        return true;
    skip_blanks(c);
    if (!eat(c, "total tokens/s") && !eat(c, "tokens/s"))
        return true;
    m->total_tok_s = total;
    skip_blanks(c);
    if (eat(c, ",") && eat_number(c, &out)) {
        skip_blanks(c);
        if (eat(c, "output tokens/s"))
            m->out_tok_s = out;
    }
    return true;
}

/* benchmark_latency: "Avg latency: X seconds" and "P% percentile latency:
 * X seconds". Its requests are whole batches end to end, so they are E2EL
 * (in ms like the rest); the average is also kept in seconds as printed. */
static bool parse_latency_script_line(struct atr_bench_metrics *m, struct cursor *c)
{
    double v;
    if (eat(c, "Avg latency:")) {
        if (!eat_number(c, &v))
            return false;
        m->avg_latency_s = v;
        m->e2el.mean = figure(v * 1000);
        return true;
    }
    double *slot = eat(c, "50% ")   ? &m->e2el.median
                   : eat(c, "90% ") ? &m->e2el.p90
                   : eat(c, "99% ") ? &m->e2el.p99
                                    : NULL;
    if (!slot || !eat(c, "percentile latency:") || !eat_number(c, &v))
        return false;
    *slot = figure(v * 1000);
    return true;
}

/* One line, without its terminator: the first kind that claims it wins. */
static void parse_line(struct atr_bench_metrics *m, const char *p, const char *end)
{
    struct cursor start = {p, end};
    skip_line_junk(&start);
    bool (*const kinds[])(struct atr_bench_metrics *, struct cursor *) = {
        parse_serving_line, parse_latency_line, parse_throughput_line,
        parse_latency_script_line,
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct cursor c = start;
        if (kinds[i](m, &c))
            return;
    }
}

size_t atr_bench_metrics_parse(struct atr_bench_metrics *m, const char *text, size_t len)
{
    atr_bench_metrics_init(m);
    const char *p = text, *end = text ? text + len : text;
    /* '\r' ends a line too: \r\n endings, and tqdm redrawing its bar with
     * a bare '\r' before the script prints its figures on the same line. */
    while (p < end) {
        const char *eol = p;
        while (eol < end && *eol != '\n' && *eol != '\r')
            eol++;
        parse_line(m, p, eol);
        p = eol < end ? eol + 1 : end;
    }
    return count_figures(m);
}

/* ---- writing ---- */

void atr_bench_metrics_write(struct atr_jw *w, const struct atr_bench_metrics *m)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct field *f = &fields[i];
        if (!field_present(m, f))
            continue;
        atr_jw_key(w, f->key);
        if (f->is_count)
            atr_jw_int(w, *(const int64_t *)((const char *)m + f->off));
        else
            atr_jw_fixed(w, *(const double *)((const char *)m + f->off), 2);
    }
}
