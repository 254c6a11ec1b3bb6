/* otlp.c - atr traces as OTLP/JSON GenAI spans (docs/otel.md, "Writing").
 *
 * Ids are hashes of the trace id (XXH3): the same trace gives the same
 * spans on every run. Nesting: step spans are children of their agent's
 * invoke_agent span; a sub-agent's span is a child of the span of the
 * agent whose step it waits for first (the one that spawned it). The
 * waits themselves are not OTLP data: atr's reader reads them back off
 * the nesting and the times, which gives the same parents whenever the
 * steps' times agree with them (docs/otel.md says when they do not). */
#include "trace/otlp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "json/writer.h"
#include "util/alloc.h"

/* An agent of the trace: its span's place and extent. */
struct agent {
    const char *name;          /* NULL: the main agent */
    size_t parent;             /* the agent it was spawned by (main: itself) */
    uint64_t start, end;       /* ns */
    char id[17];
};

struct otlp_w {
    const struct atr_trace *t;
    struct atr_jw *w;
    char trace_id[33];
    struct agent *agents;
    size_t n_agents;
    size_t *agent_of;          /* per step */
    uint64_t *start, *end;     /* per step, ns; end 0: no duration */
    uint64_t base;             /* the trace's start, ns since the epoch */
    bool root_agent;           /* write the main agent's span */
    const char *conversation;  /* meta.conversation_id or meta.session */
};

static void span_id(char out[17], const char *trace_id, uint64_t salt)
{
    snprintf(out, 17, "%016" PRIx64, XXH3_64bits_withSeed(trace_id, strlen(trace_id), salt));
}

static bool same_name(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static size_t agent_index(struct otlp_w *o, const char *name)
{
    for (size_t k = 0; k < o->n_agents; k++)
        if (same_name(o->agents[k].name, name))
            return k;
    return SIZE_MAX;
}

/* Step times in ns: the trace's start_ms on the epoch, plus t_ms; a step
 * without t_ms starts when the step before it ended. */
static void step_times(struct otlp_w *o)
{
    const struct atr_trace *t = o->t;
    uint64_t base = o->base;
    uint64_t prev_end = base;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        o->start[k] = s->t_ms != ATR_UNSET ? base + (uint64_t)s->t_ms * 1000000 : prev_end;
        o->end[k] = s->dur_ms != ATR_UNSET ? o->start[k] + (uint64_t)s->dur_ms * 1000000 : 0;
        prev_end = o->end[k] ? o->end[k] : o->start[k];
    }
}

static void agent_extend(struct agent *a, uint64_t start, uint64_t end)
{
    if (start < a->start)
        a->start = start;
    if ((end ? end : start) > a->end)
        a->end = end ? end : start;
}

/* The agents in order of their first step; the main one first, always. */
static void find_agents(struct otlp_w *o)
{
    const struct atr_trace *t = o->t;
    o->agents = xcalloc(t->n_steps + 1, sizeof *o->agents);
    o->agent_of = xcalloc(t->n_steps ? t->n_steps : 1, sizeof *o->agent_of);
    o->agents[0] = (struct agent){NULL, 0, UINT64_MAX, 0, ""};
    o->n_agents = 1;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        size_t a = agent_index(o, s->agent);
        if (a == SIZE_MAX) {
            uint32_t one;
            const uint32_t *p;
            size_t from = atr_step_parents(s, &one, &p) ? o->agent_of[p[0]] : 0;
            a = o->n_agents++;
            o->agents[a] = (struct agent){s->agent, from, UINT64_MAX, 0, ""};
        }
        o->agent_of[k] = a;
        agent_extend(&o->agents[a], o->start[k], o->end[k]);
    }
    /* the main agent's span starts with the trace, so t_ms read back are the same */
    o->agents[0].start = o->base;
    if (o->agents[0].end < o->agents[0].start)
        o->agents[0].end = o->agents[0].start;
    for (size_t a = 0; a < o->n_agents; a++)
        span_id(o->agents[a].id, t->trace_id ? t->trace_id : "", UINT64_C(1) << 40 | a);
    /* a spawned agent's span lies within its spawner's */
    for (size_t a = o->n_agents; a-- > 1;)
        agent_extend(&o->agents[o->agents[a].parent], o->agents[a].start, o->agents[a].end);
}

static void attr_str(struct atr_jw *w, const char *key, const char *v)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "key", key);
    atr_jw_key(w, "value");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "stringValue", v);
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

/* intValue as a decimal string: the OTLP/JSON mapping of int64. */
static void attr_int(struct atr_jw *w, const char *key, int64_t v)
{
    char num[24];
    if (v == ATR_UNSET)
        return;
    snprintf(num, sizeof num, "%" PRId64, v);
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "key", key);
    atr_jw_key(w, "value");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "intValue", num);
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

static void kv_ns(struct atr_jw *w, const char *key, uint64_t ns)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, ns);
    atr_jw_kv_str(w, key, num);
}

/* The fields every span has, up to "attributes":[ (left open). */
static void span_head(struct otlp_w *o, const char *id, const char *parent, const char *name,
                      int kind, uint64_t start, uint64_t end)
{
    struct atr_jw *w = o->w;
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "traceId", o->trace_id);
    atr_jw_kv_str(w, "spanId", id);
    if (parent)
        atr_jw_kv_str(w, "parentSpanId", parent);
    atr_jw_kv_str(w, "name", name);
    atr_jw_kv_int(w, "kind", kind);
    kv_ns(w, "startTimeUnixNano", start);
    if (end)
        kv_ns(w, "endTimeUnixNano", end);
    atr_jw_key(w, "attributes");
    atr_jw_array_begin(w);
}

