/* test-trace-lean.c - the atr-trace reader without a tree (opts.lean,
 * src/trace/fmt/atr-lean.c) against the tree reader: the same traces,
 * field by field, and the same errors, on every atr-trace file of
 * tests/data, on generated traces of every `atr gen` kind, and on random
 * edits of their lines; and the lean path taken where it should be. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "trace/fmt/atr-impl.h"
#include "trace/reader.h"
#include "trace/tokens.h"
#include "trace/writer.h"
#include "util/buf.h"
#include "util/rng.h"
#include "slurp.h"

static void same_str(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* Step a (tree) and b (lean): every field but the JSON nodes. */
static void same_step(const struct atr_step *a, const struct atr_step *b)
{
    assert_int_equal(a->i, b->i);
    assert_int_equal(a->kind, b->kind);
    const int64_t *ia[] = {&a->t_ms, &a->dur_ms, &a->input_tokens, &a->output_tokens,
                           &a->cached_tokens, &a->recorded_input_tokens,
                           &a->recorded_output_tokens, &a->estimated_input_tokens,
                           &a->estimated_output_tokens, &a->max_tokens, &a->bytes,
                           &a->old_bytes, &a->timeout_ms, &a->exit_code};
    const int64_t *ib[] = {&b->t_ms, &b->dur_ms, &b->input_tokens, &b->output_tokens,
                           &b->cached_tokens, &b->recorded_input_tokens,
                           &b->recorded_output_tokens, &b->estimated_input_tokens,
                           &b->estimated_output_tokens, &b->max_tokens, &b->bytes,
                           &b->old_bytes, &b->timeout_ms, &b->exit_code};
    for (size_t k = 0; k < sizeof ia / sizeof *ia; k++)
        assert_int_equal(*ia[k], *ib[k]);
    const char *sa[] = {a->agent, a->tool, a->command, a->action, a->path, a->file_op,
                        a->selector, a->url, a->cwd, a->command_head};
    const char *sb[] = {b->agent, b->tool, b->command, b->action, b->path, b->file_op,
                        b->selector, b->url, b->cwd, b->command_head};
    for (size_t k = 0; k < sizeof sa / sizeof *sa; k++)
        same_str(sa[k], sb[k]);
    assert_ptr_equal(a->tokens_from, b->tokens_from);            /* static names */
    assert_ptr_equal(a->output_tokens_from, b->output_tokens_from);
    assert_int_equal(a->n_hash_ids, b->n_hash_ids);
    assert_int_equal(a->prefix_step, b->prefix_step);
    assert_int_equal(a->prefix_blocks, b->prefix_blocks);
    assert_int_equal(!a->hash_ids, !b->hash_ids);
    uint32_t own = a->n_hash_ids - a->prefix_blocks;
    if (own)
        assert_memory_equal(a->hash_ids, b->hash_ids, own * sizeof *a->hash_ids);
    assert_int_equal(!a->parents, !b->parents);
    assert_int_equal(a->n_parents, b->n_parents);
    if (a->n_parents)
        assert_memory_equal(a->parents, b->parents, a->n_parents * sizeof *a->parents);
}

static void same_trace(const struct atr_trace *a, const struct atr_trace *b)
{
    same_str(a->trace_id, b->trace_id);
    same_str(a->source, b->source);
    assert_int_equal(a->start_ms, b->start_ms);
    assert_int_equal(a->block_size, b->block_size);
    assert_int_equal(a->n_steps, b->n_steps);
    for (size_t k = 0; k < a->n_steps; k++)
        same_step(&a->steps[k], &b->steps[k]);
}

/* Reads text[0..len) with both readers in step: the same traces, the same
 * end or error. Returns the number of traces. */
static size_t compare(const char *text, size_t len, bool compact, size_t max_depth)
{
    struct atr_read_opts tree = {.compact_ids = compact, .max_depth = (unsigned)max_depth};
    struct atr_read_opts lean = tree;
    lean.lean = true;
    struct atr_error ea, eb;
    struct atr_reader *ra = atr_reader_open_input(atr_input_open_mem(text, len, "t.ndjson"),
                                                  "atr", &tree, &ea);
    struct atr_reader *rb = atr_reader_open_input(atr_input_open_mem(text, len, "t.ndjson"),
                                                  "atr", &lean, &eb);
    assert_non_null(ra);
    assert_non_null(rb);
    struct atr_trace a = ATR_TRACE_INIT, b = ATR_TRACE_INIT;
    size_t n = 0;
    for (;;) {
        int x = atr_reader_next(ra, &a, &ea), y = atr_reader_next(rb, &b, &eb);
        assert_int_equal(x, y);
        if (x < 0)
            assert_string_equal(ea.msg, eb.msg);
        if (x <= 0)
            break;
        same_trace(&a, &b);
        n++;
    }
    atr_trace_release(&a);
    atr_trace_release(&b);
    atr_reader_close(ra);
    atr_reader_close(rb);
    return n;
}

