/* cgroup.c - control groups for tool steps on v2, v1 and hybrid hosts:
 * detection from mountinfo, groups spanning the hierarchies in use,
 * limits, statistics, kill and removal (see cgroup.h). */
#include "runner/cgroup.h"
#include "util/alloc.h"
#include "util/dirlock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KILL_DEADLINE_NS (2000LL * 1000 * 1000)
#define RMDIR_DEADLINE_NS (1000LL * 1000 * 1000)
#define TEXT_MAX 8192           /* stat files read whole: memory.stat is ~2 KiB */
#define TREE_DEPTH_MAX 32       /* groups atr makes are 3 deep */

/* The hierarchies a group can span, in struct order. */
enum { H_V2, H_MEMORY, H_CPU, H_CPUACCT, H_PIDS, H_COUNT };
static const char *const hier_ctrl[H_COUNT] = {"", "memory", "cpu", "cpuacct", "pids"};

/* ---- small file helpers ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* dir/name into out (PATH_MAX bytes); -1 with ENAMETOOLONG if too long. */
static int path_join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Reads at most cap-1 bytes of path into buf, NUL-terminated; the length or -1. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0) {
                int e = errno;
                close(fd);
                errno = e;
                return -1;
            }
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

static ssize_t read_in(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[PATH_MAX];
    if (!dir[0] || path_join(p, dir, name) < 0)
        return -1;
    return read_file(p, buf, cap);
}

/* One write(2) of s: cgroup files take a value per write. */
static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(s);
    ssize_t n = write(fd, s, len);
    int e = errno;
    close(fd);
    if (n == (ssize_t)len)
        return 0;
    errno = n < 0 ? e : EIO;
    return -1;
}

static int write_in(const char *dir, const char *name, const char *s)
{
    char p[PATH_MAX];
    if (path_join(p, dir, name) < 0)
        return -1;
    return write_file(p, s);
}

static int cg_write(const char *dir, const char *name, const char *val, struct atr_error *err)
{
    if (write_in(dir, name, val) < 0)
        return atr_error_set(err, "cannot write \"%s\" to %s/%s: %s", val, dir, name,
                             strerror(errno));
    return 0;
}

static bool exists_in(const char *dir, const char *name)
{
    char p[PATH_MAX];
    return dir[0] && path_join(p, dir, name) == 0 && access(p, F_OK) == 0;
}

/* A file holding one integer ("max" and other words: -1). */
static int64_t int_in(const char *dir, const char *name)
{
    char buf[64];
    if (read_in(dir, name, buf, sizeof buf) <= 0 || !isdigit((unsigned char)buf[0]))
        return -1;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    return errno ? -1 : (int64_t)v;
}

static void fmt_i64(char *out, size_t cap, int64_t v, const char *unlimited)
{
    if (v < 0)
        snprintf(out, cap, "%s", unlimited);
    else
        snprintf(out, cap, "%" PRId64, v);
}

/* ---- parsers ---- */

int64_t atr_cg_parse_keyed(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) != 0 || p[klen] != ' ')
            continue;
        const char *v = p + klen + 1;
        if (!isdigit((unsigned char)*v))
            return -1;
        errno = 0;
        long long n = strtoll(v, NULL, 10);
        return errno ? -1 : (int64_t)n;
    }
    return -1;
}

/* total= of the line of text that starts with `kind ` ("some", "full"), or -1. */
static int64_t pressure_total(const char *text, const char *kind)
{
    size_t klen = strlen(kind);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, kind, klen) != 0 || p[klen] != ' ')
            continue;
        const char *end = strchr(p, '\n');
        const char *t = strstr(p, " total=");
        if (!t || (end && t > end) || !isdigit((unsigned char)t[7]))
            return -1;
        errno = 0;
        long long n = strtoll(t + 7, NULL, 10);
        return errno ? -1 : (int64_t)n;
    }
    return -1;
}

int atr_cg_parse_pressure(const char *text, int64_t *some_us, int64_t *full_us)
{
    int64_t some = pressure_total(text, "some");
    int64_t full = pressure_total(text, "full");
    if (some_us)
        *some_us = some;
    if (full_us)
        *full_us = full;
    return some < 0 ? -1 : 0;
}

const char *atr_cg_mode_name(enum atr_cg_mode mode)
{
    switch (mode) {
    case ATR_CG_V1: return "v1";
    case ATR_CG_HYBRID: return "hybrid";
    case ATR_CG_V2: return "v2";
    default: return "none";
    }
}

/* ---- detection ---- */

struct mount_rec {
    bool found;
    char point[PATH_MAX];       /* mount point, unescaped */
    char root[PATH_MAX];        /* root of the mount within its hierarchy */
};

struct detect {
    struct mount_rec mnt[H_COUNT];
    bool have_path[H_COUNT];
    char path[H_COUNT][PATH_MAX];   /* our group, from /proc/self/cgroup */
};

