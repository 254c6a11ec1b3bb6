/* run-server.c - `atr bench run`'s server lifecycle: the port free
 * before and after, the start in its own process group and cgroup, readiness
 * polled with a deadline, SIGTERM then SIGKILL. */
#include "bench/run-impl.h"
#include "util/alloc.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Does anything listen on 127.0.0.1:port? */
static bool port_open(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool open_ = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return open_;
}

/* Binds a socket to 127.0.0.1:port (0: any) and lets it go: the port it
 * got, or 0 when it is taken. */
static unsigned bind_and_release(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    unsigned got = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    close(fd);
    return got;
}

/* A port nothing holds now, chosen below the kernel's ephemeral range
 * (net.ipv4.ip_local_port_range): between this and the server's bind,
 * which for a model server can be minutes, the port is free, and a port
 * from the ephemeral range could meanwhile go to any program's --port 0
 * listener or outgoing connection, whose answers the readiness poll would
 * then take for the server's (tests running side by side did). Below the
 * range only another program choosing ports this way can take it. Falls
 * back to an ephemeral port; 0 when none can be had. */
unsigned run_free_port(void)
{
    unsigned lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (f) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    unsigned base = lo / 2 > 1024 ? lo / 2 : 1024;
    if (lo > base) {
        uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(mono_s() * 1e9);
        for (int tries = 0; tries < 64; tries++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned port = base + (unsigned)(x % (lo - base));
            if (bind_and_release(port) == port && !port_open(port))
                return port;
        }
    }
    return bind_and_release(0);
}

