/* cmd-sample.c - placeholder: being written. */
#include "cli/cmd.h"

static int run(int argc, char **argv) { return cli_fail("sample: not implemented yet"); }
const struct atr_cmd cmd_sample_entry = {"sample", "(not yet)", "usage: atr sample\n", run};
