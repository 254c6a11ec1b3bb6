/* fuzz-json.c - libFuzzer target for the JSON parser and writer.
 * Parses the bytes with and without non-finite numbers; whatever parses
 * must write out as JSON that parses again (non-finite numbers turn into
 * null, so strictly), and writing that again must be a fixed point. With
 * integer arrays packed (under the key "a"), the parse must fail alike or
 * write out the same, also when a value budget cuts it short. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

static struct atr_arena arena = ATR_ARENA_INIT;
static struct atr_buf out1 = ATR_BUF_INIT, out2 = ATR_BUF_INIT, out3 = ATR_BUF_INIT;

static void must(int ok)
{
    if (!ok)
        abort();
}

/* Writes v to b, parses that strictly and writes it to again. */
static struct atr_json *write_and_reparse(const struct atr_json *v, struct atr_buf *b)
{
    struct atr_json *w = NULL;
    struct atr_json_err err;
    atr_buf_clear(b);
    must(atr_json_write_value(b, v) == 0);
    must(atr_json_parse(&arena, b->data, b->len, NULL, &w, &err) == 0);
    return w;
}

static int check(const uint8_t *data, size_t size, bool nonfinite)
{
    struct atr_json_opts opts = {.allow_nonfinite = nonfinite, .max_depth = size & 64 ? 8 : 0};
    struct atr_json *v = NULL;
    struct atr_json_err err;
    if (atr_json_parse(&arena, (const char *)data, size, &opts, &v, &err) < 0) {
        must(v == NULL && err.line >= 1 && err.col >= 1);
        must(memchr(err.msg, '\0', sizeof err.msg) != NULL);
        return -1;
    }
    struct atr_json *w = write_and_reparse(v, &out1);
    struct atr_json *x = write_and_reparse(w, &out2);
    write_and_reparse(x, &out3);
    /* Numbers may change form once (1.0 -> 1); after that output is stable. */
    must(out2.len == out3.len && memcmp(out2.data, out3.data, out2.len) == 0);
    must(atr_json_copy(&arena, v) != NULL);
    return 0;
}

/* Parsing with packed arrays gives the same error or the same output, with
 * or without a value budget. */
static void check_packed(const uint8_t *data, size_t size)
{
    struct atr_json_opts plain = {.max_depth = size & 64 ? 8 : 0,
                                  .max_values = size & 256 ? size / 8 + 1 : 0};
    struct atr_json_opts packed = plain;
    packed.pack_key = "a";
    packed.pack_max = size & 128 ? 1000 : UINT64_MAX;
    struct atr_json *v = NULL, *w = NULL;
    struct atr_json_err e1, e2;
    int rc1 = atr_json_parse(&arena, (const char *)data, size, &plain, &v, &e1);
    int rc2 = atr_json_parse(&arena, (const char *)data, size, &packed, &w, &e2);
    must(rc1 == rc2);
    if (rc1 < 0) {
        must(e1.line == e2.line && e1.col == e2.col && strcmp(e1.msg, e2.msg) == 0);
        return;
    }
    atr_buf_clear(&out1);
    atr_buf_clear(&out2);
    must(atr_json_write_value(&out1, v) == 0 && atr_json_write_value(&out2, w) == 0);
    must(out1.len == out2.len && memcmp(out1.data, out2.data, out1.len) == 0);
    atr_buf_clear(&out2);
    must(atr_json_write_value(&out2, atr_json_copy(&arena, w)) == 0);
    must(out1.len == out2.len && memcmp(out1.data, out2.data, out1.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_packed(data, size);
    atr_arena_clear(&arena);
    int strict = check(data, size, false);
    atr_arena_clear(&arena);
    int loose = check(data, size, true);
    atr_arena_clear(&arena);
    /* Whatever parses strictly parses with non-finite numbers allowed too. */
    must(strict < 0 || loose == 0);
    return 0;
}
