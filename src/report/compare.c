/* compare.c - benchmark result files (atr, vLLM, SGLang) into the rows of
 * the policy comparison table, their cuts against naive, and the table as
 * Markdown or JSON. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/compare.h"

#include "json/json.h"
#include "json/writer.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/input.h"

struct atr_compare {
    struct atr_compare_row *rows;
    size_t *seq;               /* adding order of rows[i], for stable sorting */
    size_t n, cap, next_seq;
    struct atr_arena strings;  /* every string of every row */
};

struct atr_compare *atr_compare_new(void)
{
    return xcalloc(1, sizeof(struct atr_compare));
}

void atr_compare_free(struct atr_compare *c)
{
    if (!c)
        return;
    free(c->rows);
    free(c->seq);
    atr_arena_release(&c->strings);
    free(c);
}

static struct atr_compare_row *push_row(struct atr_compare *c)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        c->rows = xreallocarray(c->rows, cap, sizeof *c->rows);
        c->seq = xreallocarray(c->seq, cap, sizeof *c->seq);
        c->cap = cap;
    }
    c->seq[c->n] = c->next_seq++;
    return &c->rows[c->n++];
}

void atr_compare_add_row(struct atr_compare *c, const struct atr_compare_row *r)
{
    struct atr_compare_row *dst = push_row(c);
    *dst = *r;
    dst->file = atr_arena_strdup(&c->strings, r->file ? r->file : "");
    dst->kind = atr_arena_strdup(&c->strings, r->kind ? r->kind : "atr");
    dst->target = atr_arena_strdup(&c->strings, r->target ? r->target : "unknown");
    dst->policy = atr_arena_strdup(&c->strings, r->policy ? r->policy : "unknown");
}

/* A figure as a result file would give it back: JSON has no inf or NaN. */
static double finite_or_nan(double v)
{
    return isfinite(v) ? v : NAN;
}

/* The 99th percentile among the configured ones (of request or session
 * figures), else NAN. */
static double p99_of(const struct atr_llm_stat *st, const struct atr_llm_bench_config *cfg,
                     bool session)
{
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(cfg, session, pct);
    for (size_t i = 0; i < n; i++)
        if (pct[i] == 99)
            return finite_or_nan(st->p[i]);
    return NAN;
}

/* Session completion figures, as the result file has them: only for a
 * multi-turn workload. */
static void session_figures(struct atr_compare_row *r, const struct atr_llm_summary *s,
                            const struct atr_llm_bench_config *cfg)
{
    const struct atr_llm_stat *st = &s->sessions.completion;
    bool have = s->sessions.multi_turn;
    r->session_mean_ms = have ? finite_or_nan(st->mean) : NAN;
    r->session_p50_ms = have ? finite_or_nan(st->median) : NAN;
    r->session_p99_ms = have ? p99_of(st, cfg, true) : NAN;
}

void atr_compare_add_summary(struct atr_compare *c, const char *target, const char *policy,
                             const struct atr_llm_summary *s,
                             const struct atr_llm_bench_config *cfg)
{
    struct atr_compare_row r = {
        .file = policy, .kind = "atr", .target = target, .policy = policy,
        .ttft_mean_ms = finite_or_nan(s->ttft.mean), .ttft_p50_ms = finite_or_nan(s->ttft.median),
        .ttft_p99_ms = p99_of(&s->ttft, cfg, false),
        .e2el_mean_ms = finite_or_nan(s->e2el.mean), .e2el_p50_ms = finite_or_nan(s->e2el.median),
        .e2el_p99_ms = p99_of(&s->e2el, cfg, false),
        .request_throughput = finite_or_nan(s->request_throughput),
        .output_throughput = finite_or_nan(s->output_throughput),
        .prefix_hit_rate = s->total_input ? (double)s->cached_tokens / (double)s->total_input : 0,
    };
    session_figures(&r, s, cfg);
    atr_compare_add_row(c, &r);
}

