/* test-fmt-swe-agent.c - the SWE-agent .traj reader on the real demonstration
 * trajectories, on synthetic edge cases (demos, parts, history-only,
 * trajectory-only), on bad inputs, and read as another format by mistake
 * (--from). Expected values were read off the
 * source files with python. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "trace/reader.h"

#define DATA ATR_TEST_DATA "/swe-agent/"

/* Reads the only trace of a file (sniffing its format) into *t. */
static void read_file(const char *path, bool keep, struct atr_trace *t)
{
    struct atr_error err;
    struct atr_read_opts opts = {.keep_content = keep};
    struct atr_reader *r = atr_reader_open(path, NULL, &opts, &err);
    if (!r)
        fail_msg("open %s: %s", path, err.msg);
    assert_string_equal(atr_reader_format(r), "swe-agent");
    if (atr_reader_next(r, t, &err) != 1)
        fail_msg("%s", err.msg);
    struct atr_trace end = ATR_TRACE_INIT;   /* next clears the trace it is given */
    assert_int_equal(atr_reader_next(r, &end, &err), 0);   /* one trace per file */
    atr_trace_release(&end);
    atr_reader_close(r);
}

/* Reads text with the swe-agent reader: the first next's result. */
static int read_text(const char *text, size_t len, size_t max_line, struct atr_trace *t,
                     struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, len, "t.traj");
    struct atr_read_opts opts = {.max_line = max_line};
    struct atr_reader *r = atr_reader_open_input(in, "swe-agent", &opts, err);
    assert_non_null(r);
    int rc = atr_reader_next(r, t, err);
    atr_reader_close(r);
    return rc;
}

static void read_ok(const char *text, struct atr_trace *t)
{
    struct atr_error err;
    if (read_text(text, strlen(text), 0, t, &err) != 1)
        fail_msg("%s", err.msg);
}

static const char *meta_str(const struct atr_trace *t, const char *key)
{
    return atr_json_get_str(t->meta, key, NULL);
}

static int64_t meta_i64(const struct atr_trace *t, const char *key)
{
    int64_t v = ATR_UNSET;
    atr_json_get_i64(t->meta, key, &v);
    return v;
}

/* The first n steps alternate llm, tool; consecutive llm prompts share all
 * but the last (partial) block of the earlier one, and grow. */
static void check_alternating_n(const struct atr_trace *t, size_t n)
{
    const struct atr_step *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct atr_step *s = &t->steps[i];
        assert_int_equal(s->i, i);
        assert_int_equal(s->kind, i % 2 ? ATR_STEP_TOOL : ATR_STEP_LLM);
        if (s->kind != ATR_STEP_LLM)
            continue;
        assert_true(s->input_tokens > 0 && s->output_tokens > 0);
        if (prev) {
            assert_true(s->input_tokens > prev->input_tokens);
            assert_true(s->n_hash_ids >= prev->n_hash_ids);
            for (uint32_t k = 0; k + 1 < prev->n_hash_ids; k++)
                assert_true(s->hash_ids[k] == prev->hash_ids[k]);
        }
        prev = s;
    }
}

static void check_alternating(const struct atr_trace *t)
{
    check_alternating_n(t, t->n_steps);
}

static void assert_tool(const struct atr_step *s, const char *tool, const char *action,
                        const char *path)
{
    assert_int_equal(s->kind, ATR_STEP_TOOL);
    assert_string_equal(s->tool, tool);
    if (action)
        assert_string_equal(s->action, action);
    if (path)
        assert_string_equal(s->path, path);
    else
        assert_null(s->path);
}

