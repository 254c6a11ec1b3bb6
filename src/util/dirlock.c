/* dirlock.c - flock claims on directories (see dirlock.h). */
#include "util/dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

int atr_dirlock(const char *dir, bool wait)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    return fd;
}

bool atr_dirlock_held(const char *dir)
{
    int fd = atr_dirlock(dir, false);
    if (fd >= 0)
        close(fd);
    return fd < 0 && errno != ENOENT;
}
