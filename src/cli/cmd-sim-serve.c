/* cmd-sim-serve.c - `atr sim serve`: placeholder until the server lands.
 * NOTE to the helper writing this file: export the help text as
 * `const char cmd_sim_serve_help[]` (declared in cli/cmd.h); main prints it
 * for `atr sim serve --help`. */
#include "cli/cmd.h"

const char cmd_sim_serve_help[] = "usage: atr sim serve (not built yet)\n";

int cmd_sim_serve(int argc, char **argv)
{
    return cli_usage("sim serve", "not built yet");
}