static void put_agent(struct otlp_w *o, size_t a)
{
    const struct agent *g = &o->agents[a];
    const char *meta_agent = atr_json_get_str(o->t->meta, "agent", NULL);
    const char *name = g->name ? g->name : meta_agent && *meta_agent ? meta_agent : NULL;
    char span_name[256];
    snprintf(span_name, sizeof span_name, name ? "invoke_agent %s" : "invoke_agent", name);
    span_head(o, g->id, a ? o->agents[g->parent].id : NULL, span_name, 1, g->start, g->end);
    attr_str(o->w, "gen_ai.operation.name", "invoke_agent");
    if (name)
        attr_str(o->w, "gen_ai.agent.name", name);
    if (!a && o->t->trace_id)
        attr_str(o->w, "atr.trace_id", o->t->trace_id);
    atr_jw_array_end(o->w);
    atr_jw_object_end(o->w);
}

static void put_step(struct otlp_w *o, size_t k)
{
    const struct atr_step *s = &o->t->steps[k];
    const char *model = atr_json_get_str(o->t->meta, "model", NULL);
    char id[17], name[256];
    span_id(id, o->t->trace_id ? o->t->trace_id : "", k);
    bool llm = s->kind == ATR_STEP_LLM;
    if (llm)
        snprintf(name, sizeof name, model ? "chat %s" : "chat", model);
    else
        snprintf(name, sizeof name, "execute_tool %s", s->tool ? s->tool : "tool");
    size_t a = o->agent_of[k];
    span_head(o, id, a || o->root_agent ? o->agents[a].id : NULL, name, llm ? 3 : 1, o->start[k],
              o->end[k]);
    struct atr_jw *w = o->w;
    attr_str(w, "gen_ai.operation.name", llm ? "chat" : "execute_tool");
    if (!o->root_agent && o->t->trace_id)
        attr_str(w, "atr.trace_id", o->t->trace_id);
    if (llm && o->conversation)
        attr_str(w, "gen_ai.conversation.id", o->conversation);
    if (llm) {
        if (model)
            attr_str(w, "gen_ai.request.model", model);
        attr_int(w, "gen_ai.usage.input_tokens", s->input_tokens);
        attr_int(w, "gen_ai.usage.output_tokens", s->output_tokens);
        attr_int(w, "gen_ai.usage.cache_read.input_tokens", s->cached_tokens);
        attr_int(w, "gen_ai.request.max_tokens", s->max_tokens);
    } else {
        attr_str(w, "gen_ai.tool.name", s->tool ? s->tool : "tool");
        attr_int(w, "process.exit.code", s->exit_code);
    }
    atr_jw_array_end(w);
    if (!llm && s->exit_code != ATR_UNSET) {   /* OK = 1, ERROR = 2 */
        atr_jw_key(w, "status");
        atr_jw_object_begin(w);
        atr_jw_kv_int(w, "code", s->exit_code == 0 ? 1 : 2);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
}

static void put_resource(struct atr_jw *w, const struct atr_trace *t)
{
    const char *service = atr_json_get_str(t->meta, "service_name", NULL);
    atr_jw_key(w, "resource");
    atr_jw_object_begin(w);
    atr_jw_key(w, "attributes");
    atr_jw_array_begin(w);
    attr_str(w, "service.name", service ? service : "atr");
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

/* {"resourceSpans":[{"resource", "scopeSpans":[{"scope", "spans"}]}]} */
static void put_export(struct otlp_w *o)
{
    struct atr_jw *w = o->w;
    atr_jw_object_begin(w);
    atr_jw_key(w, "resourceSpans");
    atr_jw_array_begin(w);
    atr_jw_object_begin(w);
    put_resource(w, o->t);
    atr_jw_key(w, "scopeSpans");
    atr_jw_array_begin(w);
    atr_jw_object_begin(w);
    atr_jw_key(w, "scope");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "name", "atr");
    atr_jw_object_end(w);
    atr_jw_key(w, "spans");
    atr_jw_array_begin(w);
    for (size_t a = o->root_agent ? 0 : 1; a < o->n_agents; a++)
        put_agent(o, a);
    for (size_t k = 0; k < o->t->n_steps; k++)
        put_step(o, k);
    atr_jw_array_end(w);
    atr_jw_object_end(w);
    atr_jw_array_end(w);
    atr_jw_object_end(w);
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

int atr_trace_write_otlp(struct atr_buf *b, const struct atr_trace *t, uint64_t epoch_ns)
{
    struct atr_jw w;
    struct otlp_w o = {.t = t, .w = &w};
    o.base = epoch_ns + (uint64_t)(t->start_ms > 0 ? t->start_ms : 0) * 1000000;
    o.root_agent = t->n_steps != 1 || t->steps[0].agent || atr_json_get(t->meta, "agent");
    o.conversation = atr_json_get_str(t->meta, "conversation_id", NULL);
    if (!o.conversation)
        o.conversation = atr_json_get_str(t->meta, "session", NULL);
    const char *tid = t->trace_id ? t->trace_id : "";
    XXH128_hash_t h = XXH3_128bits(tid, strlen(tid));
    snprintf(o.trace_id, sizeof o.trace_id, "%016" PRIx64 "%016" PRIx64, h.high64, h.low64);
    size_t n = t->n_steps ? t->n_steps : 1;
    o.start = xcalloc(n, sizeof *o.start);
    o.end = xcalloc(n, sizeof *o.end);
    step_times(&o);
    find_agents(&o);
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    put_export(&o);
    atr_jw_newline(&w);
    free(o.start);
    free(o.end);
    free(o.agents);
    free(o.agent_of);
    return atr_jw_finish(&w);
}
