/* netlog.h - a Playwright trace's recording, to serve back: its DOM
 * snapshots (the frame-snapshot events of its *.trace members, snapshot.h)
 * and its network: every
 * "resource-snapshot" line of the archive's *.network members (a HAR
 * entry: request method and URL, response status, headers and the
 * content's resources/<sha1> blob), looked up by method and URL.
 *
 * Several recordings of one method+URL are served in recorded order, the
 * last one again once all were served. A body is read from the archive
 * when asked for; a recording whose blob the archive lacks says so.
 * Memory: the log owns everything; entries live until atr_netlog_free.
 * Library code: never prints. */
#ifndef ATR_BROWSER_NETLOG_H
#define ATR_BROWSER_NETLOG_H

#include <stddef.h>
#include <stdint.h>

#include "browser/snapshot.h"
#include "util/buf.h"
#include "util/error.h"

struct atr_net_header {
    const char *name, *value;
};

struct atr_net_entry {
    const char *method, *url;
    int status;
    const char *status_text;
    struct atr_net_header *headers;
    size_t n_headers;
    const char *resource;        /* "resources/<sha1>", or NULL (no body recorded) */
    const char *text;            /* inline content.text, or NULL */
    size_t text_len;
    size_t served;               /* times handed out */
};

struct atr_netlog;

/* Reads the *.network members of the zip at path (a Playwright trace),
 * and the frame-snapshot lines of its *.trace members.
 * An archive without any is a log of nothing, not an error; a member
 * line that is not JSON is "path: member:line:col: ...". */
struct atr_netlog *atr_netlog_open(const char *path, struct atr_error *err);
void atr_netlog_free(struct atr_netlog *nl);
size_t atr_netlog_count(const struct atr_netlog *nl);
/* The archive's DOM snapshots (none when recorded without snapshots). */
struct atr_snapshots *atr_netlog_snapshots(struct atr_netlog *nl);

/* The recording to serve for method+url (the fragment ignored), or NULL. */
struct atr_net_entry *atr_netlog_find(struct atr_netlog *nl, const char *method, const char *url);
/* The entry's body into out (cleared first): its blob, its inline text, or
 * empty when it recorded none. -1 with err when the blob is missing or
 * unreadable. */
int atr_netlog_body(struct atr_netlog *nl, const struct atr_net_entry *e, struct atr_buf *out,
                    struct atr_error *err);

/* Standard base64 of data, appended to out (for Fetch.fulfillRequest). */
void atr_base64_append(struct atr_buf *out, const void *data, size_t len);

#endif
