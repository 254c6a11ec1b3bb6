/* html.c - `atr report`'s inputs: each path recognised by content (a
 * folder of bench results, a result JSON with vLLM's figures, traces in any
 * format the readers sniff, an `atr sweep` result), hashed for the data appendix and turned into
 * what html-write.c renders. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "json/writer.h"
#include "report/compare.h"
#include "report/html-impl.h"
#include "report/html.h"
#include "report/stats.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/input.h"

#define RESULT_MAX ((size_t)64 << 20)     /* largest result JSON read */
#define HASH_DEPTH 3                      /* folder levels hashed */

struct atr_html *atr_html_new(void)
{
    return xcalloc(1, sizeof(struct atr_html));
}

void atr_html_set_warn(struct atr_html *h, void (*warn)(const char *msg))
{
    h->warn = warn;
}

void atr_html_free(struct atr_html *h)
{
    if (!h)
        return;
    atr_arena_release(&h->arena);
    atr_compare_free(h->policies);
    free(h->inputs);
    free(h->results);
    free(h->sweeps);
    free(h->replays);
    atr_buf_release(&h->trace_rows);
    atr_buf_release(&h->trace_json);
    atr_buf_release(&h->timeline_json);
    atr_buf_release(&h->labels_json);
    free(h->label_keys);
    free(h->label_vals);
    atr_html_shapes_free(h->shapes);
    atr_html_reqs_free(h->reqs);
    atr_html_router_free(h->router);
    atr_bench_report_free(h->bench);
    free(h);
}

/* ---- size and content hash ---- */

static int hash_file(XXH3_state_t *st, const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        XXH3_128bits_update(st, chunk, n);
        *size += n;
    }
    int rc = ferror(f) ? -1 : 0;
    fclose(f);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder: each regular file's relative name and bytes, by name, down to
 * HASH_DEPTH levels, so the hash names the folder's content. */
static int hash_dir(XXH3_state_t *st, const char *dir, int depth, uint64_t *size)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap)
            names = xrealloc(names, (cap = cap ? cap * 2 : 16) * sizeof *names);
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *p = xasprintf("%s/%s", dir, names[i]);
        struct stat sb;
        XXH3_128bits_update(st, names[i], strlen(names[i]) + 1);
        if (rc == 0 && stat(p, &sb) == 0) {
            if (S_ISREG(sb.st_mode))
                rc = hash_file(st, p, size);
            else if (S_ISDIR(sb.st_mode) && depth > 1)
                rc = hash_dir(st, p, depth - 1, size);
        }
        free(p);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int hash_path(struct atr_html_input *in, bool dir, struct atr_error *err)
{
    XXH3_state_t *st = XXH3_createState();
    XXH3_128bits_reset(st);
    in->size = 0;
    int rc = dir ? hash_dir(st, in->path, HASH_DEPTH, &in->size)
                 : hash_file(st, in->path, &in->size);
    XXH128_hash_t hv = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    if (rc < 0)
        return atr_error_set(err, "%s: cannot read it", in->path);
    snprintf(in->hash, sizeof in->hash, "%016llx%016llx", (unsigned long long)hv.high64,
             (unsigned long long)hv.low64);
    return 0;
}

static struct atr_html_input *add_input(struct atr_html *h, const char *path,
                                        enum atr_html_kind kind)
{
    if (h->n_inputs == h->cap_inputs) {
        h->cap_inputs = h->cap_inputs ? h->cap_inputs * 2 : 8;
        h->inputs = xrealloc(h->inputs, h->cap_inputs * sizeof *h->inputs);
    }
    struct atr_html_input *in = &h->inputs[h->n_inputs++];
    *in = (struct atr_html_input){.path = atr_arena_strdup(&h->arena, path), .kind = kind};
    return in;
}

/* ---- bench folders ---- */

/* The group name `atr bench report` would give: the folder's name, or its
 * parent's when it is a results/ folder. */
