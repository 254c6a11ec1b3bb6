/* cmd-replay.c - `atr replay tools`: tool steps of traces as real processes
 * under cgroup control, with metrics.jsonl and summary.json. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "json/writer.h"
#include "runner/bpfctl.h"
#include "runner/controller.h"
#include "runner/guard.h"
#include "runner/replay.h"
#include "runner/spawn.h"
#include "runner/summary.h"
#include "runner/tenants.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/input.h"
#include "util/output.h"

static const char help[] =
    "usage: atr replay tools [OPTIONS] TRACE... --out DIR\n"
    "       atr replay tools --merge DIR... --out DIR\n"
    "       atr replay llm [OPTIONS] TRACE... --target URL|sim:GPU/MODEL\n"
    "         (see `atr replay llm --help`)\n"
    "       atr replay agent [OPTIONS] TRACE... --target URL|sim:GPU/MODEL\n"
    "         (see `atr replay agent --help`)\n"
    "\n"
    "Runs the tool steps of traces (any supported format) as real processes:\n"
    "bash steps with /bin/sh -c, in order, each trace in a fresh working\n"
    "directory; browser steps (Playwright trace.zip, given as TRACE) in a real\n"
    "headless Chromium driven over its DevTools pipe, the trace's recorded\n"
    "network served back (docs/browser.md); editor steps as the file\n"
    "operations they were (create, overwrite, insert, replace, view), with\n"
    "synthetic bytes of the recorded sizes; other tools are skipped and\n"
    "counted with a reason. Writes\n"
    "DIR/metrics.jsonl (one line per step, written as each step ends) and\n"
    "DIR/summary.json (per configuration), and prints the summary.\n"
    "\n"
    "Replayed commands come from downloaded trajectories: untrusted code. By\n"
    "default each step runs as an unprivileged uid in its own user, mount,\n"
    "PID, network, IPC, UTS and cgroup namespaces, on a read-only root with\n"
    "only its work dir writable and a private /tmp, with no capabilities, a\n"
    "seccomp filter, a scrubbed environment, closed stdin and capped output;\n"
    "running directly on the host needs --sandbox none. Both the sandbox and\n"
    "cgroups need root (or a delegated cgroup): without them atr says what is\n"
    "missing and what to pass before running anything (exit 2). Work\n"
    "directories and groups of runs killed by SIGKILL are removed by the next.\n"
    "Limits are on by default: processes (--pids-max), memory (--mem-max), the\n"
    "work directory's size (--disk-max), wall time (--timeout) and captured\n"
    "output (--max-output); each step's metrics say which it met.\n"
    "\n"
    "configurations (--config, several comma-separated: run one after another):\n"
    "  none             no cgroup, rusage only (baseline)\n"
    "  static-env       one cgroup per trace with the limits below\n"
    "  static-toolcall  a child cgroup per step with the limits below (default)\n"
    "  dynamic          a child cgroup per step whose memory.high a controller\n"
    "                   adjusts while it runs (docs/controller.md)\n"
    "\n"
    "options:\n"
    "  -c, --config LIST     configurations (default static-toolcall)\n"
    "  -o, --out DIR         output directory (created; required): written in\n"
    "                        DIR.tmp.XXXXXX beside it, renamed to DIR at the end\n"
    "      --force           replace DIR when it holds files (else refused)\n"
    "      --mem-high SIZE   memory.high (v1: soft limit; dynamic: the start of the\n"
    "                        limit it holds the step at), e.g. 512M\n"
    "      --mem-max SIZE    memory.max: the hard limit, OOM past it (default 3/4 of\n"
    "                        the memory atr may use: MemTotal, or its cgroup's\n"
    "                        limit when lower; none: no limit)\n"
    "      --cpu-max CPUS    CPU bandwidth in cores, e.g. 0.5 or 2\n"
    "      --pids-max N      most processes in the group (default 1024; none)\n"
    "      --disk-max SIZE   size of each trace's work directory, a loop-mounted\n"
    "                        ext4 image (default 4G; none; needs root: else no\n"
    "                        cap, with a warning)\n"
    "      --controller K    dynamic: psi-poll (default), psi-trigger, or ebpf (in\n"
    "                        the kernel: stops a step at its target; needs root\n"
    "                        and BTF)\n"
    "      --interval MS     psi-poll interval (default 50)\n"
    "      --timeout SEC     a bash step's timeout when the trace has none (default 120)\n"
    "      --max-output SIZE captured output per step (default 1M; the rest is counted)\n"
    "      --sandbox MODE    ns (default) or none (run on the host)\n"
    "      --allow-network   keep the host network inside the sandbox\n"
    "      --rootfs DIR      run steps inside an exported root file system\n"
    "      --image IMAGE     run each trace's steps inside a container of IMAGE (a\n"
    "                        local image: podman pull it first), one per trace,\n"
    "                        created and removed by atr (docs/replay-tools.md)\n"
    "      --image-template T  the image of each trace from its instance_id:\n"
    "                        {instance} as recorded, {sweb} as SWE-bench names it\n"
    "      --container-cli C podman (default), docker, or a path to one\n"
    "      --bind DIR        a host folder the sandboxed steps may write, at its\n"
    "                        own path (up to 3; the work dir always is)\n"
    "      --workdir DIR     where per-trace directories go (default $TMPDIR, else\n"
    "                        /tmp): each holds work/ (cwd and HOME of its steps)\n"
    "                        and tmp/ (its private /tmp)\n"
    "      --shard I:N       run only traces with index % N == I (from 0)\n"
    "      --merge           arguments are output directories of shards: combine\n"
    "                        their metrics.jsonl into DIR\n"
    "      --tenants         every trace is a tenant: all run at once, each in its\n"
    "                        own subtree with its cpu weight, then each alone;\n"
    "                        the report gives each tenant's latency inflation\n"
    "      --tenant-weights W1,W2,...  cpu weights of tenants 0,1,... (1..10000,\n"
    "                        default 100; v1: cpu.shares = W * 1024 / 100)\n"
    "      --no-baseline     --tenants without the alone runs (no inflation)\n"
    "      --browser-resources ZIP  the Playwright trace zip whose recorded network\n"
    "                        and DOM snapshots serve browser steps of converted\n"
    "                        traces (a TRACE that is the zip itself serves its own)\n"
    "      --browser-timeout SEC  every browser step's timeout (default: 10x its\n"
    "                        recorded duration, 5 s at least, 30 s at most)\n"
    "      --restore MODE    a browser step's recorded DOM snapshot set as the page\n"
    "                        first: auto (default: when the live page lacks its\n"
    "                        selector), always, never\n"
    "      --dry-run         print what would run, run nothing\n"
    "  -f, --from FMT        input format instead of sniffing\n"
    "  -q, --quiet           no progress on stderr, no summary table on stdout\n"
    "\n"
    "metrics.jsonl: config, trace_id, step_id, tool, cmd, latency_ms, cpu_ms,\n"
    "cpu_user_ms, cpu_sys_ms, max_rss_mb (rss_scope \"cgroup\": the whole tree's\n"
    "peak; \"process\": the largest process, without a cgroup), mem_high_events,\n"
    "mem_max_events, oom_kills, pids_max_hit (forks refused at pids.max),\n"
    "disk_full (the work directory was full after the step),\n"
    "mem_pressure_some_ms, mem_pressure_full_ms,\n"
    "cpu_pressure_some_ms, exit_code, timed_out, output_bytes,\n"
    "output_truncated, ctl_adjustments (null: unknown), missing_cwd (only\n"
    "when the step's recorded cwd is absent here, e.g. /testbed), class\n"
    "(ok, env_missing: failed for want of its environment, failed: on its\n"
    "own, skipped), editor steps file_op, path and missing_file, with\n"
    "--tenants also tenant and phase (shared|alone); skipped steps carry\n"
    "\"skipped\": the reason. Browser steps add action, selector, url, outcome\n"
    "(ok, noop, failed, no_match, unsupported, timeout, crashed), error,\n"
    "timeout_ms, snapshot, restore (live, restored, snapshot_missing,\n"
    "selector_missing), restore_resources_missing, not_restored (what could\n"
    "not be restored, in words), page_load_ms, net_served, net_unrecorded,\n"
    "net_missing, screenshot_bytes, browser_started, browser_start_ms,\n"
    "browser_starts, browser_crashed, browser_cpu_total_ms (docs/browser.md).\n"
    "\n"
    "summary.json and the table group failed steps by cause: timeout, oom,\n"
    "command_not_found (exit 127), missing_directory (the recorded cwd is\n"
    "absent: the trace wants its repository image, see --image),\n"
    "missing_file (an editor step's file is absent), nonzero_exit, and count\n"
    "each trace's steps by class (per_trace); the steps that met a limit\n"
    "(mem_max_hit_steps, pids_max_hit_steps, disk_full_steps) and the limits in\n"
    "force (limits) are there too. Ctrl-C stops cleanly: the running step is\n"
    "killed and not recorded, groups are removed. A run that stops early (Ctrl-C, an error\n"
    "such as a bad line in TRACE) has \"incomplete\": true and \"reason\".\n"
    "Input without tool steps is an error (exit 1).\n";

enum { MAX_CONFIGS = 4 };

struct replay_args {
    struct atr_replay_opts ro;
    char bind_paths[ATR_REPLAY_MAX_BINDS][PATH_MAX];   /* ro.binds point here */
    enum atr_replay_config configs[MAX_CONFIGS];
    int n_configs;
    const char *out, *from;
    bool force;              /* --force: an --out DIR with files is replaced */
    const char *browser_resources;
    struct opts_shard shard;     /* shard.n 1: all */
    bool merge, dry_run, quiet;
    bool tenants, no_baseline;
    int64_t weights[ATR_TENANTS_MAX];
    size_t n_weights;
    int first_arg;           /* argv[first_arg..argc): the TRACEs (or DIRs) */
    const char *container_cli;   /* --container-cli, or NULL: detected */
    struct atr_ctr_cli ctr_cli;  /* ro.container_cli points here */
};

