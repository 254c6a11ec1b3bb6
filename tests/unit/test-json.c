/* test-json.c - unit tests for the JSON parser, lookups, builders, output,
 * and the streaming writer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "json/writer.h"

static struct atr_arena arena = ATR_ARENA_INIT;

/* Parses from an exact-size heap copy, so reading past len trips ASan. */
static int parse_opts(const char *text, size_t len, const struct atr_json_opts *o,
                      struct atr_json **out, struct atr_json_err *err)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    int rc = atr_json_parse(&arena, copy, len, o, out, err);
    free(copy);  /* the tree must not point into the input */
    return rc;
}

static struct atr_json *parse_ok(const char *text)
{
    struct atr_json *v = NULL;
    struct atr_json_err err;
    int rc = parse_opts(text, strlen(text), NULL, &v, &err);
    if (rc != 0)
        fail_msg("parse of %s failed at %u:%u: %s", text, err.line, err.col, err.msg);
    assert_non_null(v);
    return v;
}

/* Expects failure at line:col with a message starting with msg. */
static void parse_fails_n(const char *text, size_t len, const struct atr_json_opts *o,
                          uint32_t line, uint32_t col, const char *msg)
{
    struct atr_json *v = (struct atr_json *)1;
    struct atr_json_err err = {0};
    if (parse_opts(text, len, o, &v, &err) == 0)
        fail_msg("parse of %s succeeded, expected \"%s\"", text, msg);
    assert_null(v);
    if (err.line != line || err.col != col || strncmp(err.msg, msg, strlen(msg)) != 0)
        fail_msg("%s: got %u:%u \"%s\", want %u:%u \"%s\"", text, err.line, err.col,
                 err.msg, line, col, msg);
}

static void parse_fails(const char *text, uint32_t line, uint32_t col, const char *msg)
{
    parse_fails_n(text, strlen(text), NULL, line, col, msg);
}

static const char *to_json(const struct atr_json *v)
{
    static struct atr_buf b = ATR_BUF_INIT;
    atr_buf_clear(&b);
    assert_int_equal(atr_json_write_value(&b, v), 0);
    return atr_arena_strndup(&arena, b.data, b.len);
}

static int teardown(void **state)
{
    atr_arena_clear(&arena);
    return 0;
}

static void test_scalars(void **state)
{
    struct atr_json *v = parse_ok("null");
    assert_int_equal(v->type, ATR_JSON_NULL);
    assert_int_equal(v->line, 1);
    assert_int_equal(v->col, 1);
    assert_int_equal(parse_ok(" true ")->type, ATR_JSON_TRUE);
    assert_int_equal(parse_ok("\t\r\nfalse")->type, ATR_JSON_FALSE);
    v = parse_ok("\n\n   \"hi\"\n");
    assert_int_equal(v->type, ATR_JSON_STRING);
    assert_int_equal(v->line, 3);
    assert_int_equal(v->col, 4);
    assert_string_equal(v->u.str.s, "hi");
    assert_int_equal(v->u.str.len, 2);
    assert_null(v->key);
    v = parse_ok("42");
    assert_int_equal(v->type, ATR_JSON_NUMBER);
    assert_true(v->is_int);
    assert_int_equal(v->i, 42);
    assert_true(v->u.num == 42.0);
    assert_int_equal(v->raw_len, 2);
    assert_memory_equal(v->raw, "42", 2);
    v = parse_ok("\"\"");
    assert_int_equal(v->u.str.len, 0);
    assert_string_equal(v->u.str.s, "");
}

static void test_nested(void **state)
{
    const char *text = "{\n  \"a\": [1, {\"b\": null}, []],\n  \"c\": {},\n  \"a\": \"dup\"\n}";
    struct atr_json *v = parse_ok(text);
    assert_int_equal(v->type, ATR_JSON_OBJECT);
    assert_int_equal(v->u.kids.count, 3);
    struct atr_json *a = v->u.kids.first;
    assert_true(atr_json_key_is(a, "a"));
    assert_int_equal(a->type, ATR_JSON_ARRAY);
    assert_int_equal(a->line, 2);
    assert_int_equal(a->col, 8);
    assert_int_equal(a->u.kids.count, 3);
    struct atr_json *one = a->u.kids.first, *inner = one->next, *empty = inner->next;
    assert_null(one->key);
    assert_int_equal(one->i, 1);
    assert_int_equal(one->col, 9);
    assert_int_equal(inner->type, ATR_JSON_OBJECT);
    assert_int_equal(inner->u.kids.first->type, ATR_JSON_NULL);
    assert_true(atr_json_key_is(inner->u.kids.first, "b"));
    assert_int_equal(empty->type, ATR_JSON_ARRAY);
    assert_int_equal(empty->u.kids.count, 0);
    assert_null(empty->u.kids.first);
    assert_null(empty->next);
    assert_ptr_equal(a->u.kids.last, empty);
    struct atr_json *c = a->next;
    assert_true(atr_json_key_is(c, "c"));
    assert_int_equal(c->line, 3);
    assert_int_equal(c->col, 8);
    /* Duplicates are kept in order; get finds the first. */
    struct atr_json *dup = c->next;
    assert_true(atr_json_key_is(dup, "a"));
    assert_string_equal(dup->u.str.s, "dup");
    assert_ptr_equal(v->u.kids.last, dup);
    assert_ptr_equal(atr_json_get(v, "a"), a);
}

static void want_string(const char *json, const char *want, size_t want_len)
{
    struct atr_json *v = parse_ok(json);
    assert_int_equal(v->type, ATR_JSON_STRING);
    assert_int_equal(v->u.str.len, want_len);
    assert_memory_equal(v->u.str.s, want, want_len);
    assert_int_equal(v->u.str.s[want_len], '\0');
}

