/* html-router.c - `atr report`'s Router lab: a learned router's model file
 * (`atr router train`, "atr-router/1") and evaluations (`atr router eval
 * --json`, "atr-router-eval/1"), recognised by content. With a model the
 * section embeds its weights and, per llm turn of the report's traces (up
 * to LAB_TURNS_MAX), the request figures the features come from, so
 * report-router.js can decide live (sliders per feature) and per turn of a
 * picked trace, operation for operation as atr_router_model_decide does.
 * The tables (model, picks per trace, confusion) read without JS. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/writer.h"
#include "policy/learned-model.h"
#include "report/html-impl.h"
#include "report/html.h"
#include "router/decide.h"
#include "sched/workload.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/input.h"

#define ROUTER_FILE_MAX ((size_t)64 << 20)   /* largest model or evaluation read */
#define LAB_TURNS_MAX 20000                  /* llm turns embedded for the per-turn view */

struct router_eval {
    const char *path;
    const struct atr_json *root;           /* in h's arena */
    size_t n;                              /* candidates */
};

struct atr_html_router {
    bool has_model;
    const char *model_path;                /* in h's arena */
    struct atr_router_model model;
    struct router_eval *evals;
    size_t n_evals;
};

bool atr_html_router_sniff(const char *head, size_t len)
{
    static const char model[] = "\"atr-router/1\"", eval[] = "\"atr-router-eval/1\"";
    return atr_sniff_first(head, len, NULL) == '{' &&
           (memmem(head, len, model, sizeof model - 1) || memmem(head, len, eval, sizeof eval - 1));
}

bool atr_html_has_router(const struct atr_html *h)
{
    return h->router && (h->router->has_model || h->router->n_evals);
}

void atr_html_router_free(struct atr_html_router *r)
{
    if (!r)
        return;
    if (r->has_model)
        atr_router_model_release(&r->model);
    free(r->evals);
    free(r);
}

/* The whole (decompressed) file, or -1 with err. */
static int slurp(const char *path, struct atr_buf *text, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    int rc = atr_input_read_all(in, text, ROUTER_FILE_MAX, err);
    atr_input_close(in);
    return rc;
}

/* An evaluation's candidates: 2..ATR_ROUTER_MAX_CANDIDATES strings, and its
 * confusion matrix: that many rows of that many non-negative integers. */
static int check_eval(const char *path, const struct atr_json *root, size_t *n,
                      struct atr_error *err)
{
    const struct atr_json *c = atr_json_get(root, "candidates");
    const struct atr_json *m = atr_json_get(root, "confusion");
    if (!atr_json_is(c, ATR_JSON_ARRAY) || c->u.kids.count < 2 ||
        c->u.kids.count > ATR_ROUTER_MAX_CANDIDATES)
        return atr_error_set(err, "%s: malformed atr-router-eval/1: \"candidates\" is not an "
                             "array of 2..%d names", path, ATR_ROUTER_MAX_CANDIDATES);
    for (const struct atr_json *e = c->u.kids.first; e; e = e->next)
        if (!atr_json_is(e, ATR_JSON_STRING))
            return atr_error_set(err, "%s: malformed atr-router-eval/1: a candidate is not a "
                                 "string", path);
    *n = c->u.kids.count;
    bool ok = atr_json_is(m, ATR_JSON_ARRAY) && m->u.kids.count == *n;
    for (const struct atr_json *row = ok ? m->u.kids.first : NULL; row && ok; row = row->next) {
        ok = atr_json_is(row, ATR_JSON_ARRAY) && row->u.kids.count == *n;
        for (const struct atr_json *v = ok ? row->u.kids.first : NULL; v && ok; v = v->next)
            ok = atr_json_is(v, ATR_JSON_NUMBER) && v->u.num >= 0 && isfinite(v->u.num);
    }
    if (!ok)
        return atr_error_set(err, "%s: malformed atr-router-eval/1: \"confusion\" is not %zu rows "
                             "of %zu counts", path, *n, *n);
    return 0;
}

