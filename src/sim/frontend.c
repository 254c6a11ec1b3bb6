/* frontend.c - the API server's length check and hand-over time (see
 * frontend.h). */
#include "sim/frontend.h"

#include <math.h>
#include <stdio.h>

int atr_context_check(uint64_t max_model_len, uint64_t prompt_tokens, uint64_t output_tokens,
                      char *msg, size_t cap)
{
    uint64_t total = prompt_tokens + output_tokens;
    if (total <= max_model_len)
        return 0;
    if (msg && cap)
        snprintf(msg, cap, "This model's maximum context length is %llu tokens. However, you "
                 "requested %llu tokens (%llu in the messages, %llu in the completion). "
                 "Please reduce the length of the messages or completion.",
                 (unsigned long long)max_model_len, (unsigned long long)total,
                 (unsigned long long)prompt_tokens, (unsigned long long)output_tokens);
    return -1;
}

void atr_frontend_init(struct atr_frontend *f, const struct atr_profile *p)
{
    *f = (struct atr_frontend){ .request_s = p->frontend_s, .token_s = p->frontend_token_s };
}

double atr_frontend_arrival(struct atr_frontend *f, uint64_t prompt_tokens, double now)
{
    double start = fmax(now, f->tokeniser_free);
    f->tokeniser_free = start + (double)prompt_tokens * f->token_s;
    return f->tokeniser_free + f->request_s;
}
