/* replay.h - replay the tool steps of traces as real processes under a
 * cgroup configuration, one metrics record per step.
 *
 * Configurations (the experiment design of docs/replay-tools.md):
 *   none             no cgroup: rusage only (the baseline)
 *   static-env       one cgroup per trace with fixed limits
 *   static-toolcall  a child cgroup per step with fixed per-step limits
 *   dynamic          a child cgroup per step whose memory.high a controller
 *                    adjusts while the step runs
 * Memory: the replay owns its groups and work directories and removes them;
 * records passed to the callback are valid during the call only. */
#ifndef ATR_RUNNER_REPLAY_H
#define ATR_RUNNER_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "browser/driver.h"
#include "runner/cgroup.h"
#include "runner/container.h"
#include "runner/sandbox.h"
#include "trace/trace.h"
#include "util/buf.h"
#include "util/error.h"

struct atr_ctl_point;            /* runner/controller.h */

enum atr_replay_config {
    ATR_CFG_NONE,
    ATR_CFG_STATIC_ENV,
    ATR_CFG_STATIC_TOOLCALL,
    ATR_CFG_DYNAMIC,
};
const char *atr_replay_config_name(enum atr_replay_config c);
int atr_replay_config_parse(const char *name, enum atr_replay_config *out);

/* Limits on by default (docs/replay-tools.md): processes per group, the
 * size of each trace's work directory; limits.mem_max ATR_LIMIT_AUTO is
 * ATR_MEM_AUTO_NUM/ATR_MEM_AUTO_DEN of the memory this process may use
 * (MemTotal, or its own cgroup's limit when lower). */
#define ATR_REPLAY_PIDS_MAX 1024
#define ATR_REPLAY_DISK_MAX ((int64_t)4 << 30)
#define ATR_LIMIT_AUTO ((int64_t)-2)
#define ATR_MEM_AUTO_NUM 3
#define ATR_MEM_AUTO_DEN 4

#define ATR_REPLAY_MAX_BINDS (ATR_SANDBOX_MAX_BINDS - 1)

struct atr_replay_opts {
    enum atr_replay_config config;
    struct atr_cg_limits limits;   /* mem_max may be ATR_LIMIT_AUTO */
    /* Bytes of each trace's work directory (a loop-mounted ext4 image,
     * which needs root: without it, none); <= 0: no cap. */
    int64_t disk_max;
    bool sandbox;               /* the jail of runner/sandbox.h */
    bool allow_network;
    const char *rootfs;         /* NULL or an exported root file system */
    /* A container image as each trace's root (runner/container.h): image,
     * or image_template with {instance} / {sweb} filled from the trace's
     * instance_id; NULL both: none. container_cli (the caller's, detected)
     * must be set with either. */
    const char *image, *image_template;
    const struct atr_ctr_cli *container_cli;
    /* Host folders the sandboxed steps may write, at their own path
     * (--bind; the work directory always is). */
    const char *binds[ATR_REPLAY_MAX_BINDS];
    int n_binds;
    const char *workdir;        /* parent of the per-trace work directories */
    size_t max_output;          /* captured bytes per step */
    int64_t timeout_ms;         /* per step when the trace has none */
    /* Browser steps: a fixed deadline, or 0 for the one scaled from the
     * step's recorded duration (atr_browser_step_timeout_ms). */
    int64_t browser_timeout_ms;
    enum atr_restore_mode restore;   /* DOM snapshots before browser actions */
    int controller;             /* dynamic: enum atr_ctl_kind (psi-poll, psi-trigger, ebpf) */
    int interval_ms;            /* psi-poll interval */
};

/* One step's measurements: the fields of metrics.jsonl. Integer fields
 * are -1 when unknown (e.g. no cgroup: no pressure). */
