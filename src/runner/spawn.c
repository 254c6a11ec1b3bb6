/* spawn.c - one tool step as a real process: clone3 straight into its
 * cgroup and namespaces, a child that prepares itself with async-signal-safe
 * calls only, and a parent loop over output, exit, watch and timeout.
 *
 * Life cycle of a step:
 *  1. The parent opens the output pipe, a close-on-exec report pipe and
 *     /dev/null, precomputes every path the child needs (no snprintf or
 *     malloc after clone), blocks all signals and clones: clone3 with
 *     CLONE_PIDFD, CLONE_INTO_CGROUP (v2 fd) and, sandboxed, CLONE_NEWNS |
 *     CLONE_NEWPID | CLONE_NEWNET. Blocking signals keeps the parent's
 *     handlers from running in the child before it resets them, and makes
 *     registering the pid for atr_spawn_kill_all atomic with the clone.
 *  2. The child (a copy of a possibly multi-threaded parent: only
 *     async-signal-safe calls) resets signals, becomes a process-group
 *     leader, asks for SIGKILL when its parent thread dies, joins the v1
 *     groups, builds the sandbox, chdirs, wires fds 0-2 and execs
 *     /bin/sh -c COMMAND. Any failure before exec writes {stage, errno} to
 *     the report pipe; a successful exec closes it (EOF).
 *  3. The parent waits for that report, then polls the output pipe, the
 *     pidfd, the watch fd and the deadline until the child exits.
 *  4. On exit it drains the pipe, SIGKILLs the child's process group
 *     (background processes the step left behind) while the child is still
 *     an unreaped zombie, so the pgid cannot have been reused, and reaps.
 *
 * Sandboxed, the shell is PID 1 of its own PID namespace: when it exits the
 * kernel kills every other process of the namespace, so background
 * processes never outlive the step, whatever they did (setsid included).
 * Unsandboxed without a cgroup the process-group kill is all there is: a
 * process that left the group (setsid) survives. With a cgroup, the caller
 * kills the group's leftovers (atr_cg_kill) after reading its statistics. */
#include "runner/spawn.h"
#include "runner/sandbox.h"
#include "util/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* struct clone_args of <linux/sched.h> up to `cgroup` (CLONE_ARGS_SIZE_VER2);
 * copied because that header clashes with glibc's <sched.h>. */
struct spawn_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
    uint64_t stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/* Test hook (tests include this file): 1 forces the fork() fallback with
 * pidfd_open, 2 the fork() fallback without any pidfd (polled waitid). */
static int spawn_force_fork;

/* ---- live children, for atr_spawn_kill_all ---------------------------- */

/* Pids of children not yet reaped; 0 is a free slot. Lock-free atomics, so
 * a signal handler can read them. A pid is removed before it is reaped, so
 * it always names our child (alive or zombie) while listed. */
#define SPAWN_SLOTS 64
static atomic_int live_pids[SPAWN_SLOTS];

static void live_add(pid_t pid)
{
    for (int i = 0; i < SPAWN_SLOTS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&live_pids[i], &free_slot, pid))
            return;
    }
    /* Table full: this child is not killed by atr_spawn_kill_all, but still
     * by its PR_SET_PDEATHSIG when the runner exits. */
}

static void live_del(pid_t pid)
{
    for (int i = 0; i < SPAWN_SLOTS; i++) {
        int expect = pid;
        if (atomic_compare_exchange_strong(&live_pids[i], &expect, 0))
            return;
    }
}

void atr_spawn_kill_all(void)
{
    int saved = errno;
    for (int i = 0; i < SPAWN_SLOTS; i++) {
        pid_t pid = atomic_load(&live_pids[i]);
        if (pid > 0) {
            kill(-pid, SIGKILL);   /* its process group */
            kill(pid, SIGKILL);    /* sandboxed: PID 1, the whole namespace */
        }
    }
    errno = saved;
}

/* ---- the child ---------------------------------------------------------- */

enum child_stage {
    ST_SIGNALS, ST_SETPGID, ST_PDEATHSIG, ST_JOIN, ST_FORK, ST_CHDIR, ST_FDS, ST_EXEC,
};   /* and the sandbox's stages, ATR_SB_* (sandbox.h) */

static const char *const stage_names[] = {
    "reset signals", "setpgid", "prctl(PR_SET_PDEATHSIG)", "join cgroup",
    "fork namespace init", "chdir", "set up fds", "exec /bin/sh",
};

