/* test-cgroup.c - cgroup detection on fixture hosts (v2, hybrid, v1,
 * none), the stat parsers, and real groups on this host: limits, peak
 * memory, OOM kills, killing a tree, removal and the stale-root sweep.
 *
 * Every group the real tests make lives under "atr-<our pid>" or one of
 * the fake roots below; the per-test teardown removes all of them with
 * its own code (not the code under test), kills what is left in them and
 * reaps our children, so a failed assertion leaves nothing behind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/cgroup.h"

#define FIX ATR_TEST_DATA "/cgroup"
#define MIB (1024 * 1024)

static struct atr_cg_host host;      /* the real host, detected once */
static bool host_ok;                 /* real groups can be made here */
static pid_t fake_pids[4];           /* fake roots the sweep test makes */
static pid_t holder_pid;             /* lock_holder's, killed by teardown */

/* ---- helpers independent of the code under test ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void read_text(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

static long long read_ll(const char *dir, const char *name)
{
    char buf[64];
    read_text(dir, name, buf, sizeof buf);
    return strtoll(buf, NULL, 10);
}

static bool have_swap(void)
{
    FILE *f = fopen("/proc/swaps", "r");
    int lines = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        lines += c == '\n';
    if (f)
        fclose(f);
    return lines > 1;
}

static bool dir_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Kills everything in dir and below, then removes it, deepest first. */
static void purge(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[PATH_MAX * 2];
    while ((e = readdir(d)))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            purge(p);
        }
    closedir(d);
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    for (int64_t end = now_ms() + 2000; rmdir(dir) < 0 && errno == EBUSY && now_ms() < end;) {
        FILE *f = fopen(p, "r");
        long pid;
        while (f && fscanf(f, "%ld", &pid) == 1)
            if (pid != getpid())
                kill((pid_t)pid, SIGKILL);
        if (f)
            fclose(f);
        usleep(1000);
    }
}

static const char *base_of(int i)
{
    const char *b[] = {host.v2, host.memory, host.cpu, host.cpuacct, host.pids};
    return b[i];
}

static void purge_root(pid_t pid)
{
    char p[PATH_MAX * 2];
    for (int i = 0; i < 5; i++)
        if (base_of(i)[0]) {
            snprintf(p, sizeof p, "%s/atr-%ld", base_of(i), (long)pid);
            purge(p);
        }
}

static int teardown(void **state)
{
    (void)state;
    if (!host_ok)
        return 0;
    purge_root(getpid());
    for (int i = 0; i < 4; i++)
        if (fake_pids[i])
            purge_root(fake_pids[i]);
    memset(fake_pids, 0, sizeof fake_pids);
    if (holder_pid > 0 && kill(holder_pid, SIGKILL) == 0)
        waitpid(holder_pid, NULL, 0);
    holder_pid = 0;
    /* reap what the test forked (and, as subreaper, their orphans) */
    for (int64_t end = now_ms() + 2000; now_ms() < end;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r < 0)
            break;
        if (r == 0)
            usleep(1000);
    }
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    struct atr_error err;
    assert_int_equal(atr_cg_detect(&host, NULL, NULL, "", &err), 0);
    host_ok = geteuid() == 0 && host.mode != ATR_CG_NONE;
    /* orphaned grandchildren come back to us, so the tests can reap them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return 0;
}

#define NEED_HOST()                                                                 \
    do {                                                                            \
        if (!host_ok) {                                                             \
            print_message("skipped: no usable cgroups or not root (%s)\n", host.note); \
            skip();                                                                 \
        }                                                                           \
    } while (0)

static void make_root_child(struct atr_cg *root, struct atr_cg *child, const char *name)
{
    struct atr_error err;
    if (atr_cg_root(&host, root, &err) < 0)
        fail_msg("%s", err.msg);
    if (atr_cg_create(&host, root, name, child, &err) < 0)
        fail_msg("%s", err.msg);
}

/* ---- fixture hosts ---- */

