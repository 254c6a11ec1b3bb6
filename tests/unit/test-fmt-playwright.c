/* test-fmt-playwright.c - the Playwright trace.zip reader on two real
 * archives (v4, v6), on archives built here with libzip (runner-only,
 * errors, unpaired calls) and on bad archives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "trace/reader.h"

#define DATA ATR_TEST_DATA "/playwright/"

static const char *extra_str(const struct atr_step *s, const char *key)
{
    return atr_json_get_str(s->extra, key, NULL);
}

/* Opens path, sniffing, and reads its one trace into t. */
static void read_one(const char *path, struct atr_trace *t)
{
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(path, NULL, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_string_equal(atr_reader_format(r), "playwright");
    if (atr_reader_next(r, t, &err) != 1)
        fail_msg("%s", err.msg);
    struct atr_trace end = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &end, &err), 0);   /* one trace per archive */
    atr_trace_release(&end);
    atr_reader_close(r);
}

/* v4: library calls from 0-trace.trace; the runner's 1-trace.trace (16
 * steps) is left out. Times checked by hand in SOURCE.txt. */
static void test_trace_137(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DATA "trace-1.37.zip", &t);
    assert_string_equal(t.trace_id, "playwright/trace-1.37");
    assert_string_equal(t.source, "playwright");
    assert_int_equal(t.n_steps, 6);
    static const struct { const char *action, *method; int64_t t_ms, dur_ms; } want[] = {
        {"browserContext.newPage", "newPage", 0, 42},
        {"page.route", "setNetworkInterceptionPatterns", 44, 1},
        {"page.route", "setNetworkInterceptionPatterns", 45, 0},
        {"page.goto", "goto", 48, 16},
        {"route.fulfill", "fulfill", 54, 1},
        {"route.fulfill", "fulfill", 62, 1},
    };
    for (size_t k = 0; k < 6; k++) {
        const struct atr_step *s = &t.steps[k];
        assert_int_equal(s->kind, ATR_STEP_TOOL);
        assert_string_equal(s->tool, "browser");
        assert_string_equal(s->action, want[k].action);
        assert_string_equal(extra_str(s, "method"), want[k].method);
        assert_int_equal(s->t_ms, want[k].t_ms);
        assert_int_equal(s->dur_ms, want[k].dur_ms);
        assert_int_equal(s->exit_code, 0);
        assert_null(s->selector);
    }
    assert_string_equal(t.steps[3].url, "https://playwright.dev/index.html");
    assert_string_equal(atr_json_get_str(t.meta, "browser_name", NULL), "chromium");
    assert_string_equal(atr_json_get_str(t.meta, "platform", NULL), "darwin");
    assert_string_equal(atr_json_get_str(t.meta, "steps_from", NULL), "library");
    int64_t v;
    assert_true(atr_json_get_i64(t.meta, "trace_version", &v));
    assert_int_equal(v, 4);
    atr_trace_release(&t);
}

/* v6: 0-trace.trace (library) + test.trace (runner). */
static void test_trace1_v6(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DATA "test-trace1.zip", &t);
    assert_int_equal(t.n_steps, 2);
    assert_string_equal(t.steps[0].action, "browserContext.newPage");
    assert_int_equal(t.steps[0].dur_ms, 108);          /* 460.389 - 352.26 */
    assert_string_equal(t.steps[1].action, "page.goto");
    assert_string_equal(t.steps[1].url, "https://playwright.dev/");
    assert_int_equal(t.steps[1].t_ms, 111);            /* 463.298 - 352.26 */
    assert_int_equal(t.steps[1].dur_ms, 663);
    int64_t v;
    assert_true(atr_json_get_i64(t.meta, "trace_version", &v));
    assert_int_equal(v, 6);
    atr_trace_release(&t);
}

/* ---- archives built here ---- */

struct member {
    const char *name, *text;
};

