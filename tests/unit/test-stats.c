/* test-stats.c - exact percentiles (numpy "linear") and the `atr stats`
 * accumulator on hand-built traces whose figures are worked out by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/percentile.h"
#include "report/stats.h"

#define EPS 1e-9

/* ---- percentiles ---- */

static void test_percentile_empty_and_one(void **state)
{
    assert_true(isnan(atr_percentile(NULL, 0, 50)));
    assert_true(isnan(atr_percentile_sorted(NULL, 0, 0)));
    double one[] = {7.5};
    assert_float_equal(atr_percentile(one, 1, 0), 7.5, EPS);
    assert_float_equal(atr_percentile(one, 1, 50), 7.5, EPS);
    assert_float_equal(atr_percentile(one, 1, 95), 7.5, EPS);
    assert_float_equal(atr_percentile(one, 1, 100), 7.5, EPS);
}

static void test_percentile_two(void **state)
{
    double v[] = {10, 2};                 /* unsorted on purpose */
    assert_float_equal(atr_percentile(v, 2, 0), 2, EPS);
    assert_float_equal(atr_percentile(v, 2, 100), 10, EPS);
    assert_float_equal(atr_percentile(v, 2, 50), 6, EPS);   /* mean of the two */
    assert_float_equal(atr_percentile(v, 2, 25), 4, EPS);
    assert_float_equal(atr_percentile(v, 2, 95), 9.6, EPS);
}

static void test_percentile_interpolation(void **state)
{
    /* numpy.percentile([15, 20, 35, 40, 50], q) with the default method:
     * q=40 -> 29, q=5 -> 16, q=50 -> 35, q=95 -> 48, q=100 -> 50 */
    double v[] = {50, 35, 15, 40, 20};
    assert_float_equal(atr_percentile(v, 5, 40), 29, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 5), 16, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 50), 35, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 95), 48, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 100), 50, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 0), 15, EPS);
    /* out of range p is clamped, NaN p gives NaN */
    assert_float_equal(atr_percentile_sorted(v, 5, -3), 15, EPS);
    assert_float_equal(atr_percentile_sorted(v, 5, 250), 50, EPS);
    assert_true(isnan(atr_percentile_sorted(v, 5, NAN)));
    /* p = 100 * k / (n-1) lands exactly on a value */
    assert_true(atr_percentile_sorted(v, 5, 25) == 20);
    assert_true(atr_percentile_sorted(v, 5, 75) == 40);
}

static void test_samples(void **state)
{
    struct atr_samples s = ATR_SAMPLES_INIT;
    assert_true(isnan(atr_samples_percentile(&s, 50)));
    for (int i = 1000; i >= 1; i--)       /* past the first growth */
        atr_samples_add(&s, i);
    assert_float_equal(atr_samples_percentile(&s, 50), 500.5, EPS);
    assert_float_equal(atr_samples_percentile(&s, 95), 950.05, 1e-6);
    atr_samples_add(&s, 5000);            /* an add after a query re-sorts */
    assert_float_equal(atr_samples_percentile(&s, 100), 5000, EPS);
    atr_samples_clear(&s);
    atr_samples_add(&s, 3);
    assert_float_equal(atr_samples_percentile(&s, 50), 3, EPS);
    atr_samples_release(&s);
    assert_null(s.v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentiles by selection equal those of a full sort bit for bit, over
 * many queries (past ATR_SAMPLES_FIXED, where the set is sorted once), with
 * ties, in any query order, and after direct writes that clear `sorted`. */
static void test_samples_select_exact(void **state)
{
    static const double ps[] = {50, 99, 0, 100, 90, 99.9, 25, 75, 12.5, 1, 5, 95,
                                33.3, 66.6, 10, 20, 30, 40, 60, 70, 80, 45, 55};
    uint64_t x = 88172645463325252ULL;
    for (size_t n = 1; n < 5000; n = n * 3 + 1) {
        struct atr_samples s = ATR_SAMPLES_INIT;
        double *sorted = malloc(n * sizeof *sorted);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* few distinct values when n is large: ties everywhere */
            double v = (double)(x % (n > 100 ? 37 : 1000003)) / 7.0;
            atr_samples_add(&s, v);
            sorted[i] = v;
        }
        qsort(sorted, n, sizeof *sorted, cmp_double);
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
            assert_true(atr_samples_percentile(&s, ps[k]) ==
                        atr_percentile_sorted(sorted, n, ps[k]));
        for (size_t k = 0; k < n; k += n / 7 + 1)
            assert_true(atr_samples_kth(&s, k) == sorted[k]);
        s.v[0] = sorted[n - 1] + 1;     /* a direct write: the caller clears sorted */
        s.sorted = false;
        assert_true(atr_samples_percentile(&s, 100) == sorted[n - 1] + 1);
        free(sorted);
        atr_samples_release(&s);
    }
}

/* ---- hand-built traces ---- */

static struct atr_step *add_llm(struct atr_trace *t, const uint64_t *ids, uint32_t n)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    s->hash_ids = atr_arena_alloc(&t->arena, (n + 1) * sizeof *ids);
    memcpy(s->hash_ids, ids, n * sizeof *ids);
    s->n_hash_ids = n;
    s->input_tokens = (int64_t)n * 16;
    s->output_tokens = 1;
    return s;
}
#define IDS(...) (const uint64_t[]){__VA_ARGS__}, \
    (uint32_t)(sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

static struct atr_step *add_tool(struct atr_trace *t, const char *tool, const char *command,
                                 const char *action)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    s->tool = tool;
    s->command = command;
    s->action = action;
    return s;
}

