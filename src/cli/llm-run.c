/* llm-run.c - a workload on a target under a list of policies, and the
 * outputs of each run (see llm-run.h). */
#include "cli/llm-run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/llm-threads.h"
#include "cli/progress.h"
#include "json/writer.h"
#include "report/compare.h"
#include "stats/result.h"
#include "util/alloc.h"
#include "util/output.h"

static void on_progress(void *ctx, size_t done, size_t total)
{
    cli_progress_count(ctx, cli_progress_now(), done, total, "requests");
}

/* One --iterations-out line per engine iteration: the batch over time. */
static void on_iter(void *ctx, const struct atr_iter_info *it)
{
    struct atr_jw w;
    atr_jw_init(&w, ctx, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_uint(&w, "i", it->index);
    atr_jw_kv_pyfloat(&w, "start_s", it->start);
    atr_jw_kv_pyfloat(&w, "dur_ms", it->seconds * 1000);
    atr_jw_kv_uint(&w, "seqs", it->num_seqs);
    atr_jw_kv_uint(&w, "prefill_tokens", it->work.prefill_tokens);
    atr_jw_kv_uint(&w, "decode_seqs", it->work.decode_seqs);
    atr_jw_kv_uint(&w, "kv_blocks", it->kv_blocks_used);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    atr_jw_finish(&w);
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
}

/* Where one run's files go: as given, or with ".POLICY" before the
 * extension when several runs share the options (malloc'd). */
struct run_paths {
    char *save_result, *requests_out;
};

static void run_paths_make(struct run_paths *p, const struct llm_report_opts *o,
                           const char *policy, bool several)
{
    const char *name = policy ? policy : "recorded";
    p->save_result = several ? llm_report_policy_path(o->save_result, name)
                     : o->save_result ? xstrdup(o->save_result) : NULL;
    p->requests_out = several ? llm_report_policy_path(o->requests_out, name)
                      : o->requests_out ? xstrdup(o->requests_out) : NULL;
}

/* Every file of the series, opened before the workload is read (a path
 * that cannot be written fails before any work) and committed together at
 * the end, so a series leaves all its files or none. Run k writes
 * files[2k] (--save-result) and files[2k + 1] (--requests-out); the last
 * slot is --iterations-out. */
enum { ITERS = 2 * LLM_MAX_POLICIES };

struct outputs {
    struct atr_output *files[ITERS + 1];
};

static size_t n_runs(const struct llm_run *r)
{
    return r->policies->n ? r->policies->n : 1;
}

/* --iterations-out applies to a single run on a single replica. */
static bool wants_iterations(const struct llm_run *r, const struct atr_target *t)
{
    return r->iterations_out && n_runs(r) == 1 && t->replicas == 1;
}

static int open_path(struct atr_output **o, const char *path, struct atr_error *err)
{
    return path && !(*o = atr_output_open(path, err)) ? -1 : 0;
}

static void drop(struct atr_output **f)
{
    atr_output_abort(*f);
    *f = NULL;
}

/* Keeps the files of runs [0, kept) (--iterations-out with any) and
 * removes the other temporaries. */
static void outputs_keep(struct outputs *o, size_t kept)
{
    for (size_t i = 2 * kept; i < ITERS; i++)
        drop(&o->files[i]);
    if (!kept)
        drop(&o->files[ITERS]);
}

static int outputs_open(struct outputs *o, const struct llm_run *r, const struct atr_target *t,
                        struct atr_error *err)
{
    memset(o, 0, sizeof *o);
    int rc = 0;
    for (size_t k = 0; k < n_runs(r) && rc == 0; k++) {
        struct run_paths p;
        run_paths_make(&p, r->report, r->policies->n ? r->policies->names[k] : NULL,
                       n_runs(r) > 1);
        rc = open_path(&o->files[2 * k], p.save_result, err);
        if (rc == 0)
            rc = open_path(&o->files[2 * k + 1], p.requests_out, err);
        free(p.save_result);
        free(p.requests_out);
    }
    if (rc == 0 && wants_iterations(r, t))
        rc = open_path(&o->files[ITERS], r->iterations_out, err);
    if (rc < 0)
        outputs_keep(o, 0);
    return rc;
}

/* The result object and the request lines of one run into its files. */
static int write_files(struct atr_output *const *files, const struct atr_target *t,
                       const struct atr_exp_result *res, const struct atr_llm_summary *sum,
                       const struct atr_llm_bench_config *bc, struct atr_error *err)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (files[0]) {
        atr_exp_write_result(&b, t, res, sum, bc);
        atr_buf_putc(&b, '\n');
        rc = atr_output_write(files[0], b.data, b.len, err);
    }
    for (size_t i = 0; rc == 0 && files[1] && i < res->n; i++) {
        atr_buf_clear(&b);       /* a line at a time: memory stays flat */
        atr_llm_write_request_line(&b, &res->recs[i]);
        rc = atr_output_write(files[1], b.data, b.len, err);
    }
    atr_buf_release(&b);
    return rc;
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
}

