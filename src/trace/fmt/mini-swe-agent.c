/* mini-swe-agent.c - mini-swe-agent trajectories (.traj.json, one trace).
 *
 * Two shapes: "mini-swe-agent-1.x" objects {info, messages, instance_id}
 * whose assistant messages carry OpenAI tool_calls (and extra.actions, the
 * commands really run) and whose tool messages carry extra.returncode and
 * extra.timestamp; and the legacy bare array of {role, content} messages
 * with the command in a ```mswea_bash_command (or ```bash) fence and the
 * exit code in the next message's <returncode>. Every assistant message is
 * a model call prompted with all messages before it; its commands follow it
 * as bash steps, completed (exit code, end time) by the messages that
 * answer them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace/convo.h"
#include "trace/fmt/chat-render.h"
#include "trace/reader.h"

/* A tool step waiting for the message that reports its result. */
struct pending {
    size_t step;
    const char *call_id;   /* NULL when the source gives none */
    int done;
};

struct mini {
    struct atr_reader *r;
    struct atr_trace *t;
    struct atr_convo convo;
    const char *cwd;              /* config.environment.cwd */
    int64_t timeout_ms;           /* config.environment.timeout */
    int64_t origin, prev_end;     /* absolute ms: first event, last event's end */
    struct pending *pend;         /* the current model call's tool steps */
    size_t n_pend;
    int64_t sum_in, sum_out;      /* recorded usage over all calls */
    size_t n_llm, n_usage;        /* calls, and calls with recorded usage */
    const char *model;            /* from the first response, when config lacks it */
};

/* ---- sniffing ----------------------------------------------------------- */

static int sniff_object(const char *head, size_t len, int named)
{
    if (atr_chat_has_key(head, len, "\"trajectory_format\"") &&
        memmem(head, len, "\"mini-swe-agent", 15))
        return 98;
    if (atr_chat_has_key(head, len, "\"messages\"") &&
        atr_chat_has_key(head, len, "\"mini_version\""))
        return 92;
    /* "info" comes first and its config can fill the whole head: the
     * classes it names, or its agent settings, still tell. */
    int info = atr_chat_has_key(head, len, "\"info\"");
    if (info && memmem(head, len, "\"minisweagent.", 14))
        return 90;
    if (info && atr_chat_has_key(head, len, "\"model_stats\"") &&
        atr_chat_has_key(head, len, "\"config\"") &&
        (atr_chat_has_key(head, len, "\"step_limit\"") ||
         atr_chat_has_key(head, len, "\"system_template\"")) &&
        !atr_chat_has_key(head, len, "\"trajectory\"") &&
        !atr_chat_has_key(head, len, "\"history\""))
        return 70;
    if (named && atr_chat_has_key(head, len, "\"messages\"") && info)
        return 60;
    return 0;
}

/* The legacy bare array: only its fences and <returncode> observations
 * set it apart from other arrays of chat messages. */
static int sniff_array(const char *head, size_t len, int named)
{
    if (!atr_chat_has_key(head, len, "\"role\"") || !atr_chat_has_key(head, len, "\"content\""))
        return 0;
    if (memmem(head, len, "```mswea_bash_command", 21))
        return 90;
    if (memmem(head, len, "<returncode>", 12))
        return 85;
    if (named)
        return 60;
    return memmem(head, len, "```bash", 7) ? 40 : 0;
}

static int sniff(const char *head, size_t len, const char *name)
{
    char first = atr_sniff_first(head, len, NULL);
    int named = atr_chat_name_ends(name, ".traj.json") ||
                atr_chat_name_ends(name, ".traj.json.gz") ||
                atr_chat_name_ends(name, ".traj.json.zst");
    if (first == '{')
        return sniff_object(head, len, named);
    if (first == '[')
        return sniff_array(head, len, named);
    return 0;
}

/* ---- timing ------------------------------------------------------------- */

/* Epoch seconds -> ms; ATR_UNSET when absent or not a plausible time. */
static int64_t epoch_ms(const struct atr_json *obj, const char *key)
{
    double sec;
    if (!atr_json_get_num(obj, key, &sec) || !isfinite(sec) || sec < 0 || sec > 1e11)
        return ATR_UNSET;
    return (int64_t)llround(sec * 1000.0);
}