static const char *group_name(struct atr_html *h, const char *dir)
{
    char *full = realpath(dir, NULL);
    const char *p = full ? full : dir;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && p[start - 1] != '/')
        start--;
    if (len - start == 7 && memcmp(p + start, "results", 7) == 0 && start > 1) {
        len = start - 1;
        for (start = len; start > 0 && p[start - 1] != '/'; start--)
            ;
    }
    const char *name = atr_arena_strndup(&h->arena, p + start, len - start);
    free(full);
    return name;
}

static int add_bench(struct atr_html *h, const char *dir, struct atr_error *err)
{
    struct atr_bench_set s = {0};
    if (atr_bench_read_dir(&s, dir, err) < 0) {
        atr_bench_set_release(&s);
        return -1;
    }
    if (!h->bench)
        h->bench = atr_bench_report_new(5);
    size_t n = s.n;
    atr_bench_report_add(h->bench, group_name(h, dir), &s);
    atr_bench_set_release(&s);
    h->bench_groups++;
    struct atr_html_input *in = add_input(h, dir, ATR_HTML_BENCH);
    in->detail = atr_arena_printf(&h->arena, "bench folder, %zu result%s", n, n == 1 ? "" : "s");
    return hash_path(in, true, err);
}

/* ---- tool replay folders ---- */

static int add_replay(struct atr_html *h, const char *dir, struct atr_error *err)
{
    struct atr_html_replay r;
    if (atr_html_read_replay(h, dir, &r, err) < 0)
        return -1;
    if (h->n_replays == h->cap_replays) {
        h->cap_replays = h->cap_replays ? h->cap_replays * 2 : 4;
        h->replays = xrealloc(h->replays, h->cap_replays * sizeof *h->replays);
    }
    struct atr_html_input *in = add_input(h, dir, ATR_HTML_REPLAY);
    r.name = in->path;
    h->replays[h->n_replays++] = r;
    const struct atr_json *c = atr_json_get(r.summary, "configs");
    size_t n = 0;
    for (const struct atr_json *e = c ? c->u.kids.first : NULL; e; e = e->next)
        n++;
    in->detail = atr_arena_printf(&h->arena, "tool replay, %zu config%s, %zu step line%s", n,
                                  n == 1 ? "" : "s", r.n_steps, r.n_steps == 1 ? "" : "s");
    return hash_path(in, true, err);
}

/* ---- result JSON ---- */

/* The keys that make an object a result: vLLM's figures, of which older
 * vLLM files lack some (request_throughput). */
static const char *const result_keys[] = {"request_throughput", "mean_ttft_ms", "median_ttft_ms"};
#define N_RESULT_KEYS (sizeof result_keys / sizeof result_keys[0])

/* Whether the first bytes look like a --save-result object: '{' first and
 * one of result_keys, quoted, among them. */
static bool looks_like_result(const char *head, size_t len)
{
    if (atr_sniff_first(head, len, NULL) != '{')
        return false;
    for (size_t i = 0; i < N_RESULT_KEYS; i++) {
        char key[40];
        int n = snprintf(key, sizeof key, "\"%s\"", result_keys[i]);
        if (memmem(head, len, key, (size_t)n))
            return true;
    }
    return false;
}

static bool is_result(const struct atr_json *root)
{
    double v;
    for (size_t i = 0; i < N_RESULT_KEYS; i++)
        if (atr_json_get_num(root, result_keys[i], &v))
            return true;
    return false;
}

/* src's whole text parsed into h's arena (src is closed), or NULL when it
 * is not one JSON document within RESULT_MAX bytes. */
static struct atr_json *read_json(struct atr_html *h, struct atr_input *src,
                                  struct atr_buf *text)
{
    struct atr_error ignored;
    struct atr_json *root = NULL;
    struct atr_json_err jerr;
    text->max = RESULT_MAX + 1;
    if (atr_input_read_all(src, text, RESULT_MAX, &ignored) < 0 ||
        atr_json_parse(&h->arena, text->data ? text->data : "", text->len, NULL, &root,
                       &jerr) < 0)
        root = NULL;
    atr_input_close(src);
    return root;
}

