/* input.c - buffered, transparently decompressing byte source with line and
 * JSON-array splitting. */
#include "util/input.h"
#include "util/alloc.h"
#include "util/parquet.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

enum { RAW_CHUNK = 1 << 20, PEEK_MAX = 64 * 1024 };
enum codec { CODEC_NONE, CODEC_GZIP, CODEC_ZSTD, CODEC_PARQUET };

struct atr_input {
    char *name;
    int fd;                      /* -1 for memory inputs */
    const unsigned char *mem;    /* memory input: the whole raw data */
    size_t mem_len, mem_off;
    enum codec codec;
    bool sniffed, raw_eof, eof;
    /* raw (compressed) bytes */
    unsigned char *raw;
    size_t raw_len, raw_off;
    z_stream gz;
    ZSTD_DCtx *zstd;
    struct atr_parquet *pq;      /* Parquet: rows as JSON lines (parquet.h) */
    bool in_frame;               /* a gzip member or zstd frame begun and not ended */
    /* decompressed bytes: data[off..len) not yet consumed */
    char *data;
    size_t off, len, cap;
    unsigned long lineno;        /* lines returned so far */
    bool unterminated;           /* the last line returned ended the input, no newline */
    /* Array splitting tracks the position of data[off]: its line, and the
     * offset where that line starts. col_base may have wrapped below zero
     * after compaction; off - col_base is still the right column (mod 2^64). */
    unsigned long col_line;
    size_t col_base;
    bool array_first;
    size_t chunk;                /* decompressed read size: smaller for small memory inputs */
    unsigned long long raw_read, size;   /* progress: bytes read from the source, its size */
};

static void input_free(struct atr_input *in)
{
    if (in->codec == CODEC_GZIP)
        inflateEnd(&in->gz);
    ZSTD_freeDCtx(in->zstd);
    atr_parquet_close(in->pq);
    if (in->fd > 0)
        close(in->fd);
    if (!in->mem)
        free(in->raw);   /* memory inputs point raw into the caller's data */
    free(in->data);
    free(in->name);
    free(in);
}

static struct atr_input *input_new(const char *name)
{
    struct atr_input *in = xcalloc(1, sizeof *in);
    in->name = xstrdup(name);
    in->fd = -1;
    in->col_line = 1;
    in->chunk = RAW_CHUNK;
    return in;
}

struct atr_input *atr_input_open(const char *path, struct atr_error *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    struct atr_input *in = input_new(is_stdin ? "<stdin>" : path);
    if (atr_parquet_wanted(path)) {
        /* A Parquet file, glob or dataset folder reads as its rows' JSON lines. */
        if (!(in->pq = atr_parquet_open(path, err))) {
            input_free(in);
            return NULL;
        }
        in->codec = CODEC_PARQUET;
        in->sniffed = true;
        return in;
    }
    in->fd = is_stdin ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0) {
        atr_error_set(err, "%s: %s", in->name, strerror(errno));
        in->fd = -1;
        input_free(in);
        return NULL;
    }
    in->raw = xmalloc(RAW_CHUNK);
    struct stat st;
    if (fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode))
        in->size = (unsigned long long)st.st_size;
    return in;
}

struct atr_input *atr_input_open_mem(const void *data, size_t len, const char *name)
{
    struct atr_input *in = input_new(name);
    in->mem = data;
    in->mem_len = len;
    in->size = len;
    /* Fuzzers open thousands of small inputs a second: size buffers to fit. */
    while (in->chunk > 4096 && in->chunk / 8 > len)
        in->chunk /= 2;
    return in;
}

void atr_input_close(struct atr_input *in)
{
    if (in)
        input_free(in);
}

const char *atr_input_name(const struct atr_input *in) { return in->name; }

const char *atr_input_locate(const struct atr_input *in, unsigned long *line)
{
    return in->pq && *line ? atr_parquet_locate(in->pq, line) : in->name;
}

int atr_input_sample(struct atr_input *in, unsigned long long n, uint64_t seed,
                     struct atr_error *err)
{
    if (!in->pq)
        return atr_error_set(err, "%s: --sample needs Parquet input, whose footers count its "
                             "rows (for other inputs: atr sample)", in->name);
    return atr_parquet_sample(in->pq, n, seed, err);
}

void atr_input_progress(const struct atr_input *in, unsigned long long *done,
                        unsigned long long *total)
{
    *done = in->raw_read;
    *total = in->size;
    if (in->pq)
        atr_parquet_progress(in->pq, done, total);
}

