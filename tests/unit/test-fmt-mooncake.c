/* test-fmt-mooncake.c - the Mooncake JSONL reader on the real synthetic trace
 * excerpt and on bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "trace/reader.h"

#define SAMPLE ATR_TEST_DATA "/mooncake/synthetic_trace_head200.jsonl"

/* Reads every trace of the sample; keeps copies of the ones at the given
 * 1-based lines (trace ids end in the line number). */
static void read_sample(struct atr_trace *at43, struct atr_trace *at50, size_t *n)
{
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(SAMPLE, NULL, NULL, &err);
    assert_non_null(r);
    assert_string_equal(atr_reader_format(r), "mooncake");
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    *n = 0;
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        (*n)++;
        assert_int_equal(t.n_steps, 1);
        assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
        assert_int_equal(t.block_size, 512);
        assert_string_equal(t.source, "mooncake");
        /* the file's invariant: one id per 512-token block */
        assert_int_equal(t.steps[0].n_hash_ids, (t.steps[0].input_tokens + 511) / 512);
        struct atr_trace *keep = *n == 43 ? at43 : *n == 50 ? at50 : NULL;
        if (keep) {
            keep->start_ms = t.start_ms;
            keep->steps = atr_arena_alloc(&keep->arena, sizeof *t.steps);
            keep->steps[0] = t.steps[0];
            keep->steps[0].hash_ids = atr_arena_alloc(&keep->arena, t.steps[0].n_hash_ids * 8);
            memcpy(keep->steps[0].hash_ids, t.steps[0].hash_ids, t.steps[0].n_hash_ids * 8);
            keep->n_steps = 1;
        }
        if (*n == 2) {
            assert_string_equal(t.trace_id, "mooncake/synthetic_trace_head200/2");
            assert_int_equal(t.start_ms, 0);
            assert_int_equal(t.steps[0].input_tokens, 36640);
            assert_int_equal(t.steps[0].output_tokens, 4);
            assert_int_equal(t.steps[0].n_hash_ids, 72);
            assert_int_equal(t.steps[0].hash_ids[0], 79);
            assert_int_equal(t.steps[0].t_ms, 0);
            assert_true(t.steps[0].dur_ms == ATR_UNSET);
        }
        if (*n == 200) {
            assert_int_equal(t.start_ms, 58501);
            assert_int_equal(t.steps[0].input_tokens, 37625);
            assert_int_equal(t.steps[0].output_tokens, 2);
            assert_int_equal(t.steps[0].hash_ids[0], 4933);
            assert_int_equal(t.steps[0].hash_ids[73], 5006);
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(atr_reader_next(r, &t, &err), 0);   /* stays at the end */
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void test_real_sample(void **state)
{
    struct atr_trace a = ATR_TRACE_INIT, b = ATR_TRACE_INIT;
    size_t n;
    read_sample(&a, &b, &n);
    assert_int_equal(n, 200);
    /* a later turn of the same conversation: line 50 repeats line 43's
     * first 57 blocks (checked with python), and arrives later; its prompt
     * then diverges (it is even a little shorter: 30397 vs 30575 tokens) */
    assert_int_equal(a.steps[0].n_hash_ids, 60);
    assert_int_equal(b.steps[0].n_hash_ids, 60);
    for (int k = 0; k < 57; k++)
        assert_int_equal(a.steps[0].hash_ids[k], b.steps[0].hash_ids[k]);
    assert_true(b.steps[0].hash_ids[57] != a.steps[0].hash_ids[57]);
    assert_true(b.start_ms > a.start_ms);
    assert_int_equal(a.start_ms, 12709);
    assert_int_equal(b.start_ms, 14514);
    atr_trace_release(&a);
    atr_trace_release(&b);
}

/* Reads text with the mooncake reader: the result of the first failing (or
 * final) next, with the message in err; *ntraces counts the traces before. */
static int run_text(const char *text, size_t max_line, struct atr_error *err, int *ntraces)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "m.jsonl");
    struct atr_read_opts opts = {.max_line = max_line};
    struct atr_reader *r = atr_reader_open_input(in, "mooncake", &opts, err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    *ntraces = 0;
    while ((rc = atr_reader_next(r, &t, err)) == 1)
        (*ntraces)++;
    atr_trace_release(&t);
    atr_reader_close(r);
    return rc;
}

static void expect_error(const char *text, size_t max_line, const char *msg)
{
    struct atr_error err;
    int n;
    assert_int_equal(run_text(text, max_line, &err, &n), -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
}

static void test_relative_arrivals(void **state)
{
    const char *text = "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, "
                       "\"hash_ids\": [7, 8]}\n\n"
                       "{\"timestamp\": 1500.6, \"input_length\": 10, \"output_length\": 0}\n";
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "dir/x.jsonl.gz");
    struct atr_error err;
    struct atr_reader *r = atr_reader_open_input(in, NULL, NULL, &err);
    assert_non_null(r);
    assert_string_equal(atr_reader_format(r), "mooncake");
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_string_equal(t.trace_id, "mooncake/x/1");
    assert_int_equal(t.start_ms, 0);
    assert_int_equal(t.steps[0].n_hash_ids, 2);
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_string_equal(t.trace_id, "mooncake/x/3");   /* the blank line is skipped */
    assert_int_equal(t.start_ms, 501);                 /* fractional ms rounded */
    assert_int_equal(t.steps[0].n_hash_ids, 0);         /* hash_ids optional */
    assert_int_equal(t.steps[0].output_tokens, 0);
    assert_int_equal(atr_reader_next(r, &t, &err), 0);
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void test_bad_inputs(void **state)
{
    expect_error("", 0, "m.jsonl:1:1: expected a mooncake request line, got empty input");
    expect_error("{\"timestamp\": 0, \"input_length\": 1, \"output_len", 0,
                 "m.jsonl:1:37: unterminated string (the text is truncated)");
    expect_error("[1, 2]\n", 0, "m.jsonl:1:1: expected a request object, got array");
    expect_error("{\"timestamp\": 0, \"input_length\": 5}\n", 0,
                 "m.jsonl:1:1: expected \"output_length\" (number) in this object");
    expect_error("{\"timestamp\": 0, \"input_length\": \"5\", \"output_length\": 1}\n", 0,
                 "m.jsonl:1:34: expected \"input_length\" to be number, found string");
    expect_error("{\"timestamp\": 0, \"input_length\": -5, \"output_length\": 1}\n", 0,
                 "m.jsonl:1:34: expected \"input_length\" to be a non-negative integer");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1.5}\n", 0,
                 "m.jsonl:1:54: expected \"output_length\" to be a non-negative integer");
    expect_error("{\"timestamp\": -3, \"input_length\": 5, \"output_length\": 1}\n", 0,
                 "m.jsonl:1:15: expected \"timestamp\" to be a non-negative number of ms");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": 5}\n",
                 0, "m.jsonl:1:69: expected \"hash_ids\" to be an array, got number");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, -2]}\n",
                 0, "m.jsonl:1:73: expected a hash id (integer 0..2^53-1)");
    expect_error("{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1}\n"
                 "{\"timestamp\": 3, \"input_length\": 5, \"output_length\": 1}\n", 0,
                 "m.jsonl:2:15: expected \"timestamp\" not before the first request's (9)");
    expect_error("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
                 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n",
                 60, "m.jsonl:2: line longer than 60 bytes");
    expect_error("\x89PNG\r\n\x1a\n\x01\x02garbage", 0, "m.jsonl:1:1: expected a JSON value, found byte 0x89");
}

/* Errors stop the reader: nothing is returned after the first failure. */
static void test_error_is_final(void **state)
{
    struct atr_error err;
    int n;
    const char *text = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
                       "nonsense\n"
                       "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1}\n";
    assert_int_equal(run_text(text, 0, &err, &n), -1);
    assert_int_equal(n, 1);
    assert_non_null(strstr(err.msg, "m.jsonl:2:1: "));
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("mooncake");
    const char *line = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2, \"hash_ids\": [0]}\n";
    assert_true(f->sniff(line, strlen(line), "<stdin>") >= 90);
    const char *chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"input_length\"}]}\n";
    assert_int_equal(f->sniff(chat, strlen(chat), "x.jsonl"), 0);
    assert_int_equal(f->sniff("TIMESTAMP,a", 11, "x.csv"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_sample),
        cmocka_unit_test(test_relative_arrivals),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_error_is_final),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
