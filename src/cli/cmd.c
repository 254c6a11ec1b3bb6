/* cmd.c - the table of commands; adding a command is one file and one line. */
#include <string.h>

#include "cli/cmd.h"

extern const struct atr_cmd cmd_convert_entry;
extern const struct atr_cmd cmd_fetch_entry;
extern const struct atr_cmd cmd_validate_entry;
extern const struct atr_cmd cmd_stats_entry;
extern const struct atr_cmd cmd_gen_entry;
extern const struct atr_cmd cmd_sample_entry;
extern const struct atr_cmd cmd_replay_entry;
extern const struct atr_cmd cmd_sim_entry;
extern const struct atr_cmd cmd_compare_entry;
extern const struct atr_cmd cmd_router_entry;
extern const struct atr_cmd cmd_bench_entry;
extern const struct atr_cmd cmd_proxy_entry;
extern const struct atr_cmd cmd_report_entry;
extern const struct atr_cmd cmd_sweep_entry;
extern const struct atr_cmd cmd_experiment_entry;
extern const struct atr_cmd cmd_dashboard_entry;

const struct atr_cmd *const atr_cmds[] = {
    &cmd_convert_entry,
    &cmd_fetch_entry,
    &cmd_validate_entry,
    &cmd_stats_entry,
    &cmd_gen_entry,
    &cmd_sample_entry,
    &cmd_replay_entry,
    &cmd_sim_entry,
    &cmd_compare_entry,
    &cmd_router_entry,
    &cmd_bench_entry,
    &cmd_proxy_entry,
    &cmd_report_entry,
    &cmd_sweep_entry,
    &cmd_experiment_entry,
    &cmd_dashboard_entry,
    NULL,
};

const struct atr_cmd *atr_cmd_find(const char *name)
{
    for (size_t i = 0; atr_cmds[i]; i++)
        if (strcmp(atr_cmds[i]->name, name) == 0)
            return atr_cmds[i];
    return NULL;
}