/* Times a step that ran from start to end (absolute ms, either may be
 * unknown). The trace's clock starts at its first known instant. */
static void set_times(struct mini *m, size_t step, int64_t start, int64_t end)
{
    struct atr_step *s = &m->t->steps[step];
    if (m->origin == ATR_UNSET)
        m->origin = start != ATR_UNSET ? start : end;
    if (start != ATR_UNSET && m->origin != ATR_UNSET) {
        s->t_ms = start > m->origin ? start - m->origin : 0;
        if (end != ATR_UNSET)
            s->dur_ms = end > start ? end - start : 0;
    }
    if (end != ATR_UNSET)
        m->prev_end = end;
}

/* A call starts when the previous event ended; the first call has only the
 * response's "created" (whole seconds, set by the server) to go by. */
static void time_llm(struct mini *m, size_t step, const struct atr_json *extra)
{
    int64_t end = epoch_ms(extra, "timestamp");
    int64_t start = m->prev_end;
    if (start == ATR_UNSET && end != ATR_UNSET) {
        int64_t created = epoch_ms(atr_json_get(extra, "response"), "created");
        if (created != ATR_UNSET && created <= end && end - created < 3600 * 1000)
            start = created;
    }
    set_times(m, step, start, end);
}

/* ---- model calls -------------------------------------------------------- */

/* Real token counts from the OpenAI response kept in extra.response. */
static void record_usage(struct mini *m, size_t step, const struct atr_json *extra)
{
    const struct atr_json *usage = atr_json_get(atr_json_get(extra, "response"), "usage");
    int64_t in, out, cached;
    m->n_llm++;
    if (!atr_json_get_i64(usage, "prompt_tokens", &in) ||
        !atr_json_get_i64(usage, "completion_tokens", &out) || in < 0 || out < 0)
        return;
    struct atr_step *s = &m->t->steps[step];
    atr_step_set_counts(s, in, out, ATR_TOKENS_RECORDED);
    m->sum_in += in < INT64_MAX / 4 ? in : 0;
    m->sum_out += out < INT64_MAX / 4 ? out : 0;
    m->n_usage++;
    if (atr_json_get_i64(atr_json_get(usage, "prompt_tokens_details"), "cached_tokens", &cached) &&
        cached >= 0) {
        s->extra = atr_json_new(&m->t->arena, ATR_JSON_OBJECT);
        atr_json_append(&m->t->arena, s->extra, "recorded_cached_tokens",
                        atr_json_new_i64(&m->t->arena, cached));
    }
}

/* ---- commands -> tool steps --------------------------------------------- */

static void add_tool(struct mini *m, const char *tool, const char *cmd, size_t len,
                     const char *call_id)
{
    struct atr_trace *t = m->t;
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    s->tool = tool;
    if (cmd)
        s->command = atr_arena_strndup(&t->arena, cmd, len);
    s->cwd = m->cwd ? atr_arena_strdup(&t->arena, m->cwd) : NULL;
    s->timeout_ms = m->timeout_ms;
    m->pend[m->n_pend++] = (struct pending){t->n_steps - 1, call_id, 0};
}

/* extra.actions: the commands mini-swe-agent parsed and ran. */
static size_t add_actions(struct mini *m, const struct atr_json *actions)
{
    size_t n = 0;
    for (const struct atr_json *a = actions->u.kids.first; a; a = a->next) {
        size_t len;
        const char *cmd = atr_json_get_str(a, "command", &len);
        if (!cmd)
            continue;
        add_tool(m, "bash", cmd, len, atr_json_get_str(a, "tool_call_id", NULL));
        n++;
    }
    return n;
}

