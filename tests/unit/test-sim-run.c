/* test-sim-run.c - the virtual-time driver (sim/run.c) on hand-made
 * workloads: a turn too long for the KV cache stops the run naming its
 * trace and turn, or with skip_oversized becomes a failed record while its
 * session goes on (also through a concurrency limit); progress is reported
 * once per turn; records' token times are the engine's; a turn over the
 * context length is refused at once, one past its timeout fails then and
 * leaves its engine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/run.h"
#include "sim/stats.h"

#define COST (1.0 / 64)      /* per iteration: exact sums */
#define KV_TOKENS 1024       /* 64 blocks of 16 */
#define HUGE_PROMPT 5000     /* > the whole cache */

static double cost(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    (void)w;
    return COST;
}

/* Session "big": 100 tokens, then a prompt no cache of KV_TOKENS holds
 * (after 0.5 s of tool time), then 200 tokens (after 0.25 s). Session
 * "small": one 50-token turn. Session "late" (one 60-token turn) is there
 * for tests that count it in w.n_sessions. */
struct fixture {
    struct atr_turn big[3], small[1], late[1];
    struct atr_session sessions[3];
    struct atr_workload w;
    struct atr_schedule sched;
    double starts[3];
    struct atr_engine *e;
};

static void fixture_init(struct fixture *f, bool skip)
{
    memset(f, 0, sizeof *f);
    f->big[0] = (struct atr_turn){ .prompt_tokens = 100, .output_tokens = 4 };
    f->big[1] = (struct atr_turn){ .prompt_tokens = HUGE_PROMPT, .output_tokens = 4,
                                   .think_s = 0.5 };
    f->big[2] = (struct atr_turn){ .prompt_tokens = 200, .output_tokens = 4,
                                   .think_s = 0.25 };
    f->small[0] = (struct atr_turn){ .prompt_tokens = 50, .output_tokens = 3 };
    f->sessions[0] = (struct atr_session){ .trace_id = "big", .turns = f->big, .n_turns = 3 };
    f->sessions[1] = (struct atr_session){ .trace_id = "small", .turns = f->small,
                                           .n_turns = 1 };
    f->late[0] = (struct atr_turn){ .prompt_tokens = 60, .output_tokens = 2 };
    f->sessions[2] = (struct atr_session){ .trace_id = "late", .turns = f->late, .n_turns = 1 };
    f->w = (struct atr_workload){ f->sessions, 2, 4, 16 };
    atr_schedule_defaults(&f->sched);
    f->sched.kind = ATR_ARRIVAL_BURST;
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = KV_TOKENS;
    cfg.skip_oversized = skip;
    struct atr_error err;
    f->e = atr_engine_new(&cfg, &err);
    assert_non_null(f->e);
}

struct progress_log {
    size_t calls, last_done, total;
    bool monotonic;
};

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct progress_log *p = ctx;
    p->monotonic &= done == p->last_done + 1;
    p->calls++;
    p->last_done = done;
    p->total = total;
}

static double frontend_s;      /* the run's front-end time (test_frontend) */
static double frontend_token_s;
static uint64_t max_model_len; /* test_context_length */
static double timeout_s;       /* test_timeout */
static double stall_s;         /* test_stall */

static int run(struct fixture *f, unsigned max_concurrency, struct progress_log *p,
               struct atr_llm_record **r, size_t *n, struct atr_error *err)
{
    struct atr_sim_run_cfg rc = {
        .workload = &f->w, .starts = f->starts, .schedule = &f->sched,
        .max_concurrency = max_concurrency,
        .on_progress = p ? on_progress : NULL, .progress_ctx = p,
        .frontend_s = frontend_s, .frontend_token_s = frontend_token_s,
        .max_model_len = max_model_len, .timeout_s = timeout_s,
        .stall_timeout_s = stall_s,
    };
    return atr_sim_run(&f->e, 1, &rc, r, n, err);
}

static const struct atr_llm_record *find(const struct atr_llm_record *r, size_t n,
                                         const char *trace, int64_t turn)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].trace_id, trace) == 0 && r[i].turn == turn)
            return &r[i];
    fail_msg("no record of %s turn %lld", trace, (long long)turn);
    return NULL;
}

/* Without skip_oversized the run stops, and the message says which turn
 * of which trace, and what to do. */
static void test_oversized_stops_the_run(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, false);
    struct atr_llm_record *r = NULL;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 0, NULL, &r, &n, &err), -1);
    assert_null(r);
    assert_non_null(strstr(err.msg, "trace big, llm turn 1: request "));
    assert_non_null(strstr(err.msg, "needs 313 KV blocks (5000 prompt + 4 output tokens), "
                                    "the KV cache holds 64"));
    assert_non_null(strstr(err.msg, "--tp"));
    assert_non_null(strstr(err.msg, "--skip-oversized"));
    atr_engine_free(f.e);
}

/* With skip_oversized: a failed record at once, counted by the engine, and
 * the session's next turn follows after its think time. */