static void test_within_compaction(void **state)
{
    /* A compacted history: step 2 restarts after two blocks.
     * shared: 0 + 4 + 2 + 3 = 9 of 4 + 6 + 3 + 4 = 17 ids. */
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    add_llm(&t, IDS(1, 2, 3, 4));
    add_tool(&t, "bash", "ls -la", NULL);
    add_llm(&t, IDS(1, 2, 3, 4, 5, 6));
    add_llm(&t, IDS(1, 2, 7));
    add_llm(&t, IDS(1, 2, 7, 8));
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.within.shared, 9);
    assert_int_equal(o.within.blocks, 17);
    assert_float_equal(o.within.ratio, 9.0 / 17, EPS);
    assert_int_equal(o.llm_steps, 4);
    assert_int_equal(o.tool_steps, 1);
    assert_float_equal(o.llm_pct, 80, EPS);
    atr_trace_release(&t);
    atr_stats_free(s);
}

static void test_within_is_longest_common_run(void **state)
{
    /* Ids that are not chained: step 2's ids 1 and 7 each appear at their
     * position in some earlier step, but no earlier step starts with 1,7:
     * the longest common leading run is 1 (with step 0), not 2. */
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    add_llm(&t, IDS(1, 2, 9));
    add_llm(&t, IDS(5, 7, 3));
    add_llm(&t, IDS(1, 7, 4));
    add_llm(&t, IDS(5, 7, 3, 1));    /* 3 with step 1 */
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.within.shared, 0 + 0 + 1 + 3);
    assert_int_equal(o.within.blocks, 13);
    atr_trace_release(&t);
    atr_stats_free(s);
}

/* Three traces: X's first step [1,2,3] (later steps do not count), Y's
 * first step [1,2,3,4,5] shares the run 1,2,3 (4 came only from a later
 * step of X), Z's first step [9,1,2] starts with an unseen id: run 0.
 * shared 0 + 3 + 0 of 3 + 5 + 3 = 11. */
static void add_across_traces(struct atr_stats *s)
{
    struct atr_trace t = ATR_TRACE_INIT;
    add_tool(&t, "bash", "git status", NULL);   /* tool steps before do not matter */
    add_llm(&t, IDS(1, 2, 3));
    add_llm(&t, IDS(1, 2, 3, 4));
    atr_stats_add(s, &t);
    atr_trace_clear(&t);
    add_llm(&t, IDS(1, 2, 3, 4, 5));
    atr_stats_add(s, &t);
    atr_trace_clear(&t);
    add_llm(&t, IDS(9, 1, 2));
    atr_stats_add(s, &t);
    atr_trace_release(&t);
}

