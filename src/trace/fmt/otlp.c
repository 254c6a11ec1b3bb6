/* otlp.c - OpenTelemetry traces as OTLP/JSON with the GenAI semantic
 * conventions (docs/otel.md): one atr trace per traceId.
 *
 * Input: one ExportTraceServiceRequest document ({"resourceSpans":[{
 * "resource":..., "scopeSpans":[{"scope":..., "spans":[...]}]}]}), JSON
 * lines of such documents (the collector's file exporter), JSON lines of
 * bare span objects, or a JSON array of either. The spans of one traceId
 * may be spread over the whole file, so every span is read first, kept as
 * a small record (what a step needs, never the JSON), and the traces are
 * built from the records: memory grows with the number of spans (about
 * 200 bytes each), never with the size of their JSON.
 *
 * Spans: chat / text_completion / generate_content (gen_ai.operation.name,
 * else the span name's first word, else OpenLLMetry's llm.request.type)
 * are llm steps; execute_tool spans are tool steps; invoke_agent and
 * create_agent spans name the agent of their descendants. An llm span
 * around another llm span (a framework's wrapper) is no step. Every other
 * span only passes ancestry on. No content attribute is read: prompts,
 * completions, messages, tool arguments and results never reach atr.
 *
 * The DAG (trace-format.md "DAGs"): within an agent, steps follow one
 * another in start order; a step that starts before every step of the
 * current group has ended joins that group, with the same parents (a
 * fork), and the first that starts after the whole group ended waits for
 * all of it (a join). A
 * sub-agent is an item of its parent agent's sequence: its first step
 * waits for what the invocation waited for, and waiting for the sub-agent
 * means waiting for its last group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "trace/convo.h"
#include "trace/reader.h"
#include "trace/tokens.h"
#include "util/alloc.h"

#define OTLP_MAX_SPANS (UINT32_C(1) << 24)

enum span_kind { SPAN_OTHER, SPAN_LLM, SPAN_TOOL, SPAN_AGENT };

/* One span, as much of it as a trace needs. Strings live in the state's
 * arena. Integers are -1 when absent. */
struct span {
    const char *trace_id, *span_id, *parent_id;   /* parent_id NULL: a root */
    const char *name;          /* agent: its name; tool: the tool; llm: the model */
    const char *conversation, *service;
    const char *atr_trace_id;  /* the trace this was written from (atr's writer) */
    uint64_t start, end;       /* ns since the epoch; end 0: absent */
    int64_t in, out, cached, max_tokens;
    int64_t exit_code;         /* process.exit.code; ATR_UNSET when absent */
    uint32_t line, col;        /* the span object's place in the file */
    uint32_t seq;              /* input order */
    enum span_kind kind;
    int8_t status;             /* OTLP status code: 0 unset, 1 ok, 2 error */
};

/* One trace's spans: spans[begin..end), its earliest start, first span. */
struct trace_range {
    size_t begin, end;
    uint64_t start;
    uint32_t seq;
};

struct otlp_state {
    struct atr_arena strings;
    struct span *spans;
    size_t n, cap;
    struct trace_range *traces;
    size_t n_traces, cap_traces, next;   /* next: the next trace to build */
    bool read;
    uint64_t first_start;      /* the file's earliest span start */
};

/* ---- attribute values ---- */

static const struct atr_json *any_value(const struct atr_json *v, const char *type)
{
    return atr_json_is(v, ATR_JSON_OBJECT) ? atr_json_get(v, type) : NULL;
}

/* An AnyValue (or a plain JSON value) as a string; NULL when it is none. */
static const char *value_str(const struct atr_json *v)
{
    if (atr_json_is(v, ATR_JSON_STRING))
        return v->u.str.s;
    const struct atr_json *s = any_value(v, "stringValue");
    return atr_json_is(s, ATR_JSON_STRING) ? s->u.str.s : NULL;
}

/* A decimal string of at most 18 digits: OTLP/JSON writes int64 so. */
static bool parse_count(const char *s, int64_t *out)
{
    int64_t v = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9' && n < 18; n++)
        v = v * 10 + (s[n] - '0');
    if (!n || s[n])
        return false;
    *out = v;
    return true;
}

/* A count: intValue as a string or a number, an integral doubleValue, a
 * decimal stringValue, or a plain JSON integer. */
static bool value_count(const struct atr_json *v, int64_t *out)
{
    const struct atr_json *x = any_value(v, "intValue");
    if (!x)
        x = any_value(v, "doubleValue");
    if (!x)
        x = any_value(v, "stringValue");
    if (!x)
        x = v;
    if (atr_json_is(x, ATR_JSON_STRING))
        return parse_count(x->u.str.s, out);
    if (atr_json_is(x, ATR_JSON_NUMBER) && x->u.num >= 0 && x->u.num < 1e15 &&
        x->u.num == (double)(int64_t)x->u.num) {
        *out = (int64_t)x->u.num;
        return true;
    }
    return false;
}

/* ---- reading spans ---- */

/* The attributes a step takes, by name; everything else (content first
 * of all) is passed over unread. Earlier names of one field win. */
enum attr_field { A_OP, A_MODEL, A_IN, A_OUT, A_CACHED, A_MAX, A_TOOL, A_AGENT, A_AGENT_ID,
                  A_CONVERSATION, A_REQUEST_TYPE, A_OI_KIND, A_AI_OP, A_TL_KIND, A_TL_NAME,
                  A_ATR_TRACE_ID, A_EXIT, A_N };
