/* test-fmt-openai-chat.c - the OpenAI-chat reader on the nebius SWE-agent
 * rows, the SWE-Gym OpenHands rows (from the shared real data when present),
 * the other row shapes, and bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json/json.h"
#include "trace/reader.h"

#define DIR ATR_TEST_DATA "/openai-chat/"
#define NEBIUS DIR "nebius_SWE-agent-trajectories.sample_raw.json"
/* 629 KB, too big to copy into tests/data: read where the shared data is. */
#define SWE_GYM ATR_TEST_DATA "/../../../shared/data/real/openai-chat/" \
                "swe-gym_openhands_sampled_trajectories.sample_raw.json"

static const char *meta_str(const struct atr_trace *t, const char *key)
{
    return atr_json_get_str(t->meta, key, NULL);
}

static int64_t meta_i64(const struct atr_trace *t, const char *key)
{
    int64_t v = -1;
    atr_json_get_i64(t->meta, key, &v);
    return v;
}

/* Each llm step's prompt is a prefix of the next one's: all full blocks of
 * step k lead step k+1, and the prompts grow. */
static void check_prefixes(const struct atr_trace *t)
{
    const struct atr_step *prev = NULL;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *s = &t->steps[i];
        if (s->kind != ATR_STEP_LLM)
            continue;
        if (prev) {
            size_t full = (size_t)prev->input_tokens / t->block_size;
            assert_true(s->input_tokens > prev->input_tokens);
            assert_true(s->n_hash_ids >= full);
            assert_memory_equal(s->hash_ids, prev->hash_ids, full * sizeof(uint64_t));
        }
        prev = s;
    }
}

struct totals {
    size_t traces, steps, llm, tool;
};