/* Is tok one of the comma-separated words of list? */
static bool has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
        if (strncmp(p, tok, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

static int split_fields(char *s, char **f, int max)
{
    int n = 0;
    for (char *tok = strtok(s, " \n"); tok && n < max; tok = strtok(NULL, " \n"))
        f[n++] = tok;
    return n;
}

static void record_mount(struct mount_rec *m, const char *root, const char *point)
{
    if (m->found)
        return;         /* the first mount of a hierarchy wins */
    m->found = true;
    snprintf(m->root, sizeof m->root, "%s", root);
    snprintf(m->point, sizeof m->point, "%s", point);
    unescape_octal(m->root);
    unescape_octal(m->point);
}

/* "id parent maj:min root point opts [optional...] - fstype source superopts" */
static void parse_mount_line(struct detect *d, char *line)
{
    char *f[32];
    int n = split_fields(line, f, 32);
    int sep = 6;
    while (sep < n && strcmp(f[sep], "-") != 0)
        sep++;
    if (sep + 3 >= n)
        return;
    const char *fstype = f[sep + 1], *super = f[sep + 3];
    if (strcmp(fstype, "cgroup2") == 0) {
        record_mount(&d->mnt[H_V2], f[3], f[4]);
        return;
    }
    if (strcmp(fstype, "cgroup") != 0)
        return;
    for (int h = H_MEMORY; h < H_COUNT; h++)
        if (has_token(super, hier_ctrl[h]))
            record_mount(&d->mnt[h], f[3], f[4]);
}

/* "N:ctrl,ctrl:/path" (v1) and "0::/path" (v2). */
static void parse_cgroup_line(struct detect *d, char *line)
{
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/')
        return;
    *c2 = '\0';
    const char *ctrls = c1 + 1, *path = c2 + 1;
    for (int h = 0; h < H_COUNT; h++) {
        bool match = h == H_V2 ? ctrls[0] == '\0' && strncmp(line, "0:", 2) == 0
                               : has_token(ctrls, hier_ctrl[h]);
        if (match && !d->have_path[h]) {
            d->have_path[h] = true;
            snprintf(d->path[h], sizeof d->path[h], "%s", path);
        }
    }
}

static int parse_lines(const char *file, struct detect *d, void (*fn)(struct detect *, char *))
{
    FILE *fp = fopen(file, "re");
    if (!fp)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) > 0)
        fn(d, line);
    free(line);
    fclose(fp);
    return 0;
}

/* Our directory in hierarchy h: sysfs_root + mount point + our path
 * below the mount's root, into out. Returns 0 when it is a writable
 * directory, else why not: ENOENT when absent or outside the mount
 * (another namespace's view), access's errno (EACCES: not delegated to
 * this user) when it is there but not ours to write. */
static int base_dir(const struct detect *d, int h, const char *sysfs_root, char *out)
{
    out[0] = '\0';
    const struct mount_rec *m = &d->mnt[h];
    if (!m->found || !d->have_path[h])
        return ENOENT;
    const char *rel = d->path[h];
    size_t rlen = strcmp(m->root, "/") == 0 ? 0 : strlen(m->root);
    if (strncmp(rel, m->root, rlen) != 0 || (rel[rlen] != '/' && rel[rlen] != '\0'))
        return ENOENT;
    rel += rlen;
    if (strcmp(rel, "/") == 0)
        rel = "";
    int n = snprintf(out, PATH_MAX, "%s%s%s", sysfs_root, m->point, rel);
    struct stat st;
    if (n < 0 || n >= PATH_MAX || stat(out, &st) < 0 || !S_ISDIR(st.st_mode))
        return ENOENT;
    return access(out, W_OK) == 0 ? 0 : errno;
}

/* cgroup.kill is absent from a hierarchy's root group: look at a sibling
 * group, or make a probe group (not named like a run root) to see. */
static bool probe_kill_file(const char *base)
{
    if (exists_in(base, "cgroup.kill"))
        return true;
    DIR *dir = opendir(base);
    if (!dir)
        return false;
    bool found = false;
    char p[PATH_MAX];
    struct dirent *e;
    while (!found && (e = readdir(dir)))
        found = e->d_type == DT_DIR && e->d_name[0] != '.' && path_join(p, base, e->d_name) == 0 &&
                exists_in(p, "cgroup.kill");
    closedir(dir);
    if (found)
        return true;
    char name[32];
    snprintf(name, sizeof name, "atr-probe-%ld", (long)getpid());
    if (path_join(p, base, name) < 0 || mkdir(p, 0755) < 0)
        return false;
    found = exists_in(p, "cgroup.kill");
    rmdir(p);
    return found;
}

static void note_add(struct atr_cg_host *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_add(struct atr_cg_host *h, const char *fmt, ...)
{
    size_t len = strlen(h->note);
    if (len + 1 >= sizeof h->note)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->note + len, sizeof h->note - len, fmt, ap);
    va_end(ap);
}

/* The v2 controllers atr uses that the base offers its children; enables
 * them in the base's cgroup.subtree_control when needed. That fails with
 * EBUSY when the base holds processes (not the root: the "no internal
 * processes" rule), and then v2 is used without controllers. */
static void v2_controllers(struct atr_cg_host *h, int *enable_errno)
{
    static const char *const names[] = {"memory", "cpu", "pids"};
    bool *flag[] = {&h->v2_memory, &h->v2_cpu, &h->v2_pids};
    char avail[512], on[512], want[64] = "";
    *enable_errno = 0;
    if (read_in(h->v2, "cgroup.controllers", avail, sizeof avail) < 0)
        return;
    if (read_in(h->v2, "cgroup.subtree_control", on, sizeof on) < 0)
        on[0] = '\0';
    avail[strcspn(avail, "\n")] = on[strcspn(on, "\n")] = '\0';
    /* the files are space-separated: reuse the comma matcher */
    for (char *c = avail; *c; c++)
        *c = *c == ' ' ? ',' : *c;
    for (char *c = on; *c; c++)
        *c = *c == ' ' ? ',' : *c;
    bool missing = false;
    for (int i = 0; i < 3; i++) {
        if (!has_token(avail, names[i]))
            continue;
        *flag[i] = true;
        missing |= !has_token(on, names[i]);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s+%s", want[0] ? " " : "",
                 names[i]);
    }
    if (missing && write_in(h->v2, "cgroup.subtree_control", want) < 0) {
        *enable_errno = errno;
        h->v2_memory = h->v2_cpu = h->v2_pids = false;
    }
}

