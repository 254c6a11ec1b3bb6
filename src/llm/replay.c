/* replay.c - sessions sent to a real server on one event loop (see
 * replay.h). */
#include "llm/replay.h"

#include <event2/event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sched/heap.h"
#include "util/alloc.h"

/* Warm-up requests use ids from here, so they never touch the records. */
#define WARMUP_ID (UINT64_C(1) << 62)

/* A session's turn between being due and finishing. */
struct turn_state {
    size_t session;
    size_t turn;
    double scheduled_s;      /* when the schedule wanted it */
    double send_s;           /* released */
    int64_t intended;        /* prompt tokens as built: words, salt words included */
    struct atr_policy_req req;       /* what the policy saw */
    struct atr_policy_decision dec;  /* what it decided */
    bool resumed;            /* on_turn_due held it and it was resumed */
    bool parked;             /* a DAG turn on_turn_due holds (chains: driver.parked) */
};

struct driver {
    const struct atr_llm_replay_cfg *cfg;
    struct atr_llm_replay_result *out;
    struct event_base *base;
    struct event *timer, *stop_poll;
    struct event *resume_ev;         /* on_turn_due: resume_fd readable */
    struct turn_state **parked;      /* per session: its turn on_turn_due holds */
    unsigned char rbuf[8];           /* a resume message read in part */
    size_t rlen;
    struct atr_llm_client **clients; /* one per target */
    unsigned n_clients;
    struct atr_session_history *ses; /* per session */
    struct atr_error *err;
    double t0;                       /* monotonic time of the schedule's 0 */
    size_t *next_turn;               /* per session */
    struct turn_state *first;        /* per session: its first turn */
    /* DAG sessions (sched/workload.h) only, per session: where its turns
     * stand, and a turn_state per turn (several may be due at once). */
    struct atr_dag_state *dag;
    struct turn_state **dag_turns;
    uint32_t *ready;                 /* scratch: turns a finished one made ready */
    size_t *dag_released, *dag_over; /* per DAG session: turns released, turns over */
    bool *dag_dropped;               /* per DAG session: the caller dropped the rest */
    size_t wait_cap;                 /* room in wait: one per chain, one per DAG turn */
    struct turn_state *by_id;        /* request id -> its turn */
    struct atr_heap due;             /* (scheduled time, turn) not yet released */
    struct turn_state **wait;        /* FIFO of released turns waiting for a slot */
    size_t wait_head, wait_len;
    size_t in_flight;
    uint64_t next_id;
    struct atr_buf body;
    int failed;                      /* -1 after an internal error */
    unsigned warm_left, warm_ok;
    int warm_status;                 /* HTTP status of the last failed warm-up */
    char warm_reason[320];
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rel_now(const struct driver *d)
{
    return atr_llm_now() - d->t0;
}

static const char *intern_reason(struct atr_llm_replay_result *o, const char *reason)
{
    for (size_t i = 0; i < o->n_reasons; i++)
        if (strcmp(o->reasons[i], reason) == 0)
            return o->reasons[i];
    o->reasons = xreallocarray(o->reasons, o->n_reasons + 1, sizeof *o->reasons);
    return o->reasons[o->n_reasons++] = xstrdup(reason);
}

/* Words of a salt ("run2 ", "r17 "): one token each as atr intends them. */
static int64_t words_in(const char *s)
{
    int64_t n = 0;
    for (bool in = false; s && *s; s++) {
        n += !in && *s != ' ';
        in = *s != ' ';
    }
    return n;
}

static bool is_dag(const struct driver *d, size_t si)
{
    return d->cfg->workload->sessions[si].dag;
}

static const struct atr_turn *turn_of(const struct driver *d, const struct turn_state *ts)
{
    return &d->cfg->workload->sessions[ts->session].turns[ts->turn];
}

/* Asks the policy (if any) about the turn at time now. */
static void decide(struct driver *d, struct turn_state *q, uint64_t id, double now)
{
    atr_policy_request_init(&q->req, &q->dec, d->cfg->workload, q->session, q->turn,
                            &d->ses[q->session], id, now);
    if (d->cfg->policy)
        atr_policy_decide(d->cfg->policy, &q->req, &q->dec);
    if (q->dec.replica >= d->n_clients)
        q->dec.replica = 0;
}

/* Whether a turn waits for ts's (a chain: a later turn; a DAG: a child):
 * the turns --session-hint marks, as sim run --kv-retain pins them. */
static bool has_next_turn(const struct driver *d, const struct turn_state *ts)
{
    const struct atr_session *s = &d->cfg->workload->sessions[ts->session];
    if (!s->dag)
        return ts->turn + 1 < s->n_turns;
    const struct atr_dag_state *st = &d->dag[ts->session];
    return st->child_at[ts->turn + 1] > st->child_at[ts->turn];
}

/* Hands a released turn to its replica's client. */
static void start_turn(struct driver *d, struct turn_state *ts)
{
    uint64_t id = d->next_id++;
    struct turn_state *q = &d->by_id[id];
    *q = *ts;
    decide(d, q, id, rel_now(d));
    /* The turn as the policy rewrote it. */
    struct atr_turn u = *turn_of(d, q);
    u.prompt_tokens = q->dec.prompt_tokens;
    u.ids = (uint64_t *)q->dec.ids;
    u.n_ids = q->dec.n_ids;
    struct atr_body_opts body = d->cfg->body;
    body.max_tokens = q->dec.max_tokens;
    if (body.session_hint && has_next_turn(d, q))
        body.user = d->cfg->workload->sessions[q->session].trace_id;
    char salt[32];
    if (q->dec.salt) {       /* one unique word first: nothing after it can match */
        snprintf(salt, sizeof salt, "r%llu ", (unsigned long long)id);
        body.salt = salt;
    }
    q->intended = (int64_t)u.prompt_tokens + words_in(body.run_salt) + words_in(body.salt);
    atr_buf_clear(&d->body);
    /* The unique tail is keyed by (session, turn): distinct within a run. */
    uint64_t seed = ((uint64_t)q->session << 20) ^ q->turn;
    if (atr_prompt_body(&d->body, &body, &u, d->cfg->workload->block_size, seed) < 0 ||
        atr_llm_client_send(d->clients[q->dec.replica], id, body.api, d->body.data,
                            d->body.len, d->err) < 0) {
        d->failed = -1;
        event_base_loopbreak(d->base);
        return;
    }
    d->in_flight++;
    if (d->cfg->policy)
        atr_policy_started(d->cfg->policy, &q->req, &q->dec);
}

/* Requests in flight at most: the user's limit, or the client's connection
 * pool. Past the pool, libcurl would queue requests itself, which costs it
 * time per queued request on every connection release (an overloaded
 * server then stalls the whole client); here they wait in a FIFO and the
 * wait is reported as client queue time. */
static size_t in_flight_limit(const struct atr_llm_replay_cfg *cfg)
{
    size_t pool = cfg->client.max_connections ? cfg->client.max_connections
                                              : ATR_LLM_DEFAULT_CONNECTIONS;
    return cfg->max_concurrency && cfg->max_concurrency < pool ? cfg->max_concurrency : pool;
}

static void release_turn(struct driver *d, struct turn_state *ts)
{
    ts->send_s = rel_now(d);
    if (is_dag(d, ts->session))
        d->dag_released[ts->session]++;
    if (d->in_flight >= in_flight_limit(d->cfg)) {
        d->wait[(d->wait_head + d->wait_len++) % d->wait_cap] = ts;
        return;
    }
    start_turn(d, ts);
}

static void arm_timer(struct driver *d)
{
    const struct atr_heap_item *top = atr_heap_peek(&d->due);
    if (!top) {
        evtimer_del(d->timer);
        return;
    }
    /* libevent adds tv to the time it read when the loop woke, which the
     * callbacks since have made stale, and a truncated microsecond is
     * early too: such a timer fired before the turn was due, released
     * nothing and woke the loop a second time for nearly every request. */
    event_base_update_cache_time(d->base);
    double wait = top->t - rel_now(d);
    long long us = wait > 0 ? (long long)ceil(wait * 1e6) : 0;
    struct timeval tv = { (time_t)(us / 1000000), (suseconds_t)(us % 1000000) };
    evtimer_add(d->timer, &tv);
}

/* Whether the caller holds a due turn (on_turn_due); it is parked then.
 * A DAG turn is named by its own index: several may be due at once. */
static bool held(struct driver *d, struct turn_state *ts)
{
    const struct atr_llm_replay_cfg *c = d->cfg;
    bool dag = is_dag(d, ts->session);
    size_t k = dag ? ts->turn : d->next_turn[ts->session];
    if (!c->on_turn_due || ts->resumed || !c->on_turn_due(c->turn_ctx, ts->session, k, rel_now(d)))
        return false;
    if (dag)
        ts->parked = true;
    else
        d->parked[ts->session] = ts;
    return true;
}

/* Releases every turn whose time has come. A turn is never sent early. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct driver *d = arg;
    const struct atr_heap_item *top;
    while (d->failed == 0 && (top = atr_heap_peek(&d->due)) && top->t <= rel_now(d)) {
        struct atr_heap_item it;
        atr_heap_pop(&d->due, &it);
        struct turn_state *ts = it.data;
        if (is_dag(d, ts->session) && d->dag_dropped[ts->session])
            continue;
        if (!held(d, it.data))
            release_turn(d, it.data);
    }
    arm_timer(d);
}

/* Drops what is left of a DAG session: turns not released yet. Those in
 * flight still end; their children are never scheduled. */
static void drop_dag(struct driver *d, size_t si)
{
    if (d->dag_dropped[si])
        return;
    d->dag_dropped[si] = true;
    size_t left = d->cfg->workload->sessions[si].n_turns - d->dag_released[si];
    d->out->total -= left;
    d->out->dropped += left;
    if (d->out->n == d->out->total)
        event_base_loopbreak(d->base);
}

/* A DAG session's parked turn k resumed or the session dropped. */
static void resume_dag(struct driver *d, size_t si, uint64_t msg)
{
    size_t k = (size_t)((msg & ~ATR_LLM_RESUME_DROP) >> ATR_LLM_RESUME_TURN_SHIFT);
    if (k >= d->cfg->workload->sessions[si].n_turns || !d->dag_turns[si][k].parked ||
        d->dag_dropped[si])
        return;
    struct turn_state *ts = &d->dag_turns[si][k];
    ts->parked = false;
    if (msg & ATR_LLM_RESUME_DROP) {
        drop_dag(d, si);
        return;
    }
    ts->resumed = true;
    ts->scheduled_s = rel_now(d);
    release_turn(d, ts);
}

/* A parked turn resumed (due now) or its session dropped. */
static void resume(struct driver *d, uint64_t msg)
{
    size_t si = (size_t)(msg & ATR_LLM_RESUME_SESSION);
    if (si < d->cfg->workload->n_sessions && is_dag(d, si)) {
        resume_dag(d, si, msg);
        return;
    }
    if (si >= d->cfg->workload->n_sessions || !d->parked[si])
        return;
    struct turn_state *ts = d->parked[si];
    d->parked[si] = NULL;
    if (msg & ATR_LLM_RESUME_DROP) {
        size_t left = d->cfg->workload->sessions[si].n_turns - d->next_turn[si];
        d->out->total -= left;
        d->out->dropped += left;
        if (d->out->n == d->out->total)
            event_base_loopbreak(d->base);
        return;
    }
    ts->resumed = true;
    ts->scheduled_s = rel_now(d);
    release_turn(d, ts);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct driver *d = arg;
    unsigned char buf[512];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t k = 0; k < got; k++) {
            d->rbuf[d->rlen++] = buf[k];
            if (d->rlen == sizeof d->rbuf) {
                uint64_t msg;
                memcpy(&msg, d->rbuf, sizeof msg);
                d->rlen = 0;
                resume(d, msg);
            }
        }
    }
}

