/* swe-agent.c - SWE-agent .traj trajectories (one JSON document, one trace).
 *
 * A .traj holds "history" (every chat message, demonstrations flagged
 * is_demo) and "trajectory" (one entry per executed action, with its
 * execution_time and the shell state after it). Model calls are the
 * non-demo assistant messages of the history, each prompted with every
 * message before it; the k-th call's tool step is the k-th trajectory entry,
 * so steps come out as llm, tool, llm, tool... Files with only a history
 * (demonstrations) take their tools from the messages' actions; files with
 * only a trajectory rebuild the chat from its responses and observations. */
#include <math.h>
#include <string.h>

#include "trace/convo.h"
#include "trace/fmt/chat-render.h"
#include "trace/reader.h"

struct swe {
    struct atr_reader *r;
    struct atr_trace *t;
    struct atr_convo convo;
    const struct atr_json *next_entry;   /* first trajectory entry not yet emitted */
    const char *cwd, *open_file;         /* shell state before the next action */
};

/* ---- sniffing ----------------------------------------------------------- */

static int sniff(const char *head, size_t len, const char *name)
{
    if (atr_sniff_first(head, len, NULL) != '{')
        return 0;
    int traj = atr_chat_has_key(head, len, "\"trajectory\"");
    int hist = atr_chat_has_key(head, len, "\"history\"");
    int named = atr_chat_name_ends(name, ".traj") || atr_chat_name_ends(name, ".traj.gz") ||
                atr_chat_name_ends(name, ".traj.zst");
    if (traj && (hist || atr_chat_has_key(head, len, "\"observation\"")))
        return 95;
    /* Demonstrations carry only the history, whose messages SWE-agent tags
     * with message_type (OpenHands' "history" events do not). */
    if (hist && atr_chat_has_key(head, len, "\"message_type\"") &&
        atr_chat_has_key(head, len, "\"role\""))
        return 90;
    if (atr_chat_has_key(head, len, "\"environment\"") && memmem(head, len, "\"swe_main\"", 10))
        return 85;
    return named ? 30 : 0;
}

/* ---- actions -> tool steps ---------------------------------------------- */

static const char *dup_opt(struct atr_trace *t, const char *s)
{
    return s && *s ? atr_arena_strdup(&t->arena, s) : NULL;
}

/* An editor step; args (may be NULL) are str_replace_editor's arguments,
 * which give the sizes of what it writes. SWE-agent's own `create` makes
 * an empty file. */
static struct atr_step *set_editor(struct swe *sw, const char *action, const char *path)
{
    struct atr_step *s = atr_trace_add_step(sw->t, ATR_STEP_TOOL);
    s->tool = "editor";
    s->action = atr_arena_strdup(&sw->t->arena, action);
    s->path = dup_opt(sw->t, path);
    s->cwd = dup_opt(sw->t, sw->cwd);
    atr_editor_sizes(s, NULL);
    if (s->file_op && strcmp(action, "create") == 0)
        s->bytes = 0;
    return s;
}

static const char *word_after(const char **v, int n, const char *flag)
{
    for (int i = 0; i + 1 < n; i++)
        if (strcmp(v[i], flag) == 0)
            return v[i + 1];
    return NULL;
}

/* str_replace_editor as a command line: its --file_text, --old_str and
 * --new_str words give the sizes (content is never kept). */
static void str_editor_sizes(struct atr_step *s, const char *const *v, int n)
{
    const char *keys[][2] = {{"--file_text", "file_text"}, {"--old_str", "old_str"},
                             {"--new_str", "new_str"}};
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *args = atr_json_new(&a, ATR_JSON_OBJECT);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *w = word_after((const char **)v, n, keys[k][0]);
        if (w)
            atr_json_append(&a, args, keys[k][1], atr_json_new_str(&a, w, strlen(w)));
    }
    s->bytes = ATR_UNSET;
    atr_editor_sizes(s, args);
    atr_arena_release(&a);
}

static void add_browser(struct swe *sw, const char **v, int n)
{
    struct atr_step *s = atr_trace_add_step(sw->t, ATR_STEP_TOOL);
    s->tool = "browser";
    s->action = atr_arena_strdup(&sw->t->arena, n > 1 ? v[1] : "unknown");
    s->url = dup_opt(sw->t, word_after(v, n, "--url"));
}