static int parse_configs(const char *list, struct replay_args *a)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    a->n_configs = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (a->n_configs == MAX_CONFIGS ||
            atr_replay_config_parse(tok, &a->configs[a->n_configs]) < 0)
            return cli_usage("replay tools", "unknown configuration '%s'", tok);
        a->n_configs++;
    }
    return a->n_configs ? EXIT_OK : cli_usage("replay tools", "empty --config");
}

/* --bind DIR: an existing folder, kept by its real path (the sandbox
 * binds it where the step looks for it). */
static bool parse_bind(void *base, const char *arg, const char *cmd)
{
    (void)cmd;
    struct replay_args *a = base;
    int i = a->ro.n_binds;
    struct stat st;
    if (i == ATR_REPLAY_MAX_BINDS || !realpath(arg, a->bind_paths[i]) ||
        stat(a->bind_paths[i], &st) < 0 || !S_ISDIR(st.st_mode))
        return false;
    a->ro.binds[a->ro.n_binds++] = a->bind_paths[i];
    return true;
}

static bool parse_cpu_max(void *base, const char *arg, const char *cmd)
{
    (void)cmd;
    return cli_parse_cpu_max(arg, &((struct replay_args *)base)->ro.limits);
}

static bool parse_mem_max(void *base, const char *arg, const char *cmd)
{
    return cli_parse_limit(arg, &((struct replay_args *)base)->ro.limits.mem_max);
}

static bool parse_disk_max(void *base, const char *arg, const char *cmd)
{
    struct replay_args *a = base;
    /* below ext4's smallest useful size mkfs fails: refuse it here */
    return cli_parse_limit(arg, &a->ro.disk_max) && (a->ro.disk_max < 0 || a->ro.disk_max >= 1 << 20);
}

static bool parse_pids_max(void *base, const char *arg, const char *cmd)
{
    (void)cmd;
    return cli_parse_pids_max(arg, &((struct replay_args *)base)->ro.limits.pids_max);
}

static bool parse_timeout(void *base, const char *arg, const char *cmd)
{
    unsigned long long v;
    if (!cli_parse_uint(arg, 1, 86400, &v))
        return false;
    ((struct replay_args *)base)->ro.timeout_ms = (int64_t)v * 1000;
    return true;
}

static bool parse_browser_timeout(void *base, const char *arg, const char *cmd)
{
    unsigned long long v;
    if (!cli_parse_uint(arg, 1, 86400, &v))
        return false;
    ((struct replay_args *)base)->ro.browser_timeout_ms = (int64_t)v * 1000;
    return true;
}

static int parse_weights(const char *list, struct replay_args *a)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    a->n_weights = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned long long v;
        if (a->n_weights == ATR_TENANTS_MAX || !cli_parse_uint(tok, 1, 10000, &v))
            return cli_usage("replay tools", "--tenant-weights wants at most %d weights "
                             "1..10000, e.g. 100,400", ATR_TENANTS_MAX);
        a->weights[a->n_weights++] = (int64_t)v;
    }
    return a->n_weights ? EXIT_OK : cli_usage("replay tools", "empty --tenant-weights");
}

static bool opt_configs(void *a, const char *list, const char *cmd)
{
    return parse_configs(list, a) == EXIT_OK;
}

static bool opt_weights(void *a, const char *list, const char *cmd)
{
    return parse_weights(list, a) == EXIT_OK;
}

#define ARGS struct replay_args
static const struct opt options[] = {
    OPT_CALL("config", 'c', opt_configs, NULL),
    OPT_STRING(ARGS, out, "out", 'o'),
    OPT_FLAG(ARGS, force, "force", 0),
    OPT_SIZE(ARGS, ro.limits.mem_high, "mem-high", 0, 1, INT64_MAX,
             "--mem-high wants a size like 512M"),
    OPT_CALL("mem-max", 0, parse_mem_max, "--mem-max wants a size like 512M, or none"),
    OPT_CALL("disk-max", 0, parse_disk_max, "--disk-max wants a size of 1M or more like 4G, "
             "or none"),
    OPT_CALL("cpu-max", 0, parse_cpu_max, "--cpu-max wants a number of cores, e.g. 0.5"),
    OPT_CALL("pids-max", 0, parse_pids_max, "--pids-max wants a positive integer, or none"),
    OPT_ENUM(ARGS, ro.controller, "controller", 0, OPT_WORDS("psi-poll", "psi-trigger", "ebpf"),
             "--controller wants psi-poll, psi-trigger or ebpf"),
    OPT_UINT(ARGS, ro.interval_ms, "interval", 0, 1, 60000,
             "--interval wants milliseconds 1..60000"),
    OPT_CALL("timeout", 0, parse_timeout, "--timeout wants seconds 1..86400"),
    OPT_SIZE(ARGS, ro.max_output, "max-output", 0, 0, SIZE_MAX,
             "--max-output wants a size like 1M"),
    OPT_ENUM(ARGS, ro.sandbox, "sandbox", 0, OPT_WORDS("none", "ns"),
             "--sandbox wants ns or none"),
    OPT_FLAG(ARGS, ro.allow_network, "allow-network", 0),
    OPT_STRING(ARGS, ro.rootfs, "rootfs", 0),
    OPT_STRING(ARGS, ro.image, "image", 0),
    OPT_STRING(ARGS, ro.image_template, "image-template", 0),
    OPT_STRING(ARGS, container_cli, "container-cli", 0),
    OPT_CALL("bind", 0, parse_bind, "--bind wants an existing folder (at most 3)"),
    OPT_STRING(ARGS, ro.workdir, "workdir", 0),
    OPT_SHARD(struct replay_args, shard, 0),
    OPT_FLAG(ARGS, merge, "merge", 0),
    OPT_FLAG(ARGS, dry_run, "dry-run", 0),
    OPT_STRING(ARGS, browser_resources, "browser-resources", 0),
    OPT_CALL("browser-timeout", 0, parse_browser_timeout,
             "--browser-timeout wants seconds 1..86400"),
    OPT_ENUM(ARGS, ro.restore, "restore", 0, OPT_WORDS("auto", "always", "never"),
             "--restore wants auto, always or never"),
    OPT_FROM(ARGS, from),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_FLAG(ARGS, tenants, "tenants", 0),
    OPT_FLAG(ARGS, no_baseline, "no-baseline", 0),
    OPT_CALL("tenant-weights", 0, opt_weights, NULL),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"replay tools", options};

