/* cmd-report.c - `atr report INPUT... -o report.html`: one self-contained
 * HTML file from trace files, result JSON and bench folders (docs/report.md). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "report/html.h"
#include "report/png.h"
#include "runner/cgroup.h"
#include "util/buf.h"
#include "util/output.h"

static const char help[] =
    "usage: atr report [OPTIONS] INPUT... -o REPORT.html\n"
    "\n"
    "Writes one self-contained HTML file (data, CSS and JS inline, no network\n"
    "request; tables readable without JS; light and dark follow the system)\n"
    "from atr outputs, each recognised by its content:\n"
    "  trace files     any format the trace readers sniff (.gz/.zst too):\n"
    "                  the trace explorer, a step timeline per trace\n"
    "  result JSON     --save-result of `atr sim run` / `atr replay llm`\n"
    "                  (or vLLM's): percentile tables and bar charts\n"
    "  bench folders   result folders of `atr bench`: counts and the 3-way\n"
    "                  comparison of `atr bench report`\n"
    "  router files    a model of `atr router train` (the Router lab: live\n"
    "                  decisions, per turn of the traces) and `atr router eval\n"
    "                  --json` files (the confusion matrix)\n"
    "A section appears only when its inputs are given. The data appendix\n"
    "lists every input with its size and XXH3-128 hash.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the report (written atomically; required)\n"
    "      --png DIR       also one PNG per chart (DIR/NN-SECTION.png), shot by\n"
    "                      headless Chromium: $CHROMIUM, else /usr/bin/chromium\n"
    "                      (--no-sandbox when atr runs as root)\n"
    "  -q, --quiet         no progress on stderr\n";

struct report_opts {
    const char *out, *png;
    bool quiet;
    int first_arg;
};

#define ARGS struct report_opts
static const struct opt options[] = {
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, png, "png", 0),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"report", options};

/* Whether an argument can be shown in a shell command line unquoted. */
static bool plain_word(const char *s)
{
    return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                           "0123456789_./=,:+-@%") == strlen(s);
}

/* "atr report ..." as typed, each argument single-quoted where needed. */
static void command_line(struct atr_buf *b, int argc, char **argv)
{
    atr_buf_puts(b, "atr");
    for (int i = 0; i < argc; i++) {
        atr_buf_putc(b, ' ');
        if (plain_word(argv[i])) {
            atr_buf_puts(b, argv[i]);
            continue;
        }
        atr_buf_putc(b, '\'');
        for (const char *p = argv[i]; *p; p++)
            atr_buf_puts(b, *p == '\'' ? "'\\''" : (char[]){*p, 0});
        atr_buf_putc(b, '\'');
    }
}

static int build(struct atr_html *h, int argc, char **argv, const struct report_opts *o,
                 struct atr_buf *page)
{
    struct atr_error err;
    for (int i = o->first_arg; i < argc; i++)
        if (atr_html_add(h, argv[i], &err) < 0)
            return cli_fail_err(&err);
    struct atr_buf cmd = ATR_BUF_INIT;
    command_line(&cmd, argc, argv);
    struct atr_machine machine;
    atr_machine_read(&machine);
    struct atr_cg_host cg;
    struct atr_error cg_err;
    bool cg_ok = atr_cg_detect(&cg, NULL, NULL, "", &cg_err) == 0;
    struct atr_html_meta meta = {ATR_VERSION, cmd.data, &machine,
                                 cg_ok ? atr_cg_mode_name(cg.mode) : NULL, NULL, NULL, NULL};
    int rc = atr_html_write(page, h, &meta);
    atr_buf_release(&cmd);
    return rc < 0 ? cli_fail("out of memory writing the report") : EXIT_OK;
}

static void on_chart(void *ctx, size_t done, size_t total)
{
    cli_progress_count(ctx, cli_progress_now(), done, total, "charts");
}

/* --png DIR: the charts of the page, before the report is committed (a
 * failure leaves neither). */
static int write_pngs(const struct report_opts *o, const struct atr_buf *page)
{
    const char *env = getenv("CHROMIUM");
    struct cli_progress bar;
    struct atr_png_cfg cfg = {
        .chromium = env && *env ? env : "/usr/bin/chromium",
        .no_sandbox = geteuid() == 0, .on_progress = on_chart, .progress_ctx = &bar,
    };
    cli_progress_start(&bar, "report --png", o->quiet);
    struct atr_error err;
    size_t n;
    int rc = atr_report_png(page->data, page->len, o->png, &cfg, &n, &err);
    cli_progress_end(&bar);
    if (rc < 0)
        return cli_fail_err(&err);
    printf("wrote %zu PNG file%s to %s\n", n, n == 1 ? "" : "s", o->png);
    return EXIT_OK;
}

static int run(int argc, char **argv)
{
    struct report_opts o = {0};
    if (opts_parse(&parser, &o, argc, argv, &o.first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (o.first_arg >= argc)
        return cli_usage("report", "missing INPUT");
    if (!o.out)
        return cli_usage("report", "missing -o REPORT.html");
    struct atr_error err;
    struct atr_output *out = atr_output_open(o.out, &err);
    if (!out)
        return cli_fail_err(&err);
    struct atr_html *h = atr_html_new();
    atr_html_set_warn(h, cli_warn);
    struct atr_buf page = ATR_BUF_INIT;
    int rc = build(h, argc, argv, &o, &page);
    if (rc == EXIT_OK && o.png)
        rc = write_pngs(&o, &page);
    if (rc == EXIT_OK && atr_output_write(out, page.data, page.len, &err) < 0)
        rc = cli_fail_err(&err);
    if (rc != EXIT_OK)
        atr_output_abort(out);
    else if (atr_output_commit(out, &err) < 0)
        rc = cli_fail_err(&err);
    atr_buf_release(&page);
    atr_html_free(h);
    return rc;
}

const struct atr_cmd cmd_report_entry = {
    .name = "report",
    .summary = "one self-contained HTML report from traces, results and bench folders",
    .help = help,
    .run = run,
};
