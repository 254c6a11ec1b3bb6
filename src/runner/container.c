/* container.c - the engine CLI behind runner/container.h: detection, and a
 * trace's container created, mounted, inspected and removed by running the
 * CLI with a deadline.
 *
 * Why created and never started: `podman create --uidmap` shifts the
 * image's files to the sandbox's host ids once, and `podman mount` gives
 * the merged root; atr's own sandbox then pivots each step into it. A
 * started container entered per step (`podman exec`) costs ~100 ms a step
 * and hides the step from atr's per-step cgroup; this costs nothing per
 * step (BENCHMARKS.md, "Steps inside a container image"). */
#include "runner/container.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"

#define CLI_OUTPUT_MAX (1u << 20)
#define PODMAN_INIT "/usr/libexec/podman/catatonit"
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

/* ---- running the CLI ---- */

struct cli_out {
    struct atr_buf out, err;    /* stdout, stderr: the first CLI_OUTPUT_MAX bytes */
    int status;                 /* wait status; -1: killed at the deadline */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void child_exec(char *const argv[], int out, int err)
{
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0), dup2(out, 1), dup2(err, 2);
    execve(argv[0], argv, environ);
    _exit(127);
}

/* Reads both pipes until EOF or the deadline. 0, or -1 at the deadline. */
static int drain(int fds[2], struct atr_buf *bufs[2], int64_t deadline)
{
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    int open_fds = 2;
    char chunk[4096];
    while (open_fds > 0) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -1;
        if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
            return -1;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t n = read(p[i].fd, chunk, sizeof chunk);
            if (n > 0 && bufs[i]->len < CLI_OUTPUT_MAX)
                atr_buf_append(bufs[i], chunk, (size_t)n);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                p[i].fd = -1;
                open_fds--;
            }
        }
    }
    return 0;
}

/* Runs argv (argv[0] a path) with a deadline, its output captured. 0 when
 * it ran (o->status says how it ended), -1 with err when it could not
 * start. The caller releases o's buffers. */
static int run_cli(char *const argv[], int timeout_s, struct cli_out *o, struct atr_error *err)
{
    struct atr_buf init = ATR_BUF_INIT;
    o->out = o->err = init;
    o->status = -1;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0)
        return atr_error_set(err, "pipe: %s", strerror(errno));
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(po[0]), close(po[1]);
        return atr_error_set(err, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);   /* its helpers (conmon) are killed with it */
        child_exec(argv, po[1], pe[1]);
    }
    close(po[1]), close(pe[1]);
    int fds[2] = {po[0], pe[0]};
    struct atr_buf *bufs[2] = {&o->out, &o->err};
    bool late = pid > 0 && drain(fds, bufs, now_ms() + (int64_t)timeout_s * 1000) < 0;
    close(po[0]), close(pe[0]);
    if (pid < 0)
        return atr_error_set(err, "fork: %s", strerror(errno));
    if (late)
        kill(-pid, SIGKILL), kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    o->status = late ? -1 : st;
    atr_buf_append(&o->out, "", 1);   /* NUL-terminated, not counted */
    o->out.len--;
    atr_buf_append(&o->err, "", 1);
    o->err.len--;
    return 0;
}

static void cli_out_release(struct cli_out *o)
{
    atr_buf_release(&o->out);
    atr_buf_release(&o->err);
}

/* The CLI's own reason: the last non-empty line of its stderr, without
 * podman's "Error: ". */
static const char *cli_reason(struct cli_out *o)
{
    char *s = o->err.data ? o->err.data : "";
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
    char *line = strrchr(s, '\n');
    line = line ? line + 1 : s;
    if (strncmp(line, "Error: ", 7) == 0)
        line += 7;
    return line[0] ? line : "no message";
}