static int parse_args(int argc, char **argv, struct replay_args *a)
{
    struct atr_cg_limits none = ATR_CG_LIMITS_NONE;
    a->ro.limits = none;
    a->ro.limits.pids_max = ATR_REPLAY_PIDS_MAX;
    a->ro.limits.mem_max = ATR_LIMIT_AUTO;
    a->ro.disk_max = ATR_REPLAY_DISK_MAX;
    a->ro.sandbox = true;
    a->ro.max_output = 1 << 20;
    a->ro.timeout_ms = 120000;
    a->ro.interval_ms = 50;
    a->configs[0] = ATR_CFG_STATIC_TOOLCALL;
    a->n_configs = 1;
    a->shard.n = 1;
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    const char *tmpdir = getenv("TMPDIR");
    if (!a->ro.workdir && tmpdir && *tmpdir)
        a->ro.workdir = tmpdir;     /* else the library's /tmp */
    if (!a->out && !a->dry_run)
        return cli_usage("replay tools", "missing --out DIR");
    if (a->first_arg >= argc)
        return cli_usage("replay tools", a->merge ? "missing DIR to merge" : "missing TRACE");
    if (a->tenants && (a->merge || a->shard.n > 1))
        return cli_usage("replay tools", "--tenants runs every trace at once: not with "
                         "--merge or --shard");
    if (!a->tenants && (a->n_weights || a->no_baseline))
        return cli_usage("replay tools", "--tenant-weights and --no-baseline need --tenants");
    return EXIT_OK;
}

/* ---- output ---- */

struct sink_ctx {
    struct atr_outdir *dir;      /* --out's temporary folder until the end */
    enum atr_outdir_state was;   /* what --out held before */
    int fd;                      /* metrics.jsonl, appended line by line */
    const char *path;
    const char *config;
    struct atr_buf line;
    struct atr_replay_summary *sum;
    struct atr_arena arena;      /* one step's figures at a time */
    unsigned long lines;
    unsigned long input_tool_steps;   /* in every trace read, whatever its shard */
    struct cli_progress bar;     /* steps replayed under the configuration */
    const char *announce;        /* the backend, said before the first step runs */
    struct atr_replay_opts used; /* the limits in force (defaults resolved) */
    unsigned left;               /* work directories the configuration left behind */
    char left_first[PATH_MAX];   /* the first of them */
};

/* The tenants' summary entries of every configuration run so far. */
struct tenant_rows {
    struct atr_tenant_summary v[MAX_CONFIGS * ATR_TENANTS_MAX];
    size_t n;
};

/* One write per line: a line on disk is always complete, even after Ctrl-C. */
static int put_line(struct sink_ctx *s, const char *line, size_t len, struct atr_error *err)
{
    if (write(s->fd, line, len) != (ssize_t)len)
        return atr_error_set(err, "%s: %s", s->path, strerror(errno));
    return 0;
}

static int write_metrics(void *ctx, const struct atr_step_metrics *m, struct atr_error *err)
{
    struct sink_ctx *s = ctx;
    atr_buf_clear(&s->line);
    atr_step_metrics_json(&s->line, s->config, m);
    if (put_line(s, s->line.data, s->line.len, err) < 0)
        return -1;
    struct atr_replay_step st;
    atr_arena_clear(&s->arena);
    atr_replay_step_from_metrics(&st, s->config, m, &s->arena);
    cli_progress_count(&s->bar, cli_progress_now(), s->lines + 1, 0, "steps");
    return atr_replay_summary_add(s->sum, &st, s->path, ++s->lines, err);
}

/* summary.json: the configurations, why the run stopped early ("reason":
 * null when it did not), and with --tenants (rows not NULL) the tenants'
 * entries. */
static void kv_bytes(struct atr_jw *w, const char *key, int64_t v)
{
    if (v >= 0)
        atr_jw_kv_int(w, key, v);
    else
        atr_jw_kv_null(w, key);
}

/* The limits in force, defaults included: what each step ran under
 * (charts draw the memory ones). */
static void put_limits(struct atr_jw *w, const struct atr_replay_opts *o)
{
    atr_jw_key(w, "limits");
    atr_jw_object_begin(w);
    kv_bytes(w, "mem_high_bytes", o->limits.mem_high);
    kv_bytes(w, "mem_max_bytes", o->limits.mem_max);
    kv_bytes(w, "pids_max", o->limits.pids_max);
    kv_bytes(w, "disk_max_bytes", o->disk_max);
    atr_jw_kv_uint(w, "max_output_bytes", o->max_output);
    atr_jw_kv_int(w, "timeout_ms", o->timeout_ms);
    atr_jw_object_end(w);
}

static void summary_doc(struct atr_buf *b, const struct sink_ctx *s, const char *backend,
                        const char *stopped, const struct tenant_rows *rows,
                        const struct atr_replay_opts *limits)
{
    struct atr_replay_summary *sum = s->sum;
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_replay_summary_members(sum, backend, stopped != NULL, &w);
    atr_jw_kv_str(&w, "reason", stopped);
    if (s->left) {                 /* only then: a clean run's summary is unchanged */
        atr_jw_key(&w, "workdirs_left");
        atr_jw_object_begin(&w);
        atr_jw_kv_int(&w, "count", s->left);
        atr_jw_kv_str(&w, "first", s->left_first);
        atr_jw_object_end(&w);
    }
    if (limits)
        put_limits(&w, limits);
    if (rows) {
        atr_jw_key(&w, "tenants");
        atr_jw_array_begin(&w);
        for (size_t k = 0; k < rows->n; k++)
            atr_tenant_summary_put(&w, &rows->v[k]);
        atr_jw_array_end(&w);
    }
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);   /* the buffer has no cap */
}

/* stopped: why the run ended early, or NULL (complete). */
static int write_summary(const char *dir, const struct sink_ctx *s, const char *backend,
                         const char *stopped, const struct tenant_rows *rows,
                         const struct atr_replay_opts *limits, struct atr_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    struct atr_buf b = ATR_BUF_INIT;
    summary_doc(&b, s, backend, stopped, rows, limits);
    struct atr_output *o = atr_output_open(path, err);
    int rc = o ? 0 : -1;
    if (o && (atr_output_write(o, b.data, b.len, err) < 0 || atr_output_commit(o, err) < 0))
        rc = -1;
    if (o && rc < 0)
        atr_output_abort(o);
    atr_buf_release(&b);
    return rc;
}

