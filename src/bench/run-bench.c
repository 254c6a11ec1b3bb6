/* run-bench.c - `atr bench run`'s benchmark phase: the workload sent
 * with atr's own client, or a benchmark command whose output is parsed,
 * under a watchdog (deadline, server exit, Ctrl-C); then the outcome. */
#include "bench/run-impl.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "exp/exp.h"
#include "exp/sweep.h"
#include "stats/result.h"
#include "util/alloc.h"

struct watchdog {
    struct run *r;
    double until;
    volatile sig_atomic_t stop;      /* what exp polls */
    atomic_int cut;                  /* enum cut */
    atomic_bool done;
};

/* Ends the benchmark early on its deadline, the server's death or a stop. */
static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    while (!atomic_load(&w->done)) {
        siginfo_t si = {0};
        enum cut c = CUT_NONE;
        if (run_stopped(w->r))
            c = CUT_INTERRUPT;
        else if (mono_s() > w->until)
            c = CUT_TIMEOUT;
        else if (waitid(P_PID, (id_t)w->r->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                 si.si_pid == w->r->proc.pid)
            c = CUT_CRASH;
        if (c != CUT_NONE) {
            atomic_store(&w->cut, c);
            w->stop = 1;
            return NULL;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* The serving workload, read before anything starts: a trace that cannot
 * be read is the spec's fault, not a run's outcome. */
int run_load_workload(struct runner *rn)
{
    const struct atr_bench_workload *wl = &rn->s->workload;
    struct atr_workload *w = &rn->workload;
    struct atr_schedule *sched = &rn->schedule;
    atr_schedule_defaults(sched);
    if (wl->mode != ATR_BENCH_SERVING)
        return 0;
    if (wl->trace) {
        char *paths[1] = {(char *)wl->trace};
        if (atr_workload_load(w, paths, 1, NULL, 16, rn->err) < 0)
            return -1;
        if (!w->n_turns)
            return atr_error_set(rn->err, "%s: no llm steps to send", wl->trace);
    } else {
        atr_workload_generated(w, (size_t)wl->requests, (uint32_t)wl->input_tokens,
                               (uint32_t)wl->output_tokens);
        sched->kind = ATR_ARRIVAL_BURST;
    }
    if (wl->rate > 0) {
        sched->kind = ATR_ARRIVAL_POISSON;
        sched->rate = wl->rate;
    }
    return 0;
}

static void summarize_failures(struct run *r, const struct atr_llm_summary *sum, size_t total)
{
    struct atr_buf b = ATR_BUF_INIT;
    atr_buf_printf(&b, "%lld of %zu requests succeeded", (long long)sum->completed, total);
    if ((size_t)(sum->completed + sum->failed) < total)
        atr_buf_printf(&b, ", %zu not done", total - (size_t)(sum->completed + sum->failed));
    for (size_t i = 0; i < sum->n_failures && i < 4; i++)
        atr_buf_printf(&b, "%s%s: %lld", i ? ", " : " (", sum->failures[i].reason,
                       (long long)sum->failures[i].count);
    if (sum->n_failures)
        atr_buf_printf(&b, "%s)", sum->n_failures > 4 ? ", ..." : "");
    r->bench_summary = xstrdup(b.data ? b.data : "");
    atr_buf_release(&b);
}

/* Figures, the text block and the failure line from the run's records. */
static void serving_figures(struct run *r, const struct atr_target *t,
                            const struct atr_exp_cfg *cfg, const struct atr_exp_result *res)
{
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(t, cfg, res, "", &bc);
    bc.percentiles[0] = 90;
    bc.percentiles[1] = 99;
    bc.n_percentiles = 2;
    bc.e2el_section = true;
    struct atr_llm_summary sum;
    struct atr_error err;
    if (atr_llm_summarize(res->recs, res->n, &bc, &sum, &err) < 0) {
        snprintf(r->error, sizeof r->error, "%s", err.msg);
        return;
    }
    atr_bench_metrics_from_summary(&r->m, &sum, &bc);
    atr_llm_write_block(&r->raw, &sum, &bc);
    summarize_failures(r, &sum, res->total);
    atr_buf_printf(&r->raw, "%s\n", r->bench_summary);
    atr_llm_summary_release(&sum);
}

static void bench_serving(struct run *r, struct watchdog *wd)
{
    struct runner *rn = r->rn;
    struct atr_target t;
    struct atr_error err;
    char base[512];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", r->port);
    if (atr_target_parse(&t, base, 1, &err) < 0) {
        run_decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", err.msg);
        return;
    }
    t.body.model = r->vars.model;
    t.body.force_length = rn->s->workload.ignore_eos;
    struct atr_exp_cfg cfg = {
        .workload = &rn->workload, .schedule = &rn->schedule, .stop = &wd->stop,
        .max_concurrency = (unsigned)rn->s->workload.concurrency,
        .on_progress = rn->o->on_requests, .progress_ctx = rn->o->ctx,
    };
    struct atr_exp_result res;
    run_log_line(r, "==> benchmark: %zu requests to %s, model %s", rn->workload.n_turns, base,
             r->vars.model);
    if (atr_exp_run(&t, &cfg, &res, &err) < 0) {
        snprintf(r->error, sizeof r->error, "%s", err.msg);
        memset(&res, 0, sizeof res);
    } else {
        serving_figures(r, &t, &cfg, &res);
        *r->error = '\0';
    }
    run_log_line(r, "<== benchmark: %s", r->bench_summary ? r->bench_summary : r->error);
    atr_exp_result_release(&res);
    atr_target_release(&t);
}

/* The command's watch: the server's death ends the command too. */
static void command_watch(void *ctx, bool fd_ready)
{
    struct watchdog *wd = ctx;
    siginfo_t si = {0};
    if (run_stopped(wd->r))
        atomic_store(&wd->cut, CUT_INTERRUPT);
    else if (waitid(P_PID, (id_t)wd->r->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
             si.si_pid == wd->r->proc.pid)
        atomic_store(&wd->cut, CUT_CRASH);
    else
        return;
    /* Kills every child atr has alive: the command, and the server
     * (dead already, or being torn down for the interrupt anyway). */
    atr_spawn_kill_all();
}

static void bench_command(struct run *r, struct watchdog *wd)
{
    struct atr_error err;
    char *cmd = atr_bench_expand(r->rn->s->workload.command, &r->vars, true, &err);
    if (!cmd) {
        run_decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", err.msg);
        return;
    }
    struct atr_spawn_watch watch = {.fd = -1, .tick_ms = 20, .fn = command_watch, .ctx = wd};
    struct atr_spawn_result res;
    int rc = run_command(r, "benchmark", cmd, r->var->benchmark_timeout_s, &watch, &res);
    free(cmd);
    if (rc < 0)
        return;
    if (res.timed_out && atomic_load(&wd->cut) == CUT_NONE)
        atomic_store(&wd->cut, CUT_TIMEOUT);
    atr_bench_metrics_parse(&r->m, res.output, res.output_len);
    size_t keep = res.output_len < RAW_OUTPUT_MAX ? res.output_len : RAW_OUTPUT_MAX;
    atr_buf_append(&r->raw, res.output + res.output_len - keep, keep);
    char why[64];
    run_describe_exit(&res, why, sizeof why);
    r->bench_summary = xasprintf("the command ended with %s, %zu figure%s in its output", why,
                                 r->m.n_figures, r->m.n_figures == 1 ? "" : "s");
    free(res.output);
}

void run_benchmark(struct run *r)
{
    run_progress(r, ATR_BENCH_PHASE_BENCHMARK);
    struct watchdog wd = {.r = r};
    double start = mono_s();
    wd.until = start + r->var->benchmark_timeout_s;
    bool serving = r->rn->s->workload.mode == ATR_BENCH_SERVING;
    pthread_t th;
    bool threaded = serving && pthread_create(&th, NULL, watchdog_main, &wd) == 0;
    if (serving)
        bench_serving(r, &wd);
    else
        bench_command(r, &wd);
    atomic_store(&wd.done, true);
    if (threaded)
        pthread_join(th, NULL);
    r->benchmark_s = mono_s() - start;
    enum cut cut = (enum cut)atomic_load(&wd.cut);
    /* Requests that failed may be the server dying: let its exit show. */
    if (cut == CUT_NONE && r->m.failed > 0 &&
        atr_spawn_wait(&r->proc, CRASH_SETTLE_MS, &r->exit) == 1)
        cut = CUT_CRASH;
    if (cut == CUT_CRASH || (cut != CUT_INTERRUPT && atr_spawn_wait(&r->proc, 0, &r->exit) == 1)) {
        atr_spawn_wait(&r->proc, CRASH_SETTLE_MS, &r->exit);
        if (r->proc.reaped) {
            run_server_died(r, "the benchmark");
            return;
        }
    }
    if (cut == CUT_INTERRUPT || run_stopped(r)) {
        r->interrupted = true;
        return;
    }
    if (cut == CUT_TIMEOUT) {
        run_decide(r, ATR_BENCH_BENCHMARK_TIMEOUT, "Benchmark timed out after %g s%s%s",
               r->var->benchmark_timeout_s, r->bench_summary ? ": " : "",
               r->bench_summary ? r->bench_summary : "");
        return;
    }
}

/* After the server stopped: figures or none, and OOM signs. */
void run_final_outcome(struct run *r)
{
    char line[320];
    if (r->decided || r->interrupted)
        return;
    bool metrics = r->m.n_figures > 0 &&
                   (r->rn->s->workload.mode == ATR_BENCH_COMMAND || r->m.completed > 0);
    if (metrics) {
        run_decide(r, ATR_BENCH_SUCCESS, "%s", "");
        return;
    }
    if (r->oom_kills > 0)
        run_decide(r, ATR_BENCH_OOM, "Server's cgroup had %lld OOM kill%s; no metrics",
               (long long)r->oom_kills, r->oom_kills == 1 ? "" : "s");
    else if (run_log_says_oom(r, line, sizeof line))
        run_decide(r, ATR_BENCH_OOM, "Server ran out of memory: %s", line);
    else {
        char why[sizeof r->error];   /* r->error is where decide writes */
        snprintf(why, sizeof why, "%s", r->bench_summary ? r->bench_summary
                                         : *r->error      ? r->error
                                                          : "none produced");
        run_decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", why);
    }
}