static const struct {
    const char *key;
    enum attr_field field;
} attr_names[] = {
    {"gen_ai.operation.name", A_OP},
    {"gen_ai.request.model", A_MODEL},
    {"gen_ai.response.model", A_MODEL},
    {"llm.request.model", A_MODEL},
    {"llm.model_name", A_MODEL},                      /* OpenInference */
    {"ai.model.id", A_MODEL},                         /* Vercel AI SDK */
    {"gen_ai.usage.input_tokens", A_IN},
    {"gen_ai.usage.prompt_tokens", A_IN},
    {"llm.usage.prompt_tokens", A_IN},
    {"llm.token_count.prompt", A_IN},
    {"ai.usage.inputTokens", A_IN},
    {"ai.usage.promptTokens", A_IN},
    {"gen_ai.usage.output_tokens", A_OUT},
    {"gen_ai.usage.completion_tokens", A_OUT},
    {"llm.usage.completion_tokens", A_OUT},
    {"llm.token_count.completion", A_OUT},
    {"ai.usage.outputTokens", A_OUT},
    {"ai.usage.completionTokens", A_OUT},
    {"gen_ai.usage.cache_read.input_tokens", A_CACHED},
    {"gen_ai.usage.cached_input_tokens", A_CACHED},
    {"gen_ai.usage.cache_read_input_tokens", A_CACHED},
    {"llm.token_count.prompt_details.cache_read", A_CACHED},
    {"gen_ai.request.max_tokens", A_MAX},
    {"ai.settings.maxOutputTokens", A_MAX},
    {"ai.settings.maxTokens", A_MAX},
    {"gen_ai.tool.name", A_TOOL},
    {"tool.name", A_TOOL},                            /* OpenInference */
    {"ai.toolCall.name", A_TOOL},
    {"gen_ai.agent.name", A_AGENT},
    {"gen_ai.agent.id", A_AGENT_ID},
    {"gen_ai.conversation.id", A_CONVERSATION},
    {"session.id", A_CONVERSATION},
    {"llm.request.type", A_REQUEST_TYPE},
    {"openinference.span.kind", A_OI_KIND},
    {"ai.operationId", A_AI_OP},
    {"traceloop.span.kind", A_TL_KIND},
    {"traceloop.entity.name", A_TL_NAME},
    {"atr.trace_id", A_ATR_TRACE_ID},   /* written by atr's OTLP writer (trace/otlp.h) */
    {"process.exit.code", A_EXIT},
};

struct attrs {
    const struct atr_json *v[A_N];
    unsigned rank[A_N];        /* the index in attr_names of what v holds */
};

static void attrs_put(struct attrs *a, const char *key, size_t len, const struct atr_json *v)
{
    for (unsigned k = 0; k < sizeof attr_names / sizeof *attr_names; k++)
        if (strlen(attr_names[k].key) == len && memcmp(attr_names[k].key, key, len) == 0) {
            enum attr_field f = attr_names[k].field;
            if (!a->v[f] || k < a->rank[f]) {
                a->v[f] = v;
                a->rank[f] = k;
            }
            return;
        }
}

/* "attributes": a list of {"key","value"} (OTLP) or a plain object. */
static int read_attrs(struct atr_reader *r, const struct atr_json *list, struct attrs *a)
{
    memset(a, 0, sizeof *a);
    if (!list || list->type == ATR_JSON_NULL)
        return 0;
    if (list->type == ATR_JSON_OBJECT) {
        for (const struct atr_json *m = list->u.kids.first; m; m = m->next)
            attrs_put(a, m->key, m->key_len, m);
        return 0;
    }
    if (list->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, list, "expected \"attributes\" to be an array of "
                                  "{\"key\",\"value\"}");
    for (const struct atr_json *e = list->u.kids.first; e; e = e->next) {
        const struct atr_json *k = atr_json_is(e, ATR_JSON_OBJECT) ? atr_json_get(e, "key") : NULL;
        if (!atr_json_is(k, ATR_JSON_STRING))
            return atr_reader_fail_at(r, e, "expected an attribute {\"key\":STRING,\"value\":...}");
        attrs_put(a, k->u.str.s, k->u.str.len, atr_json_get(e, "value"));
    }
    return 0;
}

static const char *keep_str(struct otlp_state *st, const char *s)
{
    return s ? atr_arena_strdup(&st->strings, s) : NULL;
}

/* An id: a non-empty string (hex in OTLP/JSON; kept as it is). */
static int read_id(struct atr_reader *r, struct otlp_state *st, const struct atr_json *span,
                   const char *key, bool required, const char **out)
{
    const struct atr_json *v = atr_json_get(span, key);
    *out = NULL;
    if (!v || v->type == ATR_JSON_NULL || (atr_json_is(v, ATR_JSON_STRING) && !v->u.str.len)) {
        if (required)
            return atr_reader_fail_at(r, v ? v : span, "expected \"%s\" (a non-empty string) "
                                      "in this span", key);
        return 0;
    }
    if (v->type != ATR_JSON_STRING)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be a string, found %s", key,
                                  atr_json_type_name(v->type));
    *out = keep_str(st, v->u.str.s);
    return 0;
}

/* startTimeUnixNano / endTimeUnixNano: a decimal string or a number. */
static int read_time(struct atr_reader *r, const struct atr_json *span, const char *key,
                     bool required, uint64_t *out)
{
    const struct atr_json *v = atr_json_get(span, key);
    *out = 0;
    if (!v || v->type == ATR_JSON_NULL) {
        if (required)
            return atr_reader_fail_at(r, span, "expected \"%s\" in this span", key);
        return 0;
    }
    uint64_t t = 0;
    size_t n = 0;
    if (v->type == ATR_JSON_STRING) {
        const char *s = v->u.str.s;
        for (; s[n] >= '0' && s[n] <= '9' && n < 19; n++)
            t = t * 10 + (uint64_t)(s[n] - '0');
        if (n && !s[n]) {
            *out = t;
            return 0;
        }
    } else if (v->type == ATR_JSON_NUMBER && v->u.num >= 0 && v->u.num < 9.2e18) {
        *out = v->is_int ? (uint64_t)v->i : (uint64_t)v->u.num;
        return 0;
    }
    return atr_reader_fail_at(r, v, "expected \"%s\" to be nanoseconds since the epoch (a "
                              "decimal string or a number)", key);
}

