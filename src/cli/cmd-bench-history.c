/* cmd-bench-history.c - `atr bench history DIR...`: benchmark results
 * across commits, each metric's regressions beyond noise against a rolling
 * baseline (bench/history.h), as Markdown or JSON; a CI gate with
 * --fail-on-regression. Dispatched by cmd-bench.c. */
#include <stdbool.h>
#include <stdlib.h>

#include "bench/history.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "report/history-html.h"
#include "util/output.h"

const char cmd_bench_history_help[] =
    "usage: atr bench history [OPTIONS] DIR|FILE...\n"
    "\n"
    "Reads benchmark results as `atr bench report` does (atr's result files,\n"
    "ISO-Bench's, vLLM's --save-result JSON, atr replay's and sim run's, SGLang's\n"
    "JSONL) from every DIR and FILE, and follows each set-up across commits:\n"
    "a series is the results of one variant, agent, model, target and policy;\n"
    "a point is a series' results of one commit (its repeats), or one file\n"
    "where no commit is named. Points are ordered by when they were measured\n"
    "(the files' \"timestamp\" or \"date\"); a series where a result says\n"
    "nothing of it keeps the order read (a folder's files by name) and says so.\n"
    "\n"
    "Each point's req/s, output tok/s and TTFT, TPOT, E2EL percentiles are\n"
    "compared with its baseline, the runs of the --window points before it:\n"
    "the ratio with its 95 % interval (Hodges-Lehmann / Mann-Whitney over\n"
    "repeats, a t interval on logs for a single run; docs/statistics.md). A\n"
    "regression is flagged where the ratio is worse beyond noise and its whole\n"
    "interval lies past the margin (many points and metrics are compared: a\n"
    "loss alone, 2.5 % likely in each when nothing changed, is shown, not\n"
    "flagged).\n"
    "Failed results are counted and left out of every figure.\n"
    "\n"
    "options:\n"
    "      --window K        points in the rolling baseline (default 5)\n"
    "      --margin PCT      changes within PCT % are ties (default 5)\n"
    "      --json            one object: window, margin, level, results, failed,\n"
    "                        regressions, series [{series, order, regressions,\n"
    "                        points [{commit, measured, file, runs, failed,\n"
    "                        metrics {req_s: {value, runs, ratio, lo, hi, method,\n"
    "                        baseline_runs, verdict, regression}, ...}}]}]\n"
    "      --fail-on-regression   exit 1 when any regression is flagged (after\n"
    "                        writing the report): a CI gate\n"
    "      --html FILE       also a page of charts, one per series and metric\n"
    "                        (inline SVG; regressions in red)\n"
    "  -o, --output OUT      write there (atomically) instead of stdout\n"
    "\n"
    "Bad input (no results, results of one point only, a result missing a\n"
    "metric the rest of its series has) is one message and exit 1, with\n"
    "nothing written.\n";

struct history_args {
    unsigned long window;
    double margin;
    bool json, fail;
    const char *out, *html;
};

#define ARGS struct history_args
static const struct opt options[] = {
    OPT_UINT(ARGS, window, "window", 0, 1, 1000, "--window wants a number of points in 1..1000"),
    OPT_DOUBLE(ARGS, margin, "margin", 0, 0, 100, "--margin wants a percentage in [0, 100], got '%s'"),
    OPT_FLAG(ARGS, json, "json", 0),
    OPT_FLAG(ARGS, fail, "fail-on-regression", 0),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, html, "html", 0),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"bench history", options};

static int read_all(struct atr_bench_set *s, int argc, char **argv, int first)
{
    for (int i = first; i < argc; i++) {
        struct atr_error err;
        if (atr_bench_read_path(s, argv[i], &err) < 0)
            return cli_fail_err(&err);
    }
    return EXIT_OK;
}

static int write_one(const char *path, int (*fmt)(struct atr_buf *, const struct atr_history *),
                     const struct atr_history *h)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = EXIT_OK;
    if (fmt(&b, h) < 0)
        rc = cli_fail("out of memory writing the history");
    struct atr_error err;
    if (rc == EXIT_OK && atr_output_write_file(path, b.data, b.len, &err) < 0)
        rc = cli_fail_err(&err);
    atr_buf_release(&b);
    return rc;
}

static int write_report(const struct history_args *a, const struct atr_history *h)
{
    int rc = write_one(a->out ? a->out : "-", a->json ? atr_history_json : atr_history_markdown,
                       h);
    if (rc == EXIT_OK && a->html)
        rc = write_one(a->html, atr_history_html, h);
    return rc;
}

int cmd_bench_history(int argc, char **argv)
{
    struct history_args a = {.window = 5, .margin = 100 * ATR_CI_MARGIN};
    int first;
    if (opts_parse(&parser, &a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first >= argc)
        return cli_usage("bench history", "missing DIR or FILE");
    struct atr_bench_set s = {0};
    int rc = read_all(&s, argc, argv, first);
    struct atr_history h = {0};
    struct atr_history_opts o = {a.window, a.margin / 100, ATR_CI_SEED};
    struct atr_error err;
    if (rc == EXIT_OK && atr_history_build(&h, &s, &o, &err) < 0)
        rc = cli_fail_err(&err);
    if (rc == EXIT_OK)
        rc = write_report(&a, &h);
    if (rc == EXIT_OK && a.fail && h.regressions > 0)
        rc = EXIT_FAIL;
    atr_history_release(&h);
    atr_bench_set_release(&s);
    return rc;
}
