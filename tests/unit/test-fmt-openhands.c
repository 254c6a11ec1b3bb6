/* test-fmt-openhands.c - the OpenHands reader on the real replay fixtures,
 * on the feedback and eval-output shapes, on delegation, and on bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "trace/reader.h"

#define DIR ATR_TEST_DATA "/openhands/"

/* Reads the single trace of a file, sniffing its format. */
static void read_one(const char *path, struct atr_trace *t)
{
    struct atr_error err;
    struct atr_read_opts opts = {0};
    struct atr_reader *r = atr_reader_open(path, NULL, &opts, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_string_equal(atr_reader_format(r), "openhands");
    if (atr_reader_next(r, t, &err) != 1)
        fail_msg("%s", err.msg);
    struct atr_trace rest = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &rest, &err), 0);     /* one trace per file */
    atr_trace_release(&rest);
    atr_reader_close(r);
}

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

static void count_kinds(const struct atr_trace *t, size_t *llm, size_t *tool)
{
    *llm = *tool = 0;
    for (size_t i = 0; i < t->n_steps; i++)
        (*(t->steps[i].kind == ATR_STEP_LLM ? llm : tool))++;
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

static void test_gui_mode(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DIR "basic_gui_mode.json", &t);
    size_t llm, tool;
    count_kinds(&t, &llm, &tool);
    assert_string_equal(t.trace_id, "openhands/basic_gui_mode");
    assert_string_equal(t.source, "openhands");
    assert_int_equal(t.n_steps, 9);
    assert_int_equal(llm, 5);
    assert_int_equal(tool, 4);
    /* event 7 (run, 20:29:35.040) answered by event 8 (20:29:35.699); the
     * first event is at 20:29:13.519 */
    const struct atr_step *s = &t.steps[1];
    assert_string_equal(s->tool, "bash");
    assert_string_equal(s->command, "mkdir -p /workspace/todo-app");
    assert_int_equal(s->t_ms, 21521);
    assert_int_equal(s->dur_ms, 659);
    assert_int_equal(s->exit_code, 0);
    assert_null(s->cwd);
    /* the llm call ran from the last event before it (6, 20:29:32.289) */
    assert_int_equal(t.steps[0].t_ms, 18770);
    assert_int_equal(t.steps[0].dur_ms, 2751);
    /* the recorded usage is what the step carries (the estimate beside it:
     * the system prompt and tool schemas are not in the event stream) */
    assert_int_equal(t.steps[0].input_tokens, 3439);
    assert_int_equal(t.steps[0].output_tokens, 104);
    assert_string_equal(t.steps[0].tokens_from, "recorded");
    assert_null(t.steps[0].output_tokens_from);
    assert_true(t.steps[0].estimated_input_tokens > 0 &&
                t.steps[0].estimated_input_tokens < 3439);
    assert_int_equal(t.steps[0].n_hash_ids, (3439 + 15) / 16);
    assert_int_equal(t.steps[0].recorded_input_tokens, ATR_UNSET);
    /* editor create, its sub-command taken from the model's tool call */
    assert_string_equal(t.steps[3].tool, "editor");
    assert_string_equal(t.steps[3].action, "create");
    assert_string_equal(t.steps[3].path, "/workspace/todo-app/index.html");
    /* a file operation with the size of the file_text the model wrote (in
     * its tool call), no content, and the shell's directory at the time */
    assert_string_equal(t.steps[3].file_op, "create");
    assert_int_equal(t.steps[3].bytes, 3872);
    assert_int_equal(t.steps[3].old_bytes, ATR_UNSET);
    assert_string_equal(t.steps[3].cwd, "/workspace");
    /* the server that never returned: exit code -1 after 30.58 s, in the
     * directory the previous command reported */
    s = &t.steps[7];
    assert_string_equal(s->command, "cd /workspace/todo-app && python3 -m http.server 8000");
    assert_int_equal(s->exit_code, -1);
    assert_int_equal(s->dur_ms, 30580);
    assert_string_equal(s->cwd, "/workspace");
    /* the final agent message has no recorded usage */
    assert_string_equal(t.steps[8].tokens_from, "estimated");
    /* ... so its estimate is anchored on the last recorded prompt */
    assert_true(t.steps[8].input_tokens > 5488);
    assert_true(t.steps[8].estimated_input_tokens < 5488);
    assert_string_equal(meta_str(&t, "model"), "claude-3-5-sonnet-20241022");
    assert_int_equal(meta_i64(&t, "recorded_input_tokens"), 3439 + 3601 + 4769 + 5488);
    assert_int_equal(meta_i64(&t, "recorded_output_tokens"), 104 + 1142 + 693 + 85);
    assert_string_equal(meta_str(&t, "outcome"), "awaiting_user_input");
    check_prefixes(&t);
    atr_trace_release(&t);
}