static void test_across(void **state)
{
    struct atr_stats *s = atr_stats_new(NULL);
    add_across_traces(s);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.across.shared, 3);
    assert_int_equal(o.across.blocks, 11);
    assert_false(o.across_approximate);
    /* within: X's second step shares 3 of 4; the others are first steps */
    assert_int_equal(o.within.shared, 3);
    assert_int_equal(o.within.blocks, 15);
    /* turns per trace: 2, 1, 1 */
    assert_int_equal(o.turns.n, 3);
    assert_float_equal(o.turns.p50, 1, EPS);
    assert_float_equal(o.turns.max, 2, EPS);
    assert_float_equal(o.turns.mean, 4.0 / 3, EPS);
    assert_float_equal(o.turns.p95, 1.9, EPS);
    atr_stats_free(s);
}

static void test_across_capped(void **state)
{
    /* A set of 3 ids holds X's; Y's 4 and 5 are refused, so the figure is
     * marked approximate (the counts here happen to stay right). */
    struct atr_stats *s = atr_stats_new(&(struct atr_stats_opts){.max_seen_ids = 3});
    add_across_traces(s);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_true(o.across_approximate);
    assert_int_equal(o.across.shared, 3);
    atr_stats_free(s);
}

static void test_trie_shrinks_after_big_trace(void **state)
{
    /* One trace of 20000 ids (two steps sharing 10000), then small ones:
     * the working table is resized per trace and results stay exact. */
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    uint64_t big[10000];
    for (size_t i = 0; i < 10000; i++)
        big[i] = 1000 + i;
    add_llm(&t, big, 10000);
    add_llm(&t, big, 10000);
    atr_stats_add(s, &t);
    atr_trace_clear(&t);
    add_llm(&t, IDS(1, 2));
    add_llm(&t, IDS(1, 3));
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.within.shared, 10000 + 1);
    assert_int_equal(o.within.blocks, 20004);
    atr_trace_release(&t);
    atr_stats_free(s);
}

static void test_tool_names(void **state)
{
    char out[64];
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_step *st = add_tool(&t, "bash", "cd /repo && python -m pytest -q", NULL);
    atr_stats_tool_name(st, out, sizeof out);
    assert_string_equal(out, "pytest");
    st = add_tool(&t, "bash", NULL, NULL);
    st->command_head = "make";                 /* a redacted command */
    atr_stats_tool_name(st, out, sizeof out);
    assert_string_equal(out, "make");
    st = add_tool(&t, "bash", "", NULL);
    atr_stats_tool_name(st, out, sizeof out);
    assert_string_equal(out, "bash");
    st = add_tool(&t, "editor", NULL, "str_replace");
    atr_stats_tool_name(st, out, sizeof out);
    assert_string_equal(out, "editor:str_replace");
    st = add_tool(&t, "browser", NULL, NULL);
    atr_stats_tool_name(st, out, sizeof out);
    assert_string_equal(out, "browser");
    st = add_tool(&t, NULL, NULL, NULL);
    atr_stats_tool_name(st, out, 4);           /* truncated to the cap */
    assert_string_equal(out, "unk");
    atr_trace_release(&t);
}

static void test_tool_mix_top_and_other(void **state)
{
    /* 18 names: "x" three times, n00..n16 once: the top 15 rows are x then
     * n00..n13, and "other" holds n14, n15, n16. */
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    static char names[17][8];
    for (int i = 16; i >= 0; i--) {
        snprintf(names[i], sizeof names[i], "n%02d", i);
        add_tool(&t, "bash", names[i], NULL);
    }
    for (int i = 0; i < 3; i++)
        add_tool(&t, "bash", "x --flag", NULL);
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.tool_kinds, 18);
    assert_int_equal(o.n_tools, 16);
    assert_string_equal(o.tools[0].name, "x");
    assert_int_equal(o.tools[0].count, 3);
    assert_float_equal(o.tools[0].pct, 15, EPS);
    assert_string_equal(o.tools[1].name, "n00");
    assert_string_equal(o.tools[14].name, "n13");
    assert_string_equal(o.tools[15].name, "other");
    assert_int_equal(o.tools[15].count, 3);
    /* the turns of a tool-only trace are 0; no llm step: no token figures */
    assert_float_equal(o.turns.max, 0, EPS);
    assert_int_equal(o.input_tokens.n, 0);
    assert_true(isnan(o.input_tokens.mean));
    assert_true(isnan(o.within.ratio));
    atr_trace_release(&t);
    atr_stats_free(s);
}

