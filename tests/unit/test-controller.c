/* test-controller.c - the dynamic memory.high controller: policy decisions
 * on synthetic readings, pressure differencing, PSI trigger strings,
 * reaction bookkeeping on fixture files, and real runs in cgroups. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/bpfctl.h"
#include "runner/controller.h"

#define MiB (1024 * 1024LL)
#define MS 1000LL               /* microseconds per millisecond */

/* ---- pressure differencing ---- */

static void test_stall_fraction(void **state)
{
    /* 50 ms stalled in 500 ms: 10% */
    assert_float_equal(atr_psi_stall_fraction(1000, 0, 51000, 500 * MS), 0.1, 1e-12);
    /* no stall */
    assert_float_equal(atr_psi_stall_fraction(7, 100, 7, 200), 0.0, 1e-12);
    /* unknown: a reading missing, no time elapsed, counter went backwards */
    assert_true(atr_psi_stall_fraction(-1, 0, 10, 100) < 0);
    assert_true(atr_psi_stall_fraction(10, 0, -1, 100) < 0);
    assert_true(atr_psi_stall_fraction(10, 100, 20, 100) < 0);
    assert_true(atr_psi_stall_fraction(10, 200, 20, 100) < 0);
    assert_true(atr_psi_stall_fraction(500, 0, 499, 100) < 0);
    /* file read a little after the clock: clamped to all of the interval */
    assert_float_equal(atr_psi_stall_fraction(0, 0, 120, 100), 1.0, 1e-12);
}

/* ---- trigger strings ---- */

static void test_trigger_format(void **state)
{
    char buf[64];
    struct atr_error err = {{0}};
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, false, 50000, 500000, &err), 17);
    assert_string_equal(buf, "some 50000 500000");
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, true, 150000, 1000000, &err), 19);
    assert_string_equal(buf, "full 150000 1000000");
    /* the window bounds are inclusive */
    assert_true(atr_psi_trigger_format(buf, sizeof buf, false, 1, 10000000, &err) > 0);
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, false, 1000, 499999, &err), -1);
    assert_non_null(strstr(err.msg, "window 499999 us outside 500000..10000000"));
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, false, 1000, 10000001, &err), -1);
    /* stall 0 or above the window */
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, false, 0, 500000, &err), -1);
    assert_int_equal(atr_psi_trigger_format(buf, sizeof buf, false, 500001, 500000, &err), -1);
    assert_non_null(strstr(err.msg, "stall 500001"));
    /* too small a buffer: an error, not a truncated trigger */
    assert_int_equal(atr_psi_trigger_format(buf, 17, false, 50000, 500000, &err), -1);
    assert_int_equal(atr_psi_trigger_format(buf, 18, false, 50000, 500000, &err), 17);
}

static void test_kind_names(void **state)
{
    enum atr_ctl_kind k;
    assert_int_equal(atr_ctl_kind_parse("psi-trigger", &k), 0);
    assert_int_equal(k, ATR_CTL_PSI_TRIGGER);
    assert_string_equal(atr_ctl_kind_name(k), "psi-trigger");
    assert_int_equal(atr_ctl_kind_parse("psi-poll", &k), 0);
    assert_int_equal(k, ATR_CTL_PSI_POLL);
    assert_int_equal(atr_ctl_kind_parse("ebpf", &k), 0);
    assert_int_equal(k, ATR_CTL_EBPF);
    assert_string_equal(atr_ctl_kind_name(k), "ebpf");
    assert_int_equal(atr_ctl_kind_parse("psi", &k), -1);
    assert_string_equal(atr_ctl_why_name(ATR_CTL_RELAX), "relax");
}

/* ---- policy ---- */

static void policy(struct atr_ctl_policy *p, int64_t start, int64_t max)
{
    struct atr_ctl_opts o = {.mem_high_start = start, .mem_high_max = max};
    struct atr_error err;
    assert_int_equal(atr_ctl_policy_init(p, &o, &err), 0);
}

/* One observation; commits a change as the controller does after a write. */
static int64_t feed(struct atr_ctl_policy *p, int64_t t_ms, int64_t some_us, int64_t usage,
                    bool event, enum atr_ctl_why *why)
{
    struct atr_ctl_input in = {t_ms * MS, usage, some_us, event};
    int64_t high = atr_ctl_policy_step(p, &in, why);
    if (high > 0)
        atr_ctl_policy_commit(p, high, t_ms * MS);
    return high;
}

