/* view.c - what the dashboard shows: the run list (one renderer for the
 * page's table and for the rows the event stream sends), its JSON, and
 * the page, which is the report (report/html.h) of the folders' files as
 * they are now with the run list on top. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard/dash-impl.h"
#include "json/writer.h"
#include "report/html-impl.h"
#include "report/html.h"
#include "util/alloc.h"

/* The live part of the page, run at the end of the report's module (so
 * it draws with the report's lineChart and cdfPoints): opens the event
 * stream (with the page's own query, so a token travels along, and the
 * selected run), puts each "runs" event's rows in place and redraws the
 * selected run's CDFs from each "cdf" event (points computed server-side,
 * sent at most a few times a second). A click on a row selects its run.
 * Without JS the table shows the state the page was built at. */
static const char live_js[] =
    "(() => {\n"
    "  const body = document.getElementById('runs-body');\n"
    "  const state = document.getElementById('live-state');\n"
    "  const fig = document.getElementById('live-cdf');\n"
    "  if (!body || !window.EventSource) return;\n"
    "  let sel = new URLSearchParams(location.search).get('run'), es = null;\n"
    "  const rows = () => [...body.querySelectorAll('tr[data-run]')];\n"
    "  const mark = () => rows().forEach((r) => r.classList.toggle('selected', r.dataset.run === sel));\n"
    "  const pick = () => {\n"
    "    const all = rows();\n"
    "    const r = all.find((r) => r.dataset.status === 'running') || all[0];\n"
    "    return r ? r.dataset.run : null;\n"
    "  };\n"
    "  const chart = (host, label, series) => {\n"
    "    host.dataset.n = series.reduce((a, s) => a + s.n, 0);\n"
    "    host.dataset.series = series.length;\n"
    "    if (!series.length) { host.textContent = `no ${label} yet`; return; }\n"
    "    lineChart(host, { series: series.map((s, i) => ({ label: `${s.label} (${s.n})`, cls: `c${i % 8}`,\n"
    "        pts: cdfPoints(s.c) })), xLabel: `${label} (ms`, yLabel: 'fraction at or below (CDF',\n"
    "      logAxis: 'x', fixedY: [0, 1], hover: (s, x) => {\n"
    "        const p = stepAt(s.pts, x);\n"
    "        return `${s.label}: ${((p ? p[1] : 0) * 100).toFixed(1)} % <= ${fmtNum(x)} ms`;\n"
    "      } });\n"
    "  };\n"
    "  const one = (label, c) => (c && c.n ? [{ label, n: c.n, c }] : []);\n"
    "  const split = (gs, key) => gs.filter((g) => g[key] && g[key].n)\n"
    "    .map((g) => ({ label: `${g.upstream} (${g.policy})`, n: g[key].n, c: g[key] }));\n"
    "  const draw = (d) => {\n"
    "    if (d.run !== sel) return;\n"
    "    fig.hidden = false;\n"
    "    document.getElementById('live-cdf-run').textContent = d.run;\n"
    "    const host = (k) => fig.querySelector(`.chart-host[data-metric=\"${k}\"]`);\n"
    "    const gs = d.groups || null, itl = host('itl');\n"
    "    chart(host('ttft'), 'TTFT', gs && gs.length ? split(gs, 'ttft') : one(d.run, d.ttft));\n"
    "    chart(host('latency'), d.latency_label, one(d.run, d.latency));\n"
    "    itl.hidden = !gs;\n"
    "    if (gs) chart(itl, 'ITL, mean per request', split(gs, 'itl'));\n"
    "    else { itl.replaceChildren(); itl.dataset.n = 0; }   /* a journal's drawn before */\n"
    "    fig.dataset.version = d.version;\n"
    "    fig.dataset.draws = Number(fig.dataset.draws || 0) + 1;\n"
    "  };\n"
    "  const open = () => {\n"
    "    if (es) es.close();\n"
    "    const p = new URLSearchParams(location.search);\n"
    "    if (sel) p.set('run', sel);\n"
    "    es = new EventSource('events?' + p.toString());\n"
    "    es.addEventListener('runs', (e) => {\n"
    "      body.innerHTML = e.data;\n"
    "      state.textContent = 'live, update ' + e.lastEventId;\n"
    "      state.dataset.version = e.lastEventId;\n"
    "      if (!sel && (sel = pick())) open();\n"
    "      mark();\n"
    "    });\n"
    "    es.addEventListener('cdf', (e) => draw(JSON.parse(e.data)));\n"
    "    for (const [name, setup] of [['bench', null], ['router', routerLab]])\n"
    "      es.addEventListener(name, (e) => {\n"
    "        const t = document.createElement('template');\n"
    "        t.innerHTML = e.data;\n"
    "        const fresh = t.content.firstElementChild, old = document.getElementById(name);\n"
    "        if (!fresh) return;\n"
    "        fresh.dataset.live = e.lastEventId;\n"
    "        if (old) old.replaceWith(fresh); else document.getElementById('live').after(fresh);\n"
    "        if (setup) setup();   /* the section's own script, on its new data */\n"
    "      });\n"
    "    es.onerror = () => { state.textContent = 'disconnected: the table shows the last state'; };\n"
    "  };\n"
    "  body.addEventListener('click', (e) => {\n"
    "    const tr = e.target.closest('tr[data-run]');\n"
    "    if (!tr || tr.dataset.run === sel) return;\n"
    "    sel = tr.dataset.run;\n"
    "    mark();\n"
    "    open();\n"
    "  });\n"
    "  sel = sel || pick();\n"
    "  mark();\n"
    "  open();\n"
    "})();\n";