static void detect_fixture(const char *name, const char *root, struct atr_cg_host *h)
{
    char mi[PATH_MAX], cg[PATH_MAX];
    snprintf(mi, sizeof mi, FIX "/%s/mountinfo", name);
    snprintf(cg, sizeof cg, FIX "/%s/cgroup", name);
    struct atr_error err;
    assert_int_equal(atr_cg_detect(h, mi, cg, root, &err), 0);
}

static void test_detect_v2(void **state)
{
    (void)state;
    struct atr_cg_host h;
    detect_fixture("v2", FIX "/v2", &h);
    assert_int_equal(h.mode, ATR_CG_V2);
    assert_string_equal(h.v2, FIX "/v2/sys/fs/cgroup/system.slice/atr.service");
    assert_true(h.v2_memory && h.v2_cpu && h.v2_pids);
    assert_true(h.psi && h.kill_file);
    assert_string_equal(h.memory, "");
    assert_string_equal(h.cpu, "");
    assert_string_equal(h.pids, "");
    char on[64];
    read_text(h.v2, "cgroup.subtree_control", on, sizeof on);
    assert_string_equal(on, "cpu memory pids");     /* already on: not rewritten */
    assert_non_null(strstr(h.note, "controllers memory cpu pids"));
    assert_string_equal(atr_cg_mode_name(h.mode), "v2");
}

/* A scratch v2 host: base with the controllers on offer; subtree_control
 * a file (writable: enabling works) or a directory (the write fails like
 * EBUSY does on a base that holds processes). */
