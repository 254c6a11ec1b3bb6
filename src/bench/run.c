/* run.c - `atr bench run`'s runner (bench/run.h): one run at a time, each
 * through prepare -> start -> ready -> benchmark -> stop -> result, with
 * exactly one outcome decided from what was seen, in this order:
 *
 *   prepare exited non-zero                       patch_failed
 *   server exited (before ready or during bench)  oom if its log has an OOM
 *                                                 line or its cgroup an OOM
 *                                                 kill, else server_crashed
 *   not ready by the startup deadline             startup_timeout
 *   benchmark past its deadline                   benchmark_timeout
 *   no successful request / no figure printed     no_metrics (oom when the
 *                                                 log says so)
 *   otherwise                                     success
 *
 * A Ctrl-C (o->stop) tears the current server down and writes no result
 * for the run it interrupted, so a resumed run does it again. */
#include "bench/run.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/metrics.h"
#include "exp/exp.h"
#include "json/writer.h"
#include "runner/cgroup.h"
#include "runner/guard.h"
#include "runner/spawn.h"
#include "stats/result.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/output.h"

extern char **environ;

#define READY_POLL_MS 5              /* readiness probe interval */
#define PROBE_TIMEOUT_MS 1000        /* one probe: a server that accepts but hangs */
#define LOG_TAIL_LINES 50
#define LOG_TAIL_BYTES 8192
#define RAW_OUTPUT_MAX (64u << 10)   /* raw_output keeps the end of the output */
#define STEP_OUTPUT_MAX (4u << 20)   /* prepare/command output kept in memory */
#define OOM_SCAN_BYTES (8u << 20)    /* the end of the server log searched for OOM */
#define CRASH_SETTLE_MS 300          /* failed requests: did the server die? */

/* ---- time ---------------------------------------------------------------- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double unix_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the run's state ------------------------------------------------------- */

struct runner {
    const struct atr_bench_spec *s;
    const struct atr_bench_run_opts *o;
    struct atr_bench_run_stats *st;
    struct atr_error *err;
    struct atr_cg_host host;
    bool use_cg;                     /* a cgroup per server */
    struct atr_cg root;
    struct atr_guard guard;
    char **env;                      /* environ with the atr binary's folder on PATH */
    struct atr_workload workload;    /* serving: loaded once, before anything starts */
    struct atr_schedule schedule;
    char *path_var;
    char *results_dir, *logs_dir;
    size_t index, total, serial;
};

/* Why the benchmark phase ended early. */
enum cut { CUT_NONE, CUT_TIMEOUT, CUT_CRASH, CUT_INTERRUPT };

struct run {
    struct runner *rn;
    const struct atr_bench_item *it;
    const struct atr_bench_variant *var;
    const struct atr_bench_agent *agent;     /* NULL: not a per-agent variant */
    const struct atr_bench_override *ov;
    struct atr_bench_vars vars;
    unsigned port;                           /* where the server listens */
    char name[256];
    char *result_path, *log_path;
    int log_fd;
    char *server_cmd, *ready_url;
    double t0, t0_unix;
    /* what happened */
    bool decided, interrupted;
    enum atr_bench_outcome outcome;
    char error[1024];
    struct atr_bench_metrics m;
    struct atr_buf raw;                      /* raw_output */
    char *bench_summary;                     /* one line: requests done/failed */
    /* the server */
    bool started, has_cg;
    struct atr_spawn_proc proc;
    struct atr_cg cg;
    struct atr_spawn_result exit;
    const char *exit_phase;                  /* "startup", "benchmark", or NULL: stopped */
    bool killed;                             /* needed SIGKILL at stop */
    int64_t oom_kills, mem_peak;
    /* timing */
    double prepare_s, startup_s, benchmark_s, teardown_s;
    double ready_unix, term_unix, port_free_unix;
};

static void progress(struct run *r, enum atr_bench_phase ph)
{
    const struct atr_bench_run_opts *o = r->rn->o;
    if (!o->on_progress)
        return;
    struct atr_bench_progress p = {
        .index = r->rn->index, .total = r->rn->total, .commit = r->it->human_commit,
        .variant = r->var->name, .agent = r->agent ? r->agent->name : NULL, .phase = ph,
        .elapsed_s = mono_s() - r->t0, .outcome = r->outcome,
        .error = r->outcome == ATR_BENCH_SUCCESS ? NULL : r->error,
        .result_path = r->result_path,
    };
    o->on_progress(o->ctx, &p);
}

static bool stopped(const struct run *r)
{
    return r->rn->o->stop && *r->rn->o->stop;
}