static void test_policy_init(void **state)
{
    struct atr_ctl_policy p;
    policy(&p, 100 * MiB, 0);
    assert_int_equal(p.high, 100 * MiB);
    assert_int_equal(p.ceiling, 1600 * MiB);             /* 16 x start */
    assert_float_equal(p.raise_factor, 1.5, 0);
    policy(&p, 100 * MiB, 300 * MiB);
    assert_int_equal(p.ceiling, 300 * MiB);
    policy(&p, 100 * MiB, 50 * MiB);                     /* ceiling below start */
    assert_int_equal(p.ceiling, 100 * MiB);
    struct atr_ctl_opts bad = {.mem_high_start = 0};
    struct atr_error err;
    assert_int_equal(atr_ctl_policy_init(&p, &bad, &err), -1);
    assert_non_null(strstr(err.msg, "--mem-high"));
    bad = (struct atr_ctl_opts){.mem_high_start = MiB, .raise_factor = 1.0};
    assert_int_equal(atr_ctl_policy_init(&p, &bad, &err), -1);
}

/* psi-poll every 50 ms: pressure, breach, a jump, the ceiling. */
static void test_policy_raises(void **state)
{
    struct atr_ctl_policy p;
    enum atr_ctl_why why;
    policy(&p, 100 * MiB, 0);
    assert_int_equal(feed(&p, 0, 1000, 10 * MiB, false, &why), 0);        /* baseline */
    assert_int_equal(why, ATR_CTL_KEEP);
    /* 2 ms of 50 stalled (4%), usage 90% of high: keep */
    assert_int_equal(feed(&p, 50, 3000, 90 * MiB, false, &why), 0);
    assert_int_equal(why, ATR_CTL_KEEP);
    /* 10 ms of 50 (20%) with usage attributed: x1.5 */
    assert_int_equal(feed(&p, 100, 13000, 90 * MiB, false, &why), 150 * MiB);
    assert_int_equal(why, ATR_CTL_PRESSURE);
    /* exactly 10% is not more than 10% */
    assert_int_equal(feed(&p, 150, 18000, 140 * MiB, false, &why), 0);
    /* usage at 95% of 150 MiB: breach; 1.5 x high beats 1.25 x usage */
    assert_int_equal(feed(&p, 200, 18000, 143 * MiB, false, &why), 225 * MiB);
    assert_int_equal(why, ATR_CTL_BREACH);
    /* usage far above the limit (a v1 soft limit does not hold it): 1.25 x usage */
    assert_int_equal(feed(&p, 250, 18000, 400 * MiB, false, &why), 500 * MiB);
    assert_int_equal(why, ATR_CTL_BREACH);
    /* the ceiling (1600 MiB) caps the raise, then refuses further ones */
    assert_int_equal(feed(&p, 300, 18000, 1500 * MiB, false, &why), 1600 * MiB);
    assert_int_equal(feed(&p, 350, 18000, 1590 * MiB, false, &why), 0);
    assert_int_equal(why, ATR_CTL_SATURATED);
    assert_int_equal(p.high, 1600 * MiB);
}

/* Pressure far below the limit is not ours; a PSI trigger counts only
 * when usage is close; new limits are page aligned. */
static void test_policy_attribution(void **state)
{
    struct atr_ctl_policy p;
    enum atr_ctl_why why;
    policy(&p, 100 * MiB, 0);
    feed(&p, 0, 0, 10 * MiB, false, &why);
    assert_int_equal(feed(&p, 50, 25000, 10 * MiB, false, &why), 0);     /* 50% stalled */
    assert_int_equal(why, ATR_CTL_KEEP);
    assert_int_equal(feed(&p, 100, 25000, 79 * MiB, true, &why), 0);     /* trigger, 79% */
    assert_int_equal(feed(&p, 150, 25000, 80 * MiB, true, &why), 150 * MiB);
    assert_int_equal(why, ATR_CTL_TRIGGER);
    /* unknown usage: trust the pressure */
    assert_int_equal(feed(&p, 200, 50000, -1, false, &why), 225 * MiB);
    assert_int_equal(why, ATR_CTL_PRESSURE);
    /* odd sizes round up to a page */
    policy(&p, 1000001, 0);
    assert_int_equal(feed(&p, 0, -1, 999000, false, &why), 1503232);  /* 1500001.5 -> pages */
    assert_int_equal(p.high % 4096, 0);
}

/* Lowering: 2 s of usage under half the limit, back to usage x 1.25 but
 * never below the start; pressure restarts the calm period. */
