/* fuzz-tokens.c - libFuzzer target for the token estimator and block hasher
 * (trace/tokens.c, included for its static helpers): the bitmap path must
 * never read outside the text (libFuzzer's buffer is exactly the input's
 * size, so ASan sees any such read) and must give the serial automaton's
 * counts, ids and hashes. The first byte picks the block size and how much
 * of the text goes first as a short piece. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace/tokens.c"

static void must(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    uint32_t bs = 1u + (data[0] & 31u);
    size_t pre = data[0] >> 5;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (pre > len)
        pre = len;
    must(estimate_short(text, len) == atr_tokens_estimate(text, len));
    struct atr_blockhash a, b;
    atr_blockhash_init(&a, bs);
    atr_blockhash_init(&b, bs);
    feed_short(&a, text, pre);
    feed_short(&b, text, pre);
    feed_short(&a, text + pre, len - pre);
    atr_blockhash_feed(&b, text + pre, len - pre);
    must(a.tokens == b.tokens && a.in_block == b.in_block && a.n_ids == b.n_ids &&
         a.chain == b.chain && a.open_hash == b.open_hash);
    must(!a.n_ids || memcmp(a.ids, b.ids, a.n_ids * sizeof *a.ids) == 0);
    atr_blockhash_release(&a);
    atr_blockhash_release(&b);
    return 0;
}