static void test_escapes(void **state)
{
    want_string("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
    want_string("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6);
    want_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4);
    want_string("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);
    want_string("\"a\\u0000b\"", "a\0b", 3);
    want_string("\"\\\\\"", "\\", 1);
    want_string("\"x\\\\\\\\\"", "x\\\\", 3);
    want_string("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\x9f\xbf\"",
                  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\x9f\xbf", 18);
    want_string("\"\x7f\"", "\x7f", 1);
}

/* Long strings cross the 16-byte vector path; check escapes at each offset. */
static void test_long_strings(void **state)
{
    static const char *esc[] = {"\\n", "\\\"", "\\u00e9", "\xc3\xa9", "\\ud83d\\ude00", "\\\\"};
    static const char *dec[] = {"\n", "\"", "\xc3\xa9", "\xc3\xa9", "\xf0\x9f\x98\x80", "\\"};
    char json[512], want[512];
    for (int e = 0; e < 6; e++) {
        for (int at = 0; at < 40; at++) {
            size_t jn = 0, wn = 0;
            json[jn++] = '"';
            for (int k = 0; k < 50; k++) {
                if (k == at) {
                    jn += (size_t)sprintf(json + jn, "%s", esc[e]);
                    wn += (size_t)sprintf(want + wn, "%s", dec[e]);
                } else {
                    json[jn++] = want[wn++] = (char)('a' + k % 26);
                }
            }
            json[jn++] = '"';
            json[jn] = '\0';
            want_string(json, want, wn);
        }
    }
}

/* Strings past the parser's 64 KiB scratch window, with escapes and UTF-8
 * sequences straddling every alignment of the window's growth points. */
static void test_huge_strings(void **state)
{
    static const char *esc[] = {"\\n", "\\u00e9", "\xc3\xa9", "\xf0\x9f\x98\x80",
                                "\\ud83d\\ude00", "\\\\", "\\\""};
    static const char *dec[] = {"\n", "\xc3\xa9", "\xc3\xa9", "\xf0\x9f\x98\x80",
                                "\xf0\x9f\x98\x80", "\\", "\""};
    size_t cap = 700000;
    char *json = malloc(cap), *want = malloc(cap);
    size_t jn = 0, wn = 0;
    memcpy(json, "{\"", 2);
    jn = 2;
    for (int pass = 0; pass < 2; pass++) {  /* a long key, then a long value */
        for (int i = 0; jn < (size_t)(pass + 1) * 300000; i++) {
            int run = i % 37;
            for (int k = 0; k < run; k++)
                json[jn++] = want[wn++] = (char)('a' + (i + k) % 26);
            const char *e = esc[i % 7], *d = dec[i % 7];
            memcpy(json + jn, e, strlen(e));
            jn += strlen(e);
            memcpy(want + wn, d, strlen(d));
            wn += strlen(d);
        }
        if (pass == 0) {
            memcpy(json + jn, "\": \"", 4);
            jn += 4;
        }
    }
    memcpy(json + jn, "\"}", 2);
    jn += 2;
    struct atr_json *v = NULL;
    struct atr_json_err err;
    if (parse_opts(json, jn, NULL, &v, &err) != 0)
        fail_msg("huge: %u:%u %s", err.line, err.col, err.msg);
    struct atr_json *m = v->u.kids.first;
    size_t key_len = m->key_len;
    assert_memory_equal(m->key, want, key_len);
    assert_int_equal(m->u.str.len, wn - key_len);
    assert_memory_equal(m->u.str.s, want + key_len, wn - key_len);
    assert_int_equal(m->u.str.s[m->u.str.len], '\0');
    /* Errors far into a long string keep their column. */
    json[250000] = '\x01';
    parse_fails_n(json, jn, NULL, 1, 250001, "unescaped control character 0x01");
    json[200000] = '\xff';
    parse_fails_n(json, jn, NULL, 1, 200001, "invalid UTF-8 in string");
    parse_fails_n(json, 150000, NULL, 1, 2, "unterminated string");
    free(json);
    free(want);
}

static void test_string_errors(void **state)
{
    parse_fails("\"abc", 1, 1, "unterminated string");
    parse_fails("[\"abc\\\"]", 1, 2, "unterminated string");
    parse_fails("\"ab\ncd\"", 1, 4, "unescaped control character 0x0a in string");
    parse_fails("{\"a\":\n \"x\ty\"}", 2, 4, "unescaped control character 0x09");
    parse_fails("\"ab\ncd", 1, 4, "unescaped control character 0x0a");
    parse_fails("\"a\\x\"", 1, 3, "invalid escape in string, found 'x' after '\\'");
    parse_fails("\"a\\'\"", 1, 3, "invalid escape in string");
    parse_fails("\"\\u12\"", 1, 2, "invalid \\u escape: expected 4 hex digits");
    parse_fails("\"\\u12g4\"", 1, 2, "invalid \\u escape: expected 4 hex digits");
    parse_fails("\"xx\\ud800\"", 1, 4, "invalid \\u escape: unpaired high surrogate");
    parse_fails("\"\\ud800\\u0041\"", 1, 2, "invalid \\u escape: unpaired high surrogate");
    parse_fails("\"\\ud800\\ud800\"", 1, 2, "invalid \\u escape: unpaired high surrogate");
    parse_fails("\"\\udc00\"", 1, 2, "invalid \\u escape: unpaired low surrogate");
    parse_fails("\"\\ud800x\"", 1, 2, "invalid \\u escape: unpaired high surrogate");
    static const char *bad_utf8[] = {
        "\"\x80\"", "\"\xc0\x80\"", "\"\xc1\xbf\"", "\"\xe0\x80\x80\"",
        "\"\xed\xa0\x80\"", "\"\xf0\x80\x80\x80\"", "\"\xf4\x90\x80\x80\"",
        "\"\xf5\x80\x80\x80\"", "\"\xff\"", "\"\xe2\x82\"", "\"\xc3\"",
        "\"\xe2\x28\xa1\"", "\"\xf0\x9f\x98\"",
    };
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++)
        parse_fails(bad_utf8[i], 1, 2, "invalid UTF-8 in string");
    /* Keys go through the same path. */
    parse_fails("{\"k\x80\": 1}", 1, 4, "invalid UTF-8 in string");
    parse_fails("{\"k", 1, 2, "unterminated string");
    parse_fails("\"ab\\", 1, 1, "unterminated string");
    parse_fails("  \"ab\\u12", 1, 6, "invalid \\u escape: expected 4 hex digits");
}

static void want_int(const char *json, int64_t want)
{
    struct atr_json *v = parse_ok(json);
    assert_int_equal(v->type, ATR_JSON_NUMBER);
    if (!v->is_int)
        fail_msg("%s: not is_int", json);
    assert_true(v->i == want);
    assert_true(v->u.num == (double)want);
    assert_int_equal(v->raw_len, strlen(json));
    assert_memory_equal(v->raw, json, v->raw_len);
    assert_int_equal(v->raw[v->raw_len], '\0');
}

static void want_double(const char *json, double want)
{
    struct atr_json *v = parse_ok(json);
    assert_int_equal(v->type, ATR_JSON_NUMBER);
    if (v->is_int)
        fail_msg("%s: unexpectedly is_int", json);
    if (!(v->u.num == want) || signbit(v->u.num) != signbit(want))
        fail_msg("%s: got %.17g want %.17g", json, v->u.num, want);
    assert_int_equal(v->raw_len, strlen(json));
    assert_memory_equal(v->raw, json, v->raw_len);
    assert_int_equal(v->raw[v->raw_len], '\0');
}

static void test_numbers(void **state)
{
    want_int("0", 0);
    want_int("7", 7);
    want_int("-123", -123);
    want_int("9223372036854775807", INT64_MAX);
    want_int("-9223372036854775808", INT64_MIN);
    want_int("1000000000000000000", 1000000000000000000);
    want_int("123456789012345", 123456789012345);    /* literal kept in the node */
    want_int("1234567890123456", 1234567890123456);  /* one byte too long for that */
    want_double("-1.25e-10", -1.25e-10);
    want_double("9223372036854775808", 9223372036854775808.0);
    want_double("-9223372036854775809", -9223372036854775809.0);
    want_double("12345678901234567890123", 12345678901234567890123.0);
    want_double("1.5", 1.5);
    want_double("-0.0", -0.0);
    want_double("0.1", 0.1);
    want_double("3.141592653589793", 3.141592653589793);
    want_double("1e2", 100.0);
    want_double("1E+2", 100.0);
    want_double("-2.5e-3", -2.5e-3);
    want_double("0.000001", 1e-6);
    want_double("1.7976931348623157e308", 1.7976931348623157e308);
    want_double("5e-324", 5e-324);
    want_double("0e0", 0.0);
    want_double("-0e-400", -0.0);
    want_double("123456789012345.678", 123456789012345.678);
    want_double("1e22", 1e22);
    want_double("1e23", 1e23);
    want_double("1e0000000000000000000001", 10.0);
    want_double("1e400", INFINITY);
    want_double("-1e400", -INFINITY);
    want_double("1e-400", 0.0);
    /* "-0" is the integer 0; num keeps the sign. */
    struct atr_json *v = parse_ok("-0");
    assert_true(v->is_int);
    assert_int_equal(v->i, 0);
    assert_true(signbit(v->u.num));
    v = parse_ok("[1,-2.5,3]");
    assert_int_equal(v->u.kids.first->next->raw_len, 4);
    assert_int_equal(v->u.kids.first->next->col, 4);
}

static void test_number_errors(void **state)
{
    parse_fails("01", 1, 1, "invalid number: leading zero");
    parse_fails("-01", 1, 2, "invalid number: leading zero");
    parse_fails("[00]", 1, 2, "invalid number: leading zero");
    parse_fails("-", 1, 2, "invalid number: expected digit after '-'");
    parse_fails("-a", 1, 2, "invalid number: expected digit after '-'");
    parse_fails("1.", 1, 3, "invalid number: expected digit after '.'");
    parse_fails("1.e5", 1, 3, "invalid number: expected digit after '.'");
    parse_fails("1e", 1, 3, "invalid number: expected digit in exponent");
    parse_fails("1e+", 1, 4, "invalid number: expected digit in exponent");
    parse_fails("[1E-x]", 1, 5, "invalid number: expected digit in exponent");
    parse_fails(".5", 1, 1, "expected a JSON value, found '.'");
    parse_fails("+1", 1, 1, "expected a JSON value, found '+'");
    parse_fails("0x10", 1, 2, "unexpected 'x' after JSON value");
    parse_fails("1.5.2", 1, 4, "unexpected '.' after JSON value");
}

static void test_errors(void **state)
{
    parse_fails("{\n  \"a\": 1,\n}", 3, 1, "expected string key after ',', found '}'");
    parse_fails("", 1, 1, "expected a JSON value, found end of input");
    parse_fails("  \n ", 2, 2, "expected a JSON value, found end of input");
    parse_fails("[1,]", 1, 4, "expected a JSON value, found ']'");
    parse_fails("[1 2]", 1, 4, "expected ',' or ']' after array element, found '2'");
    parse_fails("[1", 1, 3, "expected ',' or ']' after array element, found end of input");
    parse_fails("[", 1, 2, "expected a JSON value, found end of input");
    parse_fails("{", 1, 2, "expected string key or '}', found end of input");
    parse_fails("{1:2}", 1, 2, "expected string key or '}', found '1'");
    parse_fails("{\"a\" 1}", 1, 6, "expected ':' after object key, found '1'");
    parse_fails("{\"a\":}", 1, 6, "expected a JSON value, found '}'");
    parse_fails("{\"a\":1 \"b\":2}", 1, 8, "expected ',' or '}' after object member, found '\"'");
    parse_fails("{\"a\":1,,}", 1, 8, "expected string key after ','");
    parse_fails("[1]]", 1, 4, "unexpected ']' after JSON value");
    parse_fails("{} {}", 1, 4, "unexpected '{' after JSON value");
    parse_fails("1\n\n  x", 3, 3, "unexpected 'x' after JSON value");
    parse_fails("tru", 1, 1, "invalid literal, expected 'true'");
    parse_fails("[fals]", 1, 2, "invalid literal, expected 'false'");
    parse_fails("nul", 1, 1, "invalid literal, expected 'null'");
    parse_fails("truex", 1, 5, "unexpected 'x' after JSON value");
    parse_fails("'a'", 1, 1, "expected a JSON value, found '''");
    parse_fails("\x01", 1, 1, "expected a JSON value, found byte 0x01");
    parse_fails("\xef\xbb\xbf{}", 1, 1, "expected a JSON value, found byte 0xef");
    parse_fails_n("[1,\0]", 5, NULL, 1, 4, "expected a JSON value, found byte 0x00");
    parse_fails_n("1\0", 2, NULL, 1, 2, "unexpected byte 0x00 after JSON value");
    /* NULL err is allowed. */
    struct atr_json *v;
    assert_int_equal(atr_json_parse(&arena, "[", 1, NULL, &v, NULL), -1);
}

/* Every prefix of a valid document parses or fails, without reading past
 * the end (ASan) and with an error position inside the text. */
static void test_prefixes(void **state)
{
    const char *doc = "{\"a\\n\\u00e9\\ud83d\\ude00\": [true, false, null, -1.5e+3, "
                      "\"x\\\"y\", {\"k\": 12345678901234567890}], \"nan\": NaN}";
    struct atr_json_opts o = {.allow_nonfinite = true};
    size_t n = strlen(doc);
    for (size_t len = 0; len <= n; len++) {
        struct atr_json *v;
        struct atr_json_err err = {0};
        int rc = parse_opts(doc, len, &o, &v, &err);
        if (len == n) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(err.line, 1);
        assert_true(err.col >= 1 && err.col <= len + 1);
    }
}

static void nest(char *buf, int depth)
{
    for (int i = 0; i < depth; i++)
        buf[i] = '[';
    for (int i = 0; i < depth; i++)
        buf[depth + i] = ']';
    buf[2 * depth] = '\0';
}

static void test_depth(void **state)
{
    char buf[1200];
    nest(buf, 256);
    struct atr_json *v = parse_ok(buf);
    assert_int_equal(v->u.kids.count, 1);
    nest(buf, 257);
    parse_fails(buf, 1, 257, "nesting deeper than 256 levels");
    struct atr_json_opts o = {.max_depth = 3};
    parse_fails_n("[{\"a\":[{}]}]", 12, &o, 1, 8, "nesting deeper than 3 levels");
    struct atr_json_err err;
    assert_int_equal(parse_opts("[{\"a\":[1]}]", 11, &o, &v, &err), 0);
    o.max_depth = 500;
    nest(buf, 500);
    assert_int_equal(parse_opts(buf, 1000, &o, &v, &err), 0);
}

static void test_nonfinite(void **state)
{
    parse_fails("NaN", 1, 1, "NaN is not valid JSON");
    parse_fails("[1, Infinity]", 1, 5, "Infinity is not valid JSON");
    parse_fails("-Infinity", 1, 1, "-Infinity is not valid JSON");
    parse_fails("Nan", 1, 1, "expected a JSON value, found 'N'");
    parse_fails("Inf", 1, 1, "expected a JSON value, found 'I'");
    parse_fails("-Inf", 1, 2, "invalid number: expected digit after '-', found 'I'");
    struct atr_json_opts o = {.allow_nonfinite = true};
    struct atr_json *v;
    struct atr_json_err err;
    const char *t = "[NaN, Infinity, -Infinity, 1]";
    assert_int_equal(parse_opts(t, strlen(t), &o, &v, &err), 0);
    struct atr_json *k = v->u.kids.first;
    assert_int_equal(k->type, ATR_JSON_NUMBER);
    assert_false(k->is_int);
    assert_true(isnan(k->u.num));
    assert_int_equal(k->raw_len, 3);
    k = k->next;
    assert_true(isinf(k->u.num) && k->u.num > 0);
    assert_false(k->is_int);
    k = k->next;
    assert_true(isinf(k->u.num) && k->u.num < 0);
    assert_memory_equal(k->raw, "-Infinity", 9);
    assert_int_equal(k->col, 17);
    assert_string_equal(to_json(v), "[null,null,null,1]");
    parse_fails_n("-NaN", 4, &o, 1, 2, "invalid number: expected digit after '-'");
    parse_fails_n("Infinityx", 9, &o, 1, 9, "unexpected 'x' after JSON value");
}

static bool json_equal(const struct atr_json *a, const struct atr_json *b)
{
    if (a->type != b->type || a->key_len != b->key_len ||
        (a->key_len && memcmp(a->key, b->key, a->key_len) != 0))
        return false;
    switch (a->type) {
    case ATR_JSON_NUMBER:
        return a->u.num == b->u.num || (isnan(a->u.num) && isnan(b->u.num));
    case ATR_JSON_STRING:
        return a->u.str.len == b->u.str.len &&
               memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case ATR_JSON_ARRAY:
    case ATR_JSON_OBJECT:
        if (a->u.kids.count != b->u.kids.count)
            return false;
        for (a = a->u.kids.first, b = b->u.kids.first; a; a = a->next, b = b->next)
            if (!json_equal(a, b))
                return false;
        return true;
    default:
        return true;
    }
}

static void test_roundtrip(void **state)
{
    static const char *docs[] = {
        "{\"role\": \"user\", \"content\": \"line one\\nline \\\"two\\\"\\t\\u0001\\u001f\", "
        "\"n\": [0, -1, 9223372036854775807, -9223372036854775808, 1.5, 0.1, -0.0, "
        "1e300, 2.2250738585072014e-308, 123456789012345678901234567890], "
        "\"e\": {}, \"a\": [], \"t\": true, \"f\": false, \"z\": null, "
        "\"\\u0000k\\ud83d\\ude00\": \"caf\xc3\xa9\"}",
        "[[[[\"deep\"]]]]",
        "\"\\/\\b\\f\\r\"",
        "-0",
        "[0.30000000000000004, 1e-7, 100.0, 3.0e2, 1.7976931348623157e308]",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        struct atr_json *v = parse_ok(docs[i]);
        const char *out = to_json(v);
        struct atr_json *w = parse_ok(out);
        assert_true(json_equal(v, w));
        assert_string_equal(to_json(w), out);
    }
    assert_string_equal(to_json(parse_ok("{ \"a\" : [ 1 , 2.5 , \"x\" ] , \"b\" : { } }")),
                        "{\"a\":[1,2.5,\"x\"],\"b\":{}}");
}

static void test_write_string(void **state)
{
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_json_write_string(&b, "a\"b\\c\nd\re\tf\bg\fh\x01\x1f\x7f\xc3\xa9", 20), 0);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001\\u001f\x7f\xc3\xa9\"");
    atr_buf_clear(&b);
    assert_int_equal(atr_json_write_string(&b, "x\0y", 3), 0);
    assert_string_equal(b.data, "\"x\\u0000y\"");
    atr_buf_clear(&b);
    assert_int_equal(atr_json_write_string(&b, NULL, 0), 0);
    assert_string_equal(b.data, "\"\"");
    /* Long input through the vector path, escapes at every offset. */
    char in[100], want[300];
    for (int at = 0; at < 64; at++) {
        size_t wn = 0;
        want[wn++] = '"';
        for (int k = 0; k < 64; k++) {
            in[k] = k == at ? '"' : (char)('A' + k % 26);
            if (k == at)
                want[wn++] = '\\';
            want[wn++] = in[k];
        }
        want[wn++] = '"';
        want[wn] = '\0';
        atr_buf_clear(&b);
        assert_int_equal(atr_json_write_string(&b, in, 64), 0);
        assert_string_equal(b.data, want);
    }
    /* At the cap: -1 and the buffer is left as it was. */
    atr_buf_clear(&b);
    b.max = 8;
    assert_int_equal(atr_buf_puts(&b, "ab"), 0);
    assert_int_equal(atr_json_write_string(&b, "0123\n", 5), -1);
    assert_string_equal(b.data, "ab");
    assert_int_equal(atr_json_write_string(&b, "0\n", 2), 0);
    assert_string_equal(b.data, "ab\"0\\n\"");
    /* A long string at exactly the cap, and one byte short of it. */
    char big[3000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = i % 7 == 0 ? '\n' : i % 11 == 0 ? '\x01' : 'x';
    struct atr_buf full = ATR_BUF_INIT;
    assert_int_equal(atr_json_write_string(&full, big, sizeof big), 0);
    for (int slack = 0; slack < 2; slack++) {
        atr_buf_release(&b);
        b.max = full.len - 1 + (size_t)slack;
        int rc = atr_json_write_string(&b, big, sizeof big);
        assert_int_equal(rc, slack ? 0 : -1);
        assert_int_equal(b.len, slack ? full.len : 0);
        if (slack)
            assert_memory_equal(b.data, full.data, full.len);
    }
    atr_buf_release(&full);
    atr_buf_release(&b);
}

static void test_write_numbers(void **state)
{
    struct atr_json *arr = atr_json_new(&arena, ATR_JSON_ARRAY);
    double nums[] = {0.1, 0.1 + 0.2, 1.0 / 3, -0.0, 100.0, 1e15, 1e300, 5e-324, -2.5, NAN,
                     INFINITY, 0.00001234, -123.456, 1e-7, 123456789012.5};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        atr_json_append(&arena, arr, NULL, atr_json_new_num(&arena, nums[i]));
    atr_json_append(&arena, arr, NULL, atr_json_new_i64(&arena, INT64_MIN));
    assert_string_equal(to_json(arr), "[0.1,0.30000000000000004,0.3333333333333333,-0,100,"
                                    "1e+15,1e+300,4.94065645841247e-324,-2.5,null,null,"
                                    "0.00001234,-123.456,1e-07,123456789012.5,"
                                    "-9223372036854775808]");
}

static uint64_t rng_state = 88172645463325252u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Any finite double written and read back is the same double, and the text
 * is never longer than the %.17g form. */
static void test_write_numbers_roundtrip(void **state)
{
    struct atr_buf b = ATR_BUF_INIT;
    for (int i = 0; i < 300000; i++) {
        double v;
        uint64_t r = rng();
        switch (i % 4) {
        case 0:  /* any bit pattern */
            memcpy(&v, &r, sizeof v);
            break;
        case 1:  /* short decimals: scores, log-probabilities */
            v = (double)(int64_t)(r % 20000001 - 10000000) / pow(10, (double)((r >> 32) % 12));
            break;
        case 2:  /* uniform [0, 1) */
            v = (double)(r >> 11) / 9007199254740992.0;
            break;
        default:  /* neighbours of short decimals */
            v = nextafter((double)(r % 100000) / 1000.0, (r & 1) ? INFINITY : -INFINITY);
            break;
        }
        if (!isfinite(v))
            continue;
        atr_buf_clear(&b);
        struct atr_json n = {.type = ATR_JSON_NUMBER, .u.num = v};
        assert_int_equal(atr_json_write_value(&b, &n), 0);
        char *end;
        double back = strtod(b.data, &end);
        if (back != v || *end != '\0' || (signbit(back) != signbit(v)))
            fail_msg("%.17g written as %s", v, b.data);
        char ref[40];
        snprintf(ref, sizeof ref, "%.17g", v);
        assert_true(b.len <= strlen(ref) + 5);  /* fixed point may add "0.0000" */
        struct atr_json *p = parse_ok(b.data);
        assert_true(p->u.num == v);
        atr_arena_clear(&arena);
    }
    atr_buf_release(&b);
}

static void test_write_cap(void **state)
{
    struct atr_json *v = parse_ok("{\"key\": [1, 2, \"a long string value\"]}");
    struct atr_buf b = ATR_BUF_INIT;
    b.max = 20;
    assert_int_equal(atr_buf_puts(&b, "x"), 0);
    assert_int_equal(atr_json_write_value(&b, v), -1);
    assert_string_equal(b.data, "x");
    assert_int_equal(b.len, 1);
    b.max = 0;
    assert_int_equal(atr_json_write_value(&b, v), 0);
    assert_string_equal(b.data, "x{\"key\":[1,2,\"a long string value\"]}");
    atr_buf_release(&b);
}

static void test_lookups(void **state)
{
    struct atr_json *v = parse_ok("{\"s\": \"str\", \"i\": -5, \"d\": 2.5, \"ab\": 1, "
                                  "\"a\": 2, \"o\": {}}");
    size_t len = 0;
    assert_string_equal(atr_json_get_str(v, "s", &len), "str");
    assert_int_equal(len, 3);
    assert_null(atr_json_get_str(v, "i", &len));
    assert_null(atr_json_get_str(v, "missing", NULL));
    int64_t i = 0;
    assert_true(atr_json_get_i64(v, "i", &i));
    assert_int_equal(i, -5);
    assert_false(atr_json_get_i64(v, "d", &i));
    assert_false(atr_json_get_i64(v, "s", &i));
    double d = 0;
    assert_true(atr_json_get_num(v, "d", &d));
    assert_true(d == 2.5);
    assert_true(atr_json_get_num(v, "i", &d));
    assert_true(d == -5.0);
    assert_false(atr_json_get_num(v, "o", &d));
    assert_int_equal(atr_json_get(v, "a")->i, 2);
    assert_int_equal(atr_json_get(v, "ab")->i, 1);
    assert_null(atr_json_get(v, ""));
    assert_null(atr_json_get(atr_json_get(v, "s"), "x"));
    assert_null(atr_json_get(NULL, "x"));
    assert_true(atr_json_is(atr_json_get(v, "o"), ATR_JSON_OBJECT));
    assert_false(atr_json_is(NULL, ATR_JSON_NULL));
    assert_false(atr_json_key_is(v, "s"));
    assert_false(atr_json_key_is(NULL, "s"));
    assert_string_equal(atr_json_type_name(ATR_JSON_NULL), "null");
    assert_string_equal(atr_json_type_name(ATR_JSON_TRUE), "boolean");
    assert_string_equal(atr_json_type_name(ATR_JSON_FALSE), "boolean");
    assert_string_equal(atr_json_type_name(ATR_JSON_NUMBER), "number");
    assert_string_equal(atr_json_type_name(ATR_JSON_STRING), "string");
    assert_string_equal(atr_json_type_name(ATR_JSON_ARRAY), "array");
    assert_string_equal(atr_json_type_name(ATR_JSON_OBJECT), "object");
}

static void test_builders_and_copy(void **state)
{
    struct atr_arena a1 = ATR_ARENA_INIT, a2 = ATR_ARENA_INIT;
    char key[] = "msgs", text[] = "hi\n";
    struct atr_json *root = atr_json_new(&a1, ATR_JSON_OBJECT);
    struct atr_json *msgs = atr_json_new(&a1, ATR_JSON_ARRAY);
    atr_json_append(&a1, root, key, msgs);
    key[0] = 'X';  /* keys and strings are copied */
    atr_json_append(&a1, msgs, "ignored", atr_json_new_str(&a1, text, 3));
    text[0] = 'X';
    atr_json_append(&a1, msgs, NULL, atr_json_new_i64(&a1, 7));
    atr_json_append(&a1, msgs, NULL, atr_json_new(&a1, ATR_JSON_TRUE));
    atr_json_append(&a1, root, "n", atr_json_new_num(&a1, 0.5));
    atr_json_append(&a1, root, "z", atr_json_new(&a1, ATR_JSON_NULL));
    atr_json_append(&a1, root, NULL, atr_json_new_str(&a1, NULL, 0));
    assert_int_equal(msgs->u.kids.count, 3);
    assert_null(msgs->u.kids.first->key);
    assert_int_equal(root->u.kids.count, 4);
    assert_int_equal(msgs->line, 0);
    const char *want = "{\"msgs\":[\"hi\\n\",7,true],\"n\":0.5,\"z\":null,\"\":\"\"}";
    assert_string_equal(to_json(root), want);
    assert_ptr_equal(atr_json_get(root, "msgs"), msgs);

    struct atr_json *parsed = NULL;
    struct atr_json_err err;
    assert_int_equal(atr_json_parse(&a1, "{\"k\": [1.25, \"s\"]}", 18, NULL, &parsed, &err), 0);
    atr_json_append(&a1, root, "p", parsed);
    struct atr_json *copy = atr_json_copy(&a2, root);
    struct atr_json *kcopy = atr_json_copy(&a2, atr_json_get(root, "n"));
    atr_arena_release(&a1);  /* the copies must not point into a1 */
    assert_string_equal(to_json(copy),
                        "{\"msgs\":[\"hi\\n\",7,true],\"n\":0.5,\"z\":null,\"\":\"\","
                        "\"p\":{\"k\":[1.25,\"s\"]}}");
    assert_true(atr_json_key_is(kcopy, "n"));
    assert_null(kcopy->next);
    struct atr_json *p = atr_json_get(copy, "p");
    assert_int_equal(p->u.kids.first->u.kids.first->raw_len, 4);
    assert_memory_equal(p->u.kids.first->u.kids.first->raw, "1.25", 4);
    assert_int_equal(p->u.kids.first->u.kids.count, 2);
    assert_null(atr_json_copy(&a2, NULL));
    atr_arena_release(&a2);
}

/* ---- streaming writer ---- */

static struct atr_buf jw_buf = ATR_BUF_INIT;

static struct atr_jw *jw_start(enum atr_jw_style style)
{
    static struct atr_jw w;
    atr_buf_clear(&jw_buf);
    atr_jw_init(&w, &jw_buf, style);
    return &w;
}

/* Finishes w and expects the buffer to hold want. */
static void jw_expect(struct atr_jw *w, const char *want)
{
    assert_int_equal(atr_jw_finish(w), 0);
    assert_string_equal(jw_buf.data ? jw_buf.data : "", want);
}

/* One document with every kind of value, nested two deep. */
static void jw_sample(struct atr_jw *w)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "s", "a\"b\n");
    atr_jw_kv_int(w, "i", -3);
    atr_jw_kv_uint(w, "u", UINT64_MAX);
    atr_jw_kv_bool(w, "t", true);
    atr_jw_kv_null(w, "n");
    atr_jw_key(w, "a");
    atr_jw_array_begin(w);
    atr_jw_pyfloat(w, 0.5);
    atr_jw_str(w, NULL);
    atr_jw_object_begin(w);
    atr_jw_object_end(w);
    atr_jw_array_begin(w);
    atr_jw_array_end(w);
    atr_jw_array_end(w);
    atr_jw_kv_raw(w, "r", "{\"x\":1}", 7);
    atr_jw_object_end(w);
}

