/* html-impl.h - what html.c (reading the inputs) hands html-write.c
 * (rendering them): inputs, per-trace rows, parsed results and sweeps,
 * bench groups. */
#ifndef ATR_REPORT_HTML_IMPL_H
#define ATR_REPORT_HTML_IMPL_H

#include <stdint.h>

#include "bench/report.h"
#include "json/json.h"
#include "trace/trace.h"
#include "util/arena.h"
#include "util/buf.h"

#define ATR_HTML_LABEL_MAX 64     /* bytes of a tool step's label in the timeline data */
/* Trace rows written into the HTML for readers without JS (and print);
 * the explorer pages through all of them from the data. At 10 000 traces
 * the full table was 2.7 MB of the file and most of its parse time. */
#define ATR_HTML_STATIC_ROWS 1000

enum atr_html_kind {
    ATR_HTML_TRACES, ATR_HTML_RESULT, ATR_HTML_BENCH, ATR_HTML_SWEEP, ATR_HTML_REPLAY,
    ATR_HTML_REQUESTS, ATR_HTML_ROUTER_MODEL, ATR_HTML_ROUTER_EVAL
};

struct atr_html_input {
    const char *path;
    enum atr_html_kind kind;
    const char *detail;        /* "swe-agent, 3 traces", "vllm result", ... */
    uint64_t size;             /* bytes (a folder: its files, summed) */
    char hash[33];             /* XXH3-128, hex */
};

struct atr_html_result {
    const char *name;          /* the input's path */
    const struct atr_json *root;
};

/* An `atr sweep` result (docs/sweep.md): its "runs" is an array of objects. */
struct atr_html_sweep {
    const char *name;          /* the input's path */
    const struct atr_json *root;
};

/* One step of a tool replay's metrics.jsonl (docs/replay-tools.md), as the
 * chart needs it; peak_mb < 0: unknown, events < 0: unknown. */
struct atr_html_replay_step {
    const char *config, *trace_id;
    int64_t step_id, mem_high_events, mem_max_events, oom_kills;
    double peak_mb;
    double latency_ms;         /* NaN: not recorded */
    const double *reaction_ms; /* the dynamic controller's reaction times, in the arena */
    size_t n_reaction;
    const double *bound_ms;    /* their upper bounds (ctl_reaction_bound_us), in the arena */
    size_t n_bound;
    /* The controller's memory timeline (ctl_timeline), MiB and ms, in the
     * arena; NAN where a value is missing; n_tl 0 without one. */
    const double *tl_t, *tl_usage, *tl_target;
    size_t n_tl;
    bool skipped;
};

/* An `atr replay tools --out DIR` folder: summary.json and its steps. */
struct atr_html_replay {
    const char *name;          /* the input's path */
    const struct atr_json *summary;
    struct atr_html_replay_step *steps;   /* in the arena */
    size_t n_steps;
};

struct atr_html_shapes;
struct atr_html_router;
struct atr_html_reqs;
struct atr_compare;

struct atr_html {
    struct atr_arena arena;    /* inputs, results' DOMs, strings */
    struct atr_html_input *inputs;
    size_t n_inputs, cap_inputs;
    struct atr_html_result *results;
    size_t n_results, cap_results;
    struct atr_html_sweep *sweeps;
    size_t n_sweeps, cap_sweeps;
    struct atr_html_replay *replays;
    size_t n_replays, cap_replays;
    /* Traces are rendered as they are read: their table rows (HTML) and
     * their data (JSON array elements, comma-separated). */
    struct atr_buf trace_rows, trace_json;
    struct atr_buf timeline_json;       /* one step array per trace, comma-separated */
    uint64_t traces, steps;
    /* Tool labels of the timelines, each once ("labels" in the data; steps
     * refer to them by index: agent tools repeat the same few commands). */
    struct atr_buf labels_json;         /* JSON strings, comma-separated */
    uint32_t n_labels;
    uint64_t *label_keys;               /* open addressing: XXH3 of the label */
    uint32_t *label_vals;               /* index + 1; 0: free slot */
    size_t label_slots;
    struct atr_html_shapes *shapes;   /* per-source distributions; NULL until a trace */
    struct atr_html_router *router;   /* router model and evaluations; NULL until one */
    struct atr_html_reqs *reqs;       /* per-request files; NULL until one (html-results.c) */
    struct atr_bench_report *bench;   /* NULL until a folder is added */
    /* The result files as `atr compare` reads them: the Policies table's
     * rows (report/compare.h); NULL until a result file. */
    struct atr_compare *policies;
    size_t bench_groups;
    void (*warn)(const char *msg);    /* the readers' warnings (atr_read_opts.warn) */
};

/* Per trace: steps by kind, tokens summed where known, duration (-1:
 * unknown), within-trace prefix reuse as `atr stats` has it (NAN: no ids). */
struct atr_html_figures {
    uint64_t llm, tool;
    int64_t in, out, dur;
    double reuse;
};

/* html-write.c: table cells and text, for every section's writer. Text
 * is HTML-escaped (NULL: "n/a"); a number has `decimals` places, and a
 * NaN or infinity is "n/a". */