static int add_model(struct atr_html *h, const char *path, const struct atr_buf *text,
                     const char **detail, struct atr_error *err)
{
    struct atr_html_router *r = h->router;
    if (r->has_model)
        return atr_error_set(err, "%s: a second router model (the router lab shows one: %s)",
                             path, r->model_path);
    if (atr_router_model_parse(&r->model, text->data, text->len, path, err) < 0)
        return -1;
    r->has_model = true;
    r->model_path = atr_arena_strdup(&h->arena, path);
    *detail = atr_arena_printf(&h->arena, "router model, %zu candidates", r->model.n_candidates);
    return 0;
}

int atr_html_read_router(struct atr_html *h, const char *path, bool *is_model,
                         const char **detail, struct atr_error *err)
{
    struct atr_buf text = {.max = ROUTER_FILE_MAX + 1};
    struct atr_json *root = NULL;
    struct atr_json_err jerr;
    struct atr_error ignored;
    int rc = slurp(path, &text, &ignored) < 0 ? 1 : 0;   /* too large: not one */
    if (rc == 0 && atr_json_parse(&h->arena, text.data ? text.data : "", text.len, NULL, &root,
                                  &jerr) < 0)
        root = NULL;
    const char *format = root ? atr_json_get_str(root, "format", NULL) : NULL;
    if (rc == 0 &&
        (!format || (strcmp(format, "atr-router/1") && strcmp(format, "atr-router-eval/1"))))
        rc = 1;                                  /* not one: the caller tries other kinds */
    if (rc == 0 && !h->router)
        h->router = xcalloc(1, sizeof *h->router);
    *is_model = rc == 0 && strcmp(format, "atr-router/1") == 0;
    size_t n = 0;
    if (rc == 0 && *is_model) {
        rc = add_model(h, path, &text, detail, err);
    } else if (rc == 0 && (rc = check_eval(path, root, &n, err)) == 0) {
        struct atr_html_router *r = h->router;
        r->evals = xreallocarray(r->evals, r->n_evals + 1, sizeof *r->evals);
        r->evals[r->n_evals++] = (struct router_eval){atr_arena_strdup(&h->arena, path), root, n};
        *detail = atr_arena_printf(&h->arena, "router evaluation, %zu candidates", n);
    }
    atr_buf_release(&text);
    return rc;
}

/* ---- the embedded data ---- */

/* One trace's turns: [prompt tokens, block ids, blocks shared with the
 * previous turn, tool class, think ms, output tokens] each, and the pick
 * atr_router_model_decide makes on its features (the JS must agree). */
static void session_json(struct atr_jw *w, struct atr_buf *rows, const struct atr_router_model *m,
                         const struct atr_workload *wl, size_t s, uint64_t index)
{
    const struct atr_session *ses = &wl->sessions[s];
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "i", index);
    atr_jw_kv_str(w, "id", ses->trace_id);
    atr_jw_key(w, "turns");
    atr_jw_array_begin(w);
    uint64_t picks[ATR_ROUTER_MAX_CANDIDATES] = {0};
    uint64_t *pick = xcalloc(ses->n_turns, sizeof *pick);
    for (size_t t = 0; t < ses->n_turns; t++) {
        struct atr_router_turn u;
        double x[ATR_ROUTER_N_FEATURES];
        atr_router_turn_of(wl, s, t, &u, x);
        size_t c = atr_router_model_decide(m, x, NULL, NULL);
        picks[c]++;
        pick[t] = c;
        atr_jw_array_begin(w);
        atr_jw_uint(w, u.prompt_tokens);
        atr_jw_uint(w, u.n_ids);
        atr_jw_uint(w, u.shared);
        atr_jw_uint(w, u.tool);
        atr_jw_int(w, (int64_t)llround(u.think_s * 1000));   /* think_s was ms / 1000 */
        atr_jw_uint(w, ses->turns[t].output_tokens);
        atr_jw_array_end(w);
    }
    atr_jw_array_end(w);
    atr_jw_key(w, "pick");
    atr_jw_uint_array(w, pick, ses->n_turns);
    atr_jw_object_end(w);
    free(pick);
    atr_buf_printf(rows, "<tr><td class=\"n\">%llu</td>", (unsigned long long)index + 1);
    atr_html_td_str(rows, ses->trace_id);
    atr_html_td_num(rows, (double)ses->n_turns, 0);
    for (size_t c = 0; c < m->n_candidates; c++)
        atr_html_td_num(rows, (double)picks[c], 0);
    atr_buf_puts(rows, "</tr>\n");
}

