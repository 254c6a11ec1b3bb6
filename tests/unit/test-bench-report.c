/* test-bench-report.c - the 3-way comparison of `atr bench report`
 * (bench/report-impl.h): results grouped per commit and variant over
 * repeats, failed repeats counted and left out, medians, verdicts read off
 * the intervals (one run a side: inconclusive), true success, per-agent
 * counts that never include baseline or human runs, the human reference,
 * and the tie margin. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/report-impl.h"

/* Adds one atr result of commit c: variant v (agent a or NULL), repeat k,
 * outcome success with output tok/s tok and TTFT median ttft, or failed. */
static void add(struct atr_bench_set *s, const char *c, const char *v, const char *a, int k,
                double tok, double ttft)
{
    char name[128], json[1024], rep[16] = "";
    if (k > 1)
        snprintf(rep, sizeof rep, "_r%d", k);      /* as atr names repeats */
    snprintf(name, sizeof name, "%s_%s%s%s%s_result.json", c, v, a ? "_" : "", a ? a : "", rep);
    bool ok = tok > 0;
    snprintf(json, sizeof json,
             "{\"human_commit\": \"%s\", \"status\": \"%s\", \"outcome\": \"%s\","
             " \"variant\": \"%s\", \"agent\": %s%s%s, \"repeat\": %d, \"metrics\": {%s}}",
             c, ok ? "success" : "error", ok ? "success" : "server_crashed", v, a ? "\"" : "",
             a ? a : "null", a ? "\"" : "", k, "");
    if (ok) {
        char *m = strstr(json, "\"metrics\": {") + strlen("\"metrics\": {");
        snprintf(m, sizeof json - (size_t)(m - json),
                 "\"output_token_throughput_tok_s\": %g, \"ttft_median_ms\": %g}}", tok, ttft);
    }
    struct atr_error err;
    if (atr_bench_read_text(s, name, json, strlen(json), &err) != 0)
        fail_msg("%s", err.msg);
}

/* Five repeats of each, around the given centres (+-1 %). */
/* Five rounds whose figures wiggle by up to 1 % the same way in every
 * variant (a machine's drift hits a round alike), or the other way round
 * (reversed: the rounds' ratios to the others then wiggle too). */
static void add5_wiggled(struct atr_bench_set *s, const char *c, const char *v, const char *a,
                         double tok, double ttft, bool reversed)
{
    static const double wiggle[] = {1.0, 1.01, 0.99, 1.005, 0.995};
    for (int k = 0; k < 5; k++) {
        int w = reversed ? 4 - k : k;
        add(s, c, v, a, k + 1, tok * wiggle[w], ttft * wiggle[4 - w]);
    }
}

static void add5(struct atr_bench_set *s, const char *c, const char *v, const char *a,
                 double tok, double ttft)
{
    add5_wiggled(s, c, v, a, tok, ttft, false);
}

static const struct row *row_of(const struct comparison *c, const char *commit, const char *agent)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].commit, commit) == 0 && c->rows[i].agent
            && strcmp(c->rows[i].agent, agent) == 0)
            return &c->rows[i];
    fail_msg("no row %s %s", commit, agent);
    return NULL;
}

static const struct agent_stats *agent_of(const struct comparison *c, const char *name)
{
    for (size_t i = 0; i < c->n_agents; i++)
        if (c->agents[i].name && strcmp(c->agents[i].name, name) == 0)
            return &c->agents[i];
    fail_msg("no agent %s", name);
    return NULL;
}

