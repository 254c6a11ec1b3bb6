/* test-trace.c - tokens, block hashing, convo, writer and the atr reader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/convo.h"
#include "trace/reader.h"
#include "trace/tokens.h"
#include "trace/writer.h"

static void test_estimate(void **state)
{
    (void)state;
    assert_int_equal(atr_tokens_estimate("", 0), 0);
    assert_int_equal(atr_tokens_estimate("hello world", 11), 2);        /* "hello" " world" */
    assert_int_equal(atr_tokens_estimate("getUserName", 11), 3);        /* get User Name */
    assert_int_equal(atr_tokens_estimate("snake_case_name", 15), 3);    /* snake _case _name */
    assert_int_equal(atr_tokens_estimate("1234567", 7), 3);             /* 123 456 7 */
    assert_int_equal(atr_tokens_estimate("a == b", 6), 4);              /* a " " "==" " b" */
    assert_int_equal(atr_tokens_estimate("\xc3\xa9t\xc3\xa9", 5), 3);   /* é t é */
    /* deterministic and additive over independent pieces */
    const char *s = "def f(x):\n    return x + 1\n";
    assert_int_equal(atr_tokens_estimate(s, strlen(s)), atr_tokens_estimate(s, strlen(s)));
}

static void test_blockhash_prefix_stable(void **state)
{
    (void)state;
    struct atr_blockhash a, b;
    atr_blockhash_init(&a, 4);
    atr_blockhash_init(&b, 4);
    const char *m1 = "the quick brown fox jumps over the lazy dog again and again";
    atr_blockhash_feed(&a, m1, strlen(m1));
    atr_blockhash_feed(&b, m1, strlen(m1));
    atr_blockhash_feed(&b, "more text here", 14);
    assert_true(a.n_ids >= 2);
    assert_memory_equal(a.ids, b.ids, a.n_ids * sizeof(uint64_t));
    for (size_t i = 0; i < b.n_ids; i++)
        assert_true(b.ids[i] <= ATR_HASH_ID_MASK);
    /* chained: same block text after a different prefix gets a different id */
    struct atr_blockhash c;
    atr_blockhash_init(&c, 4);
    atr_blockhash_feed(&c, "x ", 2);
    atr_blockhash_feed(&c, m1, strlen(m1));
    assert_int_not_equal(c.ids[1], a.ids[1]);
    atr_blockhash_release(&a);
    atr_blockhash_release(&b);
    atr_blockhash_release(&c);
}

/* Random text over the classes the tokenizer distinguishes. */
static size_t random_text(char *buf, size_t cap, uint64_t *seed)
{
    static const char alphabet[] = "aaaabbbbzzzzAAZZ    \t__09__..()\n\r\xc3\xa9\x80\xff";
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = (size_t)(*seed >> 33) % cap;
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = alphabet[(*seed >> 33) % (sizeof alphabet - 1)];
    }
    return n;
}

/* The estimate (two bytes per step) and the block hasher (pairs, and single
 * bytes near block ends) must count the same tokens, and feeding more text
 * must never change the ids of blocks already full. */
static void test_tokenizer_paths_agree(void **state)
{
    (void)state;
    uint64_t seed = 42;
    char a[300], b[300];
    for (int round = 0; round < 3000; round++) {
        size_t na = random_text(a, sizeof a, &seed), nb = random_text(b, sizeof b, &seed);
        uint32_t bs = 1 + (uint32_t)(seed >> 60);      /* 1..16 */
        struct atr_blockhash h1, h2;
        atr_blockhash_init(&h1, bs);
        atr_blockhash_init(&h2, bs);
        atr_blockhash_feed(&h1, a, na);
        assert_int_equal(h1.tokens, atr_tokens_estimate(a, na));
        assert_int_equal(h1.n_ids + (h1.in_block ? 1 : 0), (h1.tokens + bs - 1) / bs);
        atr_blockhash_feed(&h2, a, na);
        atr_blockhash_feed(&h2, b, nb);
        assert_int_equal(h2.tokens, h1.tokens + atr_tokens_estimate(b, nb));
        assert_true(h2.n_ids >= h1.n_ids);
        if (h1.n_ids)
            assert_memory_equal(h1.ids, h2.ids, h1.n_ids * sizeof(uint64_t));
        /* a full block still open at the end of a feed keeps its id */
        if (h1.in_block == bs && h2.n_ids > h1.n_ids)
            assert_int_equal(atr_blockhash_partial_id(&h1), h2.ids[h1.n_ids]);
        atr_blockhash_release(&h1);
        atr_blockhash_release(&h2);
    }
}

