/* test-llm-requests.c - --requests-out lines read back (stats/requests.h):
 * the golden lines of the writer read to the same bytes, chunk times come
 * back from ttft_ms and itl_ms, and each kind of bad line is named with
 * FILE:LINE:COL. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "stats/requests.h"
#include "stats/result.h"

/* Reads text as one file named "r.ndjson"; the read's return value. */
static int read_text(struct atr_llm_requests *rs, const char *text, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "r.ndjson");
    int rc = atr_llm_requests_read(rs, in, err);
    atr_input_close(in);
    return rc;
}

/* The error read_text gives for text, which must be refused. */
static const char *refusal(const char *text, struct atr_error *err)
{
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    assert_int_equal(read_text(&rs, text, err), -1);
    atr_llm_requests_release(&rs);
    return err->msg;
}

/* The writer's golden file (test-llm-metrics.c) reads and writes back to
 * the same bytes: chunk times, nulls and the failure survive the trip. */
static void test_golden_round_trip(void **state)
{
    (void)state;
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    assert_int_equal(atr_llm_requests_read_path(&rs, ATR_TEST_DATA "/llm/requests.ndjson", &err), 0);
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.recs[0].id, 2);
    assert_true(rs.recs[0].success);
    assert_int_equal(rs.recs[0].n_chunks, 4);
    assert_float_equal(rs.recs[0].chunk_s[0], 2.0, 1e-12);
    assert_float_equal(rs.recs[0].chunk_s[3], 2.5, 1e-12);
    assert_false(rs.recs[1].success);
    assert_string_equal(rs.recs[1].error, "http 500");
    assert_int_equal(rs.recs[1].n_chunks, 0);
    struct atr_buf b = ATR_BUF_INIT;
    for (size_t i = 0; i < rs.n; i++)
        assert_int_equal(atr_llm_write_request_line(&b, &rs.recs[i]), 0);
    FILE *f = fopen(ATR_TEST_DATA "/llm/requests.ndjson", "r");
    char want[4096];
    size_t n = fread(want, 1, sizeof want - 1, f);
    fclose(f);
    want[n] = '\0';
    assert_string_equal(b.data, want);
    atr_buf_release(&b);
    atr_llm_requests_release(&rs);
}

/* The prompt check's length and a failure's detail come back (both are
 * written only when known, so older files still read). */
static void test_intended_and_detail(void **state)
{
    (void)state;
    const char *text =
        "{\"id\": 1, \"success\": false, \"error\": \"http 400\", \"scheduled_s\": 0,"
        " \"send_s\": 0, \"start_s\": 1, \"end_s\": 2, \"itl_ms\": [], \"prompt_tokens\": -1,"
        " \"output_tokens\": -1, \"cached_tokens\": -1, \"intended_prompt_tokens\": 600,"
        " \"error_detail\": \"request (601 tokens) exceeds the available context size\"}\n";
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    assert_int_equal(read_text(&rs, text, &err), 0);
    assert_int_equal(rs.recs[0].intended_prompt_tokens, 600);
    assert_string_equal(rs.recs[0].error_detail,
                        "request (601 tokens) exceeds the available context size");
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_request_line(&b, &rs.recs[0]), 0);
    assert_non_null(strstr(b.data, "\"intended_prompt_tokens\": 600, \"error_detail\""));
    atr_buf_release(&b);
    atr_llm_requests_release(&rs);
}

/* Sessions come back with their turn; a failure with a null error is
 * "unknown"; blank lines are skipped but still counted for messages. */
static void test_session_and_unknown_failure(void **state)
{
    (void)state;
    const char *text =
        "{\"id\": 0, \"trace_id\": \"s1\", \"turn\": 3, \"success\": true, \"error\": null,"
        " \"scheduled_s\": 0, \"send_s\": 0, \"start_s\": 1, \"sent_s\": null, \"end_s\": 2,"
        " \"ttft_ms\": null, \"itl_ms\": [], \"prompt_tokens\": 5, \"output_tokens\": 1,"
        " \"cached_tokens\": 0}\n"
        "\n"
        "{\"id\": 1, \"success\": false, \"error\": null, \"scheduled_s\": 0, \"send_s\": 0,"
        " \"start_s\": 1, \"end_s\": 2, \"itl_ms\": [], \"prompt_tokens\": 5,"
        " \"output_tokens\": 0, \"cached_tokens\": 0}\n";
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    assert_int_equal(read_text(&rs, text, &err), 0);
    assert_int_equal(rs.n, 2);
    assert_string_equal(rs.recs[0].trace_id, "s1");
    assert_int_equal(rs.recs[0].turn, 3);
    assert_int_equal(rs.recs[0].n_chunks, 0);      /* a success without ttft_ms had none */
    assert_null(rs.recs[1].trace_id);
    assert_string_equal(rs.recs[1].error, "unknown");
    atr_llm_requests_release(&rs);
    assert_null(rs.recs);
}

/* Each bad line is named by file, line and the column of the bad value. */
/* A routed request names its replica ("replica", after "turn"): read
 * back and written again to the same bytes; a negative one is refused. */