/* What a child reports through the close-on-exec pipe when it fails. */
struct child_report {
    int stage;
    int err;
};

/* Everything the child needs, prepared by the parent: after clone the child
 * may not allocate or format. */
struct child_plan {
    const struct atr_spawn_opts *o;
    int devnull, out_w, rep_w;
    int max_fd;               /* close_range fallback bound */
    pid_t parent;
    bool use_into;            /* try CLONE_INTO_CGROUP */
    bool join_v2;             /* not placed by CLONE_INTO_CGROUP */
    bool used_into;           /* the child was placed by CLONE_INTO_CGROUP */
    bool have_sb;             /* sb prepared: release it */
    char *argv[4];
    char *const *env;
    struct atr_sandbox sb;    /* sandboxed: what the child builds its jail from */
};

static void child_fail(const struct child_plan *p, int stage)
{
    struct child_report rep = {stage, errno};
    ssize_t n = write(p->rep_w, &rep, sizeof rep);
    (void)n;
    _exit(127);
}

/* Handlers are reset by exec, but ignored signals and the mask are not:
 * the step must not inherit the runner's SIG_IGN of SIGPIPE, say. */
static void child_reset_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &sa, NULL);   /* fails harmlessly for KILL, STOP, libc's own */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_close_from(int lo, const struct child_plan *p)
{
    if (syscall(SYS_close_range, (unsigned)lo, ~0U, 0) == 0)
        return;
    for (int fd = lo; fd < p->max_fd; fd++)
        close(fd);
}

/* Sandboxed: the user namespace is joined and the others unshared, but a
 * new PID namespace applies to children only, so this process forks PID 1,
 * then waits for it and exits with its status; it stays outside the PID
 * namespace (it is the pid the parent watches). Returns in PID 1. */
static void child_sandbox(struct child_plan *p)
{
    int stage = 0;
    if (atr_sandbox_enter(&p->sb, &stage) < 0)
        child_fail(p, stage);
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);   /* no atfork handlers */
    if (pid < 0)
        child_fail(p, ST_FORK);
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            child_fail(p, ST_PDEATHSIG);
        if (atr_sandbox_build(&p->sb, &stage) < 0)
            child_fail(p, stage);
        return;
    }
    child_close_from(3, p);   /* only PID 1 keeps the pipes */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(st)) {
        kill(getpid(), WTERMSIG(st));   /* default dispositions: dies the same way */
        _exit(128 + WTERMSIG(st));
    }
    _exit(WEXITSTATUS(st));
}

/* stdin from /dev/null, stdout and stderr to the pipe, the passed fds on
 * 3, 4, ..., nothing else open but the report pipe (close-on-exec) right
 * after them. Sources are first moved above every target, so no dup2 can
 * overwrite one that is still needed. */
