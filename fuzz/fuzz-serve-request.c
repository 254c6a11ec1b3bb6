/* fuzz-serve-request.c - libFuzzer target for atr sim serve's request-body
 * parser: the first byte picks the endpoint (completions or chat), the rest
 * is the body. */
#include <stdint.h>
#include <stdlib.h>

#include "serve/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    enum atr_serve_api api = (data[0] & 1) ? ATR_SERVE_CHAT : ATR_SERVE_COMPLETIONS;
    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_serve_request r;
    struct atr_error err;
    if (atr_serve_parse_request(api, (const char *)data + 1, size - 1, &arena, &r, &err) == 0) {
        if (r.n_hash_ids && !r.hash_ids)
            abort();
        if (r.n_hash_ids > r.prompt_tokens / ATR_SERVE_BLOCK_SIZE + 1)
            abort();
        free(r.hash_ids);
    }
    atr_arena_release(&arena);
    return 0;
}
