/* folds.h - the leave-one-source-out evaluation of the learned router
 * (`atr router eval --by-source`, docs/policies.md): one fold per source
 * with llm requests, each scored by a model trained on the other sources;
 * with input selection, the inputs of each fold's model picked by an inner
 * leave-one-source-out over those other sources, never looking at the
 * fold's own.
 *
 * Memory: the result is a value; the data is borrowed (its split is
 * changed). Nothing prints. */
#ifndef ATR_ROUTER_FOLDS_H
#define ATR_ROUTER_FOLDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/train.h"
#include "util/error.h"

#define ATR_ROUTER_MAX_SOURCES 64

/* The input sets selection chooses between, by name and feature bits. */
#define ATR_ROUTER_N_SELECT 6
extern const char *const atr_router_select_names[ATR_ROUTER_N_SELECT];
extern const uint32_t atr_router_select_inputs[ATR_ROUTER_N_SELECT];

struct atr_router_folds_cfg {
    struct atr_router_train_cfg train;    /* each fold's model (inputs: unless select) */
    bool select;                          /* pick the inputs per fold (inner validation) */
    size_t n_groups;                      /* sources: group indices 0..n_groups */
    size_t n_candidates;                  /* of the labels, for the pooled counts */
};

struct atr_router_fold_result {
    size_t group;                         /* the source held out */
    size_t sessions;                      /* its sessions */
    size_t pick;                          /* select: atr_router_select_names index */
    struct atr_router_eval ev;            /* its rows scored */
};

struct atr_router_folds {
    struct atr_router_fold_result f[ATR_ROUTER_MAX_SOURCES];
    size_t n;
    struct atr_router_eval pool;          /* every fold's counts added */
};

/* Sessions of group g among d's rows. */
size_t atr_router_group_sessions(const struct atr_router_data *d, size_t g);

/* Runs every fold. 0; -1 with err set for more than ATR_ROUTER_MAX_SOURCES
 * sources, fewer than 2 with llm requests, or a fold that failed. */
int atr_router_folds_run(struct atr_router_data *d, const struct atr_router_folds_cfg *cfg,
                         struct atr_router_folds *out, struct atr_error *err);

#endif
