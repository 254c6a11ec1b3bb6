/* cmd-bench-run.c - `atr bench run SPEC -o DIR`: runs a benchmark spec
 * (docs/bench.md) through bench/run.h with progress on stderr; with
 * --dry-run it checks the spec whole and prints the plan, every item x
 * variant with its commands expanded, and starts nothing. */
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/run.h"
#include "bench/spec.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "runner/spawn.h"

const char cmd_bench_run_help[] =
    "usage: atr bench run SPEC -o DIR [OPTIONS]\n"
    "       atr bench run SPEC --dry-run\n"
    "\n"
    "Runs the benchmark spec SPEC (JSON, docs/bench.md): for every item (a\n"
    "commit, its parent, a model, per agent a patch) and variant (baseline,\n"
    "human, agent, ...), one after another: the prepare command, the server\n"
    "command in its own process group and cgroup, readiness polled until the\n"
    "URL answers 200, the workload (atr's own client: TTFT, TPOT, ITL, E2EL;\n"
    "or a benchmark command whose output is parsed), then SIGTERM, SIGKILL\n"
    "after the grace period, until the port is free. Every command (prepare,\n"
    "benchmark, cleanup) has a cgroup of its own too, killed when it ends, so\n"
    "nothing a run starts outlives it, setsid or not (without usable cgroups:\n"
    "process groups only, and a warning). Each run writes\n"
    "DIR/results/<commit8>_<variant>[_<agent>][_r<K>]_result.json with exactly one\n"
    "outcome (success, no_metrics, server_crashed, startup_timeout,\n"
    "benchmark_timeout, oom, patch_failed, prepare_timeout (prepare killed at\n"
    "its prepare_timeout_s, default 1800), disk_full (below the spec's\n"
    "min_free_disk in its workdir before the item, after its cleanup ran),\n"
    "model_invalid: a GGUF that the server command names with -m/--model\n"
    "and atr's reader refuses, before the server starts) and\n"
    "DIR/logs/<same>.log. Runs with a result are\n"
    "skipped, so a run killed at any point resumes where it was.\n"
    "With --repeat N (or \"repeat\": N in the spec) every run is made N times,\n"
    "an item's runs round by round (baseline, human, agents, baseline, ...)\n"
    "so that drift on the machine hits every variant alike; repeat K > 1 is\n"
    "named _r<K> (repeat 1 keeps the plain name) and has \"repeat\": K inside.\n"
    "`atr bench report` gives medians over the repeats with 95 % intervals.\n"
    "A bad spec is reported as FILE:LINE:COL: what was expected (exit 2),\n"
    "before anything starts; so is a name in it (variant, agent, commit) that\n"
    "would not stay a file name inside DIR. Outcomes are results, not errors:\n"
    "exit 0 once every run has one; 1 when the runner cannot go on; 130 on\n"
    "Ctrl-C (the interrupted run writes no result).\n"
    "\n"
    "  -o, --out DIR        results/ and logs/ go here (created if missing)\n"
    "      --retry-failed   run again the runs whose result is not a success\n"
    "      --only COMMIT    only the items whose commit starts with COMMIT\n"
    "      --repeat N       every run N times (1 to 1000), interleaved; instead of\n"
    "                       the spec's \"repeat\" (default 1)\n"
    "      --shard I:N      only items k with k mod N = I (I from 0): N\n"
    "                       machines split one spec; `atr bench report` merges\n"
    "                       their folders\n"
    "      --grace S        seconds from SIGTERM to SIGKILL (default 10)\n"
    "      --port P         the server's port instead of the spec's; 0: a free\n"
    "                       one, chosen before each server start\n"
    "      --container-cli CLI  the engine of variants that name an \"image\":\n"
    "                       podman, docker or a path (default: podman, else\n"
    "                       docker where its daemon answers)\n"
    "  -q, --quiet          no progress lines on stderr\n"
    "  -n, --dry-run        print the plan: per item and variant the expanded\n"
    "                       server, prepare and benchmark commands, readiness\n"
    "                       URL, timeouts, workload and model override; start\n"
    "                       nothing\n";

