/* test-fmt-azure.c - the Azure LLM inference CSV reader on the real code
 * trace (CRLF, no final newline) and on bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "trace/reader.h"

#define SAMPLE ATR_TEST_DATA "/azure/AzureLLMInferenceTrace_code.csv"
#define HEADER "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"

/* Checks the rows verified by hand in tests/data/azure/SOURCE.txt. */
static void check_row(const struct atr_trace *t, size_t n)
{
    static const struct { size_t n; int64_t start, in, out; } rows[] = {
        {1, 0, 4808, 10}, {3, 98, 110, 27}, {100, 192162, 523, 9}, {8819, 3435948, 549, 173}};
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        if (rows[k].n != n)
            continue;
        assert_int_equal(t->start_ms, rows[k].start);
        assert_int_equal(t->steps[0].input_tokens, rows[k].in);
        assert_int_equal(t->steps[0].output_tokens, rows[k].out);
    }
}

static void test_real_sample(void **state)
{
    struct atr_error err;
    struct atr_read_opts opts = {.block_size = 32};
    struct atr_reader *r = atr_reader_open(SAMPLE, NULL, &opts, &err);
    assert_non_null(r);
    assert_string_equal(atr_reader_format(r), "azure");
    struct atr_trace t = ATR_TRACE_INIT;
    size_t n = 0;
    int64_t last = 0;
    char last_id[64] = "";
    int rc;
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        n++;
        assert_int_equal(t.n_steps, 1);
        assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
        assert_int_equal(t.steps[0].n_hash_ids, 0);   /* no prefix information */
        assert_int_equal(t.steps[0].t_ms, 0);
        assert_int_equal(t.block_size, 32);
        assert_true(t.start_ms >= last);              /* rows are time-ordered */
        last = t.start_ms;
        if (n == 1)
            assert_string_equal(t.trace_id, "azure/AzureLLMInferenceTrace_code/2");
        check_row(&t, n);
        snprintf(last_id, sizeof last_id, "%s", t.trace_id);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 8819);
    assert_string_equal(last_id, "azure/AzureLLMInferenceTrace_code/8820");
    atr_trace_release(&t);
    atr_reader_close(r);
}

static int run_text(const char *text, const char *format, struct atr_error *err, int *ntraces,
                    int64_t *last_start)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "a.csv");
    struct atr_reader *r = atr_reader_open_input(in, format, NULL, err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    *ntraces = 0;
    while ((rc = atr_reader_next(r, &t, err)) == 1) {
        (*ntraces)++;
        *last_start = t.start_ms;
    }
    atr_trace_release(&t);
    atr_reader_close(r);
    return rc;
}

static void expect_error(const char *text, const char *msg)
{
    struct atr_error err;
    int n;
    int64_t last;
    assert_int_equal(run_text(text, "azure", &err, &n, &last), -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
}

static void test_timestamps(void **state)
{
    struct atr_error err;
    int n;
    int64_t last = -1;
    /* across midnight, a month end and a leap day, with LF and few digits */
    const char *text = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                       "2024-02-28 23:59:59.9996,1,1\n"
                       "2024-03-01 00:00:00.5,2,2\n";
    assert_int_equal(run_text(text, NULL, &err, &n, &last), 0);
    assert_int_equal(n, 2);
    assert_int_equal(last, 86400000 + 500);   /* 0.4 ms + Feb 29 + 500 ms, rounded */
    assert_int_equal(run_text(HEADER, "azure", &err, &n, &last), 0);
    assert_int_equal(n, 0);                       /* header only: no requests */
}

static void test_bad_inputs(void **state)
{
    expect_error("", "a.csv:1:1: expected header \"TIMESTAMP,ContextTokens,GeneratedTokens\", "
                     "got empty input");
    expect_error("TIMESTAMP,Context,GeneratedTokens\r\n",
                 "a.csv:1:1: expected header \"TIMESTAMP,ContextTokens,GeneratedTokens\"");
    expect_error(HEADER "2023-11-16 18:17:03.9799600,4808\r\n",
                 "a.csv:2:33: expected 3 columns, got 2");
    expect_error(HEADER "2023-11-16 18:17:03.9799600,4808,10,7\r\n",
                 "a.csv:2:37: expected 3 columns, got more");
    expect_error(HEADER "2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.1,abc,10",
                 "a.csv:3:23: expected ContextTokens as a non-negative integer");
    expect_error(HEADER "2023-11-16 18:17:03.9799600,4808,-10\r\n",
                 "a.csv:2:34: expected GeneratedTokens as a non-negative integer");
    expect_error(HEADER "2023-11-16 18:17:03.9799600,99999999999999999999,1\r\n",
                 "a.csv:2:29: expected ContextTokens as a non-negative integer");
    expect_error(HEADER "2023-02-30 18:17:03.9799600,1,1\r\n",
                 "a.csv:2:1: expected TIMESTAMP as \"YYYY-MM-DD HH:MM:SS.fffffff\"");
    expect_error(HEADER "1700000000,1,1\r\n",
                 "a.csv:2:1: expected TIMESTAMP as \"YYYY-MM-DD HH:MM:SS.fffffff\"");
    expect_error(HEADER "2023-11-16 18:17:03.5,1,1\r\n2023-11-16 18:17:03.4,1,1\r\n",
                 "a.csv:3:1: expected TIMESTAMP not before the first row's");
    expect_error(HEADER "\"2023-11-16 18:17:03.5,1,1\r\n",
                 "a.csv:2:1: expected a well-formed quoted field");
    expect_error("\x01\x02\xff\xfe\n", "a.csv:1:1: expected header "
                 "\"TIMESTAMP,ContextTokens,GeneratedTokens\"");
}

static void test_quoted_fields(void **state)
{
    struct atr_error err;
    int n;
    int64_t last;
    const char *text = "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                       "\"2023-11-16 18:17:03.9799600\",\"12\",3\r\n";
    assert_int_equal(run_text(text, NULL, &err, &n, &last), 0);
    assert_int_equal(n, 1);
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("azure");
    assert_int_equal(f->sniff(HEADER, strlen(HEADER), "<stdin>"), 100);
    const char *b = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
    assert_int_equal(f->sniff(b, strlen(b), "x.csv"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_sample),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