static void test_policy_relax(void **state)
{
    struct atr_ctl_policy p;
    enum atr_ctl_why why;
    policy(&p, 100 * MiB, 0);
    feed(&p, 0, 0, 100 * MiB, false, &why);                         /* breach: 150 MiB */
    assert_int_equal(feed(&p, 10, 0, 300 * MiB, false, &why), 375 * MiB);
    /* calm from t=100 ms */
    assert_int_equal(feed(&p, 100, 0, 120 * MiB, false, &why), 0);
    assert_int_equal(feed(&p, 2099, 0, 120 * MiB, false, &why), 0);
    assert_int_equal(why, ATR_CTL_KEEP);
    assert_int_equal(feed(&p, 2100, 0, 120 * MiB, false, &why), 150 * MiB);
    assert_int_equal(why, ATR_CTL_RELAX);
    /* calm again below 75 MiB: would go to 50 MiB, floored at the start */
    assert_int_equal(feed(&p, 2200, 0, 40 * MiB, false, &why), 0);
    assert_int_equal(feed(&p, 4099, 0, 40 * MiB, false, &why), 0);
    assert_int_equal(feed(&p, 4100, 0, 40 * MiB, false, &why), 100 * MiB);
    /* at the start: nothing more to lower */
    assert_int_equal(feed(&p, 9000, 0, 1 * MiB, false, &why), 0);
    assert_int_equal(p.high, 100 * MiB);

    /* pressure in the middle of a calm period restarts it */
    policy(&p, 100 * MiB, 0);
    feed(&p, 0, 0, 400 * MiB, false, &why);                         /* 500 MiB */
    feed(&p, 100, 0, 100 * MiB, false, &why);                       /* calm since 100 */
    feed(&p, 1000, 450000, 100 * MiB, false, &why);                 /* 50% stalled, not ours */
    assert_int_equal(why, ATR_CTL_KEEP);
    assert_int_equal(feed(&p, 2100, 450000, 100 * MiB, false, &why), 0);   /* calm anew */
    assert_int_equal(feed(&p, 4099, 450000, 100 * MiB, false, &why), 0);
    assert_int_equal(feed(&p, 4100, 450000, 100 * MiB, false, &why), 125 * MiB);
    /* a lowering of less than 10% is not worth a write */
    policy(&p, 100 * MiB, 0);
    p.high = 110 * MiB;
    feed(&p, 0, 0, 10 * MiB, false, &why);
    assert_int_equal(feed(&p, 5000, 0, 10 * MiB, false, &why), 0);
    assert_int_equal(p.high, 110 * MiB);
}

/* ---- reaction bookkeeping across steps ---- */

static void test_totals(void **state)
{
    struct atr_ctl_totals t = ATR_CTL_TOTALS_INIT;
    struct atr_ctl_report r;
    atr_ctl_totals_report(&t, &r);
    assert_true(isnan(r.reaction_p50_us));
    assert_int_equal(r.adjustments, 0);
    for (int i = 1; i <= 100; i++) {
        struct atr_ctl_sample s = {i * 1000LL, i * 10000LL, i % 2 == 0};
        atr_ctl_totals_add_sample(&t, &s);
    }
    t.sum.raises = t.sum.adjustments = 100;
    atr_ctl_totals_report(&t, &r);
    /* numpy.percentile(range(1, 101), 50) = 50.5, 99 -> 99.01 */
    assert_float_equal(r.reaction_p50_us, 50.5, 1e-9);
    assert_float_equal(r.reaction_p99_us, 99.01, 1e-9);
    assert_float_equal(r.reaction_bound_p50_us, 505, 1e-9);
    assert_int_equal(r.raises, 100);
    atr_ctl_totals_release(&t);
}

/* ---- the controller on fixture files (any host) ---- */

struct fixture {
    char dir[64];
    struct atr_cg_host host;
    struct atr_cg g;
};

static void put(const struct fixture *f, const char *file, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, file);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int64_t get_int(const char *dir, const char *file)
{
    char path[PATH_MAX + 64], buf[64] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return n ? strtoll(buf, NULL, 10) : -1;
}

static void get_text(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(buf, 1, cap - 1, fp);
    buf[n] = '\0';
    fclose(fp);
}

static void pressure(const struct fixture *f, int64_t some)
{
    char text[160];
    snprintf(text, sizeof text,
             "some avg10=0.00 avg60=0.00 avg300=0.00 total=%lld\n"
             "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", (long long)some);
    put(f, "memory.pressure", text);
}

