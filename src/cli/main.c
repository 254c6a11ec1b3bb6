/* main.c - atr's entry point: global options, `help`, and command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"

/* "  NAME       summary", the summary wrapped at word breaks to 80 columns
 * under itself (summaries are one line in the table, any length). */
static void print_entry(FILE *f, const char *name, const char *summary)
{
    enum { INDENT = 13, WIDTH = 80 };
    int col = fprintf(f, "  %-10s", name);
    const char *s = summary;
    while (*s) {
        size_t word = strcspn(s, " ");
        if (col > INDENT && col + 1 + (int)word > WIDTH)
            col = fprintf(f, "\n%*s", INDENT - 1, "") - 1;
        col += fprintf(f, " %.*s", (int)word, s);
        s += word;
        s += strspn(s, " ");
    }
    fputc('\n', f);
}

static void print_overview(FILE *f)
{
    fprintf(f, "usage: atr [--version] [--help] COMMAND [ARGS]\n\n"
               "atr (Agent Trace Runtime) turns agent trajectories and LLM request logs\n"
               "into one trace format (atr-trace v1) and works with them.\n\n"
               "commands:\n");
    for (size_t i = 0; atr_cmds[i]; i++)
        print_entry(f, atr_cmds[i]->name, atr_cmds[i]->summary);
    print_entry(f, "help", "show a command's help: atr help COMMAND [MODE]");
    fputc('\n', f);
    fprintf(f, "Every command takes --help. Exit status: 0 ok, 1 failed (bad input),\n"
               "2 wrong usage. Long jobs (convert, fetch, replay, sim run, sweep, bench\n"
               "run, report --png) show progress on stderr: a line redrawn in place on a\n"
               "terminal, else a line every 5 s (ATR_PROGRESS_INTERVAL_MS=N: every N ms;\n"
               "0: every update); -q silences it.\n");
}

/* atr help [COMMAND [MODE]]: a mode with a page of its own (sim serve,
 * replay llm) gets that page, as `atr COMMAND MODE --help` does. */
static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stdout);
        return EXIT_OK;
    }
    const struct atr_cmd *cmd = atr_cmd_find(argv[1]);
    if (!cmd) {
        fprintf(stderr, "atr: no command '%s' (see 'atr --help')\n", argv[1]);
        return EXIT_USAGE;
    }
    fputs(cli_mode_help(cmd, argc > 2 ? argv[2] : NULL), stdout);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("atr %s\n", ATR_VERSION);
        return EXIT_OK;
    }
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_overview(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "help") == 0)
        return cmd_help(argc - 1, argv + 1);
    const struct atr_cmd *cmd = atr_cmd_find(name);
    if (!cmd) {
        fprintf(stderr, "atr: no command '%s' (see 'atr --help')\n", name);
        return EXIT_USAGE;
    }
    if (cli_wants_help(cmd, argc - 1, argv + 1))
        return EXIT_OK;
    cli_install_signal_cleanup();
    return cmd->run(argc - 1, argv + 1);
}
