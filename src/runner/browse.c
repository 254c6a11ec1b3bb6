/* browse.c - a trace's browser (browse.h): started through spawn in its
 * cgroup and atr's sandbox with the DevTools pipes on fds 3 and 4,
 * figures per step from the group's counters, restart after a crash. */
#include "runner/browse.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/spawn.h"
#include "util/alloc.h"
#include "util/buf.h"

#define LAUNCH_TIMEOUT_US 30000000     /* start-up to a ready page */
#define CLOSE_TIMEOUT_MS 3000          /* Browser.close to exit, then SIGKILL */
#define EXIT_WAIT_MS 2000              /* a browser that closed its pipe, to its exit */

struct atr_browse {
    struct atr_browse_opts o;
    struct atr_cg group;
    bool have_group;
    struct atr_spawn_proc proc;
    bool running;
    struct atr_browser *b;
    char profile[PATH_MAX];
    char home[PATH_MAX + 8];
    unsigned starts;
    struct atr_cg_stats first, last;   /* at the group's creation; at the last read */
};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_profile(struct atr_browse *bs)
{
    if (bs->profile[0])
        nftw(bs->profile, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    bs->profile[0] = '\0';
}

struct atr_browse *atr_browse_new(const struct atr_browse_opts *o, struct atr_error *err)
{
    struct atr_browse *bs = xcalloc(1, sizeof *bs);
    bs->o = *o;
    bs->group.v2_fd = -1;
    bs->proc.pidfd = -1;
    memset(&bs->first, 0xff, sizeof bs->first);
    bs->last = bs->first;
    if (!o->parent)
        return bs;
    if (atr_cg_create(o->host, o->parent, o->group_name ? o->group_name : "browser",
                      &bs->group, err) < 0 ||
        (o->limits && atr_cg_set_limits(o->host, &bs->group, o->limits, err) < 0) ||
        atr_cg_read_stats(o->host, &bs->group, &bs->first, err) < 0) {
        atr_cg_remove(o->host, &bs->group, NULL);
        free(bs);
        return NULL;
    }
    bs->have_group = true;
    bs->last = bs->first;
    return bs;
}

const struct atr_cg *atr_browse_group(const struct atr_browse *bs)
{
    return bs->have_group ? &bs->group : NULL;
}

pid_t atr_browse_pgid(const struct atr_browse *bs) { return bs->running ? bs->proc.pid : 0; }

/* Kills what is left of the browser: its process group, then anything in
 * its cgroup that left the group; the session and profile go too. */
static void kill_browser(struct atr_browse *bs)
{
    atr_browser_close(bs->b, 0);
    bs->b = NULL;
    struct atr_spawn_result r;
    atr_spawn_kill(&bs->proc, &r);
    memset(&bs->proc, 0, sizeof bs->proc);   /* its pgid may be reused now */
    bs->proc.pidfd = -1;
    if (bs->have_group)
        atr_cg_kill(bs->o.host, &bs->group, NULL);
    bs->running = false;
    remove_profile(bs);
}

/* Browser.close, a moment to exit, then kill_browser for the rest. */
static void close_browser(struct atr_browse *bs)
{
    if (!bs->running)
        return;
    atr_browser_close(bs->b, atr_cdp_now_us() + CLOSE_TIMEOUT_MS * 1000);
    bs->b = NULL;
    struct atr_spawn_result r;
    atr_spawn_wait(&bs->proc, CLOSE_TIMEOUT_MS, &r);
    kill_browser(bs);
}

static int launch(struct atr_browse *bs, struct atr_error *err)
{
    snprintf(bs->profile, sizeof bs->profile, "%s-%u", bs->o.profile_prefix, bs->starts);
    if (mkdir(bs->profile, 0700) < 0) {
        int e = errno;
        bs->profile[0] = '\0';
        return atr_error_set(err, "%s-%u: %s", bs->o.profile_prefix, bs->starts, strerror(e));
    }
    /* Whatever Chromium writes besides its profile (caches, fontconfig)
     * lands in the profile directory too. */
    snprintf(bs->home, sizeof bs->home, "HOME=%s", bs->profile);
    char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", bs->home, "LANG=C.UTF-8", NULL};
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) < 0)
        return atr_error_set(err, "pipe: %s", strerror(errno));
    if (pipe2(from, O_CLOEXEC) < 0) {
        int e = errno;
        close(to[0]);
        close(to[1]);
        return atr_error_set(err, "pipe: %s", strerror(e));
    }
    struct atr_buf cmd = ATR_BUF_INIT;
    atr_browser_command(&cmd, bs->o.chromium, bs->profile);
    int pass[2] = {to[0], from[1]};
    const char *binds[1] = {bs->profile};
    struct atr_spawn_opts so = {
        .command = cmd.data, .cwd = bs->profile, .env = env, .host = bs->o.host,
        .cg = bs->have_group ? &bs->group : NULL, .sandbox = bs->o.sandbox,
        .binds = binds, .n_binds = bs->o.sandbox,   /* the profile, writable */
        .pass_fds = pass, .n_pass_fds = 2,
    };
    int rc = atr_spawn_start(&so, -1, &bs->proc, err);
    atr_buf_release(&cmd);
    close(to[0]);
    close(from[1]);
    if (rc < 0) {
        close(to[1]);
        close(from[0]);
        remove_profile(bs);
        return -1;
    }
    bs->starts++;
    bs->running = true;
    bs->b = atr_browser_open(to[1], from[0], bs->o.nl,
                             atr_cdp_now_us() + LAUNCH_TIMEOUT_US, err);
    if (!bs->b) {
        kill_browser(bs);
        return -1;
    }
    return 0;
}

