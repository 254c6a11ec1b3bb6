/* summary.c - per-configuration summary of metrics.jsonl lines. */
#include "runner/summary.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/writer.h"
#include "stats/percentile.h"
#include "util/alloc.h"

enum { MAX_CONFIGS = 8 };

struct config_sum {
    char name[32];
    unsigned long traces, total_steps, ran, skipped, failed, timed_out;
    char last_trace[256];
    struct atr_samples latency;
    double cpu_ms, max_rss_mb;
    long long high, max_events, oom;
    double mem_some_ms, cpu_some_ms;
    long long ctl_adjustments;
    struct atr_samples reaction, reaction_bound;   /* dynamic: microseconds */
};

struct atr_replay_summary {
    struct config_sum c[MAX_CONFIGS];
    int n;
    struct atr_arena arena;     /* one line's JSON at a time */
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
    }
    atr_arena_release(&s->arena);
    free(s);
}

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

static double num(const struct atr_json *o, const char *key)
{
    double v;
    return atr_json_get_num(o, key, &v) ? v : -1;
}

static void add_samples(struct atr_samples *to, const struct atr_json *arr)
{
    if (!atr_json_is(arr, ATR_JSON_ARRAY))
        return;
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next)
        if (e->type == ATR_JSON_NUMBER && e->u.num >= 0)
            atr_samples_add(to, e->u.num);
}

static void add_step(struct config_sum *c, const struct atr_json *o)
{
    add_samples(&c->reaction, atr_json_get(o, "ctl_reaction_us"));
    add_samples(&c->reaction_bound, atr_json_get(o, "ctl_reaction_bound_us"));
    c->ran++;
    double lat = num(o, "latency_ms");
    if (lat >= 0)
        atr_samples_add(&c->latency, lat);
    if (num(o, "cpu_ms") > 0)
        c->cpu_ms += num(o, "cpu_ms");
    if (num(o, "max_rss_mb") > c->max_rss_mb)
        c->max_rss_mb = num(o, "max_rss_mb");
    if (num(o, "mem_high_events") > 0)
        c->high += (long long)num(o, "mem_high_events");
    if (num(o, "mem_max_events") > 0)
        c->max_events += (long long)num(o, "mem_max_events");
    if (num(o, "oom_kills") > 0)
        c->oom += (long long)num(o, "oom_kills");
    if (num(o, "mem_pressure_some_ms") > 0)
        c->mem_some_ms += num(o, "mem_pressure_some_ms");
    if (num(o, "cpu_pressure_some_ms") > 0)
        c->cpu_some_ms += num(o, "cpu_pressure_some_ms");
    if (num(o, "ctl_adjustments") > 0)
        c->ctl_adjustments += (long long)num(o, "ctl_adjustments");
    if (num(o, "exit_code") != 0)
        c->failed++;
    struct atr_json *to = atr_json_get(o, "timed_out");
    if (to && to->type == ATR_JSON_TRUE)
        c->timed_out++;
}

int atr_replay_summary_add(struct atr_replay_summary *s, const char *line, size_t len,
                           const char *file, unsigned long lineno, struct atr_error *err)
{
    struct atr_json *o;
    struct atr_json_err je;
    atr_arena_clear(&s->arena);
    if (atr_json_parse(&s->arena, line, len, NULL, &o, &je) < 0)
        return atr_error_at(err, file, lineno, je.col, "%s", je.msg);
    const char *config = atr_json_get_str(o, "config", NULL);
    const char *trace = atr_json_get_str(o, "trace_id", NULL);
    if (!atr_json_is(o, ATR_JSON_OBJECT) || !config || !trace)
        return atr_error_at(err, file, lineno, 1,
                            "expected a metrics object with \"config\" and \"trace_id\"");
    struct config_sum *c = config_of(s, config);
    if (!c)
        return atr_error_at(err, file, lineno, 1, "too many configurations (at most %d)",
                            MAX_CONFIGS);
    /* Lines of one trace are consecutive in a metrics file. */
    if (strncmp(c->last_trace, trace, sizeof c->last_trace - 1) != 0) {
        c->traces++;
        snprintf(c->last_trace, sizeof c->last_trace, "%s", trace);
    }
    c->total_steps++;
    if (atr_json_get(o, "skipped"))
        c->skipped++;
    else
        add_step(c, o);
    return 0;
}

static void put_counts(struct atr_jw *w, const struct config_sum *c)
{
    atr_jw_kv_uint(w, "traces", c->traces);
    atr_jw_kv_uint(w, "total_steps", c->total_steps);
    atr_jw_kv_uint(w, "ran_steps", c->ran);
    atr_jw_kv_uint(w, "skipped_steps", c->skipped);
    atr_jw_kv_uint(w, "failed_steps", c->failed);
    atr_jw_kv_uint(w, "timed_out_steps", c->timed_out);
}

/* Figures with 3 decimals; a percentile of no samples is NaN: null. */
static void put_config(struct atr_jw *w, struct config_sum *c)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "config", c->name);
    put_counts(w, c);
    atr_jw_kv_fixed(w, "latency_p50_ms", atr_samples_percentile(&c->latency, 50), 3);
    atr_jw_kv_fixed(w, "latency_p95_ms", atr_samples_percentile(&c->latency, 95), 3);
    atr_jw_kv_fixed(w, "latency_p99_ms", atr_samples_percentile(&c->latency, 99), 3);
    atr_jw_kv_fixed(w, "latency_max_ms", atr_samples_percentile(&c->latency, 100), 3);
    atr_jw_kv_fixed(w, "cpu_ms_total", c->cpu_ms, 3);
    atr_jw_kv_fixed(w, "max_rss_mb", c->max_rss_mb, 3);
    atr_jw_kv_int(w, "mem_high_events_total", c->high);
    atr_jw_kv_int(w, "mem_max_events_total", c->max_events);
    atr_jw_kv_int(w, "oom_kills", c->oom);
    atr_jw_kv_fixed(w, "mem_pressure_some_ms_total", c->mem_some_ms, 3);
    atr_jw_kv_fixed(w, "cpu_pressure_some_ms_total", c->cpu_some_ms, 3);
    atr_jw_kv_int(w, "ctl_adjustments", c->ctl_adjustments);
    /* Reaction: condition seen -> limit written; the bound adds the time it
     * may have been visible before the controller looked (controller.h). */
    atr_jw_kv_fixed(w, "ctl_reaction_p50_us", atr_samples_percentile(&c->reaction, 50), 3);
    atr_jw_kv_fixed(w, "ctl_reaction_p99_us", atr_samples_percentile(&c->reaction, 99), 3);
    atr_jw_kv_fixed(w, "ctl_reaction_bound_p50_us",
                    atr_samples_percentile(&c->reaction_bound, 50), 3);
    atr_jw_kv_fixed(w, "ctl_reaction_bound_p99_us",
                    atr_samples_percentile(&c->reaction_bound, 99), 3);
    atr_jw_object_end(w);
}

void atr_replay_summary_json(struct atr_replay_summary *s, const char *backend,
                             bool incomplete, struct atr_buf *out)
{
    struct atr_jw w;
    atr_jw_init(&w, out, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "backend", backend);
    atr_jw_kv_bool(&w, "incomplete", incomplete);
    atr_jw_key(&w, "configs");
    atr_jw_array_begin(&w);
    for (int i = 0; i < s->n; i++)
        put_config(&w, &s->c[i]);
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);   /* the caller's buffer has no cap */
}