static void test_timing_and_tokens(void **state)
{
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    /* trace 1: recorded totals 110 in / 9 out vs estimates 32+64 / 1+1 */
    atr_trace_meta_set_i64(&t, "recorded_input_tokens", 110);
    atr_trace_meta_set_i64(&t, "recorded_output_tokens", 9);
    struct atr_step *a = add_llm(&t, IDS(1, 2));
    a->dur_ms = 3000;
    a->recorded_input_tokens = 40;                /* 32 estimated */
    struct atr_step *b = add_tool(&t, "bash", "pytest", NULL);
    b->dur_ms = 500;
    add_tool(&t, "bash", "pytest", NULL);         /* untimed */
    a = add_llm(&t, IDS(1, 2, 3, 4));
    a->dur_ms = 1000;
    a->recorded_input_tokens = 60;                /* 64 estimated */
    a->recorded_output_tokens = 2;                /* 1 estimated */
    atr_stats_add(s, &t);
    /* trace 2: an llm step without an estimate: its trace total is left out */
    atr_trace_clear(&t);
    atr_trace_meta_set_i64(&t, "recorded_input_tokens", 1000);
    add_llm(&t, IDS(5));
    add_llm(&t, IDS(5, 6))->input_tokens = ATR_UNSET;
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.llm_ms, 4000);
    assert_int_equal(o.llm_timed, 2);
    assert_int_equal(o.tool_ms, 500);
    assert_int_equal(o.tool_timed, 1);
    assert_float_equal(o.llm_tool_ratio, 8, EPS);
    assert_int_equal(o.step_input.n, 2);
    assert_int_equal(o.step_input.estimated, 96);
    assert_int_equal(o.step_input.recorded, 100);
    assert_float_equal(o.step_input.error_pct, -4, EPS);
    assert_int_equal(o.step_output.n, 1);
    assert_float_equal(o.step_output.error_pct, -50, EPS);
    assert_int_equal(o.trace_input.n, 1);
    assert_float_equal(o.trace_input.error_pct, (96.0 - 110) / 110 * 100, EPS);
    assert_int_equal(o.trace_output.n, 2 - 1);    /* trace 2 has no recorded output */
    assert_float_equal(o.trace_output.error_pct, (2.0 - 9) / 9 * 100, EPS);
    /* input tokens per llm step: 32, 64, 16 (the unset one is skipped) */
    assert_int_equal(o.input_tokens.n, 3);
    assert_float_equal(o.input_tokens.p50, 32, EPS);
    assert_float_equal(o.input_tokens.total, 112, EPS);
    assert_float_equal(o.output_tokens.total, 4, EPS);
    atr_trace_release(&t);
    atr_stats_free(s);
}

static void test_no_counts_is_nan(void **state)
{
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.traces, 0);
    assert_true(isnan(o.llm_pct));
    assert_true(isnan(o.turns.p50));
    assert_true(isnan(o.step_input.error_pct));
    assert_true(isnan(o.trace_input.error_pct));
    assert_true(isnan(o.llm_tool_ratio));
    assert_int_equal(o.n_tools, 0);
    atr_stats_free(s);
}

