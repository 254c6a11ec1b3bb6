/* html.h - `atr report`: one self-contained HTML file from atr outputs
 * (trace files, --save-result JSON, bench result folders), recognised by
 * content. Tables and charts are rendered here as HTML and SVG, so the
 * file reads without JS; the data is embedded as JSON for the JS (filter,
 * sort, paging, the step timeline). docs/report.md has the sections and
 * the escaping rules.
 *
 * Memory: an atr_html owns every input it read (copied); atr_html_free
 * frees it all. atr_html_write appends to a caller's buffer. Nothing
 * prints. */
#ifndef ATR_REPORT_HTML_H
#define ATR_REPORT_HTML_H

#include "util/buf.h"
#include "util/error.h"
#include "util/machine.h"

/* What the data appendix says about the run that made the report. */
struct atr_html_meta {
    const char *version;       /* atr's version */
    const char *command_line;  /* as typed, arguments quoted where needed */
    const struct atr_machine *machine;   /* where the report was written; NULL: not shown */
    const char *cgroup;        /* the host's cgroup mode ("v1", "hybrid", "v2", "none") or NULL */
    /* A live page (`atr dashboard`): live_html opens <main> (its writer
     * escapes it), live_js runs at the end of the report's module (a
     * block of it: it may call the report's chart functions); NULL: none. */
    const char *live_html, *live_js;
    const char *title;         /* the page's title and heading; NULL: "atr report" */
};

struct atr_html;

struct atr_html *atr_html_new(void);
void atr_html_free(struct atr_html *h);   /* accepts NULL */
/* Who takes the trace readers' warnings (a journal's cut last line, read
 * up to it): see atr_read_opts.warn. NULL (the default): they fail. */
void atr_html_set_warn(struct atr_html *h, void (*warn)(const char *msg));

/* Adds one input, recognised by content: a folder holding metrics.jsonl
 * and summary.json is a tool replay, another folder bench results; a file
 * is an `atr sweep` result, a result JSON (an object with vLLM's figures)
 * or else traces in any format the trace readers sniff. 0, or -1 with err ("PATH: ..."); a malformed input
 * adds nothing, but after an unreadable one (the hash fails) h should be
 * freed, not written. */
int atr_html_add(struct atr_html *h, const char *path, struct atr_error *err);

/* The whole report. 0, or -1 at b's cap. */
int atr_html_write(struct atr_buf *b, const struct atr_html *h, const struct atr_html_meta *m);

/* Appends s[0..len) with & < > " ' as entities and NUL as U+FFFD. */
int atr_html_escape(struct atr_buf *b, const char *s, size_t len);

#endif