static void schedule_turn(struct driver *d, struct turn_state *ts, double t)
{
    ts->scheduled_s = t;
    if (atr_heap_push(&d->due, t, ts, d->err) < 0) {
        d->failed = -1;
        event_base_loopbreak(d->base);
        return;
    }
    const struct atr_heap_item *top = atr_heap_peek(&d->due);
    if (top->data == ts)             /* new earliest: re-arm */
        arm_timer(d);
}

static void on_warmup_done(struct driver *d, const struct atr_llm_result *r)
{
    if (r->success) {
        d->warm_ok++;
    } else {
        d->warm_status = r->http_status;
        snprintf(d->warm_reason, sizeof d->warm_reason, "%s%s%s", r->reason,
                 r->detail && *r->detail ? ": " : "", r->detail ? r->detail : "");
    }
    if (--d->warm_left == 0)
        event_base_loopbreak(d->base);
}

static void record(struct driver *d, const struct atr_llm_result *r, const struct turn_state *ts)
{
    struct atr_llm_replay_result *o = d->out;
    const struct atr_session *s = &d->cfg->workload->sessions[ts->session];
    double *chunks = NULL;
    if (r->n_chunks) {
        chunks = xreallocarray(NULL, r->n_chunks, sizeof *chunks);
        for (size_t i = 0; i < r->n_chunks; i++)
            chunks[i] = r->chunk_s[i] - d->t0;
    }
    o->recs[o->n++] = (struct atr_llm_record){
        .id = r->id, .scheduled_s = ts->scheduled_s, .send_s = ts->send_s,
        .start_s = r->start_s - d->t0, .end_s = r->end_s - d->t0,
        .sent_s = r->sent_s > 0 ? r->sent_s - d->t0 : 0,
        .chunk_s = chunks, .n_chunks = r->n_chunks,
        .prompt_tokens = r->prompt_tokens, .output_tokens = r->output_tokens,
        .cached_tokens = r->cached_tokens, .intended_prompt_tokens = ts->intended,
        .success = r->success,
        .error = r->success ? NULL : intern_reason(o, r->reason ? r->reason : "unknown"),
        .error_detail = !r->success && r->detail && r->detail[0] ? xstrdup(r->detail) : NULL,
        .trace_id = s->trace_id, .turn = (int64_t)ts->turn,
        .replica = ts->dec.replica, .has_replica = d->n_clients > 1,
        .dag = s->dag, .parents = s->dag ? s->turns[ts->turn].parents : NULL,
        .n_parents = s->dag ? s->turns[ts->turn].n_parents : 0,
    };
}

