/* results.c - reading benchmark result files (results.h), the one reader
 * `atr bench report`, `atr compare` and `atr report` share: which tool
 * wrote a file is told by its keys, and failures found in the wild are
 * mapped to one outcome by their status and error text. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
    "benchmark_timeout", "oom", "patch_failed", "prepare_timeout", "model_invalid", "disk_full", "other_error",
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
    free(r->when);
    free(r->target);
    free(r->policy);
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

/* A figure: absent or null is NAN; any other non-number is an error. */
static int num(const struct ctx *c, const struct atr_json *obj, const char *key, double *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    *out = NAN;
    if (!v || v->type == ATR_JSON_NULL || as_number(v, out))
        return 0;
    return atr_error_at(c->err, c->name, line_of(c, v), v->col,
                        "expected a number for \"%s\", found %s", key,
                        atr_json_type_name(v->type));
}

/* The first of keys present (the formats name one figure differently). */
static int num_of(const struct ctx *c, const struct atr_json *obj, const char *const *keys,
                  double *out)
{
    *out = NAN;
    for (; *keys && isnan(*out); keys++)
        if (num(c, obj, *keys, out) < 0)
            return -1;
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

/* atr bench's "repeat": a positive integer; 1 when absent. */
static int repeat_of(const struct ctx *c, const struct atr_json *o, unsigned *out)
{
    const struct atr_json *v = atr_json_get(o, "repeat");
    *out = 1;
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int || v->i < 1 || v->i > UINT32_MAX)
        return bad(c, v, "expected a positive integer as \"repeat\"");
    *out = (unsigned)v->i;
    return 0;
}

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
    if (repeat_of(c, o, &r->repeat) || str(c, o, "human_commit", &r->commit)
        || str(c, o, "model", &r->model) || str(c, o, "error", &r->error) || str(c, o, "variant", &r->variant)
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
        || num(c, m, "ttft_mean_ms", &r->ttft_mean_ms)
        || num(c, m, "ttft_median_ms", &r->ttft_p50_ms)
        || num(c, m, "ttft_p99_ms", &r->ttft_p99_ms)
        || num(c, m, "tpot_p99_ms", &r->tpot_p99_ms)
        || num(c, m, "tpot_median_ms", &r->tpot_p50_ms)
        || num(c, m, "itl_median_ms", &r->itl_p50_ms)
        || num(c, m, "itl_p99_ms", &r->itl_p99_ms)
        || num(c, m, "e2el_mean_ms", &r->e2el_mean_ms)
        || num(c, m, "e2el_median_ms", &r->e2el_p50_ms)
        || num(c, m, "e2el_p99_ms", &r->e2el_p99_ms) ? -1 : 0;
}

static const char *const vllm_latency[] = {
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
    "p99_tpot_ms", NULL,
};

/* Key names of one figure in the serving formats, first found wins. */
static const char *const k_ttft_mean[] = {"mean_ttft_ms", NULL};
static const char *const k_ttft_p50[] = {"median_ttft_ms", "p50_ttft_ms", NULL};
static const char *const k_e2el_mean[] = {"mean_e2el_ms", "mean_e2e_latency_ms", NULL};
static const char *const k_e2el_p50[] = {"median_e2el_ms", "median_e2e_latency_ms",
                                         "p50_e2el_ms", "p50_e2e_latency_ms", NULL};
static const char *const k_e2el_p99[] = {"p99_e2el_ms", "p99_e2e_latency_ms", NULL};

static const char *get_str(const struct atr_json *o, const char *key)
{
    const char *v = atr_json_get_str(o, key, NULL);
    return v && *v ? v : NULL;
}

/* atr.target; else "sim:" + atr.engine.profile; else BACKEND:MODEL. */
static char *target_of(const struct atr_json *o, const struct atr_json *atr)
{
    const char *t = get_str(atr, "target");
    if (t)
        return xstrdup(t);
    const char *profile = get_str(atr_json_get(atr, "engine"), "profile");
    if (profile)
        return xasprintf("sim:%s", profile);
    const char *backend = get_str(o, "backend"), *model = get_str(o, "model_id");
    if (!model)
        model = get_str(o, "model");
    if (backend && model)
        return xasprintf("%s:%s", backend, model);
    return xstrdup(backend ? backend : model ? model : "unknown");
}

