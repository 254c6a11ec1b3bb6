/* llm-run.c - a workload on a target under a list of policies, and the
 * outputs of each run (see llm-run.h). */
#include "cli/llm-run.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "json/writer.h"
#include "report/compare.h"
#include "stats/result.h"
#include "util/alloc.h"
#include "util/output.h"

/* A one-line progress display on a terminal, at most 4 redraws a second. */
struct progress {
    bool on;
    double last;
};

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct progress *p = ctx;
    double now = atr_llm_now();
    if (!p->on || (now - p->last < 0.25 && done < total))
        return;
    p->last = now;
    fprintf(stderr, "\rreplay llm  %3.0f%%  %zu/%zu requests ",
            total ? 100.0 * (double)done / (double)total : 100.0, done, total);
    fflush(stderr);
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

static int write_files(const struct run_paths *p, const struct atr_target *t,
                       const struct atr_exp_result *res, const struct atr_llm_summary *sum,
                       const struct atr_llm_bench_config *bc, struct atr_error *err)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (p->save_result) {
        atr_exp_write_result(&b, t, res, sum, bc);
        atr_buf_putc(&b, '\n');
        rc = atr_output_write_file(p->save_result, b.data, b.len, err);
    }
    if (rc == 0 && p->requests_out) {
        atr_buf_clear(&b);
        for (size_t i = 0; i < res->n; i++)
            atr_llm_write_request_line(&b, &res->recs[i]);
        rc = atr_output_write_file(p->requests_out, b.data, b.len, err);
    }
    atr_buf_release(&b);
    return rc;
}

/* Summarizes one run, writes its files and prints its block (unless
 * quiet); adds its row to cmp when there is one. */
static int report(const struct llm_run *r, const struct atr_target *t,
                  const struct atr_exp_cfg *cfg, const struct atr_exp_result *res,
                  struct atr_compare *cmp, struct atr_error *err)
{
    const struct llm_report_opts *o = r->report;
    bool several = r->policies->n > 1;
    char date[32];
    llm_report_date(date);
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(t, cfg, res, date, &bc);
    bc.slo_ttft_ms = o->slo_ttft_ms;
    bc.slo_tpot_ms = o->slo_tpot_ms;
    bc.slo_e2el_ms = o->slo_e2el_ms;
    struct atr_llm_summary sum;
    if (atr_llm_summarize(res->recs, res->n, &bc, &sum, err) < 0)
        return -1;
    if (several && !o->quiet)
        printf("\n== policy %s\n", res->policy);
    struct run_paths paths;
    run_paths_make(&paths, o, res->policy, several);
    int rc = write_files(&paths, t, res, &sum, &bc, err);
    if (rc == 0 && !o->quiet) {
        struct atr_buf b = ATR_BUF_INIT;
        atr_llm_write_block(&b, &sum, &bc);
        fputs(b.data ? b.data : "", stdout);
        atr_buf_release(&b);
        if (res->has_engine)
            print_engine(t, &res->engine);
    }
    if (rc == 0 && cmp) {
        char name[256];
        atr_target_name(t, name, sizeof name);
        const char *policy = res->policy ? res->policy : "recorded";
        atr_compare_add_summary(cmp, name, policy, &sum, &bc);
    }
    free(paths.save_result);
    free(paths.requests_out);
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

/* Run k of the series (policy k, or as recorded); its exit status. */
static int run_one(const struct llm_run *r, const struct atr_target *t,
                   const struct atr_workload *w, size_t k, struct atr_compare *cmp)
{
    bool several = r->policies->n > 1;
    char run_salt[32];
    snprintf(run_salt, sizeof run_salt, "run%zu ", k + 1);
    struct progress prog = { .on = t->kind == ATR_TARGET_HTTP && !r->report->quiet &&
                                   isatty(STDERR_FILENO) };
    struct atr_buf iters = ATR_BUF_INIT;
    bool want_iters = r->iterations_out && !several && t->replicas == 1;
    struct atr_exp_cfg cfg = {
        .workload = w, .schedule = &r->sched->schedule,
        .max_concurrency = r->sched->max_concurrency,
        .policy = r->policies->n ? r->policies->names[k] : NULL,
        .policy_options = r->policy_opts, .seed = r->sched->schedule.seed,
        .on_iter = want_iters ? on_iter : NULL, .iter_ctx = &iters,
        .run_salt = several ? run_salt : NULL, .stop = r->stop,
        .on_progress = on_progress, .progress_ctx = &prog,
    };
    struct atr_error err;
    struct atr_exp_result res;
    if (atr_exp_run(t, &cfg, &res, &err) < 0) {
        atr_buf_release(&iters);
        return cli_fail_err(&err);
    }
    if (prog.on)
        fputs("\r\033[K", stderr);
    int status = EXIT_OK;
    if (report(r, t, &cfg, &res, cmp, &err) < 0 ||
        (want_iters && atr_output_write_file(r->iterations_out, iters.data, iters.len, &err) < 0))
        status = cli_fail_err(&err);
    else if (res.incomplete)
        status = 128 + SIGINT;
    else if (res.n && !count_ok(&res))
        status = cli_fail("every request failed (first: %s)", res.recs[0].error);
    atr_exp_result_release(&res);
    atr_buf_release(&iters);
    return status;
}

int llm_run(const struct llm_run *r, const struct atr_target *t, char *const *paths,
            size_t n_paths)
{
    struct atr_error err;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    uint32_t block = t->kind == ATR_TARGET_SIM ? t->engine.block_size : 16;
    if (atr_workload_load(&w, paths, n_paths, r->from, block, &err) < 0)
        return cli_fail_err(&err);
    bool table = r->table_only || (r->policies->n > 1 && !r->report->quiet);
    struct atr_compare *cmp = table ? atr_compare_new() : NULL;
    int status = EXIT_OK;
    size_t runs = r->policies->n ? r->policies->n : 1;
    for (size_t k = 0; k < runs && status == EXIT_OK; k++)
        status = run_one(r, t, &w, k, cmp);
    if (status == EXIT_OK && cmp) {      /* the runs side by side, as atr compare */
        struct atr_buf b = ATR_BUF_INIT;
        atr_compare_write_markdown(&b, cmp);
        printf("%s%s", r->table_only ? "" : "\n== comparison\n", b.data ? b.data : "");
        atr_buf_release(&b);
    }
    atr_compare_free(cmp);
    atr_workload_release(&w);
    return status;
}
