/* run.c - sessions through engine replicas in virtual time, under a
 * policy (see run.h). */
#include "sim/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/heap.h"
#include "util/alloc.h"

/* A turn between being sent and finishing. */
struct pending {
    size_t session;
    size_t turn;
    double send_s;
    double slot_s;                   /* when it got its slot: the front end starts */
    double deadline;                 /* its next timeout or stall check (with either) */
    const struct atr_sim_record *rec;   /* its engine's record while it runs, else NULL */
    struct atr_policy_req req;       /* what the policy saw */
    struct atr_policy_decision dec;  /* what it decided */
};

/* Where a session is, and its history for the policy. */
struct session_state {
    size_t next_turn;
    struct atr_session_history hist;
    /* DAG sessions only: where each turn stands, and a pending per turn
     * (several may be in flight); chains use the driver's by_session. */
    struct atr_dag_state dag;
    struct pending *pend;
};

/* Which engine record a driver record's token times come from. */
struct rec_src {
    const struct atr_sim_record *r;  /* NULL: a rejected turn, no tokens */
    unsigned engine;
};

struct driver {
    const struct atr_sim_run_cfg *cfg;
    struct atr_engine *const *engines;
    unsigned n_engines;
    struct session_state *ses;       /* per session */
    /* A chain has one turn at a time (the next is due once it is over),
     * so its pending lives in the session's slot, found from a request id
     * through pending_of (ids are dense): 8 bytes a request where a pending
     * a request was 160 (issue 16, memory per request). A DAG session has
     * a pending per turn (session_state.pend). */
    struct pending *by_session;
    struct pending **pending_of;
    uint32_t *ready;                 /* scratch: turns a finished one made ready */
    size_t wait_cap;                 /* room in slots_wait: a slot per chain, per DAG turn */
    struct atr_heap sends;           /* (send time, pending) of turns not yet sent */
    /* (deadline, pending) of turns in their engines, with a timeout; an
     * entry whose turn ended is dropped when it comes up (its pending has
     * no record, or the deadline of the session's next turn). */
    struct atr_heap deadlines;
    struct pending *slots_wait;      /* FIFO of sent turns waiting for a slot */
    size_t wait_head, wait_len;
    size_t in_flight;
    struct atr_frontend *frontends;  /* per engine: its API server */
    uint64_t next_id;
    struct atr_llm_record *recs;
    struct rec_src *src;             /* per record; chunk_s is set from it at the end */
    size_t n_recs;
};

/* Turn k of DAG session si is due at send_s: its pending joins the sends. */
static int dag_send(struct driver *d, size_t si, uint32_t k, double send_s,
                    struct atr_error *err)
{
    struct pending *q = &d->ses[si].pend[k];
    *q = (struct pending){ .session = si, .turn = k, .send_s = send_s };
    return atr_heap_push(&d->sends, send_s, q, err);
}

/* A DAG session's turn p is over at end: each child whose parents are all
 * over now (a failed parent counts as over) is due at the latest of its
 * parents' ends plus the (scaled) tool time after each. */
static int dag_turn_over(struct driver *d, const struct pending *p, double end,
                         struct atr_error *err)
{
    struct atr_dag_state *st = &d->ses[p->session].dag;
    size_t n = atr_dag_turn_over(st, p->turn, end, d->cfg->schedule->time_scale, d->ready);
    for (size_t i = 0; i < n; i++)
        if (dag_send(d, p->session, d->ready[i], st->ready_s[d->ready[i]], err) < 0)
            return -1;
    return 0;
}

/* The record fields that say which turn it is and what it waited for. */
static void rec_turn(const struct driver *d, const struct pending *q, struct atr_llm_record *r)
{
    const struct atr_session *s = &d->cfg->workload->sessions[q->session];
    r->trace_id = s->trace_id;
    r->turn = (int64_t)q->turn;
    if (s->dag) {
        r->dag = true;
        r->parents = s->turns[q->turn].parents;
        r->n_parents = s->turns[q->turn].n_parents;
    }
}

/* Record i to the on_record callback with its token times, which are
 * read from the engine now: between steps they are valid (set_chunks
 * points the kept records at them only once no engine steps). */
