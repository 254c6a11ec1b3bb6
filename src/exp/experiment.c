/* experiment.c - the AgentCgroup experiments (experiment.h): each run an
 * `atr replay tools` of this binary (its own process, guard and cgroup
 * root), so a run that goes wrong cannot take the others with it. */
#include "exp/experiment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json/json.h"
#include "json/writer.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"

extern char **environ;

static const struct atr_xp experiments[] = {
    {"timescale",
     {{"static", "static-toolcall", "static-toolcall", NULL},
      {"psi-poll", "dynamic-psi-poll", "dynamic", "psi-poll"},
      {"psi-trigger", "dynamic-psi-trigger", "dynamic", "psi-trigger"},
      {"ebpf", "dynamic-ebpf", "dynamic", "ebpf"}},
     4, false, false},
    {"domain",
     {{"static-env", "static-env", "static-env", NULL},
      {"static-toolcall", "static-toolcall", "static-toolcall", NULL},
      {"dynamic", "dynamic", "dynamic", "psi-poll"}},
     3, false, false},
    {"overhead",
     {{"none", "none", "none", NULL},
      {"static-toolcall", "static-toolcall", "static-toolcall", NULL},
      {"dynamic", "dynamic", "dynamic", "psi-poll"}},
     3, false, false},
    /* The seed's experiment 3: a victim tenant beside noisy neighbours,
     * its tail latency per arm (victim_latency_p99_ms). */
    {"multitenant",
     {{"static-toolcall", "static-toolcall", "static-toolcall", NULL},
      {"psi-poll", "dynamic-psi-poll", "dynamic", "psi-poll"},
      {"ebpf", "dynamic-ebpf", "dynamic", "ebpf"}},
     3, true, true},
};

const char *const atr_xp_modes[] = {"timescale", "domain", "overhead", "multitenant", NULL};

const struct atr_xp *atr_xp_find(const char *mode)
{
    for (size_t i = 0; i < sizeof experiments / sizeof *experiments; i++)
        if (strcmp(mode, experiments[i].mode) == 0)
            return &experiments[i];
    return NULL;
}

double atr_xp_pct(struct atr_samples *s, double p)
{
    return s->n ? atr_samples_percentile(s, p) : NAN;
}

/* One experiment's run: its configuration and the victim's trace ids (its
 * steps are told apart by them). */
struct xp_run {
    const struct atr_xp_cfg *c;
    char **victim_ids;
    size_t n_victim_ids;
};

/* ---- running one replay ---- */

static void fmt_size(char *buf, size_t cap, int64_t v)
{
    snprintf(buf, cap, "%" PRId64, v);
}

/* Runs this binary with argv (argv[0] "/proc/self/exe"), its stdout to
 * /dev/null (the table is ours to print), its stderr into errpath. The exit status, or -1 (errno) when it could not start. */
static int run_self(char **argv, const char *errpath)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}


/* Runs `atr replay tools` for arm into dir, stderr into dir.err. Returns
 * the exit status, or -1 (errno) when it could not start. */
