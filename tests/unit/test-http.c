/* test-http.c - the request-framing check (util/http.c) on header lists as
 * evhttp parses them: each ambiguous framing is refused with its reason
 * and the reply marked Connection: close; well-framed requests pass. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <event2/http.h>

#include "util/http.h"

/* The check's verdict on a request with the NULL-ended name, value pairs;
 * *closed says whether the reply was marked Connection: close. */
static const char *verdict(const char *const *kv, int *closed)
{
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    assert_non_null(req);
    for (; kv[0]; kv += 2)
        assert_int_equal(evhttp_add_header(evhttp_request_get_input_headers(req), kv[0], kv[1]), 0);
    const char *why = atr_http_framing_error(req);
    const char *c = evhttp_find_header(evhttp_request_get_output_headers(req), "Connection");
    *closed = c && strcmp(c, "close") == 0;
    evhttp_request_free(req);
    return why;
}

static void refused(const char *const *kv, const char *want)
{
    int closed;
    const char *why = verdict(kv, &closed);
    assert_non_null(why);
    assert_non_null(strstr(why, want));
    assert_true(closed);
}

static void test_refused(void **state)
{
    (void)state;
    refused((const char *[]){"Content-Length", "5", "Content-Length", "9", NULL}, "more than one");
    refused((const char *[]){"Content-Length", "5", "content-length", "5", NULL}, "more than one");
    refused((const char *[]){"Content-Length", "+5", NULL}, "decimal");
    refused((const char *[]){"Content-Length", "-1", NULL}, "decimal");
    refused((const char *[]){"Content-Length", "0x10", NULL}, "decimal");
    refused((const char *[]){"Content-Length", "1 2", NULL}, "decimal");
    refused((const char *[]){"Content-Length", "", NULL}, "decimal");
    refused((const char *[]){"Content-Length", "1234567890123456789", NULL}, "decimal");
    refused((const char *[]){"Transfer-Encoding ", "chunked", NULL}, "header name");
    refused((const char *[]){"Content-Length\t", "5", NULL}, "header name");
    refused((const char *[]){"X(y)", "1", NULL}, "header name");
    refused((const char *[]){"Transfer-Encoding", "chunked", "Content-Length", "5", NULL}, "both");
    refused((const char *[]){"Content-Length", "5", "Transfer-Encoding", "chunked", NULL}, "both");
    refused((const char *[]){"Transfer-Encoding", "gzip", NULL}, "chunked");
    refused((const char *[]){"Transfer-Encoding", "gzip, chunked", NULL}, "chunked");
    refused((const char *[]){"Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked", NULL},
            "chunked");
}

static void test_passed(void **state)
{
    (void)state;
    const char *const *ok[] = {
        (const char *[]){NULL},
        (const char *[]){"Host", "x", "Content-Length", "47", NULL},
        (const char *[]){"Content-Length", "0", NULL},
        (const char *[]){"Content-Length", "123456789012345678", NULL},
        (const char *[]){"transfer-encoding", "Chunked", "X-Session-Id", "a b", NULL},
        (const char *[]){"X-A_b.c~!#$%&'*+^`|", "1", NULL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int closed;
        assert_null(verdict(ok[i], &closed));
        assert_false(closed);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_passed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
