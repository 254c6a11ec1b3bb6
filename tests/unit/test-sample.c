/* test-sample.c - stratified sampling: dominant tools, strata coverage,
 * exact counts, proportional allocation, determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gen/sample.h"

/* A trace of `turns` llm steps, each followed by a bash step running cmd
 * (or an editor step when cmd is NULL). */
static void make_trace(struct atr_trace *t, unsigned turns, const char *cmd)
{
    atr_trace_clear(t);
    t->trace_id = "t";
    for (unsigned k = 0; k < turns; k++) {
        atr_trace_add_step(t, ATR_STEP_LLM);
        struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
        s->tool = cmd ? "bash" : "editor";
        s->command = cmd;
    }
}

static void dominant(struct atr_trace *t, const char *want)
{
    char got[64];
    atr_trace_dominant_tool(t, got, sizeof got);
    assert_string_equal(got, want);
}

static void test_dominant_tool(void **state)
{
    struct atr_trace t = ATR_TRACE_INIT;
    make_trace(&t, 0, NULL);
    dominant(&t, "none");
    make_trace(&t, 3, "cd /repo && python -m pytest tests -q");
    struct atr_step *s = atr_trace_add_step(&t, ATR_STEP_TOOL);
    s->tool = "bash";
    s->command = "grep -rn foo .";
    dominant(&t, "pytest");
    make_trace(&t, 2, NULL);
    dominant(&t, "editor");
    /* a tie goes to the head seen first */
    make_trace(&t, 1, "ls -la");
    s = atr_trace_add_step(&t, ATR_STEP_TOOL);
    s->tool = "bash";
    s->command = "cat x";
    dominant(&t, "ls");
    /* redacted traces keep only command_head */
    make_trace(&t, 0, NULL);
    s = atr_trace_add_step(&t, ATR_STEP_TOOL);
    s->tool = "bash";
    s->command_head = "pip";
    dominant(&t, "pip");
    atr_trace_release(&t);
}

/* 4 known strata, n traces each, interleaved: (2 turns | 20 turns) x
 * (pytest | grep); trace i is in stratum i % 4. */
static struct atr_sampler *four_strata(size_t n)
{
    struct atr_sampler *s = atr_sampler_new();
    struct atr_trace t = ATR_TRACE_INIT;
    for (size_t i = 0; i < 4 * n; i++) {
        make_trace(&t, i % 2 ? 20 : 2, (i / 2) % 2 ? "grep -rn x ." : "pytest -q");
        atr_sampler_add(s, &t);
    }
    atr_trace_release(&t);
    assert_int_equal(atr_sampler_count(s), 4 * n);
    return s;
}

/* Picks per stratum (i % 4) into per[4]; returns the total. */
static size_t picks(const struct atr_sampler *s, size_t *per)
{
    size_t total = 0;
    memset(per, 0, 4 * sizeof *per);
    for (size_t i = 0; i < atr_sampler_count(s); i++)
        if (atr_sampler_picked(s, i)) {
            per[i % 4]++;
            total++;
        }
    return total;
}

static void test_covers_strata(void **state)
{
    struct atr_sampler *s = four_strata(10);
    size_t per[4];
    atr_sampler_choose(s, 4, 1);
    assert_int_equal(picks(s, per), 4);
    for (int k = 0; k < 4; k++)
        assert_int_equal(per[k], 1);
    assert_int_equal(atr_sampler_n_strata(s), 4);
    size_t sum = 0;
    for (size_t k = 0; k < 4; k++) {
        const struct atr_sample_stratum *st = atr_sampler_stratum(s, k);
        assert_int_equal(st->size, 10);
        assert_int_equal(st->picked, 1);
        assert_int_equal(st->turns_lo, st->turns_hi);
        assert_true(strcmp(st->tool, "pytest") == 0 || strcmp(st->tool, "grep") == 0);
        sum += st->picked;
    }
    assert_int_equal(sum, 4);
    assert_null(atr_sampler_stratum(s, 4));
    atr_sampler_free(s);
}

static void test_exact_counts(void **state)
{
    struct atr_sampler *s = four_strata(10);
    size_t per[4];
    for (size_t n = 1; n <= 40; n++) {
        atr_sampler_choose(s, n, 7);
        assert_int_equal(picks(s, per), n);
        for (int k = 0; k < 4; k++) {
            assert_true(per[k] <= 10);
            if (n >= 4)     /* one per stratum, then equal shares: within 1 */
                assert_true(per[k] >= n / 4 && per[k] <= (n + 3) / 4);
        }
    }
    atr_sampler_choose(s, 1000, 7);
    assert_int_equal(picks(s, per), 40);
    atr_sampler_free(s);
}

/* Unequal strata: 1 short trace and 30 long ones; 4 picks = 1 + 3. */
static void test_proportional(void **state)
{
    struct atr_sampler *s = atr_sampler_new();
    struct atr_trace t = ATR_TRACE_INIT;
    for (int i = 0; i < 31; i++) {
        make_trace(&t, i == 17 ? 1 : 30, "pytest");
        atr_sampler_add(s, &t);
    }
    atr_sampler_choose(s, 4, 3);
    assert_true(atr_sampler_picked(s, 17));
    size_t n = 0;
    for (size_t i = 0; i < 31; i++)
        n += atr_sampler_picked(s, i);
    assert_int_equal(n, 4);
    assert_int_equal(atr_sampler_n_strata(s), 2);
    atr_trace_release(&t);
    atr_sampler_free(s);
}

static void test_deterministic(void **state)
{
    struct atr_sampler *a = four_strata(25), *b = four_strata(25);
    atr_sampler_choose(a, 10, 42);
    atr_sampler_choose(b, 10, 42);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(atr_sampler_picked(a, i), atr_sampler_picked(b, i));
    atr_sampler_choose(b, 10, 43);
    int differ = 0;
    for (size_t i = 0; i < 100; i++)
        differ += atr_sampler_picked(a, i) != atr_sampler_picked(b, i);
    assert_true(differ > 0);
    atr_sampler_free(a);
    atr_sampler_free(b);
}

/* More than ATR_SAMPLE_TOOL_CLASSES dominant tools: the rare ones share
 * one "other" stratum. */
static void test_other_class(void **state)
{
    struct atr_sampler *s = atr_sampler_new();
    struct atr_trace t = ATR_TRACE_INIT;
    char cmd[32];
    for (int c = 0; c < 12; c++)
        for (int k = 0; k <= (c < 8 ? 3 : 0); k++) {
            snprintf(cmd, sizeof cmd, "tool%c --x", 'a' + c);
            make_trace(&t, 5, cmd);
            atr_sampler_add(s, &t);
        }
    atr_sampler_choose(s, 100, 1);
    assert_int_equal(atr_sampler_n_strata(s), ATR_SAMPLE_TOOL_CLASSES + 1);
    const struct atr_sample_stratum *last = atr_sampler_stratum(s, ATR_SAMPLE_TOOL_CLASSES);
    assert_string_equal(last->tool, "other");
    assert_int_equal(last->size, 4);
    atr_trace_release(&t);
    atr_sampler_free(s);
}

static void test_empty(void **state)
{
    struct atr_sampler *s = atr_sampler_new();
    atr_sampler_choose(s, 5, 1);
    assert_int_equal(atr_sampler_n_strata(s), 0);
    assert_false(atr_sampler_picked(s, 0));
    atr_sampler_free(s);
    atr_sampler_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dominant_tool),
        cmocka_unit_test(test_covers_strata),
        cmocka_unit_test(test_exact_counts),
        cmocka_unit_test(test_proportional),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_other_class),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
