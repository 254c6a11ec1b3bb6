/* naive.c - no reuse: every prompt is made unique (a per-request salt on a
 * real engine, no prefix-cache keys in the simulator), round-robin over
 * replicas. The baseline the other policies are measured against. */
#include "policy/policy-impl.h"

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    (void)r;
    d->replica = atr_policy_round_robin(p);
    d->salt = true;
}

const struct atr_policy_ops atr_policy_naive = {
    .name = "naive", .decide = decide,
};