/* ---- one result object into a row ---- */

/* Where a JSONL record sits: its text starts at line base + 1, column 1. */
struct src {
    const char *name;
    unsigned long base;
};

static int fail_at(struct atr_error *err, const struct src *s, const struct atr_json *v,
                   const char *what)
{
    return atr_error_at(err, s->name, s->base + v->line, v->col, "%s", what);
}

/* Key names of one figure in the formats that write it, first found wins. */
static const char *const k_ttft_mean[] = {"mean_ttft_ms", NULL};
static const char *const k_ttft_p50[] = {"median_ttft_ms", "p50_ttft_ms", NULL};
static const char *const k_ttft_p99[] = {"p99_ttft_ms", NULL};
static const char *const k_e2el_mean[] = {"mean_e2el_ms", "mean_e2e_latency_ms", NULL};
static const char *const k_e2el_p50[] = {"median_e2el_ms", "median_e2e_latency_ms",
                                         "p50_e2el_ms", "p50_e2e_latency_ms", NULL};
static const char *const k_e2el_p99[] = {"p99_e2el_ms", "p99_e2e_latency_ms", NULL};
static const char *const k_req_tput[] = {"request_throughput", NULL};
static const char *const k_out_tput[] = {"output_throughput", NULL};
/* under atr.sessions */
static const char *const k_ses_mean[] = {"mean_completion_ms", NULL};
static const char *const k_ses_p50[] = {"median_completion_ms", NULL};
static const char *const k_ses_p99[] = {"p99_completion_ms", NULL};

/* A number as vLLM and SGLang may write it: a JSON number, a bare
 * Infinity/NaN, or a string like "inf" (request_rate). */
static bool as_number(const struct atr_json *v, double *out)
{
    if (v->type == ATR_JSON_NUMBER) {
        *out = v->u.num;
        return true;
    }
    if (v->type != ATR_JSON_STRING || v->u.str.len == 0)
        return false;
    char *end;
    *out = strtod(v->u.str.s, &end);
    return *end == '\0' && end != v->u.str.s;
}

/* *out = the first of keys in obj (NAN when none or null); -1 with err
 * when present with another type. */
static int get_figure(const struct atr_json *obj, const char *const *keys, double *out,
                      const struct src *s, struct atr_error *err)
{
    *out = NAN;
    for (; *keys; keys++) {
        const struct atr_json *v = atr_json_get(obj, *keys);
        if (!v || v->type == ATR_JSON_NULL)
            continue;
        if (as_number(v, out))
            return 0;
        return atr_error_at(err, s->name, s->base + v->line, v->col,
                            "expected a number for \"%s\", found %s", *keys,
                            atr_json_type_name(v->type));
    }
    return 0;
}

static int get_figures(const struct atr_json *o, struct atr_compare_row *r,
                       const struct src *s, struct atr_error *err)
{
    if (get_figure(o, k_ttft_mean, &r->ttft_mean_ms, s, err) < 0 ||
        get_figure(o, k_ttft_p50, &r->ttft_p50_ms, s, err) < 0 ||
        get_figure(o, k_ttft_p99, &r->ttft_p99_ms, s, err) < 0 ||
        get_figure(o, k_e2el_mean, &r->e2el_mean_ms, s, err) < 0 ||
        get_figure(o, k_e2el_p50, &r->e2el_p50_ms, s, err) < 0 ||
        get_figure(o, k_e2el_p99, &r->e2el_p99_ms, s, err) < 0 ||
        get_figure(o, k_req_tput, &r->request_throughput, s, err) < 0 ||
        get_figure(o, k_out_tput, &r->output_throughput, s, err) < 0)
        return -1;
    /* Older SGLang lines have no request_throughput; both tools define it
     * as completed / duration. */
    double done, dur;
    if (isnan(r->request_throughput) && atr_json_get_num(o, "completed", &done) &&
        atr_json_get_num(o, "duration", &dur) && dur > 0)
        r->request_throughput = done / dur;
    return 0;
}