static void add_bash(struct swe *sw, const char *cmd, size_t len)
{
    struct atr_step *s = atr_trace_add_step(sw->t, ATR_STEP_TOOL);
    s->tool = "bash";
    s->command = atr_arena_strndup(&sw->t->arena, cmd, len);
    s->cwd = dup_opt(sw->t, sw->cwd);
}

/* One tool step for an action string (nothing for an empty one). The step
 * is left last in the trace so the caller can add its duration. Returns
 * whether a step was added. */
static int add_action(struct swe *sw, const char *act, size_t len)
{
    while (len && (*act == ' ' || *act == '\t' || *act == '\r' || *act == '\n'))
        act++, len--;
    while (len && (act[len - 1] == ' ' || act[len - 1] == '\t' || act[len - 1] == '\r' ||
                   act[len - 1] == '\n'))
        len--;
    if (!len)
        return 0;
    const char *v[8];
    int n = atr_swe_split_words(&sw->r->scratch, act, len, v, 8);
    if (n == 0) {
        add_bash(sw, act, len);
        return 1;
    }
    const struct atr_swe_cmd *ec = atr_swe_cmd_find(v[0]);
    if (ec) {
        struct atr_step *s = set_editor(sw, v[0], atr_swe_cmd_path(ec, v, n, sw->open_file));
        if (s->file_op && strcmp(v[0], "create") != 0 && strcmp(s->file_op, "view") != 0)
            s->bytes = atr_swe_edit_bytes(act, len);
    } else if (strcmp(v[0], "str_replace_editor") == 0 && n > 1) {
        struct atr_step *s = set_editor(sw, v[1], n > 2 ? v[2] : NULL);
        str_editor_sizes(s, v, n);
    } else if (strcmp(v[0], "web_browser") == 0) {
        add_browser(sw, v, n);
    } else if (strncmp(v[0], "exit_", 5) == 0 && n == 1) {
        /* exit_cost, exit_context, ...: SWE-agent's autosubmission, which
         * runs the submit command for the agent. */
        set_editor(sw, v[0], NULL);
    } else {
        add_bash(sw, act, len);
    }
    return 1;
}

/* ---- shell state -------------------------------------------------------- */

/* "n/a" and template placeholders ("<path>") are no file. */
static const char *state_value(struct atr_arena *a, const char *s, size_t n)
{
    if (!s || !n || (n == 3 && memcmp(s, "n/a", 3) == 0) || s[0] == '<')
        return NULL;
    return atr_arena_strndup(a, s, n);
}

/* The last "(MARK...)" of an observation, to the ')' ending its line. */
static const char *scan_marker(struct atr_arena *a, const char *text, size_t len,
                               const char *mark)
{
    size_t k = strlen(mark);
    const char *last = NULL, *p = text, *end = text + len;
    while ((p = memmem(p, (size_t)(end - p), mark, k)) != NULL) {
        last = p + k;
        p += k;
    }
    if (!last)
        return NULL;
    const char *q = last;
    while (q < end && *q != '\n')
        q++;
    while (q > last && (q[-1] == '\r' || q[-1] == ' '))
        q--;
    if (q == last || q[-1] != ')')
        return NULL;
    return state_value(a, last, (size_t)(q - 1 - last));
}

/* Observations end with "(Open file: F)\n(Current directory: D)": the
 * shell state of history-only files, which have no trajectory entries. */
static void scan_observation(struct swe *sw, const char *text, size_t len)
{
    const char *f = scan_marker(&sw->r->scratch, text, len, "(Open file: ");
    const char *d = scan_marker(&sw->r->scratch, text, len, "(Current directory: ");
    if (memmem(text, len, "(Open file: ", 12))
        sw->open_file = f;
    if (d)
        sw->cwd = d;
}

/* An entry's "state": an object, or (older versions) the same as a JSON
 * string. Unparsable state is no state: it only refines cwd and paths. */
static const struct atr_json *state_object(struct swe *sw, const struct atr_json *st)
{
    return atr_chat_object(&sw->r->scratch, st, sw->r->opts.max_depth);
}

/* ---- trajectory entries ------------------------------------------------- */