static void describe(struct atr_cg_host *h, int enable_errno)
{
    const char *v1[] = {h->memory, h->cpu, h->cpuacct, h->pids};
    bool any_v1 = false;
    note_add(h, "%s:", atr_cg_mode_name(h->mode));
    for (int i = 0; i < 4; i++)
        if (v1[i][0]) {
            note_add(h, "%s%s", any_v1 ? "," : " v1 ", hier_ctrl[i + 1]);
            any_v1 = true;
        }
    if (h->memory[0])
        note_add(h, " (memory at %s)", h->memory);
    if (h->v2[0]) {
        note_add(h, "%s v2 at %s (", any_v1 ? ";" : "", h->v2);
        if (h->v2_memory || h->v2_cpu || h->v2_pids)
            note_add(h, "controllers%s%s%s, ", h->v2_memory ? " memory" : "",
                     h->v2_cpu ? " cpu" : "", h->v2_pids ? " pids" : "");
        note_add(h, "%s%s)", h->psi ? "pressure" : "no pressure",
                 h->kill_file ? ", cgroup.kill" : "");
        if (enable_errno)
            note_add(h, "; cannot enable its controllers for children (%s%s): no limits",
                     strerror(enable_errno),
                     enable_errno == EBUSY ? ": the group holds processes" : "");
    }
    if (h->mode == ATR_CG_NONE)
        note_add(h, " no usable cgroup hierarchy: rusage only");
}

int atr_cg_detect(struct atr_cg_host *h, const char *mountinfo, const char *proc_cgroup,
                  const char *sysfs_root, struct atr_error *err)
{
    memset(h, 0, sizeof *h);
    struct detect *d = xcalloc(1, sizeof *d);
    if (!sysfs_root)
        sysfs_root = "";
    /* A missing file means no cgroups, not an error. */
    parse_lines(mountinfo ? mountinfo : "/proc/self/mountinfo", d, parse_mount_line);
    parse_lines(proc_cgroup ? proc_cgroup : "/proc/self/cgroup", d, parse_cgroup_line);
    char *dst[H_COUNT] = {h->v2, h->memory, h->cpu, h->cpuacct, h->pids};
    for (int i = 0; i < H_COUNT; i++) {
        int e = base_dir(d, i, sysfs_root, dst[i]);
        if ((e == EACCES || e == EPERM) && !h->denied[0])
            memcpy(h->denied, dst[i], sizeof h->denied);
        if (e)
            dst[i][0] = '\0';
    }
    free(d);
    int enable_errno = 0;
    if (h->v2[0]) {
        v2_controllers(h, &enable_errno);
        h->psi = exists_in(h->v2, "memory.pressure");
        h->kill_file = probe_kill_file(h->v2);
    }
    if (h->memory[0])
        h->mode = h->v2[0] ? ATR_CG_HYBRID : ATR_CG_V1;
    else
        h->mode = h->v2[0] ? ATR_CG_V2 : ATR_CG_NONE;
    describe(h, enable_errno);
    return 0;
}

/* ---- groups ---- */

static char *cg_dir(struct atr_cg *g, int i)
{
    char *dirs[H_COUNT] = {g->v2, g->memory, g->cpu, g->cpuacct, g->pids};
    return dirs[i];
}

static const char *cg_cdir(const struct atr_cg *g, int i)
{
    const char *dirs[H_COUNT] = {g->v2, g->memory, g->cpu, g->cpuacct, g->pids};
    return dirs[i];
}

/* Is hierarchy i's directory the same as an earlier one (co-mounted v1
 * controllers such as "cpu,cpuacct")? */
static bool cg_dup(const struct atr_cg *g, int i)
{
    for (int j = 0; j < i; j++)
        if (strcmp(cg_cdir(g, j), cg_cdir(g, i)) == 0)
            return true;
    return false;
}

/* The distinct non-empty directories of g. */
static int cg_dirs(const struct atr_cg *g, const char *dirs[H_COUNT])
{
    int n = 0;
    for (int i = 0; i < H_COUNT; i++)
        if (cg_cdir(g, i)[0] && !cg_dup(g, i))
            dirs[n++] = cg_cdir(g, i);
    return n;
}

static void cg_close(struct atr_cg *g)
{
    if (g->v2_fd >= 0)
        close(g->v2_fd);
    g->v2_fd = -1;
}

/* "+memory +cpu +pids" as far as the host has them, or "" */
static void v2_enable_string(const struct atr_cg_host *h, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", h->v2_memory ? "+memory " : "", h->v2_cpu ? "+cpu " : "",
             h->v2_pids ? "+pids " : "");
    size_t n = strlen(out);
    if (n)
        out[n - 1] = '\0';
}

/* Makes `name` below each of parent's directories (bases for a root);
 * an existing directory is reused. On failure removes what it made. */