/* Sets the outcome once: the first cause seen is the one reported. */
static void decide(struct run *r, enum atr_bench_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void decide(struct run *r, enum atr_bench_outcome o, const char *fmt, ...)
{
    if (r->decided)
        return;
    r->decided = true;
    r->outcome = o;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

/* ---- the log ---------------------------------------------------------------- */

static void log_text(struct run *r, const char *text, size_t len)
{
    while (len) {
        ssize_t n = write(r->log_fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;                  /* a full disk: the result still gets written */
        text += n;
        len -= (size_t)n;
    }
}

static void log_line(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(struct run *r, const char *fmt, ...)
{
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    log_text(r, line, len);
}

/* The last `cap` bytes of the log (from a line start where one is near). */
static char *log_tail(const struct run *r, size_t cap, size_t max_lines)
{
    int fd = open(r->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return xstrdup("");
    off_t size = lseek(fd, 0, SEEK_END);
    size_t want = size > 0 && (uint64_t)size < cap ? (size_t)size : size > 0 ? cap : 0;
    char *buf = xmalloc(want + 1);
    ssize_t n = pread(fd, buf, want, size - (off_t)want);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    size_t len = n > 0 ? (size_t)n : 0, lines = 0;
    size_t start = len;
    while (start > 0) {
        if (buf[start - 1] == '\n' && start != len && ++lines >= max_lines)
            break;
        start--;
    }
    memmove(buf, buf + start, len - start + 1);
    return buf;
}

/* An OOM line in the server log, or NULL; the line is copied to out. */
static bool log_says_oom(const struct run *r, char *out, size_t cap)
{
    char *text = log_tail(r, OOM_SCAN_BYTES, SIZE_MAX);
    bool found = false;
    for (char *line = text, *next; line && *line && !found; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (atr_bench_says_oom(line)) {
            snprintf(out, cap, "%.300s", line);
            found = true;
        }
    }
    free(text);
    return found;
}

/* ---- commands ----------------------------------------------------------------- */

/* Runs one command to completion (prepare, command-mode benchmark, cleanup)
 * with its output appended to the log; its exit status, or -1 with the
 * reason in r->error when it could not start. */
static int run_command(struct run *r, const char *label, const char *cmd, double timeout_s,
                       const struct atr_spawn_watch *watch, struct atr_spawn_result *res)
{
    log_line(r, "==> %s: %s", label, cmd);
    struct atr_spawn_opts so = {
        .command = cmd, .env = r->rn->env, .max_output = STEP_OUTPUT_MAX,
        .timeout_ms = timeout_s > 0 ? (int64_t)(timeout_s * 1000) : 0, .watch = watch,
    };
    struct atr_error err;
    if (atr_spawn_run(&so, res, &err) < 0) {
        snprintf(r->error, sizeof r->error, "%s could not start: %s", label, err.msg);
        log_line(r, "%s", r->error);
        return -1;
    }
    log_text(r, res->output, res->output_len);
    if (res->output_truncated)
        log_line(r, "[%llu more bytes of output not kept]",
                 (unsigned long long)(res->output_bytes - res->output_len));
    log_line(r, "<== %s: %s %d after %.3f s", label, res->term_signal ? "signal" : "exit status",
             res->term_signal ? res->term_signal : res->exit_code, (double)res->wall_us / 1e6);
    return res->exit_code;
}

/* The last non-empty line of text, for an error message. */
static void last_line(const char *text, size_t len, char *out, size_t cap)
{
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    size_t start = len;
    while (start && text[start - 1] != '\n')
        start--;
    size_t n = len - start < cap - 1 ? len - start : cap - 1;
    memcpy(out, text + start, n);
    out[n] = '\0';
}

static void describe_exit(const struct atr_spawn_result *res, char *out, size_t cap)
{
    if (res->term_signal)
        snprintf(out, cap, "killed by signal %d (%s)", res->term_signal,
                 strsignal(res->term_signal));
    else
        snprintf(out, cap, "exit status %d", res->exit_code);
}

static int prepare(struct run *r)
{
    if (!r->var->prepare)
        return 0;
    struct atr_error err;
    char *cmd = atr_bench_expand(r->var->prepare, &r->vars, true, &err);
    if (!cmd)
        return atr_error_set(r->rn->err, "%s", err.msg);
    progress(r, ATR_BENCH_PHASE_PREPARE);
    double t = mono_s();
    struct atr_spawn_result res;
    int rc = run_command(r, "prepare", cmd, 0, NULL, &res);
    r->prepare_s = mono_s() - t;
    free(cmd);
    if (rc == 0) {
        free(res.output);
        return 0;
    }
    char why[64], line[256] = "";
    if (rc > 0) {
        describe_exit(&res, why, sizeof why);
        last_line(res.output, res.output_len, line, sizeof line);
        decide(r, ATR_BENCH_PATCH_FAILED, "Patch failed: prepare ended with %s%s%s", why,
               *line ? ": " : "", line);
        atr_buf_append(&r->raw, res.output, res.output_len);
    } else {
        decide(r, ATR_BENCH_PATCH_FAILED, "Patch failed: %s", r->error);
    }
    free(res.output);
    return 0;
}

/* ---- the port ------------------------------------------------------------------ */

/* Does anything listen on 127.0.0.1:port? */
/* A port nothing listens on now, from the kernel's ephemeral range; 0
 * when none can be had. */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

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

/* ---- the server ------------------------------------------------------------------ */

static int server_start(struct run *r)
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
    }
    log_line(r, "==> server: %s", r->server_cmd);
    struct atr_spawn_opts so = {
        .command = r->server_cmd, .env = rn->env, .host = &rn->host,
        .cg = r->has_cg ? &r->cg : NULL,
    };
    if (atr_spawn_start(&so, r->log_fd, &r->proc, &err) < 0)
        return atr_error_set(rn->err, "server of %s %s: %s", r->it->human_commit, r->var->name,
                             err.msg);
    r->started = true;
    atr_guard_watch(&rn->guard, r->proc.pid);
    return 0;
}

/* The server exited on its own in phase: server_crashed, or oom. */
static void server_died(struct run *r, const char *phase)
{
    r->exit_phase = phase;
    char why[64], line[320];
    describe_exit(&r->exit, why, sizeof why);
    log_line(r, "<== server: %s during %s", why, phase);
    if (log_says_oom(r, line, sizeof line))
        decide(r, ATR_BENCH_OOM, "Server ran out of memory during %s (%s): %s", phase, why, line);
    else
        decide(r, ATR_BENCH_SERVER_CRASHED, "Server crashed during %s: %s", phase, why);
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
static bool await_ready(struct run *r)
{
    CURL *h = curl_easy_init();
    if (!h) {
        decide(r, ATR_BENCH_STARTUP_TIMEOUT, "Server not ready: libcurl cannot start");
        return false;
    }
    curl_easy_setopt(h, CURLOPT_URL, r->ready_url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_PROXY, "");      /* never through an http_proxy */
    double start = mono_s(), until = start + r->var->startup_timeout_s;
    char why[CURL_ERROR_SIZE + 32] = "no answer yet";
    bool ready = false;
    while (!stopped(r)) {
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
            server_died(r, "startup");
            return false;
        }
    }
    curl_easy_cleanup(h);
    r->startup_s = mono_s() - start;
    if (ready) {
        r->ready_unix = unix_s();
        log_line(r, "==> ready after %.3f s: %s", r->startup_s, r->ready_url);
        return true;
    }
    if (stopped(r))
        r->interrupted = true;
    else
        decide(r, ATR_BENCH_STARTUP_TIMEOUT, "Server not ready within %g s (%s: %s)",
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
static int server_stop(struct run *r)
{
    struct runner *rn = r->rn;
    if (!r->started)
        return 0;
    progress(r, ATR_BENCH_PHASE_STOP);
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
    struct atr_error err;
    if (r->has_cg) {
        atr_cg_remove(&rn->host, &r->cg, &err);
        r->has_cg = false;
    }
    atr_guard_watch(&rn->guard, 0);
    r->started = false;
    log_line(r, "<== server stopped%s", r->killed ? " with SIGKILL after the grace period" : "");
    if (!await_port_free(r->port, ATR_BENCH_PORT_FREE_S))
        return atr_error_set(rn->err, "port %u still in use %g s after the %s server of %s "
                             "stopped: a process outside its process group and cgroup holds "
                             "it (a container? see docs/bench.md)", r->port,
                             ATR_BENCH_PORT_FREE_S, r->var->name, r->it->human_commit);
    r->port_free_unix = unix_s();
    r->teardown_s = mono_s() - t;
    return 0;
}

/* ---- the benchmark: atr's own client ---------------------------------------------- */

struct watchdog {
    struct run *r;
    double until;
    volatile sig_atomic_t stop;      /* what exp polls */
    atomic_int cut;                  /* enum cut */
    atomic_bool done;
};

/* Ends the benchmark early on its deadline, the server's death or a stop. */
static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    while (!atomic_load(&w->done)) {
        siginfo_t si = {0};
        enum cut c = CUT_NONE;
        if (stopped(w->r))
            c = CUT_INTERRUPT;
        else if (mono_s() > w->until)
            c = CUT_TIMEOUT;
        else if (waitid(P_PID, (id_t)w->r->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                 si.si_pid == w->r->proc.pid)
            c = CUT_CRASH;
        if (c != CUT_NONE) {
            atomic_store(&w->cut, c);
            w->stop = 1;
            return NULL;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* The generated workload: n single-turn sessions of fixed lengths. */
static void generated_workload(const struct atr_bench_workload *wl, struct atr_workload *w)
{
    *w = (struct atr_workload)ATR_WORKLOAD_INIT;
    w->block_size = 16;
    w->n_sessions = w->n_turns = (size_t)wl->requests;
    w->sessions = xcalloc(w->n_sessions, sizeof *w->sessions);
    for (size_t i = 0; i < w->n_sessions; i++) {
        struct atr_session *s = &w->sessions[i];
        s->trace_id = xasprintf("request-%zu", i);
        s->turns = xcalloc(1, sizeof *s->turns);
        s->n_turns = 1;
        s->turns[0].prompt_tokens = (uint32_t)wl->input_tokens;
        s->turns[0].output_tokens = (uint32_t)wl->output_tokens;
    }
}

/* The serving workload, read before anything starts: a trace that cannot
 * be read is the spec's fault, not a run's outcome. */
static int load_workload(struct runner *rn)
{
    const struct atr_bench_workload *wl = &rn->s->workload;
    struct atr_workload *w = &rn->workload;
    struct atr_schedule *sched = &rn->schedule;
    atr_schedule_defaults(sched);
    if (wl->mode != ATR_BENCH_SERVING)
        return 0;
    if (wl->trace) {
        char *paths[1] = {(char *)wl->trace};
        if (atr_workload_load(w, paths, 1, NULL, 16, rn->err) < 0)
            return -1;
        if (!w->n_turns)
            return atr_error_set(rn->err, "%s: no llm steps to send", wl->trace);
    } else {
        generated_workload(wl, w);
        sched->kind = ATR_ARRIVAL_BURST;
    }
    if (wl->rate > 0) {
        sched->kind = ATR_ARRIVAL_POISSON;
        sched->rate = wl->rate;
    }
    return 0;
}

static void summarize_failures(struct run *r, const struct atr_llm_summary *sum, size_t total)
{
    struct atr_buf b = ATR_BUF_INIT;
    atr_buf_printf(&b, "%lld of %zu requests succeeded", (long long)sum->completed, total);
    if ((size_t)(sum->completed + sum->failed) < total)
        atr_buf_printf(&b, ", %zu not done", total - (size_t)(sum->completed + sum->failed));
    for (size_t i = 0; i < sum->n_failures && i < 4; i++)
        atr_buf_printf(&b, "%s%s: %lld", i ? ", " : " (", sum->failures[i].reason,
                       (long long)sum->failures[i].count);
    if (sum->n_failures)
        atr_buf_printf(&b, "%s)", sum->n_failures > 4 ? ", ..." : "");
    r->bench_summary = xstrdup(b.data ? b.data : "");
    atr_buf_release(&b);
}

/* Figures, the text block and the failure line from the run's records. */
static void serving_figures(struct run *r, const struct atr_target *t,
                            const struct atr_exp_cfg *cfg, const struct atr_exp_result *res)
{
    struct atr_llm_bench_config bc;
    atr_exp_bench_config(t, cfg, res, "", &bc);
    bc.percentiles[0] = 90;
    bc.percentiles[1] = 99;
    bc.n_percentiles = 2;
    bc.e2el_section = true;
    struct atr_llm_summary sum;
    struct atr_error err;
    if (atr_llm_summarize(res->recs, res->n, &bc, &sum, &err) < 0) {
        snprintf(r->error, sizeof r->error, "%s", err.msg);
        return;
    }
    atr_bench_metrics_from_summary(&r->m, &sum, &bc);
    atr_llm_write_block(&r->raw, &sum, &bc);
    summarize_failures(r, &sum, res->total);
    atr_buf_printf(&r->raw, "%s\n", r->bench_summary);
    atr_llm_summary_release(&sum);
}

static void bench_serving(struct run *r, struct watchdog *wd)
{
    struct runner *rn = r->rn;
    struct atr_target t;
    struct atr_error err;
    char base[512];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", r->port);
    if (atr_target_parse(&t, base, 1, &err) < 0) {
        decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", err.msg);
        return;
    }
    t.body.model = r->vars.model;
    t.body.force_length = rn->s->workload.ignore_eos;
    struct atr_exp_cfg cfg = {
        .workload = &rn->workload, .schedule = &rn->schedule, .stop = &wd->stop,
        .max_concurrency = (unsigned)rn->s->workload.concurrency,
    };
    struct atr_exp_result res;
    log_line(r, "==> benchmark: %zu requests to %s, model %s", rn->workload.n_turns, base,
             r->vars.model);
    if (atr_exp_run(&t, &cfg, &res, &err) < 0) {
        snprintf(r->error, sizeof r->error, "%s", err.msg);
        memset(&res, 0, sizeof res);
    } else {
        serving_figures(r, &t, &cfg, &res);
        *r->error = '\0';
    }
    log_line(r, "<== benchmark: %s", r->bench_summary ? r->bench_summary : r->error);
    atr_exp_result_release(&res);
    atr_target_release(&t);
}

/* ---- the benchmark: a command ------------------------------------------------------- */

/* The command's watch: the server's death ends the command too. */
static void command_watch(void *ctx, bool fd_ready)
{
    struct watchdog *wd = ctx;
    siginfo_t si = {0};
    if (stopped(wd->r))
        atomic_store(&wd->cut, CUT_INTERRUPT);
    else if (waitid(P_PID, (id_t)wd->r->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
             si.si_pid == wd->r->proc.pid)
        atomic_store(&wd->cut, CUT_CRASH);
    else
        return;
    /* Kills every child atr has alive: the command, and the server
     * (dead already, or being torn down for the interrupt anyway). */
    atr_spawn_kill_all();
}

static void bench_command(struct run *r, struct watchdog *wd)
{
    struct atr_error err;
    char *cmd = atr_bench_expand(r->rn->s->workload.command, &r->vars, true, &err);
    if (!cmd) {
        decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", err.msg);
        return;
    }
    struct atr_spawn_watch watch = {.fd = -1, .tick_ms = 20, .fn = command_watch, .ctx = wd};
    struct atr_spawn_result res;
    int rc = run_command(r, "benchmark", cmd, r->var->benchmark_timeout_s, &watch, &res);
    free(cmd);
    if (rc < 0)
        return;
    if (res.timed_out && atomic_load(&wd->cut) == CUT_NONE)
        atomic_store(&wd->cut, CUT_TIMEOUT);
    atr_bench_metrics_parse(&r->m, res.output, res.output_len);
    size_t keep = res.output_len < RAW_OUTPUT_MAX ? res.output_len : RAW_OUTPUT_MAX;
    atr_buf_append(&r->raw, res.output + res.output_len - keep, keep);
    char why[64];
    describe_exit(&res, why, sizeof why);
    r->bench_summary = xasprintf("the command ended with %s, %zu figure%s in its output", why,
                                 r->m.n_figures, r->m.n_figures == 1 ? "" : "s");
    free(res.output);
}

/* ---- the benchmark phase --------------------------------------------------------------- */

static void benchmark(struct run *r)
{
    progress(r, ATR_BENCH_PHASE_BENCHMARK);
    struct watchdog wd = {.r = r};
    double start = mono_s();
    wd.until = start + r->var->benchmark_timeout_s;
    bool serving = r->rn->s->workload.mode == ATR_BENCH_SERVING;
    pthread_t th;
    bool threaded = serving && pthread_create(&th, NULL, watchdog_main, &wd) == 0;
    if (serving)
        bench_serving(r, &wd);
    else
        bench_command(r, &wd);
    atomic_store(&wd.done, true);
    if (threaded)
        pthread_join(th, NULL);
    r->benchmark_s = mono_s() - start;
    enum cut cut = (enum cut)atomic_load(&wd.cut);
    /* Requests that failed may be the server dying: let its exit show. */
    if (cut == CUT_NONE && r->m.failed > 0 &&
        atr_spawn_wait(&r->proc, CRASH_SETTLE_MS, &r->exit) == 1)
        cut = CUT_CRASH;
    if (cut == CUT_CRASH || (cut != CUT_INTERRUPT && atr_spawn_wait(&r->proc, 0, &r->exit) == 1)) {
        atr_spawn_wait(&r->proc, CRASH_SETTLE_MS, &r->exit);
        if (r->proc.reaped) {
            server_died(r, "the benchmark");
            return;
        }
    }
    if (cut == CUT_INTERRUPT || stopped(r)) {
        r->interrupted = true;
        return;
    }
    if (cut == CUT_TIMEOUT) {
        decide(r, ATR_BENCH_BENCHMARK_TIMEOUT, "Benchmark timed out after %g s%s%s",
               r->var->benchmark_timeout_s, r->bench_summary ? ": " : "",
               r->bench_summary ? r->bench_summary : "");
        return;
    }
}

/* After the server stopped: figures or none, and OOM signs. */
static void final_outcome(struct run *r)
{
    char line[320];
    if (r->decided || r->interrupted)
        return;
    bool metrics = r->m.n_figures > 0 &&
                   (r->rn->s->workload.mode == ATR_BENCH_COMMAND || r->m.completed > 0);
    if (metrics) {
        decide(r, ATR_BENCH_SUCCESS, "%s", "");
        return;
    }
    if (r->oom_kills > 0)
        decide(r, ATR_BENCH_OOM, "Server's cgroup had %lld OOM kill%s; no metrics",
               (long long)r->oom_kills, r->oom_kills == 1 ? "" : "s");
    else if (log_says_oom(r, line, sizeof line))
        decide(r, ATR_BENCH_OOM, "Server ran out of memory: %s", line);
    else {
        char why[sizeof r->error];   /* r->error is where decide writes */
        snprintf(why, sizeof why, "%s", r->bench_summary ? r->bench_summary
                                         : *r->error      ? r->error
                                                          : "none produced");
        decide(r, ATR_BENCH_NO_METRICS, "No metrics: %s", why);
    }
}

/* ---- the result file ---------------------------------------------------------------------- */

static void write_timestamp(struct atr_jw *w)
{
    time_t now = time(NULL);
    struct tm tm;
    char ts[32];
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    atr_jw_kv_str(w, "timestamp", ts);
}

static void kv_num(struct atr_jw *w, const char *key, double v, int digits)
{
    atr_jw_key(w, key);
    if (isfinite(v) && v > 0)
        atr_jw_fixed(w, v, digits);
    else
        atr_jw_null(w);
}

static void write_timing(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "timing");
    atr_jw_object_begin(w);
    kv_num(w, "prepare_s", r->prepare_s, 3);
    kv_num(w, "startup_s", r->startup_s, 6);
    kv_num(w, "ready_unix_s", r->ready_unix, 6);
    kv_num(w, "benchmark_s", r->benchmark_s, 3);
    kv_num(w, "term_unix_s", r->term_unix, 6);
    kv_num(w, "teardown_s", r->teardown_s, 6);
    kv_num(w, "port_free_unix_s", r->port_free_unix, 6);
    atr_jw_object_end(w);
}

static void write_server_exit(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "server_exit");
    if (!r->proc.reaped) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "phase", r->exit_phase ? r->exit_phase : "stopped");
    atr_jw_key(w, "status");
    if (r->exit.term_signal)
        atr_jw_null(w);
    else
        atr_jw_int(w, r->exit.exit_code);
    atr_jw_key(w, "signal");
    if (r->exit.term_signal)
        atr_jw_int(w, r->exit.term_signal);
    else
        atr_jw_null(w);
    atr_jw_key(w, "killed");
    atr_jw_bool(w, r->killed);
    atr_jw_key(w, "oom_kills");
    atr_jw_int(w, r->oom_kills < 0 ? 0 : r->oom_kills);
    atr_jw_key(w, "memory_peak_bytes");
    if (r->mem_peak >= 0)
        atr_jw_int(w, r->mem_peak);
    else
        atr_jw_null(w);
    atr_jw_object_end(w);
}

static void write_override(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "model_override");
    if (!r->ov) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "from", r->ov->from);
    atr_jw_kv_str(w, "to", r->ov->to);
    atr_jw_kv_str(w, "reason", r->ov->reason);
    atr_jw_object_end(w);
}

static const char *status_of(enum atr_bench_outcome o)
{
    return o == ATR_BENCH_SUCCESS ? "success"
           : o == ATR_BENCH_STARTUP_TIMEOUT || o == ATR_BENCH_BENCHMARK_TIMEOUT ? "timeout"
                                                                                : "error";
}

/* ISO-Bench's fields first, in its order, then atr's. */
static void write_result_fields(struct atr_jw *w, const struct run *r)
{
    const struct atr_bench_item *it = r->it;
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "human_commit", it->human_commit);
    atr_jw_kv_str(w, "human_commit_full", it->human_commit_full);
    atr_jw_kv_str(w, "parent_commit", it->parent_commit);
    atr_jw_kv_str(w, "model", r->vars.model);
    atr_jw_kv_str(w, "status", status_of(r->outcome));
    atr_jw_kv_str(w, "error", r->outcome == ATR_BENCH_SUCCESS ? NULL : r->error);
    atr_jw_key(w, "duration_s");
    atr_jw_fixed(w, mono_s() - r->t0, 3);
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    if (r->outcome == ATR_BENCH_SUCCESS || r->outcome == ATR_BENCH_BENCHMARK_TIMEOUT)
        atr_bench_metrics_write(w, &r->m);
    atr_jw_object_end(w);
    atr_jw_kv_strn(w, "raw_output", r->raw.data ? r->raw.data : "", r->raw.len);
    write_timestamp(w);
    atr_jw_kv_str(w, "outcome", atr_bench_outcome_name(r->outcome));
    atr_jw_kv_str(w, "variant", r->var->name);
    atr_jw_kv_str(w, "agent", r->agent ? r->agent->name : NULL);
    atr_jw_kv_str(w, "patch", r->agent ? r->agent->patch : NULL);
    write_override(w, r);
    atr_jw_kv_str(w, "server_command", r->server_cmd);
    write_server_exit(w, r);
    atr_jw_kv_str(w, "benchmark", r->bench_summary);
    write_timing(w, r);
    char *tail = log_tail(r, LOG_TAIL_BYTES, LOG_TAIL_LINES);
    atr_jw_kv_str(w, "server_log", r->log_path);
    atr_jw_kv_str(w, "server_log_tail", tail);
    free(tail);
    atr_jw_kv_str(w, "atr_version", ATR_VERSION);
    atr_jw_kv_str(w, "spec_hash", r->rn->s->hash);
    atr_jw_object_end(w);
    atr_jw_newline(w);
}

static int write_result(struct run *r)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_PYTHON);
    write_result_fields(&w, r);
    int rc = atr_jw_finish(&w) < 0
                 ? atr_error_set(r->rn->err, "%s: result too large", r->result_path)
                 : atr_output_write_file(r->result_path, b.data, b.len, r->rn->err);
    atr_buf_release(&b);
    return rc;
}

/* ---- one run ------------------------------------------------------------------------------ */

void atr_bench_run_name(char *out, size_t cap, const char *commit, const char *variant,
                        const char *agent)
{
    snprintf(out, cap, "%.8s_%s%s%s", commit, variant, agent ? "_" : "", agent ? agent : "");
}

/* Has this run a result to keep? (resume; --retry-failed keeps successes only) */
static bool has_result(struct run *r)
{
    if (access(r->result_path, F_OK) != 0)
        return false;
    if (!r->rn->o->retry_failed)
        return true;
    struct atr_bench_set set = {0};
    struct atr_error err;
    bool keep = atr_bench_read_file(&set, r->result_path, &err) == 0 && set.n == 1 &&
                set.v[0].outcome == ATR_BENCH_SUCCESS;
    atr_bench_set_release(&set);
    return keep;
}

static int open_log(struct run *r)
{
    r->log_fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (r->log_fd < 0)
        return atr_error_set(r->rn->err, "%s: %s", r->log_path, strerror(errno));
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    log_line(r, "# atr %s bench run %s (spec %s): %s %s%s%s, model %s, %s", ATR_VERSION,
             r->rn->s->path, r->rn->s->hash, r->it->human_commit, r->var->name,
             r->agent ? " " : "", r->agent ? r->agent->name : "", r->vars.model, ts);
    return 0;
}

static int expand_server(struct run *r)
{
    struct atr_error err;
    r->server_cmd = atr_bench_expand(r->var->server, &r->vars, true, &err);
    if (r->server_cmd)
        r->ready_url = atr_bench_expand(r->var->ready_url, &r->vars, false, &err);
    return r->server_cmd && r->ready_url ? 0 : atr_error_set(r->rn->err, "%s", err.msg);
}

/* prepare -> start -> ready -> benchmark -> stop; -1 only for what stops
 * the whole run (rn->err set). */
static int run_phases(struct run *r)
{
    if (prepare(r) < 0)
        return -1;
    if (r->decided || stopped(r)) {
        r->interrupted = !r->decided;
        return 0;
    }
    progress(r, ATR_BENCH_PHASE_START);
    if (server_start(r) < 0)
        return -1;
    if (await_ready(r))
        benchmark(r);
    return server_stop(r);
}

static void run_free(struct run *r)
{
    if (r->started) {                /* an error path: no server may outlive it */
        atr_spawn_kill(&r->proc, &r->exit);
        atr_guard_watch(&r->rn->guard, 0);
    }
    if (r->has_cg) {
        struct atr_error ignored;
        atr_cg_remove(&r->rn->host, &r->cg, &ignored);
    }
    if (r->log_fd >= 0)
        close(r->log_fd);
    free(r->result_path);
    free(r->log_path);
    free(r->server_cmd);
    free(r->ready_url);
    free(r->bench_summary);
    atr_buf_release(&r->raw);
}

static int run_one(struct runner *rn, const struct atr_bench_item *it,
                   const struct atr_bench_variant *var, const struct atr_bench_agent *agent)
{
    struct run r = {.rn = rn, .it = it, .var = var, .agent = agent, .log_fd = -1,
                    .t0 = mono_s(), .t0_unix = unix_s(), .mem_peak = -1};
    rn->index++;
    atr_bench_metrics_init(&r.m);
    const char *model = atr_bench_model(rn->s, it, &r.ov);
    r.port = rn->o->port >= 0 ? (unsigned)rn->o->port : rn->s->port;
    if (!r.port)
        r.port = free_port();
    r.vars = (struct atr_bench_vars){model, it->human_commit_full, it->parent_commit,
                                     agent ? agent->patch : NULL, rn->s->workdir, r.port};
    atr_bench_run_name(r.name, sizeof r.name, it->human_commit, var->name,
                       agent ? agent->name : NULL);
    r.result_path = xasprintf("%s/%s_result.json", rn->results_dir, r.name);
    r.log_path = xasprintf("%s/%s.log", rn->logs_dir, r.name);
    int rc = 0;
    if (has_result(&r)) {
        rn->st->skipped++;
        progress(&r, ATR_BENCH_PHASE_SKIP);
    } else if ((rc = open_log(&r)) == 0 && (rc = expand_server(&r)) == 0 &&
               (rc = run_phases(&r)) == 0) {
        final_outcome(&r);
        if (r.interrupted || stopped(&r)) {
            rn->st->interrupted = true;
        } else if ((rc = write_result(&r)) == 0) {
            rn->st->done++;
            rn->st->outcomes[r.outcome]++;
            progress(&r, ATR_BENCH_PHASE_DONE);
        }
    }
    run_free(&r);
    return rc;
}

/* ---- the item and the spec ----------------------------------------------------------------- */

static int cleanup_item(struct runner *rn, const struct atr_bench_item *it)
{
    const struct atr_bench_spec *s = rn->s;
    if (!s->cleanup)
        return 0;
    struct run r = {.rn = rn, .it = it, .var = &s->variants[0], .log_fd = -1, .t0 = mono_s()};
    r.port = rn->o->port >= 0 ? (unsigned)rn->o->port : s->port;
    r.vars = (struct atr_bench_vars){atr_bench_model(s, it, NULL), it->human_commit_full,
                                     it->parent_commit, NULL, s->workdir, r.port};
    struct atr_error err;
    char *cmd = atr_bench_expand(s->cleanup, &r.vars, true, &err);
    if (!cmd)
        return atr_error_set(rn->err, "%s", err.msg);
    r.log_path = xasprintf("%s/%.8s_cleanup.log", rn->logs_dir, it->human_commit);
    r.log_fd = open(r.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int rc = 0;
    if (r.log_fd < 0) {
        rc = atr_error_set(rn->err, "%s: %s", r.log_path, strerror(errno));
    } else {
        progress(&r, ATR_BENCH_PHASE_CLEANUP);
        struct atr_spawn_result res;
        if (run_command(&r, "cleanup", cmd, 0, NULL, &res) >= 0)
            free(res.output);
    }
    free(cmd);
    run_free(&r);
    return rc;
}

static bool item_in_share(const struct atr_bench_run_opts *o, const struct atr_bench_item *it,
                          size_t k)
{
    if (o->shards > 1 && k % o->shards != o->shard - 1)
        return false;
    if (o->only && strncmp(it->human_commit_full, o->only, strlen(o->only)) != 0 &&
        strncmp(it->human_commit, o->only, strlen(o->only)) != 0)
        return false;
    return true;
}

/* The runs of one variant of an item: once, or once per agent with a patch. */
static size_t variant_runs(const struct atr_bench_item *it, const struct atr_bench_variant *v)
{
    if (!v->per_agent)
        return 1;
    size_t n = 0;
    for (size_t a = 0; a < it->n_agents; a++)
        n += it->agents[a].patch != NULL;
    return n;
}

static int run_item(struct runner *rn, const struct atr_bench_item *it)
{
    bool any = false;
    for (size_t k = 0; k < it->n_variants && !(rn->o->stop && *rn->o->stop); k++) {
        const struct atr_bench_variant *v = it->variants[k];
        size_t before = rn->st->done;
        if (!v->per_agent) {
            if (run_one(rn, it, v, NULL) < 0)
                return -1;
        }
        for (size_t a = 0; v->per_agent && a < it->n_agents; a++) {
            if (it->agents[a].patch && !(rn->o->stop && *rn->o->stop) &&
                run_one(rn, it, v, &it->agents[a]) < 0)
                return -1;
        }
        any = any || rn->st->done > before;
    }
    /* Cleanup only after runs that did something (a resumed item whose
     * results all exist has nothing to clean). */
    return any ? cleanup_item(rn, it) : 0;
}

/* ---- set-up and tear-down ------------------------------------------------------------------- */

static int make_dir(const char *path, struct atr_error *err)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    return 0;
}

/* Temporaries of results a killed run was writing: never complete. */
static void sweep_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, "_result.json.tmp.")) {
            char *p = xasprintf("%s/%s", dir, e->d_name);
            unlink(p);
            free(p);
        }
    closedir(d);
}

