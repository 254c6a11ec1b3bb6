/* png.h - `atr report --png DIR`: one PNG per chart of a report page,
 * taken by headless Chromium (docs/report.md, "PNG files").
 *
 * A chart is a <figure> of the page (the SVG charts html-write.c and the
 * sections write, and those the JS draws into a figure). The page is
 * written once into a temporary folder inside DIR with each figure
 * numbered and a small module script added after the report's own: given
 * "?png=N" in the URL it leaves figure N alone on the page, once the
 * report's JS has drawn everything. Chromium is then run once per chart
 * (--headless --screenshot), in its own process group with its own
 * profile folder, killed with its children past a deadline. The PNGs are
 * moved into DIR only when every chart succeeded, and the temporary folder
 * is removed in every case.
 *
 * Nothing prints. No memory outlives a call. */
#ifndef ATR_REPORT_PNG_H
#define ATR_REPORT_PNG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

struct atr_png_cfg {
    const char *chromium;     /* the executable (the caller resolves $CHROMIUM) */
    int timeout_s;            /* per chart; 0: 60 */
    bool no_sandbox;          /* pass --no-sandbox (Chromium refuses to run as root without it) */
    /* NULL, or called after each batch of charts: how many are shot of total. */
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
};

/* The charts of page[0..len): how many <figure> elements it holds. */
size_t atr_report_png_count(const char *page, size_t len);

/* Writes DIR/NN-SECTION.png for each chart (NN from 01 in page order,
 * SECTION the id of the section holding it); DIR is created when missing.
 * *written: how many. 0, or -1 with err (nothing is left in DIR then). */
int atr_report_png(const char *page, size_t len, const char *dir, const struct atr_png_cfg *cfg,
                   size_t *written, struct atr_error *err);

#endif
