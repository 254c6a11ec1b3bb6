/* sandbox.h - the jail a replayed step runs in (docs/replay-tools.md,
 * "Safety"): an unprivileged uid range in a user namespace, new mount,
 * PID, network, IPC, UTS and cgroup namespaces, a read-only root (the
 * host's, or --rootfs), a fresh /proc, /dev and private /tmp, the paths it
 * may write bound in, /run, /sys/fs/cgroup masked, /proc/sys read-only, no
 * capabilities, no_new_privs and a seccomp filter.
 *
 * Split in two because of where each half runs: atr_sandbox_prepare in the
 * parent (it allocates, builds the seccomp program and the idmapped trees,
 * needs host root), the atr_sandbox_enter / atr_sandbox_build pair in the
 * cloned child, which may only make async-signal-safe calls. */
#ifndef ATR_RUNNER_SANDBOX_H
#define ATR_RUNNER_SANDBOX_H

#include <limits.h>
#include <stdbool.h>

#include "util/error.h"

/* The step's uids and gids 0..ATR_SANDBOX_IDS-1 are these host ids: no
 * user of the host owns them, so a step is "other" to every host file. */
#define ATR_SANDBOX_UID 2147418112u
#define ATR_SANDBOX_IDS 65536u
#define ATR_SANDBOX_MAX_BINDS 4

/* What the step may see and write; every path absolute, existing. */
struct atr_sandbox_spec {
    bool allow_network;          /* keep the host network namespace */
    const char *rootfs;          /* NULL: the host's root, read-only */
    /* rootfs is already owned by the sandbox's ids (a container created
     * with their uid map, runner/container.h): attached as it is, not
     * idmapped (overlayfs refuses that). */
    bool rootfs_shifted;
    const char *tmpdir;          /* shown as /tmp; NULL: an empty tmpfs per step */
    const char *binds[ATR_SANDBOX_MAX_BINDS];   /* writable, at their own path */
    int n_binds;
};

/* Prepared by the parent, read by the child. The trees are detached
 * mounts whose files the step sees as its own (an idmapped mount: host
 * uid 0 is the step's root), so files atr or earlier steps wrote stay
 * writable while every write still lands as host uid 0, in the tree. */
struct atr_sandbox {
    int userns_fd;               /* the shared user namespace (the uid map) */
    int ns_flags;                /* for unshare */
    int root_fd;                 /* the idmapped --rootfs, or -1 */
    int tmp_fd;                  /* the idmapped tmpdir, or -1 */
    int bind_fd[ATR_SANDBOX_MAX_BINDS];
    char bind_at[ATR_SANDBOX_MAX_BINDS][PATH_MAX];   /* under the staging root */
    int n_binds;
    bool rootfs;
    bool allow_network;
    const void *filter;          /* struct sock_fprog, static */
};

/* Stages the child reports when one fails (with errno). */
enum atr_sandbox_stage {
    ATR_SB_SETNS = 100, ATR_SB_IDS, ATR_SB_UNSHARE, ATR_SB_PRIVATE, ATR_SB_ROOT, ATR_SB_PROC,
    ATR_SB_DEV, ATR_SB_MASK, ATR_SB_TMP, ATR_SB_BIND, ATR_SB_PIVOT, ATR_SB_CAPS, ATR_SB_SECCOMP,
};
const char *atr_sandbox_stage_name(int stage);   /* NULL when not a sandbox stage */

/* Fills sb for one step: 0, or -1 with err (no root to map the uid range,
 * a file system without idmapped mounts, ...). Release with
 * atr_sandbox_release once the child is cloned (or was not). */
int atr_sandbox_prepare(struct atr_sandbox *sb, const struct atr_sandbox_spec *spec,
                        struct atr_error *err);
void atr_sandbox_release(struct atr_sandbox *sb);

/* Child, as host root: joins the user namespace as its root and unshares
 * the other namespaces. The caller then forks PID 1 of the new PID
 * namespace. 0, or -1 with errno and *stage. */
int atr_sandbox_enter(const struct atr_sandbox *sb, int *stage);
/* PID 1: builds the root, pivots into it, drops every capability, sets
 * no_new_privs and installs the seccomp filter: call last before exec.
 * sb is modified (paths are split in place). 0, or -1 with errno, *stage. */
int atr_sandbox_build(struct atr_sandbox *sb, int *stage);

/* Can this process make the sandbox (the namespaces, the uid map)? 0, or
 * -1 with err saying what was refused. Forks once. */
int atr_sandbox_probe(bool allow_network, struct atr_error *err);
/* Can a step see path (a folder it will write: the work directories'
 * parent, --rootfs) through an idmapped mount? 0, or -1 with err. */
int atr_sandbox_probe_path(const char *path, struct atr_error *err);

#endif