/* skip: bit i set = no directory in hierarchy i. */
static int make_dirs(const struct atr_cg *parent, const char *name, unsigned skip,
                     struct atr_cg *out, struct atr_error *err)
{
    bool made[H_COUNT] = {false};
    memset(out, 0, sizeof *out);
    out->v2_fd = -1;
    for (int i = 0; i < H_COUNT; i++) {
        const char *pd = cg_cdir(parent, i);
        char *od = cg_dir(out, i);
        if (!pd[0] || (skip & (1u << i)))
            continue;
        if (path_join(od, pd, name) < 0)
            goto fail;
        if (mkdir(od, 0755) == 0)
            made[i] = true;
        else if (errno != EEXIST)
            goto fail;
    }
    if (out->v2[0] && (out->v2_fd = open(out->v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        goto fail;
    return 0;
fail:;
    int e = errno;
    atr_error_set(err, "cannot create cgroup %s below %s: %s", name,
                  parent->memory[0] ? parent->memory : parent->v2, strerror(e));
    for (int i = H_COUNT - 1; i >= 0; i--)
        if (made[i])
            rmdir(cg_dir(out, i));
    cg_close(out);
    return -1;
}

/* A v2 group's children get the controllers only if it enables them. */
static int v2_enable_below(const struct atr_cg_host *h, const struct atr_cg *g,
                           struct atr_error *err)
{
    char want[64];
    v2_enable_string(h, want, sizeof want);
    if (!g->v2[0] || !want[0])
        return 0;
    return cg_write(g->v2, "cgroup.subtree_control", want, err);
}

/* The run's lock on its root: flock on the root's first directory, held
 * (open, close-on-exec) until the process dies, when the kernel drops it.
 * A sweep takes a root whose lock it can get for a dead run's: unlike
 * kill(pid, 0), this holds across PID namespaces and pid reuse. */
static int root_lock_fd = -1;

static int root_lock(const struct atr_cg *root, struct atr_error *err)
{
    const char *dirs[H_COUNT];
    cg_dirs(root, dirs);
    int fd = atr_dirlock(dirs[0], false);
    if (fd < 0)
        return atr_error_set(err, "cannot lock cgroup %s: %s", dirs[0], strerror(errno));
    if (root_lock_fd >= 0)
        close(root_lock_fd);
    root_lock_fd = fd;
    return 0;
}

/* Held by a run between making its root and locking it, and by a sweep,
 * so a sweep never sees a new root before its lock. -1 if unlockable
 * (then the window is open, as without the guard). */
static int base_lock(const char *base)
{
    return atr_dirlock(base, true);
}

/* Whether a run holds the root `name` below base0 (the first hierarchy,
 * where root_lock locks). A root missing there is a dead run's leftover. */
static bool root_held(const char *base0, const char *name)
{
    char p[PATH_MAX];
    return path_join(p, base0, name) < 0 || atr_dirlock_held(p);
}

int atr_cg_root(const struct atr_cg_host *h, struct atr_cg *root, struct atr_error *err)
{
    if (h->mode == ATR_CG_NONE)
        return atr_error_set(err, "no usable cgroup hierarchy");
    struct atr_cg base;
    memset(&base, 0, sizeof base);
    memcpy(base.v2, h->v2, sizeof base.v2);
    memcpy(base.memory, h->memory, sizeof base.memory);
    memcpy(base.cpu, h->cpu, sizeof base.cpu);
    memcpy(base.cpuacct, h->cpuacct, sizeof base.cpuacct);
    memcpy(base.pids, h->pids, sizeof base.pids);
    char name[32];
    snprintf(name, sizeof name, "atr-%ld", (long)getpid());
    const char *bases[H_COUNT];
    cg_dirs(&base, bases);
    int guard = base_lock(bases[0]);
    int rc = make_dirs(&base, name, 0, root, err);
    if (rc == 0 && (rc = root_lock(root, err)) < 0)
        atr_cg_remove(h, root, NULL);
    if (guard >= 0)
        close(guard);
    if (rc < 0)
        return -1;
    if (v2_enable_below(h, root, err) < 0) {
        atr_cg_remove(h, root, NULL);
        return -1;
    }
    return 0;
}

static int create(const struct atr_cg_host *h, const struct atr_cg *parent, const char *name,
                  unsigned skip, struct atr_cg *out, struct atr_error *err)
{
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        out->v2_fd = -1;
        return atr_error_set(err, "invalid cgroup name \"%s\"", name);
    }
    /* Idempotent: the parent becomes an inner node once it has a child. */
    if (v2_enable_below(h, parent, err) < 0) {
        out->v2_fd = -1;
        return -1;
    }
    return make_dirs(parent, name, skip, out, err);
}

int atr_cg_create(const struct atr_cg_host *h, const struct atr_cg *parent, const char *name,
                  struct atr_cg *out, struct atr_error *err)
{
    return create(h, parent, name, 0, out, err);
}

/* Each hierarchy costs a mkdir, a join, reads and an rmdir per step, so a
 * step's group skips the ones its limits do not use: cpu without a quota
 * or weight, pids without pids.max, and cpuacct when the v2 group gives
 * cpu.stat. Memory (the peak) and v2 (kill, pressure) are always kept. */
int atr_cg_create_for(const struct atr_cg_host *h, const struct atr_cg *parent, const char *name,
                      const struct atr_cg_limits *l, struct atr_cg *out, struct atr_error *err)
{
    unsigned skip = 0;
    bool shared_cpuacct = strcmp(parent->cpu, parent->cpuacct) == 0;   /* "cpu,cpuacct" */
    if (l->cpu_quota_us < 0 && l->weight < 0)
        skip |= 1u << H_CPU;
    if (l->pids_max < 0)
        skip |= 1u << H_PIDS;
    if (parent->v2[0] && !shared_cpuacct)
        skip |= 1u << H_CPUACCT;
    return create(h, parent, name, skip, out, err);
}

/* ---- limits ---- */

/* The directory whose files control `ctrl` for g: the v1 one, else v2
 * when its controller is enabled; NULL when the host lacks it. */
static const char *ctrl_dir(const struct atr_cg_host *h, const struct atr_cg *g, int i,
                            bool *v2)
{
    const bool on_v2[H_COUNT] = {false, h->v2_memory, h->v2_cpu, false, h->v2_pids};
    *v2 = false;
    if (cg_cdir(g, i)[0])
        return cg_cdir(g, i);
    if (on_v2[i] && g->v2[0]) {
        *v2 = true;
        return g->v2;
    }
    return NULL;
}

static int no_ctrl(const struct atr_cg_host *h, const char *ctrl, struct atr_error *err)
{
    return atr_error_set(err, "cannot set %s limits: no %s controller on this host (%s)", ctrl,
                         ctrl, h->note);
}

/* Is any swap area active? (/proc/swaps has a header line, then one per area) */
static bool have_swap(void)
{
    char buf[1024];
    if (read_file("/proc/swaps", buf, sizeof buf) < 0)
        return false;
    const char *nl = strchr(buf, '\n');
    return nl && nl[1] != '\0';
}

/* memsw.limit (mem+swap) = limit keeps a group from dodging its limit by
 * swapping; v1 requires memsw >= limit at every moment, so memsw is raised
 * first and lowered last. Without swap it adds nothing and costs the
 * count: a charge over both limits fails on memsw first, and kernels that
 * track failcnt only on the memory counter (6.18 here) then count no limit
 * hit at all. */
static int v1_mem_max(const char *dir, int64_t max, struct atr_error *err)
{
    char val[32];
    fmt_i64(val, sizeof val, max, "-1");
    if (!exists_in(dir, "memory.memsw.limit_in_bytes") || !have_swap())
        return cg_write(dir, "memory.limit_in_bytes", val, err);
    int64_t sw = int_in(dir, "memory.memsw.limit_in_bytes");
    bool raise = max < 0 || (sw >= 0 && max > sw);
    if (raise)
        return cg_write(dir, "memory.memsw.limit_in_bytes", val, err) < 0 ||
                       cg_write(dir, "memory.limit_in_bytes", val, err) < 0
                   ? -1
                   : 0;
    return cg_write(dir, "memory.limit_in_bytes", val, err) < 0 ||
                   cg_write(dir, "memory.memsw.limit_in_bytes", val, err) < 0
               ? -1
               : 0;
}

static int set_memory(const struct atr_cg_host *h, const struct atr_cg *g,
                      const struct atr_cg_limits *l, struct atr_error *err)
{
    if (l->mem_high < 0 && l->mem_max < 0)
        return 0;
    bool v2;
    const char *dir = ctrl_dir(h, g, H_MEMORY, &v2);
    if (!dir)
        return no_ctrl(h, "memory", err);
    if (l->mem_high >= 0 && atr_cg_set_mem_high(h, g, l->mem_high, err) < 0)
        return -1;
    if (l->mem_max < 0)
        return 0;
    if (!v2)
        return v1_mem_max(dir, l->mem_max, err);
    char val[32];
    fmt_i64(val, sizeof val, l->mem_max, "max");
    if (cg_write(dir, "memory.max", val, err) < 0)
        return -1;
    /* like memsw on v1: no swapping around the limit (absent without swap) */
    if (exists_in(dir, "memory.swap.max"))
        return cg_write(dir, "memory.swap.max", "0", err);
    return 0;
}

static int set_cpu(const struct atr_cg_host *h, const struct atr_cg *g,
                   const struct atr_cg_limits *l, struct atr_error *err)
{
    if (l->cpu_quota_us < 0 && l->cpu_period_us < 0 && l->weight < 0)
        return 0;
    bool v2;
    const char *dir = ctrl_dir(h, g, H_CPU, &v2);
    if (!dir)
        return no_ctrl(h, "cpu", err);
    if (l->weight >= 0 && (l->weight < 1 || l->weight > 10000))
        return atr_error_set(err, "cpu weight %" PRId64 " out of range 1..10000", l->weight);
    char val[64];
    int64_t period = l->cpu_period_us >= 0 ? l->cpu_period_us : 100000;
    if (v2 && (l->cpu_quota_us >= 0 || l->cpu_period_us >= 0)) {
        if (l->cpu_quota_us >= 0)
            snprintf(val, sizeof val, "%" PRId64 " %" PRId64, l->cpu_quota_us, period);
        else
            snprintf(val, sizeof val, "max %" PRId64, period);
        if (cg_write(dir, "cpu.max", val, err) < 0)
            return -1;
    } else if (!v2 && (l->cpu_quota_us >= 0 || l->cpu_period_us >= 0)) {
        /* the period first: the kernel checks quota against it */
        fmt_i64(val, sizeof val, period, "");
        if (cg_write(dir, "cpu.cfs_period_us", val, err) < 0)
            return -1;
        fmt_i64(val, sizeof val, l->cpu_quota_us, "-1");
        if (cg_write(dir, "cpu.cfs_quota_us", val, err) < 0)
            return -1;
    }
    if (l->weight < 0)
        return 0;
    if (v2) {
        fmt_i64(val, sizeof val, l->weight, "");
        return cg_write(dir, "cpu.weight", val, err);
    }
    int64_t shares = l->weight * 1024 / 100;   /* weight 100 = 1024 shares */
    fmt_i64(val, sizeof val, shares < 2 ? 2 : shares, "");
    return cg_write(dir, "cpu.shares", val, err);
}

static int set_pids(const struct atr_cg_host *h, const struct atr_cg *g,
                    const struct atr_cg_limits *l, struct atr_error *err)
{
    if (l->pids_max < 0)
        return 0;
    bool v2;
    const char *dir = ctrl_dir(h, g, H_PIDS, &v2);
    if (!dir)
        return no_ctrl(h, "pids", err);
    char val[32];
    fmt_i64(val, sizeof val, l->pids_max, "max");
    return cg_write(dir, "pids.max", val, err);
}

int atr_cg_set_limits(const struct atr_cg_host *h, const struct atr_cg *g,
                      const struct atr_cg_limits *l, struct atr_error *err)
{
    if (set_memory(h, g, l, err) < 0 || set_cpu(h, g, l, err) < 0 || set_pids(h, g, l, err) < 0)
        return -1;
    return 0;
}

int atr_cg_set_mem_high(const struct atr_cg_host *h, const struct atr_cg *g, int64_t bytes,
                        struct atr_error *err)
{
    bool v2;
    const char *dir = ctrl_dir(h, g, H_MEMORY, &v2);
    if (!dir)
        return no_ctrl(h, "memory", err);
    char val[32];
    fmt_i64(val, sizeof val, bytes, v2 ? "max" : "-1");
    return cg_write(dir, v2 ? "memory.high" : "memory.soft_limit_in_bytes", val, err);
}

/* ---- join: runs in a forked child, so open/write/close only ---- */

static char *put_str(char *p, char *end, const char *s)
{
    while (*s && p < end)
        *p++ = *s++;
    return p;
}

static void pid_to_dec(long v, char out[24])
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < 23);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

static int join_one(const char *dir, const char *pid, size_t pid_len)
{
    char path[PATH_MAX];
    char *end = path + sizeof path - 1;
    char *p = put_str(put_str(path, end, dir), end, "/cgroup.procs");
    if (p == end) {
        errno = ENAMETOOLONG;
        return -1;
    }
    *p = '\0';
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, pid, pid_len);
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)pid_len ? 0 : -1;
}

