/* policy.c - the policy registry, option parsing and replica load
 * tracking shared by every policy (see policy.h). */
#include "policy/policy-impl.h"

#include "json/writer.h"
#include "util/alloc.h"
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct atr_policy_ops *const registry[] = {
    &atr_policy_naive, &atr_policy_prefix_cache, &atr_policy_prefix_route,
    &atr_policy_compaction, &atr_policy_max_tokens, &atr_policy_learned, NULL,
};

const char *const atr_policy_names[] = {
    "naive", "prefix-cache", "prefix-route", "compaction", "max-tokens", "learned", NULL,
};

static int split_options(struct atr_policy *p, const char *options, struct atr_error *err)
{
    if (!options || !*options)
        return 0;
    char *copy = xstrdup(options), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) {
            rc = atr_error_set(err, "policy %s: option '%s' is not key=value", p->ops->name, tok);
            break;
        }
        *eq = 0;
        /* "name.key=value" is for policy `name` only: others skip it, so one
         * option list serves a run of several policies. */
        char *dot = strchr(tok, '.');
        if (dot) {
            *dot = 0;
            bool mine = strcmp(tok, p->ops->name) == 0;
            tok = dot + 1;
            if (!mine)
                continue;
        }
        bool known = false;
        for (const char *const *k = p->ops->option_keys; k && *k; k++)
            known |= strcmp(*k, tok) == 0;
        if (!known) {
            char list[256] = "";
            for (const char *const *k = p->ops->option_keys; k && *k; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         k == p->ops->option_keys ? "" : ", ", *k);
            rc = atr_error_set(err, "policy %s: unknown option '%s' (known: %s)", p->ops->name,
                               tok, *list ? list : "none");
            break;
        }
        if (p->n_options == ATR_POLICY_MAX_OPTIONS) {
            rc = atr_error_set(err, "policy %s: too many options", p->ops->name);
            break;
        }
        p->option_keys[p->n_options] = strdup(tok);
        p->option_values[p->n_options++] = strdup(eq + 1);
    }
    free(copy);
    return rc;
}

struct atr_policy *atr_policy_new(const char *name, const struct atr_policy_cfg *cfg,
                                  struct atr_error *err)
{
    const struct atr_policy_ops *ops = NULL;
    for (size_t i = 0; registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0)
            ops = registry[i];
    if (!ops) {
        atr_error_set(err, "unknown policy '%s' (known: naive, prefix-cache, prefix-route, "
                      "compaction, max-tokens, learned)", name);
        return NULL;
    }
    if (cfg->n_replicas < 1) {
        atr_error_set(err, "policy %s: needs at least one replica", name);
        return NULL;
    }
    struct atr_policy *p = xcalloc(1, sizeof *p);
    p->load = xcalloc(cfg->n_replicas, sizeof *p->load);
    p->ops = ops;
    p->cfg = *cfg;
    p->cfg.options = NULL;            /* split below; the caller's string is not kept */
    if (p->cfg.block_size == 0)
        p->cfg.block_size = 16;
    if (split_options(p, cfg->options, err) < 0 || (ops->init && ops->init(p, &p->cfg, err) < 0)) {
        atr_policy_free(p);
        return NULL;
    }
    return p;
}

void atr_policy_free(struct atr_policy *p)
{
    if (!p)
        return;
    if (p->ops->free_state && p->state)
        p->ops->free_state(p);
    for (size_t i = 0; i < p->n_options; i++) {
        free(p->option_keys[i]);
        free(p->option_values[i]);
    }
    free(p->load);
    free(p);
}

const char *atr_policy_name(const struct atr_policy *p)
{
    return p->ops->name;
}

/* The first "name.key=value" of options whose name is none of names[0..n),
 * copied into out; false when there is none. */
static bool stray_option(const char *const *names, size_t n, const char *options, char *out,
                         size_t cap)
{
    for (const char *tok = options; *tok; tok += *tok == ',') {
        size_t len = strcspn(tok, ","), key = strcspn(tok, "=,");
        const char *dot = memchr(tok, '.', key);
        bool listed = !dot;
        for (size_t i = 0; i < n && !listed; i++)
            listed = strlen(names[i]) == (size_t)(dot - tok) &&
                     strncmp(names[i], tok, (size_t)(dot - tok)) == 0;
        if (!listed) {
            snprintf(out, cap, "%.*s", (int)len, tok);
            return true;
        }
        tok += len;
    }
    return false;
}

int atr_policy_check(const char *const *names, size_t n, const char *options,
                     struct atr_error *err)
{
    char stray[128];
    if (options && stray_option(names, n, options, stray, sizeof stray))
        return atr_error_set(err, "policy option '%s' is for a policy not in the run",
                             stray);
    struct atr_policy_cfg cfg = {.n_replicas = 1, .block_size = 16, .options = options};
    for (size_t i = 0; i < n; i++) {
        struct atr_policy *p = atr_policy_new(names[i], &cfg, err);
        if (!p)
            return -1;
        atr_policy_free(p);
    }
    return 0;
}