static void test_marshmallow(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "marshmallow-1867__function_calling_replace.traj", false, &t);
    assert_string_equal(t.trace_id, "swe-agent/marshmallow-code__marshmallow-1867");
    assert_string_equal(t.source, "swe-agent");
    assert_int_equal(t.block_size, 16);
    assert_int_equal(t.start_ms, 0);
    assert_int_equal(t.n_steps, 22);          /* 11 assistant messages, 11 entries */
    check_alternating(&t);
    assert_string_equal(meta_str(&t, "model"), "gpt-4o");   /* replay_config.agent.model */
    assert_string_equal(meta_str(&t, "exit_status"), "submitted");
    assert_string_equal(meta_str(&t, "instance_id"), "marshmallow-code__marshmallow-1867");
    assert_int_equal(meta_i64(&t, "api_calls"), 11);
    assert_true(meta_i64(&t, "recorded_input_tokens") == ATR_UNSET);   /* 0 in the file */

    assert_tool(&t.steps[1], "editor", "create", "reproduce.py");
    assert_int_equal(t.steps[1].dur_ms, 239);          /* 0.238733730999229 s */
    assert_string_equal(t.steps[1].cwd, "/testbed");
    assert_tool(&t.steps[3], "editor", "insert", "/testbed/reproduce.py");  /* open file */
    assert_tool(&t.steps[5], "bash", NULL, NULL);
    assert_string_equal(t.steps[5].command, "python reproduce.py");
    assert_int_equal(t.steps[5].dur_ms, 330);
    assert_string_equal(t.steps[7].command, "ls -F");
    assert_tool(&t.steps[9], "editor", "find_file", "src");
    assert_tool(&t.steps[11], "editor", "open", "src/marshmallow/fields.py");
    assert_tool(&t.steps[13], "editor", "edit", "/testbed/src/marshmallow/fields.py");
    assert_int_equal(t.steps[13].dur_ms, 685);
    assert_tool(&t.steps[21], "editor", "submit", NULL);
    assert_int_equal(t.steps[21].dur_ms, 222);
    for (size_t i = 0; i < t.n_steps; i++) {
        assert_true(t.steps[i].t_ms == ATR_UNSET);     /* no wall clock in a .traj */
        assert_true(t.steps[i].exit_code == ATR_UNSET);
        assert_null(t.steps[i].messages);
    }
    /* The first call saw the system and instance prompts; the last the
     * whole history but the last two messages. */
    assert_int_equal(t.steps[0].input_tokens, 1357);
    assert_int_equal(t.steps[20].input_tokens, 8348);
    atr_trace_release(&t);
}

static void test_keep_content(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "marshmallow-1867__function_calling_replace.traj", true, &t);
    /* messages since the previous call: system + instance, then the
     * previous reply and its observation */
    assert_int_equal(t.steps[0].messages->u.kids.count, 2);
    assert_int_equal(t.steps[2].messages->u.kids.count, 2);
    const struct atr_json *reply = t.steps[2].messages->u.kids.first;
    assert_string_equal(atr_json_get_str(reply, "role", NULL), "assistant");
    /* the reply renders its tool call after the content */
    const char *text = atr_json_get_str(reply, "content", NULL);
    assert_non_null(strstr(text, "\ncreate({\"filename\":\"reproduce.py\"})"));
    atr_trace_release(&t);
}

static void test_human_thought(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "humanevalfix-python-0__human_thought.traj", false, &t);
    assert_string_equal(t.trace_id, "swe-agent/humanevalfix-python-0__human_thought");
    assert_int_equal(t.n_steps, 10);
    check_alternating(&t);
    assert_null(meta_str(&t, "model"));
    assert_string_equal(meta_str(&t, "outcome"), "submitted");
    assert_true(meta_i64(&t, "api_calls") == ATR_UNSET);     /* 0: a human drove it */
    assert_string_equal(t.steps[1].command, "ls -a");        /* "ls -a\n" in the file */
    assert_string_equal(t.steps[1].cwd, "/swe-bench__humanevalfix-python");
    assert_true(t.steps[1].dur_ms == ATR_UNSET);             /* no execution_time */
    assert_tool(&t.steps[3], "editor", "open", "main.py");
    /* a multi-line "edit 15:15 ... end_of_edit" edits the open file (the
     * state is a JSON string in this older file) */
    assert_tool(&t.steps[5], "editor", "edit", "/swe-bench__humanevalfix-python/main.py");
    assert_string_equal(t.steps[7].command, "python main.py");
    assert_tool(&t.steps[9], "editor", "submit", NULL);
    atr_trace_release(&t);
}

