/* agent.c - llm turns and real tool steps of sessions in one causal
 * timeline (see agent.h). */
#include "runner/agent.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json/writer.h"
#include "util/alloc.h"
#include "util/buf.h"

/* Where a DAG step stands: a parent that can never finish kills its
 * children (their turns are dropped, their tool steps skipped). */
enum { STEP_PENDING, STEP_DONE, STEP_DEAD };

struct ses_rt;

/* A DAG session's sub-agent: its tool steps run in trace order on its own
 * thread, beside the other sub-agents'. */
struct branch {
    struct ses_rt *rt;
    const char *agent;           /* NULL: the main agent */
    double step_start;
    pthread_t th;
    bool have_th;
    int rc;
    struct atr_error err;
};

/* A session's tool side: its thread and what it shares with the loop. */
struct ses_rt {
    struct agent *a;
    size_t i;
    size_t n_turns;
    uint32_t *before;            /* per trace step: llm steps before it */
    size_t *seg_left;            /* per turn k (and the end): its tool steps not yet done */
    long due;                    /* the turn that fell due last; -1: not started */
    bool held;                   /* the loop holds turn `due` for this thread */
    bool finished, stopping;
    double step_start;
    double *due_s, *resume_s;    /* per turn plus the end */
    pthread_t th;
    bool have_th;
    int rc;
    struct atr_error err;
    /* DAG sessions only (chains keep the fields above) */
    bool dag;
    unsigned char *state;        /* per trace step: STEP_* */
    uint32_t *turn_step;         /* per turn: its trace step */
    bool *held_k;                /* per turn: the loop holds it for the tool steps */
    struct branch *br;
    size_t n_br;
    /* The work directory its branches share, made by the first branch
     * to start (under share_mu, not a->mu: the loop never waits on it). */
    struct atr_replay_shared *share;
    bool share_tried;
    pthread_mutex_t share_mu;
};

struct agent {
    const struct atr_agent_cfg *cfg;
    struct atr_agent_result *out;
    struct ses_rt *ses;
    size_t n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pipe[2];
    double t0;
    bool llm_done;
    size_t cap_steps;
    struct atr_buf line;
};

static double rel(const struct agent *a)
{
    return atr_llm_now() - a->t0;
}

static bool stopped(const struct agent *a)
{
    return (a->cfg->llm.stop && *a->cfg->llm.stop) || atr_replay_stopped();
}

/* Hands a held turn back to the loop (drop: its session ends). A full
 * pipe cannot happen: one message per session at most is in it. */
static void send_resume(struct ses_rt *rt, bool drop)
{
    uint64_t msg = (uint64_t)rt->i | (drop ? ATR_LLM_RESUME_DROP : 0);
    ssize_t w = write(rt->a->pipe[1], &msg, sizeof msg);
    (void)w;
    rt->held = false;
}

static bool dag_turn_due(struct ses_rt *rt, size_t k, double now);

/* On the loop: turn k of session si fell due. Held while the tool steps
 * before it have yet to run. */
static bool on_turn_due(void *ctx, size_t si, size_t k, double now)
{
    struct agent *a = ctx;
    struct ses_rt *rt = &a->ses[si];
    pthread_mutex_lock(&a->mu);
    if (rt->dag) {
        bool h = dag_turn_due(rt, k, now);
        pthread_mutex_unlock(&a->mu);
        return h;
    }
    rt->due = (long)k;
    rt->due_s[k] = now;
    bool hold = false;
    if (k < rt->n_turns && rt->have_th && (rt->stopping || rt->rc < 0)) {
        hold = true;             /* its tools failed earlier: drop what is left */
        rt->held = true;
        send_resume(rt, true);
    } else if (k < rt->n_turns && rt->have_th && !rt->finished && rt->seg_left[k] > 0) {
        hold = rt->held = true;
    }
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return hold;
}

/* In the session's thread: waits until the turns before step s ended.
 * 1 (end the trace) when the run stops or the turn will never come. */
