/* cmd-stats.c - placeholder: being written. */
#include "cli/cmd.h"

static int run(int argc, char **argv) { return cli_fail("stats: not implemented yet"); }
const struct atr_cmd cmd_stats_entry = {"stats", "(not yet)", "usage: atr stats\n", run};
