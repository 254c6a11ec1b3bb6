/* controller.h - the dynamic memory.high controller of config `dynamic`:
 * reads a step group's memory pressure (PSI) and usage, raises the limit
 * when the step is squeezed, relaxes it when the step shrinks, and times
 * its own reaction. The policy and its constants: docs/controller.md.
 *
 * Three kinds:
 *   psi-poll     every interval_ms (default 50) read memory.pressure and
 *                the usage; the stall fraction is the difference of the
 *                "some total=" counters over the elapsed time (never the
 *                avg10/60/300 averages, which lag by seconds).
 *   psi-trigger  kernel events: a PSI trigger ("some STALL WINDOW") on the
 *                group's v2 memory.pressure, plus a usage notifier (v1:
 *                memory.usage_in_bytes threshold via cgroup.event_control
 *                and an eventfd, armed at the current limit; v2:
 *                memory.events changes). All sources sit in one epoll fd,
 *                which the step's wait loop polls; a slow tick
 *                (interval_ms, default 250) relaxes the limit and catches
 *                breaches the notifiers missed.
 *   ebpf         in the kernel (runner/bpf/throttle.bpf.c): the first
 *                page fault over the target stops the faulting process
 *                (SIGSTOP); user space raises the target and resumes the
 *                group (SIGCONT). Reaction = stop minus first over-target
 *                fault, both kernel clocks.
 *
 * The knob (docs/controller.md, per mode): v2 memory controller:
 * memory.high (the kernel throttles above it); v1 memory controller:
 * memory.limit_in_bytes with the OOM killer disabled (memory.oom_control),
 * so a charge at the limit reclaims and then waits in the kernel until
 * the controller raises the limit ("held"); at the ceiling the OOM killer
 * is enabled again. ebpf: the target lives in the program's map, the
 * hard limit stays at the ceiling.
 *
 * The pure parts (policy, pressure differencing, trigger strings) take
 * time as an argument and are exposed for tests.
 *
 * Memory: atr_ctl_start allocates the controller; atr_ctl_stop frees it
 * (NULL is fine). host, group and opts->bpf are borrowed and must
 * outlive it. A
 * report holds no pointers; totals own their sample arrays until
 * atr_ctl_totals_release. Library code: never prints. */
#ifndef ATR_RUNNER_CONTROLLER_H
#define ATR_RUNNER_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/percentile.h"
#include "runner/cgroup.h"
#include "runner/spawn.h"
#include "util/error.h"

/* Defaults (the reasons are in docs/controller.md). */
#define ATR_CTL_POLL_MS 50          /* psi-poll interval */
#define ATR_CTL_RELAX_TICK_MS 250   /* psi-trigger slow tick */
#define ATR_CTL_RAISE_FACTOR 1.5
#define ATR_CTL_STALL_PCT 10.0      /* % of the interval stalled ("some") */
#define ATR_CTL_CAP_FACTOR 16       /* default ceiling: 16 x the start */
#define ATR_CTL_NEAR_PCT 95         /* usage >= 95% of high is a breach */
#define ATR_CTL_ATTRIB_PCT 80       /* pressure counts only with usage >= 80% of high */
#define ATR_CTL_HEADROOM 1.25       /* a new limit is at least usage x 1.25 */
#define ATR_CTL_CALM_PCT 50         /* usage < 50% of high is calm ... */
#define ATR_CTL_RELAX_MS 2000       /* ... for this long before lowering */
#define ATR_CTL_WINDOW_MS 500       /* PSI trigger window */
#define ATR_CTL_MAX_SAMPLES 256     /* reaction samples kept per step */
#define ATR_CTL_SAMPLE_MS 10        /* memory timeline: the replay's sampling period */
#define ATR_CTL_MAX_POINTS 512      /* timeline points kept per step (then halved) */

/* PSI trigger windows the kernel accepts (kernel/sched/psi.c). */
#define ATR_PSI_WINDOW_MIN_US 500000
#define ATR_PSI_WINDOW_MAX_US 10000000

enum atr_ctl_kind {
    ATR_CTL_PSI_POLL,
    ATR_CTL_PSI_TRIGGER,
    ATR_CTL_EBPF,
};
const char *atr_ctl_kind_name(enum atr_ctl_kind k);
int atr_ctl_kind_parse(const char *name, enum atr_ctl_kind *out);