static int run_replay(const struct xp_run *a, int arm, const char *dir)
{
    char high[32], max[32], interval[16], errpath[PATH_MAX + 32];
    fmt_size(high, sizeof high, a->c->mem_high);
    fmt_size(max, sizeof max, a->c->mem_max);
    snprintf(interval, sizeof interval, "%u", a->c->interval_ms);
    snprintf(errpath, sizeof errpath, "%s.err", dir);
    char *argv[40 + a->c->n_traces];
    int n = 0;
    char *fixed[] = {"/proc/self/exe", "replay", "tools", "-q", "--force", "--out", (char *)dir,
                     "--mem-max", max, "--sandbox", a->c->sandbox_ns ? "ns" : "none"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = fixed[i];
    const struct atr_xp_arm *r = &a->c->x->arms[arm];
    argv[n++] = "--config";
    argv[n++] = (char *)r->replay_config;
    if (r->controller) {
        char *dyn[] = {"--controller", (char *)r->controller, "--mem-high", high, "--interval",
                       interval};
        for (size_t i = 0; i < sizeof dyn / sizeof dyn[0]; i++)
            argv[n++] = dyn[i];
    }
    for (int i = 0; i < a->c->n_traces; i++)
        argv[n++] = a->c->traces[i];
    if (a->c->victim) {
        argv[n++] = "--tenants";
        if (!a->c->x->solo)
            argv[n++] = "--no-baseline";
        argv[n++] = (char *)a->c->victim;
    }
    argv[n] = NULL;
    return run_self(argv, errpath);
}


/* The first line of a run's stderr, for a message. */
static void first_line(const char *dir, char *out, size_t cap)
{
    char path[PATH_MAX + 32];
    out[0] = '\0';
    if (snprintf(path, sizeof path, "%s.err", dir) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)cap, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}


static void add_array(struct atr_samples *s, const struct atr_json *arr)
{
    if (!arr || arr->type != ATR_JSON_ARRAY)
        return;
    for (const struct atr_json *e = arr->u.kids.first; e; e = e->next)
        if (e->type == ATR_JSON_NUMBER)
            atr_samples_add(s, e->u.num);
}

static int64_t get_count(const struct atr_json *o, const char *key)
{
    int64_t v;
    return atr_json_get_i64(o, key, &v) && v > 0 ? v : 0;
}

static bool is_victim(const struct xp_run *a, const struct atr_json *o)
{
    const char *id = atr_json_get_str(o, "trace_id", NULL);
    for (size_t i = 0; id && i < a->n_victim_ids; i++)
        if (strcmp(a->victim_ids[i], id) == 0)
            return true;
    return false;
}

static void add_step(struct atr_xp_sum *s, const struct atr_json *o)
{
    double v;
    s->steps++;
    if (atr_json_get_num(o, "latency_ms", &v))
        atr_samples_add(&s->latency, v);
    if (atr_json_get_num(o, "max_rss_mb", &v) && v > s->max_rss_mb)
        s->max_rss_mb = v;
    if (atr_json_get_num(o, "ctl_held_ms", &v) && v > 0)
        s->held_ms += v;
    if (atr_json_get_num(o, "ctl_overshoot_mb", &v) && v > s->overshoot_mb)
        s->overshoot_mb = v;
    s->high_events += get_count(o, "mem_high_events");
    s->max_events += get_count(o, "mem_max_events");
    s->oom += get_count(o, "oom_kills");
    s->holds += get_count(o, "ctl_holds");
    add_array(&s->reaction, atr_json_get(o, "ctl_reaction_us"));
    add_array(&s->bound, atr_json_get(o, "ctl_reaction_bound_us"));
}

/* The tenant of s with trace id id, added when new (NULL past the cap). */
static struct atr_xp_tenant *tenant_of(const struct xp_run *a, struct atr_xp_sum *s,
                                       const char *id)
{
    for (int i = 0; i < s->n_tenants; i++)
        if (strcmp(s->tenants[i].id, id) == 0)
            return &s->tenants[i];
    if (s->n_tenants == ATR_XP_MAX_TENANTS || strlen(id) >= sizeof s->tenants[0].id)
        return NULL;
    struct atr_xp_tenant *t = &s->tenants[s->n_tenants++];
    snprintf(t->id, sizeof t->id, "%s", id);
    for (size_t i = 0; i < a->n_victim_ids; i++)
        t->victim = t->victim || strcmp(a->victim_ids[i], id) == 0;
    return t;
}

/* A --tenants line into its tenant's samples. true: an alone-phase line,
 * which the arm's own figures leave out (they are the shared run's). */
static bool add_tenant(const struct xp_run *a, struct atr_xp_sum *s, const struct atr_json *o)
{
    const char *phase = atr_json_get_str(o, "phase", NULL);
    const char *id = atr_json_get_str(o, "trace_id", NULL);
    if (!phase || !id)
        return false;
    bool alone = strcmp(phase, "alone") == 0;
    struct atr_xp_tenant *t = tenant_of(a, s, id);
    double v;
    if (t && atr_json_get_num(o, "latency_ms", &v) && v >= 0)
        atr_samples_add(alone ? &t->alone : &t->shared, v);
    return alone;
}

static void add_victim(struct atr_xp_sum *s, const struct atr_json *o)
{
    double v;
    if (atr_json_get_num(o, "latency_ms", &v)) {
        atr_samples_add(&s->victim, v);
        s->victim_ms += v;
    }
    if (atr_json_get_num(o, "cpu_pressure_some_ms", &v) && v > 0)
        s->victim_cpu_stall_ms += v;
    if (atr_json_get_num(o, "mem_pressure_some_ms", &v) && v > 0)
        s->victim_mem_stall_ms += v;
}

/* One step line of DIR/metrics.jsonl: the arm as "config" first. */
static void write_line(FILE *out, const struct atr_json *o, const struct atr_xp_arm *r,
                       unsigned rep)
{
    struct atr_buf b = {0};
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "config", r->config);
    atr_jw_kv_str(&w, "arm", r->name);
    atr_jw_kv_uint(&w, "rep", rep);
    for (const struct atr_json *m = o->u.kids.first; m; m = m->next) {
        if (atr_json_key_is(m, "config"))
            atr_jw_key(&w, "replay_config");
        else
            atr_jw_keyn(&w, m->key, m->key_len);
        atr_jw_value(&w, m);
    }
    atr_jw_object_end(&w);
    if (atr_jw_finish(&w) == 0)
        fprintf(out, "%.*s\n", (int)b.len, b.data);
    atr_buf_release(&b);
}