/* The report's traces as the simulator's sessions, read again from their
 * files (the report keeps no steps), up to LAB_TURNS_MAX turns. Returns
 * the traces embedded; a file that no longer reads ends the list. */
static uint64_t traces_json(struct atr_jw *w, struct atr_buf *rows, const struct atr_html *h)
{
    const struct atr_router_model *m = &h->router->model;
    uint64_t index = 0, embedded = 0, turns = 0;
    bool full = false;
    atr_jw_key(w, "traces");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < h->n_inputs && !full; i++) {
        if (h->inputs[i].kind != ATR_HTML_TRACES)
            continue;
        struct atr_workload wl = ATR_WORKLOAD_INIT;
        struct atr_error ignored;
        char *paths[1] = {(char *)h->inputs[i].path};
        if (atr_workload_load(&wl, paths, 1, NULL, 0, &ignored) < 0)
            full = true;
        for (size_t s = 0; !full && s < wl.n_sessions; s++, index++) {
            if (turns + wl.sessions[s].n_turns > LAB_TURNS_MAX) {
                full = true;
                break;
            }
            if (!wl.sessions[s].n_turns)
                continue;
            turns += wl.sessions[s].n_turns;
            session_json(w, rows, m, &wl, s, index);
            embedded++;
        }
        atr_workload_release(&wl);
    }
    atr_jw_array_end(w);
    return embedded;
}

/* The lab's data block, '<' written as \u003c as in the page's #data;
 * rows gets the table of picks per trace. */
static void data_block(struct atr_buf *b, struct atr_buf *rows, const struct atr_html *h)
{
    struct atr_buf json = ATR_BUF_INIT, model = ATR_BUF_INIT;
    atr_router_model_write(&h->router->model, &model);
    struct atr_jw w;
    atr_jw_init(&w, &json, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_raw(&w, "model", model.data, model.len);
    atr_jw_kv_uint(&w, "block_size", 16);
    uint64_t n = traces_json(&w, rows, h);
    atr_jw_kv_uint(&w, "embedded", n);
    atr_jw_kv_uint(&w, "report_traces", h->traces);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    atr_buf_puts(b, "<script type=\"application/json\" id=\"router-data\">");
    for (size_t i = 0; i < json.len; i++)
        if (json.data[i] == '<')
            atr_buf_puts(b, "\\u003c");
        else
            atr_buf_putc(b, json.data[i]);
    atr_buf_puts(b, "</script>\n");
    atr_buf_release(&json);
    atr_buf_release(&model);
}

/* ---- the section ---- */

/* The features with weight, then those without (zero first-layer weights:
 * not an input of the trainer, or constant in its training rows), marked:
 * whatever their value, they change no decision. */
static void features_row(struct atr_buf *b, const struct atr_router_model *m)
{
    size_t n = 0;
    for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++)
        n += atr_mlp_input_weighted(&m->mlp, f);
    atr_buf_printf(b, "<tr><th>features</th><td id=\"router-weights\">%zu of %d with weight", n,
                   ATR_ROUTER_N_FEATURES);
    for (int weighted = 1; weighted >= 0; weighted--) {
        size_t k = 0;
        for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++) {
            if (atr_mlp_input_weighted(&m->mlp, f) != weighted)
                continue;
            if (k++ == 0)
                atr_buf_puts(b, weighted ? ": " : "; <strong>without weight</strong> (not an "
                             "input of the trainer, or constant in its training data: they "
                             "change no decision): ");
            else
                atr_buf_puts(b, ", ");
            atr_buf_printf(b, "<code class=\"%s\">%s</code>", weighted ? "weighted" : "weightless",
                           atr_router_feature_names[f]);
        }
    }
    atr_buf_puts(b, "</td></tr>\n");
}

