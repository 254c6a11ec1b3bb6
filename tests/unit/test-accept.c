/* test-accept.c - the connection cap's default (util/accept.c): the soft
 * RLIMIT_NOFILE less its reserve, divided by the descriptors each
 * connection holds, never 0; set with setrlimit in this process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/resource.h>

#include "util/accept.h"

static unsigned cap_at(rlim_t soft, unsigned fds_each)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    struct rlimit low = {soft, rl.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    unsigned cap = atr_accept_default_cap(fds_each);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    return cap;
}

static void test_reserve(void **state)
{
    (void)state;
    assert_int_equal(cap_at(1024, 1), 960);    /* 64 kept back */
    assert_int_equal(cap_at(1024, 2), 480);    /* the proxy: an upstream each */
    assert_int_equal(cap_at(64, 1), 32);       /* a small limit: half kept back */
    assert_int_equal(cap_at(64, 2), 16);
}

static void test_never_zero(void **state)
{
    (void)state;
    assert_int_equal(cap_at(1, 2), 1);
    assert_int_equal(cap_at(3, 1), 2);
    assert_int_equal(atr_accept_default_cap(0), atr_accept_default_cap(1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_never_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
