/* learned-model.c - the learned policy's model: the MLP's forward pass
 * and its JSON model file (see learned-model.h). Training is in router/. */
#include "policy/learned-model.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "policy/learned-features.h"
#include "policy/policy.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/input.h"
#include "util/rng.h"

void atr_mlp_alloc(struct atr_mlp *m, size_t n_in, const size_t *widths, size_t n_layers)
{
    memset(m, 0, sizeof *m);
    m->n_in = n_in;
    m->n_layers = n_layers;
    m->mean = xcalloc(n_in, sizeof *m->mean);
    m->std = xcalloc(n_in, sizeof *m->std);
    for (size_t i = 0; i < n_in; i++)
        m->std[i] = 1;
    size_t in = n_in;
    for (size_t l = 0; l < n_layers; l++) {
        struct atr_mlp_layer *L = &m->layers[l];
        L->in = in;
        L->out = widths[l];
        L->w = xcalloc(L->in * L->out, sizeof *L->w);
        L->b = xcalloc(L->out, sizeof *L->b);
        in = L->out;
    }
    m->n_out = in;
}

void atr_mlp_release(struct atr_mlp *m)
{
    free(m->mean);
    free(m->std);
    for (size_t l = 0; l < m->n_layers; l++) {
        free(m->layers[l].w);
        free(m->layers[l].b);
    }
    memset(m, 0, sizeof *m);
}

/* Forward pass keeping every layer's input: act[l] feeds layer l,
 * act[n_layers] are the output logits. */
void atr_mlp_forward_layers(const struct atr_mlp *m, const double *x,
                        double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH])
{
    for (size_t j = 0; j < m->n_in; j++)
        act[0][j] = (x[j] - m->mean[j]) / m->std[j];
    for (size_t l = 0; l < m->n_layers; l++) {
        const struct atr_mlp_layer *L = &m->layers[l];
        bool relu = l + 1 < m->n_layers;
        for (size_t o = 0; o < L->out; o++) {
            const double *w = L->w + o * L->in;
            double z = L->b[o];
            for (size_t i = 0; i < L->in; i++)
                z += w[i] * act[l][i];
            act[l + 1][o] = relu && z < 0 ? 0 : z;
        }
    }
}

/* Softmax of z[0..n) into p; returns log(sum(exp(z))). */
double atr_mlp_softmax(const double *z, size_t n, double *p)
{
    double mx = z[0], sum = 0;
    for (size_t i = 1; i < n; i++)
        mx = z[i] > mx ? z[i] : mx;
    for (size_t i = 0; i < n; i++)
        sum += (p[i] = atr_det_exp(z[i] - mx));
    for (size_t i = 0; i < n; i++)
        p[i] /= sum;
    return mx + atr_det_log(sum);
}

void atr_mlp_forward(const struct atr_mlp *m, const double *x, double *probs)
{
    double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH];
    atr_mlp_forward_layers(m, x, act);
    atr_mlp_softmax(act[m->n_layers], m->n_out, probs);
}

size_t atr_mlp_predict(const struct atr_mlp *m, const double *x)
{
    double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH];
    atr_mlp_forward_layers(m, x, act);
    const double *z = act[m->n_layers];
    size_t best = 0;
    for (size_t i = 1; i < m->n_out; i++)
        if (z[i] > z[best])
            best = i;
    return best;
}

bool atr_mlp_input_weighted(const struct atr_mlp *m, size_t f)
{
    const struct atr_mlp_layer *L = &m->layers[0];
    for (size_t o = 0; m->n_layers && f < L->in && o < L->out; o++)
        if (L->w[o * L->in + f] != 0)
            return true;
    return false;
}

size_t atr_router_model_decide(const struct atr_router_model *m, const double *x,
                               double *logits, double *probs)
{
    double act[ATR_MLP_MAX_LAYERS + 1][ATR_MLP_MAX_WIDTH];
    const struct atr_mlp *n = &m->mlp;
    atr_mlp_forward_layers(n, x, act);
    const double *z = act[n->n_layers];
    size_t best = 0;
    for (size_t i = 1; i < n->n_out; i++)
        if (z[i] > z[best])
            best = i;
    if (logits)
        memcpy(logits, z, n->n_out * sizeof *z);
    if (probs)
        atr_mlp_softmax(z, n->n_out, probs);
    return best;
}

