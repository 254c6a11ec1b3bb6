/* tenants.c - several traces at once: one thread and one weighted cgroup
 * subtree per tenant, then each trace alone for the baseline. */
#include "runner/tenants.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/writer.h"
#include "util/alloc.h"

/* What the tenants share: the sink (serialised by lock) and the start
 * signal, so that every tenant's first step starts at the same time and
 * none gets a head start while the others' threads are being made. */
struct tenants_run {
    struct atr_replay *rp;
    atr_tenant_sink sink;
    void *ctx;
    pthread_mutex_t lock;
    pthread_cond_t go_cond;
    bool go, abort;
};

struct tenant {
    struct tenants_run *run;
    unsigned k;
    const struct atr_trace *t;
    const char *resources;
    struct atr_tenant_report *rep;
    struct atr_cg group;
    bool have_group;
    enum atr_tenant_phase phase;
    int rc;
    struct atr_error err;
};

const char *atr_tenant_phase_name(enum atr_tenant_phase p)
{
    return p == ATR_TENANT_SHARED ? "shared" : "alone";
}

/* ---- report math ---- */

double atr_tenant_mean(const struct atr_samples *s)
{
    if (!s->n)
        return NAN;
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    return sum / (double)s->n;
}

double atr_tenant_p50(struct atr_samples *s)
{
    return atr_samples_percentile(s, 50);
}

double atr_tenant_sd(const struct atr_samples *s)
{
    if (s->n < 2)
        return NAN;
    double m = atr_tenant_mean(s), ss = 0;
    for (size_t i = 0; i < s->n; i++)
        ss += (s->v[i] - m) * (s->v[i] - m);
    return sqrt(ss / (double)(s->n - 1));
}

double atr_tenant_inflation(double shared, double alone)
{
    if (isnan(shared) || isnan(alone) || !(alone > 0))
        return NAN;
    return shared / alone;
}

/* Latencies as the entry writes them (3 decimals), inflation 4. */
enum { MS_DIGITS = 3, INFLATION_DIGITS = 4 };

void atr_tenant_report_summary(struct atr_tenant_report *r, const char *config,
                               struct atr_tenant_summary *out)
{
    double mean_alone = atr_tenant_mean(&r->alone), mean_shared = atr_tenant_mean(&r->shared);
    double p50_alone = atr_tenant_p50(&r->alone), p50_shared = atr_tenant_p50(&r->shared);
    out->config = config;
    out->tenant = r->tenant;
    out->trace_id = xstrdup(r->trace_id ? r->trace_id : "");
    out->weight = r->weight;
    out->weight_applied = r->weight_applied;
    out->steps = r->steps;
    out->latency_mean_ms_alone = atr_metrics_fixed(mean_alone, MS_DIGITS);
    out->latency_mean_ms_shared = atr_metrics_fixed(mean_shared, MS_DIGITS);
    out->latency_p50_ms_alone = atr_metrics_fixed(p50_alone, MS_DIGITS);
    out->latency_p50_ms_shared = atr_metrics_fixed(p50_shared, MS_DIGITS);
    out->inflation_mean = atr_metrics_fixed(atr_tenant_inflation(mean_shared, mean_alone),
                                            INFLATION_DIGITS);
    out->inflation_p50 = atr_metrics_fixed(atr_tenant_inflation(p50_shared, p50_alone),
                                           INFLATION_DIGITS);
    out->latency_p95_ms_alone =
        atr_metrics_fixed(r->alone.n ? atr_samples_percentile(&r->alone, 95) : NAN, MS_DIGITS);
    out->latency_p95_ms_shared =
        atr_metrics_fixed(r->shared.n ? atr_samples_percentile(&r->shared, 95) : NAN, MS_DIGITS);
    out->latency_sd_ms_alone = atr_metrics_fixed(atr_tenant_sd(&r->alone), MS_DIGITS);
    out->latency_sd_ms_shared = atr_metrics_fixed(atr_tenant_sd(&r->shared), MS_DIGITS);
    out->page_loads = (unsigned long)r->load_shared.n;
    double la = atr_tenant_mean(&r->load_alone), ls = atr_tenant_mean(&r->load_shared);
    out->page_load_mean_ms_alone = atr_metrics_fixed(la, MS_DIGITS);
    out->page_load_mean_ms_shared = atr_metrics_fixed(ls, MS_DIGITS);
    out->page_load_degradation =
        atr_metrics_fixed(atr_tenant_inflation(ls, la), INFLATION_DIGITS);
}

