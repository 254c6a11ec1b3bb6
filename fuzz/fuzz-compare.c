/* fuzz-compare.c - libFuzzer target for `atr compare`'s result reader: any
 * bytes as a result file (one JSON object or JSONL), then both tables. */
#include <stdint.h>

#include "report/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    atr_compare_add_json(c, "fuzz.json", (const char *)data, size, &err);
    atr_compare_add_json(c, "naive.jsonl", (const char *)data, size, &err);
    struct atr_buf b = ATR_BUF_INIT;
    atr_compare_write_markdown(&b, c);
    atr_buf_clear(&b);
    atr_compare_write_json(&b, c);
    atr_buf_release(&b);
    atr_compare_free(c);
    return 0;
}
