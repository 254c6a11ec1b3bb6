/* max-tokens.c - placeholder (behaves as prefix-cache) until the policy lands. */
#include "policy/policy-impl.h"

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    (void)r;
    d->replica = atr_policy_round_robin(p);
}

const struct atr_policy_ops atr_policy_max_tokens = {
    .name = "max-tokens", .decide = decide,
};
