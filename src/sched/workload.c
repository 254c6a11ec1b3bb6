/* workload.c - sessions of llm turns read from traces (see workload.h). */
#include "sched/workload.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "trace/reader.h"
#include "trace/tokens.h"
#include "util/alloc.h"

/* Block ids of src (block size from) as ids of block size to. Splitting
 * derives sub-ids from (id, part); merging hashes each group of ids. Both
 * are functions of chained ids, so equal prefixes stay equal. Returns the
 * number written into out (room for n * from / to + 1 ids). */
static uint32_t rebase_ids(const uint64_t *src, uint32_t n, uint32_t from, uint32_t to,
                           uint64_t *out)
{
    uint32_t k = 0;
    if (from == to) {
        memcpy(out, src, n * sizeof *src);
        return n;
    }
    if (from % to == 0) {
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < from / to; j++)
                out[k++] = XXH3_64bits_withSeed(&src[i], sizeof src[i], j + 1) & ATR_HASH_ID_MASK;
        return k;
    }
    uint32_t group = to / from;        /* to % from == 0, checked by the caller */
    for (uint32_t i = 0; i + group <= n; i += group)
        out[k++] = XXH3_64bits(&src[i], group * sizeof *src) & ATR_HASH_ID_MASK;
    return k;
}

/* Turn u's block ids (malloc'd; u->n_ids set), or NULL when it has none. */
static uint64_t *load_turn_ids(struct atr_turn *u, const struct atr_step *st, uint32_t from,
                               uint32_t to)
{
    if (!st->n_hash_ids || !from || (from % to && to % from))
        return NULL;
    uint64_t room = (uint64_t)st->n_hash_ids * (from > to ? from / to : 1) + 1;
    uint64_t *ids = xcalloc(room, sizeof *ids);
    u->n_ids = rebase_ids(st->hash_ids, st->n_hash_ids, from, to, ids);
    if (u->n_ids > u->prompt_tokens / to)
        u->n_ids = u->prompt_tokens / to;
    if (!u->n_ids) {
        free(ids);
        return NULL;
    }
    return ids;
}

/* A session's turns share their block ids: an agent's every call repeats
 * its history, so turn t's ids usually start with all of turn t-1's, and
 * a copy per turn grows quadratically with the turns (~6.6 KB per turn on
 * coding-agent traces). Turns whose ids are a prefix of the chain, or
 * extend it, point into one array; a turn that does neither starts a new
 * chain. The session owns the chains. */
struct chain {
    uint64_t *ids;
    uint32_t n, cap;
    size_t first;                /* the first turn in this chain */
};

/* The chain's turns point into its (final) array; the session keeps it. */
static void chain_close(struct chain *c, struct atr_session *s, size_t end)
{
    if (!c->ids)
        return;
    if (c->cap > c->n)           /* the growth's slack was a third of a run's memory */
        c->ids = xreallocarray(c->ids, c->n, sizeof *c->ids);
    for (size_t k = c->first; k < end; k++)
        if (s->turns[k].n_ids)
            s->turns[k].ids = c->ids;
    s->id_chains = xreallocarray(s->id_chains, s->n_id_chains + 1, sizeof *s->id_chains);
    s->id_chains[s->n_id_chains++] = c->ids;
    *c = (struct chain){ NULL, 0, 0, end };
}

/* Whether ids[0..n) agree with the chain where both have ids. */
static bool chain_continues(const struct chain *c, const uint64_t *ids, uint32_t n)
{
    uint32_t common = n < c->n ? n : c->n;
    return c->ids && memcmp(c->ids, ids, common * sizeof *ids) == 0;
}

/* Room for n ids in the chain. */
static void chain_reserve(struct chain *c, uint32_t n)
{
    if (n > c->cap) {
        c->cap = n > 2 * c->cap ? n : 2 * c->cap;
        c->ids = xreallocarray(c->ids, c->cap, sizeof *c->ids);
    }
}

/* Appends ids[c->n..n) to the chain (it continues it). */
static void chain_extend(struct chain *c, const uint64_t *ids, uint32_t n)
{
    if (n <= c->n)
        return;
    chain_reserve(c, n);
    memcpy(c->ids + c->n, ids + c->n, (n - c->n) * sizeof *ids);
    c->n = n;
}

