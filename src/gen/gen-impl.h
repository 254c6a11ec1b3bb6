/* gen-impl.h - what the generator's kinds (gen.c, gen-swe.c) share; not
 * part of the public API. */
#ifndef ATR_GEN_GEN_IMPL_H
#define ATR_GEN_GEN_IMPL_H

#include "gen/gen.h"
#include "util/rng.h"
#include "trace/convo.h"
#include "util/buf.h"

#define GEN_CHAT_SYSTEMS 4

struct atr_gen {
    struct atr_gen_opts o;
    uint64_t next;                  /* index of the next trace */
    struct atr_rng arrivals;        /* its own stream: content never depends on --rate */
    double clock_ms;                /* arrival time of the next trace */
    struct atr_buf swe_system;      /* the one system prompt every swe trace shares */
    struct atr_buf chat_system[GEN_CHAT_SYSTEMS];
    struct atr_buf shared;          /* requests: the --shared-prefix words */
    uint64_t user_frame, user_head; /* tokens convo adds around / before a message */
    uint64_t fixed_tokens;          /* requests: framing and shared prefix */
    struct atr_buf text, reply, cmd;    /* scratch, reused per message */
};

/* Random streams that do not depend on --seed (shared prompts are the same
 * for every seed, like a real agent scaffold's) use this as their seed. */
#define GEN_FIXED_SEED UINT64_C(0x61747267656e)   /* "atrgen" */

/* Appends n words of the fixed vocabulary, each exactly one estimated token
 * (a leading blank except at a line start); line_words > 0 ends a line every
 * line_words words (the newline is one token more). */
void gen_words(struct atr_buf *b, struct atr_rng *r, uint64_t n, unsigned line_words);
/* One vocabulary word (no blank). */
const char *gen_word(struct atr_rng *r);
/* The documented llm latency model: 0.015 ms per input token (0.3 ms per 20)
 * + 25 ms per output token. */
int64_t gen_llm_ms(int64_t input_tokens, int64_t output_tokens);
/* Adds a message of text b to the convo. */
void gen_add(struct atr_convo *c, const char *role, const struct atr_buf *b);

void gen_swe_trace(struct atr_gen *g, struct atr_trace *t, struct atr_rng *r);

#endif