/* A DAG session's turn ts is over at end: each child whose parents are
 * all over now (a failed parent counts as over) is due at the latest of
 * its parents' ends plus the (scaled) tool time after each. */
static void dag_turn_over(struct driver *d, const struct turn_state *ts, double end)
{
    size_t si = ts->session;
    /* Gated (replay agent): the tool steps between run for real instead. */
    double scale = d->cfg->on_turn_due ? 0 : d->cfg->schedule->time_scale;
    size_t n = atr_dag_turn_over(&d->dag[si], ts->turn, end, scale, d->ready);
    if (d->dag_dropped[si])
        return;
    for (size_t i = 0; i < n && d->failed == 0; i++) {
        struct turn_state *c = &d->dag_turns[si][d->ready[i]];
        *c = (struct turn_state){ .session = si, .turn = d->ready[i] };
        schedule_turn(d, c, d->dag[si].ready_s[d->ready[i]]);
    }
}

static void on_done(void *ctx, const struct atr_llm_result *r)
{
    struct driver *d = ctx;
    if (r->id >= WARMUP_ID) {
        on_warmup_done(d, r);
        return;
    }
    struct turn_state *ts = &d->by_id[r->id];
    record(d, r, ts);
    d->in_flight--;
    size_t si = ts->session;
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    uint32_t out = r->output_tokens > 0 ? (uint32_t)r->output_tokens : 0;
    if (d->cfg->policy) {
        double ttft = r->n_chunks ? r->chunk_s[0] - r->start_s : 0;
        struct atr_policy_outcome o = {
            .success = r->success, .output_tokens = out,
            .cached_tokens = r->cached_tokens > 0 ? (uint32_t)r->cached_tokens : 0,
            .ttft_s = ttft, .e2el_s = r->end_s - r->start_s,
        };
        atr_policy_finished(d->cfg->policy, &ts->req, &ts->dec, &o);
    }
    atr_session_history_add(&d->ses[si], r->end_s - d->t0, out);
    bool gated = d->cfg->on_turn_due != NULL;
    if (s->dag) {
        if (d->cfg->on_turn_over)
            d->cfg->on_turn_over(d->cfg->turn_ctx, si, ts->turn, rel_now(d));
        dag_turn_over(d, ts, r->end_s - d->t0);
        if (gated && ++d->dag_over[si] == s->n_turns)
            d->cfg->on_turn_due(d->cfg->turn_ctx, si, s->n_turns, rel_now(d));
    } else if (++d->next_turn[si] < s->n_turns) {
        /* by_id[r->id] is recorded and free to carry the session on. */
        ts->turn = d->next_turn[si];
        ts->resumed = false;
        schedule_turn(d, ts, r->end_s - d->t0 + (gated ? 0 :
                      atr_schedule_think(d->cfg->schedule, &s->turns[d->next_turn[si]])));
    } else if (gated) {
        d->cfg->on_turn_due(d->cfg->turn_ctx, si, s->n_turns, rel_now(d));
    }
    if (d->wait_len) {
        struct turn_state *w = d->wait[d->wait_head];
        d->wait_head = (d->wait_head + 1) % d->wait_cap;
        d->wait_len--;
        start_turn(d, w);
    }
    if (d->cfg->on_progress)
        d->cfg->on_progress(d->cfg->progress_ctx, d->out->n, d->out->total);
    if (d->out->n == d->out->total)
        event_base_loopbreak(d->base);
}

