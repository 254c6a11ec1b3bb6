/* test-parquet.c - which paths atr_input_open takes as Parquet (the rows'
 * JSON lines are tested end to end in tests/cli/test-parquet.sh). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/input.h"
#include "util/parquet.h"

static char dir[64];

static void put(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool wanted(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "%s%s%s", dir, *name ? "/" : "", name);
    return atr_parquet_wanted(path);
}

static void test_wanted(void **state)
{
    (void)state;
    put("rows.jsonl", "{\"a\":1}\n");
    put("magic.bin", "PAR1 and more");
    put("named.parquet", "{\"a\":1}\n");
    assert_false(wanted("rows.jsonl"));
    assert_true(wanted("magic.bin"));        /* the magic, whatever the name */
    assert_true(wanted("named.parquet"));    /* fails as Parquet, not as "unrecognised" */
    assert_true(wanted(""));                 /* a folder */
    assert_true(wanted("none-*.parquet"));   /* a glob */
    assert_false(wanted("missing.jsonl"));   /* "No such file", as before */
    assert_false(atr_parquet_wanted("-"));
}

/* A .parquet name without the magic, opened: one error naming the file. */
static void test_not_parquet(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/named.parquet", dir);
    struct atr_error err;
    assert_null(atr_input_open(path, &err));
    assert_non_null(strstr(err.msg, "named.parquet: "));
    assert_true(strstr(err.msg, "not a Parquet file") || strstr(err.msg, "needs DuckDB"));
}

/* Parquet bytes on a stream: DuckDB needs to seek. */
static void test_stream(void **state)
{
    (void)state;
    static const char bytes[] = "PAR1\x15\x04";
    struct atr_input *in = atr_input_open_mem(bytes, sizeof bytes - 1, "<stdin>");
    struct atr_error err;
    const char *p;
    assert_int_equal(atr_input_peek(in, &p, 4, &err), -1);
    assert_non_null(strstr(err.msg, "<stdin>: Parquet needs a file"));
    atr_input_close(in);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%.40s/pqXXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wanted),
        cmocka_unit_test(test_not_parquet),
        cmocka_unit_test(test_stream),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    static const char *const names[] = {"rows.jsonl", "magic.bin", "named.parquet"};
    for (size_t i = 0; i < 3; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}
