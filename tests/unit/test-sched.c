/* test-sched.c - arrival schedules, workload loading (block re-basing),
 * prompt synthesis, and the virtual-time session driver's concurrency
 * limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/prompt.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/run.h"
#include "trace/tokens.h"

/* A workload of n one-turn sessions with no ids. */
static struct atr_workload flat_workload(size_t n)
{
    struct atr_workload w = ATR_WORKLOAD_INIT;
    w.sessions = calloc(n, sizeof *w.sessions);
    w.n_sessions = n;
    w.block_size = 16;
    return w;
}

static void test_poisson_mean_and_gamma_variance(void **state)
{
    (void)state;
    size_t n = 200000;
    struct atr_workload w = flat_workload(n);
    double *t = calloc(n, sizeof *t);
    struct atr_schedule s;
    struct atr_error err;
    atr_schedule_defaults(&s);
    assert_int_equal(atr_schedule_set_rate(&s, "50", &err), 0);
    assert_int_equal(s.kind, ATR_ARRIVAL_POISSON);
    for (int b = 0; b < 2; b++) {
        s.burstiness = b ? 0.25 : 1.0;
        s.seed = 7;
        assert_int_equal(atr_schedule_starts(&s, &w, t, &err), 0);
        assert_true(t[0] == 0);
        double sum = 0, sq = 0;
        for (size_t i = 1; i < n; i++) {
            double g = t[i] - t[i - 1];
            assert_true(g >= 0);
            sum += g;
            sq += g * g;
        }
        double mean = sum / (double)(n - 1), var = sq / (double)(n - 1) - mean * mean;
        /* mean 1/rate; gamma(shape k, scale 1/(rate k)) has variance 1/(k rate^2) */
        assert_true(fabs(mean - 0.02) / 0.02 < 0.01);
        double want_var = 1.0 / (s.burstiness * 50.0 * 50.0);
        assert_true(fabs(var - want_var) / want_var < 0.05);
    }
    free(t);
    free(w.sessions);
}

static void test_constant_burst_trace(void **state)
{
    (void)state;
    struct atr_workload w = flat_workload(4);
    for (size_t i = 0; i < 4; i++)
        w.sessions[i].offset_s = (double)(3 - i);
    double t[4];
    struct atr_schedule s;
    struct atr_error err;
    atr_schedule_defaults(&s);
    s.time_scale = 0.5;
    assert_int_equal(atr_schedule_starts(&s, &w, t, &err), 0);
    assert_true(t[0] == 1.5 && t[3] == 0);
    s.kind = ATR_ARRIVAL_CONSTANT;
    s.rate = 4;
    assert_int_equal(atr_schedule_starts(&s, &w, t, &err), 0);
    assert_true(t[1] == 0.25 && t[3] == 0.75);
    assert_int_equal(atr_schedule_set_rate(&s, "inf", &err), 0);
    assert_int_equal(atr_schedule_starts(&s, &w, t, &err), 0);
    assert_true(t[3] == 0);
    assert_int_equal(atr_schedule_set_rate(&s, "-1", &err), -1);
    assert_int_equal(atr_schedule_set_rate(&s, "fast", &err), -1);
    s.kind = ATR_ARRIVAL_POISSON;
    s.rate = 1;
    s.burstiness = 0;
    assert_int_equal(atr_schedule_starts(&s, &w, t, &err), -1);
    free(w.sessions);
}

/* vLLM's request_rate: a workload of single requests has its schedule's
 * rate, a trace its recorded mean rate ((n - 1) / span, over time_scale),
 * "inf" when all start together; sessions of several turns have none. */
static void test_request_rate(void **state)
{
    (void)state;
    struct atr_workload w = flat_workload(4);
    for (size_t i = 0; i < 4; i++) {
        w.sessions[i].offset_s = (double)(3 - i);
        w.sessions[i].n_turns = 1;   /* only sessions with turns count */
    }
    struct atr_schedule s;
    atr_schedule_defaults(&s);
    assert_string_equal(atr_schedule_kind_name(s.kind), "trace");
    assert_true(atr_schedule_request_rate(&s, &w) == 1.0);
    s.time_scale = 0.5;
    assert_true(atr_schedule_request_rate(&s, &w) == 2.0);
    for (size_t i = 0; i < 4; i++)
        w.sessions[i].offset_s = 0;
    assert_true(isinf(atr_schedule_request_rate(&s, &w)));
    s.kind = ATR_ARRIVAL_CONSTANT;
    s.rate = 4;
    assert_true(atr_schedule_request_rate(&s, &w) == 4.0);
    assert_string_equal(atr_schedule_kind_name(s.kind), "constant");
    w.sessions[2].n_turns = 2;
    assert_true(isnan(atr_schedule_request_rate(&s, &w)));
    assert_true(atr_schedule_session_rate(&s, &w) == 4.0);
    w.sessions[2].n_turns = 1;
    free(w.sessions);
}

