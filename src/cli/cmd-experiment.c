/* cmd-experiment.c - `atr experiment timescale|domain|overhead`: arms side
 * by side on the same tool traces (timescale: the dynamic controller's
 * user-space psi-poll and psi-trigger, in-kernel ebpf, and no controller;
 * domain: static-env, static-toolcall, dynamic; overhead: none,
 * static-toolcall, dynamic), repeated and interleaved; each run is an
 * `atr replay tools` of this binary, so every run has its own process,
 * guard and cgroup root. */
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

#include "cli/cmd.h"
#include "cli/opts.h"
#include "json/json.h"
#include "json/writer.h"
#include "stats/percentile.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"

extern char **environ;

static const char help[] =
    "usage: atr experiment timescale|domain|overhead [OPTIONS] TRACE... --out DIR\n"
    "\n"
    "The AgentCgroup experiments (docs/controller.md) on the tool steps of\n"
    "TRACE, each a set of arms:\n"
    "  timescale  static-toolcall (no controller, the baseline), then the\n"
    "             dynamic controller's arms: psi-poll (user space, every\n"
    "             --interval ms), psi-trigger (user space, kernel events) and\n"
    "             ebpf (the kernel stops a step at its target)\n"
    "  domain     static-env (one group per trace), static-toolcall (one per\n"
    "             step), dynamic (psi-poll)\n"
    "  overhead   none (no cgroup, the baseline), static-toolcall, dynamic\n"
    "Every arm runs --reps times, interleaved (the order rotates every\n"
    "repetition); the first arm is the baseline of \"slowdown\". Each run is\n"
    "`atr replay tools` into\n"
    "DIR/ARM-REP/. DIR/metrics.jsonl holds every step line with its \"arm\" and\n"
    "\"rep\", the arm as its \"config\" (timescale: static-toolcall,\n"
    "dynamic-psi-poll, dynamic-psi-trigger, dynamic-ebpf; the replay's own as\n"
    "\"replay_config\");\n"
    "DIR/summary.json \"limits\" and \"configs\", one per arm: config, arm, runs,\n"
    "total_steps, latency_p50_ms, latency_p95_ms, latency_p99_ms, slowdown\n"
    "(latency p50 over the baseline's), run_wall_p50_ms (a whole replay run,\n"
    "its groups' setup and teardown included), max_rss_mb, mem_high_events_total,\n"
    "mem_max_events_total, oom_kills, ctl_holds_total, ctl_held_ms_total,\n"
    "reaction_samples, reaction_p50_us, reaction_p99_us,\n"
    "reaction_bound_p50_us, reaction_bound_p99_us (null: none),\n"
    "overshoot_max_mb (usage above the limit in force: the eBPF stops' kernel\n"
    "readings, the others' polls), and with --victim victim_steps,\n"
    "victim_latency_p50_ms, victim_latency_p99_ms; or skipped with the\n"
    "reason. DIR/report.html is `atr report DIR`: the arms' latency and\n"
    "reaction-time (seen -> written) CDFs, memory per step with the limits.\n"
    "Prints the side-by-side table. Where\n"
    "eBPF cannot load (no root, no BTF, a build without it) the ebpf arm is\n"
    "skipped, saying why.\n"
    "\n"
    "options:\n"
    "  -o, --out DIR       where to write (required; must not exist, or --force)\n"
    "      --force         write into an existing DIR (its runs of this experiment\n"
    "                      are replaced; others are left)\n"
    "      --reps N        runs per arm (default 5)\n"
    "      --mem-high SIZE the dynamic arms' target (default 32M)\n"
    "      --mem-max SIZE  every arm's ceiling (default 1G)\n"
    "      --interval MS   psi-poll's interval (default 50)\n"
    "      --sandbox MODE  ns or none (default none: the host's processes)\n"
    "      --png           the report's charts also as DIR/figures/*.png\n"
    "                      (headless Chromium, see atr report)\n"
    "      --victim FILE   a co-located tenant: every run replays TRACE... and\n"
    "                      FILE's traces at once (--tenants), FILE's steps\n"
    "                      reported apart as the victim's latency\n"
    "  -q, --quiet         no table\n";

