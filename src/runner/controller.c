/* controller.c - the dynamic memory.high controller: policy, pressure
 * differencing, PSI triggers and v1 usage thresholds, the knob per mode
 * (memory.high, v1 held limit, eBPF target), reaction timing. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "runner/bpfctl.h"
#include "runner/controller.h"
#include "util/alloc.h"

#define PAGE 4096

/* ---- names ---- */

const char *atr_ctl_kind_name(enum atr_ctl_kind k)
{
    return k == ATR_CTL_EBPF ? "ebpf" : k == ATR_CTL_PSI_TRIGGER ? "psi-trigger" : "psi-poll";
}

int atr_ctl_kind_parse(const char *name, enum atr_ctl_kind *out)
{
    if (strcmp(name, "psi-poll") == 0)
        *out = ATR_CTL_PSI_POLL;
    else if (strcmp(name, "psi-trigger") == 0)
        *out = ATR_CTL_PSI_TRIGGER;
    else if (strcmp(name, "ebpf") == 0)
        *out = ATR_CTL_EBPF;
    else
        return -1;
    return 0;
}

const char *atr_ctl_why_name(enum atr_ctl_why w)
{
    static const char *const names[] = {"keep", "pressure", "trigger",
                                        "breach", "relax", "saturated"};
    return (unsigned)w < sizeof names / sizeof names[0] ? names[w] : "?";
}

/* ---- pure parts ---- */

double atr_psi_stall_fraction(int64_t prev_total, int64_t prev_us, int64_t total, int64_t now_us)
{
    if (prev_total < 0 || total < 0 || now_us <= prev_us || total < prev_total)
        return -1;
    double f = (double)(total - prev_total) / (double)(now_us - prev_us);
    return f > 1 ? 1 : f;
}

int atr_psi_trigger_format(char *buf, size_t size, bool full, int64_t stall_us,
                           int64_t window_us, struct atr_error *err)
{
    if (window_us < ATR_PSI_WINDOW_MIN_US || window_us > ATR_PSI_WINDOW_MAX_US)
        return atr_error_set(err, "psi trigger window %" PRId64 " us outside %d..%d us",
                             window_us, ATR_PSI_WINDOW_MIN_US, ATR_PSI_WINDOW_MAX_US);
    if (stall_us <= 0 || stall_us > window_us)
        return atr_error_set(err, "psi trigger stall %" PRId64 " us not in 1..%" PRId64 " us",
                             stall_us, window_us);
    int n = snprintf(buf, size, "%s %" PRId64 " %" PRId64, full ? "full" : "some", stall_us,
                     window_us);
    if (n < 0 || (size_t)n >= size)
        return atr_error_set(err, "psi trigger buffer of %zu bytes too small", size);
    return n;
}

static int64_t page_up(double bytes)
{
    if (bytes >= (double)(INT64_MAX - PAGE))
        return INT64_MAX / PAGE * PAGE;
    int64_t b = (int64_t)ceil(bytes);
    return (b + PAGE - 1) / PAGE * PAGE;
}

int atr_ctl_policy_init(struct atr_ctl_policy *p, const struct atr_ctl_opts *o,
                        struct atr_error *err)
{
    memset(p, 0, sizeof *p);
    if (o->mem_high_start <= 0)
        return atr_error_set(err, "dynamic controller needs a positive --mem-high");
    p->raise_factor = o->raise_factor > 0 ? o->raise_factor : ATR_CTL_RAISE_FACTOR;
    p->stall_pct = o->stall_pct > 0 ? o->stall_pct : ATR_CTL_STALL_PCT;
    if (p->raise_factor <= 1 || p->stall_pct > 100)
        return atr_error_set(err, "controller raise factor must be > 1 and stall pct <= 100");
    p->start = p->high = o->mem_high_start;
    /* Default ceiling: agent tool steps vary up to ~15x in memory. */
    int64_t cap = o->mem_high_start > INT64_MAX / ATR_CTL_CAP_FACTOR
                      ? INT64_MAX
                      : o->mem_high_start * ATR_CTL_CAP_FACTOR;
    p->ceiling = o->mem_high_max > 0 ? o->mem_high_max : cap;
    if (p->ceiling < p->start)
        p->ceiling = p->start;
    p->relax_us = (int64_t)(o->relax_ms > 0 ? o->relax_ms : ATR_CTL_RELAX_MS) * 1000;
    p->prev_us = p->prev_some = -1;
    p->calm_since_us = -1;
    return 0;
}

/* Stall fraction since the previous reading that had pressure; moves the
 * baseline forward. -1 when unknown. */
static double policy_stall(struct atr_ctl_policy *p, const struct atr_ctl_input *in)
{
    if (in->some_total_us < 0)
        return -1;
    double f = atr_psi_stall_fraction(p->prev_some, p->prev_us, in->some_total_us, in->now_us);
    p->prev_some = in->some_total_us;
    p->prev_us = in->now_us;
    return f;
}