/* ---- model file ---- */

static int put_nums(struct atr_buf *b, const double *v, size_t n)
{
    int rc = atr_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++)
        rc |= atr_buf_printf(b, "%s%.17g", i ? ", " : "", v[i]);
    return rc | atr_buf_putc(b, ']');
}

static int put_strs(struct atr_buf *b, const char *const *v, size_t n)
{
    int rc = atr_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        rc |= i ? atr_buf_puts(b, ", ") : 0;
        rc |= atr_json_write_string(b, v[i], strlen(v[i]));
    }
    return rc | atr_buf_putc(b, ']');
}

int atr_router_model_write(const struct atr_router_model *m, struct atr_buf *b)
{
    const struct atr_mlp *n = &m->mlp;
    int rc = atr_buf_puts(b, "{\n  \"format\": \"atr-router/1\",\n  \"candidates\": ");
    rc |= put_strs(b, (const char *const *)m->candidates, m->n_candidates);
    rc |= atr_buf_puts(b, ",\n  \"features\": ");
    rc |= put_strs(b, atr_router_feature_names, ATR_ROUTER_N_FEATURES);
    rc |= atr_buf_printf(b, ",\n  \"objective\": \"%s\",\n  \"mean\": ", m->objective);
    rc |= put_nums(b, n->mean, n->n_in);
    rc |= atr_buf_puts(b, ",\n  \"std\": ");
    rc |= put_nums(b, n->std, n->n_in);
    rc |= atr_buf_puts(b, ",\n  \"layers\": [");
    for (size_t l = 0; l < n->n_layers; l++) {
        const struct atr_mlp_layer *L = &n->layers[l];
        rc |= atr_buf_printf(b, "%s\n    {\"in\": %zu, \"out\": %zu, \"weights\": ", l ? "," : "",
                             L->in, L->out);
        rc |= put_nums(b, L->w, L->in * L->out);
        rc |= atr_buf_puts(b, ", \"bias\": ");
        rc |= put_nums(b, L->b, L->out);
        rc |= atr_buf_putc(b, '}');
    }
    rc |= atr_buf_puts(b, "\n  ],\n  \"trained_on\": {\"profile\": ");
    rc |= atr_json_write_string(b, m->profile, strlen(m->profile));
    rc |= atr_buf_printf(b, ", \"traces\": %llu, \"samples\": %llu, \"label\": \"%s\", "
                         "\"margin\": %.17g, \"holdout\": %.17g, \"seed\": %llu",
                         (unsigned long long)m->traces, (unsigned long long)m->samples, m->label,
                         m->margin, m->holdout, (unsigned long long)m->seed);
    if (m->holdout_sources[0]) {
        rc |= atr_buf_puts(b, ", \"holdout_sources\": ");
        rc |= atr_json_write_string(b, m->holdout_sources, strlen(m->holdout_sources));
    }
    if (!m->cut_wins)
        rc |= atr_buf_puts(b, ", \"cut_wins\": false");
    rc |= atr_buf_puts(b, "}\n}\n");
    return rc ? -1 : 0;
}

/* Parsing context: errors name the file and the node's position. */
struct mctx {
    const char *name;
    struct atr_error *err;
};

static int expected(const struct mctx *c, const struct atr_json *at, const char *what)
{
    return atr_error_at(c->err, c->name, at ? at->line : 0, at ? at->col : 0, "expected %s", what);
}

/* The member key of obj, which must be of type t. */
static const struct atr_json *member(const struct mctx *c, const struct atr_json *obj,
                                     const char *key, enum atr_json_type t, const char *what)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!atr_json_is(v, t)) {
        expected(c, v ? v : obj, what);
        return NULL;
    }
    return v;
}

/* An array of exactly n numbers into out. */
static int read_nums(const struct mctx *c, const struct atr_json *obj, const char *key, size_t n,
                     double *out)
{
    char what[96];
    snprintf(what, sizeof what, "\"%s\" array of %zu numbers", key, n);
    const struct atr_json *a = member(c, obj, key, ATR_JSON_ARRAY, what);
    if (!a)
        return -1;
    if (a->u.kids.count != n)
        return expected(c, a, what);
    size_t i = 0;
    for (const struct atr_json *v = a->u.kids.first; v; v = v->next, i++) {
        if (!atr_json_is(v, ATR_JSON_NUMBER) || !isfinite(v->u.num))
            return expected(c, v, "a finite number");
        out[i] = v->u.num;
    }
    return 0;
}