/* Demonstrations ship with only "history": tools come from the messages'
 * actions, the open file and cwd from the observations' prompt lines. */
static void test_history_only(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "function_calling_simple.traj", false, &t);
    assert_string_equal(t.trace_id, "swe-agent/function_calling_simple");
    assert_null(t.meta);
    assert_int_equal(t.n_steps, 10);
    check_alternating(&t);
    assert_tool(&t.steps[1], "editor", "find_file", NULL);
    assert_string_equal(t.steps[1].cwd, "/SWE-agent__test-repo");
    assert_tool(&t.steps[3], "editor", "open", "tests/missing_colon.py");
    assert_tool(&t.steps[5], "editor", "edit", "/SWE-agent__test-repo/tests/missing_colon.py");
    assert_string_equal(t.steps[7].command, "python tests/missing_colon.py");
    assert_tool(&t.steps[9], "editor", "submit", NULL);
    atr_trace_release(&t);
}

static const char *const demo_doc =
    "{\"history\": [\n"
    " {\"role\": \"system\", \"content\": \"You are SWE-agent. (Open file: <path>)\"},\n"
    " {\"role\": \"user\", \"content\": \"demo issue\", \"is_demo\": true},\n"
    " {\"role\": \"assistant\", \"content\": \"demo reply\\n```\\nls\\n```\", \"is_demo\": true},\n"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"the issue\"},\n"
    "   {\"type\": \"text\", \"text\": \"(Open file: n/a)\\n(Current directory: /repo)\"}]},\n"
    " {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"look\"}],\n"
    "  \"action\": \"str_replace_editor view /repo/a.py\"},\n"
    " {\"role\": \"user\", \"content\": \"file\"},\n"
    " {\"role\": \"assistant\", \"content\": \"open it\", "
    "\"action\": \"open \\\"my file.py\\\" 10\"},\n"
    " {\"role\": \"user\", \"content\": \"x\"},\n"
    " {\"role\": \"assistant\", \"content\": \"browse\"},\n"
    " {\"role\": \"user\", \"content\": \"page\"},\n"
    " {\"role\": \"assistant\", \"content\": \"test\"}],\n"
    " \"trajectory\": [\n"
    "  {\"action\": \"str_replace_editor view /repo/a.py\", \"execution_time\": 0.0014,\n"
    "   \"state\": \"{\\\"open_file\\\": \\\"n/a\\\", \\\"working_dir\\\": \\\"/repo\\\"}\"},\n"
    "  {\"action\": \"  open \\\"my file.py\\\" 10\\n\", "
    "\"state\": {\"working_dir\": \"/repo/sub\"}},\n"
    "  {\"action\": \"web_browser open_site --url 'http://localhost:8000/a b'\"},\n"
    "  {\"action\": \"cd /tmp && pytest -x\", \"execution_time\": 12.5},\n"
    "  {\"action\": \"exit_cost\", \"execution_time\": null}],\n"
    " \"info\": {\"exit_status\": \"submitted (exit_cost)\",\n"
    "   \"model_stats\": {\"tokens_sent\": 123456, \"tokens_received\": 789, \"api_calls\": 4}},\n"
    " \"replay_config\":\n"
    "   \"{\\\"agent\\\": {\\\"model\\\": {\\\"model_name\\\": \\\"gpt4\\\"}}}\"}\n";