static void test_writer_styles(void **state)
{
    struct atr_jw *w = jw_start(ATR_JW_COMPACT);
    jw_sample(w);
    jw_expect(w, "{\"s\":\"a\\\"b\\n\",\"i\":-3,\"u\":18446744073709551615,\"t\":true,"
                 "\"n\":null,\"a\":[0.5,null,{},[]],\"r\":{\"x\":1}}");
    w = jw_start(ATR_JW_PYTHON);
    jw_sample(w);
    jw_expect(w, "{\"s\": \"a\\\"b\\n\", \"i\": -3, \"u\": 18446744073709551615, \"t\": true, "
                 "\"n\": null, \"a\": [0.5, null, {}, []], \"r\": {\"x\":1}}");
}

static void test_writer_documents(void **state)
{
    /* NDJSON: top-level documents take no separator, newlines between. */
    atr_buf_clear(&jw_buf);
    atr_buf_puts(&jw_buf, "kept ");
    struct atr_jw w;
    atr_jw_init(&w, &jw_buf, ATR_JW_COMPACT);
    atr_jw_int(&w, 1);
    atr_jw_newline(&w);
    atr_jw_array_begin(&w);
    atr_jw_int(&w, 2);
    atr_jw_int(&w, 3);
    atr_jw_array_end(&w);
    atr_jw_newline(&w);
    jw_expect(&w, "kept 1\n[2,3]\n");
    /* Keys are escaped; keyn takes a length. */
    struct atr_jw *p = jw_start(ATR_JW_COMPACT);
    atr_jw_object_begin(p);
    atr_jw_keyn(p, "k\tey!", 4);
    atr_jw_strn(p, "a\0b", 3);
    atr_jw_kv_strn(p, "z", "xyz", 2);
    atr_jw_object_end(p);
    jw_expect(p, "{\"k\\tey\":\"a\\u0000b\",\"z\":\"xy\"}");
}