/* The first word of a span name ("chat gpt-4o" -> "chat"). */
static bool name_is(const char *name, const char *word)
{
    size_t n = strlen(word);
    return name && strncmp(name, word, n) == 0 && (name[n] == '\0' || name[n] == ' ');
}

/* The span's kind in the dialects that do not (or not yet) say
 * gen_ai.operation.name: OpenInference's span kind, the Vercel AI SDK's
 * operation id (the provider call doGenerate/doStream is the step; the
 * ai.generateText around it is a wrapper that repeats its usage) and
 * OpenLLMetry's decorators (@agent, @tool). */
static enum span_kind dialect_kind(const char *oi_kind, const char *ai_op, const char *tl_kind)
{
    if (oi_kind)
        return strcmp(oi_kind, "LLM") == 0     ? SPAN_LLM
               : strcmp(oi_kind, "TOOL") == 0  ? SPAN_TOOL
               : strcmp(oi_kind, "AGENT") == 0 ? SPAN_AGENT
                                                : SPAN_OTHER;
    if (ai_op) {
        size_t n = strlen(ai_op);
        bool call = (n > 11 && strcmp(ai_op + n - 11, ".doGenerate") == 0) ||
                    (n > 9 && strcmp(ai_op + n - 9, ".doStream") == 0);
        return call ? SPAN_LLM : strcmp(ai_op, "ai.toolCall") == 0 ? SPAN_TOOL : SPAN_OTHER;
    }
    if (tl_kind)
        return strcmp(tl_kind, "agent") == 0 ? SPAN_AGENT
               : strcmp(tl_kind, "tool") == 0 ? SPAN_TOOL
                                               : SPAN_OTHER;
    return SPAN_OTHER;
}

/* gen_ai.operation.name wins over every dialect; without it the
 * dialect's own kind, then the span name, then OpenLLMetry's request type. */
static enum span_kind kind_of(const struct attrs *a, const char *name)
{
    static const char *const llm_ops[] = {"chat", "text_completion", "generate_content"};
    const char *op = value_str(a->v[A_OP]);
    const char *request_type = value_str(a->v[A_REQUEST_TYPE]);
    if (!op) {
        enum span_kind d = dialect_kind(value_str(a->v[A_OI_KIND]), value_str(a->v[A_AI_OP]),
                                        value_str(a->v[A_TL_KIND]));
        if (d != SPAN_OTHER)
            return d;
    }
    const char *k = op ? op : name;
    for (size_t i = 0; i < 3; i++)
        if (name_is(k, llm_ops[i]))
            return SPAN_LLM;
    if (name_is(k, "execute_tool"))
        return SPAN_TOOL;
    if (name_is(k, "invoke_agent") || name_is(k, "create_agent"))
        return SPAN_AGENT;
    if (!op && request_type && (strcmp(request_type, "chat") == 0 ||
                                strcmp(request_type, "completion") == 0))
        return SPAN_LLM;   /* OpenLLMetry: "openai.chat" with llm.request.type */
    return SPAN_OTHER;
}

/* A token count attribute: absent -1; present and no count is an error. */
static int attr_count(struct atr_reader *r, const struct attrs *a, enum attr_field f,
                      int64_t *out)
{
    *out = -1;
    if (!a->v[f])
        return 0;
    if (!value_count(a->v[f], out))
        return atr_reader_fail_at(r, a->v[f], "expected \"%s\" to be a non-negative integer",
                                  attr_names[a->rank[f]].key);
    return 0;
}

/* process.exit.code: a signed integer (a tool killed by a timeout may
 * say -1). */
static int read_exit(struct atr_reader *r, const struct attrs *a, int64_t *out)
{
    const struct atr_json *v = a->v[A_EXIT];
    *out = ATR_UNSET;
    if (!v)
        return 0;
    const struct atr_json *x = any_value(v, "intValue");
    const char *str = atr_json_is(x, ATR_JSON_STRING) ? x->u.str.s : NULL;
    int64_t n;
    if (str && parse_count(str[0] == '-' ? str + 1 : str, &n)) {
        *out = str[0] == '-' ? -n : n;
        return 0;
    }
    if (x && atr_json_is(x, ATR_JSON_NUMBER) && x->is_int) {
        *out = x->i;
        return 0;
    }
    return atr_reader_fail_at(r, v, "expected \"process.exit.code\" to be an integer");
}

/* What names the span's step: the agent, the tool or the model. */
static const char *span_label(const struct span *s, const struct attrs *a, const char *name)
{
    const char *v = NULL;
    if (s->kind == SPAN_AGENT) {
        v = value_str(a->v[A_AGENT]);
        if (!v)
            v = value_str(a->v[A_TL_NAME]);
        if (!v && name && strchr(name, ' '))
            v = strchr(name, ' ') + 1;
        if (!v)
            v = value_str(a->v[A_AGENT_ID]);
    } else if (s->kind == SPAN_TOOL) {
        v = value_str(a->v[A_TOOL]);
        if (!v)
            v = value_str(a->v[A_TL_NAME]);
        if (!v && name && strchr(name, ' '))
            v = strchr(name, ' ') + 1;
    } else if (s->kind == SPAN_LLM) {
        v = value_str(a->v[A_MODEL]);
    }
    return v && *v ? v : NULL;
}