void atr_policy_decide(struct atr_policy *p, const struct atr_policy_req *r,
                       struct atr_policy_decision *d)
{
    p->stats.requests++;
    p->ops->decide(p, r, d);
    if (d->replica >= p->cfg.n_replicas)
        d->replica = 0;
    p->stats.salted += d->salt;
}

void atr_policy_started(struct atr_policy *p, const struct atr_policy_req *r,
                        const struct atr_policy_decision *d)
{
    p->load[d->replica]++;
    if (p->ops->started)
        p->ops->started(p, r, d);
}

void atr_policy_finished(struct atr_policy *p, const struct atr_policy_req *r,
                         const struct atr_policy_decision *d, const struct atr_policy_outcome *o)
{
    if (p->load[d->replica])
        p->load[d->replica]--;
    if (p->ops->finished)
        p->ops->finished(p, r, d, o);
}

void atr_policy_get_stats(const struct atr_policy *p, struct atr_policy_stats *out)
{
    *out = p->stats;
}

const uint32_t *atr_policy_load(const struct atr_policy *p)
{
    return p->load;
}

int atr_policy_opt_num(const struct atr_policy *p, const char *key, double def, double lo,
                       double hi, double *out, struct atr_error *err)
{
    *out = def;
    for (size_t i = 0; i < p->n_options; i++) {
        if (strcmp(p->option_keys[i], key) != 0)
            continue;
        char *end;
        double v = strtod(p->option_values[i], &end);
        if (end == p->option_values[i] || *end || !(v >= lo && v <= hi))
            return atr_error_set(err, "policy %s: %s wants a number in [%g, %g], not '%s'",
                                 p->ops->name, key, lo, hi, p->option_values[i]);
        *out = v;
    }
    return 0;
}

unsigned atr_policy_round_robin(struct atr_policy *p)
{
    return (unsigned)(p->rr_next++ % p->cfg.n_replicas);
}

unsigned atr_policy_least_loaded(const struct atr_policy *p)
{
    unsigned best = 0;
    for (unsigned i = 1; i < p->cfg.n_replicas; i++)
        if (p->load[i] < p->load[best])
            best = i;
    return best;
}

void atr_policy_stats_write(struct atr_jw *w, const char *name, const struct atr_policy_stats *s)
{
    const struct { const char *key; uint64_t v; } kv[] = {
        {"requests", s->requests}, {"salted", s->salted}, {"tokens_saved", s->tokens_saved},
        {"compactions", s->compactions}, {"blocks_invalidated", s->blocks_invalidated},
        {"truncated", s->truncated}, {"tokens_cut", s->tokens_cut},
        {"reserved_tokens", s->reserved_tokens}, {"reserve_saved", s->reserve_saved},
        {"routed_by_match", s->routed_by_match}, {"routed_by_load", s->routed_by_load},
    };
    atr_jw_kv_str(w, "policy", name);
    atr_jw_key(w, "policy_stats");
    atr_jw_object_begin(w);
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        atr_jw_kv_uint(w, kv[i].key, kv[i].v);
    bool any = false;
    for (size_t i = 0; i < 8 && atr_policy_names[i]; i++)
        any |= s->per_delegate[i] != 0;
    if (any) {                      /* the learned policy: its choices */
        atr_jw_key(w, "delegates");
        atr_jw_object_begin(w);
        for (size_t i = 0; i < 8 && atr_policy_names[i]; i++)
            if (s->per_delegate[i])
                atr_jw_kv_uint(w, atr_policy_names[i], s->per_delegate[i]);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
}

void atr_policy_request_init(struct atr_policy_req *r, struct atr_policy_decision *d,
                             const struct atr_workload *w, size_t session, size_t turn,
                             const struct atr_session_history *h, uint64_t id, double now)
{
    const struct atr_turn *u = &w->sessions[session].turns[turn];
    *r = (struct atr_policy_req){
        .id = id, .session = session, .turn = turn, .prompt_tokens = u->prompt_tokens,
        .ids = u->ids, .n_ids = u->n_ids, .block_size = w->block_size, .now = now,
        .think_s = u->think_s, .prev_tool = u->prev_tool,
        .since_last_s = turn ? now - h->last_end : 0, .prev_output_tokens = h->last_output,
        .mean_output_tokens = turn ? h->output_sum / (double)turn : 0,
        .recorded_output_tokens = u->output_tokens,
    };
    *d = (struct atr_policy_decision){
        .prompt_tokens = u->prompt_tokens, .ids = u->ids, .n_ids = u->n_ids, .delegate = -1,
    };
}

void atr_session_history_add(struct atr_session_history *h, double end, uint32_t output)
{
    h->last_end = end;
    h->last_output = output;
    h->output_sum += output;
}
