/* stats.c - the `atr stats` accumulator: one pass over traces, bounded memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "stats/percentile.h"
#include "report/stats.h"
#include "util/alloc.h"
#include "util/arena.h"

/* ---- a set of block ids (cross-trace reuse) ----
 * Open addressing over 64-bit ids; ids are < 2^53, so UINT64_MAX marks an
 * empty slot. Kept at most half full. */
#define ID_EMPTY UINT64_MAX

struct id_set {
    uint64_t *slot;
    size_t cap, n, max;     /* max: stop inserting past this many ids */
    bool full;              /* an insert was refused: figures are approximate */
};

/* Mooncake ids are small consecutive integers: mix before masking. */
static size_t id_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static bool id_set_has(const struct id_set *s, uint64_t id)
{
    if (!s->cap)
        return false;
    for (size_t j = id_hash(id) & (s->cap - 1); s->slot[j] != ID_EMPTY; j = (j + 1) & (s->cap - 1))
        if (s->slot[j] == id)
            return true;
    return false;
}

static void id_set_put(uint64_t *slot, size_t cap, uint64_t id)
{
    size_t j = id_hash(id) & (cap - 1);
    while (slot[j] != ID_EMPTY && slot[j] != id)
        j = (j + 1) & (cap - 1);
    slot[j] = id;
}

static void id_set_grow(struct id_set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *slot = xreallocarray(NULL, cap, sizeof *slot);
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i] != ID_EMPTY)
            id_set_put(slot, cap, s->slot[i]);
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
}

static void id_set_add(struct id_set *s, uint64_t id)
{
    if (id_set_has(s, id))
        return;
    if (s->n >= s->max) {
        s->full = true;
        return;
    }
    if ((s->n + 1) * 2 > s->cap)
        id_set_grow(s);
    id_set_put(s->slot, s->cap, id);
    s->n++;
}

/* ---- a prefix trie of one trace's llm steps (within-trace reuse) ----
 * Node 0 is the root; an edge (parent, id) -> child lives in a hash table.
 * Walking a step's ids down the trie reaches depth = the longest common
 * leading run with any earlier step, exactly, whether or not the ids are
 * chained. The table is sized per trace: memory follows the largest trace. */
struct trie_edge {
    uint64_t id;
    uint32_t parent, child;     /* child 0: empty slot */
};

struct trie {
    struct trie_edge *e;
    size_t cap;
    uint32_t nodes;
};

static size_t edge_hash(uint32_t parent, uint64_t id)
{
    return id_hash(id ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ULL));
}

/* Returns the slot of edge (parent, id), or the empty slot where it goes. */
static struct trie_edge *trie_slot(struct trie *t, uint32_t parent, uint64_t id)
{
    size_t j = edge_hash(parent, id) & (t->cap - 1);
    while (t->e[j].child && (t->e[j].parent != parent || t->e[j].id != id))
        j = (j + 1) & (t->cap - 1);
    return &t->e[j];
}

/* Empties the trie with room for n edges at load <= 1/2; a table much
 * larger than needed is given back so one huge trace does not make every
 * later small trace pay for clearing it. */
static void trie_reset(struct trie *t, size_t n)
{
    size_t want = 64;
    while (want < 2 * n)
        want *= 2;
    if (t->cap < want || t->cap > 8 * want) {
        free(t->e);
        t->e = xcalloc(want, sizeof *t->e);
        t->cap = want;
    } else {
        memset(t->e, 0, t->cap * sizeof *t->e);
    }
    t->nodes = 1;
}

/* Adds ids[0..n) to the trie; returns how many leading ids were there. */
static uint32_t trie_add(struct trie *t, const uint64_t *ids, uint32_t n)
{
    uint32_t node = 0, k = 0;
    for (; k < n; k++) {
        struct trie_edge *e = trie_slot(t, node, ids[k]);
        if (!e->child)
            break;
        node = e->child;
    }
    uint32_t shared = k;
    for (; k < n; k++) {
        struct trie_edge *e = trie_slot(t, node, ids[k]);
        *e = (struct trie_edge){ids[k], node, t->nodes++};
        node = e->child;
    }
    return shared;
}

