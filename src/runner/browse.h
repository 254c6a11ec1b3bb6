/* browse.h - the browser steps of one trace: one headless Chromium per
 * trace (browser/driver.h), started at the trace's first browser step in
 * its own group below the trace's group, kept across steps, restarted
 * after it dies, closed when the trace ends.
 *
 * Per-step figures of a browser that outlives its steps (docs/browser.md):
 * cumulative counters of the browser's group (CPU, memory.high/max events,
 * OOM kills, pressure stall) are read at the end of every step, and each
 * step gets the difference from the previous read, so the steps' figures
 * add up to the group's totals since it was made (browser start-up and
 * idle time between steps go to the step that follows). Peak memory is
 * reset at each step's start (atr_cg_peak_begin): the step's peak of the
 * whole browser tree, baseline included.
 *
 * Memory: owns its group, browser process, session and profile
 * directory; borrows the netlog, host, parent, env. Library code. */
#ifndef ATR_RUNNER_BROWSE_H
#define ATR_RUNNER_BROWSE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "browser/driver.h"
#include "runner/cgroup.h"
#include "util/error.h"

struct atr_browse_opts {
    const char *chromium;            /* atr_browser_find() */
    const struct atr_cg_host *host;
    const struct atr_cg *parent;     /* the trace's group; NULL: no cgroups */
    const struct atr_cg_limits *limits;   /* on the browser's group, or NULL */
    const char *group_name;          /* its group below parent; NULL: "browser" (a
                                        trace's sub-agents each have theirs) */
    bool sandbox;                    /* atr's namespaces (no network at all) */
    /* Profiles are "<prefix>-<n>" directories, n counting the trace's
     * browsers; the browser's HOME and working directory, removed when it
     * ends (runner/replay.c: "<workdir base>/atr-browser-<pid>-<trace>",
     * which the guard removes should atr die by SIGKILL). */
    char profile_prefix[PATH_MAX - 32];
    struct atr_netlog *nl;           /* the recording served back, or NULL */
};

/* One step's outcome and figures. Counters are -1 when unknown. */
struct atr_browse_step {
    struct atr_browser_result res;
    bool started;                    /* a browser was started for this step */
    double start_ms;                 /* how long that took (launch to page ready) */
    unsigned starts;                 /* browsers started in this trace so far */
    bool crashed;                    /* the browser died during this step */
    int term_signal;                 /* what killed it, 0 when unknown */
    struct atr_cg_stats delta;       /* counters since the previous step */
    int64_t peak_bytes;              /* this step's peak (lifetime when no reset) */
    bool peak_reset;                 /* peak_bytes is this step's */
    double cpu_total_ms;             /* the group's CPU since it was made */
};

struct atr_browse;

/* Makes the browser's group (below o->parent when set); the browser
 * starts at the first step. NULL with err. */
struct atr_browse *atr_browse_new(const struct atr_browse_opts *o, struct atr_error *err);
/* The browser's group (for the dynamic controller), or NULL. */
const struct atr_cg *atr_browse_group(const struct atr_browse *bs);
/* The running browser's process group, 0 when none (for the guard). */
pid_t atr_browse_pgid(const struct atr_browse *bs);
/* Runs one action, starting a browser first when none runs. Returns 0
 * (the outcome in out, crashes included), -1 with err on a failure of
 * the runner itself (a group that cannot be read). hook: the dynamic
 * controller's, or NULL. */
int atr_browse_run(struct atr_browse *bs, const struct atr_browser_action *a,
                   const struct atr_cdp_hook *hook, struct atr_browse_step *out,
                   struct atr_error *err);
/* Closes the browser (Browser.close, then SIGKILL of what is left),
 * removes its group and profile directories; frees bs. */
void atr_browse_free(struct atr_browse *bs);

#endif