static void live_record(const struct driver *d, size_t i)
{
    struct atr_llm_record rec = d->recs[i];
    if (d->src[i].r)
        rec.chunk_s = atr_engine_token_times(d->engines[d->src[i].engine], d->src[i].r);
    d->cfg->on_record(d->cfg->record_ctx, &rec);
}

/* The turn of p is over (finished or rejected, ending at rec->end_s): its
 * record is kept, the policy told, and the session's next turn is due after
 * its think time (p is free to reuse for it). The caller fills the slot. */
static int turn_over(struct driver *d, struct pending *p, const struct atr_llm_record *rec,
                     const struct atr_policy_outcome *o, struct atr_error *err)
{
    size_t si = p->session;
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    struct session_state *ss = &d->ses[si];
    d->recs[d->n_recs++] = *rec;
    if (d->cfg->policy)
        atr_policy_finished(d->cfg->policy, &p->req, &p->dec, o);
    d->in_flight--;
    atr_session_history_add(&ss->hist, rec->end_s, o->output_tokens);
    if (s->dag) {
        if (dag_turn_over(d, p, rec->end_s, err) < 0)
            return -1;
    } else if (++ss->next_turn < s->n_turns) {
        p->turn = ss->next_turn;
        p->send_s = rec->end_s + atr_schedule_think(d->cfg->schedule, &s->turns[ss->next_turn]);
        if (atr_heap_push(&d->sends, p->send_s, p, err) < 0)
            return -1;
    }
    if (d->cfg->on_progress)
        d->cfg->on_progress(d->cfg->progress_ctx, d->n_recs, d->cfg->workload->n_turns);
    if (d->cfg->on_record)
        live_record(d, d->n_recs - 1);
    return 0;
}

/* A turn that failed: its record (no tokens) ends at `end`, as the
 * client of a vLLM server gets its error response or gives up. */
static int fail_turn(struct driver *d, struct pending *q, const char *error, double end,
                     struct atr_error *err)
{
    struct atr_llm_record rec = {
        .id = q->req.id, .scheduled_s = q->send_s, .send_s = q->send_s, .start_s = q->slot_s,
        .end_s = end, .prompt_tokens = q->dec.prompt_tokens, .success = false,
        .error = error, .replica = q->dec.replica, .has_replica = d->n_engines > 1,
    };
    rec_turn(d, q, &rec);
    struct atr_policy_outcome o = { .success = false };
    q->rec = NULL;
    d->src[d->n_recs] = (struct rec_src){ NULL, 0 };
    return turn_over(d, q, &rec, &o, err);
}

/* A turn the engine rejected as too long for it (skip_oversized). */
static int reject(struct driver *d, struct pending *q, const struct atr_sim_req *req,
                  double now, struct atr_error *err)
{
    bool kv = !atr_engine_fits_kv(d->engines[q->dec.replica], req->prompt_tokens,
                                  req->output_tokens);
    return fail_turn(d, q, kv ? ATR_SIM_OVERSIZED_ERROR : ATR_SIM_OVER_BUDGET_ERROR, now, err);
}

/* Puts the trace and turn in front of the engine's refusal, and what to do
 * about a request the KV cache cannot hold. */