static enum atr_ctl_why policy_raise_reason(const struct atr_ctl_policy *p,
                                            const struct atr_ctl_input *in, double stall)
{
    /* Pressure is ours only when usage is close to the limit: stalls of a
     * group far below memory.high come from elsewhere (the host, the
     * hard limit, IO), and raising memory.high would not relieve them. */
    bool attributed = in->usage < 0 || in->usage * 100 >= p->high * ATR_CTL_ATTRIB_PCT;
    if (in->psi_event && attributed)
        return ATR_CTL_TRIGGER;
    if (in->usage >= 0 && in->usage * 100 >= p->high * ATR_CTL_NEAR_PCT)
        return ATR_CTL_BREACH;
    if (stall >= 0 && stall > p->stall_pct / 100 && attributed)
        return ATR_CTL_PRESSURE;
    return ATR_CTL_KEEP;
}

/* Multiplicative increase, but at least usage x headroom: where usage
 * got past the limit before the raise (an eBPF stop comes a charge batch
 * late, v2's memory.high is not a wall) it can be above it. */
int64_t atr_ctl_policy_raise_target(const struct atr_ctl_policy *p, int64_t usage)
{
    double t = (double)p->high * p->raise_factor;
    if (usage >= 0 && (double)usage * ATR_CTL_HEADROOM > t)
        t = (double)usage * ATR_CTL_HEADROOM;
    int64_t target = page_up(t);
    return target > p->ceiling ? p->ceiling : target;
}

/* Lowering after relax_us of calm: back towards usage x headroom, never
 * below the start; only when it is at least 10% lower (no churn). */
static int64_t policy_relax(struct atr_ctl_policy *p, const struct atr_ctl_input *in,
                            bool calm, enum atr_ctl_why *why)
{
    if (!calm) {
        p->calm_since_us = -1;
        return 0;
    }
    if (p->calm_since_us < 0) {
        p->calm_since_us = in->now_us;
        return 0;
    }
    if (in->now_us - p->calm_since_us < p->relax_us)
        return 0;
    int64_t target = page_up((double)in->usage * ATR_CTL_HEADROOM);
    if (target < p->start)
        target = p->start;
    if (target * 10 > p->high * 9)
        return 0;
    *why = ATR_CTL_RELAX;
    return target;
}

int64_t atr_ctl_policy_step(struct atr_ctl_policy *p, const struct atr_ctl_input *in,
                            enum atr_ctl_why *why)
{
    double stall = policy_stall(p, in);
    *why = policy_raise_reason(p, in, stall);
    if (*why != ATR_CTL_KEEP) {
        p->calm_since_us = -1;
        int64_t target = atr_ctl_policy_raise_target(p, in->usage);
        if (target > p->high)
            return target;
        *why = ATR_CTL_SATURATED;
        return 0;
    }
    bool pressured = in->psi_event || (stall >= 0 && stall > p->stall_pct / 100);
    bool calm = in->usage >= 0 && in->usage * 100 < p->high * ATR_CTL_CALM_PCT && !pressured;
    return policy_relax(p, in, calm, why);
}

void atr_ctl_policy_commit(struct atr_ctl_policy *p, int64_t high, int64_t now_us)
{
    /* After a lowering the step is still calm: measure the next relax
     * period from now. After a raise, calm must be seen anew. */
    p->calm_since_us = high < p->high ? now_us : -1;
    p->high = high;
}

/* ---- reports and totals ---- */

static void report_init(struct atr_ctl_report *r)
{
    memset(r, 0, sizeof *r);
    r->max_mem_high = r->final_mem_high = -1;
    r->reaction_p50_us = r->reaction_p99_us = NAN;
    r->reaction_bound_p50_us = r->reaction_bound_p99_us = NAN;
}

static void report_add_counts(struct atr_ctl_report *dst, const struct atr_ctl_report *src)
{
    dst->adjustments += src->adjustments;
    dst->raises += src->raises;
    dst->lowers += src->lowers;
    dst->wakeups += src->wakeups;
    dst->ticks += src->ticks;
    dst->saturated += src->saturated;
    dst->errors += src->errors;
    dst->event_samples += src->event_samples;
    dst->poll_samples += src->poll_samples;
    dst->dropped += src->dropped;
    dst->holds += src->holds;
    dst->held_ns += src->held_ns;
    if (src->overshoot > dst->overshoot)
        dst->overshoot = src->overshoot;
    if (src->max_mem_high > dst->max_mem_high)
        dst->max_mem_high = src->max_mem_high;
    dst->final_mem_high = src->final_mem_high;
}

void atr_ctl_totals_add_sample(struct atr_ctl_totals *t, const struct atr_ctl_sample *s)
{
    atr_samples_add(&t->seen_us, (double)s->seen_ns / 1000.0);
    atr_samples_add(&t->bound_us, (double)s->bound_ns / 1000.0);
}

