/* prefix-cache.c - exact prefix reuse: the prompt keeps its recorded,
 * stable layout (shared leading blocks stay byte-identical) and the
 * engine's prefix cache does the rest; round-robin over replicas. */
#include "policy/policy-impl.h"

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    (void)r;
    d->replica = atr_policy_round_robin(p);
}

const struct atr_policy_ops atr_policy_prefix_cache = {
    .name = "prefix-cache", .decide = decide,
};