struct run_args {
    bool dry_run, retry_failed, quiet;
    const char *out, *only, *container_cli;
    struct opts_shard shard;
    double grace_s;
    unsigned port, repeat;
    bool port_given;
};

static bool parse_port(void *base, const char *arg, const char *cmd)
{
    struct run_args *a = base;
    unsigned long long p;
    if (!cli_parse_uint(arg, 0, 65535, &p))
        return false;
    a->port = (unsigned)p;
    a->port_given = true;
    return true;
}

static bool nonempty(const char *s)
{
    return *s != '\0';
}

static const struct opt options[] = {
    OPT_FLAG(struct run_args, dry_run, "dry-run", 'n'),
    OPT_STRING_CHECK(struct run_args, out, "out", 'o', nonempty, "--out wants a folder"),
    OPT_FLAG(struct run_args, retry_failed, "retry-failed", 0),
    OPT_STRING_CHECK(struct run_args, only, "only", 0, nonempty, "--only wants a commit"),
    OPT_SHARD(struct run_args, shard, 1),
    OPT_UINT(struct run_args, repeat, "repeat", 0, 1, ATR_BENCH_REPEAT_MAX,
             "--repeat wants a number of runs from 1 to 1000, got '%s'"),
    OPT_DOUBLE(struct run_args, grace_s, "grace", 0, 0.001, 3600,
               "--grace wants seconds from 0.001 to 3600, got '%s'"),
    OPT_CALL("port", 0, parse_port, "--port wants 0..65535, got '%s'"),
    OPT_STRING_CHECK(struct run_args, container_cli, "container-cli", 0, nonempty,
                     "--container-cli wants podman, docker or a path"),
    OPT_FLAG(struct run_args, quiet, "quiet", 'q'),
    OPT_END,
};

static const struct opts_cmd parser = {"bench run", options};

static void print_workload(const struct atr_bench_workload *w)
{
    if (w->mode == ATR_BENCH_COMMAND) {
        printf("workload: command (its output is parsed for vLLM's figures)\n");
        return;
    }
    if (w->trace) {
        printf("workload: serving, trace %s\n", w->trace);
        return;
    }
    printf("workload: serving, %llu generated request%s of %llu input / %llu output tokens%s, ",
           (unsigned long long)w->requests, cli_s(w->requests),
           (unsigned long long)w->input_tokens, (unsigned long long)w->output_tokens,
           w->ignore_eos ? ", ignore_eos" : "");
    if (w->rate > 0)
        printf("%g requests/s\n", w->rate);
    else if (w->concurrency)
        printf("at most %llu in flight\n", (unsigned long long)w->concurrency);
    else
        printf("all at once\n");
}

/* One labelled line with tmpl expanded; the spec was checked, so expansion
 * fails only where it cannot (kept as a message rather than an abort). */
static void print_expanded(int indent, const char *label, const char *tmpl,
                           const struct atr_bench_vars *v, bool shell)
{
    if (!tmpl)
        return;
    struct atr_error err;
    char *s = atr_bench_expand(tmpl, v, shell, &err);
    printf("%*s%-9s %s\n", indent, "", label, s ? s : err.msg);
    free(s);
}

static void print_run(const struct atr_bench_spec *s, const struct atr_bench_variant *var,
                      const struct atr_bench_vars *v)
{
    print_expanded(4, "prepare:", var->prepare, v, true);
    print_expanded(4, "image:", var->image, v, false);
    print_expanded(4, var->image ? "command:" : "server:", var->server, v, true);
    for (size_t i = 0; i < var->n_run_args; i++)
        print_expanded(4, "run arg:", var->run_args[i], v, false);
    if (var->image && var->container_port)
        printf("    %-9s 127.0.0.1:{port} published to the container's %u\n", "network:",
               var->container_port);
    else if (var->image)
        printf("    %-9s the host's (the server listens on {port} itself)\n", "network:");
    if (var->memory)
        printf("    %-9s %zu bytes\n", "memory:", var->memory);
    struct atr_error err;
    char *url = atr_bench_expand(var->ready_url, v, false, &err);
    printf("    %-9s %s within %g s\n", "ready:", url ? url : err.msg, var->startup_timeout_s);
    free(url);
    if (s->workload.mode == ATR_BENCH_COMMAND)
        print_expanded(4, "bench:", s->workload.command, v, true);
    printf("    %-9s %g s\n", "timeout:", var->benchmark_timeout_s);
}