/* ---- tool names -> counts ---- */
struct tool_slot {
    const char *name;           /* NULL: empty */
    uint64_t hash, count;
};

struct tool_map {
    struct tool_slot *slot;
    size_t cap, n;
    uint64_t overflow;          /* steps whose name came past the cap */
};

/* ---- the accumulator ---- */
struct sum_pair {
    uint64_t n, est, rec;
};

struct atr_stats {
    struct atr_arena arena;     /* file and tool names */
    struct atr_stats_file *files;
    size_t n_files, cap_files;
    uint64_t traces, steps, llm_steps, tool_steps;
    struct atr_samples turns, in_tok, out_tok;
    uint64_t turns_sum, in_sum, out_sum;
    struct tool_map tools;
    struct atr_stats_tool *top;
    struct trie trie;
    struct id_set seen;
    struct atr_stats_reuse within, across;
    uint64_t llm_ms, tool_ms, llm_timed, tool_timed;
    struct sum_pair step_in, step_out, trace_in, trace_out;
    struct atr_stats_source sources[ATR_STATS_MAX_SOURCES];
    size_t n_sources;
    struct id_set agents;       /* one trace's sub-agent names, hashed */
    uint64_t dag_traces, sub_agents, sub_agent_steps;
};

static struct tool_slot *tool_find(struct tool_map *m, const char *name, uint64_t h)
{
    size_t j = h & (m->cap - 1);
    while (m->slot[j].name && (m->slot[j].hash != h || strcmp(m->slot[j].name, name) != 0))
        j = (j + 1) & (m->cap - 1);
    return &m->slot[j];
}

static void tool_grow(struct tool_map *m)
{
    struct tool_map bigger = {NULL, m->cap ? m->cap * 2 : 64, m->n, m->overflow};
    bigger.slot = xcalloc(bigger.cap, sizeof *bigger.slot);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].name)
            *tool_find(&bigger, m->slot[i].name, m->slot[i].hash) = m->slot[i];
    free(m->slot);
    *m = bigger;
}

static void tool_count(struct atr_stats *s, const char *name)
{
    struct tool_map *m = &s->tools;
    if ((m->n + 1) * 2 > m->cap && m->n < ATR_STATS_MAX_TOOL_NAMES)
        tool_grow(m);
    uint64_t h = XXH3_64bits(name, strlen(name));
    struct tool_slot *slot = tool_find(m, name, h);
    if (!slot->name) {
        if (m->n >= ATR_STATS_MAX_TOOL_NAMES) {
            m->overflow++;
            return;
        }
        *slot = (struct tool_slot){atr_arena_strdup(&s->arena, name), h, 0};
        m->n++;
    }
    slot->count++;
}

void atr_stats_tool_name(const struct atr_step *step, char *out, size_t cap)
{
    if (!cap)
        return;
    out[0] = '\0';
    if (step->command && step->command[0])
        atr_command_head(step->command, out, cap);
    else if (step->command_head && step->command_head[0])
        snprintf(out, cap, "%s", step->command_head);
    if (out[0])
        return;
    const char *tool = step->tool ? step->tool : "unknown";
    if (step->action && step->action[0])
        snprintf(out, cap, "%s:%s", tool, step->action);
    else
        snprintf(out, cap, "%s", tool);
}

struct atr_stats *atr_stats_new(const struct atr_stats_opts *opts)
{
    struct atr_stats *s = xcalloc(1, sizeof *s);
    s->seen.max = opts && opts->max_seen_ids ? opts->max_seen_ids : ATR_STATS_DEFAULT_MAX_IDS;
    return s;
}

void atr_stats_free(struct atr_stats *s)
{
    if (!s)
        return;
    atr_arena_release(&s->arena);
    free(s->files);
    atr_samples_release(&s->turns);
    atr_samples_release(&s->in_tok);
    atr_samples_release(&s->out_tok);
    free(s->tools.slot);
    free(s->top);
    free(s->trie.e);
    free(s->seen.slot);
    free(s->agents.slot);
    free(s);
}

void atr_stats_add_file(struct atr_stats *s, const char *name, const char *format)
{
    if (s->n_files == s->cap_files) {
        s->cap_files = s->cap_files ? s->cap_files * 2 : 8;
        s->files = xreallocarray(s->files, s->cap_files, sizeof *s->files);
    }
    s->files[s->n_files++] = (struct atr_stats_file){
        atr_arena_strdup(&s->arena, name ? name : "-"),
        atr_arena_strdup(&s->arena, format ? format : "?"), 0, 0,
    };
}

