/* test-agent.c - replay agent's library (runner/agent.h): the session
 * figures from records, steps and holds made up here (the split adds up,
 * tail steps count as tool time, dropped turns), and one real run of
 * tests/data/agent/two.ndjson against the in-process sim server with the
 * runner on the host (no cgroups, no sandbox): every turn sent, causal
 * order, a 0.3 s step measured as tool time; a DAG's split counting
 * overlapping branches once, and real runs of tests/data/agent/dag.ndjson
 * (two branches' steps at once, the join after both) and dag-shared.ndjson
 * (sub-agents reading each other's files: one work directory). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/agent.h"
#include "serve/thread.h"
#include "trace/reader.h"
#include "util/alloc.h"

#define TWO ATR_TEST_DATA "/agent/two.ndjson"
#define DAG ATR_TEST_DATA "/agent/dag.ndjson"
#define SHARED ATR_TEST_DATA "/agent/dag-shared.ndjson"

/* One session of two turns: turn 0 due at 0, sent 0.01, ends 0.2; a step
 * 0.2-0.6 (the hold of turn 1: due 0.2, resumed 0.6); turn 1 due 0.6,
 * sent 0.61, ends 0.8; a tail step 0.8-1.0. */
static void test_sessions_split(void **state)
{
    (void)state;
    struct atr_turn turns[2] = { { .prompt_tokens = 8, .output_tokens = 2 },
                                 { .prompt_tokens = 8, .output_tokens = 2 } };
    char id[] = "s";
    struct atr_session ses = { .trace_id = id, .turns = turns, .n_turns = 2 };
    struct atr_workload w = { .sessions = &ses, .n_sessions = 1, .n_turns = 2 };
    struct atr_llm_record recs[2] = {
        { .scheduled_s = 0, .sent_s = 0.01, .start_s = 0.01, .end_s = 0.2, .success = true,
          .trace_id = id, .turn = 0 },
        { .scheduled_s = 0.6, .sent_s = 0.61, .start_s = 0.61, .end_s = 0.8, .success = true,
          .trace_id = id, .turn = 1 },
    };
    struct atr_agent_step steps[2] = {
        { .session = 0, .turns_before = 1, .start_s = 0.2, .end_s = 0.6, .latency_ms = 390,
          .cpu_ms = 10, .max_rss_mb = 4 },
        { .session = 0, .turns_before = 2, .start_s = 0.8, .end_s = 1.0, .latency_ms = 190,
          .cpu_ms = 20, .max_rss_mb = 9, .failed = true, .exit_code = 1 },
    };
    struct atr_agent_result r = { .llm = { .recs = recs, .n = 2, .total = 2 },
                                  .steps = steps, .n_steps = 2 };
    double due[3] = { 0, 0.2, 0.8 }, resume[3] = { -1, 0.6, -1 };
    struct atr_agent_holds h = { .due_s = due, .resume_s = resume, .n = 3, .start_s = 0 };
    atr_agent_sessions(&r, &w, &h);
    assert_int_equal(r.n_sessions, 1);
    const struct atr_agent_session *s = &r.sessions[0];
    assert_true(fabs(s->completion_s - 1.0) < 1e-9);
    assert_true(fabs(s->model_s - (0.19 + 0.19)) < 1e-9);
    assert_true(fabs(s->queue_s - 0.02) < 1e-9);
    assert_true(fabs(s->tool_s - (0.4 + 0.2)) < 1e-9);     /* the hold and the tail */
    assert_true(fabs(s->other_s) < 1e-9);
    assert_true(fabs(s->tool_exec_s - 0.58) < 1e-9);
    assert_true(fabs(s->tool_cpu_s - 0.03) < 1e-9);
    assert_true(s->tool_peak_rss_mb == 9);
    assert_int_equal(s->tool_steps, 2);
    assert_int_equal(s->tool_failed, 1);
    assert_int_equal(s->turns, 2);
    assert_int_equal(s->turns_dropped, 0);
    struct atr_agent_split sp;
    atr_agent_split(&r, &sp);
    assert_true(fabs(sp.model_share + sp.tool_share + sp.queue_share + sp.other_share - 1) < 1e-9);
    assert_true(fabs(sp.tool_share - 0.6) < 1e-9);
    free(r.sessions);
}