static void child_fds(struct child_plan *p)
{
    int n = p->o->n_pass_fds, rep_at = 3 + n, above = rep_at + 1;
    int nul = fcntl(p->devnull, F_DUPFD_CLOEXEC, above);
    int out = fcntl(p->out_w, F_DUPFD_CLOEXEC, above);
    int rep = fcntl(p->rep_w, F_DUPFD_CLOEXEC, above);
    int pass[ATR_SPAWN_MAX_PASS];
    for (int i = 0; i < n; i++)
        if ((pass[i] = fcntl(p->o->pass_fds[i], F_DUPFD_CLOEXEC, above)) < 0)
            child_fail(p, ST_FDS);
    if (nul < 0 || out < 0 || rep < 0 || dup2(nul, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        child_fail(p, ST_FDS);
    for (int i = 0; i < n; i++)
        if (dup2(pass[i], 3 + i) < 0)      /* dup2 clears close-on-exec */
            child_fail(p, ST_FDS);
    if (dup3(rep, rep_at, O_CLOEXEC) < 0)
        child_fail(p, ST_FDS);
    p->rep_w = rep_at;
    child_close_from(above, p);
}

/* The child after clone: never returns. */
static void child_run(struct child_plan *p)
{
    /* The report pipe must survive the dup2s onto 0-2. */
    int rep = fcntl(p->rep_w, F_DUPFD_CLOEXEC, 3);
    if (rep < 0)
        _exit(127);
    p->rep_w = rep;
    if (write(p->rep_w, "R", 1) != 1)   /* "I ran": see spawn_attempt */
        _exit(127);
    child_reset_signals();
    if (setpgid(0, 0) < 0)
        child_fail(p, ST_SETPGID);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(p, ST_PDEATHSIG);
    if (getppid() != p->parent)   /* the parent died before prctl */
        _exit(127);
    /* Joined as host root, before the user namespace: the sandbox's root
     * may not write the host's cgroup files. */
    if (p->o->cg && atr_cg_join(p->o->cg, 0, !p->join_v2, NULL) < 0)
        child_fail(p, ST_JOIN);
    if (p->o->sandbox)
        child_sandbox(p);
    if (p->o->cwd && chdir(p->o->cwd) < 0)
        child_fail(p, ST_CHDIR);
    child_fds(p);
    execve("/bin/sh", p->argv, p->env);
    child_fail(p, ST_EXEC);
}

/* ---- starting ------------------------------------------------------------- */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static char *const empty_env[] = {NULL};

static void plan_init(struct child_plan *p, const struct atr_spawn_opts *o)
{
    memset(p, 0, sizeof *p);
    p->o = o;
    p->parent = getpid();
    p->argv[0] = (char *)"sh";
    p->argv[1] = (char *)"-c";
    p->argv[2] = (char *)o->command;
    p->env = o->env ? o->env : empty_env;
    long max = sysconf(_SC_OPEN_MAX);
    p->max_fd = max > 0 && max < 65536 ? (int)max : 65536;
}

static pid_t spawn_clone3(struct child_plan *p, int *pidfd)
{
    const struct atr_cg *cg = p->o->cg;
    struct spawn_clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_PIDFD;
    ca.pidfd = (uint64_t)(uintptr_t)pidfd;
    ca.exit_signal = SIGCHLD;
    p->join_v2 = true;
    if (p->use_into && cg && cg->v2_fd >= 0) {
        ca.flags |= CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)cg->v2_fd;
        p->join_v2 = false;
    }
    pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    p->used_into = pid > 0 && (ca.flags & CLONE_INTO_CGROUP);
    if (pid < 0 && errno != ENOSYS && (ca.flags & CLONE_INTO_CGROUP)) {
        /* Refused placement (old kernel, or a v2 group that may not hold
         * processes): clone plainly, the child joins v2 itself. */
        ca.flags &= ~CLONE_INTO_CGROUP;
        ca.cgroup = 0;
        p->join_v2 = true;
        pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    }
    if (pid == 0)
        child_run(p);
    return pid;
}

/* Clones the child; *pidfd is -1 when the kernel gives none (old kernels:
 * the loop then polls waitid). Returns the pid, or -1 with errno. */
static pid_t spawn_start(struct child_plan *p, int *pidfd)
{
    *pidfd = -1;
    if (!spawn_force_fork) {
        pid_t pid = spawn_clone3(p, pidfd);
        if (pid > 0 || errno != ENOSYS)
            return pid;
    }
    p->join_v2 = true;
    pid_t pid = fork();
    if (pid == 0)
        child_run(p);
    if (pid > 0 && spawn_force_fork != 2)
        *pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (*pidfd < 0)
        *pidfd = -1;
    return pid;
}

/* ---- output ------------------------------------------------------------- */

struct outcap {
    char *buf;
    size_t len, cap, max;
    uint64_t total;
    bool eof;
};

/* Keeps what fits under max; when memory runs out, keeps no more (the
 * count stays exact). */
static void outcap_keep(struct outcap *c, const char *data, size_t n)
{
    if (n > c->max - c->len)
        n = c->max - c->len;
    if (n == 0)
        return;
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + n + 1)
            cap *= 2;
        if (c->max < SIZE_MAX && cap > c->max + 1)
            cap = c->max + 1;
        c->buf = xrealloc(c->buf, cap);
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
}

/* Reads what the pipe holds now (it is non-blocking). */
static void outcap_drain(struct outcap *c, int fd)
{
    char chunk[65536];
    while (!c->eof) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            c->eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
            return;
        }
        c->total += (uint64_t)n;
        outcap_keep(c, chunk, (size_t)n);
    }
}

/* ---- waiting --------------------------------------------------------------- */

struct spawn_run {
    const struct atr_spawn_opts *o;
    pid_t pid;
    int pidfd, out_r;
    int watch_fd;             /* -1 once it reported an error */
    int64_t deadline_us, next_tick_us;   /* 0: none */
    bool exited, timed_out;
    struct outcap out;
};