static void build_convo(struct atr_trace *t, bool keep)
{
    struct atr_convo c;
    t->block_size = 16;
    atr_convo_init(&c, t, keep);
    atr_convo_add(&c, "system", "You are a helpful agent that fixes bugs in Python repositories.", 63);
    atr_convo_add(&c, "user", "Fix the failing test in tests/test_core.py please, it says KeyError.", 68);
    const char *r1 = "Let me look.\nbash(cat tests/test_core.py)";
    atr_convo_llm(&c, r1, strlen(r1));
    atr_convo_add(&c, "assistant", r1, strlen(r1));
    const char *obs = "import pytest\n\ndef test_core():\n    assert core.run({'a': 1})['a'] == 1\n";
    atr_convo_add(&c, "tool", obs, strlen(obs));
    const char *r2 = "bash(pytest -x tests/test_core.py)";
    atr_convo_llm(&c, r2, strlen(r2));
    atr_convo_release(&c);
}

static void test_convo_shares_prefix(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    atr_trace_clear(&t);
    build_convo(&t, false);
    assert_int_equal(t.n_steps, 2);
    const struct atr_step *s0 = &t.steps[0], *s1 = &t.steps[1];
    assert_true(s1->input_tokens > s0->input_tokens);
    assert_int_equal(s0->n_hash_ids, (s0->input_tokens + 15) / 16);
    assert_int_equal(s1->n_hash_ids, (s1->input_tokens + 15) / 16);
    size_t full0 = (size_t)s0->input_tokens / 16;
    assert_true(full0 >= 1);
    assert_memory_equal(s0->hash_ids, s1->hash_ids, full0 * sizeof(uint64_t));
    assert_null(s0->messages);
    atr_trace_release(&t);
}

static char *write_one(const struct atr_trace *t, bool expand)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_write_opts o = {.expand = expand};
    atr_trace_write(&b, t, &o);
    return b.data;
}

/* Reads NDJSON text with the atr reader; returns 1/0/-1 of the first next(). */
static int read_text(const char *text, struct atr_trace *t, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "t.ndjson");
    struct atr_reader *r = atr_reader_open_input(in, "atr", NULL, err);
    assert_non_null(r);
    int rc = atr_reader_next(r, t, err);
    atr_reader_close(r);
    return rc;
}

static char warned[ATR_ERROR_MAX];

static void take_warning(const char *msg)
{
    snprintf(warned, sizeof warned, "%s", msg);
}

/* Traces read from text with warnings taken (warn set) or not: the count
 * read before the end (rc 0) or a failure (-1: *n still counted). */
static int read_all(const char *text, bool warn, int *n, struct atr_error *err)
{
    struct atr_read_opts ro = {.warn = warn ? take_warning : NULL};
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "j.ndjson");
    struct atr_reader *r = atr_reader_open_input(in, "atr", &ro, err);
    struct atr_trace t = ATR_TRACE_INIT;
    int rc;
    warned[0] = '\0';
    for (*n = 0; (rc = atr_reader_next(r, &t, err)) == 1; ++*n)
        ;
    atr_trace_release(&t);
    atr_reader_close(r);
    return rc;
}

/* A journal being written: its last line, without its newline, is cut.
 * With warnings taken the lines before it are read and the cut one named;
 * without, it fails as ever. A last line that parses is complete, and a
 * cut line that is not the last, or the only one, fails. */
