/* cmd-bench.c - `atr bench report DIR...`: result folders of 3-way
 * benchmarks (atr's, ISO-Bench's, vLLM's, SGLang's files) as one report;
 * dispatches `atr bench run` (cmd-bench-run.c) and `atr bench history`
 * (cmd-bench-history.c). */
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/report.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "util/alloc.h"
#include "util/output.h"

static const char help[] =
    "usage: atr bench run SPEC --dry-run\n"
    "       atr bench report [OPTIONS] [NAME=]DIR|FILE...\n"
    "       atr bench history [OPTIONS] DIR|FILE...\n"
    "\n"
    "3-way serving benchmarks of code changes (docs/bench.md): per commit of a\n"
    "serving engine, the baseline (its parent), the human commit and each\n"
    "agent's patch. `bench run` runs a spec (see `atr bench run --help`);\n"
    "`bench report` summarises result folders (see `atr bench report --help`);\n"
    "`bench history` flags regressions beyond noise across commits (see\n"
    "`atr bench history --help`).\n";

static const char report_help[] =
    "usage: atr bench report [OPTIONS] [NAME=]DIR|FILE...\n"
    "\n"
    "Reads every *.json and *.jsonl in each DIR, or the result FILE given:\n"
    "atr's result files (<commit8>_<variant>[_<agent>]_result.json),\n"
    "ISO-Bench's (status and error text mapped to an outcome), vLLM's\n"
    "--save-result JSON and SGLang's bench_serving JSONL. Each DIR is one\n"
    "group, named NAME, else after the folder (a FILE's folder; its parent's\n"
    "name when it is called `results`); folders given the same NAME are\n"
    "merged (the shards of one run). A file that is not a result\n"
    "is an error FILE:LINE:COL (exit 1) and nothing is written.\n"
    "\n"
    "Per group: total, successful, error, timeout and the success rate; the\n"
    "outcomes with counts and shares; per agent its own runs' outcomes and\n"
    "success rate (baseline and human runs not counted) and its true\n"
    "successes; the successful benchmarks (req/s, output tok/s, TTFT and TPOT\n"
    "p99); per commit and agent, over the repeats of `bench run --repeat N`,\n"
    "the medians of output tok/s and of each run's median TTFT, TPOT, ITL and\n"
    "E2EL for baseline, human and agent, the ratios agent/human and\n"
    "agent/baseline with 95 % intervals over the repeats and a verdict (win,\n"
    "tie, loss, inconclusive) read off each interval; failed repeats are left\n"
    "out and counted. True success: the agent beat the baseline's throughput\n"
    "beyond noise (verdict win). The human's speedup over baseline is the\n"
    "reference. One successful run a side gives no interval: inconclusive.\n"
    "The successful results without latency metrics close each group.\n"
    "\n"
    "options:\n"
    "      --json            per group an object: group, total, success, error,\n"
    "                        timeout, success_rate (percent), outcomes {name:\n"
    "                        count}, comparison [...], human_reference [...],\n"
    "                        per_agent [...], geomean_agent_over_human,\n"
    "                        geomean_agent_over_baseline, noise_pct,\n"
    "                        ci_level_pct, wins, ties, losses, inconclusive (vs\n"
    "                        human), vs_baseline, human_vs_baseline, true_success,\n"
    "                        without_latency [files]\n"
    "      --csv             one row per result: group, file, kind, commit,\n"
    "                        variant, agent, model, status, outcome, req_s, tok_s,\n"
    "                        ttft_p99_ms, tpot_p99_ms, has_latency, repeat,\n"
    "                        ttft_p50_ms, tpot_p50_ms, itl_p50_ms, e2el_p50_ms\n"
    "      --csv-ratios      one row per ratio: group, commit, candidate, agent,\n"
    "                        reference, metric, reference_median,\n"
    "                        candidate_median, ratio, lo, hi, n_reference,\n"
    "                        n_candidate, method, verdict\n"
    "      --noise PCT       the tie margin: an interval within 1 +- PCT/100 is a\n"
    "                        tie (default 5); the verdict comes from the interval\n"
    "  -o, --output OUT      write there (atomically) instead of stdout\n"
    "\n"
    "outcomes: success, no_metrics, server_crashed, startup_timeout,\n"
    "benchmark_timeout, oom, patch_failed, prepare_timeout, model_invalid,\n"
    "disk_full, and other_error for a file found in the wild whose error text\n"
    "names none of them.\n";

