/* sandbox.c - the jail of a replayed step (sandbox.h): what the parent
 * prepares, and what the cloned child does with async-signal-safe calls.
 *
 * Order in the child, and why:
 *  1. setns into the shared user namespace, then become its root: the uid
 *     map (0 -> ATR_SANDBOX_UID, written once per atr process by the
 *     parent) makes the step "other" to every host file.
 *  2. unshare mount, PID, IPC, UTS, cgroup (and network) namespaces: owned
 *     by that user namespace, so the step's root may mount in them. The
 *     cgroup namespace is made after the step joined its groups: its root
 *     is the step's own group.
 *  3. (PID 1, forked by the caller) a recursive clone of the host root made
 *     read-only (or the idmapped --rootfs) attached at STAGE; a fresh /proc
 *     (/proc/sys read-only), a tmpfs /dev with the harmless nodes bound
 *     in, /tmp and the writable paths from their idmapped trees, /run,
 *     /var/tmp and /sys/fs/cgroup masked by empty tmpfs; pivot_root into
 *     it and detach the host's root.
 *  4. Drop the bounding set and every capability (locked, so exec gives
 *     none back to uid 0), no_new_privs, then the seccomp filter. */
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where the new root is assembled: a directory every host has. The host's
 * /tmp is not touched: this mount lives in the step's namespace only. */
#define STAGE "/tmp"

static const char *const stage_names[] = {
    "join the sandbox user namespace", "become the sandbox's root", "unshare namespaces",
    "make / private", "mount the read-only root", "mount /proc", "make /dev",
    "mask host paths", "mount /tmp", "bind a writable path", "pivot_root",
    "drop capabilities", "install the seccomp filter",
};

const char *atr_sandbox_stage_name(int stage)
{
    int i = stage - ATR_SB_SETNS;
    return i >= 0 && i < (int)(sizeof stage_names / sizeof stage_names[0]) ? stage_names[i] : NULL;
}

/* ---- the user namespace, once per process ---- */

static pthread_once_t userns_once = PTHREAD_ONCE_INIT;
static int userns_fd = -1;
static char userns_error[ATR_ERROR_MAX];

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Maps a helper's fresh user namespace and keeps a descriptor of it: the
 * namespace outlives the helper, and every step joins it. */
static int map_userns(pid_t pid)
{
    char path[64], map[64];
    snprintf(map, sizeof map, "0 %u %u\n", ATR_SANDBOX_UID, ATR_SANDBOX_IDS);
    const char *files[2] = {"uid_map", "gid_map"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, files[i]);
        if (write_file(path, map) < 0) {
            snprintf(userns_error, sizeof userns_error,
                     "the sandbox needs root (mapping its uids was refused: %s: %s)", files[i],
                     strerror(errno));
            return -1;
        }
    }
    snprintf(path, sizeof path, "/proc/%ld/ns/user", (long)pid);
    userns_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (userns_fd < 0)
        snprintf(userns_error, sizeof userns_error, "%s: %s", path, strerror(errno));
    return userns_fd < 0 ? -1 : 0;
}

static void make_userns(void)
{
    int ready[2], done[2];
    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0) {
        snprintf(userns_error, sizeof userns_error, "pipe: %s", strerror(errno));
        return;
    }
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);   /* no atfork handlers */
    if (pid == 0) {
        close(ready[0]);
        close(done[1]);   /* else it never sees EOF */
        char c = unshare(CLONE_NEWUSER) == 0 ? 'u' : (char)errno;
        if (write(ready[1], &c, 1) == 1 && c == 'u')
            while (read(done[0], &c, 1) < 0 && errno == EINTR)
                ;
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    char c = 0;
    if (pid < 0)
        snprintf(userns_error, sizeof userns_error, "fork: %s", strerror(errno));
    else if (read(ready[0], &c, 1) != 1 || c != 'u')
        snprintf(userns_error, sizeof userns_error, "user namespaces are refused (unshare: %s)",
                 strerror(c && c != 'u' ? c : EPERM));
    else
        map_userns(pid);
    close(ready[0]);
    close(done[1]);
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
}

static int userns_get(struct atr_error *err)
{
    pthread_once(&userns_once, make_userns);
    return userns_fd >= 0 ? userns_fd : atr_error_set(err, "%s", userns_error);
}

/* ---- seccomp, once per process ---- */

