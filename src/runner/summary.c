/* summary.c - per-configuration summary of replayed steps, from live
 * records or from metrics.jsonl lines. */
#include "runner/summary.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/writer.h"
#include "stats/percentile.h"
#include "util/alloc.h"

enum { MAX_CONFIGS = 8, DIGITS = 3 /* of summary.json's figures */ };

struct config_sum {
    char name[32];
    unsigned long traces, total_steps, ran, skipped, failed, timed_out;
    unsigned long failures[ATR_CAUSE_COUNT], missing_cwd_steps;
    char *missing_cwd;          /* the first recorded cwd that was absent */
    unsigned long restore[ATR_RESTORE_KINDS], restore_resources_missing;
    char last_trace[256];
    struct atr_replay_trace_counts *tr;  /* per trace, ids malloc'd */
    size_t n_tr, cap_tr;
    struct atr_samples latency;
    double cpu_ms, max_rss_mb;
    long long high, max_events, oom;
    unsigned long mem_max_hit, pids_max_hit, disk_full;   /* steps at a limit */
    double mem_some_ms, cpu_some_ms;
    long long ctl_adjustments;
    struct atr_samples reaction, reaction_bound;   /* dynamic: microseconds */
};

struct atr_replay_summary {
    struct config_sum c[MAX_CONFIGS];
    int n;
};

const char *const atr_restore_kinds[ATR_RESTORE_KINDS] = {
    "live", "restored", "snapshot_missing", "selector_missing",
};

struct atr_replay_summary *atr_replay_summary_new(void)
{
    return xcalloc(1, sizeof(struct atr_replay_summary));
}

void atr_replay_summary_free(struct atr_replay_summary *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        atr_samples_release(&s->c[i].latency);
        atr_samples_release(&s->c[i].reaction);
        atr_samples_release(&s->c[i].reaction_bound);
        free(s->c[i].missing_cwd);
        for (size_t k = 0; k < s->c[i].n_tr; k++)
            free((char *)s->c[i].tr[k].trace_id);
        free(s->c[i].tr);
    }
    free(s);
}

/* ---- a step from a live record ---- */

/* A figure as its metrics.jsonl field reads: negative and non-finite
 * ones are written null (unknown: -1). */
static double line_ms(double v)
{
    if (v < 0 || !isfinite(v))
        return -1;
    return atr_metrics_fixed(v, ATR_METRICS_MS_DIGITS);
}

static int64_t line_count(int64_t v)
{
    return v < 0 ? -1 : v;
}

/* Reaction samples as the line's array reads (non-finite ones are null). */
static const double *line_samples(struct atr_arena *a, const double *v, size_t n,
                                  size_t *out_n)
{
    double *out = atr_arena_calloc(a, n ? n : 1, sizeof *out);
    *out_n = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            out[(*out_n)++] = atr_metrics_fixed(v[i], ATR_METRICS_US_DIGITS);
    return out;
}

static void measured_from(struct atr_replay_step *out, const struct atr_step_metrics *m,
                          struct atr_arena *a)
{
    out->latency_ms = line_ms(m->latency_ms);
    out->cpu_ms = line_ms(m->cpu_ms);
    out->max_rss_mb = line_ms(m->max_rss_mb);
    out->mem_high_events = line_count(m->mem_high_events);
    out->mem_max_events = line_count(m->mem_max_events);
    out->oom_kills = line_count(m->oom_kills);
    out->pids_max_hit = line_count(m->pids_max_hit);
    out->disk_full = m->disk_full;
    out->mem_some_ms = line_ms(m->mem_some_ms);
    out->cpu_some_ms = line_ms(m->cpu_some_ms);
    out->ctl_adjustments = line_count(m->ctl_adjustments);
    out->exit_code = m->exit_code;
    out->timed_out = m->timed_out;
    out->missing_cwd = m->missing_cwd ? atr_arena_strdup(a, m->missing_cwd) : NULL;
    out->restore = m->browser && m->restore ? atr_arena_strdup(a, m->restore) : NULL;
    out->restore_missing = out->restore ? m->restore_missing : 0;
    out->missing_file = m->missing_file ? atr_arena_strdup(a, m->missing_file) : NULL;
    if (m->ctl_adjustments < 0)
        return;     /* the line has no reaction arrays */
    out->reaction_us = line_samples(a, m->ctl_seen_us, m->ctl_samples, &out->n_reaction);
    out->reaction_bound_us = line_samples(a, m->ctl_bound_us, m->ctl_samples,
                                          &out->n_reaction_bound);
}

