/* test-llm-h1.c - the client's HTTP/1.1 response parser: framing by
 * Content-Length, chunks and close, keep-alive, interim answers, and
 * hostile input (truncated, malformed, oversized lines and heads, bad
 * chunk sizes), each fed whole and in every slice size from one byte. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/h1.h"

struct sink {
    struct atr_buf body;
    int heads, status;
    enum atr_h1_type type;
    int stop_at_head, stop_after;   /* nonzero: stop there */
};

static int on_head(void *ctx, const struct atr_h1 *h)
{
    struct sink *s = ctx;
    s->heads++;
    s->status = h->status;
    s->type = h->type;
    return s->stop_at_head;
}

static int on_body(void *ctx, const char *p, size_t n)
{
    struct sink *s = ctx;
    atr_buf_append(&s->body, p, n);
    return s->stop_after && s->body.len >= (size_t)s->stop_after;
}

static const struct atr_h1_cb cb = {on_head, on_body};

struct outcome {
    int rc;              /* the last feed's answer */
    size_t used;         /* bytes of the input taken in all */
    bool eof_ok;         /* atr_h1_eof after it */
    bool keep_alive;
    const char *error;
};

/* Feeds text[0..len) in slices of `slice` bytes (0: whole) until an
 * answer other than ATR_H1_MORE. */
static struct outcome feed(const char *text, size_t len, size_t slice, struct sink *s)
{
    struct atr_h1 h;
    atr_h1_init(&h);
    struct outcome o = {ATR_H1_MORE, 0, false, false, NULL};
    size_t i = 0;
    while (i < len && o.rc == ATR_H1_MORE) {
        size_t n = slice && slice < len - i ? slice : len - i;
        size_t used = 0;
        o.rc = atr_h1_feed(&h, text + i, n, &cb, s, &used);
        assert_true(used <= n);
        if (o.rc == ATR_H1_MORE)
            assert_int_equal(used, n);
        i += used;
    }
    o.used = i;
    o.eof_ok = atr_h1_eof(&h);
    o.keep_alive = h.keep_alive;
    o.error = h.error;
    assert_true(h.line.len <= ATR_H1_MAX_LINE);
    atr_h1_release(&h);
    return o;
}

/* Every slicing gives the same answer and body as the whole. */
static struct outcome feed_all_ways(const char *text, struct sink *out)
{
    size_t len = strlen(text);
    struct sink whole = {ATR_BUF_INIT, 0, 0, 0, 0, 0};
    struct outcome w = feed(text, len, 0, &whole);
    size_t step = len > 300 ? 97 : 1;
    for (size_t slice = 1; slice < len; slice += step) {
        struct sink s = {ATR_BUF_INIT, 0, 0, 0, 0, 0};
        struct outcome o = feed(text, len, slice, &s);
        assert_int_equal(o.rc, w.rc);
        if (o.rc != ATR_H1_ERR)   /* where an error is seen depends on the slices */
            assert_int_equal(o.used, w.used);
        assert_int_equal(s.body.len, whole.body.len);
        assert_true(s.body.len == 0 || memcmp(s.body.data, whole.body.data, s.body.len) == 0);
        assert_int_equal(s.heads, whole.heads);
        atr_buf_release(&s.body);
    }
    *out = whole;
    return w;
}

static void expect_error(const char *text, const char *error_part)
{
    struct sink s;
    struct outcome o = feed_all_ways(text, &s);
    if (o.rc != ATR_H1_ERR)
        fail_msg("no error for %.60s (rc %d)", text, o.rc);
    assert_non_null(o.error);
    if (!strstr(o.error, error_part))
        fail_msg("error \"%s\" lacks \"%s\"", o.error, error_part);
    atr_buf_release(&s.body);
}