/* status.code: 1 ok, 2 error, else unset; a number or, as the protobuf
 * JSON mapping also allows (OpenInference exports it so), the enum's name. */
static int8_t status_code(const struct atr_json *status)
{
    const struct atr_json *c = atr_json_is(status, ATR_JSON_OBJECT) ? atr_json_get(status, "code")
                                                                     : NULL;
    int64_t code = 0;
    if (atr_json_is(c, ATR_JSON_STRING))
        code = strcmp(c->u.str.s, "STATUS_CODE_OK") == 0      ? 1
               : strcmp(c->u.str.s, "STATUS_CODE_ERROR") == 0 ? 2
                                                              : 0;
    else
        atr_json_get_i64(status, "code", &code);
    return (int8_t)(code == 1 || code == 2 ? code : 0);
}

static struct span *new_span(struct atr_reader *r, struct otlp_state *st, const struct atr_json *j)
{
    if (st->n == OTLP_MAX_SPANS) {
        atr_reader_fail_at(r, j, "more than %u spans in one file", OTLP_MAX_SPANS);
        return NULL;
    }
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 1024;
        st->spans = xrealloc(st->spans, st->cap * sizeof *st->spans);
    }
    struct span *s = &st->spans[st->n];
    memset(s, 0, sizeof *s);
    s->seq = (uint32_t)st->n++;
    /* the file position, as atr_reader_fail_at would give it */
    s->line = (uint32_t)(r->base_line + j->line - 1);
    s->col = (uint32_t)(j->line == 1 ? r->base_col + j->col - 1 : j->col);
    return s;
}

static int read_span(struct atr_reader *r, struct otlp_state *st, const struct atr_json *j,
                     const char *service)
{
    if (!atr_json_is(j, ATR_JSON_OBJECT))
        return atr_reader_fail_at(r, j, "expected a span object, found %s",
                                  atr_json_type_name(j->type));
    struct span *s = new_span(r, st, j);
    struct attrs a;
    const char *name = NULL;
    if (!s || read_id(r, st, j, "traceId", true, &s->trace_id) < 0 ||
        read_id(r, st, j, "spanId", true, &s->span_id) < 0 ||
        read_id(r, st, j, "parentSpanId", false, &s->parent_id) < 0 ||
        atr_reader_opt_str(r, j, "name", &name) < 0 ||
        read_time(r, j, "startTimeUnixNano", true, &s->start) < 0 ||
        read_time(r, j, "endTimeUnixNano", false, &s->end) < 0 ||
        read_attrs(r, atr_json_get(j, "attributes"), &a) < 0)
        return -1;
    if (s->end && s->end < s->start)
        return atr_reader_fail_at(r, atr_json_get(j, "endTimeUnixNano"),
                                  "span ends before it starts");
    s->kind = kind_of(&a, name);
    s->name = keep_str(st, span_label(s, &a, name));
    s->conversation = keep_str(st, value_str(a.v[A_CONVERSATION]));
    s->atr_trace_id = keep_str(st, value_str(a.v[A_ATR_TRACE_ID]));
    s->service = service;
    s->status = status_code(atr_json_get(j, "status"));
    if (read_exit(r, &a, &s->exit_code) < 0 || attr_count(r, &a, A_IN, &s->in) < 0 || attr_count(r, &a, A_OUT, &s->out) < 0 ||
        attr_count(r, &a, A_CACHED, &s->cached) < 0 || attr_count(r, &a, A_MAX, &s->max_tokens) < 0)
        return -1;
    if (st->n == 1 || s->start < st->first_start)   /* 0 is a time like any other */
        st->first_start = s->start;
    return 0;
}

/* The resource's service.name, for meta. */
static const char *service_name(struct otlp_state *st, const struct atr_json *rs)
{
    const struct atr_json *res = atr_json_get(rs, "resource");
    const struct atr_json *list = atr_json_is(res, ATR_JSON_OBJECT) ? atr_json_get(res, "attributes")
                                                                     : NULL;
    if (!atr_json_is(list, ATR_JSON_ARRAY))
        return NULL;
    for (const struct atr_json *e = list->u.kids.first; e; e = e->next) {
        const struct atr_json *k = atr_json_is(e, ATR_JSON_OBJECT) ? atr_json_get(e, "key") : NULL;
        if (atr_json_is(k, ATR_JSON_STRING) && strcmp(k->u.str.s, "service.name") == 0)
            return keep_str(st, value_str(atr_json_get(e, "value")));
    }
    return NULL;
}

static int req_array(struct atr_reader *r, const struct atr_json *obj, const char *key,
                     const struct atr_json **out)
{
    if (!atr_json_is(obj, ATR_JSON_OBJECT))
        return atr_reader_fail_at(r, obj, "expected an object with \"%s\"", key);
    if (atr_reader_opt(r, obj, key, ATR_JSON_ARRAY, out) < 0)
        return -1;
    return 0;
}

/* {"resourceSpans":[{"resource", "scopeSpans":[{"scope", "spans":[...]}]}]} */
static int read_document(struct atr_reader *r, struct otlp_state *st, const struct atr_json *doc)
{
    const struct atr_json *rss, *sss, *spans;
    if (req_array(r, doc, "resourceSpans", &rss) < 0)
        return -1;
    for (const struct atr_json *rs = rss ? rss->u.kids.first : NULL; rs; rs = rs->next) {
        if (req_array(r, rs, "scopeSpans", &sss) < 0)
            return -1;
        const char *service = service_name(st, rs);
        for (const struct atr_json *ss = sss ? sss->u.kids.first : NULL; ss; ss = ss->next) {
            if (req_array(r, ss, "spans", &spans) < 0)
                return -1;
            for (const struct atr_json *sp = spans ? spans->u.kids.first : NULL; sp; sp = sp->next)
                if (read_span(r, st, sp, service) < 0)
                    return -1;
        }
    }
    return 0;
}

