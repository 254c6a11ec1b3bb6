/* dashboard.h - `atr dashboard`: a live view of the folders runs write
 * into (per-request files, proxy journals, tool replay and bench folders),
 * served over HTTP on the caller's libevent loop. The page is the report
 * (report/html.h renders it from the folders as they are now) with a run
 * list on top that server-sent events keep current. docs/dashboard.md.
 *
 * Memory: the dashboard owns its copies of the configuration's strings,
 * the run list and every connection's state; atr_dash_free frees it all
 * (the caller's event_base must outlive it). Nothing prints: warnings go
 * to cfg.warn. */
#ifndef ATR_DASHBOARD_DASHBOARD_H
#define ATR_DASHBOARD_DASHBOARD_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

struct event_base;

struct atr_dash_cfg {
    const char *const *roots;  /* folders to watch (at least one) */
    size_t n_roots;
    const char *host;          /* NULL: 127.0.0.1 */
    unsigned port;             /* 0: any free port */
    /* Whether every request must carry ?token=T (a random 128-bit T): set
     * by the caller whenever host is not a loopback address. */
    bool token;
    unsigned poll_ms;          /* folders re-read every so often; 0: 500 */
    double idle_s;             /* no growth this long: "stopped"; 0: 10 */
    unsigned max_clients;      /* event streams open at once; 0: 1024 */
    const char *proxy;         /* a running atr proxy to follow (GET /records), or NULL */
    void (*warn)(void *ctx, const char *line);   /* may be NULL */
    void *warn_ctx;
};

struct atr_dash;

/* Checks the roots (each must be a folder; symbolic links resolved once,
 * here) and reads them a first time. NULL with err set. */
struct atr_dash *atr_dash_new(struct event_base *base, const struct atr_dash_cfg *cfg,
                              struct atr_error *err);
/* Binds and starts serving and polling. 0, or -1 with err. */
int atr_dash_listen(struct atr_dash *d, struct atr_error *err);
unsigned atr_dash_port(const struct atr_dash *d);
/* The token the URL must carry ("" without cfg.token); owned by d. */
const char *atr_dash_token(const struct atr_dash *d);
void atr_dash_free(struct atr_dash *d);    /* accepts NULL */

/* True for the addresses only this machine reaches: 127.0.0.0/8, ::1,
 * "localhost". */
bool atr_dash_is_loopback(const char *host);

#endif