struct atr_step_metrics {
    const char *trace_id;
    uint32_t step_id;
    const char *tool;
    const char *cmd;
    const char *skipped;        /* NULL, or why the step did not run */
    double latency_ms;
    double cpu_ms, cpu_user_ms, cpu_sys_ms;
    double max_rss_mb;          /* cgroup peak (whole tree), else largest process */
    bool rss_is_tree;           /* max_rss_mb is the cgroup's peak */
    int64_t mem_high_events, mem_max_events, oom_kills;
    int64_t pids_max_hit;       /* forks refused at pids.max (pids.events), -1 unknown */
    bool disk_full;             /* the work directory's file system was full after it */
    double mem_some_ms, mem_full_ms, cpu_some_ms;   /* pressure stall during the step */
    int exit_code;
    bool timed_out;
    const char *missing_cwd;    /* the step's recorded cwd, absent here (or in --rootfs) */
    /* Editor steps (tool "editor" with a file_op): the operation, the
     * recorded path, and that path when the file it needs was absent. */
    const char *file_op, *path, *missing_file;
    uint64_t output_bytes;
    bool output_truncated;
    int64_t ctl_adjustments;    /* dynamic: memory.high changes, else -1 */
    int64_t ctl_max_high;       /* dynamic: highest memory.high written (bytes), else -1 */
    /* dynamic: times the step stood still (v1 held at its limit, ebpf
     * stopped) and for how long in all; -1 when not dynamic. */
    int64_t ctl_holds;
    double ctl_held_ms;
    double ctl_overshoot_mb;    /* dynamic: most usage seen above the limit */
    int64_t ctl_bpf_prog;       /* ebpf: the program's kernel id, else -1 */
    /* dynamic: the controller's reaction times of this step, microseconds:
     * condition seen -> limit written, and its upper bound (controller.h). */
    const double *ctl_seen_us, *ctl_bound_us;
    size_t ctl_samples;
    /* dynamic: the step's memory timeline (controller.h), or NULL. */
    const struct atr_ctl_point *ctl_timeline;
    size_t ctl_timeline_n;
    /* Browser steps (tool "browser", docs/browser.md); browser false else. */
    bool browser;
    const char *action, *selector, *url;
    const char *outcome;        /* ok, noop, failed, no_match, unsupported, timeout, crashed */
    int64_t timeout_ms;         /* the deadline the action ran under */
    const char *snapshot;       /* the DOM snapshot the step was recorded against, or NULL */
    bool snapshots_read;        /* a trace zip was there to read it from */
    const char *restore;        /* atr_restore_status_name, NULL when not tried */
    uint64_t restore_missing;   /* requests of the restored page the recording lacked */
    const char *restore_missing_url;   /* the first of them */
    const char *error;          /* why, or NULL */
    double page_load_ms;        /* navigation timing of the page, -1 */
    int64_t net_served, net_unrecorded, net_missing;
    uint64_t screenshot_bytes;
    bool browser_started;       /* a browser was started for this step */
    double browser_start_ms;
    unsigned browser_starts;    /* browsers started in this trace so far */
    bool browser_crashed;
    double browser_cpu_total_ms;   /* the browser group's CPU since it was made, -1 */
};

typedef int (*atr_replay_sink)(void *ctx, const struct atr_step_metrics *m,
                               struct atr_error *err);

struct atr_replay;

/* A browser step's deadline (docs/browser.md): fixed_ms when positive;
 * else the step's own recorded timeout_ms; else ATR_BROWSER_TIMEOUT_K
 * times its recorded duration, within [ATR_BROWSER_TIMEOUT_FLOOR_MS,
 * ATR_BROWSER_TIMEOUT_CAP_MS] (the cap is Playwright's own default per
 * action), the cap when no duration was recorded; lowered to the call's
 * recorded params.timeout when that is less. */
#define ATR_BROWSER_TIMEOUT_K 10
#define ATR_BROWSER_TIMEOUT_FLOOR_MS 5000
#define ATR_BROWSER_TIMEOUT_CAP_MS 30000
int64_t atr_browser_step_timeout_ms(const struct atr_step *s, int64_t fixed_ms);

/* Can a size-capped work directory be made below base (NULL: /tmp)? As
 * root: mounts and removes a 1M one (e2fsprogs, loop devices); 0, or -1
 * with err saying why not. */
int atr_replay_probe_disk(const char *base, struct atr_error *err);

/* Detects cgroups (mode NONE is allowed only for config none or with a
 * warning the caller prints: see atr_replay_host), sweeps the stale
 * groups and work directories of dead runs (killed by SIGKILL), creates
 * this run's root. */
struct atr_replay *atr_replay_new(const struct atr_replay_opts *o, struct atr_error *err);
/* What was found: "hybrid: ...", and the number of stale roots swept. */
const struct atr_cg_host *atr_replay_host(const struct atr_replay *rp);
unsigned atr_replay_swept(const struct atr_replay *rp);
/* The options in force: defaults resolved (limits.mem_max a byte count
 * or -1, disk_max -1 where it cannot be applied: not root). */
const struct atr_replay_opts *atr_replay_opts_used(const struct atr_replay *rp);
/* Work directories removal left behind (a mount it could not detach, a
 * flag it could not clear), and the first one's path (owned by rp; NULL
 * when none). */
unsigned atr_replay_left(const struct atr_replay *rp, const char **first);

/* Runs every tool step of t in order, calling sink after each. Returns 0,
 * or -1 on an error that stops the run (err set); a failing step is not an
 * error. Stops early (returning 0) once atr_replay_stop was called. */
int atr_replay_trace(struct atr_replay *rp, const struct atr_trace *t, atr_replay_sink sink,
                     void *ctx, struct atr_error *err);

