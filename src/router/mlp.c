/* mlp.c - training the learned router's MLP: He initialisation,
 * standardisation, cross-entropy gradient and Adam (see mlp.h). The model
 * and its forward pass are the learned policy's (policy/learned-model.h). */
#include "router/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/rng.h"

int atr_mlp_init(struct atr_mlp *m, size_t n_in, const size_t *hidden, size_t n_hidden,
                 size_t n_out, uint64_t seed, struct atr_error *err)
{
    size_t widths[ATR_MLP_MAX_LAYERS];
    if (n_hidden > ATR_MLP_MAX_LAYERS - 1)
        return atr_error_set(err, "mlp: at most %d hidden layers", ATR_MLP_MAX_LAYERS - 1);
    for (size_t l = 0; l < n_hidden; l++)
        widths[l] = hidden[l];
    widths[n_hidden] = n_out;
    if (n_in < 1 || n_in > ATR_MLP_MAX_WIDTH)
        return atr_error_set(err, "mlp: %zu inputs, wants 1..%d", n_in, ATR_MLP_MAX_WIDTH);
    for (size_t l = 0; l <= n_hidden; l++)
        if (widths[l] < 1 || widths[l] > ATR_MLP_MAX_WIDTH)
            return atr_error_set(err, "mlp: layer width %zu, wants 1..%d", widths[l],
                                 ATR_MLP_MAX_WIDTH);
    atr_mlp_alloc(m, n_in, widths, n_hidden + 1);
    struct atr_rng rng;
    atr_rng_seed(&rng, seed, 0x6d6c70);
    for (size_t l = 0; l < m->n_layers; l++) {
        struct atr_mlp_layer *L = &m->layers[l];
        double scale = sqrt(2.0 / (double)L->in);      /* He, for ReLU */
        for (size_t i = 0; i < L->in * L->out; i++)
            L->w[i] = atr_rng_normal(&rng) * scale;
    }
    return 0;
}

void atr_mlp_init_like(struct atr_mlp *m, const struct atr_mlp *src)
{
    size_t widths[ATR_MLP_MAX_LAYERS];
    for (size_t l = 0; l < src->n_layers; l++)
        widths[l] = src->layers[l].out;
    atr_mlp_alloc(m, src->n_in, widths, src->n_layers);
    for (size_t i = 0; i < m->n_in; i++)
        m->std[i] = 0;
}

void atr_mlp_fit_standardize(struct atr_mlp *m, const double *x, size_t n)
{
    for (size_t j = 0; j < m->n_in; j++) {
        double sum = 0, sq = 0;
        for (size_t i = 0; i < n; i++)
            sum += x[i * m->n_in + j];
        double mean = n ? sum / (double)n : 0;
        for (size_t i = 0; i < n; i++) {
            double d = x[i * m->n_in + j] - mean;
            sq += d * d;
        }
        double sd = n ? sqrt(sq / (double)n) : 0;
        m->mean[j] = mean;
        m->std[j] = sd > 1e-9 ? sd : 1;
    }
}

/* Adds scale * d(loss of one sample)/d(params) to grad, from the output
 * error delta (p - onehot). */
static void backward(const struct atr_mlp *m, double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH],
                     double *delta, double scale, struct atr_mlp *grad)
{
    double prev[ATR_MLP_MAX_WIDTH];
    for (size_t l = m->n_layers; l-- > 0;) {
        const struct atr_mlp_layer *L = &m->layers[l];
        struct atr_mlp_layer *G = &grad->layers[l];
        for (size_t o = 0; o < L->out; o++) {
            double d = delta[o] * scale;
            G->b[o] += d;
            for (size_t i = 0; i < L->in; i++)
                G->w[o * L->in + i] += d * act[l][i];
        }
        if (l == 0)
            break;
        for (size_t i = 0; i < L->in; i++) {
            double s = 0;
            for (size_t o = 0; o < L->out; o++)
                s += L->w[o * L->in + i] * delta[o];
            prev[i] = act[l][i] > 0 ? s : 0;     /* ReLU: act > 0 iff its input was */
        }
        memcpy(delta, prev, L->in * sizeof *delta);
    }
}

