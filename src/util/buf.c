/* buf.c - growing byte buffer with a cap. */
#include "util/buf.h"
#include "util/alloc.h"

#include <stdarg.h>
#include <stdbool.h>
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
    b->data = xrealloc(b->data, cap);
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
    /* The cap is checked on every call, not only when growing: a buffer
     * that already has room must still never pass max. */
    if ((b->max && b->len >= b->max) || (b->len + 1 >= b->cap && atr_buf_reserve(b, 1) < 0))
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

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324"
                                  "25262728293031323334353637383940414243444546474849"
                                  "50515253545556575859606162636465666768697071727374"
                                  "75767778798081828384858687888990919293949596979899";

/* Writes exactly 8 digits of v < 10^8 ending just before p. */
static void put_8_digits(char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        unsigned d = (v % 100) * 2;
        v /= 100;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    }
}

/* Writes v < 10^8 without leading zeros ending just before p; returns its start. */
static char *put_short(char *p, uint32_t v)
{
    while (v >= 100) {
        unsigned d = (v % 100) * 2;
        v /= 100;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    }
    if (v >= 10) {
        *--p = digit_pairs[v * 2 + 1];
        *--p = digit_pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

static unsigned decimal_digits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
        1000000000u, UINT64_C(10000000000), UINT64_C(100000000000),
        UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
        UINT64_C(1000000000000000), UINT64_C(10000000000000000),
        UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000),
    };
    if (v == 0)
        return 1;
    unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12;   /* ~log10 */
    return t - (v < pow10[t]) + 1;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The 8 ASCII digits of v < 10^8 (leading zeros kept) as one 64-bit word,
 * first digit in the lowest byte: no loop and no table. Halves of 4 digits
 * sit in 32-bit lanes, pairs in 16-bit lanes, digits in bytes; each split
 * divides every lane at once by a multiply-shift that is exact for the
 * lane's range (x/100 = x*10486>>20 for x < 10^4, x/10 = x*103>>10 for
 * x < 100) and whose spill into the next lane the mask removes. */
static inline __attribute__((always_inline)) uint64_t digits8_word(uint32_t v)
{
    uint64_t halves = (uint64_t)(v / 10000u) | ((uint64_t)(v % 10000u) << 32);
    uint64_t hi2 = ((halves * 10486u) >> 20) & UINT64_C(0x0000007F0000007F);
    uint64_t pairs = hi2 | ((halves - 100u * hi2) << 16);
    uint64_t tens = ((pairs * 103u) >> 10) & UINT64_C(0x000F000F000F000F);
    uint64_t digits = tens | ((pairs - 10u * tens) << 8);
    return digits + UINT64_C(0x3030303030303030);
}

/* 9-16 digit values (all but ~1 % of 53-bit hash ids): two words, the
 * first shifted past its leading zeros, stored whole; needs 16 bytes of
 * room past the end, which the caller checked. Returns the digit count. */
static unsigned put_16_fast(char *p, uint64_t v)
{
    uint64_t hi = digits8_word((uint32_t)(v / 100000000u));
    uint64_t lo = digits8_word((uint32_t)(v % 100000000u));
    /* hi > 0, so some byte of hi is not '0': its lowest one is the first digit */
    unsigned zeros = (unsigned)__builtin_ctzll(hi - UINT64_C(0x3030303030303030)) / 8;
    hi >>= 8 * zeros;
    memcpy(p, &hi, 8);
    memcpy(p + 8 - zeros, &lo, 8);
    return 16 - zeros;
}
#define ATR_HAVE_PUT_16_FAST 1
#endif

static void put_digits(char *end, uint64_t v);

int atr_buf_put_u64(struct atr_buf *b, uint64_t v)
{
    /* Hash ids are 16-digit numbers and the writer prints millions of them:
     * digits go straight into the buffer. */
#ifdef ATR_HAVE_PUT_16_FAST
    /* Room for 16 bytes and the NUL, and under max for up to 16 digits:
     * then the digit count is not needed up front. */
    if (v >= 100000000u && v < UINT64_C(10000000000000000) && b->cap - b->len >= 17 &&
        (!b->max || b->len + 16 <= b->max)) {
        unsigned n = put_16_fast(b->data + b->len, v);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
    }
#endif
    unsigned n = decimal_digits(v);
    if (atr_buf_reserve(b, n) < 0)
        return -1;
    char *end = b->data + b->len + n;
    *end = '\0';
    b->len += n;
    put_digits(end, v);
    return 0;
}

/* The longest decimal of a uint64_t. */
enum { U64_DIGITS_MAX = 20 };

/* One value of a list into p, which has room for U64_DIGITS_MAX bytes;
 * returns the digit count. */
static inline unsigned put_list_item(char *p, uint64_t v)
{
#ifdef ATR_HAVE_PUT_16_FAST
    if (v >= 100000000u && v < UINT64_C(10000000000000000))
        return put_16_fast(p, v);
#endif
    unsigned n = decimal_digits(v);
    put_digits(p + n, v);
    return n;
}

int atr_buf_put_u64_list(struct atr_buf *b, const uint64_t *v, size_t n, const char *sep,
                         size_t seplen)
{
    size_t item = U64_DIGITS_MAX + seplen;
    if (n > (SIZE_MAX - b->len - 1) / item || atr_buf_reserve(b, n * item) < 0) {
        /* Too close to max for the worst case: value by value, which
         * writes what fits (as callers that check rc at the end expect). */
        int rc = 0;
        for (size_t i = 0; i < n; i++)
            rc |= (i ? atr_buf_append(b, sep, seplen) : 0) | atr_buf_put_u64(b, v[i]);
        return rc;
    }
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (i && seplen == 1) {   /* the usual ",": a store, not a memcpy call */
            *o++ = *sep;
        } else if (i) {
            memcpy(o, sep, seplen);
            o += seplen;
        }
        o += put_list_item(o, v[i]);
    }
    b->len = (size_t)(o - b->data);
    *o = '\0';
    return 0;
}

/* Writes the decimal digits of v ending just before end. */
static void put_digits(char *end, uint64_t v)
{
    if (v >= 100000000u) {
        put_8_digits(end, (uint32_t)(v % 100000000u));
        v /= 100000000u;
        end -= 8;
        if (v >= 100000000u) {
            put_8_digits(end, (uint32_t)(v % 100000000u));
            v /= 100000000u;
            end -= 8;
        }
    }
    put_short(end, (uint32_t)v);
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

static bool shell_safe(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-", *s))
            return false;
    return true;
}

int atr_buf_put_shell_word(struct atr_buf *b, const char *s)
{
    if (shell_safe(s))
        return atr_buf_puts(b, s);
    int rc = atr_buf_putc(b, '\'');
    for (; *s && rc == 0; s++)
        rc = *s == '\'' ? atr_buf_puts(b, "'\\''") : atr_buf_putc(b, *s);
    return rc ? rc : atr_buf_putc(b, '\'');
}
