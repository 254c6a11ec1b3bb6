/* test-guard.c - background processes (atr_spawn_start, _wait, _kill,
 * _group_alive) and the guard that stops a process group when its runner
 * dies (runner/guard.h), on real processes: a runner is a forked child of
 * the test that SIGKILLs itself. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/guard.h"
#include "runner/spawn.h"

extern char **environ;

static int temp_fd(char *path)
{
    strcpy(path, "/tmp/atr-test-guard-XXXXXX");
    const char *dir = getenv("TMPDIR");
    if (dir && strlen(dir) < 200)
        snprintf(path, 256, "%s/atr-test-guard-XXXXXX", dir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

static void start(const char *cmd, int out_fd, struct atr_spawn_proc *p)
{
    struct atr_spawn_opts o = {.command = cmd, .env = environ};
    struct atr_error err;
    assert_int_equal(atr_spawn_start(&o, out_fd, p, &err), 0);
    assert_true(p->pid > 0);
}

/* Polls until no process of the group is left (zombies included: init
 * reaps the orphans, which may take a second or two). */
static bool group_gone_within(pid_t pgid, int seconds)
{
    time_t until = time(NULL) + seconds;
    while (time(NULL) <= until) {
        if (kill(-pgid, 0) < 0 && errno == ESRCH)
            return true;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_output_and_exit(void **state)
{
    char path[256];
    int fd = temp_fd(path);
    struct atr_spawn_proc p;
    start("echo hello; echo oops >&2; exit 3", fd, &p);
    struct atr_spawn_result r;
    assert_int_equal(atr_spawn_wait(&p, 5000, &r), 1);
    assert_int_equal(r.exit_code, 3);
    assert_int_equal(r.term_signal, 0);
    char buf[64] = "";
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    assert_string_equal(buf, "hello\noops\n");
    atr_spawn_kill(&p, &r);               /* after the exit: closes, kills nothing */
    close(fd);
    unlink(path);
}

static void test_wait_and_term(void **state)
{
    struct atr_spawn_proc p;
    start("sleep 30", -1, &p);
    struct atr_spawn_result r;
    assert_int_equal(atr_spawn_wait(&p, 0, &r), 0);           /* still running */
    assert_int_equal(atr_spawn_wait(&p, 20, &r), 0);
    assert_true(atr_spawn_group_alive(&p));
    assert_int_equal(kill(-p.pid, SIGTERM), 0);
    assert_int_equal(atr_spawn_wait(&p, 5000, &r), 1);
    assert_int_equal(r.term_signal, SIGTERM);
    assert_true(group_gone_within(p.pid, 10));
    atr_spawn_kill(&p, &r);
}

/* A background child of the shell stays in the group after the shell has
 * gone; atr_spawn_kill takes it too. */
static void test_kill_takes_the_group(void **state)
{
    struct atr_spawn_proc p;
    start("sleep 30 & sleep 30; wait", -1, &p);
    struct atr_spawn_result r;
    atr_spawn_kill(&p, &r);
    assert_true(p.reaped);
    assert_int_equal(r.term_signal, SIGKILL);
    assert_true(group_gone_within(p.pid, 10));
}

/* A runner (a forked child) starts the guard and a server whose shell has
 * a background child, tells the guard, hands the pgid to the test and
 * dies of SIGKILL: the shell dies with it (PR_SET_PDEATHSIG), the guard
 * stops what is left of the group. */
static void test_guard_stops_group_when_runner_dies(void **state)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t runner = fork();
    assert_true(runner >= 0);
    if (runner == 0) {
        close(pfd[0]);
        struct atr_cg_host host = {.mode = ATR_CG_NONE};
        struct atr_guard g;
        struct atr_error err;
        if (atr_guard_start(&g, &host, NULL, &err) < 0)
            _exit(1);
        struct atr_spawn_opts o = {.command = "sleep 30 & wait", .env = environ};
        struct atr_spawn_proc p;
        if (atr_spawn_start(&o, -1, &p, &err) < 0)
            _exit(1);
        atr_guard_watch(&g, p.pid);
        /* the background sleep exists once the shell has forked it */
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
        if (write(pfd[1], &p.pid, sizeof p.pid) != (ssize_t)sizeof p.pid)
            _exit(1);
        kill(getpid(), SIGKILL);
    }
    close(pfd[1]);
    pid_t pgid = 0;
    assert_int_equal(read(pfd[0], &pgid, sizeof pgid), (ssize_t)sizeof pgid);
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(runner, &st, 0), runner);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_true(pgid > 0);
    assert_true(group_gone_within(pgid, 15));
}

/* The normal end: the guard leaves a watched group alone. */
static void test_guard_stop_touches_nothing(void **state)
{
    struct atr_cg_host host = {.mode = ATR_CG_NONE};
    struct atr_guard g;
    struct atr_error err;
    assert_int_equal(atr_guard_start(&g, &host, NULL, &err), 0);
    struct atr_spawn_proc p;
    start("sleep 30", -1, &p);
    atr_guard_watch(&g, p.pid);
    atr_guard_stop(&g);
    assert_int_equal(g.pid, 0);
    struct atr_spawn_result r;
    assert_int_equal(atr_spawn_wait(&p, 50, &r), 0);          /* not killed */
    atr_spawn_kill(&p, &r);
    assert_int_equal(r.term_signal, SIGKILL);
}

/* The cleanup command runs once the runner died (a SIGKILLed atr's
 * containers), not when it stops cleanly. */
static void test_guard_cleanup_runs_when_runner_dies(void **state)
{
    char mark[256], clean[272];
    int fd = temp_fd(mark);
    close(fd);
    unlink(mark);
    snprintf(clean, sizeof clean, "%s.clean", mark);
    pid_t runner = fork();
    assert_true(runner >= 0);
    if (runner == 0) {
        struct atr_cg_host host = {.mode = ATR_CG_NONE};
        struct atr_guard g;
        struct atr_error err;
        char *touch_clean[] = {"/bin/sh", "-c", "echo x > \"$0\"", clean, NULL};
        if (atr_guard_start_cleanup(&g, &host, NULL, NULL, touch_clean, &err) < 0)
            _exit(1);
        atr_guard_stop(&g);             /* clean exit: runs nothing */
        char *touch[] = {"/bin/sh", "-c", "echo x > \"$0\"", mark, NULL};
        if (atr_guard_start_cleanup(&g, &host, NULL, NULL, touch, &err) < 0)
            _exit(1);
        kill(getpid(), SIGKILL);
    }
    int st;
    assert_int_equal(waitpid(runner, &st, 0), runner);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    time_t until = time(NULL) + 15;
    while (access(mark, F_OK) < 0 && time(NULL) <= until) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(access(mark, F_OK), 0);
    assert_int_not_equal(access(clean, F_OK), 0);
    unlink(mark);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_and_exit),
        cmocka_unit_test(test_wait_and_term),
        cmocka_unit_test(test_kill_takes_the_group),
        cmocka_unit_test(test_guard_stops_group_when_runner_dies),
        cmocka_unit_test(test_guard_stop_touches_nothing),
        cmocka_unit_test(test_guard_cleanup_runs_when_runner_dies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
