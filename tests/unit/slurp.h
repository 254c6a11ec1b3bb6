/* slurp.h - a whole file read into memory for the unit tests' comparisons. */
#ifndef ATR_TEST_SLURP_H
#define ATR_TEST_SLURP_H

#include <stdio.h>

#include "util/buf.h"

/* The bytes of path, NUL-terminated, their count in *len; NULL when it
 * cannot be opened. The caller frees it. */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct atr_buf b = ATR_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        atr_buf_append(&b, chunk, n);
    fclose(f);
    *len = b.len;
    atr_buf_append(&b, "", 1);
    return b.data;
}

#endif