/* Adds a run's metrics.jsonl to s and to out (each line tagged with its
 * arm and rep). -1 when it cannot be read. */
static int read_run(const struct xp_run *a, struct atr_xp_sum *s, const char *dir, int arm,
                    unsigned rep, FILE *out)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    struct atr_arena arena = ATR_ARENA_INIT;
    while ((len = getline(&line, &cap, f)) > 0) {
        struct atr_json *o;
        struct atr_json_err jerr;
        if (atr_json_parse(&arena, line, (size_t)len, NULL, &o, &jerr) == 0 &&
            o->type == ATR_JSON_OBJECT) {
            bool solo = add_tenant(a, s, o);    /* the reference, not the arm's own */
            if (!solo && !is_victim(a, o))
                add_step(s, o);
            else if (!solo)
                add_victim(s, o);
            write_line(out, o, &a->c->x->arms[arm], rep);
        }
        atr_arena_clear(&arena);
    }
    atr_arena_release(&arena);
    free(line);
    fclose(f);
    s->runs++;
    return 0;
}


static void put_arm(struct atr_jw *w, const struct atr_xp_arm *r, struct atr_xp_sum *s,
                    double base_p50)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "config", r->config);
    atr_jw_kv_str(w, "arm", r->name);
    atr_jw_kv_str(w, "replay_config", r->replay_config);
    if (s->skipped) {
        atr_jw_kv_str(w, "skipped", s->why);
        atr_jw_object_end(w);
        return;
    }
    double p50 = atr_xp_pct(&s->latency, 50);
    atr_jw_kv_uint(w, "runs", s->runs);
    atr_jw_kv_uint(w, "total_steps", s->steps);
    atr_jw_kv_fixed(w, "latency_p50_ms", p50, 3);
    atr_jw_kv_fixed(w, "latency_p95_ms", atr_xp_pct(&s->latency, 95), 3);
    atr_jw_kv_fixed(w, "latency_p99_ms", atr_xp_pct(&s->latency, 99), 3);
    atr_jw_kv_fixed(w, "slowdown", base_p50 > 0 ? p50 / base_p50 : NAN, 3);
    atr_jw_kv_fixed(w, "run_wall_p50_ms", atr_xp_pct(&s->wall, 50), 3);
    atr_jw_kv_fixed(w, "max_rss_mb", s->max_rss_mb, 3);
    atr_jw_kv_int(w, "mem_high_events_total", s->high_events);
    atr_jw_kv_int(w, "mem_max_events_total", s->max_events);
    atr_jw_kv_int(w, "oom_kills", s->oom);
    atr_jw_kv_int(w, "ctl_holds_total", s->holds);
    atr_jw_kv_fixed(w, "ctl_held_ms_total", s->held_ms, 3);
    atr_jw_kv_uint(w, "reaction_samples", s->reaction.n);
    atr_jw_kv_fixed(w, "reaction_p50_us", atr_xp_pct(&s->reaction, 50), 3);
    atr_jw_kv_fixed(w, "reaction_p99_us", atr_xp_pct(&s->reaction, 99), 3);
    atr_jw_kv_fixed(w, "reaction_bound_p50_us", atr_xp_pct(&s->bound, 50), 3);
    atr_jw_kv_fixed(w, "reaction_bound_p99_us", atr_xp_pct(&s->bound, 99), 3);
    atr_jw_kv_fixed(w, "overshoot_max_mb", s->overshoot_mb, 3);
    if (s->victim.n) {
        atr_jw_kv_uint(w, "victim_steps", s->victim.n);
        atr_jw_kv_fixed(w, "victim_latency_p50_ms", atr_xp_pct(&s->victim, 50), 3);
        atr_jw_kv_fixed(w, "victim_latency_p99_ms", atr_xp_pct(&s->victim, 99), 3);
        atr_jw_kv_fixed(w, "victim_latency_ms_total", s->victim_ms, 3);
        atr_jw_kv_fixed(w, "victim_cpu_stall_ms_total", s->victim_cpu_stall_ms, 3);
        atr_jw_kv_fixed(w, "victim_mem_stall_ms_total", s->victim_mem_stall_ms, 3);
    }
    atr_jw_object_end(w);
}

