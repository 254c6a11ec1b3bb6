/* cmd-experiment.c - `atr experiment timescale|domain|overhead|multitenant`:
 * parses, runs the experiment (exp/experiment.h) and prints the
 * side-by-side table. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "exp/experiment.h"

static const char help[] =
    "usage: atr experiment timescale|domain|overhead|multitenant [OPTIONS] TRACE... --out DIR\n"
    "\n"
    "The AgentCgroup experiments (docs/controller.md) on the tool steps of\n"
    "TRACE, each a set of arms:\n"
    "  timescale  static-toolcall (no controller, the baseline), then the\n"
    "             dynamic controller's arms: psi-poll (user space, every\n"
    "             --interval ms), psi-trigger (user space, kernel events) and\n"
    "             ebpf (the kernel stops a step at its target)\n"
    "  domain     static-env (one group per trace), static-toolcall (one per\n"
    "             step), dynamic (psi-poll)\n"
    "  overhead   none (no cgroup, the baseline), static-toolcall, dynamic,\n"
    "             beside plain fork/exec of sh -c true and systemd-run --scope\n"
    "             of it (skipped, saying why, where no systemd manager runs)\n"
    "  multitenant  static-toolcall, psi-poll, ebpf with a victim tenant\n"
    "             beside TRACE (noisy neighbours, e.g. atr gen --kind noisy):\n"
    "             --victim FILE is required, its tail latency per arm the point;\n"
    "             every tenant also runs alone: its slowdown vs its solo run\n"
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
    "victim_latency_p50_ms, victim_latency_p99_ms and the victim's\n"
    "victim_latency_ms_total, victim_cpu_stall_ms_total,\n"
    "victim_mem_stall_ms_total (where its time went); or skipped with the\n"
    "reason. multitenant adds \"tenant_slowdown\" (per arm and tenant: solo and\n"
    "shared p50/p99, slowdown_p50, slowdown_p99), overhead \"references\"\n"
    "(fork_exec, systemd_run_scope: step_p50_ms, step_p99_ms). DIR/report.html\n"
    "is `atr report DIR`: the arms' latency and reaction-time (seen ->\n"
    "written) CDFs, memory per step with the limits, per dynamic arm its\n"
    "highest-rising step's memory over time with the moving target (the\n"
    "steps' ctl_timeline), multitenant's per-tenant slowdown bars.\n"
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

struct exp_args {
    const struct atr_xp *x;
    const char *out;
    bool force, quiet, png;
    unsigned reps, interval_ms;
    int64_t mem_high, mem_max;
    int sandbox;                /* 0 none, 1 ns */
    const char *victim;
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

static void print_us(double v)
{
    if (isnan(v))
        printf(" %10s", "-");
    else if (v >= 10000)
        printf(" %8.1fms", v / 1000);
    else
        printf(" %8.1fus", v);
}

static void print_table(const struct atr_xp *x, struct atr_xp_sum *sums, double base_p50)
{
    printf("%-15s %5s %7s %10s %10s %10s %10s %8s %10s %7s %6s %6s %4s %10s\n", "arm", "runs",
           "raises", "react p50", "react p99", "bound p99", "lat p50", "slowdown", "run p50",
           "holds", "peakMB", "overMB", "oom", "victim p99");
    for (int k = 0; k < x->n; k++) {
        struct atr_xp_sum *s = &sums[k];
        const char *name = x->arms[k].name;
        if (s->skipped) {
            printf("%-15s skipped: %s\n", name, s->why);
            continue;
        }
        double p50 = atr_xp_pct(&s->latency, 50);
        printf("%-15s %5u %7zu", name, s->runs, s->reaction.n);
        print_us(atr_xp_pct(&s->reaction, 50));
        print_us(atr_xp_pct(&s->reaction, 99));
        print_us(atr_xp_pct(&s->bound, 99));
        printf(" %8.1fms %7.2fx %8.1fms %7" PRId64 " %6.0f %6.1f %4" PRId64, p50,
               base_p50 > 0 ? p50 / base_p50 : NAN, atr_xp_pct(&s->wall, 50), s->holds, s->max_rss_mb,
               s->overshoot_mb, s->oom);
        if (s->victim.n)
            printf(" %8.1fms\n", atr_xp_pct(&s->victim, 99));
        else
            printf(" %10s\n", "-");
    }
}