/* A zip of the members, malloc'd into *out. */
static size_t make_zip(const struct member *m, size_t n, char **out)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &ze);
    assert_non_null(src);
    zip_source_keep(src);
    zip_t *za = zip_open_from_source(src, ZIP_TRUNCATE, &ze);
    assert_non_null(za);
    for (size_t k = 0; k < n; k++) {
        zip_source_t *s = zip_source_buffer(za, m[k].text, strlen(m[k].text), 0);
        assert_true(zip_file_add(za, m[k].name, s, ZIP_FL_ENC_UTF_8) >= 0);
    }
    assert_int_equal(zip_close(za), 0);
    assert_int_equal(zip_source_open(src), 0);
    assert_int_equal(zip_source_seek(src, 0, SEEK_END), 0);
    zip_int64_t len = zip_source_tell(src);
    assert_int_equal(zip_source_seek(src, 0, SEEK_SET), 0);
    *out = malloc((size_t)len + 1);
    assert_int_equal(zip_source_read(src, *out, (zip_uint64_t)len), len);
    zip_source_close(src);
    zip_source_free(src);
    zip_error_fini(&ze);
    return (size_t)len;
}

/* Reads data (a zip) with the playwright reader: the result of the first
 * next(), the trace in t, the message in err. */
static int read_mem(const char *data, size_t len, size_t max_line, struct atr_trace *t,
                    struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(data, len, "p.zip");
    struct atr_read_opts opts = {.max_line = max_line, .keep_content = true};
    struct atr_reader *r = atr_reader_open_input(in, "playwright", &opts, err);
    assert_non_null(r);
    int rc = atr_reader_next(r, t, err);
    atr_reader_close(r);
    return rc;
}

static int read_members(const struct member *m, size_t n, size_t max_line,
                        struct atr_trace *t, struct atr_error *err)
{
    char *zip;
    size_t len = make_zip(m, n, &zip);
    int rc = read_mem(zip, len, max_line, t, err);
    free(zip);
    return rc;
}

#define OPTIONS7(origin) \
    "{\"version\":7,\"type\":\"context-options\",\"origin\":\"" origin "\"," \
    "\"browserName\":\"firefox\",\"platform\":\"linux\",\"wallTime\":1,\"monotonicTime\":5}\n"

/* Sorting by start, errors, a call cut short, an after without before,
 * selectors, and a v7 runner member that is ignored. */
static void test_library_calls(void **state)
{
    const struct member m[] = {
        {"trace.trace", OPTIONS7("library")
         "{\"type\":\"before\",\"callId\":\"call@2\",\"startTime\":100.4,\"apiName\":\"locator.click\","
         "\"class\":\"Frame\",\"method\":\"click\",\"params\":{\"selector\":\"#submit\",\"strict\":true}}\n"
         "{\"type\":\"before\",\"callId\":\"call@1\",\"startTime\":50,\"apiName\":\"page.goto\","
         "\"class\":\"Frame\",\"method\":\"goto\",\"params\":{\"url\":\"http://x/\"}}\n"
         "\r\n"
         "{\"type\":\"after\",\"callId\":\"call@1\",\"endTime\":90.6}\n"
         "{\"type\":\"after\",\"callId\":\"call@2\",\"endTime\":130,"
         "\"error\":{\"error\":{\"message\":\"Timeout 30000ms exceeded\",\"name\":\"TimeoutError\"}}}\n"
         "{\"type\":\"after\",\"callId\":\"call@0\",\"endTime\":1}\n"
         "{\"type\":\"log\",\"callId\":\"call@3\",\"time\":140,\"message\":\"x\"}\n"
         "{\"type\":\"before\",\"callId\":\"call@3\",\"startTime\":140,\"title\":\"Fill \\\"a\\\"\","
         "\"class\":\"Frame\",\"method\":\"fill\",\"params\":{\"selector\":\"input\",\"value\":\"a\"}}\n"},
        {"test.trace", OPTIONS7("testRunner")
         "{\"type\":\"before\",\"callId\":\"pw:api@1\",\"startTime\":1,\"apiName\":\"page.goto\","
         "\"class\":\"Test\",\"method\":\"step\",\"params\":{}}\n"},
    };
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    if (read_members(m, 2, 0, &t, &err) != 1)
        fail_msg("%s", err.msg);
    assert_int_equal(t.n_steps, 3);
    assert_string_equal(t.steps[0].action, "page.goto");
    assert_string_equal(t.steps[0].url, "http://x/");
    assert_int_equal(t.steps[0].t_ms, 0);
    assert_int_equal(t.steps[0].dur_ms, 41);            /* 40.6 rounded */
    assert_int_equal(t.steps[0].exit_code, 0);
    assert_string_equal(t.steps[1].action, "locator.click");
    assert_string_equal(t.steps[1].selector, "#submit");
    assert_int_equal(t.steps[1].t_ms, 50);              /* 50.4 rounded */
    assert_int_equal(t.steps[1].dur_ms, 30);
    assert_int_equal(t.steps[1].exit_code, 1);          /* the error */
    struct atr_json *params = atr_json_get(t.steps[1].extra, "params");   /* keep_content */
    assert_string_equal(atr_json_get_str(params, "selector", NULL), "#submit");
    assert_string_equal(t.steps[2].action, "Fill \"a\"");   /* v8 "title" */
    assert_true(t.steps[2].dur_ms == ATR_UNSET);        /* no after event */
    assert_true(t.steps[2].exit_code == ATR_UNSET);
    assert_string_equal(atr_json_get_str(t.meta, "browser_name", NULL), "firefox");
    assert_string_equal(atr_json_get_str(t.meta, "steps_from", NULL), "library");
    atr_trace_release(&t);
}