const char *atr_input_compression(const struct atr_input *in)
{
    static const char *const names[] = {"none", "gzip", "zstd", "parquet"};
    return names[in->codec];
}

/* Makes raw[raw_off..raw_len) non-empty unless the source is exhausted. */
static int raw_fill(struct atr_input *in, struct atr_error *err)
{
    if (in->raw_off < in->raw_len || in->raw_eof)
        return 0;
    if (in->mem) {
        /* Memory inputs are consumed in place, in chunks like a file. */
        size_t n = in->mem_len - in->mem_off;
        if (n > RAW_CHUNK)
            n = RAW_CHUNK;
        in->raw = (unsigned char *)in->mem + in->mem_off;
        in->mem_off += n;
        in->raw_off = 0;
        in->raw_len = n;
        in->raw_eof = n == 0;
        in->raw_read += n;
        return 0;
    }
    ssize_t n;
    do
        n = read(in->fd, in->raw, RAW_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return atr_error_set(err, "%s: %s", in->name, strerror(errno));
    in->raw_off = 0;
    in->raw_len = (size_t)n;
    in->raw_eof = n == 0;
    in->raw_read += (unsigned long long)n;
    return 0;
}

static int detect_codec(struct atr_input *in, struct atr_error *err)
{
    in->sniffed = true;
    if (raw_fill(in, err) < 0)
        return -1;
    const unsigned char *p = in->raw + in->raw_off;
    size_t n = in->raw_len - in->raw_off;
    if (n >= 4 && memcmp(p, "PAR1", 4) == 0)
        return atr_error_set(err, "%s: Parquet needs a file, glob or folder to read "
                             "(DuckDB seeks in it), not a stream", in->name);
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
        in->codec = CODEC_GZIP;
        if (inflateInit2(&in->gz, 15 + 32) != Z_OK)
            return atr_error_set(err, "%s: cannot start gzip decoder", in->name);
    } else if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) {
        in->codec = CODEC_ZSTD;
        in->zstd = ZSTD_createDCtx();
        if (!in->zstd)
            abort();
    }
    return 0;
}

static size_t decode_gzip(struct atr_input *in, char *dst, size_t cap, struct atr_error *err)
{
    in->gz.next_in = in->raw + in->raw_off;
    in->gz.avail_in = (uInt)(in->raw_len - in->raw_off);
    in->gz.next_out = (Bytef *)dst;
    in->gz.avail_out = (uInt)cap;
    int rc = inflate(&in->gz, Z_NO_FLUSH);
    in->raw_off = in->raw_len - in->gz.avail_in;
    size_t got = cap - in->gz.avail_out;
    in->in_frame = rc != Z_STREAM_END;
    if (rc == Z_STREAM_END) {
        /* Concatenated members (pigz, appended logs) continue the stream. */
        inflateReset(&in->gz);
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        atr_error_set(err, "%s: corrupt gzip data (%s)", in->name,
                      in->gz.msg ? in->gz.msg : "inflate failed");
        return (size_t)-1;
    }
    return got;
}

static size_t decode_zstd(struct atr_input *in, char *dst, size_t cap, struct atr_error *err)
{
    ZSTD_inBuffer ib = {in->raw + in->raw_off, in->raw_len - in->raw_off, 0};
    ZSTD_outBuffer ob = {dst, cap, 0};
    size_t rc = ZSTD_decompressStream(in->zstd, &ob, &ib);
    in->raw_off += ib.pos;
    if (ZSTD_isError(rc)) {
        atr_error_set(err, "%s: corrupt zstd data (%s)", in->name, ZSTD_getErrorName(rc));
        return (size_t)-1;
    }
    in->in_frame = rc != 0;     /* 0: a frame ended */
    return ob.pos;
}

