/* guard.h - a watchdog process that outlives its runner: when atr dies,
 * even by SIGKILL, the guard stops the process group atr named last
 * (SIGTERM, then SIGKILL) and removes atr's cgroup run root with whatever
 * still runs in it, so no server survives the run that started it.
 *
 * The guard reads a pipe from atr: a process group id to watch, 0 for
 * none, and a clean-exit word; end of file without that word means atr
 * died. Library code: never prints. */
#ifndef ATR_RUNNER_GUARD_H
#define ATR_RUNNER_GUARD_H

#include <sys/types.h>

#include "runner/cgroup.h"
#include "util/error.h"

struct atr_guard {
    pid_t pid;                  /* the guard process, 0 when not started */
    int fd;                     /* write end of its pipe */
};

/* Forks the guard; call before any thread starts. root (may be NULL: no
 * cgroups) is removed when atr dies; both are copied. 0, or -1 with err. */
int atr_guard_start(struct atr_guard *g, const struct atr_cg_host *h, const struct atr_cg *root,
                    struct atr_error *err);
/* Like atr_guard_start; when atr dies the guard also removes the browser
 * profiles "<workdir_base>/atr-browser-<atr's pid>-*" (runner/browse.c)
 * and the work directories "<workdir_base>/atr-work-<atr's pid>-*" with
 * their size-capped mounts (runner/replay.c), so a SIGKILLed run leaves no
 * mount behind. workdir_base NULL: none. */
int atr_guard_start_dirs(struct atr_guard *g, const struct atr_cg_host *h,
                         const struct atr_cg *root, const char *workdir_base,
                         struct atr_error *err);
/* Like atr_guard_start_dirs; when atr dies the guard also runs cleanup
 * (argv, argv[0] a path, NULL-terminated; NULL: none), e.g. the container
 * CLI removing the run's containers, waiting up to ATR_GUARD_CLEANUP_S for
 * it: after stopping the process group, before removing the groups (a
 * running container's monitor is in them). */
#define ATR_GUARD_CLEANUP_S 60
int atr_guard_start_cleanup(struct atr_guard *g, const struct atr_cg_host *h,
                            const struct atr_cg *root, const char *workdir_base,
                            char *const *cleanup, struct atr_error *err);
/* The process group to stop should atr die now; 0: none. */
void atr_guard_watch(struct atr_guard *g, pid_t pgid);
/* Normal end: the guard exits without touching anything; reaps it. */
void atr_guard_stop(struct atr_guard *g);

#endif
