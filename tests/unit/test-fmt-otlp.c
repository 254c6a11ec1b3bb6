/* test-fmt-otlp.c - the OTLP/JSON GenAI reader (fmt/otlp.c) and writer
 * (trace/otlp.c): steps, agents, the DAG off nesting and time, hash ids
 * from counts, content never read, bad input; write then read back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "trace/otlp.h"
#include "trace/reader.h"
#include "trace/writer.h"

#define NS "000000"   /* ms -> ns in the literals below */

/* Reads text as OTLP; the first trace into *t: 1, 0 or -1 (err set). */
static int read_otlp(const char *text, struct atr_trace *t, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "o.jsonl");
    struct atr_reader *r = atr_reader_open_input(in, NULL, NULL, err);
    if (!r)
        return -1;
    assert_string_equal(atr_reader_format(r), "otlp");
    int rc = atr_reader_next(r, t, err);
    atr_reader_close(r);
    return rc;
}

#define SPAN(id, parent, name, start, end, attrs) \
    "{\"traceId\":\"t1\",\"spanId\":\"" id "\",\"parentSpanId\":\"" parent "\",\"name\":\"" name \
    "\",\"startTimeUnixNano\":\"" start NS "\",\"endTimeUnixNano\":\"" end NS "\"," \
    "\"attributes\":[" attrs "]}\n"
#define INT(k, v) "{\"key\":\"" k "\",\"value\":{\"intValue\":\"" v "\"}}"
#define STR(k, v) "{\"key\":\"" k "\",\"value\":{\"stringValue\":\"" v "\"}}"

/* main: chat, two parallel tools, chat; a sub-agent under invoke_agent
 * started after the second chat, then a chat joining it. */
static const char dag[] =
    SPAN("r", "", "invoke_agent main", "0", "100", STR("gen_ai.agent.name", "main"))
    SPAN("c1", "r", "chat m", "0", "10", INT("gen_ai.usage.input_tokens", "40") ","
         INT("gen_ai.usage.output_tokens", "5") "," STR("gen_ai.input.messages", "SECRET"))
    SPAN("t1", "r", "execute_tool bash", "10", "20", STR("gen_ai.tool.name", "bash"))
    SPAN("t2", "r", "execute_tool grep", "11", "15", STR("gen_ai.tool.name", "grep"))
    SPAN("c2", "r", "chat m", "20", "30", INT("gen_ai.usage.input_tokens", "70") ","
         INT("gen_ai.usage.cache_read.input_tokens", "32"))
    SPAN("s", "r", "invoke_agent helper", "30", "60", "")
    SPAN("sc", "s", "chat m", "30", "60", INT("gen_ai.usage.prompt_tokens", "20"))
    SPAN("c3", "r", "chat m", "60", "70", INT("gen_ai.usage.input_tokens", "100"));

static void test_dag(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_otlp(dag, &t, &err), 1);
    assert_string_equal(t.trace_id, "otlp/t1");
    assert_int_equal(t.n_steps, 6);
    const struct atr_step *s = t.steps;
    /* 0 c1, 1 t1, 2 t2 (fork of 1), 3 c2 (joins 1, 2), 4 sc, 5 c3 */
    assert_null(s[0].parents);
    assert_null(s[1].parents);
    assert_int_equal(s[2].n_parents, 1);
    assert_int_equal(s[2].parents[0], 0);
    assert_int_equal(s[3].n_parents, 2);
    assert_string_equal(s[4].agent, "helper");
    assert_null(s[4].parents);          /* waits for c2, the previous step */
    assert_null(s[5].agent);
    assert_null(s[5].parents);          /* the sub-agent's last step */
    assert_int_equal(s[3].cached_tokens, 32);
    assert_int_equal(s[4].input_tokens, 20);
    assert_string_equal(s[0].tokens_from, ATR_TOKENS_RECORDED);
    assert_int_equal(s[1].t_ms, 10);
    assert_int_equal(s[1].dur_ms, 10);
    /* c2 (70 tokens) goes on from c1 (40): c1's 2 full blocks shared */
    assert_int_equal(s[3].n_hash_ids, 5);
    assert_memory_equal(s[3].hash_ids, s[0].hash_ids, 2 * sizeof(uint64_t));
    assert_true(s[3].hash_ids[2] != s[0].hash_ids[2]);
    /* the sub-agent's conversation is its own */
    assert_true(s[4].hash_ids[0] != s[0].hash_ids[0]);
    assert_null(s[0].messages);
    struct atr_buf b = ATR_BUF_INIT;
    atr_trace_write(&b, &t, NULL);
    assert_null(strstr(b.data, "SECRET"));
    assert_non_null(strstr(b.data, "\"meta\":{\"agent\":\"main\",\"otlp_trace_id\""));
    atr_buf_release(&b);
    atr_trace_release(&t);
}