static void print_tenants_table(const struct tenant_rows *rows)
{
    if (!rows || !rows->n)
        return;
    printf("\n%-16s %6s %-24s %6s %5s %10s %10s %7s %9s %9s %7s\n", "config", "tenant",
           "trace", "weight", "steps", "alone ms", "shared ms", "x mean", "alone p50",
           "shared p50", "x p50");
    char c[7][CLI_CELL_MAX];    /* figures without samples (--no-baseline) are n/a */
    for (size_t k = 0; k < rows->n; k++) {
        const struct atr_tenant_summary *t = &rows->v[k];
        printf("%-16s %6u %-24.24s %6lld %5lu %s %s %s %s %s %s\n",
               t->config, t->tenant, t->trace_id, (long long)t->weight, t->steps,
               cli_cell(c[0], 10, 1, t->latency_mean_ms_alone),
               cli_cell(c[1], 10, 1, t->latency_mean_ms_shared),
               cli_cell(c[2], 7, 2, t->inflation_mean),
               cli_cell(c[3], 9, 1, t->latency_p50_ms_alone),
               cli_cell(c[4], 9, 1, t->latency_p50_ms_shared),
               cli_cell(c[5], 7, 2, t->inflation_p50));
    }
    printf("%-16s %6s %9s %9s %9s %9s %6s %10s %10s %7s\n", "", "tenant", "p95 alone",
           "p95 shared", "sd alone", "sd shared", "loads", "load alone", "load shrd", "x load");
    for (size_t k = 0; k < rows->n; k++) {
        const struct atr_tenant_summary *t = &rows->v[k];
        printf("%-16s %6u %s %s %s %s %6lu %s %s %s\n", t->config, t->tenant,
               cli_cell(c[0], 9, 1, t->latency_p95_ms_alone),
               cli_cell(c[1], 9, 1, t->latency_p95_ms_shared),
               cli_cell(c[2], 9, 1, t->latency_sd_ms_alone),
               cli_cell(c[3], 9, 1, t->latency_sd_ms_shared), t->page_loads,
               cli_cell(c[4], 10, 1, t->page_load_mean_ms_alone),
               cli_cell(c[5], 10, 1, t->page_load_mean_ms_shared),
               cli_cell(c[6], 7, 2, t->page_load_degradation));
    }
}

/* The table shows a figure summary.json writes as null (no samples) as 0. */
static double or0(double v)
{
    return isnan(v) ? 0 : v;
}

static const char *const cause_labels[ATR_CAUSE_COUNT] = {
    [ATR_CAUSE_TIMEOUT] = "timeout", [ATR_CAUSE_OOM] = "OOM",
    [ATR_CAUSE_NOT_FOUND] = "command not found (exit 127)",
    [ATR_CAUSE_NO_DIR] = "missing directory", [ATR_CAUSE_NO_FILE] = "missing file",
    [ATR_CAUSE_EXIT] = "non-zero exit",
};

/* Per trace: what ran, what failed for want of its environment, what
 * failed on its own (summary.json's per_trace has every trace). */
#define PRINT_TRACES 20
static void print_per_trace(const struct atr_replay_config_summary *c)
{
    for (size_t k = 0; k < c->n_per_trace && k < PRINT_TRACES; k++) {
        const struct atr_replay_trace_counts *t = &c->per_trace[k];
        printf("%-16s %s: %lu ran, %lu ok, %lu failed (environment missing), %lu failed "
               "(own), %lu skipped\n", c->config, t->trace_id, t->ran, t->ok, t->env_missing,
               t->failed, t->skipped);
    }
    if (c->n_per_trace > PRINT_TRACES)
        printf("%-16s ... %zu more traces in summary.json\n", c->config,
               c->n_per_trace - PRINT_TRACES);
}

/* One line per configuration with failures: how many of each cause. */
static void print_failures(const struct atr_replay_config_summary *c)
{
    if (!c->failed_steps)
        return;
    printf("%-16s failed:", c->config);
    const char *sep = " ";
    for (int k = 0; k < ATR_CAUSE_COUNT; k++)
        if (c->failures[k]) {
            printf("%s%lu %s", sep, c->failures[k], cause_labels[k]);
            sep = ", ";
        }
    printf("\n");
}

/* Steps that met a limit (summary.json's *_hit_steps, disk_full_steps). */
static void print_limits_hit(const struct atr_replay_config_summary *c)
{
    if (!(c->mem_max_hit_steps + c->pids_max_hit_steps + c->disk_full_steps))
        return;
    printf("%-16s limits hit: %lu step%s at memory.max, %lu at pids.max, %lu with the work "
           "directory full\n", c->config, c->mem_max_hit_steps, c->mem_max_hit_steps == 1 ? "" : "s",
           c->pids_max_hit_steps, c->disk_full_steps);
}

/* Browser steps by what restoring their recorded DOM came to. */
static void print_restore(const struct atr_replay_config_summary *c)
{
    const unsigned long *r = c->restore;
    if (!(r[0] + r[1] + r[2] + r[3]))
        return;
    printf("%-16s browser DOM: %lu live, %lu restored; not restored: %lu snapshot missing, "
           "%lu selector not in its snapshot, %lu resources missing\n", c->config, r[0], r[1],
           r[2], r[3], c->restore_resources_missing);
}

/* A trace recorded in a repository image (cwd /testbed, /workspace) wants
 * that image: on the host its tools and files are missing. */
/* image: what gave the steps' root ("--rootfs", "container"), or NULL. */
static void print_image_hint(const struct atr_replay_config_summary *c, const char *image)
{
    if (!c->missing_cwd_steps)
        return;
    unsigned long n = c->missing_cwd_steps;
    const char *s = n == 1 ? "" : "s", *verb = n == 1 ? "expects" : "expect";
    if (image)
        printf("hint: %lu step%s %s %s, which the %s image lacks\n", n, s, verb,
               c->missing_cwd, image);
    else
        printf("hint: %lu step%s %s a working directory this host lacks (e.g. %s): the trace "
               "wants its repository image; replay inside it with --image IMAGE (or --rootfs "
               "DIR)\n", n, s, verb, c->missing_cwd);
}

static void print_summary_table(struct atr_replay_summary *sum, const char *backend,
                                const struct tenant_rows *rows, const char *image)
{
    printf("backend: %s\n", backend ? backend : "none");
    printf("%-16s %6s %5s %5s %6s %9s %9s %9s %9s %5s\n", "config", "steps", "ran", "skip",
           "failed", "p50 ms", "p95 ms", "p99 ms", "max MB", "oom");
    for (size_t i = 0; i < atr_replay_summary_n_configs(sum); i++) {
        struct atr_replay_config_summary c;
        atr_replay_summary_config(sum, i, &c);
        printf("%-16s %6lu %5lu %5lu %6lu %9.1f %9.1f %9.1f %9.1f %5lld\n", c.config,
               c.total_steps, c.ran_steps, c.skipped_steps, c.failed_steps,
               or0(c.latency_p50_ms), or0(c.latency_p95_ms), or0(c.latency_p99_ms),
               c.max_rss_mb, (long long)c.oom_kills);
    }
    struct atr_replay_config_summary c, worst = {.missing_cwd_steps = 0};
    for (size_t i = 0; i < atr_replay_summary_n_configs(sum); i++) {
        atr_replay_summary_config(sum, i, &c);
        print_per_trace(&c);
        print_failures(&c);
        print_limits_hit(&c);
        print_restore(&c);
        if (c.missing_cwd_steps > worst.missing_cwd_steps)
            worst = c;
    }
    print_image_hint(&worst, image);
    print_tenants_table(rows);
}

/* ---- run ---- */

static void on_signal(int sig)
{
    (void)sig;
    atr_replay_stop();
}

