/* output.c - atomic file output through a temporary renamed on commit;
 * result folders through a temporary folder renamed on commit. */
#include "util/output.h"
#include "util/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OUT_BUF = 1 << 20, MAX_OPEN = 32 };

struct atr_output {
    int fd;
    int lock_fd;                 /* the temporary opened again, flock'ed: see sweep_stale */
    bool is_stdout;              /* or another non-file: written directly */
    char *path, *tmp;
    char *buf;                   /* allocated at the first write: outputs opened
                                    early to check their paths cost no memory */
    size_t len;
    int slot;
};

/* Temporaries a signal handler must remove: fixed storage, no malloc. */
static char open_tmps[MAX_OPEN][4096];
static volatile sig_atomic_t open_used[MAX_OPEN];

static int register_tmp(const char *tmp)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (!open_used[i] && strlen(tmp) < sizeof open_tmps[i]) {
            strcpy(open_tmps[i], tmp);
            open_used[i] = 1;
            return i;
        }
    return -1;
}

void atr_output_abort_all(void)
{
    for (int i = 0; i < MAX_OPEN; i++)
        if (open_used[i])
            unlink(open_tmps[i]);
}

static void output_free(struct atr_output *o)
{
    if (o->slot >= 0)
        open_used[o->slot] = 0;
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    free(o->path);
    free(o->tmp);
    free(o->buf);
    free(o);
}

/* Why the temporary beside path could not be made (errno e), naming the
 * directory: "No such file or directory" alone reads as if the output
 * were an input that is missing. */
static void why_not_created(const char *path, int e, struct atr_error *err)
{
    const char *slash = strrchr(path, '/');
    char *dir = !slash ? xstrdup(".") : slash == path ? xstrdup("/")
                                                      : xstrndup(path, (size_t)(slash - path));
    struct stat st;
    if (stat(dir, &st) < 0)
        atr_error_set(err, "%s: cannot write: directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        atr_error_set(err, "%s: cannot write: %s is not a directory", path, dir);
    else if (e == ENOENT)    /* the directory is there: its file system makes no files */
        atr_error_set(err, "%s: cannot write: %s takes no new files (creating a temporary "
                      "file there: %s)", path, dir, strerror(e));
    else
        atr_error_set(err, "%s: cannot write: creating a temporary file in %s: %s", path, dir,
                      strerror(e));
    free(dir);
}

/* Whether fd is still the file at path: a sweep may have unlinked it. */
static bool same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Temporaries of path whose writer died without removing them (SIGKILL,
 * a crash: no handler ran). A writer holds an flock on its temporary for
 * as long as it lives, and the kernel drops it when the process dies, so
 * a temporary we can lock is one nobody writes. A lock, not kill(pid, 0):
 * a pid says nothing across PID namespaces (containers) or once reused.
 * Only regular files named PATH.tmp.XXXXXX: result folders' temporaries
 * (atr_outdir) and other outputs' are left alone. */
static void sweep_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = !slash ? xstrdup(".") : xstrndup(path, (size_t)(slash - path) + 1);
    char *prefix = xasprintf("%s.tmp.", slash ? slash + 1 : path);
    size_t plen = strlen(prefix);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) != plen + 6)
            continue;
        char *tmp = xasprintf("%s%s", slash ? dir : "", e->d_name);
        int fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        /* same_file: the name may have been renamed away and made again
         * between our open and our lock. */
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, tmp))
            unlink(tmp);
        if (fd >= 0)
            close(fd);
        free(tmp);
    }
    if (d)
        closedir(d);
    free(prefix);
    free(dir);
}

/* Makes o's temporary and locks it for as long as o lives. The lock is on
 * a second open of the file, so that closing fd (and seeing its error)
 * before the rename leaves the temporary locked until it is renamed. A
 * sweep that locked the new file before us has unlinked it: make another. */