int atr_cg_join(const struct atr_cg *g, pid_t pid, bool skip_v2, struct atr_error *err)
{
    char dec[24];
    pid_to_dec(pid, dec);
    size_t len = 0;
    while (dec[len])
        len++;
    for (int i = skip_v2 ? H_MEMORY : H_V2; i < H_COUNT; i++) {
        const char *dir = cg_cdir(g, i);
        if (!dir[0] || cg_dup(g, i))
            continue;
        if (join_one(dir, dec, len) < 0) {
            if (err) {
                int e = errno;
                atr_error_set(err, "cannot move process %s into %s: %s", dec, dir, strerror(e));
                errno = e;
            }
            return -1;
        }
    }
    return 0;
}

/* ---- statistics ---- */

static void stats_v2(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_cg_stats *s)
{
    char buf[TEXT_MAX];
    if (read_in(g->v2, "cpu.stat", buf, sizeof buf) >= 0) {
        s->cpu_user_us = atr_cg_parse_keyed(buf, "user_usec");
        s->cpu_sys_us = atr_cg_parse_keyed(buf, "system_usec");
    }
    if (read_in(g->v2, "memory.pressure", buf, sizeof buf) >= 0)
        atr_cg_parse_pressure(buf, &s->mem_some_us, &s->mem_full_us);
    if (read_in(g->v2, "cpu.pressure", buf, sizeof buf) >= 0)
        atr_cg_parse_pressure(buf, &s->cpu_some_us, NULL);
    if (h->v2_pids && !g->pids[0] && read_in(g->v2, "pids.events", buf, sizeof buf) >= 0)
        s->pids_max_events = atr_cg_parse_keyed(buf, "max");
    if (!h->v2_memory || g->memory[0])
        return;
    s->mem_peak = int_in(g->v2, "memory.peak");     /* 5.19+ */
    s->mem_current = int_in(g->v2, "memory.current");
    if (read_in(g->v2, "memory.events", buf, sizeof buf) >= 0) {
        s->mem_high_events = atr_cg_parse_keyed(buf, "high");
        s->mem_max_events = atr_cg_parse_keyed(buf, "max");
        s->oom_kills = atr_cg_parse_keyed(buf, "oom_kill");
    }
}