/* No library call: the runner's steps are the trace. */
static void test_runner_only(void **state)
{
    const struct member m[] = {
        {"resources/x.txt", "hello"},
        {"0-trace.trace", "{\"version\":5,\"type\":\"context-options\",\"browserName\":\"webkit\"}\n"},
        {"test.trace",
         "{\"type\":\"before\",\"callId\":\"hook@1\",\"startTime\":10,\"apiName\":\"Before Hooks\","
         "\"class\":\"Test\",\"method\":\"step\",\"params\":{}}\n"
         "{\"type\":\"before\",\"callId\":\"pw:api@2\",\"parentId\":\"hook@1\",\"startTime\":12,"
         "\"apiName\":\"page.click\",\"class\":\"Test\",\"method\":\"step\","
         "\"params\":{\"selector\":\"text=Go\"}}\n"
         "{\"type\":\"after\",\"callId\":\"pw:api@2\",\"endTime\":20}\n"
         "{\"type\":\"after\",\"callId\":\"hook@1\",\"endTime\":30,\"error\":null}\n"},
    };
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    if (read_members(m, 3, 0, &t, &err) != 1)
        fail_msg("%s", err.msg);
    assert_int_equal(t.n_steps, 2);
    assert_string_equal(t.steps[0].action, "Before Hooks");
    assert_int_equal(t.steps[0].dur_ms, 20);
    assert_int_equal(t.steps[0].exit_code, 0);          /* "error": null is no error */
    assert_string_equal(t.steps[1].action, "page.click");
    assert_string_equal(t.steps[1].selector, "text=Go");
    assert_string_equal(extra_str(&t.steps[1], "parent_id"), "hook@1");
    assert_int_equal(t.steps[1].t_ms, 2);
    assert_string_equal(atr_json_get_str(t.meta, "steps_from", NULL), "test-runner");
    assert_string_equal(atr_json_get_str(t.meta, "browser_name", NULL), "webkit");
    atr_trace_release(&t);
}

/* ---- bad archives ---- */

static void expect_members_error(const struct member *m, size_t n, size_t max_line,
                                 const char *msg)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_members(m, n, max_line, &t, &err), -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
    atr_trace_release(&t);
}

static void expect_mem_error(const char *data, size_t len, size_t max_line, const char *prefix)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_mem(data, len, max_line, &t, &err), -1);
    if (strncmp(err.msg, prefix, strlen(prefix)) != 0)
        fail_msg("got \"%s\", wanted \"%s...\"", err.msg, prefix);
    atr_trace_release(&t);
}