/* Polls until nothing listens on the port; false at the deadline. */
static bool await_port_free(unsigned port, double limit_s)
{
    double until = mono_s() + limit_s;
    while (port_open(port)) {
        if (mono_s() > until)
            return false;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* ---- an "image" variant: the container atr runs itself ---- */

int run_expand_container(struct run *r)
{
    const struct atr_bench_variant *v = r->var;
    struct atr_error err;
    r->image = atr_bench_expand(v->image, &r->vars, false, &err);
    if (r->image && v->server)
        r->inner_cmd = atr_bench_expand(v->server, &r->vars, true, &err);
    r->run_args = xcalloc(v->n_run_args + 1, sizeof *r->run_args);
    bool ok = r->image && (!v->server || r->inner_cmd);
    for (size_t i = 0; ok && i < v->n_run_args; i++)
        ok = (r->run_args[i] = atr_bench_expand(v->run_args[i], &r->vars, false, &err)) != NULL;
    return ok ? 0 : atr_error_set(r->rn->err, "%s", err.msg);
}

/* Did the container see an OOM kill? The engine's word on its init, and
 * (v1) the OOM events at the server group's limit: v1 counts a kill only
 * in the victim's own group, the container's, which the engine removes
 * with the container. At least one kill then; the count where known. */
static void container_oom(struct run *r)
{
    bool killed = false;
    struct atr_error ignored;
    if (r->ctr_name[0])
        atr_ctr_oom_killed(&r->rn->ctr, r->ctr_name, &killed, &ignored);
    r->ctr_oom |= killed || atr_cg_oom_events(r->oom_fd) > 0;
    if (r->ctr_oom && r->oom_kills <= 0)
        r->oom_kills = 1;
}

/* Stops and removes the container (whatever state it is in). */
static void remove_container(struct run *r)
{
    if (!r->ctr_name[0])
        return;
    struct atr_error err;
    if (atr_ctr_rm(&r->rn->ctr, r->ctr_name, &err) < 0)
        run_log_line(r, "<== container %s not removed: %s", r->ctr_name, err.msg);
    r->ctr_name[0] = '\0';
}

void run_release_container(struct run *r)
{
    remove_container(r);
    if (r->oom_fd >= 0)
        close(r->oom_fd);
    r->oom_fd = -1;
    for (size_t i = 0; r->run_args && r->run_args[i]; i++)
        free(r->run_args[i]);
    free(r->run_args);
    free(r->image);
    free(r->inner_cmd);
    r->run_args = NULL;
    r->image = r->inner_cmd = NULL;
}

/* The command that starts the container, in the server's group (its
 * cgroup parent, so memory peak and OOM are the server's) and under its
 * memory limit. */
static int container_command(struct run *r)
{
    struct runner *rn = r->rn;
    char parent[PATH_MAX];
    struct atr_error err;
    if (r->has_cg && atr_cg_rel_path(&r->cg, parent, sizeof parent, &err) < 0)
        return atr_error_set(rn->err, "server cgroup: %s", err.msg);
    atr_ctr_name(r->ctr_name, sizeof r->ctr_name, (long)getpid(), ++rn->n_containers);
    struct atr_ctr_run cr = {
        .name = r->ctr_name, .image = r->image, .cgroup_parent = r->has_cg ? parent : NULL,
        .host_port = r->port, .container_port = r->var->container_port,
        .extra = (const char *const *)r->run_args, .n_extra = r->var->n_run_args,
        .command = r->inner_cmd,
    };
    free(r->server_cmd);
    r->server_cmd = atr_ctr_run_command(&rn->ctr, &cr);
    return 0;
}

/* The variant's memory limit on the server's group; v1: and the OOM watch. */
static int limit_memory(struct run *r)
{
    struct atr_error err;
    if (r->var->memory) {
        struct atr_cg_limits l = ATR_CG_LIMITS_NONE;
        l.mem_max = (int64_t)r->var->memory;
        if (atr_cg_set_limits(&r->rn->host, &r->cg, &l, &err) < 0)
            return atr_error_set(r->rn->err, "memory limit of the %s server: %s", r->var->name,
                                 err.msg);
    }
    r->oom_fd = atr_cg_oom_watch(&r->cg);
    return 0;
}

int run_server_start(struct run *r)
{
    struct runner *rn = r->rn;
    if (port_open(r->port))
        return atr_error_set(rn->err, "port %u is in use before the %s server of %s started: "
                             "another server holds it (stop it, or set \"port\" in %s)",
                             r->port, r->var->name, r->it->human_commit, rn->s->path);
    struct atr_error err;
    if (rn->use_cg) {
        char name[64];
        snprintf(name, sizeof name, "server-%zu", ++rn->serial);
        if (atr_cg_create(&rn->host, &rn->root, name, &r->cg, &err) < 0)
            return atr_error_set(rn->err, "server cgroup: %s", err.msg);
        r->has_cg = true;
        if (limit_memory(r) < 0)
            return -1;
    }
    if (r->image && container_command(r) < 0)
        return -1;
    run_log_line(r, "==> server: %s", r->server_cmd);
    struct atr_spawn_opts so = {   /* a container's CLI outside: only the container counts */
        .command = r->server_cmd, .env = rn->env, .host = &rn->host,
        .cg = r->has_cg && !r->image ? &r->cg : NULL,
    };
    if (atr_spawn_start(&so, r->log_fd, &r->proc, &err) < 0)
        return atr_error_set(rn->err, "server of %s %s: %s", r->it->human_commit, r->var->name,
                             err.msg);
    r->started = true;
    atr_guard_watch(&rn->guard, r->proc.pid);
    return 0;
}

/* The last line the server printed, from the end of the log: most
 * servers' last words say why they stopped. Skipped: atr's own "==> " and
 * "<== " lines, what came before the server started (prepare's output),
 * and a benchmark command's output (logged between its ==> and <== lines).
 * "" if none. */
static void last_server_line(const struct run *r, char *out, size_t cap)
{
    char *tail = run_log_tail(r, 4096, 40);
    bool command = r->rn->s->workload.mode == ATR_BENCH_COMMAND, in_command = false;
    *out = '\0';
    for (char *line = tail, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "==> server: ", 12) == 0)
            *out = '\0';
        if (command && strncmp(line, "==> benchmark: ", 15) == 0)
            in_command = true;
        else if (strncmp(line, "<== benchmark: ", 15) == 0)
            in_command = false;
        else if (*line && !in_command && strncmp(line, "==> ", 4) != 0 &&
                 strncmp(line, "<== ", 4) != 0)
            snprintf(out, cap, "%s", line);
    }
    free(tail);
}

/* The server exited on its own in phase: server_crashed, or oom. */
void run_server_died(struct run *r, const char *phase)
{
    r->exit_phase = phase;
    char why[64], line[320];
    run_describe_exit(&r->exit, why, sizeof why);
    if (r->image)
        container_oom(r);
    if (r->oom_kills > 0) {
        run_decide(r, ATR_BENCH_OOM, "Server's container was OOM-killed during %s (%s)", phase,
                   why);
    } else if (run_log_says_oom(r, line, sizeof line)) {
        run_decide(r, ATR_BENCH_OOM, "Server ran out of memory during %s (%s): %s", phase, why, line);
    } else {
        last_server_line(r, line, sizeof line);
        run_decide(r, ATR_BENCH_SERVER_CRASHED, "Server crashed during %s: %s%s%s", phase, why,
                   *line ? ": " : "", line);
    }
    run_log_line(r, "<== server: %s during %s", why, phase);
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    return size * n;
}

