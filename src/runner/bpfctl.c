/* bpfctl.c - loader of the in-kernel throttle: skeleton open/load/attach,
 * the watched-groups map, the ring buffer of stops; or, built without
 * BPF, the message naming what to install. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/bpfctl.h"
#include "util/alloc.h"

#define PAGE 4096

uint64_t atr_bpf_cgroup_id(const char *dir, struct atr_error *err)
{
    struct stat st;
    if (!dir[0] || stat(dir, &st) < 0) {
        atr_error_set(err, "%s: %s", dir[0] ? dir : "memory cgroup", strerror(errno));
        return 0;
    }
    return (uint64_t)st.st_ino;
}

#ifndef ATR_HAVE_BPF

#define NO_BPF "atr was built without eBPF: install clang, libbpf-dev and bpftool, then rebuild"

const char *atr_bpf_unavailable(void)
{
    return NO_BPF;
}

struct atr_bpf *atr_bpf_open(struct atr_error *err)
{
    atr_error_set(err, "%s", NO_BPF);
    return NULL;
}

uint32_t atr_bpf_prog_id(const struct atr_bpf *b)
{
    (void)b;
    return 0;
}

void atr_bpf_close(struct atr_bpf *b)
{
    (void)b;
}

struct atr_bpf_watch_h *atr_bpf_watch(struct atr_bpf *b, uint64_t cgid, int64_t target,
                                      struct atr_error *err)
{
    (void)b, (void)cgid, (void)target;
    atr_error_set(err, "%s", NO_BPF);
    return NULL;
}

int atr_bpf_set_target(struct atr_bpf_watch_h *w, int64_t target, struct atr_error *err)
{
    (void)w, (void)target;
    return atr_error_set(err, "%s", NO_BPF);
}

void atr_bpf_unwatch(struct atr_bpf_watch_h *w)
{
    (void)w;
}

void atr_bpf_watch_close(struct atr_bpf_watch_h *w)
{
    (void)w;
}

int atr_bpf_fd(const struct atr_bpf_watch_h *w)
{
    (void)w;
    return -1;
}

int atr_bpf_drain(struct atr_bpf_watch_h *w, void (*fn)(void *ctx, const struct atr_bpf_stop *s),
                  void *ctx, struct atr_error *err)
{
    (void)w, (void)fn, (void)ctx;
    return atr_error_set(err, "%s", NO_BPF);
}

#else

#include <pthread.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "runner/bpf/throttle.h"
#include "throttle.skel.h"

/* One ring buffer of the pool (throttle.bpf.c "rings"), reused by the
 * steps that follow each other in it. */
struct ring_slot {
    int fd;
    struct ring_buffer *rb;
    bool used;
    void (*fn)(void *ctx, const struct atr_bpf_stop *s);   /* set by drain */
    void *ctx;
};

struct atr_bpf {
    struct throttle_bpf *skel;
    pthread_mutex_t lock;       /* the pool: watches start in tenants' threads */
    struct ring_slot slots[ATR_BPF_MAX_GROUPS];
    unsigned n_slots;
};

struct atr_bpf_watch_h {
    struct atr_bpf *b;
    uint64_t cgid;
    unsigned slot;
    bool watched;
};

/* libbpf's messages: the last warning is kept for the error text. Only
 * atr_bpf_open logs (once per run, before any thread). */
static char last_msg[256];

static int keep_message(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    char line[sizeof last_msg];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    if (line[0])
        memcpy(last_msg, line, sizeof last_msg);
    return 0;
}

