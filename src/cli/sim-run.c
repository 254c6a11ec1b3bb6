/* sim-run.c - `atr sim run`'s arguments and run, shared with `atr compare
 * --run` (see sim-run.h). */
#include "cli/sim-run.h"

#include <string.h>

#include "cli/cmd.h"
#include "cli/llm-run.h"
#include "exp/exp.h"

/* --policy a,b,c: the names are checked with the options (sim_run_args_check). */
static bool opt_policies(void *base, const char *list, const char *cmd)
{
    struct sim_run_args *a = base;
    return llm_policy_list_parse(&a->policies, list, cmd) == EXIT_OK;
}

#define ARGS struct sim_run_args
const struct opt sim_run_options[] = {
    OPT_STRING(ARGS, sim.profile, "profile", 'p'),
    OPT_UINT(ARGS, sim.tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_UINT(ARGS, sim.engine.max_num_seqs, "max-num-seqs", 0, 1, 65536,
             "--max-num-seqs wants 1..65536"),
    OPT_UINT(ARGS, sim.engine.max_num_batched_tokens, "max-num-batched-tokens", 0, 16, 1 << 24,
             "--max-num-batched-tokens wants 16..16777216"),
    OPT_FLAG_OFF(ARGS, sim.engine.prefix_caching, "no-prefix-caching", 0),
    OPT_FLAG(ARGS, sim.engine.skip_oversized, "skip-oversized", 0),
    OPT_DOUBLE(ARGS, sim.engine.retain_s, "kv-retain", 0, 0, OPT_FINITE,
               "--kv-retain wants seconds >= 0"),
    OPT_STRING(ARGS, iterations_out, "iterations-out", 0),
    OPT_CALL("policy", 0, opt_policies, NULL),
    OPT_STRING(ARGS, policy_opts, "policy-options", 0),
    OPT_UINT(ARGS, sim.replicas, "replicas", 0, 1, 256, "--replicas wants 1..256"),
    OPT_ENUM(ARGS, sim.flavour, "engine", 0, OPT_WORDS("vllm", "sglang", "llama.cpp"),
             "--engine wants vllm, sglang or llama.cpp"),
    OPT_UINT(ARGS, sim.engine.slots, "parallel", 0, 1, 256, "--parallel wants 1..256"),
    OPT_UINT(ARGS, sim.ctx_size, "ctx-size", 0, 2, UINT32_MAX / 2,
             "--ctx-size wants 2..2147483647"),
    OPT_UINT(ARGS, sim.cache_ram_mib, "cache-ram", 0, 0, 1 << 24, "--cache-ram wants MiB, 0 off"),
    OPT_DOUBLE(ARGS, sim.engine.slot_similarity, "slot-prompt-similarity", 0, 0, 1,
               "--slot-prompt-similarity wants 0..1"),
    OPT_UINT(ARGS, sim.ubatch, "ubatch-size", 0, 1, 1 << 20, "--ubatch-size wants 1..1048576"),
    OPT_ENUM(ARGS, sim.engine.prefill_first, "scheduler", 0, OPT_WORDS("v1", "v0"),
             "--scheduler wants v1 or v0"),
    OPT_UINT(ARGS, sim.engine.num_scheduler_steps, "num-scheduler-steps", 0, 1, 1024,
             "--num-scheduler-steps wants 1..1024"),
    OPT_FLAG(ARGS, sim.offline, "offline", 0),
    OPT_DOUBLE(ARGS, sim.timeout_s, "timeout", 0, 0, OPT_FINITE, "--timeout wants seconds"),
    OPT_DOUBLE(ARGS, sim.stall_s, "stall-timeout", 0, 0, OPT_FINITE,
               "--stall-timeout wants seconds"),
    OPT_UINT(ARGS, sim.max_model_len, "max-model-len", 0, 2, UINT32_MAX / 2,
             "--max-model-len wants 2..2147483647"),
    OPT_UINT(ARGS, repeats, "repeat", 0, 1, ATR_SERIES_MAX_REPEATS,
             "--repeat wants 1..1000 (runs of each policy)"),
    OPT_FROM(ARGS, from),
    OPT_INCLUDE(ARGS, report, llm_report_opts_group),
    OPT_INCLUDE(ARGS, sched, sched_opts_group),
    OPT_END,
};
#undef ARGS

void sim_run_args_init(struct sim_run_args *a)
{
    memset(a, 0, sizeof *a);
    atr_sim_target_defaults(&a->sim);
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
}

int sim_run_args_check(struct sim_run_args *a, int argc, const char *cmd)
{
    if (!a->sim.profile)
        return cli_usage(cmd, "missing --profile GPU/MODEL");
    if (a->first_arg >= argc)
        return cli_usage(cmd, "missing TRACE");
    /* vLLM V0 ran multi-step scheduling without chunked prefill */
    if (a->sim.engine.num_scheduler_steps > 1 && !a->sim.engine.prefill_first)
        return cli_usage(cmd, "--num-scheduler-steps needs --scheduler v0 (vLLM V0's multi-step "
                         "scheduling, without chunked prefill)");
    if (a->sim.flavour == 2 && (a->sim.engine.prefill_first || a->sim.tp > 1))
        return cli_usage(cmd, "--engine llama.cpp takes neither --scheduler v0 nor --tp "
                         "(its slots batch continuously, on one device)");
    int rc = cli_check_profile(cmd, a->sim.profile, a->sim.tp);
    if (rc == EXIT_OK)
        rc = cli_check_policies(cmd, a->policies.names, a->policies.n, a->policy_opts);
    return rc != EXIT_OK ? rc : sched_opts_finish(&a->sched, cmd);
}

void sim_run_args_release(struct sim_run_args *a)
{
    llm_policy_list_release(&a->policies);
}

int sim_run_exec(const struct sim_run_args *a, int argc, char **argv)
{
    struct atr_target t;
    struct atr_error err;
    if (atr_sim_target_make(&t, &a->sim, &err) < 0)
        return cli_fail_err(&err);
    struct llm_run r = {
        .from = a->from, .policies = &a->policies, .policy_opts = a->policy_opts,
        .sched = &a->sched, .report = &a->report, .iterations_out = a->iterations_out,
        .repeats = a->repeats,
    };
    int rc = llm_run(&r, &t, argv + a->first_arg, (size_t)(argc - a->first_arg));
    atr_target_release(&t);
    return rc;
}