static bool known_candidate(const char *s)
{
    for (size_t i = 0; atr_policy_names[i]; i++)
        if (strcmp(atr_policy_names[i], s) == 0)
            return strcmp(s, "learned") != 0;
    return false;
}

static int read_candidates(const struct mctx *c, const struct atr_json *root,
                           struct atr_router_model *m)
{
    const char *what = "\"candidates\" array of 2..8 policy names";
    const struct atr_json *a = member(c, root, "candidates", ATR_JSON_ARRAY, what);
    if (!a)
        return -1;
    if (a->u.kids.count < 2 || a->u.kids.count > ATR_ROUTER_MAX_CANDIDATES)
        return expected(c, a, what);
    for (const struct atr_json *v = a->u.kids.first; v; v = v->next) {
        if (!atr_json_is(v, ATR_JSON_STRING) || !known_candidate(v->u.str.s))
            return expected(c, v, "a policy name other than learned (naive, prefix-cache, "
                            "prefix-route, compaction, max-tokens)");
        m->candidates[m->n_candidates++] = xstrdup(v->u.str.s);
    }
    return 0;
}

static int read_features(const struct mctx *c, const struct atr_json *root)
{
    char what[64];
    snprintf(what, sizeof what, "\"features\" array of the %d router features",
             ATR_ROUTER_N_FEATURES);
    const struct atr_json *a = member(c, root, "features", ATR_JSON_ARRAY, what);
    if (!a)
        return -1;
    if (a->u.kids.count != ATR_ROUTER_N_FEATURES)
        return expected(c, a, what);
    size_t i = 0;
    for (const struct atr_json *v = a->u.kids.first; v; v = v->next, i++)
        if (!atr_json_is(v, ATR_JSON_STRING) || strcmp(v->u.str.s, atr_router_feature_names[i]))
            return atr_error_at(c->err, c->name, v->line, v->col, "expected feature \"%s\"",
                                atr_router_feature_names[i]);
    return 0;
}

static int read_layers(const struct mctx *c, const struct atr_json *root,
                       struct atr_router_model *m)
{
    const char *what = "\"layers\" array of 1..3 layers";
    const struct atr_json *a = member(c, root, "layers", ATR_JSON_ARRAY, what);
    if (!a)
        return -1;
    if (a->u.kids.count < 1 || a->u.kids.count > ATR_MLP_MAX_LAYERS)
        return expected(c, a, what);
    size_t widths[ATR_MLP_MAX_LAYERS], l = 0, in = ATR_ROUTER_N_FEATURES;
    for (const struct atr_json *v = a->u.kids.first; v; v = v->next, l++) {
        int64_t li, lo;
        char want[96];
        bool last = !v->next;
        size_t out_want = last ? m->n_candidates : 0;
        snprintf(want, sizeof want, "a layer object with \"in\": %zu", in);
        if (!atr_json_is(v, ATR_JSON_OBJECT) || !atr_json_get_i64(v, "in", &li) ||
            li != (int64_t)in)
            return expected(c, v, want);
        if (!atr_json_get_i64(v, "out", &lo) || lo < 1 || lo > ATR_MLP_MAX_WIDTH ||
            (last && lo != (int64_t)out_want)) {
            snprintf(want, sizeof want, last ? "\"out\": %zu (one per candidate)"
                     : "\"out\" in 1..%zu", last ? out_want : (size_t)ATR_MLP_MAX_WIDTH);
            return expected(c, v, want);
        }
        widths[l] = (size_t)lo;
        in = (size_t)lo;
    }
    atr_mlp_alloc(&m->mlp, ATR_ROUTER_N_FEATURES, widths, l);
    l = 0;
    for (const struct atr_json *v = a->u.kids.first; v; v = v->next, l++) {
        struct atr_mlp_layer *L = &m->mlp.layers[l];
        if (read_nums(c, v, "weights", L->in * L->out, L->w) < 0 ||
            read_nums(c, v, "bias", L->out, L->b) < 0)
            return -1;
    }
    return 0;
}