/* Adds turn k's ids (ids[0..n_ids), taken over) to the session's chains. */
static void chain_add(struct chain *c, struct atr_session *s, size_t k, uint64_t *ids)
{
    const struct atr_turn *u = &s->turns[k];
    if (!ids)
        return;
    if (!chain_continues(c, ids, u->n_ids)) {
        chain_close(c, s, k);
        c->ids = ids;            /* the turn's array becomes the new chain */
        c->n = c->cap = u->n_ids;
        return;
    }
    chain_extend(c, ids, u->n_ids);
    free(ids);
}

/* The first m ids of step k's full list (steps read with compact_ids)
 * into out: the step's own ids, then those of the step it refers to. */
static void step_ids(const struct atr_trace *t, size_t k, uint32_t m, uint64_t *out)
{
    while (m) {
        const struct atr_step *st = &t->steps[k];
        uint32_t p = st->prefix_blocks;
        if (m > p) {
            memcpy(out + p, st->hash_ids, (m - p) * sizeof *out);
            m = p;
        }
        k = st->prefix_step;
    }
}

/* Where a step's ids are in the session's chains: its first n ids are
 * the first n of chain number chain - 1 (0: none). */
struct step_place {
    uint32_t chain, n;
};

/* Step st's first n ids continue the chain, given that its prefix (p ids
 * of a step whose ids are a prefix of the chain) already agrees:
 * only its own ids are compared and copied, so a session of T turns no
 * longer copies O(T^2) ids (the reader's expansion was 2 % of a sim run). */
static bool chain_add_own(struct chain *c, const struct atr_step *st, uint32_t n)
{
    uint32_t p = st->prefix_blocks, common = n < c->n ? n : c->n;
    if (common > p && memcmp(c->ids + p, st->hash_ids, (common - p) * sizeof *c->ids) != 0)
        return false;
    if (n > c->n) {
        chain_reserve(c, n);
        memcpy(c->ids + c->n, st->hash_ids + (c->n - p), (n - c->n) * sizeof *c->ids);
        c->n = n;
    }
    return true;
}

/* Turn k (step i) when the trace's block size is the workload's, read
 * where the trace holds its ids: copied only where they extend the chain
 * or start a new one (load_turn_ids + chain_add gives the same chains; its
 * copy of every turn's ids, zeroed first, was a tenth of simulating an
 * agent workload: issue 16). place[j] says where step j's ids are. */
static void chain_add_in_place(struct chain *c, struct atr_session *s, size_t k,
                               const struct atr_trace *t, size_t i, struct step_place *place,
                               uint32_t block_size)
{
    const struct atr_step *st = &t->steps[i];
    struct atr_turn *u = &s->turns[k];
    uint32_t n = st->n_hash_ids;
    if (n > u->prompt_tokens / block_size)
        n = u->prompt_tokens / block_size;
    if (!n)
        return;
    u->n_ids = n;
    uint32_t serial = (uint32_t)s->n_id_chains + 1;
    bool done = false;
    if (st->prefix_blocks) {      /* then c->n >= prefix_blocks */
        const struct step_place *ref = &place[st->prefix_step];
        done = ref->chain == serial && ref->n >= st->prefix_blocks && chain_add_own(c, st, n);
    } else if (chain_continues(c, st->hash_ids, n)) {
        chain_extend(c, st->hash_ids, n);
        done = true;
    }
    if (!done) {
        uint64_t *ids = xreallocarray(NULL, n, sizeof *ids);
        step_ids(t, i, n, ids);
        chain_add(c, s, k, ids);
    }
    place[i] = (struct step_place){ (uint32_t)s->n_id_chains + 1, n };
}

/* Turn k (step i) at another block size: its full list rebased. */
static void chain_add_rebased(struct chain *c, struct atr_session *s, size_t k,
                              const struct atr_trace *t, size_t i, uint32_t block_size)
{
    struct atr_step st = t->steps[i];
    uint64_t *full = NULL;
    if (st.prefix_blocks) {
        full = xreallocarray(NULL, st.n_hash_ids, sizeof *full);
        step_ids(t, i, st.n_hash_ids, full);
        st.hash_ids = full;
    }
    chain_add(c, s, k, load_turn_ids(&s->turns[k], &st, t->block_size, block_size));
    free(full);
}

