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
    assert_false(path_safe("data/"));
}

/* A tree page: files kept, directories left out, each bad entry one error
 * naming where it is; more than 64 files grow the array. */
static void test_parse_tree(void **state)
{
    (void)state;
    static const char page[] =
        "[{\"type\":\"directory\",\"path\":\"data\"},\n"
        " {\"type\":\"file\",\"path\":\"data/a.parquet\",\"size\":5,"
        "\"oid\":\"1111111111111111111111111111111111111111\","
        "\"lfs\":{\"oid\":\"2222222222222222222222222222222222222222222222222222222222222222\"}},\n"
        " {\"type\":\"file\",\"path\":\"README.md\",\"size\":0,"
        "\"oid\":\"3333333333333333333333333333333333333333\"}]";
    struct atr_hub_repo r = {0};
    struct atr_error err;
    assert_int_equal(atr_hub_parse_tree(&r, page, sizeof page - 1, "u", &err), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.files[0].path, "data/a.parquet");
    assert_int_equal(r.files[0].size, 5);
    assert_string_equal(r.files[0].sha256,
                        "2222222222222222222222222222222222222222222222222222222222222222");
    assert_string_equal(r.files[1].sha256, "");
    assert_string_equal(r.files[1].oid, "3333333333333333333333333333333333333333");
    static const struct { const char *body, *msg; } bad[] = {
        {"{}", "u: expected an array of files"},
        {"[{\"type\":\"file\",\"path\":\"x\"}]", "u: 1:2: expected a file with \"path\" and \"size\""},
        {"[{\"type\":\"file\",\"path\":\"x\",\"size\":-1}]", "u: 1:2: expected a file with"},
        {"[\n{\"type\":\"file\",\"path\":\"../x\",\"size\":1}]", "u: 2:1: unsafe file path '../x'"},
        {"[{\"type\":\"file\",\"path\":\"x\",\"size\":1,\"oid\":\"abc\"}]",
         "u: 1:2: expected a sha1 \"oid\" or an lfs sha256 for x"},
        {"[{\"type\":\"file\"", "u: 1:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct atr_hub_repo b = {0};
        assert_int_equal(atr_hub_parse_tree(&b, bad[i].body, strlen(bad[i].body), "u", &err), -1);
        if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
            fail_msg("%s: got '%s', wanted '%s'", bad[i].body, err.msg, bad[i].msg);
        atr_hub_repo_release(&b);
    }
    struct atr_buf big = ATR_BUF_INIT;
    atr_buf_putc(&big, '[');
    for (int i = 0; i < 200; i++)
        atr_buf_printf(&big, "%s{\"type\":\"file\",\"path\":\"f%03d\",\"size\":%d,"
                       "\"oid\":\"4444444444444444444444444444444444444444\"}", i ? "," : "", i, i);
    atr_buf_putc(&big, ']');
    assert_int_equal(atr_hub_parse_tree(&r, big.data, big.len, "u", &err), 0);
    assert_int_equal(r.n, 202);
    assert_string_equal(r.files[201].path, "f199");
    assert_int_equal(r.files[201].size, 199);
    atr_buf_release(&big);
    atr_hub_repo_release(&r);
}

static void test_parse_revision(void **state)
{
    (void)state;
    struct atr_hub_repo r = {0};
    struct atr_error err;
    static const char ok[] = "{\"sha\":\"5555555555555555555555555555555555555555\"}";
    assert_int_equal(atr_hub_parse_revision(&r, ok, sizeof ok - 1, "u", &err), 0);
    assert_string_equal(r.commit, "5555555555555555555555555555555555555555");
    static const char short_sha[] = "{\"sha\":\"5555\"}";
    assert_int_equal(atr_hub_parse_revision(&r, short_sha, sizeof short_sha - 1, "u", &err), -1);
    assert_string_equal(err.msg, "u: expected a commit \"sha\" of 40 hex digits");
    assert_int_equal(atr_hub_parse_revision(&r, "", 0, "u", &err), -1);
    atr_hub_repo_release(&r);
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
        cmocka_unit_test(test_parse_tree),
        cmocka_unit_test(test_parse_revision),
        cmocka_unit_test(test_link),
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