static void model_tables(struct atr_buf *b, const struct atr_html_router *r)
{
    const struct atr_router_model *m = &r->model;
    atr_buf_puts(b, "<h3>Model</h3>\n<table class=\"kv\"><tbody><tr><th>file</th>");
    atr_html_td_str(b, r->model_path);
    atr_buf_puts(b, "</tr>\n<tr><th>candidates</th><td>");
    for (size_t c = 0; c < m->n_candidates; c++) {
        atr_buf_printf(b, "%s<span class=\"key c%zu\"></span>", c ? ", " : "", c % 8);
        atr_html_esc(b, m->candidates[c]);
    }
    atr_buf_puts(b, "</td></tr>\n<tr><th>objective</th>");
    atr_html_td_str(b, m->objective);
    atr_buf_puts(b, "</tr>\n<tr><th>trained on</th><td>");
    atr_html_esc(b, m->profile[0] ? m->profile : NULL);
    atr_buf_printf(b, ", %llu traces, %llu requests, labels per ",
                   (unsigned long long)m->traces, (unsigned long long)m->samples);
    atr_html_esc(b, m->label);
    atr_buf_printf(b, ", margin %g, seed %llu</td></tr>\n<tr><th>layers</th><td>", m->margin,
                   (unsigned long long)m->seed);
    for (size_t l = 0; l < m->mlp.n_layers; l++)
        atr_buf_printf(b, "%s%zu&rarr;%zu", l ? ", " : "", m->mlp.layers[l].in,
                       m->mlp.layers[l].out);
    atr_buf_puts(b, " (ReLU between, softmax out)</td></tr>\n");
    features_row(b, m);
    atr_buf_puts(b, "</tbody></table>\n");
}

/* `router eval --by-source`: one row per held-out source, accuracy beside
 * that source's majority baseline. */
static void folds_table(struct atr_buf *b, const struct atr_json *folds)
{
    if (!atr_json_is(folds, ATR_JSON_ARRAY) || !folds->u.kids.count)
        return;
    atr_buf_puts(b, "<table class=\"router-folds\"><thead><tr><th>held-out source</th>"
                    "<th>sessions</th><th>requests</th><th>accuracy %</th>"
                    "<th>best single-feature rule %</th>"
                    "<th>majority baseline</th><th>baseline %</th></tr></thead><tbody>\n");
    for (const struct atr_json *f = folds->u.kids.first; f; f = f->next) {
        double ses = NAN, n = NAN, correct = NAN, maj = NAN, rule = NAN;
        atr_json_get_num(f, "rule_correct", &rule);
        atr_json_get_num(f, "sessions", &ses);
        atr_json_get_num(f, "requests", &n);
        atr_json_get_num(f, "correct", &correct);
        atr_json_get_num(f, "majority_correct", &maj);
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, atr_json_get_str(f, "source", NULL));
        atr_html_td_num(b, ses, 0);
        atr_html_td_num(b, n, 0);
        atr_html_td_num(b, n > 0 ? 100 * correct / n : NAN, 1);
        atr_html_td_num(b, n > 0 ? 100 * rule / n : NAN, 1);
        atr_html_td_str(b, atr_json_get_str(f, "majority", NULL));
        atr_html_td_num(b, n > 0 ? 100 * maj / n : NAN, 1);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* ": FEATURE <= T: A, else B" of an evaluation's "rule" (none: a pool
 * of folds, each with its own rule). */
