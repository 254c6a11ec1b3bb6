/* learned-features.c - metadata features of a request for the learned router (see
 * learned-features.h). Logs use atr_det_log so a model trains to the same bits on
 * every machine. */
#include "policy/learned-features.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/rng.h"

const char *const atr_router_feature_names[ATR_ROUTER_N_FEATURES] = {
    "log_input_tokens", "log_turn", "prefix_reuse", "log_new_tokens",
    "tool_none", "tool_shell", "tool_editor", "tool_other",
    "log_think_s", "log_since_last_s", "log_prev_output_tokens", "log_mean_output_tokens",
};

static double log1p_det(double v)
{
    return atr_det_log(1 + (v > 0 ? v : 0));
}

uint32_t atr_router_shared_blocks(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
    uint32_t lo = 0, hi = na < nb ? na : nb;      /* a[0..lo) == b[0..lo) holds */
    if (!a || !b)
        return 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (a[mid - 1] == b[mid - 1])
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static bool has(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0)
            return true;
    return false;
}

unsigned atr_router_tool_class(const char *tool)
{
    static const char *const shell[] = { "bash", "shell", "terminal", "command", "exec", "run",
                                         NULL };
    static const char *const editor[] = { "edit", "write", "str_replace", "create", "patch",
                                          "read", "view", "file", NULL };
    if (!tool || !*tool)
        return 0;
    for (size_t i = 0; editor[i]; i++)
        if (has(tool, editor[i]))
            return 2;
    for (size_t i = 0; shell[i]; i++)
        if (has(tool, shell[i]))
            return 1;
    return 3;
}

/* The session's slot, grown on first sight of a session index. */
static struct atr_router_fsession *session_of(struct atr_router_fstate *st, size_t s)
{
    if (s >= st->n_ses) {
        size_t n = st->n_ses ? st->n_ses : 16;
        while (n <= s)
            n *= 2;
        struct atr_router_fsession *p = xreallocarray(st->ses, n, sizeof *p);
        memset(p + st->n_ses, 0, (n - st->n_ses) * sizeof *p);
        st->ses = p;
        st->n_ses = n;
    }
    return &st->ses[s];
}

static void remember(struct atr_router_fsession *ss, const uint64_t *ids, uint32_t n)
{
    if (n > ss->cap) {
        uint32_t cap = ss->cap ? ss->cap : 64;
        while (cap < n)
            cap *= 2;
        ss->ids = xreallocarray(ss->ids, cap, sizeof *ss->ids);
        ss->cap = cap;
    }
    if (n)
        memcpy(ss->ids, ids, n * sizeof *ids);
    ss->n = n;
}

void atr_router_features(struct atr_router_fstate *st, const struct atr_policy_req *r, double *x)
{
    struct atr_router_fsession *ss = session_of(st, r->session);
    uint32_t ids = r->ids ? r->n_ids : 0;
    uint32_t shared = r->turn ? atr_router_shared_blocks(r->ids, ids, ss->ids, ss->n) : 0;
    double reused = (double)shared * (r->block_size ? r->block_size : 16);
    if (reused > r->prompt_tokens)
        reused = r->prompt_tokens;
    unsigned tool = atr_router_tool_class(r->prev_tool);
    x[0] = log1p_det(r->prompt_tokens);
    x[1] = log1p_det((double)r->turn);
    x[2] = ids ? (double)shared / ids : 0;
    x[3] = log1p_det(r->prompt_tokens - reused);
    for (unsigned k = 0; k < 4; k++)
        x[4 + k] = tool == k;
    x[8] = log1p_det(r->think_s);
    x[9] = log1p_det(r->since_last_s);
    x[10] = log1p_det(r->prev_output_tokens);
    x[11] = log1p_det(r->mean_output_tokens);
    remember(ss, r->ids, ids);
}

void atr_router_fstate_release(struct atr_router_fstate *st)
{
    for (size_t i = 0; i < st->n_ses; i++)
        free(st->ses[i].ids);
    free(st->ses);
    st->ses = NULL;
    st->n_ses = 0;
}