static void test_oversized_skipped(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, true);
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    struct progress_log p = { .monotonic = true };
    assert_int_equal(run(&f, 0, &p, &r, &n, &err), 0);
    assert_int_equal(n, 4);
    const struct atr_llm_record *t0 = find(r, n, "big", 0), *t1 = find(r, n, "big", 1);
    const struct atr_llm_record *t2 = find(r, n, "big", 2), *s0 = find(r, n, "small", 0);
    assert_true(t0->success && t2->success && s0->success);
    assert_false(t1->success);
    assert_string_equal(t1->error, ATR_SIM_OVERSIZED_ERROR);
    assert_true(t1->send_s == t0->end_s + 0.5);
    assert_true(t1->start_s == t1->send_s && t1->end_s == t1->send_s);
    assert_int_equal(t1->n_chunks, 0);
    assert_int_equal(t1->output_tokens, 0);
    assert_int_equal(t1->prompt_tokens, HUGE_PROMPT);
    assert_true(t2->send_s == t1->end_s + 0.25);
    /* Token times are the engine's: the first is the TTFT point, the last the end. */
    assert_int_equal(t2->n_chunks, 4);
    assert_true(t2->chunk_s[3] == t2->end_s);
    assert_true(t2->chunk_s[0] == t2->start_s + COST);
    struct atr_engine_stats st;
    atr_sim_stats_sum(&f.e, 1, &st);
    assert_int_equal(st.requests_rejected, 1);
    assert_int_equal(st.requests_finished, 3);
    atr_sim_stats_release(&st);
    assert_int_equal(p.calls, 4);
    assert_true(p.monotonic);
    assert_int_equal(p.last_done, 4);
    assert_int_equal(p.total, 4);
    free(r);
    atr_engine_free(f.e);
}

/* A rejected turn gives its slot back at once: with one slot, the turn
 * queued behind it starts the moment it is rejected, before the rejected
 * session's next turn. */
static void test_oversized_frees_its_slot(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, true);
    f.w.n_sessions = 3;
    f.w.n_turns = 5;
    f.big[0].prompt_tokens = HUGE_PROMPT;
    f.big[1].prompt_tokens = 100;
    f.small[0].output_tokens = 64;                     /* runs 1 s */
    f.starts[0] = 0.25;      /* queue: small runs, big waits, then late */
    f.starts[2] = 0.5;
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 1, NULL, &r, &n, &err), 0);
    assert_int_equal(n, 5);
    const struct atr_llm_record *s0 = find(r, n, "small", 0), *b0 = find(r, n, "big", 0);
    const struct atr_llm_record *l0 = find(r, n, "late", 0), *b1 = find(r, n, "big", 1);
    assert_true(s0->end_s > 0.5);
    assert_false(b0->success);
    assert_true(b0->send_s == 0.25 && b0->start_s == s0->end_s);
    assert_true(l0->send_s == 0.5 && l0->start_s == s0->end_s);
    assert_true(b1->send_s == b0->end_s + 0.5 && b1->start_s >= l0->end_s);
    free(r);
    atr_engine_free(f.e);
}

/* Every turn of the workload rejected: the run still ends, all failed. */
static void test_all_rejected(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, true);
    for (size_t i = 0; i < 3; i++)
        f.big[i].prompt_tokens = HUGE_PROMPT;
    f.small[0].prompt_tokens = HUGE_PROMPT;
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 1, NULL, &r, &n, &err), 0);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_false(r[i].success);
    free(r);
    atr_engine_free(f.e);
}

/* The front end's fixed time delays each turn's arrival at the engine:
 * TTFT and E2EL grow by it, counted from the turn's start, and the gaps
 * between tokens do not change. */
static void test_frontend(void **state)
{
    (void)state;
    struct atr_llm_record *r[2];
    size_t n[2];
    struct fixture fx[2];
    for (int k = 0; k < 2; k++) {
        fixture_init(&fx[k], true);
        frontend_s = k ? 0.004 : 0;
        struct atr_error err;
        assert_int_equal(run(&fx[k], 0, NULL, &r[k], &n[k], &err), 0);
    }
    frontend_s = 0;
    const struct atr_llm_record *a = find(r[0], n[0], "small", 0);
    const struct atr_llm_record *b = find(r[1], n[1], "small", 0);
    double delay = 0.004;
    assert_true(a->start_s == b->start_s);
    assert_float_equal(b->chunk_s[0] - b->start_s, a->chunk_s[0] - a->start_s + delay, 1e-12);
    assert_float_equal(b->end_s - b->start_s, a->end_s - a->start_s + delay, 1e-12);
    for (size_t i = 1; i < b->n_chunks; i++)
        assert_float_equal(b->chunk_s[i] - b->chunk_s[i - 1], a->chunk_s[i] - a->chunk_s[i - 1],
                           1e-12);
    for (int k = 0; k < 2; k++) {
        free(r[k]);
        atr_engine_free(fx[k].e);
    }
}

/* The front end tokenises one prompt at a time, in the order sent: in the
 * burst, "big" (100 tokens, sent first) reaches the engine after 0.1 s at
 * 1 ms a token, and "small" (50 tokens) after 0.15 s, behind it, not at
 * 0.05 s, shortest first. Both count from their slot at 0. */