/* The run root, parent of every group of the run; NULL without cgroups. */
const struct atr_cg *atr_replay_root(const struct atr_replay *rp);

/* Like atr_replay_trace, with the trace's group below parent (a group the
 * caller made below atr_replay_root, e.g. a tenant's subtree with its cpu
 * weight) instead of the run root; parent NULL: the run root. Several
 * threads may replay traces on one rp at once (each trace gets its own
 * groups and work directory); the sink is then called from those threads,
 * and serialising it is the caller's job. */
int atr_replay_trace_in(struct atr_replay *rp, const struct atr_cg *parent,
                        const struct atr_trace *t, atr_replay_sink sink, void *ctx,
                        struct atr_error *err);

/* Like atr_replay_trace_in; resources (may be NULL) is the Playwright
 * trace zip whose recorded network (*.network, resources/) is served to
 * the trace's browser steps; without it every request gets a 404. */
int atr_replay_trace_res(struct atr_replay *rp, const struct atr_cg *parent,
                         const struct atr_trace *t, const char *resources, atr_replay_sink sink,
                         void *ctx, struct atr_error *err);

/* Called before each tool step (atr replay agent: a step waits for the
 * llm turn before it): 0 runs it, 1 ends the trace there (the call
 * returns 0), -1 is an error (err set). */
typedef int (*atr_replay_gate)(void *ctx, const struct atr_step *s, struct atr_error *err);

/* Like atr_replay_trace_res, with gate (NULL: none) asked before each tool
 * step: 0 runs it, ATR_REPLAY_GATE_SKIP passes it by (not run, not sunk),
 * another positive value ends the trace, -1 fails; ctx goes to both gate
 * and sink. */
#define ATR_REPLAY_GATE_SKIP 2
int atr_replay_trace_gated(struct atr_replay *rp, const struct atr_cg *parent,
                           const struct atr_trace *t, const char *resources,
                           atr_replay_gate gate, atr_replay_sink sink, void *ctx,
                           struct atr_error *err);

/* One trace replayed by several runners at once (atr replay agent: a DAG
 * trace's sub-agents, each on its own thread): the trace's work
 * directory, private /tmp, container (--image) and group are made once,
 * by atr_replay_share, and every runner's steps run in them, so a file
 * one sub-agent writes is there for the others, as Claude Code's
 * sub-agents share the repository and OpenHands' delegates the
 * workspace. Each runner has its own browser (and its group). Per-step
 * groups are named after the step, so runners never collide.
 * atr_replay_trace_shared is atr_replay_trace_gated on the share (its
 * gate picks the runner's steps); it may be called from several threads
 * at once, the sink too. atr_replay_unshare removes what the share made,
 * once every runner returned. NULL (err set) when the share cannot be
 * made. */
struct atr_replay_shared;
struct atr_replay_shared *atr_replay_share(struct atr_replay *rp, const struct atr_cg *parent,
                                           const struct atr_trace *t, const char *resources,
                                           struct atr_error *err);
int atr_replay_trace_shared(struct atr_replay_shared *sh, atr_replay_gate gate,
                            atr_replay_sink sink, void *ctx, struct atr_error *err);
void atr_replay_unshare(struct atr_replay_shared *sh);

/* Why a browser step of t is not replayed for want of its page, or NULL:
 * web-agent datasets (BrowserGym / Go-Browse rows, source "browsergym")
 * carry no page, so their steps need resources (the run's Playwright
 * recording); their chat actions (send_msg_to_user, report_infeasible,
 * noop) never touch the page. Static text. */
const char *atr_replay_page_missing(const struct atr_trace *t, const struct atr_step *s,
                                    const char *resources);

/* The running browsers' process groups are killed by atr_replay_stop too
 * (they are spawned children). */

/* Async-signal-safe: kill the running step and make atr_replay_trace return. */
void atr_replay_stop(void);
bool atr_replay_stopped(void);

/* Removes the run root and every group and work directory; frees rp. */
void atr_replay_free(struct atr_replay *rp);

/* One metrics.jsonl line (with its "\n") for m under config. */
void atr_step_metrics_json(struct atr_buf *b, const char *config,
                           const struct atr_step_metrics *m);
/* The same line's members, into an object w has open (for lines that add
 * members of their own, e.g. a tenant's). */
struct atr_jw;
void atr_step_metrics_members(struct atr_jw *w, const char *config,
                              const struct atr_step_metrics *m);

/* Decimals of metrics.jsonl: milliseconds (and MB), reaction microseconds. */
#define ATR_METRICS_MS_DIGITS 3
#define ATR_METRICS_US_DIGITS 1
/* v as a reader of the JSON sees it: "%.*f" of v read back (non-finite v
 * unchanged), so figures computed from live records equal those computed
 * from the lines written for them. */
double atr_metrics_fixed(double v, int digits);

#endif