/* Timeout: the whole tree. The process group and PID 1 (sandboxed: the
 * namespace) go at once; the cgroup catches what left the group. */
static void kill_tree(struct spawn_run *s)
{
    kill(-s->pid, SIGKILL);
    kill(s->pid, SIGKILL);
    if (s->o->cg) {
        struct atr_error ignored;
        atr_cg_kill(s->o->host, s->o->cg, &ignored);
    }
}

static int wait_ms(const struct spawn_run *s, int64_t now)
{
    int64_t until = 0;
    if (s->deadline_us && !s->timed_out)
        until = s->deadline_us;
    if (s->next_tick_us && (!until || s->next_tick_us < until))
        until = s->next_tick_us;
    int64_t ms = until ? (until - now + 999) / 1000 : -1;
    if (ms < 0 && until)
        ms = 0;
    if (s->pidfd < 0 && (ms < 0 || ms > 10))
        ms = 10;   /* no pidfd: poll waitid every 10 ms */
    return ms > 1000000 ? 1000000 : (int)ms;
}

static bool child_gone(const struct spawn_run *s)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD;
    return si.si_pid == s->pid;
}

static void on_time(struct spawn_run *s, int64_t now)
{
    const struct atr_spawn_watch *w = s->o->watch;
    if (s->next_tick_us && now >= s->next_tick_us) {
        s->next_tick_us += (int64_t)w->tick_ms * 1000;
        if (s->next_tick_us <= now)   /* a slow fn: skip missed ticks */
            s->next_tick_us = now + (int64_t)w->tick_ms * 1000;
        w->fn(w->ctx, false);
    }
    if (s->deadline_us && !s->timed_out && now >= s->deadline_us) {
        s->timed_out = true;
        kill_tree(s);
    }
}

/* One poll round: output, exit, watch fd, ticks and deadline. */
static void wait_round(struct spawn_run *s)
{
    struct pollfd pf[3];
    int n = 0, i_out = -1, i_pid = -1, i_w = -1;
    if (!s->out.eof) {
        pf[n] = (struct pollfd){.fd = s->out_r, .events = POLLIN};
        i_out = n++;
    }
    if (s->pidfd >= 0) {
        pf[n] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
        i_pid = n++;
    }
    if (s->watch_fd >= 0) {
        pf[n] = (struct pollfd){.fd = s->watch_fd, .events = s->o->watch->events};
        i_w = n++;
    }
    int rc = poll(pf, (nfds_t)n, wait_ms(s, now_us()));
    if (rc > 0 && i_out >= 0 && pf[i_out].revents)
        outcap_drain(&s->out, s->out_r);
    if (rc > 0 && i_pid >= 0 && pf[i_pid].revents)
        s->exited = true;
    if (s->pidfd < 0 && child_gone(s))
        s->exited = true;
    if (rc > 0 && i_w >= 0 && pf[i_w].revents) {
        if (pf[i_w].revents & (POLLERR | POLLNVAL) & ~s->o->watch->events)
            s->watch_fd = -1;   /* broken (its group removed): stop polling it */
        s->o->watch->fn(s->o->watch->ctx, true);
    }
    on_time(s, now_us());
}