/* atr's own figures: prefix hit rate and, for multi-turn workloads, session
 * completion (NAN without them: vLLM and SGLang files, older atr files). */
static int get_atr_figures(const struct atr_json *atr, struct atr_compare_row *r,
                           const struct src *s, struct atr_error *err)
{
    r->prefix_hit_rate = r->session_mean_ms = r->session_p50_ms = r->session_p99_ms = NAN;
    if (!atr)
        return 0;
    const struct atr_json *ses = atr_json_get(atr, "sessions");
    if (get_figure(atr, (const char *const[]){"prefix_cache_hit_rate", NULL},
                   &r->prefix_hit_rate, s, err) < 0)
        return -1;
    if (!atr_json_is(ses, ATR_JSON_OBJECT))
        return 0;
    if (get_figure(ses, k_ses_mean, &r->session_mean_ms, s, err) < 0 ||
        get_figure(ses, k_ses_p50, &r->session_p50_ms, s, err) < 0 ||
        get_figure(ses, k_ses_p99, &r->session_p99_ms, s, err) < 0)
        return -1;
    return 0;
}

static const char *get_str(const struct atr_json *o, const char *key)
{
    const char *v = atr_json_get_str(o, key, NULL);
    return v && *v ? v : NULL;
}

/* atr.target; else "sim:" + atr.engine.profile; else BACKEND:MODEL. */
static const char *target_of(struct atr_arena *a, const struct atr_json *o,
                             const struct atr_json *atr)
{
    const char *t = get_str(atr, "target");
    if (t)
        return atr_arena_strdup(a, t);
    const char *profile = get_str(atr_json_get(atr, "engine"), "profile");
    if (profile)
        return atr_arena_printf(a, "sim:%s", profile);
    const char *backend = get_str(o, "backend"), *model = get_str(o, "model_id");
    if (!model)
        model = get_str(o, "model");
    if (backend && model)
        return atr_arena_printf(a, "%s:%s", backend, model);
    return atr_arena_strdup(a, backend ? backend : model ? model : "unknown");
}

/* The base name without .gz/.zst, then without .json/.jsonl/.ndjson. */
static char *stem_of(struct atr_arena *a, const char *name)
{
    if (strcmp(name, "-") == 0 || strcmp(name, "<stdin>") == 0)
        return atr_arena_strdup(a, "stdin");
    const char *slash = strrchr(name, '/');
    const char *base = slash && slash[1] ? slash + 1 : name;
    size_t n = strlen(base);
    static const char *const comp[] = {".gz", ".zst", NULL};
    static const char *const doc[] = {".json", ".jsonl", ".ndjson", NULL};
    const char *const *lists[] = {comp, doc};
    for (int l = 0; l < 2; l++)
        for (const char *const *e = lists[l]; *e; e++) {
            size_t k = strlen(*e);
            if (n > k && strncmp(base + n - k, *e, k) == 0) {
                n -= k;
                break;
            }
        }
    return atr_arena_strndup(a, base, n);
}

static const char *kind_of(const struct atr_json *o, const struct atr_json *atr)
{
    if (atr)
        return "atr";
    if (atr_json_get(o, "mean_e2e_latency_ms") || atr_json_get(o, "median_e2e_latency_ms"))
        return "sglang";
    return "vllm";
}

/* Fills r from one result object. record: 0 for a single document, else
 * the JSONL line number, appended to the stem policy. */