static void add_tool_calls(struct mini *m, const struct atr_json *calls)
{
    for (const struct atr_json *c = calls->u.kids.first; c; c = c->next) {
        const char *name;
        const struct atr_json *raw;
        if (!atr_chat_tool_call(c, &name, &raw))
            continue;
        /* Arguments that do not parse were a format error: nothing ran. */
        const struct atr_json *args = atr_chat_object(&m->r->scratch, raw, m->r->opts.max_depth);
        if (!args)
            continue;
        size_t len;
        const char *cmd = atr_json_get_str(args, "command", &len);
        const char *id = atr_json_get_str(c, "id", NULL);
        if (strcmp(name, "bash") == 0 && cmd) {
            add_tool(m, "bash", cmd, len, id);
            continue;
        }
        add_tool(m, atr_arena_strdup(&m->t->arena, name), NULL, 0, id);
        struct atr_step *s = &m->t->steps[m->t->n_steps - 1];
        s->extra = atr_json_new(&m->t->arena, ATR_JSON_OBJECT);
        atr_json_append(&m->t->arena, s->extra, "arguments", atr_json_copy(&m->t->arena, args));
    }
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* One match of mini-swe-agent's r"```LANG\s*\n(.*?)\n```" from *pos on:
 * the command's bounds, or 0 when there is none. */
static int fence_next(const char *text, size_t len, size_t *pos, const char *open,
                      size_t *start, size_t *end)
{
    size_t k = strlen(open);
    while (*pos < len) {
        const char *p = memmem(text + *pos, len - *pos, open, k);
        if (!p)
            return 0;
        size_t i = (size_t)(p - text) + k, nl = 0;
        while (i < len && is_space(text[i]))
            if (text[i++] == '\n')
                nl = i;
        *pos = (size_t)(p - text) + k;
        if (!nl)
            continue;
        const char *q = memmem(text + nl - 1, len - (nl - 1), "\n```", 4);
        if (!q)
            return 0;
        *start = nl;
        *end = (size_t)(q - text) > nl ? (size_t)(q - text) : nl;
        *pos = (size_t)(q - text) + 4;
        return 1;
    }
    return 0;
}

/* The command of a fenced reply, only when there is exactly one fence:
 * mini-swe-agent rejects any other count as a format error. */
static int fenced_command(const char *text, size_t len, const char *open,
                          size_t *start, size_t *end)
{
    size_t pos = 0, s2, e2;
    if (!fence_next(text, len, &pos, open, start, end))
        return 0;
    return !fence_next(text, len, &pos, open, &s2, &e2);
}

static void add_fenced(struct mini *m, const struct atr_json *content)
{
    size_t len, s, e;
    const char *text = atr_chat_render(&m->r->scratch, content, NULL, &len);
    if (!fenced_command(text, len, "```mswea_bash_command", &s, &e) &&
        !fenced_command(text, len, "```bash", &s, &e))
        return;
    while (s < e && is_space(text[s]))
        s++;
    while (e > s && is_space(text[e - 1]))
        e--;
    if (e > s)     /* mini-swe-agent would run "", which does nothing */
        add_tool(m, "bash", text + s, e - s, NULL);
}

static size_t count_kids(const struct atr_json *v)
{
    return atr_json_is(v, ATR_JSON_ARRAY) ? v->u.kids.count : 0;
}

/* The tool steps of one model call, in the order they ran. */
static void add_commands(struct mini *m, const struct atr_json *msg)
{
    const struct atr_json *actions = atr_json_get(atr_json_get(msg, "extra"), "actions");
    const struct atr_json *calls = atr_json_get(msg, "tool_calls");
    size_t cap = count_kids(actions) + count_kids(calls) + 1;
    m->pend = atr_arena_calloc(&m->r->scratch, cap, sizeof *m->pend);
    m->n_pend = 0;
    if (count_kids(actions) && add_actions(m, actions))
        return;
    if (count_kids(calls))
        add_tool_calls(m, calls);
    else
        add_fenced(m, atr_json_get(msg, "content"));
}

/* ---- results ------------------------------------------------------------ */

/* "<returncode>N</returncode>" at the start of an observation. */
static int parse_returncode(const char *text, size_t len, int64_t *out)
{
    size_t i = 0;
    while (i < len && is_space(text[i]))
        i++;
    if (len - i < 12 || memcmp(text + i, "<returncode>", 12) != 0)
        return 0;
    char *end;
    char num[24];
    size_t n = len - i - 12 < sizeof num - 1 ? len - i - 12 : sizeof num - 1;
    memcpy(num, text + i + 12, n);
    num[n] = '\0';
    long long v = strtoll(num, &end, 10);
    if (end == num || strncmp(end, "</returncode>", 13) != 0)
        return 0;
    *out = v;
    return 1;
}

static struct pending *match_pending(struct mini *m, const struct atr_json *msg)
{
    const char *id = atr_json_get_str(msg, "tool_call_id", NULL);
    for (size_t i = 0; id && i < m->n_pend; i++)
        if (!m->pend[i].done && m->pend[i].call_id && strcmp(m->pend[i].call_id, id) == 0)
            return &m->pend[i];
    for (size_t i = 0; i < m->n_pend; i++)
        if (!m->pend[i].done)
            return &m->pend[i];
    return NULL;
}

/* A message answering the current call's commands: exit code and end time
 * of the first command still waiting (or the one its tool_call_id names). */
static void take_result(struct mini *m, const struct atr_json *msg, const char *text, size_t len)
{
    struct pending *p = match_pending(m, msg);
    if (!p)
        return;
    p->done = 1;
    const struct atr_json *extra = atr_json_get(msg, "extra");
    int64_t code;
    if (!atr_json_get_i64(extra, "returncode", &code) && !parse_returncode(text, len, &code))
        code = ATR_UNSET;
    m->t->steps[p->step].exit_code = code;
    set_times(m, p->step, m->prev_end, epoch_ms(extra, "timestamp"));
}

/* ---- messages ----------------------------------------------------------- */

static int check_msg(struct atr_reader *r, const struct atr_json *msg, const char **role)
{
    return atr_chat_check_msg(r, msg, "message", role);
}

static void model_call(struct mini *m, const struct atr_json *msg, const char *text, size_t len)
{
    const struct atr_json *extra = atr_json_get(msg, "extra");
    atr_convo_llm(&m->convo, text, len);
    size_t step = m->t->n_steps - 1;
    time_llm(m, step, extra);
    record_usage(m, step, extra);
    if (!m->model)
        m->model = atr_json_get_str(atr_json_get(extra, "response"), "model", NULL);
    add_commands(m, msg);
}

static int walk_message(struct mini *m, const struct atr_json *msg)
{
    const char *role = NULL;
    if (check_msg(m->r, msg, &role) < 0)
        return -1;
    /* "exit" records the submission after the run; no model saw it. */
    if (strcmp(role, "exit") == 0)
        return 0;
    size_t len;
    const char *text = atr_chat_render(&m->r->scratch, atr_json_get(msg, "content"),
                                       atr_json_get(msg, "tool_calls"), &len);
    if (strcmp(role, "assistant") == 0)
        model_call(m, msg, text, len);
    else if (strcmp(role, "system") != 0)
        take_result(m, msg, text, len);
    atr_convo_add(&m->convo, role, text, len);
    return 0;
}

/* ---- metadata ----------------------------------------------------------- */

static void read_config(struct mini *m, const struct atr_json *info)
{
    const struct atr_json *config = atr_chat_object(&m->r->scratch, atr_json_get(info, "config"),
                                                    m->r->opts.max_depth);
    const struct atr_json *env = atr_json_get(config, "environment");
    m->cwd = atr_json_get_str(env, "cwd", NULL);
    double sec;
    if (atr_json_get_num(env, "timeout", &sec) && isfinite(sec) && sec > 0 && sec < 1e9)
        m->timeout_ms = (int64_t)llround(sec * 1000.0);
    const char *model = atr_json_get_str(atr_json_get(config, "model"), "model_name", NULL);
    if (model)
        atr_trace_meta_set_str(m->t, "model", model);
}

static const char *exit_status(const struct atr_json *info, const struct atr_json *messages)
{
    const char *s = atr_json_get_str(info, "exit_status", NULL);
    if (s)
        return s;
    for (const struct atr_json *msg = messages->u.kids.first; msg; msg = msg->next)
        if ((s = atr_json_get_str(atr_json_get(msg, "extra"), "exit_status", NULL)) != NULL)
            return s;
    return NULL;
}

static void set_meta(struct mini *m, const struct atr_json *doc, const struct atr_json *info,
                     const struct atr_json *messages)
{
    struct atr_trace *t = m->t;
    const char *s = exit_status(info, messages);
    if (s) {
        atr_trace_meta_set_str(t, "exit_status", s);
        atr_trace_meta_set_str(t, "outcome", s);
    }
    int64_t calls;
    if (atr_json_get_i64(atr_json_get(info, "model_stats"), "api_calls", &calls) && calls > 0)
        atr_trace_meta_set_i64(t, "api_calls", calls);
    if ((s = atr_json_get_str(info, "mini_version", NULL)) != NULL)
        atr_trace_meta_set_str(t, "mini_version", s);
    if ((s = atr_json_get_str(doc, "trajectory_format", NULL)) != NULL)
        atr_trace_meta_set_str(t, "trajectory_format", s);
    const char *id = atr_json_get_str(doc, "instance_id", NULL);
    if (id)
        atr_trace_meta_set_str(t, "instance_id", id);
    else
        id = atr_chat_base_name(&m->r->scratch, atr_input_name(m->r->in),
                                (const char *const[]){".traj.json", ".json", ".traj", NULL});
    t->trace_id = atr_arena_printf(&t->arena, "mini-swe-agent/%s", id);
}

/* Totals only when every call recorded its usage: a partial sum would
 * read as a real count. */
static void set_usage_meta(struct mini *m)
{
    if (m->model && !atr_json_get(m->t->meta, "model"))
        atr_trace_meta_set_str(m->t, "model", m->model);
    if (!m->n_usage || m->n_usage != m->n_llm)
        return;
    atr_trace_meta_set_i64(m->t, "recorded_input_tokens", m->sum_in);
    atr_trace_meta_set_i64(m->t, "recorded_output_tokens", m->sum_out);
}

/* Results reported out of order (by tool_call_id) or skewed clocks could
 * make a step start before the one ahead of it; atr-trace requires start
 * times in step order, so such a step starts when the previous one did. */
static void make_monotonic(struct atr_trace *t)
{
    int64_t last = ATR_UNSET;
    for (size_t i = 0; i < t->n_steps; i++) {
        struct atr_step *s = &t->steps[i];
        if (s->t_ms == ATR_UNSET)
            continue;
        if (last != ATR_UNSET && s->t_ms < last)
            s->t_ms = last;
        last = s->t_ms;
    }
}

/* ---- the reader --------------------------------------------------------- */

static int read_doc(struct mini *m, const struct atr_json *doc)
{
    const struct atr_json *messages = doc, *info = NULL;
    if (atr_json_is(doc, ATR_JSON_OBJECT)) {
        struct atr_json *v;
        if (atr_reader_req(m->r, doc, "messages", ATR_JSON_ARRAY, &v) < 0)
            return -1;
        messages = v;
        info = atr_json_get(doc, "info");
        if (info && info->type != ATR_JSON_NULL && info->type != ATR_JSON_OBJECT)
            return atr_reader_fail_at(m->r, info, "expected \"info\" to be an object, found %s",
                                      atr_json_type_name(info->type));
    } else if (!atr_json_is(doc, ATR_JSON_ARRAY)) {
        return atr_reader_fail_at(m->r, doc, "expected a mini-swe-agent trajectory object or "
                                  "an array of messages, found %s", atr_json_type_name(doc->type));
    }
    read_config(m, info);
    set_meta(m, doc, info, messages);
    for (const struct atr_json *msg = messages->u.kids.first; msg; msg = msg->next)
        if (walk_message(m, msg) < 0)
            return -1;
    set_usage_meta(m);
    make_monotonic(m->t);
    return 0;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct atr_json *doc;
    int rc = atr_reader_document(r, &doc);
    if (rc <= 0)
        return rc;
    struct mini m = {.r = r, .t = t, .timeout_ms = ATR_UNSET, .origin = ATR_UNSET,
                     .prev_end = ATR_UNSET};
    atr_convo_init(&m.convo, t, r->opts.keep_content);
    m.convo.mark_origin = true;
    rc = read_doc(&m, doc);
    atr_convo_release(&m.convo);
    if (rc >= 0)
        atr_trace_fit_ids(t);
    return rc < 0 ? -1 : 1;
}

const struct atr_format atr_format_mini_swe_agent = {
    "mini-swe-agent",
    "mini-swe-agent trajectory (.traj.json: 1.x object or legacy message array)",
    sniff,
    next,
    NULL,
};