/* environ with the folder of the atr binary first on PATH, so a spec's
 * "atr sim serve" runs the atr that runs the spec. */
static void make_env(struct runner *rn)
{
    size_t n = 0;
    while (environ[n])
        n++;
    rn->env = xcalloc(n + 2, sizeof *rn->env);
    size_t k = 0;
    const char *path = getenv("PATH");
    char *self = rn->o->self ? realpath(rn->o->self, NULL) : NULL;
    if (self) {
        rn->path_var = xasprintf("PATH=%s%s%s", dirname(self), path ? ":" : "", path ? path : "");
        rn->env[k++] = rn->path_var;
    }
    free(self);
    for (size_t i = 0; i < n; i++)
        if (!rn->path_var || strncmp(environ[i], "PATH=", 5) != 0)
            rn->env[k++] = environ[i];
}

static int setup_cgroups(struct runner *rn)
{
    struct atr_error err;
    if (atr_cg_detect(&rn->host, NULL, NULL, "", &err) < 0)
        return 0;                        /* no cgroups: process groups only */
    unsigned removed;
    atr_cg_sweep_stale(&rn->host, &removed, &err);
    rn->use_cg = rn->host.mode != ATR_CG_NONE && !*rn->host.denied &&
                 atr_cg_root(&rn->host, &rn->root, &err) == 0;
    return 0;
}

