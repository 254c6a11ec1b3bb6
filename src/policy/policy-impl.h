/* policy-impl.h - what a policy file implements (one per policy), and the
 * shared state every policy has. Not a public header. */
#ifndef ATR_POLICY_IMPL_H
#define ATR_POLICY_IMPL_H

#include "policy/policy.h"

struct atr_policy_ops {
    const char *name;
    /* Option keys this policy accepts (NULL-terminated), for errors. */
    const char *const *option_keys;
    /* Sets p->state; options have been split into keys/values. */
    int (*init)(struct atr_policy *p, const struct atr_policy_cfg *cfg, struct atr_error *err);
    void (*decide)(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d);
    void (*started)(struct atr_policy *p, const struct atr_policy_req *r,
                    const struct atr_policy_decision *d);           /* may be NULL */
    void (*finished)(struct atr_policy *p, const struct atr_policy_req *r,
                     const struct atr_policy_decision *d,
                     const struct atr_policy_outcome *o);           /* may be NULL */
    void (*free_state)(struct atr_policy *p);                       /* may be NULL */
};

#define ATR_POLICY_MAX_OPTIONS 16

struct atr_policy {
    const struct atr_policy_ops *ops;
    struct atr_policy_cfg cfg;
    uint32_t *load;                     /* [n_replicas] in flight */
    uint64_t rr_next;                   /* round-robin cursor */
    struct atr_policy_stats stats;
    void *state;                        /* the policy's own */
    size_t n_options;
    char *option_keys[ATR_POLICY_MAX_OPTIONS], *option_values[ATR_POLICY_MAX_OPTIONS];
};

/* Helpers for policy files. */
/* The option's value as a double, or def when absent; -1 with err set
 * when present but not a number in [lo, hi]. */
int atr_policy_opt_num(const struct atr_policy *p, const char *key, double def, double lo,
                       double hi, double *out, struct atr_error *err);
/* Next replica in round-robin order. */
unsigned atr_policy_round_robin(struct atr_policy *p);
/* The replica with the fewest requests in flight (lowest index on ties). */
unsigned atr_policy_least_loaded(const struct atr_policy *p);

extern const struct atr_policy_ops atr_policy_naive, atr_policy_prefix_cache,
    atr_policy_prefix_route, atr_policy_compaction, atr_policy_max_tokens, atr_policy_learned;

#endif
