/* tenants.h - several traces at once (`atr replay tools --tenants`): each
 * trace is one tenant with its own subtree "tenant<k>" below the run root
 * and its own cpu weight; all tenants run concurrently, then (for the
 * baseline) each alone, one after another, in the same subtree, so each
 * tenant's latency inflation is shared / alone on the same steps.
 *
 * Memory: a report copies its trace id and owns its latency samples
 * (atr_tenant_report_release); a summary entry copies the trace id again
 * (atr_tenant_summary_release); step records passed to the sink are valid
 * during the call only. */
#ifndef ATR_RUNNER_TENANTS_H
#define ATR_RUNNER_TENANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/percentile.h"
#include "runner/replay.h"
#include "trace/trace.h"
#include "util/buf.h"
#include "util/error.h"

#define ATR_TENANTS_MAX 32          /* one thread and one live step each */
#define ATR_TENANT_WEIGHT_DEFAULT 100

enum atr_tenant_phase { ATR_TENANT_SHARED, ATR_TENANT_ALONE };
const char *atr_tenant_phase_name(enum atr_tenant_phase p);   /* "shared", "alone" */

/* Called once per step record; calls are serialised (never two at once),
 * though they come from the tenants' threads. */
typedef int (*atr_tenant_sink)(void *ctx, unsigned tenant, enum atr_tenant_phase phase,
                               const struct atr_step_metrics *m, struct atr_error *err);

struct atr_tenants_opts {
    const int64_t *weights;         /* weights[k] for tenant k < n_weights, else 100 */
    size_t n_weights;
    bool baseline;                  /* also run each trace alone */
};

/* One tenant's latencies per phase (steps that ran; skipped ones excluded). */
struct atr_tenant_report {
    unsigned tenant;
    char *trace_id;                 /* malloc copy */
    int64_t weight;
    bool weight_applied;            /* false: the host has no cpu controller */
    unsigned long steps;            /* steps that ran in the shared phase */
    struct atr_samples shared, alone;   /* latency_ms */
    struct atr_samples load_shared, load_alone;   /* page_load_ms of browser steps */
};

/* Runs traces[0..n) as tenants 0..n-1 on rp (whose options give the
 * configuration and limits): every tenant concurrently, one thread each,
 * starting together; then, with o->baseline, each alone in turn. reps[k]
 * (n of them, zeroed by the caller) receives tenant k's figures. Returns 0,
 * or -1 with err set (the first error of any tenant; the other tenants
 * still finish). Stops early, returning 0, once atr_replay_stop was called.
 * Every tenant group is removed before it returns. */
/* Like atr_tenants_run; resources[k] (resources NULL, or entries NULL:
 * none) is the Playwright zip served to tenant k's browser steps
 * (atr_replay_trace_res). */
int atr_tenants_run_res(struct atr_replay *rp, const struct atr_trace *traces,
                        const char *const *resources, size_t n,
                        const struct atr_tenants_opts *o, atr_tenant_sink sink, void *ctx,
                        struct atr_tenant_report *reps, struct atr_error *err);
int atr_tenants_run(struct atr_replay *rp, const struct atr_trace *traces, size_t n,
                    const struct atr_tenants_opts *o, atr_tenant_sink sink, void *ctx,
                    struct atr_tenant_report *reps, struct atr_error *err);

/* Report math, exposed for tests. Mean and p50 of a phase's latencies (NAN
 * when empty); inflation = shared / alone of a statistic, NAN when either
 * side is missing or alone is not positive. */
double atr_tenant_mean(const struct atr_samples *s);
double atr_tenant_p50(struct atr_samples *s);
double atr_tenant_inflation(double shared, double alone);
/* Sample standard deviation (n - 1), NAN below two samples. */
double atr_tenant_sd(const struct atr_samples *s);

/* One summary.json "tenants" entry, its figures as written: latencies
 * rounded to 3 decimals, inflations to 4, NaN where it writes null. */
struct atr_tenant_summary {
    const char *config;             /* not copied: a static name */
    unsigned tenant;
    char *trace_id;                 /* malloc copy: atr_tenant_summary_release */
    int64_t weight;
    bool weight_applied;
    unsigned long steps;
    double latency_mean_ms_alone, latency_mean_ms_shared;
    double latency_p50_ms_alone, latency_p50_ms_shared;
    double inflation_mean, inflation_p50;
    /* The distribution beyond its centre: p95 and standard deviation of
     * the step latencies (a test suite's run-time variance), and for
     * browser tenants the pages' own load time (NAN: none). */
    double latency_p95_ms_alone, latency_p95_ms_shared;
    double latency_sd_ms_alone, latency_sd_ms_shared;
    unsigned long page_loads;       /* shared phase */
    double page_load_mean_ms_alone, page_load_mean_ms_shared, page_load_degradation;
};

/* The entry of r under config (sorts r's samples). */
void atr_tenant_report_summary(struct atr_tenant_report *r, const char *config,
                               struct atr_tenant_summary *out);
/* Writes the entry as a value: {"config", "tenant", "trace_id", "weight",
 * "weight_applied", "steps", "latency_mean_ms_alone",
 * "latency_mean_ms_shared", "latency_p50_ms_alone", "latency_p50_ms_shared",
 * "inflation_mean", "inflation_p50", "latency_p95_ms_alone",
 * "latency_p95_ms_shared", "latency_sd_ms_alone", "latency_sd_ms_shared",
 * "page_loads", "page_load_mean_ms_alone", "page_load_mean_ms_shared",
 * "page_load_degradation"}; unknown numbers are null. */
struct atr_jw;
void atr_tenant_summary_put(struct atr_jw *w, const struct atr_tenant_summary *t);
void atr_tenant_summary_release(struct atr_tenant_summary *t);

/* Appends r's entry (as atr_tenant_summary_put writes it) to out. */
void atr_tenant_report_json(struct atr_tenant_report *r, const char *config,
                            struct atr_buf *out);
void atr_tenant_report_release(struct atr_tenant_report *r);

/* One metrics.jsonl line of a tenant's step: the members of
 * atr_step_metrics_json, then "tenant" and "phase". */
void atr_tenant_metrics_json(struct atr_buf *b, const char *config, unsigned tenant,
                             enum atr_tenant_phase phase, const struct atr_step_metrics *m);

#endif
