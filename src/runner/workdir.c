/* workdir.c - atr_workdir_remove (workdir.h). */
#include "runner/workdir.h"
#include "util/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Clears the immutable and append-only flags of path (a step may have
 * run chattr +i), which block its removal or its children's. */
static void clear_flags(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    int fl;
    if (fd < 0)
        return;
    if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0 && (fl & (FS_IMMUTABLE_FL | FS_APPEND_FL))) {
        fl &= ~(FS_IMMUTABLE_FL | FS_APPEND_FL);
        ioctl(fd, FS_IOC_SETFLAGS, &fl);
    }
    close(fd);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    if (remove(path) == 0 || errno != EPERM)
        return 0;
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    clear_flags(path);
    clear_flags(parent);
    remove(path);
    return 0;
}

/* Detaches the mounts a step left at or below dir (as root, in our mount
 * namespace), last mounted first, so the removal never descends into a
 * file system that is not the work directory's. */
static void unmount_below(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return;
    char line[PATH_MAX + 512], mp[PATH_MAX], *pts[64];
    int n = 0;
    size_t len = strlen(dir);
    while (n < 64 && fgets(line, sizeof line, f))
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strncmp(mp, dir, len) == 0 &&
            (mp[len] == '/' || mp[len] == '\0'))
            pts[n++] = xstrdup(mp);
    fclose(f);
    while (n-- > 0) {
        umount2(pts[n], MNT_DETACH);
        free(pts[n]);
    }
}

int atr_workdir_remove(const char *dir)
{
    struct stat st;
    unmount_below(dir);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return lstat(dir, &st) == 0 ? -1 : 0;
}