/* A session whose second turn was dropped: counted, its completion ends
 * at the last thing that happened. */
static void test_sessions_dropped(void **state)
{
    (void)state;
    struct atr_turn turns[2] = { { .prompt_tokens = 8, .output_tokens = 2 },
                                 { .prompt_tokens = 8, .output_tokens = 2 } };
    char id[] = "d";
    struct atr_session ses = { .trace_id = id, .turns = turns, .n_turns = 2 };
    struct atr_workload w = { .sessions = &ses, .n_sessions = 1, .n_turns = 2 };
    struct atr_llm_record rec = { .scheduled_s = 1, .sent_s = 1, .start_s = 1, .end_s = 1.5,
                                  .success = true, .trace_id = id };
    struct atr_agent_step st = { .session = 0, .turns_before = 1, .start_s = 1.5, .end_s = 1.7,
                                 .failed = true, .latency_ms = 200 };
    struct atr_agent_result r = { .llm = { .recs = &rec, .n = 1, .total = 1, .dropped = 1 },
                                  .steps = &st, .n_steps = 1 };
    double due[3] = { 1, 1.5, -1 }, resume[3] = { -1, 1.7, -1 };
    struct atr_agent_holds h = { .due_s = due, .resume_s = resume, .n = 3, .start_s = 1 };
    atr_agent_sessions(&r, &w, &h);
    const struct atr_agent_session *s = &r.sessions[0];
    assert_int_equal(s->turns_dropped, 1);
    assert_true(fabs(s->completion_s - 0.7) < 1e-9);
    assert_true(fabs(s->tool_s - 0.2) < 1e-9);
    assert_true(fabs(s->other_s) < 1e-9);
    free(r.sessions);
}

/* A DAG session: turn 0 0-0.1, turns 1 and 2 at once 0.1-0.2, a step of
 * each branch 0.2-0.5, the join held 0.2-0.5, sent 0.52, ends 0.62. */
static void test_sessions_dag_split(void **state)
{
    (void)state;
    struct atr_turn turns[4] = {0};
    char id[] = "g";
    struct atr_session ses = { .trace_id = id, .turns = turns, .n_turns = 4, .dag = true };
    struct atr_workload w = { .sessions = &ses, .n_sessions = 1, .n_turns = 4 };
    struct atr_llm_record recs[4] = {
        { .scheduled_s = 0, .sent_s = 0, .end_s = 0.1, .success = true, .trace_id = id },
        { .scheduled_s = 0.1, .sent_s = 0.1, .end_s = 0.2, .success = true, .trace_id = id,
          .turn = 1 },
        { .scheduled_s = 0.1, .sent_s = 0.1, .end_s = 0.2, .success = true, .trace_id = id,
          .turn = 2 },
        { .scheduled_s = 0.5, .sent_s = 0.52, .end_s = 0.62, .success = true, .trace_id = id,
          .turn = 3 },
    };
    struct atr_agent_step steps[2] = {
        { .session = 0, .turns_before = 3, .start_s = 0.2, .end_s = 0.5, .latency_ms = 300 },
        { .session = 0, .turns_before = 3, .start_s = 0.2, .end_s = 0.5, .latency_ms = 300 },
    };
    struct atr_agent_result r = { .llm = { .recs = recs, .n = 4, .total = 4 },
                                  .steps = steps, .n_steps = 2 };
    double due[5] = { 0, 0.1, 0.1, 0.2, 0.62 }, resume[5] = { -1, -1, -1, 0.5, -1 };
    struct atr_agent_holds h = { .due_s = due, .resume_s = resume, .n = 5, .start_s = 0 };
    atr_agent_sessions(&r, &w, &h);
    const struct atr_agent_session *s = &r.sessions[0];
    assert_true(fabs(s->completion_s - 0.62) < 1e-9);
    assert_true(fabs(s->model_s - 0.3) < 1e-9);         /* turns 1 and 2 counted once */
    assert_true(fabs(s->tool_s - 0.3) < 1e-9);
    assert_true(fabs(s->queue_s - 0.02) < 1e-9);
    assert_true(fabs(s->other_s) < 1e-9);
    assert_true(fabs(s->tool_exec_s - 0.6) < 1e-9);     /* the steps' own time: both */
    free(r.sessions);
}

