/* html-results.c - `atr report`'s per-request inputs (the --requests-out
 * lines of `atr sim run` / `atr replay llm`): reading them, their part of
 * the Results section (percentile tables computed here, exact; the data of
 * the CDFs and of the latency race over time, drawn by report-results.js),
 * the headline's pair of policies, and the Overview's token race
 * (report-race.js). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "json/writer.h"
#include "report/html-impl.h"
#include "stats/percentile.h"
#include "stats/requests.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/input.h"
#include "util/rng.h"

#define LINE_MAX_BYTES ((size_t)64 << 20)  /* one record, itl array included */
#define ITL_MAX 4000000           /* ITLs kept per file; past it a reservoir sample */
#define CDF_POINTS 1000           /* points per embedded CDF curve */
#define ROLL_POINTS 300           /* points per rolling-percentile curve */
#define LANES_KEPT 64             /* requests per file whose token times are kept */
#define RACE_LANES 8              /* requests raced in the Overview */
#define LANE_TOKENS 2000          /* token times per raced request */
#define SERIES_COLOURS 8

/* The four latencies, in vLLM's order; ITL is per token gap, the others
 * per request. */
enum { M_TTFT, M_TPOT, M_ITL, M_E2EL, N_MET };
static const struct {
    const char *key, *label, *what, *unit_of;
} met[N_MET] = {
    {"ttft", "TTFT", "time to first token, from the request's start", "requests"},
    {"tpot", "TPOT", "time per output token after the first, requests of 2 or more tokens",
     "requests"},
    {"itl", "ITL", "gap between consecutive tokens of a request", "token gaps"},
    {"e2el", "E2EL", "end-to-end latency, start to last token", "requests"},
};

/* A request that completed: when it was sent and its latencies (ms; NAN:
 * the record has none). */
struct req {
    double send_ms, ttft, tpot, e2el;
};

/* A request whose token times are kept for the race: first token and
 * then each gap, in microseconds from its send. */
struct lane {
    uint64_t key;             /* XXH3 of id: the same request in another run's file */
    char *id;                 /* "trace-7 turn 3" or "request 12" */
    int64_t out_tokens;
    int32_t *gaps;
    size_t n;
    bool synth;               /* no ITLs in the record: even stream from TTFT and TPOT */
};

/* What a metric's values make once sorted: the table's figures and the
 * curve. */
struct sorted {
    double *v;
    size_t n;
};

struct reqset {
    const char *name, *label, *target;   /* in the html arena; target may be NULL */
    struct req *r;
    size_t n, cap, failed, lines;
    struct atr_samples itl;
    uint64_t itl_seen;
    struct lane lanes[LANES_KEPT];
    size_t n_lanes;
    struct sorted m[N_MET];   /* filled when the file is read */
};

struct atr_html_reqs {
    struct reqset *s;
    size_t n, cap;
    struct atr_rng rng;       /* seeded: deterministic ITL reservoirs */
};

/* ---- reading ---- */

bool atr_html_looks_like_requests(const char *head, size_t len)
{
    if (atr_sniff_first(head, len, NULL) != '{')
        return false;
    size_t line = len;        /* the first record, or as much of it as was peeked */
    const char *nl = memchr(head, '\n', len);
    if (nl)
        line = (size_t)(nl - head);
    return memmem(head, line, "\"success\"", 9) &&
           (memmem(head, line, "\"e2el_ms\"", 9) || memmem(head, line, "\"e2el_us\"", 9)) &&
           !memmem(head, line, "\"steps\"", 7);
}

/* Units a record may write a time in, with their factor to ms: atr writes
 * ms and s as floats today; integer microseconds are read the same way. */
static const struct {
    const char *suffix;
    double to_ms;
} units[] = {{"_ms", 1}, {"_us", 1e-3}, {"_s", 1e3}};

/* Field stem ("ttft") in ms whatever its unit; NAN when absent or null. */
static double field_ms(const struct atr_json *o, const char *stem)
{
    char key[48];
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        snprintf(key, sizeof key, "%s%s", stem, units[i].suffix);
        double v = atr_html_get_num(o, key);
        if (!isnan(v))
            return v * units[i].to_ms;
    }
    return NAN;
}