static int fixture_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/atr-ctl-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    /* A hybrid-looking group: v1 memory files and a v2 memory.pressure,
     * all in one directory. */
    f->host.mode = ATR_CG_HYBRID;
    f->host.psi = true;
    snprintf(f->host.memory, sizeof f->host.memory, "%s", f->dir);
    snprintf(f->host.v2, sizeof f->host.v2, "%s", f->dir);
    snprintf(f->g.memory, sizeof f->g.memory, "%s", f->dir);
    snprintf(f->g.v2, sizeof f->g.v2, "%s", f->dir);
    f->g.v2_fd = -1;
    put(f, "memory.usage_in_bytes", "0\n");
    put(f, "memory.limit_in_bytes", "");   /* the controller writes without O_TRUNC */
    put(f, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
    pressure(f, 0);
    *state = f;
    return 0;
}

static int fixture_teardown(void **state)
{
    struct fixture *f = *state;
    const char *files[] = {"memory.usage_in_bytes", "memory.limit_in_bytes",
                           "memory.pressure", "memory.oom_control"};
    char path[256];
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", f->dir, files[i]);
        unlink(path);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* psi-poll on fixture files: the initial limit is written, a breach and
 * then pressure raise it, every raise is timed with bound >= seen, and
 * the report and the totals agree with the file. */
static void test_fixture_poll(void **state)
{
    struct fixture *f = *state;
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_POLL, .mem_high_start = 64 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    struct atr_ctl *c = atr_ctl_start(&f->host, &f->g, &o, &w, &err);
    assert_non_null(c);
    assert_int_equal(w.fd, -1);
    assert_int_equal(w.tick_ms, ATR_CTL_POLL_MS);
    assert_non_null(strstr(atr_ctl_describe(c), "psi-poll"));
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 64 * MiB);

    put(f, "memory.usage_in_bytes", "1048576\n");
    w.fn(w.ctx, false);                                   /* calm */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 64 * MiB);
    put(f, "memory.usage_in_bytes", "67108864\n");
    w.fn(w.ctx, false);                                   /* breach: 96 MiB */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 96 * MiB);
    put(f, "memory.usage_in_bytes", "83886080\n");        /* 80 MiB: 83% */
    pressure(f, 10 * 1000 * 1000);                        /* 10 s stalled: 100% */
    w.fn(w.ctx, false);                                   /* pressure: 144 MiB */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 144 * MiB);

    struct atr_ctl_totals t = ATR_CTL_TOTALS_INIT;
    struct atr_ctl_report r;
    atr_ctl_stop(c, &r, &t);
    assert_int_equal(r.adjustments, 2);
    assert_int_equal(r.raises, 2);
    assert_int_equal(r.ticks, 3);
    assert_int_equal(r.poll_samples, 2);
    assert_int_equal(r.event_samples, 0);
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.max_mem_high, 144 * MiB);
    assert_int_equal(r.final_mem_high, 144 * MiB);
    assert_true(r.reaction_p50_us > 0);
    assert_true(r.reaction_bound_p50_us >= r.reaction_p50_us);
    assert_true(r.reaction_bound_p99_us >= r.reaction_p99_us);
    struct atr_ctl_report tr;
    atr_ctl_totals_report(&t, &tr);
    assert_int_equal(tr.raises, 2);
    assert_float_equal(tr.reaction_p99_us, r.reaction_p99_us, 1e-9);
    atr_ctl_totals_release(&t);
}

/* The memory timeline on fixture files: with sample_ms the watch ticks
 * every 10 ms and the policy runs on every 5th tick (its 50 ms stay);
 * the points hold every reading and each change twice (old target, then
 * new), and past ATR_CTL_MAX_POINTS the changes survive the thinning. */
static void test_fixture_timeline(void **state)
{
    struct fixture *f = *state;
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_POLL, .mem_high_start = 64 * MiB,
                             .sample_ms = 10};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    struct atr_ctl *c = atr_ctl_start(&f->host, &f->g, &o, &w, &err);
    assert_non_null(c);
    assert_int_equal(w.tick_ms, 10);
    put(f, "memory.usage_in_bytes", "67108864\n");        /* at the target */
    for (int i = 0; i < 4; i++)
        w.fn(w.ctx, false);                               /* readings only */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 64 * MiB);
    w.fn(w.ctx, false);                                   /* the policy's tick: 96 MiB */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 96 * MiB);
    put(f, "memory.usage_in_bytes", "1048576\n");
    for (int i = 0; i < 3 * ATR_CTL_MAX_POINTS; i++)      /* calm readings: thinned */
        w.fn(w.ctx, false);
    struct atr_ctl_totals t = ATR_CTL_TOTALS_INIT;
    struct atr_ctl_report r;
    atr_ctl_stop(c, &r, &t);
    assert_int_equal(r.ticks, 1 + 3 * ATR_CTL_MAX_POINTS / 5);
    assert_true(t.n_timeline > 10 && t.n_timeline <= ATR_CTL_MAX_POINTS);
    assert_int_equal(t.timeline[0].target, 64 * MiB);
    assert_int_equal(t.timeline[t.n_timeline - 1].target, 96 * MiB);
    int changes = 0;
    for (size_t i = 1; i < t.n_timeline; i++) {
        assert_true(t.timeline[i].t_us >= t.timeline[i - 1].t_us);
        changes += t.timeline[i].target != t.timeline[i - 1].target;
    }
    assert_int_equal(changes, 1);
    atr_ctl_totals_release(&t);
    assert_null(t.timeline);
}