/* The result's row of the Policies table, as `atr compare` reads it; a
 * text compare does not take (not a benchmark result) adds no row. */
static void add_policy_row(struct atr_html *h, const char *path, const struct atr_buf *text)
{
    struct atr_error ignored;
    if (!h->policies)
        h->policies = atr_compare_new();
    (void)atr_compare_add_json(h->policies, path, text->data ? text->data : "", text->len,
                               &ignored);
}

/* 0 with the result added, 1 when the file is not one JSON object with a
 * number under one of result_keys (a trace file may mention the key: the
 * caller reads it as traces then), -1 when it cannot be hashed. */
static int add_result(struct atr_html *h, const char *path, struct atr_input *src,
                      struct atr_error *err)
{
    struct atr_buf text = ATR_BUF_INIT;
    struct atr_json *root = read_json(h, src, &text);
    if (!root || !is_result(root)) {
        atr_buf_release(&text);
        return 1;
    }
    add_policy_row(h, path, &text);
    atr_buf_release(&text);
    if (h->n_results == h->cap_results) {
        h->cap_results = h->cap_results ? h->cap_results * 2 : 4;
        h->results = xrealloc(h->results, h->cap_results * sizeof *h->results);
    }
    struct atr_html_input *in = add_input(h, path, ATR_HTML_RESULT);
    h->results[h->n_results++] = (struct atr_html_result){in->path, root};
    const struct atr_json *atr = atr_json_get(root, "atr");
    in->detail = atr && atr_json_is(atr, ATR_JSON_OBJECT) ? "result (atr)" : "result (vLLM)";
    return hash_path(in, false, err);
}

/* ---- sweep JSON ---- */

#define SWEEP_FORMAT "atr-sweep/1"

/* Whether the first bytes may be an `atr sweep` result: '{' first and the
 * format's name, quoted, among them (atr writes "format" first). */
static bool looks_like_sweep(const char *head, size_t len)
{
    static const char name[] = "\"" SWEEP_FORMAT "\"";
    return atr_sniff_first(head, len, NULL) == '{' && memmem(head, len, name, sizeof name - 1);
}

/* 0 with the sweep added, 1 when the file is not one JSON object with
 * "format": "atr-sweep/1" (the caller tries the other kinds), -1 when it
 * is one but its runs are not an array of objects, or it cannot be
 * hashed. */
static int add_sweep(struct atr_html *h, const char *path, struct atr_input *src,
                     struct atr_error *err)
{
    struct atr_buf text = ATR_BUF_INIT;
    struct atr_json *root = read_json(h, src, &text);
    atr_buf_release(&text);
    const char *format = root ? atr_json_get_str(root, "format", NULL) : NULL;
    if (!format || strcmp(format, SWEEP_FORMAT) != 0)
        return 1;
    const struct atr_json *runs = atr_json_get(root, "runs");
    if (!runs || !atr_json_is(runs, ATR_JSON_ARRAY))
        return atr_error_set(err, "%s: malformed %s result: \"runs\" is not an array", path,
                             SWEEP_FORMAT);
    size_t n = 0;
    for (const struct atr_json *r = runs->u.kids.first; r; r = r->next, n++)
        if (!atr_json_is(r, ATR_JSON_OBJECT))
            return atr_error_set(err, "%s: malformed %s result: run %zu is not an object",
                                 path, SWEEP_FORMAT, n + 1);
    if (h->n_sweeps == h->cap_sweeps) {
        h->cap_sweeps = h->cap_sweeps ? h->cap_sweeps * 2 : 4;
        h->sweeps = xrealloc(h->sweeps, h->cap_sweeps * sizeof *h->sweeps);
    }
    struct atr_html_input *in = add_input(h, path, ATR_HTML_SWEEP);
    h->sweeps[h->n_sweeps++] = (struct atr_html_sweep){in->path, root};
    in->detail = atr_arena_printf(&h->arena, "sweep, %zu run%s", n, n == 1 ? "" : "s");
    return hash_path(in, false, err);
}

