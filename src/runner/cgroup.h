/* cgroup.h - control groups for tool steps: detection of what the host
 * offers (v2, v1, hybrid, none), groups spanning the hierarchies in use,
 * limits, statistics, kill and removal.
 *
 * A hybrid host (the development and CI machines) has the v1 memory, cpu,
 * cpuacct and pids controllers and a v2 hierarchy at /sys/fs/cgroup/unified
 * without controllers, which still gives per-group pressure (PSI),
 * cgroup.kill and cpu.stat. A group therefore has one directory per
 * hierarchy in use; every function here handles whichever exist.
 *
 * Every group atr makes lives under a run root named "atr-<pid>" in each
 * hierarchy, under the cgroup the process started in, so a run never
 * touches groups it did not create and stale roots of dead runs can be
 * found and swept. Library code: returns -1 with err set, never prints. */
#ifndef ATR_RUNNER_CGROUP_H
#define ATR_RUNNER_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

enum atr_cg_mode {
    ATR_CG_NONE,     /* no usable hierarchy: rusage only */
    ATR_CG_V1,       /* v1 controllers only */
    ATR_CG_HYBRID,   /* v1 controllers + a v2 hierarchy (pressure, kill) */
    ATR_CG_V2,       /* unified hierarchy only; v2_memory/cpu/pids say which
                        controllers work (none: kill, cpu.stat, pressure) */
};

/* Where this process's groups live, per hierarchy ("" when absent). */
struct atr_cg_host {
    enum atr_cg_mode mode;
    char v2[PATH_MAX];          /* our base in the unified hierarchy */
    bool v2_memory, v2_cpu, v2_pids;   /* controllers usable below v2 base */
    char memory[PATH_MAX];      /* v1 bases */
    char cpu[PATH_MAX];
    char cpuacct[PATH_MAX];
    char pids[PATH_MAX];
    bool psi;                   /* <group>/memory.pressure exists (v2) */
    bool kill_file;             /* cgroup.kill exists (v2, 5.14+) */
    char denied[PATH_MAX];      /* a base this user may not write (cgroups not
                                 * delegated to it), or "" */
    char note[256];             /* one line for the report: what was found */
};

/* Detects the host's hierarchies from mountinfo and the process's
 * cgroup file (NULL: /proc/self/mountinfo and /proc/self/cgroup; tests
 * pass fixtures, with sysfs_root prefixed to every mount point, "" for
 * the real one). Never fails for lack of cgroups: mode NONE then. */
int atr_cg_detect(struct atr_cg_host *h, const char *mountinfo, const char *proc_cgroup,
                  const char *sysfs_root, struct atr_error *err);
const char *atr_cg_mode_name(enum atr_cg_mode mode);

/* One group: its directory in each hierarchy in use ("" when not used). */
struct atr_cg {
    char v2[PATH_MAX];
    char memory[PATH_MAX], cpu[PATH_MAX], cpuacct[PATH_MAX], pids[PATH_MAX];
    int v2_fd;                  /* O_DIRECTORY fd of v2, for CLONE_INTO_CGROUP; -1 */
};

/* Limits; a field < 0 leaves it unset (unlimited). */
struct atr_cg_limits {
    int64_t mem_high;           /* bytes; v1 has no memory.high: soft limit */
    int64_t mem_max;            /* bytes */
    int64_t cpu_quota_us, cpu_period_us;   /* cpu.max "quota period" */
    int64_t pids_max;
    int64_t weight;             /* cpu.weight 1..10000 (v1: cpu.shares scaled) */
};
#define ATR_CG_LIMITS_NONE {-1, -1, -1, -1, -1, -1}

/* The run root "atr-<getpid()>" under each base, locked by this process
 * until it exits (see atr_cg_sweep_stale); created once per run. */
int atr_cg_root(const struct atr_cg_host *h, struct atr_cg *root, struct atr_error *err);
/* A child group `name` of parent, in every hierarchy parent has. */
int atr_cg_create(const struct atr_cg_host *h, const struct atr_cg *parent, const char *name,
                  struct atr_cg *out, struct atr_error *err);
/* Writes the limits set in l; -1 when the host has no controller for one
 * of them. mem_max also keeps swap from dodging it (v1: memsw.limit when
 * swap exists, v2: memory.swap.max 0). */
/* Like atr_cg_create, but only in the hierarchies limits l (and the
 * statistics) need: the cheap choice for per-step groups. */
int atr_cg_create_for(const struct atr_cg_host *h, const struct atr_cg *parent, const char *name,
                      const struct atr_cg_limits *l, struct atr_cg *out, struct atr_error *err);
int atr_cg_set_limits(const struct atr_cg_host *h, const struct atr_cg *g,
                      const struct atr_cg_limits *l, struct atr_error *err);
