/* compare.c - benchmark result files (every kind bench/results.h reads)
 * into the rows of the policy comparison table, their cuts against naive,
 * and the table as Markdown or JSON. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/compare.h"

#include "bench/report.h"
#include "bench/results.h"
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

void atr_compare_row_of_summary(struct atr_compare_row *out, const char *target,
                                const char *policy, const struct atr_llm_summary *s,
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
        .kv_pins = NAN, .kv_pins_dropped = NAN, .evictions = NAN,   /* the engine's, not a summary's */
    };
    session_figures(&r, s, cfg);
    *out = r;
}

void atr_compare_add_summary(struct atr_compare *c, const char *target, const char *policy,
                             const struct atr_llm_summary *s,
                             const struct atr_llm_bench_config *cfg)
{
    struct atr_compare_row r;
    atr_compare_row_of_summary(&r, target, policy, s, cfg);
    atr_compare_add_row(c, &r);
}

/* ---- result files into rows (bench/results.h reads every kind) ---- */

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

/* A bench or ISO-Bench result: the variants of one commit side by side
 * ("MODEL@COMMIT"), each named by its variant (and agent), a failed run
 * with its outcome ("agent/claude_code (server_crashed)"). */
static void bench_names(struct atr_arena *a, const struct atr_bench_result *x,
                        const char *stem, struct atr_compare_row *r)
{
    r->target = x->commit ? atr_arena_printf(a, "%s@%s", x->model ? x->model : "unknown",
                                             x->commit)
                          : atr_arena_strdup(a, x->model ? x->model : "unknown");
    const char *v = x->variant ? x->variant : stem;
    r->policy = x->outcome == ATR_BENCH_SUCCESS
                    ? atr_arena_printf(a, "%s%s%s", v, x->agent ? "/" : "",
                                       x->agent ? x->agent : "")
                    : atr_arena_printf(a, "%s%s%s (%s)", v, x->agent ? "/" : "",
                                       x->agent ? x->agent : "",
                                       atr_bench_outcome_name(x->outcome));
}

/* One result as a row. several: the text held more than one (JSONL), so
 * a row without a policy of its own is named by its line too. */
static void add_result(struct atr_compare *c, const struct atr_bench_result *x, bool several)
{
    struct atr_compare_row *r = push_row(c);
    *r = (struct atr_compare_row){
        .ttft_mean_ms = x->ttft_mean_ms, .ttft_p50_ms = x->ttft_p50_ms,
        .ttft_p99_ms = x->ttft_p99_ms, .e2el_mean_ms = x->e2el_mean_ms,
        .e2el_p50_ms = x->e2el_p50_ms, .e2el_p99_ms = x->e2el_p99_ms,
        .request_throughput = x->req_s, .output_throughput = x->tok_s,
        .prefix_hit_rate = x->prefix_hit_rate, .session_mean_ms = x->session_mean_ms,
        .session_p50_ms = x->session_p50_ms, .session_p99_ms = x->session_p99_ms,
        .kv_pins = x->kv_pins, .kv_pins_dropped = x->kv_pins_dropped, .evictions = x->evictions,
    };
    struct atr_arena *a = &c->strings;
    /* the file as named, without the reader's "#LINE" */
    const char *hash = x->line ? strrchr(x->file, '#') : NULL;
    r->file = atr_arena_strndup(a, x->file, hash ? (size_t)(hash - x->file) : strlen(x->file));
    r->kind = atr_arena_strdup(a, x->kind);
    char *stem = stem_of(a, r->file);
    if (!x->target) {
        bench_names(a, x, stem, r);
        return;
    }
    r->target = atr_arena_strdup(a, x->target);
    r->policy = x->policy ? atr_arena_strdup(a, x->policy)
              : several   ? atr_arena_printf(a, "%s#%lu", stem, x->line)
                          : stem;
}