/* ---- per-request records ---- */

/* A --requests-out file (html-results.c reads it); src is closed. */
static int add_requests(struct atr_html *h, const char *path, struct atr_input *src,
                        struct atr_error *err)
{
    const char *detail;
    if (atr_html_read_requests(h, path, src, &detail, err) < 0)
        return -1;
    struct atr_html_input *in = add_input(h, path, ATR_HTML_REQUESTS);
    in->detail = detail;
    return hash_path(in, false, err);
}

/* ---- router model and evaluations (html-router.c) ---- */

/* 0 with it added, 1 when path is not one, -1 on a malformed one. */
static int add_router(struct atr_html *h, const char *path, struct atr_error *err)
{
    bool model;
    const char *detail = NULL;
    int rc = atr_html_read_router(h, path, &model, &detail, err);
    if (rc != 0)
        return rc;
    struct atr_html_input *in =
        add_input(h, path, model ? ATR_HTML_ROUTER_MODEL : ATR_HTML_ROUTER_EVAL);
    in->detail = detail;
    return hash_path(in, false, err);
}

/* ---- traces ---- */

/* Duration: last end minus first start where steps have times, else the
 * summed durations, else -1. */
static int64_t trace_duration(const struct atr_trace *t)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN, sum = 0;
    bool timed = false, any = false;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *s = &t->steps[i];
        int64_t d = s->dur_ms == ATR_UNSET ? 0 : s->dur_ms;
        if (s->dur_ms != ATR_UNSET) {
            sum += d;
            any = true;
        }
        if (s->t_ms == ATR_UNSET)
            continue;
        timed = true;
        lo = s->t_ms < lo ? s->t_ms : lo;
        hi = s->t_ms + d > hi ? s->t_ms + d : hi;
    }
    return timed ? hi - lo : any ? sum : -1;
}

/* Prefix reuse as `atr stats` defines it (prefix_reuse.within), per trace. */
static double trace_reuse(const struct atr_trace *t)
{
    struct atr_stats *st = atr_stats_new(NULL);
    struct atr_stats_summary sum;
    atr_stats_add(st, t);
    atr_stats_summarize(st, &sum);
    double r = sum.within.ratio;
    atr_stats_free(st);
    return r;
}

static struct atr_html_figures figures(const struct atr_trace *t)
{
    struct atr_html_figures f = {.dur = trace_duration(t), .reuse = trace_reuse(t)};
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *s = &t->steps[i];
        if (s->kind == ATR_STEP_TOOL) {
            f.tool++;
            continue;
        }
        f.llm++;
        f.in += s->input_tokens == ATR_UNSET ? 0 : s->input_tokens;
        f.out += s->output_tokens == ATR_UNSET ? 0 : s->output_tokens;
    }
    return f;
}

/* A tool step's timeline label, "bash: pytest -x", cut at
 * ATR_HTML_LABEL_MAX bytes on a UTF-8 boundary. */
static size_t tool_label(const struct atr_step *s, char *out, size_t cap)
{
    const char *what = s->command ? s->command : s->command_head ? s->command_head
                     : s->action ? s->action : s->path ? s->path : s->url ? s->url : "";
    snprintf(out, cap, "%s: %s", s->tool ? s->tool : "tool", what);
    size_t n = strlen(out);
    if (n == cap - 1) {       /* cut: drop a partial UTF-8 sequence */
        size_t k = n;
        while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80)
            k--;
        if (k > 0 && (unsigned char)out[k - 1] >= 0xc0)
            n = k - 1;
    }
    return n;
}

static int64_t known(int64_t v)
{
    return v == ATR_UNSET ? 0 : v;
}