static int64_t counter_delta(int64_t after, int64_t before)
{
    if (after < 0)
        return -1;
    return before < 0 ? after : after - before;
}

/* The group's counters now, minus the previous read. */
static int take_figures(struct atr_browse *bs, struct atr_cg_peak *pk,
                        struct atr_browse_step *out, struct atr_error *err)
{
    struct atr_cg_stats now;
    if (atr_cg_read_stats(bs->o.host, &bs->group, &now, err) < 0)
        return -1;
    struct atr_cg_stats *d = &out->delta;
    d->cpu_user_us = counter_delta(now.cpu_user_us, bs->last.cpu_user_us);
    d->cpu_sys_us = counter_delta(now.cpu_sys_us, bs->last.cpu_sys_us);
    d->mem_high_events = counter_delta(now.mem_high_events, bs->last.mem_high_events);
    d->mem_max_events = counter_delta(now.mem_max_events, bs->last.mem_max_events);
    d->oom_kills = counter_delta(now.oom_kills, bs->last.oom_kills);
    d->mem_some_us = counter_delta(now.mem_some_us, bs->last.mem_some_us);
    d->mem_full_us = counter_delta(now.mem_full_us, bs->last.mem_full_us);
    d->cpu_some_us = counter_delta(now.cpu_some_us, bs->last.cpu_some_us);
    d->mem_current = now.mem_current;
    out->peak_bytes = atr_cg_peak_end(bs->o.host, &bs->group, pk);
    d->mem_peak = out->peak_bytes;
    int64_t u = counter_delta(now.cpu_user_us, bs->first.cpu_user_us);
    int64_t s = counter_delta(now.cpu_sys_us, bs->first.cpu_sys_us);
    out->cpu_total_ms = u < 0 || s < 0 ? -1 : (double)(u + s) / 1000.0;
    bs->last = now;
    return 0;
}

/* After the action: did the browser (or its page) die under it? */
static void check_alive(struct atr_browse *bs, struct atr_browse_step *out)
{
    struct atr_spawn_result sr;
    /* A closed pipe means the browser process is going: give it a moment
     * to be reaped, so its signal is known (a PID namespace's init exits
     * only after the rest of the namespace). A crashed page leaves it. */
    int wait_ms = atr_browser_closed(bs->b) ? EXIT_WAIT_MS : 0;
    bool exited = atr_spawn_wait(&bs->proc, wait_ms, &sr) == 1;
    if (!exited && out->res.status != ATR_BR_CRASHED && !atr_browser_dead(bs->b))
        return;
    out->crashed = true;
    if (exited)
        out->term_signal = sr.term_signal;
    if (out->res.status != ATR_BR_CRASHED) {
        out->res.status = ATR_BR_CRASHED;
        snprintf(out->res.error, sizeof out->res.error, "the browser died during the step");
    }
    kill_browser(bs);
}

int atr_browse_run(struct atr_browse *bs, const struct atr_browser_action *a,
                   const struct atr_cdp_hook *hook, struct atr_browse_step *out,
                   struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    memset(&out->delta, 0xff, sizeof out->delta);
    out->peak_bytes = -1;
    out->cpu_total_ms = -1;
    out->res.page_load_ms = -1;
    struct atr_cg_peak pk = {-1};
    if (bs->have_group)
        out->peak_reset = atr_cg_peak_begin(bs->o.host, &bs->group, &pk) == 0;
    if (!bs->running) {
        int64_t t0 = atr_cdp_now_us();
        struct atr_error lerr;
        if (launch(bs, &lerr) < 0) {
            out->res.status = ATR_BR_FAILED;
            snprintf(out->res.error, sizeof out->res.error, "the browser did not start: %.200s",
                     lerr.msg);
        } else {
            out->started = true;
            out->start_ms = (double)(atr_cdp_now_us() - t0) / 1000.0;
        }
    }
    if (bs->running) {
        atr_browser_set_hook(bs->b, hook);
        atr_browser_run(bs->b, a, &out->res);
        atr_browser_set_hook(bs->b, NULL);
        check_alive(bs, out);
    }
    out->starts = bs->starts;
    if (bs->have_group)
        return take_figures(bs, &pk, out, err);
    return 0;
}

void atr_browse_free(struct atr_browse *bs)
{
    if (!bs)
        return;
    close_browser(bs);
    if (bs->have_group)
        atr_cg_remove(bs->o.host, &bs->group, NULL);
    free(bs);
}