void atr_replay_step_from_metrics(struct atr_replay_step *out, const char *config,
                                  const struct atr_step_metrics *m, struct atr_arena *a)
{
    memset(out, 0, sizeof *out);
    out->config = atr_arena_strdup(a, config);
    out->trace_id = atr_arena_strdup(a, m->trace_id ? m->trace_id : "");
    out->skipped = m->skipped != NULL;
    out->exit_code = -1;
    if (!out->skipped)
        measured_from(out, m, a);
}

/* ---- a step from a metrics.jsonl line ---- */

/* A number member, or -1 when absent, null or not a number. */
static double num(const struct atr_json *o, const char *key)
{
    double v;
    return atr_json_get_num(o, key, &v) ? v : -1;
}

/* A count member: its whole part when positive, 0 or -1 otherwise. */
static int64_t count(const struct atr_json *o, const char *key)
{
    double v = num(o, key);
    if (!(v > 0))
        return v == 0 ? 0 : -1;
    return v < 9.2e18 ? (int64_t)v : INT64_MAX;
}

/* exit_code: 0 only when the line says 0; anything else is a failure. */
static int exit_code(const struct atr_json *o)
{
    double v = num(o, "exit_code");
    if (v == 0)
        return 0;
    return v >= INT_MIN && v <= INT_MAX && v == (double)(int)v ? (int)v : -1;
}

/* The numbers of an array member, in a (others skipped). */
static const double *samples(struct atr_arena *a, const struct atr_json *arr, size_t *n)
{
    *n = 0;
    if (!atr_json_is(arr, ATR_JSON_ARRAY))
        return NULL;
    size_t cap = 0;
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next)
        cap++;
    double *out = atr_arena_calloc(a, cap ? cap : 1, sizeof *out);
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next)
        if (e->type == ATR_JSON_NUMBER)
            out[(*n)++] = e->u.num;
    return out;
}

static void measured_parse(struct atr_replay_step *out, const struct atr_json *o,
                           struct atr_arena *a)
{
    out->latency_ms = num(o, "latency_ms");
    out->cpu_ms = num(o, "cpu_ms");
    out->max_rss_mb = num(o, "max_rss_mb");
    out->mem_high_events = count(o, "mem_high_events");
    out->mem_max_events = count(o, "mem_max_events");
    out->oom_kills = count(o, "oom_kills");
    out->pids_max_hit = count(o, "pids_max_hit");
    const struct atr_json *full = atr_json_get(o, "disk_full");
    out->disk_full = full && full->type == ATR_JSON_TRUE;
    out->mem_some_ms = num(o, "mem_pressure_some_ms");
    out->cpu_some_ms = num(o, "cpu_pressure_some_ms");
    out->ctl_adjustments = count(o, "ctl_adjustments");
    out->exit_code = exit_code(o);
    const struct atr_json *to = atr_json_get(o, "timed_out");
    out->timed_out = to && to->type == ATR_JSON_TRUE;
    out->missing_cwd = atr_json_get_str(o, "missing_cwd", NULL);
    out->restore = atr_json_get_str(o, "restore", NULL);
    int64_t rm;
    out->restore_missing = atr_json_get_i64(o, "restore_resources_missing", &rm) && rm > 0
                               ? (uint64_t)rm : 0;
    out->missing_file = atr_json_get_str(o, "missing_file", NULL);
    out->reaction_us = samples(a, atr_json_get(o, "ctl_reaction_us"), &out->n_reaction);
    out->reaction_bound_us = samples(a, atr_json_get(o, "ctl_reaction_bound_us"),
                                     &out->n_reaction_bound);
}