struct report_args {
    bool json, csv, csv_ratios;
    double noise;
    const char *out;
};

#define ARGS struct report_args
static const struct opt options[] = {
    OPT_FLAG(ARGS, json, "json", 0),
    OPT_FLAG(ARGS, csv, "csv", 0),
    OPT_FLAG(ARGS, csv_ratios, "csv-ratios", 0),
    OPT_DOUBLE(ARGS, noise, "noise", 0, 0, 100, "--noise wants a percentage in [0, 100], got '%s'"),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"bench report", options};

/* The group of "NAME=DIR", else the folder's name (its parent's when it is
 * called "results"). Returns a new string; *dir is set to the folder. */
static char *group_name(const char *arg, const char **dir)
{
    const char *eq = strchr(arg, '=');
    if (eq && eq > arg && !memchr(arg, '/', (size_t)(eq - arg))) {
        *dir = eq + 1;
        return xstrndup(arg, (size_t)(eq - arg));
    }
    *dir = arg;
    char *full = realpath(arg, NULL);
    char *path = xstrdup(full ? full : arg);
    free(full);
    struct stat st;
    char *slash = strrchr(path, '/');
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && slash && slash > path)
        *slash = '\0';     /* a result file: named by its folder */
    char *base = basename(path);
    if (strcmp(base, "results") == 0 && base > path) {
        base[-1] = '\0';
        base = basename(path);
    }
    char *name = xstrdup(base);
    free(path);
    return name;
}

static int add_dirs(struct atr_bench_report *r, int argc, char **argv, int first)
{
    for (int i = first; i < argc; i++) {
        const char *dir;
        char *name = group_name(argv[i], &dir);
        struct atr_bench_set s = {0};
        struct atr_error err;
        int rc = atr_bench_read_path(&s, dir, &err);
        if (rc == 0)
            atr_bench_report_add(r, name, &s);
        atr_bench_set_release(&s);
        free(name);
        if (rc < 0)
            return cli_fail_err(&err);
    }
    return EXIT_OK;
}

static int report(int argc, char **argv)
{
    struct report_args a = {.noise = 5};
    int first;
    if (opts_parse(&parser, &a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (a.json + a.csv + a.csv_ratios > 1)
        return cli_usage("bench report", "--json, --csv and --csv-ratios exclude each other");
    if (first >= argc)
        return cli_usage("bench report", "missing DIR or FILE");
    struct atr_bench_report *r = atr_bench_report_new(a.noise);
    int rc = add_dirs(r, argc, argv, first);
    struct atr_buf b = ATR_BUF_INIT;
    int (*write)(struct atr_buf *, const struct atr_bench_report *) =
        a.json ? atr_bench_report_json : a.csv ? atr_bench_report_csv
        : a.csv_ratios ? atr_bench_report_csv_ratios : atr_bench_report_markdown;
    if (rc == EXIT_OK && write(&b, r) < 0)
        rc = cli_fail("out of memory writing the report");
    struct atr_error err;
    if (rc == EXIT_OK && atr_output_write_file(a.out ? a.out : "-", b.data, b.len, &err) < 0)
        rc = cli_fail_err(&err);
    atr_buf_release(&b);
    atr_bench_report_free(r);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return cmd_bench_run(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "report") == 0)
        return report(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "history") == 0)
        return cmd_bench_history(argc - 1, argv + 1);
    return cli_usage_mode("bench", argc, argv,
                          (const char *const[]){"run", "report", "history", NULL});
}

static const struct atr_cmd_mode modes[] = {
    {"run", cmd_bench_run_help},
    {"report", report_help},
    {"history", cmd_bench_history_help},
    {NULL, NULL},
};

const struct atr_cmd cmd_bench_entry = {
    "bench", "3-way benchmarks of code changes: `bench run` a spec, `bench report` results, "
             "`bench history` regressions across commits",
    help, run, modes,
};
