/* series.c - a workload on a target under a list of policies, repeated,
 * and the outputs of each run (see series.h). */
#include "exp/series.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exp/threads.h"
#include "json/writer.h"
#include "stats/result.h"
#include "util/alloc.h"
#include "util/date.h"
#include "util/output.h"

size_t atr_series_runs(const struct atr_series_cfg *cfg)
{
    size_t np = cfg->n_policies ? cfg->n_policies : 1;
    return np * (cfg->repeats > 1 ? cfg->repeats : 1);
}

void atr_series_place(const struct atr_series_cfg *cfg, size_t k, size_t *policy_index,
                      unsigned *repeat)
{
    size_t np = cfg->n_policies ? cfg->n_policies : 1;
    *policy_index = k % np;
    *repeat = (unsigned)(k / np) + 1;
}

char *atr_series_path(const char *path, const char *policy, unsigned repeat)
{
    if (!path)
        return NULL;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash))
        dot = path + strlen(path);
    char rep[16] = "";
    if (repeat)
        snprintf(rep, sizeof rep, ".r%u", repeat);
    return xasprintf("%.*s%s%s%s%s", (int)(dot - path), path, policy ? "." : "",
                     policy ? policy : "", rep, dot);
}

size_t atr_series_shard(const struct atr_workload *w, unsigned i, unsigned n, bool **keep)
{
    size_t turns = 0;
    *keep = xcalloc(w->n_sessions ? w->n_sessions : 1, sizeof **keep);
    for (size_t s = i; s < w->n_sessions; s += n) {
        (*keep)[s] = true;
        turns += w->sessions[s].n_turns;
    }
    return turns;
}

/* ---- the files of the series ---- */

/* Run k writes files[2k] (save_result) and files[2k + 1] (requests_out);
 * the last slot is iterations_out. */
struct outputs {
    struct atr_output **files;
    size_t n_runs;
    char **reqs;              /* run k's requests_out path, or NULL: for its .partial */
    bool *partial;            /* whether run k wrote reqs[k].partial (removed on commit) */
};

static struct atr_output **iters_slot(struct outputs *o)
{
    return &o->files[2 * o->n_runs];
}