int atr_replay_step_parse(struct atr_replay_step *out, const char *line, size_t len,
                          struct atr_arena *a, const char *file, unsigned long lineno,
                          struct atr_error *err)
{
    struct atr_json *o;
    struct atr_json_err je;
    memset(out, 0, sizeof *out);
    if (atr_json_parse(a, line, len, NULL, &o, &je) < 0)
        return atr_error_at(err, file, lineno, je.col, "%s", je.msg);
    out->config = atr_json_get_str(o, "config", NULL);
    out->trace_id = atr_json_get_str(o, "trace_id", NULL);
    if (!atr_json_is(o, ATR_JSON_OBJECT) || !out->config || !out->trace_id)
        return atr_error_at(err, file, lineno, 1,
                            "expected a metrics object with \"config\" and \"trace_id\"");
    out->skipped = atr_json_get(o, "skipped") != NULL;
    out->exit_code = -1;
    if (!out->skipped)
        measured_parse(out, o, a);
    return 0;
}

/* ---- causes ---- */

static const char *const cause_keys[ATR_CAUSE_COUNT] = {
    "timeout", "oom", "command_not_found", "missing_directory", "missing_file", "nonzero_exit",
};

const char *atr_replay_cause_key(enum atr_replay_cause c)
{
    return cause_keys[c];
}

/* The shell's own verdicts first (timeout and OOM are why the exit code
 * is what it is; 127 is sh's "not found"), then the directory or file the
 * step expected, which explains the failure of a step that ran elsewhere. */
enum atr_replay_cause atr_replay_cause_of(int exit_code, bool timed_out, int64_t oom_kills,
                                          bool missing_cwd, bool missing_file)
{
    if (exit_code == 0)
        return ATR_CAUSE_COUNT;
    if (timed_out)
        return ATR_CAUSE_TIMEOUT;
    if (oom_kills > 0)
        return ATR_CAUSE_OOM;
    if (exit_code == 127)
        return ATR_CAUSE_NOT_FOUND;
    if (missing_cwd)
        return ATR_CAUSE_NO_DIR;
    return missing_file ? ATR_CAUSE_NO_FILE : ATR_CAUSE_EXIT;
}

enum atr_replay_cause atr_replay_step_cause(const struct atr_replay_step *st)
{
    if (st->skipped)
        return ATR_CAUSE_COUNT;
    return atr_replay_cause_of(st->exit_code, st->timed_out, st->oom_kills,
                               st->missing_cwd != NULL, st->missing_file != NULL);
}

bool atr_replay_cause_is_env(enum atr_replay_cause c)
{
    return c == ATR_CAUSE_NOT_FOUND || c == ATR_CAUSE_NO_DIR || c == ATR_CAUSE_NO_FILE;
}

const char *atr_replay_class_name(bool skipped, enum atr_replay_cause c)
{
    if (skipped)
        return "skipped";
    if (c == ATR_CAUSE_COUNT)
        return "ok";
    return atr_replay_cause_is_env(c) ? "env_missing" : "failed";
}

/* ---- counting ---- */

static struct config_sum *config_of(struct atr_replay_summary *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->c[i].name, name) == 0)
            return &s->c[i];
    if (s->n == MAX_CONFIGS || strlen(name) >= sizeof s->c[0].name)
        return NULL;
    struct config_sum *c = &s->c[s->n++];
    strcpy(c->name, name);
    return c;
}

static void add_samples(struct atr_samples *to, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] >= 0)
            atr_samples_add(to, v[i]);
}