/* atr's own block of its --save-result: the target, the policy, the prefix
 * hit rate and, for multi-turn workloads, session completion. */
static int read_atr_block(const struct ctx *c, const struct atr_json *o,
                          struct atr_bench_result *r)
{
    const struct atr_json *atr = atr_json_get(o, "atr");
    if (!atr_json_is(atr, ATR_JSON_OBJECT))
        atr = NULL;
    r->target = target_of(o, atr);
    if (!atr)
        return 0;
    r->kind = "atr";
    const char *policy = get_str(atr, "policy");
    r->policy = policy ? xstrdup(policy) : NULL;
    if (num(c, atr, "prefix_cache_hit_rate", &r->prefix_hit_rate) < 0)
        return -1;
    const struct atr_json *eng = atr_json_get(atr, "engine");
    if (atr_json_is(eng, ATR_JSON_OBJECT) &&
        (num(c, eng, "kv_pins", &r->kv_pins) || num(c, eng, "kv_pins_dropped", &r->kv_pins_dropped)
         || num(c, eng, "evictions", &r->evictions)))
        return -1;
    const struct atr_json *ses = atr_json_get(atr, "sessions");
    if (!atr_json_is(ses, ATR_JSON_OBJECT))
        return 0;
    return num(c, ses, "mean_completion_ms", &r->session_mean_ms)
        || num(c, ses, "median_completion_ms", &r->session_p50_ms)
        || num(c, ses, "p99_completion_ms", &r->session_p99_ms) ? -1 : 0;
}

/* vLLM's --save-result (and atr's, the same keys plus an "atr" block) and
 * SGLang's bench_serving: flat figures; a run that completed no request is
 * no_metrics. */
static int read_serving(const struct ctx *c, const struct atr_json *o, struct atr_bench_result *r)
{
    double completed, duration;
    if (str(c, o, "model_id", &r->model) || num(c, o, "completed", &completed)
        || num(c, o, "duration", &duration) || num(c, o, "request_throughput", &r->req_s)
        || num(c, o, "output_throughput", &r->tok_s) || num(c, o, "p99_ttft_ms", &r->ttft_p99_ms)
        || num(c, o, "p99_tpot_ms", &r->tpot_p99_ms)
        || num(c, o, "median_tpot_ms", &r->tpot_p50_ms)
        || num(c, o, "median_itl_ms", &r->itl_p50_ms) || num(c, o, "p99_itl_ms", &r->itl_p99_ms)
        || num_of(c, o, k_ttft_mean, &r->ttft_mean_ms) || num_of(c, o, k_ttft_p50, &r->ttft_p50_ms)
        || num_of(c, o, k_e2el_mean, &r->e2el_mean_ms) || num_of(c, o, k_e2el_p50, &r->e2el_p50_ms)
        || num_of(c, o, k_e2el_p99, &r->e2el_p99_ms) || read_atr_block(c, o, r))
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

/* Does the name's part [v, end) end in "_r<repeat>" (a repeat's suffix)? */
static bool ends_in_repeat(const char *v, const char *end, unsigned repeat)
{
    char sfx[16];
    size_t n = (size_t)snprintf(sfx, sizeof sfx, "_r%u", repeat);
    return (size_t)(end - v) > n && memcmp(end - n, sfx, n) == 0;
}

/* Variant and agent from "<commit8>_<variant>[_<agent>][_r<K>]_result..."
 * (the suffix only in a file whose "repeat" is K > 1). */
static void name_parts(const char *file, struct atr_bench_result *r)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *v = strchr(base, '_');
    const char *end = v ? strstr(v, "_result") : NULL;
    if (!end || end == v)
        return;
    if (r->repeat > 1 && ends_in_repeat(v + 1, end, r->repeat))
        end -= snprintf(NULL, 0, "_r%u", r->repeat);
    v++;
    const char *a = memchr(v, '_', (size_t)(end - v));
    if (!r->variant)
        r->variant = xstrndup(v, (size_t)((a ? a : end) - v));
    if (a && !r->agent)
        r->agent = xstrndup(a + 1, (size_t)(end - a - 1));
}

