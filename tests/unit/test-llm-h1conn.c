/* test-llm-h1conn.c - the client's plain-HTTP transport against answers a
 * scripted server writes byte for byte (a thread with blocking sockets):
 * a body framed by the close, an HTTP/1.0 JSON answer, and malformed or
 * cut answers, each ending the request with the right reason. No sleeps:
 * the loop runs until on_done, under a deadline. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llm/client.h"

#define STREAM "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[],\"usage\":" \
               "{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"

/* The answers, one per test, written whole and the connection closed. */
static const char *answer;
static int lfd, port;

/* Reads one request (head and Content-Length body) from fd. */
static void read_request(int fd)
{
    char buf[8192];
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n <= 0)
            return;
        len += (size_t)n;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        const char *cl = strstr(buf, "Content-Length: ");
        if (end && cl && len >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
            return;
    }
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        read_request(fd);
        size_t n = strlen(answer);
        if (send(fd, answer, n, MSG_NOSIGNAL) != (ssize_t)n)
            fprintf(stderr, "test server: short write\n");
        shutdown(fd, SHUT_WR);
        char sink[256];
        while (recv(fd, sink, sizeof sink, 0) > 0) {
        }
        close(fd);
    }
}

struct got {
    bool done, success;
    char reason[32], detail[256];
    size_t n_chunks;
    int64_t output;
};

static void on_done(void *ctx, const struct atr_llm_result *r)
{
    struct got *g = ctx;
    g->done = true;
    g->success = r->success;
    snprintf(g->reason, sizeof g->reason, "%s", r->reason ? r->reason : "");
    snprintf(g->detail, sizeof g->detail, "%s", r->detail ? r->detail : "");
    g->n_chunks = r->n_chunks;
    g->output = r->output_tokens;
}

/* One request against the scripted answer a. */
static struct got one(const char *a)
{
    answer = a;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    struct event_base *base = event_base_new();
    struct atr_llm_client_cfg cfg = {.base_url = url, .timeout_s = 20};
    struct got g = {0};
    struct atr_error err;
    struct atr_llm_client *c = atr_llm_client_new(base, &cfg, on_done, &g, &err);
    assert_non_null(c);
    assert_int_equal(atr_llm_client_send(c, 1, ATR_LLM_COMPLETIONS, "{}", 2, &err), 0);
    double deadline = atr_llm_now() + 20;
    while (!g.done && atr_llm_now() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    assert_true(g.done);
    atr_llm_client_free(c);
    event_base_free(base);
    return g;
}

static void test_close_framed(void **state)
{
    (void)state;
    struct got g = one("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" STREAM);
    if (!g.success)
        fail_msg("%s: %s", g.reason, g.detail);
    assert_int_equal(g.n_chunks, 1);
    assert_int_equal(g.output, 1);
}

static void test_http10_json(void **state)
{
    (void)state;
    struct got g = one("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 76\r\n\r\n"
                       "{\"choices\":[{\"text\":\"x\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}");
    assert_true(g.success);
    assert_int_equal(g.n_chunks, 1);
    assert_int_equal(g.output, 2);
}

static void test_malformed(void **state)
{
    (void)state;
    struct got g = one("SSH-2.0-OpenSSH_9.2\r\n\r\n");
    assert_string_equal(g.reason, "transport");
    assert_non_null(strstr(g.detail, "malformed HTTP response: malformed HTTP status line"));
    g = one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\nzz\r\n");
    assert_string_equal(g.reason, "transport");
    assert_non_null(strstr(g.detail, "bad chunk size"));
    g = one("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx");
    assert_string_equal(g.reason, "transport");
    assert_non_null(strstr(g.detail, "conflicting Content-Length"));
}

static void test_cut(void **state)
{
    (void)state;
    /* The length promises more than comes before the close. */
    struct got g = one("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 500\r\n\r\n"
                       "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
    assert_string_equal(g.reason, "stream cut");
    assert_non_null(strstr(g.detail, "bytes of the HTTP 200 body, before data: [DONE]"));
    /* A head cut off: nothing of an answer was read. */
    g = one("HTTP/1.1 200 OK\r\nContent-Ty");
    assert_string_equal(g.reason, "connect");
    /* A status with a close-framed body: the status and its message. */
    g = one("HTTP/1.1 503 Busy\r\nContent-Type: application/json\r\n\r\n"
            "{\"error\":{\"message\":\"try later\"}}");
    assert_string_equal(g.reason, "http 503");
    assert_string_equal(g.detail, "try later");
}

static int setup(void **state)
{
    (void)state;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    if (bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(lfd, 16) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0)
        return -1;
    port = ntohs(sin.sin_port);
    pthread_t th;
    if (pthread_create(&th, NULL, serve, NULL) != 0)
        return -1;
    pthread_detach(th);
    return 0;
}

int main(void)
{
    if (getenv("ATR_LLM_CURL"))
        unsetenv("ATR_LLM_CURL");   /* this file tests the plain-HTTP transport */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_close_framed),
        cmocka_unit_test(test_http10_json),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_cut),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
