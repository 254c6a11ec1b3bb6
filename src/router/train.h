/* train.h - the learned router's data, training and evaluation
 * (atr router train|eval; docs/policies.md, "## learned").
 *
 * Labels: the workload runs in the simulator once per candidate policy,
 * on the same schedule; each request (or each session, label "session")
 * is labelled with the candidate that gave it the lowest objective (E2E
 * latency or TTFT). The default candidate (prefix-cache when it is one,
 * else the first) keeps the label unless another beats it by more than
 * `margin` (relative): ties and noise go to the default. A request that
 * failed (over the model's context, timed out) has an infinite objective:
 * its near-zero latency never wins a label. Features are
 * the ones the learned policy computes at decision time, from the request
 * fields the driver fills (session history from the default's run).
 * Sessions, not requests, are split into train and held-out sets by a
 * seeded hash of their trace id, or by group (source; router/sources.h):
 * the source-held-out protocol (atr_router_fold, atr_router_loso,
 * atr_router_select) trains on some sources and scores others, whole
 * sessions on one side.
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
    /* Sources (router/sources.h), or NULL for one group: group[session]
     * in 0..n_groups. Each group runs in the simulator on its own (a
     * source's labels do not depend on what other sources are in the
     * files), and held_group[g] (when not NULL) holds out whole groups
     * instead of the seeded hash of sessions. */
    const size_t *group;
    size_t n_groups;
    const bool *held_group;
    bool cut_wins;                        /* false (the fair rule): a candidate that
                                             produced fewer output tokens than the
                                             default cannot beat it; true: the old
                                             labels, where a truncation could win */
};

/* One row per request of the workload, in session then turn order. */
struct atr_router_data {
    size_t n, n_candidates, default_candidate;
    double *x;                            /* [n][ATR_ROUTER_N_FEATURES] */
    uint32_t *y;                          /* label: candidate index */
    double *objective;                    /* [n][n_candidates], seconds */
    size_t *session;                      /* workload session index */
    size_t *group;                        /* per row: its session's group (0 without) */
    bool *held_out;                       /* per row (its session's) */
    size_t n_sessions_held_out, n_sessions_train;
};

/* Whether the session with this trace id is held out. */
bool atr_router_held_out(const char *trace_id, uint64_t seed, double fraction);

/* Runs every candidate and builds the labelled rows. */
int atr_router_label(const struct atr_router_sim *sim, const struct atr_router_label_cfg *cfg,
                     struct atr_router_data *out, struct atr_error *err);
void atr_router_data_release(struct atr_router_data *d);

/* Holds out the rows of the groups with held_group[g] and nothing else
 * (a fold of the source-held-out protocol), recounting the sessions. */
void atr_router_split_groups(struct atr_router_data *d, const bool *held_group);
/* Whether every session has all its rows on one side of the split (the
 * protocol's invariant: no session is both trained on and scored). */
bool atr_router_split_sound(const struct atr_router_data *d);

struct atr_router_train_cfg {
    size_t hidden[2];                     /* widths; 0 ends the list */
    unsigned epochs, batch;
    double lr, l2;
    uint64_t seed;
    /* Bit f set: feature f (atr_router_feature_names) is an input; 0: all.
     * The others get zero first-layer weights (their column is zero in
     * training, so they stay zero): the model file keeps every feature and
     * decides the same everywhere, but ignores those. A feature with one
     * value on every training row is left out the same way: it taught the
     * model nothing, and random weights on it would act only off the
     * training data (atr_router_constant_inputs). */
    uint32_t inputs;
    bool balance_sources;         /* weigh each group's rows to the same total */
};

/* Bit f set: feature f has one value on every row not held out. */
uint32_t atr_router_constant_inputs(const struct atr_router_data *d);

/* Fits standardisation and trains a fresh MLP on the rows not held out. */
int atr_router_train(const struct atr_router_data *d, const struct atr_router_train_cfg *cfg,
                     struct atr_mlp *out, struct atr_error *err);