static void test_writer_misuse(void **state)
{
    struct atr_jw *w = jw_start(ATR_JW_COMPACT);
    atr_jw_key(w, "k");                  /* a key outside an object */
    assert_true(atr_jw_failed(w));
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_object_begin(w);
    atr_jw_int(w, 1);                    /* a value without a key */
    assert_int_equal(atr_jw_finish(w), -1);
    assert_int_equal(jw_buf.len, 0);     /* cut back to where init was */
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_object_begin(w);
    atr_jw_array_end(w);                 /* mismatched end */
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_array_begin(w);               /* left open */
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_object_begin(w);
    atr_jw_key(w, "k");
    atr_jw_key(w, "k2");                 /* two keys in a row */
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_array_begin(w);
    atr_jw_newline(w);                   /* newline inside a container */
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_array_end(w);                 /* end with nothing open */
    assert_int_equal(atr_jw_finish(w), -1);
}

static void test_writer_depth(void **state)
{
    struct atr_jw *w = jw_start(ATR_JW_COMPACT);
    for (int i = 0; i < ATR_JW_MAX_DEPTH; i++)
        atr_jw_array_begin(w);
    assert_false(atr_jw_failed(w));
    for (int i = 0; i < ATR_JW_MAX_DEPTH; i++)
        atr_jw_array_end(w);
    assert_int_equal(atr_jw_finish(w), 0);
    assert_int_equal(jw_buf.len, 2 * ATR_JW_MAX_DEPTH);
    w = jw_start(ATR_JW_COMPACT);
    for (int i = 0; i <= ATR_JW_MAX_DEPTH; i++)
        atr_jw_array_begin(w);
    assert_true(atr_jw_failed(w));
    for (int i = 0; i <= ATR_JW_MAX_DEPTH; i++)
        atr_jw_array_end(w);
    assert_int_equal(atr_jw_finish(w), -1);
    assert_int_equal(jw_buf.len, 0);
}

