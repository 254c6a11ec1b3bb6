/* cmd.h - the command table: one `struct atr_cmd` per src/cli/cmd-<name>.c. */
#ifndef ATR_CLI_CMD_H
#define ATR_CLI_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "llm/models.h"
#include "util/error.h"
#include "util/size.h"

/* A mode with its own help text: `atr NAME MODE --help` prints it. */
struct atr_cmd_mode {
    const char *name;
    const char *help;
};

struct atr_cmd {
    const char *name;
    const char *summary;   /* one line for `atr --help` */
    const char *help;      /* full text for `atr help NAME` / `atr NAME --help` */
    int (*run)(int argc, char **argv);   /* exit status: 0 ok, 1 failed, 2 usage */
    const struct atr_cmd_mode *modes;    /* NULL-terminated, or NULL */
};

extern const struct atr_cmd *const atr_cmds[];
const struct atr_cmd *atr_cmd_find(const char *name);

/* Shared CLI helpers (cli/common.c). */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* The plural ending of a count: "1 trace", "2 traces", "0 traces". */
static inline const char *cli_s(unsigned long long n)
{
    return n == 1 ? "" : "s";
}

/* "atr: <msg>" on stderr; returns EXIT_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_fail_err(const struct atr_error *err);
/* "atr: <msg>" on stderr, for a library's warning (atr_read_opts.warn). */
void cli_warn(const char *msg);
/* The failure of asking a server for its model (llm/models.h): the
 * --model hint only where a model list is what went wrong. */
int cli_fail_models(enum atr_models_fail why, const struct atr_error *err);
/* "atr CMD: <msg>\nTry 'atr help CMD'." on stderr; returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error of a command with modes (NULL-terminated) when argv[1]
 * (argc > 1) is none of them: "wants a mode: run or serve", with ", not
 * 'foo'" naming what was given. Returns EXIT_USAGE. */
int cli_usage_mode(const char *cmd, int argc, char **argv, const char *const *modes);
/* The help of cmd's mode (`atr sim serve`), or cmd's own when mode is NULL
 * or not one of its modes with a page of its own. */
const char *cli_mode_help(const struct atr_cmd *cmd, const char *mode);
/* Prints cmd's help to stdout when argv has -h/--help; returns true then. */
bool cli_wants_help(const struct atr_cmd *cmd, int argc, char **argv);
/* --profile GPU/MODEL with --tp N of cmd, checked before any work: a usage
 * error for an unknown GPU or model, or a tp the model cannot be split by. */
int cli_check_profile(const char *cmd, const char *profile, unsigned tp);
/* --policy P,... and --policy-options of cmd, checked before any work: a
 * usage error for options without policies, unknown names or keys, values
 * out of range (policy.h: atr_policy_check). */
int cli_check_policies(const char *cmd, const char *const *names, size_t n, const char *options);
/* Several --target URLs with no policy to route among them: a usage
 * error (every request would go to the first). */
int cli_check_replicas(const char *cmd, unsigned n_urls, size_t n_policies);
/* A table cell: x with decimals, right-aligned in width, or "n/a" where
 * x is NaN or infinite (a figure without samples), never "nan". Returns
 * cell (CLI_CELL_MAX bytes). */
enum { CLI_CELL_MAX = 48 };
const char *cli_cell(char *cell, int width, int decimals, double x);
/* Parses a number in [lo, hi] (never NaN) into *out; false on junk. */
bool cli_parse_double(const char *s, double lo, double hi, double *out);
/* Parses a non-negative integer in [min, max]; false on junk. */
bool cli_parse_uint(const char *s, unsigned long long min, unsigned long long max,
                    unsigned long long *out);
/* Parses a size (atr_parse_size: 512M, 2G, ...) of at least 1 byte, or
 * "none" (-1: no limit), into *out; false on junk. */
bool cli_parse_limit(const char *s, int64_t *out);
/* --cpu-max CORES (a fraction of a core up to 4096) into a 100 ms period
 * and its quota; --pids-max N (1..2^22) or "none" (-1). false on junk. */
struct atr_cg_limits;
bool cli_parse_cpu_max(const char *s, struct atr_cg_limits *l);
bool cli_parse_pids_max(const char *s, int64_t *out);
/* Runs handler on SIGINT, SIGTERM and SIGHUP. */
void cli_on_stop_signals(void (*handler)(int));
/* Removes temporaries of atomic outputs on SIGINT/SIGTERM, then exits 130/143. */
void cli_install_signal_cleanup(void);

/* Modes implemented in their own files (cmd-sim-serve.c, cmd-sim-calibrate.c,
 * cmd-replay-llm.c). */
int cmd_sim_serve(int argc, char **argv);
int cmd_sim_calibrate(int argc, char **argv);
int cmd_replay_llm(int argc, char **argv);
int cmd_replay_agent(int argc, char **argv);
extern const char cmd_sim_serve_help[];
extern const char cmd_sim_calibrate_help[];
extern const char cmd_replay_llm_help[];
extern const char cmd_replay_agent_help[];
/* `atr bench run` (cmd-bench-run.c), dispatched by cmd-bench.c. */
int cmd_bench_run(int argc, char **argv);
extern const char cmd_bench_run_help[];
/* `atr bench history` (cmd-bench-history.c), dispatched by cmd-bench.c. */
int cmd_bench_history(int argc, char **argv);
extern const char cmd_bench_history_help[];

#endif