static bool listed(const struct dash_run *run)
{
    return run->kind != DASH_RESULT && run->kind != DASH_OTHER;
}

static uint64_t planned(const struct dash_runs *r, const struct dash_run *run)
{
    return dash_run_total(r, run);
}

static double pct(struct atr_samples *s, double p)
{
    return s->n ? atr_samples_percentile(s, p) : NAN;
}

static void td_uint(struct atr_buf *b, uint64_t v)
{
    atr_buf_printf(b, "<td class=\"n\">%llu</td>", (unsigned long long)v);
}

static void td_pcts(struct atr_buf *b, struct atr_samples *s)
{
    static const double ps[] = {50, 90, 99};
    for (size_t i = 0; i < 3; i++)
        atr_html_td_num(b, pct(s, ps[i]), 2);
}

/* "p50 X / p99 Y" of s, in ms; "-" when none. */
static void pcts_text(struct atr_buf *b, struct atr_samples *s)
{
    atr_buf_puts(b, "p50 ");
    atr_html_num(b, pct(s, 50), 1);
    atr_buf_puts(b, " / p99 ");
    atr_html_num(b, pct(s, 99), 1);
}

/* A journal's split, a pair a line: "UPSTREAM (POLICY): N, mean TTFT X
 * ms; TTFT p50 / p99, ITL p50 / p99". */
static void groups_cell(struct atr_buf *b, struct dash_run *run)
{
    for (size_t i = 0; i < run->n_groups; i++) {
        struct dash_group *g = &run->groups[i];
        atr_buf_puts(b, i ? "<br>" : "");
        atr_buf_puts(b, "<span class=\"group\">");
        atr_html_esc(b, g->upstream);
        atr_buf_puts(b, " (");
        atr_html_esc(b, g->policy);
        atr_buf_printf(b, "): %llu, mean TTFT ", (unsigned long long)g->requests);
        atr_html_num(b, g->ttft_n ? g->ttft_sum_ms / (double)g->ttft_n : NAN, 1);
        atr_buf_puts(b, " ms; TTFT ");
        pcts_text(b, &g->ttft);
        atr_buf_puts(b, ", ITL ");
        pcts_text(b, &g->itl);
        atr_buf_puts(b, " ms</span>");
    }
}