static void fill_status(struct atr_spawn_result *r, int status, const struct rusage *ru)
{
    if (WIFSIGNALED(status)) {
        r->term_signal = WTERMSIG(status);
        r->exit_code = 128 + r->term_signal;
    } else {
        r->exit_code = WEXITSTATUS(status);
    }
    r->cpu_user_us = (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec;
    r->cpu_sys_us = (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec;
    r->ru_maxrss_kb = ru->ru_maxrss;
}

/* Reaps the child. Before that, while it is a zombie whose pid (and so its
 * process group id) cannot be reused, kills what is left of its group. */
static void reap(struct spawn_run *s, struct atr_spawn_result *r)
{
    outcap_drain(&s->out, s->out_r);
    kill(-s->pid, SIGKILL);
    live_del(s->pid);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(s->pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    outcap_drain(&s->out, s->out_r);
    fill_status(r, status, &ru);
}

static void run_loop(struct spawn_run *s, struct atr_spawn_result *r, int64_t t0)
{
    const struct atr_spawn_opts *o = s->o;
    s->watch_fd = o->watch ? o->watch->fd : -1;
    if (o->timeout_ms > 0)
        s->deadline_us = t0 + o->timeout_ms * 1000;
    if (o->watch && o->watch->tick_ms > 0)
        s->next_tick_us = now_us() + (int64_t)o->watch->tick_ms * 1000;
    while (!s->exited)
        wait_round(s);
    reap(s, r);
    r->timed_out = s->timed_out;
}

/* ---- the entry point --------------------------------------------------- */

struct spawn_fds {
    int out[2], rep[2], devnull;
};

static void fds_close(struct spawn_fds *f)
{
    int all[5] = {f->out[0], f->out[1], f->rep[0], f->rep[1], f->devnull};
    for (int i = 0; i < 5; i++)
        if (all[i] >= 0)
            close(all[i]);
    f->out[0] = f->out[1] = f->rep[0] = f->rep[1] = f->devnull = -1;
}

static int fds_open(struct spawn_fds *f, struct atr_error *err)
{
    f->out[0] = f->out[1] = f->rep[0] = f->rep[1] = -1;
    f->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (f->devnull < 0 || pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->rep, O_CLOEXEC) < 0 ||
        fcntl(f->out[0], F_SETFL, O_NONBLOCK) < 0) {
        int e = errno;
        fds_close(f);
        return atr_error_set(err, "spawn: pipes: %s", strerror(e));
    }
    return 0;
}

/* Clones with every signal blocked (see the top of the file). */
static pid_t start_blocked(struct child_plan *p, int *pidfd)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = spawn_start(p, pidfd);
    int e = errno;
    if (pid > 0)
        live_add(pid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return pid;
}

static int child_error(const struct child_plan *p, const struct child_report *rep,
                       struct atr_error *err)
{
    int st = rep->stage;
    const char *what = st >= 0 && st <= ST_EXEC ? stage_names[st] : atr_sandbox_stage_name(st);
    if (!what)
        what = "setup";
    const char *arg = st == ST_CHDIR                          ? p->o->cwd
                      : st == ST_EXEC || st == ATR_SB_ROOT ? p->o->rootfs
                                                             : NULL;
    if (arg)
        return atr_error_set(err, "spawn: %s %s: %s", what, arg, strerror(rep->err));
    return atr_error_set(err, "spawn: %s: %s", what, strerror(rep->err));
}

/* Waits for the child's report: "R" as its first act, then EOF at exec or
 * a child_report on failure. Returns 0 after exec, -1 with err set when the
 * child failed, 1 when it died without running at all (see spawn_attempt);
 * the child is reaped in the last two cases. */
static int await_exec(const struct child_plan *p, int rep_r, pid_t pid, struct atr_error *err)
{
    char buf[1 + sizeof(struct child_report)];
    size_t len = 0;
    while (len < sizeof buf) {
        ssize_t n = read(rep_r, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (len == 1)
        return 0;
    live_del(pid);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (len == 0)
        return 1;
    struct child_report rep = {ST_EXEC, EIO};
    if (len == sizeof buf)
        memcpy(&rep, buf + 1, sizeof rep);
    return child_error(p, &rep, err);
}

/* v2 groups (by inode) into which CLONE_INTO_CGROUP is known to deliver a
 * dead child. Kernels with the cgroup.kill sequence counter (6.x) snapshot
 * it from the parent's cgroup instead of the target's for
 * CLONE_INTO_CGROUP, so once a group has been killed through cgroup.kill
 * every child cloned into it gets SIGKILL before it runs (seen on 6.18).
 * Such groups are joined from the child instead. Small and lossy: a
 * forgotten group costs one wasted clone. */
#define POISON_SLOTS 16
static pthread_mutex_t poison_lock = PTHREAD_MUTEX_INITIALIZER;
static ino_t poison_ino[POISON_SLOTS];
static unsigned poison_next;

static ino_t cg_ino(const struct atr_cg *cg)
{
    struct stat st;
    if (!cg || cg->v2_fd < 0 || fstat(cg->v2_fd, &st) < 0)
        return 0;
    return st.st_ino;
}

static bool poisoned(ino_t ino)
{
    bool found = false;
    pthread_mutex_lock(&poison_lock);
    for (int i = 0; i < POISON_SLOTS && !found; i++)
        found = ino && poison_ino[i] == ino;
    pthread_mutex_unlock(&poison_lock);
    return found;
}

static void poison(ino_t ino)
{
    pthread_mutex_lock(&poison_lock);
    poison_ino[poison_next++ % POISON_SLOTS] = ino;
    pthread_mutex_unlock(&poison_lock);
}

/* One try at starting the child with fresh pipes. Returns 0 (running:
 * *s filled), -1 (err set) or 1 (placed by CLONE_INTO_CGROUP and killed
 * by the kernel before it ran: try again without). */
static int spawn_attempt(struct child_plan *plan, struct spawn_fds *f, struct spawn_run *s,
                         struct atr_error *err)
{
    if (fds_open(f, err) < 0)
        return -1;
    plan->devnull = f->devnull;
    plan->out_w = f->out[1];
    plan->rep_w = f->rep[1];
    pid_t pid = start_blocked(plan, &s->pidfd);
    int e = errno;
    close(f->out[1]);
    close(f->rep[1]);
    close(f->devnull);
    f->out[1] = f->rep[1] = f->devnull = -1;
    int rc = pid < 0 ? atr_error_set(err, "spawn: clone: %s", strerror(e))
                     : await_exec(plan, f->rep[0], pid, err);
    if (rc == 1 && !plan->used_into)
        rc = atr_error_set(err, "spawn: the child was killed before it started");
    if (rc != 0) {
        if (s->pidfd >= 0)
            close(s->pidfd);
        fds_close(f);
        return rc;
    }
    s->pid = pid;
    s->out_r = f->out[0];
    return 0;
}

static void result_output(struct atr_spawn_result *r, struct outcap *c)
{
    if (!c->buf)
        c->buf = xmalloc(1);  /* an empty string */
    c->buf[c->len] = '\0';
    r->output = c->buf;
    r->output_len = c->len;
    r->output_bytes = c->total;
    r->output_truncated = c->total > c->len;
}

static int check_opts(const struct atr_spawn_opts *o, struct atr_error *err)
{
    if (!o->command)
        return atr_error_set(err, "spawn: no command");
    if ((o->rootfs || o->tmpdir || o->n_binds) && !o->sandbox)
        return atr_error_set(err, "spawn: a rootfs, tmpdir or bind needs the sandbox");
    if (o->n_binds < 0 || o->n_binds > ATR_SANDBOX_MAX_BINDS || (o->n_binds && !o->binds))
        return atr_error_set(err, "spawn: at most %d writable paths", ATR_SANDBOX_MAX_BINDS);
    if (o->cg && !o->host)
        return atr_error_set(err, "spawn: a cgroup needs its host");
    if (o->watch && !o->watch->fn)
        return atr_error_set(err, "spawn: watch without a function");
    if (o->n_pass_fds < 0 || o->n_pass_fds > ATR_SPAWN_MAX_PASS || (o->n_pass_fds && !o->pass_fds))
        return atr_error_set(err, "spawn: at most %d passed fds", ATR_SPAWN_MAX_PASS);
    return 0;
}

static void plan_release(struct child_plan *p)
{
    if (p->have_sb)
        atr_sandbox_release(&p->sb);
    p->have_sb = false;
}

/* The plan for o, checked; *ino names the v2 group for the poison list.
 * Release it once the child is cloned. */
static int plan_prepare(struct child_plan *p, const struct atr_spawn_opts *o, ino_t *ino,
                        struct atr_error *err)
{
    plan_init(p, o);
    if (check_opts(o, err) < 0)
        return -1;
    if (o->sandbox) {
        struct atr_sandbox_spec spec = {
            .allow_network = o->allow_network, .rootfs = o->rootfs,
            .rootfs_shifted = o->rootfs_shifted, .tmpdir = o->tmpdir, .n_binds = o->n_binds,
        };
        for (int i = 0; i < o->n_binds && i < ATR_SANDBOX_MAX_BINDS; i++)
            spec.binds[i] = o->binds[i];
        if (atr_sandbox_prepare(&p->sb, &spec, err) < 0)
            return -1;
        p->have_sb = true;
    }
    *ino = cg_ino(o->cg);
    p->use_into = !poisoned(*ino);
    return 0;
}

int atr_spawn_run(const struct atr_spawn_opts *o, struct atr_spawn_result *r,
                  struct atr_error *err)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    struct child_plan plan;
    ino_t ino;
    if (plan_prepare(&plan, o, &ino, err) < 0)
        return -1;
    struct spawn_fds f;
    struct spawn_run s = {.o = o, .pidfd = -1, .out = {.max = o->max_output}};
    int64_t t0 = now_us();
    int rc = spawn_attempt(&plan, &f, &s, err);
    if (rc == 1) {
        poison(ino);
        plan.use_into = false;
        rc = spawn_attempt(&plan, &f, &s, err);
    }
    plan_release(&plan);
    if (rc != 0)
        return -1;
    run_loop(&s, r, t0);
    r->wall_us = now_us() - t0;
    result_output(r, &s.out);
    if (s.pidfd >= 0)
        close(s.pidfd);
    fds_close(&f);
    return 0;
}

int atr_spawn_probe_sandbox(bool allow_network, struct atr_error *err)
{
    return atr_sandbox_probe(allow_network, err);
}

/* ---- background processes ------------------------------------------------- */

int atr_spawn_start(const struct atr_spawn_opts *o, int out_fd, struct atr_spawn_proc *p,
                    struct atr_error *err)
{
    memset(p, 0, sizeof *p);
    p->pidfd = -1;
    struct child_plan plan;
    ino_t ino;
    if (plan_prepare(&plan, o, &ino, err) < 0)
        return -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        int rep[2], devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0 || pipe2(rep, O_CLOEXEC) < 0) {
            int e = errno;
            if (devnull >= 0)
                close(devnull);
            return atr_error_set(err, "spawn: pipes: %s", strerror(e));
        }
        plan.devnull = devnull;
        plan.out_w = out_fd >= 0 ? out_fd : devnull;
        plan.rep_w = rep[1];
        pid_t pid = start_blocked(&plan, &p->pidfd);
        int e = errno;
        close(rep[1]);
        close(devnull);
        int rc = pid < 0 ? atr_error_set(err, "spawn: clone: %s", strerror(e))
                         : await_exec(&plan, rep[0], pid, err);
        close(rep[0]);
        if (rc == 0) {
            plan_release(&plan);
            p->pid = pid;
            return 0;
        }
        if (p->pidfd >= 0)
            close(p->pidfd);
        p->pidfd = -1;
        if (rc < 0 || !plan.used_into) {
            plan_release(&plan);
            return rc < 0 ? -1 : atr_error_set(err, "spawn: the child was killed before it started");
        }
        poison(ino);               /* see spawn_attempt: once more, joined from the child */
        plan.use_into = false;
    }
    plan_release(&plan);
    return atr_error_set(err, "spawn: the child was killed before it started");
}

/* Reaps the shell if it has exited; true then. */
static bool proc_reap(struct atr_spawn_proc *p, struct atr_spawn_result *r)
{
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t got;
    while ((got = wait4(p->pid, &status, WNOHANG, &ru)) < 0 && errno == EINTR)
        ;
    if (got != p->pid)
        return false;
    live_del(p->pid);
    p->reaped = true;
    memset(r, 0, sizeof *r);
    fill_status(r, status, &ru);
    return true;
}

int atr_spawn_wait(struct atr_spawn_proc *p, int timeout_ms, struct atr_spawn_result *r)
{
    if (p->reaped)
        return 1;
    int64_t until = now_us() + (int64_t)timeout_ms * 1000;
    for (;;) {
        if (proc_reap(p, r))
            return 1;
        int64_t left_ms = (until - now_us()) / 1000;
        if (left_ms <= 0)
            return 0;
        if (p->pidfd >= 0) {
            struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
            poll(&pf, 1, (int)left_ms);
        } else {
            struct timespec ts = {0, 1000000};   /* no pidfd: look every ms */
            nanosleep(&ts, NULL);
        }
    }
}

/* A group's id is not reused while any member lives, so this never asks
 * about another program's processes. Exited members that are our children
 * (orphans adopted as a subreaper) are reaped first: a zombie still counts
 * as a member, and init may take a second to reap one. */
bool atr_spawn_group_alive(const struct atr_spawn_proc *p)
{
    if (p->pid <= 0)
        return false;
    while (waitpid(-p->pid, NULL, WNOHANG) > 0)
        ;
    return kill(-p->pid, 0) == 0 || errno == EPERM;
}

void atr_spawn_kill(struct atr_spawn_proc *p, struct atr_spawn_result *r)
{
    if (p->pid <= 0)
        return;
    kill(-p->pid, SIGKILL);
    if (!p->reaped) {
        kill(p->pid, SIGKILL);
        while (!proc_reap(p, r)) {
            struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
            if (p->pidfd < 0 || poll(&pf, 1, 100) < 0) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        }
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
}