static void test_cut_last_line(void **state)
{
    (void)state;
#define LINE(id) "{\"format\":\"atr-trace/1\",\"trace_id\":\"" id "\",\"steps\":[]}"
    struct atr_error err;
    int n;
    assert_int_equal(read_all(LINE("a") "\n" LINE("b") "\n{\"format\":\"at", true, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(warned, "j.ndjson:3: warning: the last line is cut (a file being "
                                "written?): 13 bytes ignored");
    assert_int_equal(read_all(LINE("a") "\n{\"format\":\"at", false, &n, &err), -1);
    assert_string_equal(err.msg, "j.ndjson:2:11: unterminated string (the text is truncated)");
    assert_int_equal(read_all(LINE("a") "\n" LINE("b"), true, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(warned, "");
    assert_int_equal(read_all(LINE("a") "\n{\"format\"\n" LINE("b") "\n", true, &n, &err), -1);
    assert_string_equal(err.msg, "j.ndjson:2:10: expected ':' after object key, found end of input "
                                 "(the text is truncated)");
    assert_int_equal(read_all("{\"format\":\"at", true, &n, &err), -1);
    assert_string_equal(warned, "");
#undef LINE
}

/* The compact writer's shared prefix is the longest common one wherever
 * the lists first differ: inside or at the edges of the runs it compares
 * whole (64 ids), or nowhere (one list a prefix of the other). */
static void test_write_prefix_lengths(void **state)
{
    (void)state;
    static const uint32_t diffs[] = {0, 1, 63, 64, 65, 127, 128, 129, 149, 150};
    for (size_t i = 0; i < sizeof diffs / sizeof *diffs; i++) {
        struct atr_trace t = ATR_TRACE_INIT;
        atr_trace_clear(&t);
        t.trace_id = "p/1";
        uint32_t lens[2] = {200, 150};
        for (int k = 0; k < 2; k++) {
            struct atr_step *s = atr_trace_add_step(&t, ATR_STEP_LLM);
            s->n_hash_ids = lens[k];
            s->hash_ids = atr_arena_alloc(&t.arena, lens[k] * sizeof *s->hash_ids);
            for (uint32_t j = 0; j < lens[k]; j++)
                s->hash_ids[j] = 1000 + j + (k && j >= diffs[i] ? 7777 : 0);
        }
        char *out = write_one(&t, false);
        char want[64];
        snprintf(want, sizeof want, "\"prefix\":{\"step\":0,\"blocks\":%u}", diffs[i]);
        if (diffs[i])
            assert_non_null(strstr(out, want));
        else
            assert_null(strstr(out, "\"prefix\""));
        free(out);
        atr_trace_release(&t);
    }
}

static void test_write_read_round_trip(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    atr_trace_clear(&t);
    t.trace_id = "rt/1";
    t.source = "test";
    build_convo(&t, true);
    atr_trace_meta_set_str(&t, "model", "m");
    atr_trace_meta_set_i64(&t, "n", 3);
    atr_trace_meta_set_i64(&t, "n", 4);     /* replaces */
    struct atr_step *tool = atr_trace_add_step(&t, ATR_STEP_TOOL);
    tool->tool = "bash";
    tool->command = "pytest -x \"tests/a b.py\"";
    tool->exit_code = 1;
    tool->t_ms = 5;

    char *compact = write_one(&t, false);
    char *expanded = write_one(&t, true);
    assert_non_null(strstr(compact, "\"prefix\":{\"step\":0,\"blocks\":"));
    assert_null(strstr(expanded, "\"prefix\""));
    assert_true(strlen(compact) < strlen(expanded));
    assert_non_null(strstr(compact, "\"meta\":{\"model\":\"m\",\"n\":4}"));

    /* the reader expands the compact form back to the same full lists */
    struct atr_trace back = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(compact, &back, &err), 1);
    char *again = write_one(&back, true);
    assert_string_equal(again, expanded);
    assert_int_equal(back.steps[2].exit_code, 1);
    assert_string_equal(back.steps[2].command, "pytest -x \"tests/a b.py\"");
    assert_non_null(back.steps[0].messages);
    free(compact);
    free(expanded);
    free(again);
    atr_trace_release(&back);
    atr_trace_release(&t);
}

static void test_unknown_fields_kept(void **state)
{
    (void)state;
    const char *in = "{\"format\":\"atr-trace/1\",\"x\":{\"y\":[1,2.5,null,\"s\"]},"
                     "\"trace_id\":\"u\",\"steps\":[{\"i\":0,\"kind\":\"tool\",\"tool\":\"bash\","
                     "\"future\":true}],\"z\":-1}";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(in, &t, &err), 1);
    char *out = write_one(&t, false);
    assert_string_equal(out, "{\"format\":\"atr-trace/1\",\"trace_id\":\"u\",\"source\":\"atr\","
                             "\"start_ms\":0,\"block_size\":16,\"steps\":[{\"i\":0,\"kind\":\"tool\",\"tool\":"
                             "\"bash\",\"future\":true}],\"x\":{\"y\":[1,2.5,null,\"s\"]},\"z\":-1}\n");
    free(out);
    atr_trace_release(&t);
}

static void expect_error(const char *text, const char *msg)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(text, &t, &err), -1);
    assert_string_equal(err.msg, msg);
    atr_trace_release(&t);
}