static void read_trained_on(const struct atr_json *root, struct atr_router_model *m)
{
    const struct atr_json *t = atr_json_get(root, "trained_on");
    const char *s;
    int64_t i;
    snprintf(m->label, sizeof m->label, "request");
    m->margin = 0.05;
    m->holdout = 0.25;
    if ((s = atr_json_get_str(t, "profile", NULL)))
        snprintf(m->profile, sizeof m->profile, "%s", s);
    if ((s = atr_json_get_str(t, "label", NULL)) && strcmp(s, "session") == 0)
        snprintf(m->label, sizeof m->label, "session");
    atr_json_get_num(t, "margin", &m->margin);
    atr_json_get_num(t, "holdout", &m->holdout);
    const struct atr_json *cw = atr_json_get(t, "cut_wins");
    m->cut_wins = !atr_json_is(cw, ATR_JSON_FALSE);   /* absent: a model from before the key */
    if ((s = atr_json_get_str(t, "holdout_sources", NULL)))
        snprintf(m->holdout_sources, sizeof m->holdout_sources, "%s", s);
    if (atr_json_get_i64(t, "seed", &i) && i >= 0)
        m->seed = (uint64_t)i;
    if (atr_json_get_i64(t, "traces", &i) && i >= 0)
        m->traces = (uint64_t)i;
    if (atr_json_get_i64(t, "samples", &i) && i >= 0)
        m->samples = (uint64_t)i;
}

static int read_model(const struct mctx *c, const struct atr_json *root, struct atr_router_model *m)
{
    if (!atr_json_is(root, ATR_JSON_OBJECT))
        return expected(c, root, "a model object");
    const char *fmt = atr_json_get_str(root, "format", NULL);
    if (!fmt || strcmp(fmt, "atr-router/1") != 0)
        return expected(c, atr_json_get(root, "format") ? atr_json_get(root, "format") : root,
                        "\"format\": \"atr-router/1\"");
    const char *obj = atr_json_get_str(root, "objective", NULL);
    if (!obj || (strcmp(obj, "e2el") && strcmp(obj, "ttft")))
        return expected(c, atr_json_get(root, "objective") ? atr_json_get(root, "objective")
                        : root, "\"objective\": \"e2el\" or \"ttft\"");
    snprintf(m->objective, sizeof m->objective, "%s", obj);
    if (read_candidates(c, root, m) < 0 || read_features(c, root) < 0 ||
        read_layers(c, root, m) < 0)
        return -1;
    if (read_nums(c, root, "mean", ATR_ROUTER_N_FEATURES, m->mlp.mean) < 0 ||
        read_nums(c, root, "std", ATR_ROUTER_N_FEATURES, m->mlp.std) < 0)
        return -1;
    for (size_t i = 0; i < ATR_ROUTER_N_FEATURES; i++)
        if (!(m->mlp.std[i] > 0))
            return expected(c, atr_json_get(root, "std"), "\"std\" values above 0");
    read_trained_on(root, m);
    return 0;
}

int atr_router_model_parse(struct atr_router_model *m, const char *text, size_t len,
                           const char *name, struct atr_error *err)
{
    memset(m, 0, sizeof *m);
    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_json *root;
    struct atr_json_err je;
    struct mctx c = { name, err };
    int rc;
    if (atr_json_parse(&arena, text, len, NULL, &root, &je) < 0)
        rc = atr_error_at(err, name, je.line, je.col, "%s", je.msg);
    else
        rc = read_model(&c, root, m);
    atr_arena_release(&arena);
    if (rc < 0)
        atr_router_model_release(m);
    return rc;
}

int atr_router_model_load(struct atr_router_model *m, const char *path, struct atr_error *err)
{
    memset(m, 0, sizeof *m);
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    struct atr_buf b = ATR_BUF_INIT;
    int rc = atr_input_read_all(in, &b, (size_t)64 << 20, err);
    atr_input_close(in);
    if (rc == 0)
        rc = atr_router_model_parse(m, b.data ? b.data : "", b.len, path, err);
    atr_buf_release(&b);
    return rc;
}

void atr_router_model_release(struct atr_router_model *m)
{
    for (size_t i = 0; i < m->n_candidates; i++)
        free(m->candidates[i]);
    atr_mlp_release(&m->mlp);
    memset(m, 0, sizeof *m);
}
