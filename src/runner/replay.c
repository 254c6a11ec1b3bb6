/* replay.c - tool-step replay: groups per configuration, work directories,
 * a scrubbed environment, one spawn and one metrics record per step. */
#include "runner/replay.h"
#include "runner/workdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "browser/netlog.h"
#include "json/json.h"
#include "json/writer.h"
#include "runner/browse.h"
#include "runner/bpfctl.h"
#include "runner/controller.h"
#include "runner/spawn.h"
#include "runner/summary.h"
#include "util/alloc.h"
#include "util/dirlock.h"
#include "util/machine.h"

/* Set by a signal handler, read by every replaying thread: a lock-free
 * atomic is both async-signal-safe and free of data races. */
static atomic_int stop_requested;

struct atr_replay {
    struct atr_replay_opts o;
    struct atr_cg_host host;
    struct atr_cg root;
    bool have_root;
    unsigned swept;
    atomic_uint left;                 /* work directories that could not be removed */
    char left_path[PATH_MAX];         /* the first of them (set once, under left) */
    /* Traces started: names their groups and work directories. Atomic:
     * tenants replay traces on one rp from several threads at once. */
    atomic_ulong traces;
    struct atr_bpf *bpf;              /* --controller ebpf: the loaded program */
};

static const char *const config_names[] = {"none", "static-env", "static-toolcall", "dynamic"};

const char *atr_replay_config_name(enum atr_replay_config c)
{
    return config_names[c];
}

int atr_replay_config_parse(const char *name, enum atr_replay_config *out)
{
    for (size_t i = 0; i < sizeof config_names / sizeof *config_names; i++)
        if (strcmp(name, config_names[i]) == 0) {
            *out = (enum atr_replay_config)i;
            return 0;
        }
    return -1;
}

void atr_replay_stop(void)
{
    stop_requested = 1;
    atr_spawn_kill_all();
}

bool atr_replay_stopped(void) { return stop_requested; }

static const char *workdir_base(const struct atr_replay_opts *o)
{
    return o->workdir ? o->workdir : "/tmp";
}

/* The lock on --workdir: held by a run while it makes and locks a work
 * directory, and by a sweep, so a sweep never sees a new directory before
 * its lock (as runner/cgroup.c guards new cgroup roots). -1 if unlockable. */
static int base_lock(const char *base)
{
    return atr_dirlock(base, true);
}

/* "atr-work-<pid>-<n>-..." or "atr-browser-<pid>-<n>-..." (a browser's
 * profile, runner/browse.c, beside its trace's work directory) -> the
 * "<pid>-<n>-" that pairs them, else 0. */
static size_t run_key(const char *name, const char *prefix, char *key, size_t cap)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0)
        return 0;
    const char *p = name + n, *q = p;
    for (int dashes = 0; *q && dashes < 2; q++)
        dashes += *q == '-';
    size_t len = (size_t)(q - p);
    if (len < 4 || q[-1] != '-' || len >= cap)
        return 0;
    memcpy(key, p, len);
    key[len] = '\0';
    return len;
}

struct live_keys {
    char (*v)[64];
    size_t n, cap;
};

static bool key_live(const struct live_keys *k, const char *key)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->v[i], key) == 0)
            return true;
    return false;
}

/* path of base/name when it is a directory of ours (a shared /tmp holds
 * other users' runs), else false. */
static bool own_dir(const char *base, const char *name, char *path, size_t cap)
{
    struct stat st;
    return snprintf(path, cap, "%s/%s", base, name) < (int)cap && lstat(path, &st) == 0 &&
           S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

/* Pass one: work directories whose lock no process holds are a dead run's
 * (SIGKILL): removed; the keys of held ones are kept for pass two. A lock,
 * unlike kill(pid, 0), holds across PID namespaces and pid reuse. */
static void sweep_work(DIR *d, const char *base, struct live_keys *live)
{
    char path[PATH_MAX], key[64];
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!run_key(e->d_name, ATR_WORKDIR_PREFIX, key, sizeof key) ||
            !own_dir(base, e->d_name, path, sizeof path))
            continue;
        /* make_workdir holds R's lock for the trace's life, on R as its
         * path shows it: the capped file system when mounted */
        if (!atr_dirlock_held(path)) {
            atr_workdir_remove(path);
            continue;
        }
        if (live->n == live->cap) {
            live->cap = live->cap ? 2 * live->cap : 8;
            live->v = xrealloc(live->v, live->cap * sizeof *live->v);
        }
        snprintf(live->v[live->n++], sizeof *live->v, "%s", key);
    }
}

/* Pass two: a browser profile lives only while its trace's work directory
 * does (made after it, removed before it): without a held one it is dead. */
static void sweep_profiles(DIR *d, const char *base, const struct live_keys *live)
{
    char path[PATH_MAX], key[64];
    struct dirent *e;
    rewinddir(d);
    while ((e = readdir(d)))
        if (run_key(e->d_name, ATR_PROFILE_PREFIX, key, sizeof key) && !key_live(live, key) &&
            own_dir(base, e->d_name, path, sizeof path))
            atr_workdir_remove(path);
}

/* Work directories and browser profiles of runs that died without
 * cleaning up, as atr_cg_sweep_stale sweeps their groups: by lock, under
 * the base's lock so no run makes one meanwhile. */
static void sweep_workdirs(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    int guard = base_lock(base);
    struct live_keys live = {NULL, 0, 0};
    sweep_work(d, base, &live);
    sweep_profiles(d, base, &live);
    free(live.v);
    if (guard >= 0)
        close(guard);
    closedir(d);
}

/* The default memory ceiling: a share of what this process may use, the
 * machine's memory or its own group's limit when lower, so a step that
 * runs away is stopped before the host (or atr's container) is. */
static int64_t auto_mem_max(const struct atr_cg_host *h)
{
    struct atr_machine mc;
    atr_machine_read(&mc);
    int64_t total = mc.mem_bytes > 0 && mc.mem_bytes < INT64_MAX ? (int64_t)mc.mem_bytes : -1;
    int64_t cg = h->mode == ATR_CG_NONE ? -1 : atr_cg_mem_limit(h);
    if (total < 0 || (cg > 0 && cg < total))
        total = cg;
    return total < 0 ? -1 : total / ATR_MEM_AUTO_DEN * ATR_MEM_AUTO_NUM;
}

static void resolve_limits(struct atr_replay *rp)
{
    if (rp->o.limits.mem_max == ATR_LIMIT_AUTO)
        rp->o.limits.mem_max = auto_mem_max(&rp->host);
    if (rp->o.disk_max <= 0 || geteuid() != 0)
        rp->o.disk_max = -1;        /* mounting the capped file system needs root */
}

struct atr_replay *atr_replay_new(const struct atr_replay_opts *o, struct atr_error *err)
{
    struct atr_replay *rp = xcalloc(1, sizeof *rp);
    rp->o = *o;
    rp->root.v2_fd = -1;
    sweep_workdirs(workdir_base(o));
    if (atr_cg_detect(&rp->host, NULL, NULL, "", err) < 0)
        goto fail;
    resolve_limits(rp);
    /* --controller ebpf: loaded once for the run, before any step, so a
     * host that cannot run it fails first; every step's controller shares
     * it (each watches its own group through its own ring buffer). */
    if (o->config == ATR_CFG_DYNAMIC && o->controller == ATR_CTL_EBPF &&
        !(rp->bpf = atr_bpf_open(err)))
        goto fail;
    if (o->config == ATR_CFG_NONE || rp->host.mode == ATR_CG_NONE)
        return rp;
    if (atr_cg_sweep_stale(&rp->host, &rp->swept, err) < 0 ||
        atr_cg_root(&rp->host, &rp->root, err) < 0)
        goto fail;
    rp->have_root = true;
    return rp;
fail:
    atr_bpf_close(rp->bpf);
    free(rp);
    return NULL;
}