void atr_ctl_totals_report(struct atr_ctl_totals *t, struct atr_ctl_report *r)
{
    report_init(r);
    report_add_counts(r, &t->sum);
    if (t->seen_us.n == 0)
        return;
    r->reaction_p50_us = atr_samples_percentile(&t->seen_us, 50);
    r->reaction_p99_us = atr_samples_percentile(&t->seen_us, 99);
    r->reaction_bound_p50_us = atr_samples_percentile(&t->bound_us, 50);
    r->reaction_bound_p99_us = atr_samples_percentile(&t->bound_us, 99);
}

void atr_ctl_totals_release(struct atr_ctl_totals *t)
{
    atr_samples_release(&t->seen_us);
    atr_samples_release(&t->bound_us);
    free(t->timeline);
    t->timeline = NULL;
    t->n_timeline = 0;
}

/* ---- the controller ---- */

/* What the limit is written to (controller.h, docs/controller.md). */
enum knob {
    KNOB_HIGH,                  /* v2 memory.high */
    KNOB_V1_HELD,               /* v1 memory.limit_in_bytes, OOM killer off */
    KNOB_BPF,                   /* the eBPF program's target */
};

struct atr_ctl {
    const struct atr_cg_host *host;
    const struct atr_cg *g;
    enum atr_ctl_kind kind;
    enum knob knob;
    struct atr_ctl_policy pol;
    int limit_fd;               /* v1 memory.limit_in_bytes */
    int oomctl_fd;              /* v1 memory.oom_control: under_oom, oom_kill_disable */
    int oomev_fd;               /* v1 OOM eventfd (psi-trigger): a hold began */
    bool oom_killer_on;         /* v1: enabled again at the ceiling */
    int64_t held_since_ns;      /* a hold or stop in progress since; -1 none */
    struct atr_bpf *own_bpf;    /* ebpf: loaded by this controller (opts->bpf NULL) */
    struct atr_bpf_watch_h *bw; /* ebpf: this group's watch and ring */
    uint64_t cgid;
    bool unwatched;             /* ebpf at the ceiling: no more stops */
    int64_t stop_usage;         /* ebpf: the highest usage of the stops drained */
    int usage_fd;               /* memory.current or memory.usage_in_bytes */
    int psi_fd;                 /* memory.pressure, read (psi-poll) */
    int trig_fd;                /* memory.pressure holding the trigger */
    int events_fd;              /* v2 memory.events, polled for POLLPRI */
    int evctl_fd;               /* v1 cgroup.event_control */
    int thr_fd;                 /* v1 eventfd of the armed usage threshold */
    int ep_fd;                  /* all event sources: the watch fd */
    int64_t last_tick_ns;       /* previous reading by tick (poll bound) */
    char events_text[512];      /* last memory.events content */
    struct atr_ctl_sample s[ATR_CTL_MAX_SAMPLES];
    size_t n;
    struct atr_ctl_report r;    /* counts; percentiles filled at stop */
    /* The memory timeline (atr_ctl_stop in controller.h). */
    struct atr_ctl_point pts[ATR_CTL_MAX_POINTS];
    size_t n_pts;
    unsigned pt_stride, pt_skip;    /* keep every pt_stride-th sample tick's point */
    int64_t t0_ns;
    unsigned policy_every, n_ticks; /* the policy runs on every policy_every-th tick */
    char desc[200];
    struct atr_error err;       /* last error; msg "" when none */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int open_in(const char *dir, const char *file, int flags)
{
    char path[PATH_MAX + 64];
    if (!dir[0] || snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) {
        errno = ENOENT;
        return -1;
    }
    return open(path, flags | O_CLOEXEC);
}

/* Reads a whole small cgroup file from offset 0 (these files are
 * generated on every read, so pread restarts them). */
static ssize_t read_text(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

static int64_t read_usage(struct atr_ctl *c)
{
    char buf[64];
    if (read_text(c->usage_fd, buf, sizeof buf) <= 0) {
        c->r.errors++;
        atr_error_set(&c->err, "cannot read memory usage: %s", strerror(errno));
        return -1;
    }
    return strtoll(buf, NULL, 10);
}

static int64_t read_some_total(struct atr_ctl *c)
{
    char buf[256];
    int64_t some, full;
    if (c->psi_fd < 0)
        return -1;
    if (read_text(c->psi_fd, buf, sizeof buf) <= 0 ||
        atr_cg_parse_pressure(buf, &some, &full) < 0) {
        c->r.errors++;
        atr_error_set(&c->err, "cannot read memory.pressure");
        return -1;
    }
    return some;
}

/* v1: (re-)arms the usage threshold at the policy's breach level. A new
 * eventfd per threshold: closing the old one is what unregisters it in
 * the kernel. The threshold fires on crossing in either direction and is
 * checked every 128 page (un)charges per CPU, so it lags by up to
 * ~512 KiB of allocation per CPU. */
static int v1_arm(struct atr_ctl *c, int64_t high, struct atr_error *err)
{
    if (c->thr_fd >= 0) {
        epoll_ctl(c->ep_fd, EPOLL_CTL_DEL, c->thr_fd, NULL);
        close(c->thr_fd);
    }
    c->thr_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->thr_fd < 0)
        return atr_error_set(err, "eventfd: %s", strerror(errno));
    int64_t at = high / 100 * ATR_CTL_NEAR_PCT / PAGE * PAGE;
    char line[96];
    int len = snprintf(line, sizeof line, "%d %d %" PRId64, c->thr_fd, c->usage_fd, at);
    if (write(c->evctl_fd, line, (size_t)len) != len)
        return atr_error_set(err, "%s/cgroup.event_control: %s", c->g->memory, strerror(errno));
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = c->thr_fd};
    if (epoll_ctl(c->ep_fd, EPOLL_CTL_ADD, c->thr_fd, &ev) < 0)
        return atr_error_set(err, "epoll_ctl: %s", strerror(errno));
    return 0;
}

