/* test-spawn.c - tool-step processes for real: exit codes, captured and
 * capped output, closed stdin, scrubbed environment, timeouts that kill
 * grandchildren, leftovers killed, the sandbox (PID, network, mount
 * namespaces, a busybox rootfs), CPU accounting, cgroup placement, and the
 * fork() fallback (this file includes spawn.c to reach its test hook). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/spawn.c"

#define HOG ATR_MEMHOG
static char *const test_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};

static struct atr_spawn_opts opts(const char *command)
{
    struct atr_spawn_opts o = {.command = command, .cwd = "/", .env = test_env,
                               .max_output = 1 << 20, .timeout_ms = 20000};
    return o;
}

/* Runs o; fails the test when it could not start. Caller frees r->output. */
static void run_ok(const struct atr_spawn_opts *o, struct atr_spawn_result *r)
{
    struct atr_error err = {""};
    if (atr_spawn_run(o, r, &err) < 0)
        fail_msg("%s: %s", o->command, err.msg);
    assert_non_null(r->output);
    assert_int_equal(r->output[r->output_len], '\0');
}

/* Output of a successful step (caller frees). */
static char *run_output(struct atr_spawn_opts o)
{
    struct atr_spawn_result r;
    run_ok(&o, &r);
    if (r.exit_code != 0)
        fail_msg("%s: exit %d: %s", o.command, r.exit_code, r.output);
    return r.output;
}

static int64_t mono_ms(void)
{
    return now_us() / 1000;
}

/* Alive = exists and is not a zombie (zombies wait for a reaper we do not
 * control; they run nothing). */
static bool pid_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z';
}

static void assert_dies(pid_t pid)
{
    int64_t end = mono_ms() + 5000;
    while (pid_alive(pid) && mono_ms() < end)
        poll(NULL, 0, 5);
    if (pid_alive(pid))
        fail_msg("pid %d still alive", (int)pid);
}

/* Every "LABEL PID" line of out; returns how many (at most max). */
static int find_pids(const char *out, const char *label, pid_t *pids, int max)
{
    int n = 0;
    size_t len = strlen(label);
    for (const char *p = out; p && *p && n < max; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (strncmp(p, label, len) == 0 && p[len] == ' ')
            pids[n++] = (pid_t)atoi(p + len + 1);
    return n;
}

static void test_exit_codes(void **state)
{
    static const struct { const char *cmd; int code, sig; } cases[] = {
        {"exit 0", 0, 0}, {"exit 3", 3, 0}, {"kill -9 $$", 137, 9}, {"kill -TERM $$", 143, 15},
        {"no-such-command-atr", 127, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct atr_spawn_opts o = opts(cases[i].cmd);
        struct atr_spawn_result r;
        run_ok(&o, &r);
        assert_int_equal(r.exit_code, cases[i].code);
        assert_int_equal(r.term_signal, cases[i].sig);
        assert_false(r.timed_out);
        assert_true(r.wall_us > 0);
        free(r.output);
    }
}

static void test_output_capture(void **state)
{
    struct atr_spawn_opts o = opts("printf hello; printf ' world' >&2");
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_string_equal(r.output, "hello world");
    assert_int_equal(r.output_bytes, 11);
    assert_int_equal(r.output_len, 11);
    assert_false(r.output_truncated);
    free(r.output);
}

static void test_output_truncation(void **state)
{
    struct atr_spawn_opts o = opts("head -c 300000 /dev/zero | tr '\\0' x");
    o.max_output = 1000;
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.output_bytes, 300000);
    assert_int_equal(r.output_len, 1000);
    assert_true(r.output_truncated);
    assert_int_equal(strspn(r.output, "x"), 1000);
    free(r.output);
    /* Exactly max_output bytes: kept whole, not truncated. */
    o.command = "head -c 1000 /dev/zero | tr '\\0' y";
    run_ok(&o, &r);
    assert_int_equal(r.output_bytes, 1000);
    assert_int_equal(r.output_len, 1000);
    assert_false(r.output_truncated);
    free(r.output);
    /* Nothing kept, everything counted. */
    o.max_output = 0;
    run_ok(&o, &r);
    assert_int_equal(r.output_bytes, 1000);
    assert_int_equal(r.output_len, 0);
    assert_true(r.output_truncated);
    free(r.output);
}

static void test_stdin_closed(void **state)
{
    struct atr_spawn_opts o = opts("cat; echo rc=$?");
    o.timeout_ms = 10000;
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_false(r.timed_out);
    assert_string_equal(r.output, "rc=0\n");
    assert_true(r.wall_us < 5000000);
    free(r.output);
}

static void test_env_scrubbed(void **state)
{
    setenv("ATR_SPAWN_SECRET", "leak", 1);
    char *const env[] = {"PATH=/usr/bin:/bin", "FOO=bar baz", NULL};
    struct atr_spawn_opts o = opts("env");
    o.env = env;
    char *out = run_output(o);
    assert_non_null(strstr(out, "FOO=bar baz\n"));
    assert_non_null(strstr(out, "PATH=/usr/bin:/bin\n"));
    assert_null(strstr(out, "ATR_SPAWN_SECRET"));
    /* Only what was passed, plus what sh itself exports (PWD). */
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "FOO=", 4) && strncmp(line, "PATH=", 5) && strncmp(line, "PWD=", 4))
            fail_msg("unexpected variable: %s", line);
    free(out);
    unsetenv("ATR_SPAWN_SECRET");
}