static size_t read_file_traces(const char *path, struct atr_trace *t, size_t cap)
{
    struct atr_error err;
    struct atr_read_opts ro = {0};
    struct atr_reader *rd = atr_reader_open(path, NULL, &ro, &err);
    assert_non_null(rd);
    size_t n = 0;
    while (n < cap && atr_reader_next(rd, &t[n], &err) > 0)
        n++;
    atr_reader_close(rd);
    return n;
}

static size_t read_traces(struct atr_trace *t, size_t cap)
{
    return read_file_traces(TWO, t, cap);
}

static const struct atr_llm_record *find(const struct atr_agent_result *r, const char *id,
                                         int64_t turn)
{
    for (size_t k = 0; k < r->llm.n; k++)
        if (strcmp(r->llm.recs[k].trace_id, id) == 0 && r->llm.recs[k].turn == turn)
            return &r->llm.recs[k];
    return NULL;
}

/* The whole thing on this host: sim server on a thread, steps on the host. */
static void test_real_run(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_profile p;
    assert_int_equal(atr_profile_find("h100/llama-3.1-8b", 1, &p, &err), 0);
    struct atr_engine_cfg e;
    atr_engine_cfg_defaults(&e);
    struct atr_sim_thread *srv = atr_sim_thread_start(&p, &e, 0, &err);
    assert_non_null(srv);
    struct atr_trace traces[2] = { ATR_TRACE_INIT, ATR_TRACE_INIT };
    assert_int_equal(read_traces(traces, 2), 2);
    struct atr_workload w = ATR_WORKLOAD_INIT;
    char *paths[] = { (char *)TWO };
    assert_int_equal(atr_workload_load(&w, paths, 1, NULL, 0, &err), 0);
    struct atr_schedule sch;
    atr_schedule_defaults(&sch);
    double starts[2] = { 0, 0 };
    struct atr_cg_limits none = ATR_CG_LIMITS_NONE;
    struct atr_replay_opts ro = { .config = ATR_CFG_NONE, .limits = none, .disk_max = -1,
                                  .max_output = 4096, .timeout_ms = 20000,
                                  .workdir = getenv("TMPDIR") };
    struct atr_replay *rp = atr_replay_new(&ro, &err);
    assert_non_null(rp);
    struct atr_agent_cfg cfg = {
        .llm = { .workload = &w, .starts = starts, .schedule = &sch,
                 .body = { .model = atr_sim_thread_model(srv), .stream = true,
                           .force_length = true },
                 .client = { .base_url = atr_sim_thread_url(srv), .timeout_s = 60,
                             .stall_timeout_s = 30 } },
        .rp = rp, .config = "none", .traces = traces, .n_traces = 2,
    };
    struct atr_agent_result r;
    assert_int_equal(atr_agent_run(&cfg, &r, &err), 0);
    assert_int_equal(r.llm.n, 5);
    assert_int_equal(r.n_steps, 5);
    assert_false(r.incomplete);
    for (size_t k = 0; k < r.n_steps; k++) {
        const struct atr_agent_step *st = &r.steps[k];
        const char *id = r.sessions[st->session].trace_id;
        const struct atr_llm_record *before = find(&r, id, (int64_t)st->turns_before - 1);
        const struct atr_llm_record *after = find(&r, id, (int64_t)st->turns_before);
        assert_non_null(before);
        assert_true(st->start_s >= before->end_s);
        if (after)
            assert_true(after->sent_s >= st->end_s);
    }
    const struct atr_agent_session *a = &r.sessions[0];
    assert_string_equal(a->trace_id, "agent/a");
    assert_true(a->tool_s >= 0.3);
    assert_true(fabs(a->completion_s - a->model_s - a->tool_s - a->queue_s) < 0.05);
    assert_int_equal(r.sessions[1].tool_failed, 1);     /* exit 3: recorded, goes on */
    assert_int_equal(r.sessions[1].turns, 2);
    atr_agent_result_release(&r);
    atr_replay_free(rp);
    atr_workload_release(&w);
    atr_trace_release(&traces[0]);
    atr_trace_release(&traces[1]);
    atr_sim_thread_stop(srv);
}