/* Writes the limit to the mode's knob. pwrite on a kept fd: cgroup
 * files ignore the offset, and no open() sits in the reaction path. */
static int write_knob(struct atr_ctl *c, int64_t high, struct atr_error *err)
{
    if (c->knob == KNOB_BPF)
        return atr_bpf_set_target(c->bw, high, err);
    if (c->knob == KNOB_HIGH)
        return atr_cg_set_mem_high(c->host, c->g, high, err);
    char val[32];
    int len = snprintf(val, sizeof val, "%" PRId64, high);
    if (pwrite(c->limit_fd, val, (size_t)len, 0) != len)
        return atr_error_set(err, "%s/memory.limit_in_bytes: %s", c->g->memory, strerror(errno));
    return 0;
}

static void add_sample(struct atr_ctl *c, int64_t seen_ns, int64_t bound_ns, bool event)
{
    if (c->n >= ATR_CTL_MAX_SAMPLES) {
        c->r.dropped++;
        return;
    }
    c->s[c->n++] = (struct atr_ctl_sample){seen_ns, bound_ns, event};
    event ? c->r.event_samples++ : c->r.poll_samples++;
}

/* Past the cap: every other point goes, except those where the target
 * changed (the moving line is what the chart is about), and the sample
 * ticks keep half as many points from now on. */
static void thin_points(struct atr_ctl *c)
{
    size_t j = 0;
    for (size_t i = 0; i < c->n_pts; i++)
        if (i % 2 == 0 || c->pts[i].target != c->pts[i - 1].target)
            c->pts[j++] = c->pts[i];
    if (j == c->n_pts)              /* the target moved at every point: plain halving */
        for (size_t i = j = 0; i < c->n_pts; i += 2)
            c->pts[j++] = c->pts[i];
    c->n_pts = j;
    c->pt_stride *= 2;
}

/* One point of the timeline; a sample tick's only every pt_stride-th
 * time (changes always). */
static void add_point(struct atr_ctl *c, int64_t now_ns, int64_t usage, bool change)
{
    if (!change && ++c->pt_skip % c->pt_stride != 0)
        return;
    if (c->n_pts == ATR_CTL_MAX_POINTS)
        thin_points(c);
    c->pts[c->n_pts++] = (struct atr_ctl_point){(now_ns - c->t0_ns) / 1000, usage, c->pol.high};
}

/* A hold (v1) or stop (ebpf) ends: its duration counts as held. */
static void hold_end(struct atr_ctl *c, int64_t now_ns)
{
    if (c->held_since_ns < 0)
        return;
    c->r.held_ns += now_ns - c->held_since_ns;
    c->held_since_ns = -1;
}

/* Writes the new limit and books the adjustment (done: the time after
 * the write, or -1). */
static int64_t book(struct atr_ctl *c, int64_t high, enum atr_ctl_why why)
{
    if (write_knob(c, high, &c->err) < 0) {
        c->r.errors++;
        return -1;
    }
    int64_t done = mono_ns();
    bool raise = why != ATR_CTL_RELAX;
    atr_ctl_policy_commit(&c->pol, high, done / 1000);
    c->r.adjustments++;
    raise ? c->r.raises++ : c->r.lowers++;
    if (high > c->r.max_mem_high)
        c->r.max_mem_high = high;
    if (raise && c->knob == KNOB_V1_HELD)
        hold_end(c, done);
    if (c->evctl_fd >= 0 && v1_arm(c, high, &c->err) < 0)
        c->r.errors++;
    return done;
}

/* Books an adjustment of a user-space arm and times raises; seen_ns is
 * when the condition was seen, event whether a kernel event showed it. */
static void apply(struct atr_ctl *c, int64_t high, enum atr_ctl_why why, int64_t seen_ns,
                  bool event)
{
    int64_t done = book(c, high, why);
    if (done >= 0 && why != ATR_CTL_RELAX)
        add_sample(c, done - seen_ns, event ? done - seen_ns : done - c->last_tick_ns, event);
}

/* v1: the group waits at its limit (memory.oom_control under_oom 1):
 * the hold clock starts when atr first sees it. */