static int add_failed(const struct driver *d, const struct pending *q,
                      const struct atr_sim_req *req, struct atr_error *err)
{
    const struct atr_engine *e = d->engines[q->dec.replica];
    if (atr_engine_fits(e, req->prompt_tokens, req->output_tokens))
        return -1;
    char why[ATR_ERROR_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    bool kv = !atr_engine_fits_kv(e, req->prompt_tokens, req->output_tokens);
    return atr_error_set(err, "trace %s, llm turn %zu: %s; use %s, or --skip-oversized to "
                         "reject such requests as vLLM does and go on",
                         d->cfg->workload->sessions[q->session].trace_id,
                         q->turn, why,
                         atr_engine_slots(e) ? "a larger --ctx-size or fewer --parallel slots"
                         : kv ? "a larger --tp or a profile with more KV cache"
                              : "a larger --max-num-batched-tokens");
}

/* When q's client gives up unless a token comes first: its timeout, or
 * stall_timeout_s after the last thing it received (the answer's head at
 * the slot, then its tokens); INFINITY with neither. */
static double give_up_time(const struct driver *d, const struct pending *q)
{
    double t = d->cfg->timeout_s > 0 ? q->slot_s + d->cfg->timeout_s : INFINITY;
    if (d->cfg->stall_timeout_s > 0) {
        const struct atr_engine *e = d->engines[q->dec.replica];
        uint32_t n = q->rec->tokens_done;
        double last = n ? atr_engine_token_times(e, q->rec)[n - 1] : q->slot_s;
        t = fmin(t, last + d->cfg->stall_timeout_s);
    }
    return t;
}

/* The turn q runs in its engine as r: its next check is due (with a
 * timeout or a stall timeout). */
static int arm_deadline(struct driver *d, struct pending *q, const struct atr_sim_record *r,
                        struct atr_error *err)
{
    q->rec = r;
    q->deadline = give_up_time(d, q);
    return isinf(q->deadline) ? 0 : atr_heap_push(&d->deadlines, q->deadline, q, err);
}

/* Whether q's session has a turn that waits for q's (a chain: a later
 * turn; a DAG: a child), the turns whose KV --kv-retain keeps. */
static bool has_next_turn(const struct driver *d, const struct pending *q)
{
    const struct atr_session *s = &d->cfg->workload->sessions[q->session];
    if (!s->dag)
        return q->turn + 1 < s->n_turns;
    const struct atr_dag_state *st = &d->ses[q->session].dag;
    return st->child_at[q->turn + 1] > st->child_at[q->turn];
}

/* The turn gets its slot: the policy decides, its replica takes it. */
static int start_turn(struct driver *d, const struct pending *p, double now,
                      struct atr_error *err)
{
    uint64_t id = d->next_id++;
    struct pending *q = d->ses[p->session].pend ? &d->ses[p->session].pend[p->turn]
                                                : &d->by_session[p->session];
    if (q != p)
        *q = *p;
    d->pending_of[id] = q;
    atr_policy_request_init(&q->req, &q->dec, d->cfg->workload, q->session, q->turn,
                            &d->ses[q->session].hist, id, now);
    if (d->cfg->policy)
        atr_policy_decide(d->cfg->policy, &q->req, &q->dec);
    if (q->dec.replica >= d->n_engines)
        q->dec.replica = 0;
    q->slot_s = now;
    q->rec = NULL;
    if (d->cfg->on_decision)
        d->cfg->on_decision(d->cfg->decision_ctx,
                            d->cfg->workload->sessions[q->session].trace_id, q->turn,
                            &q->dec);
    uint32_t out = q->req.recorded_output_tokens;
    if (q->dec.max_tokens && q->dec.max_tokens < out)
        out = q->dec.max_tokens;
    if (!out)
        out = 1;
    d->in_flight++;
    if (d->cfg->policy)
        atr_policy_started(d->cfg->policy, &q->req, &q->dec);
    /* the API server refuses it before tokenising takes any time */
    if (d->cfg->max_model_len &&
        atr_context_check(d->cfg->max_model_len, q->dec.prompt_tokens, out, NULL, 0) < 0)
        return fail_turn(d, q, ATR_SIM_CONTEXT_ERROR, now, err);
    struct atr_sim_req req = {
        .id = id,
        .arrival = atr_frontend_arrival(&d->frontends[q->dec.replica], q->dec.prompt_tokens,
                                        now),
        .prompt_tokens = q->dec.prompt_tokens,
        .output_tokens = out,
        .hash_ids = q->dec.salt ? NULL : q->dec.ids, .n_hash_ids = q->dec.salt ? 0 : q->dec.n_ids,
    };
    const struct atr_sim_record *r = atr_engine_add(d->engines[q->dec.replica], &req, err);
    if (!r)
        return add_failed(d, q, &req, err);
    if (!r->rejected && has_next_turn(d, q))  /* --kv-retain pins only what will be used */
        atr_engine_set_retain(d->engines[q->dec.replica], r);
    return r->rejected ? reject(d, q, &req, now, err) : arm_deadline(d, q, r, err);
}

/* Starts turns waiting for a slot while there are free ones (a rejected
 * turn gives its slot back at once). */
static int fill_slots(struct driver *d, double now, struct atr_error *err)
{
    unsigned limit = d->cfg->max_concurrency;
    while (d->wait_len && (!limit || d->in_flight < limit)) {
        struct pending w = d->slots_wait[d->wait_head];
        d->wait_head = (d->wait_head + 1) % d->wait_cap;
        d->wait_len--;
        if (start_turn(d, &w, now, err) < 0)
            return -1;
    }
    return 0;
}

/* A turn is sent: it starts now, or waits for a slot. */
static int send_turn(struct driver *d, const struct pending *p, struct atr_error *err)
{
    unsigned limit = d->cfg->max_concurrency;
    if (limit && d->in_flight >= limit) {
        d->slots_wait[(d->wait_head + d->wait_len++) % d->wait_cap] = *p;
        return 0;
    }
    return start_turn(d, p, p->send_s, err);
}

/* Engine k finished r: its record (token times set at the end, when no
 * engine steps any more), then a waiting turn takes the slot. */
static int finish(struct driver *d, const struct atr_sim_record *r, unsigned k,
                  struct atr_error *err)
{
    struct pending *p = d->pending_of[r->id];
    double start = p->slot_s;
    p->rec = NULL;
    struct atr_llm_record rec = {
        .id = r->id, .scheduled_s = p->send_s, .send_s = p->send_s, .start_s = start,
        .end_s = r->finish, .n_chunks = r->output_tokens,
        .prompt_tokens = r->prompt_tokens, .output_tokens = r->output_tokens,
        .cached_tokens = r->cached_tokens, .success = true,
        .replica = p->dec.replica, .has_replica = d->n_engines > 1,
    };
    rec_turn(d, p, &rec);
    struct atr_policy_outcome o = {
        .success = true, .output_tokens = r->output_tokens,
        .cached_tokens = r->cached_tokens, .ttft_s = r->first_token - start,
        .e2el_s = r->finish - start,
    };
    d->src[d->n_recs] = (struct rec_src){ r, k };
    if (turn_over(d, p, &rec, &o, err) < 0)
        return -1;
    return fill_slots(d, r->finish, err);
}

/* A turn's check is due: a token since pushes the stall check on;
 * otherwise the client gives up: the turn leaves its engine (as vLLM
 * aborts the request of a closed connection) and fails, and a waiting turn
 * takes the slot. A turn over by then is not touched. */
static int time_out(struct driver *d, const struct atr_heap_item *it, struct atr_error *err)
{
    struct pending *p = it->data;
    if (!p->rec || p->deadline != it->t)
        return 0;
    double t = give_up_time(d, p);
    if (t > it->t)
        return arm_deadline(d, p, p->rec, err);
    bool whole = d->cfg->timeout_s > 0 && it->t >= p->slot_s + d->cfg->timeout_s;
    atr_engine_abort(d->engines[p->dec.replica], p->rec);
    if (fail_turn(d, p, whole ? ATR_SIM_TIMEOUT_ERROR : ATR_SIM_STALL_ERROR, it->t, err) < 0)
        return -1;
    return fill_slots(d, it->t, err);
}

/* The replica with the earliest next event, and its time. */
static unsigned next_engine(const struct driver *d, double *t)
{
    unsigned best = 0;
    *t = INFINITY;
    for (unsigned i = 0; i < d->n_engines; i++) {
        double ti = atr_engine_next_time(d->engines[i]);
        if (ti < *t) {
            *t = ti;
            best = i;
        }
    }
    return best;
}

static int drive(struct driver *d, struct atr_error *err)
{
    for (;;) {
        const struct atr_heap_item *top = atr_heap_peek(&d->sends);
        const struct atr_heap_item *dl = atr_heap_peek(&d->deadlines);
        double t_send = top ? top->t : INFINITY, t_dead = dl ? dl->t : INFINITY, t_eng;
        unsigned k = next_engine(d, &t_eng);
        if (isinf(t_send) && isinf(t_eng) && isinf(t_dead))
            return 0;
        struct atr_heap_item it;
        if (t_send <= t_eng && t_send <= t_dead) {   /* a turn due now joins this iteration */
            atr_heap_pop(&d->sends, &it);
            if (send_turn(d, it.data, err) < 0)
                return -1;
            continue;
        }
        if (t_dead < t_eng) {        /* a token at the deadline still counts */
            atr_heap_pop(&d->deadlines, &it);
            if (time_out(d, &it, err) < 0)
                return -1;
            continue;
        }
        if (atr_engine_step(d->engines[k], err) < 0)
            return -1;
        size_t n;
        struct atr_sim_record *const *done = atr_engine_finished(d->engines[k], &n);
        for (size_t i = 0; i < n; i++)
            if (finish(d, done[i], k, err) < 0)
                return -1;
    }
}

/* Points each record's chunk_s at its token times in its engine, now that
 * no engine steps any more (an engine's log of iteration ends moves while
 * it grows). */
static void set_chunks(struct driver *d)
{
    for (size_t i = 0; i < d->n_recs; i++)
        if (d->src[i].r)
            d->recs[i].chunk_s = atr_engine_token_times(d->engines[d->src[i].engine],
                                                        d->src[i].r);
}

/* A DAG session's roots are due at its start, each after the tool time
 * before it (the first turn with the session, as a chain's). */
static int dag_roots(struct driver *d, size_t si, struct atr_error *err)
{
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    for (uint32_t k = 0; k < s->n_turns; k++) {
        if (s->turns[k].n_parents)
            continue;
        double t = d->cfg->starts[si] +
                   (k ? atr_schedule_think(d->cfg->schedule, &s->turns[k]) : 0);
        if (dag_send(d, si, k, t, err) < 0)
            return -1;
    }
    return 0;
}

int atr_sim_run(struct atr_engine *const *engines, unsigned n_engines,
                const struct atr_sim_run_cfg *cfg, struct atr_llm_record **out, size_t *n_out,
                struct atr_error *err)
{
    const struct atr_workload *w = cfg->workload;
    if (n_engines < 1)
        return atr_error_set(err, "simulation needs at least one engine");
    struct driver d = { .cfg = cfg, .engines = engines, .n_engines = n_engines };
    size_t n_sessions = w->n_sessions ? w->n_sessions : 1;
    d.ses = xcalloc(n_sessions, sizeof *d.ses);
    d.by_session = xcalloc(n_sessions, sizeof *d.by_session);
    d.pending_of = xcalloc(w->n_turns + 1, sizeof *d.pending_of);
    d.wait_cap = n_sessions;
    size_t widest = 1;
    for (size_t i = 0; i < w->n_sessions; i++)
        if (w->sessions[i].dag) {
            widest = w->sessions[i].n_turns > widest ? w->sessions[i].n_turns : widest;
            atr_dag_state_init(&d.ses[i].dag, &w->sessions[i]);
            d.ses[i].pend = xcalloc(w->sessions[i].n_turns + 1, sizeof *d.ses[i].pend);
            d.wait_cap += w->sessions[i].n_turns;
        }
    d.ready = xcalloc(widest, sizeof *d.ready);
    d.slots_wait = xcalloc(d.wait_cap, sizeof *d.slots_wait);
    d.recs = xcalloc(w->n_turns + 1, sizeof *d.recs);
    d.src = xcalloc(w->n_turns + 1, sizeof *d.src);
    d.frontends = xcalloc(n_engines, sizeof *d.frontends);
    for (unsigned k = 0; k < n_engines; k++)
        d.frontends[k] = (struct atr_frontend){ .request_s = cfg->frontend_s,
                                                .token_s = cfg->frontend_token_s };
    atr_heap_init(&d.sends);
    atr_heap_init(&d.deadlines);
    int rc = 0;
    for (size_t i = 0; i < w->n_sessions && rc == 0; i++) {
        if (!w->sessions[i].n_turns)
            continue;
        if (w->sessions[i].dag) {
            rc = dag_roots(&d, i, err);
            continue;
        }
        struct pending *p = &d.by_session[i];
        *p = (struct pending){ .session = i, .send_s = cfg->starts[i] };
        rc = atr_heap_push(&d.sends, p->send_s, p, err) < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = drive(&d, err);
    atr_heap_release(&d.sends);
    atr_heap_release(&d.deadlines);
    for (size_t i = 0; i < w->n_sessions; i++)
        if (d.ses[i].pend) {
            atr_dag_state_release(&d.ses[i].dag);
            free(d.ses[i].pend);
        }
    free(d.ses);
    free(d.by_session);
    free(d.pending_of);
    free(d.ready);
    free(d.slots_wait);
    free(d.frontends);
    if (rc == 0)
        set_chunks(&d);
    free(d.src);
    if (rc < 0) {
        free(d.recs);
        return -1;
    }
    *out = d.recs;
    *n_out = d.n_recs;
    return 0;
}
