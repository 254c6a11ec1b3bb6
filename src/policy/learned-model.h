/* learned-model.h - the learned policy's model: a small multilayer
 * perceptron in plain C (input standardisation, ReLU hidden layers, softmax
 * output) and its model file (docs/policies.md, "## learned"). Deciding a
 * request needs only this; training lives above, in router/ (router/mlp.h).
 *
 * Every exp/log is the portable atr_det_exp/atr_det_log of util/rng.h, so a
 * model gives the same decision on every machine. atr_mlp_forward and
 * atr_mlp_predict never allocate (a routing decision).
 *
 * Memory: an atr_mlp owns its arrays (malloc); atr_mlp_release frees them.
 * An atr_router_model owns its candidate names and MLP. */
#ifndef ATR_POLICY_LEARNED_MODEL_H
#define ATR_POLICY_LEARNED_MODEL_H

#include <stdbool.h>
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

/* Allocates n_layers layers of widths[0..n_layers) over n_in inputs, all
 * parameters zero, mean 0 and std 1. */
void atr_mlp_alloc(struct atr_mlp *m, size_t n_in, const size_t *widths, size_t n_layers);
void atr_mlp_release(struct atr_mlp *m);

/* Forward pass keeping every layer's input: act[l] feeds layer l,
 * act[n_layers] are the output logits (training needs them all). */
void atr_mlp_forward_layers(const struct atr_mlp *m, const double *x,
                            double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH]);
/* Softmax of z[0..n) into p; returns log(sum(exp(z))). */
double atr_mlp_softmax(const double *z, size_t n, double *p);

/* Class probabilities of one input (probs: n_out). No allocation. */
void atr_mlp_forward(const struct atr_mlp *m, const double *x, double *probs);
/* The most probable class (lowest index on ties). No allocation. */
size_t atr_mlp_predict(const struct atr_mlp *m, const double *x);

/* Whether input f has a non-zero weight in the first layer: a feature
 * without one changes no decision (not an input of the trainer, or one
 * value on every training row; router/train.h). */
bool atr_mlp_input_weighted(const struct atr_mlp *m, size_t f);

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
    char holdout_sources[256];    /* "A,B": sources held out instead ("" none) */
    bool cut_wins;                /* labels: a cut output may win (the rule before
                                     "cut_wins": false; a file without the key) */
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

/* The learned policy's decision on feature vector x (what its decide does):
 * the chosen candidate, the argmax of the output logits (lowest index on
 * ties, atr_mlp_predict), with each candidate's logit in logits and its
 * softmax probability in probs (both n_candidates; either may be NULL).
 * The report's router lab repeats this in JS operation for operation. No
 * allocation. */
size_t atr_router_model_decide(const struct atr_router_model *m, const double *x,
                               double *logits, double *probs);

#endif
