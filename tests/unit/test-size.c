/* test-size.c - sizes as options and specs write them ("20G", "1000T"):
 * the suffixes are powers of 1024, junk, signs and overflow are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/size.h"

static void test_suffixes(void **state)
{
    (void)state;
    size_t v = 0;
    assert_true(atr_parse_size("4096", &v));
    assert_int_equal(v, 4096);
    assert_true(atr_parse_size("256M", &v));
    assert_int_equal(v, (size_t)256 << 20);
    assert_true(atr_parse_size("20g", &v));
    assert_int_equal(v, (size_t)20 << 30);
    assert_true(atr_parse_size("1000T", &v));
    assert_int_equal(v, (size_t)1000 << 40);
    assert_true(atr_parse_size("2KB", &v));
    assert_int_equal(v, 2048);
}

static void test_refused(void **state)
{
    (void)state;
    size_t v = 7;
    static const char *const bad[] = {"", "-1G", "20X", "G", "1.5G", "1GG", "16777216T",
                                      "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(atr_parse_size(bad[i], &v));
    assert_false(atr_parse_size(NULL, &v));
    assert_int_equal(v, 7);                       /* untouched on failure */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suffixes),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
