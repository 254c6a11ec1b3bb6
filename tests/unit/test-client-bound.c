/* test-client-bound.c - the client-bound verdict (exp/client-bound.h) on
 * records made up here: each reason when it alone holds, their order,
 * --max-concurrency's waits never blamed on the client, the rates. The
 * real client made the bottleneck: tests/cli/test-client-bound.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "exp/client-bound.h"

#define N 100

/* n requests due every gap s from 0, released lag s late, sent send s
 * after that, each lasting dur s. */
static void make(struct atr_llm_record *r, size_t n, double gap, double lag, double send,
                 double dur)
{
    memset(r, 0, n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i].scheduled_s = 1 + (double)i * gap;
        r[i].send_s = r[i].scheduled_s + lag;
        r[i].start_s = r[i].send_s;
        r[i].sent_s = r[i].send_s + send;
        r[i].end_s = r[i].sent_s + dur;
        r[i].success = true;
    }
}

static const struct atr_client_load idle = {.cpu_s = 0.01, .wall_s = 1, .busiest = 0.01,
                                            .loops = 1, .connections = 1024};

static void test_healthy(void **state)
{
    struct atr_llm_record r[N];
    make(r, N, 0.01, 0.0001, 0.0002, 0.05);
    struct atr_client_verdict v;
    atr_client_verdict_of(r, N, &idle, 0, &v);
    assert_false(v.client_bound);
    assert_string_equal(v.reason, "");
    assert_true(fabs(v.scheduled_rate - 100) < 1e-6);
    assert_true(fabs(v.achieved_rate - 100) < 0.5);
    assert_int_equal(v.max_in_flight, 6);     /* 50 ms at 10 ms apart, bounds touching */
    assert_true(fabs(v.cpu_per_request_us - 100) < 1e-6);
}

static void test_reasons(void **state)
{
    struct atr_llm_record r[N];
    struct atr_client_verdict v;
    struct atr_client_load busy = idle;
    busy.busiest = 0.97;
    make(r, N, 0.01, 0.05, 0.05, 0.05);       /* everything late too: the core says why */
    atr_client_verdict_of(r, N, &busy, 0, &v);
    assert_true(v.client_bound);
    assert_non_null(strstr(v.reason, "an event loop used 97 % of its core"));
    struct atr_client_load pool = idle;
    pool.connections = 2;
    make(r, N, 0.01, 0.0001, 0.0002, 0.05);
    atr_client_verdict_of(r, N, &pool, 0, &v);
    assert_string_equal(v.reason, "connection pool exhausted: 6 requests in flight for 2 "
                                  "connections");
    make(r, N, 0.01, 0.02, 0.0002, 0.05);
    atr_client_verdict_of(r, N, &idle, 0, &v);
    assert_non_null(strstr(v.reason, "event loop late: schedule lag p99 20.0 ms"));
    make(r, N, 0.01, 0.0001, 0.03, 0.05);
    atr_client_verdict_of(r, N, &idle, 0, &v);
    assert_true(strncmp(v.reason, "send lag p99 30.", 16) == 0);
}

/* Five requests 10 ms apart whose bytes leave 2 ms later each time: no
 * lag reaches 10 ms, but 83 of 100 requests/s is short. */
static void test_rate_short(void **state)
{
    struct atr_llm_record r[5];
    make(r, 5, 0.01, 0.0001, 0.0002, 0.05);
    for (size_t i = 0; i < 5; i++)
        r[i].sent_s = r[i].scheduled_s + 0.002 * (double)i;
    struct atr_client_verdict v;
    atr_client_verdict_of(r, 5, &idle, 0, &v);
    assert_true(v.client_bound);
    assert_string_equal(v.reason, "requested rate not achieved: 83.3 of 100.0 requests/s");
}

static void test_max_concurrency_not_client(void **state)
{
    struct atr_llm_record r[N];
    struct atr_client_load pool = idle;
    pool.connections = 2;
    make(r, N, 0.01, 0.0001, 0.5, 0.05);      /* long slot waits, all asked for */
    struct atr_client_verdict v;
    atr_client_verdict_of(r, N, &pool, 2, &v);
    assert_false(v.client_bound);
}

static void test_all_at_once(void **state)
{
    struct atr_llm_record r[N];
    make(r, N, 0, 0.0001, 0.0002, 0.05);
    struct atr_client_verdict v;
    atr_client_verdict_of(r, N, &idle, 0, &v);
    assert_true(isnan(v.scheduled_rate));
    assert_false(v.client_bound);
    atr_client_verdict_of(r, 0, &idle, 0, &v);    /* nothing ran */
    assert_false(v.client_bound);
    assert_true(isnan(v.achieved_rate));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_rate_short),
        cmocka_unit_test(test_max_concurrency_not_client),
        cmocka_unit_test(test_all_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
