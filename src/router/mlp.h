/* mlp.h - training the learned router's MLP (policy/learned-model.h holds
 * the model and its forward pass): He initialisation, standardisation,
 * cross-entropy gradient and Adam on mini-batches.
 *
 * Every random draw comes from util/rng.h and every exp/log from its
 * portable atr_det_exp/atr_det_log, so a seed gives the same weights.
 *
 * Memory: as learned-model.h; atr_mlp_release frees what these allocate. */
#ifndef ATR_ROUTER_MLP_H
#define ATR_ROUTER_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "policy/learned-model.h"
#include "util/error.h"

/* n_in inputs, hidden[0..n_hidden) ReLU layers (0..2), n_out classes; He
 * initialisation from seed, mean 0 and std 1. -1 when a size is out of
 * range (0 or above ATR_MLP_MAX_WIDTH). */
int atr_mlp_init(struct atr_mlp *m, size_t n_in, const size_t *hidden, size_t n_hidden,
                 size_t n_out, uint64_t seed, struct atr_error *err);
/* Same shape as src, all parameters zero (a gradient accumulator). */
void atr_mlp_init_like(struct atr_mlp *m, const struct atr_mlp *src);
/* Sets mean/std from the rows x[0..n) (n_in each); a constant feature gets
 * std 1. */
void atr_mlp_fit_standardize(struct atr_mlp *m, const double *x, size_t n);

/* Mean cross-entropy over the samples idx[0..n) of (x, y), weighted by
 * class_weight[y] when not NULL; when grad is not NULL (atr_mlp_init_like),
 * adds the loss's gradient to it. */
double atr_mlp_loss(const struct atr_mlp *m, const double *x, const uint32_t *y,
                    const size_t *idx, size_t n, const double *class_weight,
                    struct atr_mlp *grad);

struct atr_mlp_train_cfg {
    unsigned epochs;              /* passes over the data */
    unsigned batch;               /* mini-batch size */
    double lr;                    /* Adam step size */
    double l2;                    /* weight decay on weights (not biases) */
    uint64_t seed;                /* shuffling */
    const double *class_weight;   /* [n_out] or NULL */
    const double *sample_weight;  /* [n] or NULL: times the class weight */
};

/* Adam on mini-batches of the rows x[0..n) (n_in each) with labels y;
 * standardisation must already be set. Deterministic for cfg->seed. */
void atr_mlp_train(struct atr_mlp *m, const double *x, const uint32_t *y, size_t n,
                   const struct atr_mlp_train_cfg *cfg);

#endif
