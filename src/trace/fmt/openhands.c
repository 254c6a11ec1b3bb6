/* openhands.c - OpenHands (ex-OpenDevin) event streams as atr traces.
 *
 * Three shapes: a JSON array of events (one trace: the runtime replay
 * fixtures), a JSON array of records whose "trajectory" or "history" holds
 * the events (the feedback dataset: one trace per record), and eval output
 * JSON lines ({instance_id, history, metrics, ...}, one trace per line).
 * Events are walked in order and rendered as the chat the agent saw: one llm
 * step per model response, one tool step per runnable action, timed from
 * the event timestamps.
 *
 * Delegation (AgentDelegateAction, "action": "delegate"): the delegate's
 * events follow in the same stream until its AgentDelegateObservation
 * ("observation": "delegate"); its steps name it as their agent and build
 * a conversation of their own, and the parent's conversation goes on from
 * the delegate action as if the delegate's events were not there (what
 * OpenHands' StateTracker._init_history shows each agent). OpenHands runs
 * one delegate at a time and the parent waits for it, so the edges are
 * those of a chain: the delegate's first step waits for the step that
 * delegated, the parent's next step for the delegate's last (docs/trace-
 * format.md, "OpenHands delegation"). */
#include <string.h>

#include "trace/convo.h"
#include "trace/fmt/chat-render.h"
#include "trace/reader.h"
#include "util/date.h"

/* Tool steps waiting for their observation. Actions whose observation never
 * comes would pile up, so the oldest is dropped past this many. */
#define OH_MAX_PENDING 64
/* Delegates open at once (a delegate that delegates, ...). OpenHands sets
 * no limit; a stream deeper than this is refused rather than kept. */
#define OH_MAX_DEPTH 16
/* Bytes of a delegate's agent class kept in its name: the name is written
 * on every step of the delegate. */
#define OH_AGENT_NAME_MAX 64

/* The main agent, or a delegate open in the stream. */
struct oh_agent {
    struct atr_convo convo;     /* the prompt as this agent sees it */
    const char *name;           /* step "agent": NULL for the main agent */
    const char *resp_id;        /* model_response id of its last llm step */
    const char *state;          /* a delegate's last agent_state */
    const char *call_id;        /* the delegate action's tool_call_id, or NULL */
    int64_t action_id;          /* the delegate action's "id", or ATR_UNSET */
    int64_t last;               /* the step its next step waits for; -1: none */
    bool browsing;              /* a (Visual)BrowsingAgent: see browsing_reply */
    bool sent, said;            /* its last action sent the user a message / was a message */
    bool acted;                 /* it took an action */
};

struct oh_pending {
    int64_t action_id;          /* the action event's "id", or ATR_UNSET */
    size_t step;                /* index of its tool step */
    int64_t ts;                 /* its absolute time (ms), or ATR_UNSET */
};

/* The walk over one trace's events. Strings kept across events live in the
 * trace arena: the events themselves may be freed one by one. */
struct oh_walk {
    struct atr_reader *r;
    struct atr_trace *t;
    struct atr_arena *tmp;              /* per-event renderings */
    struct oh_agent agents[OH_MAX_DEPTH + 1]; /* [0] the main agent, then open delegates */
    size_t depth;                       /* agents[depth] is the one acting now */
    int64_t t0, prev_ts;                /* absolute ms, ATR_UNSET until seen */
    const char *cwd;                    /* shell directory the last run reported */
    const char *state;                  /* the main agent's last agent_state */
    const struct atr_json *latencies;   /* eval output: metrics.response_latencies */
    const struct atr_json *token_usages; /* eval output: metrics.token_usages */
    int64_t acc_in, acc_out;            /* llm_metrics' running totals so far */
    struct oh_pending pend[OH_MAX_PENDING];
    size_t npend;
    int64_t rec_in, rec_out;            /* sums of the recorded usage */
    /* Delegations: closed, closed in state error, observations with none
     * open, and (at the end) still open; named in meta when not 0. */
    int64_t delegates, delegate_errors, unmatched, unclosed;
    int64_t opened;                     /* delegates seen: numbers their names */
    bool have_usage, finished;
};

/* ---- time ---- */