/* One GET of the readiness URL: its status, or 0 with why set. */
static long probe(CURL *h, char *why, size_t cap, long timeout_ms)
{
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK)
        snprintf(why, cap, "%s", *ebuf ? ebuf : curl_easy_strerror(rc));
    else if (status != 200)
        snprintf(why, cap, "HTTP %ld", status);
    return status;
}

/* Polls the readiness URL until 200, the server's exit, the deadline or a
 * stop. true when ready. */
bool run_await_ready(struct run *r)
{
    CURL *h = curl_easy_init();
    if (!h) {
        run_decide(r, ATR_BENCH_STARTUP_TIMEOUT, "Server not ready: libcurl cannot start");
        return false;
    }
    curl_easy_setopt(h, CURLOPT_URL, r->ready_url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_PROXY, "");      /* never through an http_proxy */
    double start = mono_s(), until = start + r->var->startup_timeout_s;
    char why[CURL_ERROR_SIZE + 32] = "no answer yet";
    bool ready = false;
    while (!run_stopped(r)) {
        double left = until - mono_s();
        if (left <= 0)
            break;
        long ms = (long)(left * 1000) + 1;
        if (probe(h, why, sizeof why, ms < PROBE_TIMEOUT_MS ? ms : PROBE_TIMEOUT_MS) == 200) {
            ready = true;
            break;
        }
        if (atr_spawn_wait(&r->proc, READY_POLL_MS, &r->exit) == 1) {
            curl_easy_cleanup(h);
            run_server_died(r, "startup");
            return false;
        }
    }
    curl_easy_cleanup(h);
    r->startup_s = mono_s() - start;
    if (ready) {
        r->ready_unix = unix_s();
        run_log_line(r, "==> ready after %.3f s: %s", r->startup_s, r->ready_url);
        return true;
    }
    if (run_stopped(r))
        r->interrupted = true;
    else
        run_decide(r, ATR_BENCH_STARTUP_TIMEOUT, "Server not ready within %g s (%s: %s)",
               r->var->startup_timeout_s, r->ready_url, why);
    return false;
}

static void read_cg_stats(struct run *r)
{
    if (!r->has_cg)
        return;
    struct atr_cg_stats cs;
    struct atr_error err;
    if (atr_cg_read_stats(&r->rn->host, &r->cg, &cs, &err) == 0) {
        r->oom_kills = cs.oom_kills;
        r->mem_peak = cs.mem_peak;
    }
}

/* SIGTERM to the process group, the grace period, then SIGKILL; the
 * cgroup's stragglers killed and the group removed; the port free again. */
int run_server_stop(struct run *r)
{
    struct runner *rn = r->rn;
    if (!r->started)
        return 0;
    run_progress(r, ATR_BENCH_PHASE_STOP);
    double grace = rn->o->grace_s > 0 ? rn->o->grace_s : ATR_BENCH_GRACE_S;
    double t = mono_s();
    r->term_unix = unix_s();
    if (!r->proc.reaped) {
        kill(-r->proc.pid, SIGTERM);
        kill(r->proc.pid, SIGTERM);
    }
    double until = t + grace;
    while (mono_s() < until) {
        struct atr_spawn_result res;
        bool shell_gone = atr_spawn_wait(&r->proc, 2, r->proc.reaped ? &res : &r->exit) == 1;
        if (shell_gone && !atr_spawn_group_alive(&r->proc))
            break;
        if (shell_gone) {            /* its children are still shutting down */
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    r->killed = !r->proc.reaped || atr_spawn_group_alive(&r->proc);
    atr_spawn_kill(&r->proc, &r->exit);
    read_cg_stats(r);
    if (r->image) {              /* the CLI is gone; the container may not be */
        container_oom(r);
        remove_container(r);
    }
    struct atr_error err;
    if (r->has_cg) {
        atr_cg_remove(&rn->host, &r->cg, &err);
        r->has_cg = false;
    }
    atr_guard_watch(&rn->guard, 0);
    r->started = false;
    run_log_line(r, "<== server stopped%s", r->killed ? " with SIGKILL after the grace period" : "");
    if (!await_port_free(r->port, ATR_BENCH_PORT_FREE_S))
        return atr_error_set(rn->err, "port %u still in use %g s after the %s server of %s "
                             "stopped: a process outside its process group and cgroup holds "
                             "it (a container? see docs/bench.md)", r->port,
                             ATR_BENCH_PORT_FREE_S, r->var->name, r->it->human_commit);
    r->port_free_unix = unix_s();
    r->teardown_s = mono_s() - t;
    return 0;
}