static bool file_has(const char *path, const char *needle)
{
    char buf[256] = "";
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

const char *atr_bpf_unavailable(void)
{
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load";
    /* lockdown=confidentiality forbids reading kernel memory from BPF */
    if (file_has("/sys/kernel/security/lockdown", "[confidentiality]"))
        return "the kernel is locked down (confidentiality): BPF cannot read kernel memory";
    if (geteuid() != 0)
        return "loading BPF programs needs root (CAP_BPF and CAP_PERFMON)";
    return NULL;
}

struct atr_bpf *atr_bpf_open(struct atr_error *err)
{
    const char *why = atr_bpf_unavailable();
    if (why) {
        atr_error_set(err, "cannot load the eBPF controller: %s", why);
        return NULL;
    }
    libbpf_set_print(keep_message);
    last_msg[0] = '\0';
    struct atr_bpf *b = xcalloc(1, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    b->skel = throttle_bpf__open_and_load();
    int e = errno;
    if (!b->skel || throttle_bpf__attach(b->skel) < 0) {
        e = b->skel ? errno : e;
        atr_error_set(err, "cannot load the eBPF controller: %s%s%s", strerror(e),
                      last_msg[0] ? ": " : "", last_msg);
        atr_bpf_close(b);
        return NULL;
    }
    return b;
}

uint32_t atr_bpf_prog_id(const struct atr_bpf *b)
{
    struct bpf_prog_info info;
    __u32 len = sizeof info;
    memset(&info, 0, sizeof info);
    int fd = bpf_program__fd(b->skel->progs.atr_on_memcg_event);
    return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

void atr_bpf_close(struct atr_bpf *b)
{
    if (!b)
        return;
    for (unsigned i = 0; i < b->n_slots; i++) {
        ring_buffer__free(b->slots[i].rb);
        close(b->slots[i].fd);
    }
    throttle_bpf__destroy(b->skel);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

static int on_event(void *ctx, void *data, size_t size)
{
    struct ring_slot *w = ctx;
    const struct atr_bpf_event *e = data;
    if (size < sizeof *e)
        return 0;
    struct atr_bpf_stop s = {
        .cgid = e->cgid,
        .first_ns = (int64_t)e->first_ns,
        .seen_ns = (int64_t)e->seen_ns,
        .action_ns = (int64_t)e->action_ns,
        .send_failed = e->send_failed,
        .usage = (int64_t)e->usage_pages * PAGE,
        .target = (int64_t)e->target_pages * PAGE,
        .pid = (pid_t)e->pid,
        .first = e->nth == 0,
    };
    if (w->fn)
        w->fn(w->ctx, &s);
    return 0;
}

/* A new ring in the pool's next slot (the one slow step: the map-in-map
 * update waits for an RCU grace period). Under b->lock. */
static int slot_add(struct atr_bpf *b, struct atr_error *err)
{
    if (b->n_slots == ATR_BPF_MAX_GROUPS)
        return atr_error_set(err, "eBPF controller: more than %d steps watched at once",
                             ATR_BPF_MAX_GROUPS);
    struct ring_slot *r = &b->slots[b->n_slots];
    __u32 key = b->n_slots;
    r->fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "atr_ring", 0, 0, ATR_BPF_RING_BYTES, NULL);
    if (r->fd < 0)
        return atr_error_set(err, "eBPF ring buffer: %s", strerror(errno));
    r->rb = ring_buffer__new(r->fd, on_event, r, NULL);
    if (!r->rb || bpf_map_update_elem(bpf_map__fd(b->skel->maps.rings), &key, &r->fd, BPF_ANY) < 0) {
        atr_error_set(err, "eBPF ring buffer: %s", strerror(errno));
        ring_buffer__free(r->rb);
        close(r->fd);
        return -1;
    }
    b->n_slots++;
    return 0;
}

/* A free slot, emptied of a previous group's records; -1 with err. */
static int slot_take(struct atr_bpf *b, struct atr_error *err)
{
    pthread_mutex_lock(&b->lock);
    int got = -1;
    for (unsigned i = 0; i < b->n_slots && got < 0; i++)
        if (!b->slots[i].used)
            got = (int)i;
    if (got < 0 && slot_add(b, err) == 0)
        got = (int)b->n_slots - 1;
    if (got >= 0) {
        b->slots[got].used = true;
        b->slots[got].fn = NULL;
        ring_buffer__consume(b->slots[got].rb);
    }
    pthread_mutex_unlock(&b->lock);
    return got;
}

struct atr_bpf_watch_h *atr_bpf_watch(struct atr_bpf *b, uint64_t cgid, int64_t target,
                                      struct atr_error *err)
{
    int slot = slot_take(b, err);
    if (slot < 0)
        return NULL;
    struct atr_bpf_watch_h *w = xcalloc(1, sizeof *w);
    w->b = b;
    w->cgid = cgid;
    w->slot = (unsigned)slot;
    if (atr_bpf_set_target(w, target, err) < 0) {
        atr_bpf_watch_close(w);
        return NULL;
    }
    return w;
}

int atr_bpf_set_target(struct atr_bpf_watch_h *w, int64_t target, struct atr_error *err)
{
    struct atr_bpf_watch v = {.target_pages = (__u64)(target / PAGE), .slot = w->slot};
    if (bpf_map_update_elem(bpf_map__fd(w->b->skel->maps.watched), &w->cgid, &v, BPF_ANY) < 0)
        return atr_error_set(err, "eBPF watch of cgroup %llu: %s", (unsigned long long)w->cgid,
                             strerror(errno));
    w->watched = true;
    return 0;
}

void atr_bpf_unwatch(struct atr_bpf_watch_h *w)
{
    if (w->watched)
        bpf_map_delete_elem(bpf_map__fd(w->b->skel->maps.watched), &w->cgid);
    w->watched = false;
}

void atr_bpf_watch_close(struct atr_bpf_watch_h *w)
{
    if (!w)
        return;
    atr_bpf_unwatch(w);
    pthread_mutex_lock(&w->b->lock);
    w->b->slots[w->slot].used = false;
    pthread_mutex_unlock(&w->b->lock);
    free(w);
}

int atr_bpf_fd(const struct atr_bpf_watch_h *w)
{
    return ring_buffer__epoll_fd(w->b->slots[w->slot].rb);
}

int atr_bpf_drain(struct atr_bpf_watch_h *w, void (*fn)(void *ctx, const struct atr_bpf_stop *s),
                  void *ctx, struct atr_error *err)
{
    struct ring_slot *r = &w->b->slots[w->slot];
    r->fn = fn;
    r->ctx = ctx;
    int n = ring_buffer__consume(r->rb);
    if (n < 0)
        return atr_error_set(err, "eBPF ring buffer: %s", strerror(-n));
    return n;
}

#endif