static size_t label_slot(const struct atr_html *h, uint64_t key)
{
    size_t mask = h->label_slots - 1, i = (size_t)(key >> 7) & mask;
    while (h->label_vals[i] && h->label_keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

static void labels_grow(struct atr_html *h)
{
    uint64_t *keys = h->label_keys;
    uint32_t *vals = h->label_vals;
    size_t old = h->label_slots;
    h->label_slots = old ? old * 2 : 1024;
    h->label_keys = xcalloc(h->label_slots, sizeof *h->label_keys);
    h->label_vals = xcalloc(h->label_slots, sizeof *h->label_vals);
    for (size_t i = 0; i < old; i++)
        if (vals[i]) {
            size_t k = label_slot(h, keys[i]);
            h->label_keys[k] = keys[i];
            h->label_vals[k] = vals[i];
        }
    free(keys);
    free(vals);
}

/* The index of label in the report's label table, added when new. Labels
 * are told apart by their 64-bit hash (a collision would show one label
 * in place of another in a tooltip: harmless, and unlikely at 2^-64). */
static uint32_t label_index(struct atr_html *h, const char *label, size_t len)
{
    if ((size_t)(h->n_labels + 1) * 4 > h->label_slots * 3)
        labels_grow(h);
    uint64_t key = XXH3_64bits(label, len);
    size_t k = label_slot(h, key);
    if (!h->label_vals[k]) {
        if (h->n_labels)
            atr_buf_putc(&h->labels_json, ',');
        atr_json_write_string(&h->labels_json, label, len);
        h->label_keys[k] = key;
        h->label_vals[k] = ++h->n_labels;
    }
    return h->label_vals[k] - 1;
}

/* The steps as one flat array: an llm step is 0, gap, duration, input
 * tokens, output tokens; a tool step is 1, gap, duration, label index.
 * gap is the step's start minus the previous step's end in ms (0 for
 * back-to-back steps, which most are); a step without a time starts
 * where the previous one ended. Flat and gap-coded because at 10 000
 * traces the timelines are most of the report. A step of a sub-agent
 * (atr-trace/1.1 "agent") is 2 (llm) or 3 (tool) with the same fields,
 * then its agent's label index: the explorer draws each agent in a lane
 * of its own, so parallel branches show side by side (chains are
 * unchanged). */
static void timeline_json(struct atr_html *h, const struct atr_trace *t)
{
    char label[ATR_HTML_LABEL_MAX + 1];
    int64_t at = 0, base = INT64_MIN;
    struct atr_jw jw, *w = &jw;
    if (h->traces > 0)
        atr_buf_putc(&h->timeline_json, ',');
    atr_jw_init(w, &h->timeline_json, ATR_JW_COMPACT);
    atr_jw_array_begin(w);
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *s = &t->steps[i];
        if (s->t_ms != ATR_UNSET && base == INT64_MIN)
            base = s->t_ms;
        int64_t start = s->t_ms != ATR_UNSET ? s->t_ms - base : at;
        atr_jw_int(w, (s->kind == ATR_STEP_LLM ? 0 : 1) + (s->agent ? 2 : 0));
        atr_jw_int(w, start - at);
        atr_jw_int(w, known(s->dur_ms));
        at = start + known(s->dur_ms);
        if (s->kind == ATR_STEP_LLM) {
            atr_jw_int(w, known(s->input_tokens));
            atr_jw_int(w, known(s->output_tokens));
        } else {
            atr_jw_uint(w, label_index(h, label, tool_label(s, label, sizeof label)));
        }
        if (s->agent)
            atr_jw_uint(w, label_index(h, s->agent, strlen(s->agent)));
    }
    atr_jw_array_end(w);
    atr_jw_finish(w);
}

static void trace_json(struct atr_html *h, const char *file, const struct atr_trace *t,
                       const struct atr_html_figures *f)
{
    struct atr_jw w;
    if (h->traces > 0)
        atr_buf_putc(&h->trace_json, ',');
    atr_jw_init(&w, &h->trace_json, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "file", file);
    atr_jw_kv_str(&w, "src", t->source);
    atr_jw_kv_str(&w, "id", t->trace_id);
    atr_jw_kv_uint(&w, "steps", t->n_steps);
    atr_jw_kv_uint(&w, "llm", f->llm);
    atr_jw_kv_uint(&w, "tool", f->tool);
    atr_jw_kv_int(&w, "in", f->in);
    atr_jw_kv_int(&w, "out", f->out);
    if (f->dur >= 0)
        atr_jw_kv_int(&w, "dur", f->dur);
    else
        atr_jw_kv_null(&w, "dur");
    atr_jw_kv_fixed_trim(&w, "reuse", f->reuse, 4);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
}

static int add_traces(struct atr_html *h, const char *path, struct atr_input *src,
                      struct atr_error *err)
{
    struct atr_read_opts opts = {.warn = h->warn};
    struct atr_reader *r = atr_reader_open_input(src, NULL, &opts, err);
    if (!r)
        return atr_error_set(err, "%s: not a trace file, result JSON or bench folder", path);
    struct atr_trace t = ATR_TRACE_INIT;
    size_t rows_len = h->trace_rows.len, json_len = h->trace_json.len;
    size_t tl_len = h->timeline_json.len;
    uint64_t n = 0, traces = h->traces, steps = h->steps;
    int rc;
    while ((rc = atr_reader_next(r, &t, err)) == 1) {
        struct atr_html_figures f = figures(&t);
        if (h->traces < ATR_HTML_STATIC_ROWS)
            atr_html_trace_row(&h->trace_rows, h->traces, path, &t, &f);
        trace_json(h, path, &t, &f);
        timeline_json(h, &t);
        atr_html_shapes_add(h, &t);   /* not undone on error: the command fails then */
        h->traces++;
        h->steps += t.n_steps;
        n++;
    }
    if (rc < 0) {             /* all or nothing: drop this file's rows */
        h->trace_rows.len = rows_len;
        h->trace_json.len = json_len;
        if (h->trace_rows.data)
            h->trace_rows.data[rows_len] = '\0';
        if (h->trace_json.data)
            h->trace_json.data[json_len] = '\0';
        h->timeline_json.len = tl_len;
        if (h->timeline_json.data)
            h->timeline_json.data[tl_len] = '\0';
        h->traces = traces;
        h->steps = steps;
    }
    struct atr_html_input *in = rc < 0 ? NULL : add_input(h, path, ATR_HTML_TRACES);
    if (in)
        in->detail = atr_arena_printf(&h->arena, "%s traces, %llu", atr_reader_format(r),
                                      (unsigned long long)n);
    atr_trace_release(&t);
    atr_reader_close(r);
    return in ? hash_path(in, false, err) : -1;
}

int atr_html_add(struct atr_html *h, const char *path, struct atr_error *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0)
        return atr_error_set(err, "%s: no such file or folder", path);
    if (S_ISDIR(sb.st_mode))
        return atr_html_is_replay_dir(path) ? add_replay(h, path, err)
                                            : add_bench(h, path, err);
    struct atr_input *src = atr_input_open(path, err);
    if (!src)
        return -1;
    const char *head;
    ssize_t n = atr_input_peek(src, &head, 1 << 16, err);
    if (n < 0) {
        atr_input_close(src);
        return -1;
    }
    if (atr_html_looks_like_requests(head, (size_t)n))
        return add_requests(h, path, src, err);
    if (atr_html_router_sniff(head, (size_t)n)) {   /* src stays unread: peeked only */
        int rc = add_router(h, path, err);
        if (rc <= 0) {
            atr_input_close(src);
            return rc;
        }
    }
    if (looks_like_sweep(head, (size_t)n)) {
        int rc = add_sweep(h, path, src, err);
        if (rc <= 0)
            return rc;
        if (!(src = atr_input_open(path, err)))   /* read again, as another kind */
            return -1;
        if ((n = atr_input_peek(src, &head, 1 << 16, err)) < 0) {
            atr_input_close(src);
            return -1;
        }
    }
    if (looks_like_result(head, (size_t)n)) {
        int rc = add_result(h, path, src, err);
        if (rc <= 0)
            return rc;
        if (!(src = atr_input_open(path, err)))   /* read again, as traces */
            return -1;
    }
    return add_traces(h, path, src, err);
}