static void add_step(struct config_sum *c, const struct atr_replay_step *st)
{
    add_samples(&c->reaction, st->reaction_us, st->n_reaction);
    add_samples(&c->reaction_bound, st->reaction_bound_us, st->n_reaction_bound);
    c->ran++;
    if (st->latency_ms >= 0)
        atr_samples_add(&c->latency, st->latency_ms);
    if (st->cpu_ms > 0)
        c->cpu_ms += st->cpu_ms;
    if (st->max_rss_mb > c->max_rss_mb)
        c->max_rss_mb = st->max_rss_mb;
    if (st->mem_high_events > 0)
        c->high += st->mem_high_events;
    if (st->mem_max_events > 0) {
        c->max_events += st->mem_max_events;
        c->mem_max_hit++;
    }
    c->pids_max_hit += st->pids_max_hit > 0;
    c->disk_full += st->disk_full;
    if (st->oom_kills > 0)
        c->oom += st->oom_kills;
    if (st->mem_some_ms > 0)
        c->mem_some_ms += st->mem_some_ms;
    if (st->cpu_some_ms > 0)
        c->cpu_some_ms += st->cpu_some_ms;
    if (st->ctl_adjustments > 0)
        c->ctl_adjustments += st->ctl_adjustments;
    if (st->exit_code != 0)
        c->failed++;
    enum atr_replay_cause cause = atr_replay_step_cause(st);
    if (cause != ATR_CAUSE_COUNT)
        c->failures[cause]++;
    if (st->timed_out)
        c->timed_out++;
    if (st->missing_cwd) {
        c->missing_cwd_steps++;
        if (!c->missing_cwd)
            c->missing_cwd = xstrdup(st->missing_cwd);
    }
    for (int k = 0; st->restore && k < ATR_RESTORE_KINDS; k++)
        if (strcmp(st->restore, atr_restore_kinds[k]) == 0)
            c->restore[k]++;
    c->restore_resources_missing += st->restore_missing;
}

static void new_trace(struct config_sum *c, const char *id)
{
    if (c->n_tr == c->cap_tr) {
        c->cap_tr = c->cap_tr ? c->cap_tr * 2 : 16;
        c->tr = xrealloc(c->tr, c->cap_tr * sizeof *c->tr);
    }
    c->tr[c->n_tr++] = (struct atr_replay_trace_counts){.trace_id = xstrdup(id)};
}

static void count_trace_step(struct atr_replay_trace_counts *t, const struct atr_replay_step *st)
{
    enum atr_replay_cause cause = atr_replay_step_cause(st);
    t->steps++;
    if (st->skipped) {
        t->skipped++;
        return;
    }
    t->ran++;
    if (cause == ATR_CAUSE_COUNT)
        t->ok++;
    else if (atr_replay_cause_is_env(cause))
        t->env_missing++;
    else
        t->failed++;
}

int atr_replay_summary_add(struct atr_replay_summary *s, const struct atr_replay_step *st,
                           const char *file, unsigned long lineno, struct atr_error *err)
{
    struct config_sum *c = config_of(s, st->config);
    if (!c)
        return atr_error_at(err, file, lineno, 1, "too many configurations (at most %d)",
                            MAX_CONFIGS);
    /* Lines of one trace are consecutive in a metrics file. */
    if (strncmp(c->last_trace, st->trace_id, sizeof c->last_trace - 1) != 0 || !c->n_tr) {
        c->traces++;
        snprintf(c->last_trace, sizeof c->last_trace, "%s", st->trace_id);
        new_trace(c, st->trace_id);
    }
    c->total_steps++;
    if (st->skipped)
        c->skipped++;
    else
        add_step(c, st);
    count_trace_step(&c->tr[c->n_tr - 1], st);
    return 0;
}

/* ---- figures ---- */

size_t atr_replay_summary_n_configs(const struct atr_replay_summary *s)
{
    return (size_t)s->n;
}

/* A figure as summary.json writes it. */
static double fig(double v)
{
    return atr_metrics_fixed(v, DIGITS);
}

static double pct(struct atr_samples *s, double p)
{
    return fig(atr_samples_percentile(s, p));
}

