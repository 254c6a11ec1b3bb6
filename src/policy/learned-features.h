/* learned-features.h - the learned router's input: a fixed-length feature vector
 * computed from a request's metadata only (struct atr_policy_req), the
 * same way at training time and at decision time.
 *
 * The prefix-reuse feature compares the request's block ids with its
 * session's previous turn, so the computation keeps, per session, a copy
 * of the last turn's ids (atr_router_fstate). Block ids are chained hashes:
 * two prompts share their first k blocks iff their k-th ids are equal,
 * which makes the shared length a binary search.
 *
 * Memory: the state owns its copies (malloc); they grow to the longest
 * prompt of each session and are reused, so a steady stream of requests
 * allocates nothing. atr_router_fstate_release frees them. */
#ifndef ATR_POLICY_LEARNED_FEATURES_H
#define ATR_POLICY_LEARNED_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define ATR_ROUTER_N_FEATURES 12

/* In vector order (the model file's "features"). */
extern const char *const atr_router_feature_names[ATR_ROUTER_N_FEATURES];

struct atr_router_fsession {
    uint64_t *ids;                /* the previous turn's ids */
    uint32_t n, cap;
};

struct atr_router_fstate {
    struct atr_router_fsession *ses;   /* indexed by atr_policy_req.session */
    size_t n_ses;
};

#define ATR_ROUTER_FSTATE_INIT { NULL, 0 }

/* Writes x[ATR_ROUTER_N_FEATURES] for r, then remembers r's ids as its
 * session's previous turn. */
void atr_router_features(struct atr_router_fstate *st, const struct atr_policy_req *r, double *x);
void atr_router_fstate_release(struct atr_router_fstate *st);

/* Blocks shared by two chained-id prompts (the length of their common
 * prefix of ids). */
uint32_t atr_router_shared_blocks(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb);

/* The previous tool's class: 0 none, 1 shell (bash, shell, terminal,
 * execute/run command), 2 file editor (edit, write, str_replace, create,
 * patch, read, view), 3 any other tool. */
unsigned atr_router_tool_class(const char *tool);

#endif
