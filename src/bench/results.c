/* results.c - reading benchmark result files (results.h): which tool wrote
 * a file is told by its keys, and failures found in the wild are mapped to
 * one outcome by their status and error text. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include "bench/results.h"
#include "json/json.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/input.h"

static const char *const outcome_names[ATR_BENCH_OUTCOMES] = {
    "success", "no_metrics", "server_crashed", "startup_timeout",
    "benchmark_timeout", "oom", "patch_failed", "other_error",
};
static const char *const status_names[] = {"success", "error", "timeout"};

const char *atr_bench_outcome_name(enum atr_bench_outcome o)
{
    return outcome_names[o];
}

const char *atr_bench_status_name(enum atr_bench_status s)
{
    return status_names[s];
}

static void result_free(struct atr_bench_result *r)
{
    free(r->file);
    free(r->commit);
    free(r->model);
    free(r->variant);
    free(r->agent);
    free(r->error);
}

void atr_bench_set_release(struct atr_bench_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        result_free(&s->v[i]);
    free(s->v);
    *s = (struct atr_bench_set){0};
}

/* ---- one object ---- */

struct ctx {
    const char *name;        /* the file, for messages */
    struct atr_error *err;
    unsigned long line0;     /* the file's line of the document's first line (JSONL) */
};

static unsigned long line_of(const struct ctx *c, const struct atr_json *at)
{
    return c->line0 + at->line - 1;
}

static int bad(const struct ctx *c, const struct atr_json *at, const char *what)
{
    return atr_error_at(c->err, c->name, line_of(c, at), at->col, "%s", what);
}

/* A figure: absent or null is NAN; any other non-number is an error. */
static int num(const struct ctx *c, const struct atr_json *obj, const char *key, double *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    *out = NAN;
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER)
        return atr_error_at(c->err, c->name, line_of(c, v), v->col,
                            "expected a number as \"%s\"", key);
    *out = v->u.num;
    return 0;
}

/* A string member copied, or NULL when absent or null. */
static int str(const struct ctx *c, const struct atr_json *obj, const char *key, char **out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    *out = NULL;
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_STRING)
        return atr_error_at(c->err, c->name, line_of(c, v), v->col,
                            "expected a string as \"%s\"", key);
    *out = xstrndup(v->u.str.s, v->u.str.len);
    return 0;
}

static bool has_latency(const struct atr_json *o, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++) {
        const struct atr_json *v = atr_json_get(o, keys[i]);
        if (atr_json_is(v, ATR_JSON_NUMBER))
            return true;
    }
    return false;
}

static bool says(const char *text, const char *what)
{
    return text && strcasestr(text, what);
}

bool atr_bench_says_oom(const char *text)
{
    return says(text, "out of memory") || says(text, "outofmemory") || says(text, "oom-kill")
           || says(text, "oomkilled");
}

/* ISO-Bench's error texts ("Server crashed after applying patch", "No
 * metrics ...") to an outcome; the OOM line may sit in the console tail. */
static enum atr_bench_outcome outcome_of(enum atr_bench_status st, const char *error,
                                         const char *raw)
{
    if (st == ATR_BENCH_OK)
        return ATR_BENCH_SUCCESS;
    if (atr_bench_says_oom(error) || (st == ATR_BENCH_ERROR && atr_bench_says_oom(raw)))
        return ATR_BENCH_OOM;
    if (says(error, "no metrics"))
        return ATR_BENCH_NO_METRICS;
    if (says(error, "crash") || says(error, "exited") || says(error, "died"))
        return ATR_BENCH_SERVER_CRASHED;
    if (says(error, "start") || says(error, "ready"))
        return ATR_BENCH_STARTUP_TIMEOUT;
    if (st == ATR_BENCH_TIMEOUT || says(error, "timeout") || says(error, "timed out"))
        return ATR_BENCH_BENCHMARK_TIMEOUT;
    if (says(error, "patch"))
        return ATR_BENCH_PATCH_FAILED;
    return ATR_BENCH_OTHER_ERROR;
}

static int word_index(const struct ctx *c, const struct atr_json *v,
                      const char *const *words, size_t n, const char *what)
{
    if (atr_json_is(v, ATR_JSON_STRING))
        for (size_t i = 0; i < n; i++)
            if (strcmp(v->u.str.s, words[i]) == 0)
                return (int)i;
    return bad(c, v, what);
}

static const char *const iso_latency[] = {
    "ttft_mean_ms", "ttft_median_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_median_ms",
    "tpot_p99_ms", NULL,
};