/* Loads ndjson (atr traces) through a temporary file, re-based to 16-token
 * blocks, into w. */
static void load_text(struct atr_workload *w, const char *ndjson)
{
    char path[] = "/tmp/atr-test-sched-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(ndjson, f);
    fclose(f);
    struct atr_error err;
    char *paths[] = { path };
    assert_int_equal(atr_workload_load(w, paths, 1, NULL, 16, &err), 0);
    unlink(path);
}

/* Writes an atr trace with 512-token blocks and loads it re-based to 16. */
static void test_workload_rebases_blocks(void **state)
{
    (void)state;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    load_text(&w,
          "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"start_ms\":5000,\"block_size\":512,"
          "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"input_tokens\":1024,\"output_tokens\":10,"
          "\"hash_ids\":[1,2]},{\"i\":1,\"kind\":\"tool\",\"tool\":\"bash\",\"dur_ms\":1500},"
          "{\"i\":2,\"kind\":\"llm\",\"input_tokens\":1536,\"output_tokens\":5,"
          "\"hash_ids\":[1,2,3]}]}\n"
          "{\"format\":\"atr-trace/1\",\"trace_id\":\"b\",\"start_ms\":7000,\"block_size\":512,"
          "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"input_tokens\":512,\"output_tokens\":1,"
          "\"hash_ids\":[1]}]}\n");
    assert_int_equal(w.n_sessions, 2);
    assert_int_equal(w.n_turns, 3);
    const struct atr_session *a = &w.sessions[0], *b = &w.sessions[1];
    assert_true(a->offset_s == 0 && b->offset_s == 2.0);
    assert_int_equal(a->turns[0].n_ids, 64);             /* 2 x 32 sub-blocks */
    assert_int_equal(a->turns[1].n_ids, 96);
    assert_true(a->turns[1].think_s == 1.5);
    assert_int_equal(b->turns[0].n_ids, 32);
    /* Shared source blocks give shared sub-blocks, in order. */
    assert_memory_equal(a->turns[0].ids, a->turns[1].ids, 64 * sizeof(uint64_t));
    assert_memory_equal(a->turns[0].ids, b->turns[0].ids, 32 * sizeof(uint64_t));
    assert_true(a->turns[0].ids[0] != a->turns[0].ids[1]);
    atr_workload_release(&w);
}

/* Turn k's ids are want[0..n). */
static void assert_turn_ids(const struct atr_session *s, size_t k, const uint64_t *want,
                            uint32_t n)
{
    assert_int_equal(s->turns[k].n_ids, n);
    assert_memory_equal(s->turns[k].ids, want, n * sizeof *want);
}

/* A DAG trace (atr-trace/1.1 parents): every turn's parent turns are the
 * nearest llm steps above it, each with the tool time after it; a chain
 * in the same file stays a chain. The driver's state releases a join only
 * when both branches are over, at the later end plus that branch's tools,
 * and a branch's prompt keeps its parent's block ids. */
