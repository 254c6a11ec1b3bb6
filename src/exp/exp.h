/* exp.h - one experiment: a workload run against a target, the simulator
 * in virtual time or OpenAI-compatible servers in real time, under one
 * runtime policy, yielding the requests' records and the figures of the
 * engine and the policy as structs. `atr sim run`, `atr replay llm`,
 * `atr compare --run` and router training all run workloads through this
 * call; a series of policies is a loop over it.
 *
 *     struct atr_target t;       atr_target_parse(&t, "sim:h100/llama-3.1-8b", 1, &err);
 *     struct atr_exp_cfg cfg = { .workload = &w, .schedule = &s, ... };
 *     struct atr_exp_result r;   atr_exp_run(&t, &cfg, &r, &err);
 *     ... r.recs[0..r.n), r.engine, r.policy_stats ...
 *     atr_exp_result_release(&r);
 *
 * Targets. "sim:GPU/MODEL" makes fresh engine replicas (t->replicas, the
 * engine settings in t->engine) for every run, so no run sees another's
 * cache. "http://HOST:PORT[,URL...]" sends to those servers, one replica
 * per URL; runs of a series keep apart by a run word in front of every
 * prompt (cfg->run_salt).
 *
 * Memory: a target owns its URL copies (atr_target_release). A result owns
 * its records, their chunk arrays and strings (atr_exp_result_release);
 * the workload and schedule are borrowed for the call. */
#ifndef ATR_EXP_EXP_H
#define ATR_EXP_EXP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "exp/client-bound.h"
#include "llm/client.h"
#include "llm/prompt.h"
#include "llm/replay.h"
#include "policy/policy.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "stats/metrics.h"

enum atr_target_kind { ATR_TARGET_SIM, ATR_TARGET_HTTP };

#define ATR_TARGET_MAX_URLS 64

struct atr_target {
    enum atr_target_kind kind;
    const char *spec;                    /* as given (borrowed) */
    /* sim: */
    struct atr_profile profile;
    struct atr_engine_cfg engine;        /* vLLM's defaults; callers may change limits,
                                            prefix caching and the flavour */
    unsigned replicas;                   /* >= 1 */
    unsigned max_model_len;              /* prompt + output tokens a request may have;
                                            0: the model's (atr sim serve's default) */
    /* HTTP: each URL is a replica. */
    char *urls[ATR_TARGET_MAX_URLS];     /* base URLs without a trailing '/' or '/v1' */
    unsigned n_urls;
    struct atr_llm_client_cfg client;    /* its base_url is set per URL; a sim target
                                            keeps its two timeouts (sim/run.h) */
    struct atr_body_opts body;           /* api, model, force_length */
    unsigned warmup;                     /* uncounted requests before the clock starts */
};

/* What atr_target_parse returns for a spec that is not a target at all
 * (a usage error), as against -1 for one that names no known profile. */
#define ATR_TARGET_BAD_SPEC (-2)

/* Parses spec: "sim:GPU/MODEL" (tp: tensor parallel degree of the
 * profile), or one or more comma-separated http:// or https:// URLs. Sim
 * targets get vLLM's engine defaults, one replica and the model's context
 * length; both kinds a 600 s whole-request timeout; HTTP targets also a
 * 60 s timeout of silence (a sim target none unless client.stall_timeout_s
 * is set), the completions API, streaming, forced output lengths and one
 * warm-up request. */
int atr_target_parse(struct atr_target *t, const char *spec, unsigned tp, struct atr_error *err);
/* The simulator target of profile "GPU/MODEL" (as "sim:GPU/MODEL"). */
int atr_target_sim(struct atr_target *t, const char *profile, unsigned tp, struct atr_error *err);
void atr_target_release(struct atr_target *t);

/* The name results group by: "sim:GPU/MODEL[ tp=N][ xR][ sglang| llama.cpp]" (what
 * makes simulated runs comparable), or the spec of an HTTP target. */
void atr_target_name(const struct atr_target *t, char *out, size_t cap);

struct atr_exp_cfg {
    const struct atr_workload *workload;
    const struct atr_schedule *schedule; /* sessions' starts (the same for every run) */
    unsigned max_concurrency;            /* 0 = unlimited */
    const bool *keep;                    /* run only sessions i with keep[i]; NULL: all */
    const char *policy;                  /* NULL: every request as recorded */
    const char *policy_options;          /* "k=v,..." or NULL */
    uint64_t seed;                       /* the policy's */
    /* sim: one line per engine iteration (a single replica only). */
    void (*on_iter)(void *ctx, const struct atr_iter_info *it);
    void *iter_ctx;
    /* sim: what the policy decided to send for each turn (atr_sim_run_cfg). */
    void (*on_decision)(void *ctx, const char *trace_id, size_t turn,
                        const struct atr_policy_decision *dec);
    void *decision_ctx;
    /* sim: each record as it is made (atr_sim_run_cfg.on_record). */
    void (*on_record)(void *ctx, const struct atr_llm_record *rec);
    void *record_ctx;
    /* HTTP: */
    const char *run_salt;                /* word in front of every prompt, or NULL */
    double start_at;                     /* the schedule's 0 as a wall-clock epoch, or 0
                                            (atr_llm_replay_cfg.start_at) */
    double (*start_sync)(void *ctx, double t0);   /* atr_llm_replay_cfg's, or NULL */
    void *start_ctx;
    const volatile sig_atomic_t *stop;   /* set to stop early (result incomplete) */
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
};

struct atr_exp_result {
    struct atr_llm_record *recs;         /* in finish order */
    size_t n;
    size_t total;                        /* turns the run was to send */
    bool incomplete;                     /* stopped early: only what finished is here */
    const char *policy;                  /* the policy's name (static), or NULL */
    unsigned repeat;                     /* its repeat in a series (exp/series.h) from 1,
                                            written as "repeat"; 0: not repeated */
    struct atr_policy_stats policy_stats;
    bool has_client;                     /* HTTP targets: the client's own figures */
    struct atr_client_load client;
    struct atr_client_verdict verdict;   /* written as "client" */
    bool has_engine;                     /* sim targets: */
    struct atr_engine_stats engine;      /* summed over replicas */
    /* private: what the records point into */
    struct atr_engine **engines;
    unsigned n_engines;
    struct atr_llm_replay_result replay;
};

/* Runs cfg's workload on t under cfg->policy. 0 (also when stopped early),
 * or -1 with err set (a schedule the workload cannot have, a policy that
 * does not exist or refuses its options, a server that never answered). */
int atr_exp_run(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                struct atr_exp_result *out, struct atr_error *err);
void atr_exp_result_release(struct atr_exp_result *r);

/* What the result object echoes of the run (vLLM's header keys). date:
 * "YYYYMMDD-HHMMSS", kept by the caller; SLOs and percentiles unset. */
void atr_exp_bench_config(const struct atr_target *t, const struct atr_exp_cfg *cfg,
                          const struct atr_exp_result *r, const char *date,
                          struct atr_llm_bench_config *out);

/* The --save-result object of a run, one line, no newline: vLLM's keys,
 * then under "atr" atr's figures, the target's name, its repeat (when
 * r->repeat is set), the policy and its
 * counters, and the engine's figures (sim targets). 0, or -1 at b's cap. */
int atr_exp_write_result(struct atr_buf *b, const struct atr_target *t,
                         const struct atr_exp_result *r, const struct atr_llm_summary *s,
                         const struct atr_llm_bench_config *cfg);

#endif