/* The record's inter-token gaps (an array) and their factor to ms. */
static const struct atr_json *itl_array(const struct atr_json *o, double *to_ms)
{
    char key[16];
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        snprintf(key, sizeof key, "itl%s", units[i].suffix);
        const struct atr_json *a = atr_json_get(o, key);
        if (a && atr_json_is(a, ATR_JSON_ARRAY)) {
            *to_ms = units[i].to_ms;
            return a;
        }
    }
    return NULL;
}

/* Algorithm R over ITL_MAX: exact percentiles up to that many gaps. */
static void add_itl(struct atr_html_reqs *all, struct reqset *s, double ms)
{
    s->itl_seen++;
    if (s->itl.n < ITL_MAX) {
        atr_samples_add(&s->itl, ms);
        return;
    }
    uint64_t j = atr_rng_below(&all->rng, s->itl_seen);
    if (j < ITL_MAX)
        s->itl.v[j] = ms;
}

/* The request's name in the race and its key: trace id and turn when the
 * record has them (the same request in runs of other policies), else its
 * id, else its line. */
static char *request_id(const struct atr_json *o, unsigned long line)
{
    const char *tid = atr_json_get_str(o, "trace_id", NULL);
    double turn = atr_html_get_num(o, "turn"), id = atr_html_get_num(o, "id");
    if (tid && !isnan(turn))
        return xasprintf("%s turn %.0f", tid, turn);
    if (!isnan(id))
        return xasprintf("request %.0f", id);
    return xasprintf("line %lu", line);
}

/* ms as whole µs, clamped to [lo, hi] (records are input: a huge or NaN
 * figure must not overflow a conversion); NaN gives lo. */
static int64_t us_in(double ms, double lo, double hi)
{
    double us = ms * 1000;
    return (int64_t)llround(us >= lo ? (us <= hi ? us : hi) : lo);
}

#define US_MAX 9e15               /* ~285 years: beyond any record, within int64 */

static void lane_free(struct lane *l)
{
    free(l->id);
    free(l->gaps);
    memset(l, 0, sizeof *l);
}

/* Keeps the token times of the LANES_KEPT requests of smallest key: a
 * sample spread over the run that is the same requests in every file of
 * the same workload, so two runs' lanes match without holding every
 * request's tokens. */
static void keep_lane(struct reqset *s, const struct atr_json *o, char *id, uint64_t key,
                      double first_ms, double tpot)
{
    size_t at = s->n_lanes;
    if (at == LANES_KEPT) {
        at = 0;
        for (size_t i = 1; i < LANES_KEPT; i++)
            at = s->lanes[i].key > s->lanes[at].key ? i : at;
        if (key >= s->lanes[at].key) {
            free(id);
            return;
        }
        lane_free(&s->lanes[at]);
    } else {
        s->n_lanes++;
    }
    struct lane *l = &s->lanes[at];
    double out = atr_html_get_num(o, "output_tokens"), to_ms = 1;
    const struct atr_json *itl = itl_array(o, &to_ms);
    size_t n = itl ? itl->u.kids.count + 1 : out > 1 ? (size_t)fmin(out, LANE_TOKENS) : 1;
    n = n > LANE_TOKENS ? LANE_TOKENS : n;
    *l = (struct lane){.key = key, .id = id, .gaps = xcalloc(n, sizeof *l->gaps), .synth = !itl,
                       .out_tokens = out >= 0 && out < 1e15 ? (int64_t)out : -1};
    l->gaps[l->n++] = (int32_t)us_in(first_ms, 0, INT32_MAX);
    for (const struct atr_json *e = itl ? itl->u.kids.first : NULL; e && l->n < n; e = e->next)
        if (atr_json_is(e, ATR_JSON_NUMBER))
            l->gaps[l->n++] = (int32_t)us_in(e->u.num * to_ms, 0, INT32_MAX);
    while (!itl && l->n < n && tpot >= 0)
        l->gaps[l->n++] = (int32_t)us_in(tpot, 0, INT32_MAX);
}

