/* prompt.c - deterministic prompt text per block id, and request bodies
 * (see prompt.h). */
#include "llm/prompt.h"

#include <string.h>
#include <xxhash.h>

#include "json/json.h"
#include "trace/words.h"

static int put_words(struct atr_buf *b, uint64_t seed, uint64_t from, uint64_t n)
{
    for (uint64_t j = from; j < from + n; j++) {
        uint64_t key[2] = { seed, j };
        uint64_t h = XXH3_64bits(key, sizeof key);
        if (atr_buf_puts(b, atr_prompt_word((uint8_t)h)) < 0)
            return -1;
    }
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
    rc |= atr_buf_puts(b, o->stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
                                    : ",\"stream\":false}");
    return rc ? -1 : 0;
}