/* Refused with EPERM: what changes the machine rather than the step's own
 * processes (mounts, modules, clock, swap, reboot, keys, kernel tracing),
 * what is known to carry escapes (open_by_handle_at, userfaultfd,
 * io_uring, bpf, perf), and new namespaces. Everything else is allowed: a
 * replay runs compilers, test suites and package managers. Syscalls of
 * another ABI (32-bit int 0x80) kill the process (libseccomp's default). */
static const char *const denied[] = {
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "swapon", "swapoff", "reboot", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "acct", "quotactl", "quotactl_fd",
    "syslog", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "open_by_handle_at", "name_to_handle_at", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "unshare", "setns", "iopl", "ioperm", "lookup_dcookie", "vhangup",
    "nfsservctl", "uselib", "sethostname", "setdomainname", "fanotify_init",
};

static const unsigned long clone_ns_flags[] = {
    CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
    CLONE_NEWCGROUP,
};

static pthread_once_t filter_once = PTHREAD_ONCE_INIT;
static struct sock_fprog filter_prog;
static char filter_error[ATR_ERROR_MAX];

static int add_rules(scmp_filter_ctx ctx)
{
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) < 0)
            return -1;
    }
    /* clone with any namespace flag (one rule each: rules are or-ed);
     * clone3's flags sit in memory a filter cannot read, so it answers
     * ENOSYS and libc falls back to clone. */
    for (size_t i = 0; i < sizeof clone_ns_flags / sizeof clone_ns_flags[0]; i++) {
        unsigned long f = clone_ns_flags[i];
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, f, f)) < 0)
            return -1;
    }
    return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

/* The filter as BPF in memory: the child can install it without libseccomp
 * (which allocates). */
static void build_filter(void)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int fd = -1;
    if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 || add_rules(ctx) < 0) {
        snprintf(filter_error, sizeof filter_error, "seccomp: cannot build the filter");
        goto out;
    }
    FILE *mem = tmpfile();
    if (!mem || seccomp_export_bpf(ctx, fd = fileno(mem)) < 0) {
        snprintf(filter_error, sizeof filter_error, "seccomp: cannot export the filter");
        if (mem)
            fclose(mem);
        goto out;
    }
    long len = lseek(fd, 0, SEEK_END);
    struct sock_filter *code = malloc(len > 0 ? (size_t)len : 1);
    if (len <= 0 || !code || pread(fd, code, (size_t)len, 0) != len) {
        snprintf(filter_error, sizeof filter_error, "seccomp: cannot read the filter back");
        free(code);
    } else {
        filter_prog.len = (unsigned short)(len / (long)sizeof *code);
        filter_prog.filter = code;   /* kept for the life of the process */
    }
    fclose(mem);
out:
    if (ctx)
        seccomp_release(ctx);
}

static const struct sock_fprog *filter_get(struct atr_error *err)
{
    pthread_once(&filter_once, build_filter);
    if (filter_prog.filter)
        return &filter_prog;
    atr_error_set(err, "%s", filter_error);
    return NULL;
}

/* ---- the parent's half ---- */

/* A detached copy of path's mount at path, idmapped into the sandbox's
 * user namespace (host uid 0 shows as the step's root); ns -1: not
 * idmapped, for a tree its ids already own. */
static int idmapped_tree(const char *path, int ns, struct atr_error *err)
{
    int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0)
        return atr_error_set(err, "sandbox: %s: %s", path, strerror(errno));
    struct mount_attr a = {
        .attr_set = (ns >= 0 ? MOUNT_ATTR_IDMAP : 0) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        .userns_fd = ns >= 0 ? (uint64_t)ns : 0,
    };
    if (mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        return atr_error_set(err, "sandbox: %s: its file system refuses an idmapped mount (%s)",
                             path, strerror(e));
    }
    return fd;
}