static int row_from_object(struct atr_compare *c, const struct atr_json *o,
                           const struct src *s, unsigned long record,
                           struct atr_compare_row *r, struct atr_error *err)
{
    if (o->type != ATR_JSON_OBJECT) {
        char what[96];
        snprintf(what, sizeof what, "expected a result object, found %s",
                 atr_json_type_name(o->type));
        return fail_at(err, s, o, what);
    }
    memset(r, 0, sizeof *r);
    if (get_figures(o, r, s, err) < 0)
        return -1;
    if (isnan(r->ttft_mean_ms) && isnan(r->e2el_mean_ms))
        return fail_at(err, s, o,
                       "expected \"mean_ttft_ms\", \"mean_e2el_ms\" or "
                       "\"mean_e2e_latency_ms\" in a benchmark result");
    const struct atr_json *atr = atr_json_get(o, "atr");
    if (!atr_json_is(atr, ATR_JSON_OBJECT))
        atr = NULL;
    if (get_atr_figures(atr, r, s, err) < 0)
        return -1;
    r->file = atr_arena_strdup(&c->strings, s->name);
    r->kind = kind_of(o, atr);
    r->target = target_of(&c->strings, o, atr);
    const char *policy = get_str(atr, "policy");
    if (policy)
        r->policy = atr_arena_strdup(&c->strings, policy);
    else if (record)
        r->policy = atr_arena_printf(&c->strings, "%s#%lu", stem_of(&c->strings, s->name),
                                     record);
    else
        r->policy = stem_of(&c->strings, s->name);
    return 0;
}

/* ---- texts: one document or JSONL ---- */

static const struct atr_json_opts parse_opts = {.allow_nonfinite = true};

static int parse_error(struct atr_error *err, const struct src *s,
                       const struct atr_json_err *je)
{
    return atr_error_at(err, s->name, s->base + je->line, je->col, "%s", je->msg);
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

/* Adds one row per non-blank line. */
static int add_lines(struct atr_compare *c, const char *name, const char *text, size_t len,
                     bool several, struct atr_arena *a, struct atr_error *err)
{
    const char *p = text, *end = text + len;
    for (unsigned long line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct src s = {name, line - 1};
        struct atr_json *v;
        struct atr_json_err je;
        if (!blank(p, n)) {
            atr_arena_clear(a);
            if (atr_json_parse(a, p, n, &parse_opts, &v, &je) < 0)
                return parse_error(err, &s, &je);
            if (row_from_object(c, v, &s, several ? line : 0, push_row(c), err) < 0)
                return -1;
        }
        p += n + (nl != NULL);
    }
    return 0;
}

/* How many non-blank lines, stopping at 2. */
static int count_records(const char *text, size_t len, const char **first, size_t *first_len)
{
    const char *p = text, *end = text + len;
    int count = 0;
    while (p < end && count < 2) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!blank(p, n) && count++ == 0)
            *first = p, *first_len = n;
        p += n + (nl != NULL);
    }
    return count;
}

/* A text that is not one JSON value is JSONL when its first non-blank
 * line is a value by itself. Returns true with *several set when so. */
static bool is_jsonl(struct atr_arena *a, const char *text, size_t len, bool *several)
{
    const char *first = NULL;
    size_t n = 0;
    if (count_records(text, len, &first, &n) < 2)
        return false;
    struct atr_json *v;
    struct atr_json_err je;
    atr_arena_clear(a);
    *several = true;
    return atr_json_parse(a, first, n, &parse_opts, &v, &je) == 0;
}

static int add_text(struct atr_compare *c, const char *name, const char *json, size_t len,
                    struct atr_arena *a, struct atr_error *err)
{
    struct src s = {name, 0};
    struct atr_json *v;
    struct atr_json_err je;
    if (atr_json_parse(a, json, len, &parse_opts, &v, &je) == 0)
        return row_from_object(c, v, &s, 0, push_row(c), err);
    bool several = false;
    struct atr_json_err whole = je;
    if (is_jsonl(a, json, len, &several))
        return add_lines(c, name, json, len, several, a, err);
    return parse_error(err, &s, &whole);
}

