/* run.c - `atr bench run`'s runner (bench/run.h): one run at a time, each
 * through prepare -> start -> ready -> benchmark -> stop -> result (the
 * parts: bench/run-impl.h), with
 * exactly one outcome decided from what was seen, in this order:
 *
 *   too little disk free before the item          disk_full (nothing run)
 *   prepare past prepare_timeout_s (killed)       prepare_timeout
 *   prepare exited non-zero                       patch_failed
 *   a GGUF the server command names is corrupt    model_invalid (no server)
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
#include "bench/run-impl.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/output.h"

void run_progress(struct run *r, enum atr_bench_phase ph)
{
    const struct atr_bench_run_opts *o = r->rn->o;
    if (!o->on_progress)
        return;
    struct atr_bench_progress p = {
        .index = r->rn->index, .total = r->rn->total, .commit = r->it->human_commit,
        .variant = r->var->name, .agent = r->agent ? r->agent->name : NULL,
        .repeat = r->repeat, .repeats = r->rn->repeats, .phase = ph,
        .elapsed_s = mono_s() - r->t0, .outcome = r->outcome,
        .error = r->outcome == ATR_BENCH_SUCCESS ? NULL : r->error,
        .result_path = r->result_path,
    };
    o->on_progress(o->ctx, &p);
}

bool run_stopped(const struct run *r)
{
    return r->rn->o->stop && *r->rn->o->stop;
}

void run_decide(struct run *r, enum atr_bench_outcome o, const char *fmt, ...)
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

void run_log_text(struct run *r, const char *text, size_t len)
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

void run_log_line(struct run *r, const char *fmt, ...)
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
    run_log_text(r, line, len);
}

/* The last `cap` bytes of the log (from a line start where one is near). */
char *run_log_tail(const struct run *r, size_t cap, size_t max_lines)
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
bool run_log_says_oom(const struct run *r, char *out, size_t cap)
{
    char *text = run_log_tail(r, OOM_SCAN_BYTES, SIZE_MAX);
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
int run_command(struct run *r, const char *label, const char *cmd, double timeout_s,
                       const struct atr_spawn_watch *watch, struct atr_spawn_result *res)
{
    struct runner *rn = r->rn;
    run_log_line(r, "==> %s: %s", label, cmd);
    struct atr_spawn_opts so = {
        .command = cmd, .env = rn->env, .max_output = STEP_OUTPUT_MAX, .host = &rn->host,
        .timeout_ms = timeout_s > 0 ? (int64_t)(timeout_s * 1000) : 0, .watch = watch,
    };
    /* A group of its own below the run root: what the command started and
     * left running, setsid or not, is killed with the group when it ends
     * (and by the guard, the group being below the root, should atr die). */
    struct atr_cg cg = {.v2_fd = -1};
    struct atr_error err;
    int rc = 0;
    if (rn->use_cg) {
        char name[64];
        snprintf(name, sizeof name, "%s-%zu", label, ++rn->serial);
        rc = atr_cg_create(&rn->host, &rn->root, name, &cg, &err);
        so.cg = rc == 0 ? &cg : NULL;
    }
    if (rc == 0)
        rc = atr_spawn_run(&so, res, &err);
    if (so.cg) {
        struct atr_error ignored;
        atr_cg_remove(&rn->host, &cg, &ignored);
    }
    if (rc < 0) {
        snprintf(r->error, sizeof r->error, "%s could not start: %s", label, err.msg);
        run_log_line(r, "%s", r->error);
        return -1;
    }
    run_log_text(r, res->output, res->output_len);
    if (res->output_truncated)
        run_log_line(r, "[%llu more bytes of output not kept]",
                 (unsigned long long)(res->output_bytes - res->output_len));
    run_log_line(r, "<== %s: %s %d after %.3f s", label, res->term_signal ? "signal" : "exit status",
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

void run_describe_exit(const struct atr_spawn_result *res, char *out, size_t cap)
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
    run_progress(r, ATR_BENCH_PHASE_PREPARE);
    double t = mono_s();
    struct atr_spawn_result res;
    int rc = run_command(r, "prepare", cmd, r->var->prepare_timeout_s, NULL, &res);
    r->prepare_s = mono_s() - t;
    free(cmd);
    if (rc == 0) {
        free(res.output);
        return 0;
    }
    char why[64], line[256] = "";
    if (rc >= 0 && res.timed_out) {     /* spawn killed its group and cgroup */
        run_decide(r, ATR_BENCH_PREPARE_TIMEOUT, "Prepare timed out after %g s",
                   r->var->prepare_timeout_s);
        atr_buf_append(&r->raw, res.output, res.output_len);
    } else if (rc > 0) {
        run_describe_exit(&res, why, sizeof why);
        last_line(res.output, res.output_len, line, sizeof line);
        run_decide(r, ATR_BENCH_PATCH_FAILED, "Patch failed: prepare ended with %s%s%s", why,
               *line ? ": " : "", line);
        atr_buf_append(&r->raw, res.output, res.output_len);
    } else {
        run_decide(r, ATR_BENCH_PATCH_FAILED, "Patch failed: %s", r->error);
    }
    free(res.output);
    return 0;
}

/* ---- the port ------------------------------------------------------------------ */




/* ---- the server ------------------------------------------------------------------ */








/* ---- the benchmark: atr's own client ---------------------------------------------- */








/* ---- the benchmark: a command ------------------------------------------------------- */



/* ---- the benchmark phase --------------------------------------------------------------- */



/* ---- the result file ---------------------------------------------------------------------- */









/* ---- one run ------------------------------------------------------------------------------ */

int atr_bench_run_name(char *out, size_t cap, const char *commit, const char *variant,
                       const char *agent)
{
    if (!atr_bench_name_ok(commit) || !atr_bench_name_ok(variant)
        || (agent && !atr_bench_name_ok(agent)))
        return -1;
    int n = snprintf(out, cap, "%.8s_%s%s%s", commit, variant, agent ? "_" : "",
                     agent ? agent : "");
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/* The run's file name into out[RUN_NAME_MAX] ("_r<K>" after it for repeat
 * K > 1), or -1 with err set. */
static int name_run(char *out, const struct atr_bench_item *it, const char *variant,
                    const char *agent, unsigned repeat, struct atr_error *err)
{
    if (atr_bench_run_name(out, RUN_NAME_MAX, it->human_commit, variant, agent) == 0) {
        size_t n = strlen(out);
        int k = repeat > 1 ? snprintf(out + n, RUN_NAME_MAX - n, "_r%u", repeat) : 0;
        if (k >= 0 && (size_t)k < RUN_NAME_MAX - n)
            return 0;
    }
    return atr_error_set(err, "commit \"%.40s\", variant \"%.40s\"%s%.40s%s: not a name for a "
                         "file in the results folder", it->human_commit, variant,
                         agent ? ", agent \"" : "", agent ? agent : "", agent ? "\"" : "");
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
    run_log_line(r, "# atr %s bench run %s (spec %s): %s %s%s%s, repeat %u of %u, model %s, %s",
             ATR_VERSION, r->rn->s->path, r->rn->s->hash, r->it->human_commit, r->var->name,
             r->agent ? " " : "", r->agent ? r->agent->name : "", r->repeat, r->rn->repeats,
             r->vars.model, ts);
    if (r->var->image)
        run_log_line(r, "# container engine: %s", r->rn->ctr.note);
    return 0;
}

static int expand_server(struct run *r)
{
    struct atr_error err;
    if (r->var->image) {           /* the command that starts it comes at the start */
        r->ready_url = atr_bench_expand(r->var->ready_url, &r->vars, false, &err);
        return !r->ready_url ? atr_error_set(r->rn->err, "%s", err.msg)
                             : run_expand_container(r);
    }
    r->server_cmd = atr_bench_expand(r->var->server, &r->vars, true, &err);
    if (r->server_cmd)
        r->ready_url = atr_bench_expand(r->var->ready_url, &r->vars, false, &err);
    return r->server_cmd && r->ready_url ? 0 : atr_error_set(r->rn->err, "%s", err.msg);
}

/* prepare -> start -> ready -> benchmark -> stop; -1 only for what stops
 * the whole run (rn->err set). */
static int run_phases(struct run *r)
{
    if (r->rn->disk_full[0]) {
        run_decide(r, ATR_BENCH_DISK_FULL, "%s", r->rn->disk_full);
        return 0;
    }
    if (prepare(r) < 0)
        return -1;
    if (r->decided || run_stopped(r)) {
        r->interrupted = !r->decided;
        return 0;
    }
    run_progress(r, ATR_BENCH_PHASE_START);
    if (!run_check_model(r))
        return 0;
    if (run_server_start(r) < 0)
        return -1;
    if (run_await_ready(r))
        run_benchmark(r);
    return run_server_stop(r);
}

static void run_free(struct run *r)
{
    if (r->started) {                /* an error path: no server may outlive it */
        atr_spawn_kill(&r->proc, &r->exit);
        atr_guard_watch(&r->rn->guard, 0);
    }
    run_release_container(r);
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
                   const struct atr_bench_variant *var, const struct atr_bench_agent *agent,
                   unsigned repeat)
{
    struct run r = {.rn = rn, .it = it, .var = var, .agent = agent, .repeat = repeat,
                    .log_fd = -1, .t0 = mono_s(), .t0_unix = unix_s(), .mem_peak = -1,
                    .oom_fd = -1};
    rn->index++;
    atr_bench_metrics_init(&r.m);
    const char *model = atr_bench_model(rn->s, it, &r.ov);
    r.port = rn->o->port >= 0 ? (unsigned)rn->o->port : rn->s->port;
    if (!r.port)
        r.port = run_free_port();
    r.vars = (struct atr_bench_vars){model, it->human_commit_full, it->parent_commit,
                                     agent ? agent->patch : NULL, rn->s->workdir, r.port,
                                     rn->s->dir};
    if (name_run(r.name, it, var->name, agent ? agent->name : NULL, repeat, rn->err) < 0)
        return -1;
    r.result_path = xasprintf("%s/%s_result.json", rn->results_dir, r.name);
    r.log_path = xasprintf("%s/%s.log", rn->logs_dir, r.name);
    int rc = 0;
    if (has_result(&r)) {
        rn->st->skipped++;
        run_progress(&r, ATR_BENCH_PHASE_SKIP);
    } else if ((rc = open_log(&r)) == 0 && (rc = expand_server(&r)) == 0 &&
               (rc = run_phases(&r)) == 0) {
        run_final_outcome(&r);
        if (r.interrupted || run_stopped(&r)) {
            rn->st->interrupted = true;
        } else if ((rc = run_write_result(&r)) == 0) {
            rn->st->done++;
            rn->st->outcomes[r.outcome]++;
            run_progress(&r, ATR_BENCH_PHASE_DONE);
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
    struct run r = {.rn = rn, .it = it, .var = &s->variants[0], .repeat = 1, .log_fd = -1,
                    .t0 = mono_s()};
    r.port = rn->o->port >= 0 ? (unsigned)rn->o->port : s->port;
    r.vars = (struct atr_bench_vars){atr_bench_model(s, it, NULL), it->human_commit_full,
                                     it->parent_commit, NULL, s->workdir, r.port, s->dir};
    struct atr_error err;
    if (name_run(r.name, it, "cleanup", NULL, 1, rn->err) < 0)
        return -1;
    char *cmd = atr_bench_expand(s->cleanup, &r.vars, true, &err);
    if (!cmd)
        return atr_error_set(rn->err, "%s", err.msg);
    r.log_path = xasprintf("%s/%s.log", rn->logs_dir, r.name);
    r.log_fd = open(r.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int rc = 0;
    if (r.log_fd < 0) {
        rc = atr_error_set(rn->err, "%s: %s", r.log_path, strerror(errno));
    } else {
        run_progress(&r, ATR_BENCH_PHASE_CLEANUP);
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
    if (o->shards > 1 && k % o->shards != o->shard)
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

/* Bytes free for an unprivileged user where path is, or where it will be
 * made (its nearest existing folder); -1 with errno set. */
static int64_t free_bytes(const char *path)
{
    char *p = xstrdup(path);
    struct statvfs sv;
    int rc;
    while ((rc = statvfs(p, &sv)) < 0 && errno == ENOENT && strcmp(p, "/") != 0
           && strcmp(p, ".") != 0) {
        char *up = xstrdup(dirname(p));
        free(p);
        p = up;
    }
    int e = errno;
    free(p);
    errno = e;
    return rc < 0 ? -1 : (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

/* The disk guard before an item: below min_free_disk the spec's cleanup
 * runs once (pruning images usually frees enough); still below, the
 * item's runs are disk_full, and the next item is tried. */
static int check_disk(struct runner *rn, const struct atr_bench_item *it)
{
    const struct atr_bench_spec *s = rn->s;
    rn->disk_full[0] = '\0';
    if (!s->min_free_disk)
        return 0;
    int64_t have = free_bytes(s->workdir);
    if (have >= 0 && (uint64_t)have >= s->min_free_disk)
        return 0;
    if (have >= 0 && s->cleanup && cleanup_item(rn, it) < 0)
        return -1;
    if (have >= 0 && s->cleanup)
        have = free_bytes(s->workdir);
    if (have < 0)
        snprintf(rn->disk_full, sizeof rn->disk_full, "Disk full: free space of %.200s "
                 "unknown: %s", s->workdir, strerror(errno));
    else if ((uint64_t)have < s->min_free_disk)
        snprintf(rn->disk_full, sizeof rn->disk_full, "Disk full: %lld bytes free in %.200s, "
                 "min_free_disk wants %llu%s", (long long)have, s->workdir,
                 (unsigned long long)s->min_free_disk, s->cleanup ? " (after cleanup)" : "");
    return 0;
}

/* Whether a run of the item's round repeat has no result to keep yet. */
static bool round_pending(struct runner *rn, const struct atr_bench_item *it, unsigned repeat)
{
    for (size_t k = 0; k < it->n_variants; k++) {
        const struct atr_bench_variant *v = it->variants[k];
        for (size_t a = 0; a < (v->per_agent ? it->n_agents : 1); a++) {
            const struct atr_bench_agent *ag = v->per_agent ? &it->agents[a] : NULL;
            if (ag && !ag->patch)
                continue;                    /* run_round skips it */
            struct run r = {.rn = rn};
            if (name_run(r.name, it, v->name, ag ? ag->name : NULL, repeat, rn->err) < 0)
                return true;                 /* run_one reports the bad name */
            r.result_path = xasprintf("%s/%s_result.json", rn->results_dir, r.name);
            bool have = has_result(&r);
            free(r.result_path);
            if (!have)
                return true;
        }
    }
    return false;
}

/* Whether a run of item has no result to keep yet: a resumed item whose
 * results all exist, every repeat, runs nothing, so it needs no disk guard
 * or cleanup. */
static bool item_pending(struct runner *rn, const struct atr_bench_item *it)
{
    for (unsigned k = 1; k <= rn->repeats; k++)
        if (round_pending(rn, it, k))
            return true;
    return false;
}

static bool stopping(const struct runner *rn)
{
    return rn->o->stop && *rn->o->stop;
}

/* One round of an item: every variant (every agent's) once. */
static int run_round(struct runner *rn, const struct atr_bench_item *it, unsigned repeat)
{
    for (size_t k = 0; k < it->n_variants && !stopping(rn); k++) {
        const struct atr_bench_variant *v = it->variants[k];
        if (!v->per_agent && run_one(rn, it, v, NULL, repeat) < 0)
            return -1;
        for (size_t a = 0; v->per_agent && a < it->n_agents; a++)
            if (it->agents[a].patch && !stopping(rn) &&
                run_one(rn, it, v, &it->agents[a], repeat) < 0)
                return -1;
    }
    return 0;
}

/* The item's rounds in turn (ABCABC, never AAABBB): drift on the machine
 * (a neighbour's build, thermal throttling) then hits every variant alike
 * instead of making one look faster. */
static int run_item(struct runner *rn, const struct atr_bench_item *it)
{
    rn->disk_full[0] = '\0';
    if (item_pending(rn, it) && check_disk(rn, it) < 0)
        return -1;
    size_t before = rn->st->done;
    for (unsigned k = 1; k <= rn->repeats && !stopping(rn); k++)
        if (run_round(rn, it, k) < 0)
            return -1;
    /* Cleanup only after runs that did something (a resumed item whose
     * results all exist has nothing to clean). */
    return rn->st->done > before ? cleanup_item(rn, it) : 0;
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

/* The run root every server and command gets a group below. Without one
 * (no usable hierarchy, not delegated to this user, the root refused)
 * the run goes on, stopping process groups only, and says so. */
static void setup_cgroups(struct runner *rn)
{
    struct atr_error err;
    char why[384];
    if (atr_cg_detect(&rn->host, NULL, NULL, "", &err) < 0) {
        rn->host.mode = ATR_CG_NONE;
        snprintf(why, sizeof why, "%.380s", err.msg);
    } else if (rn->host.mode == ATR_CG_NONE) {
        snprintf(why, sizeof why, "%.380s", rn->host.note);
    } else if (*rn->host.denied) {
        snprintf(why, sizeof why, "%.340s is not writable here", rn->host.denied);
    } else {
        unsigned removed;
        atr_cg_sweep_stale(&rn->host, &removed, &err);   /* groups of runs killed with -9 */
        rn->use_cg = atr_cg_root(&rn->host, &rn->root, &err) == 0;
        if (!rn->use_cg)
            snprintf(why, sizeof why, "%.380s", err.msg);
    }
    if (!rn->use_cg)
        snprintf(rn->st->warning, sizeof rn->st->warning, "no cgroups of atr's own here (%s): "
                 "servers and commands are stopped by their process group only, so a process "
                 "that leaves it (setsid) can outlive its run", why);
}

/* A variant that names an image needs the engine's CLI, found before
 * anything runs; and a memory limit needs atr's cgroups. */
static int setup_containers(struct runner *rn)
{
    const struct atr_bench_spec *s = rn->s;
    for (size_t i = 0; i < s->n_variants; i++) {
        const struct atr_bench_variant *v = &s->variants[i];
        if (v->memory && !rn->use_cg)
            return atr_error_set(rn->err, "variant %s: \"memory\" needs cgroups of atr's own: "
                                 "%s", v->name, rn->st->warning);
        if (!v->image || rn->has_ctr)
            continue;
        struct atr_error err;
        if (atr_ctr_detect_servers(rn->o->container_cli, &rn->ctr, &err) < 0)
            return atr_error_set(rn->err, "variant %s names an image: %s", v->name, err.msg);
        rn->has_ctr = true;
        snprintf(rn->st->engine, sizeof rn->st->engine, "%s", rn->ctr.note);
        unsigned stale;   /* of runs whose guard died too: they may hold the port */
        atr_ctr_sweep_stale(&rn->ctr, &stale, &err);
    }
    return 0;
}

static int setup(struct runner *rn)
{
    const struct atr_bench_run_opts *o = rn->o;
    if (run_load_workload(rn) < 0)
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
    if (setup_containers(rn) < 0)
        return -1;
    /* Before any thread: the guard is a fork of this process. Should atr
     * die, it also removes the run's containers. */
    char filter[64], *sweep[8];
    if (rn->has_ctr)
        atr_ctr_sweep_argv(&rn->ctr, (long)getpid(), filter, sizeof filter, sweep);
    if (atr_guard_start_cleanup(&rn->guard, &rn->host, rn->use_cg ? &rn->root : NULL, NULL,
                                rn->has_ctr ? sweep : NULL, rn->err) < 0)
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

struct names {
    char **v;
    size_t n;
};

static int add_name(struct names *ns, const struct atr_bench_item *it, const char *variant,
                    const char *agent, unsigned repeat, struct atr_error *err)
{
    char name[RUN_NAME_MAX];
    if (name_run(name, it, variant, agent, repeat, err) < 0)
        return -1;
    ns->v = xreallocarray(ns->v, ns->n + 1, sizeof *ns->v);
    ns->v[ns->n++] = xstrdup(name);
    return 0;
}

static int item_names(struct names *ns, const struct atr_bench_item *it, unsigned repeats,
                      struct atr_error *err)
{
    int rc = add_name(ns, it, "cleanup", NULL, 1, err);
    for (unsigned r = 1; rc == 0 && r <= repeats; r++)
        for (size_t k = 0; rc == 0 && k < it->n_variants; k++) {
            const struct atr_bench_variant *v = it->variants[k];
            if (!v->per_agent)
                rc = add_name(ns, it, v->name, NULL, r, err);
            for (size_t a = 0; rc == 0 && v->per_agent && a < it->n_agents; a++)
                if (it->agents[a].patch)
                    rc = add_name(ns, it, v->name, it->agents[a].name, r, err);
        }
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file name of the share's runs, before anything starts: each a
 * plain name (the spec reader refuses others already; this holds for any
 * spec), and no two alike: the reader checks the spec's own runs, but a
 * --repeat given here adds "_r<K>", which may be how another run's agent
 * or variant name ends. */
static int check_names(const struct atr_bench_spec *s, const struct atr_bench_run_opts *o,
                       unsigned repeats, struct atr_error *err)
{
    struct names ns = {0};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < s->n_items; k++)
        if (item_in_share(o, &s->items[k], k))
            rc = item_names(&ns, &s->items[k], repeats, err);
    if (rc == 0 && ns.n)
        qsort(ns.v, ns.n, sizeof *ns.v, by_name);
    for (size_t k = 1; rc == 0 && k < ns.n; k++)
        if (strcmp(ns.v[k - 1], ns.v[k]) == 0)
            rc = atr_error_set(err, "two runs would write results/%s_result.json: repeat K "
                               "of a run adds _r<K> to its name, which is how another run's "
                               "agent or variant name ends; rename that one", ns.v[k]);
    for (size_t k = 0; k < ns.n; k++)
        free(ns.v[k]);
    free(ns.v);
    return rc;
}

/* The run's state for a watcher (atr dashboard): results/.atr-bench-state.json,
 * written atomically at the start ("running", with the planned runs and this
 * pid) and at the end ("complete", "interrupted" or "failed"). Without it a
 * finished folder and one whose runner was killed look the same. Best
 * effort: a failure to write it never fails the run. */
static void write_state(const struct runner *rn, const char *state)
{
    if (!rn->results_dir)
        return;
    struct atr_buf b = ATR_BUF_INIT;
    atr_buf_printf(&b, "{\"state\":\"%s\",\"planned\":%zu,\"pid\":%ld}\n", state,
                   rn->total, (long)getpid());
    char *path = xasprintf("%s/" ATR_BENCH_STATE_FILE, rn->results_dir);
    struct atr_error ignored;
    atr_output_write_file(path, b.data, b.len, &ignored);
    free(path);
    atr_buf_release(&b);
}

int atr_bench_run(const struct atr_bench_spec *s, const struct atr_bench_run_opts *o,
                  struct atr_bench_run_stats *st, struct atr_error *err)
{
    memset(st, 0, sizeof *st);
    struct runner rn = {.s = s, .o = o, .st = st, .err = err,
                        .repeats = o->repeat ? o->repeat : s->repeat ? s->repeat : 1};
    if (check_names(s, o, rn.repeats, err) < 0)
        return -1;
    for (size_t k = 0; k < s->n_items; k++)
        for (size_t v = 0; item_in_share(o, &s->items[k], k) && v < s->items[k].n_variants; v++)
            st->runs += variant_runs(&s->items[k], s->items[k].variants[v]) * rn.repeats;
    rn.total = st->runs;
    int rc = setup(&rn);
    if (rc == 0)
        write_state(&rn, "running");
    for (size_t k = 0; rc == 0 && k < s->n_items && !(o->stop && *o->stop); k++)
        if (item_in_share(o, &s->items[k], k))
            rc = run_item(&rn, &s->items[k]);
    if (o->stop && *o->stop)
        st->interrupted = true;
    write_state(&rn, rc < 0 ? "failed" : st->interrupted ? "interrupted" : "complete");
    teardown(&rn);
    return rc;
}