static void v1_note_hold(struct atr_ctl *c, int64_t now_ns)
{
    char buf[128];
    if (c->oomctl_fd < 0 || c->held_since_ns >= 0 || c->oom_killer_on)
        return;
    if (read_text(c->oomctl_fd, buf, sizeof buf) > 0 && atr_cg_parse_keyed(buf, "under_oom") == 1) {
        c->held_since_ns = now_ns;
        c->r.holds++;
    }
}

/* v1 at the ceiling: nothing more to give, so the kernel's OOM killer
 * decides again, as with a static limit (waiters are woken to retry). */
static void v1_release(struct atr_ctl *c)
{
    if (c->knob != KNOB_V1_HELD || c->oom_killer_on)
        return;
    int fd = open_in(c->g->memory, "memory.oom_control", O_WRONLY);
    if (fd < 0 || write(fd, "0", 1) != 1) {
        c->r.errors++;
        atr_error_set(&c->err, "%s/memory.oom_control: %s", c->g->memory, strerror(errno));
    }
    if (fd >= 0)
        close(fd);
    c->oom_killer_on = true;
    hold_end(c, mono_ns());
}

/* SIGCONT to every process of the group (those the kernel stopped and
 * the others, for which it is a no-op). */
static void resume_group(struct atr_ctl *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cgroup.procs", c->g->memory[0] ? c->g->memory : c->g->v2);
    FILE *f = fopen(path, "re");
    if (!f) {
        c->r.errors++;
        atr_error_set(&c->err, "%s: %s", path, strerror(errno));
        return;
    }
    int pid;
    while (fscanf(f, "%d", &pid) == 1)
        if (pid > 0)
            kill(pid, SIGCONT);
    fclose(f);
}

/* ebpf: one stop from the ring buffer (only this group's). The kernel
 * decided: its reaction is the stop minus the first over-target fault. */
static void on_stop(void *ctx, const struct atr_bpf_stop *s)
{
    struct atr_ctl *c = ctx;
    if (s->cgid != c->cgid)
        return;
    if (c->held_since_ns < 0) {
        c->held_since_ns = s->action_ns;
        c->r.holds++;
    }
    if (s->first)
        add_sample(c, s->action_ns - s->first_ns, s->action_ns - s->first_ns, true);
    if (s->usage > c->stop_usage)
        c->stop_usage = s->usage;
    if (s->usage - s->target > c->r.overshoot)
        c->r.overshoot = s->usage - s->target;
}

/* ebpf: stops are waiting. Raise the target (the policy's raise from the
 * usage at the stop), or at the ceiling stop watching so the hard limit
 * decides; then resume the group. */
static void on_bpf_ready(struct atr_ctl *c)
{
    c->r.wakeups++;
    c->stop_usage = -1;
    if (atr_bpf_drain(c->bw, on_stop, c, &c->err) < 0)
        c->r.errors++;
    if (c->held_since_ns < 0)
        return;
    int64_t target = atr_ctl_policy_raise_target(&c->pol, c->stop_usage);
    if (target > c->pol.high) {
        int64_t now = mono_ns();
        add_point(c, now, c->stop_usage, true);    /* usage at the stop, old target */
        book(c, target, ATR_CTL_BREACH);
        add_point(c, now, c->stop_usage, true);
    } else if (!c->unwatched) {
        c->r.saturated++;
        atr_bpf_unwatch(c->bw);
        c->unwatched = true;
    }
    resume_group(c);
    hold_end(c, mono_ns());
}

/* After a wake-up: drains the sources that need it and tells whether the
 * PSI trigger is the likely cause. Polling the epoll fd already consumed
 * the trigger's one-shot event flag (psi_trigger_poll clears it), so the
 * trigger cannot be asked; it is inferred when no other source fired. */
static bool drain(struct atr_ctl *c)
{
    bool other = false;
    uint64_t v;
    if (c->thr_fd >= 0 && read(c->thr_fd, &v, sizeof v) == (ssize_t)sizeof v)
        other = true;
    if (c->oomev_fd >= 0 && read(c->oomev_fd, &v, sizeof v) == (ssize_t)sizeof v)
        other = true;
    if (c->events_fd >= 0) {
        char buf[sizeof c->events_text];
        if (read_text(c->events_fd, buf, sizeof buf) > 0 && strcmp(buf, c->events_text) != 0) {
            memcpy(c->events_text, buf, sizeof buf);
            other = true;
        }
    }
    return c->trig_fd >= 0 && !other;
}

/* A tick between the policy's: only the usage, for the timeline (and the
 * overshoot, which more readings see better). */
static void sample_tick(struct atr_ctl *c, int64_t now)
{
    int64_t usage = read_usage(c);
    if (usage - c->pol.high > c->r.overshoot)
        c->r.overshoot = usage - c->pol.high;
    add_point(c, now, usage, false);
}