static int check_entry(struct atr_reader *r, const struct atr_json *e)
{
    if (!atr_json_is(e, ATR_JSON_OBJECT))
        return atr_reader_fail_at(r, e, "expected a trajectory entry object, found %s",
                                  atr_json_type_name(e->type));
    const char *unused = NULL;
    if (atr_reader_opt_str(r, e, "action", &unused) < 0 ||
        atr_reader_opt_str(r, e, "observation", &unused) < 0 ||
        atr_reader_opt_str(r, e, "response", &unused) < 0)
        return -1;
    const struct atr_json *et = atr_json_get(e, "execution_time");
    if (et && et->type != ATR_JSON_NULL && et->type != ATR_JSON_NUMBER)
        return atr_reader_fail_at(r, et, "expected \"execution_time\" to be a number, found %s",
                                  atr_json_type_name(et->type));
    const struct atr_json *st = atr_json_get(e, "state");
    if (st && st->type != ATR_JSON_NULL && st->type != ATR_JSON_STRING &&
        st->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(r, st, "expected \"state\" to be a string or an object, found %s",
                                  atr_json_type_name(st->type));
    return 0;
}

static int64_t seconds_to_ms(double sec)
{
    if (!isfinite(sec) || sec < 0 || sec > 1e9)
        return ATR_UNSET;
    return (int64_t)llround(sec * 1000.0);
}

/* The tool step of one trajectory entry. The action ran in the state the
 * previous entry left (its own "state" is the one after it); the first
 * entry has only its own. */
static int emit_entry(struct swe *sw, const struct atr_json *e)
{
    if (check_entry(sw->r, e) < 0)
        return -1;
    const struct atr_json *st = state_object(sw, atr_json_get(e, "state"));
    size_t n;
    const char *dir = atr_json_get_str(st, "working_dir", &n);
    const char *after_cwd = state_value(&sw->r->scratch, dir, dir ? n : 0);
    const char *file = atr_json_get_str(st, "open_file", &n);
    const char *after_file = state_value(&sw->r->scratch, file, file ? n : 0);
    if (!sw->cwd)
        sw->cwd = after_cwd;
    if (!sw->open_file)
        sw->open_file = after_file;
    const char *act = atr_json_get_str(e, "action", &n);
    double sec;
    if (act && add_action(sw, act, n) && atr_json_get_num(e, "execution_time", &sec))
        sw->t->steps[sw->t->n_steps - 1].dur_ms = seconds_to_ms(sec);
    if (after_cwd)
        sw->cwd = after_cwd;
    if (st)
        sw->open_file = after_file;
    return 0;
}

/* ---- history messages --------------------------------------------------- */

/* A message's role, and its content and tool calls as prompt text. */
static int read_msg(struct swe *sw, const struct atr_json *m, const char **role,
                    const char **text, size_t *len)
{
    const char *unused = NULL;
    if (atr_chat_check_msg(sw->r, m, "history message", role) < 0 ||
        atr_reader_opt_str(sw->r, m, "action", &unused) < 0)
        return -1;
    *text = atr_chat_render(&sw->r->scratch, atr_json_get(m, "content"),
                            atr_json_get(m, "tool_calls"), len);
    return 0;
}

/* A tool call of a history-only file whose message lacks "action". */
static void add_tool_call(struct swe *sw, const struct atr_json *call)
{
    const char *name;
    const struct atr_json *raw;
    if (!atr_chat_tool_call(call, &name, &raw))
        return;
    const struct atr_json *args = atr_chat_object(&sw->r->scratch, raw, sw->r->opts.max_depth);
    size_t n;
    const char *cmd = atr_json_get_str(args, "command", &n);
    if (strcmp(name, "bash") == 0 && cmd) {
        add_bash(sw, cmd, n);
    } else if (strcmp(name, "str_replace_editor") == 0 && cmd) {
        struct atr_step *s = set_editor(sw, cmd, atr_json_get_str(args, "path", NULL));
        s->bytes = ATR_UNSET;
        atr_editor_sizes(s, args);
    } else if (atr_swe_cmd_find(name)) {
        const char *path = atr_json_get_str(args, "path", NULL);
        if (!path)
            path = atr_json_get_str(args, "filename", NULL);
        struct atr_step *s = set_editor(sw, name, path ? path : sw->open_file);
        if (s->file_op && strcmp(s->file_op, "replace") == 0)
            atr_editor_sizes(s, args);    /* edit {search, replace} */
    } else {
        struct atr_step *s = atr_trace_add_step(sw->t, ATR_STEP_TOOL);
        s->tool = atr_arena_strdup(&sw->t->arena, name);
        s->cwd = dup_opt(sw->t, sw->cwd);
        if (raw) {
            s->extra = atr_json_new(&sw->t->arena, ATR_JSON_OBJECT);
            atr_json_append(&sw->t->arena, s->extra, "arguments",
                            atr_json_copy(&sw->t->arena, raw));
        }
    }
}

/* Tool steps of a model call that has no trajectory entry. */
static void emit_msg_tools(struct swe *sw, const struct atr_json *m)
{
    size_t n;
    const char *act = atr_json_get_str(m, "action", &n);
    if (act && add_action(sw, act, n))
        return;
    const struct atr_json *tc = atr_json_get(m, "tool_calls");
    if (!atr_json_is(tc, ATR_JSON_ARRAY))
        return;
    for (const struct atr_json *c = tc->u.kids.first; c; c = c->next)
        add_tool_call(sw, c);
}

static int is_demo(const struct atr_json *m)
{
    return atr_json_is(atr_json_get(m, "is_demo"), ATR_JSON_TRUE);
}

/* Emits the trajectory entry of the next model call (the two line up). */
static int emit_next_entry(struct swe *sw)
{
    const struct atr_json *e = sw->next_entry;
    sw->next_entry = e->next;
    return emit_entry(sw, e);
}

static int walk_message(struct swe *sw, const struct atr_json *m)
{
    const char *role = NULL, *text;
    size_t len;
    if (read_msg(sw, m, &role, &text, &len) < 0)
        return -1;
    int demo = is_demo(m);
    if (strcmp(role, "assistant") == 0 && !demo) {
        atr_convo_llm(&sw->convo, text, len);
        if (!sw->next_entry)
            emit_msg_tools(sw, m);
        else if (emit_next_entry(sw) < 0)
            return -1;
    } else if (!demo && strcmp(role, "system") != 0) {
        scan_observation(sw, text, len);
    }
    atr_convo_add(&sw->convo, role, text, len);
    return 0;
}

static int walk_history(struct swe *sw, const struct atr_json *history)
{
    for (const struct atr_json *m = history->u.kids.first; m; m = m->next)
        if (walk_message(sw, m) < 0)
            return -1;
    /* Entries past the last model call (an autosubmission after the cost
     * limit, say) still ran: keep them as trailing tool steps. */
    while (sw->next_entry)
        if (emit_next_entry(sw) < 0)
            return -1;
    return 0;
}

/* Adds the messages of an entry's "query" (the exact prompt SWE-agent 1.x
 * sent) to the conversation: the only record of the system and instance
 * prompts in a file without history. */
static int add_query(struct swe *sw, const struct atr_json *query)
{
    for (const struct atr_json *m = query->u.kids.first; m; m = m->next) {
        const char *role = NULL, *text;
        size_t len;
        if (read_msg(sw, m, &role, &text, &len) < 0)
            return -1;
        atr_convo_add(&sw->convo, role, text, len);
    }
    return 0;
}

/* No history: each entry is one model call (its response) and its action;
 * the observation joins the prompt of the next call. */
static int walk_trajectory(struct swe *sw, const struct atr_json *traj)
{
    for (const struct atr_json *e = traj->u.kids.first; e; e = e->next) {
        if (check_entry(sw->r, e) < 0)
            return -1;
        const struct atr_json *q = atr_json_get(e, "query");
        if (e == traj->u.kids.first && atr_json_is(q, ATR_JSON_ARRAY) && add_query(sw, q) < 0)
            return -1;
        size_t len = 0, olen = 0;
        const char *resp = atr_json_get_str(e, "response", &len);
        atr_convo_llm(&sw->convo, resp ? resp : "", resp ? len : 0);
        atr_convo_add(&sw->convo, "assistant", resp ? resp : "", resp ? len : 0);
        if (emit_entry(sw, e) < 0)
            return -1;
        const char *obs = atr_json_get_str(e, "observation", &olen);
        atr_convo_add(&sw->convo, "user", obs ? obs : "", obs ? olen : 0);
    }
    return 0;
}

/* ---- metadata ----------------------------------------------------------- */

static void meta_count(struct atr_trace *t, const struct atr_json *stats, const char *key,
                       const char *meta_key)
{
    double v;
    if (atr_json_get_num(stats, key, &v) && isfinite(v) && v > 0 && v < 1e15)
        atr_trace_meta_set_i64(t, meta_key, (int64_t)v);
}

/* replay_config: an object, or (SWE-agent 0.x) the same as a JSON string. */
static const struct atr_json *replay_config(struct swe *sw, const struct atr_json *doc)
{
    return state_object(sw, atr_json_get(doc, "replay_config"));
}

static const char *config_model(const struct atr_json *rc)
{
    const struct atr_json *model = atr_json_get(atr_json_get(rc, "agent"), "model");
    const char *name = atr_json_get_str(model, "name", NULL);
    return name ? name : atr_json_get_str(model, "model_name", NULL);
}

static int set_meta(struct swe *sw, const struct atr_json *doc)
{
    struct atr_trace *t = sw->t;
    const struct atr_json *info = atr_json_get(doc, "info");
    if (info && info->type != ATR_JSON_NULL && info->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(sw->r, info, "expected \"info\" to be an object, found %s",
                                  atr_json_type_name(info->type));
    const struct atr_json *rc = replay_config(sw, doc);
    const char *model = config_model(rc);
    if (model)
        atr_trace_meta_set_str(t, "model", model);
    const char *exit_status = atr_json_get_str(info, "exit_status", NULL);
    if (exit_status) {
        atr_trace_meta_set_str(t, "exit_status", exit_status);
        atr_trace_meta_set_str(t, "outcome", exit_status);
    }
    const struct atr_json *stats = atr_json_get(info, "model_stats");
    meta_count(t, stats, "tokens_sent", "recorded_input_tokens");
    meta_count(t, stats, "tokens_received", "recorded_output_tokens");
    meta_count(t, stats, "api_calls", "api_calls");
    const char *id = atr_json_get_str(atr_json_get(rc, "problem_statement"), "id", NULL);
    if (id)
        atr_trace_meta_set_str(t, "instance_id", id);
    else
        id = atr_chat_base_name(&sw->r->scratch, atr_input_name(sw->r->in),
                                (const char *const[]){".traj", ".json", NULL});
    t->trace_id = atr_arena_printf(&t->arena, "swe-agent/%s", id);
    return 0;
}

/* model_stats records only totals over api_calls calls: the per-call
 * estimates are scaled to them ("scaled"), where the calls in the trace
 * are the calls counted (api_calls absent or equal to them). */
static void scale_to_totals(struct atr_trace *t)
{
    int64_t in = -1, out = -1, calls = -1;
    atr_json_get_i64(t->meta, "recorded_input_tokens", &in);
    atr_json_get_i64(t->meta, "recorded_output_tokens", &out);
    atr_json_get_i64(t->meta, "api_calls", &calls);
    int64_t n = 0;
    for (size_t k = 0; k < t->n_steps; k++)
        n += t->steps[k].kind == ATR_STEP_LLM;
    if (calls < 0 || calls == n)
        atr_trace_scale_counts(t, in, out);
}

/* ---- the reader --------------------------------------------------------- */

static int read_doc(struct swe *sw, const struct atr_json *doc)
{
    const struct atr_json *history, *traj;
    if (!atr_json_is(doc, ATR_JSON_OBJECT))
        return atr_reader_fail_at(sw->r, doc, "expected a SWE-agent trajectory object, found %s",
                                  atr_json_type_name(doc->type));
    if (atr_reader_opt(sw->r, doc, "history", ATR_JSON_ARRAY, &history) < 0 ||
        atr_reader_opt(sw->r, doc, "trajectory", ATR_JSON_ARRAY, &traj) < 0)
        return -1;
    if (!history && !traj)
        return atr_reader_fail_at(sw->r, doc, "expected a \"history\" or \"trajectory\" array");
    if (set_meta(sw, doc) < 0)
        return -1;
    sw->next_entry = traj ? traj->u.kids.first : NULL;
    int rc = 0;
    if (history && history->u.kids.count)
        rc = walk_history(sw, history);
    else if (traj)
        rc = walk_trajectory(sw, traj);
    if (rc == 0) {
        scale_to_totals(sw->t);
        atr_trace_fit_ids(sw->t);
    }
    return rc;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct atr_json *doc;
    int rc = atr_reader_document(r, &doc);
    if (rc <= 0)
        return rc;
    struct swe sw = {.r = r, .t = t};
    atr_convo_init(&sw.convo, t, r->opts.keep_content);
    sw.convo.mark_origin = true;
    rc = read_doc(&sw, doc);
    atr_convo_release(&sw.convo);
    return rc < 0 ? -1 : 1;
}

const struct atr_format atr_format_swe_agent = {
    "swe-agent",
    "SWE-agent .traj trajectory (history + trajectory, one JSON document)",
    sniff,
    next,
    NULL,
};