static bool known(int64_t v)
{
    return v != ATR_UNSET && v >= 0;
}

static void add_pair(struct sum_pair *p, int64_t est, int64_t rec)
{
    if (!known(est) || !known(rec))
        return;
    p->n++;
    p->est += (uint64_t)est;
    p->rec += (uint64_t)rec;
}

static bool is_origin(const char *from, const char *name)
{
    return from && strcmp(from, name) == 0;
}

/* The estimator against the recorded count: a recorded step carries the
 * estimate beside it; older traces carry the recorded count beside it. */
static void add_estimates(struct atr_stats *s, const struct atr_step *st)
{
    bool rec_in = is_origin(st->tokens_from, ATR_TOKENS_RECORDED);
    bool rec_out = st->output_tokens_from ? is_origin(st->output_tokens_from, ATR_TOKENS_RECORDED)
                                          : rec_in;
    if (rec_in)
        add_pair(&s->step_in, st->estimated_input_tokens, st->input_tokens);
    else if (!st->tokens_from)
        add_pair(&s->step_in, st->input_tokens, st->recorded_input_tokens);
    if (rec_out)
        add_pair(&s->step_out, st->estimated_output_tokens, st->output_tokens);
    else if (!st->tokens_from)
        add_pair(&s->step_out, st->output_tokens, st->recorded_output_tokens);
}

static enum atr_stats_origin origin_of(const char *from)
{
    for (int o = 0; o < ATR_ORIGIN_UNKNOWN; o++)
        if (is_origin(from, atr_stats_origin_name((enum atr_stats_origin)o)))
            return (enum atr_stats_origin)o;
    return ATR_ORIGIN_UNKNOWN;
}

static struct atr_stats_source *source_of(struct atr_stats *s, const char *name)
{
    name = name ? name : "atr";
    for (size_t k = 0; k < s->n_sources; k++)
        if (strcmp(s->sources[k].source, name) == 0)
            return &s->sources[k];
    if (s->n_sources == ATR_STATS_MAX_SOURCES)
        return &s->sources[ATR_STATS_MAX_SOURCES - 1];   /* renamed "other" at the cap */
    struct atr_stats_source *src = &s->sources[s->n_sources++];
    src->source = atr_arena_strdup(&s->arena,
                                   s->n_sources == ATR_STATS_MAX_SOURCES ? "other" : name);
    return src;
}

static void add_origin(struct atr_stats *s, const char *source, const struct atr_step *st)
{
    struct atr_stats_source *src = source_of(s, source);
    enum atr_stats_origin o = origin_of(st->tokens_from);
    src->steps[o]++;
    src->input_tokens[o] += known(st->input_tokens) ? (uint64_t)st->input_tokens : 0;
    src->output_tokens[o] += known(st->output_tokens) ? (uint64_t)st->output_tokens : 0;
}

static void add_llm_step(struct atr_stats *s, const struct atr_step *st)
{
    s->llm_steps++;
    if (known(st->input_tokens)) {
        atr_samples_add(&s->in_tok, (double)st->input_tokens);
        s->in_sum += (uint64_t)st->input_tokens;
    }
    if (known(st->output_tokens)) {
        atr_samples_add(&s->out_tok, (double)st->output_tokens);
        s->out_sum += (uint64_t)st->output_tokens;
    }
    if (known(st->dur_ms)) {
        s->llm_ms += (uint64_t)st->dur_ms;
        s->llm_timed++;
    }
    add_estimates(s, st);
    s->within.shared += trie_add(&s->trie, st->hash_ids, st->n_hash_ids);
    s->within.blocks += st->n_hash_ids;
}

static void add_tool_step(struct atr_stats *s, const struct atr_step *st)
{
    char name[64];
    s->tool_steps++;
    atr_stats_tool_name(st, name, sizeof name);
    tool_count(s, name);
    if (known(st->dur_ms)) {
        s->tool_ms += (uint64_t)st->dur_ms;
        s->tool_timed++;
    }
}