static void outcomes_cell(struct atr_buf *b, struct dash_run *run)
{
    atr_buf_puts(b, "<td>");
    size_t start = b->len;
    if (run->kind == DASH_BENCH)
        atr_buf_printf(b, "success %llu, error %llu, timeout %llu, other %llu",
                       (unsigned long long)run->outcomes[0], (unsigned long long)run->outcomes[1],
                       (unsigned long long)run->outcomes[2], (unsigned long long)run->outcomes[3]);
    groups_cell(b, run);
    if (run->remote && !run->connected)
        atr_buf_puts(b, b->len > start ? "<br>feed not connected: retrying every 2 s"
                                       : "feed not connected: retrying every 2 s");
    if (run->bad)
        atr_buf_printf(b, "%s%llu unreadable line%s", b->len > start ? "<br>" : "",
                       (unsigned long long)run->bad, run->bad == 1 ? "" : "s");
    atr_buf_puts(b, "</td>");
}

/* "4 s", "3 min 05 s", "2 h 07 min"; blank when unknown (not running, no
 * total, no rate yet). */
static void eta_cell(struct atr_buf *b, double eta)
{
    if (!(eta >= 0)) {
        atr_buf_puts(b, "<td class=\"n eta\"></td>");
        return;
    }
    unsigned long long s = (unsigned long long)llround(eta);
    atr_buf_puts(b, "<td class=\"n eta\">");
    if (s < 60)
        atr_buf_printf(b, "%llu s", s);
    else if (s < 3600)
        atr_buf_printf(b, "%llu min %02llu s", s / 60, s % 60);
    else
        atr_buf_printf(b, "%llu h %02llu min", s / 3600, s % 3600 / 60);
    atr_buf_puts(b, "</td>");
}

static void row(struct atr_buf *b, struct dash_runs *r, struct dash_run *run, double now)
{
    const char *st = dash_status_name(dash_run_status(r, run, now));
    atr_buf_puts(b, "<tr data-run=\"");
    atr_html_esc(b, run->rel);
    atr_buf_printf(b, "\" data-status=\"%s\">", st);
    atr_html_td_str(b, run->rel);
    atr_html_td_str(b, dash_kind_name(run->kind));
    atr_buf_printf(b, "<td class=\"status %s\">%s</td>", st, st);
    td_uint(b, run->done);
    uint64_t total = planned(r, run);
    if (total)
        td_uint(b, total);
    else
        atr_buf_puts(b, "<td class=\"n\">?</td>");
    td_uint(b, run->ok);
    td_uint(b, run->failed);
    atr_html_td_num(b, dash_run_rate(run), 1);
    eta_cell(b, dash_run_eta(r, run, now));
    td_pcts(b, &run->ttft);
    td_pcts(b, &run->e2el);
    outcomes_cell(b, run);
    atr_buf_puts(b, "</tr>");
}

void dash_view_rows(struct atr_buf *b, struct dash_runs *r, double now)
{
    size_t shown = 0;
    for (size_t i = 0; i < r->n; i++)
        if (listed(&r->v[i])) {
            row(b, r, &r->v[i], now);
            shown++;
        }
    if (!shown)
        atr_buf_puts(b, "<tr><td colspan=\"16\">no run in the watched folders yet</td></tr>");
}

