/* llm-run.c - a series of runs (exp/series.h) and what is printed of it:
 * each run's block, its progress, and the comparison at the end (see
 * llm-run.h). */
#include "cli/llm-run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/progress.h"
#include "exp/series.h"
#include "report/compare.h"
#include "report/repeats.h"
#include "stats/result.h"
#include "util/alloc.h"

/* What the callbacks share while the series runs. */
struct show {
    const struct llm_run *r;
    const struct atr_target *t;
    struct cli_progress prog;
    struct atr_compare *cmp;     /* the table of the runs, or NULL */
    struct atr_repeats *reps;    /* --repeat: the table over repeats, or NULL */
    size_t failed;               /* runs that failed (--repeat only: the others go on) */
};

static bool quiet(const struct show *s)
{
    return s->r->report->quiet;
}

static void on_start(void *ctx, const struct atr_series_run *run)
{
    struct show *s = ctx;
    (void)run;
    cli_progress_start(&s->prog, s->t->kind == ATR_TARGET_SIM ? "sim" : "replay llm", quiet(s));
}

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct show *s = ctx;
    cli_progress_count(&s->prog, cli_progress_now(), done, total, "requests");
}

static void on_end(void *ctx, const struct atr_series_run *run)
{
    struct show *s = ctx;
    (void)run;
    cli_progress_end(&s->prog);
}

static void print_engine(const struct atr_target *t, const struct atr_engine_stats *st)
{
    const struct atr_profile *p = &t->profile;
    char rep[32] = "";
    if (t->replicas > 1)
        snprintf(rep, sizeof rep, ", replicas %u", t->replicas);
    printf("engine (%s/%s, tp %u%s): %llu iterations, mean batch %.1f, prefix cache hit "
           "rate %.1f%%, KV peak %u of %u blocks (mean %.0f), %llu preemptions, "
           "%llu evictions\n",
           p->gpu->name, p->model->name, p->tp, rep, (unsigned long long)st->iterations,
           st->batch_mean, 100 * st->prefix_hit_rate, st->kv_blocks_peak, st->kv_blocks_total,
           st->kv_blocks_mean, (unsigned long long)st->preemptions,
           (unsigned long long)st->evictions);
    if (st->kv_pins)             /* --kv-retain */
        printf("KV retention: %llu pinned requests, %llu pins dropped early for another's "
               "memory\n", (unsigned long long)st->kv_pins,
               (unsigned long long)st->kv_pins_dropped);
}

/* Under the block: whether the client limited the run, and its figures. */
static void print_client(const struct atr_client_verdict *v)
{
    char rate[64] = "all at once";
    if (isfinite(v->scheduled_rate))
        snprintf(rate, sizeof rate, "%.1f of %.1f req/s", v->achieved_rate, v->scheduled_rate);
    printf("%s%s (CPU %.1f us/request, busiest loop %.0f %% of a core, send lag p99 %.2f ms, "
           "%s, %lld in flight for %u connections)\n",
           v->client_bound ? "CLIENT-BOUND: " : "Client: not the bottleneck",
           v->client_bound ? v->reason : "", v->cpu_per_request_us, v->busiest * 100,
           v->send_lag_p99_ms, rate, (long long)v->max_in_flight, v->connections);
}

/* A run stopped early says so above its block: the figures are of what
 * finished, not of the workload. */
static void print_block(const struct atr_exp_result *res, const struct atr_llm_summary *sum,
                        const struct atr_llm_bench_config *bc)
{
    if (res->incomplete)
        printf("INCOMPLETE (interrupted): %zu of %zu requests finished\n", res->n, res->total);
    struct atr_buf b = ATR_BUF_INIT;
    atr_llm_write_block(&b, sum, bc);
    fputs(b.data ? b.data : "", stdout);
    atr_buf_release(&b);
    if (res->has_client)
        print_client(&res->verdict);
}

static size_t count_ok(const struct atr_exp_result *res)
{
    size_t ok = 0;
    for (size_t i = 0; i < res->n; i++)
        ok += res->recs[i].success;
    return ok;
}

/* "== policy naive", with its repeat when there are repeats. */
static void print_header(const struct show *s, const struct atr_series_run *run)
{
    if (s->r->repeats > 1)
        printf("\n== policy %s, repeat %u of %u\n", run->policy ? run->policy : "recorded",
               run->repeat, s->r->repeats);
    else
        printf("\n== policy %s\n", run->res->policy);
}

/* A run that could not be made, or where every request failed: without
 * --repeat the series stops there (exit 1); with it, the run is recorded
 * as failed and the others go on. */
static int failed_run(struct show *s, const struct atr_series_run *run, const char *why)
{
    if (s->r->repeats <= 1)
        return cli_fail("%s", why);
    char msg[600];
    snprintf(msg, sizeof msg, "repeat %u of policy %s failed, excluded from the intervals: %s",
             run->repeat, run->policy ? run->policy : "recorded", why);
    cli_warn(msg);
    s->failed++;
    if (s->reps) {
        char name[256];
        atr_target_name(s->t, name, sizeof name);
        atr_repeats_add_failed(s->reps, name, run->policy ? run->policy : "recorded",
                               run->repeat);
    }
    return 0;
}