static void test_bad_members(void **state)
{
    const struct member no_trace[] = {{"trace.network", "{}\n"}};
    expect_members_error(no_trace, 1, 0, "p.zip: expected a playwright *.trace member in the archive");
    const struct member bad_json[] = {{"0-trace.trace", "{\"type\":\"log\"}\n{\"type\": \"before\",}\n"}};
    expect_members_error(bad_json, 1, 0, "p.zip: 0-trace.trace:2:19: expected string key "
                         "after ',', found '}'");
    const struct member not_obj[] = {{"a/0-trace.trace", "\n\n[1]\n"}};
    expect_members_error(not_obj, 1, 0, "p.zip: a/0-trace.trace:3:1: expected an event object, got array");
    const struct member no_type[] = {{"0-trace.trace", "{\"type\": 4}\n"}};
    expect_members_error(no_type, 1, 0, "p.zip: 0-trace.trace:1:10: expected \"type\" string");
    const struct member no_id[] = {{"0-trace.trace", "{\"type\":\"before\",\"startTime\":1}\n"}};
    expect_members_error(no_id, 1, 0, "p.zip: 0-trace.trace:1:1: expected \"callId\" string");
    const struct member bad_time[] = {
        {"0-trace.trace", "{\"type\":\"before\",\"callId\":\"c\",\"startTime\":\"1\"}\n"}};
    expect_members_error(bad_time, 1, 0, "p.zip: 0-trace.trace:1:43: expected \"startTime\" "
                         "to be a non-negative number of ms");
    const struct member bad_end[] = {
        {"0-trace.trace", "{\"type\":\"after\",\"callId\":\"c\",\"endTime\":-1}\n"}};
    expect_members_error(bad_end, 1, 0, "p.zip: 0-trace.trace:1:40: expected \"endTime\" "
                         "to be a non-negative number of ms");
}

/* A member that inflates past the cap stops with an error (a zip bomb). */
static void test_bomb(void **state)
{
    size_t big = 3 << 20;
    char *text = malloc(big + 1);
    memset(text, '\n', big);
    text[big] = '\0';
    const struct member m[] = {{"0-trace.trace", text}};
    expect_members_error(m, 1, 1 << 20, "p.zip: 0-trace.trace: expected at most 1048576 "
                         "uncompressed bytes in all members");
    free(text);
}

static void test_bad_archives(void **state)
{
    expect_mem_error("", 0, 0, "p.zip: expected a zip archive (playwright trace.zip), got empty input");
    expect_mem_error("hello world\n", 12, 0, "p.zip: expected a zip archive (playwright trace.zip)");
    /* a real archive cut in half: its central directory is gone */
    FILE *f = fopen(DATA "trace-1.37.zip", "rb");
    assert_non_null(f);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    expect_mem_error(buf, n / 2, 0, "p.zip: expected a ");
    expect_mem_error(buf, n, 4096, "p.zip: input larger than 4096 bytes");
    /* a flipped byte inside compressed data: CRC or inflate error, never a crash */
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    for (size_t k = 100; k < n; k += 97) {
        buf[k] ^= 0x55;
        (void)read_mem(buf, n, 0, &t, &err);
        buf[k] ^= 0x55;
    }
    atr_trace_release(&t);
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("playwright");
    FILE *fp = fopen(DATA "test-trace1.zip", "rb");
    assert_non_null(fp);
    char head[4096];
    size_t n = fread(head, 1, sizeof head, fp);
    fclose(fp);
    assert_true(f->sniff(head, n, "test-trace1.zip") >= 90);
    assert_int_equal(f->sniff("PK", 2, "x.zip"), 0);
    assert_int_equal(f->sniff("{\"type\":\"before\"}", 17, "x.trace"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_137),
        cmocka_unit_test(test_trace1_v6),
        cmocka_unit_test(test_library_calls),
        cmocka_unit_test(test_runner_only),
        cmocka_unit_test(test_bad_members),
        cmocka_unit_test(test_bomb),
        cmocka_unit_test(test_bad_archives),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