static void test_length(void **state)
{
    (void)state;
    struct sink s;
    struct outcome o = feed_all_ways("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                     "content-length: 11\r\n\r\nhello world", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_true(o.keep_alive);
    assert_int_equal(s.status, 200);
    assert_int_equal(s.type, ATR_H1_TYPE_SSE);
    assert_int_equal(s.body.len, 11);
    assert_memory_equal(s.body.data, "hello world", 11);
    atr_buf_release(&s.body);
    /* What follows the answer is not taken. */
    const char *two = "HTTP/1.1 404 No\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 200 OK\r\n";
    o = feed(two, strlen(two), 0, &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_int_equal(o.used, strlen(two) - strlen("HTTP/1.1 200 OK\r\n"));
    assert_int_equal(s.status, 404);
    atr_buf_release(&s.body);
}

static void test_chunked(void **state)
{
    (void)state;
    struct sink s;
    struct outcome o = feed_all_ways("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                     "Content-Type: application/json; charset=utf-8\r\n\r\n"
                                     "5\r\nhello\r\n1;ext=1\r\n \r\nA \r\n0123456789\r\n"
                                     "0\r\nX-Trailer: 1\r\n\r\n", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_true(o.keep_alive);
    assert_int_equal(s.type, ATR_H1_TYPE_JSON);
    assert_int_equal(s.body.len, 16);
    assert_memory_equal(s.body.data, "hello 0123456789", 16);
    atr_buf_release(&s.body);
    /* Bare LFs are taken too; a Content-Length beside chunked is ignored. */
    o = feed_all_ways("HTTP/1.1 200 OK\nContent-Length: 99\nTransfer-Encoding: gzip, chunked\n\n"
                      "3\nabc\n0\n\n", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_int_equal(s.body.len, 3);
    atr_buf_release(&s.body);
}

static void test_close_framed(void **state)
{
    (void)state;
    struct sink s;
    /* No length: the body ends with the connection. */
    struct outcome o = feed_all_ways("HTTP/1.0 200 OK\r\n\r\ndata: x\n\n", &s);
    assert_int_equal(o.rc, ATR_H1_MORE);
    assert_true(o.eof_ok);
    assert_false(o.keep_alive);
    assert_int_equal(s.type, ATR_H1_TYPE_NONE);
    assert_int_equal(s.body.len, 9);
    atr_buf_release(&s.body);
    o = feed_all_ways("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_false(o.keep_alive);
    atr_buf_release(&s.body);
    o = feed_all_ways("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", &s);
    assert_true(o.keep_alive);
    atr_buf_release(&s.body);
}

static void test_interim_and_empty(void **state)
{
    (void)state;
    struct sink s;
    struct outcome o = feed_all_ways("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
                                     "HTTP/1.1 429 Slow\r\nContent-Length: 4\r\n\r\nslow", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_int_equal(s.heads, 1);
    assert_int_equal(s.status, 429);
    assert_int_equal(s.body.len, 4);
    atr_buf_release(&s.body);
    o = feed_all_ways("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_int_equal(s.body.len, 0);
    atr_buf_release(&s.body);
    o = feed_all_ways("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", &s);
    assert_int_equal(o.rc, ATR_H1_DONE);
    assert_int_equal(s.status, 200);
    atr_buf_release(&s.body);
}

/* Cut anywhere: never done, never an error, and the close does not end it. */
static void test_truncated(void **state)
{
    (void)state;
    const char *full[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
    };
    for (size_t k = 0; k < 2; k++) {
        size_t len = strlen(full[k]);
        for (size_t cut = 0; cut < len; cut++) {
            struct sink s = {ATR_BUF_INIT, 0, 0, 0, 0, 0};
            struct outcome o = feed(full[k], cut, 1, &s);
            assert_int_equal(o.rc, ATR_H1_MORE);
            assert_false(o.eof_ok);
            atr_buf_release(&s.body);
        }
    }
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error("HTTP/2 200 OK\r\n\r\n", "status line");
    expect_error("HTTP/1.1 20\r\n\r\n", "status line");
    expect_error("HTTP/1.1 200OK\r\n\r\n", "status line");
    expect_error("HTTP/1.1 099 Low\r\n\r\n", "status line");
    expect_error("SSH-2.0-OpenSSH\r\n", "status line");
    expect_error("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line");
    expect_error("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", "header line");
    expect_error("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "header name");
    expect_error("HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n", "folded");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length");
    expect_error("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx", "conflicting");
    expect_error("HTTP/1.1 101 Switching Protocols\r\n\r\n", "101");
}

static void test_bad_chunks(void **state)
{
    (void)state;
    const char *head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    const char *bad[][2] = {
        {"zz\r\n", "chunk size"},
        {"\r\n", "chunk size"},
        {"-1\r\n", "chunk size"},
        {"5 x\r\nhello\r\n", "chunk size"},
        {"1000000000000000\r\n", "too large"},
        {"3\r\nabcX\r\n", "CRLF"},
        {"3\r\nabc\rX", "CRLF"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "%s%s", head, bad[i][0]);
        expect_error(text, bad[i][1]);
    }
}

/* Lines and heads past their caps are errors, fed in any slices, and the
 * parser never holds more than a line. */
static void test_oversized(void **state)
{
    (void)state;
    size_t big = ATR_H1_MAX_LINE + 10;
    char *text = malloc(ATR_H1_MAX_HEAD * 2);
    /* A status line without end. */
    memcpy(text, "HTTP/1.1 200 ", 13);
    memset(text + 13, 'x', big);
    text[13 + big] = '\0';
    expect_error(text, "status line too long");
    /* One long header line. */
    int n = sprintf(text, "HTTP/1.1 200 OK\r\nX-Long: ");
    memset(text + n, 'y', big);
    strcpy(text + n + big, "\r\n\r\n");
    expect_error(text, "header line too long");
    /* Many short headers past the head's cap. */
    n = sprintf(text, "HTTP/1.1 200 OK\r\n");
    while (n < ATR_H1_MAX_HEAD + 100)
        n += sprintf(text + n, "X-A: %d\r\n", n);
    strcpy(text + n, "\r\n");
    expect_error(text, "head too large");
    /* A chunk-size line that never ends. */
    n = sprintf(text, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1");
    memset(text + n, ' ', big);
    text[n + big] = '\0';
    expect_error(text, "chunk size line too long");
    /* Trailers without end. */
    n = sprintf(text, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    while (n < ATR_H1_MAX_HEAD + 100)
        n += sprintf(text + n, "T: %d\r\n", n);
    text[n] = '\0';
    expect_error(text, "trailers too large");
    free(text);
}

static void test_callback_stop(void **state)
{
    (void)state;
    const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
    struct sink s = {ATR_BUF_INIT, 0, 0, 0, 1, 0};
    struct outcome o = feed(t, strlen(t), 0, &s);
    assert_int_equal(o.rc, ATR_H1_STOP);
    assert_int_equal(s.body.len, 0);
    struct sink b = {ATR_BUF_INIT, 0, 0, 0, 0, 4};
    o = feed(t, strlen(t), 4, &b);
    assert_int_equal(o.rc, ATR_H1_STOP);
    assert_true(b.body.len >= 4 && b.body.len < 10);
    atr_buf_release(&b.body);
}

/* A reset parser reads the next answer on the same connection. */
static void test_reset_reuse(void **state)
{
    (void)state;
    struct atr_h1 h;
    atr_h1_init(&h);
    struct sink s = {ATR_BUF_INIT, 0, 0, 0, 0, 0};
    const char *a = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n";
    const char *b = "HTTP/1.1 500 Bad\r\nContent-Length: 3\r\n\r\nerr";
    size_t used;
    assert_int_equal(atr_h1_feed(&h, a, strlen(a), &cb, &s, &used), ATR_H1_DONE);
    atr_h1_reset(&h);
    assert_false(h.started);
    assert_int_equal(atr_h1_feed(&h, b, strlen(b), &cb, &s, &used), ATR_H1_DONE);
    assert_int_equal(s.status, 500);
    assert_int_equal(s.body.len, 5);
    atr_buf_release(&s.body);
    atr_h1_release(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_length),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_close_framed),
        cmocka_unit_test(test_interim_and_empty),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_bad_chunks),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_reset_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
