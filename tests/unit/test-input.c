/* test-input.c - byte sources: plain/gzip/zstd, lines, caps, array splitting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "util/input.h"
#include "util/output.h"

static void read_lines(struct atr_input *in, const char *expect[], size_t n)
{
    struct atr_error err;
    const char *line;
    size_t len;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(atr_input_getline(in, &line, &len, 1 << 20, &err), 1);
        assert_int_equal(len, strlen(expect[i]));
        assert_memory_equal(line, expect[i], len);
    }
    assert_int_equal(atr_input_getline(in, &line, &len, 1 << 20, &err), 0);
}

static void test_lines_crlf_no_final_newline(void **state)
{
    (void)state;
    const char text[] = "a,b\r\n\r\nlast";
    struct atr_input *in = atr_input_open_mem(text, sizeof text - 1, "m");
    const char *expect[] = {"a,b", "", "last"};
    read_lines(in, expect, 3);
    assert_int_equal(atr_input_lineno(in), 3);
    assert_true(atr_input_unterminated(in));     /* "last" had no newline */
    atr_input_close(in);
}

/* Only a last line that ends the input without its newline is unterminated. */
static void test_unterminated(void **state)
{
    (void)state;
    const char text[] = "a\nb\n";
    struct atr_input *in = atr_input_open_mem(text, sizeof text - 1, "m");
    struct atr_error err;
    const char *line;
    size_t len;
    assert_int_equal(atr_input_getline(in, &line, &len, 64, &err), 1);
    assert_false(atr_input_unterminated(in));
    assert_int_equal(atr_input_getline(in, &line, &len, 64, &err), 1);
    assert_false(atr_input_unterminated(in));
    assert_int_equal(atr_input_getline(in, &line, &len, 64, &err), 0);
    atr_input_close(in);
}

static void test_line_cap(void **state)
{
    (void)state;
    const char text[] = "short\nthis line is too long\n";
    struct atr_input *in = atr_input_open_mem(text, sizeof text - 1, "m.ndjson");
    struct atr_error err;
    const char *line;
    size_t len;
    assert_int_equal(atr_input_getline(in, &line, &len, 8, &err), 1);
    assert_int_equal(atr_input_getline(in, &line, &len, 8, &err), -1);
    assert_string_equal(err.msg, "m.ndjson:2: line longer than 8 bytes");
    atr_input_close(in);
}

/* No cap (SIZE_MAX): a line longer than the read buffer is read whole
 * (max + 1 wrapped to 0 once, and every such line failed). */
static void test_line_no_cap(void **state)
{
    (void)state;
    size_t n = 3 << 20;   /* past the 1 MiB first read */
    char *text = malloc(n + 1);
    assert_non_null(text);
    memset(text, 'x', n);
    text[n] = '\n';
    char path[] = "/tmp/atr-input-nocap-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n + 1), (ssize_t)(n + 1));
    close(fd);
    struct atr_error err;
    struct atr_input *in = atr_input_open(path, &err);
    assert_non_null(in);
    const char *line;
    size_t len;
    assert_int_equal(atr_input_getline(in, &line, &len, SIZE_MAX, &err), 1);
    assert_int_equal(len, n);
    atr_input_close(in);
    unlink(path);
    free(text);
}

/* Compresses text with gzip (two concatenated members) or zstd. */
static size_t compress_gzip(const char *text, size_t n, unsigned char *out, size_t cap)
{
    size_t total = 0;
    for (int member = 0; member < 2; member++) {
        size_t half = member ? n - n / 2 : n / 2;
        const char *p = member ? text + n / 2 : text;
        z_stream z = {0};
        assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = (Bytef *)p;
        z.avail_in = (uInt)half;
        z.next_out = out + total;
        z.avail_out = (uInt)(cap - total);
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        total += z.total_out;
        deflateEnd(&z);
    }
    return total;
}

static char *big_text(size_t lines, size_t *n)
{
    char *text = malloc(lines * 32);
    size_t len = 0;
    for (size_t i = 0; i < lines; i++)
        len += (size_t)sprintf(text + len, "line %zu of the input\n", i);
    *n = len;
    return text;
}