static void test_fixtures(void **state)
{
    static const struct {
        const char *file;
        size_t steps, llm;
        const char *outcome;
    } files[] = {
        {"basic.json", 3, 2, "finished"},
        {"basic_interactions.json", 3, 3, "finished"},
        {"wrong_initial_state.json", 7, 4, "finished"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct atr_trace t = ATR_TRACE_INIT;
        char path[512];
        snprintf(path, sizeof path, DIR "%s", files[i].file);
        read_one(path, &t);
        size_t llm, tool;
        count_kinds(&t, &llm, &tool);
        assert_int_equal(t.n_steps, files[i].steps);
        assert_int_equal(llm, files[i].llm);
        assert_string_equal(meta_str(&t, "outcome"), files[i].outcome);
        check_prefixes(&t);
        atr_trace_release(&t);
    }
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DIR "wrong_initial_state.json", &t);
    assert_string_equal(t.steps[1].action, "view");
    assert_string_equal(t.steps[1].path, "/workspace");
    assert_string_equal(t.steps[3].command, "mv /workspace/game_2048.py /workspace/2048.py");
    assert_int_equal(t.steps[3].exit_code, 0);
    assert_int_equal(t.steps[6].input_tokens, 3933);
    assert_string_equal(t.steps[6].tokens_from, "recorded");
    atr_trace_release(&t);
}

/* Reads text with the openhands reader to the end; returns the last rc,
 * the first trace in *t and the number of traces in *n. */
static int run_text(const char *text, const struct atr_read_opts *opts, struct atr_trace *t,
                    int *n, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "oh.json");
    struct atr_reader *r = atr_reader_open_input(in, "openhands", opts, err);
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

/* Edits keep their sizes, never their text: str_replace's old_str/new_str
 * and insert's new_str lengths; undo_edit is no file operation. */