/* The writer stops at the buffer's cap, stays failed, and cuts back. */
static void test_writer_cap(void **state)
{
    struct atr_buf b = ATR_BUF_INIT;
    b.max = 24;
    atr_buf_puts(&b, "old\n");
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "key", "a long value past the cap");
    assert_true(atr_jw_failed(&w));
    size_t len = b.len;
    atr_jw_kv_int(&w, "k", 1);           /* would fit; must not be written */
    assert_int_equal(b.len, len);
    atr_jw_object_end(&w);
    assert_int_equal(atr_jw_finish(&w), -1);
    assert_string_equal(b.data, "old\n");
    /* Exactly at the cap is fine. */
    atr_jw_init(&w, &b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "key", "0123456789");
    atr_jw_object_end(&w);
    assert_int_equal(atr_jw_finish(&w), 0);
    assert_int_equal(b.len, 24);
    atr_buf_release(&b);
}

static const char *pyfloat(double v)
{
    struct atr_jw *w = jw_start(ATR_JW_PYTHON);
    atr_jw_pyfloat(w, v);
    assert_int_equal(atr_jw_finish(w), 0);
    return jw_buf.data;
}

static void test_writer_pyfloat(void **state)
{
    assert_string_equal(pyfloat(0.0), "0.0");
    assert_string_equal(pyfloat(-0.0), "-0.0");
    assert_string_equal(pyfloat(1.0), "1.0");
    assert_string_equal(pyfloat(-2.0), "-2.0");
    assert_string_equal(pyfloat(0.1), "0.1");
    assert_string_equal(pyfloat(1e-05), "1e-05");
    assert_string_equal(pyfloat(0.0001), "0.0001");
    assert_string_equal(pyfloat(1e+16), "1e+16");
    assert_string_equal(pyfloat(1e16 - 2), "9999999999999998.0");
    assert_string_equal(pyfloat(123456789.0), "123456789.0");
    assert_string_equal(pyfloat(1.0 / 3), "0.3333333333333333");
    assert_string_equal(pyfloat(2.5e-300), "2.5e-300");
    assert_string_equal(pyfloat(1.7976931348623157e308), "1.7976931348623157e+308");
    assert_string_equal(pyfloat(INFINITY), "null");
    assert_string_equal(pyfloat(-INFINITY), "null");
    assert_string_equal(pyfloat(NAN), "null");
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_json_put_pyfloat(&b, 1234.5), 0);
    assert_string_equal(b.data, "1234.5");
    atr_buf_release(&b);
}