static bool take_num(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

static bool take_ch(const char **p, const char *set)
{
    if (!**p || !strchr(set, **p))
        return false;
    (*p)++;
    return true;
}

/* Milliseconds of ".fraction" (any number of digits); false if none. */
static bool take_frac(const char **p, int *ms)
{
    int kept = 0, v = 0;
    bool any = false;
    for (; **p >= '0' && **p <= '9'; (*p)++, any = true)
        if (kept < 3) {
            v = v * 10 + (**p - '0');
            kept++;
        }
    for (; kept < 3; kept++)
        v *= 10;
    *ms = v;
    return any;
}

/* Zone suffix "Z", "+HH:MM", "+HHMM" or none, as minutes east of UTC. */
static bool take_zone(const char **p, int *minutes)
{
    *minutes = 0;
    if (**p == 'Z') {
        (*p)++;
        return true;
    }
    if (**p != '+' && **p != '-')
        return true;
    int sign = **p == '-' ? -1 : 1, hh, mm;
    (*p)++;
    if (!take_num(p, 2, &hh))
        return false;
    if (**p == ':')
        (*p)++;
    if (!take_num(p, 2, &mm))
        return false;
    *minutes = sign * (hh * 60 + mm);
    return true;
}

/* "YYYY-MM-DD[T ]HH:MM:SS[.frac][zone]" as ms since the epoch. OpenHands
 * writes local time without a zone: only differences are meaningful. */
static bool parse_time(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac = 0, zone;
    const char *p = s;
    if (!take_num(&p, 4, &y) || !take_ch(&p, "-") || !take_num(&p, 2, &mo) ||
        !take_ch(&p, "-") || !take_num(&p, 2, &d) || !take_ch(&p, "T ") ||
        !take_num(&p, 2, &h) || !take_ch(&p, ":") || !take_num(&p, 2, &mi) ||
        !take_ch(&p, ":") || !take_num(&p, 2, &sec))
        return false;
    if (*p == '.' && (p++, !take_frac(&p, &frac)))
        return false;
    if (!take_zone(&p, &zone) || *p)
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    int64_t secs = ((atr_days_from_civil(y, mo, d) * 24 + h) * 60 + mi - zone) * 60 + sec;
    *ms = secs * 1000 + frac;
    return true;
}

/* ---- small JSON helpers ---- */

static const struct atr_json *first_kid(const struct atr_json *arr)
{
    return atr_json_is(arr, ATR_JSON_ARRAY) ? arr->u.kids.first : NULL;
}

static bool str_is(const char *s, const char *lit)
{
    return s && strcmp(s, lit) == 0;
}

static const char *keep(struct oh_walk *w, const char *s)
{
    return s ? atr_arena_strdup(&w->t->arena, s) : NULL;
}

static bool meta_has(const struct atr_trace *t, const char *key)
{
    return atr_json_get(t->meta, key) != NULL;
}

/* ---- the walk ---- */

static struct oh_agent *cur(struct oh_walk *w)
{
    return &w->agents[w->depth];
}

/* An agent with an empty conversation whose first step waits for step
 * last (-1: none). */
static void agent_init(struct oh_walk *w, struct oh_agent *a, const char *name, int64_t last)
{
    memset(a, 0, sizeof *a);
    atr_convo_init(&a->convo, w->t, w->r->opts.keep_content);
    a->convo.mark_origin = true;
    a->name = name;
    a->action_id = ATR_UNSET;
    a->last = last;
}

/* Step s (just added) is the acting agent's: it carries the agent's name
 * and waits for the agent's previous step (for a delegate's first, the
 * step that delegated). With one agent acting at a time that is always
 * the step before it, which absent parents already say; parents are
 * written only if a stream ever made it otherwise. */
static struct atr_step *own_step(struct oh_walk *w, struct atr_step *s)
{
    struct oh_agent *a = cur(w);
    s->agent = a->name;
    if (a->last != (int64_t)s->i - 1) {
        s->parents = atr_arena_alloc(&w->t->arena, sizeof *s->parents);
        s->n_parents = 0;
        if (a->last >= 0)
            s->parents[s->n_parents++] = (uint32_t)a->last;
    }
    a->last = s->i;
    return s;
}

static void walk_init(struct oh_walk *w, struct atr_reader *r, struct atr_trace *t,
                      struct atr_arena *tmp)
{
    memset(w, 0, sizeof *w);
    w->r = r;
    w->t = t;
    w->tmp = tmp;
    w->t0 = w->prev_ts = ATR_UNSET;
    agent_init(w, &w->agents[0], NULL, -1);
}

static void meta_count(struct atr_trace *t, const char *key, int64_t n)
{
    if (n)
        atr_trace_meta_set_i64(t, key, n);
}

/* Releases the conversations; on success records the totals and outcome.
 * A delegate still open at the end (the run stopped while it worked) just
 * ends there: its steps are kept, and counted. */
static void walk_finish(struct oh_walk *w, int rc)
{
    w->unclosed += (int64_t)w->depth;
    for (size_t k = 0; k <= w->depth; k++)
        atr_convo_release(&w->agents[k].convo);
    if (rc < 0)
        return;
    atr_trace_fit_ids(w->t);
    meta_count(w->t, "openhands_delegates", w->delegates);
    meta_count(w->t, "openhands_delegate_errors", w->delegate_errors);
    meta_count(w->t, "openhands_open_delegates", w->unclosed);
    meta_count(w->t, "openhands_unmatched_delegate_observations", w->unmatched);
    if (w->have_usage) {
        atr_trace_meta_set_i64(w->t, "recorded_input_tokens", w->rec_in);
        atr_trace_meta_set_i64(w->t, "recorded_output_tokens", w->rec_out);
    }
    if (w->finished)
        atr_trace_meta_set_str(w->t, "outcome", "finished");
    else if (w->state)
        atr_trace_meta_set_str(w->t, "outcome", w->state);
}

static int64_t rel_ms(const struct oh_walk *w, int64_t ts)
{
    return ts == ATR_UNSET || ts < w->t0 ? ATR_UNSET : ts - w->t0;
}

/* The event's absolute time (ms) in *ts, ATR_UNSET when it has none. */
static int event_time(struct oh_walk *w, const struct atr_json *ev, int64_t *ts)
{
    const char *s = NULL;
    *ts = ATR_UNSET;
    if (atr_reader_opt_str(w->r, ev, "timestamp", &s) < 0)
        return -1;
    if (!s)
        return 0;
    if (!parse_time(s, ts))
        return atr_reader_fail_at(w->r, atr_json_get(ev, "timestamp"),
                                  "expected \"timestamp\" as ISO-8601 date and time");
    if (w->t0 == ATR_UNSET)
        w->t0 = *ts;
    return 0;
}

static void add_text(struct oh_walk *w, const char *role, const struct atr_json *text)
{
    if (atr_json_is(text, ATR_JSON_STRING) && text->u.str.len)
        atr_convo_add(&cur(w)->convo, role, text->u.str.s, text->u.str.len);
}

/* System prompt (newer OpenHands records it): its text, then the tool schemas
 * the request carried. */
static void add_system(struct oh_walk *w, const struct atr_json *args)
{
    add_text(w, "system", atr_json_get(args, "content"));
    const struct atr_json *tools = atr_json_get(args, "tools");
    if (!atr_json_is(tools, ATR_JSON_ARRAY))
        return;
    struct atr_buf b = ATR_BUF_INIT;
    b.max = w->r->opts.max_line;
    if (atr_json_write_value(&b, tools) == 0 && b.len)
        atr_convo_add(&cur(w)->convo, "system", b.data, b.len);
    atr_buf_release(&b);
}

/* The user's text: "args.content" (or old "extras.content"), else the
 * event's own "content" or "message". */
static void add_user(struct oh_walk *w, const struct atr_json *ev, const struct atr_json *args)
{
    const struct atr_json *text = atr_json_get(args, "content");
    if (!atr_json_is(text, ATR_JSON_STRING))
        text = atr_json_get(ev, "content");
    if (!atr_json_is(text, ATR_JSON_STRING))
        text = atr_json_get(ev, "message");
    add_text(w, "user", text);
}

/* ---- model calls ---- */

static const struct atr_json *response_message(const struct atr_json *resp)
{
    return atr_json_get(first_kid(atr_json_get(resp, "choices")), "message");
}

/* The model's reply as the next prompt will carry it: content plus one
 * "name(arguments)" line per tool call. NULL without a model_response. */
static const char *render_response(struct oh_walk *w, const struct atr_json *resp, size_t *len)
{
    const struct atr_json *msg = response_message(resp);
    if (!atr_json_is(msg, ATR_JSON_OBJECT))
        return NULL;
    return atr_chat_render(w->tmp, atr_json_get(msg, "content"),
                           atr_json_get(msg, "tool_calls"), len);
}

/* The argument that says what an action does, for replies rendered from the
 * action itself (sources without model_response). */
static const char *action_subject(const struct atr_json *args)
{
    static const char *const keys[] = {"command", "code", "url", "browser_actions", "path",
                                       "content", NULL};
    for (size_t i = 0; keys[i]; i++) {
        const char *s = atr_json_get_str(args, keys[i], NULL);
        if (s)
            return s;
    }
    return "";
}

/* A reply rebuilt from the action when no model_response was recorded (old
 * OpenDevin, agent messages): thought, then "action(subject)". */
static const char *render_action(struct oh_walk *w, const struct atr_json *ev, const char *action,
                                 const struct atr_json *args, size_t *len)
{
    const char *thought = atr_json_get_str(args, "thought", NULL);
    const char *text;
    if (str_is(action, "message")) {
        text = atr_json_get_str(args, "content", NULL);
        if (!text)
            text = atr_json_get_str(ev, "message", NULL);
        text = atr_arena_strdup(w->tmp, text ? text : "");
    } else if (str_is(action, "finish")) {
        text = thought ? thought : atr_json_get_str(args, "final_thought", NULL);
        text = atr_arena_strdup(w->tmp, text ? text : "");
    } else {
        text = atr_arena_printf(w->tmp, "%s%s%s(%s)", thought ? thought : "",
                                thought && *thought ? "\n" : "", action, action_subject(args));
    }
    *len = strlen(text);
    return text;
}

/* Latency (ms) recorded for response rid in eval output metrics, or ATR_UNSET. */
static int64_t response_latency(const struct oh_walk *w, const char *rid)
{
    if (!rid)
        return ATR_UNSET;
    for (const struct atr_json *l = first_kid(w->latencies); l; l = l->next) {
        double secs;
        if (str_is(atr_json_get_str(l, "response_id", NULL), rid) &&
            atr_json_get_num(l, "latency", &secs) && secs >= 0 && secs < 1e9)
            return (int64_t)(secs * 1000.0 + 0.5);
    }
    return ATR_UNSET;
}

/* The call ran from the previous event (what the agent last saw) until its
 * action was stamped, unless the eval output recorded its latency. */
static void time_llm(struct oh_walk *w, struct atr_step *s, const char *rid, int64_t ts)
{
    if (ts == ATR_UNSET)
        return;
    int64_t lat = response_latency(w, rid);
    if (lat != ATR_UNSET) {
        int64_t start = ts - lat < w->t0 ? w->t0 : ts - lat;
        s->t_ms = rel_ms(w, start);
        s->dur_ms = ts - start;
    } else if (w->prev_ts != ATR_UNSET && ts >= w->prev_ts) {
        s->t_ms = rel_ms(w, w->prev_ts);
        s->dur_ms = ts - w->prev_ts;
    }
}

/* The per-call entry of a token_usages list (OpenHands' Metrics: one
 * TokenUsage per completion, named by its response_id), or NULL. */
static const struct atr_json *usage_of(const struct atr_json *list, const char *rid)
{
    for (const struct atr_json *u = first_kid(list); rid && u; u = u->next)
        if (str_is(atr_json_get_str(u, "response_id", NULL), rid))
            return u;
    return NULL;
}

static void get_counts(const struct atr_json *u, int64_t *in, int64_t *out)
{
    if (!atr_json_get_i64(u, "prompt_tokens", in) || *in < 0)
        *in = -1;
    if (!atr_json_get_i64(u, "completion_tokens", out) || *out < 0)
        *out = -1;
}

/* This call's counts from the action's llm_metrics: its own token_usages
 * entry, else the growth of accumulated_token_usage since the previous
 * call (the snapshot is a running total, not this call's figure). */
static void metrics_counts(struct oh_walk *w, const struct atr_json *lm, const char *rid,
                           int64_t *in, int64_t *out)
{
    const struct atr_json *u = usage_of(atr_json_get(lm, "token_usages"), rid);
    if (!u)
        u = usage_of(w->token_usages, rid);
    if (u) {
        get_counts(u, in, out);
        return;
    }
    int64_t acc_in, acc_out;
    get_counts(atr_json_get(lm, "accumulated_token_usage"), &acc_in, &acc_out);
    *in = acc_in >= w->acc_in && w->acc_in >= 0 ? acc_in - w->acc_in : -1;
    *out = acc_out >= w->acc_out && w->acc_out >= 0 ? acc_out - w->acc_out : -1;
    w->acc_in = acc_in >= 0 ? acc_in : w->acc_in;
    w->acc_out = acc_out >= 0 ? acc_out : w->acc_out;
}

/* The call's recorded usage: model_response.usage, else llm_metrics. */
static void record_usage(struct oh_walk *w, struct atr_step *s, const struct atr_json *ev,
                         const struct atr_json *resp, const char *rid)
{
    int64_t in, out, m_in = -1, m_out = -1;
    get_counts(atr_json_get(resp, "usage"), &in, &out);
    const struct atr_json *lm = atr_json_get(ev, "llm_metrics");
    if (lm || w->token_usages)
        metrics_counts(w, lm, rid, &m_in, &m_out);
    in = in >= 0 ? in : m_in;
    out = out >= 0 ? out : m_out;
    atr_step_set_counts(s, in, out, ATR_TOKENS_RECORDED);
    if (in >= 0)
        w->rec_in += in;
    if (out >= 0)
        w->rec_out += out;
    w->have_usage |= in >= 0 || out >= 0;
    const char *model = atr_json_get_str(resp, "model", NULL);
    if (model && *model && !meta_has(w->t, "model"))
        atr_trace_meta_set_str(w->t, "model", model);
}

/* One llm step per model response: several actions of one response (parallel
 * tool calls) share its id and are one call. */
static int model_call(struct oh_walk *w, const struct atr_json *ev, const char *action,
                      const struct atr_json *args, int64_t ts)
{
    const struct atr_json *tcm, *resp = NULL;
    if (atr_reader_opt(w->r, ev, "tool_call_metadata", ATR_JSON_OBJECT, &tcm) < 0 ||
        atr_reader_opt(w->r, tcm, "model_response", ATR_JSON_OBJECT, &resp) < 0)
        return -1;
    const char *rid = atr_json_get_str(resp, "id", NULL);
    struct oh_agent *a = cur(w);
    if (rid && str_is(a->resp_id, rid))
        return 0;
    size_t len = 0;
    const char *reply = render_response(w, resp, &len);
    if (!reply)
        reply = render_action(w, ev, action, args, &len);
    struct atr_step *s = own_step(w, atr_convo_llm(&a->convo, reply, len));
    time_llm(w, s, rid, ts);
    record_usage(w, s, ev, resp, rid);
    atr_convo_add(&a->convo, "assistant", reply, len);
    a->resp_id = rid ? keep(w, rid) : NULL;
    return 0;
}

/* ---- tool steps ---- */

/* The arguments of the model's tool call that produced this action (parsed
 * into the per-event arena), or NULL. */
static const struct atr_json *call_args(struct oh_walk *w, const struct atr_json *ev)
{
    const struct atr_json *tcm = atr_json_get(ev, "tool_call_metadata");
    const char *id = atr_json_get_str(tcm, "tool_call_id", NULL);
    const struct atr_json *msg = response_message(atr_json_get(tcm, "model_response"));
    for (const struct atr_json *c = first_kid(atr_json_get(msg, "tool_calls")); id && c;
         c = c->next) {
        const char *name;
        const struct atr_json *arguments;
        if (str_is(atr_json_get_str(c, "id", NULL), id) &&
            atr_chat_tool_call(c, &name, &arguments))
            return atr_chat_object(w->tmp, arguments, w->r->opts.max_depth);
    }
    return NULL;
}

/* The editor sub-command of an edit: "command" in newer args, else the one
 * in the model's tool call that produced this action, else "edit". */
static const char *edit_command(const struct atr_json *args, const struct atr_json *call)
{
    const char *cmd = atr_json_get_str(args, "command", NULL);
    if (!cmd || !*cmd)
        cmd = atr_json_get_str(call, "command", NULL);
    return cmd && *cmd ? cmd : "edit";
}

/* "click('a51')" -> "click": the first call of a BrowserGym action string. */
static const char *browser_verb(struct oh_walk *w, const char *actions)
{
    if (!actions)
        return "interactive";
    actions += strspn(actions, " \t\r\n");
    size_t n = strcspn(actions, "( \t\r\n");
    return n ? atr_arena_strndup(&w->t->arena, actions, n) : "interactive";
}

static struct atr_step *new_tool(struct oh_walk *w, const char *tool)
{
    struct atr_step *s = own_step(w, atr_trace_add_step(w->t, ATR_STEP_TOOL));
    s->tool = tool;
    return s;
}

/* Actions that come from the model but run nothing. */
static bool runs_nothing(const char *action)
{
    static const char *const names[] = {"message", "finish", "think", "reject", "delegate",
                                        "condensation_request", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(action, names[i]) == 0)
            return true;
    return false;
}

static struct atr_step *run_step(struct oh_walk *w, const struct atr_json *args)
{
    const struct atr_json *in = atr_json_get(args, "is_input");
    bool is_input = atr_json_is(in, ATR_JSON_TRUE) ||
                    str_is(atr_json_get_str(args, "is_input", NULL), "true");
    /* Input typed into a running process (C-c, answers) is no command line. */
    struct atr_step *s = new_tool(w, is_input ? "bash_input" : "bash");
    s->command = keep(w, atr_json_get_str(args, "command", NULL));
    if (!s->command)
        s->command = "";
    s->cwd = w->cwd;
    return s;
}

static struct atr_step *browse_step(struct oh_walk *w, const struct atr_json *args)
{
    const char *actions = atr_json_get_str(args, "browser_actions", NULL);
    struct atr_step *s = new_tool(w, "browser");
    s->action = browser_verb(w, actions);
    if (actions) {
        s->extra = atr_json_new(&w->t->arena, ATR_JSON_OBJECT);
        atr_json_append(&w->t->arena, s->extra, "browser_actions",
                        atr_json_new_str(&w->t->arena, actions, strlen(actions)));
    }
    return s;
}

/* Sizes come from the model's tool call (it holds file_text, old_str,
 * new_str) or the action's args; content itself is never kept. */
static struct atr_step *editor_step(struct oh_walk *w, const char *action,
                                    const struct atr_json *args, const struct atr_json *call)
{
    struct atr_step *s = new_tool(w, "editor");
    s->action = action;
    s->path = keep(w, atr_json_get_str(args, "path", NULL));
    s->cwd = w->cwd;
    /* The LLM-based edit of older OpenHands rewrites the file from "content". */
    if (str_is(action, "edit") && atr_json_get_str(args, "content", NULL))
        s->action = "overwrite";
    atr_editor_sizes(s, call);
    if (s->bytes == ATR_UNSET)
        atr_editor_sizes(s, args);
    return s;
}

/* The tool step an agent action runs; NULL for those that run nothing. */
static struct atr_step *tool_step(struct oh_walk *w, const struct atr_json *ev,
                                  const char *action, const struct atr_json *args)
{
    struct atr_step *s;
    if (str_is(action, "run"))
        return run_step(w, args);
    if (str_is(action, "run_ipython")) {
        s = new_tool(w, "ipython");
        s->command = keep(w, atr_json_get_str(args, "code", NULL));
        s->cwd = w->cwd;
        return s;
    }
    if (str_is(action, "read"))
        return editor_step(w, "view", args, NULL);
    if (str_is(action, "write"))
        return editor_step(w, "create", args, NULL);
    if (str_is(action, "edit")) {
        const struct atr_json *call = call_args(w, ev);
        return editor_step(w, keep(w, edit_command(args, call)), args, call);
    }
    if (str_is(action, "browse")) {
        s = new_tool(w, "browser");
        s->action = "goto";
        s->url = keep(w, atr_json_get_str(args, "url", NULL));
        return s;
    }
    if (str_is(action, "browse_interactive"))
        return browse_step(w, args);
    if (runs_nothing(action))
        return NULL;
    /* MCP calls are named by the tool they call; others keep the action's name. */
    const char *mcp = str_is(action, "call_tool_mcp") ? atr_json_get_str(args, "name", NULL) : NULL;
    return new_tool(w, keep(w, mcp && *mcp ? mcp : action));
}

static void remember(struct oh_walk *w, int64_t action_id, size_t step, int64_t ts)
{
    if (w->npend == OH_MAX_PENDING) {
        memmove(&w->pend[0], &w->pend[1], (OH_MAX_PENDING - 1) * sizeof w->pend[0]);
        w->npend--;
    }
    w->pend[w->npend++] = (struct oh_pending){action_id, step, ts};
}

/* Takes the step the observation answers: the one whose action id is cause,
 * or without a cause (old OpenDevin) the oldest waiting one. */
static bool take_pending(struct oh_walk *w, int64_t cause, struct oh_pending *out)
{
    for (size_t i = 0; i < w->npend; i++) {
        if (cause != ATR_UNSET && w->pend[i].action_id != cause)
            continue;
        *out = w->pend[i];
        memmove(&w->pend[i], &w->pend[i + 1], (w->npend - i - 1) * sizeof w->pend[0]);
        w->npend--;
        return true;
    }
    return false;
}

/* Duration, exit code and the shell's new directory from the observation. */
static void close_step(struct oh_walk *w, const struct oh_pending *p,
                       const struct atr_json *extras, int64_t ts)
{
    struct atr_step *s = &w->t->steps[p->step];
    if (p->ts != ATR_UNSET && ts != ATR_UNSET && ts >= p->ts)
        s->dur_ms = ts - p->ts;
    const struct atr_json *md = atr_json_get(extras, "metadata");
    int64_t code;
    if (atr_json_get_i64(md, "exit_code", &code) || atr_json_get_i64(extras, "exit_code", &code))
        s->exit_code = code;
    const char *wd = atr_json_get_str(md, "working_dir", NULL);
    if (wd && *wd && !str_is(w->cwd, wd))
        w->cwd = keep(w, wd);
}

/* ---- delegation ---- */

/* A delegate's name: its agent class (cut to OH_AGENT_NAME_MAX bytes on a
 * character boundary), "/", the delegation's number in the stream, so a
 * class delegated to twice gives two agents and names never collide. */
static const char *delegate_name(struct oh_walk *w, const char *agent)
{
    size_t n = agent ? strlen(agent) : 0;
    if (!n) {
        agent = "delegate";
        n = strlen(agent);
    }
    if (n > OH_AGENT_NAME_MAX) {
        n = OH_AGENT_NAME_MAX;
        while (n && ((unsigned char)agent[n] & 0xC0) == 0x80)
            n--;
    }
    return atr_arena_printf(&w->t->arena, "%.*s/%lld", (int)n, agent, (long long)++w->opened);
}

static const char *call_id_of(const struct atr_json *ev)
{
    return atr_json_get_str(atr_json_get(ev, "tool_call_metadata"), "tool_call_id", NULL);
}

/* A delegate action (its llm step already taken): the events up to its
 * observation are the delegate's, whose first step waits for the step
 * that delegated. */
static int open_delegate(struct oh_walk *w, const struct atr_json *ev, int64_t id,
                         const struct atr_json *args)
{
    const char *agent = NULL;
    if (atr_reader_opt_str(w->r, args, "agent", &agent) < 0)
        return -1;
    if (w->depth == OH_MAX_DEPTH)
        return atr_reader_fail_at(w->r, ev, "delegation nested deeper than %d agents (a "
                                  "delegate action inside %d open delegates)",
                                  OH_MAX_DEPTH, OH_MAX_DEPTH);
    int64_t spawn = cur(w)->last;
    struct oh_agent *a = &w->agents[++w->depth];
    agent_init(w, a, delegate_name(w, agent), spawn);
    a->action_id = id;
    a->call_id = keep(w, call_id_of(ev));
    a->browsing = str_is(agent, "BrowsingAgent") || str_is(agent, "VisualBrowsingAgent");
    return 0;
}

/* The open delegate a delegate observation answers: the one whose action
 * is its cause or has its tool_call_id (end_delegate copies it), else, as
 * OpenHands pairs them, the most recent one; 0 when none is open. */
static size_t delegate_of(const struct oh_walk *w, int64_t cause, const char *call_id)
{
    for (size_t k = w->depth; k > 0; k--) {
        const struct oh_agent *a = &w->agents[k];
        if ((cause != ATR_UNSET && a->action_id == cause) || (call_id && str_is(a->call_id, call_id)))
            return k;
    }
    return w->depth;
}

/* What the parent reads of the result (ConversationMemory): the outputs'
 * "content" when the delegate left one, else the observation's text. */
static void add_result(struct oh_walk *w, const struct atr_json *ev, const struct atr_json *extras)
{
    const struct atr_json *text = atr_json_get(atr_json_get(extras, "outputs"), "content");
    if (!atr_json_is(text, ATR_JSON_STRING))
        text = atr_json_get(ev, "content");
    add_text(w, "tool", text);
}

/* A delegate observation joins delegate k back into its parent: the
 * parent's next step waits for the delegate's last one. Delegates opened
 * inside k and still open never returned: they end here too. With none
 * open the observation is read as a plain result (OpenHands warns and
 * goes on), and counted. */
static void close_delegate(struct oh_walk *w, const struct atr_json *ev, int64_t cause,
                           const struct atr_json *extras)
{
    size_t k = delegate_of(w, cause, call_id_of(ev));
    if (k == 0) {
        w->unmatched++;
        add_result(w, ev, extras);
        return;
    }
    int64_t last = cur(w)->last;     /* the stream's latest step: only the top one acts */
    w->unclosed += (int64_t)(w->depth - k);
    w->delegates++;
    if (str_is(w->agents[k].state, "error"))
        w->delegate_errors++;
    for (size_t j = k; j <= w->depth; j++)
        atr_convo_release(&w->agents[j].convo);
    w->depth = k - 1;
    cur(w)->last = last;
    add_result(w, ev, extras);
}

/* (Visual)BrowsingAgent, the delegate of CodeActAgent's
 * delegate_to_browsing_agent, answers two steps without its model
 * (openhands/agenthub/browsing_agent/browsing_agent.py, step(), since
 * 2024-07): after a browser action that sent the user a message it
 * returns that message, and after its own message it finishes; in its
 * benchmark mode its first action is a "noop()" to read the page. None is
 * a model call, so none is an llm step. */
static bool browsing_reply(const struct oh_walk *w, const struct atr_json *ev, const char *action,
                           const struct atr_json *args)
{
    const struct oh_agent *a = &w->agents[w->depth];
    if (!a->browsing || atr_json_get(ev, "tool_call_metadata"))
        return false;
    bool noop = str_is(action, "browse_interactive") &&
                str_is(atr_json_get_str(args, "browser_actions", NULL), "noop()");
    return (str_is(action, "message") && a->sent) || (str_is(action, "finish") && a->said) ||
           (noop && !a->acted);
}

static void note_action(struct oh_walk *w, const char *action, const struct atr_json *args)
{
    struct oh_agent *a = cur(w);
    const char *msg = atr_json_get_str(args, "browsergym_send_msg_to_user", NULL);
    a->sent = str_is(action, "browse_interactive") && msg && *msg;
    a->said = str_is(action, "message");
    a->acted = true;
}

/* ---- events ---- */

/* Actions of source "agent" that the runtime, not the model, produced. */
static bool from_runtime(const char *action)
{
    static const char *const names[] = {"change_agent_state", "recall", "system", "initialize",
                                        "condensation", "null", NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(action, names[i]) == 0)
            return true;
    return false;
}

/* Action arguments: "args" (OpenHands) or "extras" (OpenDevin, 2024). */
static int action_args(struct atr_reader *r, const struct atr_json *ev, const struct atr_json **args)
{
    if (atr_reader_opt(r, ev, "args", ATR_JSON_OBJECT, args) < 0)
        return -1;
    if (!*args && atr_reader_opt(r, ev, "extras", ATR_JSON_OBJECT, args) < 0)
        return -1;
    return 0;
}

static int walk_action(struct oh_walk *w, const struct atr_json *ev, const char *action,
                       int64_t ts)
{
    const struct atr_json *args;
    const char *source = NULL;
    int64_t id = ATR_UNSET;
    atr_json_get_i64(ev, "id", &id);     /* type checked by walk_event */
    if (action_args(w->r, ev, &args) < 0 || atr_reader_opt_str(w->r, ev, "source", &source) < 0)
        return -1;
    if (str_is(action, "initialize")) {   /* OpenDevin UI: the session's settings */
        const char *model = atr_json_get_str(args, "LLM_MODEL", NULL);
        if (model && *model && !meta_has(w->t, "model"))
            atr_trace_meta_set_str(w->t, "model", model);
        return 0;
    }
    if (str_is(action, "system")) {
        add_system(w, args);
        return 0;
    }
    bool agent = str_is(source, "agent");
    if (str_is(action, "message") && !agent) {
        add_user(w, ev, args);
        return 0;
    }
    if (!agent || from_runtime(action))
        return 0;
    if (!browsing_reply(w, ev, action, args) && model_call(w, ev, action, args, ts) < 0)
        return -1;
    note_action(w, action, args);
    if (str_is(action, "finish") && w->depth == 0)
        w->finished = true;      /* a delegate's finish ends the delegate only */
    struct atr_step *s = tool_step(w, ev, action, args);
    if (s) {
        s->t_ms = rel_ms(w, ts);
        remember(w, id, s->i, ts);
    }
    return str_is(action, "delegate") ? open_delegate(w, ev, id, args) : 0;
}

static int walk_observation(struct oh_walk *w, const struct atr_json *ev, const char *obs,
                            int64_t ts)
{
    const struct atr_json *extras;
    int64_t cause = ATR_UNSET;
    const char *content = NULL;
    if (atr_reader_opt(w->r, ev, "extras", ATR_JSON_OBJECT, &extras) < 0 ||
        atr_reader_opt_i64(w->r, ev, "cause", &cause) < 0 ||
        atr_reader_opt_str(w->r, ev, "content", &content) < 0)
        return -1;
    if (str_is(obs, "agent_state_changed")) {
        /* A delegate's states are its own: the trace's outcome is the main agent's. */
        const char **state = w->depth ? &cur(w)->state : &w->state;
        const char *st = atr_json_get_str(extras, "agent_state", NULL);
        if (st && !str_is(*state, st))
            *state = keep(w, st);
        return 0;
    }
    if (str_is(obs, "delegate")) {   /* answers no tool step: none was made */
        close_delegate(w, ev, cause, extras);
        return 0;
    }
    /* Without a cause only a tool's own observation may answer a step. */
    bool quiet = !*obs || str_is(obs, "null") || str_is(obs, "recall");
    struct oh_pending p;
    if ((cause != ATR_UNSET || !quiet) && take_pending(w, cause, &p))
        close_step(w, &p, extras, ts);
    add_text(w, "tool", atr_json_get(ev, "content"));
    return 0;
}

/* One event: an action, an observation, or a UI record (status, error)
 * that the agent never saw. */
static int walk_event(struct oh_walk *w, const struct atr_json *ev)
{
    if (!atr_json_is(ev, ATR_JSON_OBJECT))
        return atr_reader_fail_at(w->r, ev, "expected an event object, found %s",
                                  atr_json_type_name(ev->type));
    const char *action = NULL, *obs = NULL;
    int64_t ts, id;
    if (atr_reader_opt_i64(w->r, ev, "id", &id) < 0 ||
        atr_reader_opt_str(w->r, ev, "action", &action) < 0 ||
        atr_reader_opt_str(w->r, ev, "observation", &obs) < 0 || event_time(w, ev, &ts) < 0)
        return -1;
    int rc = 0;
    if (action && *action)
        rc = walk_action(w, ev, action, ts);
    else if (obs)
        rc = walk_observation(w, ev, obs, ts);
    if (ts != ATR_UNSET)
        w->prev_ts = ts;
    return rc;
}

/* ---- trace ids and records ---- */

static const char *base_name(struct atr_reader *r, struct atr_arena *a)
{
    static const char *const suffixes[] = {".jsonl", ".json", ".ndjson", ".parquet", NULL};
    return atr_chat_base_name(a, atr_reader_name(r), suffixes);
}

/* A record's id: instance_id (eval output), id (feedback), else file/index. */
static void record_id(struct atr_reader *r, struct atr_trace *t, const struct atr_json *rec)
{
    const struct atr_json *id = atr_json_get(rec, "instance_id");
    if (!atr_json_is(id, ATR_JSON_STRING) && !atr_json_is(id, ATR_JSON_NUMBER))
        id = atr_json_get(rec, "id");
    if (atr_json_is(id, ATR_JSON_STRING) && id->u.str.len)
        t->trace_id = atr_arena_printf(&t->arena, "openhands/%s", id->u.str.s);
    else if (atr_json_is(id, ATR_JSON_NUMBER) && id->is_int)
        t->trace_id = atr_arena_printf(&t->arena, "openhands/%lld", (long long)id->i);
    else
        t->trace_id = atr_arena_printf(&t->arena, "openhands/%s/%lu",
                                       base_name(r, &r->scratch), r->ntraces);
}

static void meta_str(struct atr_trace *t, const char *key, const struct atr_json *v)
{
    if (atr_json_is(v, ATR_JSON_STRING) && v->u.str.len)
        atr_trace_meta_set_str(t, key, v->u.str.s);
}

static void record_meta(struct atr_trace *t, const struct atr_json *rec)
{
    const struct atr_json *md = atr_json_get(rec, "metadata");
    meta_str(t, "instance_id", atr_json_get(rec, "instance_id"));
    meta_str(t, "model", atr_json_get(atr_json_get(md, "llm_config"), "model"));
    meta_str(t, "agent", atr_json_get(md, "agent_class"));
    meta_str(t, "feedback", atr_json_get(rec, "feedback"));
    meta_str(t, "error", atr_json_get(rec, "error"));
}

/* Eval output keeps totals even where events lack per-call usage. */
static void record_totals(struct atr_trace *t, const struct atr_json *rec)
{
    const struct atr_json *u =
        atr_json_get(atr_json_get(rec, "metrics"), "accumulated_token_usage");
    int64_t in, out;
    if (meta_has(t, "recorded_input_tokens") || !atr_json_get_i64(u, "prompt_tokens", &in) ||
        !atr_json_get_i64(u, "completion_tokens", &out))
        return;
    atr_trace_meta_set_i64(t, "recorded_input_tokens", in);
    atr_trace_meta_set_i64(t, "recorded_output_tokens", out);
}

static const struct atr_json *record_events(const struct atr_json *rec)
{
    const struct atr_json *ev = atr_json_get(rec, "history");
    return ev ? ev : atr_json_get(rec, "trajectory");
}

static bool is_record(const struct atr_json *v)
{
    return atr_json_is(v, ATR_JSON_OBJECT) && !atr_json_get(v, "action") &&
           !atr_json_get(v, "observation") && record_events(v);
}

/* Events of a record; a history item may be an [action, observation] pair
 * (OpenDevin eval output). */
static int walk_events(struct oh_walk *w, const struct atr_json *events)
{
    for (const struct atr_json *ev = events->u.kids.first; ev; ev = ev->next) {
        if (!atr_json_is(ev, ATR_JSON_ARRAY)) {
            if (walk_event(w, ev) < 0)
                return -1;
            continue;
        }
        for (const struct atr_json *e = ev->u.kids.first; e; e = e->next)
            if (walk_event(w, e) < 0)
                return -1;
    }
    return 0;
}

/* Whether ev opens an event stream: an object with "action" or
 * "observation" (null included: UI records). Other files have a "history"
 * too (SWE-agent's is chat messages); read as events they would give empty
 * traces without a word. */
static bool is_event(const struct atr_json *ev)
{
    if (atr_json_is(ev, ATR_JSON_ARRAY))     /* an [action, observation] pair */
        ev = ev->u.kids.first;
    return atr_json_is(ev, ATR_JSON_OBJECT) &&
           (atr_json_get(ev, "action") || atr_json_get(ev, "observation"));
}

static int not_events(struct atr_reader *r, const struct atr_json *ev)
{
    return atr_reader_fail_at(r, ev, "expected an openhands event (an object with \"action\" "
                              "or \"observation\")");
}

static int walk_record(struct atr_reader *r, struct atr_trace *t, const struct atr_json *rec)
{
    const struct atr_json *events = record_events(rec);
    if (!atr_json_is(rec, ATR_JSON_OBJECT) || !atr_json_is(events, ATR_JSON_ARRAY))
        return atr_reader_fail_at(r, events ? events : rec,
                                  "expected a record with a \"history\" or \"trajectory\" "
                                  "array of events");
    const struct atr_json *first = events->u.kids.first;
    if (first && atr_json_is(first, ATR_JSON_OBJECT) && !is_event(first))
        return not_events(r, first);
    record_id(r, t, rec);
    record_meta(t, rec);
    struct oh_walk w;
    walk_init(&w, r, t, &r->scratch);
    w.latencies = atr_json_get(atr_json_get(rec, "metrics"), "response_latencies");
    w.token_usages = atr_json_get(atr_json_get(rec, "metrics"), "token_usages");
    int rc = walk_events(&w, events);
    walk_finish(&w, rc);
    if (rc < 0)
        return -1;
    record_totals(t, rec);
    return 1;
}

/* ---- the shapes ---- */

static int each_event(void *w, const struct atr_json *ev)
{
    return walk_event(w, ev);
}

/* A top-level array of events is one trace, streamed event by event. */
static int walk_stream(struct atr_reader *r, struct atr_trace *t, const struct atr_json *first,
                       struct atr_arena *tmp)
{
    if (atr_json_is(first, ATR_JSON_OBJECT) && !is_event(first))
        return not_events(r, first);
    t->trace_id = atr_arena_printf(&t->arena, "openhands/%s", base_name(r, &t->arena));
    struct oh_walk w;
    walk_init(&w, r, t, tmp);
    int rc = atr_reader_json_each(r, tmp, first, each_event, &w);
    walk_finish(&w, rc);
    return rc < 0 ? -1 : 1;
}

static bool is_events(const struct atr_json *first)
{
    return !is_record(first);
}

/* '[' an array of events or of records, '{' records (eval output lines). */
static const struct atr_json_stream oh_stream = {
    "a JSON array of openhands events or JSON lines of records",
    "at least one openhands event", "at least one record",
    is_events, walk_record, walk_stream,
};

static int next(struct atr_reader *r, struct atr_trace *t)
{
    return atr_reader_json_stream(r, t, &oh_stream);
}

/* ---- sniffing ---- */

/* Where "key" occurs as an object key in head (an unescaped quote, the
 * name, a quote, spaces, a colon): the position after the colon, or NULL.
 * A heuristic that is good enough for sniffing. */
static const char *find_key(const char *h, size_t len, const char *key)
{
    size_t k = strlen(key);
    const char *end = h + len;
    for (const char *p = h; p < end && (p = memmem(p, (size_t)(end - p), key, k)); p += k) {
        if (p == h || p[-1] != '"' || p + k >= end || p[k] != '"')
            continue;
        if (p - 1 > h && p[-2] == '\\')
            continue;
        const char *q = p + k + 1;
        while (q < end && strchr(" \t\r\n", *q) && *q)
            q++;
        if (q < end && *q == ':')
            return q + 1;
    }
    return NULL;
}

/* Whether some "key" has the string value val. */
static bool has_value(const char *h, size_t len, const char *key, const char *val)
{
    const char *end = h + len, *p = h;
    size_t vl = strlen(val);
    while (p < end && (p = find_key(p, (size_t)(end - p), key))) {
        while (p < end && strchr(" \t\r\n", *p) && *p)
            p++;
        if ((size_t)(end - p) > vl + 1 && *p == '"' && memcmp(p + 1, val, vl) == 0 &&
            p[vl + 1] == '"')
            return true;
    }
    return false;
}

static int sniff(const char *head, size_t len, const char *name)
{
    char first = atr_sniff_first(head, len, NULL);
    if (first != '[' && first != '{')
        return 0;
    bool source = has_value(head, len, "source", "agent") ||
                  has_value(head, len, "source", "user") ||
                  has_value(head, len, "source", "environment");
    bool event = find_key(head, len, "action") || find_key(head, len, "observation");
    if (!source || !event)
        return 0;
    bool strong = find_key(head, len, "tool_call_metadata") || find_key(head, len, "cause") ||
                  find_key(head, len, "timestamp");
    bool records = find_key(head, len, "history") || find_key(head, len, "trajectory");
    if (first == '[')
        return strong || records ? 95 : 80;
    return records ? 90 : 30;
}

const struct atr_format atr_format_openhands = {
    "openhands",
    "OpenHands/OpenDevin event streams: event arrays, feedback records, eval output JSONL",
    sniff,
    next,
    atr_reader_json_stream_free,
};