static void check_all_lines(struct atr_input *in, size_t lines)
{
    struct atr_error err;
    const char *line;
    size_t len;
    char want[64];
    for (size_t i = 0; i < lines; i++) {
        assert_int_equal(atr_input_getline(in, &line, &len, 1 << 20, &err), 1);
        snprintf(want, sizeof want, "line %zu of the input", i);
        assert_string_equal(line, want);
    }
    assert_int_equal(atr_input_getline(in, &line, &len, 1 << 20, &err), 0);
}

static void test_gzip_members(void **state)
{
    (void)state;
    size_t n, lines = 200000;
    char *text = big_text(lines, &n);
    size_t cap = n + 1024;
    unsigned char *gz = malloc(cap);
    size_t gzlen = compress_gzip(text, n, gz, cap);
    struct atr_input *in = atr_input_open_mem(gz, gzlen, "x.gz");
    check_all_lines(in, lines);
    assert_string_equal(atr_input_compression(in), "gzip");
    atr_input_close(in);
    free(gz);
    free(text);
}

static void test_zstd(void **state)
{
    (void)state;
    size_t n, lines = 200000;
    char *text = big_text(lines, &n);
    size_t cap = ZSTD_compressBound(n);
    unsigned char *z = malloc(cap);
    size_t zlen = ZSTD_compress(z, cap, text, n, 3);
    assert_false(ZSTD_isError(zlen));
    struct atr_input *in = atr_input_open_mem(z, zlen, "x.zst");
    check_all_lines(in, lines);
    assert_string_equal(atr_input_compression(in), "zstd");
    atr_input_close(in);
    free(z);
    free(text);
}

static void test_corrupt_gzip(void **state)
{
    (void)state;
    unsigned char junk[64] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff};
    struct atr_input *in = atr_input_open_mem(junk, sizeof junk, "bad.gz");
    struct atr_error err;
    const char *line;
    size_t len;
    assert_int_equal(atr_input_getline(in, &line, &len, 1 << 20, &err), -1);
    assert_non_null(strstr(err.msg, "bad.gz: corrupt gzip data"));
    atr_input_close(in);
}

/* A gzip or zstd stream that stops inside its member or frame is cut: an
 * error naming the truncation, not a silently shorter input. */
static void test_truncated_stream(void **state)
{
    (void)state;
    size_t n, lines = 20000;
    char *text = big_text(lines, &n);
    size_t cap = ZSTD_compressBound(n) + 1024;
    unsigned char *z = malloc(cap);
    size_t lens[2] = {compress_gzip(text, n, z, cap), 0};
    const char *names[2] = {"cut.gz", "cut.zst"}, *msgs[2] = {"cut.gz: truncated gzip data",
                                                              "cut.zst: truncated zstd data"};
    for (int k = 0; k < 2; k++) {
        if (k == 1)
            lens[1] = ZSTD_compress(z, cap, text, n, 3);
        struct atr_input *in = atr_input_open_mem(z, lens[k] / 2, names[k]);
        struct atr_error err;
        const char *line;
        size_t len;
        int rc;
        while ((rc = atr_input_getline(in, &line, &len, 1 << 20, &err)) == 1)
            ;
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, msgs[k]));
        atr_input_close(in);
    }
    free(z);
    free(text);
}

static void test_array_split(void **state)
{
    (void)state;
    const char text[] = " [ {\"a\": \"x,]}\\\"\"},\n  [1, [2]] ,\n 3 ]\n";
    struct atr_input *in = atr_input_open_mem(text, sizeof text - 1, "arr.json");
    struct atr_error err;
    const char *e;
    size_t len;
    unsigned long line, col;
    assert_int_equal(atr_input_array_begin(in, &err), 0);
    assert_int_equal(atr_input_array_next(in, &e, &len, &line, &col, 1 << 20, &err), 1);
    assert_int_equal(len, strlen("{\"a\": \"x,]}\\\"\"}"));
    assert_int_equal(line, 1);
    assert_int_equal(col, 4);
    assert_int_equal(atr_input_array_next(in, &e, &len, &line, &col, 1 << 20, &err), 1);
    assert_memory_equal(e, "[1, [2]]", 8);
    assert_int_equal(line, 2);
    assert_int_equal(col, 3);
    assert_int_equal(atr_input_array_next(in, &e, &len, &line, &col, 1 << 20, &err), 1);
    assert_int_equal(line, 3);
    assert_int_equal(col, 2);
    assert_int_equal(atr_input_array_next(in, &e, &len, &line, &col, 1 << 20, &err), 0);
    atr_input_close(in);
}