static void dry_run_trace(const struct atr_trace *t, const char *config, const char *resources)
{
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *s = &t->steps[k];
        const char *why = atr_replay_page_missing(t, s, resources);
        if (s->kind != ATR_STEP_TOOL)
            continue;
        if (why)
            printf("%s\t%s\t%u\tskip\tbrowser %s%s%s: %s\n", config, t->trace_id, s->i,
                   s->action ? s->action : "", s->selector ? " " : "",
                   s->selector ? s->selector : "", why);
        else if (s->tool && strcmp(s->tool, "bash") == 0 && s->command)
            printf("%s\t%s\t%u\trun\t%s\n", config, t->trace_id, s->i, s->command);
        else if (s->tool && strcmp(s->tool, "browser") == 0)
            printf("%s\t%s\t%u\tbrowser\t%s%s%s\n", config, t->trace_id, s->i,
                   s->action ? s->action : "", s->selector || s->url ? " " : "",
                   s->selector ? s->selector : s->url ? s->url : "");
        else if (s->tool && strcmp(s->tool, "editor") == 0 && s->file_op && s->path && *s->path)
            printf("%s\t%s\t%u\tfile\t%s %s\n", config, t->trace_id, s->i, s->file_op, s->path);
        else
            printf("%s\t%s\t%u\tskip\t%s\n", config, t->trace_id, s->i,
                   s->command || (s->tool && strcmp(s->tool, "bash") == 0) ? "command redacted"
                                                                             : "not a shell command");
    }
}

static size_t tool_steps(const struct atr_trace *t)
{
    size_t n = 0;
    for (size_t k = 0; k < t->n_steps; k++)
        n += t->steps[k].kind == ATR_STEP_TOOL;
    return n;
}

/* A reader for path; a Playwright archive is opened again keeping each
 * call's params (a fill's value, a press's key), which browser steps need.
 * *resources: the zip to serve browser steps from (--browser-resources,
 * else the archive itself), or NULL. */
static struct atr_reader *open_trace(const struct replay_args *a, const char *path,
                                     const char **resources, struct atr_error *err)
{
    /* No .warn: a replay wants its whole input, so a cut last line is an
     * error here, not the live journal's warning of validate and stats. */
    struct atr_read_opts opts = {0};
    struct atr_reader *r = atr_reader_open(path, a->from, &opts, err);
    *resources = a->browser_resources;
    if (!r || strcmp(atr_reader_format(r), "playwright") != 0 || strcmp(path, "-") == 0)
        return r;
    atr_reader_close(r);
    opts.keep_content = true;
    if (!*resources)
        *resources = path;
    return atr_reader_open(path, "playwright", &opts, err);
}

/* What runs where, said once before the first step (not only in the table
 * at the end). */
static void announce(struct sink_ctx *sink)
{
    if (sink->announce)
        fprintf(stderr, "atr: replay tools: %s, backend: %s\n", sink->config, sink->announce);
    sink->announce = NULL;
}

/* Replays every (sharded) trace of every file under one configuration. */
static int run_config(struct replay_args *a, int argc, char **argv, struct atr_replay *rp,
                      struct sink_ctx *sink, struct atr_error *err)
{
    struct atr_trace t = ATR_TRACE_INIT;
    unsigned long index = 0;
    int rc = 0;
    for (int i = a->first_arg; i < argc && rc == 0 && !atr_replay_stopped(); i++) {
        const char *resources;
        struct atr_reader *r = open_trace(a, argv[i], &resources, err);
        if (!r) {
            rc = -1;
            break;
        }
        int more = 0;
        while (rc == 0 && !atr_replay_stopped() && (more = atr_reader_next(r, &t, err)) == 1) {
            sink->input_tool_steps += tool_steps(&t);
            if (index++ % a->shard.n != a->shard.i)
                continue;
            if (a->dry_run) {
                dry_run_trace(&t, sink->config, resources);
                continue;
            }
            if (tool_steps(&t))
                announce(sink);
            rc = atr_replay_trace_res(rp, NULL, &t, resources, write_metrics, sink, err);
        }
        if (rc == 0 && more < 0)
            rc = -1;
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    return rc;
}

/* ---- --tenants ---- */

/* The sink of a tenants run: lines go to metrics.jsonl as they come (with
 * "tenant" and "phase"); shared-phase steps are also kept per tenant and
 * fed to the configuration summary tenant by tenant afterwards, because
 * the summary counts a trace per run of consecutive steps. */
struct step_list {
    struct atr_replay_step *v;
    size_t n, cap;
};

struct tenant_sink_ctx {
    struct sink_ctx *base;
    struct step_list pending[ATR_TENANTS_MAX];
    struct atr_arena arena;      /* the pending steps' strings and samples */
    size_t done;                 /* steps written, both phases: the progress count */
};

static void keep_step(struct tenant_sink_ctx *tc, unsigned tenant,
                      const struct atr_step_metrics *m)
{
    struct step_list *l = &tc->pending[tenant];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    atr_replay_step_from_metrics(&l->v[l->n++], tc->base->config, m, &tc->arena);
}

static int write_tenant_metrics(void *ctx, unsigned tenant, enum atr_tenant_phase phase,
                                const struct atr_step_metrics *m, struct atr_error *err)
{
    struct tenant_sink_ctx *tc = ctx;
    struct sink_ctx *s = tc->base;
    atr_buf_clear(&s->line);
    atr_tenant_metrics_json(&s->line, s->config, tenant, phase, m);
    if (put_line(s, s->line.data, s->line.len, err) < 0)
        return -1;
    if (phase == ATR_TENANT_SHARED)
        keep_step(tc, tenant, m);
    cli_progress_count(&s->bar, cli_progress_now(), ++tc->done, 0, "steps");
    return 0;
}

/* Feeds the kept shared-phase steps to the summary, tenant by tenant. */
static int summarise_shared(struct tenant_sink_ctx *tc, size_t n, struct atr_error *err)
{
    struct sink_ctx *s = tc->base;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < tc->pending[k].n; i++)
            if (atr_replay_summary_add(s->sum, &tc->pending[k].v[i], s->path, ++s->lines,
                                       err) < 0)
                return -1;
    return 0;
}

static void tenant_sink_release(struct tenant_sink_ctx *tc)
{
    for (size_t k = 0; k < ATR_TENANTS_MAX; k++)
        free(tc->pending[k].v);
    atr_arena_release(&tc->arena);
}

/* Reads every (tenant) trace of the inputs into traces[]; *n counts them. */
static int load_tenants(struct replay_args *a, int argc, char **argv, struct atr_trace *traces,
                        const char **resources, size_t *n, unsigned long *n_tool_steps,
                        struct atr_error *err)
{
    int rc = 0;
    *n = 0;
    for (int i = a->first_arg; i < argc && rc == 0; i++) {
        const char *res;
        struct atr_reader *r = open_trace(a, argv[i], &res, err);
        if (!r)
            return -1;
        struct atr_trace t = ATR_TRACE_INIT;
        int more;
        while ((more = atr_reader_next(r, &t, err)) == 1) {
            if (*n == ATR_TENANTS_MAX) {
                rc = atr_error_set(err, "%s: --tenants takes at most %d traces", argv[i],
                                   ATR_TENANTS_MAX);
                break;
            }
            *n_tool_steps += tool_steps(&t);
            resources[*n] = res;
            traces[(*n)++] = t;             /* the trace moves; t starts afresh */
            memset(&t, 0, sizeof t);
        }
        atr_trace_release(&t);
        if (rc == 0 && more < 0)
            rc = -1;
        atr_reader_close(r);
    }
    return rc;
}