/* atr's and ISO-Bench's files: status, error, metrics {...}. */
static int read_iso(const struct ctx *c, const struct atr_json *o, struct atr_bench_result *r)
{
    const struct atr_json *st = atr_json_get(o, "status");
    if (!st)
        return bad(c, o, "expected \"status\" (success, error or timeout)");
    int s = word_index(c, st, status_names, 3, "expected status success, error or timeout");
    if (s < 0)
        return -1;
    r->status = (enum atr_bench_status)s;
    char *raw = NULL;
    if (str(c, o, "human_commit", &r->commit) || str(c, o, "model", &r->model)
        || str(c, o, "error", &r->error) || str(c, o, "variant", &r->variant)
        || str(c, o, "agent", &r->agent) || str(c, o, "raw_output", &raw))
        return -1;
    const struct atr_json *oc = atr_json_get(o, "outcome");
    r->kind = oc ? "atr" : "iso-bench";
    int out = oc ? word_index(c, oc, outcome_names, ATR_BENCH_OUTCOMES,
                              "expected a known outcome (docs/bench.md)")
                 : (int)outcome_of(r->status, r->error, raw);
    free(raw);
    if (out < 0)
        return -1;
    r->outcome = (enum atr_bench_outcome)out;
    const struct atr_json *m = atr_json_get(o, "metrics");
    if (m && m->type == ATR_JSON_NULL)
        m = NULL;
    if (m && m->type != ATR_JSON_OBJECT)
        return bad(c, m, "expected an object as \"metrics\"");
    if (!m)
        return 0;
    r->has_latency = has_latency(m, iso_latency);
    return num(c, m, "request_throughput_req_s", &r->req_s)
        || num(c, m, "output_token_throughput_tok_s", &r->tok_s)
        || num(c, m, "ttft_p99_ms", &r->ttft_p99_ms)
        || num(c, m, "tpot_p99_ms", &r->tpot_p99_ms) ? -1 : 0;
}

static const char *const vllm_latency[] = {
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
    "p99_tpot_ms", NULL,
};

/* vLLM's --save-result and SGLang's bench_serving: flat figures; a run
 * that completed no request is no_metrics. */
static int read_serving(const struct ctx *c, const struct atr_json *o, struct atr_bench_result *r)
{
    double completed, duration;
    if (str(c, o, "model_id", &r->model) || num(c, o, "completed", &completed)
        || num(c, o, "duration", &duration) || num(c, o, "request_throughput", &r->req_s)
        || num(c, o, "output_throughput", &r->tok_s) || num(c, o, "p99_ttft_ms", &r->ttft_p99_ms)
        || num(c, o, "p99_tpot_ms", &r->tpot_p99_ms))
        return -1;
    if (isnan(r->req_s) && completed > 0 && duration > 0)
        r->req_s = completed / duration;     /* older SGLang writes no request_throughput */
    r->has_latency = has_latency(o, vllm_latency);
    if (completed == 0) {
        r->status = ATR_BENCH_ERROR;
        r->outcome = ATR_BENCH_NO_METRICS;
        r->error = xstrdup("no request completed");
    }
    return 0;
}

/* Variant and agent from "<commit8>_<variant>[_<agent>]_result...". */
static void name_parts(const char *file, struct atr_bench_result *r)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *v = strchr(base, '_');
    const char *end = v ? strstr(v, "_result") : NULL;
    if (!end || end == v)
        return;
    v++;
    const char *a = memchr(v, '_', (size_t)(end - v));
    if (!r->variant)
        r->variant = xstrndup(v, (size_t)((a ? a : end) - v));
    if (a && !r->agent)
        r->agent = xstrndup(a + 1, (size_t)(end - a - 1));
}

static int read_object(const struct ctx *c, const struct atr_json *o, struct atr_bench_result *r)
{
    *r = (struct atr_bench_result){.req_s = NAN, .tok_s = NAN, .ttft_p99_ms = NAN,
                                   .tpot_p99_ms = NAN};
    if (o->type != ATR_JSON_OBJECT)
        return bad(c, o, "expected a result object");
    int rc;
    const char *backend = atr_json_get_str(o, "backend", NULL);
    if (atr_json_get(o, "status") || atr_json_get(o, "human_commit")) {
        rc = read_iso(c, o, r);
    } else if (backend || atr_json_get(o, "model_id") || atr_json_get(o, "request_throughput")) {
        r->kind = backend && strcmp(backend, "sglang") == 0 ? "sglang" : "vllm";
        rc = read_serving(c, o, r);
    } else {
        rc = bad(c, o, "expected a result: ISO-Bench's \"status\", or vLLM's or SGLang's figures");
    }
    if (rc == 0 && r->commit)
        name_parts(c->name, r);
    return rc;
}

