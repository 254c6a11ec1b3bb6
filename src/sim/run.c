/* run.c - sessions through the engine in virtual time (see run.h). */
#include "sim/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/heap.h"

/* A turn between being sent and finishing. */
struct pending {
    size_t session;
    double send_s;
};

struct driver {
    const struct atr_sim_run_cfg *cfg;
    struct atr_engine *e;
    size_t *next_turn;               /* per session */
    struct pending *by_id;           /* request id -> its pending (ids are dense) */
    struct atr_heap sends;           /* (send time, pending) of turns not yet sent */
    struct pending *slots_wait;      /* FIFO of sent turns waiting for a slot */
    size_t wait_head, wait_len;
    size_t in_flight;
    uint64_t next_id;
    struct atr_llm_record *recs;
    size_t n_recs;
};

static int start_turn(struct driver *d, const struct pending *p, double now,
                      struct atr_error *err)
{
    const struct atr_session *s = &d->cfg->workload->sessions[p->session];
    const struct atr_turn *u = &s->turns[d->next_turn[p->session]];
    struct atr_sim_req req = {
        .id = d->next_id, .arrival = now, .prompt_tokens = u->prompt_tokens,
        .output_tokens = u->output_tokens, .hash_ids = u->ids, .n_hash_ids = u->n_ids,
    };
    d->by_id[d->next_id++] = *p;
    d->in_flight++;
    return atr_engine_add(d->e, &req, err) ? 0 : -1;
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
    const struct pending *p = &d->by_id[r->id];
    d->recs[d->n_recs++] = (struct atr_llm_record){
        .id = r->id, .scheduled_s = p->send_s, .send_s = p->send_s, .start_s = r->arrival,
        .end_s = r->finish, .chunk_s = r->token_times, .n_chunks = r->output_tokens,
        .prompt_tokens = r->prompt_tokens, .output_tokens = r->output_tokens,
        .cached_tokens = r->cached_tokens, .success = true,
    };
    size_t si = p->session;
    const struct atr_session *s = &d->cfg->workload->sessions[si];
    d->recs[d->n_recs - 1].trace_id = s->trace_id;
    d->recs[d->n_recs - 1].turn = (int64_t)d->next_turn[si];
    d->in_flight--;
    if (++d->next_turn[si] < s->n_turns) {
        struct pending *next = &d->by_id[r->id];   /* reused: the turn is recorded */
        next->send_s = r->finish + atr_schedule_think(d->cfg->schedule,
                                                      &s->turns[d->next_turn[si]]);
        if (atr_heap_push(&d->sends, next->send_s, next, err) < 0)
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

static int drive(struct driver *d, struct atr_error *err)
{
    for (;;) {
        const struct atr_heap_item *top = atr_heap_peek(&d->sends);
        double t_send = top ? top->t : INFINITY, t_eng = atr_engine_next_time(d->e);
        if (isinf(t_send) && isinf(t_eng))
            return 0;
        if (t_send <= t_eng) {       /* sends first: a turn due now joins this iteration */
            struct atr_heap_item it;
            atr_heap_pop(&d->sends, &it);
            if (send_turn(d, it.data, err) < 0)
                return -1;
            continue;
        }
        if (atr_engine_step(d->e, err) < 0)
            return -1;
        size_t n;
        struct atr_sim_record *const *done = atr_engine_finished(d->e, &n);
        for (size_t k = 0; k < n; k++)
            if (finish(d, done[k], err) < 0)
                return -1;
    }
}

int atr_sim_run(struct atr_engine *e, const struct atr_sim_run_cfg *cfg,
                struct atr_llm_record **out, size_t *n_out, struct atr_error *err)
{
    const struct atr_workload *w = cfg->workload;
    struct driver d = { .cfg = cfg, .e = e };
    size_t n_sessions = w->n_sessions ? w->n_sessions : 1;
    d.next_turn = calloc(n_sessions, sizeof *d.next_turn);
    d.by_id = calloc(w->n_turns + 1, sizeof *d.by_id);
    d.slots_wait = calloc(n_sessions, sizeof *d.slots_wait);
    d.recs = calloc(w->n_turns + 1, sizeof *d.recs);
    if (!d.next_turn || !d.by_id || !d.slots_wait || !d.recs)
        abort();
    atr_heap_init(&d.sends);
    /* First turns: pending slots live at the session's first request id,
     * which is not known yet, so they start in a per-session array. */
    struct pending *first = calloc(n_sessions, sizeof *first);
    if (!first)
        abort();
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
    free(d.next_turn);
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
