/* buf.c - growing byte buffer with a cap. */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int atr_buf_reserve(struct atr_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return -1;
    size_t need = b->len + extra + 1;
    if (b->max && need > b->max + 1)
        return -1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        abort();
    b->data = p;
    b->cap = cap;
    return 0;
}

int atr_buf_append(struct atr_buf *b, const void *p, size_t n)
{
    if (atr_buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int atr_buf_putc(struct atr_buf *b, char c)
{
    if (b->len + 1 >= b->cap && atr_buf_reserve(b, 1) < 0)
        return -1;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return 0;
}

int atr_buf_puts(struct atr_buf *b, const char *s)
{
    return atr_buf_append(b, s, strlen(s));
}

int atr_buf_printf(struct atr_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || atr_buf_reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int atr_buf_put_u64(struct atr_buf *b, uint64_t v)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return atr_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

int atr_buf_put_i64(struct atr_buf *b, int64_t v)
{
    if (v >= 0)
        return atr_buf_put_u64(b, (uint64_t)v);
    if (atr_buf_putc(b, '-') < 0)
        return -1;
    return atr_buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
}

void atr_buf_clear(struct atr_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void atr_buf_release(struct atr_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