void dash_view_section(struct atr_buf *b, struct dash_runs *r, double now)
{
    atr_buf_puts(b, "<style>#runs td { overflow-wrap: normal; white-space: nowrap; }\n"
                    "#runs td:first-child { white-space: normal; overflow-wrap: anywhere; min-width: 16em; }\n"
                    "#runs td:last-child { white-space: normal; min-width: 12em; }\n"
                    "#runs td.status.running { color: #1a7f37; }\n"
                    "#runs td.status.stopped { color: #9a6700; }\n"
                    "#runs td.status.interrupted { color: #cf222e; font-weight: 600; }\n"
                    "#live .scroll { overflow-x: auto; }\n"
                    "#runs-body tr[data-run] { cursor: pointer; }\n"
                    "#runs-body tr.selected { outline: 2px solid var(--c0); }\n"
                    "#live-cdf .chart-host { display: inline-block; width: 49%; min-width: 360px; "
                    "vertical-align: top; }</style>\n"
                    "<section id=\"live\"><h2>Runs</h2>\n<p>Watching ");
    for (size_t i = 0; i < r->n_roots; i++) {
        atr_buf_puts(b, i ? ", <code>" : "<code>");
        atr_html_esc(b, r->roots[i]);
        atr_buf_puts(b, "</code>");
    }
    atr_buf_printf(b, ". <span id=\"live-state\" data-version=\"%llu\">state at update %llu "
                      "(this page reloaded shows the report of the files as they are)</span>",
                   (unsigned long long)r->version, (unsigned long long)r->version);
    if (r->skipped_links)
        atr_buf_printf(b, " %zu symbolic link%s not followed.", r->skipped_links,
                       r->skipped_links == 1 ? "" : "s");
    if (r->over_cap)
        atr_buf_printf(b, " %zu entr%s past the %d followed left out.", r->over_cap,
                       r->over_cap == 1 ? "y" : "ies", DASH_MAX_RUNS);
    atr_buf_puts(b, "</p>\n<div class=\"scroll\"><table id=\"runs\"><thead><tr><th>run</th><th>kind</th>"
                    "<th>status</th><th>done</th><th>total</th><th>ok</th><th>failed</th>"
                    "<th>rate (/s)</th><th>ETA</th>"
                    "<th>TTFT p50 (ms)</th><th>p90</th><th>p99</th>"
                    "<th>latency p50 (ms)</th><th>p90</th><th>p99</th><th>notes</th>"
                    "</tr></thead>\n<tbody id=\"runs-body\">");
    dash_view_rows(b, r, now);
    atr_buf_puts(b, "</tbody></table></div>\n<p class=\"note\">Latency is E2EL for requests and "
                    "journals, step latency for tool replays; percentiles as numpy computes "
                    "them, over the successful records read so far. Rate: records a second "
                    "that arrived since the dashboard first saw the file; ETA: what is left "
                    "of the planned count at that rate. Click a row for its CDFs.</p>\n"
                    "<figure id=\"live-cdf\" hidden><figcaption>CDFs of <code id=\"live-cdf-run\">"
                    "</code>, live (computed server-side, at most 4 redraws a second)</figcaption>"
                    "<div class=\"chart-host\" data-metric=\"ttft\"></div>"
                    "<div class=\"chart-host\" data-metric=\"latency\"></div>"
                    "<div class=\"chart-host\" data-metric=\"itl\" hidden></div></figure>"
                    "</section>\n");
}

static void json_pcts(struct atr_jw *w, const char *key, struct atr_samples *s)
{
    static const double ps[] = {50, 90, 99};
    static const char *const names[] = {"p50", "p90", "p99"};
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    for (size_t i = 0; i < 3; i++) {
        double v = pct(s, ps[i]);
        if (v == v)
            atr_jw_kv_pyfloat(w, names[i], v);
        else
            atr_jw_kv_null(w, names[i]);
    }
    atr_jw_object_end(w);
}