static void test_replica(void **state)
{
    (void)state;
    const char *line =
        "{\"id\": 0, \"trace_id\": \"s1\", \"turn\": 0, \"replica\": 1, \"success\": false,"
        " \"error\": \"http 500\", \"scheduled_s\": 0.0, \"send_s\": 0.0, \"start_s\": 0.0,"
        " \"sent_s\": null, \"end_s\": 1.0, \"schedule_lag_ms\": 0.0, \"send_lag_ms\": 0.0,"
        " \"queue_ms\": 0.0, \"ttft_ms\": null, \"tpot_ms\": null, \"e2el_ms\": null,"
        " \"itl_ms\": [], \"prompt_tokens\": 5, \"output_tokens\": 0, \"cached_tokens\": 0}\n";
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    assert_int_equal(read_text(&rs, line, &err), 0);
    assert_true(rs.recs[0].has_replica);
    assert_int_equal(rs.recs[0].replica, 1);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_llm_write_request_line(&b, &rs.recs[0]), 0);
    assert_string_equal(b.data, line);
    atr_buf_release(&b);
    atr_llm_requests_release(&rs);
    char bad[1024];
    size_t at = (size_t)(strstr(line, "\"replica\": 1") - line);
    snprintf(bad, sizeof bad, "%.*s\"replica\": -1%s", (int)at, line, line + at + 12);
    assert_non_null(strstr(refusal(bad, &err), "r.ndjson:1:"));
    assert_non_null(strstr(err.msg, "\"replica\" >= 0"));
}

static void test_refusals(void **state)
{
    (void)state;
    struct atr_error err;
    const char *head = "{\"id\": 0, \"success\": true, \"error\": null, \"scheduled_s\": 0,"
                       " \"send_s\": 0, \"start_s\": 1, \"end_s\": 2,"
                       " \"prompt_tokens\": 5, \"output_tokens\": 2, \"cached_tokens\": 0,";
    char line[512];
    assert_string_equal(refusal("\n[1]\n", &err), "r.ndjson:2:1: a request line is a JSON object");
    assert_non_null(strstr(refusal("{\"id\": 1", &err), "r.ndjson:1:"));
    assert_string_equal(refusal("{\"success\": 1}", &err),
                        "r.ndjson:1:13: a request line wants \"success\", true or false");
    snprintf(line, sizeof line, "%s \"ttft_ms\": 5, \"itl_ms\": [1, \"x\"]}", head);
    assert_non_null(strstr(refusal(line, &err), "\"itl_ms\" wants numbers"));
    /* gaps that sum past the range would come back as NaN gaps */
    const char *late = "{\"id\": 0, \"success\": true, \"error\": null, \"scheduled_s\": 0,"
                       " \"send_s\": 0, \"start_s\": 1.7976e308, \"end_s\": 2,"
                       " \"prompt_tokens\": 5, \"output_tokens\": 2, \"cached_tokens\": 0,";
    snprintf(line, sizeof line, "%s \"ttft_ms\": 0, \"itl_ms\": [1e308]}", late);
    assert_non_null(strstr(refusal(line, &err), "\"itl_ms\" past the range of times"));
    snprintf(line, sizeof line, "%s \"ttft_ms\": 1e308, \"itl_ms\": []}", late);
    assert_non_null(strstr(refusal(line, &err), "\"ttft_ms\" past the range of times"));
    snprintf(line, sizeof line, "%s \"ttft_ms\": 5}", head);
    assert_non_null(strstr(refusal(line, &err), "wants \"itl_ms\", an array of numbers"));
    assert_string_equal(refusal("{\"success\": true, \"scheduled_s\": \"0\"}", &err),
                        "r.ndjson:1:34: a request line wants \"scheduled_s\", a number");
}

/* The lines before a bad one stay read; the count says how many. */
static void test_partial_read_keeps_lines(void **state)
{
    (void)state;
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    assert_int_equal(atr_llm_requests_read_path(&rs, ATR_TEST_DATA "/llm/requests.ndjson", &err), 0);
    assert_int_equal(read_text(&rs, "{}", &err), -1);
    assert_int_equal(rs.n, 2);
    assert_non_null(strstr(err.msg, "r.ndjson:1:"));
    atr_llm_requests_release(&rs);
    assert_int_equal(atr_llm_requests_read_path(&rs, "/nonexistent/r.ndjson", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/r.ndjson"));
}

/* replay agent's tool lines ("kind": "tool") are no requests: skipped
 * (parse returns 1), the llm lines around them read. */
static void test_agent_tool_lines_skipped(void **state)
{
    (void)state;
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    const char *text =
        "{\"kind\": \"llm\", \"session\": 0, \"id\": 2, \"success\": true, \"error\": null, "
        "\"scheduled_s\": 1.0, \"send_s\": 1.0, \"start_s\": 1.5, \"sent_s\": 1.501, "
        "\"end_s\": 2.5, \"ttft_ms\": 500.0, \"tpot_ms\": 125.0, \"itl_ms\": [125.0, 125.0, "
        "250.0], \"prompt_tokens\": 100, \"output_tokens\": 5, \"cached_tokens\": 32}\n"
        "{\"kind\":\"tool\",\"session\":0,\"after_turn\":0,\"start_s\":0.5,\"end_s\":0.8,"
        "\"exit_code\":3}\n";
    assert_int_equal(read_text(&rs, text, &err), 0);
    assert_int_equal(rs.n, 1);
    assert_true(rs.recs[0].success);
    atr_llm_requests_release(&rs);
    /* "kind" of any other value is read as a request as before. */
    assert_int_equal(read_text(&rs, "{\"kind\":\"x\"}", &err), -1);
    atr_llm_requests_release(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_round_trip),
        cmocka_unit_test(test_intended_and_detail),
        cmocka_unit_test(test_session_and_unknown_failure),
        cmocka_unit_test(test_replica),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_partial_read_keeps_lines),
        cmocka_unit_test(test_agent_tool_lines_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
