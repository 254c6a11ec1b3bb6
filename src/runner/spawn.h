/* spawn.h - run one tool step as a real process: /bin/sh -c COMMAND in its
 * cgroup (placed before exec), optionally in the jail of runner/sandbox.h
 * (user, mount, PID, network, cgroup namespaces, no capabilities, seccomp),
 * and capped output, a timeout that kills the whole tree, and accounting.
 *
 * The child is in its cgroup before it execs: CLONE_INTO_CGROUP on v2 (and
 * the v2 part of hybrid hosts); on v1 the child writes itself into the v1
 * groups before exec, and a close-on-exec pipe tells the parent that exec
 * happened or why it failed. */
#ifndef ATR_RUNNER_SPAWN_H
#define ATR_RUNNER_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "runner/cgroup.h"
#include "runner/sandbox.h"
#include "util/error.h"

/* Optional hook into the step's wait loop (the dynamic controller): on
 * every tick_ms and whenever fd (if >= 0) polls `events`, fn runs. */
struct atr_spawn_watch {
    int fd;
    short events;               /* e.g. POLLPRI for a PSI trigger */
    int tick_ms;                /* 0: no ticks */
    void (*fn)(void *ctx, bool fd_ready);
    void *ctx;
};

struct atr_spawn_opts {
    const char *command;        /* run as /bin/sh -c command */
    const char *cwd;            /* existing directory (inside rootfs when set) */
    char *const *env;           /* the whole environment, NULL-terminated */
    const struct atr_cg_host *host;
    const struct atr_cg *cg;    /* NULL: no cgroup (config none) */
    bool sandbox;               /* the jail of runner/sandbox.h */
    bool allow_network;         /* sandbox: keep the host network */
    const char *rootfs;         /* sandbox: NULL (the host's root, read-only), or a
                                 * root file system to pivot into (writable) */
    bool rootfs_shifted;        /* rootfs already owned by the sandbox's ids */
    const char *tmpdir;         /* sandbox: shown as /tmp (NULL: an empty tmpfs) */
    const char *const *binds;   /* sandbox: writable at their own path */
    int n_binds;                /* at most ATR_SANDBOX_MAX_BINDS */
    size_t max_output;          /* bytes kept of stdout+stderr (the rest counted) */
    int64_t timeout_ms;         /* <= 0: none */
    const struct atr_spawn_watch *watch;   /* may be NULL */
    /* Descriptors the command gets as fds 3, 4, ... (a browser's
     * --remote-debugging-pipe wants its pipes on 3 and 4); the caller's
     * copies stay open and should be close-on-exec. */
    const int *pass_fds;
    int n_pass_fds;             /* at most ATR_SPAWN_MAX_PASS */
};
#define ATR_SPAWN_MAX_PASS 4

struct atr_spawn_result {
    int exit_code;              /* 0..255, or 128+signal, -1 if it never ran */
    int term_signal;            /* 0 unless killed by a signal */
    bool timed_out;
    int64_t wall_us;            /* from just before clone to reaping */
    int64_t cpu_user_us, cpu_sys_us;   /* rusage of the reaped child tree */
    int64_t ru_maxrss_kb;       /* largest single process (NOT the tree) */
    uint64_t output_bytes;      /* stdout + stderr, all of it */
    bool output_truncated;      /* more than max_output */
    char *output;               /* the first max_output bytes, NUL-terminated, malloc;
                                 * caller frees; NULL when atr_spawn_run fails */
    size_t output_len;
};

/* Runs the step to completion (or timeout, then kills the tree and the
 * cgroup's processes). Returns 0 when the process ran (whatever its exit
 * status), -1 when it could not be started (err set: a missing cwd, a
 * rootfs without /bin/sh, namespaces refused, ...).
 *
 * What the step leaves behind: sandboxed, the shell is PID 1 of its PID
 * namespace and the kernel kills every other process of the namespace when
 * it exits. Otherwise the step's process group is SIGKILLed once the shell
 * has exited (a process that called setsid escapes that); with a cgroup
 * the caller kills the rest with atr_cg_kill after reading the statistics.
 * The child gets SIGKILL if the calling thread exits (PR_SET_PDEATHSIG):
 * call from a thread that outlives the step. Blocks the caller; several
 * threads may run steps at once. */
int atr_spawn_run(const struct atr_spawn_opts *o, struct atr_spawn_result *r,
                  struct atr_error *err);

/* A process left running in the background (a server under `atr bench
 * run`): started as atr_spawn_run starts a step (process group leader, in
 * its cgroup, SIGKILL when the calling thread dies), but with stdout and
 * stderr on a file of the caller's and no wait. o->max_output, timeout_ms
 * and watch are not used. */
struct atr_spawn_proc {
    pid_t pid;                  /* also its process group id */
    int pidfd;                  /* -1 where the kernel gives none */
    bool reaped;
};

/* Starts o->command with stdout and stderr on out_fd (-1: /dev/null).
 * 0, or -1 with err. */
int atr_spawn_start(const struct atr_spawn_opts *o, int out_fd, struct atr_spawn_proc *p,
                    struct atr_error *err);
/* Waits up to timeout_ms (0: just looks) for the shell to exit. Returns 1
 * when it has exited (reaped once, r filled: exit code, signal, rusage;
 * the rest of its process group is left alone), 0 while it runs. */
int atr_spawn_wait(struct atr_spawn_proc *p, int timeout_ms, struct atr_spawn_result *r);
/* Are processes of p's process group still alive (the shell's children
 * after the shell has exited)? Reaps the group's exited members that are
 * the caller's children: call prctl(PR_SET_CHILD_SUBREAPER) first, so the
 * shell's orphans become the caller's and need not wait for init. */
bool atr_spawn_group_alive(const struct atr_spawn_proc *p);
/* SIGKILLs p's process group (what the shell left) and, not yet reaped,
 * the shell, then reaps it; r as for atr_spawn_wait when it was not
 * reaped before (untouched otherwise). Closes the pidfd. */
void atr_spawn_kill(struct atr_spawn_proc *p, struct atr_spawn_result *r);

/* Can this process make the sandbox (root: the uid map, the namespaces)?
 * 0, or -1 with err saying which were refused and why. Forks once. */
int atr_spawn_probe_sandbox(bool allow_network, struct atr_error *err);

/* Kills every child atr_spawn_run has alive, with its process group (for
 * SIGINT handlers: async-signal-safe). The running atr_spawn_run calls then
 * return normally with exit_code 137. */
void atr_spawn_kill_all(void);

#endif
