/* cmd-gen.c - placeholder: being written. */
#include "cli/cmd.h"

static int run(int argc, char **argv) { return cli_fail("gen: not implemented yet"); }
const struct atr_cmd cmd_gen_entry = {"gen", "(not yet)", "usage: atr gen\n", run};