/* The exit status of a run whose results are written: a stopped run and
 * one where nothing succeeded fail, each saying so. */
static int run_status(struct show *s, const struct atr_series_run *run)
{
    const struct atr_exp_result *res = run->res;
    if (res->incomplete) {
        cli_fail("interrupted: %zu of %zu requests finished, the result is marked incomplete",
                 res->n, res->total);
        return 128 + SIGINT;
    }
    if (!res->n || count_ok(res))
        return EXIT_OK;
    char why[512];
    snprintf(why, sizeof why, "every request failed (first: %s%s%s)", res->recs[0].error,
             res->recs[0].error_detail ? ": " : "",
             res->recs[0].error_detail ? res->recs[0].error_detail : "");
    return failed_run(s, run, why);
}

/* The run's row of the tables. */
static void add_rows(struct show *s, const struct atr_series_run *run)
{
    char name[256];
    atr_target_name(s->t, name, sizeof name);
    const char *policy = run->res->policy ? run->res->policy : "recorded";
    if (s->cmp)
        atr_compare_add_summary(s->cmp, name, policy, run->sum, run->bc);
    if (s->reps && count_ok(run->res))
        atr_repeats_add_run(s->reps, name, policy, run->repeat, run->sum, run->bc,
                            run->res->recs, run->res->n);
}

static int on_result(void *ctx, const struct atr_series_run *run)
{
    struct show *s = ctx;
    if (run->failed)
        return failed_run(s, run, run->failed->msg);
    if (run->n > 1 && !quiet(s))
        print_header(s, run);
    if (!quiet(s)) {
        print_block(run->res, run->sum, run->bc);
        if (run->res->has_engine)
            print_engine(s->t, &run->res->engine);
    }
    llm_report_warn_prompts(run->sum);
    add_rows(s, run);
    return run_status(s, run);
}

static void print_tables(const struct show *s)
{
    struct atr_buf b = ATR_BUF_INIT;
    if (s->cmp) {                    /* the runs side by side, as atr compare */
        atr_compare_write_markdown(&b, s->cmp);
        printf("%s%s", s->r->table_only ? "" : "\n== comparison\n", b.data ? b.data : "");
    }
    if (s->reps) {
        atr_buf_clear(&b);
        atr_repeats_write_markdown(&b, s->reps);
        printf("%s%s", s->r->table_only && !s->cmp ? "" : "\n== repeats\n",
               b.data ? b.data : "");
    }
    atr_buf_release(&b);
}

int llm_run(const struct llm_run *r, const struct atr_target *t, char *const *paths,
            size_t n_paths)
{
    const struct llm_report_opts *o = r->report;
    size_t n_policies = r->policies->n;
    size_t runs = (n_policies ? n_policies : 1) * (r->repeats > 1 ? r->repeats : 1);
    bool table = r->table_only || ((runs > 1 || r->repeats) && !o->quiet);
    struct show s = {
        .r = r, .t = t,
        .cmp = table && !r->repeats ? atr_compare_new() : NULL,
        .reps = table && r->repeats ? atr_repeats_new(r->repeats, ATR_REPEATS_MARGIN) : NULL,
    };
    struct atr_series_cfg cfg = {
        .paths = paths, .n_paths = n_paths, .from = r->from,
        .schedule = &r->sched->schedule, .max_concurrency = r->sched->max_concurrency,
        .policies = r->policies->names, .n_policies = n_policies,
        .policy_options = r->policy_opts, .repeats = r->repeats,
        .shard_i = r->shard_i, .shard_n = r->shard_n, .start_at = r->start_at,
        .threads = r->threads, .stop = r->stop,
        .save_result = o->save_result, .requests_out = o->requests_out,
        .iterations_out = r->iterations_out,
        .slo_ttft_ms = o->slo_ttft_ms, .slo_tpot_ms = o->slo_tpot_ms,
        .slo_e2el_ms = o->slo_e2el_ms, .slo_session_ms = o->slo_session_ms,
        .percentiles = o->percentiles,
        .n_percentiles = o->n_percentiles,
        .on_start = on_start, .on_end = on_end, .on_progress = on_progress,
        .on_result = on_result, .ctx = &s,
    };
    struct atr_error err;
    int rc = atr_series_run(t, &cfg, &err);
    int status = rc < 0 ? cli_fail_err(&err) : rc;
    if (status == EXIT_OK && (s.cmp || s.reps))
        print_tables(&s);
    if (status == EXIT_OK && s.failed)
        status = cli_fail("%zu of %zu runs failed; the intervals are of the others", s.failed,
                          runs);
    atr_compare_free(s.cmp);
    atr_repeats_free(s.reps);
    return status;
}
