/* throttle.bpf.c - the in-kernel arm of the dynamic controller
 * (--controller ebpf, docs/controller.md): at every page fault the kernel
 * counts in a watched memory cgroup it compares the group's usage with
 * the group's target and, when over, stops the faulting process
 * (SIGSTOP) right there, recording the kernel time of the first
 * over-target fault and of the stop in a ring buffer. User space raises
 * the target and resumes the group (SIGCONT). Built with clang -target
 * bpf into a libbpf skeleton (CMakeLists.txt); CO-RE, so one object runs
 * on any kernel with BTF. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "runner/bpf/throttle.h"

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP_NR 19

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, ATR_BPF_MAX_GROUPS);
    __type(key, __u64);                 /* the memcg's cgroup id (its inode) */
    __type(value, struct atr_bpf_watch);
} watched SEC(".maps");

/* A pool of ring buffers, one per step watched at the same time (steps
 * of several tenants run at once, each reading only its own stops, while
 * the program is loaded once per run). Slots are filled once and reused:
 * every update of a map-in-map waits for an RCU grace period (~14 ms
 * measured here), too slow per step. */
struct ring {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, ATR_BPF_RING_BYTES);
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
    __uint(max_entries, ATR_BPF_MAX_GROUPS);
    __type(key, __u32);
    __array(values, struct ring);
} rings SEC(".maps");

/* Fires for every memcg event count; only page faults are taken: they
 * are counted in the faulting task's own group (mm->owner's memcg), so
 * the current task is the one growing that group. The tracepoint runs
 * after the fault charged its page: the usage read here includes it. */
SEC("tp_btf/count_memcg_events")
int BPF_PROG(atr_on_memcg_event, struct mem_cgroup *memcg, int item, unsigned long val)
{
    if (item != bpf_core_enum_value(enum vm_event_item, PGFAULT))
        return 0;
    __u64 cgid = BPF_CORE_READ(memcg, css.cgroup, kn, id);
    struct atr_bpf_watch *w = bpf_map_lookup_elem(&watched, &cgid);
    if (!w)
        return 0;
    __u64 usage = BPF_CORE_READ(memcg, memory.usage.counter);
    if (usage <= w->target_pages)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __sync_val_compare_and_swap(&w->first_ns, 0, now);
    /* Fails in contexts where no signal can be sent (a kernel thread,
     * irqs off): then the next fault over target tries again, the first
     * event's time kept. */
    int rc = bpf_send_signal(SIGSTOP_NR);
    __u64 done = bpf_ktime_get_ns();
    if (rc) {
        __sync_fetch_and_add(&w->send_failed, 1);
        return 0;
    }
    __u32 nth = __sync_fetch_and_add(&w->stops, 1);
    __u32 slot = w->slot;
    void *ring = bpf_map_lookup_elem(&rings, &slot);
    if (!ring)
        return 0;
    struct atr_bpf_event *e = bpf_ringbuf_reserve(ring, sizeof *e, 0);
    if (!e)
        return 0;
    e->cgid = cgid;
    e->first_ns = w->first_ns;
    e->seen_ns = now;
    e->action_ns = done;
    e->send_failed = w->send_failed;
    e->usage_pages = usage;
    e->target_pages = w->target_pages;
    e->pid = bpf_get_current_pid_tgid() >> 32;
    e->nth = nth;
    bpf_ringbuf_submit(e, 0);
    return 0;
}