static void expect_error(const char *text, const char *msg)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_otlp(text, &t, &err), -1);
    assert_string_equal(err.msg, msg);
    atr_trace_release(&t);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(SPAN("a", "b", "chat", "1", "2", "") SPAN("b", "a", "chat", "1", "2", ""),
                 "o.jsonl:1:1: span \"a\" is its own ancestor (a parentSpanId cycle)");
    expect_error(SPAN("a", "", "chat", "1", "2", "") SPAN("a", "", "chat", "1", "2", ""),
                 "o.jsonl:2:1: span \"a\" repeats the span at line 1");
    expect_error(SPAN("a", "", "chat", "5", "2", ""), "o.jsonl:1:110: span ends before it starts");
    expect_error(SPAN("a", "", "chat", "1", "2", INT("gen_ai.usage.output_tokens", "x")),
                 "o.jsonl:1:178: expected \"gen_ai.usage.output_tokens\" to be a non-negative "
                 "integer");
    expect_error("{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[7]}]}]}\n",
                 "o.jsonl:1:44: expected a span object, found number");
}

/* Wrappers are no steps; a parent that never appears makes a root. */
static void test_wrapper_and_orphan(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_otlp(SPAN("w", "gone", "chat outer", "0", "10", INT("gen_ai.usage.input_tokens", "9"))
                               SPAN("c", "w", "chat inner", "1", "9", INT("gen_ai.usage.input_tokens", "9")),
                               &t, &err), 1);
    assert_int_equal(t.n_steps, 1);
    assert_int_equal(t.steps[0].t_ms, 1);
    int64_t orphans = 0;
    assert_true(atr_json_get_i64(t.meta, "otlp_orphan_spans", &orphans));
    assert_int_equal(orphans, 1);
    atr_trace_release(&t);
}

/* The writer's output reads back as the trace: steps, agents, parents,
 * times, counts, exit codes, the trace id. */
static void test_write_read(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT, u = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_otlp(dag, &t, &err), 1);
    t.trace_id = "x/1";
    t.steps[1].exit_code = 2;
    struct atr_buf b = ATR_BUF_INIT;
    atr_trace_write_otlp(&b, &t, ATR_OTLP_EPOCH_NS);
    assert_non_null(strstr(b.data, "\"startTimeUnixNano\":\"1704067200010000000\""));
    assert_int_equal(read_otlp(b.data, &u, &err), 1);
    assert_string_equal(u.trace_id, "x/1");
    assert_int_equal(u.n_steps, t.n_steps);
    for (size_t k = 0; k < t.n_steps; k++) {
        const struct atr_step *a = &t.steps[k], *c = &u.steps[k];
        uint32_t o1, o2;
        const uint32_t *p1, *p2;
        assert_int_equal(a->kind, c->kind);
        assert_int_equal(a->t_ms, c->t_ms);
        assert_int_equal(a->dur_ms, c->dur_ms);
        assert_int_equal(a->input_tokens, c->input_tokens);
        assert_int_equal(a->exit_code, c->exit_code);
        assert_true((a->agent == NULL) == (c->agent == NULL));
        uint32_t n = atr_step_parents(a, &o1, &p1);
        assert_int_equal(n, atr_step_parents(c, &o2, &p2));
        assert_memory_equal(p1, p2, n * sizeof *p1);
    }
    atr_buf_release(&b);
    atr_trace_release(&t);
    atr_trace_release(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dag),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_wrapper_and_orphan),
        cmocka_unit_test(test_write_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
