/* openai-chat.c - OpenAI-chat-style agent trajectories as atr traces.
 *
 * Dataset rows, one trace each, in a top-level JSON array (streamed one row
 * at a time) or as JSON lines: {"messages": [...]} with OpenAI tool_calls,
 * legacy function_call, or SWE-smith's inline "<function=...>" calls; and
 * nebius SWE-agent rows {"trajectory": [{role: system|user|ai, text}]} whose
 * commands sit in ``` fences. A bare array of messages is one trace. Every
 * assistant message is one model call; its tool calls become tool steps,
 * completed by the tool (or next user) message that answers them. */
#include <string.h>

#include "trace/convo.h"
#include "trace/fmt/chat-render.h"
#include "trace/reader.h"

/* Calls waiting for their result; calls never answered are dropped, oldest
 * first, past this many. */
#define OC_MAX_PENDING 64

struct oc_pending {
    const char *call_id;        /* tool_call id (trace arena) or NULL */
    size_t step;
};

struct oc_walk {
    struct atr_reader *r;
    struct atr_trace *t;
    struct atr_arena *tmp;      /* per-message renderings */
    struct atr_convo convo;
    bool swe_agent;             /* nebius rows: commands in ``` fences */
    const char *open_file;      /* SWE-agent: the file open in its editor */
    struct oc_pending pend[OC_MAX_PENDING];
    size_t npend;
    int64_t finish_calls;
};

static bool str_is(const char *s, const char *lit)
{
    return s && strcmp(s, lit) == 0;
}