/* A zero field takes its default (above). */
struct atr_ctl_opts {
    enum atr_ctl_kind kind;
    int interval_ms;            /* psi-poll period / psi-trigger relax tick */
    int64_t mem_high_start;     /* bytes, > 0: the step's initial budget and floor */
    int64_t mem_high_max;       /* bytes: ceiling (the replay passes --mem-max) */
    double raise_factor;        /* > 1 */
    double stall_pct;           /* 0 < pct <= 100 */
    int window_ms;              /* psi-trigger window, 500..10000 */
    int relax_ms;               /* calm time before lowering */
    /* The memory timeline's period (ATR_CTL_SAMPLE_MS is what the replay
     * asks); 0: the timeline has the policy's readings only, and the
     * watch ticks at the policy's period. */
    int sample_ms;
    /* ebpf: the loaded program (runner/bpfctl.h), borrowed; NULL: the
     * controller loads its own and unloads it at atr_ctl_stop. */
    struct atr_bpf *bpf;
};

/* ---- pure parts ---- */

/* Fraction (0..1) of [prev_us, now_us] in which some task of the group
 * stalled, from two readings of a "total=" counter (microseconds); -1
 * when it cannot be known: a reading missing (< 0), no time elapsed, or
 * the counter went backwards (a different group). Clamped to 1: the
 * clock and the file are read at slightly different moments. */
double atr_psi_stall_fraction(int64_t prev_total, int64_t prev_us, int64_t total, int64_t now_us);

/* Writes "some|full STALL_US WINDOW_US" into buf; the caller writes it
 * WITH its terminating NUL (strlen + 1): the kernel overwrites the last
 * byte written with a NUL, so without it "... 1000000" would become
 * "... 100000". Returns the length without the NUL, or -1 (err set) for
 * a window outside 500 ms..10 s, a stall of 0 or above the window, or a
 * buffer too small. */
int atr_psi_trigger_format(char *buf, size_t size, bool full, int64_t stall_us,
                           int64_t window_us, struct atr_error *err);

/* Why the policy changed (or wanted to change) the limit. */
enum atr_ctl_why {
    ATR_CTL_KEEP,               /* nothing to do */
    ATR_CTL_PRESSURE,           /* stall fraction over the interval > stall_pct */
    ATR_CTL_TRIGGER,            /* a PSI trigger fired */
    ATR_CTL_BREACH,             /* usage at/above the limit */
    ATR_CTL_RELAX,              /* calm long enough: lower */
    ATR_CTL_SATURATED,          /* wanted to raise, already at the ceiling */
};
const char *atr_ctl_why_name(enum atr_ctl_why w);

/* The policy's constants and state; time is passed in. */
struct atr_ctl_policy {
    int64_t start, ceiling, high;   /* bytes; start <= high <= ceiling */
    double raise_factor, stall_pct;
    int64_t relax_us;
    int64_t prev_us, prev_some;     /* last reading with pressure; -1 none */
    int64_t calm_since_us;          /* -1: not calm */
};

/* One observation. */
struct atr_ctl_input {
    int64_t now_us;             /* CLOCK_MONOTONIC */
    int64_t usage;              /* bytes, -1 unknown */
    int64_t some_total_us;      /* memory.pressure some total=, -1 unknown */
    bool psi_event;             /* a PSI trigger fired since the last input */
};

/* Fills p from opts (defaults applied): high = start. -1 on bad opts. */
int atr_ctl_policy_init(struct atr_ctl_policy *p, const struct atr_ctl_opts *o,
                        struct atr_error *err);
/* Decides on one observation: returns the new limit (bytes, page
 * aligned) or 0 to keep it, and *why. Updates the pressure baseline and
 * the calm timer; the limit itself changes only by atr_ctl_policy_commit
 * (after the write succeeded). */
int64_t atr_ctl_policy_step(struct atr_ctl_policy *p, const struct atr_ctl_input *in,
                            enum atr_ctl_why *why);
void atr_ctl_policy_commit(struct atr_ctl_policy *p, int64_t high, int64_t now_us);
/* The next limit after a raise was wanted at usage (what a stop or a hold
 * calls for), capped at the ceiling; == p->high when saturated. */
int64_t atr_ctl_policy_raise_target(const struct atr_ctl_policy *p, int64_t usage);

/* ---- reaction bookkeeping ---- */