static void json_run(struct atr_jw *w, struct dash_runs *r, struct dash_run *run, double now)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "run", run->rel);
    atr_jw_kv_str(w, "kind", dash_kind_name(run->kind));
    atr_jw_kv_str(w, "status", dash_status_name(dash_run_status(r, run, now)));
    atr_jw_kv_uint(w, "done", run->done);
    if (planned(r, run))
        atr_jw_kv_uint(w, "total", planned(r, run));
    else
        atr_jw_kv_null(w, "total");
    atr_jw_kv_uint(w, "ok", run->ok);
    atr_jw_kv_uint(w, "failed", run->failed);
    atr_jw_kv_uint(w, "unreadable", run->bad);
    if (run->remote)
        atr_jw_kv_bool(w, "connected", run->connected);
    double rate = dash_run_rate(run), eta = dash_run_eta(r, run, now);
    if (rate == rate)
        atr_jw_kv_pyfloat(w, "rate", rate);
    else
        atr_jw_kv_null(w, "rate");
    if (eta == eta)
        atr_jw_kv_pyfloat(w, "eta_s", eta);
    else
        atr_jw_kv_null(w, "eta_s");
    json_pcts(w, "ttft_ms", &run->ttft);
    json_pcts(w, "latency_ms", &run->e2el);
    if (run->kind == DASH_JOURNAL) {
        atr_jw_key(w, "upstreams");
        atr_jw_array_begin(w);
        for (size_t i = 0; i < run->n_groups; i++) {
            struct dash_group *g = &run->groups[i];
            atr_jw_object_begin(w);
            atr_jw_kv_str(w, "upstream", g->upstream);
            atr_jw_kv_str(w, "policy", g->policy);
            atr_jw_kv_uint(w, "requests", g->requests);
            atr_jw_kv_uint(w, "ok", g->ok);
            if (g->ttft_n)
                atr_jw_kv_pyfloat(w, "mean_ttft_ms", g->ttft_sum_ms / (double)g->ttft_n);
            else
                atr_jw_kv_null(w, "mean_ttft_ms");
            json_pcts(w, "ttft_ms", &g->ttft);
            json_pcts(w, "itl_ms", &g->itl);
            atr_jw_object_end(w);
        }
        atr_jw_array_end(w);
    }
    if (run->kind == DASH_BENCH) {
        atr_jw_key(w, "outcomes");
        atr_jw_object_begin(w);
        atr_jw_kv_uint(w, "success", run->outcomes[0]);
        atr_jw_kv_uint(w, "error", run->outcomes[1]);
        atr_jw_kv_uint(w, "timeout", run->outcomes[2]);
        atr_jw_kv_uint(w, "other", run->outcomes[3]);
        atr_jw_object_end(w);
    }
    atr_jw_object_end(w);
}

void dash_view_json(struct atr_buf *b, struct dash_runs *r, double now, unsigned streams)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_uint(&w, "version", r->version);
    atr_jw_key(&w, "runs");
    atr_jw_array_begin(&w);
    for (size_t i = 0; i < r->n; i++)
        if (listed(&r->v[i]))
            json_run(&w, r, &r->v[i], now);
    atr_jw_array_end(&w);
    atr_jw_kv_uint(&w, "skipped_links", r->skipped_links);
    atr_jw_kv_uint(&w, "left_out", r->over_cap);
    atr_jw_kv_uint(&w, "event_streams", streams);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    atr_buf_putc(b, '\n');
}

static void ignore_warning_early(const char *msg)
{
    (void)msg;
}

/* The samples sorted in place, marked so (percentile.h: fixed[0]
 * SIZE_MAX alone says all of v ascends), as the report's CDF {n, v}. */
static void cdf_of(struct atr_jw *w, const char *key, struct atr_samples *s)
{
    atr_jw_key(w, key);
    if (!s->n) {
        atr_jw_null(w);
        return;
    }
    atr_sort_doubles(s->v, s->n);
    s->sorted = true;
    s->fixed[0] = SIZE_MAX;
    s->n_fixed = 1;
    atr_html_cdf_json(w, s->v, s->n);
}

void dash_view_cdf(struct atr_buf *b, struct dash_runs *r, struct dash_run *run, double now)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "run", run->rel);
    atr_jw_kv_uint(&w, "version", r->version);
    atr_jw_kv_str(&w, "status", dash_status_name(dash_run_status(r, run, now)));
    atr_jw_kv_str(&w, "latency_label", run->kind == DASH_TOOLS ? "step latency" : "E2EL");
    cdf_of(&w, "ttft", &run->ttft);
    cdf_of(&w, "latency", &run->e2el);
    if (run->kind == DASH_JOURNAL) {
        atr_jw_key(&w, "groups");
        atr_jw_array_begin(&w);
        for (size_t i = 0; i < run->n_groups; i++) {
            struct dash_group *g = &run->groups[i];
            atr_jw_object_begin(&w);
            atr_jw_kv_str(&w, "upstream", g->upstream);
            atr_jw_kv_str(&w, "policy", g->policy);
            cdf_of(&w, "ttft", &g->ttft);
            cdf_of(&w, "itl", &g->itl);
            atr_jw_object_end(&w);
        }
        atr_jw_array_end(&w);
    }
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
}