static int setup(struct runner *rn)
{
    const struct atr_bench_run_opts *o = rn->o;
    if (load_workload(rn) < 0)
        return -1;
    rn->results_dir = xasprintf("%s/results", o->out_dir);
    rn->logs_dir = xasprintf("%s/logs", o->out_dir);
    if (make_dir(o->out_dir, rn->err) < 0 || make_dir(rn->results_dir, rn->err) < 0 ||
        make_dir(rn->logs_dir, rn->err) < 0)
        return -1;
    sweep_temporaries(rn->results_dir);
    make_env(rn);
    setup_cgroups(rn);
    /* A server's processes orphaned by its shell become ours, so their
     * exit is seen at once (see atr_spawn_group_alive). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    /* Before any thread: the guard is a fork of this process. */
    if (atr_guard_start(&rn->guard, &rn->host, rn->use_cg ? &rn->root : NULL, rn->err) < 0)
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

static void teardown(struct runner *rn)
{
    atr_workload_release(&rn->workload);
    atr_guard_stop(&rn->guard);
    if (rn->use_cg) {
        struct atr_error ignored;
        atr_cg_remove(&rn->host, &rn->root, &ignored);
    }
    free(rn->env);
    free(rn->path_var);
    free(rn->results_dir);
    free(rn->logs_dir);
}

int atr_bench_run(const struct atr_bench_spec *s, const struct atr_bench_run_opts *o,
                  struct atr_bench_run_stats *st, struct atr_error *err)
{
    memset(st, 0, sizeof *st);
    struct runner rn = {.s = s, .o = o, .st = st, .err = err};
    for (size_t k = 0; k < s->n_items; k++)
        for (size_t v = 0; item_in_share(o, &s->items[k], k) && v < s->items[k].n_variants; v++)
            st->runs += variant_runs(&s->items[k], s->items[k].variants[v]);
    rn.total = st->runs;
    int rc = setup(&rn);
    for (size_t k = 0; rc == 0 && k < s->n_items && !(o->stop && *o->stop); k++)
        if (item_in_share(o, &s->items[k], k))
            rc = run_item(&rn, &s->items[k]);
    if (o->stop && *o->stop)
        st->interrupted = true;
    teardown(&rn);
    return rc;
}
