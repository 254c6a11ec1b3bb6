/* fuzz-parquet.c - libFuzzer target for the Parquet path: the bytes as a
 * Parquet file, its rows mapped to JSON lines in pieces of a fuzzed size
 * (rows split across reads) and again whole, which must agree, then drained
 * through the sniffed reader. DuckDB needs a path: one file per process.
 * Without DuckDB (not built, or ATR_DUCKDB_LIB unset and no library) every
 * input is an error, which is fine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/reader.h"
#include "trace/writer.h"
#include "util/buf.h"
#include "util/parquet.h"

static char path[64];

/* All of the file's JSON lines, read cap bytes at a time: 0, or -1. */
static int drain(struct atr_buf *out, size_t cap)
{
    struct atr_error err;
    struct atr_parquet *p = atr_parquet_open(path, &err);
    if (!p)
        return -1;
    char *dst = malloc(cap);
    ssize_t n;
    while ((n = atr_parquet_read(p, dst, cap, &err)) > 0)
        atr_buf_append(out, dst, (size_t)n);
    free(dst);
    atr_parquet_close(p);
    return n < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%.40s/fuzz-pq-%d.parquet", tmp ? tmp : "/tmp", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct atr_buf small = ATR_BUF_INIT, whole = ATR_BUF_INIT;
    int a = drain(&small, size ? (size_t)data[size - 1] % 97 + 1 : 1);
    int b = drain(&whole, 1 << 20);
    if (a != b || (a == 0 && (small.len != whole.len ||
                              (small.len && memcmp(small.data, whole.data, small.len)))))
        abort();
    atr_buf_release(&small);
    atr_buf_release(&whole);
    struct atr_read_opts opts = {.max_line = 1 << 20, .keep_content = size & 1};
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(path, NULL, &opts, &err);
    if (r) {
        struct atr_trace t = ATR_TRACE_INIT;
        struct atr_buf out = ATR_BUF_INIT;
        struct atr_write_opts wo = {0};
        for (int n = 0; n < 1000 && atr_reader_next(r, &t, &err) == 1; n++) {
            atr_buf_clear(&out);
            atr_trace_write(&out, &t, &wo);
        }
        atr_buf_release(&out);
        atr_trace_release(&t);
        atr_reader_close(r);
    }
    unlink(path);
    return 0;
}