/* ---- the references of the overhead experiment ---- */

/* Runs argv (PATH searched), its output to /dev/null: wall ms, and its
 * exit status in *st (-1: it could not start). */
static double time_spawn(char *const argv[], int *st)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    *st = -1;
    if (rc != 0)
        return NAN;
    int w;
    while (waitpid(pid, &w, 0) < 0)
        if (errno != EINTR)
            return NAN;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *st = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* systemd-run --scope needs a running manager; without one it would only
 * fail after a D-Bus timeout, so the manager's directory is asked first. */
static bool systemd_runs(struct atr_xp_refs *r)
{
    struct stat sb;
    if (r->systemd_why[0])
        return false;
    if (stat("/run/systemd/system", &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(r->systemd_why, sizeof r->systemd_why,
                 "no systemd manager runs here (/run/systemd/system is missing)");
        return false;
    }
    return true;
}

/* One repetition's references: fork/exec, then systemd-run. */
static void measure_refs(struct atr_xp_refs *r)
{
    char *fe[] = {"/bin/sh", "-c", "true", NULL};
    char *sd[] = {"systemd-run", "--scope", "-q", "/bin/sh", "-c", "true", NULL};
    int st;
    for (int i = 0; i < ATR_XP_FORK_EXEC_PER_REP; i++) {
        double ms = time_spawn(fe, &st);
        if (st == 0)
            atr_samples_add(&r->fork_exec_ms, ms);
    }
    for (int i = 0; i < ATR_XP_SYSTEMD_PER_REP && systemd_runs(r); i++) {
        double ms = time_spawn(sd, &st);
        if (st == 0)
            atr_samples_add(&r->systemd_run_ms, ms);
        else
            snprintf(r->systemd_why, sizeof r->systemd_why, "systemd-run --scope %s (%d)",
                     st < 0 ? "could not start" : "failed: exit", st);
    }
}

void atr_xp_refs_release(struct atr_xp_refs *refs)
{
    if (!refs)
        return;
    atr_samples_release(&refs->fork_exec_ms);
    atr_samples_release(&refs->systemd_run_ms);
}

static void put_ref(struct atr_jw *w, const char *key, struct atr_samples *s, const char *why)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    if (!s->n && why && why[0]) {
        atr_jw_kv_str(w, "skipped", why);
    } else {
        atr_jw_kv_uint(w, "runs", s->n);
        atr_jw_kv_fixed(w, "step_p50_ms", atr_xp_pct(s, 50), 3);
        atr_jw_kv_fixed(w, "step_p99_ms", atr_xp_pct(s, 99), 3);
    }
    atr_jw_object_end(w);
}

/* "references": what a step of `sh -c true` costs without atr. */
static void put_refs(struct atr_jw *w, struct atr_xp_refs *r)
{
    if (!r)
        return;
    atr_jw_key(w, "references");
    atr_jw_object_begin(w);
    put_ref(w, "fork_exec", &r->fork_exec_ms, NULL);
    put_ref(w, "systemd_run_scope", &r->systemd_run_ms, r->systemd_why);
    atr_jw_object_end(w);
}

/* One tenant's slowdown under one arm: shared over solo, p50 and p99. */
static void put_tenant(struct atr_jw *w, const struct atr_xp_arm *r, struct atr_xp_tenant *t)
{
    double a50 = atr_xp_pct(&t->alone, 50), s50 = atr_xp_pct(&t->shared, 50);
    double a99 = atr_xp_pct(&t->alone, 99), s99 = atr_xp_pct(&t->shared, 99);
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "config", r->config);
    atr_jw_kv_str(w, "arm", r->name);
    atr_jw_kv_str(w, "trace_id", t->id);
    atr_jw_kv_bool(w, "victim", t->victim);
    atr_jw_kv_uint(w, "steps_solo", t->alone.n);
    atr_jw_kv_uint(w, "steps_shared", t->shared.n);
    atr_jw_kv_fixed(w, "latency_p50_ms_solo", a50, 3);
    atr_jw_kv_fixed(w, "latency_p50_ms_shared", s50, 3);
    atr_jw_kv_fixed(w, "latency_p99_ms_solo", a99, 3);
    atr_jw_kv_fixed(w, "latency_p99_ms_shared", s99, 3);
    atr_jw_kv_fixed(w, "slowdown_p50", a50 > 0 ? s50 / a50 : NAN, 3);
    atr_jw_kv_fixed(w, "slowdown_p99", a99 > 0 ? s99 / a99 : NAN, 3);
    atr_jw_object_end(w);
}

