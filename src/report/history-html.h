/* history-html.h - `atr bench history --html`: one self-contained HTML
 * page with a chart per series and metric (the points' values in order,
 * regressions marked), drawn as inline SVG so it reads without JS.
 *
 * Memory: appends to a caller's atr_buf; keeps nothing. Nothing prints. */
#ifndef ATR_REPORT_HISTORY_HTML_H
#define ATR_REPORT_HISTORY_HTML_H

#include "bench/history.h"
#include "util/buf.h"

/* 0, or -1 at b's cap. */
int atr_history_html(struct atr_buf *b, const struct atr_history *h);

#endif
