/* browsergym.c - BrowserGym web-agent trajectories as Go-Browse publishes
 * them (Go-Browse-WA JSON lines: one row per step, docs/web-agent-traces.md).
 *
 * A row is {step_data: {action, thought, obs, misc, step_number},
 * traj_data: {goal, reward, success, traj_num, traj_length, ...},
 * node_data: {node_url}, graph_data: {domain, root_url}}; consecutive rows
 * of one traj_num are one trajectory, so the reader holds the first row of
 * the next one while it returns the current trace. Each action string
 * (webaction.h: BrowserGym calls, WebArena commands) becomes browser steps
 * with the verb, the element and the url; its text arguments (what was
 * typed, said or scrolled), the thought, the goal and the page itself (the
 * accessibility tree) are content and are dropped; with keep_content the
 * text filled or typed and the key pressed are kept as extra.params, which
 * a replay with the run's recording enters. The page's url and the
 * BrowserGym clock (obs.elapsed_time) are kept; obs.last_action_error says
 * whether the step before failed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"
#include "trace/webaction.h"
#include "util/alloc.h"

/* What a row says, pointing into the arena it was parsed or copied into. */
struct row {
    int64_t traj;
    const char *action;         /* NULL: the agent produced none */
    const char *url;            /* obs.url: the page acted on */
    double elapsed;             /* obs.elapsed_time, seconds; NAN when absent */
    const char *error;          /* obs.last_action_error, NULL when absent */
    const char *domain, *root_url, *node_url;
    double reward;              /* NAN when absent */
    int success;                /* -1 when absent */
    int64_t traj_length;
};

/* BrowserGym's multiaction strings hold a few calls; a row with more is
 * not an agent's step (and would cost a step struct each). */
#define MAX_ACTIONS 256

struct gb {
    struct atr_arena rows;      /* the row being read, cleared per row */
    struct atr_arena hold;      /* the held row's strings */
    struct row held;
    bool have_held, done, any;  /* any: a row was read */
};

/* One trace being filled. */
struct build {
    struct atr_trace *t;
    double t0;                  /* elapsed_time of the first timed row */
    int64_t last_ms;
    size_t prev_first, prev_n;  /* the previous row's steps */
    bool prev;
    int64_t skipped;            /* rows without an action that parses */
    bool keep_content;
};

/* A row's observation (DOM, accessibility tree) comes before traj_data
 * and can fill the whole head: step_data's own "parsed_action", written
 * just before it, tells too. */
static int sniff(const char *head, size_t len, const char *name)
{
    (void)name;
    if (atr_sniff_first(head, len, NULL) != '{' || !memmem(head, len, "\"step_data\"", 11))
        return 0;
    return memmem(head, len, "\"traj_data\"", 11) || memmem(head, len, "\"parsed_action\"", 15)
               ? 95
               : 0;
}

/* ---- rows ---------------------------------------------------------------- */

static int opt_num(struct atr_reader *r, const struct atr_json *obj, const char *key, double *out)
{
    const struct atr_json *v;
    *out = NAN;
    if (atr_reader_opt(r, obj, key, ATR_JSON_NUMBER, &v) < 0)
        return -1;
    if (v && isfinite(v->u.num))
        *out = v->u.num;
    return 0;
}

static int opt_obj(struct atr_reader *r, const struct atr_json *obj, const char *key,
                   const struct atr_json **out)
{
    return atr_reader_opt(r, obj, key, ATR_JSON_OBJECT, out);
}

/* Counts the actions now, while the row's positions are at hand. */
static int check_actions(struct atr_reader *r, const struct atr_json *sd, const char *action)
{
    size_t pos = 0, len = action ? strlen(action) : 0, n = 0;
    struct atr_web_action a;
    while (action && atr_web_action_next(action, len, &pos, &a) == 1)
        if (++n > MAX_ACTIONS)
            return atr_reader_fail_at(r, atr_json_get(sd, "action"),
                                      "expected at most %d actions in one step, found more",
                                      MAX_ACTIONS);
    return 0;
}

static int read_step(struct atr_reader *r, const struct atr_json *sd, struct row *row)
{
    const struct atr_json *obs;
    if (atr_reader_opt_str(r, sd, "action", &row->action) < 0 ||
        check_actions(r, sd, row->action) < 0 || opt_obj(r, sd, "obs", &obs) < 0 ||
        atr_reader_opt_str(r, obs, "url", &row->url) < 0 ||
        opt_num(r, obs, "elapsed_time", &row->elapsed) < 0 ||
        atr_reader_opt_str(r, obs, "last_action_error", &row->error) < 0)
        return -1;
    return 0;
}