/* One configuration with every trace as a tenant; appends the tenants'
 * summary entries to rows. */
static int run_config_tenants(struct replay_args *a, int argc, char **argv,
                              struct atr_replay *rp, struct sink_ctx *sink,
                              struct tenant_rows *rows, struct atr_error *err)
{
    struct atr_trace traces[ATR_TENANTS_MAX];
    const char *resources[ATR_TENANTS_MAX];
    struct atr_tenant_report reps[ATR_TENANTS_MAX];
    struct tenant_sink_ctx tc = {.base = sink};
    memset(reps, 0, sizeof reps);
    size_t n = 0;
    int rc = load_tenants(a, argc, argv, traces, resources, &n, &sink->input_tool_steps,
                          err);
    if (rc == 0 && n == 0)
        rc = atr_error_set(err, "--tenants: no traces in the input");
    struct atr_tenants_opts to = {a->weights, a->n_weights, !a->no_baseline};
    if (rc == 0)
        announce(sink);
    if (rc == 0)
        rc = atr_tenants_run_res(rp, traces, resources, n, &to, write_tenant_metrics, &tc, reps,
                                 err);
    if (rc == 0)
        rc = summarise_shared(&tc, n, err);
    for (size_t k = 0; k < n; k++) {
        if (rc == 0)
            atr_tenant_report_summary(&reps[k], sink->config, &rows->v[rows->n++]);
        atr_tenant_report_release(&reps[k]);
        atr_trace_release(&traces[k]);
    }
    tenant_sink_release(&tc);
    return rc;
}

/* --out DIR: refused when it holds files and --force is not given
 * (nothing has run or been written yet); sink->was says what it held. */
static int check_out(const struct replay_args *a, struct sink_ctx *sink)
{
    struct atr_error err;
    if (atr_outdir_state(a->out, &sink->was, &err) < 0)
        return cli_fail_err(&err);
    if (sink->was == ATR_OUTDIR_FULL && !a->force)
        return cli_fail("%s: exists and is not empty (give --force to replace it)", a->out);
    return EXIT_OK;
}

/* The run's temporary folder beside --out, and its metrics.jsonl. */
static int open_out_dir(const char *dir, struct sink_ctx *sink, char *path, size_t cap,
                        struct atr_error *err)
{
    if (!(sink->dir = atr_outdir_open(dir, err)))
        return -1;
    snprintf(path, cap, "%s/metrics.jsonl", atr_outdir_path(sink->dir));
    sink->path = path;
    sink->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (sink->fd < 0)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    return 0;
}

/* The run's folder into --out's place: a complete run, or an unfinished
 * one (interrupted, failed midway: its summary says so) where --out held
 * nothing. An unfinished run never replaces results: the old ones stay,
 * and *kept gets the folder with the new steps (the caller frees it). */
static int finish_out(const struct replay_args *a, struct sink_ctx *sink, bool complete,
                      char **kept, struct atr_error *err)
{
    struct atr_outdir *d = sink->dir;
    sink->dir = NULL;
    *kept = NULL;
    if (!d)
        return 0;
    if (!complete && sink->was == ATR_OUTDIR_FULL) {
        *kept = atr_outdir_keep(d);
        return 0;
    }
    return atr_outdir_commit(d, a->force, err);
}

/* --image, --image-template: a sandbox to run in, a well-formed template,
 * the engine's CLI found, and a fixed image that makes a container with a
 * /bin/sh (created and removed once: 0.3 s), all before anything runs. */
static int check_image(struct replay_args *a)
{
    if (!a->ro.image && !a->ro.image_template)
        return a->container_cli ? cli_usage("replay tools", "--container-cli needs --image or "
                                            "--image-template") : EXIT_OK;
    if (a->ro.image && a->ro.image_template)
        return cli_usage("replay tools", "--image and --image-template: give one");
    if (!a->ro.sandbox || a->ro.rootfs)
        return cli_usage("replay tools", "--image%s runs steps in the sandbox on the "
                         "container's root: not with --sandbox none or --rootfs",
                         a->ro.image ? "" : "-template");
    struct atr_error err;
    if (a->ro.image_template && atr_ctr_template_check(a->ro.image_template, &err) < 0)
        return cli_usage("replay tools", "%s", err.msg);
    if (atr_ctr_detect(a->container_cli, &a->ctr_cli, &err) < 0)
        return cli_fail("%s", err.msg);
    const char *limit = getenv("ATR_CONTAINER_TIMEOUT_S");   /* tests of a hung CLI */
    if (limit && atoi(limit) > 0)
        a->ctr_cli.timeout_s = atoi(limit);
    a->ro.container_cli = &a->ctr_cli;
    unsigned stale;   /* of runs that died with their guard */
    atr_ctr_sweep_stale(&a->ctr_cli, &stale, &err);
    struct atr_ctr probe;
    char name[64];
    snprintf(name, sizeof name, "atr-%ld-probe", (long)getpid());
    if (a->ro.image && atr_ctr_create(&a->ctr_cli, a->ro.image, name, &probe, &err) < 0)
        return cli_fail("%s (--image)", err.msg);
    if (a->ro.image && atr_ctr_remove(&a->ctr_cli, &probe, &err) < 0)
        return cli_fail("%s", err.msg);
    if (!a->quiet)
        fprintf(stderr, "atr: container: %s\n", a->ctr_cli.note);
    return EXIT_OK;
}

/* Before DIR is touched or anything runs: the paths the options name. */
static int check_paths(const struct replay_args *a)
{
    struct stat st;
    char sh[PATH_MAX];
    if (a->ro.rootfs && !a->ro.sandbox)
        return cli_usage("replay tools", "--rootfs needs the sandbox: not with --sandbox none");
    if (a->ro.n_binds && !a->ro.sandbox)
        return cli_usage("replay tools", "--bind needs the sandbox: with --sandbox none "
                         "steps write anywhere");
    if (a->ro.rootfs && stat(a->ro.rootfs, &st) < 0)
        return cli_fail("%s: %s (--rootfs wants a root filesystem's folder)", a->ro.rootfs,
                        strerror(errno));
    if (a->ro.rootfs && (!S_ISDIR(st.st_mode) ||
                         snprintf(sh, sizeof sh, "%s/bin/sh", a->ro.rootfs) >= (int)sizeof sh ||
                         lstat(sh, &st) < 0))
        return cli_fail("%s: not a root filesystem: no /bin/sh in it (--rootfs)", a->ro.rootfs);
    if (a->ro.workdir && (stat(a->ro.workdir, &st) < 0 || !S_ISDIR(st.st_mode)))
        return cli_fail("%s: not a directory (--workdir)", a->ro.workdir);
    if (a->browser_resources && access(a->browser_resources, R_OK) < 0)
        return cli_fail("%s: %s (--browser-resources)", a->browser_resources, strerror(errno));
    struct atr_error err;
    if (a->ro.disk_max > 0 && geteuid() == 0 && atr_replay_probe_disk(a->ro.workdir, &err) < 0)
        return cli_fail("%s: pass --disk-max none to run without the cap", err.msg);
    return EXIT_OK;
}

static int no_tool_steps(const struct replay_args *a, int argc, char **argv,
                         struct atr_error *err);

/* A trace given as stdin, a pipe or a FIFO (`<(atr gen ...)`): it cannot
 * be read twice, so it is checked as it is replayed. */
static bool read_once(const char *path)
{
    struct stat st;
    return strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
}

/* --image-template fills the image from the trace's instance_id: a trace
 * without one, or whose image is not there, is refused before anything
 * runs. last: the image checked before (traces of one instance in a row
 * ask once). */