/* The variant's runs for one item: once, or once per agent with a patch. */
static size_t print_variant(const struct atr_bench_spec *s, const struct atr_bench_item *it,
                            const struct atr_bench_variant *var, struct atr_bench_vars *v)
{
    if (!var->per_agent) {
        printf("  %s\n", var->name);
        print_run(s, var, v);
        return 1;
    }
    if (!it->n_agents)
        printf("  %s: no agents, not run\n", var->name);
    size_t runs = 0;
    for (size_t i = 0; i < it->n_agents; i++) {
        const struct atr_bench_agent *a = &it->agents[i];
        printf("  %s %s%s\n", var->name, a->name, a->patch ? "" : ": no patch, not run");
        if (!a->patch)
            continue;
        v->patch = a->patch;
        print_run(s, var, v);
        runs++;
    }
    v->patch = NULL;
    return runs;
}

static size_t print_item(const struct atr_bench_spec *s, size_t i)
{
    const struct atr_bench_item *it = &s->items[i];
    const struct atr_bench_override *ov;
    const char *model = atr_bench_model(s, it, &ov);
    printf("\nitem %zu/%zu: %s (parent %s), model %s\n", i + 1, s->n_items,
           it->human_commit_full, it->parent_commit, model);
    if (ov)
        printf("  model override: %s -> %s (%s), in the server command and the workload\n",
               ov->from, ov->to, ov->reason);
    struct atr_bench_vars v = {model, it->human_commit_full, it->parent_commit, NULL,
                               s->workdir, s->port, s->dir};
    size_t runs = 0;
    for (size_t k = 0; k < it->n_variants; k++)
        runs += print_variant(s, it, it->variants[k], &v);
    print_expanded(2, "cleanup:", s->cleanup, &v, true);
    return runs;
}

static void print_plan(const struct atr_bench_spec *s, unsigned repeat)
{
    printf("plan of %s: %zu item%s, %zu variant%s; nothing is started\n", s->path, s->n_items,
           cli_s(s->n_items), s->n_variants, cli_s(s->n_variants));
    if (s->port)
        printf("port %u, workdir %s\n", s->port, s->workdir);
    else
        printf("port: a free one per run ({port} shows 0 here), workdir %s\n", s->workdir);
    print_workload(&s->workload);
    if (repeat > 1)
        printf("repeat: every run %u times, an item's runs round by round\n", repeat);
    size_t runs = 0;
    for (size_t i = 0; i < s->n_items; i++)
        runs += print_item(s, i);
    runs *= repeat;
    printf("\n%zu run%s\n", runs, cli_s(runs));
}

static volatile sig_atomic_t stop_requested;

/* Ctrl-C: the runner tears the server down and writes no result for the
 * run it interrupted; commands in flight (prepare, benchmark) die now. */
static void on_stop(int sig)
{
    static const char msg[] = "atr bench run: interrupted, stopping the server\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    stop_requested = 1;
    atr_spawn_kill_all();
}

static const char *const phase_words[] = {
    [ATR_BENCH_PHASE_SKIP] = "has a result, skipped",
    [ATR_BENCH_PHASE_PREPARE] = "prepare",
    [ATR_BENCH_PHASE_START] = "start server",
    [ATR_BENCH_PHASE_BENCHMARK] = "benchmark",
    [ATR_BENCH_PHASE_STOP] = "stop server",
    [ATR_BENCH_PHASE_DONE] = "done",
    [ATR_BENCH_PHASE_CLEANUP] = "cleanup",
};

/* Serving mode: "bench run: 120/400 requests (30%), ..." during a benchmark. */
static void on_requests(void *ctx, size_t done, size_t total)
{
    cli_progress_count(ctx, cli_progress_now(), done, total, "requests");
}