int atr_sandbox_prepare(struct atr_sandbox *sb, const struct atr_sandbox_spec *spec,
                        struct atr_error *err)
{
    memset(sb, 0, sizeof *sb);
    sb->root_fd = sb->tmp_fd = -1;
    for (int i = 0; i < ATR_SANDBOX_MAX_BINDS; i++)
        sb->bind_fd[i] = -1;
    if (spec->n_binds < 0 || spec->n_binds > ATR_SANDBOX_MAX_BINDS)
        return atr_error_set(err, "sandbox: at most %d writable paths", ATR_SANDBOX_MAX_BINDS);
    if ((sb->userns_fd = userns_get(err)) < 0 || !(sb->filter = filter_get(err)))
        return -1;
    sb->allow_network = spec->allow_network;
    sb->rootfs = spec->rootfs != NULL;
    sb->ns_flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                   (spec->allow_network ? 0 : CLONE_NEWNET);
    if (spec->rootfs &&
        (sb->root_fd = idmapped_tree(spec->rootfs, spec->rootfs_shifted ? -1 : sb->userns_fd,
                                     err)) < 0)
        goto fail;
    if (spec->tmpdir && (sb->tmp_fd = idmapped_tree(spec->tmpdir, sb->userns_fd, err)) < 0)
        goto fail;
    for (int i = 0; i < spec->n_binds; i++, sb->n_binds++) {
        const char *p = spec->binds[i];
        if (p[0] != '/' || (size_t)snprintf(sb->bind_at[i], PATH_MAX, STAGE "%s", p) >= PATH_MAX) {
            atr_error_set(err, "sandbox: %s: not an absolute path that fits", p);
            goto fail;
        }
        if ((sb->bind_fd[i] = idmapped_tree(p, sb->userns_fd, err)) < 0)
            goto fail;
    }
    return 0;
fail:
    atr_sandbox_release(sb);
    return -1;
}

void atr_sandbox_release(struct atr_sandbox *sb)
{
    int *fds[2] = {&sb->root_fd, &sb->tmp_fd};
    for (int i = 0; i < 2; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    for (int i = 0; i < ATR_SANDBOX_MAX_BINDS; i++)
        if (sb->bind_fd[i] >= 0)
            close(sb->bind_fd[i]);
    sb->root_fd = sb->tmp_fd = -1;
    for (int i = 0; i < ATR_SANDBOX_MAX_BINDS; i++)
        sb->bind_fd[i] = -1;
}

/* ---- the child's half: async-signal-safe calls only ---- */

static int fail_at(int *stage, int s)
{
    *stage = s;
    return -1;
}

int atr_sandbox_enter(const struct atr_sandbox *sb, int *stage)
{
    if (setns(sb->userns_fd, CLONE_NEWUSER) < 0)
        return fail_at(stage, ATR_SB_SETNS);
    /* Joining keeps the host ids (unmapped inside): become the namespace's
     * root, without the host root's supplementary groups. */
    /* Raw syscalls: libc's wrappers signal every thread of the parent to
     * change ids with it, threads this copy does not have (it hangs). */
    if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, 0, 0, 0) < 0 ||
        syscall(SYS_setresuid, 0, 0, 0) < 0)
        return fail_at(stage, ATR_SB_IDS);
    if (unshare(sb->ns_flags) < 0)
        return fail_at(stage, ATR_SB_UNSHARE);
    return 0;
}

/* mkdir -p of path's components below STAGE (in place: '/' briefly NUL),
 * for mount points the new root lacks (a bind below the private /tmp). */
static void make_dirs(char *path)
{
    for (char *p = path + sizeof STAGE; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    mkdir(path, 0755);
}

static int attach(int fd, char *at)
{
    if (move_mount(fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) == 0)
        return 0;
    if (errno != ENOENT)
        return -1;
    make_dirs(at);
    return move_mount(fd, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH);
}

/* The host's whole tree, read-only, nosuid, nodev, at STAGE. */
static int host_root(void)
{
    int fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE);
    if (fd < 0)
        return -1;
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    int rc = mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof ro);
    if (rc == 0)
        rc = move_mount(fd, "", AT_FDCWD, STAGE, MOVE_MOUNT_F_EMPTY_PATH);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* A fresh proc of the new PID namespace; /proc/sys read-only on top. */
