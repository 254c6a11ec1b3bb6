/* fuzz-h1.c - libFuzzer target for the client's HTTP/1.1 response parser
 * (src/llm/h1.c). The first byte seeds how the rest is sliced; fed whole
 * or in slices, a response must give the same answer, head and body
 * (where it is not an error, whose place depends on the slices), take no
 * more than it was given, stay within its line cap, and hand on no more
 * body than the input held. A second response on the same parser after a
 * reset reads as on a fresh one. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/h1.h"

static void must(int ok)
{
    if (!ok)
        abort();
}

struct sink {
    struct atr_buf body;
    int heads, status;
};

static int on_head(void *ctx, const struct atr_h1 *h)
{
    struct sink *s = ctx;
    must(h->status >= 200 && h->status <= 999 && h->status != 101);
    s->heads++;
    s->status = h->status;
    return 0;
}

static int on_body(void *ctx, const char *p, size_t n)
{
    struct sink *s = ctx;
    must(n > 0 && s->heads == 1);
    atr_buf_append(&s->body, p, n);
    return 0;
}

static const struct atr_h1_cb cb = {on_head, on_body};

/* Feeds data[0..n) in slices drawn from seed (0: whole); the answer,
 * with *taken the bytes taken. */
static int parse(struct atr_h1 *h, const uint8_t *data, size_t n, unsigned seed, struct sink *s,
                 size_t *taken)
{
    int rc = ATR_H1_MORE;
    size_t i = 0;
    while (i < n && rc == ATR_H1_MORE) {
        size_t step = n - i;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            size_t want = 1 + (seed >> 16) % 64;
            step = want < step ? want : step;
        }
        size_t used = 0;
        rc = atr_h1_feed(h, (const char *)data + i, step, &cb, s, &used);
        must(used <= step && h->line.len <= ATR_H1_MAX_LINE);
        must(rc != ATR_H1_MORE || used == step);
        must(rc != ATR_H1_ERR || h->error != NULL);
        i += used;
    }
    *taken = i;
    must(s->body.len <= i);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned seed = data[0] | 1u;
    data++;
    size--;
    struct atr_h1 a, b;
    atr_h1_init(&a);
    atr_h1_init(&b);
    struct sink whole = {ATR_BUF_INIT, 0, 0}, sliced = {ATR_BUF_INIT, 0, 0};
    size_t t1, t2;
    int rc1 = parse(&a, data, size, 0, &whole, &t1);
    int rc2 = parse(&b, data, size, seed, &sliced, &t2);
    must(rc1 == rc2);
    if (rc1 != ATR_H1_ERR) {
        must(t1 == t2 && whole.heads == sliced.heads && whole.status == sliced.status);
        must(whole.body.len == sliced.body.len &&
             (whole.body.len == 0 || memcmp(whole.body.data, sliced.body.data, whole.body.len) == 0));
        must(atr_h1_eof(&a) == atr_h1_eof(&b) && a.keep_alive == b.keep_alive);
    }
    /* The same parser, reset, reads the rest as a fresh one would. */
    if (rc1 == ATR_H1_DONE && t1 < size) {
        struct atr_h1 fresh;
        atr_h1_init(&fresh);
        atr_h1_reset(&a);
        struct sink s1 = {ATR_BUF_INIT, 0, 0}, s2 = {ATR_BUF_INIT, 0, 0};
        size_t u1, u2;
        int r1 = parse(&a, data + t1, size - t1, 0, &s1, &u1);
        int r2 = parse(&fresh, data + t1, size - t1, 0, &s2, &u2);
        must(r1 == r2 && u1 == u2 && s1.body.len == s2.body.len);
        atr_buf_release(&s1.body);
        atr_buf_release(&s2.body);
        atr_h1_release(&fresh);
    }
    atr_h1_release(&a);
    atr_h1_release(&b);
    atr_buf_release(&whole.body);
    atr_buf_release(&sliced.body);
    return 0;
}