/* multitenant: each tenant's slowdown against its solo run, per arm. */
static void print_tenants(const struct atr_xp *x, struct atr_xp_sum *sums)
{
    bool head = false;
    for (int k = 0; k < x->n; k++)
        for (int i = 0; !sums[k].skipped && i < sums[k].n_tenants; i++) {
            struct atr_xp_tenant *t = &sums[k].tenants[i];
            if (!t->alone.n)
                continue;
            if (!head)
                printf("\n%-15s %-24s %-6s %9s %9s %9s %9s %8s %8s\n", "arm", "tenant", "role",
                       "solo p50",
                       "shared p50", "solo p99", "shared p99", "slow p50", "slow p99");
            head = true;
            double a50 = atr_xp_pct(&t->alone, 50), s50 = atr_xp_pct(&t->shared, 50);
            double a99 = atr_xp_pct(&t->alone, 99), s99 = atr_xp_pct(&t->shared, 99);
            printf("%-15s %-24.24s %-6s %7.1fms %8.1fms %7.1fms %8.1fms %7.2fx %7.2fx\n",
                   x->arms[k].name, t->id, t->victim ? "victim" : "noisy", a50, s50, a99, s99,
                   s50 / a50, s99 / a99);
        }
}

/* overhead: a step of `sh -c true` without atr, for the arms' latency. */
static void print_refs(struct atr_xp_refs *r)
{
    printf("\n%-15s %5zu %8.2fms p50 %8.2fms p99  (fork + exec + wait of sh -c true)\n",
           "fork/exec", r->fork_exec_ms.n, atr_xp_pct(&r->fork_exec_ms, 50),
           atr_xp_pct(&r->fork_exec_ms, 99));
    if (r->systemd_run_ms.n)
        printf("%-15s %5zu %8.2fms p50 %8.2fms p99  (systemd-run --scope sh -c true)\n",
               "systemd-run", r->systemd_run_ms.n, atr_xp_pct(&r->systemd_run_ms, 50),
               atr_xp_pct(&r->systemd_run_ms, 99));
    else
        printf("%-15s skipped: %s\n", "systemd-run", r->systemd_why);
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

static int run(int argc, char **argv)
{
    struct exp_args a = {.reps = 5, .interval_ms = 50, .mem_high = 32 << 20,
                         .mem_max = (int64_t)1 << 30};
    a.x = argc > 1 ? atr_xp_find(argv[1]) : NULL;
    if (!a.x)
        return cli_usage_mode("experiment", argc, argv, atr_xp_modes);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "experiment %s", a.x->mode);
    const struct opts_cmd parser = {cmd, options};
    if (opts_parse(&parser, &a, argc - 1, argv + 1, &a.first) != EXIT_OK)
        return EXIT_USAGE;
    if (!a.out)
        return cli_usage(cmd, "--out DIR is required");
    if (a.first >= argc - 1)
        return cli_usage(cmd, "wants at least one TRACE");
    if (a.x->needs_victim && !a.victim)
        return cli_usage(cmd, "wants --victim FILE: the tenant whose tail latency each arm "
                         "is judged by");
    for (int i = a.first + 1; i < argc; i++)
        if (access(argv[i], R_OK) != 0)
            return cli_fail("%s: %s", argv[i], strerror(errno));
    int rc = prepare_out(&a);
    if (rc != EXIT_OK)
        return rc;
    struct atr_xp_cfg cfg = {
        .x = a.x, .out = a.out, .traces = argv + a.first + 1, .n_traces = argc - a.first - 1,
        .reps = a.reps, .interval_ms = a.interval_ms, .mem_high = a.mem_high,
        .mem_max = a.mem_max, .sandbox_ns = a.sandbox == 1, .victim = a.victim, .png = a.png,
    };
    struct atr_xp_sum sums[ATR_XP_MAX_ARMS];
    struct atr_xp_refs refs = {0};
    if (strcmp(a.x->mode, "overhead") == 0)
        cfg.refs = &refs;
    double base;
    struct atr_error err;
    rc = atr_xp_run(&cfg, sums, &base, &err) < 0 ? cli_fail_err(&err) : EXIT_OK;
    for (int k = 0; k < a.x->n; k++)
        if (sums[k].skipped)
            fprintf(stderr, "atr: experiment %s: %s arm skipped: %s\n", a.x->mode,
                    a.x->arms[k].name, sums[k].why);
    if (rc == EXIT_OK && !a.quiet) {
        print_table(a.x, sums, base);
        print_tenants(a.x, sums);
        if (cfg.refs)
            print_refs(&refs);
    }
    atr_xp_refs_release(cfg.refs);
    atr_xp_sums_release(sums);
    return rc;
}

const struct atr_cmd cmd_experiment_entry = {
    .name = "experiment",
    .summary = "the AgentCgroup experiments: timescale, domain, overhead, multitenant",
    .help = help,
    .run = run,
};
