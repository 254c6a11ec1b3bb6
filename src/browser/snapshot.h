/* snapshot.h - the DOM snapshots of a Playwright trace (recorded with
 * tracing.start({snapshots: true})), rendered back into HTML documents so
 * a replayed action finds the page it was recorded against.
 *
 * A trace's *.trace members hold "frame-snapshot" events: per frame, in
 * recorded order, a snapshot named "before@<callId>" / "after@..." (v4-v6
 * "snapshotName"; v7+ "phase" and "callId") whose "html" is a node tree:
 * a string is a text node; ["TAG", {attrs}, child...] an element; [[n, m]]
 * a reference to node m of the frame's snapshot n places earlier, nodes
 * being numbered in post-order over strings and elements only (references
 * are not numbered). Form state is in attributes (__playwright_value_,
 * __playwright_checked_, __playwright_selected_).
 *
 * The rendering is a static document: scripts, on* handlers, srcdoc,
 * http-equiv and javascript: URLs are dropped (a snapshot is the DOM, not
 * the program that made it), form state becomes value/checked/selected
 * attributes, other __playwright_* attributes go; names that are not
 * plain tag or attribute names are skipped and "<" in CSS is escaped, so
 * a crafted trace cannot write markup of its own. Stylesheets and images keep their URLs; the page loads
 * them from the recorded network (netlog.h). resourceOverrides (stylesheets
 * changed through the CSSOM) and iframes' contents are not restored.
 *
 * Untrusted input: references may only point back (or into the same
 * snapshot), rendering depth and output size are capped.
 * Memory: the store owns the parsed events; atr_snapshots_render writes
 * into the caller's buffer. Library code: never prints. */
#ifndef ATR_BROWSER_SNAPSHOT_H
#define ATR_BROWSER_SNAPSHOT_H

#include <stddef.h>

#include "json/json.h"
#include "util/buf.h"

struct atr_snapshots;

struct atr_snapshots *atr_snapshots_new(void);
void atr_snapshots_free(struct atr_snapshots *ss);   /* accepts NULL */

/* One *.trace line: kept when it is a frame-snapshot event, else ignored.
 * -1 with jerr when a frame-snapshot line is not JSON. */
int atr_snapshots_add_line(struct atr_snapshots *ss, const char *text, size_t len,
                           struct atr_json_err *jerr);
size_t atr_snapshots_count(const struct atr_snapshots *ss);

/* The main frame's snapshot called name as a whole HTML document, into out
 * (cleared first). 0, or -1 when the trace has no such snapshot or it
 * cannot be rendered (past the caps). */
int atr_snapshots_render(struct atr_snapshots *ss, const char *name, struct atr_buf *out);

#endif