static void test_empty_env(void **state)
{
    struct atr_spawn_opts o = opts("echo \"[$FOO]\"");
    o.env = NULL;
    char *out = run_output(o);
    assert_string_equal(out, "[]\n");
    free(out);
}

static void test_cwd(void **state)
{
    char dir[] = "/tmp/atr-spawn-cwd-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct atr_spawn_opts o = opts("pwd");
    o.cwd = dir;
    char *out = run_output(o);
    char want[64];
    snprintf(want, sizeof want, "%s\n", dir);
    assert_string_equal(out, want);
    free(out);
    rmdir(dir);
}

static void test_missing_cwd(void **state)
{
    struct atr_spawn_opts o = opts("true");
    o.cwd = "/nonexistent/atr-spawn";
    struct atr_spawn_result r;
    struct atr_error err = {""};
    assert_int_equal(atr_spawn_run(&o, &r, &err), -1);
    assert_int_equal(r.exit_code, -1);
    assert_null(r.output);
    assert_string_equal(err.msg, "spawn: chdir /nonexistent/atr-spawn: No such file or directory");
}

static void test_bad_opts(void **state)
{
    struct atr_spawn_opts o = opts("true");
    o.rootfs = "/";
    struct atr_spawn_result r;
    struct atr_error err = {""};
    assert_int_equal(atr_spawn_run(&o, &r, &err), -1);
    assert_string_equal(err.msg, "spawn: a rootfs, tmpdir or bind needs the sandbox");
}

/* The sandbox hides the host's /tmp, where a build directory may be (a
 * fresh clone in mktemp -d): sandboxed steps that run HOG get its folder. */
static void bind_hog(struct atr_spawn_opts *o)
{
    static char dir[PATH_MAX];
    static const char *binds[1] = {dir};
    snprintf(dir, sizeof dir, "%s", HOG);
    *strrchr(dir, '/') = '\0';
    o->binds = binds;
    o->n_binds = 1;
}

/* Timeout: the step, its children and grandchildren all die, whether the
 * tree is a process group (no sandbox) or a PID namespace (sandbox). */