/* One arm: how its runs replay, and its name as a configuration of DIR's
 * metrics.jsonl and summary.json (what `atr report DIR` shows side by
 * side; the replay's own "config" is kept as "replay_config"). */
struct arm {
    const char *name;           /* DIR/NAME-REP, the table */
    const char *config;
    const char *replay_config;
    const char *controller;     /* dynamic: the controller */
};

#define MAX_ARMS 4

/* An experiment: its arms, the first the baseline of "slowdown". */
struct experiment {
    const char *mode;
    struct arm arms[MAX_ARMS];
    int n;
};

static const struct experiment experiments[] = {
    {"timescale",
     {{"static", "static-toolcall", "static-toolcall", NULL},
      {"psi-poll", "dynamic-psi-poll", "dynamic", "psi-poll"},
      {"psi-trigger", "dynamic-psi-trigger", "dynamic", "psi-trigger"},
      {"ebpf", "dynamic-ebpf", "dynamic", "ebpf"}},
     4},
    {"domain",
     {{"static-env", "static-env", "static-env", NULL},
      {"static-toolcall", "static-toolcall", "static-toolcall", NULL},
      {"dynamic", "dynamic", "dynamic", "psi-poll"}},
     3},
    {"overhead",
     {{"none", "none", "none", NULL},
      {"static-toolcall", "static-toolcall", "static-toolcall", NULL},
      {"dynamic", "dynamic", "dynamic", "psi-poll"}},
     3},
};

struct exp_args {
    const struct experiment *x;
    const char *out;
    bool force, quiet, png;
    unsigned reps, interval_ms;
    int64_t mem_high, mem_max;
    int sandbox;                /* 0 none, 1 ns */
    const char *victim;
    char **victim_ids;          /* the victim file's trace ids */
    size_t n_victim_ids;
    int first;
};

