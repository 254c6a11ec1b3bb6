/* cmd-bench-run.c - `atr bench run SPEC --dry-run`: reads a benchmark spec
 * (docs/bench.md), checks it whole and prints the plan, every item x
 * variant with its commands expanded; nothing is started. */
#include <stdio.h>
#include <stdlib.h>

#include "bench/spec.h"
#include "cli/cmd.h"
#include "cli/opts.h"

const char cmd_bench_run_help[] =
    "usage: atr bench run SPEC --dry-run\n"
    "\n"
    "Reads the benchmark spec SPEC (JSON, docs/bench.md): items (a commit, its\n"
    "parent, a model, per agent a patch), variants (baseline, human, agent, ...:\n"
    "server start command templates with {model} {port} {commit} {parent}\n"
    "{patch} {workdir}, prepare command, readiness URL, timeouts), model\n"
    "overrides and the workload. A bad spec is reported as FILE:LINE:COL: what\n"
    "was expected (exit 2), before anything starts.\n"
    "\n"
    "Only --dry-run is built so far; the runner comes with issue 12, and until\n"
    "then `atr bench run` without --dry-run exits 2 and starts nothing.\n"
    "\n"
    "  -n, --dry-run   print the plan: per item and variant the expanded server,\n"
    "                  prepare and benchmark commands, readiness URL, timeouts,\n"
    "                  workload and model override; start nothing\n";

struct run_args {
    bool dry_run;
};

static const struct opt options[] = {
    OPT_FLAG(struct run_args, dry_run, "dry-run", 'n'),
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
    print_expanded(4, "server:", var->server, v, true);
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
                               s->workdir, s->port};
    size_t runs = 0;
    for (size_t k = 0; k < it->n_variants; k++)
        runs += print_variant(s, it, it->variants[k], &v);
    print_expanded(2, "cleanup:", s->cleanup, &v, true);
    return runs;
}

static void print_plan(const struct atr_bench_spec *s)
{
    printf("plan of %s: %zu item%s, %zu variant%s; nothing is started\n", s->path, s->n_items,
           cli_s(s->n_items), s->n_variants, cli_s(s->n_variants));
    printf("port %u, workdir %s\n", s->port, s->workdir);
    print_workload(&s->workload);
    size_t runs = 0;
    for (size_t i = 0; i < s->n_items; i++)
        runs += print_item(s, i);
    printf("\n%zu run%s\n", runs, cli_s(runs));
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
    if (!a.dry_run) {
        fprintf(stderr, "atr bench run: only --dry-run is built so far; the runner comes "
                        "with issue 12\n");
        return EXIT_USAGE;
    }
    struct atr_error err;
    struct atr_bench_spec *s = atr_bench_spec_load(argv[first], &err);
    if (!s) {
        /* a bad spec is wrong usage: nothing was started */
        fprintf(stderr, "atr bench run: %s\n", err.msg);
        return EXIT_USAGE;
    }
    print_plan(s);
    atr_bench_spec_free(s);
    return EXIT_OK;
}