/* A sample's weight: its class's times its own. */
static double weight_of(const uint32_t *y, size_t s, const double *class_weight,
                        const double *sample_weight)
{
    return (class_weight ? class_weight[y[s]] : 1) * (sample_weight ? sample_weight[s] : 1);
}

static double loss_weighted(const struct atr_mlp *m, const double *x, const uint32_t *y,
                            const size_t *idx, size_t n, const double *class_weight,
                            const double *sample_weight, struct atr_mlp *grad)
{
    double wsum = 0;
    for (size_t k = 0; k < n; k++)
        wsum += weight_of(y, idx[k], class_weight, sample_weight);
    if (wsum <= 0)
        return 0;
    double loss = 0;
    for (size_t k = 0; k < n; k++) {
        size_t s = idx[k];
        double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH], p[ATR_MLP_MAX_WIDTH];
        atr_mlp_forward_layers(m, x + s * m->n_in, act);
        const double *z = act[m->n_layers];
        double lse = atr_mlp_softmax(z, m->n_out, p);
        double w = weight_of(y, s, class_weight, sample_weight) / wsum;
        loss += w * (lse - z[y[s]]);
        if (!grad)
            continue;
        p[y[s]] -= 1;
        backward(m, act, p, w, grad);
    }
    return loss;
}

double atr_mlp_loss(const struct atr_mlp *m, const double *x, const uint32_t *y,
                    const size_t *idx, size_t n, const double *class_weight,
                    struct atr_mlp *grad)
{
    return loss_weighted(m, x, y, idx, n, class_weight, NULL, grad);
}

/* One Adam update of m from the gradient g (zeroed after); mo and ve are
 * the first and second moments, t the 1-based step. */
static void adam_step(struct atr_mlp *m, struct atr_mlp *g, struct atr_mlp *mo, struct atr_mlp *ve,
                      double lr, double l2, unsigned long t)
{
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - pow(b1, (double)t), c2 = 1 - pow(b2, (double)t);
    for (size_t l = 0; l < m->n_layers; l++) {
        struct atr_mlp_layer *L = &m->layers[l];
        double *P[2] = { L->w, L->b }, *G[2] = { g->layers[l].w, g->layers[l].b };
        double *M[2] = { mo->layers[l].w, mo->layers[l].b }, *V[2] = { ve->layers[l].w, ve->layers[l].b };
        size_t len[2] = { L->in * L->out, L->out };
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < len[k]; i++) {
                double gi = G[k][i] + (k == 0 ? l2 * P[k][i] : 0);
                M[k][i] = b1 * M[k][i] + (1 - b1) * gi;
                V[k][i] = b2 * V[k][i] + (1 - b2) * gi * gi;
                P[k][i] -= lr * (M[k][i] / c1) / (sqrt(V[k][i] / c2) + eps);
                G[k][i] = 0;
            }
    }
}

void atr_mlp_train(struct atr_mlp *m, const double *x, const uint32_t *y, size_t n,
                   const struct atr_mlp_train_cfg *cfg)
{
    if (n == 0)
        return;
    struct atr_mlp g, mo, ve;
    atr_mlp_init_like(&g, m);
    atr_mlp_init_like(&mo, m);
    atr_mlp_init_like(&ve, m);
    size_t *order = xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    struct atr_rng rng;
    atr_rng_seed(&rng, cfg->seed, 0x747261696e);
    size_t batch = cfg->batch ? cfg->batch : 32;
    unsigned long t = 0;
    for (unsigned e = 0; e < cfg->epochs; e++) {
        for (size_t i = n - 1; i > 0; i--) {          /* Fisher-Yates */
            size_t j = (size_t)atr_rng_below(&rng, i + 1), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        for (size_t s = 0; s < n; s += batch) {
            size_t len = n - s < batch ? n - s : batch;
            loss_weighted(m, x, y, order + s, len, cfg->class_weight, cfg->sample_weight, &g);
            adam_step(m, &g, &mo, &ve, cfg->lr, cfg->l2, ++t);
        }
    }
    free(order);
    atr_mlp_release(&g);
    atr_mlp_release(&mo);
    atr_mlp_release(&ve);
}
