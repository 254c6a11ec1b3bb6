/* test-fmt-mini-swe-agent.c - the mini-swe-agent reader on a real DeepSeek
 * SWE-bench run (format 1.1, tool calls and timestamps), on the legacy
 * fenced-message array, on synthetic edge cases and on bad inputs. Expected
 * values were read off the source files with python. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "trace/reader.h"

#define DATA ATR_TEST_DATA "/mini-swe-agent/"

static void read_file(const char *path, struct atr_trace *t)
{
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(path, NULL, NULL, &err);
    if (!r)
        fail_msg("open %s: %s", path, err.msg);
    assert_string_equal(atr_reader_format(r), "mini-swe-agent");
    if (atr_reader_next(r, t, &err) != 1)
        fail_msg("%s", err.msg);
    struct atr_trace end = ATR_TRACE_INIT;   /* next clears the trace it is given */
    assert_int_equal(atr_reader_next(r, &end, &err), 0);
    atr_trace_release(&end);
    atr_reader_close(r);
}

static int read_text(const char *text, size_t len, size_t max_line, struct atr_trace *t,
                     struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, len, "m.traj.json");
    struct atr_read_opts opts = {.max_line = max_line};
    struct atr_reader *r = atr_reader_open_input(in, "mini-swe-agent", &opts, err);
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

/* Steps alternate llm, tool; consecutive prompts share all but the last
 * (partial) block of the earlier one, and grow. */
static void check_alternating(const struct atr_trace *t)
{
    const struct atr_step *prev = NULL;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *s = &t->steps[i];
        assert_int_equal(s->kind, i % 2 ? ATR_STEP_TOOL : ATR_STEP_LLM);
        if (s->kind == ATR_STEP_TOOL) {
            assert_string_equal(s->tool, "bash");
            continue;
        }
        if (prev) {
            assert_true(s->input_tokens > prev->input_tokens);
            for (uint32_t k = 0; k + 1 < prev->n_hash_ids; k++)
                assert_true(s->hash_ids[k] == prev->hash_ids[k]);
        }
        prev = s;
    }
}

static void test_django(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "django__django-14752__deepseek_chat_submitted.traj.json", &t);
    assert_string_equal(t.trace_id, "mini-swe-agent/django__django-14752");
    assert_string_equal(t.source, "mini-swe-agent");
    assert_int_equal(t.n_steps, 62);           /* 31 calls, one bash call each */
    check_alternating(&t);
    assert_string_equal(meta_str(&t, "model"), "deepseek/deepseek-chat");
    assert_string_equal(meta_str(&t, "exit_status"), "Submitted");
    assert_string_equal(meta_str(&t, "trajectory_format"), "mini-swe-agent-1.1");
    assert_int_equal(meta_i64(&t, "api_calls"), 31);
    /* sums of the responses' usage over the 31 calls */
    assert_int_equal(meta_i64(&t, "recorded_input_tokens"), 294301);
    assert_int_equal(meta_i64(&t, "recorded_output_tokens"), 7074);

    /* First call: from the response's "created" (1775812896) to the
     * message's timestamp (1775812897.218). */
    const struct atr_step *s = &t.steps[0];
    assert_int_equal(s->t_ms, 0);
    assert_int_equal(s->dur_ms, 1218);
    assert_int_equal(s->input_tokens, 1995);
    assert_int_equal(s->output_tokens, 93);
    assert_string_equal(s->tokens_from, "recorded");
    assert_true(s->estimated_input_tokens > 0);
    assert_int_equal(s->n_hash_ids, (1995 + 15) / 16);
    int64_t cached = 0;
    assert_true(atr_json_get_i64(s->extra, "recorded_cached_tokens", &cached));
    assert_int_equal(cached, 320);
    s = &t.steps[1];
    assert_string_equal(s->command,
                        "find /testbed -type f -name \"*.py\" | grep -i autocomplete | head -20");
    assert_string_equal(s->cwd, "/testbed");       /* config.environment */
    assert_int_equal(s->timeout_ms, 60000);
    assert_int_equal(s->t_ms, 1218);
    assert_int_equal(s->dur_ms, 302);              /* to the tool message's timestamp */
    assert_int_equal(s->exit_code, 0);
    assert_int_equal(t.steps[2].t_ms, 1520);       /* the next call starts there */
    assert_int_equal(t.steps[7].exit_code, 1);     /* a grep without matches */
    /* The last call ends at 1775813099.364: 203364 ms after the origin. */
    s = &t.steps[60];
    assert_int_equal(s->t_ms + s->dur_ms, 203364);
    /* The submit command's output went to the exit message: no result. */
    s = &t.steps[61];
    assert_string_equal(s->command, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt");
    assert_true(s->exit_code == ATR_UNSET && s->dur_ms == ATR_UNSET);
    for (size_t i = 1; i < 61; i++)
        assert_true(t.steps[i].t_ms >= t.steps[i - 1].t_ms);
    atr_trace_release(&t);
}