/* The session's copy of a tool name, made at its first use. */
static const char *session_tool(struct atr_session *s, const char *tool)
{
    for (size_t i = s->n_tools; i-- > 0;)
        if (strcmp(s->tools[i], tool) == 0)
            return s->tools[i];
    s->tools = xreallocarray(s->tools, s->n_tools + 1, sizeof *s->tools);
    s->tools[s->n_tools] = xstrdup(tool);
    return s->tools[s->n_tools++];
}

/* What a step of a DAG trace hands on to the steps below it: the llm
 * turns it descends from through non-llm steps (an llm step: itself),
 * each with the longest tool time on the way from it; the longest tool
 * time from the trace's start where a path has no llm step (start_ms,
 * -1: none); and the last tool on the way. */
struct dag_edge {
    uint32_t turn;
    double tool_ms;
};

struct dag_up {
    struct dag_edge *e;
    uint32_t n;
    double start_ms;
    const char *tool;
};

/* Adds (turn, tool_ms) to up, keeping the longer tool time of a turn
 * that is there already. */
static void dag_up_add(struct dag_up *up, uint32_t turn, double tool_ms)
{
    for (uint32_t i = 0; i < up->n; i++)
        if (up->e[i].turn == turn) {
            up->e[i].tool_ms = fmax(up->e[i].tool_ms, tool_ms);
            return;
        }
    up->e = xreallocarray(up->e, up->n + 1, sizeof *up->e);
    up->e[up->n++] = (struct dag_edge){ turn, tool_ms };
}

static int cmp_edge(const void *a, const void *b)
{
    uint32_t x = ((const struct dag_edge *)a)->turn, y = ((const struct dag_edge *)b)->turn;
    return (x > y) - (x < y);
}

/* Step st's inherited view: the union of its parents' (a step's parents
 * are earlier steps, checked by the reader, so all[] is filled for them);
 * a root starts a path from the trace's start. */
static struct dag_up dag_up_merge(const struct dag_up *all, const struct atr_step *st)
{
    struct dag_up up = { NULL, 0, -1, NULL };
    uint32_t one, last = 0;
    const uint32_t *par;
    uint32_t np = atr_step_parents(st, &one, &par);
    if (!np)
        up.start_ms = 0;
    for (uint32_t i = 0; i < np; i++) {
        const struct dag_up *p = &all[par[i]];
        for (uint32_t j = 0; j < p->n; j++)
            dag_up_add(&up, p->e[j].turn, p->e[j].tool_ms);
        up.start_ms = fmax(up.start_ms, p->start_ms);
        if (p->tool && par[i] >= last) {   /* the latest parent's tool */
            up.tool = p->tool;
            last = par[i];
        }
    }
    return up;
}

/* A tool step's time, added to every path through it. */
static void dag_up_tool(struct dag_up *up, const struct atr_step *st)
{
    double ms = st->dur_ms > 0 ? (double)st->dur_ms : 0;
    for (uint32_t j = 0; j < up->n; j++)
        up->e[j].tool_ms += ms;
    if (up->start_ms >= 0)
        up->start_ms += ms;
    up->tool = st->tool;
}

/* Gives every turn of s (from DAG trace t) its parent turns, each with
 * the tool time after it, and its think_s: the longest of those (a root:
 * the tool time since the trace's start). turn_of[k] is step k's turn or
 * UINT32_MAX. */