static int make_proc(void)
{
    const char *proc = STAGE "/proc", *sys = STAGE "/proc/sys";
    mkdir(proc, 0555);
    if (mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return -1;
    if (mount(sys, sys, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -1;
    return mount(NULL, sys, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                 NULL);
}

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};

/* /dev: a small tmpfs with the host's harmless character devices bound
 * onto files (a userns cannot mknod), the usual links, and /dev/shm. */
static int make_dev(void)
{
    static char host[] = "/dev/urandom__", at[] = STAGE "/dev/urandom__";
    const char *dev = STAGE "/dev";
    mkdir(dev, 0755);
    if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
        return -1;
    for (size_t i = 0; i < sizeof dev_nodes / sizeof dev_nodes[0]; i++) {
        size_t n = strlen(dev_nodes[i]);
        memcpy(host + 5, dev_nodes[i], n + 1);
        memcpy(at + sizeof STAGE + 4, dev_nodes[i], n + 1);
        int fd = open(at, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
            return -1;
        close(fd);
        if (mount(host, at, NULL, MS_BIND, NULL) < 0 && i < 5)   /* no tty: fine */
            return -1;
    }
    static const char *const links[][2] = {
        {"/proc/self/fd", STAGE "/dev/fd"},          {"/proc/self/fd/0", STAGE "/dev/stdin"},
        {"/proc/self/fd/1", STAGE "/dev/stdout"},    {"/proc/self/fd/2", STAGE "/dev/stderr"},
    };
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        if (symlink(links[i][0], links[i][1]) < 0)
            return -1;
    mkdir(STAGE "/dev/shm", 01777);
    return mount("tmpfs", STAGE "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m");
}

/* Empty tmpfs over what the step must not see: /run and /var/tmp hold the
 * host's unix sockets (a socket on a read-only mount still connects),
 * /sys/fs/cgroup the host's groups. On the host's root only: a --rootfs
 * image has its own. */
static int mask_host(void)
{
    static const char *const empty[] = {STAGE "/run", STAGE "/var/tmp"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        struct stat st;
        if (lstat(empty[i], &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (mount("tmpfs", empty[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0)
            return -1;
    }
    struct stat st;
    if (stat(STAGE "/sys/fs/cgroup", &st) == 0 &&
        mount("tmpfs", STAGE "/sys/fs/cgroup", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0555,size=4k") < 0)
        return -1;
    return 0;
}

static int make_tmp(const struct atr_sandbox *sb)
{
    static char tmp[] = STAGE "/tmp";
    if (sb->tmp_fd >= 0)
        return attach(sb->tmp_fd, tmp);
    mkdir(tmp, 01777);
    return mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1g");
}

/* A new network namespace has only `lo`, and it is down: bring it up so
 * steps can still talk to themselves (test servers on localhost). */
static void loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, "lo", 3);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
}

static int pivot(void)
{
    if (chdir(STAGE) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
        return -1;
    if (umount2(".", MNT_DETACH) < 0)
        return -1;
    return chdir("/");
}

/* Nothing survives exec: an empty bounding set, locked securebits so uid 0
 * gains nothing at exec, then every set cleared. */
static int drop_caps(void)
{
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -1;
    int bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
               SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
               SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
        return -1;
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &hdr, data);
}

int atr_sandbox_build(struct atr_sandbox *sb, int *stage)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fail_at(stage, ATR_SB_PRIVATE);
    if (!sb->allow_network)
        loopback_up();
    sethostname("atr", 3);
    int rc = sb->rootfs ? move_mount(sb->root_fd, "", AT_FDCWD, STAGE, MOVE_MOUNT_F_EMPTY_PATH)
                        : host_root();
    if (rc < 0)
        return fail_at(stage, ATR_SB_ROOT);
    if (make_proc() < 0)
        return fail_at(stage, ATR_SB_PROC);
    if (make_dev() < 0)
        return fail_at(stage, ATR_SB_DEV);
    if (!sb->rootfs && mask_host() < 0)
        return fail_at(stage, ATR_SB_MASK);
    if (make_tmp(sb) < 0)
        return fail_at(stage, ATR_SB_TMP);
    for (int i = 0; i < sb->n_binds; i++)
        if (attach(sb->bind_fd[i], sb->bind_at[i]) < 0)
            return fail_at(stage, ATR_SB_BIND);
    if (pivot() < 0)
        return fail_at(stage, ATR_SB_PIVOT);
    if (drop_caps() < 0)
        return fail_at(stage, ATR_SB_CAPS);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, sb->filter, 0, 0) < 0)
        return fail_at(stage, ATR_SB_SECCOMP);
    return 0;
}

/* ---- the probe ---- */

int atr_sandbox_probe_path(const char *path, struct atr_error *err)
{
    int ns = userns_get(err);
    int fd = ns < 0 ? -1 : idmapped_tree(path, ns, err);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

int atr_sandbox_probe(bool allow_network, struct atr_error *err)
{
    if (userns_get(err) < 0 || !filter_get(err))
        return -1;
    int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                (allow_network ? 0 : CLONE_NEWNET);
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid < 0)
        return atr_error_set(err, "sandbox: fork: %s", strerror(errno));
    if (pid == 0) {
        struct atr_sandbox sb = {.userns_fd = userns_fd, .ns_flags = flags};
        int stage;
        _exit(atr_sandbox_enter(&sb, &stage) == 0 ? 0 : errno > 0 && errno < 256 ? errno : EPERM);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    return atr_error_set(err, "the sandbox's namespaces are refused (%s)",
                         strerror(WIFEXITED(st) ? WEXITSTATUS(st) : EPERM));
}
