/* guard.c - the watchdog behind runner/guard.h: a forked process that
 * blocks on a pipe and cleans up after atr when the pipe ends unannounced. */
#include "runner/guard.h"
#include "runner/workdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GUARD_CLEAN_EXIT ((int32_t)-1)
#define GUARD_GRACE_MS 2000        /* SIGTERM to SIGKILL when atr is gone */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void stop_group(pid_t pgid)
{
    if (pgid <= 0 || kill(-pgid, SIGTERM) < 0)
        return;
    for (long waited = 0; waited < GUARD_GRACE_MS; waited += 10) {
        if (kill(-pgid, 0) < 0 && errno == ESRCH)
            return;
        sleep_ms(10);
    }
    kill(-pgid, SIGKILL);
}

/* Removes "<base>/<kind>-<pid>-*" directories of this user, for kind
 * atr-browser (runner/browse.c) and atr-work (runner/replay.c: its
 * size-capped mount is detached first). Their owner is dead, so no lock
 * needs asking: the name carries its pid. */
static void remove_run_dirs(const char *base, pid_t pid)
{
    static const char *const kinds[] = {ATR_PROFILE_PREFIX, ATR_WORKDIR_PREFIX};
    DIR *d = base[0] ? opendir(base) : NULL;
    if (!d)
        return;
    char prefix[2][64], path[PATH_MAX];
    for (int k = 0; k < 2; k++)
        snprintf(prefix[k], sizeof prefix[k], "%s%ld-", kinds[k], (long)pid);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        bool ours = strncmp(e->d_name, prefix[0], strlen(prefix[0])) == 0 ||
                    strncmp(e->d_name, prefix[1], strlen(prefix[1])) == 0;
        if (!ours || snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= (int)sizeof path ||
            lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        atr_workdir_remove(path);
    }
    closedir(d);
}

/* Runs the cleanup command quietly, killed past ATR_GUARD_CLEANUP_S. */
static void run_cleanup(char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    for (long waited = 0; pid > 0; waited += 10) {
        if (waitpid(pid, NULL, WNOHANG) != 0)
            return;
        if (waited >= ATR_GUARD_CLEANUP_S * 1000L)
            kill(pid, SIGKILL);
        sleep_ms(10);
    }
}

/* The guard's life: a pipe, a pgid, and on EOF the clean-up. */
static void guard_main(int fd, const struct atr_cg_host *h, struct atr_cg *root, bool has_root,
                       const char *workdirs, pid_t atr_pid, char *const *cleanup)
{
    int32_t pgid = 0, word;
    for (;;) {
        ssize_t n = read(fd, &word, sizeof word);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof word)
            break;                        /* EOF: atr is gone */
        if (word == GUARD_CLEAN_EXIT)
            _exit(0);
        pgid = word;
    }
    stop_group(pgid);
    /* Before the groups go: a container's processes (and its conmon) are
     * in them, and an engine whose monitor was killed under it cannot
     * remove the container any more. */
    if (cleanup && cleanup[0])
        run_cleanup(cleanup);
    if (has_root) {
        struct atr_error ignored;
        atr_cg_remove(h, root, &ignored);
    }
    /* Once more: a container caught between states the first time (its
     * CLI killed mid-start, the engine's lock held by another run) is
     * removed now that nothing of it runs. */
    if (cleanup && cleanup[0])
        run_cleanup(cleanup);
    if (workdirs[0])
        remove_run_dirs(workdirs, atr_pid);
    _exit(0);
}

int atr_guard_start(struct atr_guard *g, const struct atr_cg_host *h, const struct atr_cg *root,
                    struct atr_error *err)
{
    return atr_guard_start_dirs(g, h, root, NULL, err);
}

int atr_guard_start_dirs(struct atr_guard *g, const struct atr_cg_host *h,
                         const struct atr_cg *root, const char *workdir_base,
                         struct atr_error *err)
{
    return atr_guard_start_cleanup(g, h, root, workdir_base, NULL, err);
}

int atr_guard_start_cleanup(struct atr_guard *g, const struct atr_cg_host *h,
                            const struct atr_cg *root, const char *workdir_base,
                            char *const *cleanup, struct atr_error *err)
{
    char workdirs[PATH_MAX] = "";
    if (workdir_base && snprintf(workdirs, sizeof workdirs, "%s", workdir_base) >= PATH_MAX)
        return atr_error_set(err, "guard: work directory path too long");
    pid_t atr_pid = getpid();
    memset(g, 0, sizeof *g);
    g->fd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return atr_error_set(err, "guard: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return atr_error_set(err, "guard: fork: %s", strerror(e));
    }
    if (pid == 0) {
        /* Out of atr's process group, so a Ctrl-C at the terminal reaches
         * atr (which tears down in order) but not the guard. */
        setpgid(0, 0);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        prctl(PR_SET_NAME, "atr-guard");
        close(p[1]);
        /* Hold nothing of atr's open: a log or result file, a socket. */
        int fd = p[0] == 3 ? 3 : dup3(p[0], 3, 0);
        if (fd < 0)
            _exit(1);
        syscall(SYS_close_range, 4U, ~0U, 0);
        struct atr_cg_host host = *h;
        struct atr_cg copy;
        if (root) {
            copy = *root;
            copy.v2_fd = -1;              /* closed above with the rest */
        }
        /* cleanup's strings are this copy of atr's memory: still there */
        guard_main(3, &host, &copy, root != NULL, workdirs, atr_pid, cleanup);
    }
    close(p[0]);
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

static void guard_send(struct atr_guard *g, int32_t word)
{
    if (g->fd < 0)
        return;
    ssize_t n;
    while ((n = write(g->fd, &word, sizeof word)) < 0 && errno == EINTR)
        ;
}

void atr_guard_watch(struct atr_guard *g, pid_t pgid)
{
    guard_send(g, (int32_t)pgid);
}

void atr_guard_stop(struct atr_guard *g)
{
    if (g->pid <= 0)
        return;
    guard_send(g, GUARD_CLEAN_EXIT);
    close(g->fd);
    g->fd = -1;
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    g->pid = 0;
}
