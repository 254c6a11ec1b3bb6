/* test-json-scan.c - the in-place JSON scanner (json/scan.h): what it
 * reads, what it leaves to the tree ("cannot tell"), malformed, truncated
 * and hostile texts, and agreement with atr_json_parse where it answers.
 * Texts are copied into buffers of their exact size, so that a read past
 * the end is a sanitizer error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/scan.h"

static struct atr_arena arena = ATR_ARENA_INIT;

/* A heap copy of text[0..len) without a terminating NUL. */
static char *exact(const char *text, size_t len)
{
    char *b = malloc(len ? len : 1);
    assert_non_null(b);
    memcpy(b, text, len);
    return b;
}

/* Whether the scanner reads text[0..len) as one value, in an exact buffer. */
static bool scans_n(const char *text, size_t len)
{
    char *b = exact(text, len);
    struct atr_json_scan s;
    atr_json_scan_init(&s, b, len);
    bool ok = atr_json_scan_skip(&s) && atr_json_scan_end(&s);
    assert_true(s.p >= b && s.p <= b + len);
    free(b);
    return ok;
}

static bool scans(const char *text)
{
    return scans_n(text, strlen(text));
}

static bool tree_reads(const char *text, size_t len)
{
    struct atr_json *v;
    struct atr_json_err err;
    int rc = atr_json_parse(&arena, text, len, NULL, &v, &err);
    atr_arena_clear(&arena);
    return rc == 0;
}

static void test_values(void **state)
{
    (void)state;
    static const char text[] = " \"ab c\" \"a\\n\\\"b\" -12.5e+3 42 null true false ";
    struct atr_json_scan s;
    atr_json_scan_init(&s, text, sizeof text - 1);
    const char *body;
    size_t n;
    assert_true(atr_json_scan_string(&s, &body, &n));
    assert_int_equal(n, 4);
    assert_memory_equal(body, "ab c", 4);
    assert_true(atr_json_scan_string(&s, &body, &n));
    assert_null(body);   /* escaped: checked, not decoded */
    assert_int_equal(n, 6);
    assert_true(atr_json_scan_number(&s, &body, &n));
    assert_int_equal(n, 8);
    assert_memory_equal(body, "-12.5e+3", 8);
    int64_t v = -1;
    assert_true(atr_json_scan_uint(&s, &v));
    assert_int_equal(v, 42);
    assert_true(atr_json_scan_null(&s));
    assert_false(atr_json_scan_end(&s));
    assert_true(atr_json_scan_skip(&s));
    assert_true(atr_json_scan_skip(&s));
    assert_true(atr_json_scan_end(&s));
    assert_int_equal(atr_json_scan_peek(&s), '\0');
}

/* atr_json_scan_uint on text alone: its value, or -1 for "cannot tell". */
static int64_t uint_of(const char *text)
{
    char *b = exact(text, strlen(text));
    struct atr_json_scan s;
    atr_json_scan_init(&s, b, strlen(text));
    int64_t v = -7;
    bool ok = atr_json_scan_uint(&s, &v) && atr_json_scan_end(&s);
    free(b);
    return ok ? v : -1;
}

static void test_uint(void **state)
{
    (void)state;
    assert_int_equal(uint_of("0"), 0);
    assert_int_equal(uint_of(" 7 "), 7);
    assert_int_equal(uint_of("999999999999999999"), 999999999999999999LL);
    /* Numbers, but not for this reader. */
    static const char *const unsure[] = {
        "1234567890123456789", "-0", "-1", "1.0", "1e2", "1E2", "01", "", "null", "\"1\"",
        "+1", "0x1", "1.", "-",
    };
    for (size_t i = 0; i < sizeof unsure / sizeof unsure[0]; i++)
        assert_int_equal(uint_of(unsure[i]), -1);
}

struct members {
    char keys[8][16];
    int64_t vals[8];
    size_t n;
};

static bool on_member(struct atr_json_scan *s, const char *key, size_t n, void *ctx)
{
    struct members *m = ctx;
    assert_true(m->n < 8);
    if (key) {
        assert_true(n < 16);
        memcpy(m->keys[m->n], key, n);
        m->keys[m->n][n] = '\0';
    } else {
        strcpy(m->keys[m->n], "(escaped)");
    }
    m->vals[m->n] = -1;
    bool ok = atr_json_scan_peek(s) == '{' || atr_json_scan_peek(s) == '['
                  ? atr_json_scan_skip(s)
                  : atr_json_scan_uint(s, &m->vals[m->n]);
    m->n++;
    return ok;
}

