/* test-serve.c - atr sim serve's request-body parser (prompts, rendered
 * chat messages, options, error messages) and the engine's record release
 * that keeps a long-running server's memory bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/server.h"
#include "trace/tokens.h"

static int parse(enum atr_serve_api api, const char *body, struct atr_serve_request *r,
                 struct atr_error *err)
{
    static struct atr_arena arena = ATR_ARENA_INIT;
    atr_arena_clear(&arena);
    return atr_serve_parse_request(api, body, strlen(body), &arena, r, err);
}

static void expect_error(enum atr_serve_api api, const char *body, const char *msg)
{
    struct atr_serve_request r;
    struct atr_error err;
    assert_int_equal(parse(api, body, &r, &err), -1);
    if (!strstr(err.msg, msg))
        fail_msg("'%s' does not contain '%s'", err.msg, msg);
}

static void test_completion_prompts(void **state)
{
    struct atr_serve_request r;
    struct atr_error err;
    const char *text = "the quick brown fox jumps over the lazy dog";
    char body[256];
    snprintf(body, sizeof body,
             "{\"model\":\"m\",\"prompt\":\"%s\",\"max_tokens\":7,\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,\"min_tokens\":7}",
             text);
    assert_int_equal(parse(ATR_SERVE_COMPLETIONS, body, &r, &err), 0);
    assert_string_equal(r.model, "m");
    assert_true(r.stream && r.include_usage);
    assert_int_equal(r.max_tokens, 7);
    assert_int_equal(r.prompt_tokens, atr_tokens_estimate(text, strlen(text)));
    free(r.hash_ids);
    /* An array of one string is the string; token ids count one each and
     * make one block id per 16. */
    assert_int_equal(parse(ATR_SERVE_COMPLETIONS, "{\"prompt\":[\"ab\"]}", &r, &err), 0);
    assert_int_equal(r.max_tokens, -1);
    assert_false(r.stream);
    free(r.hash_ids);
    assert_int_equal(parse(ATR_SERVE_COMPLETIONS,
                           "{\"prompt\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}", &r,
                           &err), 0);
    assert_int_equal(r.prompt_tokens, 17);
    assert_int_equal(r.n_hash_ids, 1);
    free(r.hash_ids);
}

/* "user" is a session hint (sim serve --kv-retain): a non-empty string
 * only; an empty one or null is none; another type is refused. */
static void test_session_hint(void **state)
{
    struct atr_serve_request r;
    struct atr_error err;
    assert_int_equal(parse(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"a\",\"user\":\"s/1\"}", &r, &err),
                     0);
    assert_true(r.session_hint);
    free(r.hash_ids);
    static const char *const none[] = {"{\"prompt\":\"a\"}", "{\"prompt\":\"a\",\"user\":\"\"}",
                                       "{\"prompt\":\"a\",\"user\":null}"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(parse(ATR_SERVE_COMPLETIONS, none[i], &r, &err), 0);
        assert_false(r.session_hint);
        free(r.hash_ids);
    }
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"a\",\"user\":7}", "user: expected a string");
}

static void test_chat_rendering(void **state)
{
    struct atr_serve_request a, b;
    struct atr_error err;
    /* A string and the same text as parts render alike: same tokens, same blocks. */
    assert_int_equal(parse(ATR_SERVE_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}],"
                           "\"max_completion_tokens\":3}", &a, &err), 0);
    assert_int_equal(a.max_tokens, 3);
    assert_int_equal(parse(ATR_SERVE_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                           "\"text\":\"hello \"},{\"type\":\"text\",\"text\":\"world\"}]}]}",
                           &b, &err), 0);
    const char *rendered = "<|user|>\nhello world\n";
    assert_int_equal(a.prompt_tokens, atr_tokens_estimate(rendered, strlen(rendered)));
    assert_int_equal(a.prompt_tokens, b.prompt_tokens);
    free(a.hash_ids);
    free(b.hash_ids);
}

static void test_errors(void **state)
{
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\": \"ab", "malformed JSON at line 1");
    expect_error(ATR_SERVE_COMPLETIONS, "[1]", "request body: expected a JSON object");
    expect_error(ATR_SERVE_COMPLETIONS, "{}", "prompt: required");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"\"}", "prompt: must not be empty");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":[\"a\",\"b\"]}", "only one prompt");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":[1,-2]}", "prompt[1]: expected a token id");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens: must be in");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":1.5}", "max_tokens: expected an integer");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"x\",\"n\":2}", "n: only n=1");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"x\",\"model\":3}", "model: expected a string");
    expect_error(ATR_SERVE_COMPLETIONS, "{\"prompt\":\"x\",\"stream\":\"yes\"}", "stream: expected a boolean");
    expect_error(ATR_SERVE_CHAT, "{\"messages\":{}}", "messages: expected an array");
    expect_error(ATR_SERVE_CHAT, "{\"messages\":[]}", "messages: must not be empty");
    expect_error(ATR_SERVE_CHAT, "{\"messages\":[3]}", "messages[0]: expected an object");
    expect_error(ATR_SERVE_CHAT, "{\"messages\":[{\"content\":\"x\"}]}", "messages[0].role");
    expect_error(ATR_SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
                 "messages[0].content[0]");
}

static double cost_const(void *ctx, const struct atr_iter_work *w)
{
    return 1.0 / 1024;
}

static void test_release_record(void **state)
{
    struct atr_engine_cfg cfg;
    struct atr_error err;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost_const;
    cfg.kv_capacity_tokens = 1024;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    struct atr_sim_req q1 = { 1, 0, 20, 2, NULL, 0 }, q2 = { 2, 0, 20, 50, NULL, 0 };
    const struct atr_sim_record *r1 = atr_engine_add(e, &q1, &err);
    const struct atr_sim_record *r2 = atr_engine_add(e, &q2, &err);
    assert_int_equal(atr_engine_run_until(e, 0.0025, &err), 0);
    assert_int_equal(r1->tokens_done, 2);
    assert_int_equal(atr_engine_num_running(e), 1);
    assert_true(atr_engine_kv_blocks_used(e) > 0);
    assert_int_equal(atr_engine_release_record(e, r2), -1);    /* still running */
    size_t n;
    atr_engine_finished(e, &n);
    assert_int_equal(n, 1);
    assert_int_equal(atr_engine_release_record(e, r1), 0);
    atr_engine_finished(e, &n);
    assert_int_equal(n, 0);                 /* it left the finished list too */
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_int_equal(r2->tokens_done, 50);
    assert_int_equal(atr_engine_release_record(e, r2), 0);
    assert_int_equal(atr_engine_kv_blocks_used(e), 0);
    assert_int_equal(atr_engine_num_waiting(e), 0);
    atr_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completion_prompts),
        cmocka_unit_test(test_chat_rendering),
        cmocka_unit_test(test_session_hint),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_release_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