/* The watch callback: a tick or a wake-up of the event fd. */
static void on_watch(void *ctx, bool fd_ready)
{
    struct atr_ctl *c = ctx;
    if (c->knob == KNOB_BPF && fd_ready) {
        on_bpf_ready(c);
        return;
    }
    int64_t now = mono_ns();
    if (!fd_ready && ++c->n_ticks % c->policy_every != 0) {
        sample_tick(c, now);
        return;
    }
    struct atr_ctl_input in = {.now_us = now / 1000, .some_total_us = -1};
    if (fd_ready) {
        c->r.wakeups++;
        in.psi_event = drain(c);
    } else {
        c->r.ticks++;
        in.some_total_us = read_some_total(c);
    }
    if (c->knob == KNOB_V1_HELD)
        v1_note_hold(c, now);
    in.usage = read_usage(c);
    if (in.usage - c->pol.high > c->r.overshoot)
        c->r.overshoot = in.usage - c->pol.high;
    enum atr_ctl_why why;
    int64_t high = atr_ctl_policy_step(&c->pol, &in, &why);
    if (why == ATR_CTL_SATURATED) {
        c->r.saturated++;
        v1_release(c);
    }
    /* ebpf: raises are the kernel's to ask for; the tick only relaxes */
    if (c->knob == KNOB_BPF && why != ATR_CTL_RELAX)
        high = 0;
    if (high > 0)
        add_point(c, now, in.usage, true);          /* the old target, then the new */
    if (high > 0)
        apply(c, high, why, now, fd_ready);
    add_point(c, now, in.usage, high > 0);
    if (!fd_ready)
        c->last_tick_ns = now;
}

/* The first pressure reading, so the first tick has a difference. Usage
 * unknown: the policy only records the baseline. */
static void baseline(struct atr_ctl *c)
{
    struct atr_ctl_input in = {.now_us = mono_ns() / 1000, .usage = -1,
                               .some_total_us = read_some_total(c)};
    enum atr_ctl_why why;
    atr_ctl_policy_step(&c->pol, &in, &why);
}

static int open_usage(struct atr_ctl *c, struct atr_error *err)
{
    if (c->host->v2_memory && c->g->v2[0])
        c->usage_fd = open_in(c->g->v2, "memory.current", O_RDONLY);
    else if (c->g->memory[0])
        c->usage_fd = open_in(c->g->memory, "memory.usage_in_bytes", O_RDONLY);
    else
        return atr_error_set(err, "dynamic controller needs a memory cgroup");
    if (c->usage_fd < 0)
        return atr_error_set(err, "cannot open the group's memory usage: %s", strerror(errno));
    return 0;
}