/* Keys any serving result has one of. */
static const char *const serving_keys[] = {
    "backend", "model_id", "request_throughput", "output_throughput", "mean_ttft_ms",
    "median_ttft_ms", "mean_e2el_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms", NULL,
};

static bool has_any(const struct atr_json *o, const char *const *keys)
{
    for (; *keys; keys++)
        if (atr_json_get(o, *keys))
            return true;
    return false;
}

/* What other atr files are, for the message when one is given as a
 * result: NULL when o is none of them. */
static const char *other_atr_file(const struct atr_json *o)
{
    const char *f = atr_json_get_str(o, "format", NULL);
    f = f ? f : "";
    if (strncmp(f, "atr-router", 10) == 0)
        return "an atr router file (`atr report` shows it in its Router lab)";
    if (strcmp(f, "atr-trace/1") == 0 || atr_json_get(o, "steps"))
        return "a trace, not a result (`atr sim run` or `atr replay llm` make results of it)";
    if (atr_json_get(o, "configs") && atr_json_get(o, "backend"))
        return "a tool replay summary (`atr report DIR` shows the folder of `atr replay tools`)";
    if (atr_json_get(o, "step_id") && atr_json_get(o, "latency_ms"))
        return "a tool replay step (metrics.jsonl: `atr report DIR` shows the folder)";
    if (atr_json_get(o, "success") && (atr_json_get(o, "e2el_ms") || atr_json_get(o, "e2el_us")))
        return "a request record (--requests-out: `atr report` reads it)";
    return NULL;
}

/* Every figure absent. */
static void result_init(struct atr_bench_result *r)
{
    *r = (struct atr_bench_result){
        .req_s = NAN, .tok_s = NAN, .ttft_mean_ms = NAN, .ttft_p50_ms = NAN, .ttft_p99_ms = NAN,
        .tpot_p99_ms = NAN, .tpot_p50_ms = NAN, .itl_p50_ms = NAN, .itl_p99_ms = NAN,
        .repeat = 1, .e2el_mean_ms = NAN, .e2el_p50_ms = NAN, .e2el_p99_ms = NAN,
        .prefix_hit_rate = NAN, .session_mean_ms = NAN, .session_p50_ms = NAN,
        .session_p99_ms = NAN, .kv_pins = NAN, .kv_pins_dropped = NAN, .evictions = NAN};
}