static void check_timeout(bool sandbox)
{
    struct atr_spawn_opts o = opts(HOG " -g 2 -s 60000 & wait");
    o.timeout_ms = 300;
    o.sandbox = sandbox;
    if (sandbox)
        bind_hog(&o);
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_true(r.timed_out);
    assert_int_equal(r.exit_code, 128 + SIGKILL);
    assert_int_equal(r.term_signal, SIGKILL);
    assert_true(r.wall_us >= 300000 && r.wall_us < 5000000);
    pid_t pids[2];
    assert_int_equal(find_pids(r.output, "child", pids, 2), 2);
    if (!sandbox) {   /* sandboxed pids are namespace-local: checked via output only */
        assert_dies(pids[0]);
        assert_dies(pids[1]);
    }
    free(r.output);
}

static void test_timeout_kills_tree(void **state)
{
    check_timeout(false);
}

static void test_background_killed(void **state)
{
    struct atr_spawn_opts o = opts(HOG " -b");
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 0);
    assert_false(r.timed_out);
    pid_t bg;
    assert_int_equal(find_pids(r.output, "bg", &bg, 1), 1);
    assert_dies(bg);
    free(r.output);
}

static void test_cpu_time(void **state)
{
    struct atr_spawn_opts o = opts(HOG " -c 300");
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 0);
    /* 300 ms of CPU: within 10% of user + system, user dominating (the
     * kernel splits the two by ticks: a loaded host moves ~20% of a spin
     * into system time, so no tighter bound on the split). */
    int64_t cpu = r.cpu_user_us + r.cpu_sys_us;
    if (cpu < 270000 || cpu > 330000 || r.cpu_user_us < 2 * r.cpu_sys_us)
        fail_msg("cpu user %lld sys %lld us, want ~300000", (long long)r.cpu_user_us,
                 (long long)r.cpu_sys_us);
    free(r.output);
    /* The same spin in a forked child is still counted (waited for). */
    o.command = HOG " -f -c 300";
    run_ok(&o, &r);
    cpu = r.cpu_user_us + r.cpu_sys_us;
    if (cpu < 270000 || cpu > 330000)
        fail_msg("forked: cpu %lld us, want ~300000", (long long)cpu);
    free(r.output);
}

static void test_rss(void **state)
{
    struct atr_spawn_opts o = opts(HOG " -m 64");
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 0);
    if (r.ru_maxrss_kb < 64 * 1024 || r.ru_maxrss_kb > 100 * 1024)
        fail_msg("ru_maxrss %lld KiB, want ~65536", (long long)r.ru_maxrss_kb);
    free(r.output);
}

/* ---- watch hook and kill_all --------------------------------------------- */

struct watch_count {
    int ticks, ready, fd;
    bool kill_all;
};

static void on_watch(void *ctx, bool fd_ready)
{
    struct watch_count *c = ctx;
    if (fd_ready) {
        char b;
        c->ready++;
        if (read(c->fd, &b, 1) != 1)
            fail_msg("watch fd not readable");
    } else {
        c->ticks++;
    }
    if (c->kill_all && c->ticks == 2)
        atr_spawn_kill_all();
}

static void test_watch(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "x", 1), 1);
    struct watch_count c = {.fd = p[0]};
    struct atr_spawn_watch w = {.fd = p[0], .events = POLLIN, .tick_ms = 20, .fn = on_watch,
                                .ctx = &c};
    struct atr_spawn_opts o = opts("sleep 0.3");
    o.watch = &w;
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(c.ready, 1);   /* one byte: ready once */
    /* Ticks come at most every 20 ms of the run's own wall time (a loaded
     * machine stretches the run, so no bound is taken from the 300 ms),
     * and at least one came. */
    int64_t most = r.wall_us / 20000 + 2;
    if (c.ticks < 1 || c.ticks > most)
        fail_msg("%d ticks of 20 ms in %lld us (at most %lld)", c.ticks, (long long)r.wall_us,
                 (long long)most);
    free(r.output);
    close(p[0]);
    close(p[1]);
}