static bool lacks_image(const struct replay_args *a, const struct atr_trace *t, char *last,
                        size_t cap, struct atr_error *err)
{
    const char *id = atr_json_get_str(t->meta, "instance_id", NULL);
    char image[512];
    struct atr_error why;
    if (!a->ro.image_template)
        return false;
    if (!id || !id[0]) {
        atr_error_set(err, "trace %s: no instance_id in its metadata for --image-template",
                      t->trace_id);
        return true;
    }
    if (atr_ctr_image_for(a->ro.image_template, id, image, sizeof image, &why) < 0 ||
        (strcmp(image, last) != 0 && atr_ctr_image_exists(a->ro.container_cli, image, &why) < 0)) {
        atr_error_set(err, "trace %s: %s", t->trace_id, why.msg);
        return true;
    }
    snprintf(last, cap, "%s", image);
    return false;
}

/* Before DIR is touched or anything runs: every trace file reads whole,
 * with tool steps among them (read_once inputs aside). */
static int check_traces(const struct replay_args *a, int argc, char **argv)
{
    struct atr_error err;
    struct atr_trace t = ATR_TRACE_INIT;
    unsigned long steps = 0;
    bool piped = false;
    int rc = 0;
    char last[512] = "";   /* the last image --image-template named */
    for (int i = a->first_arg; i < argc && rc == 0; i++) {
        if (read_once(argv[i])) {
            piped = true;
            continue;
        }
        const char *resources;
        struct atr_reader *r = open_trace(a, argv[i], &resources, &err);
        if (!r) {
            rc = -1;
            break;
        }
        int more;
        while ((more = atr_reader_next(r, &t, &err)) == 1 &&
               !lacks_image(a, &t, last, sizeof last, &err))
            steps += tool_steps(&t);
        more = more == 1 ? -1 : more;   /* stopped at a trace without its image */
        rc = more < 0 ? -1 : 0;
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    if (rc == 0 && !piped && steps == 0)
        rc = no_tool_steps(a, argc, argv, &err);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}

/* Can the sandbox show the folders steps write through idmapped mounts?
 * (--rootfs is checked only when it exists: check_paths says why not.) */
static bool idmappable(const struct replay_args *a, struct atr_error *err)
{
    if (atr_sandbox_probe_path(a->ro.workdir ? a->ro.workdir : "/tmp", err) < 0)
        return false;
    if (a->ro.rootfs && access(a->ro.rootfs, F_OK) == 0 &&
        atr_sandbox_probe_path(a->ro.rootfs, err) < 0)
        return false;
    for (int i = 0; i < a->ro.n_binds; i++)
        if (atr_sandbox_probe_path(a->ro.binds[i], err) < 0)
            return false;
    return true;
}

/* Before anything runs or is written: can this user make the sandbox's
 * namespaces and the groups the configurations need? A non-root user
 * usually can do neither, and finding out at the first step would leave
 * a summary of nothing. */
static int check_host(const struct replay_args *a)
{
    char msg[2 * ATR_ERROR_MAX + 512] = "";
    size_t n = 0;
    struct atr_error err;
    if (a->ro.sandbox && atr_spawn_probe_sandbox(a->ro.allow_network, &err) < 0)
        n += (size_t)snprintf(msg, sizeof msg, "%s: pass --sandbox none to run steps on the "
                              "host", err.msg);
    else if (a->ro.sandbox && !idmappable(a, &err))
        n += (size_t)snprintf(msg, sizeof msg, "%s: pass --workdir (--rootfs, --bind) on one "
                              "that does, or --sandbox none", err.msg);
    bool need_cg = false;
    for (int c = 0; c < a->n_configs; c++)
        need_cg |= a->configs[c] != ATR_CFG_NONE;
    struct atr_cg_host host;
    if (need_cg && atr_cg_detect(&host, NULL, NULL, "", &err) == 0 && host.mode == ATR_CG_NONE &&
        host.denied[0])
        snprintf(msg + n, sizeof msg - n, "%scgroups are not delegated to this user (%.512s is not "
                 "writable): pass --config none, or run atr in a delegated cgroup "
                 "(systemd-run --user --scope -p Delegate=yes atr ...)", n ? "; " : "",
                 host.denied);
    return msg[0] ? cli_usage("replay tools", "%s", msg) : EXIT_OK;
}

static int no_tool_steps(const struct replay_args *a, int argc, char **argv,
                         struct atr_error *err)
{
    int more = argc - a->first_arg - 1;
    if (more > 0)
        return atr_error_set(err, "no tool steps in %s and %d more input%s",
                             argv[a->first_arg], more, more > 1 ? "s" : "");
    return atr_error_set(err, "no tool steps in %s", argv[a->first_arg]);
}

/* One configuration: its replay (which sweeps what dead runs left and
 * makes the run's groups), every trace, the replay freed; backend gets
 * what was found. */
static int run_one(struct replay_args *a, int argc, char **argv, int c, struct sink_ctx *sink,
                   struct tenant_rows *rows, char *backend, size_t cap, struct atr_error *err)
{
    a->ro.config = a->configs[c];
    sink->config = atr_replay_config_name(a->configs[c]);
    if (a->dry_run)
        return run_config(a, argc, argv, NULL, sink, err);
    struct atr_replay *rp = atr_replay_new(&a->ro, err);
    if (!rp)
        return -1;
    const struct atr_cg_host *host = atr_replay_host(rp);
    sink->used = *atr_replay_opts_used(rp);
    if (c == 0 && a->ro.disk_max > 0 && sink->used.disk_max < 0)
        fprintf(stderr, "atr: warning: work directories are not size-capped: --disk-max "
                "mounts a file system, which needs root\n");
    /* Should atr die by SIGKILL, the guard removes the run's groups with
     * whatever runs in them (browsers included) and its work directories
     * (browser profiles included). Forked before any tenant thread. */
    struct atr_guard guard;
    char filter[64], *sweep[8] = {NULL};
    if (a->ro.container_cli)   /* and the containers of this run */
        atr_ctr_sweep_argv(a->ro.container_cli, (long)getpid(), filter, sizeof filter, sweep);
    if (atr_guard_start_cleanup(&guard, host, atr_replay_root(rp),
                                a->ro.workdir ? a->ro.workdir : "/tmp", sweep, err) < 0) {
        atr_replay_free(rp);
        return -1;
    }
    snprintf(backend, cap, "%s", host->note);
    sink->announce = a->quiet ? NULL : host->note;
    cli_progress_start(&sink->bar, "replay tools", a->quiet);
    if (host->mode == ATR_CG_NONE && a->ro.config != ATR_CFG_NONE)
        fprintf(stderr, "atr: warning: no usable cgroups here (%s): %s runs without "
                "limits, rusage only\n", host->note, sink->config);
    int rc = a->tenants ? run_config_tenants(a, argc, argv, rp, sink, rows, err)
                        : run_config(a, argc, argv, rp, sink, err);
    cli_progress_end(&sink->bar);
    const char *left;
    sink->left = atr_replay_left(rp, &left);
    if (sink->left) {
        snprintf(sink->left_first, sizeof sink->left_first, "%s", left);
        fprintf(stderr, "atr: warning: %u work director%s left behind (first: %s): a mount "
                "or file that could not be removed\n", sink->left, sink->left == 1 ? "y" : "ies",
                left);
    }
    atr_replay_free(rp);
    atr_guard_stop(&guard);
    return rc;
}

/* Everything before the first step runs and before --out is touched: the
 * host, the options' paths, --out itself, the traces. */
/* --controller ebpf with config dynamic: the program is loaded (and
 * unloaded) once here, so a host that cannot run it fails with the reason
 * before the output folder exists. */
static int check_bpf(const struct replay_args *a)
{
    bool dynamic = false;
    for (int c = 0; c < a->n_configs; c++)
        dynamic |= a->configs[c] == ATR_CFG_DYNAMIC;
    if (!dynamic || a->ro.controller != ATR_CTL_EBPF)
        return EXIT_OK;
    struct atr_error err;
    struct atr_bpf *b = atr_bpf_open(&err);
    atr_bpf_close(b);
    return b ? EXIT_OK : cli_fail_err(&err);
}

static int check_all(struct replay_args *a, int argc, char **argv, struct sink_ctx *sink)
{
    if (a->dry_run)
        return EXIT_OK;
    int st = check_bpf(a);
    if (st == EXIT_OK)
        st = check_host(a);
    if (st == EXIT_OK)
        st = check_paths(a);
    if (st == EXIT_OK)
        st = check_image(a);
    if (st == EXIT_OK)
        st = check_out(a, sink);
    return st == EXIT_OK ? check_traces(a, argc, argv) : st;
}

/* The end of a run: the folder into place (finish_out), then the one
 * message of an unfinished run; its exit status. */
static int end_run(const struct replay_args *a, struct sink_ctx *sink, int rc,
                   struct atr_error *err)
{
    struct atr_error late;
    char *kept = NULL;
    bool complete = rc == 0 && !atr_replay_stopped();
    if (finish_out(a, sink, complete, &kept, rc < 0 ? &late : err) < 0 && rc == 0)
        rc = -1;
    int status = EXIT_OK;
    if (rc < 0 && kept)
        status = cli_fail("%s (%s is as it was; the steps that ran are in %s)", err->msg,
                          a->out, kept);
    else if (rc < 0)
        status = cli_fail_err(err);
    else if (atr_replay_stopped() && a->dry_run)
        fprintf(stderr, "atr: interrupted\n");
    else if (atr_replay_stopped())
        fprintf(stderr, "atr: interrupted: complete steps are in %s/metrics.jsonl%s%s%s\n",
                kept ? kept : a->out, kept ? " (" : "", kept ? a->out : "",
                kept ? " is as it was)" : "");
    free(kept);
    return status != EXIT_OK ? status : atr_replay_stopped() ? 130 : EXIT_OK;
}

static int run_replay(struct replay_args *a, int argc, char **argv)
{
    struct sink_ctx sink = {.fd = -1, .used = a->ro};
    int rc = check_all(a, argc, argv, &sink);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    char path[PATH_MAX] = "";
    struct tenant_rows rows = {.n = 0};
    char backend[256] = "";
    sink.sum = atr_replay_summary_new();
    if (!a->dry_run && open_out_dir(a->out, &sink, path, sizeof path, &err) < 0)
        rc = -1;
    cli_on_stop_signals(on_signal);
    signal(SIGPIPE, SIG_IGN);       /* a browser that dies closes its DevTools pipe */
    for (int c = 0; rc == 0 && c < a->n_configs && !atr_replay_stopped(); c++) {
        rc = run_one(a, argc, argv, c, &sink, &rows, backend, sizeof backend, &err);
        if (rc == 0 && !atr_replay_stopped() && sink.input_tool_steps == 0)
            rc = no_tool_steps(a, argc, argv, &err);
        if (a->dry_run)
            continue;
        /* Every early stop is marked, with its reason: an error's message. */
        const char *stopped = rc < 0 ? err.msg : atr_replay_stopped() ? "interrupted" : NULL;
        if (write_summary(atr_outdir_path(sink.dir), &sink, backend[0] ? backend : NULL,
                          stopped, a->tenants ? &rows : NULL, &sink.used,
                          rc < 0 ? NULL : &err) < 0 && rc == 0)
            rc = -1;
    }
    if (sink.fd >= 0)
        close(sink.fd);
    atr_buf_release(&sink.line);
    atr_arena_release(&sink.arena);
    rc = end_run(a, &sink, rc, &err);
    if (rc == EXIT_OK && !a->quiet && !a->dry_run)
        print_summary_table(sink.sum, backend[0] ? backend : NULL, a->tenants ? &rows : NULL,
                            a->ro.rootfs ? "--rootfs" : a->ro.container_cli ? "container" : NULL);
    for (size_t k = 0; k < rows.n; k++)
        atr_tenant_summary_release(&rows.v[k]);
    atr_replay_summary_free(sink.sum);
    return rc;
}

/* One shard's line: counted in the summary, copied to metrics.jsonl. */
static int merge_line(struct sink_ctx *s, const char *line, size_t len, const char *file,
                      unsigned long lineno, struct atr_error *err)
{
    struct atr_replay_step st;
    atr_arena_clear(&s->arena);
    if (atr_replay_step_parse(&st, line, len, &s->arena, file, lineno, err) < 0 ||
        atr_replay_summary_add(s->sum, &st, file, lineno, err) < 0 ||
        put_line(s, line, len, err) < 0)
        return -1;
    return put_line(s, "\n", 1, err);
}

/* --merge: summary of the shards' metrics lines, and their concatenation. */
static int run_merge(struct replay_args *a, int argc, char **argv)
{
    struct atr_error err;
    struct sink_ctx sink = {.fd = -1};
    char path[PATH_MAX];
    int rc = check_out(a, &sink);
    if (rc != EXIT_OK)
        return rc;
    sink.sum = atr_replay_summary_new();
    rc = open_out_dir(a->out, &sink, path, sizeof path, &err);
    for (int i = a->first_arg; rc == 0 && i < argc; i++) {
        char in_path[PATH_MAX];
        snprintf(in_path, sizeof in_path, "%s/metrics.jsonl", argv[i]);
        struct atr_input *in = atr_input_open(in_path, &err);
        if (!in) {
            rc = -1;
            break;
        }
        const char *line;
        size_t len;
        int more = 0;
        while (rc == 0 && (more = atr_input_getline(in, &line, &len, 1 << 20, &err)) == 1) {
            if (len == 0)
                continue;
            if (merge_line(&sink, line, len, in_path, atr_input_lineno(in), &err) < 0)
                rc = -1;
        }
        if (more < 0)
            rc = -1;
        atr_input_close(in);
    }
    if (rc == 0)
        rc = write_summary(atr_outdir_path(sink.dir), &sink, "merged", NULL, NULL, NULL, &err);
    if (sink.fd >= 0)
        close(sink.fd);
    /* A merge that failed has nothing worth keeping: --out stays as it was. */
    if (rc == 0)
        rc = atr_outdir_commit(sink.dir, a->force, &err);
    else
        atr_outdir_abort(sink.dir);
    atr_buf_release(&sink.line);
    atr_arena_release(&sink.arena);
    if (rc == 0 && !a->quiet)
        print_summary_table(sink.sum, "merged", NULL, NULL);
    atr_replay_summary_free(sink.sum);
    if (rc < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
}

static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "llm") == 0)
        return cmd_replay_llm(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "agent") == 0)
        return cmd_replay_agent(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "tools") != 0)
        return cli_usage_mode("replay", argc, argv,
                              (const char *const[]){"tools", "llm", "agent", NULL});
    struct replay_args a;
    memset(&a, 0, sizeof a);
    argc--;
    argv++;
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc;
    return a.merge ? run_merge(&a, argc, argv) : run_replay(&a, argc, argv);
}

static const struct atr_cmd_mode modes[] = {
    {"llm", cmd_replay_llm_help}, {"agent", cmd_replay_agent_help}, {NULL, NULL},
};

const struct atr_cmd cmd_replay_entry = {
    "replay", "replay traces: `replay tools` runs tool steps in cgroups, `replay llm` "
    "sends llm steps to a server, `replay agent` both in one timeline", help, run, modes,
};