static void test_reader_errors(void **state)
{
    (void)state;
    expect_error("[1]", "t.ndjson:1:1: expected a trace object, found array");
    expect_error("{\"trace_id\":\"a\",\"steps\":[]}",
                 "t.ndjson:1:1: expected \"format\":\"atr-trace/1\"");
    expect_error("{\"format\":\"atr-trace/2\",\"trace_id\":\"a\",\"steps\":[]}",
                 "t.ndjson:1:11: unsupported format version \"atr-trace/2\" (this atr reads atr-trace/1 and atr-trace/1.1)");
    expect_error("\n{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":5}",
                 "t.ndjson:2:48: expected \"steps\" array");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"gpu\"}]}",
                 "t.ndjson:1:57: expected \"kind\" to be \"llm\" or \"tool\"");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"input_tokens\":-3}]}",
                 "t.ndjson:1:78: expected \"input_tokens\" to be a non-negative integer");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"prefix\":{\"step\":0,\"blocks\":1}}]}",
                 "t.ndjson:1:72: expected \"prefix\".\"step\" to name an earlier llm step");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"t_ms\":9},{\"kind\":\"tool\",\"tool\":\"bash\",\"t_ms\":3}]}",
                 "t.ndjson:1:88: step 1 starts at 3 ms, before step 0 (9 ms): steps must be in time order");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\",\"hash_ids\":[1.5]}]}",
                 "t.ndjson:1:75: expected a hash id (integer 0..2^53-1)");
    expect_error("{\"format\":\"atr-trace/1\"", "t.ndjson:1:24: expected ',' or '}' after object member, found end of input "
                 "(the text is truncated)");
    /* hash_ids parse packed: what does not pack fails where it did. */
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"hash_ids\":[1, 9007199254740992]}]}",
                 "t.ndjson:1:78: expected a hash id (integer 0..2^53-1)");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"hash_ids\":[1,-2]}]}",
                 "t.ndjson:1:77: expected a hash id (integer 0..2^53-1)");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"hash_ids\":[1,2,]}]}",
                 "t.ndjson:1:79: expected a JSON value, found ']'");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"hash_ids\":{\"a\":1}}]}",
                 "t.ndjson:1:74: expected \"hash_ids\" to be an array of integers");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
                 "\"input_tokens\":20,\"hash_ids\":[1, 2, 3]}]}",
                 "t.ndjson:1:49: expected 2 hash ids for 20 input tokens in blocks of 16, found 3");
    /* Each step member by name: the lookup by first letter. */
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"i\":1}]}",
                 "t.ndjson:1:82: expected \"i\" to be 0 (steps in order)");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"exit_code\":\"1\"}]}",
                 "t.ndjson:1:90: expected \"exit_code\" to be an integer");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"timeout_ms\":1.5}]}",
                 "t.ndjson:1:91: expected \"timeout_ms\" to be a non-negative integer");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"cwd\":7}]}",
                 "t.ndjson:1:84: expected \"cwd\" to be a string, found number");
    expect_error("{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
                 "\"tool\":\"bash\",\"recorded_output_tokens\":-1}]}",
                 "t.ndjson:1:103: expected \"recorded_output_tokens\" to be a non-negative integer");
}