/* The "repeat" of the object that is text[0..len) (whole, or JSONL line
 * `line`): atr.repeat, else a top-level "repeat"; 0 without one. The
 * reader has accepted the text, so it parses. */
static unsigned repeat_of(const char *text, size_t len, unsigned long line)
{
    const char *p = text, *end = text + len;
    for (unsigned long l = 1; line && l < line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    if (line) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        end = nl ? nl : end;
    }
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *o = NULL;
    struct atr_json_err jerr;
    struct atr_json_opts opts = {.allow_nonfinite = true};
    int64_t k = 0;
    if (atr_json_parse(&a, p, (size_t)(end - p), &opts, &o, &jerr) == 0 &&
        !atr_json_get_i64(atr_json_get(o, "atr"), "repeat", &k))
        atr_json_get_i64(o, "repeat", &k);
    atr_arena_release(&a);
    return k > 0 && k <= UINT32_MAX ? (unsigned)k : 0;
}

int atr_compare_add_json(struct atr_compare *c, const char *name, const char *json,
                         size_t len, struct atr_error *err)
{
    struct atr_bench_set s = {0};
    int rc = atr_bench_read_text(&s, name, json, len, err);
    for (size_t i = 0; rc == 0 && i < s.n; i++) {   /* adding is all or nothing */
        add_result(c, &s.v[i], s.n > 1);
        c->rows[c->n - 1].repeat = repeat_of(json, len, s.v[i].line);
    }
    atr_bench_set_release(&s);
    return rc;
}

/* A folder: its result files, as `atr bench report` reads one. */
static int add_dir(struct atr_compare *c, const char *dir, struct atr_error *err)
{
    char **paths;
    size_t n;
    int rc = atr_bench_dir_files(dir, &paths, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = atr_compare_add_file(c, paths[i], err);
    atr_bench_dir_files_free(paths, n);
    return rc;
}

int atr_compare_add_file(struct atr_compare *c, const char *path, struct atr_error *err)
{
    struct stat st;
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return add_dir(c, path, err);
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    struct atr_buf b = {NULL, 0, 0, ATR_BENCH_MAX_FILE};
    int rc = atr_input_read_all(in, &b, ATR_BENCH_MAX_FILE, err);
    if (rc == 0)
        rc = atr_compare_add_json(c, atr_input_name(in), b.data ? b.data : "", b.len, err);
    atr_buf_release(&b);
    atr_input_close(in);
    return rc;
}

bool atr_compare_has_repeats(const struct atr_compare *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].repeat)
            return true;
    return false;
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
    /* numbers in names by value: a sweep's "run 2: ..." before "run 10: ..." */
    int byname = a->rank == policy_rank("") ? strverscmp(a->row.policy, b->row.policy) : 0;
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

enum {
    N_COLS = 19, CELL_MAX = 160, FIRST_SESSION_COL = 8, N_SESSION_COLS = 3,
    FIRST_KV_COL = 14, N_KV_COLS = 3,
};

static const char *const col_head[N_COLS] = {
    "target", "policy", "avg TTFT ms", "p50 TTFT ms", "p99 TTFT ms", "avg E2E ms",
    "p50 E2E ms", "p99 E2E ms", "avg session s", "p50 session s", "p99 session s",
    "req/s", "out tok/s", "prefix hit", "kv pins", "pins dropped", "evictions",
    "E2E cut", "TTFT cut",
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

/* Whether any row ran with the retention knob (--kv-retain): only then are
 * there its columns, so a table without it stays as it was. */
static bool any_kv(const struct atr_compare_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].kv_pins > 0)   /* NAN compares false; a zeroed row adds no columns */
            return true;
    return false;
}

/* A figure with decimals and a suffix, "-" when missing; never "-0.0". */
static void fmt_num(char *out, double v, int decimals, const char *suffix)
{
    if (!isfinite(v)) {
        strcpy(out, "n/a");
        return;
    }
    snprintf(out, CELL_MAX, "%.*f%s", decimals, v, suffix);
    if (out[0] == '-' && strspn(out + 1, "0.") == strcspn(out + 1, "%"))
        memmove(out, out + 1, strlen(out));
}