/* Leading run of the first llm step already seen in earlier traces; then
 * remembers this trace's first-step ids (all of them, while the set has
 * room) for the traces that follow. */
static void add_across(struct atr_stats *s, const struct atr_step *first)
{
    uint32_t k = 0;
    while (k < first->n_hash_ids && id_set_has(&s->seen, first->hash_ids[k]))
        k++;
    s->across.shared += k;
    s->across.blocks += first->n_hash_ids;
    for (uint32_t j = k; j < first->n_hash_ids; j++)
        id_set_add(&s->seen, first->hash_ids[j]);
}

/* The source's own token totals (meta recorded_*_tokens) vs the sum of
 * atr's estimates; a trace with an llm step lacking the estimate would
 * give a partial sum, so it is left out. */
static void add_trace_tokens(struct atr_stats *s, const struct atr_trace *t)
{
    uint64_t in = 0, out = 0;
    bool in_ok = true, out_ok = true;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *st = &t->steps[k];
        if (st->kind != ATR_STEP_LLM)
            continue;
        /* The estimator's figure, where a recorded or scaled one replaced it. */
        int64_t ein = known(st->estimated_input_tokens) ? st->estimated_input_tokens
                                                        : st->input_tokens;
        int64_t eout = known(st->estimated_output_tokens) ? st->estimated_output_tokens
                                                          : st->output_tokens;
        in_ok = in_ok && known(ein);
        out_ok = out_ok && known(eout);
        in += in_ok ? (uint64_t)ein : 0;
        out += out_ok ? (uint64_t)eout : 0;
    }
    int64_t rec;
    if (in_ok && atr_json_get_i64(t->meta, "recorded_input_tokens", &rec))
        add_pair(&s->trace_in, (int64_t)in, rec);
    if (out_ok && atr_json_get_i64(t->meta, "recorded_output_tokens", &rec))
        add_pair(&s->trace_out, (int64_t)out, rec);
}

static size_t count_llm_ids(const struct atr_trace *t)
{
    size_t n = 0;
    for (size_t k = 0; k < t->n_steps; k++)
        if (t->steps[k].kind == ATR_STEP_LLM)
            n += t->steps[k].n_hash_ids;
    return n;
}

/* The trace's sub-agents: distinct names (by a 53-bit hash, below
 * ID_EMPTY; two names colliding would count once) and their steps. */
static void add_agents(struct atr_stats *s, const struct atr_trace *t)
{
    if (s->agents.cap)
        memset(s->agents.slot, 0xff, s->agents.cap * sizeof *s->agents.slot);
    s->agents.n = 0;
    s->agents.max = SIZE_MAX;
    uint64_t steps = 0;
    for (size_t k = 0; k < t->n_steps; k++) {
        const char *a = t->steps[k].agent;
        if (!a)
            continue;
        steps++;
        id_set_add(&s->agents, XXH3_64bits(a, strlen(a)) & ((UINT64_C(1) << 53) - 1));
    }
    if (!steps)
        return;
    s->dag_traces++;
    s->sub_agents += s->agents.n;
    s->sub_agent_steps += steps;
}

void atr_stats_add(struct atr_stats *s, const struct atr_trace *t)
{
    if (!s->n_files)
        atr_stats_add_file(s, "-", t->source);
    struct atr_stats_file *f = &s->files[s->n_files - 1];
    f->traces++;
    f->steps += t->n_steps;
    s->traces++;
    s->steps += t->n_steps;
    trie_reset(&s->trie, count_llm_ids(t));
    uint64_t llm_before = s->llm_steps;
    const struct atr_step *first = NULL;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *st = &t->steps[k];
        if (st->kind == ATR_STEP_LLM) {
            first = first ? first : st;
            add_llm_step(s, st);
            add_origin(s, t->source, st);
        } else {
            add_tool_step(s, st);
        }
    }
    uint64_t turns = s->llm_steps - llm_before;
    atr_samples_add(&s->turns, (double)turns);
    s->turns_sum += turns;
    if (first)
        add_across(s, first);
    add_trace_tokens(s, t);
    add_agents(s, t);
}

/* ---- summary ---- */

static double ratio(double num, double den)
{
    return den > 0 ? num / den : NAN;
}

