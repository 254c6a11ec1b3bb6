/* throttle.h - what the BPF program (throttle.bpf.c) and its loader
 * (runner/bpfctl.c) share: the per-group watch and the ring buffer event.
 * Plain fixed-size integers so both compilers lay them out alike. */
#ifndef ATR_RUNNER_BPF_THROTTLE_H
#define ATR_RUNNER_BPF_THROTTLE_H

#define ATR_BPF_MAX_GROUPS 256
#define ATR_BPF_RING_BYTES (64 * 1024)     /* per group: ~1000 stops between reads */

/* Value of the "watched" map, keyed by the memory cgroup's id. User space
 * writes a fresh one (first_ns 0, stops 0) at every new target. */
struct atr_bpf_watch {
    __u64 target_pages;     /* over this usage the faulting process is stopped */
    __u64 first_ns;         /* bpf_ktime_get_ns of the first fault over target; 0 none */
    __u32 stops;            /* processes stopped since the target was set */
    __u32 send_failed;      /* bpf_send_signal errors since then */
    __u32 slot;             /* the group's ring buffer in "rings" */
    __u32 pad;
};

/* One stop. Times are bpf_ktime_get_ns (CLOCK_MONOTONIC). */
struct atr_bpf_event {
    __u64 cgid;
    __u64 first_ns;         /* first over-target fault of this target */
    __u64 seen_ns;          /* this fault was seen over target */
    __u64 action_ns;        /* bpf_send_signal(SIGSTOP) returned */
    __u64 usage_pages, target_pages;
    __u32 pid;              /* the process stopped */
    __u32 nth;              /* 0: the first stop since the target was set */
    __u32 send_failed;      /* sends that failed before this one */
    __u32 pad;
};

#endif