#define ARGS struct exp_args
static const struct opt options[] = {
    OPT_STRING(ARGS, out, "out", 'o'),
    OPT_FLAG(ARGS, force, "force", 0),
    OPT_UINT(ARGS, reps, "reps", 0, 1, 1000, "--reps wants 1..1000"),
    OPT_SIZE(ARGS, mem_high, "mem-high", 0, 1 << 20, INT64_MAX,
             "--mem-high wants a size of 1M or more like 32M"),
    OPT_SIZE(ARGS, mem_max, "mem-max", 0, 1 << 20, INT64_MAX,
             "--mem-max wants a size of 1M or more like 1G"),
    OPT_UINT(ARGS, interval_ms, "interval", 0, 1, 60000, "--interval wants milliseconds 1..60000"),
    OPT_ENUM(ARGS, sandbox, "sandbox", 0, OPT_WORDS("none", "ns"), "--sandbox wants ns or none"),
    OPT_STRING(ARGS, victim, "victim", 0),
    OPT_FLAG(ARGS, png, "png", 0),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS



/* One arm's figures over all its runs. */
struct arm_sum {
    bool skipped;
    char why[320];
    unsigned runs;
    unsigned long steps;
    struct atr_samples latency, reaction, bound, victim;
    struct atr_samples wall;    /* each run's whole replay, ms: setup and teardown too */
    double max_rss_mb, held_ms, overshoot_mb;
    int64_t high_events, max_events, oom, holds;
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
static int run_replay(const struct exp_args *a, int arm, const char *dir, char **traces,
                      int n_traces)
{
    char high[32], max[32], interval[16], errpath[PATH_MAX + 32];
    fmt_size(high, sizeof high, a->mem_high);
    fmt_size(max, sizeof max, a->mem_max);
    snprintf(interval, sizeof interval, "%u", a->interval_ms);
    snprintf(errpath, sizeof errpath, "%s.err", dir);
    char *argv[40 + n_traces];
    int n = 0;
    char *fixed[] = {"/proc/self/exe", "replay", "tools", "-q", "--force", "--out", (char *)dir,
                     "--mem-max", max, "--sandbox", a->sandbox ? "ns" : "none"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = fixed[i];
    const struct arm *r = &a->x->arms[arm];
    argv[n++] = "--config";
    argv[n++] = (char *)r->replay_config;
    if (r->controller) {
        char *dyn[] = {"--controller", (char *)r->controller, "--mem-high", high, "--interval",
                       interval};
        for (size_t i = 0; i < sizeof dyn / sizeof dyn[0]; i++)
            argv[n++] = dyn[i];
    }
    for (int i = 0; i < n_traces; i++)
        argv[n++] = traces[i];
    if (a->victim) {
        argv[n++] = "--tenants";
        argv[n++] = "--no-baseline";
        argv[n++] = (char *)a->victim;
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

/* ---- reading its metrics ---- */

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

static bool is_victim(const struct exp_args *a, const struct atr_json *o)
{
    const char *id = atr_json_get_str(o, "trace_id", NULL);
    for (size_t i = 0; id && i < a->n_victim_ids; i++)
        if (strcmp(a->victim_ids[i], id) == 0)
            return true;
    return false;
}

static void add_step(struct arm_sum *s, const struct atr_json *o)
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

/* One step line of DIR/metrics.jsonl: the arm as "config" first. */
static void write_line(FILE *out, const struct atr_json *o, const struct arm *r, unsigned rep)
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
static int read_run(const struct exp_args *a, struct arm_sum *s, const char *dir, int arm,
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
            double v;
            if (!is_victim(a, o))
                add_step(s, o);
            else if (atr_json_get_num(o, "latency_ms", &v))
                atr_samples_add(&s->victim, v);
            write_line(out, o, &a->x->arms[arm], rep);
        }
        atr_arena_clear(&arena);
    }
    atr_arena_release(&arena);
    free(line);
    fclose(f);
    s->runs++;
    return 0;
}

/* ---- output ---- */

static double pct(struct atr_samples *s, double p)
{
    return s->n ? atr_samples_percentile(s, p) : NAN;
}

static void put_arm(struct atr_jw *w, const struct arm *r, struct arm_sum *s, double base_p50)
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
    double p50 = pct(&s->latency, 50);
    atr_jw_kv_uint(w, "runs", s->runs);
    atr_jw_kv_uint(w, "total_steps", s->steps);
    atr_jw_kv_fixed(w, "latency_p50_ms", p50, 3);
    atr_jw_kv_fixed(w, "latency_p95_ms", pct(&s->latency, 95), 3);
    atr_jw_kv_fixed(w, "latency_p99_ms", pct(&s->latency, 99), 3);
    atr_jw_kv_fixed(w, "slowdown", base_p50 > 0 ? p50 / base_p50 : NAN, 3);
    atr_jw_kv_fixed(w, "run_wall_p50_ms", pct(&s->wall, 50), 3);
    atr_jw_kv_fixed(w, "max_rss_mb", s->max_rss_mb, 3);
    atr_jw_kv_int(w, "mem_high_events_total", s->high_events);
    atr_jw_kv_int(w, "mem_max_events_total", s->max_events);
    atr_jw_kv_int(w, "oom_kills", s->oom);
    atr_jw_kv_int(w, "ctl_holds_total", s->holds);
    atr_jw_kv_fixed(w, "ctl_held_ms_total", s->held_ms, 3);
    atr_jw_kv_uint(w, "reaction_samples", s->reaction.n);
    atr_jw_kv_fixed(w, "reaction_p50_us", pct(&s->reaction, 50), 3);
    atr_jw_kv_fixed(w, "reaction_p99_us", pct(&s->reaction, 99), 3);
    atr_jw_kv_fixed(w, "reaction_bound_p50_us", pct(&s->bound, 50), 3);
    atr_jw_kv_fixed(w, "reaction_bound_p99_us", pct(&s->bound, 99), 3);
    atr_jw_kv_fixed(w, "overshoot_max_mb", s->overshoot_mb, 3);
    if (s->victim.n) {
        atr_jw_kv_uint(w, "victim_steps", s->victim.n);
        atr_jw_kv_fixed(w, "victim_latency_p50_ms", pct(&s->victim, 50), 3);
        atr_jw_kv_fixed(w, "victim_latency_p99_ms", pct(&s->victim, 99), 3);
    }
    atr_jw_object_end(w);
}

static int write_summary(const struct exp_args *a, struct arm_sum *sums, double base_p50)
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

static void print_us(double v)
{
    if (isnan(v))
        printf(" %10s", "-");
    else if (v >= 10000)
        printf(" %8.1fms", v / 1000);
    else
        printf(" %8.1fus", v);
}

static void print_table(const struct exp_args *a, struct arm_sum *sums, double base_p50)
{
    printf("%-15s %5s %7s %10s %10s %10s %10s %8s %10s %7s %6s %6s %4s %10s\n", "arm", "runs",
           "raises", "react p50", "react p99", "bound p99", "lat p50", "slowdown", "run p50",
           "holds", "peakMB", "overMB", "oom", "victim p99");
    for (int k = 0; k < a->x->n; k++) {
        struct arm_sum *s = &sums[k];
        const char *name = a->x->arms[k].name;
        if (s->skipped) {
            printf("%-15s skipped: %s\n", name, s->why);
            continue;
        }
        double p50 = pct(&s->latency, 50);
        printf("%-15s %5u %7zu", name, s->runs, s->reaction.n);
        print_us(pct(&s->reaction, 50));
        print_us(pct(&s->reaction, 99));
        print_us(pct(&s->bound, 99));
        printf(" %8.1fms %7.2fx %8.1fms %7" PRId64 " %6.0f %6.1f %4" PRId64, p50,
               base_p50 > 0 ? p50 / base_p50 : NAN, pct(&s->wall, 50), s->holds, s->max_rss_mb,
               s->overshoot_mb, s->oom);
        if (s->victim.n)
            printf(" %8.1fms\n", pct(&s->victim, 99));
        else
            printf(" %10s\n", "-");
    }
}

/* ---- the experiment ---- */

/* The victim file's trace ids (its steps are told apart by them). A
 * line that is not a trace is left to the replay to report. */
static int read_victim_ids(struct exp_args *a)
{
    FILE *f = fopen(a->victim, "re");
    if (!f)
        return cli_fail("%s: %s", a->victim, strerror(errno));
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
        return cli_fail("%s: no trace with a trace_id", a->victim);
    return EXIT_OK;
}

static int prepare_out(const struct exp_args *a)
{
    struct stat st;
    if (stat(a->out, &st) == 0 && !a->force)
        return cli_fail("%s exists (use --force to replace its runs)", a->out);
    if (mkdir(a->out, 0755) < 0 && errno != EEXIST)
        return cli_fail("%s: %s", a->out, strerror(errno));
    return EXIT_OK;
}

/* Runs every arm reps times, the order rotating; an ebpf arm that fails
 * its first run is skipped with the reason, any other failure ends it. */
static int run_all(const struct exp_args *a, char **traces, int n, struct arm_sum *sums,
                   FILE *metrics)
{
    char dir[PATH_MAX];
    for (unsigned rep = 0; rep < a->reps; rep++)
        for (int i = 0; i < a->x->n; i++) {
            int arm = (int)((i + rep) % (unsigned)a->x->n);
            const struct arm *r = &a->x->arms[arm];
            if (sums[arm].skipped)
                continue;
            snprintf(dir, sizeof dir, "%s/%s-%u", a->out, r->name, rep);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            int rc = run_replay(a, arm, dir, traces, n);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (rc < 0)
                return cli_fail("cannot run atr replay tools: %s", strerror(errno));
            if (rc != 0 && r->controller && strcmp(r->controller, "ebpf") == 0 && rep == 0) {
                sums[arm].skipped = true;
                first_line(dir, sums[arm].why, sizeof sums[arm].why);
                fprintf(stderr, "atr: experiment %s: ebpf arm skipped: %s\n", a->x->mode,
                        sums[arm].why);
                continue;
            }
            if (rc != 0) {
                char why[320];
                first_line(dir, why, sizeof why);
                return cli_fail("experiment %s: the %s run %u failed (exit %d): %s",
                                a->x->mode, r->name, rep, rc, why);
            }
            atr_samples_add(&sums[arm].wall, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                                                 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
            if (read_run(a, &sums[arm], dir, arm, rep, metrics) < 0)
                return cli_fail("%s/metrics.jsonl: %s", dir, strerror(errno));
        }
    return EXIT_OK;
}

/* DIR/report.html from DIR (`atr report`), and with --png its charts in
 * DIR/figures. */
static int write_report(const struct exp_args *a)
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
        return cli_fail("cannot run atr report: %s", strerror(errno));
    if (rc != 0) {
        char why[320];
        first_line(errbase, why, sizeof why);
        return cli_fail("experiment %s: atr report failed (exit %d): %s", a->x->mode, rc, why);
    }
    return EXIT_OK;
}

/* The runs, then DIR/summary.json, the report and the table. */
static int experiment(const struct exp_args *a, char **traces, int n_traces)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", a->out);
    FILE *metrics = fopen(path, "we");
    if (!metrics)
        return cli_fail("%s: %s", path, strerror(errno));
    struct arm_sum sums[MAX_ARMS];
    memset(sums, 0, sizeof sums);
    int rc = run_all(a, traces, n_traces, sums, metrics);
    if (fclose(metrics) != 0 && rc == EXIT_OK)
        rc = cli_fail("%s: %s", path, strerror(errno));
    double base = pct(&sums[0].latency, 50);
    if (rc == EXIT_OK && write_summary(a, sums, base) < 0)
        rc = cli_fail("%s/summary.json: cannot write", a->out);
    if (rc == EXIT_OK)
        rc = write_report(a);
    if (rc == EXIT_OK && !a->quiet)
        print_table(a, sums, base);
    for (int k = 0; k < MAX_ARMS; k++) {
        atr_samples_release(&sums[k].latency);
        atr_samples_release(&sums[k].reaction);
        atr_samples_release(&sums[k].bound);
        atr_samples_release(&sums[k].victim);
        atr_samples_release(&sums[k].wall);
    }
    return rc;
}

static int run(int argc, char **argv)
{
    static const char *const modes[] = {"timescale", "domain", "overhead", NULL};
    struct exp_args a = {.reps = 5, .interval_ms = 50, .mem_high = 32 << 20,
                         .mem_max = (int64_t)1 << 30};
    for (size_t i = 0; argc > 1 && i < sizeof experiments / sizeof *experiments; i++)
        if (strcmp(argv[1], experiments[i].mode) == 0)
            a.x = &experiments[i];
    if (!a.x)
        return cli_usage_mode("experiment", argc, argv, modes);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "experiment %s", a.x->mode);
    const struct opts_cmd parser = {cmd, options};
    if (opts_parse(&parser, &a, argc - 1, argv + 1, &a.first) != EXIT_OK)
        return EXIT_USAGE;
    if (!a.out)
        return cli_usage(cmd, "--out DIR is required");
    if (a.first >= argc - 1)
        return cli_usage(cmd, "wants at least one TRACE");
    for (int i = a.first + 1; i < argc; i++)
        if (access(argv[i], R_OK) != 0)
            return cli_fail("%s: %s", argv[i], strerror(errno));
    int rc = a.victim ? read_victim_ids(&a) : EXIT_OK;
    if (rc == EXIT_OK)
        rc = prepare_out(&a);
    if (rc == EXIT_OK)
        rc = experiment(&a, argv + a.first + 1, argc - a.first - 1);
    for (size_t i = 0; i < a.n_victim_ids; i++)
        free(a.victim_ids[i]);
    free(a.victim_ids);
    return rc;
}

const struct atr_cmd cmd_experiment_entry = {
    .name = "experiment",
    .summary = "the AgentCgroup experiments: timescale, domain, overhead",
    .help = help,
    .run = run,
};
