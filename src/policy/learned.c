/* learned.c - the metadata router: a small MLP (policy/learned-model.h, trained
 * by `atr router train`) picks, per request, which candidate policy
 * decides it (docs/policies.md, "## learned").
 *
 * Every candidate sees every request ("shadowing"): each decides on its
 * own copy of the request, and gets started/finished with its own decision
 * (with the replica actually used), but only the chosen candidate's
 * decision is applied. A candidate with per-session state (compaction's
 * rewrites, max-tokens' output history) thus stays consistent over a whole
 * session even when the router switches between candidates, and each
 * candidate's replica load matches the real one. The cost is one decide
 * per candidate per request, a few hundred nanoseconds in all.
 *
 * Per request in flight the chosen index and the candidates' decisions
 * live in a ring indexed by request id (ids are dense in send order); the
 * ring doubles when two requests in flight would share a slot, so a steady
 * stream of requests allocates nothing. */
#include "policy/policy-impl.h"

#include <stdlib.h>
#include <string.h>

#include "policy/learned-features.h"
#include "policy/learned-model.h"
#include "util/alloc.h"

struct slot {
    bool live;
    uint8_t chosen;
    uint64_t id;
    struct atr_policy_decision dec[ATR_ROUTER_MAX_CANDIDATES];
};

struct learned {
    struct atr_router_model model;
    struct atr_policy *cand[ATR_ROUTER_MAX_CANDIDATES];
    int name_index[ATR_ROUTER_MAX_CANDIDATES];   /* in atr_policy_names */
    struct atr_router_fstate fstate;
    struct slot *ring;
    size_t ring_cap;                             /* power of two */
};

static const char *const keys[] = { "model", NULL };

static const char *option(const struct atr_policy *p, const char *key)
{
    for (size_t i = 0; i < p->n_options; i++)
        if (strcmp(p->option_keys[i], key) == 0)
            return p->option_values[i];
    return NULL;
}

static void free_state(struct atr_policy *p)
{
    struct learned *l = p->state;
    for (size_t i = 0; i < ATR_ROUTER_MAX_CANDIDATES; i++)
        atr_policy_free(l->cand[i]);
    atr_router_model_release(&l->model);
    atr_router_fstate_release(&l->fstate);
    free(l->ring);
    free(l);
    p->state = NULL;
}

static int make_candidates(struct learned *l, const struct atr_policy_cfg *cfg,
                           struct atr_error *err)
{
    struct atr_policy_cfg cc = *cfg;
    cc.options = NULL;                           /* candidates run with their defaults */
    for (size_t i = 0; i < l->model.n_candidates; i++) {
        const char *name = l->model.candidates[i];
        if (!(l->cand[i] = atr_policy_new(name, &cc, err)))
            return -1;
        for (int k = 0; atr_policy_names[k]; k++)
            if (strcmp(atr_policy_names[k], name) == 0)
                l->name_index[i] = k;
    }
    return 0;
}

static int init(struct atr_policy *p, const struct atr_policy_cfg *cfg, struct atr_error *err)
{
    const char *path = option(p, "model");
    if (!path || !*path)
        return atr_error_set(err, "policy learned: needs model=PATH "
                             "(train one with atr router train)");
    struct learned *l = xcalloc(1, sizeof *l);
    p->state = l;
    l->ring_cap = 64;
    l->ring = xcalloc(l->ring_cap, sizeof *l->ring);
    if (atr_router_model_load(&l->model, path, err) < 0)
        return -1;                               /* atr_policy_new frees the state */
    return make_candidates(l, cfg, err);
}

/* Doubles the ring until every request in flight, and id, has its own slot. */
static void grow(struct learned *l, uint64_t id)
{
    for (size_t cap = l->ring_cap * 2;; cap *= 2) {
        struct slot *r = xcalloc(cap, sizeof *r);
        bool clash = false;
        for (size_t i = 0; i < l->ring_cap && !clash; i++) {
            const struct slot *s = &l->ring[i];
            if (!s->live)
                continue;
            struct slot *t = &r[s->id & (cap - 1)];
            clash = t->live;
            *t = *s;
        }
        if (!clash && !r[id & (cap - 1)].live) {
            free(l->ring);
            l->ring = r;
            l->ring_cap = cap;
            return;
        }
        free(r);
    }
}

static struct slot *slot_new(struct learned *l, uint64_t id)
{
    struct slot *s = &l->ring[id & (l->ring_cap - 1)];
    if (s->live && s->id != id) {
        grow(l, id);
        s = &l->ring[id & (l->ring_cap - 1)];
    }
    return s;
}

static struct slot *slot_find(struct learned *l, uint64_t id)
{
    struct slot *s = &l->ring[id & (l->ring_cap - 1)];
    return s->live && s->id == id ? s : NULL;
}

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    struct learned *l = p->state;
    double x[ATR_ROUTER_N_FEATURES];
    atr_router_features(&l->fstate, r, x);
    size_t c = atr_mlp_predict(&l->model.mlp, x);
    struct slot *s = slot_new(l, r->id);
    s->live = true;
    s->id = r->id;
    s->chosen = (uint8_t)c;
    for (size_t i = 0; i < l->model.n_candidates; i++) {
        s->dec[i] = *d;                          /* the driver's defaults */
        atr_policy_decide(l->cand[i], r, &s->dec[i]);
    }
    *d = s->dec[c];
    d->delegate = l->name_index[c];
    p->stats.per_delegate[l->name_index[c]]++;
}

static void started(struct atr_policy *p, const struct atr_policy_req *r,
                    const struct atr_policy_decision *d)
{
    struct learned *l = p->state;
    struct slot *s = slot_find(l, r->id);
    if (!s)
        return;
    for (size_t i = 0; i < l->model.n_candidates; i++) {
        s->dec[i].replica = d->replica;
        atr_policy_started(l->cand[i], r, &s->dec[i]);
    }
}

static void finished(struct atr_policy *p, const struct atr_policy_req *r,
                     const struct atr_policy_decision *d, const struct atr_policy_outcome *o)
{
    struct learned *l = p->state;
    struct slot *s = slot_find(l, r->id);
    if (!s)
        return;
    for (size_t i = 0; i < l->model.n_candidates; i++) {
        s->dec[i].replica = d->replica;
        atr_policy_finished(l->cand[i], r, &s->dec[i], o);
    }
    s->live = false;
}

const struct atr_policy_ops atr_policy_learned = {
    .name = "learned", .option_keys = keys, .init = init, .decide = decide,
    .started = started, .finished = finished, .free_state = free_state,
};