static void on_stop_poll(evutil_socket_t fd, short what, void *arg)
{
    struct driver *d = arg;
    if (d->cfg->stop && *d->cfg->stop) {
        d->out->incomplete = true;
        event_base_loopbreak(d->base);
    }
}

/* Sends the warm-up requests (first turns of the first sessions, each
 * after a word of its own, so they share no cached prefix with the
 * workload: the measured run starts on a cold prefix cache, as a fresh
 * server and `atr sim run` do) and waits for them; fails if none
 * succeeded, saying what happened to the last. A stop meanwhile ends the
 * run before it starts: nothing measured, marked incomplete. */
static int warm_up(struct driver *d)
{
    const struct atr_workload *w = d->cfg->workload;
    struct atr_body_opts body = d->cfg->body;
    body.salt = "warmup ";
    size_t with_turns = 0;
    for (size_t i = 0; i < w->n_sessions; i++)
        with_turns += w->sessions[i].n_turns > 0;
    if (!d->cfg->warmup || !with_turns)
        return 0;
    for (unsigned k = 0, i = 0; k < d->cfg->warmup; i = (i + 1) % (unsigned)w->n_sessions) {
        if (!w->sessions[i].n_turns)
            continue;
        atr_buf_clear(&d->body);
        if (atr_prompt_body(&d->body, &body, &w->sessions[i].turns[0], w->block_size,
                            WARMUP_ID + k) < 0 ||
            atr_llm_client_send(d->clients[k % d->n_clients], WARMUP_ID + k, d->cfg->body.api, d->body.data,
                                d->body.len, d->err) < 0)
            return -1;
        k++;
    }
    d->warm_left = d->cfg->warmup;
    while (d->warm_left && !(d->cfg->stop && *d->cfg->stop))
        event_base_loop(d->base, EVLOOP_ONCE);
    if (d->warm_left) {              /* stopped: a run of nothing, marked so */
        d->out->incomplete = true;
        return 0;
    }
    if (d->warm_ok)
        return 0;
    /* Only an answer that refuses the request can mean another model; a
     * connection that closed or timed out says nothing about the model. */
    bool refused = (d->warm_status == 400 || d->warm_status == 404) && d->cfg->body.model;
    return atr_error_set(d->err, "warm-up request failed (%s)%s%s%s", d->warm_reason,
                         refused ? "; is the target serving model '" : "",
                         refused ? d->cfg->body.model : "", refused ? "'?" : "");
}

