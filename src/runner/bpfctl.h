/* bpfctl.h - loads the in-kernel throttle (runner/bpf/throttle.bpf.c)
 * and talks to it: which memory cgroups it watches and at what target,
 * and the stops it reports through its ring buffer. One loaded program
 * serves every group; closing it detaches and unloads everything (the
 * kernel also does so when the process dies: the links and maps live
 * only in this process's fds, nothing is pinned).
 *
 * Built without clang/bpftool/libbpf (ATR_HAVE_BPF undefined) every
 * call fails with a message naming the packages.
 *
 * Memory: atr_bpf_open allocates, atr_bpf_close frees (NULL is fine).
 * Library code: never prints (libbpf's own messages are captured and
 * the last one is kept in the error). */
#ifndef ATR_RUNNER_BPFCTL_H
#define ATR_RUNNER_BPFCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

struct atr_bpf;

/* One stop the kernel made. Times: CLOCK_MONOTONIC nanoseconds. */
struct atr_bpf_stop {
    uint64_t cgid;
    int64_t first_ns;           /* the first fault over this target */
    int64_t seen_ns;            /* the fault that led to this stop */
    int64_t action_ns;          /* the stop was sent */
    unsigned send_failed;       /* sends that failed before it (retried at the next fault) */
    int64_t usage, target;      /* bytes */
    pid_t pid;
    bool first;                 /* the first stop since the target was set */
};

/* Why BPF cannot be used here, in words, or NULL when it may: checks the
 * build, BTF, lockdown and privileges without loading anything. */
const char *atr_bpf_unavailable(void);

/* Loads and attaches the program: once per run, shared by every
 * group's watch (thread-safe: watches of different groups touch
 * different map entries). NULL with err (the reason: the verifier's or
 * libbpf's last message, EPERM...). */
struct atr_bpf *atr_bpf_open(struct atr_error *err);
/* The kernel's id of the loaded program (`bpftool prog show id N`). */
uint32_t atr_bpf_prog_id(const struct atr_bpf *b);
/* Detaches, unloads, frees; every watch must be closed first. */
void atr_bpf_close(struct atr_bpf *b);

/* The id the program keys a memory cgroup by: the inode of its directory
 * (v1 memory hierarchy, or v2). 0 with err when it cannot be read. */
uint64_t atr_bpf_cgroup_id(const char *dir, struct atr_error *err);

/* One watched group with its own ring buffer of stops. */
struct atr_bpf_watch_h;
/* Starts watching group cgid at target bytes. NULL with err. */
struct atr_bpf_watch_h *atr_bpf_watch(struct atr_bpf *b, uint64_t cgid, int64_t target,
                                      struct atr_error *err);
/* A new target, resetting the first-event time and the stop count. */
int atr_bpf_set_target(struct atr_bpf_watch_h *w, int64_t target, struct atr_error *err);
/* Stops watching (no more stops); the ring stays readable until close. */
void atr_bpf_unwatch(struct atr_bpf_watch_h *w);
/* Unwatches and frees (NULL is fine). */
void atr_bpf_watch_close(struct atr_bpf_watch_h *w);
/* A file descriptor that is readable when stops are waiting. */
int atr_bpf_fd(const struct atr_bpf_watch_h *w);
/* Calls fn for every stop waiting; returns how many, or -1 with err. */
int atr_bpf_drain(struct atr_bpf_watch_h *w, void (*fn)(void *ctx, const struct atr_bpf_stop *s),
                  void *ctx, struct atr_error *err);

#endif
