/* run.c - sessions through engine replicas in virtual time, under a
 * policy (see run.h). */
#include "sim/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/heap.h"
#include "util/alloc.h"

/* A turn between being sent and finishing. */
struct pending {
    size_t session;
    double send_s;
    struct atr_policy_req req;       /* what the policy saw */
    struct atr_policy_decision dec;  /* what it decided */
};

/* Where a session is, and its history for the policy. */
struct session_state {
    size_t next_turn;
    struct atr_session_history hist;
};

struct driver {
    const struct atr_sim_run_cfg *cfg;
    struct atr_engine *const *engines;
    unsigned n_engines;
    struct session_state *ses;       /* per session */
    struct pending *by_id;           /* request id -> its pending (ids are dense) */
    struct atr_heap sends;           /* (send time, pending) of turns not yet sent */
    struct pending *slots_wait;      /* FIFO of sent turns waiting for a slot */
    size_t wait_head, wait_len;
    size_t in_flight;
    uint64_t next_id;
    struct atr_llm_record *recs;
    size_t n_recs;
};

/* The turn gets its slot: the policy decides, its replica takes it. */
static int start_turn(struct driver *d, const struct pending *p, double now,
                      struct atr_error *err)
{
    uint64_t id = d->next_id++;
    struct pending *q = &d->by_id[id];
    *q = *p;
    atr_policy_request_init(&q->req, &q->dec, d->cfg->workload, q->session,
                            d->ses[q->session].next_turn, &d->ses[q->session].hist, id, now);
    if (d->cfg->policy)
        atr_policy_decide(d->cfg->policy, &q->req, &q->dec);
    if (q->dec.replica >= d->n_engines)
        q->dec.replica = 0;
    uint32_t out = q->req.recorded_output_tokens;
    if (q->dec.max_tokens && q->dec.max_tokens < out)
        out = q->dec.max_tokens;
    struct atr_sim_req req = {
        .id = id, .arrival = now, .prompt_tokens = q->dec.prompt_tokens,
        .output_tokens = out ? out : 1,
        .hash_ids = q->dec.salt ? NULL : q->dec.ids, .n_hash_ids = q->dec.salt ? 0 : q->dec.n_ids,
    };
    d->in_flight++;
    if (!atr_engine_add(d->engines[q->dec.replica], &req, err))
        return -1;
    if (d->cfg->policy)
        atr_policy_started(d->cfg->policy, &q->req, &q->dec);
    return 0;
}

/* A turn is sent: it starts now, or waits for a slot. */
static int send_turn(struct driver *d, const struct pending *p, struct atr_error *err)
{
    unsigned limit = d->cfg->max_concurrency;
    if (limit && d->in_flight >= limit) {
        d->slots_wait[(d->wait_head + d->wait_len++) % d->cfg->workload->n_sessions] = *p;
        return 0;
    }
    return start_turn(d, p, p->send_s, err);
}

static int finish(struct driver *d, const struct atr_sim_record *r, struct atr_error *err)
{
    struct pending *p = &d->by_id[r->id];
    size_t si = p->session;
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    struct session_state *ss = &d->ses[si];
    d->recs[d->n_recs++] = (struct atr_llm_record){
        .id = r->id, .scheduled_s = p->send_s, .send_s = p->send_s, .start_s = r->arrival,
        .end_s = r->finish, .chunk_s = r->token_times, .n_chunks = r->output_tokens,
        .prompt_tokens = r->prompt_tokens, .output_tokens = r->output_tokens,
        .cached_tokens = r->cached_tokens, .success = true,
        .trace_id = s->trace_id, .turn = (int64_t)ss->next_turn,
    };
    if (d->cfg->policy) {
        struct atr_policy_outcome o = {
            .success = true, .output_tokens = r->output_tokens,
            .cached_tokens = r->cached_tokens, .ttft_s = r->first_token - r->arrival,
            .e2el_s = r->finish - r->arrival,
        };
        atr_policy_finished(d->cfg->policy, &p->req, &p->dec, &o);
    }
    d->in_flight--;
    atr_session_history_add(&ss->hist, r->finish, r->output_tokens);
    if (++ss->next_turn < s->n_turns) {
        p->send_s = r->finish + atr_schedule_think(d->cfg->schedule, &s->turns[ss->next_turn]);
        if (atr_heap_push(&d->sends, p->send_s, p, err) < 0)   /* p is free to reuse */
            return -1;
    }
    if (d->wait_len) {
        struct pending w = d->slots_wait[d->wait_head];
        d->wait_head = (d->wait_head + 1) % d->cfg->workload->n_sessions;
        d->wait_len--;
        return start_turn(d, &w, r->finish, err);
    }
    return 0;
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
        double t_send = top ? top->t : INFINITY, t_eng;
        unsigned k = next_engine(d, &t_eng);
        if (isinf(t_send) && isinf(t_eng))
            return 0;
        if (t_send <= t_eng) {       /* sends first: a turn due now joins this iteration */
            struct atr_heap_item it;
            atr_heap_pop(&d->sends, &it);
            if (send_turn(d, it.data, err) < 0)
                return -1;
            continue;
        }
        if (atr_engine_step(d->engines[k], err) < 0)
            return -1;
        size_t n;
        struct atr_sim_record *const *done = atr_engine_finished(d->engines[k], &n);
        for (size_t i = 0; i < n; i++)
            if (finish(d, done[i], err) < 0)
                return -1;
    }
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
    d.by_id = xcalloc(w->n_turns + 1, sizeof *d.by_id);
    d.slots_wait = xcalloc(n_sessions, sizeof *d.slots_wait);
    d.recs = xcalloc(w->n_turns + 1, sizeof *d.recs);
    /* First turns live here until their request id is known. */
    struct pending *first = xcalloc(n_sessions, sizeof *first);
    atr_heap_init(&d.sends);
    int rc = 0;
    for (size_t i = 0; i < w->n_sessions && rc == 0; i++) {
        if (!w->sessions[i].n_turns)
            continue;
        first[i] = (struct pending){ .session = i, .send_s = cfg->starts[i] };
        rc = atr_heap_push(&d.sends, first[i].send_s, &first[i], err) < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = drive(&d, err);
    atr_heap_release(&d.sends);
    free(first);
    free(d.ses);
    free(d.by_id);
    free(d.slots_wait);
    if (rc < 0) {
        free(d.recs);
        return -1;
    }
    *out = d.recs;
    *n_out = d.n_recs;
    return 0;
}