static void test_legacy_array(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_file(DATA "github_issue.traj.json", &t);
    assert_string_equal(t.trace_id, "mini-swe-agent/github_issue");
    assert_null(t.meta);
    assert_int_equal(t.n_steps, 20);
    check_alternating(&t);
    assert_string_equal(t.steps[1].command,
                        "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/"
                        "./missing_colon.py");
    assert_int_equal(t.steps[1].exit_code, 1);     /* <returncode>1</returncode> */
    assert_string_equal(t.steps[3].command, "ls -la");
    assert_int_equal(t.steps[3].exit_code, 0);
    assert_true(strncmp(t.steps[17].command, "cat > tests/missing_colon.py << 'EOF'\n", 38) == 0);
    assert_string_equal(t.steps[19].command, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && "
                                             "git add -A && git diff --cached");
    assert_true(t.steps[19].exit_code == ATR_UNSET);
    for (size_t i = 0; i < t.n_steps; i++) {
        assert_true(t.steps[i].t_ms == ATR_UNSET);
        assert_null(t.steps[i].cwd);
    }
    atr_trace_release(&t);
}

/* Fences: exactly one block runs; two are a format error (no step); the
 * 1.x ```bash fence and content parts work too. */
static void test_fences(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_ok("{\"trajectory_format\": \"mini-swe-agent-1\", \"messages\": [\n"
            " {\"role\": \"system\", \"content\": \"sys\"},\n"
            " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"task\"}]},\n"
            " {\"role\": \"assistant\", "
            "\"content\": \"a\\n```bash\\nls\\n```\\nb\\n```bash\\npwd\\n```\"},\n"
            " {\"role\": \"user\", \"content\": \"Please always provide EXACTLY ONE action\"},\n"
            " {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", "
            "\"text\": \"t\\n```bash  \\n\\n  make test \\n```\"}]},\n"
            " {\"role\": \"user\", "
            "\"content\": \"<returncode>2</returncode>\\n<output>\\nfail</output>\"},\n"
            " {\"role\": \"assistant\", \"content\": \"```mswea_bash_command\\necho hi\\n```\"},\n"
            " {\"role\": \"user\", \"content\": \"<returncode>-9</returncode>\"}]}", &t);
    assert_string_equal(t.trace_id, "mini-swe-agent/m");
    assert_int_equal(t.n_steps, 5);
    assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
    assert_int_equal(t.steps[1].kind, ATR_STEP_LLM);     /* the rejected reply ran nothing */
    assert_string_equal(t.steps[2].command, "make test");
    assert_int_equal(t.steps[2].exit_code, 2);
    assert_string_equal(t.steps[4].command, "echo hi");
    assert_int_equal(t.steps[4].exit_code, -9);
    assert_string_equal(meta_str(&t, "trajectory_format"), "mini-swe-agent-1");
    atr_trace_release(&t);
}

/* Parallel tool calls answered out of order are matched by tool_call_id;
 * a non-bash tool keeps its arguments; unparsable arguments ran nothing. */