/* v1 hold on fixture files: the OOM killer is disabled at start (the
 * file's first byte becomes "1"), a hold the kernel reports (under_oom 1)
 * is counted and timed until the raise, and at the ceiling the OOM
 * killer is enabled again ("0"). */
static void test_fixture_v1_hold(void **state)
{
    struct fixture *f = *state;
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_POLL, .mem_high_start = 64 * MiB,
                             .mem_high_max = 96 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    struct atr_ctl *c = atr_ctl_start(&f->host, &f->g, &o, &w, &err);
    assert_non_null(c);
    char oc[64];
    get_text(f->dir, "memory.oom_control", oc, sizeof oc);
    assert_int_equal(oc[0], '1');
    put(f, "memory.oom_control", "oom_kill_disable 1\nunder_oom 1\n");
    put(f, "memory.usage_in_bytes", "67108864\n");
    w.fn(w.ctx, false);                                   /* held at 64 MiB: raise to 96 */
    assert_int_equal(get_int(f->dir, "memory.limit_in_bytes"), 96 * MiB);
    get_text(f->dir, "memory.oom_control", oc, sizeof oc);
    assert_int_equal(oc[0], 'o');                         /* the killer still off */
    put(f, "memory.usage_in_bytes", "100663296\n");
    w.fn(w.ctx, false);                                   /* held at the ceiling */
    get_text(f->dir, "memory.oom_control", oc, sizeof oc);
    assert_int_equal(oc[0], '0');                         /* the killer back on */
    struct atr_ctl_report r;
    atr_ctl_stop(c, &r, NULL);
    assert_int_equal(r.holds, 2);
    assert_true(r.held_ns > 0);
    assert_int_equal(r.saturated, 1);
    assert_int_equal(r.raises, 1);
}

static void test_fixture_errors(void **state)
{
    struct fixture *f = *state;
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_POLL, .mem_high_start = 0};
    assert_null(atr_ctl_start(&f->host, &f->g, &o, &w, &err));
    assert_non_null(strstr(err.msg, "--mem-high"));
    /* no memory group at all */
    struct atr_cg none = {.v2_fd = -1};
    o.mem_high_start = MiB;
    assert_null(atr_ctl_start(&f->host, &none, &o, &w, &err));
    assert_non_null(strstr(err.msg, "memory cgroup"));
    /* psi-trigger on a regular file: it takes the write but cannot be polled */
    o.kind = ATR_CTL_PSI_TRIGGER;
    assert_null(atr_ctl_start(&f->host, &f->g, &o, &w, &err));
    assert_non_null(strstr(err.msg, "memory.pressure: cannot poll"));
    /* without PSI: the v1 threshold alone, and no cgroup.event_control here */
    f->host.psi = false;
    assert_null(atr_ctl_start(&f->host, &f->g, &o, &w, &err));
    assert_non_null(strstr(err.msg, "cgroup.event_control"));
    /* v1 without memory.oom_control: no hold, so no knob */
    char path[300];
    snprintf(path, sizeof path, "%s/memory.oom_control", f->dir);
    unlink(path);
    o.kind = ATR_CTL_PSI_POLL;
    assert_null(atr_ctl_start(&f->host, &f->g, &o, &w, &err));
    assert_non_null(strstr(err.msg, "cannot hold at memory.limit_in_bytes"));
}

/* ---- real runs in cgroups ----
 * cgroup.c and spawn.c may not be in the tree yet while the runner is being built:
 * the real tests compile only once it is (quoted __has_include looks
 * next to this file first). */
#if defined(__has_include)
#if __has_include("../../src/runner/cgroup.c") && __has_include("../../src/runner/spawn.c")
#define HAVE_CGROUP_C 1
#endif
#endif

#ifdef HAVE_CGROUP_C
struct real {
    struct atr_cg_host host;
    struct atr_cg root, g;
    bool have_root, have_g;
    pid_t child;
    int done_r;                  /* the child writes a byte when allocated */
    struct atr_ctl *c;
};