static void counts_of(const struct config_sum *c, struct atr_replay_config_summary *out)
{
    out->config = c->name;
    out->traces = c->traces;
    out->total_steps = c->total_steps;
    out->ran_steps = c->ran;
    out->skipped_steps = c->skipped;
    out->failed_steps = c->failed;
    out->timed_out_steps = c->timed_out;
    memcpy(out->failures, c->failures, sizeof out->failures);
    out->env_missing_steps = out->own_failed_steps = 0;
    for (int k = 0; k < ATR_CAUSE_COUNT; k++)
        *(atr_replay_cause_is_env((enum atr_replay_cause)k) ? &out->env_missing_steps
                                                            : &out->own_failed_steps) +=
            c->failures[k];
    out->per_trace = c->tr;
    out->n_per_trace = c->n_tr;
    out->missing_cwd_steps = c->missing_cwd_steps;
    out->missing_cwd = c->missing_cwd;
    memcpy(out->restore, c->restore, sizeof out->restore);
    out->restore_resources_missing = c->restore_resources_missing;
    out->mem_high_events_total = c->high;
    out->mem_max_events_total = c->max_events;
    out->mem_max_hit_steps = c->mem_max_hit;
    out->pids_max_hit_steps = c->pids_max_hit;
    out->disk_full_steps = c->disk_full;
    out->oom_kills = c->oom;
    out->ctl_adjustments = c->ctl_adjustments;
}

void atr_replay_summary_config(struct atr_replay_summary *s, size_t i,
                               struct atr_replay_config_summary *out)
{
    struct config_sum *c = &s->c[i];
    counts_of(c, out);
    out->latency_p50_ms = pct(&c->latency, 50);
    out->latency_p95_ms = pct(&c->latency, 95);
    out->latency_p99_ms = pct(&c->latency, 99);
    out->latency_max_ms = pct(&c->latency, 100);
    out->cpu_ms_total = fig(c->cpu_ms);
    out->max_rss_mb = fig(c->max_rss_mb);
    out->mem_pressure_some_ms_total = fig(c->mem_some_ms);
    out->cpu_pressure_some_ms_total = fig(c->cpu_some_ms);
    out->ctl_reaction_p50_us = pct(&c->reaction, 50);
    out->ctl_reaction_p99_us = pct(&c->reaction, 99);
    out->ctl_reaction_bound_p50_us = pct(&c->reaction_bound, 50);
    out->ctl_reaction_bound_p99_us = pct(&c->reaction_bound, 99);
}

/* ---- summary.json ---- */

static void put_counts(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    atr_jw_kv_uint(w, "traces", c->traces);
    atr_jw_kv_uint(w, "total_steps", c->total_steps);
    atr_jw_kv_uint(w, "ran_steps", c->ran_steps);
    atr_jw_kv_uint(w, "skipped_steps", c->skipped_steps);
    atr_jw_kv_uint(w, "failed_steps", c->failed_steps);
    atr_jw_kv_uint(w, "timed_out_steps", c->timed_out_steps);
}

/* failed_steps by cause, and the recorded cwd that hints at an image. */
static void put_failures(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    atr_jw_key(w, "failures");
    atr_jw_object_begin(w);
    for (int k = 0; k < ATR_CAUSE_COUNT; k++)
        atr_jw_kv_uint(w, cause_keys[k], c->failures[k]);
    atr_jw_object_end(w);
    atr_jw_kv_uint(w, "missing_cwd_steps", c->missing_cwd_steps);
    atr_jw_kv_str(w, "missing_cwd", c->missing_cwd);
    atr_jw_kv_uint(w, "env_missing_steps", c->env_missing_steps);
    atr_jw_kv_uint(w, "own_failed_steps", c->own_failed_steps);
}

/* Each trace's steps by class: how much of it could run here at all. */
static void put_per_trace(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    atr_jw_key(w, "per_trace");
    atr_jw_array_begin(w);
    for (size_t k = 0; k < c->n_per_trace; k++) {
        const struct atr_replay_trace_counts *t = &c->per_trace[k];
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "trace_id", t->trace_id);
        atr_jw_kv_uint(w, "steps", t->steps);
        atr_jw_kv_uint(w, "ran", t->ran);
        atr_jw_kv_uint(w, "ok", t->ok);
        atr_jw_kv_uint(w, "env_missing", t->env_missing);
        atr_jw_kv_uint(w, "failed", t->failed);
        atr_jw_kv_uint(w, "skipped", t->skipped);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
}