static size_t lean_answers, lean_lines;

/* How many of text's lines the lean reader answers for itself. */
static void count_lean(const char *text, size_t len)
{
    struct atr_lean_opts o = {ATR_DEFAULT_MAX_LINE / ATR_LINE_BYTES_PER_VALUE +
                              ATR_LINE_VALUES_MIN, ATR_JSON_DEFAULT_DEPTH, true, 16};
    struct atr_trace t = ATR_TRACE_INIT;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        atr_trace_clear(&t);
        lean_lines++;
        lean_answers += (size_t)atr_lean_line(&t, p, n, &o, NULL);
        p += n + 1;
    }
    atr_trace_release(&t);
}

static size_t files;

static int each_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || st->st_size > (8 << 20))
        return 0;
    size_t len;
    char *text = slurp(path, &len);
    if (text && memmem(text, len < 512 ? len : 512, "\"atr-trace/", 11)) {
        files++;
        for (int compact = 0; compact < 2; compact++)
            compare(text, len, compact, 0);
    }
    free(text);
    return 0;
}

/* Every atr-trace file of tests/data (valid ones and hostile ones). */
static void test_data_files(void **state)
{
    (void)state;
    assert_int_equal(nftw(ATR_TEST_DATA, each_file, 16, FTW_PHYS), 0);
    assert_true(files >= 10);
}

/* Generated traces as the writer writes them, n of them. */
static char *generated(const struct atr_gen_opts *go, size_t *len)
{
    struct atr_error err;
    struct atr_gen *g = atr_gen_new(go, &err);
    if (!g)
        fail_msg("%s", err.msg);
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_buf out = ATR_BUF_INIT;
    struct atr_write_opts wo = {0};
    while (atr_gen_next(g, &t) == 1)
        assert_int_equal(atr_trace_write(&out, &t, &wo), 0);
    atr_trace_release(&t);
    atr_gen_free(g);
    *len = out.len;
    atr_buf_append(&out, "", 1);
    return out.data;
}

static const struct atr_gen_opts gen_kinds[] = {
    {.kind = ATR_GEN_REQUESTS, .traces = 200, .seed = 1, .input_tokens = 32, .output_tokens = 8},
    {.kind = ATR_GEN_REQUESTS, .traces = 100, .seed = 2, .input_tokens = 100,
     .input_tokens_max = 900, .output_tokens = 1, .output_tokens_max = 50, .shared_prefix = 64,
     .rate = 5},
    {.kind = ATR_GEN_SWE, .traces = 20, .seed = 3},
    {.kind = ATR_GEN_SWE, .traces = 20, .seed = 4, .subagent_prob = 0.3, .subagent_depth = 2},
    {.kind = ATR_GEN_CHAT, .traces = 30, .seed = 5},
    {.kind = ATR_GEN_SWE, .traces = 5, .seed = 6, .keep_content = true},
    {.kind = ATR_GEN_CHAT, .traces = 5, .seed = 7, .keep_content = true},
};

/* Every kind of `atr gen`, with and without content: the same traces;
 * the lean reader answers for every line but those it cannot tell
 * (content with \u escapes or non-ASCII bytes). */
static void test_generated(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof gen_kinds / sizeof *gen_kinds; k++) {
        size_t len;
        char *text = generated(&gen_kinds[k], &len);
        size_t before = lean_answers, lines = lean_lines;
        assert_int_equal(compare(text, len, true, 0), gen_kinds[k].traces);
        assert_int_equal(compare(text, len, false, 0), gen_kinds[k].traces);
        count_lean(text, len);
        if (!gen_kinds[k].keep_content)   /* no content: every line is the lean reader's */
            assert_int_equal(lean_answers - before, lean_lines - lines);
        free(text);
    }
    /* Nesting caps below and at what a line needs: the tree decides. */
    size_t len;
    char *text = generated(&gen_kinds[3], &len);
    for (size_t depth = 1; depth <= 6; depth++)
        compare(text, len, true, depth);
    free(text);
}

/* The bytes a random edit puts in: JSON's structure, quotes, escapes,
 * digits, signs, letters of literals, blanks, control and non-ASCII. */
static const char edit_bytes[] = "{}[]:,\"\\/0123456789-+.eEnultrfabx \t\r\x01\x7f\xc3\xa9u";