static void test_edit_sizes(void **state)
{
    (void)state;
#define ED(id, args)                                                                             \
    "{\"id\": " #id ", \"timestamp\": \"2025-04-01T10:00:0" #id "\", \"source\": \"agent\", "   \
    "\"action\": \"edit\", \"args\": " args "}"
    const char *text = "["
        ED(1, "{\"path\": \"/w/a.py\", \"command\": \"str_replace\", \"old_str\": \"abc\", "
              "\"new_str\": \"hello\"}") ","
        ED(2, "{\"path\": \"/w/a.py\", \"command\": \"insert\", \"new_str\": \"xy\", "
              "\"insert_line\": 3}") ","
        ED(3, "{\"path\": \"/w/a.py\", \"command\": \"undo_edit\"}") "]";
#undef ED
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int n;
    if (run_text(text, NULL, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    const struct atr_step *e[3];
    size_t j = 0;
    for (size_t k = 0; k < t.n_steps && j < 3; k++)
        if (t.steps[k].kind == ATR_STEP_TOOL)
            e[j++] = &t.steps[k];
    assert_int_equal(j, 3);
    assert_string_equal(e[0]->file_op, "replace");
    assert_int_equal(e[0]->bytes, 5);
    assert_int_equal(e[0]->old_bytes, 3);
    assert_string_equal(e[1]->file_op, "insert");
    assert_int_equal(e[1]->bytes, 2);
    assert_null(e[2]->file_op);
    atr_trace_release(&t);
}

/* llm_metrics is a running total: a call's own counts are its token_usages
 * entry (by response_id), else the growth of accumulated_token_usage since
 * the previous call, never the total itself. */
static void test_llm_metrics(void **state)
{
    (void)state;
#define EV(id, rid, lm)                                                                          \
    "{\"id\": " #id ", \"timestamp\": \"2025-04-01T10:00:0" #id "\", \"source\": \"agent\", "   \
    "\"action\": \"run\", \"tool_call_metadata\": {\"model_response\": {\"id\": \"" rid "\"}}, " \
    "\"llm_metrics\": " lm ", \"args\": {\"command\": \"ls\"}}"
    const char *text =
        "{\"instance_id\": \"m\", \"history\": ["
        "{\"id\": 1, \"timestamp\": \"2025-04-01T10:00:01\", \"source\": \"user\", "
        "\"action\": \"message\", \"args\": {\"content\": \"Fix it.\"}},"
        EV(2, "r1", "{\"accumulated_token_usage\": {\"prompt_tokens\": 1000, "
                    "\"completion_tokens\": 50}}") ","
        EV(3, "r2", "{\"accumulated_token_usage\": {\"prompt_tokens\": 2300, "
                    "\"completion_tokens\": 80}}") ","
        EV(4, "r3", "{\"accumulated_token_usage\": {\"prompt_tokens\": 3900, "
                    "\"completion_tokens\": 99}, \"token_usages\": [{\"prompt_tokens\": 1111, "
                    "\"completion_tokens\": 7, \"response_id\": \"r3\"}]}") ","
        EV(5, "r4", "{}")
        "], \"metrics\": {\"token_usages\": [{\"prompt_tokens\": 1700, "
        "\"completion_tokens\": 9, \"response_id\": \"r4\"}]}}\n";
#undef EV
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int n;
    if (run_text(text, NULL, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    static const int64_t in[] = {1000, 1300, 1111, 1700}, out[] = {50, 30, 7, 9};
    size_t j = 0;
    for (size_t k = 0; k < t.n_steps; k++) {
        const struct atr_step *s = &t.steps[k];
        if (s->kind != ATR_STEP_LLM)
            continue;
        assert_true(j < 4);
        assert_int_equal(s->input_tokens, in[j]);
        assert_int_equal(s->output_tokens, out[j]);
        assert_string_equal(s->tokens_from, "recorded");
        assert_int_equal(s->n_hash_ids, (in[j] + 15) / 16);
        j++;
    }
    assert_int_equal(j, 4);
    atr_trace_release(&t);
}

/* Eval output: one record per line; parallel tool calls of one response
 * are one llm step; the latency comes from metrics.response_latencies. */
static void test_eval_output(void **state)
{
    const char *text =
        "{\"instance_id\": \"ponyc-1\", \"metadata\": {\"agent_class\": \"CodeActAgent\", "
        "\"llm_config\": {\"model\": \"llama-4\"}}, \"history\": ["
        "{\"id\": 0, \"timestamp\": \"2025-04-01T10:00:00\", \"source\": \"agent\", "
        "\"action\": \"system\", \"args\": {\"content\": \"You are an agent.\"}},"
        "{\"id\": 1, \"timestamp\": \"2025-04-01T10:00:00.5\", \"source\": \"user\", "
        "\"action\": \"message\", \"args\": {\"content\": \"Fix the bug.\"}},"
        "{\"id\": 2, \"timestamp\": \"2025-04-01T10:00:03\", \"source\": \"agent\", "
        "\"action\": \"run\", \"tool_call_metadata\": {\"model_response\": {\"id\": \"r1\", "
        "\"choices\": [{\"message\": {\"content\": \"Look.\", \"tool_calls\": ["
        "{\"id\": \"c1\", \"function\": {\"name\": \"execute_bash\", \"arguments\": \"{}\"}},"
        "{\"id\": \"c2\", \"function\": {\"name\": \"execute_bash\", \"arguments\": \"{}\"}}]}}],"
        "\"usage\": {\"prompt_tokens\": 1000, \"completion_tokens\": 50}}}, "
        "\"args\": {\"command\": \"ls\"}},"
        "{\"id\": 3, \"timestamp\": \"2025-04-01T10:00:04.25\", \"source\": \"agent\", "
        "\"cause\": 2, \"observation\": \"run\", \"content\": \"src\", "
        "\"extras\": {\"metadata\": {\"exit_code\": 0, \"working_dir\": \"/w\"}}},"
        "{\"id\": 4, \"timestamp\": \"2025-04-01T10:00:04.3\", \"source\": \"agent\", "
        "\"action\": \"run\", \"tool_call_metadata\": {\"model_response\": {\"id\": \"r1\"}}, "
        "\"args\": {\"command\": \"C-c\", \"is_input\": true}},"
        "{\"id\": 5, \"timestamp\": \"2025-04-01T10:00:04.4\", \"source\": \"agent\", "
        "\"cause\": 4, \"observation\": \"run\", \"content\": \"^C\", "
        "\"extras\": {\"metadata\": {\"exit_code\": 130}}},"
        "{\"id\": 6, \"timestamp\": \"2025-04-01T10:00:06.4\", \"source\": \"agent\", "
        "\"action\": \"browse_interactive\", \"tool_call_metadata\": {\"model_response\": "
        "{\"id\": \"r2\", \"usage\": {\"prompt_tokens\": 1200, \"completion_tokens\": 5}}}, "
        "\"args\": {\"browser_actions\": \"click('a51')\", \"thought\": \"Click.\"}}],"
        "\"metrics\": {\"response_latencies\": [{\"latency\": 1.5, \"response_id\": \"r2\"}]}}\n";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int n;
    if (run_text(text, NULL, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 1);
    assert_string_equal(t.trace_id, "openhands/ponyc-1");
    assert_string_equal(meta_str(&t, "model"), "llama-4");
    assert_string_equal(meta_str(&t, "agent"), "CodeActAgent");
    assert_int_equal(meta_i64(&t, "recorded_input_tokens"), 2200);
    assert_int_equal(t.n_steps, 5);
    assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
    assert_int_equal(t.steps[0].t_ms, 500);
    assert_int_equal(t.steps[0].dur_ms, 2500);
    assert_string_equal(t.steps[1].command, "ls");
    assert_int_equal(t.steps[1].dur_ms, 1250);
    assert_string_equal(t.steps[2].tool, "bash_input");
    assert_string_equal(t.steps[2].cwd, "/w");
    assert_int_equal(t.steps[2].exit_code, 130);
    assert_int_equal(t.steps[3].kind, ATR_STEP_LLM);
    assert_int_equal(t.steps[3].dur_ms, 1500);       /* the recorded latency */
    assert_int_equal(t.steps[3].t_ms, 4900);
    assert_string_equal(t.steps[4].tool, "browser");
    assert_string_equal(t.steps[4].action, "click");
    check_prefixes(&t);
    atr_trace_release(&t);
}

/* The 2024 feedback dataset: records with "trajectory", args in "extras",
 * no "cause", null ids, UI status records, space-separated timestamps. */
static void test_feedback(void **state)
{
    const char *text =
        "[{\"version\": \"1.0\", \"feedback\": \"positive\", \"trajectory\": [\r\n"
        "{\"action\": \"initialize\", \"extras\": {\"LLM_MODEL\": \"claude-3-5\"}, "
        "\"id\": null, \"observation\": null, \"source\": \"environment\", \"timestamp\": null},\r\n"
        "{\"action\": null, \"content\": \"ok\", \"source\": \"environment\"},\r\n"
        "{\"action\": \"message\", \"content\": \"Check it\", \"extras\": {\"content\": "
        "\"Check it\"}, \"id\": null, \"source\": \"user\", \"timestamp\": null},\r\n"
        "{\"action\": \"run_ipython\", \"extras\": {\"code\": \"open_file('a.py')\", "
        "\"thought\": \"Look.\"}, \"id\": 8, \"observation\": null, \"source\": \"agent\", "
        "\"timestamp\": \"2024-07-17 16:09:36.948070\"},\r\n"
        "{\"action\": null, \"content\": \"1|import os\\r\\n\", \"id\": 9, "
        "\"observation\": \"run_ipython\", \"source\": \"agent\", "
        "\"timestamp\": \"2024-07-17 16:09:37.402528\"},\r\n"
        "{\"action\": \"run\", \"extras\": {\"command\": \"ls\"}, \"id\": 10, "
        "\"source\": \"agent\", \"timestamp\": \"2024-07-17 16:09:38\"},\r\n"
        "{\"observation\": \"run\", \"content\": \"a.py\", \"extras\": {\"exit_code\": 0}, "
        "\"id\": 11, \"source\": \"agent\", \"timestamp\": \"2024-07-17 16:09:39.5\"}]},\r\n"
        "{\"feedback\": \"negative\", \"trajectory\": []}]\r\n";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int n;
    if (run_text(text, NULL, &t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 2);         /* the second record is empty */
    assert_string_equal(t.trace_id, "openhands/oh/0");
    assert_string_equal(meta_str(&t, "model"), "claude-3-5");
    assert_string_equal(meta_str(&t, "feedback"), "positive");
    assert_int_equal(t.n_steps, 4);
    assert_string_equal(t.steps[1].tool, "ipython");
    assert_string_equal(t.steps[1].command, "open_file('a.py')");
    assert_int_equal(t.steps[1].t_ms, 0);
    assert_int_equal(t.steps[1].dur_ms, 454);
    assert_string_equal(t.steps[3].command, "ls");
    assert_int_equal(t.steps[3].exit_code, 0);
    assert_int_equal(t.steps[3].dur_ms, 1500);
    assert_int_equal(t.steps[2].t_ms, 454);       /* from the ipython output on */
    assert_int_equal(t.steps[2].dur_ms, 598);
    atr_trace_release(&t);
    /* the shape sniffs as openhands too */
    const struct atr_format *f = atr_format_find("openhands");
    assert_true(f->sniff(text, strlen(text), "fb.json") >= 90);
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

#define EV "{\"id\": 1, \"timestamp\": \"2025-01-01T00:00:00\", \"source\": \"agent\", "

static void test_bad_inputs(void **state)
{
    expect_error("", 0, "oh.json:1:1: expected a JSON array of openhands events or "
                        "JSON lines of records");
    expect_error("\n  x", 0, "oh.json:2:3: expected a JSON array of openhands events or "
                             "JSON lines of records");
    expect_error("\x01\x02\xff\xfe", 0, "oh.json:1:1: expected a JSON array of openhands "
                                        "events or JSON lines of records");
    expect_error("[]", 0, "oh.json:1:1: expected at least one openhands event");
    expect_error("[5]", 0, "oh.json:1:2: expected an event object, found number");
    expect_error("[" EV "\"action\": 5}]", 0,
                 "oh.json:1:77: expected \"action\" to be a string, found number");
    expect_error("[" EV "\"action\": \"run\", \"args\": []}]", 0,
                 "oh.json:1:92: expected \"args\" to be an object, found array");
    expect_error("[{\"timestamp\": \"yesterday\", \"action\": \"run\"}]", 0,
                 "oh.json:1:16: expected \"timestamp\" as ISO-8601 date and time");
    expect_error("[{\"timestamp\": \"2025-13-01T00:00:00\", \"action\": \"run\"}]", 0,
                 "oh.json:1:16: expected \"timestamp\" as ISO-8601 date and time");
    expect_error("[{\"id\": \"7\", \"action\": \"run\"}]", 0,
                 "oh.json:1:9: expected \"id\" to be an integer");
    expect_error("[" EV "\"observation\": \"run\", \"cause\": 1.5}]", 0,
                 "oh.json:1:98: expected \"cause\" to be an integer");
    expect_error("[" EV "\"action\": \"run\", \"tool_call_metadata\": 3}]", 0,
                 "oh.json:1:106: expected \"tool_call_metadata\" to be an object, found number");
    expect_error("{\"instance_id\": \"x\", \"history\": 5}\n", 0,
                 "oh.json:1:33: expected a record with a \"history\" or \"trajectory\" "
                 "array of events");
    expect_error("{\"instance_id\": \"x\", \"history\": []}\n{\"history\": [1]}\n", 0,
                 "oh.json:2:14: expected an event object, found number");
    expect_error("{\"history\": [{\"action\": \"run\"}]}\n{\"history\": [", 0,
                 "oh.json:2:14: expected a JSON value, found end of input (the text is truncated)");
    expect_error("[{\"trajectory\": []}, {\"action\": \"run\"}]", 0,
                 "oh.json:1:22: expected a record with a \"history\" or \"trajectory\" "
                 "array of events");
    expect_error("[" EV "\"action\": \"message\", \"args\": {\"content\": \"a long message\"}}]",
                 64, "oh.json:1: array element longer than 64 bytes");
    expect_error("\n\n", 0, "oh.json:3:1: expected a JSON array of openhands events or "
                            "JSON lines of records");
    /* Other files with a "history" (SWE-agent's chat) or an array of rows
     * are no event streams: an error, not a trace without steps. */
    expect_error("{\"history\": [{\"role\": \"system\", \"content\": \"x\"}]}\n", 0,
                 "oh.json:1:14: expected an openhands event (an object with \"action\" or "
                 "\"observation\")");
    expect_error("[{\"role\": \"user\", \"content\": \"hi\"}]", 0,
                 "oh.json:1:2: expected an openhands event (an object with \"action\" or "
                 "\"observation\")");
}

/* ---- delegation ---- */

static const char *agent_of(const struct atr_step *s)
{
    return s->agent ? s->agent : "-";
}

/* Steps of a delegation fixture: agents, and every edge the previous step
 * (OpenHands runs one delegate at a time and the parent waits for it). */
static void check_serial(const struct atr_trace *t)
{
    assert_true(atr_trace_is_dag(t));
    for (size_t i = 0; i < t->n_steps; i++) {
        uint32_t one;
        const uint32_t *p;
        uint32_t n = atr_step_parents(&t->steps[i], &one, &p);
        assert_int_equal(n, i ? 1 : 0);
        if (n)
            assert_int_equal(p[0], i - 1);
    }
}

/* Two delegates in sequence (fixture from OpenHands' serialization, see
 * SOURCE.txt): the second errors; the parent's prompt goes on from its own
 * calls, the delegate's starts afresh. */
static void test_delegation(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DIR "delegation.json", &t);
    /* BrowsingAgent's message and finish after send_msg_to_user are no
     * model calls: two llm steps (goto, send_msg_to_user) and two tool steps */
    static const char *const agents[] = {
        "-", "-", "-", "BrowsingAgent/1", "BrowsingAgent/1", "BrowsingAgent/1",
        "BrowsingAgent/1", "-", "-", "-", "BrowsingAgent/2", "BrowsingAgent/2", "-", "-", "-"};
    assert_int_equal(t.n_steps, sizeof agents / sizeof agents[0]);
    for (size_t i = 0; i < t.n_steps; i++)
        assert_string_equal(agent_of(&t.steps[i]), agents[i]);
    check_serial(&t);
    assert_int_equal(meta_i64(&t, "openhands_delegates"), 2);
    assert_int_equal(meta_i64(&t, "openhands_delegate_errors"), 1);
    assert_int_equal(meta_i64(&t, "openhands_open_delegates"), -1);
    assert_string_equal(meta_str(&t, "outcome"), "finished");   /* the main agent's, not a delegate's */
    /* the delegate's first call: its own prompt (no system prompt recorded
     * for BrowsingAgent), sharing none of the parent's */
    const struct atr_step *d = &t.steps[3], *p = &t.steps[2], *after = &t.steps[7];
    assert_true(d->input_tokens < 100);
    assert_true(d->hash_ids[0] != p->hash_ids[0]);
    /* after the join the parent's call extends its own previous call */
    size_t full = (size_t)p->input_tokens / t.block_size;
    assert_true(after->n_hash_ids >= full);
    assert_memory_equal(after->hash_ids, p->hash_ids, full * sizeof(uint64_t));
    /* the browsing steps are timed by their observations */
    assert_int_equal(t.steps[6].kind, ATR_STEP_TOOL);
    assert_int_equal(t.steps[7].kind, ATR_STEP_LLM);
    assert_string_equal(t.steps[11].tool, "browser");
    assert_int_equal(t.steps[11].dur_ms, 30000);
    atr_trace_release(&t);
}

/* A delegate that delegates, and one still open when the stream ends. */
static void test_delegation_nested(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    read_one(DIR "delegation-nested.json", &t);
    static const char *const agents[] = {
        "-", "CodeActAgent/1", "BrowsingAgent/2", "BrowsingAgent/2", "BrowsingAgent/2",
        "BrowsingAgent/2", "CodeActAgent/1", "CodeActAgent/1", "CodeActAgent/1",
        "-", "-", "-", "BrowsingAgent/3", "BrowsingAgent/3"};
    assert_int_equal(t.n_steps, sizeof agents / sizeof agents[0]);
    for (size_t i = 0; i < t.n_steps; i++)
        assert_string_equal(agent_of(&t.steps[i]), agents[i]);
    check_serial(&t);
    assert_int_equal(meta_i64(&t, "openhands_delegates"), 2);
    assert_int_equal(meta_i64(&t, "openhands_open_delegates"), 1);
    /* the level-1 delegate resumes its own conversation after its delegate */
    const struct atr_step *a = &t.steps[1], *b = &t.steps[6];
    size_t full = (size_t)a->input_tokens / t.block_size;
    assert_memory_equal(b->hash_ids, a->hash_ids, full * sizeof(uint64_t));
    /* same agent class, same system prompt: its first blocks are the parent's */
    assert_true(a->hash_ids[0] == t.steps[0].hash_ids[0]);
    atr_trace_release(&t);
}

#define DEV(id, rest)                                                                            \
    "{\"id\": " #id ", \"timestamp\": \"2025-01-01T00:00:0" #id "\", \"source\": \"agent\", " rest "}"
#define DELEGATE(id) DEV(id, "\"action\": \"delegate\", \"args\": {\"agent\": \"B\", \"inputs\": {}}")
#define DOBS(id) DEV(id, "\"observation\": \"delegate\", \"content\": \"done\", \"extras\": {}")
#define RUN(id) DEV(id, "\"action\": \"run\", \"args\": {\"command\": \"ls\"}")

static void read_text(const char *text, struct atr_trace *t)
{
    struct atr_error err;
    struct atr_read_opts opts = {0};
    int n;
    if (run_text(text, &opts, t, &n, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 1);
}

/* Repairs: an observation with no delegate open is a plain result
 * (OpenHands warns and reads on); the cause picks the delegate it closes,
 * ending the ones opened inside it. */
static void test_delegation_repairs(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    read_text("[" DOBS(1) "," RUN(2) "]", &t);
    assert_int_equal(t.n_steps, 2);
    assert_null(t.steps[0].agent);
    assert_false(atr_trace_is_dag(&t));
    assert_int_equal(meta_i64(&t, "openhands_unmatched_delegate_observations"), 1);
    atr_trace_release(&t);

    t = (struct atr_trace)ATR_TRACE_INIT;
    read_text("[" DELEGATE(1) "," DELEGATE(2) "," RUN(3) ","
              DEV(4, "\"cause\": 1, \"observation\": \"delegate\", \"content\": \"x\"") ","
              RUN(5) "]", &t);
    /* llm 1 (main), llm 2 (B/1), llm 3 + tool (B/2), llm 5 + tool (main) */
    assert_int_equal(t.n_steps, 6);
    assert_null(t.steps[0].agent);
    assert_string_equal(t.steps[1].agent, "B/1");
    assert_string_equal(t.steps[3].agent, "B/2");
    assert_null(t.steps[4].agent);
    assert_int_equal(meta_i64(&t, "openhands_delegates"), 1);
    assert_int_equal(meta_i64(&t, "openhands_open_delegates"), 1);
    check_serial(&t);
    atr_trace_release(&t);

    /* an agent class longer than the cap is cut on a character boundary */
    char text[1024], name[300];
    memset(name, 'a', 63);
    strcpy(name + 63, "\xc3\xa9tail-after-the-cut");
    snprintf(text, sizeof text, "[" DEV(1, "\"action\": \"delegate\", \"args\": {\"agent\": \"%s\"}")
             "," RUN(2) "]", name);
    read_text(text, &t);
    assert_int_equal(strlen(t.steps[1].agent), 63 + strlen("/1"));
    atr_trace_release(&t);
}

static void test_delegation_bad(void **state)
{
    (void)state;
    expect_error("[" DEV(1, "\"action\": \"delegate\", \"args\": {\"agent\": 7}") "]", 0,
                 "oh.json:1:107: expected \"agent\" to be a string, found number");
    /* nesting past the cap is refused at the delegate action that goes past it */
    char text[8192] = "[";
    for (int k = 0; k < 17; k++)
        strcat(text, k ? "," DELEGATE(1) : DELEGATE(1));
    strcat(text, "]");
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    struct atr_read_opts opts = {0};
    int n;
    assert_int_equal(run_text(text, &opts, &t, &n, &err), -1);
    atr_trace_release(&t);
    assert_non_null(strstr(err.msg, "delegation nested deeper than 16 agents"));
}

/* Only a browsing delegate's scripted steps are no calls: its first
 * noop(), the message after send_msg_to_user, the finish after it; the
 * same actions of another agent are calls. */
static void test_browsing_replies(void **state)
{
    (void)state;
#define BROWSE(id, acts, msg)                                                                    \
    DEV(id, "\"action\": \"browse_interactive\", \"args\": {\"browser_actions\": \"" acts   \
            "\", \"browsergym_send_msg_to_user\": \"" msg "\"}")
#define MSG(id) DEV(id, "\"action\": \"message\", \"args\": {\"content\": \"42\"}")
#define FIN(id) DEV(id, "\"action\": \"finish\", \"args\": {}")
    struct atr_trace t = ATR_TRACE_INIT;
    read_text("[" DEV(1, "\"action\": \"delegate\", \"args\": {\"agent\": \"BrowsingAgent\"}") ","
              BROWSE(2, "noop()", "") "," BROWSE(3, "noop()", "") ","
              BROWSE(4, "send_msg_to_user('42')", "42") "," MSG(5) "," FIN(6) "," DOBS(7) ","
              MSG(8) "," FIN(9) "]", &t);
    /* main llm 1; B: tool (noop, no call), llm + tool (the second noop is
     * the model's), llm + tool; main: llm 8 (its message is a call), llm 9 */
    static const enum atr_step_kind kinds[] = {ATR_STEP_LLM, ATR_STEP_TOOL, ATR_STEP_LLM,
                                               ATR_STEP_TOOL, ATR_STEP_LLM, ATR_STEP_TOOL,
                                               ATR_STEP_LLM, ATR_STEP_LLM};
    assert_int_equal(t.n_steps, sizeof kinds / sizeof kinds[0]);
    for (size_t i = 0; i < t.n_steps; i++)
        assert_int_equal(t.steps[i].kind, kinds[i]);
    assert_null(t.steps[6].agent);
    assert_string_equal(t.steps[5].agent, "BrowsingAgent/1");
    atr_trace_release(&t);
#undef BROWSE
#undef MSG
#undef FIN
}

static void test_sniff(void **state)
{
    const struct atr_format *f = atr_format_find("openhands");
    const char *ev = "[\n  {\"id\": 0, \"timestamp\": \"2025-01-27T22:44:56\", \"source\": "
                     "\"user\", \"action\": \"message\", \"args\": {}}";
    assert_true(f->sniff(ev, strlen(ev), "<stdin>") >= 90);
    const char *line = "{\"instance_id\": \"a\", \"history\": [{\"id\": 0, \"source\": "
                       "\"agent\", \"observation\": \"run\"}]}\n";
    assert_true(f->sniff(line, strlen(line), "out.jsonl") >= 90);
    /* SWE-agent trajectories have "action" and "observation" but no source */
    const char *swe = "{\"trajectory\": [{\"action\": \"ls\", \"observation\": \"a\"}]}";
    assert_int_equal(f->sniff(swe, strlen(swe), "x.traj"), 0);
    const char *chat = "[{\"messages\": [{\"role\": \"user\", \"content\": \"\\\"action\\\": "
                       "1, \\\"source\\\": \\\"agent\\\"\"}]}]";
    assert_int_equal(f->sniff(chat, strlen(chat), "x.json"), 0);
    assert_int_equal(f->sniff("", 0, "<stdin>"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gui_mode),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_eval_output),
        cmocka_unit_test(test_llm_metrics),
        cmocka_unit_test(test_edit_sizes),
        cmocka_unit_test(test_feedback),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_delegation),
        cmocka_unit_test(test_delegation_nested),
        cmocka_unit_test(test_delegation_repairs),
        cmocka_unit_test(test_delegation_bad),
        cmocka_unit_test(test_browsing_replies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