static int setup(struct driver *d)
{
    const struct atr_llm_replay_cfg *cfg = d->cfg;
    size_t ns = cfg->workload->n_sessions ? cfg->workload->n_sessions : 1;
    d->next_turn = xcalloc(ns, sizeof *d->next_turn);
    d->ses = xcalloc(ns, sizeof *d->ses);
    d->first = xcalloc(ns, sizeof *d->first);
    d->dag = xcalloc(ns, sizeof *d->dag);
    d->dag_turns = xcalloc(ns, sizeof *d->dag_turns);
    d->wait_cap = ns;
    size_t widest = 1;
    for (size_t i = 0; i < cfg->workload->n_sessions; i++) {
        const struct atr_session *s = &cfg->workload->sessions[i];
        if (!s->dag)
            continue;
        atr_dag_state_init(&d->dag[i], s);
        d->dag_turns[i] = xcalloc(s->n_turns + 1, sizeof *d->dag_turns[i]);
        d->wait_cap += s->n_turns;
        widest = s->n_turns > widest ? s->n_turns : widest;
    }
    d->ready = xcalloc(widest, sizeof *d->ready);
    d->dag_released = xcalloc(ns, sizeof *d->dag_released);
    d->dag_over = xcalloc(ns, sizeof *d->dag_over);
    d->dag_dropped = xcalloc(ns, sizeof *d->dag_dropped);
    d->wait = xcalloc(d->wait_cap, sizeof *d->wait);
    d->by_id = xcalloc(cfg->workload->n_turns + 1, sizeof *d->by_id);
    d->out->recs = xcalloc(cfg->workload->n_turns + 1, sizeof *d->out->recs);
    d->out->total = cfg->workload->n_turns;
    atr_heap_init(&d->due);
    /* Precise timers (timerfd): epoll's own timeout has millisecond steps,
     * which alone would cost up to 1 ms of schedule lag. */
    struct event_config *ec = event_config_new();
    if (ec)
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    d->base = ec ? event_base_new_with_config(ec) : NULL;
    if (ec)
        event_config_free(ec);
    if (!d->base)
        return atr_error_set(d->err, "cannot create the event loop");
    d->timer = evtimer_new(d->base, on_timer, d);
    d->stop_poll = event_new(d->base, -1, EV_PERSIST, on_stop_poll, d);
    if (!d->timer || !d->stop_poll)
        return atr_error_set(d->err, "out of memory");
    struct timeval poll = { 0, 20000 };
    event_add(d->stop_poll, &poll);
    if (cfg->on_turn_due) {
        d->parked = xcalloc(ns, sizeof *d->parked);
        d->resume_ev = event_new(d->base, cfg->resume_fd, EV_READ | EV_PERSIST, on_resume, d);
        if (!d->resume_ev || event_add(d->resume_ev, NULL) < 0)
            return atr_error_set(d->err, "cannot watch the resume pipe");
    }
    d->n_clients = cfg->n_targets > 1 ? cfg->n_targets : 1;
    d->clients = xcalloc(d->n_clients, sizeof *d->clients);
    for (unsigned i = 0; i < d->n_clients; i++) {
        struct atr_llm_client_cfg cc = cfg->client;
        if (cfg->n_targets > 1)
            cc.base_url = cfg->targets[i];
        if (!(d->clients[i] = atr_llm_client_new(d->base, &cc, on_done, d, d->err)))
            return -1;
    }
    return 0;
}