int atr_compare_add_json(struct atr_compare *c, const char *name, const char *json,
                         size_t len, struct atr_error *err)
{
    struct atr_arena a = ATR_ARENA_INIT;
    size_t n0 = c->n, seq0 = c->next_seq;
    int rc = add_text(c, name, json, len, &a, err);
    atr_arena_release(&a);
    if (rc < 0)
        c->n = n0, c->next_seq = seq0;   /* all or nothing */
    return rc;
}

int atr_compare_add_file(struct atr_compare *c, const char *path, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    struct atr_buf b = {NULL, 0, 0, ATR_COMPARE_MAX_FILE};
    int rc = atr_input_read_all(in, &b, ATR_COMPARE_MAX_FILE, err);
    if (rc == 0)
        rc = atr_compare_add_json(c, atr_input_name(in), b.data ? b.data : "", b.len, err);
    atr_buf_release(&b);
    atr_input_close(in);
    return rc;
}

/* ---- order and cuts ---- */

static const char *const policy_order[] = {
    "naive", "prefix-cache", "prefix-route", "compaction", "max-tokens", "learned", NULL,
};

static int policy_rank(const char *p)
{
    int i = 0;
    while (policy_order[i] && strcmp(policy_order[i], p) != 0)
        i++;
    return i;
}

struct sort_key {
    size_t group;    /* adding order of the target's first row */
    int rank;
    size_t seq;
    struct atr_compare_row row;
};

