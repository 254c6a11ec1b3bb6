/* folds.c - leave one source out, with input selection per fold (see
 * folds.h). */
#include "router/folds.h"

#include <string.h>

/* Every feature, prompt size alone, size with the prefix reuse against the
 * previous turn, size with what is new against it, size with the output
 * history, and everything but the timing features. size+reuse was added
 * after outer-fold runs with the fair labels (--cut-wins no), so the
 * nested figure guards the choice within the grid, not the grid. */
const char *const atr_router_select_names[ATR_ROUTER_N_SELECT] = {
    "all", "size", "size+reuse", "size+new", "size+outputs", "no-timing",
};
const uint32_t atr_router_select_inputs[ATR_ROUTER_N_SELECT] = {
    0, 1u << 0, 1u << 0 | 1u << 2, 1u << 0 | 1u << 2 | 1u << 3,
    1u << 0 | 1u << 10 | 1u << 11, 0xfffu & ~(1u << 8 | 1u << 9),
};

size_t atr_router_group_sessions(const struct atr_router_data *d, size_t g)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->group[i] == g && (i == 0 || d->session[i] != d->session[i - 1]);
    return n;
}

/* One fold: with selection, the input set inner validation picks on the
 * other sources; then a model trained on them, scored on the fold's. */
static int run_fold(struct atr_router_data *d, const struct atr_router_folds_cfg *cfg,
                    const struct atr_router_train_cfg *grid, struct atr_router_fold_result *f,
                    struct atr_error *err)
{
    f->sessions = atr_router_group_sessions(d, f->group);
    struct atr_router_train_cfg tc = cfg->train;
    if (cfg->select) {
        if (atr_router_select(d, cfg->n_groups, f->group, grid, ATR_ROUTER_N_SELECT, &f->pick,
                              err) < 0)
            return -1;
        tc = grid[f->pick];
    }
    return atr_router_fold(d, cfg->n_groups, f->group, SIZE_MAX, &tc, &f->ev, err) < 0 ? -1 : 0;
}

int atr_router_folds_run(struct atr_router_data *d, const struct atr_router_folds_cfg *cfg,
                         struct atr_router_folds *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    if (cfg->n_groups > ATR_ROUTER_MAX_SOURCES)
        return atr_error_set(err, "router eval --by-source: %zu sources, at most %d",
                             cfg->n_groups, ATR_ROUTER_MAX_SOURCES);
    for (size_t g = 0; g < cfg->n_groups; g++)
        if (atr_router_group_sessions(d, g))          /* a source with llm requests */
            out->f[out->n++] = (struct atr_router_fold_result){ .group = g };
    if (out->n < 2)
        return atr_error_set(err, "router eval --by-source: wants traces of 2 or more sources "
                             "with llm requests, found %zu", out->n);
    struct atr_router_train_cfg grid[ATR_ROUTER_N_SELECT];
    for (size_t k = 0; k < ATR_ROUTER_N_SELECT; k++) {
        grid[k] = cfg->train;
        grid[k].inputs = atr_router_select_inputs[k];
    }
    for (size_t i = 0; i < out->n; i++)
        if (run_fold(d, cfg, grid, &out->f[i], err) < 0)
            return -1;
    for (size_t i = 0; i < out->n; i++)
        atr_router_eval_add(&out->pool, &out->f[i].ev, cfg->n_candidates);
    return 0;
}