/* One record: counted, its latencies kept; -1 when it is not a record. */
static int add_record(struct atr_html_reqs *all, struct reqset *s, const struct atr_json *o,
                      const char *file, unsigned long line, struct atr_error *err)
{
    if (atr_json_is(o, ATR_JSON_OBJECT) && atr_llm_request_is_tool(o))
        return 0;                /* replay agent's tool step: no request */
    const struct atr_json *ok = atr_json_is(o, ATR_JSON_OBJECT) ? atr_json_get(o, "success") : NULL;
    if (!ok || !(atr_json_is(ok, ATR_JSON_TRUE) || atr_json_is(ok, ATR_JSON_FALSE)))
        return atr_error_at(err, file, line, 1, "expected a request record: an object "
                                                "with \"success\" true or false");
    s->lines++;
    if (atr_json_is(ok, ATR_JSON_FALSE)) {
        s->failed++;
        return 0;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->r = xrealloc(s->r, s->cap * sizeof *s->r);
    }
    struct req *r = &s->r[s->n++];
    *r = (struct req){.send_ms = field_ms(o, "send"), .ttft = field_ms(o, "ttft"),
                      .tpot = field_ms(o, "tpot"), .e2el = field_ms(o, "e2el")};
    double to_ms = 1;
    const struct atr_json *itl = itl_array(o, &to_ms);
    for (const struct atr_json *e = itl ? itl->u.kids.first : NULL; e; e = e->next)
        if (atr_json_is(e, ATR_JSON_NUMBER))
            add_itl(all, s, e->u.num * to_ms);
    if (isnan(r->ttft))
        return 0;
    char *id = request_id(o, line);
    double start = field_ms(o, "start"), queue = start - r->send_ms;
    keep_lane(s, o, id, XXH3_64bits(id, strlen(id)), r->ttft + (queue >= 0 ? queue : 0),
              isnan(r->tpot) ? -1 : r->tpot);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_send(const void *a, const void *b)
{
    return cmp_double(&((const struct req *)a)->send_ms, &((const struct req *)b)->send_ms);
}

/* Each metric's values sorted once, for the tables and curves; requests
 * in send order, for the race over time. */
static void finish(struct reqset *s)
{
    if (s->n)                 /* s->r is NULL when nothing completed */
        qsort(s->r, s->n, sizeof *s->r, cmp_send);
    for (int m = 0; m < N_MET; m++) {
        struct sorted *o = &s->m[m];
        if (m == M_ITL) {
            o->v = xcalloc(s->itl.n + 1, sizeof *o->v);
            for (size_t i = 0; i < s->itl.n; i++)
                if (!isnan(s->itl.v[i]))
                    o->v[o->n++] = s->itl.v[i];
        } else {
            o->v = xcalloc(s->n + 1, sizeof *o->v);
            for (size_t i = 0; i < s->n; i++) {
                double v = m == M_TTFT ? s->r[i].ttft : m == M_TPOT ? s->r[i].tpot : s->r[i].e2el;
                if (!isnan(v))
                    o->v[o->n++] = v;
            }
        }
        qsort(o->v, o->n, sizeof *o->v, cmp_double);
    }
    atr_samples_release(&s->itl);
}

/* "req.naive.ndjson" -> "naive": the name `--policy a,b --requests-out
 * req.ndjson` gives each policy's file; a name with no inner dot is
 * its own label ("naive.ndjson" -> "naive"). */
static const char *label_of(struct atr_arena *a, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    static const char *const zips[] = {".gz", ".zst"};
    for (size_t i = 0; i < 2; i++) {
        size_t z = strlen(zips[i]);
        if (len > z && !strcmp(base + len - z, zips[i]))
            len -= z;
    }
    const char *dot = memrchr(base, '.', len);
    if (dot && dot > base)
        len = (size_t)(dot - base);
    const char *inner = memrchr(base, '.', len);
    if (inner && inner + 1 < base + len)
        return atr_arena_strndup(a, inner + 1, len - (size_t)(inner + 1 - base));
    return atr_arena_strndup(a, base, len);
}

static struct reqset *new_set(struct atr_html *h)
{
    if (!h->reqs) {
        h->reqs = xcalloc(1, sizeof *h->reqs);
        atr_rng_seed(&h->reqs->rng, 0x5eed, 0);
    }
    struct atr_html_reqs *all = h->reqs;
    if (all->n == all->cap) {
        all->cap = all->cap ? all->cap * 2 : 4;
        all->s = xrealloc(all->s, all->cap * sizeof *all->s);
    }
    struct reqset *s = &all->s[all->n];
    memset(s, 0, sizeof *s);
    return s;
}

static void set_release(struct reqset *s)
{
    free(s->r);
    atr_samples_release(&s->itl);
    for (size_t i = 0; i < s->n_lanes; i++)
        lane_free(&s->lanes[i]);
    for (int m = 0; m < N_MET; m++)
        free(s->m[m].v);
}

/* The label and target a record names ("policy", "target"), when the
 * writer adds them; else the file name's. */
static void names_from(struct atr_html *h, struct reqset *s, const struct atr_json *o)
{
    const char *pol = atr_json_get_str(o, "policy", NULL);
    const char *tgt = atr_json_get_str(o, "target", NULL);
    if (pol && !s->label)
        s->label = atr_arena_strdup(&h->arena, pol);
    if (tgt && !s->target)
        s->target = atr_arena_strdup(&h->arena, tgt);
}

int atr_html_read_requests(struct atr_html *h, const char *path, struct atr_input *src,
                           const char **detail, struct atr_error *err)
{
    struct reqset *s = new_set(h);
    struct atr_arena line_arena = ATR_ARENA_INIT;
    const char *line;
    size_t len;
    int rc;
    while ((rc = atr_input_getline(src, &line, &len, LINE_MAX_BYTES, err)) == 1) {
        if (strspn(line, " \t\r") == len)
            continue;
        struct atr_json *o;
        struct atr_json_err jerr;
        unsigned long ln = atr_input_lineno(src);
        atr_arena_clear(&line_arena);
        if (atr_json_parse(&line_arena, line, len, NULL, &o, &jerr) < 0) {
            rc = atr_error_at(err, path, ln, jerr.col, "%s", jerr.msg);
            break;
        }
        if ((rc = add_record(h->reqs, s, o, path, ln, err)) < 0)
            break;
        names_from(h, s, o);
    }
    atr_arena_release(&line_arena);
    atr_input_close(src);
    if (rc < 0) {             /* all or nothing: the set is not added */
        set_release(s);
        return -1;
    }
    s->name = atr_arena_strdup(&h->arena, path);
    if (!s->label)
        s->label = label_of(&h->arena, path);
    finish(s);
    h->reqs->n++;
    *detail = atr_arena_printf(&h->arena, "per-request records of %s, %zu line%s (%zu failed)",
                               s->label, s->lines, s->lines == 1 ? "" : "s", s->failed);
    return 0;
}

void atr_html_reqs_free(struct atr_html_reqs *all)
{
    if (!all)
        return;
    for (size_t i = 0; i < all->n; i++)
        set_release(&all->s[i]);
    free(all->s);
    free(all);
}

size_t atr_html_reqsets(const struct atr_html *h)
{
    return h->reqs ? h->reqs->n : 0;
}

/* ---- the headline's pair ---- */

static const char *result_policy(const struct atr_html_result *r)
{
    const struct atr_json *atr = atr_json_get(r->root, "atr");
    return atr ? atr_json_get_str(atr, "policy", NULL) : NULL;
}

static double mean_of(const struct sorted *o)
{
    double sum = 0;
    for (size_t i = 0; i < o->n; i++)
        sum += o->v[i];
    return o->n ? sum / (double)o->n : NAN;
}

static const char *result_target(const struct atr_html_result *r)
{
    const struct atr_json *atr = atr_json_get(r->root, "atr");
    return atr ? atr_json_get_str(atr, "target", NULL) : NULL;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Result files: the first naive, and the best other policy on its target
 * (a simulated GPU's naive against a real engine's policy is no cut). */
static bool pick_results(const struct atr_html *h, struct atr_html_pick *p)
{
    const char *target = NULL;
    bool naive = false;
    double v;
    for (size_t i = 0; i < h->n_results && !naive; i++) {
        const char *pol = result_policy(&h->results[i]);
        if (pol && strcmp(pol, "naive") == 0 &&
            atr_json_get_num(h->results[i].root, "mean_e2el_ms", &v) && v > 0) {
            naive = true;
            p->naive_ms = v;
            target = result_target(&h->results[i]);
        }
    }
    for (size_t i = 0; naive && i < h->n_results; i++) {
        const struct atr_html_result *r = &h->results[i];
        const char *pol = result_policy(r);
        if (pol && strcmp(pol, "naive") != 0 && same_str(result_target(r), target) &&
            atr_json_get_num(r->root, "mean_e2el_ms", &v) && v > 0 &&
            (!p->best || v < p->best_ms)) {
            p->best = pol;
            p->best_ms = v;
        }
    }
    return naive && p->best;
}

bool atr_html_pick_best(const struct atr_html *h, struct atr_html_pick *p)
{
    memset(p, 0, sizeof *p);
    if (pick_results(h, p))                        /* result files first */
        return true;
    memset(p, 0, sizeof *p);
    bool naive = false;
    double v;
    for (size_t i = 0; i < atr_html_reqsets(h); i++) {   /* else per-request files */
        const struct reqset *s = &h->reqs->s[i];
        v = mean_of(&s->m[M_E2EL]);
        if (!(v > 0))
            continue;
        if (strcmp(s->label, "naive") == 0 && !naive) {
            naive = true;
            p->naive_ms = v;
        } else if (strcmp(s->label, "naive") != 0 && (!p->best || v < p->best_ms)) {
            p->best = s->label;
            p->best_ms = v;
        }
    }
    p->from_requests = true;
    return naive && p->best;
}

/* ---- the Results part: tables ---- */

static double pct(const struct sorted *o, double p)
{
    return o->n ? atr_percentile_sorted(o->v, o->n, p) : NAN;
}

/* The target of set s: its records', else that of the one result file of
 * the same policy (none when several disagree). */
static const char *target_of(const struct atr_html *h, const struct reqset *s)
{
    if (s->target)
        return s->target;
    const char *found = NULL;
    for (size_t i = 0; i < h->n_results; i++) {
        const struct atr_json *atr = atr_json_get(h->results[i].root, "atr");
        const char *pol = result_policy(&h->results[i]);
        const char *t = atr ? atr_json_get_str(atr, "target", NULL) : NULL;
        if (!pol || !t || strcmp(pol, s->label))
            continue;
        if (found && strcmp(found, t))
            return NULL;
        found = t;
    }
    return found;
}

static void set_cell(struct atr_buf *b, size_t i, const struct reqset *s)
{
    atr_buf_printf(b, "<td><span class=\"key c%zu\"></span>", i % SERIES_COLOURS);
    atr_html_esc(b, s->label);
    atr_buf_puts(b, "</td>");
}

static void sets_table(struct atr_buf *b, const struct atr_html *h)
{
    atr_buf_puts(b, "<table class=\"req-sets\"><thead><tr><th>policy</th><th>file</th>"
                    "<th>target</th><th>records</th><th>completed</th><th>failed</th>"
                    "<th>token gaps</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < h->reqs->n; i++) {
        const struct reqset *s = &h->reqs->s[i];
        atr_buf_printf(b, "<tr data-set=\"%zu\">", i);
        set_cell(b, i, s);
        atr_html_td_str(b, s->name);
        atr_html_td_str(b, target_of(h, s));
        atr_html_td_num(b, (double)s->lines, 0);
        atr_html_td_num(b, (double)s->n, 0);
        atr_html_td_num(b, (double)s->failed, 0);
        atr_html_td_num(b, (double)s->itl_seen, 0);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

static void pct_table(struct atr_buf *b, const struct atr_html *h, int m)
{
    atr_buf_printf(b, "<h3>%s per request (ms)</h3>\n<table class=\"req-pct\" data-metric=\"%s\">"
                      "<thead><tr><th>policy</th><th>%s</th><th>mean</th><th>p50</th>"
                      "<th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>\n",
                   met[m].label, met[m].key, met[m].unit_of);
    for (size_t i = 0; i < h->reqs->n; i++) {
        const struct sorted *o = &h->reqs->s[i].m[m];
        atr_buf_printf(b, "<tr data-set=\"%zu\">", i);
        set_cell(b, i, &h->reqs->s[i]);
        atr_html_td_num(b, (double)(m == M_ITL ? h->reqs->s[i].itl_seen : o->n), 0);
        atr_html_td_num(b, mean_of(o), 2);
        atr_html_td_num(b, pct(o, 50), 2);
        atr_html_td_num(b, pct(o, 90), 2);
        atr_html_td_num(b, pct(o, 99), 2);
        atr_html_td_num(b, o->n ? o->v[o->n - 1] : NAN, 2);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

static bool itl_sampled(const struct atr_html *h)
{
    for (size_t i = 0; i < h->reqs->n; i++)
        if (h->reqs->s[i].itl_seen > ITL_MAX)
            return true;
    return false;
}

void atr_html_requests_section(struct atr_buf *b, const struct atr_html *h)
{
    if (!atr_html_reqsets(h))
        return;
    atr_buf_printf(b, "<h3 id=\"per-request\">Per request</h3>\n<p>%zu per-request file%s "
                      "(<code>--requests-out</code>), one curve each, named by policy (the "
                      "records' <code>policy</code>, else the file name: "
                      "<code>req.naive.ndjson</code> is <code>naive</code>). Completed "
                      "requests only; percentiles exact (numpy's linear method)%s.</p>\n",
                   h->reqs->n, h->reqs->n == 1 ? "" : "s",
                   itl_sampled(h) ? "; ITL over a sample of 4 000 000 gaps per file where "
                                    "there are more" : "");
    sets_table(b, h);
    for (int m = 0; m < N_MET; m++) {
        pct_table(b, h, m);
        atr_buf_printf(b, "<figure class=\"req-chart\" data-metric=\"%s\"><div "
                          "class=\"chart-host\"></div><figcaption>CDF of %s (%s) over %s: "
                          "the fraction at or below each value; at most %d points per curve "
                          "(evenly spaced ranks). Log scale "
                          "when the values span more than a factor of 20 (toggle). Hover for "
                          "values.</figcaption></figure>\n",
                       met[m].key, met[m].label, met[m].what, met[m].unit_of, CDF_POINTS);
    }
    atr_buf_printf(b, "<h3>Latency race over time</h3>\n<figure class=\"req-roll\"><div "
                      "class=\"chart-host\"></div><figcaption>Rolling p50 (solid) and p99 "
                      "(dashed) of E2EL per policy against the time each request was sent, "
                      "from the policy's first send; each point is over the last W completed "
                      "requests (W = n/25, from 10 to 2000), at most %d points per curve."
                      "</figcaption></figure>\n", ROLL_POINTS);
}

/* ---- the Overview's token race ---- */

struct race {
    const struct reqset *a, *b;
    const struct lane *la[RACE_LANES], *lb[RACE_LANES];
    size_t n;
};

static const struct reqset *set_named(const struct atr_html *h, const char *label)
{
    for (size_t i = 0; i < atr_html_reqsets(h); i++)
        if (!strcmp(h->reqs->s[i].label, label))
            return &h->reqs->s[i];
    return NULL;
}

static int64_t lane_end_us(const struct lane *l)
{
    int64_t t = 0;
    for (size_t i = 0; i < l->n; i++)
        t += l->gaps[i];
    return t;
}

static int by_lane_key(const void *x, const void *y)
{
    const struct lane *a = *(const struct lane *const *)x, *b = *(const struct lane *const *)y;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* The naive set and the headline's best, with up to RACE_LANES requests
 * both kept (smallest keys: a fixed sample, not picked for effect). */
static bool race_of(const struct atr_html *h, struct race *r)
{
    struct atr_html_pick p;
    memset(r, 0, sizeof *r);
    if (!atr_html_pick_best(h, &p) || !(r->a = set_named(h, "naive")) ||
        !(r->b = set_named(h, p.best)))
        return false;
    const struct lane *shared[LANES_KEPT];
    size_t n = 0;
    for (size_t i = 0; i < r->a->n_lanes; i++)
        for (size_t j = 0; j < r->b->n_lanes; j++)
            if (r->a->lanes[i].key == r->b->lanes[j].key &&
                !strcmp(r->a->lanes[i].id, r->b->lanes[j].id))
                shared[n++] = &r->a->lanes[i];
    qsort(shared, n, sizeof *shared, by_lane_key);
    for (size_t i = 0; i < n && r->n < RACE_LANES; i++)
        for (size_t j = 0; j < r->b->n_lanes; j++)
            if (r->b->lanes[j].key == shared[i]->key) {
                r->la[r->n] = shared[i];
                r->lb[r->n++] = &r->b->lanes[j];
                break;
            }
    return r->n > 0;
}

static bool race_synth(const struct race *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->la[i]->synth || r->lb[i]->synth)
            return true;
    return false;
}

void atr_html_race(struct atr_buf *b, const struct atr_html *h)
{
    struct race r;
    if (!race_of(h, &r))
        return;
    atr_buf_puts(b, "<div id=\"race\"><h3>Token race: naive against ");
    atr_html_esc(b, r.b->label);
    atr_buf_printf(b, "</h3>\n<p class=\"muted\">The same %zu request%s streaming under each "
                      "policy, replayed from the %s: first token and each gap, from the "
                      "request's send, a clock per request, all starting together. The "
                      "requests are a fixed sample (smallest hash of trace id and turn), "
                      "not the most striking; at most %d tokens each are animated. Starts "
                      "paused when the system asks for reduced motion.</p>\n",
                   r.n, r.n == 1 ? "" : "s",
                   race_synth(&r) ? "records' TTFT and TPOT (no per-token times in "
                                    "them: an even stream, synthesised)"
                                  : "recorded token times (itl_ms of --requests-out)",
                   LANE_TOKENS);
    atr_buf_puts(b, "<table class=\"race-table\"><thead><tr><th>request</th><th>output tokens</th>"
                    "<th>naive: last token (ms)</th><th>");
    atr_html_esc(b, r.b->label);
    atr_buf_puts(b, ": last token (ms)</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < r.n; i++) {
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, r.la[i]->id);
        atr_html_td_num(b, r.la[i]->out_tokens < 0 ? NAN : (double)r.la[i]->out_tokens, 0);
        atr_html_td_num(b, (double)lane_end_us(r.la[i]) / 1000, 1);
        atr_html_td_num(b, (double)lane_end_us(r.lb[i]) / 1000, 1);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table></div>\n");
}

/* ---- data for the JS ---- */

static void gaps_us(struct atr_jw *w, const double *v, const size_t *rank, size_t n)
{
    int64_t prev = 0;
    atr_jw_array_begin(w);
    for (size_t k = 0; k < n; k++) {
        int64_t us = us_in(v[rank ? rank[k] : k], -US_MAX, US_MAX);
        atr_jw_int(w, us - prev);
        prev = us;
    }
    atr_jw_array_end(w);
}

/* A CDF as {n, v}: v the values (µs, gap-coded) at up to CDF_POINTS ranks
 * round(k (n-1) / (m-1)); point k is at fraction (rank + 1) / n. */
void atr_html_cdf_json(struct atr_jw *w, const double *sorted_ms, size_t n)
{
    size_t m = n < CDF_POINTS ? n : CDF_POINTS;
    size_t *rank = xcalloc(m + 1, sizeof *rank);
    for (size_t k = 0; k < m; k++)
        rank[k] = n <= CDF_POINTS ? k : (size_t)llround((double)k * (double)(n - 1) /
                                                        (double)(m - 1));
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "n", n);
    atr_jw_key(w, "v");
    gaps_us(w, sorted_ms, rank, m);
    atr_jw_object_end(w);
    free(rank);
}

static void cdf_json(struct atr_jw *w, const struct sorted *o)
{
    atr_html_cdf_json(w, o->v, o->n);
}

static void us_list(struct atr_jw *w, const char *key, const double *v, size_t n)
{
    atr_jw_key(w, key);
    atr_jw_array_begin(w);
    for (size_t k = 0; k < n; k++)
        atr_jw_int(w, us_in(v[k], -US_MAX, US_MAX));
    atr_jw_array_end(w);
}

/* Rolling p50 / p99 of E2EL over the last W completed requests in send
 * order: {w, t (ms from the first send, gap-coded), p50, p99 (µs)}. */
static void roll_json(struct atr_jw *w, const struct reqset *s)
{
    size_t n = 0;
    double *send = xcalloc(s->n + 1, sizeof *send), *e2el = xcalloc(s->n + 1, sizeof *e2el);
    for (size_t i = 0; i < s->n; i++)
        if (!isnan(s->r[i].e2el) && !isnan(s->r[i].send_ms)) {
            send[n] = s->r[i].send_ms;
            e2el[n++] = s->r[i].e2el;
        }
    size_t win = n / 25 < 10 ? 10 : n / 25 > 2000 ? 2000 : n / 25;
    win = win > n ? n : win;
    size_t ends = n ? n - win + 1 : 0, pts = ends < ROLL_POINTS ? ends : ROLL_POINTS;
    double *tmp = xcalloc(win + 1, sizeof *tmp), *p50 = xcalloc(pts + 1, sizeof *p50);
    double *p99 = xcalloc(pts + 1, sizeof *p99), *t = xcalloc(pts + 1, sizeof *t);
    for (size_t k = 0; k < pts; k++) {
        size_t at = pts == 1 ? ends - 1
                             : (size_t)llround((double)k * (double)(ends - 1) / (double)(pts - 1));
        size_t end = win - 1 + at;
        memcpy(tmp, e2el + end + 1 - win, win * sizeof *tmp);
        qsort(tmp, win, sizeof *tmp, cmp_double);
        p50[k] = atr_percentile_sorted(tmp, win, 50);
        p99[k] = atr_percentile_sorted(tmp, win, 99);
        t[k] = send[end] - send[0];
    }
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "w", win);
    atr_jw_key(w, "t");
    atr_jw_array_begin(w);
    int64_t prev = 0;
    for (size_t k = 0; k < pts; k++) {
        int64_t ms = us_in(t[k], -US_MAX, US_MAX) / 1000;
        atr_jw_int(w, ms - prev);
        prev = ms;
    }
    atr_jw_array_end(w);
    us_list(w, "p50", p50, pts);
    us_list(w, "p99", p99, pts);
    atr_jw_object_end(w);
    free(send);
    free(e2el);
    free(tmp);
    free(p50);
    free(p99);
    free(t);
}

static void lane_json(struct atr_jw *w, const char *key, const struct lane *l)
{
    atr_jw_key(w, key);
    atr_jw_array_begin(w);
    for (size_t i = 0; i < l->n; i++)
        atr_jw_int(w, l->gaps[i]);
    atr_jw_array_end(w);
}

/* "race": {a, b (the two labels), synth, lanes: [{id, out, a, b}]}, a
 * lane's a and b its token times under each (µs: the first token from the
 * send, then each gap); null without a race. */
static void race_json(struct atr_jw *w, const struct atr_html *h)
{
    struct race r;
    atr_jw_key(w, "race");
    if (!race_of(h, &r)) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "a", r.a->label);
    atr_jw_kv_str(w, "b", r.b->label);
    atr_jw_kv_bool(w, "synth", race_synth(&r));
    atr_jw_kv_int(w, "cap", LANE_TOKENS);
    atr_jw_key(w, "lanes");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < r.n; i++) {
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "id", r.la[i]->id);
        atr_jw_kv_int(w, "out", r.la[i]->out_tokens);
        lane_json(w, "a", r.la[i]);
        lane_json(w, "b", r.lb[i]);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

void atr_html_requests_json(struct atr_jw *w, const struct atr_html *h)
{
    atr_jw_key(w, "requests");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < atr_html_reqsets(h); i++) {
        const struct reqset *s = &h->reqs->s[i];
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "name", s->name);
        atr_jw_kv_str(w, "label", s->label);
        atr_jw_kv_str(w, "target", target_of(h, s));
        atr_jw_kv_uint(w, "completed", s->n);
        atr_jw_kv_uint(w, "failed", s->failed);
        atr_jw_kv_uint(w, "itl_seen", s->itl_seen);
        atr_jw_key(w, "cdf");
        atr_jw_object_begin(w);
        for (int m = 0; m < N_MET; m++) {
            atr_jw_key(w, met[m].key);
            cdf_json(w, &s->m[m]);
        }
        atr_jw_object_end(w);
        atr_jw_key(w, "roll");
        roll_json(w, s);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
    race_json(w, h);
}