static void teardown(struct driver *d)
{
    for (unsigned i = 0; d->clients && i < d->n_clients; i++)
        atr_llm_client_free(d->clients[i]);
    free(d->clients);
    free(d->ses);
    if (d->timer)
        event_free(d->timer);
    if (d->stop_poll)
        event_free(d->stop_poll);
    if (d->resume_ev)
        event_free(d->resume_ev);
    free(d->parked);
    if (d->base)
        event_base_free(d->base);
    atr_heap_release(&d->due);
    atr_buf_release(&d->body);
    free(d->next_turn);
    free(d->first);
    for (size_t i = 0; d->dag && i < d->cfg->workload->n_sessions; i++)
        if (d->dag_turns[i]) {
            atr_dag_state_release(&d->dag[i]);
            free(d->dag_turns[i]);
        }
    free(d->dag);
    free(d->dag_turns);
    free(d->dag_released);
    free(d->dag_over);
    free(d->dag_dropped);
    free(d->ready);
    free(d->wait);
    free(d->by_id);
}

/* A DAG session's roots enter the schedule at its start, each after the
 * tool time before it (the first turn with the session, as a chain's). */
static int push_dag_roots(struct driver *d, size_t si)
{
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    for (uint32_t k = 0; k < s->n_turns; k++) {
        if (s->turns[k].n_parents)
            continue;
        struct turn_state *q = &d->dag_turns[si][k];
        bool gated = d->cfg->on_turn_due != NULL;   /* tool steps before it run for real */
        double t = d->cfg->starts[si] +
                   (k && !gated ? atr_schedule_think(d->cfg->schedule, &s->turns[k]) : 0);
        *q = (struct turn_state){ .session = si, .turn = k, .scheduled_s = t };
        if (atr_heap_push(&d->due, t, q, d->err) < 0)
            return -1;
    }
    return 0;
}

