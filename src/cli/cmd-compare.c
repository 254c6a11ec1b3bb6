/* cmd-compare.c - `atr compare`: benchmark results of several policies
 * (atr, vLLM, SGLang, bench and ISO-Bench result files) side by side, with
 * the cut against naive. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/llm-run.h"
#include "cli/sim-run.h"
#include "exp/sim-target.h"
#include "cli/opts.h"
#include "report/compare.h"
#include "report/repeats.h"
#include "util/output.h"

static const char help[] =
    "usage: atr compare [OPTIONS] RESULT...\n"
    "       atr compare --run TRACE... --target sim:GPU/MODEL --policy P,P... [sim run OPTIONS]\n"
    "\n"
    "Puts benchmark results side by side, one row per result: atr's\n"
    "--save-result (atr sim run, atr replay llm), vLLM's `vllm bench serve\n"
    "--save-result` (\"request_rate\": \"inf\" included), SGLang's bench_serving\n"
    "--output-file (JSONL, one row per line; bare Infinity/NaN accepted), the\n"
    "result files of `atr bench run` (results/<commit>_<variant>_result.json,\n"
    "or the folder `bench run -o` made: every result in it, repeats grouped)\n"
    "and ISO-Bench (figures from their \"metrics\"), and `atr sweep` results (a\n"
    "row per run). .gz/.zst transparently; - for stdin. Each row has the\n"
    "figures its file has, n/a for the others.\n"
    "Rows are grouped by target, in the order targets first appear; within\n"
    "one, policies in the order naive, prefix-cache, prefix-route, compaction,\n"
    "max-tokens, learned, then others by name. A file that is none of these\n"
    "(other atr files are named: a trace, a tool replay summary, ...) is an\n"
    "error, and nothing is written.\n"
    "With --run, the traces are first run in the simulator under each policy\n"
    "(as `atr sim run --profile GPU/MODEL --policy ...`, which takes the same\n"
    "options) and only the table is printed; with --repeat N each policy runs N\n"
    "times, interleaved, and the table gives per metric the median over the\n"
    "repeats with its 95 % interval and, against naive, the ratio with its\n"
    "interval and a verdict (win, tie, loss, inconclusive; docs/statistics.md).\n"
    "--repeat 1 takes the intervals from within each run, over its requests.\n"
    "Result files with \"repeat\" indexes (sim run, replay llm --repeat) are\n"
    "grouped by target and policy and the same table follows the rows.\n"
    "\n"
    "options:\n"
    "      --json            a JSON array of row objects instead of the Markdown table\n"
    "  -o, --output OUT      write there (atomically) instead of stdout\n"
    "\n"
    "columns (JSON keys; missing figures are n/a in the table, null in JSON):\n"
    "  target                atr.target, else sim:PROFILE (atr.engine.profile),\n"
    "                        else BACKEND:MODEL_ID of the result; MODEL@COMMIT\n"
    "                        for a bench result\n"
    "  policy                atr.policy, else the file name without .json/.jsonl\n"
    "                        (#LINE appended for a JSONL file of several runs);\n"
    "                        a bench result's variant[/agent], and its outcome\n"
    "                        when it failed: agent/codex (patch_failed); a\n"
    "                        sweep's run: run 3: rate 31.226 /s (numbers in\n"
    "                        other names sort by value)\n"
    "  avg, p50, p99 TTFT ms mean_ttft_ms, p50_ttft_ms, p99_ttft_ms (from\n"
    "                        mean_ttft_ms, median_ttft_ms, p99_ttft_ms; bench:\n"
    "                        ttft_mean_ms, ttft_median_ms, ttft_p99_ms)\n"
    "  avg, p50, p99 E2E ms  mean_e2el_ms, p50_e2el_ms, p99_e2el_ms (from vLLM's\n"
    "                        *_e2el_ms, which `vllm bench serve` writes only with\n"
    "                        --percentile-metrics ...,e2el, or SGLang's\n"
    "                        *_e2e_latency_ms; bench: e2el_*_ms); p99 is n/a\n"
    "                        for a result run with\n"
    "                        --percentiles without 99\n"
    "  avg, p50, p99 session s\n"
    "                        mean_session_ms, p50_session_ms, p99_session_ms:\n"
    "                        session completion time of a multi-turn workload\n"
    "                        (atr.sessions: mean, median and p99_completion_ms),\n"
    "                        seconds in the table; only when a row has one\n"
    "  req/s                 request_throughput (else completed / duration;\n"
    "                        bench: request_throughput_req_s)\n"
    "  out tok/s             output_throughput (bench:\n"
    "                        output_token_throughput_tok_s)\n"
    "  prefix hit            prefix_cache_hit_rate (0..1; atr results only)\n"
    "  kv pins, pins dropped, evictions\n"
    "                        kv_pins, kv_pins_dropped, evictions: the cost of\n"
    "                        the simulator's --kv-retain (atr.engine): blocks\n"
    "                        pinned for a session's next turn, pins dropped\n"
    "                        for memory, blocks evicted (a run without the knob\n"
    "                        shows its evictions); only when some row pinned\n"
    "  E2E cut, TTFT cut     e2el_cut_pct, ttft_cut_pct: (naive - this) / naive\n"
    "                        of the means, in percent, against the first naive\n"
    "                        row of the same target\n"
    "  (JSON only)           file, kind (atr, vllm, sglang or iso-bench)\n";

struct compare_opts {
    const char *out;
    bool json;
    int first_arg;           /* argv[first_arg..argc): the RESULTs */
};