static void test_tokeniser_queue(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, true);
    frontend_token_s = 1e-3;
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 0, NULL, &r, &n, &err), 0);
    frontend_token_s = 0;
    const struct atr_llm_record *big = find(r, n, "big", 0);
    const struct atr_llm_record *small = find(r, n, "small", 0);
    assert_true(big->start_s == 0 && small->start_s == 0);
    assert_true(big->chunk_s[0] >= 0.1 - 1e-12 && big->chunk_s[0] < 0.15);
    assert_true(small->chunk_s[0] >= 0.15 - 1e-12);
    free(r);
    atr_engine_free(f.e);
}

/* vLLM's rule: prompt + output up to the limit runs, one token more is
 * refused, with vLLM's message. */
static void test_context_check(void **state)
{
    (void)state;
    char msg[512];
    assert_int_equal(atr_context_check(131072, 131032, 40, msg, sizeof msg), 0);
    assert_int_equal(atr_context_check(131072, 131033, 40, msg, sizeof msg), -1);
    assert_string_equal(msg, "This model's maximum context length is 131072 tokens. However, "
                             "you requested 131073 tokens (131033 in the messages, 40 in the "
                             "completion). Please reduce the length of the messages or "
                             "completion.");
    assert_int_equal(atr_context_check(16, 200000, 1, NULL, 0), -1);
}

/* Over a context of 150 tokens: "big"'s 5000-token turn is refused by the
 * length check before the KV cache is asked (the run goes on without
 * skip_oversized), and so is its 200-token turn; 100 + 4 and 50 + 3 run. */
static void test_context_length(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, false);
    max_model_len = 150;
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 0, NULL, &r, &n, &err), 0);
    max_model_len = 0;
    assert_int_equal(n, 4);
    assert_true(find(r, n, "big", 0)->success && find(r, n, "small", 0)->success);
    for (int turn = 1; turn <= 2; turn++) {
        const struct atr_llm_record *x = find(r, n, "big", turn);
        assert_false(x->success);
        assert_string_equal(x->error, ATR_SIM_CONTEXT_ERROR);
        assert_true(x->end_s == x->start_s);
    }
    free(r);
    atr_engine_free(f.e);
}

/* A turn not over timeout_s after its slot fails then ("timeout", as the
 * HTTP client) and leaves its engine; one whose last token comes at the
 * deadline succeeds. Iterations cost 1/64 s: "small" (3 tokens) is over at
 * 3/64, "big"'s turns (4 tokens) at 4/64 after their start. */
static void test_timeout(void **state)
{
    (void)state;
    struct fixture f;
    fixture_init(&f, true);
    timeout_s = 3 * COST;
    struct atr_llm_record *r;
    size_t n;
    struct atr_error err;
    assert_int_equal(run(&f, 0, NULL, &r, &n, &err), 0);
    timeout_s = 0;
    assert_int_equal(n, 4);
    assert_true(find(r, n, "small", 0)->success);
    const struct atr_llm_record *b0 = find(r, n, "big", 0), *b2 = find(r, n, "big", 2);
    assert_string_equal(find(r, n, "big", 1)->error, ATR_SIM_OVERSIZED_ERROR);
    for (const struct atr_llm_record *x = b0; x; x = x == b0 ? b2 : NULL) {
        assert_false(x->success);
        assert_string_equal(x->error, ATR_SIM_TIMEOUT_ERROR);
        assert_float_equal(x->end_s - x->start_s, 3 * COST, 1e-12);
    }
    struct atr_engine_stats st;
    atr_engine_get_stats(f.e, &st);
    assert_int_equal(st.requests_aborted, 2);
    assert_int_equal(atr_engine_pending(f.e), 0);
    free(r);
    atr_engine_free(f.e);
}

/* The stall timeout counts from the slot to the first token, then between
 * tokens (1/64 s apart here): at 1.5/64 every turn keeps going (the check
 * moves on with each token); at 0.5/64 the first token comes too late and
 * the turns fail "stall" then. */
static void test_stall(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct fixture f;
        fixture_init(&f, true);
        stall_s = (k ? 0.5 : 1.5) * COST;
        struct atr_llm_record *r;
        size_t n;
        struct atr_error err;
        assert_int_equal(run(&f, 0, NULL, &r, &n, &err), 0);
        assert_int_equal(n, 4);
        const struct atr_llm_record *x = find(r, n, "small", 0);
        if (!k) {
            assert_true(x->success && find(r, n, "big", 2)->success);
        } else {
            assert_false(x->success);
            assert_string_equal(x->error, ATR_SIM_STALL_ERROR);
            assert_float_equal(x->end_s - x->start_s, stall_s, 1e-12);
        }
        stall_s = 0;
        free(r);
        atr_engine_free(f.e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oversized_stops_the_run),
        cmocka_unit_test(test_oversized_skipped),
        cmocka_unit_test(test_oversized_frees_its_slot),
        cmocka_unit_test(test_all_rejected),
        cmocka_unit_test(test_frontend),
        cmocka_unit_test(test_tokeniser_queue),
        cmocka_unit_test(test_context_check),
        cmocka_unit_test(test_context_length),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_stall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