static void test_writer_fixed(void **state)
{
    struct atr_jw *w = jw_start(ATR_JW_COMPACT);
    atr_jw_array_begin(w);
    atr_jw_fixed(w, 1.0, 3);
    atr_jw_fixed(w, 2.34567, 1);
    atr_jw_fixed(w, NAN, 3);
    atr_jw_fixed(w, -INFINITY, 3);
    atr_jw_fixed(w, 7.5, 0);
    atr_jw_fixed_trim(w, 2.5, 6);
    atr_jw_fixed_trim(w, 3.0, 6);
    atr_jw_fixed_trim(w, 0.1234567, 6);
    atr_jw_fixed_trim(w, -0.0000001, 6);
    atr_jw_fixed_trim(w, 100.0, 0);      /* no fraction: zeros stay */
    atr_jw_fixed_trim(w, 100.0, 6);
    atr_jw_fixed_trim(w, NAN, 6);
    atr_jw_array_end(w);
    jw_expect(w, "[1.000,2.3,null,null,8,2.5,3,0.123457,0,100,100,null]");
}

/* DOM values: compact as atr_json_write_value; Python style re-spaced. */
static void test_writer_value(void **state)
{
    struct atr_json *v = parse_ok("{\"a\": [1, 2.50, \"x\", {}], \"b\": {\"c\": null}, \"d\": -0}");
    struct atr_jw *w = jw_start(ATR_JW_COMPACT);
    atr_jw_array_begin(w);
    atr_jw_value(w, v);
    atr_jw_value(w, NULL);
    atr_jw_array_end(w);
    jw_expect(w, "[{\"a\":[1,2.5,\"x\",{}],\"b\":{\"c\":null},\"d\":-0},null]");
    w = jw_start(ATR_JW_PYTHON);
    atr_jw_object_begin(w);
    atr_jw_kv_value(w, "v", v);
    atr_jw_object_end(w);
    jw_expect(w, "{\"v\": {\"a\": [1, 2.5, \"x\", {}], \"b\": {\"c\": null}, \"d\": -0}}");
    /* Python style walks the tree, so the depth cap applies. */
    char deep[2 * ATR_JW_MAX_DEPTH + 3];
    memset(deep, '[', ATR_JW_MAX_DEPTH + 1);
    memset(deep + ATR_JW_MAX_DEPTH + 1, ']', ATR_JW_MAX_DEPTH + 1);
    deep[2 * ATR_JW_MAX_DEPTH + 2] = '\0';
    w = jw_start(ATR_JW_PYTHON);
    atr_jw_value(w, parse_ok(deep));
    assert_int_equal(atr_jw_finish(w), -1);
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_value(w, parse_ok(deep));
    jw_expect(w, deep);
}

/* ---- packed integer arrays ------------------------------------------------ */

static const struct atr_json_opts pack_opts = {.pack_key = "ids", .pack_max = 999999};

static struct atr_json *parse_packing(const char *text)
{
    struct atr_json *v = NULL;
    struct atr_json_err err;
    if (parse_opts(text, strlen(text), &pack_opts, &v, &err) != 0)
        fail_msg("parse of %s failed at %u:%u: %s", text, err.line, err.col, err.msg);
    return v;
}

static void want_packed(const struct atr_json *v, const uint64_t *want, size_t n)
{
    assert_non_null(v);
    assert_int_equal(v->type, ATR_JSON_ARRAY);
    assert_true(v->packed);
    assert_null(v->u.kids.first);
    assert_null(v->u.kids.last);
    assert_int_equal(v->u.kids.count, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v->ints[i], want[i]);
}

static void test_packed(void **state)
{
    struct atr_json *v = parse_packing("{\"ids\":[1, 0,23 ,\n 999999],\"x\":[1,2],"
                                       "\"o\":{\"ids\":[7]},\"a\":[{\"ids\":[8,9]}]}");
    struct atr_json *ids = atr_json_get(v, "ids");
    want_packed(ids, (const uint64_t[]){1, 0, 23, 999999}, 4);
    assert_int_equal(ids->line, 1);
    assert_int_equal(ids->col, 8);
    assert_memory_equal(ids->key, "ids", 4);
    assert_ptr_equal(ids->next, atr_json_get(v, "x"));
    assert_false(atr_json_get(v, "x")->packed);  /* another key */
    want_packed(atr_json_get(atr_json_get(v, "o"), "ids"), (const uint64_t[]){7}, 1);
    want_packed(atr_json_get(atr_json_get(v, "a")->u.kids.first, "ids"),
                (const uint64_t[]){8, 9}, 2);
    /* The members after a packed array keep their positions. */
    assert_int_equal(atr_json_get(v, "x")->line, 2);
    assert_int_equal(atr_json_get(v, "x")->col, 14);
    assert_string_equal(to_json(v), "{\"ids\":[1,0,23,999999],\"x\":[1,2],"
                                    "\"o\":{\"ids\":[7]},\"a\":[{\"ids\":[8,9]}]}");
    /* Off by default, and for arrays that are not a member's value. */
    assert_false(atr_json_get(parse_ok("{\"ids\":[1,2]}"), "ids")->packed);
    assert_false(parse_packing("[1,2]")->packed);
    assert_false(parse_packing("[{\"x\":1},[1,2]]")->u.kids.last->packed);
    assert_false(atr_json_get(parse_packing("{\"ids\":[[1,2]]}"), "ids")->u.kids.first->packed);
}

/* A small number costs one 80-byte node, its literal inside it: a dense
 * line's tree is ~40 bytes per `0,` (it was 96 per value). */
static void test_node_cost(void **state)
{
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *v;
    assert_int_equal(atr_json_parse(&a, "[0,1,22,-3]", 11, NULL, &v, NULL), 0);
    assert_int_equal(a.used, 5 * 80);
    assert_string_equal(v->u.kids.first->next->next->raw, "22");
    atr_arena_release(&a);
    (void)state;
}

/* max_values caps the values of a parse, packed ones included, with the
 * error at the first value past it, packed or not. */