/* One raise's timing, nanoseconds. seen: the moment atr saw the condition
 * (event: the wake-up; poll: the reading) -> limit written. bound: an
 * upper bound on visible -> written (event: = seen; poll: written minus
 * the previous poll, because the condition may have become visible just
 * after that poll). */
struct atr_ctl_sample {
    int64_t seen_ns, bound_ns;
    bool event;
};

/* Counts and percentiles: of one step (atr_ctl_stop) or many (totals). */
struct atr_ctl_report {
    uint64_t adjustments, raises, lowers;
    uint64_t wakeups, ticks;        /* fd wake-ups and ticks handled */
    uint64_t saturated;             /* raises refused by the ceiling */
    uint64_t errors;                /* failed reads/writes (the step goes on) */
    uint64_t event_samples, poll_samples, dropped;
    /* The step stood still: v1 held at the limit (under_oom seen -> limit
     * raised), ebpf stopped (kernel stop -> SIGCONT). holds counts the
     * episodes; v2's memory.high throttling shows in PSI instead. */
    uint64_t holds;
    int64_t held_ns;
    /* The most usage above the limit in force that atr saw (bytes, 0
     * none): ebpf at its stops (the kernel's reading), the others at
     * their observations (v1's held limit cannot be passed). */
    int64_t overshoot;
    uint32_t bpf_prog_id;           /* ebpf: the kernel's id of the program; 0 */
    int64_t max_mem_high, final_mem_high;   /* bytes */
    double reaction_p50_us, reaction_p99_us;        /* seen -> written; NAN: none */
    double reaction_bound_p50_us, reaction_bound_p99_us;   /* upper bounds */
};

/* One point of a step's memory timeline: the group's usage and the target
 * in force (the knob's value) at t_us after the controller started. */
struct atr_ctl_point {
    int64_t t_us, usage, target;    /* usage -1: could not be read */
};

/* Run-wide accumulation (the replay's p50/p99 across steps), and the
 * memory timeline of the last controller stopped into it (replaced by
 * each atr_ctl_stop; owned here, freed by atr_ctl_totals_release). */
struct atr_ctl_totals {
    struct atr_ctl_report sum;      /* counts summed, max_mem_high the max */
    struct atr_samples seen_us, bound_us;
    struct atr_ctl_point *timeline;
    size_t n_timeline;
};
#define ATR_CTL_TOTALS_INIT {{0}, ATR_SAMPLES_INIT, ATR_SAMPLES_INIT, NULL, 0}

void atr_ctl_totals_add_sample(struct atr_ctl_totals *t, const struct atr_ctl_sample *s);
/* Summed counts and percentiles over every sample added. */
void atr_ctl_totals_report(struct atr_ctl_totals *t, struct atr_ctl_report *r);
void atr_ctl_totals_release(struct atr_ctl_totals *t);

/* ---- the controller ---- */

struct atr_ctl;

/* Writes mem_high_start to g's knob (above), opens the files it reads
 * and, for psi-trigger, arms the kernel notifiers (ebpf: watches g in
 * opts->bpf), then fills *watch for atr_spawn_opts.watch. Needs a memory
 * group (v2 memory controller or v1 memory); psi-trigger also needs PSI
 * or v1 memory (without both, -1). Returns NULL with err set. */
struct atr_ctl *atr_ctl_start(const struct atr_cg_host *host, const struct atr_cg *g,
                              const struct atr_ctl_opts *opts, struct atr_spawn_watch *watch,
                              struct atr_error *err);

/* One line for the report: the kind and what it listens to, e.g.
 * "psi-trigger: some 50000/500000 us + v1 usage threshold". */
const char *atr_ctl_describe(const struct atr_ctl *c);
/* The last read/write error ("" when none). */
const char *atr_ctl_last_error(const struct atr_ctl *c);

/* Closes the notifiers, resumes whatever the controller stopped (ebpf)
 * and stops watching, fills *r (may be NULL), appends the samples and
 * counts to *t (may be NULL) and puts its memory timeline there, frees c.
 * Leaves the limit as it is.
 *
 * The timeline: a point at start, at every reading of the usage (with
 * opts->sample_ms, at least that often: the watch ticks that often and
 * the policy runs on every k-th tick, so its own period is unchanged) and after
 * every limit change; past ATR_CTL_MAX_POINTS every other point is
 * dropped (the points where the target changed are kept) and the
 * sampling halves. */
void atr_ctl_stop(struct atr_ctl *c, struct atr_ctl_report *r, struct atr_ctl_totals *t);

#endif