/* Reaction: condition seen -> limit written; the bound adds the time it
 * may have been visible before the controller looked (controller.h). */
static void put_reaction(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    atr_jw_kv_fixed(w, "ctl_reaction_p50_us", c->ctl_reaction_p50_us, DIGITS);
    atr_jw_kv_fixed(w, "ctl_reaction_p99_us", c->ctl_reaction_p99_us, DIGITS);
    atr_jw_kv_fixed(w, "ctl_reaction_bound_p50_us", c->ctl_reaction_bound_p50_us, DIGITS);
    atr_jw_kv_fixed(w, "ctl_reaction_bound_p99_us", c->ctl_reaction_bound_p99_us, DIGITS);
}

/* browser_restore: only where a browser step tried (docs/browser.md). */
static void put_restore(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    unsigned long tried = 0;
    for (int k = 0; k < ATR_RESTORE_KINDS; k++)
        tried += c->restore[k];
    if (!tried)
        return;
    atr_jw_key(w, "browser_restore");
    atr_jw_object_begin(w);
    for (int k = 0; k < ATR_RESTORE_KINDS; k++)
        atr_jw_kv_uint(w, atr_restore_kinds[k], c->restore[k]);
    atr_jw_kv_uint(w, "resources_missing", c->restore_resources_missing);
    atr_jw_object_end(w);
}

/* Figures with 3 decimals; NaN (a percentile of no samples) is null. */
static void put_config(struct atr_jw *w, const struct atr_replay_config_summary *c)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "config", c->config);
    put_counts(w, c);
    put_failures(w, c);
    put_restore(w, c);
    atr_jw_kv_fixed(w, "latency_p50_ms", c->latency_p50_ms, DIGITS);
    atr_jw_kv_fixed(w, "latency_p95_ms", c->latency_p95_ms, DIGITS);
    atr_jw_kv_fixed(w, "latency_p99_ms", c->latency_p99_ms, DIGITS);
    atr_jw_kv_fixed(w, "latency_max_ms", c->latency_max_ms, DIGITS);
    atr_jw_kv_fixed(w, "cpu_ms_total", c->cpu_ms_total, DIGITS);
    atr_jw_kv_fixed(w, "max_rss_mb", c->max_rss_mb, DIGITS);
    atr_jw_kv_int(w, "mem_high_events_total", c->mem_high_events_total);
    atr_jw_kv_int(w, "mem_max_events_total", c->mem_max_events_total);
    atr_jw_kv_int(w, "oom_kills", c->oom_kills);
    atr_jw_kv_uint(w, "mem_max_hit_steps", c->mem_max_hit_steps);
    atr_jw_kv_uint(w, "pids_max_hit_steps", c->pids_max_hit_steps);
    atr_jw_kv_uint(w, "disk_full_steps", c->disk_full_steps);
    atr_jw_kv_fixed(w, "mem_pressure_some_ms_total", c->mem_pressure_some_ms_total, DIGITS);
    atr_jw_kv_fixed(w, "cpu_pressure_some_ms_total", c->cpu_pressure_some_ms_total, DIGITS);
    atr_jw_kv_int(w, "ctl_adjustments", c->ctl_adjustments);
    put_reaction(w, c);
    put_per_trace(w, c);
    atr_jw_object_end(w);
}

void atr_replay_summary_members(struct atr_replay_summary *s, const char *backend,
                                bool incomplete, struct atr_jw *w)
{
    atr_jw_kv_str(w, "backend", backend);
    atr_jw_kv_bool(w, "incomplete", incomplete);
    atr_jw_key(w, "configs");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < atr_replay_summary_n_configs(s); i++) {
        struct atr_replay_config_summary c;
        atr_replay_summary_config(s, i, &c);
        put_config(w, &c);
    }
    atr_jw_array_end(w);
}

void atr_replay_summary_json(struct atr_replay_summary *s, const char *backend,
                             bool incomplete, struct atr_buf *out)
{
    struct atr_jw w;
    atr_jw_init(&w, out, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_replay_summary_members(s, backend, incomplete, &w);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);   /* the caller's buffer has no cap */
}