static void test_value_budget(void **state)
{
    struct atr_json_opts o = {.max_values = 3};
    struct atr_json *v;
    struct atr_json_err err;
    assert_int_equal(parse_opts("[1,2]", 5, &o, &v, &err), 0);
    parse_fails_n("[1,2,3]", 7, &o, 1, 6, "more than 3 JSON values");
    parse_fails_n("[1,[],\"x\"]", 10, &o, 1, 7, "more than 3 JSON values");
    assert_int_equal(parse_opts("{\"a\":1,\"b\":2}", 13, &o, &v, &err), 0);
    parse_fails_n("{\"a\":1,\"b\":2,\"c\":3}", 19, &o, 1, 18, "more than 3 JSON values");
    assert_int_equal(parse_opts("[1,2,3]", 7, &o, &v, &err), -1);
    assert_int_equal(err.code, ATR_JSON_ETOOMANY);

    struct atr_json_opts po = pack_opts;
    po.max_values = 4;
    assert_int_equal(parse_opts("{\"ids\":[1,2]}", 13, &po, &v, &err), 0);
    assert_true(atr_json_get(v, "ids")->packed);
    parse_fails_n("{\"ids\":[1,2,3]}", 15, &po, 1, 13, "more than 4 JSON values");
    parse_fails_n("{\"ids\":[1,2,-3]}", 16, &po, 1, 13, "more than 4 JSON values");
    po.pack_key = NULL;  /* the same error unpacked */
    parse_fails_n("{\"ids\":[1,2,3]}", 15, &po, 1, 13, "more than 4 JSON values");

    /* 0 is no limit; a syntax error is EINVAL. */
    o.max_values = 0;
    assert_int_equal(parse_opts("[1,2,3,4,5]", 11, &o, &v, &err), 0);
    assert_int_equal(parse_opts("[1,", 3, &o, &v, &err), -1);
    assert_int_equal(err.code, ATR_JSON_EINVAL);
    (void)state;
}

/* Arrays under the key that do not pack read as without packing. */
static void test_packed_fallback(void **state)
{
    static const char *const texts[] = {
        "{\"ids\":[]}", "{\"ids\":[1,-2]}", "{\"ids\":[-0]}", "{\"ids\":[1.5]}",
        "{\"ids\":[1e3]}", "{\"ids\":[1E3]}", "{\"ids\":[1,1000000]}", "{\"ids\":[1,\"a\"]}",
        "{\"ids\":[1,null]}", "{\"ids\":[1234567890123456789]}", "{\"ids\":[2,[1]]}",
        "{\"ids\":5}", "{\"ids\":\"[1]\"}", "{\"ids\" : [ 3 ] , \"ids\":[4]}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        struct atr_json *v = parse_packing(texts[i]);
        struct atr_json *ids = atr_json_get(v, "ids");
        bool packs = i >= sizeof texts / sizeof *texts - 1;
        assert_int_equal(ids->packed, packs);
        const char *plain = to_json(parse_ok(texts[i]));
        assert_string_equal(to_json(v), plain);
    }
}

/* Every error reads the same with packing on: message and position. */
static void test_packed_errors(void **state)
{
    static const char *const texts[] = {
        "{\"ids\":[", "{\"ids\":[1", "{\"ids\":[1,", "{\"ids\":[1,]}", "{\"ids\":[1 2]}",
        "{\"ids\":[01]}", "{\"ids\":[1,\n2,\n x]}", "{\"ids\":[1,\n2]\n", "{\"ids\":[1]]}",
        "{\"ids\":[1,2}", "{\"ids\":[1.]}", "{\"ids\":[1e]}", "{\"ids\":[1,-]}",
        "{\"ids\":[1]\n,\"ids\":[2,\n\"\\x\"]}", "{\"ids\":[1,0x]}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        struct atr_json_err want = {0}, got = {0};
        struct atr_json *v;
        size_t len = strlen(texts[i]);
        assert_int_equal(parse_opts(texts[i], len, NULL, &v, &want), -1);
        assert_int_equal(parse_opts(texts[i], len, &pack_opts, &v, &got), -1);
        assert_null(v);
        if (want.line != got.line || want.col != got.col || strcmp(want.msg, got.msg) != 0)
            fail_msg("%s: packing gives %u:%u \"%s\", want %u:%u \"%s\"", texts[i], got.line,
                     got.col, got.msg, want.line, want.col, want.msg);
    }
    /* The nesting cap counts a packed array. */
    struct atr_json_opts o = pack_opts;
    o.max_depth = 1;
    parse_fails_n("{\"ids\":[1]}", 11, &o, 1, 8, "nesting deeper than 1 levels");
}

/* Long arrays grow the parser's buffer; copies, appends and both writers. */
static void test_packed_use(void **state)
{
    struct atr_buf text = ATR_BUF_INIT;
    atr_buf_puts(&text, "{\"ids\":[");
    for (int i = 0; i < 5000; i++)
        atr_buf_printf(&text, "%s%d", i ? "," : "", i * 7 % 1000);
    atr_buf_puts(&text, "]}");
    struct atr_json *v = parse_packing(text.data);
    struct atr_json *ids = atr_json_get(v, "ids");
    assert_true(ids->packed);
    assert_int_equal(ids->u.kids.count, 5000);
    assert_int_equal(ids->ints[4999], 4999 * 7 % 1000);
    assert_string_equal(to_json(v), text.data);
    atr_buf_release(&text);

    v = parse_packing("{\"ids\":[5,6],\"n\":1}");
    struct atr_json *c = atr_json_copy(&arena, v);
    struct atr_json *cids = atr_json_get(c, "ids");
    assert_true(cids->packed);
    assert_ptr_not_equal(cids->ints, atr_json_get(v, "ids")->ints);
    assert_string_equal(to_json(c), "{\"ids\":[5,6],\"n\":1}");
    atr_json_append(&arena, cids, NULL, atr_json_new_i64(&arena, 7));  /* no effect */
    assert_int_equal(cids->u.kids.count, 2);
    assert_null(cids->u.kids.first);

    struct atr_jw *w = jw_start(ATR_JW_PYTHON);
    atr_jw_value(w, v);
    jw_expect(w, "{\"ids\": [5, 6], \"n\": 1}");
    w = jw_start(ATR_JW_COMPACT);
    atr_jw_value(w, v);
    jw_expect(w, "{\"ids\":[5,6],\"n\":1}");
}

/* atr_buf_put_u64 (the writer's integers and every hash id) against
 * snprintf: each digit count's edges, random 53- and 64-bit values, after
 * every start offset (the fast path stores whole words past the digits)
 * and at a max that leaves exactly, or one byte short of, the room. */
static void check_u64(uint64_t v, size_t pre)
{
    char want[32];
    int n = snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    for (int slack = -1; slack <= 1; slack++) {
        if (slack < 0 && pre + (size_t)n == 1)
            continue;   /* a max of 0 means no limit */
        struct atr_buf b = ATR_BUF_INIT;
        for (size_t i = 0; i < pre; i++)
            assert_int_equal(atr_buf_putc(&b, 'x'), 0);
        b.max = slack ? pre + (size_t)n + (size_t)(slack > 0 ? 40 : -1) : pre + (size_t)n;
        int rc = atr_buf_put_u64(&b, v);
        if (slack < 0) {
            assert_int_equal(rc, -1);
            assert_int_equal(b.len, pre);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(b.len, pre + (size_t)n);
            assert_memory_equal(b.data + pre, want, (size_t)n + 1);
        }
        atr_buf_release(&b);
    }
}

static void test_put_u64(void **state)
{
    (void)state;
    uint64_t p = 1;
    for (int d = 0; d < 20; d++, p *= 10) {
        for (int k = 0; k < 3; k++) {
            check_u64(p + (uint64_t)k, (size_t)d);
            check_u64(p - 1 - (uint64_t)k, (size_t)(d * 7 % 23));
        }
    }
    check_u64(UINT64_MAX, 0);
    check_u64(0, 3);
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        check_u64(i % 2 ? x & ((UINT64_C(1) << 53) - 1) : x >> (i % 64), (size_t)(i % 300));
    }
}

/* Integer literals of every length, ending at the input's end or before
 * more bytes (the fast paths read 8 or 16 bytes at a time), packed or not. */