static void test_repeats(void **state)
{
    struct atr_bench_set s = {0};
    add5(&s, "c1", "baseline", NULL, 1000, 50);
    add5(&s, "c1", "human", NULL, 1200, 40);
    add5(&s, "c1", "agent", "fast", 1300, 35);        /* beats both */
    add5_wiggled(&s, "c1", "agent", "same", 1000, 50, true);   /* the baseline again */
    add(&s, "c1", "agent", "flaky", 1, 1300, 35);
    for (int k = 2; k <= 5; k++)
        add(&s, "c1", "agent", "flaky", k, 0, 0);      /* four failed repeats */
    struct comparison c;
    report_compare(&s, 0.05, &c);
    assert_int_equal(c.n, 3);
    const struct row *fast = row_of(&c, "c1", "fast");
    assert_int_equal(fast->agent_c.runs, 5);
    assert_int_equal(fast->agent_c.ok, 5);
    assert_true(fast->base.median[M_TOK_S] == 1000 && fast->agent_c.median[M_TOK_S] == 1300);
    const struct ratio *r = &fast->vs_base[M_TOK_S];
    assert_true(r->has && fabs(r->ci.point - 1.3) < 1e-9);
    assert_true(r->ci.lo <= r->ci.point && r->ci.point <= r->ci.hi);
    assert_string_equal(r->ci.method, "pairs");      /* the same 5 rounds on both sides */
    assert_int_equal(r->verdict, ATR_VERDICT_WIN);
    /* one successful round of 5 against 5: no pairs, and one value has no interval */
    assert_string_equal(row_of(&c, "c1", "flaky")->vs_base[M_TOK_S].ci.method, "none");
    assert_int_equal(fast->vs_human[M_TOK_S].verdict, ATR_VERDICT_WIN);
    /* lower latency wins: TTFT 35 against 50 */
    assert_true(fast->vs_base[M_TTFT].ci.point < 1);
    assert_int_equal(fast->vs_base[M_TTFT].verdict, ATR_VERDICT_WIN);
    assert_true(fast->true_success);
    /* no figure: no ratio (TPOT was never written) */
    assert_false(fast->vs_base[M_TPOT].has);

    const struct row *same = row_of(&c, "c1", "same");
    assert_int_equal(same->vs_base[M_TOK_S].verdict, ATR_VERDICT_TIE);
    assert_int_equal(same->vs_human[M_TOK_S].verdict, ATR_VERDICT_LOSS);
    assert_false(same->true_success);

    /* one successful repeat of five: the four failures are counted and
     * left out, and one value has no interval */
    const struct row *flaky = row_of(&c, "c1", "flaky");
    assert_int_equal(flaky->agent_c.runs, 5);
    assert_int_equal(flaky->agent_c.ok, 1);
    assert_int_equal(flaky->agent_c.n[M_TOK_S], 1);
    assert_int_equal(flaky->vs_base[M_TOK_S].verdict, ATR_VERDICT_INCONCLUSIVE);
    assert_true(flaky->vs_base[M_TOK_S].ci.point == 1.3);
    assert_false(flaky->true_success);

    /* per agent: its own runs only */
    const struct agent_stats *fa = agent_of(&c, "flaky");
    assert_int_equal(fa->c.total, 5);
    assert_int_equal(fa->c.status[ATR_BENCH_OK], 1);
    assert_int_equal(fa->c.outcome[ATR_BENCH_SERVER_CRASHED], 4);
    assert_int_equal(c.n_agents, 3);
    const struct agent_stats *f = agent_of(&c, "fast");
    assert_true(f->c.total == 5 && f->commits == 1 && f->true_success == 1);

    /* the reference: human against baseline */
    assert_int_equal(c.n_refs, 1);
    assert_int_equal(c.refs[0].ratio[M_TOK_S].verdict, ATR_VERDICT_WIN);
    assert_true(fabs(c.refs[0].ratio[M_TOK_S].ci.point - 1.2) < 1e-9);

    assert_int_equal(c.true_success, 1);
    assert_true(c.vs_base.win == 1 && c.vs_base.tie == 1 && c.vs_base.inconclusive == 1);
    assert_true(c.vs_human.win == 1 && c.vs_human.loss == 1 && c.vs_human.inconclusive == 1);
    report_release(&c);

    /* the margin only calls ties: at 0.5 % the same agent (its rounds' ratios
     * within +-0.5 %, an interval of about +-0.53 %) is inconclusive */
    report_compare(&s, 0.005, &c);
    assert_int_equal(row_of(&c, "c1", "same")->vs_base[M_TOK_S].verdict,
                     ATR_VERDICT_INCONCLUSIVE);
    assert_int_equal(row_of(&c, "c1", "fast")->vs_base[M_TOK_S].verdict, ATR_VERDICT_WIN);
    report_release(&c);
    atr_bench_set_release(&s);
}

/* One run a side, as before repeats: the ratio is there, the verdict
 * inconclusive, never a win from a fixed band. */
static void test_single_runs(void **state)
{
    struct atr_bench_set s = {0};
    add(&s, "c2", "baseline", NULL, 1, 1000, 50);
    add(&s, "c2", "human", NULL, 1, 1100, 45);
    add(&s, "c2", "agent", "a", 1, 2000, 30);
    struct comparison c;
    report_compare(&s, 0.05, &c);
    const struct row *w = row_of(&c, "c2", "a");
    assert_true(w->vs_base[M_TOK_S].has && w->vs_base[M_TOK_S].ci.point == 2);
    assert_true(isnan(w->vs_base[M_TOK_S].ci.lo));
    assert_int_equal(w->vs_base[M_TOK_S].verdict, ATR_VERDICT_INCONCLUSIVE);
    assert_false(w->true_success);
    assert_true(fabs(c.gm_base - 2) < 1e-9 && c.n_base == 1);
    report_release(&c);
    atr_bench_set_release(&s);
}

/* A commit without agent runs has one row without an agent, and no figure. */
static void test_commit_without_agents(void **state)
{
    struct atr_bench_set s = {0};
    add(&s, "c3", "baseline", NULL, 1, 1000, 50);
    add(&s, "c3", "human", NULL, 1, 0, 0);
    struct comparison c;
    report_compare(&s, 0.05, &c);
    assert_int_equal(c.n, 1);
    assert_null(c.rows[0].agent);
    assert_true(isnan(c.rows[0].agent_c.median[M_TOK_S]));
    assert_int_equal(c.rows[0].human.runs, 1);
    assert_int_equal(c.rows[0].human.ok, 0);
    assert_false(c.refs[0].ratio[M_TOK_S].has);
    assert_int_equal(c.n_agents, 0);
    report_release(&c);
    atr_bench_set_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeats),
        cmocka_unit_test(test_single_runs),
        cmocka_unit_test(test_commit_without_agents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
