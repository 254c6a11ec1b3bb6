/* cdp.h - the Chrome DevTools Protocol over a pipe: a browser started
 * with --remote-debugging-pipe reads commands on its fd 3 and writes
 * replies and events on its fd 4, each message one JSON object ended by a
 * NUL byte. This is the client end: commands with ids, replies waited for
 * by id with a deadline, events handed to a callback as they arrive
 * (also while a reply is awaited: Fetch.requestPaused must be answered
 * before a navigation's reply comes).
 *
 * Memory: the connection owns its two fds and buffers; results are copied
 * into an arena of the caller's; event params are valid during the
 * callback only. Library code: never prints. */
#ifndef ATR_BROWSER_CDP_H
#define ATR_BROWSER_CDP_H

#include <stdbool.h>
#include <stdint.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/error.h"

/* How a call ended besides 0: the reply was an error object, the deadline
 * passed, or the browser closed its end (it exited, crashed or was
 * killed). err says which in words. */
enum {
    ATR_CDP_REMOTE = -1,
    ATR_CDP_TIMEOUT = -2,
    ATR_CDP_CLOSED = -3,
    ATR_CDP_INTERRUPTED = -4,   /* atr_cdp_interrupt was called (a page crashed) */
};

/* An event: method ("Page.loadEventFired"), the sessionId it came on (""
 * for the browser's own), its params (an OBJECT, or NULL). */
typedef void (*atr_cdp_event_fn)(void *ctx, const char *method, const char *session,
                                 const struct atr_json *params);

/* Something else to serve while waiting (the dynamic memory controller):
 * fn runs every tick_ms (0: never) and whenever fd (>= 0) polls events. */
struct atr_cdp_hook {
    int fd;
    short events;
    int tick_ms;
    void (*fn)(void *ctx, bool fd_ready);
    void *ctx;
};

struct atr_cdp;

/* A connection over to_browser (the browser's fd 3) and from_browser (its
 * fd 4); takes both fds. */
struct atr_cdp *atr_cdp_new(int to_browser, int from_browser);
void atr_cdp_free(struct atr_cdp *c);
void atr_cdp_on_event(struct atr_cdp *c, atr_cdp_event_fn fn, void *ctx);
void atr_cdp_set_hook(struct atr_cdp *c, const struct atr_cdp_hook *hook);   /* NULL: none */

/* Monotonic microseconds, the clock of every deadline here. */
int64_t atr_cdp_now_us(void);

/* Sends a command without waiting for its reply (the reply is dropped
 * when it comes). session: NULL or "" for the browser's own; params: a
 * JSON object's text, or NULL for {}. Returns the id, or a negative code
 * as above with err. */
int64_t atr_cdp_send(struct atr_cdp *c, const char *session, const char *method,
                     const char *params, int64_t deadline_us, struct atr_error *err);
/* Sends a command and waits until deadline_us for its reply; events
 * arriving meanwhile go to the callback. *result (may be NULL) gets a copy
 * of the reply's "result" in a. 0, or a negative code with err. */
int atr_cdp_call(struct atr_cdp *c, const char *session, const char *method, const char *params,
                 int64_t deadline_us, struct atr_arena *a, struct atr_json **result,
                 struct atr_error *err);
/* Serves events until done(ctx) is true (checked after each message) or
 * the deadline. 0, or ATR_CDP_TIMEOUT / ATR_CDP_CLOSED with err. */
int atr_cdp_wait(struct atr_cdp *c, bool (*done)(void *ctx), void *ctx, int64_t deadline_us,
                 struct atr_error *err);
/* Makes every wait return ATR_CDP_INTERRUPTED from now on (sticky; for
 * the event callback: the page crashed, waiting on it is pointless). */
void atr_cdp_interrupt(struct atr_cdp *c);
/* Has the browser closed its end? */
bool atr_cdp_closed(const struct atr_cdp *c);
/* Messages that were not JSON objects (counted, skipped). */
uint64_t atr_cdp_bad_messages(const struct atr_cdp *c);

/* Parses one message (text without its NUL) and dispatches it: exposed
 * for the fuzzer and unit tests. */
void atr_cdp_feed(struct atr_cdp *c, const char *text, size_t len);

#endif