/* Runs argv; 0 when it exited 0, else -1 with err "<what>: <reason>". */
static int run_ok(const struct atr_ctr_cli *cli, char *const argv[], const char *what,
                  struct cli_out *o, struct atr_error *err)
{
    if (run_cli(argv, cli->timeout_s, o, err) < 0)
        return -1;
    if (o->status == -1)
        return atr_error_set(err, "%s: %s did not answer within %d s (killed)", what, argv[0],
                             cli->timeout_s);
    if (!WIFEXITED(o->status) || WEXITSTATUS(o->status) != 0)
        return atr_error_set(err, "%s: %s", what, cli_reason(o));
    return 0;
}

/* ---- detection ---- */

static bool find_in_path(const char *name, char *out, size_t cap)
{
    const char *path = getenv("PATH");
    path = path && path[0] ? path : "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (n && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, p, name) < cap &&
            access(out, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

static bool answers(const char *path, char *const args[])
{
    char *argv[6] = {(char *)path};
    for (int i = 0; args[i] && i < 4; i++)
        argv[i + 1] = args[i];
    struct cli_out o;
    struct atr_error ignored;
    int rc = run_cli(argv, 10, &o, &ignored);
    bool ok = rc == 0 && o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
    cli_out_release(&o);
    return ok;
}

static int use_podman(struct atr_ctr_cli *cli, struct atr_error *err)
{
    static char *const version[] = {"--version", NULL};
    if (!answers(cli->path, version))
        return atr_error_set(err, "%s: `podman --version` fails (reinstall podman)", cli->path);
    snprintf(cli->name, sizeof cli->name, "podman");
    char runc[PATH_MAX];
    cli->runc = find_in_path("runc", runc, sizeof runc);
    snprintf(cli->note, sizeof cli->note, "%s%s; containers are created, never started: steps "
             "run in atr's sandbox on the container's root", cli->path,
             cli->runc ? " --runtime runc --cgroup-manager cgroupfs (crun refuses hybrid "
                         "cgroup hosts)" : "");
    return 0;
}

/* Docker has neither a per-container uid map nor `docker mount`. */
static int refuse_docker(const char *path, struct atr_error *err)
{
    static char *const info[] = {"info", "--format", "{{.ServerVersion}}", NULL};
    if (!answers(path, info))
        return atr_error_set(err, "%s: no docker daemon answers, and --image needs podman: "
                             "install podman (apt-get install podman runc)", path);
    return atr_error_set(err, "%s: docker answers, but --image needs podman (a per-container "
                         "uid map and `podman mount`): install podman (apt-get install podman "
                         "runc)", path);
}

/* Docker for a server container (`bench run`): it needs neither. */
static int use_docker(const char *path, struct atr_ctr_cli *cli, struct atr_error *err)
{
    static char *const info[] = {"info", "--format", "{{.ServerVersion}}", NULL};
    if (!answers(path, info))
        return atr_error_set(err, "%s: no docker daemon answers: start it, or install podman "
                             "(apt-get install podman runc)", path);
    snprintf(cli->path, sizeof cli->path, "%s", path);
    snprintf(cli->name, sizeof cli->name, "docker");
    snprintf(cli->note, sizeof cli->note, "%s (its daemon answers): memory figures need the "
             "daemon's cgroupfs driver", path);
    return 0;
}

static int detect(const char *want, bool servers, struct atr_ctr_cli *cli,
                  struct atr_error *err)
{
    memset(cli, 0, sizeof *cli);
    cli->timeout_s = ATR_CTR_CLI_TIMEOUT_S;
    if (want && strchr(want, '/')) {
        if (access(want, X_OK) < 0)
            return atr_error_set(err, "%s: %s (the container CLI)", want, strerror(errno));
        snprintf(cli->path, sizeof cli->path, "%s", want);
        const char *base = strrchr(want, '/') + 1;
        if (!strstr(base, "docker"))
            return use_podman(cli, err);
        return servers ? use_docker(want, cli, err) : refuse_docker(want, err);
    }
    if (want && strcmp(want, "podman") != 0 && strcmp(want, "docker") != 0)
        return atr_error_set(err, "container CLI %s: want podman, docker or a path", want);
    if ((!want || strcmp(want, "podman") == 0) &&
        find_in_path("podman", cli->path, sizeof cli->path))
        return use_podman(cli, err);
    char docker[PATH_MAX];
    if ((!want || strcmp(want, "docker") == 0) && find_in_path("docker", docker, sizeof docker))
        return servers ? use_docker(docker, cli, err) : refuse_docker(docker, err);
    return atr_error_set(err, "no %s on PATH: install podman (apt-get install podman runc)",
                         want ? want : "podman or docker");
}

int atr_ctr_detect(const char *want, struct atr_ctr_cli *cli, struct atr_error *err)
{
    return detect(want, false, cli, err);
}

int atr_ctr_detect_servers(const char *want, struct atr_ctr_cli *cli, struct atr_error *err)
{
    if (detect(want, true, cli, err) < 0)
        return -1;
    cli->init = true;
    if (strcmp(cli->name, "podman") == 0) {
        /* podman's --init runs catatonit, a package of its own */
        cli->init = access(PODMAN_INIT, X_OK) == 0;
        snprintf(cli->note, sizeof cli->note, "%s%s%s", cli->path,
                 cli->runc ? " --runtime runc --cgroup-manager cgroupfs (crun refuses hybrid "
                             "cgroup hosts)" : "",
                 cli->init ? "" : "; no " PODMAN_INIT ": a server that is the container's "
                 "pid 1 gets SIGTERM only if it handles it, else SIGKILL after the grace "
                 "period (apt-get install catatonit)");
    }
    return 0;
}

/* ---- image names ---- */

/* Appends instance in the SWE-bench image id form. */
static void put_sweb(struct atr_buf *b, const char *id)
{
    for (const char *p = id; *p; p++) {
        if (p[0] == '_' && p[1] == '_') {
            atr_buf_append(b, "_1776_", 6);
            p++;
            continue;
        }
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        atr_buf_append(b, &c, 1);
    }
}

/* Fills tmpl into b (instance NULL: only checks). 0, or -1 with err. */
static int fill_template(const char *tmpl, const char *instance, struct atr_buf *b,
                         struct atr_error *err)
{
    for (const char *p = tmpl; *p; p++) {
        if (*p == '}')
            return atr_error_set(err, "image template %s: a '}' without its '{'", tmpl);
        if (*p != '{') {
            atr_buf_append(b, p, 1);
            continue;
        }
        size_t n = strcspn(p + 1, "{}");
        bool inst = n == 8 && strncmp(p + 1, "instance", 8) == 0;
        bool sweb = n == 4 && strncmp(p + 1, "sweb", 4) == 0;
        if (p[1 + n] != '}' || !(inst || sweb))
            return atr_error_set(err, "image template %s: unknown placeholder {%.*s} (want "
                                 "{instance} or {sweb})", tmpl, (int)n, p + 1);
        if (instance && inst)
            atr_buf_append(b, instance, strlen(instance));
        else if (instance)
            put_sweb(b, instance);
        p += n + 1;
    }
    return 0;
}

int atr_ctr_template_check(const char *tmpl, struct atr_error *err)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = fill_template(tmpl, NULL, &b, err);
    atr_buf_release(&b);
    return rc;
}

int atr_ctr_image_for(const char *tmpl, const char *instance, char *out, size_t cap,
                      struct atr_error *err)
{
    if (!instance || !instance[0])
        return atr_error_set(err, "no instance_id in its metadata for the image template %s",
                             tmpl);
    struct atr_buf b = ATR_BUF_INIT;
    int rc = fill_template(tmpl, instance, &b, err);
    if (rc == 0 && (size_t)snprintf(out, cap, "%.*s", (int)b.len, b.data ? b.data : "") >= cap)
        rc = atr_error_set(err, "image template %s: the name is too long", tmpl);
    atr_buf_release(&b);
    return rc;
}

/* ---- one container ---- */

void atr_ctr_name(char *out, size_t cap, long pid, unsigned long n)
{
    snprintf(out, cap, "atr-%ld-%lu", pid, n);
}

/* argv = CLI [--runtime runc --cgroup-manager cgroupfs] words...; at most
 * 24 words. */
static void cli_argv(const struct atr_ctr_cli *cli, char **argv, const char *const *words)
{
    int n = 0;
    argv[n++] = (char *)cli->path;
    if (cli->runc) {
        static const char *const quirk[] = {"--runtime", "runc", "--cgroup-manager", "cgroupfs"};
        for (int i = 0; i < 4; i++)
            argv[n++] = (char *)quirk[i];
    }
    for (int i = 0; words[i] && i < 24; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
}

/* Is there a /bin/sh in root, its links resolved inside root? */
static bool has_sh(const char *root)
{
    int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return false;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
    int fd = (int)syscall(SYS_openat2, dir, "bin/sh", &how, sizeof how);
    close(dir);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* The merged root is podman's own directory (host root, 0555) without
 * the mount points a started container gets: made here, as the step's
 * root would own them, so the sandbox can mount /proc, /dev and /tmp and
 * a step may write to / as in a real container (in its upper layer). */
static int own_root(const char *root, struct atr_error *err)
{
    static const char *const dirs[] = {"proc", "dev", "tmp"};
    char path[PATH_MAX + 8];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        if (mkdir(path, i == 2 ? 01777 : 0755) == 0 &&
            lchown(path, ATR_SANDBOX_UID, ATR_SANDBOX_UID) < 0)
            return atr_error_set(err, "%s: %s", path, strerror(errno));
    }
    /* 0755: a step has no capabilities, so podman's 0555 would stop its
     * root from writing there */
    if (chown(root, ATR_SANDBOX_UID, ATR_SANDBOX_UID) < 0 || chmod(root, 0755) < 0)
        return atr_error_set(err, "%s: %s", root, strerror(errno));
    return 0;
}

static bool env_has(char **env, size_t n, const char *prefix)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

/* Env and WorkingDir from `image inspect --format '{{json .Config}}'`. */
static int read_config(struct atr_ctr *c, const char *text, size_t len, struct atr_error *err)
{
    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_json *cfg;
    struct atr_json_err je;
    if (atr_json_parse(&arena, text, len, NULL, &cfg, &je) < 0) {
        atr_arena_release(&arena);
        return atr_error_set(err, "image inspect: %u:%u: %s", je.line, je.col, je.msg);
    }
    const struct atr_json *env = atr_json_get(cfg, "Env");
    size_t n = 0, cap = (env && atr_json_is(env, ATR_JSON_ARRAY) ? env->u.kids.count : 0) + 3;
    c->env = xcalloc(cap, sizeof *c->env);
    for (const struct atr_json *e = cap > 3 ? env->u.kids.first : NULL; e; e = e->next)
        if (atr_json_is(e, ATR_JSON_STRING) && strchr(e->u.str.s, '='))
            c->env[n++] = xstrdup(e->u.str.s);
    if (!env_has(c->env, n, "PATH="))   /* as docker run does */
        c->env[n++] = xstrdup(DEFAULT_PATH);
    if (!env_has(c->env, n, "HOME="))
        c->env[n++] = xstrdup("HOME=/root");
    const char *wd = atr_json_get_str(cfg, "WorkingDir", NULL);
    snprintf(c->workdir, sizeof c->workdir, "%s", wd && wd[0] == '/' ? wd : "");
    atr_arena_release(&arena);
    return 0;
}

static int inspect(const struct atr_ctr_cli *cli, const char *image, struct atr_ctr *c,
                   struct atr_error *err)
{
    const char *words[] = {"image", "inspect", "--format", "{{json .Config}}", image, NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    int rc = run_ok(cli, argv, image, &o, err);
    if (rc == 0)
        rc = read_config(c, o.out.data, o.out.len, err);
    cli_out_release(&o);
    return rc;
}

int atr_ctr_image_exists(const struct atr_ctr_cli *cli, const char *image, struct atr_error *err)
{
    const char *words[] = {"image", "exists", image, NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    int rc = run_ok(cli, argv, image, &o, err);
    bool absent = rc < 0 && o.status != -1 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1;
    cli_out_release(&o);
    return absent ? atr_error_set(err, "%s: image not known (pull it first: atr never pulls)",
                                  image) : rc;
}

static int mount_root(const struct atr_ctr_cli *cli, struct atr_ctr *c, struct atr_error *err)
{
    const char *words[] = {"mount", c->name, NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    int rc = run_ok(cli, argv, c->name, &o, err);
    if (rc == 0) {
        o.out.data[strcspn(o.out.data, "\n")] = '\0';
        if (o.out.data[0] != '/' || snprintf(c->root, sizeof c->root, "%s", o.out.data) >=
                                        (int)sizeof c->root)
            rc = atr_error_set(err, "%s: `mount` gave no path", c->name);
    }
    cli_out_release(&o);
    return rc;
}

int atr_ctr_create(const struct atr_ctr_cli *cli, const char *image, const char *name,
                   struct atr_ctr *c, struct atr_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    char map[64];
    snprintf(map, sizeof map, "0:%u:%u", ATR_SANDBOX_UID, ATR_SANDBOX_IDS);
    const char *words[] = {"create", "--pull", "never", "--network", "none", "--name", name,
                           "--uidmap", map, "--gidmap", map, image, "/bin/sh", NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    char what[32];
    snprintf(what, sizeof what, "%s create", cli->name);
    int rc = run_ok(cli, argv, what, &o, err);
    cli_out_release(&o);
    c->created = rc == 0 || o.status == -1;   /* killed late: it may exist, rm -f it */
    if (rc == 0)
        rc = mount_root(cli, c, err);
    if (rc == 0 && !has_sh(c->root))
        rc = atr_error_set(err, "%s: no /bin/sh in the image (steps run as /bin/sh -c)", image);
    if (rc == 0)
        rc = own_root(c->root, err);
    if (rc == 0)
        rc = inspect(cli, image, c, err);
    if (rc < 0) {
        struct atr_error ignored;
        atr_ctr_remove(cli, c, &ignored);
    }
    return rc;
}

int atr_ctr_remove(const struct atr_ctr_cli *cli, struct atr_ctr *c, struct atr_error *err)
{
    int rc = 0;
    if (c->created) {   /* rm -f unmounts it too */
        const char *words[] = {"rm", "-f", c->name, NULL};
        char *argv[32];
        cli_argv(cli, argv, words);
        struct cli_out o;
        rc = run_ok(cli, argv, c->name, &o, err);
        cli_out_release(&o);
        c->created = false;
    }
    for (size_t i = 0; c->env && c->env[i]; i++)
        free(c->env[i]);
    free(c->env);
    c->env = NULL;
    return rc;
}

void atr_ctr_sweep_argv(const struct atr_ctr_cli *cli, long pid, char *buf, size_t cap,
                        char **argv)
{
    snprintf(buf, cap, "name=^atr-%ld-", pid);
    int n = 0;
    argv[n++] = (char *)cli->path;
    argv[n++] = "rm";
    argv[n++] = "-f";
    if (strcmp(cli->name, "podman") == 0) {   /* not its 10 s stop timeout first */
        argv[n++] = "--time";
        argv[n++] = "0";
    }
    argv[n++] = "--filter";
    argv[n++] = buf;
    argv[n] = NULL;
}

/* ---- a server container (`bench run`) ---- */

static void put_word(struct atr_buf *b, const char *w)
{
    atr_buf_putc(b, ' ');
    atr_buf_put_shell_word(b, w);
}

char *atr_ctr_run_command(const struct atr_ctr_cli *cli, const struct atr_ctr_run *r)
{
    struct atr_buf b = {0};
    atr_buf_puts(&b, "exec");
    put_word(&b, cli->path);
    if (cli->runc) {
        put_word(&b, "--runtime");
        put_word(&b, "runc");
        put_word(&b, "--cgroup-manager");
        put_word(&b, "cgroupfs");
    }
    atr_buf_puts(&b, cli->init ? " run --pull never --init" : " run --pull never");
    atr_buf_printf(&b, " --name %s", r->name);
    if (r->cgroup_parent) {
        put_word(&b, "--cgroup-parent");
        put_word(&b, r->cgroup_parent);
    }
    if (strcmp(cli->name, "podman") == 0)   /* podman's defaults exceed hard limits here */
        atr_buf_puts(&b, " --ulimit nofile=1024:1024 --ulimit nproc=4096:4096");
    if (r->container_port)
        atr_buf_printf(&b, " --publish 127.0.0.1:%u:%u", r->host_port, r->container_port);
    else
        atr_buf_puts(&b, " --network host");
    for (size_t i = 0; i < r->n_extra; i++)
        put_word(&b, r->extra[i]);
    put_word(&b, r->image);
    if (r->command) {
        put_word(&b, "/bin/sh");
        put_word(&b, "-c");
        put_word(&b, r->command);
    }
    atr_buf_append(&b, "", 1);
    return b.data;
}

int atr_ctr_oom_killed(const struct atr_ctr_cli *cli, const char *name, bool *oom,
                       struct atr_error *err)
{
    const char *words[] = {"inspect", "--format", "{{.State.OOMKilled}}", name, NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    int rc = run_ok(cli, argv, name, &o, err);
    *oom = rc == 0 && o.out.data && strncmp(o.out.data, "true", 4) == 0;
    cli_out_release(&o);
    return rc;
}

int atr_ctr_rm(const struct atr_ctr_cli *cli, const char *name, struct atr_error *err)
{
    /* podman's rm -f first waits the container's stop timeout (10 s) */
    bool podman = strcmp(cli->name, "podman") == 0;
    const char *words[] = {"rm", "-f", podman ? "--time" : name, "0", name, NULL};
    if (!podman)
        words[3] = NULL;
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    int rc = run_ok(cli, argv, name, &o, err);
    if (rc < 0 && strstr(err->msg, "no such container"))
        rc = 0;   /* never created: the CLI failed before */
    cli_out_release(&o);
    return rc;
}

/* The pid in "atr-<pid>-...", or 0 when name is not so. */
static long name_pid(const char *name)
{
    if (strncmp(name, "atr-", 4) != 0 || name[4] < '1' || name[4] > '9')
        return 0;
    char *end;
    long pid = strtol(name + 4, &end, 10);
    return *end == '-' && pid > 0 ? pid : 0;
}

int atr_ctr_sweep_stale(const struct atr_ctr_cli *cli, unsigned *removed, struct atr_error *err)
{
    *removed = 0;
    const char *words[] = {"ps", "-a", "--filter", "name=^atr-", "--format", "{{.Names}}", NULL};
    char *argv[32];
    cli_argv(cli, argv, words);
    struct cli_out o;
    if (run_ok(cli, argv, "listing containers", &o, err) < 0) {
        cli_out_release(&o);
        return -1;
    }
    int rc = 0;
    for (char *line = o.out.data, *next; rc == 0 && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        long pid = name_pid(line);
        /* a live pid may be a run (or a reused pid): never touched */
        if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        if ((rc = atr_ctr_rm(cli, line, err)) == 0)
            (*removed)++;
    }
    cli_out_release(&o);
    return rc;
}
