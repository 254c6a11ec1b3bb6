/* tokens.c - pseudo-tokenizer (token estimate) and chained block hashing.
 *
 * Tokens are byte spans, found by classes the way BPE pre-tokenisers split:
 *   word:   an optional leading space, then a letter run that breaks at a
 *           lower->upper case change or '_' (camelCase, snake_case); each
 *           piece costs one token per WORD_WIDTH bytes
 *   digits: groups of 3 (as cl100k and Llama-3 do)
 *   spaces: a run of blanks is one token per 16
 *   newlines: one token per 2
 *   punctuation: one token per 2 consecutive symbols
 *   other UTF-8: one token per code point
 * Every byte belongs to exactly one token, so a block boundary (every
 * block_size tokens) is a byte position, and blocks hash real bytes. */
#include "trace/tokens.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { C_OTHER, C_LOWER, C_UPPER, C_DIGIT, C_SPACE, C_NL, C_UTF8 };
enum { WORD_WIDTH = 8, DIGIT_WIDTH = 3, SPACE_WIDTH = 16, NL_WIDTH = 2, PUNCT_WIDTH = 2 };

static unsigned char cls[256];

__attribute__((constructor)) static void cls_init(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = C_OTHER;
        if (c >= 'a' && c <= 'z')
            k = C_LOWER;
        else if (c >= 'A' && c <= 'Z')
            k = C_UPPER;
        else if (c >= '0' && c <= '9')
            k = C_DIGIT;
        else if (c == ' ' || c == '\t')
            k = C_SPACE;
        else if (c == '\n' || c == '\r')
            k = C_NL;
        else if (c >= 0x80)
            k = C_UTF8;
        cls[c] = k;
    }
}

/* Length of a run of class k starting at p (at most max bytes). */
static size_t run(const unsigned char *p, const unsigned char *end, unsigned char k, size_t max)
{
    size_t n = 0;
    while (p + n < end && n < max && cls[p[n]] == k)
        n++;
    return n;
}

/* A word piece: [space]['_' | Upper+] lower*, capped at WORD_WIDTH bytes. */
static size_t word_piece(const unsigned char *p, const unsigned char *end)
{
    const unsigned char *q = p;
    if (*q == ' ' || *q == '_')
        q++;
    size_t up = run(q, end, C_UPPER, WORD_WIDTH);
    q += up;
    /* "HTTPServer": the last capital starts the next piece. */
    if (up > 1 && q < end && cls[*q] == C_LOWER)
        q--;
    else
        q += run(q, end, C_LOWER, WORD_WIDTH);
    size_t n = (size_t)(q - p);
    return n > WORD_WIDTH ? WORD_WIDTH : (n ? n : 1);
}

/* Bytes of the token starting at p (p < end). */
static size_t token_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char k = cls[*p];
    switch (k) {
    case C_LOWER:
    case C_UPPER:
        return word_piece(p, end);
    case C_DIGIT:
        return run(p, end, C_DIGIT, DIGIT_WIDTH);
    case C_SPACE:
        if (*p == ' ' && p + 1 < end &&
            (cls[p[1]] == C_LOWER || cls[p[1]] == C_UPPER || p[1] == '_'))
            return word_piece(p, end);
        {
            size_t n = run(p, end, C_SPACE, SPACE_WIDTH);
            /* Leave the blank before a word to the word (" foo"). */
            if (n > 1 && p + n < end && p[n - 1] == ' ' &&
                (cls[p[n]] == C_LOWER || cls[p[n]] == C_UPPER))
                n--;
            return n;
        }
    case C_NL:
        return run(p, end, C_NL, NL_WIDTH);
    case C_UTF8: {
        size_t n = 1;
        while (p + n < end && (p[n] & 0xC0) == 0x80 && n < 4)
            n++;
        return n;
    }
    default:
        if (*p == '_' && p + 1 < end && (cls[p[1]] == C_LOWER || cls[p[1]] == C_UPPER))
            return word_piece(p, end);
        return run(p, end, C_OTHER, PUNCT_WIDTH);
    }
}

uint64_t atr_tokens_estimate(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    uint64_t n = 0;
    while (p < end) {
        p += token_len(p, end);
        n++;
    }
    return n;
}

void atr_blockhash_init(struct atr_blockhash *h, uint32_t block_size)
{
    memset(h, 0, sizeof *h);
    h->block_size = block_size ? block_size : 16;
}

static void push_id(struct atr_blockhash *h, uint64_t id)
{
    if (h->n_ids == h->cap_ids) {
        size_t cap = h->cap_ids ? h->cap_ids * 2 : 256;
        uint64_t *p = realloc(h->ids, cap * sizeof *p);
        if (!p)
            abort();
        h->ids = p;
        h->cap_ids = cap;
    }
    h->ids[h->n_ids++] = id;
}

/* The open block's hash is chained over its byte segments, starting from the
 * parent block's hash; closing a block makes it the new parent. */
void atr_blockhash_feed(struct atr_blockhash *h, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    const unsigned char *seg = p;
    if (h->in_block == 0)
        h->open_hash = h->chain;
    while (p < end) {
        p += token_len(p, end);
        h->tokens++;
        if (++h->in_block == h->block_size) {
            h->chain = XXH3_64bits_withSeed(seg, (size_t)(p - seg), h->open_hash);
            push_id(h, h->chain & ATR_HASH_ID_MASK);
            h->in_block = 0;
            h->open_hash = h->chain;
            seg = p;
        }
    }
    if (h->in_block && p > seg)
        h->open_hash = XXH3_64bits_withSeed(seg, (size_t)(p - seg), h->open_hash);
}

uint64_t atr_blockhash_partial_id(const struct atr_blockhash *h)
{
    return h->in_block ? h->open_hash & ATR_HASH_ID_MASK : 0;
}

void atr_blockhash_release(struct atr_blockhash *h)
{
    free(h->ids);
    memset(h, 0, sizeof *h);
}