static int real_setup(void **state)
{
    struct real *r = calloc(1, sizeof *r);
    struct atr_error err;
    r->child = -1;
    r->done_r = -1;
    *state = r;
    if (geteuid() != 0 || atr_cg_detect(&r->host, NULL, NULL, "", &err) < 0 ||
        r->host.mode == ATR_CG_NONE || (!r->host.memory[0] && !r->host.v2_memory))
        return 0;                /* the test skips */
    if (atr_cg_root(&r->host, &r->root, &err) < 0)
        return 0;
    r->have_root = true;
    if (atr_cg_create(&r->host, &r->root, "ctl-test", &r->g, &err) == 0)
        r->have_g = true;
    return 0;
}

static int real_teardown(void **state)
{
    struct real *r = *state;
    struct atr_error err;
    atr_ctl_stop(r->c, NULL, NULL);
    if (r->child > 0) {
        kill(r->child, SIGKILL);
        waitpid(r->child, NULL, 0);
    }
    if (r->done_r >= 0)
        close(r->done_r);
    if (r->have_g)
        atr_cg_remove(&r->host, &r->g, &err);
    if (r->have_root)
        atr_cg_remove(&r->host, &r->root, &err);
    free(r);
    return 0;
}

/* A child in g that touches `mib` MiB, 1 MiB every millisecond (pacing, so
 * that the controller sees growth), says so, and waits to be killed. */