/* Packed hash ids: values through 2^53-1 read as they are; a "hash_ids"
 * elsewhere (kept as an unknown member) writes out as it came. */
static void test_hash_ids_packed(void **state)
{
    (void)state;
    const char *in = "{\"format\":\"atr-trace/1\",\"trace_id\":\"h\",\"x\":{\"hash_ids\":[4,5]},"
                     "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"input_tokens\":40,"
                     "\"hash_ids\":[0, 9007199254740991,\t12]}]}";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(in, &t, &err), 1);
    assert_int_equal(t.steps[0].n_hash_ids, 3);
    assert_int_equal(t.steps[0].hash_ids[0], 0);
    assert_int_equal(t.steps[0].hash_ids[1], 9007199254740991ULL);
    assert_int_equal(t.steps[0].hash_ids[2], 12);
    assert_int_equal(t.steps[0].input_tokens, 40);
    char *out = write_one(&t, false);
    assert_non_null(strstr(out, "\"hash_ids\":[0,9007199254740991,12]"));
    assert_non_null(strstr(out, "\"x\":{\"hash_ids\":[4,5]}"));
    free(out);
    atr_trace_release(&t);
}


/* A fork into two sub-agents and a join read back as written, in /1.1;
 * a chain stays /1 without the fields. */
static void test_dag_round_trip(void **state)
{
    (void)state;
    const char *in =
        "{\"format\":\"atr-trace/1.1\",\"trace_id\":\"d\",\"steps\":["
        "{\"kind\":\"llm\",\"t_ms\":0},"
        "{\"kind\":\"llm\",\"agent\":\"a\",\"parents\":[0],\"t_ms\":1},"
        "{\"kind\":\"llm\",\"agent\":\"b\",\"parents\":[0],\"t_ms\":2},"
        "{\"kind\":\"llm\",\"parents\":[1,2],\"t_ms\":3},"
        "{\"kind\":\"tool\",\"tool\":\"bash\",\"parents\":[]}]}\n";
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    assert_int_equal(read_text(in, &t, &err), 1);
    assert_int_equal(t.n_steps, 5);
    assert_null(t.steps[0].parents);
    assert_string_equal(t.steps[1].agent, "a");
    assert_int_equal(t.steps[3].n_parents, 2);
    assert_int_equal(t.steps[3].parents[1], 2);
    assert_non_null(t.steps[4].parents);
    assert_int_equal(t.steps[4].n_parents, 0);
    uint32_t one;
    const uint32_t *p;
    assert_int_equal(atr_step_parents(&t.steps[0], &one, &p), 0);
    assert_int_equal(atr_step_parents(&t.steps[2], &one, &p), 1);
    assert_int_equal(p[0], 0);
    char *out = write_one(&t, false);
    assert_non_null(strstr(out, "\"format\":\"atr-trace/1.1\""));
    assert_non_null(strstr(out, "\"kind\":\"llm\",\"agent\":\"b\",\"parents\":[0]"));
    assert_non_null(strstr(out, "\"parents\":[1,2]"));
    struct atr_trace u = ATR_TRACE_INIT;
    assert_int_equal(read_text(out, &u, &err), 1);
    char *again = write_one(&u, false);
    assert_string_equal(out, again);
    free(again);
    free(out);
    atr_trace_release(&u);
    t.steps[4].parents = NULL;
    for (size_t k = 0; k < t.n_steps; k++)
        t.steps[k].parents = NULL, t.steps[k].agent = NULL;
    out = write_one(&t, false);
    assert_non_null(strstr(out, "\"format\":\"atr-trace/1\""));
    assert_null(strstr(out, "parents"));
    free(out);
    atr_trace_release(&t);
}