/* "[3/14] a1b2c3d4 agent fast: benchmark (2.1 s)" on stderr. */
static void on_progress(void *ctx, const struct atr_bench_progress *p)
{
    cli_progress_end(ctx);            /* a redrawn request line goes before the phase's */
    if (p->phase == ATR_BENCH_PHASE_BENCHMARK)
        cli_progress_start(ctx, "bench run", false);
    if (p->phase == ATR_BENCH_PHASE_CLEANUP) {
        fprintf(stderr, "       %.8s: cleanup\n", p->commit);
        return;
    }
    fprintf(stderr, "[%zu/%zu] %.8s %s%s%s", p->index, p->total, p->commit, p->variant,
            p->agent ? " " : "", p->agent ? p->agent : "");
    if (p->repeats > 1)
        fprintf(stderr, " (repeat %u/%u)", p->repeat, p->repeats);
    fprintf(stderr, ": %s", phase_words[p->phase]);
    if (p->phase == ATR_BENCH_PHASE_DONE)
        fprintf(stderr, ", %s%s%s", atr_bench_outcome_name(p->outcome), p->error ? ": " : "",
                p->error ? p->error : "");
    if (p->phase != ATR_BENCH_PHASE_SKIP)
        fprintf(stderr, " (%.1f s)", p->elapsed_s);
    fputc('\n', stderr);
}

static void print_totals(const struct atr_bench_run_stats *st, const char *out)
{
    printf("%zu run%s: %zu written, %zu had a result", st->runs, cli_s(st->runs), st->done,
           st->skipped);
    for (int k = 0; k < ATR_BENCH_OUTCOMES; k++)
        if (st->outcomes[k])
            printf("; %zu %s", st->outcomes[k], atr_bench_outcome_name((enum atr_bench_outcome)k));
    printf("\nresults in %s/results, logs in %s/logs\n", out, out);
    if (*st->engine)
        printf("containers: %s\n", st->engine);
}

static int run_spec(const struct run_args *a, const struct atr_bench_spec *s, const char *self)
{
    struct cli_progress bar = {.mode = CLI_PROGRESS_OFF};
    struct atr_bench_run_opts o = {
        .out_dir = a->out, .retry_failed = a->retry_failed, .only = a->only,
        .shard = a->shard.i, .shards = a->shard.n, .repeat = a->repeat,
        .grace_s = a->grace_s, .self = self,
        .port = a->port_given ? (int)a->port : -1, .container_cli = a->container_cli,
        .stop = &stop_requested, .on_progress = a->quiet ? NULL : on_progress,
        .on_requests = a->quiet ? NULL : on_requests, .ctx = &bar,
    };
    cli_on_stop_signals(on_stop);
    signal(SIGPIPE, SIG_IGN);
    struct atr_bench_run_stats st;
    struct atr_error err;
    int rc = atr_bench_run(s, &o, &st, &err);
    if (*st.warning)
        fprintf(stderr, "atr bench run: warning: %s\n", st.warning);
    if (rc < 0)
        return cli_fail_err(&err);
    if (st.interrupted) {
        fprintf(stderr, "atr bench run: interrupted: %zu result%s written; run it again to "
                "go on\n", st.done, cli_s(st.done));
        return 130;
    }
    if (!a->quiet)
        print_totals(&st, a->out);
    return EXIT_OK;
}

int cmd_bench_run(int argc, char **argv)
{
    struct run_args a = {0};
    int first;
    if (opts_parse(&parser, &a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first >= argc)
        return cli_usage("bench run", "missing SPEC");
    if (argc - first > 1)
        return cli_usage("bench run", "wants one SPEC, got %d", argc - first);
    if (!a.dry_run && !a.out)
        return cli_usage("bench run", "wants -o DIR (where results and logs go), or --dry-run");
    struct atr_error err;
    struct atr_bench_spec *s = atr_bench_spec_load(argv[first], &err);
    if (!s) {
        /* a bad spec is wrong usage: nothing was started */
        fprintf(stderr, "atr bench run: %s\n", err.msg);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    if (a.dry_run)
        print_plan(s, a.repeat ? a.repeat : s->repeat);
    else
        rc = run_spec(&a, s, "/proc/self/exe");   /* this atr first on PATH */
    atr_bench_spec_free(s);
    return rc;
}