static int read_object(const struct ctx *c, const struct atr_json *o, struct atr_bench_result *r)
{
    result_init(r);
    if (o->type != ATR_JSON_OBJECT) {
        char what[64];
        snprintf(what, sizeof what, "expected a result object, found %s",
                 atr_json_type_name(o->type));
        return bad(c, o, what);
    }
    int rc;
    const char *backend = atr_json_get_str(o, "backend", NULL), *other = other_atr_file(o);
    if (other) {
        char what[160];
        snprintf(what, sizeof what, "expected a benchmark result, found %s", other);
        rc = bad(c, o, what);
    } else if (atr_json_get(o, "status") || atr_json_get(o, "human_commit")) {
        rc = read_iso(c, o, r);
    } else if (has_any(o, serving_keys)) {
        bool sglang = (backend && strcmp(backend, "sglang") == 0) ||
                      atr_json_get(o, "mean_e2e_latency_ms") ||
                      atr_json_get(o, "median_e2e_latency_ms");
        r->kind = sglang ? "sglang" : "vllm";
        rc = read_serving(c, o, r);
    } else {
        rc = bad(c, o, "expected a benchmark result: vLLM's, SGLang's or atr's figures "
                       "(\"mean_ttft_ms\", \"request_throughput\", ...) or ISO-Bench's "
                       "\"status\" and \"metrics\"");
    }
    if (rc == 0 && r->commit)
        name_parts(c->name, r);
    const char *when = get_str(o, "timestamp") ? get_str(o, "timestamp") : get_str(o, "date");
    if (rc == 0 && when)
        r->when = xstrdup(when);
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

/* ---- `atr sweep` results: one result per run ---- */

static bool is_sweep(const struct atr_json *o)
{
    const char *f = atr_json_is(o, ATR_JSON_OBJECT) ? atr_json_get_str(o, "format", NULL) : NULL;
    return f && strcmp(f, "atr-sweep/1") == 0;
}

/* One latency of a sweep run's metrics: {"mean", "median", "p99", ...}. */
static int sweep_latency(const struct ctx *c, const struct atr_json *m, const char *key,
                         double *mean, double *median, double *p99)
{
    const struct atr_json *l = atr_json_get(m, key);
    if (!l || l->type == ATR_JSON_NULL)
        return 0;
    if (l->type != ATR_JSON_OBJECT)
        return bad(c, l, "expected an object of percentiles in a sweep run");
    double ignored;
    return num(c, l, "mean", mean ? mean : &ignored)
        || num(c, l, "median", median ? median : &ignored) || num(c, l, "p99", p99) ? -1 : 0;
}

/* One run of a sweep: its figures, named "run K: KIND[ RATE /s]" after the
 * sweep's policy, if any, so runs sort in the order they ran. */
static int sweep_run(const struct ctx *c, const struct atr_json *run, unsigned long k,
                     const char *policy, struct atr_bench_result *r)
{
    if (!atr_json_is(run, ATR_JSON_OBJECT))
        return bad(c, run, "expected an object as each of a sweep's \"runs\"");
    const struct atr_json *m = atr_json_get(run, "metrics");
    double rate, completed;
    if (num(c, run, "rate", &rate) || num(c, m, "request_throughput", &r->req_s)
        || num(c, m, "output_throughput", &r->tok_s) || num(c, m, "completed", &completed)
        || sweep_latency(c, m, "ttft_ms", &r->ttft_mean_ms, &r->ttft_p50_ms, &r->ttft_p99_ms)
        || sweep_latency(c, m, "tpot_ms", NULL, NULL, &r->tpot_p99_ms)
        || sweep_latency(c, m, "e2el_ms", &r->e2el_mean_ms, &r->e2el_p50_ms, &r->e2el_p99_ms))
        return -1;
    const char *kind = get_str(run, "kind");
    char rate_text[48] = "";
    if (!isnan(rate))
        snprintf(rate_text, sizeof rate_text, " %.3f /s", rate);
    r->policy = xasprintf("%s%srun %lu: %s%s", policy ? policy : "", policy ? " " : "", k,
                          kind ? kind : "run", rate_text);
    r->has_latency = !isnan(r->ttft_p99_ms) || !isnan(r->tpot_p99_ms);
    if (!(completed > 0)) {
        r->status = ATR_BENCH_ERROR;
        r->outcome = ATR_BENCH_NO_METRICS;
        r->error = xstrdup("no request completed");
    }
    return 0;
}

/* Adds a result per run of the sweep o (all or nothing, as the caller's
 * text is). */
static int read_sweep(struct atr_bench_set *s, const struct ctx *c, const struct atr_json *o,
                      const char *file)
{
    const struct atr_json *runs = atr_json_get(o, "runs");
    if (!atr_json_is(runs, ATR_JSON_ARRAY) || !runs->u.kids.first)
        return bad(c, o, "expected \"runs\", an array of runs, in an atr-sweep/1 result");
    const char *target = get_str(o, "target"), *policy = get_str(o, "policy");
    unsigned long k = 1;
    for (const struct atr_json *run = runs->u.kids.first; run; run = run->next, k++) {
        struct atr_bench_result r;
        result_init(&r);
        if (sweep_run(c, run, k, policy, &r) < 0) {
            result_free(&r);
            return -1;
        }
        r.kind = "atr";
        r.file = xstrdup(file);
        r.target = xstrdup(target ? target : "unknown");
        push(s, &r);
    }
    return 0;
}

/* Parses one document at file line `line` (JSONL) and adds its result (a
 * result per run of a sweep). */
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
    if (is_sweep(root))
        return read_sweep(s, &lc, root, file);
    if (read_object(&lc, root, &r) < 0) {
        result_free(&r);
        return -1;
    }
    r.file = xstrdup(file);
    r.line = file == c->name ? 0 : line;
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

/* The first non-blank line, or NULL. */
static const char *first_line(const char *text, size_t len, size_t *n, size_t *lines)
{
    const char *first = NULL;
    *lines = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < e && (*lines)++ == 0)
            first = p, *n = (size_t)(e - p);
        p = e + 1;
    }
    return first;
}