void atr_tenant_summary_put(struct atr_jw *w, const struct atr_tenant_summary *t)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "config", t->config);
    atr_jw_kv_uint(w, "tenant", t->tenant);
    atr_jw_kv_str(w, "trace_id", t->trace_id);
    atr_jw_kv_int(w, "weight", t->weight);
    atr_jw_kv_bool(w, "weight_applied", t->weight_applied);
    atr_jw_kv_uint(w, "steps", t->steps);
    atr_jw_kv_fixed(w, "latency_mean_ms_alone", t->latency_mean_ms_alone, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_mean_ms_shared", t->latency_mean_ms_shared, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_p50_ms_alone", t->latency_p50_ms_alone, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_p50_ms_shared", t->latency_p50_ms_shared, MS_DIGITS);
    atr_jw_kv_fixed(w, "inflation_mean", t->inflation_mean, INFLATION_DIGITS);
    atr_jw_kv_fixed(w, "inflation_p50", t->inflation_p50, INFLATION_DIGITS);
    atr_jw_kv_fixed(w, "latency_p95_ms_alone", t->latency_p95_ms_alone, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_p95_ms_shared", t->latency_p95_ms_shared, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_sd_ms_alone", t->latency_sd_ms_alone, MS_DIGITS);
    atr_jw_kv_fixed(w, "latency_sd_ms_shared", t->latency_sd_ms_shared, MS_DIGITS);
    atr_jw_kv_uint(w, "page_loads", t->page_loads);
    atr_jw_kv_fixed(w, "page_load_mean_ms_alone", t->page_load_mean_ms_alone, MS_DIGITS);
    atr_jw_kv_fixed(w, "page_load_mean_ms_shared", t->page_load_mean_ms_shared, MS_DIGITS);
    atr_jw_kv_fixed(w, "page_load_degradation", t->page_load_degradation, INFLATION_DIGITS);
    atr_jw_object_end(w);
}

void atr_tenant_summary_release(struct atr_tenant_summary *t)
{
    free(t->trace_id);
    t->trace_id = NULL;
}

void atr_tenant_report_json(struct atr_tenant_report *r, const char *config,
                            struct atr_buf *out)
{
    struct atr_tenant_summary t;
    atr_tenant_report_summary(r, config, &t);
    struct atr_jw w;
    atr_jw_init(&w, out, ATR_JW_COMPACT);
    atr_tenant_summary_put(&w, &t);
    (void)atr_jw_finish(&w);   /* the caller's buffer has no cap */
    atr_tenant_summary_release(&t);
}

void atr_tenant_metrics_json(struct atr_buf *b, const char *config, unsigned tenant,
                             enum atr_tenant_phase phase, const struct atr_step_metrics *m)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_step_metrics_members(&w, config, m);
    atr_jw_kv_uint(&w, "tenant", tenant);
    atr_jw_kv_str(&w, "phase", atr_tenant_phase_name(phase));
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);   /* the caller's buffer has no cap */
}

void atr_tenant_report_release(struct atr_tenant_report *r)
{
    free(r->trace_id);
    r->trace_id = NULL;
    atr_samples_release(&r->shared);
    atr_samples_release(&r->alone);
    atr_samples_release(&r->load_shared);
    atr_samples_release(&r->load_alone);
}

/* ---- running ---- */

/* The replay's sink for one tenant: records the latency for the report,
 * then hands the record on, one tenant at a time. */
static int tenant_sink(void *ctx, const struct atr_step_metrics *m, struct atr_error *err)
{
    struct tenant *tn = ctx;
    struct tenants_run *run = tn->run;
    pthread_mutex_lock(&run->lock);
    if (!m->skipped) {
        bool shared = tn->phase == ATR_TENANT_SHARED;
        if (shared) {
            atr_samples_add(&tn->rep->shared, m->latency_ms);
            tn->rep->steps++;
        } else {
            atr_samples_add(&tn->rep->alone, m->latency_ms);
        }
        if (m->browser && m->page_load_ms >= 0)
            atr_samples_add(shared ? &tn->rep->load_shared : &tn->rep->load_alone,
                            m->page_load_ms);
    }
    int rc = run->sink(run->ctx, tn->k, tn->phase, m, err);
    pthread_mutex_unlock(&run->lock);
    return rc;
}

static int replay_tenant(struct tenant *tn)
{
    return atr_replay_trace_res(tn->run->rp, tn->have_group ? &tn->group : NULL, tn->t,
                                tn->resources, tenant_sink, tn, &tn->err);
}

/* A tenant's thread: waits for the start signal, replays its trace. */
static void *tenant_main(void *arg)
{
    struct tenant *tn = arg;
    struct tenants_run *run = tn->run;
    pthread_mutex_lock(&run->lock);
    while (!run->go)
        pthread_cond_wait(&run->go_cond, &run->lock);
    bool abort_run = run->abort;
    pthread_mutex_unlock(&run->lock);
    tn->rc = abort_run ? 0 : replay_tenant(tn);
    return NULL;
}

static bool host_has_cpu(const struct atr_cg_host *h)
{
    return h->cpu[0] || h->v2_cpu;
}

/* "tenant<k>" below the run root with the tenant's cpu weight (v2
 * cpu.weight, v1 cpu.shares = weight * 1024 / 100). Without cgroups the
 * tenant runs ungrouped and the weight is reported as not applied. */