/* The dynamic controller's knob: memory.high (v1: memory.soft_limit_in_bytes). */
int atr_cg_set_mem_high(const struct atr_cg_host *h, const struct atr_cg *g, int64_t bytes,
                        struct atr_error *err);
/* Moves pid (0: the caller) into g in every hierarchy (async-signal-safe
 * when err is NULL: pass NULL in a forked child before exec; errno says
 * why it failed). skip_v2: the process is already in g's v2 group
 * (CLONE_INTO_CGROUP). */
int atr_cg_join(const struct atr_cg *g, pid_t pid, bool skip_v2, struct atr_error *err);

struct atr_cg_stats {
    int64_t mem_peak;           /* bytes: v2 memory.peak, v1 max_usage_in_bytes; -1 unknown */
    int64_t mem_current;
    int64_t cpu_user_us, cpu_sys_us;        /* v2 cpu.stat, v1 cpuacct.usage_{user,sys} */
    /* v2: memory.events high, max, oom_kill. v1: high -1 (not counted),
     * max = failcnt (+ memsw.failcnt): charges that failed at the limit,
     * oom_kill from memory.oom_control. */
    int64_t mem_high_events, mem_max_events, oom_kills;
    int64_t mem_some_us, mem_full_us, cpu_some_us;        /* pressure total= (v2 only) */
    /* pids.events "max" (v1 and v2): forks refused at pids.max; -1 unknown */
    int64_t pids_max_events;
};
int atr_cg_read_stats(const struct atr_cg_host *h, const struct atr_cg *g,
                      struct atr_cg_stats *s, struct atr_error *err);

/* The peak memory of one interval of a long-lived group (a browser that
 * outlives its steps): v1 resets memory.max_usage_in_bytes (writing 0
 * sets it to the current usage); v2 (6.12+) writes to an fd of
 * memory.peak, which then reads the peak since that write. begin returns
 * 0 when the peak was reset, -1 when the host cannot (end then reads the
 * group's lifetime peak). end returns bytes or -1 and closes the fd. */
struct atr_cg_peak {
    int fd;                     /* v2: the memory.peak fd written to; -1 */
};
int atr_cg_peak_begin(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_cg_peak *p);
int64_t atr_cg_peak_end(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_cg_peak *p);

/* Kills every process in g and the groups below it (cgroup.kill, and
 * SIGKILL of what cgroup.procs lists until empty) and waits until they
 * are empty (bounded: 2 s, then -1). Never kills the caller. */
int atr_cg_kill(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_error *err);
/* Kills, then removes g's directories and any groups left below them,
 * deepest first (rmdir retried briefly on EBUSY). A directory already
 * gone is not an error. Closes v2_fd (so a zeroed atr_cg needs v2_fd = -1). */
int atr_cg_remove(const struct atr_cg_host *h, struct atr_cg *g, struct atr_error *err);
/* The memory limit in force where this process's groups live: the
 * lowest memory.max (v2) or memory.limit_in_bytes (v1) from its memory
 * base up to the hierarchy's root; -1 when none is set (or no memory
 * controller). */
int64_t atr_cg_mem_limit(const struct atr_cg_host *h);

/* The path of g below its hierarchy's mount point ("/atr-123/server-1"),
 * as a container engine with the cgroupfs manager wants --cgroup-parent:
 * the v1 memory group's where there is one, else the v2 group's. 0, or -1
 * with err. */
int atr_cg_rel_path(const struct atr_cg *g, char *out, size_t cap, struct atr_error *err);

/* v1 only: an eventfd the kernel signals at every OOM at g's memory limit,
 * whichever group below g its victim is in (cgroup.event_control on
 * memory.oom_control). v1's oom_kill counts only kills of g's own
 * processes, so a container's group below g hides them from
 * atr_cg_read_stats; v2's memory.events counts the subtree and needs no
 * watch. -1 where there is none (v2, no memory controller); the caller
 * closes the fd. */
int atr_cg_oom_watch(const struct atr_cg *g);
/* The OOM events signalled on fd since its last read, 0 when none (fd -1:
 * 0); never blocks. */
int64_t atr_cg_oom_events(int fd);

/* Removes "atr-<pid>" roots (and their subtrees, killing what runs in
 * them) whose lock no process holds (atr_cg_root locks the root it makes,
 * until the process dies: a run in another PID namespace, or one whose
 * pid was reused, is still seen live); *removed counts the root
 * directories removed (one per hierarchy). Our own root is never touched. */
int atr_cg_sweep_stale(const struct atr_cg_host *h, unsigned *removed, struct atr_error *err);

/* Parsers, exposed for tests on fixture text. */
/* "some avg10=.. total=N\nfull ... total=M": totals in microseconds. */
int atr_cg_parse_pressure(const char *text, int64_t *some_us, int64_t *full_us);
/* "key value" lines (memory.events, cpu.stat, memory.stat, oom_control):
 * the value of key, or -1. */
int64_t atr_cg_parse_keyed(const char *text, const char *key);

#endif
