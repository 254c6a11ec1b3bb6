/* decide.c - feature vectors from "name=value" text and from a workload's
 * turns, for `atr router decide` and the report's router lab (see
 * decide.h). */
#include "router/decide.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

/* The feature named s[0..n), or -1. */
static int feature_index(const char *s, size_t n)
{
    for (int i = 0; i < ATR_ROUTER_N_FEATURES; i++)
        if (strlen(atr_router_feature_names[i]) == n &&
            memcmp(atr_router_feature_names[i], s, n) == 0)
            return i;
    return -1;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* One "name=value" at *pp, up to ',' or the end; *pp moves past it. */
static int parse_one(const char *spec, const char **pp, const char *where, unsigned long line,
                     double *x, struct atr_error *err)
{
    const char *p = skip_space(*pp), *name = p;
    while (*p && *p != '=' && *p != ',' && *p != ' ' && *p != '\t')
        p++;
    size_t n = (size_t)(p - name);
    unsigned long col = (unsigned long)(name - spec) + 1;
    int k = feature_index(name, n);
    if (n == 0)
        return atr_error_at(err, where, line, col, "expected a feature name");
    if (k < 0)
        return atr_error_at(err, where, line, col, "expected a feature name (log_input_tokens, "
                            "log_turn, prefix_reuse, ...), not '%.*s'", (int)n, name);
    p = skip_space(p);
    if (*p != '=')
        return atr_error_at(err, where, line, (unsigned long)(p - spec) + 1,
                            "expected '=' and a value after %s", atr_router_feature_names[k]);
    p = skip_space(p + 1);
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    const char *after = skip_space(end);
    if (end == p || (*after && *after != ',') || !isfinite(v) || errno == ERANGE)
        return atr_error_at(err, where, line, (unsigned long)(p - spec) + 1,
                            "expected a finite number for %s", atr_router_feature_names[k]);
    x[k] = v;
    *pp = after;
    return 0;
}

int atr_router_parse_features(const char *spec, const char *where, unsigned long line,
                              double *x, struct atr_error *err)
{
    for (int i = 0; i < ATR_ROUTER_N_FEATURES; i++)
        x[i] = 0;
    const char *p = spec;
    for (;;) {
        if (parse_one(spec, &p, where, line, x, err) < 0)
            return -1;
        if (!*p)
            return 0;
        p++;                                     /* the ',' */
    }
}

/* Turn t of session s as the driver fills it: sent on time (since the
 * last call: the think time) with every earlier output as recorded. */
static struct atr_policy_req request_of(const struct atr_workload *w, size_t s, size_t t)
{
    const struct atr_session *ses = &w->sessions[s];
    const struct atr_turn *u = &ses->turns[t];
    double out_sum = 0;
    for (size_t k = 0; k < t; k++)
        out_sum += ses->turns[k].output_tokens;
    return (struct atr_policy_req){
        .id = t, .session = 0, .turn = t, .prompt_tokens = u->prompt_tokens,
        .ids = u->ids, .n_ids = u->n_ids, .block_size = w->block_size,
        .think_s = u->think_s, .prev_tool = u->prev_tool,
        .since_last_s = t ? u->think_s : 0,
        .prev_output_tokens = t ? ses->turns[t - 1].output_tokens : 0,
        .mean_output_tokens = t ? out_sum / (double)t : 0,
        .recorded_output_tokens = u->output_tokens,
    };
}

void atr_router_turn_of(const struct atr_workload *w, size_t s, size_t t,
                        struct atr_router_turn *out, double *x)
{
    struct atr_router_fstate st = ATR_ROUTER_FSTATE_INIT;
    struct atr_policy_req r = request_of(w, s, t);
    double ignored[ATR_ROUTER_N_FEATURES];
    if (t) {                     /* the previous turn's ids, remembered as the policy does */
        struct atr_policy_req prev = request_of(w, s, t - 1);
        atr_router_features(&st, &prev, ignored);
    }
    atr_router_features(&st, &r, x);
    atr_router_fstate_release(&st);
    const struct atr_turn *p = t ? &w->sessions[s].turns[t - 1] : NULL;
    uint32_t ids = r.ids ? r.n_ids : 0;
    *out = (struct atr_router_turn){
        .prompt_tokens = r.prompt_tokens, .n_ids = ids,
        .shared = p ? atr_router_shared_blocks(r.ids, ids, p->ids, p->ids ? p->n_ids : 0) : 0,
        .tool = atr_router_tool_class(r.prev_tool), .think_s = r.think_s,
        .since_last_s = r.since_last_s, .prev_output_tokens = r.prev_output_tokens,
        .mean_output_tokens = r.mean_output_tokens,
    };
}