static int gate(void *ctx, const struct atr_step *s, struct atr_error *err)
{
    struct ses_rt *rt = ctx;
    struct agent *a = rt->a;
    (void)err;
    pthread_mutex_lock(&a->mu);
    while (rt->due < (long)rt->before[s->i] && !rt->stopping && !a->llm_done && !stopped(a)) {
        struct timespec ts;      /* a stop is polled: signals do not wake a condvar */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&a->cv, &a->mu, &ts);
    }
    int go = rt->due >= (long)rt->before[s->i] && !rt->stopping && !stopped(a) ? 0 : 1;
    rt->step_start = rel(a);
    pthread_mutex_unlock(&a->mu);
    return go;
}

static bool step_failed(const struct atr_step_metrics *m)
{
    return !m->skipped && (m->exit_code != 0 || m->timed_out || m->oom_kills > 0);
}

static void keep_step(struct agent *a, struct ses_rt *rt, const struct atr_step_metrics *m,
                      double start, double end)
{
    struct atr_agent_result *o = a->out;
    if (o->n_steps == a->cap_steps) {
        a->cap_steps = a->cap_steps ? 2 * a->cap_steps : 16;
        o->steps = xreallocarray(o->steps, a->cap_steps, sizeof *o->steps);
    }
    struct atr_agent_step *st = &o->steps[o->n_steps++];
    *st = (struct atr_agent_step){
        .session = rt->i, .turns_before = rt->before[m->step_id], .start_s = start,
        .end_s = end, .failed = step_failed(m), .skipped = m->skipped != NULL,
        .latency_ms = m->latency_ms, .cpu_ms = m->cpu_ms, .max_rss_mb = m->max_rss_mb,
        .exit_code = m->exit_code,
    };
    atr_buf_clear(&a->line);
    struct atr_jw w;
    atr_jw_init(&w, &a->line, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "kind", "tool");
    atr_jw_kv_uint(&w, "session", rt->i);
    atr_jw_kv_int(&w, "after_turn", (int64_t)st->turns_before - 1);
    atr_jw_kv_fixed(&w, "start_s", st->start_s, 6);
    atr_jw_kv_fixed(&w, "end_s", st->end_s, 6);
    atr_step_metrics_members(&w, a->cfg->config, m);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    st->line = atr_jw_finish(&w) < 0 ? xstrdup("{}\n") : xstrdup(a->line.data);
}

/* In the session's thread, after each tool step: kept, and the held turn
 * resumed when it was the last step before it. */