/* A row: an export document, or one bare span. */
static int read_row(struct atr_reader *r, struct otlp_state *st, const struct atr_json *row)
{
    if (atr_json_is(row, ATR_JSON_OBJECT) && !atr_json_get(row, "resourceSpans") &&
        atr_json_get(row, "spanId"))
        return read_span(r, st, row, NULL);
    if (!atr_json_is(row, ATR_JSON_OBJECT) || !atr_json_get(row, "resourceSpans"))
        return atr_reader_fail_at(r, row, "expected an OTLP export {\"resourceSpans\":[...]} "
                                  "or a span {\"traceId\",\"spanId\",...}");
    return read_document(r, st, row);
}

static int read_rows(struct atr_reader *r, struct otlp_state *st)
{
    enum atr_json_shape shape;
    struct atr_json *row;
    int rc;
    if (atr_reader_json_shape(r, "an OTLP/JSON export ('{' or '[')", &shape) < 0)
        return -1;
    if (shape == ATR_SHAPE_DOCUMENT)
        return atr_reader_parse_all(r, &r->scratch, &row) < 0 ? -1 : read_row(r, st, row);
    if (shape == ATR_SHAPE_ARRAY && atr_reader_array_begin(r) < 0)
        return -1;
    for (;;) {
        atr_arena_clear(&r->scratch);   /* one document's tree at a time */
        rc = shape == ATR_SHAPE_ARRAY ? atr_reader_array_next(r, &r->scratch, &row)
                                      : atr_reader_json_line(r, &r->scratch, &row);
        if (rc <= 0)
            return rc;
        if (read_row(r, st, row) < 0)
            return -1;
    }
}

