/* test-fmt-burstgpt.c - the BurstGPT CSV reader on the hand-written sample
 * (see tests/data/burstgpt/SOURCE.txt) and on bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "trace/reader.h"

#define SAMPLE ATR_TEST_DATA "/burstgpt/burstgpt_sample.csv"
#define HEADER "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

static const char *meta_str(const struct atr_trace *t, const char *key)
{
    return atr_json_get_str(t->meta, key, NULL);
}

static void test_real_sample(void **state)
{
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(SAMPLE, NULL, NULL, &err);
    assert_non_null(r);
    assert_string_equal(atr_reader_format(r), "burstgpt");
    struct atr_trace t = ATR_TRACE_INIT;
    static const int64_t starts[] = {0, 40000, 113000, 120000, 185000, 185000, 228000,
                                     296000, 296500, 372000, 397000, 463000};
    size_t n = 0, failed = 0, gpt4 = 0, api = 0;
    int rc;
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        assert_true(n < 12);
        assert_int_equal(t.n_steps, 1);
        assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
        assert_int_equal(t.start_ms, starts[n]);
        assert_string_equal(t.source, "burstgpt");
        const char *outcome = meta_str(&t, "outcome");
        failed += outcome && strcmp(outcome, "failed") == 0;
        gpt4 += strcmp(meta_str(&t, "model"), "GPT-4") == 0;
        api += strcmp(meta_str(&t, "log_type"), "API log") == 0;
        n++;
        if (n == 1) {
            assert_string_equal(t.trace_id, "burstgpt/burstgpt_sample/2");
            assert_int_equal(t.steps[0].input_tokens, 472);
            assert_int_equal(t.steps[0].output_tokens, 18);
            assert_null(outcome);
        }
        if (n == 4) {   /* line 5: a failure, kept with 0 output tokens */
            assert_string_equal(outcome, "failed");
            assert_int_equal(t.steps[0].input_tokens, 2360);
            assert_int_equal(t.steps[0].output_tokens, 0);
        }
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 12);
    assert_int_equal(failed, 2);
    assert_int_equal(gpt4, 3);
    assert_int_equal(api, 4);
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void expect_error(const char *text, const char *msg)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "b.csv");
    struct atr_error err;
    struct atr_reader *r = atr_reader_open_input(in, "burstgpt", NULL, &err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    while ((rc = atr_reader_next(r, &t, &err)) == 1)
        ;
    assert_int_equal(rc, -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void test_bad_inputs(void **state)
{
    expect_error("", "b.csv:1:1: expected header \"Timestamp,Model,Request tokens,Response tokens,"
                     "Total tokens,Log Type\", got empty input");
    expect_error("Timestamp,Model,Request tokens,Response tokens\n",
                 "b.csv:1:1: expected header \"Timestamp,Model,Request tokens,Response tokens,"
                 "Total tokens,Log Type\"");
    expect_error(HEADER "5,ChatGPT,472,18,490\n", "b.csv:2:21: expected 6 columns, got 5");
    expect_error(HEADER "5,ChatGPT,472,18,490,API log,x\n",
                 "b.csv:2:30: expected 6 columns, got more");
    expect_error(HEADER "5,ChatGPT,472,1.5,490,API log\n",
                 "b.csv:2:15: expected Response tokens as a non-negative integer");
    expect_error(HEADER "5,ChatGPT,-472,18,490,API log\n",
                 "b.csv:2:11: expected Request tokens as a non-negative integer");
    expect_error(HEADER "5,ChatGPT,472,18,,API log\n",
                 "b.csv:2:18: expected Total tokens as a non-negative integer");
    expect_error(HEADER "-5,ChatGPT,472,18,490,API log\n",
                 "b.csv:2:1: expected Timestamp as a non-negative number of seconds");
    expect_error(HEADER "nan,ChatGPT,472,18,490,API log\n",
                 "b.csv:2:1: expected Timestamp as a non-negative number of seconds");
    expect_error(HEADER "0x10,ChatGPT,472,18,490,API log\n",
                 "b.csv:2:1: expected Timestamp as a non-negative number of seconds");
    expect_error(HEADER "9,ChatGPT,1,1,2,API log\n8.5,ChatGPT,1,1,2,API log\n",
                 "b.csv:3:1: expected Timestamp not before the first row's");
    expect_error(HEADER "9,\"Chat\"GPT,1,1,2,API log\n",
                 "b.csv:2:9: expected a well-formed quoted field");
    expect_error("\x7f" "ELF\x02\x01\x01\n", "b.csv:1:1: expected header \"Timestamp,Model,"
                 "Request tokens,Response tokens,Total tokens,Log Type\"");
}

/* Quoted fields with commas and "" escapes; empty Model gives no meta. */
static void test_quoted(void **state)
{
    const char *text = HEADER "\"1.25\",\"GPT-4, \"\"turbo\"\"\",10,0,10,\"API log\"\n"
                              "2,,3,4,7,\n";
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "<stdin>");
    struct atr_error err;
    struct atr_reader *r = atr_reader_open_input(in, NULL, NULL, &err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_string_equal(t.trace_id, "burstgpt/stdin/2");
    assert_string_equal(meta_str(&t, "model"), "GPT-4, \"turbo\"");
    assert_string_equal(meta_str(&t, "log_type"), "API log");
    assert_string_equal(meta_str(&t, "outcome"), "failed");
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_int_equal(t.start_ms, 750);
    assert_null(meta_str(&t, "model"));
    assert_int_equal(atr_reader_next(r, &t, &err), 0);
    atr_trace_release(&t);
    atr_reader_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_sample),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_quoted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