void atr_html_esc(struct atr_buf *b, const char *s);
void atr_html_num(struct atr_buf *b, double x, int decimals);
void atr_html_td_num(struct atr_buf *b, double x, int decimals);
void atr_html_td_str(struct atr_buf *b, const char *s);
/* The number at key of object o, or NaN (o NULL, no such key, not a number). */
double atr_html_get_num(const struct atr_json *o, const char *key);

/* src/report/assets/report.css and report.js, NUL-terminated, embedded by
 * src/report/assets/embed.cmake. */
extern const unsigned char atr_report_css[];
extern const unsigned char atr_report_js[];

/* The step timelines of every trace, deflated and base64-encoded in their
 * own <script> element (html-timelines.c); nothing without traces. */
void atr_html_timelines_block(struct atr_buf *b, const struct atr_html *h);
/* html-write.c: appends trace i's <tr> of the trace table to b. */
void atr_html_trace_row(struct atr_buf *b, uint64_t i, const char *file,
                        const struct atr_trace *t, const struct atr_html_figures *f);

/* html-replay.c: whether dir holds metrics.jsonl and summary.json (a tool
 * replay's folder); reading it (0, or -1 with err set: FILE:LINE: ...);
 * the Tool replay section. add_input and hash_path are html.c's. */
struct atr_error;
bool atr_html_is_replay_dir(const char *dir);
int atr_html_read_replay(struct atr_html *h, const char *dir, struct atr_html_replay *out,
                         struct atr_error *err);
void atr_html_replay_section(struct atr_buf *b, const struct atr_html *h);

/* html-memline.c: a step line's "ctl_timeline" into s (arena arrays). */
void atr_html_read_timeline(struct atr_html *h, const struct atr_json *o,
                            struct atr_html_replay_step *s);
/* Per configuration of r with a timeline, its highest-rising step's
 * memory over time with the moving target (mem_max_mib: the ceiling, or
 * NAN). */
void atr_html_memline_figures(struct atr_buf *b, const struct atr_html_replay *r,
                              double mem_max_mib);
/* summary.json's "tenant_slowdown" as grouped bars; nothing without it. */
void atr_html_slowdown_figure(struct atr_buf *b, const struct atr_json *summary);

/* html-shapes.c: the Agent shapes section's figures, gathered per trace as
 * it is read; the section (after Traces); freeing them. */
void atr_html_shapes_add(struct atr_html *h, const struct atr_trace *t);
void atr_html_shapes_section(struct atr_buf *b, const struct atr_html *h);
void atr_html_shapes_free(struct atr_html_shapes *sh);

/* html-results.c: per-request files (--requests-out lines). Whether the
 * first bytes look like one; reading one (src is closed; 0 with *detail
 * set for the appendix, or -1 with err: FILE:LINE:COL: ...); how many were
 * read; their part of the Results section, the Overview's token race, and
 * their data ("requests" and "race" members, written on w); freeing. */
struct atr_input;
struct atr_jw;
bool atr_html_looks_like_requests(const char *head, size_t len);
int atr_html_read_requests(struct atr_html *h, const char *path, struct atr_input *src,
                           const char **detail, struct atr_error *err);
size_t atr_html_reqsets(const struct atr_html *h);
void atr_html_requests_section(struct atr_buf *b, const struct atr_html *h);
void atr_html_race(struct atr_buf *b, const struct atr_html *h);
void atr_html_requests_json(struct atr_jw *w, const struct atr_html *h);
void atr_html_reqs_free(struct atr_html_reqs *reqs);
/* A CDF of n values in ms, sorted ascending, as the JS's {n, v} (v in µs,
 * gap-coded, at most 1000 points; report-results.js cdfPoints reads it). */
void atr_html_cdf_json(struct atr_jw *w, const double *sorted_ms, size_t n);
/* html-replay.c: per folder, per config, the CDFs of step latency and of
 * controller reaction time ("replay_cdfs" in the data). */
void atr_html_replay_json(struct atr_jw *w, const struct atr_html *h);

/* The headline's pair: naive's mean E2EL and the lowest of another policy
 * (best names it; it points into h), from result files when they hold
 * both, else from per-request files. false when there is no such pair. */
struct atr_html_pick {
    const char *best;
    double naive_ms, best_ms;
    bool from_requests;
};
bool atr_html_pick_best(const struct atr_html *h, struct atr_html_pick *p);

/* html-router.c: whether the first bytes may be a router model
 * ("atr-router/1") or evaluation ("atr-router-eval/1"); reading one (0,
 * 1 when the file is not one after all, -1 with err: a malformed one or a
 * second model); whether the Router lab has anything; the section;
 * freeing. */
bool atr_html_router_sniff(const char *head, size_t len);
int atr_html_read_router(struct atr_html *h, const char *path, bool *is_model,
                         const char **detail, struct atr_error *err);
bool atr_html_has_router(const struct atr_html *h);
void atr_html_router_section(struct atr_buf *b, const struct atr_html *h);
void atr_html_router_free(struct atr_html_router *r);

/* The axis top for a maximum x: the next of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8,
 * 10 times a power of ten at or above it (1 for x <= 0 or NaN). */
double atr_html_nice_top(double x);

#endif