static void test_workload_dag(void **state)
{
    (void)state;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    load_text(&w,
          "{\"format\":\"atr-trace/1.1\",\"trace_id\":\"d\",\"block_size\":16,\"steps\":["
          "{\"i\":0,\"kind\":\"llm\",\"input_tokens\":48,\"hash_ids\":[1,2,3]},"
          "{\"i\":1,\"kind\":\"llm\",\"parents\":[0],\"input_tokens\":64,"
          "\"prefix\":{\"step\":0,\"blocks\":3},\"hash_ids\":[11]},"
          "{\"i\":2,\"kind\":\"llm\",\"parents\":[0],\"input_tokens\":64,"
          "\"prefix\":{\"step\":0,\"blocks\":3},\"hash_ids\":[21]},"
          "{\"i\":3,\"kind\":\"tool\",\"parents\":[2],\"tool\":\"bash\",\"dur_ms\":2000},"
          "{\"i\":4,\"kind\":\"tool\",\"tool\":\"bash\",\"dur_ms\":500},"
          "{\"i\":5,\"kind\":\"llm\",\"parents\":[1,4],\"input_tokens\":80,"
          "\"prefix\":{\"step\":0,\"blocks\":3},\"hash_ids\":[4,5]}]}\n"
          "{\"format\":\"atr-trace/1\",\"trace_id\":\"c\",\"steps\":["
          "{\"i\":0,\"kind\":\"llm\",\"input_tokens\":16},"
          "{\"i\":1,\"kind\":\"llm\",\"input_tokens\":16}]}\n");
    const struct atr_session *d = &w.sessions[0], *c = &w.sessions[1];
    assert_true(d->dag && !c->dag);
    assert_int_equal(d->n_turns, 4);
    assert_int_equal(d->turns[0].n_parents, 0);
    assert_int_equal(d->turns[1].n_parents, 1);
    assert_int_equal(d->turns[1].parents[0], 0);
    assert_int_equal(d->turns[2].parents[0], 0);
    assert_int_equal(d->turns[3].n_parents, 2);          /* the join: turns 1 and 2 */
    assert_int_equal(d->turns[3].parents[0], 1);
    assert_int_equal(d->turns[3].parents[1], 2);
    assert_true(d->turns[3].parent_think_s[0] == 0);     /* right after turn 1 */
    assert_true(d->turns[3].parent_think_s[1] == 2.5);   /* two tools after turn 2 */
    assert_true(d->turns[3].think_s == 2.5);
    assert_string_equal(d->turns[3].prev_tool, "bash");
    static const uint64_t b1[] = { 1, 2, 3, 11 }, b2[] = { 1, 2, 3, 21 };
    assert_turn_ids(d, 1, b1, 4);                         /* both branches keep the prefix */
    assert_turn_ids(d, 2, b2, 4);
    uint32_t one;
    const uint32_t *par;
    assert_int_equal(atr_turn_parents(c, 1, &one, &par), 1);
    assert_int_equal(par[0], 0);
    assert_int_equal(atr_turn_parents(c, 0, &one, &par), 0);

    struct atr_dag_state st;
    uint32_t ready[4];
    atr_dag_state_init(&st, d);
    assert_int_equal(atr_dag_turn_over(&st, 0, 1.0, 1.0, ready), 2);   /* the fork */
    assert_true(ready[0] == 1 && ready[1] == 2);
    assert_true(st.ready_s[1] == 1.0 && st.ready_s[2] == 1.0);
    assert_int_equal(atr_dag_turn_over(&st, 2, 2.0, 0.5, ready), 0);   /* one branch: wait */
    assert_int_equal(atr_dag_turn_over(&st, 1, 3.0, 0.5, ready), 1);
    assert_int_equal(ready[0], 3);
    assert_true(st.ready_s[3] == 3.25);     /* max(3.0 + 0, 2.0 + 2.5 x 0.5) */
    atr_dag_state_release(&st);
    atr_workload_release(&w);
}

/* "prefix" steps, read compact: a prefix of a step in the chain, of one
 * cut short (partial last block), of one in an older chain, and one that
 * leaves the chain, all give the expanded lists. */
static void test_workload_prefix_steps(void **state)
{
    (void)state;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    load_text(&w,
          "{\"format\":\"atr-trace/1\",\"trace_id\":\"a\",\"block_size\":16,\"steps\":["
          "{\"i\":0,\"kind\":\"llm\",\"input_tokens\":48,\"hash_ids\":[1,2,3]},"
          "{\"i\":1,\"kind\":\"llm\",\"input_tokens\":64,"
          "\"prefix\":{\"step\":0,\"blocks\":3},\"hash_ids\":[4]},"
          "{\"i\":2,\"kind\":\"llm\",\"input_tokens\":70,"
          "\"prefix\":{\"step\":1,\"blocks\":4},\"hash_ids\":[5]},"
          "{\"i\":3,\"kind\":\"llm\",\"input_tokens\":96,"
          "\"prefix\":{\"step\":2,\"blocks\":5},\"hash_ids\":[6]},"
          "{\"i\":4,\"kind\":\"llm\",\"input_tokens\":48,"
          "\"prefix\":{\"step\":3,\"blocks\":2},\"hash_ids\":[9]},"
          "{\"i\":5,\"kind\":\"llm\",\"input_tokens\":64,"
          "\"prefix\":{\"step\":4,\"blocks\":3},\"hash_ids\":[10]},"
          "{\"i\":6,\"kind\":\"llm\",\"input_tokens\":32,"
          "\"prefix\":{\"step\":3,\"blocks\":2},\"hash_ids\":[]}]}\n");
    assert_int_equal(w.n_turns, 7);
    const struct atr_session *s = &w.sessions[0];
    static const uint64_t first[] = { 1, 2, 3, 4, 5, 6 }, second[] = { 1, 2, 9, 10 };
    assert_turn_ids(s, 0, first, 3);
    assert_turn_ids(s, 1, first, 4);
    assert_turn_ids(s, 2, first, 4);          /* 70 tokens: 4 whole blocks */
    assert_turn_ids(s, 3, first, 6);
    assert_turn_ids(s, 4, second, 3);
    assert_turn_ids(s, 5, second, 4);
    assert_turn_ids(s, 6, second, 2);
    assert_int_equal(s->n_id_chains, 2);
    atr_workload_release(&w);
}