/* A text named neither .jsonl nor .ndjson (stdin, a .json that SGLang
 * appended to) is JSONL when it is not one JSON value but its first
 * non-blank line of several is one. */
static bool looks_jsonl(struct atr_arena *a, const char *text, size_t len)
{
    struct atr_json_opts jo = {.allow_nonfinite = true};
    struct atr_json *v;
    struct atr_json_err je;
    size_t n = 0, lines;
    const char *first = first_line(text, len, &n, &lines);
    return lines > 1 && atr_json_parse(a, text, len, &jo, &v, &je) < 0 &&
           atr_json_parse(a, first, n, &jo, &v, &je) == 0;
}

int atr_bench_read_text(struct atr_bench_set *s, const char *name, const char *text,
                        size_t len, struct atr_error *err)
{
    struct ctx c = {name, err, 1};
    struct atr_arena a = {0};
    size_t before = s->n;
    int rc = is_jsonl(name) || looks_jsonl(&a, text, len)
                 ? add_lines(s, &c, &a, text, len)
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

/* name without a repeat's "_r<K>" before "_result" (malloc'd), and K
 * (1 without one): "d/x_r2_result.json" is "d/x_result.json" and 2. */
static char *without_repeat(const char *name, unsigned long *k)
{
    const char *base = strrchr(name, '/');
    const char *end = strstr(base ? base : name, "_result"), *d = end;
    *k = 1;
    while (d && d > name && d[-1] >= '0' && d[-1] <= '9')
        d--;
    if (!d || d == end || d - name < 2 || d[-1] != 'r' || d[-2] != '_' || *d == '0')
        return xstrdup(name);
    *k = strtoul(d, NULL, 10);
    return xasprintf("%.*s%s", (int)(d - 2 - name), name, end);
}

/* By name, a run's repeats in order after its first ("x_result.json",
 * "x_r2_result.json", ..., "x_r10_result.json"); names of single runs in
 * plain byte order. */
static int by_name(const void *x, const void *y)
{
    const char *a = *(char *const *)x, *b = *(char *const *)y;
    unsigned long ka, kb;
    char *sa = without_repeat(a, &ka), *sb = without_repeat(b, &kb);
    int c = strcmp(sa, sb);
    free(sa);
    free(sb);
    if (c == 0 && ka != kb)
        c = ka < kb ? -1 : 1;
    return c ? c : strcmp(a, b);
}

int atr_bench_read_path(struct atr_bench_set *s, const char *path, struct atr_error *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return atr_error_set(err, "%s: %s", path,
                             errno == ENOENT ? "no such result file or folder" : strerror(errno));
    if (S_ISDIR(st.st_mode))
        return atr_bench_read_dir(s, path, err);
    if (S_ISREG(st.st_mode))
        return atr_bench_read_file(s, path, err);
    return atr_error_set(err, "%s: expected a result folder or a result file", path);
}

int atr_bench_dir_files(const char *dir, char ***paths, size_t *n_paths, struct atr_error *err)
{
    *paths = NULL;
    *n_paths = 0;
    DIR *d = opendir(dir);
    if (!d)
        return atr_error_set(err, "%s: cannot read the folder: %s", dir,
                             errno == ENOTDIR ? "not a folder (give a result folder or file)"
                                              : strerror(errno));
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
                     ? atr_bench_dir_files(below, paths, n_paths, err)
                     : atr_error_set(err, "%s: no result files (*.json, *.jsonl)", dir);
        free(below);
        return rc;
    }
    qsort(names, n, sizeof *names, by_name);
    *paths = names;
    *n_paths = n;
    return 0;
}

void atr_bench_dir_files_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

int atr_bench_read_dir(struct atr_bench_set *s, const char *dir, struct atr_error *err)
{
    char **names;
    size_t n;
    int rc = atr_bench_dir_files(dir, &names, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = atr_bench_read_file(s, names[i], err);
    atr_bench_dir_files_free(names, n);
    return rc;
}