/* Produces up to cap decompressed bytes into dst: count, 0 at end, -1 error. */
static ssize_t produce(struct atr_input *in, char *dst, size_t cap, struct atr_error *err)
{
    if (!in->sniffed && detect_codec(in, err) < 0)
        return -1;
    if (in->pq)
        return atr_parquet_read(in->pq, dst, cap, err);
    if (in->codec == CODEC_NONE && !in->mem && in->raw_off == in->raw_len && !in->raw_eof) {
        /* Plain files: read straight into the caller's buffer, no copy. */
        ssize_t n;
        do
            n = read(in->fd, dst, cap);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return atr_error_set(err, "%s: %s", in->name, strerror(errno));
        in->raw_eof = n == 0;
        in->raw_read += (unsigned long long)n;
        return n;
    }
    for (;;) {
        if (raw_fill(in, err) < 0)
            return -1;
        if (in->raw_off == in->raw_len && in->in_frame)
            return atr_error_set(err, "%s: truncated %s data (the input ends inside a "
                                 "compressed stream)", in->name, atr_input_compression(in));
        if (in->raw_off == in->raw_len)
            return 0;
        size_t got;
        if (in->codec == CODEC_NONE) {
            got = in->raw_len - in->raw_off;
            if (got > cap)
                got = cap;
            memcpy(dst, in->raw + in->raw_off, got);
            in->raw_off += got;
        } else {
            got = in->codec == CODEC_GZIP ? decode_gzip(in, dst, cap, err)
                                          : decode_zstd(in, dst, cap, err);
            if (got == (size_t)-1)
                return -1;
        }
        if (got)
            return (ssize_t)got;
    }
}

/* Ensures at least `want` unconsumed bytes are buffered, unless the input
 * ends first. Compacts consumed bytes away. */
static int fill(struct atr_input *in, size_t want, struct atr_error *err)
{
    while (!in->eof && in->len - in->off < want) {
        if (in->off) {
            memmove(in->data, in->data + in->off, in->len - in->off);
            in->len -= in->off;
            in->col_base -= in->off;
            in->off = 0;
        }
        if (in->cap - in->len < in->chunk / 4) {
            size_t cap = in->cap ? in->cap * 2 : in->chunk;
            while (cap - in->len < in->chunk / 4)
                cap *= 2;
            in->data = xrealloc(in->data, cap);
            in->cap = cap;
        }
        ssize_t n = produce(in, in->data + in->len, in->cap - in->len - 1, err);
        if (n < 0)
            return -1;
        if (n == 0)
            in->eof = true;
        in->len += (size_t)n;
    }
    return 0;
}

ssize_t atr_input_peek(struct atr_input *in, const char **p, size_t n, struct atr_error *err)
{
    if (n > PEEK_MAX)
        n = PEEK_MAX;
    if (fill(in, n, err) < 0)
        return -1;
    *p = in->data ? in->data + in->off : "";
    size_t have = in->len - in->off;
    return (ssize_t)(have < n ? have : n);
}

int atr_input_getline(struct atr_input *in, const char **line, size_t *len, size_t max,
                      struct atr_error *err)
{
    size_t scanned = 0;
    for (;;) {
        char *start = in->data ? in->data + in->off : NULL;
        size_t have = in->len - in->off;
        char *nl = have > scanned ? memchr(start + scanned, '\n', have - scanned) : NULL;
        if (nl || (in->eof && have)) {
            size_t n = nl ? (size_t)(nl - start) : have;
            in->off += nl ? n + 1 : n;
            in->lineno++;
            in->unterminated = !nl;
            if (n > max)
                return atr_error_at(err, in->name, in->lineno, 0,
                                    "%s longer than %zu bytes", in->pq ? "row (as JSON)" : "line", max);
            if (n && start[n - 1] == '\r')
                n--;
            start[n] = '\0';    /* safe: the '\n' or the spare byte after len */
            *line = start;
            *len = n;
            return 1;
        }
        if (in->eof)
            return 0;
        if (have > max && have - max > 1)     /* not max + 1: max may be SIZE_MAX */
            return atr_error_at(err, in->name, in->lineno + 1, 0,
                                "%s longer than %zu bytes", in->pq ? "row (as JSON)" : "line", max);
        scanned = have;
        if (fill(in, have + in->chunk / 4, err) < 0)
            return -1;
    }
}

unsigned long atr_input_lineno(const struct atr_input *in) { return in->lineno; }

bool atr_input_unterminated(const struct atr_input *in) { return in->unterminated; }

ssize_t atr_input_read(struct atr_input *in, void *p, size_t n, struct atr_error *err)
{
    if (in->off < in->len) {
        size_t have = in->len - in->off;
        if (have > n)
            have = n;
        memcpy(p, in->data + in->off, have);
        in->off += have;
        return (ssize_t)have;
    }
    if (in->eof)
        return 0;
    ssize_t got = produce(in, p, n, err);
    if (got == 0)
        in->eof = true;
    return got;
}