static bool str_in(const char *s, const char *const *set)
{
    for (size_t i = 0; s && set[i]; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

static const char *keep(struct oc_walk *w, const char *s, size_t n)
{
    return s ? atr_arena_strndup(&w->t->arena, s, n) : NULL;
}

static const char *keep_str(struct oc_walk *w, const struct atr_json *obj, const char *key)
{
    size_t n;
    const char *s = atr_json_get_str(obj, key, &n);
    return keep(w, s, s ? n : 0);
}

/* ---- pending calls and their results ---- */

static void remember(struct oc_walk *w, const char *call_id, size_t step)
{
    if (w->npend == OC_MAX_PENDING) {
        memmove(&w->pend[0], &w->pend[1], (OC_MAX_PENDING - 1) * sizeof w->pend[0]);
        w->npend--;
    }
    w->pend[w->npend++] = (struct oc_pending){call_id, step};
}

/* The step a result answers: the call with its id, else the oldest. */
static struct atr_step *take_pending(struct oc_walk *w, const char *call_id)
{
    size_t k = 0;
    if (!w->npend)
        return NULL;
    for (size_t i = 0; call_id && i < w->npend; i++)
        if (str_is(w->pend[i].call_id, call_id)) {
            k = i;
            break;
        }
    size_t step = w->pend[k].step;
    memmove(&w->pend[k], &w->pend[k + 1], (w->npend - k - 1) * sizeof w->pend[0]);
    w->npend--;
    return &w->t->steps[step];
}

/* Last occurrence of needle in h[0..n). The markers looked for sit at the
 * end of an observation when present, so the search runs backwards
 * (memrchr on the needle's first byte, vectorised in glibc) and stops at
 * the first hit instead of scanning the whole text once per marker. */
static const char *memrmem(const char *h, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (!k || k > n)
        return k ? NULL : h + n;
    size_t room = n - k + 1;   /* candidate starts: h[0..room) */
    const char *p;
    while (room && (p = memrchr(h, needle[0], room)) != NULL) {
        if (memcmp(p + 1, needle + 1, k - 1) == 0)
            return p;
        room = (size_t)(p - h);
    }
    return NULL;
}

/* Exit code a shell observation reports: OpenHands "[Command finished with
 * exit code N]" / "[The command completed with exit code N.]",
 * mini-swe-agent "<returncode>N</returncode>". Only these bracketed forms:
 * "exit code 3" in a program's own output says nothing. */
static bool exit_code_of(const char *text, size_t n, int64_t *code)
{
    static const char *const marks[] = {"[Command finished with exit code ",
                                        "[The command completed with exit code ",
                                        "<returncode>", NULL};
    for (size_t m = 0; marks[m]; m++) {
        const char *p = memrmem(text, n, marks[m]);
        if (!p)
            continue;
        const char *end = text + n;
        p += strlen(marks[m]);
        bool neg = p < end && *p == '-';
        p += neg;
        int64_t v = 0;
        int digits = 0;
        for (; p < end && *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
            v = v * 10 + (*p - '0');
        if (digits) {
            *code = neg ? -v : v;
            return true;
        }
    }
    return false;
}

/* SWE-agent prints "(Open file: PATH)" after every command. */
static void track_open_file(struct oc_walk *w, const char *text, size_t n)
{
    const char *p = memrmem(text, n, "(Open file: ");
    if (!p)
        return;
    p += strlen("(Open file: ");
    const char *e = memchr(p, ')', (size_t)(text + n - p));
    if (e && e > p && !(e - p == 3 && memcmp(p, "n/a", 3) == 0))
        w->open_file = keep(w, p, (size_t)(e - p));
}

static void close_step(struct oc_walk *w, struct atr_step *s, const char *text, size_t n)
{
    int64_t code;
    if (s && (str_is(s->tool, "bash") || str_is(s->tool, "ipython")) &&
        exit_code_of(text, n, &code))
        s->exit_code = code;
}

/* ---- tool steps ---- */

static struct atr_step *new_tool(struct oc_walk *w, const char *tool)
{
    struct atr_step *s = atr_trace_add_step(w->t, ATR_STEP_TOOL);
    s->tool = tool;
    return s;
}

static struct atr_step *bash_step(struct oc_walk *w, const struct atr_json *args)
{
    const struct atr_json *in = atr_json_get(args, "is_input");
    bool is_input = atr_json_is(in, ATR_JSON_TRUE) ||
                    str_is(atr_json_get_str(args, "is_input", NULL), "true");
    /* Input typed into a running process (C-c, answers) is no command line. */
    struct atr_step *s = new_tool(w, is_input ? "bash_input" : "bash");
    s->command = keep_str(w, args, "command");
    if (!s->command)
        s->command = keep_str(w, args, "cmd");
    if (!s->command)
        s->command = "";
    return s;
}

static struct atr_step *browser_step(struct oc_walk *w, const struct atr_json *args)
{
    struct atr_step *s = new_tool(w, "browser");
    s->url = keep_str(w, args, "url");
    const char *code = atr_json_get_str(args, "code", NULL);
    if (code) {     /* BrowserGym: "click('a51')" */
        code += strspn(code, " \t\r\n");
        size_t n = strcspn(code, "( \t\r\n");
        s->action = n ? keep(w, code, n) : NULL;
    }
    if (!s->action)
        s->action = s->url ? "goto" : "interactive";
    return s;
}

/* Raw arguments of a tool we do not know, kept for whoever does. */
static void keep_arguments(struct oc_walk *w, struct atr_step *s, const struct atr_json *raw)
{
    if (!raw || raw->type == ATR_JSON_NULL)
        return;
    s->extra = atr_json_new(&w->t->arena, ATR_JSON_OBJECT);
    atr_json_append(&w->t->arena, s->extra, "arguments", atr_json_copy(&w->t->arena, raw));
}

/* One tool call -> a tool step (NULL for finish and think, which run
 * nothing; finish is counted). SWE-agent's own commands (submit, open,
 * find_file, ...) are editor steps, as in the swe-agent reader. args is the
 * parsed object. */
static struct atr_step *call_step(struct oc_walk *w, const char *name, const struct atr_json *args,
                                  const struct atr_json *raw)
{
    static const char *const bash[] = {"execute_bash", "bash", "shell", "run", "terminal",
                                       "run_command", "execute_command", "cmd", NULL};
    static const char *const editor[] = {"str_replace_editor", "str_replace_based_edit_tool",
                                         "editor", "file_editor", "edit_file", NULL};
    struct atr_step *s;
    if (str_in(name, bash))
        return bash_step(w, args);
    if (str_in(name, editor)) {
        s = new_tool(w, "editor");
        s->action = keep_str(w, args, "command");
        s->path = keep_str(w, args, "path");
        atr_editor_sizes(s, args);
        return s;
    }
    if (str_is(name, "execute_ipython_cell") || str_is(name, "ipython")) {
        s = new_tool(w, "ipython");
        s->command = keep_str(w, args, "code");
        return s;
    }
    if (str_is(name, "browser") || str_is(name, "web_read") || str_is(name, "browse"))
        return browser_step(w, args);
    if (str_is(name, "finish")) {
        w->finish_calls++;
        return NULL;
    }
    if (atr_swe_cmd_find(name)) {
        s = new_tool(w, "editor");
        s->action = keep(w, name, strlen(name));
        s->path = keep_str(w, args, "path");
        if (!s->path)
            s->path = keep_str(w, args, "filename");
        if (!s->path)
            s->path = w->open_file;
        atr_editor_sizes(s, args);
        return s;
    }
    if (str_is(name, "think"))
        return NULL;
    s = new_tool(w, keep(w, name, strlen(name)));
    keep_arguments(w, s, raw);
    return s;
}

static void add_call(struct oc_walk *w, const struct atr_json *call)
{
    const char *name;
    const struct atr_json *raw;
    if (!atr_chat_tool_call(call, &name, &raw))
        return;
    const struct atr_json *args = atr_chat_object(w->tmp, raw, w->r->opts.max_depth);
    struct atr_step *s = call_step(w, name, args, raw);
    if (s)
        remember(w, keep_str(w, call, "id"), s->i);
}

/* ---- inline calls in the reply text ---- */

/* "<parameter=KEY>VALUE</parameter>" pairs of one "<function=NAME>" block,
 * as an object; a newline right inside the tags is layout, not value. */
static const struct atr_json *xml_params(struct oc_walk *w, const char *p, const char *end)
{
    struct atr_json *obj = atr_json_new(w->tmp, ATR_JSON_OBJECT);
    static const char open[] = "<parameter=", close[] = "</parameter>";
    while ((p = memmem(p, (size_t)(end - p), open, sizeof open - 1))) {
        p += sizeof open - 1;
        const char *gt = memchr(p, '>', (size_t)(end - p));
        if (!gt)
            break;
        const char *v = gt + 1;
        const char *ve = memmem(v, (size_t)(end - v), close, sizeof close - 1);
        if (!ve)
            ve = end;
        const char *vs = v < ve && *v == '\n' ? v + 1 : v;
        const char *vend = ve > vs && ve[-1] == '\n' ? ve - 1 : ve;
        char *key = atr_arena_strndup(w->tmp, p, (size_t)(gt - p));
        atr_json_append(w->tmp, obj, key, atr_json_new_str(w->tmp, vs, (size_t)(vend - vs)));
        p = ve;
    }
    return obj;
}

/* SWE-smith / OpenHands prompt-mode calls: "<function=bash>...</function>".
 * Returns whether any was found. */
static bool add_xml_calls(struct oc_walk *w, const char *text, size_t n)
{
    static const char open[] = "<function=", close[] = "</function>";
    const char *p = text, *end = text + n;
    bool any = false;
    while ((p = memmem(p, (size_t)(end - p), open, sizeof open - 1))) {
        p += sizeof open - 1;
        const char *gt = memchr(p, '>', (size_t)(end - p));
        if (!gt || gt == p || memchr(p, '\n', (size_t)(gt - p)))
            continue;
        const char *be = memmem(gt, (size_t)(end - gt), close, sizeof close - 1);
        if (!be)
            be = end;
        char *name = atr_arena_strndup(w->tmp, p, (size_t)(gt - p));
        const struct atr_json *args = xml_params(w, gt + 1, be);
        struct atr_step *s = call_step(w, name, args, args);
        if (s)
            remember(w, NULL, s->i);
        any = true;
        p = be;
    }
    return any;
}

/* The last top-level ``` block of a reply, the way SWE-agent's
 * ThoughtActionParser picks its action: "```lang" opens (nesting), a bare
 * "```" closes. */
static bool last_fence(const char *text, size_t n, const char **cmd, size_t *len)
{
    const char *p = text, *end = text + n, *start = NULL;
    int depth = 0;
    bool found = false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le - p >= 3 && memcmp(p, "```", 3) == 0) {
            const char *rest = p + 3;
            while (rest < le && (*rest == ' ' || *rest == '\t' || *rest == '\r'))
                rest++;
            if (depth > 0 && rest == le) {
                if (--depth == 0) {
                    *cmd = start;
                    *len = (size_t)(p > start ? p - start - 1 : 0);
                    found = true;
                }
            } else if (depth++ == 0) {
                start = nl ? nl + 1 : end;
            }
        }
        p = nl ? nl + 1 : end;
    }
    return found;
}

/* A SWE-agent command: one of its own file/search commands (an editor
 * step, mapped as the swe-agent reader maps them), or a shell command. */
static void add_swe_command(struct oc_walk *w, const char *cmd, size_t n)
{
    const char *v[8];
    int k = atr_swe_split_words(w->tmp, cmd, n, v, 8);
    const struct atr_swe_cmd *c = k ? atr_swe_cmd_find(v[0]) : NULL;
    struct atr_step *s;
    if (!c) {
        s = new_tool(w, "bash");
        s->command = keep(w, cmd, n);
        remember(w, NULL, s->i);
        return;
    }
    if ((str_is(v[0], "open") || str_is(v[0], "create")) && k > 1)
        w->open_file = keep(w, v[1], strlen(v[1]));
    s = new_tool(w, "editor");
    s->action = keep(w, v[0], strlen(v[0]));
    const char *path = atr_swe_cmd_path(c, v, k, w->open_file);
    s->path = path == w->open_file ? path : keep(w, path, path ? strlen(path) : 0);
    atr_editor_sizes(s, NULL);
    if (s->file_op && strcmp(s->file_op, "view") != 0)
        s->bytes = str_is(v[0], "create") ? 0 : atr_swe_edit_bytes(cmd, n);
    remember(w, NULL, s->i);
}

/* Commands written in the reply text, for replies without tool calls. */
static void add_text_calls(struct oc_walk *w, const char *text, size_t n)
{
    const char *cmd;
    size_t len;
    if (add_xml_calls(w, text, n) || !w->swe_agent || !last_fence(text, n, &cmd, &len))
        return;
    add_swe_command(w, cmd, len);
}

/* ---- messages ---- */

/* A message's text node: "content", or nebius "text" (and the system
 * prompt, which nebius keeps apart). */
static int message_content(struct oc_walk *w, const struct atr_json *m,
                           const struct atr_json **content)
{
    const struct atr_json *c = atr_json_get(m, "content");
    if (!c || c->type == ATR_JSON_NULL)
        c = atr_json_get(m, "text");
    if ((!c || c->type == ATR_JSON_NULL) && atr_json_get(m, "system_prompt"))
        c = atr_json_get(m, "system_prompt");
    if (!atr_chat_content_ok(c))
        return atr_reader_fail_at(w->r, c, "expected message content to be a string or an "
                                           "array of parts, found %s",
                                  atr_json_type_name(c->type));
    *content = c;
    return 0;
}

/* tool_calls, or a legacy function_call as a one-call list. */
static int message_calls(struct oc_walk *w, const struct atr_json *m,
                         const struct atr_json **calls)
{
    const struct atr_json *tc = atr_json_get(m, "tool_calls");
    const struct atr_json *fc = atr_json_get(m, "function_call");
    *calls = NULL;
    if (tc && tc->type != ATR_JSON_NULL && tc->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(w->r, tc, "expected \"tool_calls\" to be an array, found %s",
                                  atr_json_type_name(tc->type));
    if (fc && fc->type != ATR_JSON_NULL && fc->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(w->r, fc, "expected \"function_call\" to be an object, "
                                            "found %s", atr_json_type_name(fc->type));
    if (atr_json_is(tc, ATR_JSON_ARRAY) && tc->u.kids.count) {
        *calls = tc;
    } else if (atr_json_is(fc, ATR_JSON_OBJECT)) {
        struct atr_json *list = atr_json_new(w->tmp, ATR_JSON_ARRAY);
        atr_json_append(w->tmp, list, NULL, atr_json_copy(w->tmp, fc));
        *calls = list;
    }
    return 0;
}

/* OpenAI usage ({prompt_tokens, completion_tokens}) as counts, -1 where absent. */
static void usage_counts(const struct atr_json *u, int64_t *in, int64_t *out)
{
    if (!atr_json_get_i64(u, "prompt_tokens", in) || *in < 0)
        *in = -1;
    if (!atr_json_get_i64(u, "completion_tokens", out) || *out < 0)
        *out = -1;
}

/* An assistant message may carry its response's "usage" (dumps of chat
 * completions keep it beside the message): that call's real counts. */
static void model_call(struct oc_walk *w, const struct atr_json *m, const struct atr_json *content,
                       const struct atr_json *calls)
{
    size_t len;
    const char *reply = atr_chat_render(w->tmp, content, calls, &len);
    struct atr_step *s = atr_convo_llm(&w->convo, reply, len);
    int64_t in, out;
    usage_counts(atr_json_get(m, "usage"), &in, &out);
    atr_step_set_counts(s, in, out, ATR_TOKENS_RECORDED);
    atr_convo_add(&w->convo, "assistant", reply, len);
    w->npend = 0;   /* a new turn: earlier calls went unanswered */
    if (!calls) {
        size_t n;
        const char *text = atr_chat_render(w->tmp, content, NULL, &n);
        add_text_calls(w, text, n);
        return;
    }
    for (const struct atr_json *c = calls->u.kids.first; c; c = c->next)
        add_call(w, c);
}

static int walk_message(struct oc_walk *w, const struct atr_json *m)
{
    static const char *const assistant[] = {"assistant", "ai", "model", "gpt", NULL};
    static const char *const tool[] = {"tool", "function", "ipython", NULL};
    struct atr_json *role;
    const struct atr_json *content = NULL, *calls = NULL;
    if (!atr_json_is(m, ATR_JSON_OBJECT))
        return atr_reader_fail_at(w->r, m, "expected a message object, found %s",
                                  atr_json_type_name(m->type));
    if (atr_reader_req(w->r, m, "role", ATR_JSON_STRING, &role) < 0 ||
        message_content(w, m, &content) < 0 || message_calls(w, m, &calls) < 0)
        return -1;
    if (str_in(role->u.str.s, assistant)) {
        model_call(w, m, content, calls);
        return 0;
    }
    size_t n;
    const char *text = atr_chat_render(w->tmp, content, NULL, &n);
    if (str_in(role->u.str.s, tool)) {
        close_step(w, take_pending(w, atr_json_get_str(m, "tool_call_id", NULL)), text, n);
    } else if (str_is(role->u.str.s, "user") && w->npend) {
        /* Prompt-mode agents answer calls with a user message. */
        close_step(w, take_pending(w, NULL), text, n);
        w->npend = 0;
    }
    if (w->swe_agent)
        track_open_file(w, text, n);
    if (n)
        atr_convo_add(&w->convo, role->u.str.s, text, n);
    return 0;
}

/* ---- rows ---- */

static const char *base_name(struct atr_reader *r, struct atr_arena *a)
{
    static const char *const suffixes[] = {".sample_raw.json", ".jsonl", ".json", ".ndjson", ".parquet",
                                           NULL};
    return atr_chat_base_name(a, atr_reader_name(r), suffixes);
}

/* Rows without an id are numbered by their place in the file. */
static void row_id(struct atr_reader *r, struct atr_trace *t, const struct atr_json *row)
{
    static const char *const keys[] = {"instance_id", "traj_id", "id", NULL};
    const char *id = NULL;
    for (size_t i = 0; keys[i] && !id; i++) {
        id = atr_json_get_str(row, keys[i], NULL);
        if (id && !*id)
            id = NULL;
    }
    if (id)
        t->trace_id = atr_arena_printf(&t->arena, "openai-chat/%s", id);
    else
        t->trace_id = atr_arena_printf(&t->arena, "openai-chat/%s/%lu",
                                       base_name(r, &r->scratch), r->ntraces);
}

static void meta_str(struct atr_trace *t, const char *key, const struct atr_json *v)
{
    if (atr_json_is(v, ATR_JSON_STRING) && v->u.str.len)
        atr_trace_meta_set_str(t, key, v->u.str.s);
}

static void row_meta(struct atr_trace *t, const struct atr_json *row)
{
    const struct atr_json *model = atr_json_get(row, "model");
    meta_str(t, "model", atr_json_is(model, ATR_JSON_STRING) ? model
                                                             : atr_json_get(row, "model_name"));
    meta_str(t, "instance_id", atr_json_get(row, "instance_id"));
    meta_str(t, "run_id", atr_json_get(row, "run_id"));
    meta_str(t, "exit_status", atr_json_get(row, "exit_status"));
    /* SWE-Gym and SWE-smith say "resolved", nebius says "target". */
    const struct atr_json *res = atr_json_get(row, "resolved");
    if (!atr_json_is(res, ATR_JSON_TRUE) && !atr_json_is(res, ATR_JSON_FALSE))
        res = atr_json_get(row, "target");
    if (atr_json_is(res, ATR_JSON_TRUE) || atr_json_is(res, ATR_JSON_FALSE))
        atr_trace_meta_set_str(t, "outcome", res->type == ATR_JSON_TRUE ? "resolved"
                                                                         : "unresolved");
}

static void walk_init(struct oc_walk *w, struct atr_reader *r, struct atr_trace *t,
                      struct atr_arena *tmp)
{
    memset(w, 0, sizeof *w);
    w->r = r;
    w->t = t;
    w->tmp = tmp;
    atr_convo_init(&w->convo, t, r->opts.keep_content);
    w->convo.mark_origin = true;
}

static void walk_finish(struct oc_walk *w, int rc)
{
    atr_convo_release(&w->convo);
    if (rc == 0)
        atr_trace_fit_ids(w->t);
    if (rc == 0 && w->finish_calls)
        atr_trace_meta_set_i64(w->t, "finish_calls", w->finish_calls);
}

/* The tool schemas a row's requests carried are part of every prompt (the
 * chat template renders them), ahead of the messages. */
static void add_tools(struct oc_walk *w, const struct atr_json *row)
{
    const struct atr_json *tools = atr_json_get(row, "tools");
    if (!atr_json_is(tools, ATR_JSON_ARRAY) || !tools->u.kids.count)
        return;
    struct atr_buf b = ATR_BUF_INIT;
    b.max = w->r->opts.max_line;
    if (atr_json_write_value(&b, tools) == 0)
        atr_convo_add(&w->convo, "system", b.data, b.len);
    atr_buf_release(&b);
}

/* A row's own "usage" holds totals over its calls: kept in meta, and the
 * calls without usage of their own are scaled to the rest of them. */
static void row_usage(struct atr_trace *t, const struct atr_json *row)
{
    int64_t in, out;
    usage_counts(atr_json_get(row, "usage"), &in, &out);
    if (in < 0 && out < 0)
        return;
    if (in >= 0)
        atr_trace_meta_set_i64(t, "recorded_input_tokens", in);
    if (out >= 0)
        atr_trace_meta_set_i64(t, "recorded_output_tokens", out);
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        if (s->kind == ATR_STEP_LLM && s->estimated_input_tokens != ATR_UNSET)
            in -= s->input_tokens;
        if (s->kind == ATR_STEP_LLM && s->estimated_output_tokens != ATR_UNSET)
            out -= s->output_tokens;
    }
    atr_trace_scale_counts(t, in, out);
}

static bool is_row(const struct atr_json *v)
{
    return atr_json_is(v, ATR_JSON_OBJECT) && !atr_json_get(v, "role") &&
           (atr_json_get(v, "messages") || atr_json_get(v, "trajectory"));
}

static int walk_row(struct atr_reader *r, struct atr_trace *t, const struct atr_json *row)
{
    const struct atr_json *msgs = atr_json_get(row, "messages");
    bool nebius = !msgs;
    if (nebius)
        msgs = atr_json_get(row, "trajectory");
    if (!atr_json_is(row, ATR_JSON_OBJECT) || !atr_json_is(msgs, ATR_JSON_ARRAY))
        return atr_reader_fail_at(r, msgs ? msgs : row,
                                  "expected a row with a \"messages\" array");
    row_id(r, t, row);
    row_meta(t, row);
    struct oc_walk w;
    walk_init(&w, r, t, &r->scratch);
    w.swe_agent = nebius;
    add_tools(&w, row);
    int rc = 0;
    for (const struct atr_json *m = msgs->u.kids.first; m && rc == 0; m = m->next)
        rc = walk_message(&w, m);
    if (rc == 0)
        row_usage(t, row);
    walk_finish(&w, rc);
    return rc < 0 ? -1 : 1;
}

static int each_message(void *w, const struct atr_json *m)
{
    return walk_message(w, m);
}

/* A bare array of messages is one conversation, streamed message by message. */
static int walk_messages(struct atr_reader *r, struct atr_trace *t, const struct atr_json *first,
                         struct atr_arena *tmp)
{
    t->trace_id = atr_arena_printf(&t->arena, "openai-chat/%s", base_name(r, &t->arena));
    struct oc_walk w;
    walk_init(&w, r, t, tmp);
    int rc = atr_reader_json_each(r, tmp, first, each_message, &w);
    walk_finish(&w, rc);
    return rc < 0 ? -1 : 1;
}

static bool is_messages(const struct atr_json *first)
{
    return atr_json_is(first, ATR_JSON_OBJECT) && atr_json_get(first, "role") && !is_row(first);
}

/* '[' rows (or messages) in an array, '{' JSON lines or one pretty row. */
static const struct atr_json_stream oc_stream = {
    "a JSON array of chat rows or JSON lines", "at least one row", "at least one row",
    is_messages, walk_row, walk_messages,
};

static int next(struct atr_reader *r, struct atr_trace *t)
{
    return atr_reader_json_stream(r, t, &oc_stream);
}

/* ---- sniffing ---- */

/* Whether some "role" has the value "ai" (nebius) in head. */
static bool has_ai_role(const char *head, size_t len)
{
    static const char *const forms[] = {"\"role\": \"ai\"", "\"role\":\"ai\"", NULL};
    for (size_t i = 0; forms[i]; i++)
        if (memmem(head, len, forms[i], strlen(forms[i])))
            return true;
    return false;
}

/* A pretty-printed single row starts with a line holding only "{". */
static bool pretty_object(const char *p, const char *end)
{
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p == end || *p == '\n';
}

static int sniff(const char *head, size_t len, const char *name)
{
    size_t i;
    char first = atr_sniff_first(head, len, &i);
    if (first != '[' && first != '{')
        return 0;
    if (atr_chat_has_key(head, len, "\"trajectory_format\"") ||
        atr_chat_has_key(head, len, "\"observation\""))
        return 0;   /* mini-swe-agent, SWE-agent, OpenHands */
    bool role = atr_chat_has_key(head, len, "\"role\"");
    /* SWE-rebench rows keep their OpenAI-chat messages in "trajectory". */
    bool chat = role && (atr_chat_has_key(head, len, "\"messages\"") ||
                         (atr_chat_has_key(head, len, "\"trajectory\"") &&
                          atr_chat_has_key(head, len, "\"tool_calls\"")));
    bool nebius = role && atr_chat_has_key(head, len, "\"trajectory\"") &&
                  has_ai_role(head, len) && atr_chat_has_key(head, len, "\"text\"");
    if (first == '[')
        return chat || nebius ? 90 : role ? 30 : 0;
    if (pretty_object(head + i, head + len))
        return (chat || nebius) && !atr_chat_has_key(head, len, "\"info\"") ? 25 : 0;
    return chat || nebius ? 75 : 0;
}

const struct atr_format atr_format_openai_chat = {
    "openai-chat",
    "OpenAI-chat agent rows: messages + tool_calls, SWE-smith inline calls, nebius "
    "SWE-agent (JSON array or JSON lines)",
    sniff,
    next,
    atr_reader_json_stream_free,
};