/* Summarizes one run, writes it into its files and prints its block
 * (unless quiet); adds its row to cmp when there is one. */
static int report(const struct llm_run *r, const struct atr_target *t,
                  const struct atr_exp_cfg *cfg, const struct atr_exp_result *res,
                  struct atr_output *const *files, struct atr_compare *cmp,
                  struct atr_error *err)
{
    const struct llm_report_opts *o = r->report;
    char date[32];
    llm_report_date(date);
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(t, cfg, res, date, &bc);
    bc.slo_ttft_ms = o->slo_ttft_ms;
    bc.slo_tpot_ms = o->slo_tpot_ms;
    bc.slo_e2el_ms = o->slo_e2el_ms;
    for (size_t i = 0; i < o->n_percentiles; i++)
        bc.percentiles[i] = o->percentiles[i];
    bc.n_percentiles = o->n_percentiles;
    struct atr_llm_summary sum;
    if (atr_llm_summarize(res->recs, res->n, &bc, &sum, err) < 0)
        return -1;
    if (n_runs(r) > 1 && !o->quiet)
        printf("\n== policy %s\n", res->policy);
    int rc = write_files(files, t, res, &sum, &bc, err);
    if (rc == 0 && !o->quiet) {
        print_block(res, &sum, &bc);
        if (res->has_engine)
            print_engine(t, &res->engine);
    }
    if (rc == 0)
        llm_report_warn_prompts(&sum);
    if (rc == 0 && cmp) {
        char name[256];
        atr_target_name(t, name, sizeof name);
        const char *policy = res->policy ? res->policy : "recorded";
        atr_compare_add_summary(cmp, name, policy, &sum, &bc);
    }
    atr_llm_summary_release(&sum);
    return rc;
}

static size_t count_ok(const struct atr_exp_result *res)
{
    size_t ok = 0;
    for (size_t i = 0; i < res->n; i++)
        ok += res->recs[i].success;
    return ok;
}

/* The exit status of a run whose results are written: a stopped run and
 * one where nothing succeeded fail, each saying so. */
static int run_status(const struct atr_exp_result *res)
{
    if (res->incomplete) {
        cli_fail("interrupted: %zu of %zu requests finished, the result is marked incomplete",
                 res->n, res->total);
        return 128 + SIGINT;
    }
    if (res->n && !count_ok(res))
        return cli_fail("every request failed (first: %s%s%s)", res->recs[0].error,
                        res->recs[0].error_detail ? ": " : "",
                        res->recs[0].error_detail ? res->recs[0].error_detail : "");
    return EXIT_OK;
}

/* Run k of the series (policy k, or as recorded) into its files in o; its
 * exit status. *written: its results are in its files (false: the series
 * failed, and keeps none of its files). */
static int run_one(const struct llm_run *r, const struct atr_target *t,
                   const struct atr_workload *w, const bool *keep, size_t k,
                   struct outputs *o, struct atr_compare *cmp, bool *written)
{
    *written = false;
    char run_salt[32];
    snprintf(run_salt, sizeof run_salt, "run%zu ", k + 1);
    struct cli_progress prog;
    cli_progress_start(&prog, t->kind == ATR_TARGET_SIM ? "sim" : "replay llm",
                       r->report->quiet);
    struct atr_buf iters = ATR_BUF_INIT;
    struct atr_output *iters_out = o->files[ITERS];
    struct atr_exp_cfg cfg = {
        .workload = w, .schedule = &r->sched->schedule,
        .max_concurrency = r->sched->max_concurrency, .keep = keep, .start_at = r->start_at,
        .policy = r->policies->n ? r->policies->names[k] : NULL,
        .policy_options = r->policy_opts, .seed = r->sched->schedule.seed,
        .on_iter = iters_out ? on_iter : NULL, .iter_ctx = &iters,
        .run_salt = n_runs(r) > 1 ? run_salt : NULL, .stop = r->stop,
        .on_progress = on_progress, .progress_ctx = &prog,
    };
    struct atr_error err;
    struct atr_exp_result res;
    struct llm_threads *th = NULL;
    if (r->threads > 1) {
        th = xcalloc(1, sizeof *th);
        th->n = r->threads;
    }
    int ran = th ? llm_threads_run(th, t, &cfg, &res, &err) : atr_exp_run(t, &cfg, &res, &err);
    cli_progress_end(&prog);   /* the progress line goes before anything else is said */
    if (ran < 0) {
        free(th);
        atr_buf_release(&iters);
        return cli_fail_err(&err);
    }
    int status;
    if (report(r, t, &cfg, &res, &o->files[2 * k], cmp, &err) < 0 ||
        (iters_out && atr_output_write(iters_out, iters.data ? iters.data : "", iters.len,
                                       &err) < 0)) {
        status = cli_fail_err(&err);
    } else {
        *written = true;
        status = run_status(&res);
    }
    if (th)
        llm_threads_release(th, &res);
    else
        atr_exp_result_release(&res);
    free(th);
    atr_buf_release(&iters);
    return status;
}