static int make_tmp(struct atr_output *o)
{
    for (int tries = 0; tries < 8; tries++) {
        free(o->tmp);
        o->tmp = xasprintf("%s.tmp.XXXXXX", o->path);
        o->fd = mkostemp(o->tmp, O_CLOEXEC);
        if (o->fd < 0)
            return -1;
        o->lock_fd = open(o->tmp, O_RDONLY | O_CLOEXEC);
        bool locked = o->lock_fd >= 0 && flock(o->lock_fd, LOCK_EX) == 0;
        if (locked && same_file(o->fd, o->tmp))
            return 0;
        int e = errno;
        if (!locked)
            unlink(o->tmp);      /* still ours: no sweep could lock it */
        if (o->lock_fd >= 0)
            close(o->lock_fd);
        o->lock_fd = -1;
        close(o->fd);
        if (!locked) {
            errno = e;
            return -1;
        }
    }
    errno = EAGAIN;
    return -1;
}

struct atr_output *atr_output_open(const char *path, struct atr_error *err)
{
    struct atr_output *o = xcalloc(1, sizeof *o);
    o->slot = -1;
    o->lock_fd = -1;
    o->path = xstrdup(path);
    if (strcmp(path, "-") == 0) {
        o->fd = 1;
        o->is_stdout = true;
        return o;
    }
    /* /dev/null, a FIFO, /dev/stdout: write straight to it. A temporary
     * renamed over it would replace the device or pipe with a file. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->fd = open(path, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0) {
            atr_error_set(err, "%s: %s", path, strerror(errno));
            output_free(o);
            return NULL;
        }
        o->is_stdout = true;     /* no temporary, nothing to rename */
        return o;
    }
    sweep_stale(path);
    if (make_tmp(o) < 0) {
        why_not_created(path, errno, err);
        output_free(o);
        return NULL;
    }
    /* mkostemp makes 0600; give the file the mode a plain create would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(o->fd, 0666 & ~mask);
    o->slot = register_tmp(o->tmp);
    return o;
}

static int flush_buf(struct atr_output *o, struct atr_error *err)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return atr_error_set(err, "%s: %s", o->path, strerror(errno));
        done += (size_t)n;
    }
    o->len = 0;
    return 0;
}

int atr_output_write(struct atr_output *o, const void *p, size_t n, struct atr_error *err)
{
    if (!o->buf)
        o->buf = xmalloc(OUT_BUF);
    if (o->len + n > OUT_BUF && flush_buf(o, err) < 0)
        return -1;
    if (n > OUT_BUF) {
        size_t saved = o->len;
        char *savedbuf = o->buf;
        o->buf = (char *)p;
        o->len = n;
        int rc = flush_buf(o, err);
        o->buf = savedbuf;
        o->len = saved;
        return rc;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return 0;
}

int atr_output_commit(struct atr_output *o, struct atr_error *err)
{
    int rc = flush_buf(o, err);
    if (o->is_stdout) {
        if (o->fd > 2)
            close(o->fd);
        output_free(o);
        return rc;
    }
    if (close(o->fd) < 0 && rc == 0)
        rc = atr_error_set(err, "%s: %s", o->path, strerror(errno));
    if (rc == 0 && rename(o->tmp, o->path) < 0)
        rc = atr_error_set(err, "%s: cannot write: renaming the finished temporary %s onto it: "
                           "%s", o->path, o->tmp, strerror(errno));
    if (rc < 0)
        unlink(o->tmp);
    output_free(o);
    return rc;
}

void atr_output_abort(struct atr_output *o)
{
    if (!o)
        return;
    if (!o->is_stdout) {
        close(o->fd);
        unlink(o->tmp);
    } else if (o->fd > 2) {
        close(o->fd);
    }
    output_free(o);
}

int atr_output_commit_all(struct atr_output **os, size_t n, struct atr_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (os[i])
            rc = flush_buf(os[i], err);
    for (size_t i = 0; i < n; i++) {
        if (rc < 0)
            atr_output_abort(os[i]);
        else if (os[i])
            rc = atr_output_commit(os[i], err);
        os[i] = NULL;
    }
    return rc;
}

int atr_output_write_file(const char *path, const void *data, size_t len,
                          struct atr_error *err)
{
    struct atr_output *o = atr_output_open(path, err);
    if (!o)
        return -1;
    if (atr_output_write(o, data ? data : "", len, err) < 0) {
        atr_output_abort(o);
        return -1;
    }
    return atr_output_commit(o, err);
}

/* ---- result folders ---- */