static void expect_array_error(const char *text, const char *msg)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "a.json");
    struct atr_error err;
    const char *e;
    size_t len;
    unsigned long line, col;
    int rc = atr_input_array_begin(in, &err);
    while (rc == 0 && (rc = atr_input_array_next(in, &e, &len, &line, &col, 64, &err)) == 1)
        rc = 0;
    assert_int_equal(rc, -1);
    assert_string_equal(err.msg, msg);
    atr_input_close(in);
}

static void test_array_errors(void **state)
{
    (void)state;
    expect_array_error("", "a.json:1: expected a JSON array, found end of input");
    expect_array_error("{}", "a.json:1:1: expected '[' starting a JSON array");
    expect_array_error("[1,\n2", "a.json:2: unterminated array element at end of input");
    expect_array_error("[1}", "a.json:1:3: expected ',' or ']' after array element");
    expect_array_error("[1] x", "a.json:1:5: unexpected data after the top-level array");
    expect_array_error("[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]",
                       "a.json:1: array element longer than 64 bytes");
}

static void test_atomic_output(void **state)
{
    (void)state;
    char dir[] = "/tmp/atr-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.ndjson", dir);
    struct atr_error err;
    struct atr_output *o = atr_output_open(path, &err);
    assert_non_null(o);
    assert_int_equal(atr_output_write(o, "abc", 3, &err), 0);
    assert_int_equal(access(path, F_OK), -1);      /* nothing visible before commit */
    atr_output_abort(o);
    assert_int_equal(access(path, F_OK), -1);
    o = atr_output_open(path, &err);
    assert_int_equal(atr_output_write(o, "abc", 3, &err), 0);
    assert_int_equal(atr_output_commit(o, &err), 0);
    FILE *f = fopen(path, "r");
    char got[8] = {0};
    assert_int_equal(fread(got, 1, sizeof got, f), 3);
    fclose(f);
    assert_string_equal(got, "abc");
    unlink(path);
    rmdir(dir);
    assert_null(atr_output_open("/nonexistent-dir/x", &err));
    assert_string_equal(err.msg, "/nonexistent-dir/x: cannot write: directory /nonexistent-dir: "
                        "No such file or directory");
    /* /proc is there but makes no files: said so, not "No such file" (issue 26) */
    assert_null(atr_output_open("/proc/x", &err));
    assert_non_null(strstr(err.msg, "/proc/x: cannot write: /proc takes no new files"));
}

/* Several outputs as one: all committed, or (a write fails at the flush)
 * none of them and no temporary. /dev/full fails every write. */
static void test_output_commit_all(void **state)
{
    (void)state;
    char dir[] = "/tmp/atr-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.json", dir);
    struct atr_error err;
    struct atr_output *os[3] = { atr_output_open(a, &err), NULL, atr_output_open(b, &err) };
    assert_int_equal(atr_output_write(os[0], "a", 1, &err), 0);
    assert_int_equal(atr_output_write(os[2], "b", 1, &err), 0);
    assert_int_equal(atr_output_commit_all(os, 3, &err), 0);
    assert_null(os[0]);
    assert_int_equal(access(a, F_OK), 0);
    assert_int_equal(access(b, F_OK), 0);
    unlink(a);
    unlink(b);
    struct atr_output *bad[2] = { atr_output_open(a, &err), atr_output_open("/dev/full", &err) };
    assert_non_null(bad[1]);
    assert_int_equal(atr_output_write(bad[0], "a", 1, &err), 0);
    assert_int_equal(atr_output_write(bad[1], "b", 1, &err), 0);
    assert_int_equal(atr_output_commit_all(bad, 2, &err), -1);
    assert_non_null(strstr(err.msg, "/dev/full: "));
    assert_null(bad[0]);
    assert_int_equal(rmdir(dir), 0);                /* neither a.json nor a temporary */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_crlf_no_final_newline),
        cmocka_unit_test(test_line_cap),
        cmocka_unit_test(test_line_no_cap),
        cmocka_unit_test(test_gzip_members),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_corrupt_gzip),
        cmocka_unit_test(test_truncated_stream),
        cmocka_unit_test(test_unterminated),
        cmocka_unit_test(test_array_split),
        cmocka_unit_test(test_array_errors),
        cmocka_unit_test(test_atomic_output),
        cmocka_unit_test(test_output_commit_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