static int cmp_key(const void *pa, const void *pb)
{
    const struct sort_key *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    int byname = a->rank == policy_rank("") ? strcmp(a->row.policy, b->row.policy) : 0;
    if (byname)
        return byname;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static size_t group_of(const struct atr_compare *c, size_t i)
{
    size_t g = c->seq[i];
    for (size_t j = 0; j < c->n; j++)
        if (c->seq[j] < g && strcmp(c->rows[j].target, c->rows[i].target) == 0)
            g = c->seq[j];
    return g;
}

static void sort_rows(struct atr_compare *c)
{
    struct sort_key *k = xcalloc(c->n, sizeof *k);
    for (size_t i = 0; i < c->n; i++)
        k[i] = (struct sort_key){group_of(c, i), policy_rank(c->rows[i].policy), c->seq[i],
                                 c->rows[i]};
    qsort(k, c->n, sizeof *k, cmp_key);
    for (size_t i = 0; i < c->n; i++)
        c->rows[i] = k[i].row, c->seq[i] = k[i].seq;
    free(k);
}

static double cut(double naive, double v)
{
    if (!isfinite(naive) || !isfinite(v) || naive <= 0)
        return NAN;
    return (naive - v) / naive * 100.0;
}

/* After sorting, a target's first naive row is its baseline. */
static void fill_cuts(struct atr_compare *c)
{
    for (size_t i = 0; i < c->n; i++) {
        struct atr_compare_row *r = &c->rows[i];
        const struct atr_compare_row *base = NULL;
        for (size_t j = 0; j < c->n && !base; j++)
            if (strcmp(c->rows[j].policy, "naive") == 0 &&
                strcmp(c->rows[j].target, r->target) == 0)
                base = &c->rows[j];
        r->e2el_cut_pct = r->ttft_cut_pct = NAN;
        if (base && base != r) {
            r->e2el_cut_pct = cut(base->e2el_mean_ms, r->e2el_mean_ms);
            r->ttft_cut_pct = cut(base->ttft_mean_ms, r->ttft_mean_ms);
        }
    }
}

const struct atr_compare_row *atr_compare_rows(struct atr_compare *c, size_t *n)
{
    sort_rows(c);
    fill_cuts(c);
    *n = c->n;
    return c->rows;
}

/* ---- Markdown ---- */

enum { N_COLS = 16, CELL_MAX = 160, FIRST_SESSION_COL = 8, N_SESSION_COLS = 3 };

static const char *const col_head[N_COLS] = {
    "target", "policy", "avg TTFT ms", "p50 TTFT ms", "p99 TTFT ms", "avg E2E ms",
    "p50 E2E ms", "p99 E2E ms", "avg session s", "p50 session s", "p99 session s",
    "req/s", "out tok/s", "prefix hit", "E2E cut", "TTFT cut",
};

static bool has_session(const struct atr_compare_row *r)
{
    return isfinite(r->session_mean_ms) || isfinite(r->session_p50_ms) ||
           isfinite(r->session_p99_ms);
}

/* Whether any row has a session figure: only then are there session columns. */
static bool any_session(const struct atr_compare_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (has_session(&rows[i]))
            return true;
    return false;
}

/* A figure with decimals and a suffix, "-" when missing; never "-0.0". */
static void fmt_num(char *out, double v, int decimals, const char *suffix)
{
    if (!isfinite(v)) {
        strcpy(out, "-");
        return;
    }
    snprintf(out, CELL_MAX, "%.*f%s", decimals, v, suffix);
    if (out[0] == '-' && strspn(out + 1, "0.") == strcspn(out + 1, "%"))
        memmove(out, out + 1, strlen(out));
}

/* Text for a cell: '|' escaped, control bytes as spaces, cut at CELL_MAX. */
static void fmt_text(char *out, const char *s)
{
    size_t n = 0;
    for (; *s && n + 3 < CELL_MAX; s++) {
        if (*s == '|')
            out[n++] = '\\';
        out[n++] = (unsigned char)*s < 0x20 ? ' ' : *s;
    }
    out[n] = '\0';
}

static void row_cells(const struct atr_compare_row *r, char cells[N_COLS][CELL_MAX])
{
    fmt_text(cells[0], r->target);
    fmt_text(cells[1], r->policy);
    const double ms[6] = {r->ttft_mean_ms, r->ttft_p50_ms, r->ttft_p99_ms,
                          r->e2el_mean_ms, r->e2el_p50_ms, r->e2el_p99_ms};
    for (int i = 0; i < 6; i++)
        fmt_num(cells[2 + i], ms[i], 1, "");
    /* sessions last minutes: seconds read better than ms */
    const double ses[N_SESSION_COLS] = {r->session_mean_ms, r->session_p50_ms,
                                        r->session_p99_ms};
    for (int i = 0; i < N_SESSION_COLS; i++)
        fmt_num(cells[FIRST_SESSION_COL + i], ses[i] / 1000, 2, "");
    fmt_num(cells[11], r->request_throughput, 2, "");
    fmt_num(cells[12], r->output_throughput, 1, "");
    fmt_num(cells[13], r->prefix_hit_rate * 100.0, 1, "%");
    fmt_num(cells[14], r->e2el_cut_pct, 2, "%");
    fmt_num(cells[15], r->ttft_cut_pct, 2, "%");
}

/* The columns shown, in order, and their widths. */
struct layout {
    int col[N_COLS];
    int n;
    size_t w[N_COLS];
};

static void layout_init(struct layout *l, bool sessions)
{
    l->n = 0;
    for (int c = 0; c < N_COLS; c++) {
        bool session_col = c >= FIRST_SESSION_COL && c < FIRST_SESSION_COL + N_SESSION_COLS;
        if (sessions || !session_col)
            l->col[l->n++] = c;
        l->w[c] = strlen(col_head[c]);
    }
}

/* One table line; text columns left-aligned, figures right-aligned. */
static int put_line(struct atr_buf *b, char cells[N_COLS][CELL_MAX], const struct layout *l)
{
    int rc = 0;
    for (int i = 0; i < l->n; i++) {
        int c = l->col[i];
        rc |= atr_buf_printf(b, c < 2 ? "| %-*s " : "| %*s ", (int)l->w[c], cells[c]);
    }
    return rc | atr_buf_puts(b, "|\n");
}

static int put_rule(struct atr_buf *b, const struct layout *l)
{
    int rc = 0;
    for (int i = 0; i < l->n; i++) {
        int c = l->col[i];
        rc |= atr_buf_puts(b, "| ");
        for (size_t k = 0; k + (c >= 2) < l->w[c]; k++)
            rc |= atr_buf_putc(b, '-');
        rc |= atr_buf_puts(b, c >= 2 ? ": " : " ");
    }
    return rc | atr_buf_puts(b, "|\n");
}

int atr_compare_write_markdown(struct atr_buf *b, struct atr_compare *c)
{
    size_t n;
    const struct atr_compare_row *rows = atr_compare_rows(c, &n);
    char (*cells)[N_COLS][CELL_MAX] = xcalloc(n + 1, sizeof *cells);
    struct layout l;
    layout_init(&l, any_session(rows, n));
    for (int i = 0; i < N_COLS; i++)
        snprintf(cells[0][i], CELL_MAX, "%s", col_head[i]);
    for (size_t r = 0; r < n; r++) {
        row_cells(&rows[r], cells[r + 1]);
        for (int i = 0; i < N_COLS; i++)
            if (strlen(cells[r + 1][i]) > l.w[i])
                l.w[i] = strlen(cells[r + 1][i]);
    }
    int rc = put_line(b, cells[0], &l) | put_rule(b, &l);
    for (size_t r = 0; r < n; r++)
        rc |= put_line(b, cells[r + 1], &l);
    free(cells);
    return rc ? -1 : 0;
}

/* ---- JSON ---- */

/* One row object, compact, as the table's JSON form lists it; the session
 * keys only in a table with session figures. */
static void json_row(struct atr_jw *w, const struct atr_compare_row *r, bool sessions)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "file", r->file);
    atr_jw_kv_str(w, "kind", r->kind);
    atr_jw_kv_str(w, "target", r->target);
    atr_jw_kv_str(w, "policy", r->policy);
    atr_jw_kv_pyfloat(w, "mean_ttft_ms", r->ttft_mean_ms);
    atr_jw_kv_pyfloat(w, "p50_ttft_ms", r->ttft_p50_ms);
    atr_jw_kv_pyfloat(w, "p99_ttft_ms", r->ttft_p99_ms);
    atr_jw_kv_pyfloat(w, "mean_e2el_ms", r->e2el_mean_ms);
    atr_jw_kv_pyfloat(w, "p50_e2el_ms", r->e2el_p50_ms);
    atr_jw_kv_pyfloat(w, "p99_e2el_ms", r->e2el_p99_ms);
    if (sessions) {
        atr_jw_kv_pyfloat(w, "mean_session_ms", r->session_mean_ms);
        atr_jw_kv_pyfloat(w, "p50_session_ms", r->session_p50_ms);
        atr_jw_kv_pyfloat(w, "p99_session_ms", r->session_p99_ms);
    }
    atr_jw_kv_pyfloat(w, "request_throughput", r->request_throughput);
    atr_jw_kv_pyfloat(w, "output_throughput", r->output_throughput);
    atr_jw_kv_pyfloat(w, "prefix_cache_hit_rate", r->prefix_hit_rate);
    atr_jw_kv_pyfloat(w, "e2el_cut_pct", r->e2el_cut_pct);
    atr_jw_kv_pyfloat(w, "ttft_cut_pct", r->ttft_cut_pct);
    atr_jw_object_end(w);
}

int atr_compare_write_json(struct atr_buf *b, struct atr_compare *c)
{
    size_t n;
    const struct atr_compare_row *rows = atr_compare_rows(c, &n);
    bool sessions = any_session(rows, n);
    int rc = atr_buf_puts(b, n ? "[\n" : "[");
    for (size_t i = 0; i < n; i++) {       /* one row per line */
        struct atr_jw w;
        atr_jw_init(&w, b, ATR_JW_COMPACT);
        json_row(&w, &rows[i], sessions);
        rc |= atr_jw_finish(&w) | atr_buf_puts(b, i + 1 < n ? ",\n" : "\n");
    }
    return (rc | atr_buf_puts(b, "]\n")) ? -1 : 0;
}