/* --iterations-out applies to a single run on a single replica. */
static bool wants_iterations(const struct atr_series_cfg *cfg, const struct atr_target *t)
{
    return cfg->iterations_out && atr_series_runs(cfg) == 1 && t->replicas == 1;
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

/* Drops the files of run k (a repeat that could not be made). */
static void outputs_drop_run(struct outputs *o, size_t k)
{
    drop(&o->files[2 * k]);
    drop(&o->files[2 * k + 1]);
}

/* Keeps the files of runs [0, kept) (iterations_out with any) and removes
 * the other temporaries. */
static void outputs_keep(struct outputs *o, size_t kept)
{
    for (size_t k = kept; k < o->n_runs; k++)
        outputs_drop_run(o, k);
    if (!kept)
        drop(iters_slot(o));
}

static int outputs_open(struct outputs *o, const struct atr_series_cfg *cfg,
                        const struct atr_target *t, struct atr_error *err)
{
    o->n_runs = atr_series_runs(cfg);
    o->files = xcalloc(2 * o->n_runs + 1, sizeof *o->files);
    o->reqs = xcalloc(o->n_runs, sizeof *o->reqs);
    o->partial = xcalloc(o->n_runs, sizeof *o->partial);
    bool several = o->n_runs > 1;
    int rc = 0;
    for (size_t k = 0; k < o->n_runs && rc == 0; k++) {
        size_t pi;
        unsigned rep;
        atr_series_place(cfg, k, &pi, &rep);
        /* one policy that is repeated is named by its repeat alone */
        const char *name = cfg->n_policies > 1 ? cfg->policies[pi] : NULL;
        unsigned r = cfg->repeats > 1 ? rep : 0;
        char *save = several ? atr_series_path(cfg->save_result, name, r)
                     : cfg->save_result ? xstrdup(cfg->save_result) : NULL;
        char *reqs = several ? atr_series_path(cfg->requests_out, name, r)
                     : cfg->requests_out ? xstrdup(cfg->requests_out) : NULL;
        rc = open_path(&o->files[2 * k], save, err);
        if (rc == 0)
            rc = open_path(&o->files[2 * k + 1], reqs, err);
        free(save);
        o->reqs[k] = reqs;
    }
    if (rc == 0 && wants_iterations(cfg, t))
        rc = open_path(iters_slot(o), cfg->iterations_out, err);
    if (rc < 0)
        outputs_keep(o, 0);
    return rc;
}

static int outputs_commit(struct outputs *o, struct atr_error *err)
{
    int rc = atr_output_commit_all(o->files, 2 * o->n_runs + 1, err);
    free(o->files);
    o->files = NULL;
    /* After the rename: a watcher goes from the live copy to the file
     * without a moment when neither is there. */
    for (size_t k = 0; o->reqs && k < o->n_runs; k++) {
        char *p = o->partial[k] ? xasprintf("%s.partial", o->reqs[k]) : NULL;
        if (p)
            unlink(p);
        free(p);
        free(o->reqs[k]);
    }
    free(o->reqs);
    free(o->partial);
    o->reqs = NULL;
    o->partial = NULL;
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

/* ---- the live copy of the request lines: FILE.partial ----
 * While a run goes, its --requests-out lines also go to FILE.partial as
 * requests finish, so a watcher such as atr dashboard shows it running.
 * Its first line, {"atr_partial":"requests","total":N}, says the planned
 * count; it is no requests file. The committed FILE is written as before,
 * whole at the end, and FILE.partial is removed when the series' files
 * are committed (just after the rename) or dropped, whatever the
 * outcome: a FILE.partial left behind means its writer died (SIGKILL),
 * and is never a result. Only for one event loop (--threads 1).
 * HTTP: one write() per finished request, copied from the run's own array
 * (a watcher sees every line at once; requests land milliseconds apart).
 * sim: each record as the simulation makes it (atr_exp_cfg.on_record),
 * written in batches of LIVE_BATCH_BYTES or LIVE_BATCH_S of wall time,
 * whichever comes first: a simulation makes thousands a second, and one
 * write() each would cost more than the run. The last batch is written
 * before the run's files are committed, so the copy ends whole. */
#define LIVE_BATCH_BYTES ((size_t)256 << 10)
#define LIVE_BATCH_S 0.2

struct live {
    int fd;                               /* -1: none */
    char *path;
    size_t written;                       /* records copied so far */
    size_t total;                         /* the planned count, from progress */
    const struct atr_exp_result *res;
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *ctx;
    struct atr_buf b;                     /* lines not yet written */
    double flushed_at;                    /* monotonic seconds of the last write */
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes what is buffered. A failed write only costs the watcher its
 * view: the copy stops, the run goes on. */
static void live_flush(struct live *l)
{
    size_t off = 0;
    while (l->fd >= 0 && off < l->b.len) {
        ssize_t n = write(l->fd, l->b.data + off, l->b.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(l->fd);
            l->fd = -1;
        } else {
            off += (size_t)n;
        }
    }
    atr_buf_clear(&l->b);
    l->flushed_at = mono_s();
}

static void live_header(struct live *l)
{
    if (l->written == 0)
        atr_buf_printf(&l->b, "{\"atr_partial\":\"requests\",\"total\":%zu}\n", l->total);
}

static void live_progress(void *ctx, size_t done, size_t total)
{
    struct live *l = ctx;
    if (l->on_progress)
        l->on_progress(l->ctx, done, total);
    l->total = total;
    if (l->fd < 0 || l->res == NULL)      /* sim: live_record copies */
        return;
    live_header(l);
    for (; l->written < l->res->replay.n; l->written++)
        atr_llm_write_request_line(&l->b, &l->res->replay.recs[l->written]);
    live_flush(l);
}

/* sim: one record, as its run makes it (after its progress call). */
static void live_record(void *ctx, const struct atr_llm_record *rec)
{
    struct live *l = ctx;
    if (l->fd < 0)
        return;
    live_header(l);
    struct atr_llm_record r = *rec;
    r.sent_s = r.start_s;    /* no socket: as exp.c sets the run's records */
    atr_llm_write_request_line(&l->b, &r);
    l->written++;
    if (l->b.len >= LIVE_BATCH_BYTES || mono_s() - l->flushed_at >= LIVE_BATCH_S)
        live_flush(l);
}

/* res: the HTTP run's result (its records are copied from it); NULL for a
 * sim run. */
static void live_open(struct live *l, const struct atr_series_cfg *c, const struct atr_target *t,
                      const char *reqs, const struct atr_exp_result *res)
{
    bool sim = t->kind == ATR_TARGET_SIM;
    *l = (struct live){.fd = -1, .res = sim ? NULL : res, .on_progress = c->on_progress,
                       .ctx = c->ctx, .b = ATR_BUF_INIT, .flushed_at = mono_s()};
    if (!reqs || strcmp(reqs, "-") == 0 || !(sim || t->kind == ATR_TARGET_HTTP) ||
        c->threads > 1)
        return;
    l->path = xasprintf("%s.partial", reqs);
    l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
}

/* The last batch (a sim's), then the file closed. */
static void live_close(struct live *l)
{
    live_flush(l);
    if (l->fd >= 0)
        close(l->fd);
    free(l->path);
    atr_buf_release(&l->b);
}

/* ---- one run ---- */

/* One iterations_out line per engine iteration: the batch over time. */
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

static void bench_config(const struct atr_series_cfg *c, const struct atr_target *t,
                         const struct atr_exp_cfg *cfg, const struct atr_exp_result *res,
                         const char *date, struct atr_llm_bench_config *bc)
{
    atr_exp_bench_config(t, cfg, res, date, bc);
    bc->slo_ttft_ms = c->slo_ttft_ms;
    bc->slo_tpot_ms = c->slo_tpot_ms;
    bc->slo_e2el_ms = c->slo_e2el_ms;
    bc->slo_session_ms = c->slo_session_ms;
    for (size_t i = 0; i < c->n_percentiles && i < ATR_LLM_MAX_PCT; i++)
        bc->percentiles[i] = c->percentiles[i];
    bc->n_percentiles = c->n_percentiles;
}

/* Summarizes run k, writes it into its files and hands it to on_result;
 * *stop: what on_result returned. */
static int report(const struct atr_series_cfg *c, const struct atr_target *t,
                  const struct atr_exp_cfg *cfg, struct atr_series_run *run,
                  struct atr_output *const *files, int *stop, struct atr_error *err)
{
    char date[32];
    if (!c->date)
        atr_date_stamp(date);
    struct atr_llm_bench_config bc;
    bench_config(c, t, cfg, run->res, c->date ? c->date : date, &bc);
    struct atr_llm_summary sum;
    if (atr_llm_summarize(run->res->recs, run->res->n, &bc, &sum, err) < 0)
        return -1;
    int rc = write_files(files, t, run->res, &sum, &bc, err);
    run->sum = &sum;
    run->bc = &bc;
    if (rc == 0 && c->on_result)
        *stop = c->on_result(c->ctx, run);
    atr_llm_summary_release(&sum);
    return rc;
}

/* The one experiment of run k, on one thread or several. */
static int experiment(const struct atr_series_cfg *c, const struct atr_target *t,
                      const struct atr_exp_cfg *cfg, struct atr_exp_threads *th,
                      struct atr_exp_result *res, struct atr_error *err)
{
    if (!th)
        return atr_exp_run(t, cfg, res, err);
    th->n = c->threads;
    return atr_exp_threads_run(th, t, cfg, res, err);
}

static void release(struct atr_exp_threads *th, struct atr_exp_result *res)
{
    if (th)
        atr_exp_threads_release(th, res);
    else
        atr_exp_result_release(res);
}

/* The settings of run k: its policy, its repeat's seeds (the schedule's
 * copy in *sc), its run word (several runs on one server keep apart). */
static struct atr_exp_cfg exp_cfg(const struct atr_series_cfg *c, const struct atr_series_run *run,
                                  const struct atr_workload *w, const bool *keep,
                                  struct atr_schedule *sc, char *salt, struct atr_buf *iters,
                                  bool with_iters)
{
    *sc = *c->schedule;
    sc->seed += run->repeat - 1;
    snprintf(salt, 32, "run%zu ", run->k + 1);
    return (struct atr_exp_cfg){
        .workload = w, .schedule = sc, .max_concurrency = c->max_concurrency, .keep = keep,
        .start_at = c->start_at, .policy = run->policy, .policy_options = c->policy_options,
        .seed = sc->seed, .on_iter = with_iters ? on_iter : NULL, .iter_ctx = iters,
        .run_salt = run->n > 1 ? salt : NULL, .stop = c->stop,
        .on_progress = c->on_progress, .progress_ctx = c->ctx,
    };
}

/* Run k of the series into its files in o. 0, with *stop set by
 * on_result; -1 with err set (the series keeps none of its files). */
static int run_one(const struct atr_series_cfg *c, const struct atr_target *t,
                   const struct atr_workload *w, const bool *keep, size_t k, struct outputs *o,
                   int *stop, struct atr_error *err)
{
    struct atr_series_run run = {.k = k, .n = o->n_runs};
    atr_series_place(c, k, &run.policy_index, &run.repeat);
    run.policy = c->n_policies ? c->policies[run.policy_index] : NULL;
    if (c->on_start)
        c->on_start(c->ctx, &run);
    struct atr_buf iters = ATR_BUF_INIT;
    struct atr_output *iters_out = *iters_slot(o);
    struct atr_schedule sc;
    char salt[32];
    struct atr_exp_cfg cfg = exp_cfg(c, &run, w, keep, &sc, salt, &iters, iters_out != NULL);
    struct atr_exp_result res;
    struct atr_exp_threads *th = c->threads > 1 ? xcalloc(1, sizeof *th) : NULL;
    struct live live;
    live_open(&live, c, t, o->reqs[k], &res);
    o->partial[k] = live.path != NULL;
    if (live.fd >= 0) {
        cfg.on_progress = live_progress;
        cfg.progress_ctx = &live;
        if (!live.res) {
            cfg.on_record = live_record;
            cfg.record_ctx = &live;
        }
    }
    int rc = experiment(c, t, &cfg, th, &res, err);
    if (c->on_end)
        c->on_end(c->ctx, &run);   /* a progress line ends before anything else is said */
    if (rc < 0 && c->repeats > 1) {    /* recorded as failed, the others go on */
        outputs_drop_run(o, k);
        run.failed = err;
        *stop = c->on_result ? c->on_result(c->ctx, &run) : 0;
        rc = 0;
    } else if (rc == 0) {
        res.repeat = c->repeats > 1 ? run.repeat : 0;
        run.res = &res;
        rc = report(c, t, &cfg, &run, &o->files[2 * k], stop, err);
        if (rc == 0 && iters_out)
            rc = atr_output_write(iters_out, iters.data ? iters.data : "", iters.len, err);
        release(th, &res);
    }
    live_close(&live);
    free(th);
    atr_buf_release(&iters);
    return rc;
}

/* Reads the workload. One without llm steps fails: a run of nothing would
 * report zeros as if they were measured. */
static int load(const struct atr_series_cfg *c, const struct atr_target *t,
                struct atr_workload *w, struct atr_error *err)
{
    uint32_t block = t->kind == ATR_TARGET_SIM ? t->engine.block_size : 16;
    if (atr_workload_load(w, c->paths, c->n_paths, c->from, block, err) < 0)
        return -1;
    if (w->n_turns)
        return 0;
    struct atr_buf names = ATR_BUF_INIT;
    for (size_t i = 0; i < c->n_paths; i++)
        atr_buf_printf(&names, "%s%s", i ? ", " : "", c->paths[i]);
    atr_error_set(err, "no llm steps in %s", names.data ? names.data : "the input");
    atr_buf_release(&names);
    return -1;
}

static int shard(const struct atr_series_cfg *c, const struct atr_workload *w, bool **keep,
                 struct atr_error *err)
{
    *keep = NULL;
    if (c->shard_n <= 1 || atr_series_shard(w, c->shard_i, c->shard_n, keep))
        return 0;
    return atr_error_set(err, "shard %u:%u has no llm steps (the workload has %zu sessions)",
                         c->shard_i, c->shard_n, w->n_sessions);
}

int atr_series_run(const struct atr_target *t, const struct atr_series_cfg *cfg,
                   struct atr_error *err)
{
    struct outputs o;
    if (outputs_open(&o, cfg, t, err) < 0) {
        free(o.files);
        for (size_t k = 0; k < o.n_runs; k++)
            free(o.reqs[k]);
        free(o.reqs);
        free(o.partial);
        return -1;
    }
    struct atr_workload w = ATR_WORKLOAD_INIT;
    bool *keep = NULL;
    int rc = load(cfg, t, &w, err);
    if (rc == 0)
        rc = shard(cfg, &w, &keep, err);
    int stop = 0;
    size_t done = 0;
    for (size_t k = 0; k < o.n_runs && rc == 0 && stop == 0; k++)
        if ((rc = run_one(cfg, t, &w, keep, k, &o, &stop, err)) == 0)
            done++;
    outputs_keep(&o, rc == 0 ? done : 0);
    struct atr_error cerr;
    if (outputs_commit(&o, &cerr) < 0 && rc == 0) {
        *err = cerr;
        rc = -1;
    }
    free(keep);
    atr_workload_release(&w);
    return rc < 0 ? -1 : stop;
}
