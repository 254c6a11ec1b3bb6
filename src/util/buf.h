/* buf.h - growing byte buffer with a declared maximum size.
 *
 * The buffer owns data (malloc); atr_buf_release frees it, atr_buf_clear
 * empties it for reuse. Every append checks `max` (0 = no limit) and
 * returns -1 without changing the buffer when the limit would be passed:
 * untrusted input can never grow a buffer without bound. data is always
 * NUL-terminated after a successful append. */
#ifndef ATR_UTIL_BUF_H
#define ATR_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>

struct atr_buf {
    char *data;
    size_t len, cap, max;
};

#define ATR_BUF_INIT {NULL, 0, 0, 0}

int atr_buf_reserve(struct atr_buf *b, size_t extra);
int atr_buf_append(struct atr_buf *b, const void *p, size_t n);
int atr_buf_putc(struct atr_buf *b, char c);
int atr_buf_puts(struct atr_buf *b, const char *s);
int atr_buf_printf(struct atr_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int atr_buf_put_i64(struct atr_buf *b, int64_t v);  /* decimal, fast path */
int atr_buf_put_u64(struct atr_buf *b, uint64_t v);
/* v[0..n) in decimal with sep (seplen bytes) between them, the bytes a
 * put_u64 / append loop writes, with one reserve for the list. 0, or -1
 * past max (then as much as fits was written, as by that loop). */
int atr_buf_put_u64_list(struct atr_buf *b, const uint64_t *v, size_t n, const char *sep,
                         size_t seplen);
/* Appends s as one POSIX shell word: as is when made only of
 * [A-Za-z0-9_./:@%+=,-] (and not empty), else single-quoted with each '
 * written as '\'' (close, escaped quote, reopen), so it never splits into
 * words or runs as code. */
int atr_buf_put_shell_word(struct atr_buf *b, const char *s);
void atr_buf_clear(struct atr_buf *b);
void atr_buf_release(struct atr_buf *b);

#endif
