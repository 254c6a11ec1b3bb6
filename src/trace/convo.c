/* convo.c - chat conversation -> llm steps with prefix-sharing hash ids. */
#include "trace/convo.h"

#include <string.h>

void atr_convo_init(struct atr_convo *c, struct atr_trace *t, bool keep_content)
{
    memset(c, 0, sizeof *c);
    c->trace = t;
    c->keep_content = keep_content;
    atr_blockhash_init(&c->hash, t->block_size ? t->block_size : ATR_DEFAULT_BLOCK_SIZE);
}

void atr_convo_release(struct atr_convo *c)
{
    atr_blockhash_release(&c->hash);
}

/* Each message is fed as three pieces (header, text, footer) so that its
 * tokens never depend on the message after it: that is what keeps the
 * prompt of call k a token prefix of the prompt of call k+1. */
void atr_convo_add(struct atr_convo *c, const char *role, const char *text, size_t len)
{
    char header[64];
    size_t rlen = strlen(role);
    if (rlen > sizeof header - 8)
        rlen = sizeof header - 8;
    memcpy(header, "<|", 2);
    memcpy(header + 2, role, rlen);
    memcpy(header + 2 + rlen, "|>\n", 3);
    atr_blockhash_feed(&c->hash, header, rlen + 5);
    atr_blockhash_feed(&c->hash, text, len);
    atr_blockhash_feed(&c->hash, "\n", 1);

    if (c->keep_content) {
        struct atr_arena *a = &c->trace->arena;
        if (!c->pending)
            c->pending = atr_json_new(a, ATR_JSON_ARRAY);
        struct atr_json *m = atr_json_new(a, ATR_JSON_OBJECT);
        atr_json_append(a, m, "role", atr_json_new_str(a, role, strlen(role)));
        atr_json_append(a, m, "content", atr_json_new_str(a, text, len));
        atr_json_append(a, c->pending, NULL, m);
    }
}

struct atr_step *atr_convo_llm(struct atr_convo *c, const char *reply, size_t len)
{
    struct atr_trace *t = c->trace;
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    const struct atr_blockhash *h = &c->hash;
    uint64_t partial = atr_blockhash_partial_id(h);
    s->n_hash_ids = (uint32_t)(h->n_ids + (partial ? 1 : 0));
    s->hash_ids = atr_arena_alloc(&t->arena, (s->n_hash_ids ? s->n_hash_ids : 1) * sizeof(uint64_t));
    if (h->n_ids)
        memcpy(s->hash_ids, h->ids, h->n_ids * sizeof(uint64_t));
    if (partial)
        s->hash_ids[h->n_ids] = partial;
    s->input_tokens = (int64_t)h->tokens;
    s->output_tokens = (int64_t)atr_tokens_estimate(reply, len);
    if (c->keep_content) {
        struct atr_arena *a = &t->arena;
        s->messages = c->pending ? c->pending : atr_json_new(a, ATR_JSON_ARRAY);
        s->output = atr_json_new_str(a, reply, len);
        c->pending = NULL;
    }
    return s;
}