/* Reads the workload; an exit status. One without llm steps fails: a run
 * of nothing would report zeros as if they were measured. */
static int load(const struct llm_run *r, const struct atr_target *t, char *const *paths,
                size_t n_paths, struct atr_workload *w)
{
    struct atr_error err;
    uint32_t block = t->kind == ATR_TARGET_SIM ? t->engine.block_size : 16;
    if (atr_workload_load(w, paths, n_paths, r->from, block, &err) < 0)
        return cli_fail_err(&err);
    if (w->n_turns)
        return EXIT_OK;
    struct atr_buf names = ATR_BUF_INIT;
    for (size_t i = 0; i < n_paths; i++)
        atr_buf_printf(&names, "%s%s", i ? ", " : "", paths[i]);
    int rc = cli_fail("no llm steps in %s", names.data ? names.data : "the input");
    atr_buf_release(&names);
    return rc;
}

/* The sessions of shard r->shard_i of r->shard_n: every shard_n-th by its
 * place in the workload (the order of the traces in the files given), so
 * shards of the same files split them the same way on every machine.
 * *keep is NULL without shards; an exit status (a shard left empty fails). */
static int shard_keep(const struct llm_run *r, const struct atr_workload *w, bool **keep)
{
    *keep = NULL;
    if (r->shard_n <= 1)
        return EXIT_OK;
    size_t turns = 0;
    *keep = xcalloc(w->n_sessions ? w->n_sessions : 1, sizeof **keep);
    for (size_t i = r->shard_i; i < w->n_sessions; i += r->shard_n) {
        (*keep)[i] = true;
        turns += w->sessions[i].n_turns;
    }
    if (turns)
        return EXIT_OK;
    return cli_fail("shard %u:%u has no llm steps (the workload has %zu sessions)", r->shard_i,
                    r->shard_n, w->n_sessions);
}

int llm_run(const struct llm_run *r, const struct atr_target *t, char *const *paths,
            size_t n_paths)
{
    struct atr_error err;
    struct outputs o;
    if (outputs_open(&o, r, t, &err) < 0)
        return cli_fail_err(&err);
    struct atr_workload w = ATR_WORKLOAD_INIT;
    int status = load(r, t, paths, n_paths, &w);
    bool *keep = NULL;
    if (status == EXIT_OK)
        status = shard_keep(r, &w, &keep);
    bool table = r->table_only || (n_runs(r) > 1 && !r->report->quiet);
    struct atr_compare *cmp = table ? atr_compare_new() : NULL;
    bool written = status == EXIT_OK;
    size_t done = 0;
    for (size_t k = 0; k < n_runs(r) && status == EXIT_OK; k++) {
        status = run_one(r, t, &w, keep, k, &o, cmp, &written);
        done += written;
    }
    outputs_keep(&o, written ? done : 0);
    if (atr_output_commit_all(o.files, ITERS + 1, &err) < 0)
        status = cli_fail_err(&err);
    if (status == EXIT_OK && cmp) {      /* the runs side by side, as atr compare */
        struct atr_buf b = ATR_BUF_INIT;
        atr_compare_write_markdown(&b, cmp);
        printf("%s%s", r->table_only ? "" : "\n== comparison\n", b.data ? b.data : "");
        atr_buf_release(&b);
    }
    atr_compare_free(cmp);
    free(keep);
    atr_workload_release(&w);
    return status;
}
