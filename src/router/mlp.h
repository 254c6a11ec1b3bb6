/* mlp.h - the learned router's model: a small multilayer perceptron in
 * plain C (input standardisation, ReLU hidden layers, softmax output),
 * trained with Adam on cross-entropy, and its model file (docs/policies.md,
 * "## learned").
 *
 * Every random draw comes from src/gen/rng.h and every exp/log from its
 * portable atr_det_exp/atr_det_log, so a seed gives the same weights.
 * atr_mlp_forward and atr_mlp_predict never allocate (a routing decision).
 *
 * Memory: an atr_mlp owns its arrays (malloc); atr_mlp_release frees them.
 * An atr_router_model owns its candidate names and MLP. */
#ifndef ATR_ROUTER_MLP_H
#define ATR_ROUTER_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

#define ATR_MLP_MAX_LAYERS 3      /* two hidden layers and the output */
#define ATR_MLP_MAX_WIDTH 128     /* of any layer, inputs included */

struct atr_mlp_layer {
    size_t in, out;
    double *w;                    /* [out][in], row-major */
    double *b;                    /* [out] */
};

struct atr_mlp {
    size_t n_in, n_out, n_layers;
    double *mean, *std;           /* [n_in]: x is used as (x - mean) / std */
    struct atr_mlp_layer layers[ATR_MLP_MAX_LAYERS];
};

/* n_in inputs, hidden[0..n_hidden) ReLU layers (0..2), n_out classes; He
 * initialisation from seed, mean 0 and std 1. -1 when a size is out of
 * range (0 or above ATR_MLP_MAX_WIDTH). */
int atr_mlp_init(struct atr_mlp *m, size_t n_in, const size_t *hidden, size_t n_hidden,
                 size_t n_out, uint64_t seed, struct atr_error *err);
/* Same shape as src, all parameters zero (a gradient accumulator). */
void atr_mlp_init_like(struct atr_mlp *m, const struct atr_mlp *src);
void atr_mlp_release(struct atr_mlp *m);
/* Sets mean/std from the rows x[0..n) (n_in each); a constant feature gets
 * std 1. */
void atr_mlp_fit_standardize(struct atr_mlp *m, const double *x, size_t n);

/* Class probabilities of one input (probs: n_out). No allocation. */
void atr_mlp_forward(const struct atr_mlp *m, const double *x, double *probs);
/* The most probable class (lowest index on ties). No allocation. */
size_t atr_mlp_predict(const struct atr_mlp *m, const double *x);

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
};

/* Adam on mini-batches of the rows x[0..n) (n_in each) with labels y;
 * standardisation must already be set. Deterministic for cfg->seed. */
void atr_mlp_train(struct atr_mlp *m, const double *x, const uint32_t *y, size_t n,
                   const struct atr_mlp_train_cfg *cfg);

/* The model file: the MLP with what it routes between and how it was made. */
#define ATR_ROUTER_MAX_CANDIDATES 8

struct atr_router_model {
    size_t n_candidates;
    char *candidates[ATR_ROUTER_MAX_CANDIDATES];  /* policy names, one per output */
    char objective[8];            /* "e2el" or "ttft" */
    struct atr_mlp mlp;
    /* trained_on */
    char profile[64];             /* GPU/MODEL */
    char label[16];               /* "request" or "session" */
    double margin;                /* a candidate beats the default only by more than this */
    double holdout;               /* fraction of sessions held out */
    uint64_t seed;
    uint64_t traces, samples;
};

/* Writes the model as JSON (format "atr-router/1"). */
int atr_router_model_write(const struct atr_router_model *m, struct atr_buf *b);
/* Reads and checks a model file: errors are "path:line:col: expected ...". */
int atr_router_model_load(struct atr_router_model *m, const char *path, struct atr_error *err);
/* Same from text; name is used in errors. */
int atr_router_model_parse(struct atr_router_model *m, const char *text, size_t len,
                           const char *name, struct atr_error *err);
void atr_router_model_release(struct atr_router_model *m);

#endif