static bool on_elem(struct atr_json_scan *s, size_t index, void *ctx)
{
    struct members *m = ctx;
    assert_int_equal(index, m->n);
    return atr_json_scan_uint(s, &m->vals[m->n++]);
}

static void test_object_and_array(void **state)
{
    (void)state;
    static const char text[] = "{ \"a\" : 1 , \"b\\tc\":2,\"d\":{\"x\":[1,{}]},\"e\":[] }";
    struct members m = {.n = 0};
    struct atr_json_scan s;
    atr_json_scan_init(&s, text, sizeof text - 1);
    assert_true(atr_json_scan_object(&s, on_member, &m));
    assert_true(atr_json_scan_end(&s));
    assert_int_equal(m.n, 4);
    assert_string_equal(m.keys[0], "a");
    assert_int_equal(m.vals[0], 1);
    assert_string_equal(m.keys[1], "(escaped)");
    assert_int_equal(m.vals[1], 2);
    assert_string_equal(m.keys[2], "d");
    assert_string_equal(m.keys[3], "e");
    assert_int_equal(s.depth, 0);

    static const char arr[] = "[3, 1 ,4]";
    struct members e = {.n = 0};
    atr_json_scan_init(&s, arr, sizeof arr - 1);
    assert_true(atr_json_scan_array(&s, on_elem, &e));
    assert_int_equal(e.n, 3);
    assert_int_equal(e.vals[2], 4);

    /* fn NULL steps over; the wrong kind is a false, not a skip. */
    atr_json_scan_init(&s, text, sizeof text - 1);
    assert_false(atr_json_scan_array(&s, NULL, NULL));
    atr_json_scan_init(&s, text, sizeof text - 1);
    assert_true(atr_json_scan_object(&s, NULL, NULL) && atr_json_scan_end(&s));
    atr_json_scan_init(&s, arr, sizeof arr - 1);
    assert_true(atr_json_scan_array(&s, NULL, NULL) && atr_json_scan_end(&s));

    /* A callback's false ends the scan. */
    static const char neg[] = "{\"a\":1,\"b\":-1,\"c\":2}";
    struct members f = {.n = 0};
    atr_json_scan_init(&s, neg, sizeof neg - 1);
    assert_false(atr_json_scan_object(&s, on_member, &f));
    assert_int_equal(f.n, 2);

    assert_true(atr_json_scan_key_is("abc", 3, "abc"));
    assert_false(atr_json_scan_key_is("abc", 2, "abc"));
    assert_false(atr_json_scan_key_is("abcd", 4, "abc"));
    assert_false(atr_json_scan_key_is(NULL, 3, "abc"));
}

/* Valid JSON the scanner leaves to the tree, and invalid JSON. */
static void test_cannot_tell(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "\"\\u0041\"", "\"\xc3\xa9\"", "{\"\\u00e9\":1}", "[\"\\ud83d\\ude00\"]",
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        assert_false(scans(valid[i]));
        assert_true(tree_reads(valid[i], strlen(valid[i])));
    }
    static const char *const bad[] = {
        "", " ", "{", "[", "}", "]", "{\"a\"", "{\"a\":}", "{\"a\":1,}", "[1,]", "{,}", "[,]",
        "{1:2}", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "[1 2]", "{\"a\":1}}", "[1]]", "01", "1.",
        "-", "1e", "1e+", ".5", "+1", "tru", "nul", "fals", "truex", "nan", "Infinity",
        "\"abc", "\"a\\", "\"a\\x\"", "\"\t\"", "\"\x01\"", "\"\x7f\x80\"", "'a'", "{'a':1}",
        "[1]x", "1 2", "\"a\"\"b\"", "[1,,2]", "{\"a\"::1}", "[-]", "[01]", "[1.e1]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(scans(bad[i]));
    /* A NUL inside the text is a byte like another, not an end. */
    assert_false(scans_n("{\"a\":1}\0", 8));
    assert_false(scans_n("\"a\0b\"", 5));
}

/* Every proper prefix of an object or array document is "cannot tell",
 * read in a buffer of exactly that size. */