static int make_group(struct atr_replay *rp, struct tenant *tn, struct atr_error *err)
{
    const struct atr_cg *root = atr_replay_root(rp);
    tn->group.v2_fd = -1;
    if (!root)
        return 0;
    const struct atr_cg_host *h = atr_replay_host(rp);
    char name[32];
    snprintf(name, sizeof name, "tenant%u", tn->k);
    if (atr_cg_create(h, root, name, &tn->group, err) < 0)
        return -1;
    tn->have_group = true;
    if (!host_has_cpu(h))
        return 0;
    struct atr_cg_limits l = ATR_CG_LIMITS_NONE;
    l.weight = tn->rep->weight;
    if (atr_cg_set_limits(h, &tn->group, &l, err) < 0)
        return -1;
    tn->rep->weight_applied = true;
    return 0;
}

static int setup_tenants(struct tenants_run *run, struct tenant *tns, const struct atr_trace *traces,
                         size_t n, const struct atr_tenants_opts *o,
                         struct atr_tenant_report *reps, struct atr_error *err)
{
    for (size_t k = 0; k < n; k++) {
        struct tenant *tn = &tns[k];
        tn->run = run;
        tn->k = (unsigned)k;
        tn->t = &traces[k];
        tn->rep = &reps[k];
        tn->group.v2_fd = -1;
        reps[k].tenant = (unsigned)k;
        reps[k].weight = k < o->n_weights ? o->weights[k] : ATR_TENANT_WEIGHT_DEFAULT;
        free(reps[k].trace_id);
        reps[k].trace_id = xstrdup(traces[k].trace_id ? traces[k].trace_id : "");
        if (make_group(run->rp, tn, err) < 0)
            return -1;
    }
    return 0;
}

/* Every tenant at once; the first tenant error is copied to err. */
static int run_shared(struct tenants_run *run, struct tenant *tns, size_t n,
                      struct atr_error *err)
{
    pthread_t th[ATR_TENANTS_MAX];
    size_t started = 0;
    int rc = 0;
    for (; started < n; started++) {
        tns[started].phase = ATR_TENANT_SHARED;
        int e = pthread_create(&th[started], NULL, tenant_main, &tns[started]);
        if (e) {
            rc = atr_error_set(err, "tenants: cannot start a thread: %s", strerror(e));
            break;
        }
    }
    pthread_mutex_lock(&run->lock);
    run->go = true;
    run->abort = rc < 0;
    pthread_cond_broadcast(&run->go_cond);
    pthread_mutex_unlock(&run->lock);
    for (size_t k = 0; k < started; k++) {
        pthread_join(th[k], NULL);
        if (tns[k].rc < 0 && rc == 0) {
            *err = tns[k].err;
            rc = -1;
        }
    }
    return rc;
}

/* Each tenant alone, in turn, in its own subtree as before. */
static int run_alone(struct tenant *tns, size_t n, struct atr_error *err)
{
    for (size_t k = 0; k < n && !atr_replay_stopped(); k++) {
        tns[k].phase = ATR_TENANT_ALONE;
        if (replay_tenant(&tns[k]) < 0) {
            *err = tns[k].err;
            return -1;
        }
    }
    return 0;
}

int atr_tenants_run(struct atr_replay *rp, const struct atr_trace *traces, size_t n,
                    const struct atr_tenants_opts *o, atr_tenant_sink sink, void *ctx,
                    struct atr_tenant_report *reps, struct atr_error *err)
{
    return atr_tenants_run_res(rp, traces, NULL, n, o, sink, ctx, reps, err);
}

int atr_tenants_run_res(struct atr_replay *rp, const struct atr_trace *traces,
                        const char *const *resources, size_t n,
                        const struct atr_tenants_opts *o, atr_tenant_sink sink, void *ctx,
                        struct atr_tenant_report *reps, struct atr_error *err)
{
    if (n == 0 || n > ATR_TENANTS_MAX)
        return atr_error_set(err, "tenants: %zu traces, want 1..%d", n, ATR_TENANTS_MAX);
    struct tenants_run run = {.rp = rp, .sink = sink, .ctx = ctx};
    pthread_mutex_init(&run.lock, NULL);
    pthread_cond_init(&run.go_cond, NULL);
    struct tenant *tns = xcalloc(n, sizeof *tns);
    int rc = setup_tenants(&run, tns, traces, n, o, reps, err);
    for (size_t k = 0; resources && k < n; k++)
        tns[k].resources = resources[k];
    if (rc == 0)
        rc = run_shared(&run, tns, n, err);
    if (rc == 0 && o->baseline && !atr_replay_stopped())
        rc = run_alone(tns, n, err);
    for (size_t k = 0; k < n; k++)
        if (tns[k].have_group)
            atr_cg_remove(atr_replay_host(rp), &tns[k].group, NULL);
    free(tns);
    pthread_cond_destroy(&run.go_cond);
    pthread_mutex_destroy(&run.lock);
    return rc;
}