static void rule_text(struct atr_buf *b, const struct atr_json *rule)
{
    const char *f = atr_json_get_str(rule, "feature", NULL);
    const char *lo = atr_json_get_str(rule, "below", NULL);
    const char *hi = atr_json_get_str(rule, "above", NULL);
    double t = NAN;
    atr_json_get_num(rule, "threshold", &t);
    if (!f || !lo || !hi) {
        atr_buf_puts(b, rule ? "" : ", fitted per fold");
        return;
    }
    if (isnan(t) || strcmp(lo, hi) == 0) {      /* no cut: one label everywhere */
        atr_buf_puts(b, ": always ");
        atr_html_esc(b, lo);
        return;
    }
    atr_buf_puts(b, ": ");
    atr_html_esc(b, f);
    atr_buf_puts(b, " &le; ");
    atr_html_num(b, t, 3);
    atr_buf_puts(b, ": ");
    atr_html_esc(b, lo);
    atr_buf_puts(b, ", else ");
    atr_html_esc(b, hi);
}

static void eval_tables(struct atr_buf *b, const struct router_eval *e)
{
    const struct atr_json *r = e->root, *cands = atr_json_get(r, "candidates");
    double n = NAN, correct = NAN, maj = NAN, rule = NAN;
    atr_json_get_num(r, "rule_correct", &rule);
    atr_json_get_num(r, "requests", &n);
    atr_json_get_num(r, "correct", &correct);
    atr_json_get_num(r, "majority_correct", &maj);
    atr_buf_puts(b, "<h3>Evaluation ");
    atr_html_esc(b, e->path);
    atr_buf_puts(b, "</h3>\n<p>");
    atr_html_esc(b, atr_json_get_str(r, "scope", NULL));
    atr_buf_puts(b, " sessions: ");
    atr_html_num(b, n, 0);
    atr_buf_puts(b, " requests, accuracy ");
    atr_html_num(b, n > 0 ? 100 * correct / n : NAN, 1);
    atr_buf_puts(b, " % (majority baseline ");
    atr_html_esc(b, atr_json_get_str(r, "majority", NULL));
    atr_buf_puts(b, " ");
    atr_html_num(b, n > 0 ? 100 * maj / n : NAN, 1);
    atr_buf_puts(b, " %");
    if (!isnan(rule)) {                          /* files before issue 26 have none */
        atr_buf_puts(b, "; best single-feature rule <span class=\"router-rule\">");
        atr_html_num(b, n > 0 ? 100 * rule / n : NAN, 1);
        atr_buf_puts(b, "</span> %");
        rule_text(b, atr_json_get(r, "rule"));
    }
    atr_buf_puts(b, ").</p>\n<table class=\"confusion\"><thead><tr><th>label \\ predicted</th>");
    for (const struct atr_json *c = cands->u.kids.first; c; c = c->next) {
        atr_buf_puts(b, "<th>");
        atr_html_esc(b, c->u.str.s);
        atr_buf_puts(b, "</th>");
    }
    atr_buf_puts(b, "</tr></thead><tbody>\n");
    const struct atr_json *c = cands->u.kids.first;
    const struct atr_json *row = atr_json_get(r, "confusion")->u.kids.first;
    for (size_t i = 0; row; row = row->next, c = c->next, i++) {
        atr_buf_puts(b, "<tr><th>");
        atr_html_esc(b, c->u.str.s);
        atr_buf_puts(b, "</th>");
        size_t j = 0;
        for (const struct atr_json *v = row->u.kids.first; v; v = v->next, j++)
            atr_buf_printf(b, "<td class=\"n%s\">%.0f</td>", i == j ? " diag" : "", v->u.num);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
    folds_table(b, atr_json_get(r, "folds"));
    const struct atr_json *lat = atr_json_get(r, "latency");
    if (!atr_json_is(lat, ATR_JSON_ARRAY) || !lat->u.kids.count)
        return;
    atr_buf_puts(b, "<table><thead><tr><th>policy</th><th>mean E2E ms</th><th>mean TTFT ms</th>"
                    "</tr></thead><tbody>\n");
    for (const struct atr_json *l = lat->u.kids.first; l; l = l->next) {
        double e2el = NAN, ttft = NAN;
        atr_json_get_num(l, "mean_e2el_ms", &e2el);
        atr_json_get_num(l, "mean_ttft_ms", &ttft);
        atr_buf_puts(b, "<tr>");
        atr_html_td_str(b, atr_json_get_str(l, "policy", NULL));
        atr_html_td_num(b, e2el, 1);
        atr_html_td_num(b, ttft, 1);
        atr_buf_puts(b, "</tr>\n");
    }
    atr_buf_puts(b, "</tbody></table>\n");
}

/* Without JS: how often the model picks each candidate over each trace's
 * llm turns. */
static void picks_table(struct atr_buf *b, const struct atr_html *h, const struct atr_buf *rows)
{
    if (!rows->len)
        return;
    const struct atr_router_model *m = &h->router->model;
    atr_buf_puts(b, "<h3>Picks per trace</h3>\n<p>llm turns of each trace decided with the "
                    "features the simulator computes (sent on time, recorded outputs), as "
                    "<code>atr router decide --trace</code> does.</p>\n<table id=\"router-picks\">"
                    "<thead><tr><th>#</th><th>trace id</th><th>llm turns</th>");
    for (size_t c = 0; c < m->n_candidates; c++) {
        atr_buf_puts(b, "<th>");
        atr_html_esc(b, m->candidates[c]);
        atr_buf_puts(b, "</th>");
    }
    atr_buf_puts(b, "</tr></thead><tbody>\n");
    atr_buf_append(b, rows->data, rows->len);
    atr_buf_puts(b, "</tbody></table>\n");
}

static const char lab_css[] =
    "<style>\n"
    "#router-features { display: grid; grid-template-columns: 13em minmax(8em, 18em) 7em 9em;"
    " gap: 4px 10px; align-items: center; }\n"
    "#router-features input[type=number] { width: 7em; }\n"
    "#router-pick { font-size: 1.1rem; margin: 10px 0 4px; }\n"
    "svg.router-bars { width: 100%; max-width: 640px; height: auto; display: block; }\n"
    "svg.router-strip { width: 100%; max-width: 1000px; height: auto; display: block; }\n"
    "table.confusion td.diag { font-weight: 700; }\n"
    "code.weightless { text-decoration: line-through; color: #6b6b6b; }\n"
    "</style>\n";

void atr_html_router_section(struct atr_buf *b, const struct atr_html *h)
{
    if (!atr_html_has_router(h))
        return;
    const struct atr_html_router *r = h->router;
    atr_buf_puts(b, "<section id=\"router\"><h2>Router lab</h2>\n");
    atr_buf_puts(b, lab_css);
    if (r->has_model) {
        atr_buf_puts(b, "<p>The learned policy's router (<code>atr router train</code>; "
                        "docs/policies.md): an MLP over a request's metadata picks the "
                        "candidate policy with the highest score. Set the features to see "
                        "its pick and every candidate's probability, computed here as "
                        "<code>atr router decide</code> computes them.</p>\n");
        model_tables(b, r);
        atr_buf_puts(b, "<div id=\"router-lab\"><p class=\"muted\">The live lab and the "
                        "decision per turn need JS.</p></div>\n"
                        "<div id=\"router-trace\"></div>\n");
        struct atr_buf data = ATR_BUF_INIT, rows = ATR_BUF_INIT;
        data_block(&data, &rows, h);
        picks_table(b, h, &rows);
        atr_buf_append(b, data.data, data.len);
        atr_buf_release(&data);
        atr_buf_release(&rows);
    }
    for (size_t i = 0; i < r->n_evals; i++)
        eval_tables(b, &r->evals[i]);
    atr_buf_puts(b, "</section>\n");
}