static void start_hog(struct real *r, int mib)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    r->child = fork();
    assert_true(r->child >= 0);
    if (r->child == 0) {
        close(p[0]);
        if (atr_cg_join(&r->g, getpid(), false, NULL) < 0)
            _exit(2);
        for (int i = 0; i < mib; i++) {
            char *m = malloc(MiB);
            if (!m)
                _exit(3);
            memset(m, i + 1, MiB);
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
        if (write(p[1], "x", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    close(p[1]);
    r->done_r = p[0];
}

/* Runs the controller the way the step's wait loop does, until the child
 * has allocated and the limit written is above the breach level of its
 * usage, or 10 s pass. Returns the limit written. */
static int64_t drive(struct real *r, const struct atr_spawn_watch *w, const char *usage_dir,
                     const char *usage_file, const char *high_dir, const char *high_file)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool done = false;
    int64_t high = -1;
    for (;;) {
        struct pollfd pf[2] = {{r->done_r, POLLIN, 0}, {w->fd, w->events, 0}};
        int rc = poll(pf, w->fd >= 0 ? 2 : 1, w->tick_ms);
        if (rc > 0 && pf[0].revents) {
            char b;
            done = read(r->done_r, &b, 1) == 1 || done;
        }
        w->fn(w->ctx, rc > 0 && w->fd >= 0 && pf[1].revents);
        high = get_int(high_dir, high_file);
        int64_t usage = get_int(usage_dir, usage_file);
        if (done && usage > 0 && usage * 100 < high * ATR_CTL_NEAR_PCT)
            return high;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 10)
            return high;
    }
}

static void real_run(void **state, enum atr_ctl_kind kind)
{
    struct real *r = *state;
    if (!r->have_g) {
        print_message("    no usable memory cgroup here (not root, or no v1/v2 memory)\n");
        skip();
    }
    struct atr_ctl_opts o = {.kind = kind, .mem_high_start = 8 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    r->c = atr_ctl_start(&r->host, &r->g, &o, &w, &err);
    if (!r->c)
        fail_msg("atr_ctl_start: %s", err.msg);
    start_hog(r, 48);
    const char *dir = r->host.v2_memory ? r->g.v2 : r->g.memory;
    int64_t high = drive(r, &w, dir, r->host.v2_memory ? "memory.current" : "memory.usage_in_bytes",
                         dir, r->host.v2_memory ? "memory.high" : "memory.limit_in_bytes");
    struct atr_ctl_report rep;
    const char *desc = atr_ctl_describe(r->c);
    char desc_copy[200];
    snprintf(desc_copy, sizeof desc_copy, "%s", desc);
    atr_ctl_stop(r->c, &rep, NULL);
    r->c = NULL;
    print_message("    %s (%s): %llu raises, %llu event / %llu poll samples, reaction p50 %.1f "
                  "p99 %.1f us, bound p50 %.1f p99 %.1f us, limit %lld MiB\n",
                  atr_ctl_kind_name(kind), desc_copy, (unsigned long long)rep.raises,
                  (unsigned long long)rep.event_samples, (unsigned long long)rep.poll_samples,
                  rep.reaction_p50_us, rep.reaction_p99_us, rep.reaction_bound_p50_us,
                  rep.reaction_bound_p99_us, (long long)(high / MiB));
    assert_true(rep.raises >= 1);
    assert_int_equal(rep.errors, 0);
    assert_int_equal(rep.final_mem_high, high);          /* what the kernel holds */
    assert_true(high > 48 * MiB);                        /* followed the usage up */
    assert_true(rep.reaction_p50_us > 0 && rep.reaction_p99_us >= rep.reaction_p50_us);
    if (kind == ATR_CTL_PSI_TRIGGER && !r->host.v2_memory)
        assert_true(rep.event_samples >= 1);             /* the v1 threshold fired */
}

static void test_real_poll(void **state)
{
    real_run(state, ATR_CTL_PSI_POLL);
}

static void test_real_trigger(void **state)
{
    real_run(state, ATR_CTL_PSI_TRIGGER);
}

/* The v2 paths a hybrid host (v1 memory, a v2 hierarchy without
 * controllers) can run for real (docs/controller.md, "v2 paths"): the PSI
 * trigger written into the step's v2 memory.pressure (the kernel refuses a
 * malformed one), the v1 hold's reclaim stalls accounted in that v2
 * group's "some total=" (what psi-poll differences), and cgroup.kill of
 * the v2 group ending the step. memory.high, memory.current and
 * memory.events need the v2 memory controller: fixture files only. */
static void test_real_v2_paths(void **state)
{
    struct real *r = *state;
    if (!r->have_g || !r->g.v2[0] || !r->host.psi) {
        print_message("    no v2 group with PSI here (not root, or no cgroup2 hierarchy)\n");
        skip();
    }
    if (r->host.v2_memory) {
        print_message("    the v2 memory controller is here: test_real_trigger runs the v2 knob\n");
        skip();
    }
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_TRIGGER, .mem_high_start = 8 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    r->c = atr_ctl_start(&r->host, &r->g, &o, &w, &err);
    if (!r->c)
        fail_msg("atr_ctl_start: %s", err.msg);
    /* the kernel took the trigger: its string is in the description */
    assert_non_null(strstr(atr_ctl_describe(r->c), "some "));
    char text[256];
    int64_t some0, some1, full;
    get_text(r->g.v2, "memory.pressure", text, sizeof text);
    assert_int_equal(atr_cg_parse_pressure(text, &some0, &full), 0);
    start_hog(r, 48);
    int64_t high = drive(r, &w, r->g.memory, "memory.usage_in_bytes", r->g.memory,
                         "memory.limit_in_bytes");
    struct atr_ctl_report rep;
    atr_ctl_stop(r->c, &rep, NULL);
    r->c = NULL;
    assert_true(high > 48 * MiB);
    get_text(r->g.v2, "memory.pressure", text, sizeof text);
    assert_int_equal(atr_cg_parse_pressure(text, &some1, &full), 0);
    print_message("    v2 memory.pressure some total %lld -> %lld us over %llu holds\n",
                  (long long)some0, (long long)some1, (unsigned long long)rep.holds);
    assert_true(some1 >= some0);                         /* a counter: never backwards */
    if (rep.holds)                                       /* held = reclaim at the limit */
        assert_true(some1 > some0);
    /* cgroup.kill of the v2 group: the hog (paused for ever) dies of SIGKILL */
    char kill_path[PATH_MAX + 16];
    snprintf(kill_path, sizeof kill_path, "%s/cgroup.kill", r->g.v2);
    assert_int_equal(access(kill_path, W_OK), 0);
    assert_int_equal(atr_cg_kill(&r->host, &r->g, &err), 0);
    int st;
    assert_int_equal(waitpid(r->child, &st, 0), r->child);
    r->child = -1;
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* Through the step's own wait loop: a shell that holds 48 MiB for 0.5 s in
 * a group that starts at 8 MiB. Holding it matters: a step that frees its
 * memory within a few ms can end before the threshold event or the relax
 * tick is handled (that made this test flaky). */
static void test_real_spawn(void **state)
{
    struct real *r = *state;
    if (!r->have_g) {
        print_message("    no usable memory cgroup here (not root, or no v1/v2 memory)\n");
        skip();
    }
    struct atr_ctl_opts o = {.kind = ATR_CTL_PSI_TRIGGER, .mem_high_start = 8 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    r->c = atr_ctl_start(&r->host, &r->g, &o, &w, &err);
    if (!r->c)
        fail_msg("atr_ctl_start: %s", err.msg);
    char *env[] = {"PATH=/usr/bin:/bin", NULL};
    struct atr_spawn_opts so = {
        .command = "v=$(head -c 50331648 /dev/zero | tr '\\0' a); sleep 0.5; echo ${#v}",
        .cwd = "/", .env = env,
        .host = &r->host, .cg = &r->g, .max_output = 64, .timeout_ms = 20000, .watch = &w};
    struct atr_spawn_result res;
    int rc = atr_spawn_run(&so, &res, &err);
    free(res.output);
    struct atr_ctl_report rep;
    atr_ctl_stop(r->c, &rep, NULL);
    r->c = NULL;
    if (rc < 0)
        fail_msg("atr_spawn_run: %s", err.msg);
    assert_int_equal(res.exit_code, 0);
    assert_true(rep.raises >= 1);
    assert_true(rep.max_mem_high > 8 * MiB);
    assert_true(rep.reaction_p50_us > 0);
}
#endif

/* The process state letter of pid ('T': stopped), from /proc. */
static char proc_state(pid_t pid)
{
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/* ebpf: the kernel stops the child at its 8 MiB target, the controller
 * raises and resumes it until it has its 48 MiB, every stop is timed on
 * kernel clocks, and nothing is left stopped. */
static void test_real_ebpf(void **state)
{
    struct real *r = *state;
    const char *why = atr_bpf_unavailable();
    if (!r->have_g || why) {
        print_message("    skipped: %s\n", why ? why : "no usable memory cgroup here");
        skip();
    }
    struct atr_ctl_opts o = {.kind = ATR_CTL_EBPF, .mem_high_start = 8 * MiB};
    struct atr_spawn_watch w;
    struct atr_error err = {{0}};
    r->c = atr_ctl_start(&r->host, &r->g, &o, &w, &err);
    if (!r->c)
        fail_msg("atr_ctl_start: %s", err.msg);
    assert_true(w.fd >= 0);
    start_hog(r, 48);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool done = false;
    while (!done) {
        struct pollfd pf[2] = {{r->done_r, POLLIN, 0}, {w.fd, w.events, 0}};
        int rc = poll(pf, 2, w.tick_ms);
        if (rc > 0 && pf[0].revents) {
            char b;
            done = read(r->done_r, &b, 1) == 1;
        }
        w.fn(w.ctx, rc > 0 && pf[1].revents);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 10)
            fail_msg("the child did not get its 48 MiB in 10 s (state %c)", proc_state(r->child));
    }
    struct atr_ctl_report rep;
    atr_ctl_stop(r->c, &rep, NULL);
    r->c = NULL;
    print_message("    ebpf: %llu stops, %llu raises, kernel reaction p50 %.1f p99 %.1f us, "
                  "held %.2f ms, limit %lld MiB\n",
                  (unsigned long long)rep.holds, (unsigned long long)rep.raises,
                  rep.reaction_p50_us, rep.reaction_p99_us, (double)rep.held_ns / 1e6,
                  (long long)(rep.final_mem_high / MiB));
    assert_true(rep.holds >= 1);
    assert_true(rep.event_samples >= 1);
    assert_int_equal(rep.errors, 0);
    assert_true(rep.final_mem_high > 48 * MiB);
    assert_true(rep.reaction_p50_us >= 0 && rep.reaction_p99_us < 10000);
    assert_true(proc_state(r->child) != 'T');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall_fraction),
        cmocka_unit_test(test_trigger_format),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_policy_init),
        cmocka_unit_test(test_policy_raises),
        cmocka_unit_test(test_policy_attribution),
        cmocka_unit_test(test_policy_relax),
        cmocka_unit_test(test_totals),
        cmocka_unit_test_setup_teardown(test_fixture_poll, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fixture_v1_hold, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fixture_timeline, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_fixture_errors, fixture_setup, fixture_teardown),
#ifdef HAVE_CGROUP_C
        cmocka_unit_test_setup_teardown(test_real_poll, real_setup, real_teardown),
        cmocka_unit_test_setup_teardown(test_real_trigger, real_setup, real_teardown),
        cmocka_unit_test_setup_teardown(test_real_spawn, real_setup, real_teardown),
        cmocka_unit_test_setup_teardown(test_real_v2_paths, real_setup, real_teardown),
        cmocka_unit_test_setup_teardown(test_real_ebpf, real_setup, real_teardown),
#endif
    };
#ifndef HAVE_CGROUP_C
    print_message("[  SKIP    ] real cgroup runs: src/runner/cgroup.c or spawn.c is not in the tree yet\n");
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