/* "tenant_slowdown": every arm's tenants that ran alone too. */
static void put_tenants(struct atr_jw *w, const struct atr_xp *x, struct atr_xp_sum *sums)
{
    bool any = false;
    for (int k = 0; k < x->n; k++)
        for (int i = 0; i < sums[k].n_tenants; i++)
            any = any || sums[k].tenants[i].alone.n;
    if (!any)
        return;
    atr_jw_key(w, "tenant_slowdown");
    atr_jw_array_begin(w);
    for (int k = 0; k < x->n; k++)
        for (int i = 0; !sums[k].skipped && i < sums[k].n_tenants; i++)
            if (sums[k].tenants[i].alone.n)
                put_tenant(w, &x->arms[k], &sums[k].tenants[i]);
    atr_jw_array_end(w);
}

static int write_summary(const struct atr_xp_cfg *a, struct atr_xp_sum *sums, double base_p50)
{
    struct atr_buf b = {0};
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "experiment", a->x->mode);
    atr_jw_key(&w, "limits");
    atr_jw_object_begin(&w);
    atr_jw_kv_int(&w, "mem_high_bytes", a->mem_high);
    atr_jw_kv_int(&w, "mem_max_bytes", a->mem_max);
    atr_jw_object_end(&w);
    atr_jw_key(&w, "configs");
    atr_jw_array_begin(&w);
    for (int k = 0; k < a->x->n; k++)
        put_arm(&w, &a->x->arms[k], &sums[k], base_p50);
    atr_jw_array_end(&w);
    put_tenants(&w, a->x, sums);
    put_refs(&w, a->refs);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/summary.json", a->out);
    FILE *f = fopen(path, "we");
    bool ok = f && fwrite(b.data, 1, b.len, f) == b.len && fputc('\n', f) != EOF;
    ok = f && fclose(f) == 0 && ok;
    atr_buf_release(&b);
    return ok ? 0 : -1;
}


/* The victim file's trace ids (its steps are told apart by them). A
 * line that is not a trace is left to the replay to report. */
