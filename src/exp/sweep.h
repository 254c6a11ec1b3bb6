/* sweep.h - a GuideLLM-style rate sweep of one workload on one target: a
 * synchronous run (one request at a time), a throughput run (all at once),
 * then N Poisson rates evenly spaced from the synchronous rate up to the
 * throughput rate; with SLOs, a bisection between the highest passing and
 * the lowest failing rate for the highest rate that meets them all.
 *
 *     struct atr_slo slo;        atr_slo_parse(&slo, "ttft_p99=500ms", &err);
 *     struct atr_sweep_cfg cfg = { .workload = &w, .n_rates = 5, .slo = &slo };
 *     struct atr_sweep_result r; atr_sweep_run(&t, &cfg, &r, &err);
 *     atr_sweep_write(&buf, &t, &cfg, &r);
 *     atr_sweep_result_release(&r);
 *
 * Rates are sessions per second (each trace is a session; a generated
 * request is a session of one turn). The synchronous and throughput rates
 * are the sessions each run completed over its duration.
 *
 * Memory: the SLO is a value; a result owns its runs array
 * (atr_sweep_result_release); cfg's workload and strings are borrowed. */
#ifndef ATR_EXP_SWEEP_H
#define ATR_EXP_SWEEP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exp/exp.h"
#include "sched/workload.h"
#include "stats/metrics.h"
#include "util/buf.h"
#include "util/error.h"

/* The generated workload: n single-turn sessions ("request-I") of
 * prompt_tokens in and output_tokens out, block size 16, no prefix ids. */
void atr_workload_generated(struct atr_workload *w, size_t n, uint32_t prompt_tokens,
                            uint32_t output_tokens);

/* ---- SLOs ---- */

enum atr_slo_metric { ATR_SLO_TTFT, ATR_SLO_TPOT, ATR_SLO_ITL, ATR_SLO_E2EL };

#define ATR_SLO_MAX 16

struct atr_slo_item {
    enum atr_slo_metric metric;
    unsigned pct;                /* 50, 90 or 99 */
    double ms;                   /* the bound: the percentile must be <= ms */
};

struct atr_slo {
    struct atr_slo_item items[ATR_SLO_MAX];
    size_t n;
};

/* Parses "KEY=VALUE,..." with keys ttft_p50/p90/p99, tpot_*, itl_*,
 * e2el_* and values like "500ms", "0.5s" (a unit is required). A key given
 * twice keeps the last. 0, or -1 with err naming the bad part. */
int atr_slo_parse(struct atr_slo *s, const char *spec, struct atr_error *err);
/* "ttft_p99" of an item into out. */
void atr_slo_key(const struct atr_slo_item *it, char *out, size_t cap);
/* Whether the summary (percentiles 50, 90, 99 configured) meets every
 * item; a run where nothing completed meets none. */
bool atr_slo_met(const struct atr_slo *s, const struct atr_llm_summary *sum);

/* ---- rates and the bisection, pure ---- */

/* out[0..n): sync + (max - sync) * i / n for i = 1..n (the last is max);
 * all max when max <= sync. */
void atr_sweep_rates(double sync_rate, double max_rate, unsigned n, double *out);

/* Measures one rate: 0 with *meets set, or -1 with err set (stops). */
typedef int atr_sweep_measure_fn(void *ctx, double rate, bool *meets, struct atr_error *err);

/* Bisects [lo, hi], lo meeting the SLOs and hi not, until hi - lo <= tol *
 * hi or max_steps measurements; *best is the highest rate found to meet
 * them (lo at least). Returns the number of measurements, or -1. */
int atr_sweep_bisect(double lo, double hi, double tol, unsigned max_steps,
                     atr_sweep_measure_fn *measure, void *ctx, double *best,
                     struct atr_error *err);

/* ---- the sweep ---- */

enum atr_sweep_kind {
    ATR_SWEEP_SYNCHRONOUS, ATR_SWEEP_THROUGHPUT, ATR_SWEEP_RATE, ATR_SWEEP_BISECT
};
const char *atr_sweep_kind_name(enum atr_sweep_kind k);

/* One statistic in ms. */
struct atr_sweep_stat {
    double mean, median, p90, p99;
};

/* The figures of one run (vLLM's definitions, stats/metrics.h). */
struct atr_sweep_metrics {
    int64_t completed, failed;
    double duration_s;
    double request_throughput, output_throughput;
    double sessions_per_s;       /* completed sessions over the duration */
    struct atr_sweep_stat ttft, tpot, itl, e2el;
    bool goodput_configured;
    double request_goodput;
    int64_t good_completed;
};

struct atr_sweep_run {
    enum atr_sweep_kind kind;
    double rate;                 /* the Poisson rate asked for; NaN: sync, throughput */
    unsigned repeat;             /* 1..repeats with cfg->repeats > 1; else 0 */
    struct atr_sweep_metrics m;
    bool meets;                  /* every SLO (false without SLOs); with repeats, every
                                    repeat of its rate met them */
};

/* What the workload was, echoed into the result. */
struct atr_sweep_workload_desc {
    bool generated;
    size_t requests;             /* generated: */
    uint32_t prompt_tokens, output_tokens;
    char *const *paths;          /* traces: */
    size_t n_paths;
};

struct atr_sweep_cfg {
    const struct atr_workload *workload;
    struct atr_sweep_workload_desc desc;
    const char *policy, *policy_options;   /* NULL: as recorded */
    uint64_t seed;                /* Poisson gaps and the policy's */
    /* The rate runs' arrivals: false, constant (GuideLLM's default: session
     * i at i / rate); true, Poisson. */
    bool poisson;
    unsigned n_rates;             /* >= 1 */
    /* Runs of each rate (0 or 1: one). Repeat r (from 1) has seed + r - 1
     * (fresh Poisson gaps; constant arrivals are the same); the synchronous
     * and throughput runs alternate, then the rates run in turn, all of
     * them once per repeat (interleaved: drift hits every rate alike); the
     * rates come from the medians of the synchronous and throughput runs;
     * a bisection step runs its rate's repeats together. */
    unsigned repeats;
    const struct atr_slo *slo;    /* NULL or none: no goodput search */
    const volatile sig_atomic_t *stop;
    /* Before and after each run: index from 0, the planned number of runs
     * (it grows with the bisection), the run (after: with its metrics). */
    void (*on_start)(void *ctx, size_t i, size_t planned, const struct atr_sweep_run *run);
    void (*on_done)(void *ctx, size_t i, size_t planned, const struct atr_sweep_run *run);
    /* During each run: requests done of total (atr_exp_cfg's on_progress). */
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *ctx;
};

struct atr_sweep_result {
    struct atr_sweep_run *runs;   /* in run order */
    size_t n;
    bool stopped;                 /* cfg->stop was set: the runs are those done */
    bool has_goodput;             /* SLOs given and some rate meets them: */
    double goodput_rate;
    size_t goodput_run;           /* its index in runs */
};

/* Runs the sweep. 0 (also when stopped), or -1 with err set. */
int atr_sweep_run(const struct atr_target *t, const struct atr_sweep_cfg *cfg,
                  struct atr_sweep_result *out, struct atr_error *err);
void atr_sweep_result_release(struct atr_sweep_result *r);

/* The result document ("format": "atr-sweep/1", docs/sweep.md): one
 * compact line, then a newline. 0, or -1 at b's cap. */
int atr_sweep_write(struct atr_buf *b, const struct atr_target *t,
                    const struct atr_sweep_cfg *cfg, const struct atr_sweep_result *r);

#endif