static void test_dag_errors(void **state)
{
    (void)state;
    const char *head = "{\"format\":\"atr-trace/1.1\",\"trace_id\":\"d\",\"steps\":[";
    char buf[512];
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\",\"parents\":[0]}]}", head);
    expect_error(buf, "t.ndjson:1:76: step 0 has no earlier step to wait for (a root has \"parents\":[])");
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\"},{\"kind\":\"llm\",\"parents\":[2]}]}", head);
    expect_error(buf, "t.ndjson:1:91: expected a parent of step 1 to be an earlier step (0..0)");
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\"},{\"kind\":\"llm\",\"parents\":[0,0]}]}", head);
    expect_error(buf, "t.ndjson:1:93: parent 0 of step 1 repeats");
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\",\"parents\":[-1]}]}", head);
    expect_error(buf, "t.ndjson:1:76: step 0 has no earlier step to wait for (a root has \"parents\":[])");
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\",\"parents\":{}}]}", head);
    expect_error(buf, "t.ndjson:1:75: expected \"parents\" to be an array of step indices");
    snprintf(buf, sizeof buf, "%s{\"kind\":\"llm\",\"agent\":\"\"}]}", head);
    expect_error(buf, "t.ndjson:1:73: expected \"agent\" to be a non-empty string");
    expect_error("{\"format\":\"atr-trace/2\",\"trace_id\":\"d\",\"steps\":[]}",
                 "t.ndjson:1:11: unsupported format version \"atr-trace/2\" (this atr reads "
                 "atr-trace/1 and atr-trace/1.1)");
}

/* Steps added out of time order with explicit parents come out in start
 * order, parents renumbered, a chain link written as absent; a child whose
 * clock is before its parent's is moved to the parent's start; a cycle is
 * refused and leaves the trace as it was. */
static void test_order_steps(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    static const int64_t start[] = {30, 0, 10, 5};
    /* 0: the join of 2 and 3; 1: a root; 2 and 3: children of 1 */
    static const uint32_t par0[] = {2, 3}, par2[] = {1}, par3[] = {1};
    const uint32_t *pars[] = {par0, NULL, par2, par3};
    const uint32_t npar[] = {2, 0, 1, 1};
    for (int k = 0; k < 4; k++) {
        struct atr_step *s = atr_trace_add_step(&t, ATR_STEP_LLM);
        s->t_ms = start[k];
        s->parents = atr_arena_alloc(&t.arena, 2 * sizeof *s->parents);
        s->n_parents = npar[k];
        if (pars[k])
            memcpy(s->parents, pars[k], npar[k] * sizeof *s->parents);
        s->input_tokens = k;
    }
    uint32_t cycle = 99;
    assert_int_equal(atr_trace_order_steps(&t, &cycle), 0);
    /* new order: 1 (t0), 3 (t5), 2 (t10), 0 (t30) */
    assert_int_equal(t.steps[0].input_tokens, 1);
    assert_int_equal(t.steps[1].input_tokens, 3);
    assert_null(t.steps[0].parents);            /* a root at 0: absent */
    assert_null(t.steps[1].parents);            /* parent 0 = the previous: absent */
    assert_int_equal(t.steps[2].n_parents, 1);
    assert_int_equal(t.steps[2].parents[0], 0);
    assert_int_equal(t.steps[3].n_parents, 2);
    assert_int_equal(t.steps[3].parents[0], 2);
    assert_int_equal(t.steps[3].parents[1], 1);
    for (uint32_t k = 0; k < 4; k++)
        assert_int_equal(t.steps[k].i, k);

    /* backwards clock: child (t 3) of a step at t 7 */
    atr_trace_clear(&t);
    struct atr_step *a = atr_trace_add_step(&t, ATR_STEP_LLM);
    a->t_ms = 7;
    a->parents = atr_arena_alloc(&t.arena, sizeof *a->parents);
    a->n_parents = 0;
    struct atr_step *b = atr_trace_add_step(&t, ATR_STEP_TOOL);
    b->t_ms = 3;
    assert_int_equal(atr_trace_order_steps(&t, &cycle), 1);
    assert_int_equal(t.steps[1].t_ms, 7);
    assert_int_equal(t.steps[1].kind, ATR_STEP_TOOL);

    /* a cycle: 0 waits for 1, 1 for 0 */
    atr_trace_clear(&t);
    for (int k = 0; k < 2; k++) {
        struct atr_step *s = atr_trace_add_step(&t, ATR_STEP_LLM);
        s->t_ms = k;
        s->parents = atr_arena_alloc(&t.arena, sizeof *s->parents);
        s->parents[0] = (uint32_t)(1 - k);
        s->n_parents = 1;
    }
    assert_int_equal(atr_trace_order_steps(&t, &cycle), -1);
    assert_true(cycle < 2);
    assert_int_equal(t.steps[0].parents[0], 1);
    atr_trace_release(&t);
}