int atr_llm_replay(const struct atr_llm_replay_cfg *cfg, struct atr_llm_replay_result *out,
                   struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    struct driver d = { .cfg = cfg, .out = out, .err = err };
    int rc = setup(&d);
    if (rc == 0)
        rc = warm_up(&d);
    if (rc == 0) {
        /* Every first turn enters the schedule before the clock starts:
         * filling the heap takes milliseconds for large workloads, which
         * would otherwise show as lag on the first requests. */
        const struct atr_workload *w = cfg->workload;
        for (size_t i = 0; i < w->n_sessions && rc == 0; i++) {
            if (!w->sessions[i].n_turns)
                continue;
            if (w->sessions[i].dag) {
                rc = push_dag_roots(&d, i);
                continue;
            }
            d.first[i].session = i;
            d.first[i].scheduled_s = cfg->starts[i];
            rc = atr_heap_push(&d.due, cfg->starts[i], &d.first[i], err) < 0 ? -1 : 0;
        }
        d.t0 = atr_llm_now();
        if (cfg->start_at > 0)       /* the wall clock's epoch, on the monotonic clock */
            d.t0 += cfg->start_at - wall_now();
        if (cfg->start_sync)
            d.t0 = cfg->start_sync(cfg->start_ctx, d.t0);
        if (rc == 0)
            arm_timer(&d);
        if (rc == 0 && out->total && d.failed == 0 && !(cfg->stop && *cfg->stop))
            event_base_dispatch(d.base);
        if (cfg->stop && *cfg->stop && out->n < out->total)
            out->incomplete = true;
        if (rc == 0)
            rc = d.failed;
    }
    teardown(&d);
    if (rc < 0) {
        atr_llm_replay_release(out);
        return -1;
    }
    return 0;
}

void atr_llm_replay_release(struct atr_llm_replay_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free((void *)r->recs[i].chunk_s);
        free((void *)r->recs[i].error_detail);
    }
    free(r->recs);
    for (size_t i = 0; i < r->n_reasons; i++)
        free(r->reasons[i]);
    free(r->reasons);
    memset(r, 0, sizeof *r);
}