/* Text for a cell, escaped as bench report's Markdown is (a target or
 * policy name comes from a result file: no raw HTML, no '|'), cut at
 * CELL_MAX before an entity it would split. */
static void fmt_text(char *out, const char *s)
{
    struct atr_buf b = ATR_BUF_INIT;
    atr_md_text(&b, s);
    size_t n = b.len < CELL_MAX - 1 ? b.len : CELL_MAX - 1;
    const char *amp = n ? memrchr(b.data, '&', n) : NULL;
    if (amp && !memchr(amp, ';', n - (size_t)(amp - b.data)))
        n = (size_t)(amp - b.data);
    if (n)
        memcpy(out, b.data, n);
    out[n] = '\0';
    atr_buf_release(&b);
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
    /* a run without the knob shows its evictions beside those with it:
     * the baseline the pins' cost is read against */
    const double kv[N_KV_COLS] = {r->kv_pins, r->kv_pins_dropped, r->evictions};
    for (int i = 0; i < N_KV_COLS; i++)
        fmt_num(cells[FIRST_KV_COL + i], kv[i], 0, "");
    fmt_num(cells[17], r->e2el_cut_pct, 2, "%");
    fmt_num(cells[18], r->ttft_cut_pct, 2, "%");
}

/* The columns shown, in order, and their widths. */
struct layout {
    int col[N_COLS];
    int n;
    size_t w[N_COLS];
};

static void layout_init(struct layout *l, bool sessions, bool kv)
{
    l->n = 0;
    for (int c = 0; c < N_COLS; c++) {
        bool session_col = c >= FIRST_SESSION_COL && c < FIRST_SESSION_COL + N_SESSION_COLS;
        bool kv_col = c >= FIRST_KV_COL && c < FIRST_KV_COL + N_KV_COLS;
        if ((sessions || !session_col) && (kv || !kv_col))
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
    layout_init(&l, any_session(rows, n), any_kv(rows, n));
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
static void json_row(struct atr_jw *w, const struct atr_compare_row *r, bool sessions, bool kv)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "file", r->file);
    atr_jw_kv_str(w, "kind", r->kind);
    atr_jw_kv_str(w, "target", r->target);
    atr_jw_kv_str(w, "policy", r->policy);
    if (r->repeat)
        atr_jw_kv_uint(w, "repeat", r->repeat);
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
    if (kv) {
        atr_jw_kv_pyfloat(w, "kv_pins", r->kv_pins);
        atr_jw_kv_pyfloat(w, "kv_pins_dropped", r->kv_pins_dropped);
        atr_jw_kv_pyfloat(w, "evictions", r->evictions);
    }
    atr_jw_kv_pyfloat(w, "e2el_cut_pct", r->e2el_cut_pct);
    atr_jw_kv_pyfloat(w, "ttft_cut_pct", r->ttft_cut_pct);
    atr_jw_object_end(w);
}

int atr_compare_write_json(struct atr_buf *b, struct atr_compare *c)
{
    size_t n;
    const struct atr_compare_row *rows = atr_compare_rows(c, &n);
    bool sessions = any_session(rows, n), kv = any_kv(rows, n);
    int rc = atr_buf_puts(b, n ? "[\n" : "[");
    for (size_t i = 0; i < n; i++) {       /* one row per line */
        struct atr_jw w;
        atr_jw_init(&w, b, ATR_JW_COMPACT);
        json_row(&w, &rows[i], sessions, kv);
        rc |= atr_jw_finish(&w) | atr_buf_puts(b, i + 1 < n ? ",\n" : "\n");
    }
    return (rc | atr_buf_puts(b, "]\n")) ? -1 : 0;
}
