/* prompt.c - deterministic prompt text per block id, and request bodies
 * (see prompt.h). */
#include "llm/prompt.h"

#include <string.h>
#include <xxhash.h>

#include "json/json.h"

/* 256 words, each one token with its leading space in common tokenizers. */
static const char *const words[256] = {
    " the", " of", " and", " to", " in", " is", " for", " on", " that", " with", " as", " it",
    " be", " by", " at", " this", " are", " from", " or", " an", " was", " not", " but",
    " have", " all", " can", " will", " one", " has", " more", " their", " which", " new",
    " also", " were", " about", " other", " time", " they", " out", " some", " its", " only",
    " what", " when", " any", " may", " use", " data", " over", " most", " like", " first",
    " year", " these", " people", " would", " been", " two", " into", " than", " them",
    " there", " high", " then", " such", " well", " back", " way", " make", " many", " just",
    " work", " made", " through", " after", " each", " very", " same", " must", " used",
    " take", " where", " good", " state", " life", " part", " under", " both", " those",
    " still", " while", " since", " great", " last", " world", " long", " system", " should",
    " place", " might", " could", " three", " group", " never", " local", " point", " case",
    " help", " own", " know", " find", " show", " order", " small", " open", " power", " need",
    " home", " large", " set", " end", " line", " every", " found", " public", " right",
    " given", " next", " name", " water", " without", " around", " change", " real", " early",
    " form", " city", " hand", " house", " side", " team", " full", " less", " book", " area",
    " test", " word", " best", " play", " food", " body", " free", " board", " close",
    " clear", " run", " hold", " move", " live", " game", " page", " plan", " room", " sign",
    " view", " step", " level", " past", " keep", " care", " plant", " river", " road",
    " class", " light", " human", " store", " table", " model", " value", " music", " field",
    " note", " paper", " share", " price", " image", " film", " turn", " cost", " type",
    " voice", " sound", " color", " stone", " heart", " north", " south", " west", " east",
    " green", " black", " white", " blue", " red", " gold", " fire", " wind", " rain", " snow",
    " tree", " leaf", " seed", " root", " bird", " fish", " horse", " dog", " cat", " door",
    " wall", " floor", " roof", " bed", " chair", " glass", " cup", " plate", " knife",
    " fork", " milk", " bread", " rice", " salt", " sugar", " tea", " wine", " beer", " egg",
    " meat", " fruit", " apple", " lemon", " grape", " bean", " corn", " wheat", " cloud",
    " star", " moon", " sun", " sky", " sea", " lake", " hill",
};

static int put_words(struct atr_buf *b, uint64_t seed, uint64_t from, uint64_t n)
{
    for (uint64_t j = from; j < from + n; j++) {
        uint64_t key[2] = { seed, j };
        uint64_t h = XXH3_64bits(key, sizeof key);
        if (atr_buf_puts(b, words[h & 255]) < 0)
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