static int read_victim_ids(struct xp_run *a, struct atr_error *err)
{
    FILE *f = fopen(a->c->victim, "re");
    if (!f)
        return atr_error_set(err, "%s: %s", a->c->victim, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    struct atr_arena arena = ATR_ARENA_INIT;
    while ((len = getline(&line, &cap, f)) > 0) {
        struct atr_json *o;
        struct atr_json_err jerr;
        const char *id;
        if (atr_json_parse(&arena, line, (size_t)len, NULL, &o, &jerr) == 0 &&
            (id = atr_json_get_str(o, "trace_id", NULL))) {
            a->victim_ids = xrealloc(a->victim_ids, (a->n_victim_ids + 1) * sizeof *a->victim_ids);
            a->victim_ids[a->n_victim_ids++] = xstrdup(id);
        }
        atr_arena_clear(&arena);
    }
    atr_arena_release(&arena);
    free(line);
    fclose(f);
    if (!a->n_victim_ids)
        return atr_error_set(err, "%s: no trace with a trace_id", a->c->victim);
    return 0;
}


/* Runs every arm reps times, the order rotating; an ebpf arm that fails
 * its first run is skipped with the reason, any other failure ends it. */
static int run_all(const struct xp_run *a, struct atr_xp_sum *sums, FILE *metrics,
                   struct atr_error *err)
{
    char dir[PATH_MAX];
    const struct atr_xp *x = a->c->x;
    for (unsigned rep = 0; rep < a->c->reps; rep++)
        for (int i = 0; i < x->n; i++) {
            if (i == 0 && a->c->refs)   /* interleaved with the arms, once a repetition */
                measure_refs(a->c->refs);
            int arm = (int)((i + rep) % (unsigned)x->n);
            const struct atr_xp_arm *r = &x->arms[arm];
            if (sums[arm].skipped)
                continue;
            snprintf(dir, sizeof dir, "%s/%s-%u", a->c->out, r->name, rep);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            int rc = run_replay(a, arm, dir);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (rc < 0)
                return atr_error_set(err, "cannot run atr replay tools: %s", strerror(errno));
            if (rc != 0 && r->controller && strcmp(r->controller, "ebpf") == 0 && rep == 0) {
                sums[arm].skipped = true;
                first_line(dir, sums[arm].why, sizeof sums[arm].why);
                continue;
            }
            if (rc != 0) {
                char why[320];
                first_line(dir, why, sizeof why);
                return atr_error_set(err, "experiment %s: the %s run %u failed (exit %d): %s",
                                     x->mode, r->name, rep, rc, why);
            }
            atr_samples_add(&sums[arm].wall, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                                                 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
            if (read_run(a, &sums[arm], dir, arm, rep, metrics) < 0)
                return atr_error_set(err, "%s/metrics.jsonl: %s", dir, strerror(errno));
        }
    return 0;
}

/* DIR/report.html from DIR (`atr report`), and with --png its charts in
 * DIR/figures. */
static int write_report(const struct atr_xp_cfg *a, struct atr_error *err)
{
    char html[PATH_MAX + 32], figures[PATH_MAX + 32], errbase[PATH_MAX + 32];
    char errpath[PATH_MAX + 64];
    snprintf(html, sizeof html, "%s/report.html", a->out);
    snprintf(figures, sizeof figures, "%s/figures", a->out);
    snprintf(errbase, sizeof errbase, "%s/report", a->out);
    snprintf(errpath, sizeof errpath, "%s.err", errbase);
    char *argv[] = {"/proc/self/exe", "report", "-q", (char *)a->out, "-o", html,
                    a->png ? "--png" : NULL, figures, NULL};
    int rc = run_self(argv, errpath);
    if (rc < 0)
        return atr_error_set(err, "cannot run atr report: %s", strerror(errno));
    if (rc != 0) {
        char why[320];
        first_line(errbase, why, sizeof why);
        return atr_error_set(err, "experiment %s: atr report failed (exit %d): %s", a->x->mode, rc,
                             why);
    }
    return 0;
}


int atr_xp_run(const struct atr_xp_cfg *cfg, struct atr_xp_sum *sums, double *base_p50,
               struct atr_error *err)
{
    memset(sums, 0, ATR_XP_MAX_ARMS * sizeof *sums);
    *base_p50 = NAN;
    if (cfg->x->needs_victim && !cfg->victim)
        return atr_error_set(err, "experiment %s wants --victim FILE: the tenant whose tail "
                             "latency each arm is judged by", cfg->x->mode);
    struct xp_run a = {.c = cfg};
    int rc = cfg->victim ? read_victim_ids(&a, err) : 0;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->out);
    FILE *metrics = rc == 0 ? fopen(path, "we") : NULL;
    if (rc == 0 && !metrics)
        rc = atr_error_set(err, "%s: %s", path, strerror(errno));
    if (rc == 0)
        rc = run_all(&a, sums, metrics, err);
    if (metrics && fclose(metrics) != 0 && rc == 0)
        rc = atr_error_set(err, "%s: %s", path, strerror(errno));
    *base_p50 = atr_xp_pct(&sums[0].latency, 50);
    if (rc == 0 && write_summary(cfg, sums, *base_p50) < 0)
        rc = atr_error_set(err, "%s/summary.json: cannot write", cfg->out);
    if (rc == 0)
        rc = write_report(cfg, err);
    for (size_t i = 0; i < a.n_victim_ids; i++)
        free(a.victim_ids[i]);
    free(a.victim_ids);
    return rc;
}

void atr_xp_sums_release(struct atr_xp_sum *sums)
{
    for (int k = 0; k < ATR_XP_MAX_ARMS; k++) {
        atr_samples_release(&sums[k].latency);
        atr_samples_release(&sums[k].reaction);
        atr_samples_release(&sums[k].bound);
        atr_samples_release(&sums[k].victim);
        atr_samples_release(&sums[k].wall);
        for (int i = 0; i < sums[k].n_tenants; i++) {
            atr_samples_release(&sums[k].tenants[i].alone);
            atr_samples_release(&sums[k].tenants[i].shared);
        }
    }
}
