/* sim-run.h - the arguments of `atr sim run`, which `atr compare --run`
 * takes too (its option table): the simulator target (profile, tp, engine limits, replicas,
 * flavour: exp/sim-target.h), the policies, repeats, the schedule and
 * the outputs, as one option group, and the run itself (cli/llm-run.h). */
#ifndef ATR_CLI_SIM_RUN_H
#define ATR_CLI_SIM_RUN_H

#include "cli/llm-report.h"
#include "cli/opts.h"
#include "cli/sched-opts.h"
#include "exp/sim-target.h"

struct sim_run_args {
    struct atr_sim_target_cfg sim;   /* --profile, --tp, the engine, ... */
    const char *from, *iterations_out, *policy_opts;
    struct llm_policy_list policies;
    unsigned repeats;            /* --repeat N; 0: not given */
    struct sched_opts sched;
    struct llm_report_opts report;
    int first_arg;               /* argv[first_arg..argc): the TRACEs */
};

/* Every option of `atr sim run`: OPT_INCLUDE(T, F, sim_run_options). */
extern const struct opt sim_run_options[];

/* Sets the defaults; call before parsing. */
void sim_run_args_init(struct sim_run_args *a);
/* After parsing, before any work: --profile given and known (with --tp),
 * a TRACE, policies and their options that can be made, a sound schedule.
 * EXIT_OK or a usage error of cmd. */
int sim_run_args_check(struct sim_run_args *a, int argc, const char *cmd);
void sim_run_args_release(struct sim_run_args *a);

/* Runs the TRACEs argv[a->first_arg..argc) on the simulator under each
 * policy (cli/llm-run.h prints). Exit status. */
int sim_run_exec(const struct sim_run_args *a, int argc, char **argv);

#endif