/* The report's <section id="ID"> of the inputs of one kind alone: the
 * same renderer as the page (atr_html_write), the section cut out of it.
 * Bench: the 3-way tables fill in as results land; Router lab: a router
 * model or evaluation written or replaced, without a reload. Built on
 * the event loop: these inputs are small and change minutes apart. */
int dash_view_fragment(struct atr_buf *b, struct dash_runs *r, enum dash_kind kind,
                       const char *id)
{
    struct atr_html *h = atr_html_new();
    atr_html_set_warn(h, ignore_warning_early);
    size_t added = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct atr_error err;
        const struct dash_run *run = &r->v[i];
        if (run->kind == kind && run->page_path && !run->has_symlink &&
            atr_html_add(h, run->page_path, &err) == 0)
            added++;
    }
    struct atr_buf page = ATR_BUF_INIT, open = ATR_BUF_INIT;
    atr_buf_printf(&open, "<section id=\"%s\">", id);
    struct atr_html_meta meta = {.version = ATR_VERSION, .command_line = "atr dashboard"};
    int rc = added && atr_html_write(&page, h, &meta) == 0 ? 0 : -1;
    const char *start = rc == 0 ? strstr(page.data, open.data) : NULL;
    const char *end = start ? strstr(start, "</section>\n") : NULL;
    if (end)
        atr_buf_append(b, start, (size_t)(end - start) + strlen("</section>"));
    atr_buf_release(&page);
    atr_buf_release(&open);
    atr_html_free(h);
    return end ? 0 : -1;
}

#define LEFT_SHOWN 50       /* inputs left out named on the page; the rest counted */

static void ignore_warning(const char *msg)
{
    (void)msg;
}

/* Whether the report took run's input; err says why not. A folder that
 * holds a symbolic link is not read: the report's readers follow links. */
static bool take(struct atr_html *h, const struct dash_run *run, struct atr_error *err)
{
    if (run->has_symlink) {
        atr_error_set(err, "%s: holds a symbolic link, not read", run->rel);
        return false;
    }
    return atr_html_add(h, run->page_path, err) == 0;
}

/* The files the report reads now; a malformed one (a run's file mid-way
 * through its first line, a foreign JSON) is left out, and the first
 * LEFT_SHOWN of those are named. */
static void add_inputs(struct atr_html *h, struct dash_runs *r, struct atr_buf *left)
{
    size_t n_left = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct atr_error err;
        if (!r->v[i].page_path || take(h, &r->v[i], &err) || n_left++ >= LEFT_SHOWN)
            continue;
        atr_buf_puts(left, "<li>");
        atr_html_esc(left, err.msg);
        atr_buf_puts(left, "</li>");
    }
    if (n_left > LEFT_SHOWN)
        atr_buf_printf(left, "<li>and %zu more</li>", n_left - LEFT_SHOWN);
}

int dash_view_page(struct atr_buf *b, struct dash_runs *r, double now)
{
    struct atr_html *h = atr_html_new();
    atr_html_set_warn(h, ignore_warning);
    struct atr_buf live = ATR_BUF_INIT, left = ATR_BUF_INIT;
    dash_view_section(&live, r, now);
    add_inputs(h, r, &left);
    if (left.len) {
        atr_buf_puts(&live, "<section id=\"left-out\"><h2>Left out of the report</h2><ul>");
        atr_buf_append(&live, left.data, left.len);
        atr_buf_puts(&live, "</ul></section>\n");
    }
    struct atr_html_meta meta = {.version = ATR_VERSION, .command_line = "atr dashboard",
                                 .live_html = live.data, .live_js = live_js,
                                 .title = "atr dashboard"};
    int rc = atr_html_write(b, h, &meta);
    atr_buf_release(&live);
    atr_buf_release(&left);
    atr_html_free(h);
    return rc;
}
