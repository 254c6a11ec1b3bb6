/* fuzz-gguf.c - libFuzzer target for atr's GGUF reader: any bytes are
 * either a summary whose numbers fit the file or one error naming an offset
 * inside it. Seeded with a tiny generated model (tests/data/gguf). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_gguf_summary s;
    struct atr_error err;
    /* an exact-size copy, so ASan sees any read past the end */
    uint8_t *p = malloc(size ? size : 1);
    memcpy(p, data, size);
    if (atr_gguf_parse(p, size, "f.gguf", &s, &err) == 0) {
        if (s.data_bytes > size || s.file_bytes != size)
            abort();
    } else if (strncmp(err.msg, "f.gguf: ", 8) != 0) {
        abort();
    }
    free(p);
    return 0;
}
