/* test-hub.c - the pure parts of the Hub client (hub/hub.c, included for
 * its static functions): split names, paths a listing may not hold, the
 * Link header of listing pages, URL escapes of revisions and paths. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "hub/hub.c"

static void test_split(void **state)
{
    (void)state;
    assert_true(atr_hub_in_split("data/train-00000-of-00002.parquet", "train"));
    assert_true(atr_hub_in_split("train/0000.parquet", "train"));
    assert_true(atr_hub_in_split("default/train/0000.parquet", "train"));
    assert_true(atr_hub_in_split("test.jsonl", "test"));
    assert_true(atr_hub_in_split("data/test_0.jsonl", "test"));
    assert_false(atr_hub_in_split("data/training-0.parquet", "train"));
    assert_false(atr_hub_in_split("data/pretrain-0.parquet", "train"));
    assert_false(atr_hub_in_split("README.md", "train"));
}

static void test_path_safe(void **state)
{
    (void)state;
    assert_true(path_safe("data/train-0.parquet"));
    assert_true(path_safe(".gitattributes"));
    assert_true(path_safe("a/..b/c"));
    assert_false(path_safe(""));
    assert_false(path_safe("/etc/passwd"));
    assert_false(path_safe("../x"));
    assert_false(path_safe("data/../../x"));
    assert_false(path_safe("data/.."));
    assert_false(path_safe("./x"));
    assert_false(path_safe("data//x"));
}

static void test_link(void **state)
{
    (void)state;
    struct xfer x = {0};
    parse_link(&x, "<https://huggingface.co/api/datasets/a/b/tree/main?cursor=Z>; rel=\"next\"");
    assert_string_equal(x.next, "https://huggingface.co/api/datasets/a/b/tree/main?cursor=Z");
    memset(&x, 0, sizeof x);
    parse_link(&x, "<https://x/prev>; rel=\"prev\"");
    assert_string_equal(x.next, "");
    parse_link(&x, "<https://x/prev>; rel=\"prev\", <https://x/next?c=2>; rel=\"next\"");
    assert_string_equal(x.next, "https://x/next?c=2");
}

static void test_escape(void **state)
{
    (void)state;
    struct atr_buf b = ATR_BUF_INIT;
    url_escape(&b, "refs/convert/parquet", false);
    assert_string_equal(b.data, "refs%2Fconvert%2Fparquet");
    atr_buf_clear(&b);
    url_escape(&b, "data/a b+c.jsonl", true);
    assert_string_equal(b.data, "data/a%20b%2Bc.jsonl");
    atr_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_path_safe),
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