static void test_tool_calls(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_ok("{\"instance_id\": \"x__y-1\", \"info\": {\"exit_status\": \"LimitsExceeded\",\n"
            "  \"config\": \"{\\\"environment\\\": {\\\"cwd\\\": \\\"/w\\\", "
            "\\\"timeout\\\": 1.5}}\"},\n"
            " \"messages\": [\n"
            " {\"role\": \"user\", \"content\": \"go\"},\n"
            " {\"role\": \"assistant\", \"content\": \"\", \"extra\": {\"timestamp\": 100.5},\n"
            "  \"tool_calls\": [\n"
            "   {\"id\": \"c1\", \"function\": {\"name\": \"bash\", "
            "\"arguments\": \"{\\\"command\\\": \\\"sleep 1\\\"}\"}},\n"
            "   {\"id\": \"c2\", \"function\": {\"name\": \"bash\", "
            "\"arguments\": \"{\\\"command\\\": \\\"false\\\"}\"}},\n"
            "   {\"id\": \"c3\", \"function\": {\"name\": \"search\", "
            "\"arguments\": {\"q\": \"x\"}}},\n"
            "   {\"id\": \"c4\", \"function\": {\"name\": \"bash\", "
            "\"arguments\": \"{broken\"}}]},\n"
            " {\"role\": \"tool\", \"tool_call_id\": \"c2\", \"content\": \"\",\n"
            "  \"extra\": {\"returncode\": 1, \"timestamp\": 100.75}},\n"
            " {\"role\": \"tool\", \"tool_call_id\": \"c1\", "
            "\"content\": \"<returncode>0</returncode>\",\n"
            "  \"extra\": {\"timestamp\": 101.75}},\n"
            " {\"role\": \"assistant\", \"content\": \"done\", \"extra\": {\"timestamp\": 103}},\n"
            " {\"role\": \"exit\", \"content\": \"\", "
            "\"extra\": {\"exit_status\": \"ignored\"}}]}", &t);
    assert_string_equal(t.trace_id, "mini-swe-agent/x__y-1");
    assert_string_equal(meta_str(&t, "exit_status"), "LimitsExceeded");
    assert_true(meta_i64(&t, "recorded_input_tokens") == ATR_UNSET);   /* no usage */
    assert_int_equal(t.n_steps, 5);
    const struct atr_step *s = t.steps;
    /* no "created": the first call's start is unknown, the clock starts
     * at its end */
    assert_true(s[0].t_ms == ATR_UNSET && s[0].dur_ms == ATR_UNSET);
    assert_string_equal(s[1].command, "sleep 1");
    assert_int_equal(s[1].exit_code, 0);
    assert_string_equal(s[1].cwd, "/w");
    assert_int_equal(s[1].timeout_ms, 1500);
    assert_string_equal(s[2].command, "false");
    assert_int_equal(s[2].exit_code, 1);
    /* c2 was reported first (100.5 -> 100.75), then c1 (100.75 -> 101.75);
     * start times still follow the step order */
    assert_int_equal(s[2].dur_ms, 250);
    assert_int_equal(s[1].t_ms, 250);
    assert_int_equal(s[1].dur_ms, 1000);
    assert_int_equal(s[2].t_ms, 250);
    assert_string_equal(s[3].tool, "search");
    assert_null(s[3].command);
    assert_non_null(atr_json_get(s[3].extra, "arguments"));
    assert_int_equal(s[4].kind, ATR_STEP_LLM);
    assert_int_equal(s[4].t_ms, 1250);
    assert_int_equal(s[4].dur_ms, 1250);
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
    expect_error("", "m.traj.json:1:1: expected a JSON value, found end of input");
    expect_error("   \n", "m.traj.json:2:1: expected a JSON value, found end of input");
    expect_error("[{\"role\": \"user\", \"content\": \"hi\"}",
                 "m.traj.json:1:35: expected ',' or ']' after array element, found end of input "
                 "(the text is truncated)");
    expect_error("\"messages\"",
                 "m.traj.json:1:1: expected a mini-swe-agent trajectory object or an array "
                 "of messages, found string");
    expect_error("{\"info\": {}}", "m.traj.json:1:1: expected \"messages\" (array) in this object");
    /* Without the .traj.json keys this is the shape of an openai-chat row,
     * and the error says so. */
    expect_error("{\"messages\": {\"role\": \"user\"}}",
                 "m.traj.json:1:14: expected \"messages\" to be array, found object "
                 "(not a mini-swe-agent trace: it looks like openai-chat)");
    expect_error("{\"messages\": [], \"info\": \"x\"}",
                 "m.traj.json:1:26: expected \"info\" to be an object, found string");
    expect_error("[\n  {\"role\": \"user\", \"content\": \"x\"},\n  null\n]",
                 "m.traj.json:3:3: expected a message object, found null");
    expect_error("[{\"role\": 1}]", "m.traj.json:1:11: expected \"role\" to be string, "
        "found number");
    expect_error("[{\"role\": \"user\",\n  \"content\": {\"text\": \"x\"}}]",
                 "m.traj.json:2:14: expected \"content\" to be a string or an array of parts, "
                 "found object");
    expect_error("[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": \"ls\"}]",
                 "m.traj.json:1:53: expected \"tool_calls\" to be an array, found string");
    static const char junk[] = "\x1f\x8b\x08\0garbage";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(junk, sizeof junk - 1, 0, &t, &err), -1);
    assert_true(strncmp(err.msg, "m.traj.json:", 12) == 0);
    const char *big = "[{\"role\": \"user\", \"content\": \"a long enough message\"}]";
    assert_int_equal(read_text(big, strlen(big), 16, &t, &err), -1);
    assert_non_null(strstr(err.msg, "16"));
    atr_trace_release(&t);
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("mini-swe-agent");
    assert_non_null(f);
    const char *v11 = "{\"info\": {\"mini_version\": \"2.2.7\"}, \"messages\": [], "
                      "\"trajectory_format\": \"mini-swe-agent-1.1\"}";
    assert_true(f->sniff(v11, strlen(v11), "<stdin>") >= 90);
    const char *legacy = "[{\"role\": \"assistant\", "
        "\"content\": \"```mswea_bash_command\\nls\\n```\"}]";
    assert_true(f->sniff(legacy, strlen(legacy), "<stdin>") >= 90);
    const char *obs = "[{\"role\": \"user\", \"content\": \"<returncode>0</returncode>\"}]";
    assert_true(f->sniff(obs, strlen(obs), "x.json") >= 80);
    /* plain chat arrays and SWE-agent files are not ours */
    const char *chat = "[{\"role\": \"user\", \"content\": \"hello\"}]";
    assert_int_equal(f->sniff(chat, strlen(chat), "chat.json"), 0);
    const char *swe = "{\"trajectory\": [], \"history\": [], \"info\": {}}";
    assert_int_equal(f->sniff(swe, strlen(swe), "a.traj"), 0);
    assert_int_equal(f->sniff("", 0, "a.traj.json"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_django),
        cmocka_unit_test(test_legacy_array),
        cmocka_unit_test(test_fences),
        cmocka_unit_test(test_tool_calls),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_sniff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