static void test_int_lengths(void **state)
{
    static const char digits[] = "98765432101234567890123";
    static const char *const tails[] = {"", "]", ",1]", "  ,  2 ]                ", ".5]", "e1]", "x]"};
    for (size_t len = 1; len <= 22; len++) {
        for (size_t t = 0; t < sizeof tails / sizeof *tails; t++) {
            char text[80];
            snprintf(text, sizeof text, "{\"ids\":[%.*s%s", (int)len, digits, tails[t]);
            if (!tails[t][0])
                snprintf(text, sizeof text, "%.*s", (int)len, digits);
            struct atr_json *plain = NULL, *packed = NULL;
            struct atr_json_err e1 = {0}, e2 = {0};
            int rc1 = parse_opts(text, strlen(text), NULL, &plain, &e1);
            int rc2 = parse_opts(text, strlen(text), &pack_opts, &packed, &e2);
            assert_int_equal(rc1, rc2);
            if (rc1 < 0) {
                assert_string_equal(e1.msg, e2.msg);
                assert_int_equal(e1.col, e2.col);
                continue;
            }
            assert_string_equal(to_json(plain), to_json(packed));
            const struct atr_json *n = tails[t][0] ? atr_json_get(plain, "ids")->u.kids.first : plain;
            bool fraction = tails[t][0] == '.' || tails[t][0] == 'e';
            if (len <= 18 && !fraction) {
                assert_true(n->is_int);
                assert_int_equal(n->i, strtoll(text + (tails[t][0] ? 8 : 0), NULL, 10));
            }
            assert_int_equal(n->raw_len, len + (fraction ? 2 : 0));
        }
    }
}

/* put_u64_list writes what a put_u64 / append loop writes, and with a max
 * (the worst case does not fit: the loop itself) returns what it returns
 * and leaves the same bytes. */
static void check_u64_list(const uint64_t *v, size_t n, const char *sep, size_t start,
                           size_t max)
{
    struct atr_buf want = ATR_BUF_INIT, got = ATR_BUF_INIT;
    for (size_t i = 0; i < start; i++) {
        atr_buf_putc(&want, 'x');
        atr_buf_putc(&got, 'x');
    }
    want.max = got.max = max;
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        rc |= (i ? atr_buf_append(&want, sep, strlen(sep)) : 0) | atr_buf_put_u64(&want, v[i]);
    assert_int_equal(atr_buf_put_u64_list(&got, v, n, sep, strlen(sep)), rc);
    assert_int_equal(got.len, want.len);
    if (want.len)
        assert_string_equal(got.data, want.data);
    atr_buf_release(&want);
    atr_buf_release(&got);
}

static void test_put_u64_list(void **state)
{
    (void)state;
    uint64_t v[300];
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15), p = 1;
    for (size_t i = 0; i < 300; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* every digit count's edges, then 53-bit ids and all magnitudes */
        v[i] = i < 60 ? (i % 3 == 0 ? p : i % 3 == 1 ? p - 1 : p + 1)
                      : i % 2 ? x & ((UINT64_C(1) << 53) - 1) : x >> (i % 64);
        if (i < 60 && i % 3 == 2)
            p *= 10;                  /* wraps after the last use: unsigned, defined */
    }
    v[59] = UINT64_MAX;
    for (size_t n = 0; n <= 300; n += n < 20 ? 1 : 37)
        for (size_t start = 0; start < 40; start += 13) {
            check_u64_list(v, n, ",", start, 0);
            check_u64_list(v, n, ", ", start, 0);
            /* max: exact, a byte short, a third of the way */
            struct atr_buf b = ATR_BUF_INIT;
            atr_buf_put_u64_list(&b, v, n, ",", 1);
            size_t full = b.len + start;
            atr_buf_release(&b);
            check_u64_list(v, n, ",", start, full);
            if (full > start + 1) {
                check_u64_list(v, n, ",", start, full - 1);
                check_u64_list(v, n, ", ", start, start + (full - start) / 3);
            }
        }
}

/* Strings long enough for scan_string's 64-byte block path, specials dense
 * and at every offset of a block: decoded as written, and one bad byte
 * (a control character, invalid UTF-8) reported where it is. */
static void test_block_strings(void **state)
{
    (void)state;
    static const char *esc[] = {"\\n", "\\\"", "\\\\", "\\u00e9", "\xc3\xa9", "\xe2\x82\xac",
                                "\xf0\x9f\x98\x80", "\\ud83d\\ude00", "\\/", "\\t"};
    static const char *dec[] = {"\n", "\"", "\\", "\xc3\xa9", "\xc3\xa9", "\xe2\x82\xac",
                                "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", "/", "\t"};
    static const char *bad[] = {"\x01", "\xff", "\x80", "\xc3("};
    static const char *why[] = {"unescaped control character 0x01", "invalid UTF-8 in string",
                                "invalid UTF-8 in string", "invalid UTF-8 in string"};
    char json[2048], want[2048];
    uint32_t x = 7;
    for (int round = 0; round < 3000; round++) {
        size_t jn = 0, wn = 0, target = 130 + (size_t)round % 400;
        json[jn++] = '"';
        while (jn < target) {
            x = x * 1103515245u + 12345u;
            unsigned r = x >> 16;
            if (r % 3) {                           /* a plain run of 0-40 bytes */
                for (unsigned k = r % 41; k; k--)
                    json[jn++] = want[wn++] = (char)('a' + k % 26);
            } else {
                int e = (int)(r / 3 % 10);
                jn += (size_t)sprintf(json + jn, "%s", esc[e]);
                wn += (size_t)sprintf(want + wn, "%s", dec[e]);
            }
        }
        if (round % 4 == 3) {                      /* one bad byte, then more text */
            int b = round / 4 % 4;
            size_t at = jn;
            jn += (size_t)sprintf(json + jn, "%s%s", bad[b], "tail of plain text to go past a block");
            json[jn++] = '"';
            json[jn] = '\0';
            parse_fails(json, 1, (uint32_t)at + 1, why[b]);
            memset(json + jn, ' ', 200);           /* the bad byte inside a block */
            json[jn + 200] = '\0';
            parse_fails(json, 1, (uint32_t)at + 1, why[b]);
            continue;
        }
        json[jn++] = '"';
        json[jn] = '\0';
        want_string(json, want, wn);
        /* Padded, the string's last 128 bytes take the block path too
         * (unpadded they took the 16-byte one): both decode the same. */
        memset(json + jn, ' ', 200);
        json[jn + 200] = '\0';
        want_string(json, want, wn);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_scalars, teardown),
        cmocka_unit_test_teardown(test_nested, teardown),
        cmocka_unit_test_teardown(test_escapes, teardown),
        cmocka_unit_test_teardown(test_long_strings, teardown),
        cmocka_unit_test_teardown(test_huge_strings, teardown),
        cmocka_unit_test_teardown(test_string_errors, teardown),
        cmocka_unit_test_teardown(test_numbers, teardown),
        cmocka_unit_test_teardown(test_number_errors, teardown),
        cmocka_unit_test_teardown(test_errors, teardown),
        cmocka_unit_test_teardown(test_prefixes, teardown),
        cmocka_unit_test_teardown(test_depth, teardown),
        cmocka_unit_test_teardown(test_nonfinite, teardown),
        cmocka_unit_test_teardown(test_roundtrip, teardown),
        cmocka_unit_test_teardown(test_write_string, teardown),
        cmocka_unit_test_teardown(test_write_numbers, teardown),
        cmocka_unit_test_teardown(test_write_numbers_roundtrip, teardown),
        cmocka_unit_test_teardown(test_write_cap, teardown),
        cmocka_unit_test_teardown(test_lookups, teardown),
        cmocka_unit_test_teardown(test_builders_and_copy, teardown),
        cmocka_unit_test_teardown(test_writer_styles, teardown),
        cmocka_unit_test_teardown(test_writer_documents, teardown),
        cmocka_unit_test_teardown(test_writer_misuse, teardown),
        cmocka_unit_test_teardown(test_writer_depth, teardown),
        cmocka_unit_test_teardown(test_writer_cap, teardown),
        cmocka_unit_test_teardown(test_writer_pyfloat, teardown),
        cmocka_unit_test_teardown(test_writer_fixed, teardown),
        cmocka_unit_test_teardown(test_writer_value, teardown),
        cmocka_unit_test_teardown(test_packed, teardown),
        cmocka_unit_test_teardown(test_value_budget, teardown),
        cmocka_unit_test(test_node_cost),
        cmocka_unit_test_teardown(test_packed_fallback, teardown),
        cmocka_unit_test_teardown(test_packed_errors, teardown),
        cmocka_unit_test_teardown(test_packed_use, teardown),
        cmocka_unit_test_teardown(test_int_lengths, teardown),
        cmocka_unit_test(test_put_u64),
        cmocka_unit_test(test_put_u64_list),
        cmocka_unit_test_teardown(test_block_strings, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    atr_arena_release(&arena);
    atr_buf_release(&jw_buf);
    return rc;
}