static int sink(void *ctx, const struct atr_step_metrics *m, struct atr_error *err)
{
    struct ses_rt *rt = ctx;
    struct agent *a = rt->a;
    (void)err;
    pthread_mutex_lock(&a->mu);
    double end = rel(a);
    keep_step(a, rt, m, rt->step_start, end);
    size_t k = rt->before[m->step_id];
    rt->seg_left[k]--;
    if (step_failed(m) && a->cfg->stop_on_tool_fail)
        rt->stopping = true;
    if (rt->held && (rt->seg_left[rt->due] == 0 || rt->stopping)) {
        rt->resume_s[rt->due] = end;
        send_resume(rt, rt->stopping);
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static void *ses_main(void *arg)
{
    struct ses_rt *rt = arg;
    struct agent *a = rt->a;
    int rc = atr_replay_trace_gated(a->cfg->rp, NULL, &a->cfg->traces[rt->i], NULL, gate, sink,
                                    rt, &rt->err);
    pthread_mutex_lock(&a->mu);
    rt->rc = rc;
    rt->finished = true;
    if (rt->held)                /* stopped, or the runner failed: the session ends */
        send_resume(rt, true);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- DAG sessions ---- */

static void send_turn_msg(struct ses_rt *rt, size_t k, bool drop)
{
    uint64_t msg = (uint64_t)rt->i | ((uint64_t)k << ATR_LLM_RESUME_TURN_SHIFT) |
                   (drop ? ATR_LLM_RESUME_DROP : 0);
    ssize_t w = write(rt->a->pipe[1], &msg, sizeof msg);
    (void)w;
    rt->held_k[k] = false;
}

/* Under a->mu: STEP_DONE when every parent of step j is done, STEP_DEAD
 * when one never will be (a turn once the loop ended), else pending. */
static int parents_state(const struct ses_rt *rt, size_t j)
{
    const struct atr_trace *t = &rt->a->cfg->traces[rt->i];
    uint32_t one;
    const uint32_t *p;
    uint32_t n = atr_step_parents(&t->steps[j], &one, &p);
    int st = STEP_DONE;
    for (uint32_t k = 0; k < n; k++) {
        int ps = rt->state[p[k]];
        if (ps == STEP_PENDING && rt->a->llm_done && t->steps[p[k]].kind == ATR_STEP_LLM)
            ps = STEP_DEAD;
        if (ps == STEP_DEAD)
            return STEP_DEAD;
        if (ps == STEP_PENDING)
            st = STEP_PENDING;
    }
    return st;
}

/* Under a->mu: each held turn whose tool steps all ran goes on; one that
 * waits for a step that never will (or a stopping session) drops. */
static void dag_check_held(struct ses_rt *rt)
{
    double now = rel(rt->a);
    for (size_t k = 0; k < rt->n_turns; k++) {
        if (!rt->held_k[k])
            continue;
        int st = rt->stopping ? STEP_DEAD : parents_state(rt, rt->turn_step[k]);
        if (st == STEP_PENDING)
            continue;
        rt->resume_s[k] = now;
        send_turn_msg(rt, k, st == STEP_DEAD);
    }
}

static bool dag_turn_due(struct ses_rt *rt, size_t k, double now)
{
    rt->due_s[k] = now;
    if (k >= rt->n_turns)
        return false;
    int st = rt->stopping ? STEP_DEAD : parents_state(rt, rt->turn_step[k]);
    if (st == STEP_DONE)
        return false;
    rt->held_k[k] = true;
    if (st == STEP_DEAD)
        send_turn_msg(rt, k, true);
    return true;
}

/* On the loop: a DAG turn's reply ended; its children may go on. */
static void on_turn_over(void *ctx, size_t si, size_t k, double now)
{
    struct agent *a = ctx;
    struct ses_rt *rt = &a->ses[si];
    (void)now;
    pthread_mutex_lock(&a->mu);
    if (rt->dag && k < rt->n_turns)
        rt->state[rt->turn_step[k]] = STEP_DONE;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static bool same_agent(const char *x, const char *y)
{
    return x == y || (x && y && strcmp(x, y) == 0);
}

static void wait_a_bit(struct agent *a)
{
    struct timespec ts;          /* a stop is polled: signals do not wake a condvar */
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&a->cv, &a->mu, &ts);
}

/* In a branch's thread: skips the other branches' steps, waits until the
 * step's parents (turns or tool steps) finished. */
static int dag_gate(void *ctx, const struct atr_step *s, struct atr_error *err)
{
    struct branch *b = ctx;
    struct ses_rt *rt = b->rt;
    struct agent *a = rt->a;
    (void)err;
    if (!same_agent(s->agent, b->agent))
        return ATR_REPLAY_GATE_SKIP;
    pthread_mutex_lock(&a->mu);
    int st;
    while ((st = parents_state(rt, s->i)) == STEP_PENDING && !rt->stopping && !stopped(a))
        wait_a_bit(a);
    int go = rt->stopping || stopped(a) ? 1 : st == STEP_DEAD ? ATR_REPLAY_GATE_SKIP : 0;
    if (go == ATR_REPLAY_GATE_SKIP) {
        rt->state[s->i] = STEP_DEAD;
        dag_check_held(rt);
        pthread_cond_broadcast(&a->cv);
    }
    b->step_start = rel(a);
    pthread_mutex_unlock(&a->mu);
    return go;
}

static int dag_sink(void *ctx, const struct atr_step_metrics *m, struct atr_error *err)
{
    struct branch *b = ctx;
    struct ses_rt *rt = b->rt;
    struct agent *a = rt->a;
    (void)err;
    pthread_mutex_lock(&a->mu);
    keep_step(a, rt, m, b->step_start, rel(a));
    rt->state[m->step_id] = STEP_DONE;
    if (step_failed(m) && a->cfg->stop_on_tool_fail)
        rt->stopping = true;
    dag_check_held(rt);
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* A branch's thread: its steps not run by the end never will be. */
static void *branch_main(void *arg)
{
    struct branch *b = arg;
    struct ses_rt *rt = b->rt;
    struct agent *a = rt->a;
    const struct atr_trace *t = &a->cfg->traces[rt->i];
    int rc = 0;
    pthread_mutex_lock(&rt->share_mu);
    if (!rt->share_tried) {      /* in the thread, as a chain's directory: sessions in parallel */
        rt->share_tried = true;
        if (!(rt->share = atr_replay_share(a->cfg->rp, NULL, t, NULL, &b->err)))
            rc = -1;
    }
    struct atr_replay_shared *sh = rt->share;
    pthread_mutex_unlock(&rt->share_mu);
    if (sh)                      /* none: the branch that tried has the error */
        rc = atr_replay_trace_shared(sh, dag_gate, dag_sink, b, &b->err);
    pthread_mutex_lock(&a->mu);
    b->rc = rc;
    if (rc < 0)
        rt->stopping = true;
    for (size_t j = 0; j < t->n_steps; j++)
        if (t->steps[j].kind == ATR_STEP_TOOL && same_agent(t->steps[j].agent, b->agent) &&
            rt->state[j] == STEP_PENDING)
            rt->state[j] = STEP_DEAD;
    dag_check_held(rt);
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* A DAG session: one branch per sub-agent that has tool steps. */
static void map_dag(struct ses_rt *rt, const struct atr_trace *t)
{
    rt->dag = true;
    rt->state = xcalloc(t->n_steps + 1, 1);
    rt->turn_step = xcalloc(rt->n_turns + 1, sizeof *rt->turn_step);
    rt->held_k = xcalloc(rt->n_turns + 1, sizeof *rt->held_k);
    rt->br = xcalloc(t->n_steps + 1, sizeof *rt->br);
    pthread_mutex_init(&rt->share_mu, NULL);
    for (size_t j = 0; j < t->n_steps; j++) {
        const struct atr_step *s = &t->steps[j];
        if (s->kind == ATR_STEP_LLM) {
            rt->turn_step[rt->before[j]] = (uint32_t)j;
            continue;
        }
        size_t b = 0;
        while (b < rt->n_br && !same_agent(rt->br[b].agent, s->agent))
            b++;
        if (b == rt->n_br)
            rt->br[rt->n_br++] = (struct branch){ .rt = rt, .agent = s->agent };
    }
}

static double start_sync(void *ctx, double t0)
{
    ((struct agent *)ctx)->t0 = t0;
    return t0;
}

/* Per session: which turn each step follows, and the steps per turn. 0,
 * or -1 when the trace's llm steps are not the session's turns. */
static int map_session(struct agent *a, size_t i, struct atr_error *err)
{
    const struct atr_trace *t = &a->cfg->traces[i];
    struct ses_rt *rt = &a->ses[i];
    rt->a = a;
    rt->i = i;
    rt->due = -1;
    rt->n_turns = a->cfg->llm.workload->sessions[i].n_turns;
    rt->before = xcalloc(t->n_steps + 1, sizeof *rt->before);
    rt->seg_left = xcalloc(rt->n_turns + 1, sizeof *rt->seg_left);
    rt->due_s = xcalloc(rt->n_turns + 1, sizeof *rt->due_s);
    rt->resume_s = xcalloc(rt->n_turns + 1, sizeof *rt->resume_s);
    for (size_t k = 0; k <= rt->n_turns; k++)
        rt->due_s[k] = rt->resume_s[k] = -1;
    uint32_t llm = 0;
    size_t tools = 0;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        if (s->i != k)
            return atr_error_set(err, "trace %s: step %zu is numbered %u", t->trace_id, k, s->i);
        rt->before[k] = llm;
        if (s->kind == ATR_STEP_LLM)
            llm++;
        else if (s->kind == ATR_STEP_TOOL && llm <= rt->n_turns)
            rt->seg_left[llm]++, tools++;
    }
    if (llm != rt->n_turns)
        return atr_error_set(err, "trace %s: %u llm steps but %zu turns", t->trace_id, llm,
                             rt->n_turns);
    rt->have_th = tools > 0;
    if (atr_trace_is_dag(t))
        map_dag(rt, t);
    return 0;
}

static int setup(struct agent *a, struct atr_error *err)
{
    if (a->cfg->n_traces != a->cfg->llm.workload->n_sessions)
        return atr_error_set(err, "%zu traces for %zu sessions", a->cfg->n_traces,
                             a->cfg->llm.workload->n_sessions);
    a->n = a->cfg->n_traces;
    a->ses = xcalloc(a->n ? a->n : 1, sizeof *a->ses);
    for (size_t i = 0; i < a->n; i++)
        if (map_session(a, i, err) < 0)
            return -1;
    if (pipe2(a->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return atr_error_set(err, "cannot make a pipe");
    return 0;
}

static int start_threads(struct agent *a, struct atr_error *err)
{
    for (size_t i = 0; i < a->n; i++) {
        struct ses_rt *rt = &a->ses[i];
        if (!rt->have_th)
            continue;
        for (size_t b = 0; b < rt->n_br; b++) {
            if (pthread_create(&rt->br[b].th, NULL, branch_main, &rt->br[b]) != 0)
                return atr_error_set(err, "cannot start a thread for session %zu", i);
            rt->br[b].have_th = true;
        }
        if (rt->dag)
            continue;
        if (pthread_create(&rt->th, NULL, ses_main, rt) != 0) {
            rt->have_th = false;
            return atr_error_set(err, "cannot start a thread for session %zu", i);
        }
    }
    return 0;
}

/* The loop ended: steps waiting for a turn that will not come end; the
 * rest (those after the last reply) run to their end. */
static int join_threads(struct agent *a, struct atr_error *err)
{
    pthread_mutex_lock(&a->mu);
    a->llm_done = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    int rc = 0;
    for (size_t i = 0; i < a->n; i++) {
        struct ses_rt *rt = &a->ses[i];
        for (size_t b = 0; b < rt->n_br; b++) {
            if (!rt->br[b].have_th)
                continue;
            pthread_join(rt->br[b].th, NULL);
            if (rt->br[b].rc < 0 && rc == 0) {
                *err = rt->br[b].err;
                rc = -1;
            }
        }
        atr_replay_unshare(rt->share);   /* every branch of it returned */
        rt->share = NULL;
        if (!rt->have_th || rt->dag)
            continue;
        pthread_join(rt->th, NULL);
        if (rt->rc < 0 && rc == 0) {
            *err = rt->err;
            rc = -1;
        }
    }
    return rc;
}

static void teardown(struct agent *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->ses[i].before);
        free(a->ses[i].seg_left);
        free(a->ses[i].due_s);
        free(a->ses[i].resume_s);
        free(a->ses[i].state);
        free(a->ses[i].turn_step);
        free(a->ses[i].held_k);
        free(a->ses[i].br);
        if (a->ses[i].dag)
            pthread_mutex_destroy(&a->ses[i].share_mu);
    }
    free(a->ses);
    if (a->pipe[0] > 0)
        close(a->pipe[0]);
    if (a->pipe[1] > 0)
        close(a->pipe[1]);
    atr_buf_release(&a->line);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
}

static void finish(struct agent *a)
{
    struct atr_agent_holds *h = xcalloc(a->n ? a->n : 1, sizeof *h);
    for (size_t i = 0; i < a->n; i++)
        h[i] = (struct atr_agent_holds){
            .due_s = a->ses[i].due_s, .resume_s = a->ses[i].resume_s,
            .n = a->ses[i].n_turns + 1, .start_s = a->cfg->llm.starts[i],
        };
    atr_agent_sessions(a->out, a->cfg->llm.workload, h);
    for (size_t i = 0; i < a->n; i++)
        a->out->sessions[i].stopped = a->ses[i].stopping;
    free(h);
}

int atr_agent_run(const struct atr_agent_cfg *cfg, struct atr_agent_result *out,
                  struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    struct agent a = { .cfg = cfg, .out = out, .pipe = { -1, -1 } };
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    int rc = setup(&a, err);
    if (rc == 0)
        rc = start_threads(&a, err);
    if (rc == 0) {
        struct atr_llm_replay_cfg lc = cfg->llm;
        lc.on_turn_due = on_turn_due;
        lc.on_turn_over = on_turn_over;
        lc.turn_ctx = &a;
        lc.resume_fd = a.pipe[0];
        lc.start_sync = start_sync;
        lc.start_ctx = &a;
        a.t0 = atr_llm_now();
        rc = atr_llm_replay(&lc, &out->llm, err);
    }
    if (rc < 0)
        atr_replay_stop();       /* the run failed: steps in flight end now */
    struct atr_error terr;
    if (join_threads(&a, &terr) < 0 && rc == 0) {
        *err = terr;
        rc = -1;
    }
    if (rc == 0) {
        out->incomplete = out->llm.incomplete || stopped(&a);
        finish(&a);
    }
    teardown(&a);
    if (rc < 0)
        atr_agent_result_release(out);
    return rc;
}

void atr_agent_result_release(struct atr_agent_result *r)
{
    atr_llm_replay_release(&r->llm);
    for (size_t i = 0; i < r->n_steps; i++)
        free(r->steps[i].line);
    free(r->steps);
    free(r->sessions);
    memset(r, 0, sizeof *r);
}

/* ---- figures ---- */

static size_t session_of(const struct atr_workload *w, const char *trace_id)
{
    for (size_t i = 0; i < w->n_sessions; i++)
        if (w->sessions[i].trace_id == trace_id)
            return i;
    return w->n_sessions;
}

static void add_turns(struct atr_agent_result *r, const struct atr_workload *w)
{
    for (size_t k = 0; k < r->llm.n; k++) {
        const struct atr_llm_record *q = &r->llm.recs[k];
        size_t i = session_of(w, q->trace_id);
        if (i == w->n_sessions)
            continue;
        struct atr_agent_session *s = &r->sessions[i];
        double sent = q->sent_s > 0 ? q->sent_s : q->start_s;
        s->queue_s += sent - q->scheduled_s;
        s->model_s += q->end_s - sent;
        s->turns++;
        s->turns_ok += q->success;
        if (q->end_s > s->end_s)
            s->end_s = q->end_s;
    }
}

/* tail_end[i]: when the last step after session i's last reply ended
 * (those steps hold no turn: their time runs from that reply's end). */
static void add_steps(struct atr_agent_result *r, const struct atr_agent_holds *holds,
                      double *tail_end)
{
    for (size_t k = 0; k < r->n_steps; k++) {
        const struct atr_agent_step *st = &r->steps[k];
        struct atr_agent_session *s = &r->sessions[st->session];
        s->tool_steps++;
        s->tool_failed += st->failed;
        s->tool_skipped += st->skipped;
        if (!st->skipped) {
            s->tool_exec_s += st->latency_ms / 1000;
            s->tool_cpu_s += st->cpu_ms > 0 ? st->cpu_ms / 1000 : 0;
        }
        if (st->max_rss_mb > s->tool_peak_rss_mb)
            s->tool_peak_rss_mb = st->max_rss_mb;
        if (st->end_s > s->end_s)
            s->end_s = st->end_s;
        if (st->turns_before + 1 == holds[st->session].n && st->end_s > tail_end[st->session])
            tail_end[st->session] = st->end_s;
    }
}

/* Tool time: each held turn's hold, and the tail after the last reply. */
static double hold_time(const struct atr_agent_holds *h, double tail_end)
{
    double t = 0;
    for (size_t k = 0; k + 1 < h->n; k++)
        if (h->resume_s[k] >= 0 && h->due_s[k] >= 0)
            t += h->resume_s[k] - h->due_s[k];
    double last = h->due_s[h->n - 1];
    return t + (last >= 0 && tail_end > last ? tail_end - last : 0);
}

/* ---- DAG split: branches overlap, so the session's timeline is cut
 * into pieces, each counted once: model while a turn of it is in flight,
 * else queue while one waits for a slot, else tool while a step runs or a
 * turn is held for one, else other. ---- */

enum { PART_MODEL, PART_QUEUE, PART_TOOL, PART_N };

struct span {
    double a, b;
    int part;
};

struct spans {
    struct span *v;
    size_t n, cap;
};

static void add_span(struct spans *sp, double a, double b, int part)
{
    if (!(b > a))
        return;
    if (sp->n == sp->cap) {
        sp->cap = sp->cap ? 2 * sp->cap : 16;
        sp->v = xreallocarray(sp->v, sp->cap, sizeof *sp->v);
    }
    sp->v[sp->n++] = (struct span){ a, b, part };
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The session's spans of each part, as the union the comment above says. */
static void dag_split(const struct spans *sp, double *part)
{
    double *cut = xcalloc(2 * sp->n + 1, sizeof *cut);
    for (size_t k = 0; k < sp->n; k++) {
        cut[2 * k] = sp->v[k].a;
        cut[2 * k + 1] = sp->v[k].b;
    }
    qsort(cut, 2 * sp->n, sizeof *cut, cmp_double);
    for (size_t c = 0; c + 1 < 2 * sp->n; c++) {
        double a = cut[c], b = cut[c + 1];
        int best = PART_N;
        for (size_t k = 0; k < sp->n && b > a; k++)
            if (sp->v[k].a <= a && sp->v[k].b >= b && sp->v[k].part < best)
                best = sp->v[k].part;
        if (best < PART_N)
            part[best] += b - a;
    }
    free(cut);
}

static void dag_session_split(struct atr_agent_result *r, const struct atr_workload *w, size_t i,
                              const struct atr_agent_holds *h)
{
    struct spans sp = {0};
    for (size_t k = 0; k < r->llm.n; k++) {
        const struct atr_llm_record *q = &r->llm.recs[k];
        if (q->trace_id != w->sessions[i].trace_id)
            continue;
        double sent = q->sent_s > 0 ? q->sent_s : q->start_s;
        add_span(&sp, sent, q->end_s, PART_MODEL);
        add_span(&sp, q->scheduled_s, sent, PART_QUEUE);
    }
    for (size_t k = 0; k < r->n_steps; k++)
        if (r->steps[k].session == i)
            add_span(&sp, r->steps[k].start_s, r->steps[k].end_s, PART_TOOL);
    for (size_t k = 0; k + 1 < h->n; k++)
        if (h->resume_s[k] >= 0 && h->due_s[k] >= 0)
            add_span(&sp, h->due_s[k], h->resume_s[k], PART_TOOL);
    double part[PART_N] = {0};
    dag_split(&sp, part);
    free(sp.v);
    struct atr_agent_session *s = &r->sessions[i];
    s->model_s = part[PART_MODEL];
    s->queue_s = part[PART_QUEUE];
    s->tool_s = part[PART_TOOL];
}

void atr_agent_sessions(struct atr_agent_result *r, const struct atr_workload *w,
                        const struct atr_agent_holds *holds)
{
    size_t n = w->n_sessions;
    r->n_sessions = n;
    r->sessions = xcalloc(n ? n : 1, sizeof *r->sessions);
    double *tail_end = xcalloc(n ? n : 1, sizeof *tail_end);
    for (size_t i = 0; i < n; i++) {
        r->sessions[i].trace_id = w->sessions[i].trace_id;
        r->sessions[i].start_s = r->sessions[i].end_s = holds[i].start_s;
    }
    add_turns(r, w);
    add_steps(r, holds, tail_end);
    for (size_t i = 0; i < n; i++) {
        struct atr_agent_session *s = &r->sessions[i];
        s->tool_s = hold_time(&holds[i], tail_end[i]);
        if (w->sessions[i].dag)
            dag_session_split(r, w, i, &holds[i]);
        s->turns_dropped = w->sessions[i].n_turns - s->turns;
        s->completion_s = s->end_s - s->start_s;
        s->other_s = s->completion_s - s->model_s - s->queue_s - s->tool_s;
    }
    free(tail_end);
}

static double share(double part, double whole)
{
    return whole > 0 ? part / whole : 0;
}

void atr_agent_split(const struct atr_agent_result *r, struct atr_agent_split *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct atr_agent_session *s = &r->sessions[i];
        o->completion_s += s->completion_s;
        o->model_s += s->model_s;
        o->tool_s += s->tool_s;
        o->queue_s += s->queue_s;
        o->other_s += s->other_s;
    }
    o->model_share = share(o->model_s, o->completion_s);
    o->tool_share = share(o->tool_s, o->completion_s);
    o->queue_share = share(o->queue_s, o->completion_s);
    o->other_share = share(o->other_s, o->completion_s);
}