int atr_input_read_all(struct atr_input *in, struct atr_buf *out, size_t max,
                       struct atr_error *err)
{
    char tmp[64 * 1024];
    size_t total = 0;
    for (;;) {
        ssize_t n = atr_input_read(in, tmp, sizeof tmp, err);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        total += (size_t)n;
        if (total > max)
            return atr_error_set(err, "%s: input larger than %zu bytes", in->name, max);
        atr_buf_append(out, tmp, (size_t)n);
    }
}

/* ---- top-level JSON array splitting ---- */

/* Consumes whitespace, keeping line and column; returns the next byte or -1
 * at end of input, -2 on error. */
static int skip_ws(struct atr_input *in, struct atr_error *err)
{
    for (;;) {
        if (in->off == in->len) {
            if (fill(in, 1, err) < 0)
                return -2;
            if (in->off == in->len)
                return -1;
        }
        char c = in->data[in->off];
        if (c == '\n') {
            in->col_line++;
            in->col_base = in->off + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return (unsigned char)c;
        }
        in->off++;
    }
}

static unsigned long cur_col(const struct atr_input *in)
{
    return (unsigned long)(in->off - in->col_base) + 1;
}

int atr_input_array_begin(struct atr_input *in, struct atr_error *err)
{
    int c = skip_ws(in, err);
    if (c == -2)
        return -1;
    if (c != '[')
        return atr_error_at(err, in->name, in->col_line, c < 0 ? 0 : cur_col(in),
                            c < 0 ? "expected a JSON array, found end of input"
                                  : "expected '[' starting a JSON array");
    in->off++;
    in->array_first = true;
    return 0;
}

/* Scans one JSON value starting at data[off], tracking strings and depth,
 * refilling as needed. Returns its length, or -1. */
static ssize_t scan_value(struct atr_input *in, size_t max, struct atr_error *err)
{
    size_t i = 0;
    int depth = 0;
    bool in_str = false, esc = false;
    unsigned long line = in->col_line;
    for (;;) {
        if (in->off + i == in->len) {
            if (fill(in, i + in->chunk / 4, err) < 0)
                return -1;
            if (in->off + i == in->len)
                return atr_error_at(err, in->name, line, 0,
                                    "unterminated array element at end of input");
        }
        if (i > max)
            return atr_error_at(err, in->name, line, 0, "array element longer than %zu bytes",
                                max);
        char c = in->data[in->off + i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return (ssize_t)i;   /* the enclosing array's ']' */
            depth--;
        } else if (c == ',' && depth == 0) {
            return (ssize_t)i;
        }
        i++;
    }
}

int atr_input_array_next(struct atr_input *in, const char **elem, size_t *len,
                         unsigned long *line, unsigned long *col, size_t max,
                         struct atr_error *err)
{
    bool first = in->array_first;
    int c = skip_ws(in, err);
    if (c == -2)
        return -1;
    if (c == -1)
        return atr_error_at(err, in->name, in->col_line, 0,
                            "expected ']' closing the top-level array, found end of input");
    if (c == ']' ) {
        in->off++;
        int after = skip_ws(in, err);
        if (after == -2)
            return -1;
        if (after != -1)
            return atr_error_at(err, in->name, in->col_line, cur_col(in),
                                "unexpected data after the top-level array");
        return 0;
    }
    if (!first) {
        if (c != ',')
            return atr_error_at(err, in->name, in->col_line, cur_col(in),
                                "expected ',' or ']' after array element");
        in->off++;
        c = skip_ws(in, err);
        if (c < 0)
            return c == -2 ? -1
                           : atr_error_at(err, in->name, in->col_line, 0,
                                          "expected array element, found end of input");
    }
    in->array_first = false;
    *line = in->col_line;
    *col = cur_col(in);
    ssize_t n = scan_value(in, max, err);
    if (n < 0)
        return -1;
    if (n == 0)
        return atr_error_at(err, in->name, *line, *col, "expected array element");
    char *start = in->data + in->off;
    /* Count the newlines inside (only in whitespace between tokens). */
    for (ssize_t k = 0; k < n; k++)
        if (start[k] == '\n') {
            in->col_line++;
            in->col_base = in->off + (size_t)k + 1;
        }
    in->off += (size_t)n;
    *elem = start;
    *len = (size_t)n;
    return 1;
}