static void test_kill_all(void **state)
{
    struct watch_count c = {.fd = -1, .kill_all = true};
    struct atr_spawn_watch w = {.fd = -1, .tick_ms = 10, .fn = on_watch, .ctx = &c};
    struct atr_spawn_opts o = opts("sleep 30");
    o.watch = &w;
    struct atr_spawn_result r;
    run_ok(&o, &r);
    assert_int_equal(r.exit_code, 128 + SIGKILL);
    assert_false(r.timed_out);
    assert_true(r.wall_us < 5000000);
    free(r.output);
    for (int i = 0; i < SPAWN_SLOTS; i++)   /* reaped children leave the table */
        assert_int_equal(atomic_load(&live_pids[i]), 0);
}

/* ---- sandbox ------------------------------------------------------------ */

static bool can_sandbox(void)
{
    static int ok = -1;
    if (ok < 0) {
        struct atr_spawn_opts o = opts("true");
        o.sandbox = true;
        struct atr_spawn_result r;
        struct atr_error err;
        ok = atr_spawn_run(&o, &r, &err) == 0 && r.exit_code == 0;
        free(r.output);
        if (!ok)
            fprintf(stderr, "  skipped: no namespaces here (%s)\n", err.msg);
    }
    return ok;
}

/* The up-front probe (atr replay tools checks it before writing
 * anything) agrees with what a sandboxed step finds, and says why not. */
static void test_probe_sandbox(void **state)
{
    (void)state;
    struct atr_error err;
    int rc = atr_spawn_probe_sandbox(false, &err);
    assert_int_equal(rc == 0, can_sandbox());
    if (rc < 0)
        assert_non_null(strstr(err.msg, "network namespaces are refused (unshare: "));
}

static void test_sandbox_pid1(void **state)
{
    if (!can_sandbox())
        skip();
    struct atr_spawn_opts o = opts("echo $$; ls /proc | grep -c '^[0-9]'");
    o.sandbox = true;
    char *out = run_output(o);
    /* PID 1, and /proc shows this namespace only: sh and ls/grep. */
    assert_int_equal(strncmp(out, "1\n", 2), 0);
    int procs = atoi(out + 2);
    if (procs < 1 || procs > 4)
        fail_msg("%d processes visible in the sandbox", procs);
    free(out);
}

/* Interface names listed in /proc/net/dev text (after the 2 header lines). */
static int count_ifaces(const char *text, bool *only_lo)
{
    int n = 0;
    *only_lo = true;
    const char *p = strchr(text, '\n');
    p = p ? strchr(p + 1, '\n') : NULL;
    for (; p && p[1]; p = strchr(p + 1, '\n')) {
        const char *name = p + 1 + strspn(p + 1, " ");
        n++;
        if (strncmp(name, "lo:", 3) != 0)
            *only_lo = false;
    }
    return n;
}

static void test_sandbox_network(void **state)
{
    if (!can_sandbox())
        skip();
    struct atr_spawn_opts o = opts("cat /proc/net/dev");
    o.sandbox = true;
    char *out = run_output(o);
    bool only_lo;
    assert_int_equal(count_ifaces(out, &only_lo), 1);
    assert_true(only_lo);
    free(out);
    /* lo is up (ip asks the namespace over netlink; /sys is the host's). */
    if (access("/usr/sbin/ip", X_OK) == 0) {
        o.command = "/usr/sbin/ip -o link show lo";
        out = run_output(o);
        if (!strstr(out, ",UP"))
            fail_msg("lo is down: %s", out);
        free(out);
    }
    /* allow_network: the host's interfaces. */
    FILE *f = fopen("/proc/net/dev", "r");
    char host[8192];
    size_t n = fread(host, 1, sizeof host - 1, f);
    fclose(f);
    host[n] = '\0';
    o.command = "cat /proc/net/dev";
    o.allow_network = true;
    out = run_output(o);
    bool host_only_lo;
    assert_int_equal(count_ifaces(out, &only_lo), count_ifaces(host, &host_only_lo));
    free(out);
}

/* The host's root is read-only and its /tmp private; a bound path is
 * writable (what the step writes lands there, as host root through the
 * idmapped mount); mounting is refused. */