/* A one-trace DAG file run on this host (sim server on a thread, steps on
 * the host, work directories below $TMPDIR); check looks at the result. */
static void dag_run(const char *path, void (*check)(const struct atr_agent_result *r))
{
    struct atr_error err;
    struct atr_profile p;
    assert_int_equal(atr_profile_find("h100/llama-3.1-8b", 1, &p, &err), 0);
    struct atr_engine_cfg e;
    atr_engine_cfg_defaults(&e);
    struct atr_sim_thread *srv = atr_sim_thread_start(&p, &e, 0, &err);
    assert_non_null(srv);
    struct atr_trace trace = ATR_TRACE_INIT;
    assert_int_equal(read_file_traces(path, &trace, 1), 1);
    struct atr_workload w = ATR_WORKLOAD_INIT;
    char *paths[] = { (char *)path };
    assert_int_equal(atr_workload_load(&w, paths, 1, NULL, 0, &err), 0);
    struct atr_schedule sch;
    atr_schedule_defaults(&sch);
    double starts[1] = { 0 };
    struct atr_cg_limits none = ATR_CG_LIMITS_NONE;
    struct atr_replay_opts ro = { .config = ATR_CFG_NONE, .limits = none, .disk_max = -1,
                                  .max_output = 4096, .timeout_ms = 20000,
                                  .workdir = getenv("TMPDIR") };
    struct atr_replay *rp = atr_replay_new(&ro, &err);
    assert_non_null(rp);
    struct atr_agent_cfg cfg = {
        .llm = { .workload = &w, .starts = starts, .schedule = &sch,
                 .body = { .model = atr_sim_thread_model(srv), .stream = true,
                           .force_length = true },
                 .client = { .base_url = atr_sim_thread_url(srv), .timeout_s = 60,
                             .stall_timeout_s = 30 } },
        .rp = rp, .config = "none", .traces = &trace, .n_traces = 1,
    };
    struct atr_agent_result r;
    assert_int_equal(atr_agent_run(&cfg, &r, &err), 0);
    check(&r);
    atr_agent_result_release(&r);
    atr_replay_free(rp);
    atr_workload_release(&w);
    atr_trace_release(&trace);
    atr_sim_thread_stop(srv);
}

/* dag.ndjson: the branches' sleeps overlap, the join turn is sent after
 * both ended. */
static void check_dag(const struct atr_agent_result *r)
{
    assert_int_equal(r->llm.n, 4);
    assert_int_equal(r->n_steps, 2);
    const struct atr_agent_step *a = &r->steps[0], *b = &r->steps[1];
    assert_true(a->start_s < b->end_s && b->start_s < a->end_s);
    const struct atr_llm_record *join = find(r, "agent/dag", 3);
    assert_non_null(join);
    assert_true(join->sent_s >= a->end_s && join->sent_s >= b->end_s);
    assert_true(r->sessions[0].other_s >= -1e-3);
}

static void test_real_dag_run(void **state)
{
    (void)state;
    dag_run(DAG, check_dag);
}

/* dag-shared.ndjson: sub-agents a and b write a.txt and b.txt at once, b
 * then reads a.txt, the main agent both after the join; one work
 * directory for the session, so every step succeeds. */
static void check_shared(const struct atr_agent_result *r)
{
    assert_int_equal(r->llm.n, 4);
    assert_int_equal(r->n_steps, 4);
    for (size_t k = 0; k < r->n_steps; k++) {
        assert_false(r->steps[k].skipped);
        assert_int_equal(r->steps[k].exit_code, 0);
    }
    assert_int_equal(r->sessions[0].tool_failed, 0);
}

static void test_real_dag_shared(void **state)
{
    (void)state;
    dag_run(SHARED, check_shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessions_split),
        cmocka_unit_test(test_sessions_dropped),
        cmocka_unit_test(test_real_run),
        cmocka_unit_test(test_sessions_dag_split),
        cmocka_unit_test(test_real_dag_run),
        cmocka_unit_test(test_real_dag_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