static void test_demo_actions_meta(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_ok(demo_doc, &t);
    assert_string_equal(t.trace_id, "swe-agent/t");   /* no instance id: the file name */
    /* 4 model calls (the demo reply is prompt, not a call), each with its
     * entry, and the entry left after the last call */
    assert_int_equal(t.n_steps, 9);
    check_alternating_n(&t, 8);
    assert_tool(&t.steps[1], "editor", "view", "/repo/a.py");
    assert_string_equal(t.steps[1].cwd, "/repo");
    assert_int_equal(t.steps[1].dur_ms, 1);
    assert_tool(&t.steps[3], "editor", "open", "my file.py");
    assert_string_equal(t.steps[3].cwd, "/repo");   /* the state before the action */
    assert_tool(&t.steps[5], "browser", "open_site", NULL);
    assert_string_equal(t.steps[5].url, "http://localhost:8000/a b");
    assert_tool(&t.steps[7], "bash", NULL, NULL);
    assert_string_equal(t.steps[7].command, "cd /tmp && pytest -x");
    assert_string_equal(t.steps[7].cwd, "/repo/sub");
    assert_int_equal(t.steps[7].dur_ms, 12500);
    assert_tool(&t.steps[8], "editor", "exit_cost", NULL);
    assert_true(t.steps[8].dur_ms == ATR_UNSET);
    assert_string_equal(meta_str(&t, "model"), "gpt4");
    assert_string_equal(meta_str(&t, "exit_status"), "submitted (exit_cost)");
    assert_int_equal(meta_i64(&t, "recorded_input_tokens"), 123456);
    assert_int_equal(meta_i64(&t, "recorded_output_tokens"), 789);
    assert_int_equal(meta_i64(&t, "api_calls"), 4);
    /* model_stats has only totals: the 4 calls' estimates are scaled to
     * them, exactly, and say so */
    int64_t in = 0, out = 0;
    for (size_t k = 0; k < t.n_steps; k++) {
        const struct atr_step *st = &t.steps[k];
        if (st->kind != ATR_STEP_LLM)
            continue;
        assert_string_equal(st->tokens_from, "scaled");
        assert_true(st->estimated_input_tokens > 0);
        assert_int_equal(st->n_hash_ids, (st->input_tokens + 15) / 16);
        in += st->input_tokens;
        out += st->output_tokens;
    }
    assert_int_equal(in, 123456);
    assert_int_equal(out, 789);

    /* The demo really was in the prompt: without it the first call's
     * input is smaller. */
    int64_t with_demo = t.steps[0].input_tokens;
    char doc[4096];
    snprintf(doc, sizeof doc, "%s", demo_doc);
    char *p = strstr(doc, " {\"role\": \"user\", \"content\": \"demo issue\"");
    char *q = strstr(doc, " {\"role\": \"user\", \"content\": [{");
    memmove(p, q, strlen(q) + 1);
    read_ok(doc, &t);
    assert_int_equal(t.n_steps, 9);
    assert_true(t.steps[0].input_tokens < with_demo);
    atr_trace_release(&t);
}

/* No history: each entry is a call (its response) and its action; the
 * first entry's query gives the initial prompt. */
static void test_trajectory_only(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_ok("{\"trajectory\": [\n"
            " {\"query\": [{\"role\": \"system\", \"content\": \"sys prompt\"},\n"
            "            {\"role\": \"user\", \"content\": \"fix the bug\"}],\n"
            "  \"response\": \"let me look\\n```\\nls\\n```\", \"action\": \"ls\\n\",\n"
            "  \"observation\": \"a.py b.py\", \"execution_time\": 0.5},\n"
            " {\"response\": \"done\", \"action\": \"submit\", \"observation\": \"diff\"},\n"
            " {\"response\": \"(no action)\", \"action\": \"\"}]}", &t);
    assert_int_equal(t.n_steps, 5);   /* the empty action is no tool step */
    check_alternating(&t);
    assert_string_equal(t.steps[1].command, "ls");
    assert_int_equal(t.steps[1].dur_ms, 500);
    assert_tool(&t.steps[3], "editor", "submit", NULL);
    assert_int_equal(t.steps[4].kind, ATR_STEP_LLM);
    atr_trace_release(&t);
}