static void load_dag(const struct atr_trace *t, struct atr_session *s, const uint32_t *turn_of)
{
    struct dag_up *up = xcalloc(t->n_steps ? t->n_steps : 1, sizeof *up);
    struct dag_edge **lists = xcalloc(s->n_turns ? s->n_turns : 1, sizeof *lists);
    size_t total = 0;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *st = &t->steps[k];
        struct dag_up in = dag_up_merge(up, st);
        if (turn_of[k] == UINT32_MAX) {           /* a tool (or empty) step passes on */
            if (st->kind == ATR_STEP_TOOL)
                dag_up_tool(&in, st);
            up[k] = in;
            continue;
        }
        struct atr_turn *u = &s->turns[turn_of[k]];
        if (in.n > 1)             /* qsort wants an array, even of none */
            qsort(in.e, in.n, sizeof *in.e, cmp_edge);
        double think = in.n ? 0 : fmax(0, in.start_ms);
        for (uint32_t j = 0; j < in.n; j++)
            think = fmax(think, in.e[j].tool_ms);
        lists[turn_of[k]] = in.e;
        u->n_parents = in.n;
        u->think_s = think / 1000.0;
        u->prev_tool = in.tool ? session_tool(s, in.tool) : NULL;
        total += in.n;
        up[k] = (struct dag_up){ NULL, 0, -1, NULL };
        dag_up_add(&up[k], turn_of[k], 0);
    }
    s->dag = true;
    s->dag_parents = xcalloc(total ? total : 1, sizeof *s->dag_parents);
    s->dag_think_s = xcalloc(total ? total : 1, sizeof *s->dag_think_s);
    for (size_t j = 0, at = 0; j < s->n_turns; j++) {
        struct atr_turn *u = &s->turns[j];
        for (uint32_t i = 0; i < u->n_parents; i++) {
            s->dag_parents[at + i] = lists[j][i].turn;
            s->dag_think_s[at + i] = lists[j][i].tool_ms / 1000.0;
        }
        u->parents = s->dag_parents + at;
        u->parent_think_s = s->dag_think_s + at;
        at += u->n_parents;
        free(lists[j]);
    }
    for (size_t k = 0; k < t->n_steps; k++)
        free(up[k].e);
    free(up);
    free(lists);
}

static void load_session(const struct atr_trace *t, uint32_t block_size, struct atr_session *s)
{
    bool dag = atr_trace_is_dag(t);
    uint32_t *turn_of = dag ? xcalloc(t->n_steps ? t->n_steps : 1, sizeof *turn_of) : NULL;
    memset(s, 0, sizeof *s);
    s->trace_id = xstrdup(t->trace_id ? t->trace_id : "");
    s->offset_s = (double)t->start_ms / 1000.0;
    s->turns = xcalloc(t->n_steps, sizeof *s->turns);
    double tool_ms = 0;
    const char *tool = NULL;
    struct chain chain = { NULL, 0, 0, 0 };
    /* A short trace's places on the stack: one calloc and free fewer a
     * one-request trace (~250 instructions of its ~3k, issue 33). */
    struct step_place few[32] = {{0, 0}};
    struct step_place *place = t->n_steps <= 32 ? few : xcalloc(t->n_steps, sizeof *place);
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *st = &t->steps[k];
        if (turn_of)
            turn_of[k] = UINT32_MAX;
        if (st->kind == ATR_STEP_TOOL) {
            tool_ms += st->dur_ms > 0 ? (double)st->dur_ms : 0;
            tool = st->tool;
            continue;
        }
        if (st->kind != ATR_STEP_LLM || st->input_tokens <= 0)
            continue;
        if (turn_of)
            turn_of[k] = (uint32_t)s->n_turns;
        struct atr_turn *u = &s->turns[s->n_turns++];
        u->prompt_tokens = st->input_tokens > UINT32_MAX ? UINT32_MAX : (uint32_t)st->input_tokens;
        u->output_tokens = st->output_tokens <= 0 ? 1
                           : st->output_tokens > UINT32_MAX ? UINT32_MAX
                                                           : (uint32_t)st->output_tokens;
        u->think_s = tool_ms / 1000.0;
        tool_ms = 0;
        if (tool)
            u->prev_tool = session_tool(s, tool);
        tool = NULL;
        if (t->block_size == block_size)
            chain_add_in_place(&chain, s, s->n_turns - 1, t, k, place, block_size);
        else
            chain_add_rebased(&chain, s, s->n_turns - 1, t, k, block_size);
    }
    if (place != few)
        free(place);
    chain_close(&chain, s, s->n_turns);
    if (turn_of)                 /* before the shrink: the turns are the same */
        load_dag(t, s, turn_of);
    free(turn_of);
    if (s->n_turns && s->n_turns < t->n_steps)  /* tool steps took no turn */
        s->turns = xreallocarray(s->turns, s->n_turns, sizeof *s->turns);
}