static void test_truncated(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\" the quick brown fox jumps\","
        "\"logprobs\":null}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":8}}",
        "[ 1 , -2.5e-3 , true , false , null , \"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\" , [ ] , { } ]",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        size_t len = strlen(docs[d]);
        assert_true(scans_n(docs[d], len));
        assert_true(tree_reads(docs[d], len));
        for (size_t k = 0; k < len; k++)
            assert_false(scans_n(docs[d], k));
    }
}

/* Strings around the 16-byte steps: a stop byte at every position. */
static void test_long_strings(void **state)
{
    (void)state;
    char text[80];
    for (size_t len = 0; len < 70; len++) {
        text[0] = '"';
        memset(text + 1, 'x', len);
        text[len + 1] = '"';
        assert_true(scans_n(text, len + 2));
        assert_false(scans_n(text, len + 1));   /* no closing quote */
        for (size_t at = 1; at <= len; at++) {
            static const char stops[] = {'\x1f', '\x80', '\xff', '\\'};
            for (size_t k = 0; k < sizeof stops; k++) {
                char *b = exact(text, len + 2);
                b[at] = stops[k];
                struct atr_json_scan s;
                atr_json_scan_init(&s, b, len + 2);
                /* The backslash makes "\x" (no such escape) or escapes
                 * the closing quote. */
                assert_false(atr_json_scan_skip(&s) && atr_json_scan_end(&s));
                free(b);
            }
        }
    }
}

static void test_depth(void **state)
{
    (void)state;
    char text[200];
    for (unsigned d = 1; d <= 40; d++) {
        memset(text, '[', d);
        memset(text + d, ']', d);
        assert_int_equal(scans_n(text, 2 * d), d <= ATR_JSON_SCAN_DEPTH);
    }
    /* Objects count too, and max_depth can be lowered. */
    static const char obj[] = "{\"a\":{\"b\":[{}]}}";
    struct atr_json_scan s;
    atr_json_scan_init(&s, obj, sizeof obj - 1);
    s.max_depth = 4;
    assert_true(atr_json_scan_skip(&s));
    atr_json_scan_init(&s, obj, sizeof obj - 1);
    s.max_depth = 3;
    assert_false(atr_json_scan_skip(&s));
    /* Hostile nesting stops at the limit, without deep recursion. */
    size_t n = 1 << 20;
    char *deep = malloc(n);
    assert_non_null(deep);
    memset(deep, '[', n);
    atr_json_scan_init(&s, deep, n);
    assert_false(atr_json_scan_skip(&s));
    assert_true(s.depth == ATR_JSON_SCAN_DEPTH + 1);
    free(deep);
}

/* Where the scanner reads a text, the tree reads it too, and the strings
 * and counts the scanner hands out are the tree's. */
static void test_agrees_with_tree(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}", "[]", "0", "-0", "1e400", "\"\"", " {\"a\" : [1, 2.5, \"s\", null] } ",
        "{\"a\":1,\"a\":2}", "{\"\":\"\"}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "123456789012345678", "\"\x7f\"",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        assert_true(scans_n(texts[i], len));
        assert_true(tree_reads(texts[i], len));
    }
    /* The scanner's string and count are the tree's. */
    static const char text[] = "{\"s\":\"hello world\",\"n\":123456789012345678}";
    struct atr_json *v;
    struct atr_json_err err;
    assert_int_equal(atr_json_parse(&arena, text, sizeof text - 1, NULL, &v, &err), 0);
    struct atr_json_scan s;
    atr_json_scan_init(&s, text + 5, sizeof text - 1 - 5);
    const char *body;
    size_t n;
    assert_true(atr_json_scan_string(&s, &body, &n));
    size_t want_len;
    const char *want_s = atr_json_get_str(v, "s", &want_len);
    assert_int_equal(n, want_len);
    assert_memory_equal(body, want_s, n);
    int64_t want, got;
    assert_true(atr_json_get_i64(v, "n", &want));
    assert_true(atr_json_scan_peek(&s) == ',');
    s.p += strlen(",\"n\":");
    assert_true(atr_json_scan_uint(&s, &got));
    assert_int_equal(got, want);
    assert_true(atr_json_scan_peek(&s) == '}');
    atr_arena_clear(&arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_uint),
        cmocka_unit_test(test_object_and_array),
        cmocka_unit_test(test_cannot_tell),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_long_strings),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_agrees_with_tree),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    atr_arena_release(&arena);
    return rc;
}