const struct atr_cg_host *atr_replay_host(const struct atr_replay *rp) { return &rp->host; }
unsigned atr_replay_swept(const struct atr_replay *rp) { return rp->swept; }
const struct atr_replay_opts *atr_replay_opts_used(const struct atr_replay *rp) { return &rp->o; }

unsigned atr_replay_left(const struct atr_replay *rp, const char **first)
{
    unsigned n = atomic_load(&rp->left);
    *first = n ? rp->left_path : NULL;
    return n;
}

void atr_replay_free(struct atr_replay *rp)
{
    if (!rp)
        return;
    if (rp->have_root)
        atr_cg_remove(&rp->host, &rp->root, NULL);
    atr_bpf_close(rp->bpf);
    free(rp);
}

/* ---- one trace ---- */

struct trace_run {
    struct atr_replay *rp;
    const struct atr_trace *t;
    const struct atr_cg *parent;      /* the trace's group goes below it */
    unsigned long index;              /* this trace's number in the run */
    /* R, the trace's own directory (its size-capped file system when
     * mounted, locked for the trace's life: see sweep_workdirs), holds
     * workdir (R/work: cwd and HOME of its steps, root of its editor
     * paths) and tmpdir (R/tmp: its private /tmp, kept across steps). */
    char root[PATH_MAX];
    char workdir[PATH_MAX];
    char tmpdir[PATH_MAX];
    int lock_fd;                      /* flock on R; -1 */
    char home[PATH_MAX + 8];
    char *env[6];
    struct atr_cg group;        /* the trace's group (static-env: limited) */
    bool have_group;
    struct atr_ctl_totals ctl_step;   /* dynamic: the last step's samples */
    const char *resources;            /* the trace zip served to browser steps, or NULL */
    struct atr_netlog *nl;
    struct atr_browse *browse;        /* made at the first browser step */
    char browser_error[ATR_ERROR_MAX];   /* the step's error text lives here */
    char restore_url[200];            /* and the first resource its restore lacked */
    struct atr_buf snap_html;         /* the step's DOM snapshot, rendered */
    const char *last_cwd;             /* the last cwd a step of the trace recorded */
    struct atr_ctr ctr;               /* --image: the trace's container */
    const char *rootfs;               /* --rootfs, the container's root, or NULL */
    /* A runner of a shared trace (atr_replay_trace_shared): the fields
     * above from root to rootfs are the share's, which removes them; the
     * browser, its recording and the step's samples are its own. */
    bool borrowed;
    char browser_group[32];           /* its browser's group name; "": "browser" */
};

/* Runs a helper program (mkfs.ext4, mount) found in the system's
 * directories, quietly; 0 when it exited 0, else -1 with err. */
static int run_helper(const char *name, char *const argv[], struct atr_error *err)
{
    static const char *const dirs[] = {"/usr/sbin", "/usr/bin", "/sbin", "/bin"};
    static char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
    char path[64] = "";
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs && !path[0]; i++)
        if (snprintf(path, sizeof path, "%s/%s", dirs[i], name) > 0 && access(path, X_OK) < 0)
            path[0] = '\0';
    if (!path[0])
        return atr_error_set(err, "%s not found (e2fsprogs, util-linux)", name);
    pid_t pid = fork();
    if (pid < 0)
        return atr_error_set(err, "fork: %s", strerror(errno));
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        execve(path, argv, env);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return atr_error_set(err, "%s: %s", name, strerror(errno));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : atr_error_set(err, "%s failed", name);
}

/* Mounts a file system of `bytes` over dir: ext4 in a sparse image inside
 * dir (hidden by the mount; a real disk's blocks, not RAM), on a loop
 * device that goes when it is unmounted. No reserved blocks: a step
 * running as root meets the same limit. */
static int cap_dir(const char *dir, int64_t bytes, struct atr_error *err)
{
    char img[PATH_MAX], size[32];
    if (snprintf(img, sizeof img, "%s/.disk.img", dir) >= (int)sizeof img)
        return atr_error_set(err, "%s: path too long", dir);
    int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, bytes) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return atr_error_set(err, "%s: %s", img, strerror(e));
    }
    close(fd);
    snprintf(size, sizeof size, "%lld", (long long)bytes);
    char *mkfs[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E",
                    "lazy_itable_init=1,nodiscard", img, NULL};
    char *mnt[] = {"mount", "-t", "ext4", "-o", "loop,nosuid,nodev", img, (char *)dir, NULL};
    struct atr_error why;
    if (run_helper("mkfs.ext4", mkfs, &why) < 0 || run_helper("mount", mnt, &why) < 0)
        return atr_error_set(err, "work directory %s: cannot cap its size at %s bytes "
                             "(a loop-mounted ext4 image): %s", dir, size, why.msg);
    return 0;
}

int atr_replay_probe_disk(const char *base, struct atr_error *err)
{
    char dir[PATH_MAX];
    base = base ? base : "/tmp";
    /* named as a work directory and never locked: swept if we die here */
    snprintf(dir, sizeof dir, "%s/" ATR_WORKDIR_PREFIX "%ld-probe-XXXXXX", base, (long)getpid());
    int guard = base_lock(base);
    int rc = mkdtemp(dir) ? cap_dir(dir, (int64_t)1 << 20, err)
                          : atr_error_set(err, "%s: %s", dir, strerror(errno));
    if (guard >= 0)
        close(guard);
    atr_workdir_remove(dir);
    return rc;
}

/* R: made, size-capped (as root), then locked where the sweep looks. */
static int make_root(struct trace_run *tr, struct atr_error *err)
{
    const struct atr_replay_opts *o = &tr->rp->o;
    if (!mkdtemp(tr->root)) {
        int e = errno;
        atr_error_set(err, "%s: %s", tr->root, strerror(e));
        tr->root[0] = '\0';
        return -1;
    }
    if (o->disk_max > 0 && cap_dir(tr->root, o->disk_max, err) < 0)
        return -1;
    /* Private: the sandbox sees R/work and R/tmp through idmapped mounts
     * (runner/sandbox.h), as its own, whoever owns them here. */
    chmod(tr->root, 0700);
    if ((tr->lock_fd = atr_dirlock(tr->root, false)) < 0)
        return atr_error_set(err, "cannot lock %s: %s", tr->root, strerror(errno));
    return 0;
}

/* R/name. */
static int make_sub(struct trace_run *tr, const char *name, char *out, struct atr_error *err)
{
    if (snprintf(out, PATH_MAX, "%s/%s", tr->root, name) >= PATH_MAX)
        return atr_error_set(err, "%s: path too long", tr->root);
    if (mkdir(out, 0700) < 0)
        return atr_error_set(err, "%s: %s", out, strerror(errno));
    return 0;
}

static int make_workdir(struct trace_run *tr, struct atr_error *err)
{
    const char *base = workdir_base(&tr->rp->o);
    snprintf(tr->root, sizeof tr->root, "%s/" ATR_WORKDIR_PREFIX "%ld-%lu-XXXXXX", base, (long)getpid(),
             tr->index);
    int guard = base_lock(base);
    int rc = make_root(tr, err);
    if (guard >= 0)
        close(guard);
    if (rc < 0 || make_sub(tr, "work", tr->workdir, err) < 0 ||
        make_sub(tr, "tmp", tr->tmpdir, err) < 0)
        return -1;
    snprintf(tr->home, sizeof tr->home, "HOME=%s", tr->workdir);
    tr->env[0] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    tr->env[1] = tr->home;
    tr->env[2] = "LANG=C.UTF-8";
    tr->env[3] = "TERM=dumb";
    tr->env[4] = "PYTHONDONTWRITEBYTECODE=1";
    tr->env[5] = NULL;
    return 0;
}