static void scratch_v2(char *root, bool busy)
{
    strcpy(root, "/tmp/atr-cg-fixture-XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "mkdir -p %s/sys/fs/cgroup/system.slice/atr.service", root);
    assert_int_equal(system(p), 0);
    snprintf(p, sizeof p, "%s/sys/fs/cgroup/system.slice/atr.service/cgroup.controllers", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("cpuset cpu io memory pids\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/sys/fs/cgroup/system.slice/atr.service/cgroup.subtree_control", root);
    if (busy)
        assert_int_equal(mkdir(p, 0755), 0);
    else
        fclose(fopen(p, "w"));
}

static void rm_scratch(const char *root)
{
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "rm -rf %s", root);
    assert_int_equal(system(p), 0);
}

static void test_detect_v2_enables_controllers(void **state)
{
    (void)state;
    char root[64];
    scratch_v2(root, false);
    struct atr_cg_host h;
    detect_fixture("v2", root, &h);
    assert_int_equal(h.mode, ATR_CG_V2);
    assert_true(h.v2_memory && h.v2_cpu && h.v2_pids);
    char on[64];
    read_text(h.v2, "cgroup.subtree_control", on, sizeof on);
    rm_scratch(root);
    assert_string_equal(on, "+memory +cpu +pids");
}

static void test_detect_v2_cannot_enable(void **state)
{
    (void)state;
    char root[64];
    scratch_v2(root, true);
    struct atr_cg_host h;
    detect_fixture("v2", root, &h);
    rm_scratch(root);
    assert_int_equal(h.mode, ATR_CG_V2);
    assert_false(h.v2_memory || h.v2_cpu || h.v2_pids);
    assert_false(h.psi);
    assert_non_null(strstr(h.note, "cannot enable its controllers"));
    print_message("note: %s\n", h.note);
}

/* Detects root's fixture host as a user the base does not belong to
 * (nobody, in a child, when we are root); 0 when that user is told the
 * base is not delegated to it and no hierarchy is usable. */
static int detect_as_stranger(const char *root, const char *base)
{
    bool as_root = geteuid() == 0;
    pid_t pid = as_root ? fork() : 0;
    assert_true(pid >= 0);
    if (pid == 0) {
        if (as_root && (setgid(65534) < 0 || setuid(65534) < 0))
            _exit(3);
        /* The fixture's mount tables were copied into root: the checkout
         * itself may sit in a directory nobody cannot enter. */
        char mi[PATH_MAX * 2], cg[PATH_MAX * 2];
        snprintf(mi, sizeof mi, "%s/mountinfo", root);
        snprintf(cg, sizeof cg, "%s/cgroup", root);
        struct atr_cg_host h;
        struct atr_error err;
        int ok = atr_cg_detect(&h, mi, cg, root, &err) == 0 && h.mode == ATR_CG_NONE &&
                 strcmp(h.denied, base) == 0;
        if (as_root)                /* the forked child */
            _exit(ok ? 0 : 1);
        return ok ? 0 : 1;
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

/* A base that exists but is not ours to write (a non-root user's own
 * session group): named in `denied`, so the CLI can say what is missing
 * (delegation) rather than run without limits. */
static void test_detect_not_delegated(void **state)
{
    (void)state;
    char root[64], base[PATH_MAX * 2];
    scratch_v2(root, false);
    snprintf(base, sizeof base, "%s/sys/fs/cgroup/system.slice/atr.service", root);
    assert_int_equal(chmod(root, 0755), 0);      /* mkdtemp's 0700: let nobody in */
    assert_int_equal(chmod(base, 0555), 0);
    char cp[PATH_MAX * 3];
    snprintf(cp, sizeof cp, "cp '%s/v2/mountinfo' '%s/v2/cgroup' '%s/'", FIX, FIX, root);
    assert_int_equal(system(cp), 0);
    int rc = detect_as_stranger(root, base);
    chmod(base, 0755);
    rm_scratch(root);
    assert_int_equal(rc, 0);
    struct atr_cg_host h;
    detect_fixture("v2", FIX "/v2", &h);          /* a writable base: nothing denied */
    assert_string_equal(h.denied, "");
}

static void test_detect_hybrid(void **state)
{
    (void)state;
    struct atr_cg_host h;
    detect_fixture("hybrid", FIX "/hybrid", &h);
    assert_int_equal(h.mode, ATR_CG_HYBRID);
    assert_string_equal(h.memory, FIX "/hybrid/sys/fs/cgroup/memory/process_api/58d5df06");
    assert_string_equal(h.cpu, FIX "/hybrid/sys/fs/cgroup/cpu");
    assert_string_equal(h.cpuacct, FIX "/hybrid/sys/fs/cgroup/cpuacct");
    assert_string_equal(h.pids, FIX "/hybrid/sys/fs/cgroup/pids");
    assert_string_equal(h.v2, FIX "/hybrid/sys/fs/cgroup/unified");
    assert_false(h.v2_memory || h.v2_cpu || h.v2_pids);
    assert_true(h.psi);
    assert_true(h.kill_file);       /* found on a sibling: the root has none */
    assert_string_equal(h.note,
                        "hybrid: v1 memory,cpu,cpuacct,pids (memory at " FIX
                        "/hybrid/sys/fs/cgroup/memory/process_api/58d5df06); v2 at " FIX
                        "/hybrid/sys/fs/cgroup/unified (pressure, cgroup.kill)");
}

static void test_detect_v1(void **state)
{
    (void)state;
    struct atr_cg_host h;
    detect_fixture("v1", FIX "/v1", &h);
    assert_int_equal(h.mode, ATR_CG_V1);
    /* mount roots are the container's group: paths are relative to them */
    assert_string_equal(h.memory, FIX "/v1/sys/fs/cgroup/memory/job");
    assert_string_equal(h.cpu, FIX "/v1/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(h.cpuacct, FIX "/v1/sys/fs/cgroup/cpu,cpuacct");
    assert_string_equal(h.pids, FIX "/v1/sys/fs/cgroup/pids/job");
    assert_string_equal(h.v2, "");
    assert_false(h.psi || h.kill_file);
    assert_non_null(strstr(h.note, "v1: v1 memory,cpu,cpuacct,pids"));
}

static void test_detect_none(void **state)
{
    (void)state;
    struct atr_cg_host h;
    detect_fixture("none", FIX "/none", &h);
    assert_int_equal(h.mode, ATR_CG_NONE);
    assert_non_null(strstr(h.note, "no usable cgroup hierarchy"));
    struct atr_error err;
    assert_int_equal(atr_cg_detect(&h, FIX "/missing", FIX "/missing", "", &err), 0);
    assert_int_equal(h.mode, ATR_CG_NONE);
    struct atr_cg root;
    assert_int_equal(atr_cg_root(&h, &root, &err), -1);
}

/* ---- parsers ---- */

static char *sample(const char *name)
{
    static char buf[4096];
    char p[PATH_MAX];
    snprintf(p, sizeof p, FIX "/samples/%s", name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    return buf;
}

static void test_parse_pressure(void **state)
{
    (void)state;
    int64_t some, full;
    assert_int_equal(atr_cg_parse_pressure(sample("memory.pressure"), &some, &full), 0);
    assert_int_equal(some, 2484467);
    assert_int_equal(full, 1387302);
    assert_int_equal(atr_cg_parse_pressure(sample("cpu.pressure"), &some, &full), 0);
    assert_int_equal(some, 818489175);
    assert_int_equal(full, 0);
    assert_int_equal(atr_cg_parse_pressure(sample("cpu.pressure.old"), &some, &full), 0);
    assert_int_equal(some, 818489175);
    assert_int_equal(full, -1);     /* kernels before 5.13: no full line for cpu */
    assert_int_equal(atr_cg_parse_pressure("", &some, &full), -1);
    assert_int_equal(atr_cg_parse_pressure("some avg10=0.00 total=x\n", &some, NULL), -1);
    assert_int_equal(some, -1);
}

static void test_parse_keyed(void **state)
{
    (void)state;
    const char *ev = sample("memory.events");
    assert_int_equal(atr_cg_parse_keyed(ev, "high"), 12);
    assert_int_equal(atr_cg_parse_keyed(ev, "max"), 3);
    assert_int_equal(atr_cg_parse_keyed(ev, "oom_kill"), 1);
    assert_int_equal(atr_cg_parse_keyed(ev, "oom"), 1);
    assert_int_equal(atr_cg_parse_keyed(ev, "oom_group_kill"), 0);
    assert_int_equal(atr_cg_parse_keyed(ev, "mi"), -1);
    const char *cpu = sample("cpu.stat");
    assert_int_equal(atr_cg_parse_keyed(cpu, "user_usec"), 3091242746LL);
    assert_int_equal(atr_cg_parse_keyed(cpu, "system_usec"), 408891827);
    assert_int_equal(atr_cg_parse_keyed(cpu, "throttled_usec"), 81234);
    assert_int_equal(atr_cg_parse_keyed(cpu, "usec"), -1);
    /* "oom_kill" must not match "oom_kill_disable" on the line before */
    assert_int_equal(atr_cg_parse_keyed(sample("memory.oom_control"), "oom_kill"), 2);
    const char *ms = sample("memory.stat");
    assert_int_equal(atr_cg_parse_keyed(ms, "rss"), 67321856);
    assert_int_equal(atr_cg_parse_keyed(ms, "total_rss"), 67321856);
    assert_int_equal(atr_cg_parse_keyed(ms, "hierarchical_memory_limit"), 9223372036854771712LL);
    assert_int_equal(atr_cg_parse_keyed("a 1\nb\n", "b"), -1);
}

/* ---- real groups ---- */

static void put_file(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The memory limit over atr's own group is the lowest on the way up
 * (v1 says "none" with a huge number, v2 with "max"). */
static void test_mem_limit(void **state)
{
    (void)state;
    char root[] = "/tmp/atr-test-memlim-XXXXXX", a[PATH_MAX], b[PATH_MAX];
    assert_non_null(mkdtemp(root));
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/a/b", root);
    assert_int_equal(mkdir(a, 0755), 0);
    assert_int_equal(mkdir(b, 0755), 0);
    struct atr_cg_host h;
    memset(&h, 0, sizeof h);
    h.mode = ATR_CG_V1;
    snprintf(h.memory, sizeof h.memory, "%s", b);
    assert_int_equal(atr_cg_mem_limit(&h), -1);
    put_file(a, "memory.limit_in_bytes", "1073741824\n");
    put_file(b, "memory.limit_in_bytes", "9223372036854771712\n");
    assert_int_equal(atr_cg_mem_limit(&h), 1073741824);
    memset(&h, 0, sizeof h);
    h.mode = ATR_CG_V2;
    snprintf(h.v2, sizeof h.v2, "%s", b);
    assert_int_equal(atr_cg_mem_limit(&h), -1);      /* no memory controller */
    h.v2_memory = true;
    put_file(a, "memory.max", "536870912\n");
    put_file(b, "memory.max", "max\n");
    assert_int_equal(atr_cg_mem_limit(&h), 536870912);
    /* pids.events "max": the forks refused at pids.max */
    struct atr_cg g;
    memset(&g, 0, sizeof g);
    g.v2_fd = -1;
    snprintf(g.memory, sizeof g.memory, "%s", a);
    snprintf(g.pids, sizeof g.pids, "%s", b);
    put_file(b, "pids.events", "max 7\n");
    struct atr_cg_stats st;
    memset(&h, 0, sizeof h);
    assert_int_equal(atr_cg_read_stats(&h, &g, &st, NULL), 0);
    assert_int_equal(st.pids_max_events, 7);
    rm_scratch(root);
}

static void test_limits_roundtrip(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_cg root, g;
    struct atr_error err;
    make_root_child(&root, &g, "lim");
    struct atr_cg_limits l = {48 * MIB, 64 * MIB, 50000, 100000, 32, 200};
    if (atr_cg_set_limits(&host, &g, &l, &err) < 0)
        fail_msg("%s", err.msg);
    char buf[64];
    if (g.memory[0]) {
        assert_int_equal(read_ll(g.memory, "memory.soft_limit_in_bytes"), 48 * MIB);
        assert_int_equal(read_ll(g.memory, "memory.limit_in_bytes"), 64 * MIB);
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/memory.memsw.limit_in_bytes", g.memory);
        bool memsw = access(p, F_OK) == 0;
        /* memsw follows the limit where swap exists; without swap it stays off */
        if (memsw)
            assert_int_equal(read_ll(g.memory, "memory.memsw.limit_in_bytes"),
                             have_swap() ? 64 * MIB : 0x7FFFFFFFFFFFF000LL);
        /* raising and lowering must keep memsw >= limit at every write */
        l = (struct atr_cg_limits)ATR_CG_LIMITS_NONE;
        l.mem_max = 256 * MIB;
        if (atr_cg_set_limits(&host, &g, &l, &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(read_ll(g.memory, "memory.limit_in_bytes"), 256 * MIB);
        l.mem_max = 16 * MIB;
        if (atr_cg_set_limits(&host, &g, &l, &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(read_ll(g.memory, "memory.limit_in_bytes"), 16 * MIB);
        if (memsw && have_swap())
            assert_int_equal(read_ll(g.memory, "memory.memsw.limit_in_bytes"), 16 * MIB);
        assert_int_equal(atr_cg_set_mem_high(&host, &g, 40 * MIB, &err), 0);
        assert_int_equal(read_ll(g.memory, "memory.soft_limit_in_bytes"), 40 * MIB);
        assert_int_equal(atr_cg_set_mem_high(&host, &g, -1, &err), 0);
        assert_true(read_ll(g.memory, "memory.soft_limit_in_bytes") > (1LL << 60));
        assert_int_equal(read_ll(g.cpu, "cpu.cfs_quota_us"), 50000);
        assert_int_equal(read_ll(g.cpu, "cpu.cfs_period_us"), 100000);
        assert_int_equal(read_ll(g.cpu, "cpu.shares"), 2048);
        read_text(g.pids, "pids.max", buf, sizeof buf);
        assert_string_equal(buf, "32");
    } else {
        assert_int_equal(read_ll(g.v2, "memory.high"), 48 * MIB);
        assert_int_equal(read_ll(g.v2, "memory.max"), 64 * MIB);
        read_text(g.v2, "cpu.max", buf, sizeof buf);
        assert_string_equal(buf, "50000 100000");
        assert_int_equal(read_ll(g.v2, "cpu.weight"), 200);
        read_text(g.v2, "pids.max", buf, sizeof buf);
        assert_string_equal(buf, "32");
        assert_int_equal(atr_cg_set_mem_high(&host, &g, -1, &err), 0);
        read_text(g.v2, "memory.high", buf, sizeof buf);
        assert_string_equal(buf, "max");
    }
    l = (struct atr_cg_limits)ATR_CG_LIMITS_NONE;
    l.weight = 0;
    assert_int_equal(atr_cg_set_limits(&host, &g, &l, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(atr_cg_create(&host, &root, "../x", &g, &err), -1);
    assert_int_equal(atr_cg_remove(&host, &root, &err), 0);
}

/* In a forked child: joins g, touches `bytes` of fresh memory, spins
 * `spin_ms` of CPU, exits. Async-signal-safe calls only until _exit. */
static pid_t fork_toucher(const struct atr_cg *g, size_t bytes, int spin_ms)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0)
        return pid;
    if (atr_cg_join(g, 0, false, NULL) < 0)
        _exit(90);
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(91);
    for (size_t i = 0; i < bytes; i += 4096)
        ((volatile char *)p)[i] = 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < spin_ms);
    _exit(0);
}

static void test_peak_and_cpu(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_cg root, g;
    struct atr_error err;
    make_root_child(&root, &g, "peak");
    struct rusage ru;
    int status;
    pid_t pid = fork_toucher(&g, 64 * MIB, 100);
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    struct atr_cg_stats s;
    if (atr_cg_read_stats(&host, &g, &s, &err) < 0)
        fail_msg("%s", err.msg);
    double peak_mib = (double)s.mem_peak / MIB;
    int64_t ru_us = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                    ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
    print_message("peak %.2f MiB for 64 MiB touched (rusage maxrss %.2f MiB); current %.2f MiB; "
                  "cpu user %lld us sys %lld us (rusage %lld us); mem pressure some %lld us, "
                  "cpu pressure some %lld us\n",
                  peak_mib, ru.ru_maxrss / 1024.0, (double)s.mem_current / MIB,
                  (long long)s.cpu_user_us, (long long)s.cpu_sys_us, (long long)ru_us,
                  (long long)s.mem_some_us, (long long)s.cpu_some_us);
    assert_true(peak_mib >= 60 && peak_mib <= 80);
    assert_true(s.cpu_user_us >= 0 && s.cpu_sys_us >= 0);
    int64_t cg_us = s.cpu_user_us + s.cpu_sys_us;
    /* the 100 ms spin and the page faults happened inside the group */
    assert_true(cg_us >= 90000);
    assert_true(cg_us >= ru_us * 8 / 10 && cg_us <= ru_us * 12 / 10 + 20000);
    if (host.psi) {
        assert_true(s.mem_some_us >= 0 && s.cpu_some_us >= 0);
    }
    assert_int_equal(s.oom_kills, 0);
    assert_int_equal(atr_cg_remove(&host, &root, &err), 0);
}

static void test_oom_kill(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_cg root, g;
    struct atr_error err;
    make_root_child(&root, &g, "oom");
    struct atr_cg_limits l = ATR_CG_LIMITS_NONE;
    l.mem_max = 32 * MIB;
    if (atr_cg_set_limits(&host, &g, &l, &err) < 0)
        fail_msg("%s", err.msg);
    int status;
    pid_t pid = fork_toucher(&g, 64 * MIB, 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    struct atr_cg_stats s;
    if (atr_cg_read_stats(&host, &g, &s, &err) < 0)
        fail_msg("%s", err.msg);
    print_message("32 MiB limit, 64 MiB touched: %s %d; peak %.2f MiB, oom_kills %lld, "
                  "mem_max_events %lld, mem_high_events %lld\n",
                  WIFSIGNALED(status) ? "signal" : "exit",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                  (double)s.mem_peak / MIB, (long long)s.oom_kills, (long long)s.mem_max_events,
                  (long long)s.mem_high_events);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(s.oom_kills >= 1);
    /* v1 with swap: the memsw limit is hit first, whose failures newer
     * kernels do not count */
    if (!g.memory[0] || !have_swap())
        assert_true(s.mem_max_events >= 1);
    assert_true(s.mem_peak <= 32 * MIB);
    assert_int_equal(atr_cg_remove(&host, &root, &err), 0);
}

/* A child in g that forks a grandchild; both report on `ready` and sleep. */
static pid_t fork_sleepers(const struct atr_cg *g, pid_t *grandchild)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (atr_cg_join(g, 0, false, NULL) < 0)
            _exit(90);
        pid_t gc = fork();
        if (gc == 0) {
            pid_t me = getpid();
            if (write(fds[1], &me, sizeof me) != sizeof me)
                _exit(91);
            for (;;)
                pause();
        }
        for (;;)
            pause();
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], grandchild, sizeof *grandchild), (ssize_t)sizeof *grandchild);
    close(fds[0]);
    return pid;
}

static void assert_killed(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
}

static int procs_count(const char *dir)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        n++;
    fclose(f);
    return n;
}

static void test_kill_tree(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_cg root, g;
    struct atr_error err;
    make_root_child(&root, &g, "kill");
    pid_t gc, pid = fork_sleepers(&g, &gc);
    const char *dir = g.memory[0] ? g.memory : g.v2;
    assert_int_equal(procs_count(dir), 2);
    int64_t t0 = now_ms();
    if (atr_cg_kill(&host, &g, &err) < 0)
        fail_msg("%s", err.msg);
    print_message("kill of child + grandchild took %lld ms\n", (long long)(now_ms() - t0));
    assert_int_equal(procs_count(dir), 0);
    if (g.v2[0])
        assert_int_equal(procs_count(g.v2), 0);
    assert_killed(pid);
    assert_killed(gc);  /* reparented to us: we are its subreaper */
    assert_int_equal(atr_cg_remove(&host, &root, &err), 0);
}

static void test_remove(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_cg root, g;
    struct atr_error err;
    make_root_child(&root, &g, "rm");
    assert_true(root.v2_fd >= 0 || !root.v2[0]);
    pid_t gc, pid = fork_sleepers(&g, &gc);
    /* the root, with the child group and its live processes below it */
    if (atr_cg_remove(&host, &root, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(root.v2_fd, -1);
    const char *dirs[] = {root.v2, root.memory, root.cpu, root.cpuacct, root.pids,
                          g.v2, g.memory, g.cpu, g.cpuacct, g.pids};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (dirs[i][0])
            assert_false(dir_exists(dirs[i]));
    assert_killed(pid);
    assert_killed(gc);
    /* a group that is already gone is not an error */
    assert_int_equal(atr_cg_remove(&host, &g, &err), 0);
}

/* Makes fake root atr-<pid> in every base, with a group below it. */
static void fake_root(int slot, pid_t pid, struct atr_cg *out)
{
    struct atr_cg base;
    memset(&base, 0, sizeof base);
    strcpy(base.v2, host.v2);
    strcpy(base.memory, host.memory);
    strcpy(base.cpu, host.cpu);
    strcpy(base.cpuacct, host.cpuacct);
    strcpy(base.pids, host.pids);
    base.v2_fd = -1;
    fake_pids[slot] = pid;
    char name[32];
    snprintf(name, sizeof name, "atr-%ld", (long)pid);
    struct atr_error err;
    if (atr_cg_create(&host, &base, name, out, &err) < 0)
        fail_msg("%s", err.msg);
}

static bool fake_exists(const struct atr_cg *g)
{
    const char *d[] = {g->v2, g->memory, g->cpu, g->cpuacct, g->pids};
    bool any = false;
    for (int i = 0; i < 5; i++)
        any |= d[i][0] && dir_exists(d[i]);
    return any;
}

static void backdate(const struct atr_cg *g)
{
    const char *d[] = {g->v2, g->memory, g->cpu, g->cpuacct, g->pids};
    struct timespec ts[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    for (int i = 0; i < 5; i++)
        if (d[i][0])
            assert_int_equal(utimensat(AT_FDCWD, d[i], ts, 0), 0);
}

/* A process that holds the lock on g's first directory (as a run holds
 * its root's) until killed; returns once the lock is taken. */
static pid_t lock_holder(const struct atr_cg *g)
{
    const char *d[] = {g->v2, g->memory, g->cpu, g->cpuacct, g->pids};
    int i = 0;
    while (!d[i][0])
        i++;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(d[i], O_RDONLY | O_DIRECTORY);
        if (fd < 0 || flock(fd, LOCK_EX) < 0 || write(p[1], "x", 1) != 1)
            _exit(90);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    holder_pid = pid;
    return pid;
}

static void test_sweep_stale(void **state)
{
    (void)state;
    NEED_HOST();
    struct atr_error err;
    pid_t dead = 999999;
    while (kill(dead, 0) == 0 || errno != ESRCH)
        dead++;
    struct atr_cg stale, stale_child, held, reused, mine, mine_child;
    fake_root(0, dead, &stale);
    if (atr_cg_create(&host, &stale, "t0", &stale_child, &err) < 0)
        fail_msg("%s", err.msg);
    pid_t gc, leftover = fork_sleepers(&stale_child, &gc);
    /* a dead pid, but its lock held by a live process: a run in another
     * PID namespace, or one whose pid we cannot see; never swept */
    pid_t dead2 = dead + 1;
    while (kill(dead2, 0) == 0 || errno != ESRCH)
        dead2++;
    fake_root(1, dead2, &held);
    pid_t holder = lock_holder(&held);
    make_root_child(&mine, &mine_child, "live");
    /* a live process in our own root (where teardown finds it), whose pid
     * names a root made "an hour before" the process started: pid reuse */
    pid_t sleeper = fork();
    assert_true(sleeper >= 0);
    if (sleeper == 0) {
        if (atr_cg_join(&mine_child, 0, false, NULL) < 0)
            _exit(90);
        for (;;)
            pause();
    }
    fake_root(2, sleeper, &reused);
    backdate(&reused);
    unsigned removed = 0;
    if (atr_cg_sweep_stale(&host, &removed, &err) < 0)
        fail_msg("%s", err.msg);
    int bases = 0;
    for (int i = 0; i < 5; i++)
        bases += base_of(i)[0] && (i != 3 || strcmp(host.cpu, host.cpuacct) != 0);
    print_message("swept %u root directories (%d hierarchies)\n", removed, bases);
    assert_false(fake_exists(&stale));
    assert_false(fake_exists(&reused));
    assert_true(removed >= (unsigned)(2 * bases));
    assert_killed(leftover);
    assert_killed(gc);
    assert_true(fake_exists(&held));
    assert_int_equal(kill(holder, 0), 0);
    assert_true(dir_exists(mine_child.memory[0] ? mine_child.memory : mine_child.v2));
    assert_int_equal(kill(sleeper, 0), 0);      /* its own root is live: untouched */
    kill(sleeper, SIGKILL);
    assert_killed(sleeper);
    kill(holder, SIGKILL);
    assert_killed(holder);
    assert_int_equal(atr_cg_remove(&host, &held, &err), 0);
    assert_int_equal(atr_cg_remove(&host, &mine, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_v2),
        cmocka_unit_test(test_detect_v2_enables_controllers),
        cmocka_unit_test(test_detect_v2_cannot_enable),
        cmocka_unit_test(test_detect_not_delegated),
        cmocka_unit_test(test_detect_hybrid),
        cmocka_unit_test(test_detect_v1),
        cmocka_unit_test(test_detect_none),
        cmocka_unit_test(test_parse_pressure),
        cmocka_unit_test(test_parse_keyed),
        cmocka_unit_test(test_mem_limit),
        cmocka_unit_test_teardown(test_limits_roundtrip, teardown),
        cmocka_unit_test_teardown(test_peak_and_cpu, teardown),
        cmocka_unit_test_teardown(test_oom_kill, teardown),
        cmocka_unit_test_teardown(test_kill_tree, teardown),
        cmocka_unit_test_teardown(test_remove, teardown),
        cmocka_unit_test_teardown(test_sweep_stale, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