static struct atr_stats_dist dist_of(struct atr_samples *v, uint64_t sum)
{
    struct atr_stats_dist d = {v->n, NAN, NAN, NAN, NAN, (double)sum};
    if (!v->n)
        return d;
    d.mean = (double)sum / (double)v->n;
    d.p50 = atr_samples_percentile(v, 50);
    d.p95 = atr_samples_percentile(v, 95);
    d.max = atr_samples_percentile(v, 100);
    return d;
}

static struct atr_stats_tokerr tokerr_of(const struct sum_pair *p)
{
    struct atr_stats_tokerr e = {p->n, p->est, p->rec, NAN};
    if (p->n && p->rec)
        e.error_pct = ((double)p->est - (double)p->rec) / (double)p->rec * 100.0;
    return e;
}

static int cmp_tool(const void *a, const void *b)
{
    const struct atr_stats_tool *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* All names sorted by count, the first ATR_STATS_TOP_TOOLS kept, the rest
 * (and names past the cap) folded into "other". */
static size_t summarize_tools(struct atr_stats *s)
{
    const struct tool_map *m = &s->tools;
    free(s->top);
    s->top = xreallocarray(NULL, m->n + 1, sizeof *s->top);
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].name)
            s->top[n++] = (struct atr_stats_tool){m->slot[i].name, m->slot[i].count, 0};
    qsort(s->top, n, sizeof *s->top, cmp_tool);
    uint64_t other = m->overflow;
    for (size_t i = ATR_STATS_TOP_TOOLS; i < n; i++)
        other += s->top[i].count;
    if (n > ATR_STATS_TOP_TOOLS)
        n = ATR_STATS_TOP_TOOLS;
    if (other)
        s->top[n++] = (struct atr_stats_tool){"other", other, 0};
    for (size_t i = 0; i < n; i++)
        s->top[i].pct = ratio((double)s->top[i].count * 100.0, (double)s->tool_steps);
    return n;
}

const char *atr_stats_origin_name(enum atr_stats_origin o)
{
    static const char *const names[ATR_ORIGIN_COUNT] = {"recorded", "scaled", "estimated",
                                                        "unknown"};
    return o < ATR_ORIGIN_COUNT ? names[o] : "unknown";
}

void atr_stats_summarize(struct atr_stats *s, struct atr_stats_summary *o)
{
    memset(o, 0, sizeof *o);
    o->sources = s->sources;
    o->n_sources = s->n_sources;
    o->files = s->files;
    o->n_files = s->n_files;
    o->traces = s->traces;
    o->steps = s->steps;
    o->llm_steps = s->llm_steps;
    o->tool_steps = s->tool_steps;
    o->llm_pct = ratio((double)s->llm_steps * 100.0, (double)s->steps);
    o->tool_pct = ratio((double)s->tool_steps * 100.0, (double)s->steps);
    o->turns = dist_of(&s->turns, s->turns_sum);
    o->input_tokens = dist_of(&s->in_tok, s->in_sum);
    o->output_tokens = dist_of(&s->out_tok, s->out_sum);
    o->n_tools = summarize_tools(s);
    o->tools = s->top;
    o->tool_kinds = s->tools.n;
    o->within = s->within;
    o->within.ratio = ratio((double)s->within.shared, (double)s->within.blocks);
    o->across = s->across;
    o->across.ratio = ratio((double)s->across.shared, (double)s->across.blocks);
    o->across_approximate = s->seen.full;
    o->llm_ms = s->llm_ms;
    o->tool_ms = s->tool_ms;
    o->llm_timed = s->llm_timed;
    o->tool_timed = s->tool_timed;
    o->llm_tool_ratio = ratio((double)s->llm_ms, (double)s->tool_ms);
    o->step_input = tokerr_of(&s->step_in);
    o->step_output = tokerr_of(&s->step_out);
    o->trace_input = tokerr_of(&s->trace_in);
    o->trace_output = tokerr_of(&s->trace_out);
    o->dag_traces = s->dag_traces;
    o->sub_agents = s->sub_agents;
    o->sub_agent_steps = s->sub_agent_steps;
    o->sub_agent_pct = ratio((double)s->sub_agent_steps * 100.0, (double)s->steps);
}