static void edit(struct atr_rng *rng, char *line, size_t *len, size_t cap)
{
    size_t at = (size_t)atr_rng_below(rng, *len ? *len : 1);
    char c = edit_bytes[atr_rng_below(rng, sizeof edit_bytes - 1)];
    switch (atr_rng_below(rng, 3)) {
    case 0:
        if (*len)
            line[at] = c;
        break;
    case 1:
        if (*len + 1 < cap) {
            memmove(line + at + 1, line + at, *len - at);
            line[at] = c;
            (*len)++;
        }
        break;
    default:
        if (*len) {
            memmove(line + at, line + at + 1, *len - at - 1);
            (*len)--;
        }
    }
}

/* Random edits (one to three) of generated lines: both readers give the
 * same trace or the same error, file:line:col and all. */
static void test_edits(void **state)
{
    (void)state;
    struct atr_rng rng;
    atr_rng_seed(&rng, 33, 0);
    size_t edits = 0, before = lean_answers, lines = lean_lines;
    for (size_t k = 0; k < 5; k++) {
        struct atr_gen_opts go = gen_kinds[k];
        go.traces = 3;
        size_t len;
        char *text = generated(&go, &len);
        char *line = malloc(len + 64);
        size_t rounds = k < 2 ? 4000 : 400;
        for (size_t r = 0; r < rounds; r++) {
            memcpy(line, text, len);
            size_t n = len;
            for (uint64_t e = atr_rng_below(&rng, 3) + 1; e > 0; e--)
                edit(&rng, line, &n, len + 64);
            compare(line, n, r & 1, 0);
            count_lean(line, n);
            edits++;
        }
        free(line);
        free(text);
    }
    assert_true(edits >= 9200);
    /* Many edits leave a line the lean reader reads (a changed digit or
     * letter of a value): those compared lean against the tree. */
    print_message("lean reader answered %zu of %zu edited lines\n", lean_answers - before,
                  lean_lines - lines);
    assert_true(lean_answers - before > (lean_lines - lines) / 10);
}

/* Hand-made lines at the edges of the lean reader's subset. */
static void test_edges(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\\n\\\"b\\\\\",\"steps\":[]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"\\u0041\",\"steps\":[]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"\xc3\xa9\",\"steps\":[]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"trace_id\":\"b\",\"steps\":[]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":null,\"steps\":[]}",
        "{\"format\":\"atr-trace/1\",\"steps\":[],\"trace_id\":\"a\",\"block_size\":4}",
        " {\"format\" : \"atr-trace/1.1\" , \"trace_id\":\"a\",\"steps\":[ ] } \r",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":18,\"hash_ids\":[1,2]},{\"kind\":\"llm\",\"kind\":\"tool\"}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":32,\"hash_ids\":[1,2]},{\"kind\":\"llm\",\"input_tokens\":48,"
        "\"prefix\":{\"step\":0,\"blocks\":2,\"x\":[1]},\"hash_ids\":[3]}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":32,\"hash_ids\":[1,2]},{\"kind\":\"llm\",\"input_tokens\":48,"
        "\"prefix\":{\"step\":0,\"blocks\":3},\"hash_ids\":[3]}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":0123}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":1234567890123456789}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"input_tokens\":12e1}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"tool\","
        "\"tool\":\"bash\",\"exit_code\":-1,\"command\":\"ls\\t-l\"}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"hash_ids\":[]},{\"kind\":\"llm\",\"parents\":[]},{\"kind\":\"llm\",\"parents\":[0,1],"
        "\"agent\":\"x\"}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"source\":\"atr-proxy\",\"steps\":"
        "[{\"kind\":\"llm\",\"input_tokens\":40,\"recorded_input_tokens\":20,"
        "\"hash_ids\":[1,2,3]}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\","
        "\"tokens_from\":\"scaled\",\"output_tokens_from\":\"guess\"}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"meta\":{\"a\":[1,{\"b\":null}]},"
        "\"x\":true,\"steps\":[{\"kind\":\"llm\",\"messages\":[{\"role\":\"user\"}],\"y\":1.5}]}",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\"}]}\0",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[{\"kind\":\"llm\"}]} x",
    };
    for (size_t k = 0; k < sizeof lines / sizeof *lines; k++) {
        compare(lines[k], strlen(lines[k]), true, 0);
        compare(lines[k], strlen(lines[k]), false, 0);
    }
    /* With a NUL byte inside the line. */
    const char nul[] = "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"steps\":[]}\0 ";
    compare(nul, sizeof nul - 1, true, 0);
    /* The line with short escapes is the lean reader's, decoded. */
    struct atr_lean_opts o = {1 << 20, 256, true, 16};
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_lean_line(&t, lines[0], strlen(lines[0]), &o, NULL), 1);
    assert_string_equal(t.trace_id, "a\n\"b\\");
    atr_trace_clear(&t);
    assert_int_equal(atr_lean_line(&t, lines[1], strlen(lines[1]), &o, NULL), 0);   /* \u: the tree's */
    atr_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_files),
        cmocka_unit_test(test_generated),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_edits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