/* The best single-feature rule: a threshold on one feature, one label
 * below it and one above (the baseline a model must beat to have learned
 * more than one number; the "rule" in docs/policies.md). */
struct atr_router_rule {
    size_t feature;                       /* atr_router_feature_names index */
    double threshold;                     /* x[feature] <= threshold: below */
    uint32_t below, above;                /* candidate indices */
};

/* Fits the rule with the most hits on the rows not held out (all twelve
 * features, every threshold between two adjacent values, both sides'
 * majority label; the first feature and lowest threshold on ties). With
 * no training row: feature 0, threshold +inf, the default candidate. */
void atr_router_rule_fit(const struct atr_router_data *d, struct atr_router_rule *out);
uint32_t atr_router_rule_predict(const struct atr_router_rule *r, const double *x);

struct atr_router_eval {
    size_t n, correct;
    size_t majority, majority_correct;    /* most frequent label and its hits */
    struct atr_router_rule rule;          /* the rule fitted on the training rows */
    size_t rule_correct;                  /* its hits on the scored rows */
    uint64_t confusion[ATR_ROUTER_MAX_CANDIDATES][ATR_ROUTER_MAX_CANDIDATES]; /* [label][predicted] */
};

/* Scores m on the held-out rows (or all rows when all is true). The
 * baseline is the majority label of the scored rows themselves: the best
 * any constant choice could do there; beside it, the single-feature rule
 * fitted on the rows not held out (atr_router_rule_fit), scored on the
 * same rows as m. */
void atr_router_evaluate(const struct atr_mlp *m, const struct atr_router_data *d, bool all,
                         struct atr_router_eval *out);

/* Adds the counts of e to sum (majority recomputed over sum's labels;
 * rule_correct summed: each fold's own rule, sum->rule is not one). */
void atr_router_eval_add(struct atr_router_eval *sum, const struct atr_router_eval *e, size_t nc);

/* One fold: trains on every group but g and skip (SIZE_MAX: none) and
 * scores g's rows into *ev. 1 when scored, 0 when no group was left to
 * train on, -1 on error. The split is checked with atr_router_split_sound. */
int atr_router_fold(struct atr_router_data *d, size_t n_groups, size_t g, size_t skip,
                    const struct atr_router_train_cfg *cfg, struct atr_router_eval *ev,
                    struct atr_error *err);

/* Leave one group out over the groups with rows, except `skip` (a group
 * left out entirely: an outer fold's test source; SIZE_MAX for none): for
 * each, trains on the other groups (not skip) and scores that group's rows.
 * Adds every group's evaluation to *pooled and, when per_group is not
 * NULL, sets per_group[g] (n_groups entries, zeroed first). Changes
 * d->held_out; every split is checked with atr_router_split_sound. */
int atr_router_loso(struct atr_router_data *d, size_t n_groups, size_t skip,
                    const struct atr_router_train_cfg *cfg, struct atr_router_eval *pooled,
                    struct atr_router_eval *per_group, struct atr_error *err);

/* Inner validation: the index of the config of grid[0..n_grid) with the
 * best pooled leave-one-group-out accuracy over the groups but skip (the
 * first on ties). Never looks at skip's rows. */
int atr_router_select(struct atr_router_data *d, size_t n_groups, size_t skip,
                      const struct atr_router_train_cfg *grid, size_t n_grid, size_t *best,
                      struct atr_error *err);

/* Runs the sessions with keep[i] (NULL: all) under policy name (options
 * may be NULL) and returns the mean E2E latency and TTFT of the answered
 * requests (failed ones have none), seconds. */
int atr_router_simulate(const struct atr_router_sim *sim, const bool *keep, const char *policy,
                        const char *options, double *mean_e2el, double *mean_ttft,
                        struct atr_error *err);

#endif