static void test_command_head(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"pytest -x tests", "pytest"},
        {"cd /repo && python -m pytest tests/", "pytest"},
        {"FOO=1 timeout 60 pip install -e .", "pip"},
        {"sudo /usr/bin/git diff", "git"},
        {"  grep -rn foo .", "grep"},
        {"python3 reproduce.py", "python3"},
        {"", ""},
    };
    char head[32];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        atr_command_head(cases[i][0], head, sizeof head);
        assert_string_equal(head, cases[i][1]);
    }
}

/* An llm step with estimated ids ids[0..n) (16 tokens a block) and,
 * when rec >= 0, the recorded input rec. */
static struct atr_step *fit_step(struct atr_trace *t, const char *agent, const uint64_t *ids,
                                 uint32_t n, int64_t rec)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    s->agent = agent;
    s->hash_ids = atr_arena_alloc(&t->arena, n * sizeof *ids);
    memcpy(s->hash_ids, ids, n * sizeof *ids);
    s->n_hash_ids = n;
    s->input_tokens = (int64_t)n * 16;
    s->output_tokens = 1;
    s->tokens_from = ATR_TOKENS_ESTIMATED;
    if (rec >= 0)
        atr_step_set_counts(s, rec, -1, ATR_TOKENS_RECORDED);
    return s;
}

/* Fitting goes per agent: the main agent's call after a sub-agent's calls
 * repeats the main agent's previous call, and a sub-agent's unrecorded call
 * is anchored to its own agent's recorded one, never to the parent's. */
static void test_fit_ids_per_agent(void **state)
{
    (void)state;
    struct atr_trace t = ATR_TRACE_INIT;
    t.trace_id = "fit";
    t.block_size = 16;
    fit_step(&t, NULL, (const uint64_t[]){1, 2, 3}, 3, 160);          /* 10 blocks */
    fit_step(&t, "S/1", (const uint64_t[]){7, 8}, 2, 64);             /* 4 blocks */
    fit_step(&t, "S/1", (const uint64_t[]){7, 8, 9}, 3, -1);          /* anchored: 64 + 16 */
    fit_step(&t, "T/2", (const uint64_t[]){5}, 1, -1);                /* nothing to anchor to */
    fit_step(&t, NULL, (const uint64_t[]){1, 2, 3, 4}, 4, 200);       /* 13 blocks */
    atr_trace_fit_ids(&t);
    const struct atr_step *m0 = &t.steps[0], *s0 = &t.steps[1], *m1 = &t.steps[4];
    assert_int_equal(m0->n_hash_ids, 10);
    assert_int_equal(m1->n_hash_ids, 13);
    assert_memory_equal(m1->hash_ids, m0->hash_ids, 10 * sizeof(uint64_t));
    assert_true(s0->hash_ids[0] != m0->hash_ids[0]);
    assert_int_equal(t.steps[2].input_tokens, 80);
    assert_int_equal(t.steps[3].input_tokens, 16);
    atr_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_blockhash_prefix_stable),
        cmocka_unit_test(test_tokenizer_paths_agree),
        cmocka_unit_test(test_convo_shares_prefix),
        cmocka_unit_test(test_write_prefix_lengths),
        cmocka_unit_test(test_write_read_round_trip),
        cmocka_unit_test(test_unknown_fields_kept),
        cmocka_unit_test(test_reader_errors),
        cmocka_unit_test(test_cut_last_line),
        cmocka_unit_test(test_hash_ids_packed),
        cmocka_unit_test(test_command_head),
        cmocka_unit_test(test_dag_round_trip),
        cmocka_unit_test(test_dag_errors),
        cmocka_unit_test(test_order_steps),
        cmocka_unit_test(test_fit_ids_per_agent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