/* v1 has no count of soft-limit breaches: mem_high_events stays -1;
 * mem_max_events counts failed charges (reclaim at the limit), not OOMs. */
static void stats_v1(const struct atr_cg *g, struct atr_cg_stats *s)
{
    char buf[TEXT_MAX];
    if (g->memory[0]) {
        s->mem_peak = int_in(g->memory, "memory.max_usage_in_bytes");
        s->mem_current = int_in(g->memory, "memory.usage_in_bytes");
        /* with a memsw limit, memsw is charged first: a charge over both
         * limits fails there and counts in memsw.failcnt only (if at all) */
        int64_t fail = int_in(g->memory, "memory.failcnt");
        int64_t swfail = int_in(g->memory, "memory.memsw.failcnt");
        s->mem_max_events = fail < 0 ? -1 : fail + (swfail > 0 ? swfail : 0);
        if (read_in(g->memory, "memory.oom_control", buf, sizeof buf) >= 0)
            s->oom_kills = atr_cg_parse_keyed(buf, "oom_kill");
    }
    if (g->pids[0] && read_in(g->pids, "pids.events", buf, sizeof buf) >= 0)
        s->pids_max_events = atr_cg_parse_keyed(buf, "max");
    if (s->cpu_user_us < 0 && g->cpuacct[0]) {
        int64_t u = int_in(g->cpuacct, "cpuacct.usage_user");
        int64_t k = int_in(g->cpuacct, "cpuacct.usage_sys");
        s->cpu_user_us = u < 0 ? -1 : u / 1000;
        s->cpu_sys_us = k < 0 ? -1 : k / 1000;
    }
}

