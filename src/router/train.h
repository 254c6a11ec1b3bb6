/* train.h - the learned router's data, training and evaluation
 * (atr router train|eval; docs/policies.md, "## learned").
 *
 * Labels: the workload runs in the simulator once per candidate policy,
 * on the same schedule; each request (or each session, label "session")
 * is labelled with the candidate that gave it the lowest objective (E2E
 * latency or TTFT). The default candidate (prefix-cache when it is one,
 * else the first) keeps the label unless another beats it by more than
 * `margin` (relative): ties and noise go to the default. Features are
 * the ones the learned policy computes at decision time, from the request
 * fields the driver fills (session history from the default's run).
 * Sessions, not requests, are split into train and held-out sets by a
 * seeded hash of their trace id.
 *
 * Nothing here prints. Memory: atr_router_data owns its arrays;
 * atr_router_data_release frees them. The workload and configs are
 * borrowed. */
#ifndef ATR_ROUTER_TRAIN_H
#define ATR_ROUTER_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exp/exp.h"
#include "router/mlp.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "util/error.h"

enum atr_router_objective { ATR_ROUTER_E2EL, ATR_ROUTER_TTFT };

/* How the candidates are run: the same experiment for every one. */
struct atr_router_sim {
    const struct atr_workload *workload;
    const struct atr_schedule *schedule;
    unsigned max_concurrency;
    const struct atr_target *target;      /* a sim: target (exp/exp.h) */
    uint64_t seed;                        /* policies' seed */
};

struct atr_router_label_cfg {
    const char *const *candidates;        /* policy names (not learned) */
    size_t n_candidates;                  /* 2..ATR_ROUTER_MAX_CANDIDATES */
    enum atr_router_objective objective;
    bool by_session;                      /* one label per session */
    double margin;                        /* e.g. 0.05 */
    double holdout;                       /* fraction of sessions held out */
    uint64_t split_seed;
};

/* One row per request of the workload, in session then turn order. */
struct atr_router_data {
    size_t n, n_candidates, default_candidate;
    double *x;                            /* [n][ATR_ROUTER_N_FEATURES] */
    uint32_t *y;                          /* label: candidate index */
    double *objective;                    /* [n][n_candidates], seconds */
    size_t *session;                      /* workload session index */
    bool *held_out;                       /* per row (its session's) */
    size_t n_sessions_held_out, n_sessions_train;
};

/* Whether the session with this trace id is held out. */
bool atr_router_held_out(const char *trace_id, uint64_t seed, double fraction);

/* Runs every candidate and builds the labelled rows. */
int atr_router_label(const struct atr_router_sim *sim, const struct atr_router_label_cfg *cfg,
                     struct atr_router_data *out, struct atr_error *err);
void atr_router_data_release(struct atr_router_data *d);

struct atr_router_train_cfg {
    size_t hidden[2];                     /* widths; 0 ends the list */
    unsigned epochs, batch;
    double lr, l2;
    uint64_t seed;
};

/* Fits standardisation and trains a fresh MLP on the rows not held out. */
int atr_router_train(const struct atr_router_data *d, const struct atr_router_train_cfg *cfg,
                     struct atr_mlp *out, struct atr_error *err);

struct atr_router_eval {
    size_t n, correct;
    size_t majority, majority_correct;    /* most frequent label and its hits */
    uint64_t confusion[ATR_ROUTER_MAX_CANDIDATES][ATR_ROUTER_MAX_CANDIDATES]; /* [label][predicted] */
};

/* Scores m on the held-out rows (or all rows when all is true). The
 * baseline is the majority label of the scored rows themselves: the best
 * any constant choice could do there. */
void atr_router_evaluate(const struct atr_mlp *m, const struct atr_router_data *d, bool all,
                         struct atr_router_eval *out);

/* Runs the sessions with keep[i] (NULL: all) under policy name (options
 * may be NULL) and returns the mean E2E latency and TTFT, seconds. */
int atr_router_simulate(const struct atr_router_sim *sim, const bool *keep, const char *policy,
                        const char *options, double *mean_e2el, double *mean_ttft,
                        struct atr_error *err);

#endif
