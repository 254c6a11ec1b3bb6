/* exp.c - a workload on a target under a policy: fresh engine replicas in
 * virtual time, or real servers through the replay client (see exp.h). */
#include "exp/exp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "json/writer.h"
#include "sim/run.h"
#include "sim/stats.h"
#include "stats/result.h"
#include "util/alloc.h"

/* ---- targets ---- */

static bool is_url(const char *s)
{
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

/* The replay client's timeouts. A sim target keeps the whole-request one
 * (a turn not over 600 s after its slot fails there as it would against a
 * server); its stall timeout is the caller's to set (atr sim run and
 * replay llm set the client's 60 s), so that router training and sweeps
 * keep every slow turn of an overloaded run in their figures. */
static const struct atr_llm_client_cfg client_defaults = { .timeout_s = 600,
                                                           .stall_timeout_s = 60 };

int atr_target_sim(struct atr_target *t, const char *profile, unsigned tp, struct atr_error *err)
{
    memset(t, 0, sizeof *t);
    t->kind = ATR_TARGET_SIM;
    t->replicas = 1;
    t->client = client_defaults;
    t->client.stall_timeout_s = 0;
    atr_engine_cfg_defaults(&t->engine);
    return atr_profile_find(profile, tp, &t->profile, err);
}

/* Cuts a trailing '/' or '/v1' off a base URL, in place. */
static void trim_base_url(char *url)
{
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        url[--n] = 0;
    if (n >= 3 && strcmp(url + n - 3, "/v1") == 0)
        url[n - 3] = 0;
}

static int parse_urls(struct atr_target *t, const char *spec, struct atr_error *err)
{
    t->kind = ATR_TARGET_HTTP;
    t->client = client_defaults;
    t->body = (struct atr_body_opts){ .api = ATR_LLM_COMPLETIONS, .stream = true,
                                      .force_length = true };
    t->warmup = 1;
    for (const char *p = spec, *comma; *p; p = comma + !!*comma) {
        comma = p + strcspn(p, ",");
        if (comma == p)
            continue;
        if (t->n_urls == ATR_TARGET_MAX_URLS) {
            atr_error_set(err, "--target takes at most %d URLs", ATR_TARGET_MAX_URLS);
            return ATR_TARGET_BAD_SPEC;
        }
        char *url = xstrndup(p, (size_t)(comma - p));
        t->urls[t->n_urls++] = url;
        if (!is_url(url)) {
            atr_error_set(err, "--target wants http://HOST:PORT URLs, not '%s'", url);
            return ATR_TARGET_BAD_SPEC;
        }
        trim_base_url(url);
    }
    if (t->n_urls == 0) {
        atr_error_set(err, "empty --target");
        return ATR_TARGET_BAD_SPEC;
    }
    return 0;
}

int atr_target_parse(struct atr_target *t, const char *spec, unsigned tp, struct atr_error *err)
{
    memset(t, 0, sizeof *t);
    t->spec = spec;
    if (strncmp(spec, "sim:", 4) == 0)
        return atr_target_sim(t, spec + 4, tp, err);
    if (!is_url(spec)) {
        atr_error_set(err, "--target wants http://HOST:PORT, https://... or sim:GPU/MODEL, "
                           "not '%s'", spec);
        return ATR_TARGET_BAD_SPEC;
    }
    return parse_urls(t, spec, err);
}

void atr_target_release(struct atr_target *t)
{
    for (unsigned i = 0; i < t->n_urls; i++)
        free(t->urls[i]);
    t->n_urls = 0;
}

void atr_target_name(const struct atr_target *t, char *out, size_t cap)
{
    if (t->kind == ATR_TARGET_HTTP) {
        snprintf(out, cap, "%s", t->spec);
        return;
    }
    const struct atr_profile *p = &t->profile;
    int len = snprintf(out, cap, "sim:%s/%s", p->gpu->name, p->model->name);
    if (p->tp > 1 && len >= 0 && (size_t)len < cap)
        len += snprintf(out + len, cap - (size_t)len, " tp=%u", p->tp);
    if (t->replicas > 1 && len >= 0 && (size_t)len < cap)
        len += snprintf(out + len, cap - (size_t)len, " x%u", t->replicas);
    if (t->engine.longest_prefix_first && len >= 0 && (size_t)len < cap)
        snprintf(out + len, cap - (size_t)len, " sglang");
    else if (t->engine.slots && len >= 0 && (size_t)len < cap)
        snprintf(out + len, cap - (size_t)len, " llama.cpp");
}

/* ---- runs ---- */

/* The sessions with keep[i] (all without keep) as a workload sharing
 * cfg's turns, in *sub, and their starts on the schedule: a session starts
 * when it would in the whole workload. Frees nothing of its own on error. */
static int sessions_kept(const struct atr_exp_cfg *cfg, struct atr_workload *sub,
                         double **starts, struct atr_error *err)
{
    const struct atr_workload *w = cfg->workload;
    *starts = xcalloc(w->n_sessions, sizeof **starts);
    *sub = (struct atr_workload){ .sessions = xcalloc(w->n_sessions, sizeof *sub->sessions),
                                  .block_size = w->block_size };
    if (atr_schedule_starts(cfg->schedule, w, *starts, err) < 0)
        return -1;
    for (size_t i = 0; i < w->n_sessions; i++) {
        if (cfg->keep && !cfg->keep[i])
            continue;
        (*starts)[sub->n_sessions] = (*starts)[i];
        sub->sessions[sub->n_sessions++] = w->sessions[i];
        sub->n_turns += w->sessions[i].n_turns;
    }
    return 0;
}

static int run_sim(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                   const struct atr_workload *w, const double *starts,
                   struct atr_policy *policy, struct atr_exp_result *out, struct atr_error *err)
{
    struct atr_engine_cfg ec = t->engine;
    ec.iter_seconds = profile_cost;
    ec.cost_ctx = (void *)&t->profile;
    /* llama.cpp's slots share the context the server was given (-c) */
    if (!(ec.slots && ec.kv_capacity_tokens))
        ec.kv_capacity_tokens = t->profile.kv_capacity_tokens;
    if (t->replicas == 1) {
        ec.on_iter = cfg->on_iter;
        ec.iter_ctx = cfg->iter_ctx;
    }
    out->engines = xcalloc(t->replicas, sizeof *out->engines);
    out->n_engines = t->replicas;
    for (unsigned i = 0; i < t->replicas; i++)
        if (!(out->engines[i] = atr_engine_new(&ec, err)))
            return -1;
    struct atr_sim_run_cfg rc = {
        .workload = w, .starts = starts, .schedule = cfg->schedule,
        .max_concurrency = cfg->max_concurrency, .policy = policy,
        .on_progress = cfg->on_progress, .progress_ctx = cfg->progress_ctx,
        .frontend_s = t->profile.frontend_s, .frontend_token_s = t->profile.frontend_token_s,
        .max_model_len = t->max_model_len ? t->max_model_len : t->profile.model->max_model_len,
        .timeout_s = t->client.timeout_s, .stall_timeout_s = t->client.stall_timeout_s,
        .on_decision = cfg->on_decision, .decision_ctx = cfg->decision_ctx,
        .on_record = cfg->on_record, .record_ctx = cfg->record_ctx,
    };
    if (atr_sim_run(out->engines, t->replicas, &rc, &out->recs, &out->n, err) < 0)
        return -1;
    for (size_t i = 0; i < out->n; i++)   /* no socket: the engine has it at start_s */
        out->recs[i].sent_s = out->recs[i].start_s;
    out->total = out->n;
    out->has_engine = true;
    atr_sim_stats_sum(out->engines, t->replicas, &out->engine);
    return 0;
}

static double tv_s(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static int run_http(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                    const struct atr_workload *w, const double *starts,
                    struct atr_policy *policy, struct atr_exp_result *out, struct atr_error *err)
{
    struct atr_llm_replay_cfg rc = {
        .workload = w, .starts = starts, .schedule = cfg->schedule,
        .max_concurrency = cfg->max_concurrency, .body = t->body, .client = t->client,
        .targets = (const char *const *)t->urls, .n_targets = t->n_urls, .policy = policy,
        .warmup = t->warmup, .stop = cfg->stop, .start_at = cfg->start_at,
        .start_sync = cfg->start_sync, .start_ctx = cfg->start_ctx,
        .on_progress = cfg->on_progress, .progress_ctx = cfg->progress_ctx,
    };
    rc.body.run_salt = cfg->run_salt;
    rc.client.base_url = t->urls[0];
    if (cfg->max_concurrency > ATR_LLM_DEFAULT_CONNECTIONS && !rc.client.max_connections)
        rc.client.max_connections = cfg->max_concurrency;
    /* The client's own CPU: this thread's, which runs the whole loop. */
    struct rusage r0, r1;
    struct timespec w0, w1;
    getrusage(RUSAGE_THREAD, &r0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    if (atr_llm_replay(&rc, &out->replay, err) < 0)
        return -1;
    getrusage(RUSAGE_THREAD, &r1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    out->has_client = true;
    out->client = (struct atr_client_load){
        .cpu_s = tv_s(&r1.ru_utime) + tv_s(&r1.ru_stime) - tv_s(&r0.ru_utime) -
                 tv_s(&r0.ru_stime),
        .wall_s = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9,
        .loops = 1,
        .connections = rc.client.max_connections ? rc.client.max_connections
                                                 : ATR_LLM_DEFAULT_CONNECTIONS,
    };
    out->client.busiest = out->client.wall_s > 0 ? out->client.cpu_s / out->client.wall_s : 0;
    out->recs = out->replay.recs;
    out->n = out->replay.n;
    out->total = out->replay.total;
    out->incomplete = out->replay.incomplete;
    return 0;
}

int atr_exp_run(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                struct atr_exp_result *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    struct atr_workload sub, *w = &sub;
    double *starts;
    unsigned replicas = t->kind == ATR_TARGET_SIM ? t->replicas : t->n_urls;
    struct atr_policy *policy = NULL;
    int rc = sessions_kept(cfg, &sub, &starts, err);
    if (rc == 0 && cfg->policy) {
        struct atr_policy_cfg pc = { .n_replicas = replicas, .block_size = w->block_size,
                                     .options = cfg->policy_options, .seed = cfg->seed };
        rc = (policy = atr_policy_new(cfg->policy, &pc, err)) ? 0 : -1;
    }
    if (rc == 0)
        rc = t->kind == ATR_TARGET_SIM ? run_sim(t, cfg, w, starts, policy, out, err)
                                       : run_http(t, cfg, w, starts, policy, out, err);
    if (rc == 0 && out->has_client)
        atr_client_verdict_of(out->recs, out->n, &out->client, cfg->max_concurrency,
                              &out->verdict);
    if (rc == 0 && policy) {
        out->policy = atr_policy_name(policy);
        atr_policy_get_stats(policy, &out->policy_stats);
    }
    atr_policy_free(policy);
    free(sub.sessions);
    free(starts);
    if (rc < 0)
        atr_exp_result_release(out);
    return rc;
}

void atr_exp_result_release(struct atr_exp_result *r)
{
    if (r->n_engines) {          /* sim: the driver's array; chunk times are the engines' */
        free(r->recs);
        atr_sim_stats_release(&r->engine);
    } else {                     /* HTTP: the replay owns records and chunk times */
        atr_llm_replay_release(&r->replay);
    }
    for (unsigned i = 0; i < r->n_engines; i++)
        atr_engine_free(r->engines[i]);
    free(r->engines);
    memset(r, 0, sizeof *r);
}

/* ---- the result object ---- */

void atr_exp_bench_config(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                          const struct atr_exp_result *r, const char *date,
                          struct atr_llm_bench_config *out)
{
    bool sim = t->kind == ATR_TARGET_SIM;
    *out = (struct atr_llm_bench_config){
        .date = date,
        .backend = sim ? "sim" : t->body.api == ATR_LLM_CHAT ? "openai-chat" : "openai",
        .model_id = sim ? t->profile.model->hf_name : t->body.model,
        .num_prompts = (int64_t)r->total,
        .request_rate = atr_schedule_request_rate(cfg->schedule, cfg->workload),
        .schedule = atr_schedule_kind_name(cfg->schedule->kind),
        .session_rate = atr_schedule_session_rate(cfg->schedule, cfg->workload),
        .time_scale = cfg->schedule->time_scale,
        .burstiness = cfg->schedule->burstiness,
        .max_concurrency = cfg->max_concurrency,
        .incomplete = r->incomplete,
        .slo_ttft_ms = -1, .slo_tpot_ms = -1, .slo_e2el_ms = -1,
    };
}

int atr_exp_write_result(struct atr_buf *b, const struct atr_target *t,
                         const struct atr_exp_result *r, const struct atr_llm_summary *s,
                         const struct atr_llm_bench_config *cfg)
{
    char name[256];
    atr_target_name(t, name, sizeof name);
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_llm_result_begin(&w, s, cfg);
    atr_jw_kv_str(&w, "target", name);
    if (r->repeat)
        atr_jw_kv_uint(&w, "repeat", r->repeat);
    if (r->has_client)
        atr_client_verdict_write(&w, &r->verdict);
    if (r->policy)
        atr_policy_stats_write(&w, r->policy, &r->policy_stats);
    if (r->has_engine)
        atr_sim_stats_write(&w, &t->profile, t->replicas,
                            t->engine.longest_prefix_first ? "sglang"
                            : t->engine.slots ? "llama.cpp" : "vllm", &r->engine);
    atr_llm_result_end(&w);
    return atr_jw_finish(&w);
}