int atr_cg_read_stats(const struct atr_cg_host *h, const struct atr_cg *g,
                      struct atr_cg_stats *s, struct atr_error *err)
{
    memset(s, 0xff, sizeof *s);     /* every field -1: unknown */
    const char *main_dir = g->memory[0] ? g->memory : g->v2;
    struct stat st;
    if (!main_dir[0] || stat(main_dir, &st) < 0)
        return atr_error_set(err, "cannot read cgroup %s: %s", main_dir[0] ? main_dir : "(none)",
                             main_dir[0] ? strerror(errno) : "no directory");
    if (g->v2[0])
        stats_v2(h, g, s);
    stats_v1(g, s);
    return 0;
}

int atr_cg_rel_path(const struct atr_cg *g, char *out, size_t cap, struct atr_error *err)
{
    const char *dir = g->memory[0] ? g->memory : g->v2;
    struct stat st, up;
    if (!dir[0] || stat(dir, &st) < 0)
        return atr_error_set(err, "cgroup %s: %s", dir[0] ? dir : "(none)",
                             dir[0] ? strerror(errno) : "no directory");
    /* The mount point is the highest ancestor on the same file system
     * (each v1 controller and the v2 hierarchy is a mount of its own). */
    char top[PATH_MAX];
    snprintf(top, sizeof top, "%s", dir);
    for (;;) {
        char *slash = strrchr(top, '/');
        if (!slash || slash == top)
            break;
        *slash = '\0';
        if (stat(top, &up) < 0 || up.st_dev != st.st_dev) {
            *slash = '/';
            break;
        }
    }
    const char *rel = dir[strlen(top)] ? dir + strlen(top) : "/";   /* top: the mount */
    if (strlen(rel) + 1 > cap)
        return atr_error_set(err, "cgroup %s: path too long", dir);
    memcpy(out, rel, strlen(rel) + 1);
    return 0;
}

int atr_cg_oom_watch(const struct atr_cg *g)
{
    if (!g->memory[0])
        return -1;
    char path[PATH_MAX + 32], line[64];
    snprintf(path, sizeof path, "%s/memory.oom_control", g->memory);
    int ofd = open(path, O_RDONLY | O_CLOEXEC);
    if (ofd < 0)
        return -1;
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    snprintf(path, sizeof path, "%s/cgroup.event_control", g->memory);
    snprintf(line, sizeof line, "%d %d", efd, ofd);
    if (efd >= 0 && write_file(path, line) < 0) {
        close(efd);
        efd = -1;
    }
    close(ofd);   /* the kernel holds its own reference */
    return efd;
}

int64_t atr_cg_oom_events(int fd)
{
    eventfd_t n = 0;
    if (fd < 0 || eventfd_read(fd, &n) < 0)
        return 0;
    return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

/* "max" or a byte count -> bytes, -1 for none (v1 says "no limit" with a
 * page-rounded INT64_MAX). */
static int64_t mem_limit_value(const char *text)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || v <= 0 || v >= INT64_MAX / 2)
        return -1;
    return v;
}

int64_t atr_cg_mem_limit(const struct atr_cg_host *h)
{
    bool v1 = h->memory[0] != '\0';
    const char *file = v1 ? "memory.limit_in_bytes" : "memory.max";
    char dir[PATH_MAX], buf[64];
    if (!v1 && !h->v2_memory)
        return -1;
    snprintf(dir, sizeof dir, "%s", v1 ? h->memory : h->v2);
    /* Up to "/": above the hierarchy's mount point no limit file exists. */
    int64_t low = -1;
    for (;;) {
        int64_t v = read_in(dir, file, buf, sizeof buf) >= 0 ? mem_limit_value(buf) : -1;
        if (v > 0 && (low < 0 || v < low))
            low = v;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return low;
        *slash = '\0';
    }
}

int atr_cg_peak_begin(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_cg_peak *p)
{
    p->fd = -1;
    if (g->memory[0])
        return write_in(g->memory, "memory.max_usage_in_bytes", "0") < 0 ? -1 : 0;
    if (!g->v2[0] || !h->v2_memory)
        return -1;
    char path[PATH_MAX];
    if (path_join(path, g->v2, "memory.peak") < 0)
        return -1;
    p->fd = open(path, O_RDWR | O_CLOEXEC);
    if (p->fd >= 0 && write(p->fd, "reset\n", 6) == 6)
        return 0;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    return -1;
}

int64_t atr_cg_peak_end(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_cg_peak *p)
{
    (void)h;
    if (p->fd < 0) {
        const char *dir = g->memory[0] ? g->memory : g->v2;
        return dir[0] ? int_in(dir, g->memory[0] ? "memory.max_usage_in_bytes" : "memory.peak")
                      : -1;
    }
    char buf[64];
    ssize_t n = pread(p->fd, buf, sizeof buf - 1, 0);
    close(p->fd);
    p->fd = -1;
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? -1 : (int64_t)v;
}

/* ---- kill and removal ---- */

static int kill_pid(long pid, pid_t self)
{
    if (pid <= 0 || pid == self)
        return 0;   /* never ourselves, should the caller sit in the group */
    kill((pid_t)pid, SIGKILL);
    return 1;
}

/* SIGKILLs every process listed in dir/cgroup.procs; how many were listed. */
static int kill_listed(const char *dir)
{
    char p[PATH_MAX];
    if (path_join(p, dir, "cgroup.procs") < 0)
        return 0;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;   /* gone: nothing left to kill */
    char buf[4096];
    long pid = 0;
    bool in_num = false;
    int found = 0;
    pid_t self = getpid();
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (buf[i] - '0');
                in_num = true;
            } else if (in_num) {
                found += kill_pid(pid, self);
                pid = 0;
                in_num = false;
            }
        }
    }
    if (in_num)
        found += kill_pid(pid, self);
    close(fd);
    return found;
}

