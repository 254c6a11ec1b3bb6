/* prompt.c - deterministic prompt text per block id, and request bodies
 * (see prompt.h). */
#include "llm/prompt.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
/* Inlined: a 16-byte key per word, 32 a request; the call into libxxhash
 * cost more than the hash (same library version, the same values). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "json/json.h"
#include "trace/words.h"

/* The vocabulary padded to 8 bytes a word (none is longer) with each
 * length, built once: a word is then one 8-byte copy, not a strlen and an
 * append (a 32-token prompt is 32 words per request). */
enum { WORD_PAD = 8 };
static char padded[ATR_PROMPT_WORDS][WORD_PAD];
static uint8_t word_len[ATR_PROMPT_WORDS];
static pthread_once_t words_once = PTHREAD_ONCE_INIT;

static void pad_words(void)
{
    for (int i = 0; i < ATR_PROMPT_WORDS; i++) {
        const char *w = atr_prompt_word((uint8_t)i);
        size_t n = strlen(w);
        n = n < WORD_PAD ? n : WORD_PAD;
        memcpy(padded[i], w, n);
        word_len[i] = (uint8_t)n;
    }
}

static int put_words(struct atr_buf *b, uint64_t seed, uint64_t from, uint64_t n)
{
    pthread_once(&words_once, pad_words);
    if (n > SIZE_MAX / WORD_PAD || atr_buf_reserve(b, (size_t)n * WORD_PAD) < 0)
        return -1;
    char *out = b->data + b->len;
    for (uint64_t j = from; j < from + n; j++) {
        uint64_t key[2] = { seed, j };
        uint8_t w = (uint8_t)XXH3_64bits(key, sizeof key);
        memcpy(out, padded[w], WORD_PAD);
        out += word_len[w];
    }
    b->len = (size_t)(out - b->data);
    b->data[b->len] = '\0';
    return 0;
}

int atr_prompt_text(struct atr_buf *b, const struct atr_turn *t, uint32_t block_size,
                    uint64_t unique_seed)
{
    uint64_t covered = 0;
    for (uint32_t i = 0; i < t->n_ids && covered + block_size <= t->prompt_tokens; i++) {
        if (put_words(b, t->ids[i], 0, block_size) < 0)
            return -1;
        covered += block_size;
    }
    /* The tail is keyed by a seed no block id can equal (ids are 53-bit). */
    uint64_t seed = unique_seed | (UINT64_C(1) << 63);
    return put_words(b, seed, covered, t->prompt_tokens - covered);
}

int atr_prompt_body(struct atr_buf *b, const struct atr_body_opts *o, const struct atr_turn *t,
                    uint32_t block_size, uint64_t unique_seed)
{
    const char *model = o->model ? o->model : "";
    int rc = atr_buf_puts(b, "{\"model\":");
    rc |= atr_json_write_string(b, model, strlen(model));
    rc |= atr_buf_puts(b, o->api == ATR_LLM_CHAT ? ",\"messages\":[{\"role\":\"user\",\"content\":\""
                                                   : ",\"prompt\":\"");
    if (o->run_salt)     /* plain words and digits: no escaping needed */
        rc |= atr_buf_puts(b, o->run_salt);
    if (o->salt)
        rc |= atr_buf_puts(b, o->salt);
    rc |= atr_prompt_text(b, t, block_size, unique_seed);
    /* A cap below the recorded length truncates the reply there. */
    uint32_t out = o->max_tokens && o->max_tokens < t->output_tokens ? o->max_tokens
                                                                     : t->output_tokens;
    rc |= atr_buf_puts(b, o->api == ATR_LLM_CHAT ? "\"}],\"max_tokens\":" : "\",\"max_tokens\":");
    rc |= atr_buf_put_u64(b, o->max_tokens ? o->max_tokens : t->output_tokens);
    if (o->force_length) {
        rc |= atr_buf_puts(b, ",\"min_tokens\":");
        rc |= atr_buf_put_u64(b, out);
        rc |= atr_buf_puts(b, ",\"ignore_eos\":true");
    }
    rc |= atr_buf_puts(b, ",\"temperature\":0");
    if (o->user) {
        rc |= atr_buf_puts(b, ",\"user\":");
        rc |= atr_json_write_string(b, o->user, strlen(o->user));
    }
    rc |= atr_buf_puts(b, o->stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
                                    : ",\"stream\":false}");
    return rc ? -1 : 0;
}