static void expect_error_n(const char *text, size_t len, size_t max_line, const char *msg)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(text, len, max_line, &t, &err), -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
    atr_trace_release(&t);
}

static void expect_error(const char *text, const char *msg)
{
    expect_error_n(text, strlen(text), 0, msg);
}

static void test_bad_inputs(void **state)
{
    expect_error("", "t.traj:1:1: expected a JSON value, found end of input");
    expect_error("{\"history\": [{\"role\": \"user\", \"con",
                 "t.traj:1:31: unterminated string (the text is truncated)");
    expect_error("[{\"role\": \"user\"}]",
                 "t.traj:1:1: expected a SWE-agent trajectory object, found array");
    expect_error("{\"environment\": \"swe_main\"}",
                 "t.traj:1:1: expected a \"history\" or \"trajectory\" array");
    expect_error("{\n  \"trajectory\": 5\n}",
                 "t.traj:2:17: expected \"trajectory\" to be an array, found number");
    expect_error("{\"history\": [\n  {\"role\": \"user\", \"content\": \"x\"},\n  \"hi\"\n]}",
                 "t.traj:3:3: expected a history message object, found string");
    expect_error("{\"history\": [\n  {\"content\": \"x\"}]}",
                 "t.traj:2:3: expected \"role\" (string) in this object");
    expect_error("{\"history\": [\n  {\"role\": \"user\",\n   \"content\": 7}]}",
                 "t.traj:3:15: expected \"content\" to be a string or an array of parts, "
                 "found number");
    expect_error("{\"history\": [{\"role\": \"assistant\", \"tool_calls\": {}}]}",
                 "t.traj:1:50: expected \"tool_calls\" to be an array, found object");
    expect_error("{\"history\": [{\"role\": \"assistant\", \"content\": \"x\"}],\n"
                 " \"trajectory\": [{\"action\": [\"ls\"]}]}",
                 "t.traj:2:28: expected \"action\" to be a string, found array");
    expect_error("{\"trajectory\": [{\"action\": \"ls\", \"execution_time\": \"1s\"}]}",
                 "t.traj:1:52: expected \"execution_time\" to be a number, found string");
    expect_error("{\"trajectory\": [{\"action\": \"ls\", \"state\": true}]}",
                 "t.traj:1:43: expected \"state\" to be a string or an object, found boolean");
    expect_error("{\"trajectory\": [7]}",
                 "t.traj:1:17: expected a trajectory entry object, found number");
    expect_error("{\"info\": [], \"history\": []}",
                 "t.traj:1:10: expected \"info\" to be an object, found array");
    expect_error("{\"history\": []} x", "t.traj:1:17: unexpected 'x' after JSON value");
    static const char junk[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    expect_error_n(junk, sizeof junk - 1, 0,
                   "t.traj:1:1: expected a JSON value, found byte 0x89");
    const char *big = "{\"history\": [{\"role\": \"user\", \"content\": \"long enough\"}]}";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(big, strlen(big), 16, &t, &err), -1);
    assert_non_null(strstr(err.msg, "t.traj"));
    assert_non_null(strstr(err.msg, "16"));
    atr_trace_release(&t);
}