static void test_sandbox_mounts(void **state)
{
    if (!can_sandbox())
        skip();
    char dir[] = "/tmp/atr-spawn-mnt-XXXXXX", hidden[] = "/tmp/atr-spawn-hid-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_non_null(mkdtemp(hidden));
    char file[64], cmd[1024], inner[80];
    snprintf(file, sizeof file, "%s/host-file", dir);
    FILE *f = fopen(file, "w");
    fputs("from the host\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cat %s && echo in > %s/inner && ls %s && test ! -e %s && "
             "! touch /etc/atr-spawn-probe 2>/dev/null && ! mount -t tmpfs atr-test %s 2>/dev/null && "
             "echo $(id -u) > /tmp/t && cat /tmp/t",
             file, dir, dir, hidden, dir);
    struct atr_spawn_opts o = opts(cmd);
    o.sandbox = true;
    const char *binds[] = {dir};
    o.binds = binds;
    o.n_binds = 1;
    char *out = run_output(o);
    assert_string_equal(out, "from the host\nhost-file\ninner\n0\n");
    free(out);
    snprintf(inner, sizeof inner, "%s/inner", dir);
    struct stat st;
    assert_int_equal(stat(inner, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(access("/etc/atr-spawn-probe", F_OK), -1);
    FILE *mi = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    while (fgets(line, sizeof line, mi))
        assert_null(strstr(line, dir));
    fclose(mi);
    unlink(inner);
    unlink(file);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(rmdir(hidden), 0);
}

static void test_sandbox_timeout(void **state)
{
    if (!can_sandbox())
        skip();
    check_timeout(true);
}

/* A background process inside the namespace dies with PID 1; checked from
 * the host through the pid the namespace's /proc does not show: the
 * process's host pid is found from a marker in its command line. */
static void test_sandbox_background(void **state)
{
    if (!can_sandbox())
        skip();
    struct atr_spawn_opts o = opts("sleep 987.654 & echo started");
    o.sandbox = true;
    char *out = run_output(o);
    assert_string_equal(out, "started\n");
    free(out);
    int64_t end = mono_ms() + 5000;
    for (bool found = true; found;) {
        found = false;
        DIR *d = opendir("/proc");
        for (struct dirent *e; (e = readdir(d));) {
            char path[300], cmdline[256] = "";
            snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
            fclose(f);
            if (n > 6 && memcmp(cmdline, "sleep", 6) == 0 && strcmp(cmdline + 6, "987.654") == 0 &&
                pid_alive(atoi(e->d_name)))
                found = true;
        }
        closedir(d);
        if (found && mono_ms() > end)
            fail_msg("the background sleep outlived its sandbox");
        if (found)
            poll(NULL, 0, 5);
    }
}

/* ---- rootfs --------------------------------------------------------------- */

static int write_busybox_root(char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/bin", dir);
    if (mkdir(path, 0755) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/bin/busybox", dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp /bin/busybox %s", path);
    if (system(cmd) != 0)
        return -1;
    static const char *const links[] = {"sh", "echo", "cat", "ls"};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(path, sizeof path, "%s/bin/%s", dir, links[i]);
        if (symlink("busybox", path) < 0)
            return -1;
    }
    return 0;
}

static void test_rootfs_busybox(void **state)
{
    if (access("/bin/busybox", X_OK) != 0) {
        fprintf(stderr, "  skipped: /bin/busybox missing (install busybox-static)\n");
        skip();
    }
    if (!can_sandbox())
        skip();
    char dir[] = "/tmp/atr-spawn-root-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(write_busybox_root(dir), 0);
    assert_int_equal(access("/out", F_OK), -1);
    struct atr_spawn_opts o = opts("echo hi > /out; cat /out; echo $$; ls /dev");
    o.sandbox = true;
    o.rootfs = dir;
    o.env = (char *const[]){"PATH=/bin", NULL};
    char *out = run_output(o);
    assert_string_equal(out, "hi\n1\nfd\nfull\nnull\nrandom\nshm\nstderr\nstdin\nstdout\n"
                             "tty\nurandom\nzero\n");
    free(out);
    assert_int_equal(access("/out", F_OK), -1);   /* written inside the rootfs */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test \"$(cat %s/out)\" = hi && rm -rf %s", dir, dir);
    assert_int_equal(system(cmd), 0);
    /* A rootfs without /bin/sh: a clear error. */
    char empty[] = "/tmp/atr-spawn-root-XXXXXX";
    assert_non_null(mkdtemp(empty));
    o.rootfs = empty;
    struct atr_spawn_result r;
    struct atr_error err = {""};
    assert_int_equal(atr_spawn_run(&o, &r, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "spawn: exec /bin/sh %s: No such file or directory", empty);
    assert_string_equal(err.msg, want);
    snprintf(cmd, sizeof cmd, "rm -rf %s", empty);
    assert_int_equal(system(cmd), 0);
}

/* ---- the fork() fallback --------------------------------------------------- */

static void test_fork_fallback(void **state)
{
    for (int mode = 1; mode <= 2; mode++) {
        spawn_force_fork = mode;
        struct atr_spawn_opts o = opts("echo out; exit 5");
        struct atr_spawn_result r;
        run_ok(&o, &r);
        assert_int_equal(r.exit_code, 5);
        assert_string_equal(r.output, "out\n");
        free(r.output);
        check_timeout(false);
        o.command = HOG " -b";
        run_ok(&o, &r);
        pid_t bg;
        assert_int_equal(find_pids(r.output, "bg", &bg, 1), 1);
        assert_dies(bg);
        free(r.output);
        if (can_sandbox()) {
            o.command = "echo $$; cat /proc/net/dev | grep -c :; exit 7";
            o.sandbox = true;
            run_ok(&o, &r);
            assert_string_equal(r.output, "1\n1\n");
            assert_int_equal(r.exit_code, 7);
            free(r.output);
            check_timeout(true);
        }
        spawn_force_fork = 0;
    }
}

/* ---- real cgroups ---------------------------------------------------------- */

struct cg_fixture {
    struct atr_cg_host host;
    struct atr_cg root, step;
    bool have_root, have_step;
};

static int cg_setup(void **state)
{
    static struct cg_fixture fx;
    memset(&fx, 0, sizeof fx);
    fx.root.v2_fd = fx.step.v2_fd = -1;
    *state = &fx;
    struct atr_error err;
    if (atr_cg_detect(&fx.host, NULL, NULL, "", &err) < 0 || fx.host.mode == ATR_CG_NONE) {
        fprintf(stderr, "  no cgroups here: cgroup cases skipped\n");
        return 0;
    }
    if (atr_cg_root(&fx.host, &fx.root, &err) < 0) {
        fprintf(stderr, "  cgroup root: %s: cgroup cases skipped\n", err.msg);
        return 0;
    }
    fx.have_root = true;
    if (atr_cg_create(&fx.host, &fx.root, "spawn-test", &fx.step, &err) < 0)
        fprintf(stderr, "  cgroup: %s\n", err.msg);
    else
        fx.have_step = true;
    return 0;
}

static int cg_teardown(void **state)
{
    struct cg_fixture *fx = *state;
    struct atr_error err;
    if (fx->have_step && atr_cg_remove(&fx->host, &fx->step, &err) < 0)
        fprintf(stderr, "  remove step group: %s\n", err.msg);
    if (fx->have_root && atr_cg_remove(&fx->host, &fx->root, &err) < 0)
        fprintf(stderr, "  remove root group: %s\n", err.msg);
    return 0;
}

/* The step's own /proc/self/cgroup names the group in every hierarchy. */
static void check_placement(const struct cg_fixture *fx, const char *out)
{
    const char *dirs[] = {fx->step.memory, fx->step.pids, fx->step.v2};
    const char *bases[] = {fx->host.memory, fx->host.pids, fx->host.v2};
    for (int i = 0; i < 3; i++) {
        if (!dirs[i][0])
            continue;
        /* The line shows the path below the hierarchy's mount; the group's
         * path ends with it, so match the last two components. */
        const char *tail = strstr(dirs[i], "/atr-");
        assert_non_null(tail);
        if (!strstr(out, tail))
            fail_msg("%s (base %s) not in:\n%s", tail, bases[i], out);
    }
}

static void test_cgroup_step(void **state)
{
    struct cg_fixture *fx = *state;
    if (!fx->have_step)
        skip();
    for (int sandbox = 0; sandbox <= 1; sandbox++) {
        if (sandbox && !can_sandbox())
            break;
        struct atr_spawn_opts o = opts("cat /proc/self/cgroup");
        o.host = &fx->host;
        o.cg = &fx->step;
        o.sandbox = sandbox;
        char *out = run_output(o);
        if (sandbox)   /* its own cgroup namespace, rooted at its group */
            for (const char *l = out; *l; l = strchr(l, '\n') + 1)
                assert_int_equal(strncmp(strchr(l, '\n') - 2, ":/", 2), 0);
        else
            check_placement(fx, out);
        free(out);
        /* Timeout with a cgroup: the whole group is killed. */
        o.command = HOG " -g 3 -s 60000";
        o.timeout_ms = 300;
        if (sandbox)
            bind_hog(&o);
        struct atr_spawn_result r;
        run_ok(&o, &r);
        assert_true(r.timed_out);
        assert_int_equal(r.exit_code, 137);
        if (!sandbox) {
            pid_t pids[3];
            assert_int_equal(find_pids(r.output, "child", pids, 3), 3);
            for (int i = 0; i < 3; i++)
                assert_dies(pids[i]);
        }
        free(r.output);
        struct atr_error err;
        assert_int_equal(atr_cg_kill(&fx->host, &fx->step, &err), 0);
        /* A group killed through cgroup.kill still takes new steps (6.x
         * kernels kill children cloned into such a group: worked around). */
        o.command = "echo again";
        o.timeout_ms = 20000;
        out = run_output(o);
        assert_string_equal(out, "again\n");
        free(out);
    }
}

/* The fork() fallback joins v2 from the child too. */
static void test_cgroup_fork_fallback(void **state)
{
    struct cg_fixture *fx = *state;
    if (!fx->have_step)
        skip();
    spawn_force_fork = 1;
    struct atr_spawn_opts o = opts("cat /proc/self/cgroup");
    o.host = &fx->host;
    o.cg = &fx->step;
    char *out = run_output(o);
    spawn_force_fork = 0;
    check_placement(fx, out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_output_capture),
        cmocka_unit_test(test_output_truncation),
        cmocka_unit_test(test_stdin_closed),
        cmocka_unit_test(test_env_scrubbed),
        cmocka_unit_test(test_empty_env),
        cmocka_unit_test(test_cwd),
        cmocka_unit_test(test_missing_cwd),
        cmocka_unit_test(test_bad_opts),
        cmocka_unit_test(test_timeout_kills_tree),
        cmocka_unit_test(test_background_killed),
        cmocka_unit_test(test_cpu_time),
        cmocka_unit_test(test_rss),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_kill_all),
        cmocka_unit_test(test_probe_sandbox),
        cmocka_unit_test(test_sandbox_pid1),
        cmocka_unit_test(test_sandbox_network),
        cmocka_unit_test(test_sandbox_mounts),
        cmocka_unit_test(test_sandbox_timeout),
        cmocka_unit_test(test_sandbox_background),
        cmocka_unit_test(test_rootfs_busybox),
        cmocka_unit_test(test_fork_fallback),
    };
    const struct CMUnitTest cg_tests[] = {
        cmocka_unit_test(test_cgroup_step),
        cmocka_unit_test(test_cgroup_fork_fallback),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("spawn-cgroup", cg_tests, cg_setup, cg_teardown);
}