/* Reads every trace of path; check(k, t) looks at trace k by hand. */
static void read_all(const char *path, struct totals *n,
                     void (*check)(size_t k, const struct atr_trace *t))
{
    struct atr_error err;
    struct atr_read_opts opts = {0};
    struct atr_reader *r = atr_reader_open(path, NULL, &opts, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_string_equal(atr_reader_format(r), "openai-chat");
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    memset(n, 0, sizeof *n);
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        assert_string_equal(t.source, "openai-chat");
        for (size_t i = 0; i < t.n_steps; i++) {
            assert_int_equal(t.steps[i].t_ms, ATR_UNSET);   /* no timings in the rows */
            (*(t.steps[i].kind == ATR_STEP_LLM ? &n->llm : &n->tool))++;
        }
        n->steps += t.n_steps;
        check_prefixes(&t);
        check(n->traces++, &t);
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void check_nebius(size_t k, const struct atr_trace *t)
{
    if (k != 0)
        return;
    /* checked by hand: the ``` block of each "ai" message */
    assert_string_equal(t->trace_id, "openai-chat/tomerfiliba__plumbum-366_17");
    assert_string_equal(meta_str(t, "model"), "swe-agent-llama-70b");
    assert_string_equal(meta_str(t, "outcome"), "resolved");
    assert_string_equal(meta_str(t, "exit_status"), "submitted");
    assert_int_equal(t->n_steps, 12);
    assert_string_equal(t->steps[1].tool, "bash");
    assert_string_equal(t->steps[1].command, "ls -F");
    /* SWE-agent's own commands are editor steps, as in the swe-agent reader */
    assert_string_equal(t->steps[3].tool, "editor");
    assert_string_equal(t->steps[3].action, "find_file");
    assert_string_equal(t->steps[3].path, "plumbum");
    assert_string_equal(t->steps[5].tool, "editor");
    assert_string_equal(t->steps[5].action, "open");
    assert_string_equal(t->steps[5].path, "plumbum/cli/image.py");
    /* edit works on the file SWE-agent reported open */
    assert_string_equal(t->steps[7].action, "edit");
    assert_string_equal(t->steps[7].path, "/plumbum/plumbum/cli/image.py");
    assert_string_equal(t->steps[9].command, "python -c \"import plumbum.cli.image\"");
    assert_int_equal(t->steps[10].kind, ATR_STEP_LLM);
    assert_string_equal(t->steps[11].action, "submit");
}

static void test_nebius(void **state)
{
    struct totals n;
    read_all(NEBIUS, &n, check_nebius);
    assert_int_equal(n.traces, 5);
    assert_int_equal(n.llm, 49);            /* "ai" messages */
    assert_int_equal(n.tool, 49);           /* one command each, submits included */
    assert_int_equal(n.steps, 98);
}

static void check_swe_gym(size_t k, const struct atr_trace *t)
{
    if (k == 1) {
        assert_string_equal(t->steps[13].action, "str_replace");
        assert_string_equal(t->steps[13].path,
                            "/workspace/Project-MONAI__MONAI__1.1/monai/losses/ssim_loss.py");
    }
    if (k != 0)
        return;
    assert_string_equal(t->trace_id, "openai-chat/python__mypy-15976_0");
    assert_string_equal(meta_str(t, "outcome"), "resolved");
    assert_int_equal(meta_i64(t, "finish_calls"), 1);
    assert_int_equal(t->n_steps, 17 + 20);
    assert_string_equal(t->steps[1].tool, "editor");
    assert_string_equal(t->steps[1].action, "view");
    assert_string_equal(t->steps[1].path, "/workspace/python__mypy__1.6");
    assert_int_equal(t->steps[1].exit_code, ATR_UNSET);
    assert_string_equal(t->steps[9].action, "create");
    assert_string_equal(t->steps[11].command,
                        "python3 /workspace/python__mypy__1.6/reproduce_error.py");
    assert_int_equal(t->steps[11].exit_code, 0);
    assert_string_equal(t->steps[13].command,
                        "mypy /workspace/python__mypy__1.6/reproduce_error.py");
    assert_int_equal(t->steps[13].exit_code, 1);
}

static void test_swe_gym(void **state)
{
    if (access(SWE_GYM, R_OK) != 0)
        skip();
    struct totals n;
    read_all(SWE_GYM, &n, check_swe_gym);
    assert_int_equal(n.traces, 5);
    assert_int_equal(n.llm, 88);            /* assistant messages */
    assert_int_equal(n.tool, 83);           /* tool calls less 4 finishes */
}

static void check_mixed(size_t k, const struct atr_trace *t)
{
    if (k == 0) {       /* SWE-smith: inline <function=...> calls */
        assert_string_equal(t->trace_id, "openai-chat/swe-smith-like__demo-1");
        assert_string_equal(meta_str(t, "outcome"), "unresolved");
        assert_string_equal(meta_str(t, "model"), "claude-3-7-sonnet");
        assert_int_equal(t->n_steps, 6);
        assert_string_equal(t->steps[1].command, "find /testbed -name '*.py' | head");
        assert_int_equal(t->steps[1].exit_code, 0);
        assert_string_equal(t->steps[3].action, "str_replace");
        assert_string_equal(t->steps[3].path, "/testbed/a.py");
        /* SWE-smith runs SWE-agent: its submit is an editor step */
        assert_string_equal(t->steps[5].tool, "editor");
        assert_string_equal(t->steps[5].action, "submit");
    } else if (k == 1) {    /* legacy function_call, content as parts */
        assert_string_equal(t->trace_id, "openai-chat/toucan-like-2");
        assert_int_equal(t->n_steps, 3);
        assert_string_equal(t->steps[1].tool, "exa-search-web_search_exa");
        assert_non_null(atr_json_get(t->steps[1].extra, "arguments"));
    } else {                /* parallel tool_calls answered out of order */
        assert_string_equal(t->trace_id, "openai-chat/mixed-rows/2");
        assert_int_equal(t->n_steps, 4);
        assert_string_equal(t->steps[1].command, "pytest -q");
        assert_int_equal(t->steps[1].exit_code, 1);
        assert_string_equal(t->steps[2].path, "/repo/setup.py");
        assert_int_equal(t->steps[2].exit_code, ATR_UNSET);
    }
}

static void test_mixed_rows(void **state)
{
    struct totals n;
    read_all(DIR "mixed-rows.jsonl", &n, check_mixed);
    assert_int_equal(n.traces, 3);
    assert_int_equal(n.llm, 7);
    assert_int_equal(n.tool, 6);
}

/* Reads text with the openai-chat reader to the end; returns the last rc,
 * the first trace in *t and the number of traces in *n. */
static int run_text(const char *text, const struct atr_read_opts *opts, struct atr_trace *t,
                    int *n, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "chat.json");
    struct atr_reader *r = atr_reader_open_input(in, "openai-chat", opts, err);
    assert_non_null(r);
    struct atr_trace rest = ATR_TRACE_INIT;
    int rc;
    *n = 0;
    while ((rc = atr_reader_next(r, *n ? &rest : t, err)) == 1)
        (*n)++;
    atr_trace_release(&rest);
    atr_reader_close(r);
    return rc;
}

/* A message's usage is its call's real counts; a row's usage is a total
 * the calls without their own are scaled to ("scaled", summing exactly). */
static void test_usage(void **state)
{
    (void)state;
    const char *text =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Fix the bug in a.py\"},"
        "{\"role\": \"assistant\", \"content\": \"Looking.\", \"usage\": "
        "{\"prompt_tokens\": 500, \"completion_tokens\": 20}},"
        "{\"role\": \"user\", \"content\": \"ok\"},"
        "{\"role\": \"assistant\", \"content\": \"Done, the fix is in.\"},"
        "{\"role\": \"user\", \"content\": \"thanks\"},"
        "{\"role\": \"assistant\", \"content\": \"Bye.\"}],"
        " \"usage\": {\"prompt_tokens\": 1800, \"completion_tokens\": 50}}\n";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int n;
    if (run_text(text, NULL, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    const struct atr_step *c[3];
    size_t j = 0;
    for (size_t k = 0; k < t.n_steps && j < 3; k++)
        if (t.steps[k].kind == ATR_STEP_LLM)
            c[j++] = &t.steps[k];
    assert_int_equal(j, 3);
    assert_string_equal(c[0]->tokens_from, "recorded");
    assert_int_equal(c[0]->input_tokens, 500);
    assert_int_equal(c[0]->output_tokens, 20);
    assert_string_equal(c[1]->tokens_from, "scaled");
    assert_string_equal(c[2]->tokens_from, "scaled");
    assert_int_equal(c[1]->input_tokens + c[2]->input_tokens, 1300);
    assert_int_equal(c[1]->output_tokens + c[2]->output_tokens, 30);
    assert_true(c[2]->input_tokens > c[1]->input_tokens);   /* in the estimates' proportion */
    for (j = 0; j < 3; j++)
        assert_int_equal(c[j]->n_hash_ids, (c[j]->input_tokens + 15) / 16);
    int64_t total = 0;
    assert_true(atr_json_get_i64(t.meta, "recorded_input_tokens", &total));
    assert_int_equal(total, 1800);
    atr_trace_release(&t);
}

/* A bare array of messages is one conversation; keep_content keeps them. */
static void test_bare_messages(void **state)
{
    const char *text = "[{\"role\": \"system\", \"content\": \"Be brief.\"},\n"
                       " {\"role\": \"user\", \"content\": \"Hi\"},\n"
                       " {\"role\": \"assistant\", \"content\": \"Hello!\"},\n"
                       " {\"role\": \"user\", \"content\": \"Bye\"},\n"
                       " {\"role\": \"assistant\", \"content\": \"Bye!\"}]\n";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    struct atr_read_opts opts = {.keep_content = true};
    int n;
    if (run_text(text, &opts, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 1);
    assert_string_equal(t.trace_id, "openai-chat/chat");
    assert_int_equal(t.n_steps, 2);
    assert_int_equal(t.steps[0].messages->u.kids.count, 2);
    assert_int_equal(t.steps[1].messages->u.kids.count, 2);   /* the reply and "Bye" */
    assert_string_equal(t.steps[1].output->u.str.s, "Bye!");
    check_prefixes(&t);
    atr_trace_release(&t);
}

static void expect_error(const char *text, size_t max_line, const char *msg)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    struct atr_read_opts opts = {.max_line = max_line};
    int n;
    assert_int_equal(run_text(text, &opts, &t, &n, &err), -1);
    atr_trace_release(&t);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
}

static void test_bad_inputs(void **state)
{
    expect_error("", 0, "chat.json:1:1: expected a JSON array of chat rows or JSON lines");
    expect_error("\x89PNG\r\n", 0,
                 "chat.json:1:1: expected a JSON array of chat rows or JSON lines");
    expect_error("[]", 0, "chat.json:1:1: expected at least one row");
    expect_error("[{\"messages\": [", 0, "chat.json:1: unterminated array element at end of "
                                          "input");
    expect_error("[{\"messages\": 5}]", 0,
                 "chat.json:1:15: expected a row with a \"messages\" array");
    expect_error("[{\"messages\": [{\"role\": 5}]}]", 0,
                 "chat.json:1:25: expected \"role\" to be string, found number");
    expect_error("[{\"messages\": [{\"content\": \"x\"}]}]", 0,
                 "chat.json:1:16: expected \"role\" (string) in this object");
    expect_error("[{\"messages\": [\"hi\"]}]", 0,
                 "chat.json:1:16: expected a message object, found string");
    expect_error("[{\"messages\": [{\"role\": \"user\", \"content\": {}}]}]", 0,
                 "chat.json:1:44: expected message content to be a string or an array of "
                 "parts, found object");
    expect_error("[{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": 1}]}]", 0,
                 "chat.json:1:52: expected \"tool_calls\" to be an array, found number");
    expect_error("[{\"messages\": [{\"role\": \"assistant\", \"function_call\": \"f\"}]}]", 0,
                 "chat.json:1:55: expected \"function_call\" to be an object, found string");
    expect_error("{\"messages\": []}\n\n{\"messages\": {}}\n", 0,
                 "chat.json:3:14: expected a row with a \"messages\" array");
    expect_error("{\"messages\": []}\n{\"messages\": [}\n", 0,
                 "chat.json:2:15: expected a JSON value, found '}'");
    expect_error("[{\"messages\": [{\"role\": \"user\", \"content\": \"a long message\"}]}]", 32,
                 "chat.json:1: array element longer than 32 bytes");
    expect_error("{\"messages\": [{\"role\": \"user\", \"content\": \"a long message\"}]}\n", 32,
                 "chat.json:1: line longer than 32 bytes");
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("openai-chat");
    const char *rows = "[\n  {\n    \"instance_id\": \"a\",\n    \"messages\": [{\"content\": "
                       "\"x\", \"role\": \"system\"}]";
    assert_int_equal(f->sniff(rows, strlen(rows), "x.json"), 90);
    const char *neb = "[{\"instance_id\": \"a\", \"trajectory\": [{\"role\": \"ai\", "
                      "\"text\": \"```\\nls\\n```\"}]}]";
    assert_int_equal(f->sniff(neb, strlen(neb), "<stdin>"), 90);
    const char *lines = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n";
    assert_int_equal(f->sniff(lines, strlen(lines), "x.jsonl"), 75);
    /* not ours: SWE-agent .traj, mini-swe-agent, OpenHands events */
    const char *swe = "{\n  \"trajectory\": [{\"action\": \"ls\", \"observation\": \"\"}],\n"
                      "  \"history\": [{\"role\": \"system\", \"content\": \"\"}]";
    assert_int_equal(f->sniff(swe, strlen(swe), "x.traj"), 0);
    const char *mini = "{\n  \"info\": {},\n  \"messages\": [{\"role\": \"user\"}]";
    assert_int_equal(f->sniff(mini, strlen(mini), "x.traj.json"), 0);
    const char *oh = "[{\"id\": 0, \"source\": \"user\", \"action\": \"message\"}, "
                     "{\"id\": 1, \"observation\": \"run\"}]";
    assert_int_equal(f->sniff(oh, strlen(oh), "x.json"), 0);
    assert_int_equal(f->sniff("", 0, "<stdin>"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nebius),
        cmocka_unit_test(test_swe_gym),
        cmocka_unit_test(test_mixed_rows),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_bare_messages),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