/* Depth, empty history with entries, and odd but valid shapes. */
static void test_edge_shapes(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_ok("{\"history\": [], \"trajectory\": []}", &t);
    assert_int_equal(t.n_steps, 0);
    read_ok("{\"history\": [{\"role\": \"assistant\", \"content\": null,\n"
            "  \"tool_calls\": [{\"function\": {\"name\": \"bash\",\n"
            "    \"arguments\": \"{\\\"command\\\": \\\"make -j4\\\"}\"}},\n"
            "   {\"function\": {\"name\": \"str_replace_editor\",\n"
            "    \"arguments\": {\"command\": \"create\", \"path\": \"/x.c\"}}},\n"
            "   {\"function\": {\"name\": \"lookup\", \"arguments\": \"not json\"}},\n"
            "   {\"type\": \"function\"}]}]}", &t);
    assert_int_equal(t.n_steps, 4);
    assert_string_equal(t.steps[1].command, "make -j4");
    assert_tool(&t.steps[2], "editor", "create", "/x.c");
    assert_tool(&t.steps[3], "lookup", NULL, NULL);
    assert_non_null(atr_json_get(t.steps[3].extra, "arguments"));
    char deep[2048];
    size_t n = (size_t)snprintf(deep, sizeof deep, "{\"history\": ");
    for (int i = 0; i < 300; i++)
        deep[n++] = '[';
    deep[n] = '\0';
    struct atr_error err;
    assert_int_equal(read_text(deep, n, 0, &t, &err), -1);
    assert_non_null(strstr(err.msg, "t.traj:1:"));
    atr_trace_release(&t);
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("swe-agent");
    assert_non_null(f);
    const char *traj = "{\"environment\": \"swe_main\", \"trajectory\": [{\"action\": \"ls\", "
                       "\"observation\": \"\"}], \"history\": []}";
    assert_true(f->sniff(traj, strlen(traj), "<stdin>") >= 90);
    const char *hist = "{\"history\": [{\"role\": \"system\", \"content\": \"x\", "
                       "\"message_type\": \"system_prompt\"}]}";
    assert_true(f->sniff(hist, strlen(hist), "x.json") >= 90);
    const char *mini = "{\"info\": {}, \"messages\": [], "
        "\"trajectory_format\": \"mini-swe-agent-1\"}";
    assert_int_equal(f->sniff(mini, strlen(mini), "a.traj.json"), 0);
    const char *events = "[{\"id\": 1, \"timestamp\": \"x\", \"action\": \"run\"}]";
    assert_int_equal(f->sniff(events, strlen(events), "a.json"), 0);
    assert_int_equal(f->sniff("{}", 2, "a.traj"), 30);  /* the name alone: a hint */
    assert_int_equal(f->sniff("", 0, "a.traj"), 0);
}

/* A .traj read with another reader named (--from atr, --from openhands):
 * that reader's error, then that the input looks like swe-agent. */
static void expect_named_error(const char *format, const char *msg)
{
    const char *traj = "{\n  \"environment\": \"swe_main\",\n  \"history\": [\n"
                       "    {\"role\": \"system\", \"content\": \"x\"}],\n"
                       "  \"trajectory\": [{\"action\": \"ls\", \"observation\": \"\"}]\n}\n";
    struct atr_input *in = atr_input_open_mem(traj, strlen(traj), "t.traj");
    struct atr_error err;
    struct atr_reader *r = atr_reader_open_input(in, format, NULL, &err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &t, &err), -1);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got \"%s\", wanted \"%s\"", err.msg, msg);
    atr_trace_release(&t);
    atr_reader_close(r);
}

static void test_named_other_format(void **state)
{
    expect_named_error("atr", "t.traj:1:2: expected string key or '}', found end of input "
                              "(the text is truncated) (not an atr trace: it looks like swe-agent)");
    expect_named_error("openhands", "t.traj:4:5: expected an openhands event (an object with "
                                    "\"action\" or \"observation\") (not an openhands trace: "
                                    "it looks like swe-agent)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marshmallow),
        cmocka_unit_test(test_keep_content),
        cmocka_unit_test(test_human_thought),
        cmocka_unit_test(test_history_only),
        cmocka_unit_test(test_demo_actions_meta),
        cmocka_unit_test(test_trajectory_only),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_edge_shapes),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_named_other_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