/* ---- texts and files ---- */

static void push(struct atr_bench_set *s, struct atr_bench_result *r)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
    }
    s->v[s->n++] = *r;
}

static bool is_jsonl(const char *name)
{
    size_t n = strlen(name);
    static const char *const ext[] = {".jsonl", ".ndjson", ".jsonl.gz", ".jsonl.zst"};
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t k = strlen(ext[i]);
        if (n >= k && strcmp(name + n - k, ext[i]) == 0)
            return true;
    }
    return false;
}

/* Parses one document at file line `line` (JSONL) and adds its result. */
static int add_doc(struct atr_bench_set *s, const struct ctx *c, struct atr_arena *a,
                   const char *p, size_t len, unsigned long line, const char *file)
{
    struct atr_json_opts jo = {.allow_nonfinite = true};
    struct atr_json *root;
    struct atr_json_err je;
    if (atr_json_parse(a, p, len, &jo, &root, &je) < 0)
        return atr_error_at(c->err, c->name, line + je.line - 1, je.col, "%s", je.msg);
    struct atr_bench_result r;
    struct ctx lc = *c;
    lc.line0 = line;
    if (read_object(&lc, root, &r) < 0) {
        result_free(&r);
        return -1;
    }
    r.file = xstrdup(file);
    push(s, &r);
    return 0;
}

static int add_lines(struct atr_bench_set *s, const struct ctx *c, struct atr_arena *a,
                     const char *text, size_t len)
{
    size_t docs = 0;
    unsigned long line = 1;
    for (const char *p = text, *end = text + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < e) {
            char *file = xasprintf("%s#%lu", c->name, line);
            int rc = add_doc(s, c, a, p, (size_t)(e - p), line, file);
            free(file);
            if (rc < 0)
                return -1;
            docs++;
        }
        p = e + 1;
    }
    if (docs == 0)
        return atr_error_at(c->err, c->name, 1, 1, "expected a result object, found no line");
    return 0;
}

int atr_bench_read_text(struct atr_bench_set *s, const char *name, const char *text,
                        size_t len, struct atr_error *err)
{
    struct ctx c = {name, err, 1};
    struct atr_arena a = {0};
    size_t before = s->n;
    int rc = is_jsonl(name) ? add_lines(s, &c, &a, text, len)
                            : add_doc(s, &c, &a, text, len, 1, name);
    atr_arena_release(&a);
    if (rc < 0)
        while (s->n > before)
            result_free(&s->v[--s->n]);     /* all or nothing */
    return rc;
}

int atr_bench_read_file(struct atr_bench_set *s, const char *path, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    struct atr_buf b = {NULL, 0, 0, ATR_BENCH_MAX_FILE};
    int rc = atr_input_read_all(in, &b, ATR_BENCH_MAX_FILE, err);
    if (rc == 0)
        rc = atr_bench_read_text(s, atr_input_name(in), b.data ? b.data : "", b.len, err);
    atr_buf_release(&b);
    atr_input_close(in);
    return rc;
}

static bool is_result_name(const char *n)
{
    size_t k = strlen(n);
    return n[0] != '.' && ((k > 5 && strcmp(n + k - 5, ".json") == 0) || is_jsonl(n));
}

static int by_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int atr_bench_read_dir(struct atr_bench_set *s, const char *dir, struct atr_error *err)
{
    DIR *d = opendir(dir);
    if (!d && errno == ENOTDIR)   /* a result file given for its folder */
        return atr_error_set(err, "%s: not a folder (a folder of result files is wanted, "
                             "e.g. the -o DIR of bench run, or DIR/results)", dir);
    if (!d)
        return atr_error_set(err, "%s: cannot read the folder: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (is_result_name(e->d_name)) {
            names = xreallocarray(names, n + 1, sizeof *names);
            names[n++] = xasprintf("%s/%s", dir, e->d_name);
        }
    closedir(d);
    if (!n) {
        /* The folder `atr bench run -o DIR` made: its results are below. */
        char *below = xasprintf("%s/results", dir);
        struct stat st;
        int rc = stat(below, &st) == 0 && S_ISDIR(st.st_mode)
                     ? atr_bench_read_dir(s, below, err)
                     : atr_error_set(err, "%s: no result files (*.json, *.jsonl)", dir);
        free(below);
        return rc;
    }
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = atr_bench_read_file(s, names[i], err);
        free(names[i]);
    }
    free(names);
    return rc;
}