static int read_traj(struct atr_reader *r, const struct atr_json *obj, const struct atr_json *td,
                     struct row *row)
{
    const struct atr_json *v, *graph, *node;
    struct atr_json *num;
    if (atr_reader_req(r, td, "traj_num", ATR_JSON_NUMBER, &num) < 0)
        return -1;
    if (!num->is_int)
        return atr_reader_fail_at(r, num, "expected \"traj_num\" to be an integer");
    row->traj = num->i;
    if (opt_num(r, td, "reward", &row->reward) < 0 ||
        atr_reader_opt_i64(r, td, "traj_length", &row->traj_length) < 0 ||
        opt_obj(r, obj, "graph_data", &graph) < 0 || opt_obj(r, obj, "node_data", &node) < 0 ||
        atr_reader_opt_str(r, graph, "domain", &row->domain) < 0 ||
        atr_reader_opt_str(r, graph, "root_url", &row->root_url) < 0 ||
        atr_reader_opt_str(r, node, "node_url", &row->node_url) < 0)
        return -1;
    v = atr_json_get(td, "success");
    if (v && v->type != ATR_JSON_NULL && v->type != ATR_JSON_TRUE && v->type != ATR_JSON_FALSE)
        return atr_reader_fail_at(r, v, "expected \"success\" to be a boolean, found %s",
                                  atr_json_type_name(v->type));
    row->success = !v || v->type == ATR_JSON_NULL ? -1 : v->type == ATR_JSON_TRUE;
    return 0;
}

/* The next row, checked while its positions are the reader's last parse:
 * 1, 0 at the end, -1 after fail. */
static int read_row(struct atr_reader *r, struct gb *st, struct row *row)
{
    struct atr_json *obj, *sd, *td;
    atr_arena_clear(&st->rows);
    int rc = atr_reader_json_line(r, &st->rows, &obj);
    if (rc == 0 && !st->any)
        return atr_reader_fail(r, 1, 1, "expected Go-Browse step rows, got empty input");
    if (rc <= 0)
        return rc;
    st->any = true;
    *row = (struct row){.traj_length = ATR_UNSET};
    if (!atr_json_is(obj, ATR_JSON_OBJECT))
        return atr_reader_fail_at(r, obj, "expected a Go-Browse step row (an object with "
                                  "\"step_data\" and \"traj_data\"), found %s",
                                  atr_json_type_name(obj->type));
    if (atr_reader_req(r, obj, "step_data", ATR_JSON_OBJECT, &sd) < 0 ||
        atr_reader_req(r, obj, "traj_data", ATR_JSON_OBJECT, &td) < 0 ||
        read_step(r, sd, row) < 0 || read_traj(r, obj, td, row) < 0)
        return -1;
    return 1;
}

static const char *dup(struct atr_arena *a, const char *s)
{
    return s ? atr_arena_strdup(a, s) : NULL;
}

/* Keeps a row past the clearing of the arena it was parsed into. */
static void hold(struct gb *st, const struct row *row)
{
    atr_arena_clear(&st->hold);
    st->held = *row;
    st->held.action = dup(&st->hold, row->action);
    st->held.url = dup(&st->hold, row->url);
    st->held.error = dup(&st->hold, row->error);
    st->held.domain = dup(&st->hold, row->domain);
    st->held.root_url = dup(&st->hold, row->root_url);
    st->held.node_url = dup(&st->hold, row->node_url);
    st->have_held = true;
}

/* ---- steps --------------------------------------------------------------- */

/* BrowserGym finds an element by its bid attribute; ids with other
 * characters stay as they are in "element_id". */
