/* dirlock.h - a process's claim on a directory it owns: an exclusive
 * flock, held open until the process dies (when the kernel drops it), so
 * a sweep can tell a live owner from a dead one across PID namespaces
 * and pid reuse, where kill(pid, 0) cannot. */
#ifndef ATR_UTIL_DIRLOCK_H
#define ATR_UTIL_DIRLOCK_H

#include <stdbool.h>

/* An O_DIRECTORY, close-on-exec fd of dir holding LOCK_EX (wait: block
 * until it is free, else fail at once with EWOULDBLOCK); -1 with errno.
 * The caller closes it to let go. Never follows a final symlink. */
int atr_dirlock(const char *dir, bool wait);

/* Whether some other open file holds dir's lock. Tests and lets go at
 * once; false when dir is gone, true when it cannot be opened (so a
 * sweep leaves what it cannot tell). */
bool atr_dirlock_held(const char *dir);

#endif