static void test_prompt_shares_prefixes(void **state)
{
    (void)state;
    uint64_t ids[] = { 11, 12, 13 };
    struct atr_turn t1 = { .prompt_tokens = 40, .output_tokens = 5, .ids = ids, .n_ids = 2 };
    struct atr_turn t2 = { .prompt_tokens = 70, .output_tokens = 5, .ids = ids, .n_ids = 3 };
    struct atr_buf a = ATR_BUF_INIT, b = ATR_BUF_INIT;
    assert_int_equal(atr_prompt_text(&a, &t1, 16, 1), 0);
    assert_int_equal(atr_prompt_text(&b, &t2, 16, 2), 0);
    /* Exact token counts under atr's estimator. */
    assert_int_equal(atr_tokens_estimate(a.data, a.len), 40);
    assert_int_equal(atr_tokens_estimate(b.data, b.len), 70);
    /* The two shared blocks hash the same; the third differs. */
    struct atr_blockhash ha, hb;
    atr_blockhash_init(&ha, 16);
    atr_blockhash_init(&hb, 16);
    atr_blockhash_feed(&ha, a.data, a.len);
    atr_blockhash_feed(&hb, b.data, b.len);
    assert_int_equal(ha.n_ids, 2);
    assert_int_equal(hb.n_ids, 4);
    assert_true(ha.ids[0] == hb.ids[0] && ha.ids[1] == hb.ids[1]);
    atr_blockhash_release(&ha);
    atr_blockhash_release(&hb);
    /* Deterministic: the same turn and seed give the same bytes. */
    struct atr_buf c = ATR_BUF_INIT;
    atr_prompt_text(&c, &t1, 16, 1);
    assert_string_equal(a.data, c.data);
    atr_buf_clear(&c);
    atr_prompt_text(&c, &t1, 16, 3);           /* another tail */
    assert_memory_equal(a.data, c.data, 32);
    assert_true(strcmp(a.data, c.data) != 0);
    struct atr_body_opts o = { .api = ATR_LLM_CHAT, .model = "m\"x", .stream = true,
                               .force_length = true };
    atr_buf_clear(&c);
    assert_int_equal(atr_prompt_body(&c, &o, &t1, 16, 1), 0);
    assert_non_null(strstr(c.data, "{\"model\":\"m\\\"x\",\"messages\":[{\"role\":\"user\""));
    assert_non_null(strstr(c.data, "\"max_tokens\":5,\"min_tokens\":5,\"ignore_eos\":true"));
    assert_non_null(strstr(c.data, "\"stream_options\":{\"include_usage\":true}}"));
    atr_buf_release(&a);
    atr_buf_release(&b);
    atr_buf_release(&c);
}

static double unit_cost(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    (void)w;
    return 0.01;
}

/* 8 one-turn sessions at once through a limit of 3: never more than 3 in
 * flight, and the waits show as queue time. */
static void test_sim_run_max_concurrency(void **state)
{
    (void)state;
    struct atr_workload w = flat_workload(8);
    struct atr_turn turns[8];
    for (size_t i = 0; i < 8; i++) {
        turns[i] = (struct atr_turn){ .prompt_tokens = 32, .output_tokens = 4 };
        w.sessions[i].turns = &turns[i];
        w.sessions[i].n_turns = 1;
    }
    w.n_turns = 8;
    double starts[8] = { 0 };
    struct atr_schedule s;
    atr_schedule_defaults(&s);
    s.kind = ATR_ARRIVAL_BURST;
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = unit_cost;
    cfg.kv_capacity_tokens = 1 << 16;
    struct atr_error err;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    struct atr_sim_run_cfg rc = { .workload = &w, .starts = starts, .schedule = &s,
                                  .max_concurrency = 3 };
    struct atr_llm_record *r;
    size_t n;
    assert_int_equal(atr_sim_run(&e, 1, &rc, &r, &n, &err), 0);
    assert_int_equal(n, 8);
    double queued = 0;
    for (size_t i = 0; i < n; i++) {
        int in_flight = 0;
        for (size_t k = 0; k < n; k++)
            in_flight += r[k].start_s <= r[i].start_s && r[i].start_s < r[k].end_s;
        assert_true(in_flight <= 3);
        queued += r[i].start_s - r[i].send_s;
        assert_true(r[i].send_s == 0);
    }
    assert_true(queued > 0);
    free(r);
    atr_engine_free(e);
    free(w.sessions);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poisson_mean_and_gamma_variance),
        cmocka_unit_test(test_constant_burst_trace),
        cmocka_unit_test(test_request_rate),
        cmocka_unit_test(test_workload_rebases_blocks),
        cmocka_unit_test(test_workload_prefix_steps),
        cmocka_unit_test(test_workload_dag),
        cmocka_unit_test(test_prompt_shares_prefixes),
        cmocka_unit_test(test_sim_run_max_concurrency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