static void test_files(void **state)
{
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT;
    add_llm(&t, IDS(1));
    atr_stats_add(s, &t);                     /* before any file: "-" */
    atr_stats_add_file(s, "a.ndjson", "atr");
    atr_stats_add(s, &t);
    atr_stats_add(s, &t);
    atr_stats_add_file(s, "b.traj", "swe-agent");
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.n_files, 3);
    assert_string_equal(o.files[0].name, "-");
    assert_int_equal(o.files[0].traces, 1);
    assert_string_equal(o.files[1].format, "atr");
    assert_int_equal(o.files[1].traces, 2);
    assert_int_equal(o.files[1].steps, 2);
    assert_int_equal(o.files[2].traces, 0);
    assert_int_equal(o.traces, 3);
    /* the same one-block trace three times: seen before in 2 of 3 */
    assert_int_equal(o.across.shared, 2);
    atr_trace_release(&t);
    atr_stats_free(s);
}

/* Sub-agents: distinct names per trace (a name met again later counts
 * once; the same name in another trace counts again), their steps' share
 * of all steps; a chain adds nothing. */
static void test_sub_agents(void **state)
{
    (void)state;
    struct atr_stats *s = atr_stats_new(NULL);
    struct atr_trace t = ATR_TRACE_INIT, chain = ATR_TRACE_INIT;
    add_llm(&t, IDS(1));
    add_llm(&t, IDS(2))->agent = "B/1";
    add_tool(&t, "browser", NULL, "goto")->agent = "B/1";
    add_llm(&t, IDS(3));
    add_llm(&t, IDS(4))->agent = "C/2";
    add_llm(&t, IDS(5))->agent = "B/1";
    add_llm(&chain, IDS(1));
    add_llm(&chain, IDS(2));
    atr_stats_add(s, &t);
    atr_stats_add(s, &chain);
    atr_stats_add(s, &t);
    struct atr_stats_summary o;
    atr_stats_summarize(s, &o);
    assert_int_equal(o.dag_traces, 2);
    assert_int_equal(o.sub_agents, 4);
    assert_int_equal(o.sub_agent_steps, 8);
    assert_true(fabs(o.sub_agent_pct - 8.0 * 100 / 14) < EPS);
    atr_trace_release(&t);
    atr_trace_release(&chain);
    atr_stats_free(s);

    s = atr_stats_new(NULL);
    atr_stats_summarize(s, &o);
    assert_int_equal(o.dag_traces, 0);
    assert_true(isnan(o.sub_agent_pct));
    atr_stats_free(s);
}

/* The in-place sort behind atr_percentile gives qsort's order: random
 * sets of every size up to 3000, with many equal values (a simulation's
 * inter-token gaps repeat), already sorted and reversed runs. */
static void test_sort_matches_qsort(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t n = 0; n <= 3000; n += n < 40 ? 1 : 97) {
        for (int shape = 0; shape < 4; shape++) {
            struct atr_samples s = ATR_SAMPLES_INIT;
            double *want = calloc(n ? n : 1, sizeof *want);
            atr_samples_reserve(&s, n);
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                double v = shape == 0 ? (double)(x >> 11) * 0x1p-53
                           : shape == 1 ? (double)(x % 7)            /* duplicates */
                           : shape == 2 ? (double)i                  /* sorted */
                                        : (double)(n - i);           /* reversed */
                want[i] = v;
                atr_samples_add(&s, v);
            }
            assert_true(s.cap == (n ? n : 0) || n == 0);   /* reserve: no regrowth */
            qsort(want, n, sizeof *want, cmp_double);
            (void)atr_percentile(s.v, s.n, 50);    /* sorts in place */
            for (size_t i = 0; i < n; i++)
                assert_true(s.v[i] == want[i]);
            free(want);
            atr_samples_release(&s);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_empty_and_one),
        cmocka_unit_test(test_sort_matches_qsort),
        cmocka_unit_test(test_percentile_two),
        cmocka_unit_test(test_percentile_interpolation),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_samples_select_exact),
        cmocka_unit_test(test_within_compaction),
        cmocka_unit_test(test_within_is_longest_common_run),
        cmocka_unit_test(test_across),
        cmocka_unit_test(test_across_capped),
        cmocka_unit_test(test_trie_shrinks_after_big_trace),
        cmocka_unit_test(test_tool_names),
        cmocka_unit_test(test_tool_mix_top_and_other),
        cmocka_unit_test(test_timing_and_tokens),
        cmocka_unit_test(test_no_counts_is_nan),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_sub_agents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
