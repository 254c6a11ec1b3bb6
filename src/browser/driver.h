/* driver.h - Playwright actions replayed in a real headless Chromium over
 * the DevTools pipe of cdp.h, with the trace's recorded network served
 * back through Fetch interception (netlog.h).
 *
 * The browser is started by the caller (runner/browse.c: in its cgroup,
 * in atr's namespace sandbox) with atr_browser_argv's command and the
 * pipes on fds 3 and 4; this module only speaks the protocol. One page
 * (tab) per browser: every action acts on it.
 *
 * Every request the page makes stops at Fetch.requestPaused and is
 * answered from the recording (Fetch.fulfillRequest) or, unrecorded or
 * its body missing from the archive, with a 404 and counted: nothing is
 * fetched from the network (the command line also points the browser at
 * a dead proxy, 127.0.0.1:9).
 *
 * Memory: a browser session owns its cdp connection; the netlog is
 * borrowed and must outlive it. Library code: never prints. */
#ifndef ATR_BROWSER_DRIVER_H
#define ATR_BROWSER_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "browser/cdp.h"
#include "browser/netlog.h"
#include "json/json.h"
#include "util/buf.h"
#include "util/error.h"

/* The Chromium binary: $ATR_CHROMIUM, else /usr/lib/chromium/chromium
 * (Debian's real binary, without the /usr/bin wrapper script), else
 * /usr/bin/chromium, chromium-browser, google-chrome; NULL when none is
 * executable. */
const char *atr_browser_find(void);

/* The shell command (for /bin/sh -c) that execs the browser headless with
 * a DevTools pipe, the throwaway profile directory profile_dir, no
 * sandbox of its own (as root Chromium refuses to start with it; atr's
 * namespace sandbox is around it instead), no first-run, GPU, extensions,
 * background networking, and the dead proxy. Appended to cmd. */
void atr_browser_command(struct atr_buf *cmd, const char *chromium, const char *profile_dir);

/* Network answers, cumulative per session. */
struct atr_browser_net {
    uint64_t served;             /* fulfilled from the recording */
    uint64_t unrecorded;         /* no recording: 404 */
    uint64_t missing;            /* recorded, its body not in the archive: 404 */
};

struct atr_browser;

/* Opens a session on a started browser: a page, Page/Inspector events,
 * every request intercepted. Takes both fds. nl may be NULL (every request
 * is unrecorded). NULL with err on failure (the fds are closed). */
struct atr_browser *atr_browser_open(int to_browser, int from_browser, struct atr_netlog *nl,
                                     int64_t deadline_us, struct atr_error *err);
/* Browser.close, waiting for its reply until deadline_us; frees b. */
void atr_browser_close(struct atr_browser *b, int64_t deadline_us);
void atr_browser_set_hook(struct atr_browser *b, const struct atr_cdp_hook *hook);
const struct atr_browser_net *atr_browser_net(const struct atr_browser *b);
/* Has the browser or its page died (no use sending more)? */
bool atr_browser_dead(const struct atr_browser *b);
/* Has the browser closed its pipe (it is exiting, not just its page)? */
bool atr_browser_closed(const struct atr_browser *b);

/* When an action's recorded DOM snapshot is set as the page's content
 * before it runs (docs/browser.md). */
enum atr_restore_mode {
    ATR_RESTORE_AUTO,            /* when the live page lacks the action's selector */
    ATR_RESTORE_ALWAYS,          /* before every action that waits for a selector */
    ATR_RESTORE_NEVER,
};

/* One step: a Playwright API call. */
struct atr_browser_action {
    const char *action;          /* apiName ("page.click", "locator.fill") or the method */
    const char *method;          /* protocol method ("click"), may be NULL */
    const char *selector;        /* may be NULL */
    const char *url;             /* may be NULL */
    const struct atr_json *params;   /* the call's params, may be NULL */
    int64_t timeout_ms;          /* the action's deadline */
    enum atr_restore_mode restore;
    /* The DOM the action was recorded against, rendered (snapshot.h), or
     * NULL when the trace holds none for it. AUTO first gives the live
     * page live_wait_ms to show the selector. */
    const char *snapshot_html;
    size_t snapshot_len;
    int64_t live_wait_ms;
};

enum atr_browser_status {
    ATR_BR_OK,
    ATR_BR_NOOP,                 /* not a page action (route, tracing, expect, ...) */
    ATR_BR_FAILED,               /* the action failed (navigation error, script error) */
    ATR_BR_NO_MATCH,             /* the selector matched nothing before the deadline */
    ATR_BR_UNSUPPORTED,          /* an action or selector engine atr does not replay */
    ATR_BR_TIMEOUT,              /* the deadline passed otherwise */
    ATR_BR_CRASHED,              /* the browser or its page died */
};
const char *atr_browser_status_name(enum atr_browser_status s);

/* What restoring the action's snapshot came to; NONE: not tried (no
 * selector to wait for, mode NEVER, or no snapshot and none was needed). */
enum atr_restore_status {
    ATR_RS_NONE,
    ATR_RS_LIVE,                 /* the live page had the selector: nothing restored */
    ATR_RS_RESTORED,             /* the snapshot was set and the action found its selector */
    ATR_RS_SNAPSHOT_MISSING,     /* the selector never appeared and the trace holds no
                                  * snapshot for the step */
    ATR_RS_SELECTOR_MISSING,     /* restored, the selector still matched nothing */
};
/* "live", "restored", "snapshot_missing", "selector_missing"; NULL for NONE. */
const char *atr_restore_status_name(enum atr_restore_status s);

struct atr_browser_result {
    enum atr_browser_status status;
    char error[256];             /* why, when not OK/NOOP */
    double page_load_ms;         /* navigation timing of a load this step waited for; -1 */
    uint64_t screenshot_bytes;
    struct atr_browser_net net;  /* answers during this step */
    enum atr_restore_status restore;
    uint64_t restore_missing;    /* requests of the restored page the recording lacked */
    char restore_missing_url[200];   /* the first of them */
};

/* Replays one action; never fails as a function: the outcome is in r. */
void atr_browser_run(struct atr_browser *b, const struct atr_browser_action *a,
                     struct atr_browser_result *r);

#endif