#define ARGS struct compare_opts
static const struct opt options[] = {
    OPT_FLAG(ARGS, json, "json", 0),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_END,
};
#undef ARGS

/* Unknown options and missing values are named ("unknown option '--x'"). */
static const struct opts_cmd parser = {"compare", options};

static int parse_args(int argc, char **argv, struct compare_opts *o)
{
    if (opts_parse(&parser, o, argc, argv, &o->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (o->first_arg >= argc)
        return cli_usage("compare", "missing RESULT");
    return EXIT_OK;
}

static int emit(const char *path, const struct atr_buf *b)
{
    struct atr_error err;
    if (atr_output_write_file(path ? path : "-", b->data, b->len, &err) < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
}

/* --run: `atr sim run`'s arguments, with --target sim:GPU/MODEL for its
 * --profile, and only the comparison table printed. */
struct compare_run_args {
    struct sim_run_args sim;
};

static bool opt_sim_target(void *base, const char *arg, const char *cmd)
{
    if (strncmp(arg, "sim:", 4) != 0) {
        cli_usage(cmd, "--run wants --target sim:GPU/MODEL (replay real targets with atr "
                  "replay llm, then compare the results)");
        return false;
    }
    ((struct compare_run_args *)base)->sim.sim.profile = arg + 4;
    return true;
}

static const struct opt run_options[] = {
    OPT_CALL("target", 't', opt_sim_target, NULL),
    OPT_INCLUDE(struct compare_run_args, sim, sim_run_options),
    OPT_END,
};

static const struct opts_cmd run_parser = {"compare", run_options};

/* The series on the simulator target (exp/series.h through llm_run),
 * only its table printed. */
static int run_series(const struct sim_run_args *a, char *const *paths, size_t n)
{
    struct atr_target t;
    struct atr_error err;
    if (atr_sim_target_make(&t, &a->sim, &err) < 0)
        return cli_fail_err(&err);
    struct llm_report_opts report = a->report;
    report.quiet = true;
    struct llm_run r = {
        .from = a->from, .policies = &a->policies, .policy_opts = a->policy_opts,
        .sched = &a->sched, .report = &report, .iterations_out = a->iterations_out,
        .table_only = true, .repeats = a->repeats,
    };
    int rc = llm_run(&r, &t, paths, n);
    atr_target_release(&t);
    return rc;
}

static int run_sim(int argc, char **argv)
{
    struct compare_run_args a;
    sim_run_args_init(&a.sim);
    argc--;                      /* past "--run" */
    argv++;
    int rc = opts_parse(&run_parser, &a, argc, argv, &a.sim.first_arg);
    if (rc == EXIT_OK && !a.sim.sim.profile)     /* what this command calls it */
        rc = cli_usage("compare", "--run wants --target sim:GPU/MODEL");
    if (rc == EXIT_OK)
        rc = sim_run_args_check(&a.sim, argc, "compare");
    if (rc == EXIT_OK)
        rc = run_series(&a.sim, argv + a.sim.first_arg, (size_t)(argc - a.sim.first_arg));
    sim_run_args_release(&a.sim);
    return rc;
}

/* Rows with repeat indexes: grouped by target and policy, the table over
 * repeats after the rows' (report/repeats.h). -1 when it cannot be made
 * (said on stderr): mixed figures within a group, a repeat twice. */
static int add_repeats(struct atr_compare *c, struct atr_buf *b)
{
    size_t n;
    const struct atr_compare_row *rows = atr_compare_rows(c, &n);
    struct atr_repeats *r = atr_repeats_new(0, ATR_REPEATS_MARGIN);
    for (size_t i = 0; i < n; i++)
        atr_repeats_add_row(r, &rows[i], rows[i].repeat);
    struct atr_error err;
    int rc = atr_repeats_check(r, &err);
    if (rc < 0)
        cli_fail_err(&err);
    else
        rc = atr_buf_puts(b, "\n") < 0 || atr_repeats_write_markdown(b, r) < 0 ? -1 : 0;
    atr_repeats_free(r);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--run") == 0)
        return run_sim(argc, argv);
    struct compare_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct atr_compare *c = atr_compare_new();
    struct atr_error err;
    for (int i = o.first_arg; i < argc; i++)
        if (atr_compare_add_file(c, argv[i], &err) < 0) {
            atr_compare_free(c);
            return cli_fail_err(&err);
        }
    struct atr_buf b = ATR_BUF_INIT;
    rc = (o.json ? atr_compare_write_json : atr_compare_write_markdown)(&b, c);
    if (rc == 0 && !o.json && atr_compare_has_repeats(c) && (rc = add_repeats(c, &b)) < 0) {
        atr_compare_free(c);
        atr_buf_release(&b);
        return EXIT_FAIL;
    }
    atr_compare_free(c);
    rc = rc < 0 ? cli_fail("out of memory writing the table") : emit(o.out, &b);
    atr_buf_release(&b);
    return rc;
}

const struct atr_cmd cmd_compare_entry = {
    "compare", "policies side by side: TTFT, E2E latency, throughput, cut vs naive",
    help, run, NULL,
};