struct atr_outdir {
    char *dir;                   /* where the results go (a link resolved) */
    char *tmp;                   /* DIR.tmp.XXXXXX, beside it */
};

int atr_outdir_state(const char *dir, enum atr_outdir_state *st, struct atr_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) < 0) {
        if (errno != ENOENT)
            return atr_error_set(err, "%s: %s", dir, strerror(errno));
        *st = ATR_OUTDIR_ABSENT;
        return 0;
    }
    if (!S_ISDIR(sb.st_mode))
        return atr_error_set(err, "%s: exists and is not a directory", dir);
    DIR *d = opendir(dir);
    if (!d)
        return atr_error_set(err, "%s: %s", dir, strerror(errno));
    *st = ATR_OUTDIR_EMPTY;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            *st = ATR_OUTDIR_FULL;
            break;
        }
    closedir(d);
    return 0;
}

struct atr_outdir *atr_outdir_open(const char *dir, struct atr_error *err)
{
    char *real = realpath(dir, NULL);           /* a link to a folder: its target */
    struct atr_outdir *d = xcalloc(1, sizeof *d);
    d->dir = real ? real : xstrdup(dir);
    size_t n = strlen(d->dir);
    while (n > 1 && d->dir[n - 1] == '/')      /* "out/" */
        d->dir[--n] = '\0';
    d->tmp = xasprintf("%s.tmp.XXXXXX", d->dir);
    if (!mkdtemp(d->tmp)) {
        atr_error_set(err, "%s: %s", dir, strerror(errno));
        free(d->dir);
        free(d->tmp);
        free(d);
        return NULL;
    }
    /* mkdtemp makes 0700; give the folder the mode a plain mkdir would. */
    mode_t mask = umask(0);
    umask(mask);
    chmod(d->tmp, 0777 & ~mask);
    return d;
}

const char *atr_outdir_path(const struct atr_outdir *d)
{
    return d->tmp;
}

static void outdir_free(struct atr_outdir *d)
{
    free(d->dir);
    free(d->tmp);
    free(d);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* rename() replaces an empty directory but not a full one: the full one is
 * first renamed over an empty folder of a fresh name beside it. */
int atr_outdir_commit(struct atr_outdir *d, bool replace, struct atr_error *err)
{
    enum atr_outdir_state st;
    int rc = atr_outdir_state(d->dir, &st, err);
    if (rc == 0 && st == ATR_OUTDIR_FULL && !replace)
        rc = atr_error_set(err, "%s: exists and is not empty", d->dir);
    char *old = NULL;
    if (rc == 0 && st == ATR_OUTDIR_FULL) {
        old = xasprintf("%s.old.XXXXXX", d->dir);
        if (!mkdtemp(old) || rename(d->dir, old) < 0)
            rc = atr_error_set(err, "%s: moving the old results aside: %s", d->dir,
                               strerror(errno));
    }
    if (rc == 0 && rename(d->tmp, d->dir) < 0) {
        rc = atr_error_set(err, "%s: %s", d->dir, strerror(errno));
        if (old)
            rename(old, d->dir);
    }
    if (old) {
        if (rc == 0)
            remove_tree(old);
        else
            rmdir(old);                 /* the empty placeholder, if still there */
        free(old);
    }
    if (rc < 0 && err) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (the results are in %s)", d->tmp);
    }
    outdir_free(d);
    return rc;
}

void atr_outdir_abort(struct atr_outdir *d)
{
    if (!d)
        return;
    remove_tree(d->tmp);
    outdir_free(d);
}

char *atr_outdir_keep(struct atr_outdir *d)
{
    char *tmp = d->tmp;
    free(d->dir);
    free(d);
    return tmp;
}