/* kill_listed over dir and every group below it (v1 cgroup.procs lists
 * only the group's own processes). */
static int kill_tree(const char *dir, int depth)
{
    int found = kill_listed(dir);
    DIR *d = depth < TREE_DEPTH_MAX ? opendir(dir) : NULL;
    if (!d)
        return found;
    char p[PATH_MAX];
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_type == DT_DIR && e->d_name[0] != '.' && path_join(p, dir, e->d_name) == 0)
            found += kill_tree(p, depth + 1);
    closedir(d);
    return found;
}

/* Kills until every dir is empty. Processes exit asynchronously after
 * SIGKILL (and a fork in flight can add one), hence the loop. */
static int kill_dirs(const char *const *dirs, int n, struct atr_error *err)
{
    for (int i = 0; i < n; i++)
        if (exists_in(dirs[i], "cgroup.kill"))
            write_in(dirs[i], "cgroup.kill", "1");     /* the whole v2 subtree, atomically */
    int64_t deadline = now_ns() + KILL_DEADLINE_NS;
    long nap = 50;
    for (;;) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found += kill_tree(dirs[i], 0);
        if (!found)
            return 0;
        if (now_ns() > deadline)
            return atr_error_set(err, "%s: %d processes still alive after 2 s of SIGKILL",
                                 dirs[0], found);
        nap_us(nap);
        nap = nap < 5000 ? nap * 2 : 10000;
    }
}

int atr_cg_kill(const struct atr_cg_host *h, const struct atr_cg *g, struct atr_error *err)
{
    const char *dirs[H_COUNT];
    int n = cg_dirs(g, dirs);
    return kill_dirs(dirs, n, err);
}

/* rmdir, retried while the kernel finishes tearing down exited tasks. */
static int rmdir_retry(const char *dir, struct atr_error *err)
{
    int64_t deadline = now_ns() + RMDIR_DEADLINE_NS;
    long nap = 50;
    while (rmdir(dir) < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno != EBUSY || now_ns() > deadline)
            return atr_error_set(err, "cannot remove cgroup %s: %s", dir, strerror(errno));
        nap_us(nap);
        nap = nap < 5000 ? nap * 2 : 10000;
    }
    return 0;
}

/* Removes dir and the groups below it, deepest first (processes killed). */
static int rmdir_tree(const char *dir, int depth, struct atr_error *err)
{
    int rc = 0;
    DIR *d = depth < TREE_DEPTH_MAX ? opendir(dir) : NULL;
    if (d) {
        char p[PATH_MAX];
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_type == DT_DIR && e->d_name[0] != '.' && path_join(p, dir, e->d_name) == 0 &&
                rmdir_tree(p, depth + 1, err) < 0)
                rc = -1;
        closedir(d);
    }
    if (rmdir_retry(dir, err) < 0)
        rc = -1;
    return rc;
}

int atr_cg_remove(const struct atr_cg_host *h, struct atr_cg *g, struct atr_error *err)
{
    const char *dirs[H_COUNT];
    int n = cg_dirs(g, dirs);
    int rc = kill_dirs(dirs, n, err);
    cg_close(g);
    for (int i = 0; i < n; i++)
        if (rmdir_tree(dirs[i], 0, rc < 0 ? NULL : err) < 0)
            rc = -1;
    return rc;
}

/* ---- stale roots ---- */

/* "atr-<digits>" -> pid, else 0. */
static pid_t root_pid(const char *name)
{
    if (strncmp(name, "atr-", 4) != 0 || !isdigit((unsigned char)name[4]))
        return 0;
    char *end;
    errno = 0;
    long v = strtol(name + 4, &end, 10);
    return *end || errno || v <= 0 || v > INT32_MAX ? 0 : (pid_t)v;
}

static int sweep_base(const char *base, const char *base0, unsigned *removed,
                      struct atr_error *err)
{
    DIR *d = opendir(base);
    if (!d)
        return 0;
    int rc = 0;
    char p[PATH_MAX];
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t pid = root_pid(e->d_name);
        if (e->d_type != DT_DIR || pid <= 0 || pid == getpid() || path_join(p, base, e->d_name) < 0 ||
            root_held(base0, e->d_name))
            continue;
        const char *one[1] = {p};
        if (kill_dirs(one, 1, err) < 0 || rmdir_tree(p, 0, err) < 0)
            rc = -1;
        else
            (*removed)++;
    }
    closedir(d);
    return rc;
}

int atr_cg_sweep_stale(const struct atr_cg_host *h, unsigned *removed, struct atr_error *err)
{
    struct atr_cg bases;
    memset(&bases, 0, sizeof bases);
    memcpy(bases.v2, h->v2, sizeof bases.v2);
    memcpy(bases.memory, h->memory, sizeof bases.memory);
    memcpy(bases.cpu, h->cpu, sizeof bases.cpu);
    memcpy(bases.cpuacct, h->cpuacct, sizeof bases.cpuacct);
    memcpy(bases.pids, h->pids, sizeof bases.pids);
    const char *dirs[H_COUNT];
    int n = cg_dirs(&bases, dirs);
    int rc = 0;
    *removed = 0;
    int guard = n ? base_lock(dirs[0]) : -1;
    for (int i = 0; i < n; i++)
        if (sweep_base(dirs[i], dirs[0], removed, err) < 0)
            rc = -1;
    if (guard >= 0)
        close(guard);
    return rc;
}