/* A trace's spans together, in input order. */
static int by_trace(const void *pa, const void *pb)
{
    const struct span *a = pa, *b = pb;
    int c = strcmp(a->trace_id, b->trace_id);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* Traces in arrival order: their earliest start, then their first span. */
static int by_arrival(const void *pa, const void *pb)
{
    const struct trace_range *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int read_all(struct atr_reader *r, struct otlp_state *st)
{
    st->read = true;
    if (read_rows(r, st) < 0)
        return -1;
    if (!st->n)
        return 0;
    qsort(st->spans, st->n, sizeof *st->spans, by_trace);
    for (size_t k = 0; k < st->n; k++) {
        struct span *s = &st->spans[k];
        if (!k || strcmp(s->trace_id, st->spans[k - 1].trace_id) != 0) {
            if (st->n_traces == st->cap_traces) {
                st->cap_traces = st->cap_traces ? st->cap_traces * 2 : 64;
                st->traces = xrealloc(st->traces, st->cap_traces * sizeof *st->traces);
            }
            st->traces[st->n_traces++] = (struct trace_range){k, k, s->start, s->seq};
        }
        struct trace_range *g = &st->traces[st->n_traces - 1];
        g->end = k + 1;
        g->start = s->start < g->start ? s->start : g->start;
        g->seq = s->seq < g->seq ? s->seq : g->seq;
    }
    qsort(st->traces, st->n_traces, sizeof *st->traces, by_arrival);
    return 0;
}

/* ---- building a trace from its spans ---- */

/* An agent's place in the DAG: the group of items (steps, or sub-agents
 * as -(context + 1)) that run side by side now, what they wait for, and
 * its conversation so far (the last llm step's ids). */
struct ctx {
    const char *name;          /* NULL: the main agent */
    int64_t *items;
    size_t n_items, cap_items;
    uint32_t *parents;         /* in the trace arena; never NULL */
    uint32_t n_parents;
    uint64_t group_end;
    const uint64_t *ids;
    uint32_t n_ids;
    int64_t in;                /* the last llm step's input; -1: none yet */
};

struct build {
    struct atr_reader *r;
    struct atr_trace *t;
    struct span *sp;
    size_t n;
    uint32_t *by_id, *order, *depth, *stamp, gen;
    int32_t *parent, *ctx_of, *agent_ctx;
    uint64_t *cstart;          /* start, or a parent's when that is later */
    uint8_t *mark;             /* walk state, then: bit 2 = has an llm descendant */
    struct ctx *ctx;
    size_t n_ctx, cap_ctx;
    int64_t *stack;
    size_t n_stack, cap_stack;
    uint32_t *tmp;
    size_t n_tmp, cap_tmp;
    const char **names;        /* agent names taken: open addressing */
    size_t cap_names;
    size_t orphans;
    uint64_t trace_start;
    bool have_main;            /* the main agent's span was seen */
};

static int fail_span(struct build *b, size_t i, const char *msg)
{
    return atr_reader_fail(b->r, b->sp[i].line, b->sp[i].col, "span \"%s\" %s",
                           b->sp[i].span_id, msg);
}

static int by_span_id(const void *pa, const void *pb, void *ctx)
{
    const struct span *s = ((const struct build *)ctx)->sp;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = strcmp(s[a].span_id, s[b].span_id);
    return c ? c : (a > b) - (a < b);
}

/* Start order; a parent before its children (depth), then input order. */
static int by_start(const void *pa, const void *pb, void *ctx)
{
    const struct build *b = ctx;
    uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
    if (b->cstart[x] != b->cstart[y])
        return b->cstart[x] < b->cstart[y] ? -1 : 1;
    if (b->depth[x] != b->depth[y])
        return b->depth[x] < b->depth[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static int32_t find_span(const struct build *b, const char *id)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(b->sp[b->by_id[mid]].span_id, id);
        if (c == 0)
            return (int32_t)b->by_id[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Parents by spanId; a repeated spanId is an error, a parent that never
 * appears makes a root (a partial export), counted. */
static int link_parents(struct build *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->by_id[i] = (uint32_t)i;
    qsort_r(b->by_id, b->n, sizeof *b->by_id, by_span_id, b);
    for (size_t k = 1; k < b->n; k++)
        if (strcmp(b->sp[b->by_id[k]].span_id, b->sp[b->by_id[k - 1]].span_id) == 0) {
            char msg[96];
            snprintf(msg, sizeof msg, "repeats the span at line %u", b->sp[b->by_id[k - 1]].line);
            return fail_span(b, b->by_id[k], msg);
        }
    for (size_t i = 0; i < b->n; i++) {
        const char *p = b->sp[i].parent_id;
        b->parent[i] = p ? find_span(b, p) : -1;
        if (p && b->parent[i] < 0)
            b->orphans++;
    }
    return 0;
}

static void push(struct build *b, int64_t v)
{
    if (b->n_stack == b->cap_stack) {
        b->cap_stack = b->cap_stack ? b->cap_stack * 2 : 64;
        b->stack = xrealloc(b->stack, b->cap_stack * sizeof *b->stack);
    }
    b->stack[b->n_stack++] = v;
}

/* Depth and cstart of every span, walking up to a known ancestor: a walk
 * that meets itself is a parentSpanId cycle. mark: 0 new, 1 on the walk,
 * 2 done. */
static int walk_depths(struct build *b)
{
    for (size_t i = 0; i < b->n; i++) {
        int64_t x = (int64_t)i;
        b->n_stack = 0;
        while (x >= 0 && b->mark[x] != 2) {
            if (b->mark[x] == 1)
                return fail_span(b, (size_t)x, "is its own ancestor (a parentSpanId cycle)");
            b->mark[x] = 1;
            push(b, x);
            x = b->parent[x];
        }
        while (b->n_stack) {
            int64_t y = b->stack[--b->n_stack];
            int32_t p = b->parent[y];
            b->depth[y] = p < 0 ? 0 : b->depth[p] + 1;
            b->cstart[y] = p < 0 || b->sp[y].start > b->cstart[p] ? b->sp[y].start : b->cstart[p];
            b->mark[y] = 2;
        }
    }
    return 0;
}

/* Bit 4 of mark: the span has an llm span below it. An llm span so marked
 * wraps the real call (a framework's span around the client's). */
static void mark_wrappers(struct build *b)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->sp[i].kind != SPAN_LLM)
            continue;
        for (int32_t p = b->parent[i]; p >= 0 && !(b->mark[p] & 4); p = b->parent[p])
            b->mark[p] |= 4;
    }
}

/* A unique agent name: the span's (or "agent"), then "#2", "#3", ... */
static bool name_taken(struct build *b, const char *name, bool take)
{
    if (b->cap_names == 0) {
        b->cap_names = 64;
        b->names = xcalloc(b->cap_names, sizeof *b->names);
    }
    size_t mask = b->cap_names - 1, j = XXH3_64bits(name, strlen(name)) & mask;
    for (; b->names[j]; j = (j + 1) & mask)
        if (strcmp(b->names[j], name) == 0)
            return true;
    if (take)
        b->names[j] = name;
    return false;
}

static void names_grow(struct build *b)
{
    const char **old = b->names;
    size_t cap = b->cap_names;
    b->cap_names *= 2;
    b->names = xcalloc(b->cap_names, sizeof *b->names);
    for (size_t k = 0; k < cap; k++)
        if (old[k])
            name_taken(b, old[k], true);
    free(old);
}

static const char *agent_name(struct build *b, const char *want)
{
    struct atr_arena *a = &b->t->arena;
    const char *base = want ? want : "agent", *name = atr_arena_strdup(a, base);
    for (unsigned k = 2; name_taken(b, name, false); k++)
        name = atr_arena_printf(a, "%s#%u", base, k);
    if (b->n_ctx * 2 >= b->cap_names)
        names_grow(b);
    name_taken(b, name, true);
    return name;
}

static int32_t new_ctx(struct build *b, const char *name)
{
    if (b->n_ctx == b->cap_ctx) {
        b->cap_ctx = b->cap_ctx ? b->cap_ctx * 2 : 8;
        b->ctx = xrealloc(b->ctx, b->cap_ctx * sizeof *b->ctx);
    }
    struct ctx *c = &b->ctx[b->n_ctx];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->parents = atr_arena_alloc(&b->t->arena, sizeof *c->parents);
    c->in = -1;
    return (int32_t)b->n_ctx++;
}

static void tmp_add(struct build *b, uint32_t step)
{
    if (b->stamp[step] == b->gen)
        return;               /* named once */
    b->stamp[step] = b->gen;
    if (b->n_tmp == b->cap_tmp) {
        b->cap_tmp = b->cap_tmp ? b->cap_tmp * 2 : 64;
        b->tmp = xrealloc(b->tmp, b->cap_tmp * sizeof *b->tmp);
    }
    b->tmp[b->n_tmp++] = step;
}

/* The steps a group's items stand for: a step itself, a sub-agent its last
 * group (or, without steps, what it started from). Into the trace arena. */
static uint32_t *expand(struct build *b, const int64_t *items, size_t n, uint32_t *count)
{
    b->gen++;
    b->n_tmp = b->n_stack = 0;
    for (size_t k = n; k-- > 0;)
        push(b, items[k]);
    while (b->n_stack) {
        int64_t x = b->stack[--b->n_stack];
        if (x >= 0) {
            tmp_add(b, (uint32_t)x);
            continue;
        }
        const struct ctx *c = &b->ctx[-x - 1];
        if (c->n_items)
            for (size_t k = c->n_items; k-- > 0;)
                push(b, c->items[k]);
        else
            for (uint32_t k = c->n_parents; k-- > 0;)
                push(b, c->parents[k]);
    }
    uint32_t *out = atr_arena_alloc(&b->t->arena, (b->n_tmp ? b->n_tmp : 1) * sizeof *out);
    memcpy(out, b->tmp, b->n_tmp * sizeof *out);
    *count = (uint32_t)b->n_tmp;
    return out;
}

/* Item x joins context c's sequence; *parents: what it waits for. */
static void place(struct build *b, int32_t c, int64_t x, uint64_t start, uint64_t end,
                  uint32_t **parents, uint32_t *n)
{
    struct ctx *k = &b->ctx[c];
    if (k->n_items && start >= k->group_end) {      /* the group ended: join it */
        k->parents = expand(b, k->items, k->n_items, &k->n_parents);
        k = &b->ctx[c];
        k->n_items = 0;
        k->group_end = 0;
    }
    *parents = k->parents;
    *n = k->n_parents;
    if (k->n_items == k->cap_items) {
        k->cap_items = k->cap_items ? k->cap_items * 2 : 4;
        k->items = xrealloc(k->items, k->cap_items * sizeof *k->items);
    }
    k->items[k->n_items++] = x;
    if (end > k->group_end)
        k->group_end = end;
}

static int64_t ms_since(uint64_t t, uint64_t since)
{
    return (int64_t)((t - since) / 1000000);
}

/* The ids of llm step s of context c: the conversation goes on from the
 * agent's previous call (its full blocks, when the prompt grew), the rest
 * unique to the step: sharing a count-only source does not show is never
 * claimed. */
static void fit_ids(struct build *b, struct ctx *c, struct atr_step *s)
{
    struct atr_trace *t = b->t;
    uint32_t want = atr_fit_ids_count((uint64_t)s->input_tokens, t->block_size);
    uint32_t keep = 0;
    if (c->in >= 0 && s->input_tokens >= c->in) {
        keep = (uint32_t)((uint64_t)c->in / t->block_size);
        keep = keep < c->n_ids ? keep : c->n_ids;
    }
    uint64_t *ids = atr_arena_alloc(&t->arena, (want ? want : 1) * sizeof *ids);
    atr_fit_ids_fill(ids, want, c->ids, keep, t->trace_id, s->i);
    s->hash_ids = ids;
    s->n_hash_ids = want;
    c->ids = ids;
    c->n_ids = want;
    c->in = s->input_tokens;
}

static int llm_fields(struct build *b, size_t i, struct atr_step *s, struct ctx *c)
{
    const struct span *sp = &b->sp[i];
    if (sp->in > ATR_FIT_MAX_TOKENS)
        return fail_span(b, i, "has more input tokens than any prompt (at most 16777216)");
    if (sp->in >= 0)
        s->input_tokens = sp->in;
    if (sp->out >= 0)
        s->output_tokens = sp->out;
    if (sp->in >= 0 || sp->out >= 0)
        s->tokens_from = ATR_TOKENS_RECORDED;
    if (sp->cached >= 0)
        s->cached_tokens = sp->cached;
    if (sp->max_tokens >= 0)
        s->max_tokens = sp->max_tokens;
    if (sp->in >= 0)
        fit_ids(b, c, s);
    if (sp->name && !atr_json_get(b->t->meta, "model"))
        atr_trace_meta_set_str(b->t, "model", sp->name);
    return 0;
}

/* Span i as a step of context c (an llm or tool span that is no wrapper). */
static int add_step(struct build *b, size_t i, int32_t c)
{
    const struct span *sp = &b->sp[i];
    uint32_t *parents, np;
    uint64_t end = sp->end ? sp->end : sp->start;
    place(b, c, (int64_t)b->t->n_steps, b->cstart[i], end, &parents, &np);
    struct atr_step *s = atr_trace_add_step(b->t, sp->kind == SPAN_LLM ? ATR_STEP_LLM
                                                                         : ATR_STEP_TOOL);
    s->parents = parents;
    s->n_parents = np;
    s->agent = b->ctx[c].name;
    s->t_ms = ms_since(sp->start, b->trace_start);
    if (sp->end)
        s->dur_ms = (int64_t)((sp->end - sp->start) / 1000000);
    if (sp->kind == SPAN_TOOL) {
        s->tool = sp->name ? atr_arena_strdup(&b->t->arena, sp->name) : "tool";
        if (sp->exit_code != ATR_UNSET)
            s->exit_code = sp->exit_code;
        else if (sp->status)
            s->exit_code = sp->status == 2 ? 1 : 0;
        return 0;
    }
    return llm_fields(b, i, s, &b->ctx[c]);
}

/* Agent span i: the first outside any agent is the main agent (its steps
 * carry no name; the name goes to meta.agent), every other a sub-agent,
 * an item of the context it runs in. */
static void add_agent(struct build *b, size_t i, int32_t c)
{
    const struct span *sp = &b->sp[i];
    if (c == 0 && !b->ctx[0].n_items && !b->have_main) {
        b->agent_ctx[i] = 0;
        b->have_main = true;
        if (sp->name)
            atr_trace_meta_set_str(b->t, "agent", sp->name);
        return;
    }
    int32_t k = new_ctx(b, agent_name(b, sp->name));
    uint32_t *parents, np;
    place(b, c, -(int64_t)k - 1, b->cstart[i], sp->end ? sp->end : sp->start, &parents, &np);
    b->ctx[k].parents = parents;
    b->ctx[k].n_parents = np;
    b->agent_ctx[i] = k;
}

static int walk_spans(struct build *b)
{
    for (size_t k = 0; k < b->n; k++)
        b->order[k] = (uint32_t)k;
    qsort_r(b->order, b->n, sizeof *b->order, by_start, b);
    for (size_t k = 0; k < b->n; k++) {
        uint32_t i = b->order[k];
        int32_t p = b->parent[i];
        int32_t c = p < 0 ? 0 : b->sp[p].kind == SPAN_AGENT ? b->agent_ctx[p] : b->ctx_of[p];
        b->ctx_of[i] = c;
        b->agent_ctx[i] = c;
        if (b->sp[i].kind == SPAN_AGENT)
            add_agent(b, i, c);
        else if (b->sp[i].kind == SPAN_TOOL || (b->sp[i].kind == SPAN_LLM && !(b->mark[i] & 4)))
            if (add_step(b, i, c) < 0)
                return -1;
    }
    return 0;
}

static void trace_meta(struct build *b, long moved)
{
    struct atr_trace *t = b->t;
    const struct span *first = &b->sp[0];
    atr_trace_meta_set_str(t, "otlp_trace_id", first->trace_id);
    for (size_t i = 0; i < b->n; i++)
        if (b->sp[i].service) {
            atr_trace_meta_set_str(t, "service_name", b->sp[i].service);
            break;
        }
    for (size_t i = 0; i < b->n; i++)
        if (b->sp[i].conversation) {
            atr_trace_meta_set_str(t, "conversation_id", b->sp[i].conversation);
            break;
        }
    atr_trace_meta_set_i64(t, "otlp_spans", (int64_t)b->n);
    if (b->orphans)
        atr_trace_meta_set_i64(t, "otlp_orphan_spans", (int64_t)b->orphans);
    if (moved > 0)
        atr_trace_meta_set_i64(t, "otlp_clock_repairs", moved);
}

static void build_release(struct build *b)
{
    free(b->by_id);
    free(b->order);
    free(b->depth);
    free(b->stamp);
    free(b->parent);
    free(b->ctx_of);
    free(b->agent_ctx);
    free(b->cstart);
    free(b->mark);
    for (size_t k = 0; k < b->n_ctx; k++)
        free(b->ctx[k].items);
    free(b->ctx);
    free(b->stack);
    free(b->tmp);
    free(b->names);
}

static int build_trace(struct atr_reader *r, struct otlp_state *st, struct atr_trace *t,
                       struct span *sp, size_t n)
{
    struct build b = {.r = r, .t = t, .sp = sp, .n = n};
    b.by_id = xcalloc(n, sizeof *b.by_id);
    b.order = xcalloc(n, sizeof *b.order);
    b.depth = xcalloc(n, sizeof *b.depth);
    b.stamp = xcalloc(n, sizeof *b.stamp);
    b.parent = xcalloc(n, sizeof *b.parent);
    b.ctx_of = xcalloc(n, sizeof *b.ctx_of);
    b.agent_ctx = xcalloc(n, sizeof *b.agent_ctx);
    b.cstart = xcalloc(n, sizeof *b.cstart);
    b.mark = xcalloc(n, sizeof *b.mark);
    b.trace_start = sp[0].start;
    for (size_t i = 1; i < n; i++)
        b.trace_start = sp[i].start < b.trace_start ? sp[i].start : b.trace_start;
    t->trace_id = atr_arena_printf(&t->arena, "otlp/%s", sp[0].trace_id);
    for (size_t i = 0; i < n; i++)
        if (sp[i].atr_trace_id) {     /* written by atr: its own name back */
            t->trace_id = atr_arena_strdup(&t->arena, sp[i].atr_trace_id);
            break;
        }
    t->start_ms = ms_since(b.trace_start, st->first_start);
    int rc = link_parents(&b);
    if (rc == 0)
        rc = walk_depths(&b);
    if (rc == 0) {
        mark_wrappers(&b);
        new_ctx(&b, NULL);
        rc = walk_spans(&b);
    }
    if (rc == 0) {
        uint32_t cycle;
        trace_meta(&b, atr_trace_order_steps(t, &cycle));  /* no cycle: parents come first */
    }
    build_release(&b);
    return rc;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    if (!r->state)
        r->state = xcalloc(1, sizeof(struct otlp_state));
    struct otlp_state *st = r->state;
    if (!st->read && read_all(r, st) < 0)
        return -1;
    if (st->next >= st->n_traces) {
        if (!st->n && !r->ntraces)
            return atr_reader_fail(r, 1, 1, "expected at least one span");
        return 0;
    }
    const struct trace_range *g = &st->traces[st->next++];
    return build_trace(r, st, t, st->spans + g->begin, g->end - g->begin) < 0 ? -1 : 1;
}

static void free_state(void *state)
{
    struct otlp_state *st = state;
    atr_arena_release(&st->strings);
    free(st->spans);
    free(st->traces);
    free(st);
}

/* An export document names resourceSpans near its start; a line of bare
 * spans names traceId and spanId. */
static int sniff(const char *head, size_t len, const char *name)
{
    size_t i;
    (void)name;
    char c = atr_sniff_first(head, len, &i);
    if (c != '{' && c != '[')
        return 0;
    size_t n = len - i < 4096 ? len - i : 4096;
    if (memmem(head + i, n, "\"resourceSpans\"", 15))
        return 95;
    if (memmem(head + i, n, "\"traceId\"", 9) && memmem(head + i, n, "\"spanId\"", 8) &&
        memmem(head + i, n, "\"startTimeUnixNano\"", 19))
        return 70;
    return 0;
}

const struct atr_format atr_format_otlp = {
    "otlp", "OpenTelemetry OTLP/JSON traces with GenAI spans (one trace per traceId)",
    sniff, next, free_state,
};
