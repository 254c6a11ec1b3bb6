/* threads.c - one replay over several threads, one event loop each
 * (see threads.h). */
#include "exp/threads.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

/* The threads' common start: each thread arrives once its warm-up is done
 * (or leaves, when it failed before), and all take the latest 0 proposed,
 * so no thread's first requests are late for waiting on another. */
struct barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned expected, arrived;
    double t0;
    /* The run's progress: the threads' counts summed, shown under mu. */
    size_t done, total;
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
};

struct worker {
    struct barrier *b;
    bool arrived;
    struct atr_target t;               /* the target with this thread's pool */
    struct atr_exp_cfg cfg;
    bool *keep;
    struct atr_exp_result *res;
    struct atr_error err;
    int rc;
    size_t done, total;                /* this thread's last progress */
};

static double sync_start(void *ctx, double t0)
{
    struct worker *w = ctx;
    struct barrier *b = w->b;
    pthread_mutex_lock(&b->mu);
    w->arrived = true;
    if (t0 > b->t0)
        b->t0 = t0;
    if (++b->arrived >= b->expected)
        pthread_cond_broadcast(&b->cv);
    while (b->arrived < b->expected)
        pthread_cond_wait(&b->cv, &b->mu);
    t0 = b->t0;
    pthread_mutex_unlock(&b->mu);
    return t0;
}

/* One display for the whole run: each thread's count joins the sum. */
static void worker_progress(void *ctx, size_t done, size_t total)
{
    struct worker *w = ctx;
    struct barrier *b = w->b;
    pthread_mutex_lock(&b->mu);
    b->done += done - w->done;
    b->total += total - w->total;
    w->done = done;
    w->total = total;
    b->on_progress(b->progress_ctx, b->done, b->total);
    pthread_mutex_unlock(&b->mu);
}

/* A thread that ends without arriving (its run failed) is waited for no more. */
static void leave(struct worker *w)
{
    struct barrier *b = w->b;
    pthread_mutex_lock(&b->mu);
    if (!w->arrived) {
        b->expected--;
        if (b->arrived >= b->expected)
            pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->rc = atr_exp_run(&w->t, &w->cfg, w->res, &w->err);
    leave(w);
    return NULL;
}

/* Thread k's part of a total split over n: total / n, one more for the
 * first total % n. */
static unsigned part(unsigned total, unsigned k, unsigned n)
{
    return total / n + (k < total % n);
}

/* Thread k's sessions: those of keep (all without) whose rank among them
 * is k modulo n. */
static bool *share(const struct atr_exp_cfg *cfg, unsigned k, unsigned n)
{
    size_t ns = cfg->workload->n_sessions;
    bool *keep = xcalloc(ns ? ns : 1, sizeof *keep);
    size_t rank = 0;
    for (size_t i = 0; i < ns; i++) {
        if (cfg->keep && !cfg->keep[i])
            continue;
        keep[i] = rank++ % n == k;
    }
    return keep;
}

/* Every thread's records, one after the other, in *out (which owns only
 * the array: the records' chunk times and strings stay in the parts). */
static void join(struct atr_exp_threads *th, struct atr_exp_result *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    for (unsigned k = 0; k < th->n; k++)
        n += th->parts[k].n;
    out->recs = xcalloc(n ? n : 1, sizeof *out->recs);
    for (unsigned k = 0; k < th->n; k++) {
        const struct atr_exp_result *p = &th->parts[k];
        memcpy(out->recs + out->n, p->recs, p->n * sizeof *p->recs);
        out->n += p->n;
        out->total += p->total;
        out->incomplete |= p->incomplete;
    }
}

int atr_exp_threads_run(struct atr_exp_threads *th, const struct atr_target *t,
                    const struct atr_exp_cfg *cfg, struct atr_exp_result *out,
                    struct atr_error *err)
{
    unsigned n = th->n;
    struct barrier b = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, n, 0, 0, 0, 0,
                         cfg->on_progress, cfg->progress_ctx };
    struct worker *w = xcalloc(n, sizeof *w);
    pthread_t *ids = xcalloc(n, sizeof *ids);
    unsigned started = 0;
    memset(th->parts, 0, n * sizeof *th->parts);
    for (unsigned k = 0; k < n; k++) {
        w[k] = (struct worker){ .b = &b, .t = *t, .cfg = *cfg, .res = &th->parts[k] };
        /* The slots and the connections are split, so the run has the
         * same number in all as on one thread (each thread queues its own). */
        unsigned pool = t->client.max_connections ? t->client.max_connections
                                                  : ATR_LLM_DEFAULT_CONNECTIONS;
        w[k].t.client.max_connections = part(pool, k, n) ? part(pool, k, n) : 1;
        if (cfg->max_concurrency)
            w[k].cfg.max_concurrency = part(cfg->max_concurrency, k, n);
        w[k].keep = share(cfg, k, n);
        w[k].cfg.keep = w[k].keep;
        w[k].cfg.start_sync = sync_start;
        w[k].cfg.start_ctx = &w[k];
        w[k].cfg.on_progress = cfg->on_progress ? worker_progress : NULL;
        w[k].cfg.progress_ctx = &w[k];
    }
    for (; started < n; started++)
        if (pthread_create(&ids[started], NULL, worker_main, &w[started]) != 0)
            break;
    if (started < n) {                 /* the rest will not come */
        pthread_mutex_lock(&b.mu);
        b.expected = started;
        pthread_cond_broadcast(&b.cv);
        pthread_mutex_unlock(&b.mu);
    }
    for (unsigned k = 0; k < started; k++)
        pthread_join(ids[k], NULL);
    int rc = started < n ? atr_error_set(err, "cannot start %u threads", n) : 0;
    for (unsigned k = 0; k < started && rc == 0; k++)
        if (w[k].rc < 0) {
            *err = w[k].err;
            rc = -1;
        }
    for (unsigned k = 0; k < n; k++)
        free(w[k].keep);
    free(w);
    free(ids);
    if (rc < 0) {                      /* a failed part released itself: all zeroed */
        for (unsigned k = 0; k < n; k++)
            atr_exp_result_release(&th->parts[k]);
        return -1;
    }
    join(th, out);
    return 0;
}

void atr_exp_threads_release(struct atr_exp_threads *th, struct atr_exp_result *out)
{
    free(out->recs);
    memset(out, 0, sizeof *out);
    for (unsigned k = 0; k < th->n; k++)
        atr_exp_result_release(&th->parts[k]);
}
