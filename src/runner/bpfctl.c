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

void atr_bpf_close(struct atr_bpf *b)
{
    (void)b;
}

int atr_bpf_set_target(struct atr_bpf *b, uint64_t cgid, int64_t target, struct atr_error *err)
{
    (void)b, (void)cgid, (void)target;
    return atr_error_set(err, "%s", NO_BPF);
}

int atr_bpf_unwatch(struct atr_bpf *b, uint64_t cgid)
{
    (void)b, (void)cgid;
    return -1;
}

int atr_bpf_fd(const struct atr_bpf *b)
{
    (void)b;
    return -1;
}

int atr_bpf_drain(struct atr_bpf *b, void (*fn)(void *ctx, const struct atr_bpf_stop *s),
                  void *ctx, struct atr_error *err)
{
    (void)b, (void)fn, (void)ctx;
    return atr_error_set(err, "%s", NO_BPF);
}

#else

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "runner/bpf/throttle.h"
#include "throttle.skel.h"

struct atr_bpf {
    struct throttle_bpf *skel;
    struct ring_buffer *rb;
    void (*fn)(void *ctx, const struct atr_bpf_stop *s);
    void *ctx;
};

/* libbpf's messages: the last warning is kept for the error text. */
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

static int on_event(void *ctx, void *data, size_t size)
{
    struct atr_bpf *b = ctx;
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
    b->fn(b->ctx, &s);
    return 0;
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
    b->skel = throttle_bpf__open_and_load();
    int e = errno;
    if (!b->skel || throttle_bpf__attach(b->skel) < 0) {
        e = b->skel ? errno : e;
        atr_error_set(err, "cannot load the eBPF controller: %s%s%s", strerror(e),
                      last_msg[0] ? ": " : "", last_msg);
        atr_bpf_close(b);
        return NULL;
    }
    b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_event, b, NULL);
    if (!b->rb) {
        atr_error_set(err, "cannot open the eBPF ring buffer: %s", strerror(errno));
        atr_bpf_close(b);
        return NULL;
    }
    return b;
}

void atr_bpf_close(struct atr_bpf *b)
{
    if (!b)
        return;
    ring_buffer__free(b->rb);
    throttle_bpf__destroy(b->skel);
    free(b);
}

int atr_bpf_set_target(struct atr_bpf *b, uint64_t cgid, int64_t target, struct atr_error *err)
{
    struct atr_bpf_watch w = {.target_pages = (__u64)(target / PAGE)};
    if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.watched), &cgid, &w, BPF_ANY) < 0)
        return atr_error_set(err, "eBPF watch of cgroup %llu: %s", (unsigned long long)cgid,
                             strerror(errno));
    return 0;
}

int atr_bpf_unwatch(struct atr_bpf *b, uint64_t cgid)
{
    return bpf_map_delete_elem(bpf_map__fd(b->skel->maps.watched), &cgid);
}

int atr_bpf_fd(const struct atr_bpf *b)
{
    return ring_buffer__epoll_fd(b->rb);
}

int atr_bpf_drain(struct atr_bpf *b, void (*fn)(void *ctx, const struct atr_bpf_stop *s),
                  void *ctx, struct atr_error *err)
{
    b->fn = fn;
    b->ctx = ctx;
    int n = ring_buffer__consume(b->rb);
    if (n < 0)
        return atr_error_set(err, "eBPF ring buffer: %s", strerror(-n));
    return n;
}

#endif