static int add_epoll(struct atr_ctl *c, int fd, uint32_t events, const char *dir,
                     const char *file, struct atr_error *err)
{
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(c->ep_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return atr_error_set(err, "%s/%s: cannot poll: %s", dir, file, strerror(errno));
    return 0;
}

/* Writes one trigger of stall_pct over window_us; errno on failure. */
static int write_trigger(struct atr_ctl *c, int64_t window_us, char *trig, size_t size,
                         struct atr_error *err)
{
    int64_t stall_us = (int64_t)((double)window_us * c->pol.stall_pct / 100.0);
    int len = atr_psi_trigger_format(trig, size, false, stall_us, window_us, err);
    if (len < 0)
        return -1;
    return write(c->trig_fd, trig, (size_t)len + 1) == len + 1 ? 0 : -1;
}

/* PSI trigger on the v2 group's memory.pressure, written with its NUL
 * (see atr_psi_trigger_format). Without CAP_SYS_RESOURCE (containers)
 * the kernel takes only windows that are multiples of 2 s, evaluated by
 * the 2 s averaging work instead of the real-time poller: then 2 s. */
static int arm_psi_trigger(struct atr_ctl *c, int window_ms, struct atr_error *err)
{
    char trig[64];
    int64_t window_us = (int64_t)window_ms * 1000;
    c->trig_fd = open_in(c->g->v2, "memory.pressure", O_RDWR | O_NONBLOCK);
    if (c->trig_fd < 0)
        return atr_error_set(err, "%s/memory.pressure: %s", c->g->v2, strerror(errno));
    int rc = write_trigger(c, window_us, trig, sizeof trig, err);
    bool unpriv = rc < 0 && errno == EINVAL && window_us % 2000000 != 0;
    if (unpriv)
        rc = write_trigger(c, (window_us / 2000000 + 1) * 2000000, trig, sizeof trig, err);
    if (rc < 0)
        return atr_error_set(err, "%s/memory.pressure: psi trigger \"%s\": %s", c->g->v2, trig,
                             strerror(errno));
    size_t used = strlen(c->desc);
    snprintf(c->desc + used, sizeof c->desc - used, " %s us%s", trig,
             unpriv ? " (unprivileged: 2 s granularity)" : "");
    return add_epoll(c, c->trig_fd, EPOLLPRI, c->g->v2, "memory.pressure", err);
}

static void desc_add(struct atr_ctl *c, const char *what)
{
    size_t used = strlen(c->desc);
    snprintf(c->desc + used, sizeof c->desc - used, "%s%s", c->desc[used - 1] == ':' ? " " : " + ",
             what);
}

/* psi-trigger: every event source the host offers, in one epoll fd. */
static int arm_events(struct atr_ctl *c, const struct atr_ctl_opts *o, struct atr_error *err)
{
    c->ep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (c->ep_fd < 0)
        return atr_error_set(err, "epoll_create1: %s", strerror(errno));
    int window = o->window_ms > 0 ? o->window_ms : ATR_CTL_WINDOW_MS;
    if (c->host->psi && c->g->v2[0] && arm_psi_trigger(c, window, err) < 0)
        return -1;
    if (c->host->v2_memory && c->g->v2[0]) {
        c->events_fd = open_in(c->g->v2, "memory.events", O_RDONLY);
        if (c->events_fd < 0)
            return atr_error_set(err, "%s/memory.events: %s", c->g->v2, strerror(errno));
        read_text(c->events_fd, c->events_text, sizeof c->events_text);
        desc_add(c, "memory.events");
        return add_epoll(c, c->events_fd, EPOLLPRI, c->g->v2, "memory.events", err);
    }
    if (!c->g->memory[0])
        return c->trig_fd >= 0 ? 0 : atr_error_set(err, "psi-trigger needs PSI or v1 memory");
    c->evctl_fd = open_in(c->g->memory, "cgroup.event_control", O_WRONLY);
    if (c->evctl_fd < 0)
        return atr_error_set(err, "%s/cgroup.event_control: %s", c->g->memory, strerror(errno));
    desc_add(c, "v1 usage threshold");
    if (v1_arm(c, c->pol.high, err) < 0)
        return -1;
    if (c->knob != KNOB_V1_HELD)
        return 0;
    c->oomev_fd = atr_cg_oom_watch(c->g);
    if (c->oomev_fd < 0)
        return atr_error_set(err, "%s/memory.oom_control: cannot watch: %s", c->g->memory,
                             strerror(errno));
    desc_add(c, "v1 OOM hold event");
    return add_epoll(c, c->oomev_fd, EPOLLIN, c->g->memory, "memory.oom_control", err);
}

/* v1: the limit becomes the knob, and a charge at it waits in the
 * kernel (after reclaim) instead of OOM-killing: the step is held until
 * the controller raises the limit. */
static int open_v1_held(struct atr_ctl *c, struct atr_error *err)
{
    c->limit_fd = open_in(c->g->memory, "memory.limit_in_bytes", O_WRONLY);
    c->oomctl_fd = open_in(c->g->memory, "memory.oom_control", O_RDONLY);
    int fd = open_in(c->g->memory, "memory.oom_control", O_WRONLY);
    bool ok = c->limit_fd >= 0 && c->oomctl_fd >= 0 && fd >= 0 && write(fd, "1", 1) == 1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (!ok)
        return atr_error_set(err, "%s: cannot hold at memory.limit_in_bytes (oom_control): %s",
                             c->g->memory, strerror(e));
    return 0;
}

/* ebpf: the program watches the group's memcg by its id. */
static int open_bpf(struct atr_ctl *c, const struct atr_ctl_opts *o, struct atr_error *err)
{
    struct atr_bpf *b = o->bpf;
    if (!b && !(b = c->own_bpf = atr_bpf_open(err)))
        return -1;
    c->cgid = atr_bpf_cgroup_id(c->host->v2_memory ? c->g->v2 : c->g->memory, err);
    if (!c->cgid)
        return -1;
    c->r.bpf_prog_id = atr_bpf_prog_id(b);
    c->bw = atr_bpf_watch(b, c->cgid, c->pol.high, err);
    return c->bw ? 0 : -1;
}

/* Chooses the knob for the kind and the host, and opens it. */
static int open_knob(struct atr_ctl *c, const struct atr_ctl_opts *o, struct atr_error *err)
{
    if (o->kind == ATR_CTL_EBPF) {
        c->knob = KNOB_BPF;
        return open_bpf(c, o, err);
    }
    if (c->host->v2_memory && c->g->v2[0]) {
        c->knob = KNOB_HIGH;
        return 0;
    }
    c->knob = KNOB_V1_HELD;
    return open_v1_held(c, err);
}

static int ctl_open(struct atr_ctl *c, const struct atr_ctl_opts *o,
                    struct atr_spawn_watch *watch, struct atr_error *err)
{
    if (atr_ctl_policy_init(&c->pol, o, err) < 0 || open_usage(c, err) < 0 ||
        open_knob(c, o, err) < 0 || write_knob(c, c->pol.high, err) < 0)
        return -1;
    int tick = o->interval_ms > 0 ? o->interval_ms
               : o->kind == ATR_CTL_PSI_POLL ? ATR_CTL_POLL_MS
                                              : ATR_CTL_RELAX_TICK_MS;
    /* With sample_ms the watch ticks every tick/k ms (>= sample_ms, k
     * dividing tick so the policy's own period stays exact). */
    int sample = o->sample_ms;
    unsigned k = sample > 0 && tick > sample ? (unsigned)(tick / sample) : 1;
    while (k > 1 && tick % (int)k != 0)
        k--;
    c->policy_every = k;
    c->pt_stride = 1;
    *watch = (struct atr_spawn_watch){.fd = -1, .tick_ms = tick / (int)k, .fn = on_watch,
                                      .ctx = c};
    snprintf(c->desc, sizeof c->desc, "%s:", atr_ctl_kind_name(o->kind));
    if (o->kind == ATR_CTL_EBPF) {
        desc_add(c, c->host->v2_memory ? "kernel stop at the target (v2 memcg page faults)"
                                       : "kernel stop at the target (v1 memcg page faults)");
        watch->fd = atr_bpf_fd(c->bw);
        watch->events = POLLIN;
    } else if (o->kind == ATR_CTL_PSI_POLL) {
        if (c->host->psi && c->g->v2[0])
            c->psi_fd = open_in(c->g->v2, "memory.pressure", O_RDONLY);
        desc_add(c, c->psi_fd >= 0 ? "memory.pressure some total= + usage" : "usage only (no PSI)");
    } else {
        if (arm_events(c, o, err) < 0)
            return -1;
        watch->fd = c->ep_fd;
        watch->events = POLLIN;
    }
    char every[48];
    snprintf(every, sizeof every, "tick %d ms", tick);
    desc_add(c, every);
    c->last_tick_ns = c->t0_ns = mono_ns();
    baseline(c);
    add_point(c, c->t0_ns, read_usage(c), true);
    return 0;
}

struct atr_ctl *atr_ctl_start(const struct atr_cg_host *host, const struct atr_cg *g,
                              const struct atr_ctl_opts *opts, struct atr_spawn_watch *watch,
                              struct atr_error *err)
{
    struct atr_ctl *c = xcalloc(1, sizeof *c);
    c->host = host;
    c->g = g;
    c->kind = opts->kind;
    c->usage_fd = c->psi_fd = c->trig_fd = c->events_fd = c->evctl_fd = c->thr_fd = -1;
    c->ep_fd = c->limit_fd = c->oomctl_fd = c->oomev_fd = -1;
    c->held_since_ns = -1;
    report_init(&c->r);
    if (ctl_open(c, opts, watch, err) < 0) {
        atr_ctl_stop(c, NULL, NULL);
        return NULL;
    }
    c->r.max_mem_high = c->pol.high;
    return c;
}

const char *atr_ctl_describe(const struct atr_ctl *c)
{
    return c->desc;
}

const char *atr_ctl_last_error(const struct atr_ctl *c)
{
    return c->err.msg;
}

/* Percentiles of this step's samples (copied: atr_percentile sorts). */
static void step_percentiles(const struct atr_ctl *c, struct atr_ctl_report *r)
{
    double seen[ATR_CTL_MAX_SAMPLES], bound[ATR_CTL_MAX_SAMPLES];
    for (size_t i = 0; i < c->n; i++) {
        seen[i] = (double)c->s[i].seen_ns / 1000.0;
        bound[i] = (double)c->s[i].bound_ns / 1000.0;
    }
    if (c->n == 0)
        return;
    r->reaction_p50_us = atr_percentile(seen, c->n, 50);
    r->reaction_p99_us = atr_percentile_sorted(seen, c->n, 99);
    r->reaction_bound_p50_us = atr_percentile(bound, c->n, 50);
    r->reaction_bound_p99_us = atr_percentile_sorted(bound, c->n, 99);
}

void atr_ctl_stop(struct atr_ctl *c, struct atr_ctl_report *r, struct atr_ctl_totals *t)
{
    if (!c)
        return;
    if (c->bw) {
        atr_bpf_unwatch(c->bw);
        resume_group(c);    /* nothing stays stopped, whatever raced the unwatch */
        atr_bpf_watch_close(c->bw);
    }
    atr_bpf_close(c->own_bpf);
    hold_end(c, mono_ns());
    if (c->t0_ns)                   /* it started: the timeline's last reading */
        add_point(c, mono_ns(), read_usage(c), true);
    int fds[] = {c->usage_fd, c->psi_fd, c->trig_fd, c->events_fd, c->evctl_fd,
                 c->thr_fd, c->ep_fd, c->limit_fd, c->oomctl_fd, c->oomev_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    c->r.final_mem_high = c->pol.high;
    if (r) {
        *r = c->r;
        step_percentiles(c, r);
    }
    if (t) {
        report_add_counts(&t->sum, &c->r);
        for (size_t i = 0; i < c->n; i++)
            atr_ctl_totals_add_sample(t, &c->s[i]);
        free(t->timeline);
        t->timeline = xmalloc((c->n_pts ? c->n_pts : 1) * sizeof *t->timeline);
        memcpy(t->timeline, c->pts, c->n_pts * sizeof *t->timeline);
        t->n_timeline = c->n_pts;
    }
    free(c);
}