static int simple_id(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!s[i] || !strchr("abcdefghijklmnopqrstuvwxyz"
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", s[i]))
            return 0;
    return len > 0;
}

/* A Python string literal's text without its escapes (\n, \', ...). */
static struct atr_json *unescaped(struct atr_arena *a, const char *s, size_t len)
{
    char *out = atr_arena_alloc(a, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < len) {
            c = s[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        out[n++] = c;
    }
    return atr_json_new_str(a, out, n);
}

/* With keep_content: what the action entered, under the name the browser
 * driver reads (Playwright's params: fill's value, type's text, press's
 * key). */
static void add_params(struct atr_trace *t, struct atr_step *s, const struct atr_web_action *a)
{
    const char *key = strcmp(a->verb, "press") == 0  ? "key"
                      : strcmp(a->verb, "type") == 0 ? "text"
                                                     : "value";
    struct atr_json *params = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    atr_json_append(&t->arena, params, key, unescaped(&t->arena, a->value, a->value_len));
    if (!s->extra)
        s->extra = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    atr_json_append(&t->arena, s->extra, "params", params);
}

static void add_action(struct build *b, const struct row *row, const struct atr_web_action *a,
                       int64_t t_ms)
{
    struct atr_trace *t = b->t;
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    s->tool = "browser";
    s->action = atr_arena_strdup(&t->arena, a->verb);
    s->t_ms = t_ms;
    if (a->url)
        s->url = atr_arena_strndup(&t->arena, a->url, a->url_len);
    else if (row->url)
        s->url = atr_arena_strdup(&t->arena, row->url);
    if (a->target && a->style == ATR_WEB_BROWSERGYM && simple_id(a->target, a->target_len)) {
        s->selector = atr_arena_printf(&t->arena, "[bid=\"%.*s\"]", (int)a->target_len, a->target);
    } else if (a->target) {
        s->extra = atr_json_new(&t->arena, ATR_JSON_OBJECT);
        atr_json_append(&t->arena, s->extra, "element_id",
                        atr_json_new_str(&t->arena, a->target, a->target_len));
    }
    if (a->value && b->keep_content)
        add_params(t, s, a);
}

/* The row's time on the trace's clock, never before the step ahead. */
static int64_t row_ms(struct build *b, const struct row *row)
{
    if (isnan(row->elapsed))
        return ATR_UNSET;
    if (isnan(b->t0))
        b->t0 = row->elapsed;
    double ms = (row->elapsed - b->t0) * 1000.0;
    int64_t v = ms > 0 && ms < 1e15 ? (int64_t)llround(ms) : 0;
    if (b->last_ms != ATR_UNSET && v < b->last_ms)
        v = b->last_ms;
    return b->last_ms = v;
}

/* The error this row's observation reports is the previous action's. */
static void set_prev_exit(struct build *b, const struct row *row)
{
    if (!b->prev || !row->error)
        return;
    for (size_t k = b->prev_first; k < b->prev_first + b->prev_n; k++)
        b->t->steps[k].exit_code = row->error[0] ? 1 : 0;
}

static void add_row(struct build *b, const struct row *row)
{
    set_prev_exit(b, row);
    int64_t t_ms = row_ms(b, row);
    size_t first = b->t->n_steps, pos = 0, len = row->action ? strlen(row->action) : 0;
    struct atr_web_action a;
    int rc = 0;
    while (row->action && (rc = atr_web_action_next(row->action, len, &pos, &a)) == 1)
        add_action(b, row, &a, t_ms);
    if (!row->action || rc < 0 || b->t->n_steps == first)
        b->skipped++;
    b->prev = true;
    b->prev_first = first;
    b->prev_n = b->t->n_steps - first;
}

/* ---- traces -------------------------------------------------------------- */

static void start_trace(struct atr_trace *t, const struct row *row)
{
    if (row->domain)
        t->trace_id = atr_arena_printf(&t->arena, "browsergym/%s-%lld", row->domain,
                                       (long long)row->traj);
    else
        t->trace_id = atr_arena_printf(&t->arena, "browsergym/%lld", (long long)row->traj);
    atr_trace_meta_set_i64(t, "traj_num", row->traj);
    if (row->domain)
        atr_trace_meta_set_str(t, "domain", row->domain);
    if (row->root_url)
        atr_trace_meta_set_str(t, "root_url", row->root_url);
    if (row->node_url)
        atr_trace_meta_set_str(t, "node_url", row->node_url);
    if (row->success >= 0)
        atr_trace_meta_set_str(t, "outcome", row->success ? "success" : "failure");
    if (!isnan(row->reward))
        atr_json_append(&t->arena, t->meta, "reward", atr_json_new_num(&t->arena, row->reward));
    if (row->traj_length != ATR_UNSET)
        atr_trace_meta_set_i64(t, "traj_length", row->traj_length);
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct gb *st = r->state;
    if (!st)
        st = r->state = xcalloc(1, sizeof *st);
    if (st->done)
        return 0;
    struct row row;
    if (!st->have_held) {
        int rc = read_row(r, st, &row);
        if (rc <= 0)
            return rc;
        hold(st, &row);
    }
    struct build b = {.t = t, .t0 = NAN, .last_ms = ATR_UNSET,
                      .keep_content = r->opts.keep_content};
    start_trace(t, &st->held);
    add_row(&b, &st->held);
    st->have_held = false;
    int64_t traj = st->held.traj;
    int rc;
    while ((rc = read_row(r, st, &row)) == 1 && row.traj == traj)
        add_row(&b, &row);
    if (rc < 0)
        return -1;
    if (rc == 1)
        hold(st, &row);
    else
        st->done = true;
    if (b.skipped)
        atr_trace_meta_set_i64(t, "skipped_actions", b.skipped);
    return 1;
}

static void free_state(void *state)
{
    struct gb *st = state;
    if (!st)
        return;
    atr_arena_release(&st->rows);
    atr_arena_release(&st->hold);
    free(st);
}

const struct atr_format atr_format_browsergym = {
    "browsergym",
    "BrowserGym web-agent steps (Go-Browse-WA JSON lines; BrowserGym and WebArena actions)",
    sniff,
    next,
    free_state,
};