int atr_workload_load(struct atr_workload *w, char *const *paths, size_t n,
                      const char *format, uint32_t block_size, struct atr_error *err)
{
    struct atr_read_opts ro = { .block_size = block_size ? block_size : 16, .compact_ids = true,
                                .lean = true };
    struct atr_trace t = ATR_TRACE_INIT;
    size_t cap = w->n_sessions;
    int rc = 0;
    w->block_size = ro.block_size;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct atr_reader *r = atr_reader_open(paths[i], format, &ro, err);
        if (!r) {
            rc = -1;
            break;
        }
        while ((rc = atr_reader_next(r, &t, err)) == 1) {
            if (w->n_sessions == cap) {
                cap = cap ? cap * 2 : 256;
                w->sessions = xreallocarray(w->sessions, cap, sizeof *w->sessions);
            }
            struct atr_session *s = &w->sessions[w->n_sessions++];
            load_session(&t, w->block_size, s);
            w->n_turns += s->n_turns;
        }
        rc = rc < 0 ? -1 : 0;
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    if (rc == 0 && w->n_sessions) {           /* offsets from the earliest trace */
        double t0 = w->sessions[0].offset_s;
        for (size_t i = 1; i < w->n_sessions; i++)
            if (w->sessions[i].offset_s < t0)
                t0 = w->sessions[i].offset_s;
        for (size_t i = 0; i < w->n_sessions; i++)
            w->sessions[i].offset_s -= t0;
    }
    return rc;
}

void atr_workload_release(struct atr_workload *w)
{
    for (size_t i = 0; i < w->n_sessions; i++) {
        for (size_t k = 0; k < w->sessions[i].n_tools; k++)
            free(w->sessions[i].tools[k]);
        free(w->sessions[i].tools);
        for (size_t k = 0; k < w->sessions[i].n_id_chains; k++)
            free(w->sessions[i].id_chains[k]);
        free(w->sessions[i].id_chains);
        free(w->sessions[i].dag_parents);
        free(w->sessions[i].dag_think_s);
        free(w->sessions[i].turns);
        free(w->sessions[i].trace_id);
    }
    free(w->sessions);
    memset(w, 0, sizeof *w);
}

uint32_t atr_turn_parents(const struct atr_session *s, size_t k, uint32_t *one,
                          const uint32_t **out)
{
    if (s->dag) {
        *out = s->turns[k].parents;
        return s->turns[k].n_parents;
    }
    *one = (uint32_t)(k - 1);
    *out = one;
    return k ? 1 : 0;
}

void atr_dag_state_init(struct atr_dag_state *st, const struct atr_session *s)
{
    size_t n = s->n_turns ? s->n_turns : 1, edges = 0;
    st->left = xcalloc(n, sizeof *st->left);
    st->ready_s = xcalloc(n, sizeof *st->ready_s);
    st->child_at = xcalloc(n + 1, sizeof *st->child_at);
    for (size_t k = 0; k < s->n_turns; k++) {
        const struct atr_turn *u = &s->turns[k];
        st->left[k] = u->n_parents;
        st->ready_s[k] = -INFINITY;
        edges += u->n_parents;
        for (uint32_t i = 0; i < u->n_parents; i++)
            st->child_at[u->parents[i] + 1]++;
    }
    for (size_t k = 0; k < s->n_turns; k++)
        st->child_at[k + 1] += st->child_at[k];
    st->children = xcalloc(edges ? edges : 1, sizeof *st->children);
    st->child_think_s = xcalloc(edges ? edges : 1, sizeof *st->child_think_s);
    uint32_t *fill = xcalloc(n, sizeof *fill);
    for (size_t k = 0; k < s->n_turns; k++) {      /* children in turn order */
        const struct atr_turn *u = &s->turns[k];
        for (uint32_t i = 0; i < u->n_parents; i++) {
            uint32_t at = st->child_at[u->parents[i]] + fill[u->parents[i]]++;
            st->children[at] = (uint32_t)k;
            st->child_think_s[at] = u->parent_think_s[i];
        }
    }
    free(fill);
}

void atr_dag_state_release(struct atr_dag_state *st)
{
    free(st->left);
    free(st->ready_s);
    free(st->child_at);
    free(st->children);
    free(st->child_think_s);
    memset(st, 0, sizeof *st);
}

size_t atr_dag_turn_over(struct atr_dag_state *st, size_t k, double end_s, double time_scale,
                         uint32_t *ready)
{
    size_t n = 0;
    for (uint32_t i = st->child_at[k]; i < st->child_at[k + 1]; i++) {
        uint32_t c = st->children[i];
        st->ready_s[c] = fmax(st->ready_s[c], end_s + st->child_think_s[i] * time_scale);
        if (--st->left[c] == 0)
            ready[n++] = c;
    }
    return n;
}