/* A trace's or step's group, in the hierarchies its limits need. Below a
 * tenant's group every hierarchy is kept: the tenant's cpu weight only
 * applies to processes inside its cpu group. */
static int create_group(struct trace_run *tr, const struct atr_cg *parent, const char *name,
                        struct atr_cg *out, struct atr_error *err)
{
    const struct atr_replay *rp = tr->rp;
    if (parent != &rp->root)
        return atr_cg_create(&rp->host, parent, name, out, err);
    return atr_cg_create_for(&rp->host, parent, name, &rp->o.limits, out, err);
}

/* Does the step's recorded cwd exist where steps run (inside --rootfs
 * when set)? Relative or ".."-laden paths are never looked up. */
static bool cwd_present(const char *rootfs, const char *cwd)
{
    char path[PATH_MAX];
    struct stat st;
    return cwd[0] == '/' && !strstr(cwd, "..") &&
           snprintf(path, sizeof path, "%s%s", rootfs ? rootfs : "", cwd) < (int)sizeof path &&
           stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The step's recorded cwd when it is absent here: a trace recorded in a
 * repository image (/testbed) replayed on a host without it. */
static const char *missing_cwd(const struct trace_run *tr, const struct atr_step *s)
{
    return s->cwd && s->cwd[0] && !cwd_present(tr->rootfs, s->cwd) ? s->cwd : NULL;
}

/* Where a step starts: the trace's work directory on the host; inside a
 * --rootfs or --image root the step's recorded cwd when the image has it
 * (SWE-bench images have /testbed), else the image's WorkingDir, else /. */
static const char *step_cwd(const struct trace_run *tr, const struct atr_step *s)
{
    if (!tr->rootfs)
        return tr->workdir;
    if (s->cwd && cwd_present(tr->rootfs, s->cwd))
        return s->cwd;
    return tr->ctr.workdir[0] && cwd_present(tr->rootfs, tr->ctr.workdir) ? tr->ctr.workdir : "/";
}

static bool is_browser(const struct atr_step *s)
{
    return s->tool && strcmp(s->tool, "browser") == 0;
}

static bool is_file_op(const struct atr_step *s)
{
    return s->tool && strcmp(s->tool, "editor") == 0 && s->file_op && s->path && *s->path;
}

/* Why a step is not run, or NULL. */
static const char *skip_reason(const struct atr_step *s)
{
    if (s->kind != ATR_STEP_TOOL)
        return "llm step";
    if (is_browser(s))
        return atr_browser_find() ? NULL : "no chromium here (install it or set ATR_CHROMIUM)";
    if (is_file_op(s))
        return NULL;
    if (!s->tool || strcmp(s->tool, "bash") != 0)
        return "not a shell command";
    if (!s->command)
        return "command redacted";
    return NULL;
}

const char *atr_replay_page_missing(const struct atr_trace *t, const struct atr_step *s,
                                    const char *resources)
{
    static const char *const chat[] = {"send_msg_to_user", "report_infeasible", "noop", "stop",
                                       NULL};
    if (!is_browser(s) || !t->source || strcmp(t->source, "browsergym") != 0)
        return NULL;
    for (size_t i = 0; s->action && chat[i]; i++)
        if (strcmp(s->action, chat[i]) == 0)
            return "web agent's message, not a page action";
    return resources ? NULL : "page not in the trace (web-agent dataset: --browser-resources ZIP)";
}

static double us_to_ms(int64_t us) { return us < 0 ? -1 : (double)us / 1000.0; }

static int64_t delta(int64_t after, int64_t before)
{
    if (after < 0)
        return -1;
    return before < 0 ? after : after - before;
}

/* Fills m from the spawn result and the group's statistics around it. */
static void fill_metrics(struct atr_step_metrics *m, const struct atr_spawn_result *res,
                         const struct atr_cg_stats *before, const struct atr_cg_stats *after,
                         bool have_cg)
{
    m->latency_ms = (double)res->wall_us / 1000.0;
    int64_t user = have_cg ? delta(after->cpu_user_us, before->cpu_user_us) : -1;
    int64_t sys = have_cg ? delta(after->cpu_sys_us, before->cpu_sys_us) : -1;
    if (user < 0 || sys < 0) {
        user = res->cpu_user_us;
        sys = res->cpu_sys_us;
    }
    m->cpu_user_ms = us_to_ms(user);
    m->cpu_sys_ms = us_to_ms(sys);
    m->cpu_ms = m->cpu_user_ms + m->cpu_sys_ms;
    m->rss_is_tree = have_cg && after->mem_peak >= 0;
    m->max_rss_mb = m->rss_is_tree ? (double)after->mem_peak / (1024.0 * 1024.0)
                                   : (double)res->ru_maxrss_kb / 1024.0;
    m->mem_high_events = have_cg ? delta(after->mem_high_events, before->mem_high_events) : -1;
    m->mem_max_events = have_cg ? delta(after->mem_max_events, before->mem_max_events) : -1;
    m->oom_kills = have_cg ? delta(after->oom_kills, before->oom_kills) : -1;
    m->pids_max_hit = have_cg ? delta(after->pids_max_events, before->pids_max_events) : -1;
    m->mem_some_ms = have_cg ? us_to_ms(delta(after->mem_some_us, before->mem_some_us)) : -1;
    m->mem_full_ms = have_cg ? us_to_ms(delta(after->mem_full_us, before->mem_full_us)) : -1;
    m->cpu_some_ms = have_cg ? us_to_ms(delta(after->cpu_some_us, before->cpu_some_us)) : -1;
    m->exit_code = res->exit_code;
    m->timed_out = res->timed_out;
    m->output_bytes = res->output_bytes;
    m->output_truncated = res->output_truncated;
}

/* Is the trace's file system full: no inode left, or (capped) less than
 * 2 MiB or 1/64 of it free to an unprivileged writer (ext4 refuses a
 * write with some blocks still free: measured, 0.4-0.9 MiB left after
 * ENOSPC at 16 MiB-256 MiB); uncapped (the host's), no block left. */
static bool workdir_full(const struct trace_run *tr)
{
    struct statvfs v;
    int64_t cap = tr->rp->o.disk_max, slack = cap > 0 ? cap / 64 : 0;
    if (cap > 0 && slack < ((int64_t)2 << 20))
        slack = (int64_t)2 << 20;
    if (statvfs(tr->workdir, &v) < 0)
        return false;
    return (v.f_files && v.f_favail == 0) || (int64_t)(v.f_bavail * v.f_bsize) <= slack;
}

static void stats_unknown(struct atr_cg_stats *s)
{
    memset(s, 0xff, sizeof *s);     /* every field -1 */
}

/* Default starting budget of a dynamic step without --mem-high. */
#define DYNAMIC_DEFAULT_HIGH ((int64_t)256 << 20)

/* dynamic: starts the controller on the step's group; *ctl stays NULL for
 * the other configurations. */
static int start_controller(struct trace_run *tr, const struct atr_cg *g, struct atr_ctl **ctl,
                            struct atr_spawn_watch *watch, struct atr_error *err)
{
    const struct atr_replay_opts *o = &tr->rp->o;
    *ctl = NULL;
    if (o->config != ATR_CFG_DYNAMIC || !g)
        return 0;
    struct atr_ctl_opts co = {
        .kind = (enum atr_ctl_kind)o->controller,
        .interval_ms = o->interval_ms,
        .mem_high_start = o->limits.mem_high > 0 ? o->limits.mem_high : DYNAMIC_DEFAULT_HIGH,
        .mem_high_max = o->limits.mem_max > 0 ? o->limits.mem_max : 0,
        .bpf = tr->rp->bpf,
        .sample_ms = ATR_CTL_SAMPLE_MS,         /* the memory timeline (ctl_timeline) */
    };
    *ctl = atr_ctl_start(&tr->rp->host, g, &co, watch, err);
    return *ctl ? 0 : -1;
}

/* Stops the controller and moves this step's figures into m (the sample
 * arrays live in tr until the next step). */
static void stop_controller(struct trace_run *tr, struct atr_ctl *ctl, struct atr_step_metrics *m)
{
    struct atr_ctl_report rep;
    atr_ctl_totals_release(&tr->ctl_step);
    struct atr_ctl_totals fresh = ATR_CTL_TOTALS_INIT;
    tr->ctl_step = fresh;
    atr_ctl_stop(ctl, &rep, &tr->ctl_step);
    m->ctl_adjustments = (int64_t)rep.adjustments;
    m->ctl_max_high = rep.max_mem_high;
    m->ctl_holds = (int64_t)rep.holds;
    m->ctl_held_ms = (double)rep.held_ns / 1e6;
    m->ctl_overshoot_mb = (double)rep.overshoot / (1024.0 * 1024.0);
    m->ctl_bpf_prog = rep.bpf_prog_id ? (int64_t)rep.bpf_prog_id : -1;
    m->ctl_seen_us = tr->ctl_step.seen_us.v;
    m->ctl_bound_us = tr->ctl_step.bound_us.v;
    m->ctl_samples = tr->ctl_step.seen_us.n < tr->ctl_step.bound_us.n ? tr->ctl_step.seen_us.n
                                                                        : tr->ctl_step.bound_us.n;
    m->ctl_timeline = tr->ctl_step.timeline;
    m->ctl_timeline_n = tr->ctl_step.n_timeline;
}

/* Runs one bash step in the configuration's group. */
static int run_step(struct trace_run *tr, const struct atr_step *s, struct atr_step_metrics *m,
                    struct atr_error *err)
{
    struct atr_replay *rp = tr->rp;
    const struct atr_cg *g = NULL;
    struct atr_cg step_group = {.v2_fd = -1};
    bool per_step = rp->o.config == ATR_CFG_STATIC_TOOLCALL || rp->o.config == ATR_CFG_DYNAMIC;
    if (tr->have_group && per_step) {
        char name[32];
        snprintf(name, sizeof name, "s%u", s->i);
        if (create_group(tr, &tr->group, name, &step_group, err) < 0 ||
            atr_cg_set_limits(&rp->host, &step_group, &rp->o.limits, err) < 0)
            return -1;
        g = &step_group;
    } else if (tr->have_group) {
        g = &tr->group;
    }
    struct atr_cg_stats before, after;
    stats_unknown(&before);
    stats_unknown(&after);
    struct atr_ctl *ctl = NULL;
    struct atr_spawn_watch watch;
    if (g && atr_cg_read_stats(&rp->host, g, &before, err) < 0)
        goto fail;
    if (start_controller(tr, g, &ctl, &watch, err) < 0)
        goto fail;
    const char *binds[ATR_SANDBOX_MAX_BINDS] = {tr->workdir};
    int n_binds = 0;
    if (rp->o.sandbox)   /* the work dir (not inside --rootfs, --image), then --bind's */
        for (int i = tr->rootfs ? 0 : -1; i < rp->o.n_binds; i++)
            binds[n_binds++] = i < 0 ? tr->workdir : rp->o.binds[i];
    struct atr_spawn_opts so = {
        .command = s->command,
        .cwd = step_cwd(tr, s),
        .env = tr->ctr.env ? tr->ctr.env : tr->env,
        .host = &rp->host,
        .cg = g,
        .sandbox = rp->o.sandbox,
        .allow_network = rp->o.allow_network,
        .rootfs = tr->rootfs,
        .rootfs_shifted = tr->ctr.created,
        .tmpdir = rp->o.sandbox ? tr->tmpdir : NULL,   /* its /tmp, kept across steps */
        .binds = binds,
        .n_binds = n_binds,
        .max_output = rp->o.max_output,
        .timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : rp->o.timeout_ms,
        .watch = ctl ? &watch : NULL,
    };
    struct atr_spawn_result res;
    memset(&res, 0, sizeof res);
    int rc = atr_spawn_run(&so, &res, err);
    free(res.output);
    if (ctl)
        stop_controller(tr, ctl, m);
    if (rc < 0)
        goto fail;
    if (g && atr_cg_read_stats(&rp->host, g, &after, err) < 0)
        goto fail;
    fill_metrics(m, &res, &before, &after, g != NULL);
    m->missing_cwd = missing_cwd(tr, s);
    m->disk_full = workdir_full(tr);
    /* Whatever the step left running dies with the step. */
    if (g && atr_cg_kill(&rp->host, g, err) < 0)
        goto fail;
    if (g == &step_group && atr_cg_remove(&rp->host, &step_group, err) < 0)
        return -1;
    return 0;
fail:
    if (g == &step_group)
        atr_cg_remove(&rp->host, &step_group, NULL);
    return -1;
}

/* ---- editor steps ---- */

/* Content atr-trace does not keep is replaced by this line, repeated and
 * cut to the recorded length: a comment in Python, shell and most configs,
 * so a later `python file.py` finds a file that runs. */
static const char synthetic[] = "# atr: synthetic bytes of the recorded length\n";

/* The recorded path inside the trace's work directory: relative to the
 * step's cwd (the last one the trace recorded), which the work directory
 * stands for as bash steps run there; other absolute paths keep their full
 * path below it. With --image the recorded path itself inside the
 * container's root (a relative one from the cwd, else the image's
 * WorkingDir). ".." never leaves it. */
static int host_path(const struct trace_run *tr, const char *cwd, const char *path, char *out,
                     size_t cap)
{
    if (strstr(path, ".."))
        return EINVAL;
    if (tr->ctr.created) {   /* --image: the container's own file, at its recorded path */
        const char *dir = path[0] == '/' ? "" : cwd && cwd[0] == '/' ? cwd : tr->ctr.workdir;
        int len = snprintf(out, cap, "%s%s/%s", tr->rootfs, dir, path + (path[0] == '/'));
        return len < (int)cap ? 0 : ENAMETOOLONG;
    }
    const char *rel = path;
    size_t n = cwd ? strlen(cwd) : 0;
    if (path[0] == '/' && n > 1 && strncmp(path, cwd, n) == 0 && (path[n] == '/' || !path[n]))
        rel = path + n;
    int len = snprintf(out, cap, "%s/%s", tr->workdir, rel + (*rel == '/'));
    return len < (int)cap ? 0 : ENAMETOOLONG;
}

/* Whether path stays inside the work directory once symbolic links are
 * followed: its longest existing prefix must resolve below the work dir's
 * real path. An editor step runs in atr itself, outside any sandbox, so a
 * link an earlier step made (ln -s /etc x, then "create x/f") must not
 * carry it out. */
static bool beneath_workdir(const struct trace_run *tr, const char *path)
{
    char root[PATH_MAX], probe[PATH_MAX], real[PATH_MAX];
    /* --image: the container's root, where an absolute link resolves
     * against the host's tree and so is refused */
    const char *top = tr->ctr.created ? tr->rootfs : tr->workdir;
    if (!realpath(top, root) || strlen(path) >= sizeof probe)
        return false;
    strcpy(probe, path);
    struct stat st;     /* lstat: a dangling link exists, and then fails realpath */
    for (char *slash; lstat(probe, &st) != 0 && (slash = strrchr(probe, '/')) && slash > probe;)
        *slash = '\0';
    if (!realpath(probe, real))
        return false;
    size_t n = strlen(root);
    return strncmp(real, root, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

/* mkdir -p of path's parent directories; shift: made owned by the
 * sandbox's root (inside an --image container, as the step's own). */
static int make_parents(char *path, bool shift)
{
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        int rc = mkdir(path, 0755);
        if (rc == 0 && shift)
            lchown(path, ATR_SANDBOX_UID, ATR_SANDBOX_UID);
        *p = '/';
        if (rc < 0 && errno != EEXIST)
            return errno;
    }
    return 0;
}

static int write_synthetic(int fd, int64_t n)
{
    while (n > 0) {
        size_t k = n < (int64_t)sizeof synthetic - 1 ? (size_t)n : sizeof synthetic - 1;
        ssize_t w = write(fd, synthetic, k);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return errno ? errno : EIO;
        n -= w;
    }
    return 0;
}

/* Size the file has after the edit: replace removes old_bytes (which must
 * be there: the recorded text was in the file) and adds bytes; insert adds. */
static int edit_size(const struct atr_step *s, int64_t size, int64_t *out)
{
    int64_t add = s->bytes > 0 ? s->bytes : 0, del = s->old_bytes > 0 ? s->old_bytes : 0;
    if (strcmp(s->file_op, "replace") == 0 && del > size)
        return EINVAL;
    *out = (strcmp(s->file_op, "replace") == 0 ? size - del : size) + add;
    return 0;
}

static int edit_file(const char *path, const struct atr_step *s, uint64_t *read_bytes)
{
    bool create = strcmp(s->file_op, "create") == 0 || strcmp(s->file_op, "overwrite") == 0;
    int fd = open(path, (create ? O_WRONLY | O_CREAT | O_TRUNC : O_RDWR) | O_NOFOLLOW | O_CLOEXEC,
                  0644);
    if (fd < 0)
        return errno;
    struct stat st;
    int64_t size = 0;
    int rc = fstat(fd, &st) < 0 ? errno : 0;
    if (!rc && !create)
        rc = edit_size(s, st.st_size, &size);
    else if (!rc)
        size = s->bytes > 0 ? s->bytes : 0;
    if (!rc && size < st.st_size && ftruncate(fd, size) < 0)
        rc = errno;
    if (!rc && size > (create ? 0 : st.st_size) && lseek(fd, 0, SEEK_END) >= 0)
        rc = write_synthetic(fd, size - (create ? 0 : st.st_size));
    *read_bytes = 0;
    close(fd);
    return rc;
}

/* view: the file (or directory) must be there; a file is read through. */
static int view_file(const char *path, uint64_t *read_bytes)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno;
    *read_bytes = 0;
    if (S_ISDIR(st.st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        *read_bytes += (uint64_t)n;
    int rc = n < 0 ? errno : 0;
    close(fd);
    return rc;
}

static int apply_file_op(const char *path, const struct atr_step *s, uint64_t *bytes)
{
    if (strcmp(s->file_op, "view") == 0)
        return view_file(path, bytes);
    return edit_file(path, s, bytes);
}

/* Runs an editor step as the file operation it was, timed. A file it needs
 * that is absent (ENOENT: it came with the trace's repository) is the
 * environment's fault, not the step's. */
static void run_editor_step(struct trace_run *tr, const struct atr_step *s,
                            struct atr_step_metrics *m)
{
    struct atr_cg_stats unknown;
    stats_unknown(&unknown);
    struct atr_spawn_result res;
    memset(&res, 0, sizeof res);
    res.cpu_user_us = res.cpu_sys_us = res.ru_maxrss_kb = -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *cwd = s->cwd ? s->cwd : tr->last_cwd;
    char path[PATH_MAX];
    int rc = host_path(tr, cwd, s->path, path, sizeof path);
    if (!rc && !beneath_workdir(tr, path))
        rc = EACCES;
    bool create = strcmp(s->file_op, "create") == 0 || strcmp(s->file_op, "overwrite") == 0;
    if (!rc && create)
        rc = make_parents(path, tr->ctr.created);
    if (!rc)
        rc = apply_file_op(path, s, &res.output_bytes);
    if (!rc && create && tr->ctr.created && lchown(path, ATR_SANDBOX_UID, ATR_SANDBOX_UID) < 0)
        rc = errno;   /* else the container's root could not write it */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    res.wall_us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
    res.exit_code = rc ? 1 : 0;
    fill_metrics(m, &res, &unknown, &unknown, false);
    m->missing_file = rc == ENOENT || rc == ENOTDIR ? s->path : NULL;
    m->disk_full = rc == ENOSPC || rc == EDQUOT || workdir_full(tr);
}

/* ---- browser steps ---- */

int64_t atr_browser_step_timeout_ms(const struct atr_step *s, int64_t fixed_ms)
{
    if (fixed_ms > 0)
        return fixed_ms;
    if (s->timeout_ms > 0)
        return s->timeout_ms;
    int64_t t = ATR_BROWSER_TIMEOUT_CAP_MS;
    if (s->dur_ms != ATR_UNSET && s->dur_ms >= 0 &&
        s->dur_ms <= ATR_BROWSER_TIMEOUT_CAP_MS / ATR_BROWSER_TIMEOUT_K)
        t = ATR_BROWSER_TIMEOUT_K * s->dur_ms;
    if (t < ATR_BROWSER_TIMEOUT_FLOOR_MS)
        t = ATR_BROWSER_TIMEOUT_FLOOR_MS;
    /* The call's own timeout as recorded (params.timeout, kept with the
     * content) is what Playwright itself would have waited. */
    int64_t own;
    if (atr_json_get_i64(atr_json_get(s->extra, "params"), "timeout", &own) && own > 0 && own < t)
        t = own;
    return t;
}

/* How long the live page may take to show a step's selector before its
 * snapshot is restored: twice the recorded duration, 0.1 to 1 s. */
static int64_t live_wait_ms(const struct atr_step *s)
{
    if (s->dur_ms == ATR_UNSET || s->dur_ms >= 500)
        return 1000;
    return s->dur_ms < 50 ? 100 : 2 * s->dur_ms;
}

/* The step's DOM snapshot rendered into tr->snap_html, or NULL when the
 * step names none, the recording (zip) lacks it, or nothing is restored. */
static const char *step_snapshot(struct trace_run *tr, const char *name)
{
    struct atr_snapshots *ss = tr->nl ? atr_netlog_snapshots(tr->nl) : NULL;
    if (!name || !ss || tr->rp->o.restore == ATR_RESTORE_NEVER ||
        atr_snapshots_render(ss, name, &tr->snap_html) < 0)
        return NULL;
    return tr->snap_html.data ? tr->snap_html.data : "";
}

static void watch_to_hook(const struct atr_spawn_watch *w, struct atr_cdp_hook *h)
{
    *h = (struct atr_cdp_hook){w->fd, w->events, w->tick_ms, w->fn, w->ctx};
}

/* The trace's recording and browser, made at its first browser step. */
static int browse_ready(struct trace_run *tr, struct atr_error *err)
{
    struct atr_replay *rp = tr->rp;
    if (tr->browse)
        return 0;
    if (tr->resources && !tr->nl && !(tr->nl = atr_netlog_open(tr->resources, err)))
        return -1;
    bool per_step = rp->o.config == ATR_CFG_STATIC_TOOLCALL || rp->o.config == ATR_CFG_DYNAMIC;
    struct atr_browse_opts bo = {
        .chromium = atr_browser_find(),
        .host = &rp->host,
        .parent = tr->have_group ? &tr->group : NULL,
        .limits = per_step ? &rp->o.limits : NULL,
        .sandbox = rp->o.sandbox,
        .nl = tr->nl,
        .group_name = tr->browser_group[0] ? tr->browser_group : NULL,
    };
    snprintf(bo.profile_prefix, sizeof bo.profile_prefix, "%s/" ATR_PROFILE_PREFIX "%ld-%lu",
             workdir_base(&rp->o), (long)getpid(), tr->index);
    tr->browse = atr_browse_new(&bo, err);
    return tr->browse ? 0 : -1;
}

static void fill_browser_metrics(struct trace_run *tr, const struct atr_step *s,
                                 const struct atr_browse_step *bst, struct atr_step_metrics *m)
{
    const struct atr_browser_result *r = &bst->res;
    m->browser = true;
    m->action = s->action;
    m->selector = s->selector;
    m->url = s->url;
    m->outcome = atr_browser_status_name(r->status);
    m->snapshot = atr_json_get_str(s->extra, "snapshot", NULL);
    m->snapshots_read = tr->nl != NULL;
    m->restore = atr_restore_status_name(r->restore);
    m->restore_missing = r->restore_missing;
    snprintf(tr->restore_url, sizeof tr->restore_url, "%s", r->restore_missing_url);
    m->restore_missing_url = tr->restore_url;
    snprintf(tr->browser_error, sizeof tr->browser_error, "%s", r->error);
    m->error = r->error[0] ? tr->browser_error : NULL;
    m->page_load_ms = r->page_load_ms;
    m->net_served = (int64_t)r->net.served;
    m->net_unrecorded = (int64_t)r->net.unrecorded;
    m->net_missing = (int64_t)r->net.missing;
    m->screenshot_bytes = r->screenshot_bytes;
    m->browser_started = bst->started;
    m->browser_start_ms = bst->started ? bst->start_ms : -1;
    m->browser_starts = bst->starts;
    m->browser_crashed = bst->crashed;
    m->browser_cpu_total_ms = bst->cpu_total_ms;
    bool ok = r->status == ATR_BR_OK || r->status == ATR_BR_NOOP;
    m->exit_code = ok ? 0 : bst->term_signal ? 128 + bst->term_signal : 1;
    m->timed_out = r->status == ATR_BR_TIMEOUT || r->status == ATR_BR_NO_MATCH;
    const struct atr_cg_stats *d = &bst->delta;
    bool have_cg = atr_browse_group(tr->browse) != NULL;
    m->cpu_user_ms = have_cg ? us_to_ms(d->cpu_user_us) : -1;
    m->cpu_sys_ms = have_cg ? us_to_ms(d->cpu_sys_us) : -1;
    m->cpu_ms = m->cpu_user_ms < 0 || m->cpu_sys_ms < 0 ? -1 : m->cpu_user_ms + m->cpu_sys_ms;
    m->rss_is_tree = have_cg && bst->peak_bytes >= 0;
    m->max_rss_mb = m->rss_is_tree ? (double)bst->peak_bytes / (1024.0 * 1024.0) : -1;
    m->mem_high_events = have_cg ? d->mem_high_events : -1;
    m->mem_max_events = have_cg ? d->mem_max_events : -1;
    m->oom_kills = have_cg ? d->oom_kills : -1;
    m->pids_max_hit = -1;       /* the browser's group is not pids-limited */
    m->mem_some_ms = have_cg ? us_to_ms(d->mem_some_us) : -1;
    m->mem_full_ms = have_cg ? us_to_ms(d->mem_full_us) : -1;
    m->cpu_some_ms = have_cg ? us_to_ms(d->cpu_some_us) : -1;
}

/* One browser step: the action in the trace's browser (started when none
 * runs), in the browser's group; the dynamic controller watches that
 * group for the step's length. */
static int run_browser_step(struct trace_run *tr, const struct atr_step *s,
                            struct atr_step_metrics *m, struct atr_error *err)
{
    if (browse_ready(tr, err) < 0)
        return -1;
    const struct atr_cg *g = atr_browse_group(tr->browse);
    struct atr_ctl *ctl = NULL;
    struct atr_spawn_watch watch;
    struct atr_cdp_hook hook;
    if (start_controller(tr, g, &ctl, &watch, err) < 0)
        return -1;
    if (ctl)
        watch_to_hook(&watch, &hook);
    const struct atr_json *params = atr_json_get(s->extra, "params");
    const char *html = step_snapshot(tr, atr_json_get_str(s->extra, "snapshot", NULL));
    struct atr_browser_action a = {
        .action = s->action,
        .method = atr_json_get_str(s->extra, "method", NULL),
        .selector = s->selector,
        .url = s->url,
        .params = params,
        .timeout_ms = atr_browser_step_timeout_ms(s, tr->rp->o.browser_timeout_ms),
        .restore = tr->rp->o.restore,
        .snapshot_html = html,
        .snapshot_len = html ? tr->snap_html.len : 0,
        .live_wait_ms = live_wait_ms(s),
    };
    struct atr_browse_step bst;
    int64_t t0 = atr_cdp_now_us();
    int rc = atr_browse_run(tr->browse, &a, ctl ? &hook : NULL, &bst, err);
    double wall_ms = (double)(atr_cdp_now_us() - t0) / 1000.0;
    if (ctl)
        stop_controller(tr, ctl, m);
    if (rc < 0)
        return -1;
    fill_browser_metrics(tr, s, &bst, m);
    m->timeout_ms = a.timeout_ms;
    m->latency_ms = wall_ms;
    return 0;
}

/* --image: the trace's container, named after this run and trace. */
static int start_container(struct trace_run *tr, struct atr_error *err)
{
    const struct atr_replay_opts *o = &tr->rp->o;
    char image[512], name[64];
    const char *id = atr_json_get_str(tr->t->meta, "instance_id", NULL);
    struct atr_error why;
    if (o->image)
        snprintf(image, sizeof image, "%s", o->image);
    else if (atr_ctr_image_for(o->image_template, id, image, sizeof image, &why) < 0)
        return atr_error_set(err, "trace %s: %s", tr->t->trace_id, why.msg);
    atr_ctr_name(name, sizeof name, (long)getpid(), tr->index);
    if (atr_ctr_create(o->container_cli, image, name, &tr->ctr, err) < 0)
        return -1;
    tr->rootfs = tr->ctr.root;
    return 0;
}

static int start_trace(struct trace_run *tr, struct atr_error *err)
{
    struct atr_replay *rp = tr->rp;
    if (make_workdir(tr, err) < 0)
        return -1;
    tr->rootfs = rp->o.rootfs;
    if ((rp->o.image || rp->o.image_template) && start_container(tr, err) < 0)
        return -1;
    if (!rp->have_root)
        return 0;
    char name[32];
    snprintf(name, sizeof name, "t%lu", tr->index);
    if (create_group(tr, tr->parent, name, &tr->group, err) < 0)
        return -1;
    tr->have_group = true;
    if (rp->o.config == ATR_CFG_STATIC_ENV)
        return atr_cg_set_limits(&rp->host, &tr->group, &rp->o.limits, err);
    return 0;
}

/* What each runner of a trace owns: its browser, recording, samples. */
static void end_runner(struct trace_run *tr)
{
    atr_browse_free(tr->browse);
    atr_netlog_free(tr->nl);
    atr_buf_release(&tr->snap_html);
    atr_ctl_totals_release(&tr->ctl_step);
}

static void end_trace(struct trace_run *tr)
{
    end_runner(tr);
    if (tr->borrowed)
        return;
    struct atr_error ignored;   /* the guard's sweep is the fallback */
    atr_ctr_remove(tr->rp->o.container_cli, &tr->ctr, &ignored);
    if (tr->have_group)
        atr_cg_remove(&tr->rp->host, &tr->group, NULL);
    /* The lock goes first: an open directory would keep the detached
     * file system (and its loop device) alive. */
    if (tr->lock_fd >= 0)
        close(tr->lock_fd);
    if (tr->root[0] && atr_workdir_remove(tr->root) < 0 && atomic_fetch_add(&tr->rp->left, 1) == 0)
        snprintf(tr->rp->left_path, sizeof tr->rp->left_path, "%s", tr->root);
}

const struct atr_cg *atr_replay_root(const struct atr_replay *rp)
{
    return rp->have_root ? &rp->root : NULL;
}

int atr_replay_trace(struct atr_replay *rp, const struct atr_trace *t, atr_replay_sink sink,
                     void *ctx, struct atr_error *err)
{
    return atr_replay_trace_in(rp, NULL, t, sink, ctx, err);
}

int atr_replay_trace_in(struct atr_replay *rp, const struct atr_cg *parent,
                        const struct atr_trace *t, atr_replay_sink sink, void *ctx,
                        struct atr_error *err)
{
    return atr_replay_trace_res(rp, parent, t, NULL, sink, ctx, err);
}

int atr_replay_trace_res(struct atr_replay *rp, const struct atr_cg *parent,
                         const struct atr_trace *t, const char *resources, atr_replay_sink sink,
                         void *ctx, struct atr_error *err)
{
    return atr_replay_trace_gated(rp, parent, t, resources, NULL, sink, ctx, err);
}

static void init_trace(struct trace_run *tr, struct atr_replay *rp, const struct atr_cg *parent,
                       const struct atr_trace *t, const char *resources)
{
    memset(tr, 0, sizeof *tr);
    tr->rp = rp;
    tr->resources = resources;
    tr->t = t;
    tr->parent = parent ? parent : &rp->root;
    tr->index = atomic_fetch_add(&rp->traces, 1);
    tr->group.v2_fd = -1;
    tr->lock_fd = -1;
}

/* The trace's tool steps in order, each asked of gate first. */
static int run_steps(struct trace_run *tr, atr_replay_gate gate, atr_replay_sink sink,
                     void *ctx, struct atr_error *err)
{
    const struct atr_trace *t = tr->t;
    const char *resources = tr->resources;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < t->n_steps && !stop_requested; k++) {
        const struct atr_step *s = &t->steps[k];
        if (s->kind != ATR_STEP_TOOL)
            continue;
        int go = gate ? gate(ctx, s, err) : 0;
        if (go == ATR_REPLAY_GATE_SKIP)
            continue;
        if (go != 0) {
            rc = go < 0 ? -1 : 0;
            break;
        }
        struct atr_step_metrics m;
        memset(&m, 0, sizeof m);
        m.trace_id = t->trace_id;
        m.step_id = s->i;
        m.tool = s->tool ? s->tool : "";
        m.cmd = s->command;
        m.exit_code = -1;
        m.ctl_adjustments = -1;
        m.ctl_max_high = -1;
        m.ctl_holds = -1;
        m.skipped = skip_reason(s);
        if (!m.skipped)
            m.skipped = atr_replay_page_missing(t, s, resources);
        if (is_browser(s))
            m.cmd = s->action;
        if (is_file_op(s)) {
            m.file_op = s->file_op;
            m.path = s->path;
        }
        int step_rc = 0;
        if (!m.skipped && is_file_op(s))
            run_editor_step(tr, s, &m);
        else if (!m.skipped)
            step_rc = is_browser(s) ? run_browser_step(tr, s, &m, err) : run_step(tr, s, &m, err);
        if (s->cwd && *s->cwd)
            tr->last_cwd = s->cwd;
        if (step_rc < 0) {
            rc = -1;
            break;
        }
        /* A step cut short by Ctrl-C is not recorded: only complete lines. */
        if (stop_requested)
            break;
        rc = sink(ctx, &m, err);
    }
    return rc;
}

int atr_replay_trace_gated(struct atr_replay *rp, const struct atr_cg *parent,
                           const struct atr_trace *t, const char *resources,
                           atr_replay_gate gate, atr_replay_sink sink, void *ctx,
                           struct atr_error *err)
{
    struct trace_run tr;
    init_trace(&tr, rp, parent, t, resources);
    int rc = start_trace(&tr, err);
    if (rc == 0)
        rc = run_steps(&tr, gate, sink, ctx, err);
    end_trace(&tr);
    return rc;
}

/* ---- one trace, several runners ---- */

struct atr_replay_shared {
    struct trace_run base;            /* owns the directory, container, group */
    atomic_uint runners;
};

struct atr_replay_shared *atr_replay_share(struct atr_replay *rp, const struct atr_cg *parent,
                                           const struct atr_trace *t, const char *resources,
                                           struct atr_error *err)
{
    struct atr_replay_shared *sh = xcalloc(1, sizeof *sh);
    init_trace(&sh->base, rp, parent, t, resources);
    if (start_trace(&sh->base, err) < 0) {
        end_trace(&sh->base);
        free(sh);
        return NULL;
    }
    return sh;
}

int atr_replay_trace_shared(struct atr_replay_shared *sh, atr_replay_gate gate,
                            atr_replay_sink sink, void *ctx, struct atr_error *err)
{
    struct trace_run tr = sh->base;   /* the share's paths, env, group, container */
    tr.borrowed = true;
    tr.browse = NULL;
    tr.nl = NULL;
    tr.snap_html = (struct atr_buf)ATR_BUF_INIT;
    memset(&tr.ctl_step, 0, sizeof tr.ctl_step);
    tr.last_cwd = NULL;
    /* its own browser group and profile names beside the other runners' */
    unsigned n = atomic_fetch_add(&sh->runners, 1);
    snprintf(tr.browser_group, sizeof tr.browser_group, "browser-r%u", n);
    tr.index = atomic_fetch_add(&sh->base.rp->traces, 1);
    int rc = run_steps(&tr, gate, sink, ctx, err);
    end_trace(&tr);
    return rc;
}

void atr_replay_unshare(struct atr_replay_shared *sh)
{
    if (!sh)
        return;
    end_trace(&sh->base);
    free(sh);
}

/* ---- metrics.jsonl ---- */

/* Figures a backend could not measure are negative: null in the record. */
static void kv_ms(struct atr_jw *w, const char *key, double v)
{
    if (v < 0)
        atr_jw_kv_null(w, key);
    else
        atr_jw_kv_fixed(w, key, v, ATR_METRICS_MS_DIGITS);
}

static void kv_count(struct atr_jw *w, const char *key, int64_t v)
{
    if (v < 0)
        atr_jw_kv_null(w, key);
    else
        atr_jw_kv_int(w, key, v);
}

static void kv_samples(struct atr_jw *w, const char *key, const double *v, size_t n)
{
    atr_jw_key(w, key);
    atr_jw_array_begin(w);
    for (size_t i = 0; i < n; i++)
        atr_jw_fixed(w, v[i], ATR_METRICS_US_DIGITS);
    atr_jw_array_end(w);
}

/* "ctl_timeline": {"t_ms": [...], "usage_mb": [...], "target_mb": [...]},
 * three arrays of one length (usage null where it could not be read):
 * what `atr report` draws as the step's memory over time. */
static void put_timeline(struct atr_jw *w, const struct atr_ctl_point *p, size_t n)
{
    atr_jw_key(w, "ctl_timeline");
    atr_jw_object_begin(w);
    static const char *const keys[] = {"t_ms", "usage_mb", "target_mb"};
    for (int k = 0; k < 3; k++) {
        atr_jw_key(w, keys[k]);
        atr_jw_array_begin(w);
        for (size_t i = 0; i < n; i++) {
            if (k == 0)
                atr_jw_fixed(w, (double)p[i].t_us / 1000.0, 1);
            else if (k == 1 && p[i].usage < 0)
                atr_jw_null(w);
            else
                atr_jw_fixed(w, (double)(k == 1 ? p[i].usage : p[i].target) / (1024.0 * 1024.0),
                             2);
        }
        atr_jw_array_end(w);
    }
    atr_jw_object_end(w);
}

static void put_measured(struct atr_jw *w, const struct atr_step_metrics *m)
{
    kv_ms(w, "latency_ms", m->latency_ms);
    kv_ms(w, "cpu_ms", m->cpu_ms);
    kv_ms(w, "cpu_user_ms", m->cpu_user_ms);
    kv_ms(w, "cpu_sys_ms", m->cpu_sys_ms);
    kv_ms(w, "max_rss_mb", m->max_rss_mb);
    atr_jw_kv_str(w, "rss_scope", m->rss_is_tree ? "cgroup" : "process");
    kv_count(w, "mem_high_events", m->mem_high_events);
    kv_count(w, "mem_max_events", m->mem_max_events);
    kv_count(w, "oom_kills", m->oom_kills);
    kv_count(w, "pids_max_hit", m->pids_max_hit);
    atr_jw_kv_bool(w, "disk_full", m->disk_full);
    kv_ms(w, "mem_pressure_some_ms", m->mem_some_ms);
    kv_ms(w, "mem_pressure_full_ms", m->mem_full_ms);
    kv_ms(w, "cpu_pressure_some_ms", m->cpu_some_ms);
    atr_jw_kv_int(w, "exit_code", m->exit_code);
    atr_jw_kv_bool(w, "timed_out", m->timed_out);
    if (m->missing_cwd)
        atr_jw_kv_str(w, "missing_cwd", m->missing_cwd);
    if (m->file_op) {
        atr_jw_kv_str(w, "file_op", m->file_op);
        atr_jw_kv_str(w, "path", m->path);
    }
    if (m->missing_file)
        atr_jw_kv_str(w, "missing_file", m->missing_file);
    atr_jw_kv_uint(w, "output_bytes", m->output_bytes);
    atr_jw_kv_bool(w, "output_truncated", m->output_truncated);
    kv_count(w, "ctl_adjustments", m->ctl_adjustments);
    if (m->ctl_adjustments >= 0) {
        double high_mb = m->ctl_max_high < 0 ? -1 : (double)m->ctl_max_high / (1024.0 * 1024.0);
        kv_ms(w, "ctl_max_mem_high_mb", high_mb);
        kv_count(w, "ctl_holds", m->ctl_holds);
        kv_ms(w, "ctl_held_ms", m->ctl_held_ms);
        kv_ms(w, "ctl_overshoot_mb", m->ctl_overshoot_mb);
        if (m->ctl_bpf_prog > 0)
            atr_jw_kv_int(w, "ctl_bpf_prog", m->ctl_bpf_prog);
        kv_samples(w, "ctl_reaction_us", m->ctl_seen_us, m->ctl_samples);
        kv_samples(w, "ctl_reaction_bound_us", m->ctl_bound_us, m->ctl_samples);
        if (m->ctl_timeline_n)
            put_timeline(w, m->ctl_timeline, m->ctl_timeline_n);
    }
}

/* What restoring the step's DOM came to, and what could not be restored,
 * in words (docs/browser.md). */
static void put_restore(struct atr_jw *w, const struct atr_step_metrics *m)
{
    if (m->snapshot)
        atr_jw_kv_str(w, "snapshot", m->snapshot);
    if (!m->restore)
        return;
    atr_jw_kv_str(w, "restore", m->restore);
    atr_jw_kv_uint(w, "restore_resources_missing", m->restore_missing);
    bool no_snap = strcmp(m->restore, "snapshot_missing") == 0;
    bool no_sel = strcmp(m->restore, "selector_missing") == 0;
    if (!no_snap && !no_sel && !m->restore_missing)
        return;
    char item[400];
    atr_jw_key(w, "not_restored");
    atr_jw_array_begin(w);
    if (no_snap && m->snapshot && !m->snapshots_read)
        snprintf(item, sizeof item, "snapshot %s: no trace zip to read it from "
                 "(--browser-resources)", m->snapshot);
    else if (no_snap && m->snapshot)
        snprintf(item, sizeof item, "snapshot %s: not in the trace", m->snapshot);
    else if (no_snap)
        snprintf(item, sizeof item, "snapshot: none recorded for the step");
    else if (no_sel)
        snprintf(item, sizeof item, "selector %s: not in the restored snapshot", m->selector);
    if (no_snap || no_sel)
        atr_jw_str(w, item);
    if (m->restore_missing) {
        snprintf(item, sizeof item, "resource %s: not in the recording%s", m->restore_missing_url,
                 m->restore_missing > 1 ? " (and others)" : "");
        atr_jw_str(w, item);
    }
    atr_jw_array_end(w);
}

/* A browser step's own members (docs/browser.md). */
static void put_browser(struct atr_jw *w, const struct atr_step_metrics *m)
{
    atr_jw_kv_str(w, "action", m->action);
    if (m->selector)
        atr_jw_kv_str(w, "selector", m->selector);
    if (m->url)
        atr_jw_kv_str(w, "url", m->url);
    atr_jw_kv_str(w, "outcome", m->outcome);
    if (m->error)
        atr_jw_kv_str(w, "error", m->error);
    atr_jw_kv_int(w, "timeout_ms", m->timeout_ms);
    put_restore(w, m);
    kv_ms(w, "page_load_ms", m->page_load_ms);
    kv_count(w, "net_served", m->net_served);
    kv_count(w, "net_unrecorded", m->net_unrecorded);
    kv_count(w, "net_missing", m->net_missing);
    atr_jw_kv_uint(w, "screenshot_bytes", m->screenshot_bytes);
    atr_jw_kv_bool(w, "browser_started", m->browser_started);
    kv_ms(w, "browser_start_ms", m->browser_start_ms);
    atr_jw_kv_uint(w, "browser_starts", m->browser_starts);
    atr_jw_kv_bool(w, "browser_crashed", m->browser_crashed);
    kv_ms(w, "browser_cpu_total_ms", m->browser_cpu_total_ms);
}

void atr_step_metrics_members(struct atr_jw *w, const char *config,
                              const struct atr_step_metrics *m)
{
    atr_jw_kv_str(w, "config", config);
    atr_jw_kv_str(w, "trace_id", m->trace_id);
    atr_jw_kv_uint(w, "step_id", m->step_id);
    atr_jw_kv_str(w, "tool", m->tool);
    atr_jw_kv_str(w, "cmd", m->cmd);
    if (m->skipped) {
        atr_jw_kv_str(w, "skipped", m->skipped);
        atr_jw_kv_str(w, "class", "skipped");
        return;
    }
    put_measured(w, m);
    enum atr_replay_cause c = atr_replay_cause_of(m->exit_code, m->timed_out, m->oom_kills,
                                                  m->missing_cwd != NULL, m->missing_file != NULL);
    atr_jw_kv_str(w, "class", atr_replay_class_name(false, c));
    if (m->browser)
        put_browser(w, m);
}

void atr_step_metrics_json(struct atr_buf *b, const char *config,
                           const struct atr_step_metrics *m)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_step_metrics_members(&w, config, m);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);   /* callers give a buffer without cap; at one, no half line */
}

/* Past 1e15 doubles are at least 0.125 apart: the text reads back as v. */
double atr_metrics_fixed(double v, int digits)
{
    if (!isfinite(v) || fabs(v) >= 1e15)
        return v;
    char text[64];
    snprintf(text, sizeof text, "%.*f", digits, v);
    return strtod(text, NULL);
}
