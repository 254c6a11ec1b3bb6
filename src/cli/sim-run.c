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
    OPT_STRING(ARGS, profile, "profile", 'p'),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_UINT(ARGS, engine.max_num_seqs, "max-num-seqs", 0, 1, 65536,
             "--max-num-seqs wants 1..65536"),
    OPT_UINT(ARGS, engine.max_num_batched_tokens, "max-num-batched-tokens", 0, 16, 1 << 24,
             "--max-num-batched-tokens wants 16..16777216"),
    OPT_FLAG_OFF(ARGS, engine.prefix_caching, "no-prefix-caching", 0),
    OPT_FLAG(ARGS, engine.skip_oversized, "skip-oversized", 0),
    OPT_STRING(ARGS, iterations_out, "iterations-out", 0),
    OPT_CALL("policy", 0, opt_policies, NULL),
    OPT_STRING(ARGS, policy_opts, "policy-options", 0),
    OPT_UINT(ARGS, replicas, "replicas", 0, 1, 256, "--replicas wants 1..256"),
    OPT_ENUM(ARGS, flavour, "engine", 0, OPT_WORDS("vllm", "sglang", "llama.cpp"),
             "--engine wants vllm, sglang or llama.cpp"),
    OPT_UINT(ARGS, engine.slots, "parallel", 0, 1, 256, "--parallel wants 1..256"),
    OPT_UINT(ARGS, ctx_size, "ctx-size", 0, 2, UINT32_MAX / 2,
             "--ctx-size wants 2..2147483647"),
    OPT_UINT(ARGS, cache_ram_mib, "cache-ram", 0, 0, 1 << 24, "--cache-ram wants MiB, 0 off"),
    OPT_DOUBLE(ARGS, engine.slot_similarity, "slot-prompt-similarity", 0, 0, 1,
               "--slot-prompt-similarity wants 0..1"),
    OPT_UINT(ARGS, ubatch, "ubatch-size", 0, 1, 1 << 20, "--ubatch-size wants 1..1048576"),
    OPT_ENUM(ARGS, engine.prefill_first, "scheduler", 0, OPT_WORDS("v1", "v0"),
             "--scheduler wants v1 or v0"),
    OPT_UINT(ARGS, engine.num_scheduler_steps, "num-scheduler-steps", 0, 1, 1024,
             "--num-scheduler-steps wants 1..1024"),
    OPT_FLAG(ARGS, offline, "offline", 0),
    OPT_DOUBLE(ARGS, timeout_s, "timeout", 0, 0, OPT_FINITE, "--timeout wants seconds"),
    OPT_DOUBLE(ARGS, stall_s, "stall-timeout", 0, 0, OPT_FINITE,
               "--stall-timeout wants seconds"),
    OPT_UINT(ARGS, max_model_len, "max-model-len", 0, 2, UINT32_MAX / 2,
             "--max-model-len wants 2..2147483647"),
    OPT_FROM(ARGS, from),
    OPT_INCLUDE(ARGS, report, llm_report_opts_group),
    OPT_INCLUDE(ARGS, sched, sched_opts_group),
    OPT_END,
};
#undef ARGS

void sim_run_args_init(struct sim_run_args *a)
{
    memset(a, 0, sizeof *a);
    atr_engine_cfg_defaults(&a->engine);
    /* unset: the engine's 8192, or the model's length with --scheduler v0 */
    a->engine.max_num_batched_tokens = 0;
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
    a->tp = 1;
    a->replicas = 1;
    a->timeout_s = 600;          /* replay llm's client */
    a->engine.slots = 4;         /* llama.cpp: llama-server's -np auto */
    a->engine.slot_similarity = 0.1;
    a->cache_ram_mib = 8192;
    a->ubatch = 512;
    a->stall_s = 60;
}

int sim_run_args_check(struct sim_run_args *a, int argc, const char *cmd)
{
    if (!a->profile)
        return cli_usage(cmd, "missing --profile GPU/MODEL");
    if (a->first_arg >= argc)
        return cli_usage(cmd, "missing TRACE");
    /* vLLM V0 ran multi-step scheduling without chunked prefill */
    if (a->engine.num_scheduler_steps > 1 && !a->engine.prefill_first)
        return cli_usage(cmd, "--num-scheduler-steps needs --scheduler v0 (vLLM V0's multi-step "
                         "scheduling, without chunked prefill)");
    if (a->flavour == 2 && (a->engine.prefill_first || a->tp > 1))
        return cli_usage(cmd, "--engine llama.cpp takes neither --scheduler v0 nor --tp "
                         "(its slots batch continuously, on one device)");
    int rc = cli_check_profile(cmd, a->profile, a->tp);
    if (rc == EXIT_OK)
        rc = cli_check_policies(cmd, a->policies.names, a->policies.n, a->policy_opts);
    return rc != EXIT_OK ? rc : sched_opts_finish(&a->sched, cmd);
}

void sim_run_args_release(struct sim_run_args *a)
{
    llm_policy_list_release(&a->policies);
}

/* llama.cpp: the slots share --ctx-size (the model's length unless
 * given); the logical batch is 2048 unless --max-num-batched-tokens says;
 * --cache-ram MiB becomes tokens of KV, at least the context, as
 * llama-server's prompt cache raises its token limit to what fits. */
static void llama_target(const struct sim_run_args *a, struct atr_target *t)
{
    uint64_t ctx = a->ctx_size ? a->ctx_size : t->profile.model->max_model_len;
    t->engine.kv_capacity_tokens = ctx;
    if (!t->engine.max_num_batched_tokens)
        t->engine.max_num_batched_tokens = 2048;
    double ram = (double)a->cache_ram_mib * 1048576.0 / t->profile.kv_bytes_per_token;
    t->engine.prompt_cache_tokens = !a->cache_ram_mib ? 0 : ram > ctx ? (uint64_t)ram : ctx;
    t->profile.ubatch = a->ubatch;
}

int sim_run_exec(const struct sim_run_args *a, int argc, char **argv, bool table_only)
{
    struct atr_target t;
    struct atr_error err;
    if (atr_target_sim(&t, a->profile, a->tp, &err) < 0)
        return cli_fail_err(&err);
    t.engine = a->engine;
    t.engine.longest_prefix_first = a->flavour == 1;
    t.engine.radix_cache = a->flavour == 1;   /* SGLang's radix cache */
    /* the flavour's CPU terms (docs/sim.md, "Cost of one iteration") */
    atr_profile_set_flavour(&t.profile, (const char *[]){"vllm", "sglang", "llama.cpp"}[a->flavour]);
    if (a->flavour == 2)
        llama_target(a, &t);
    else
        t.engine.slots = 0;
    if (a->offline)             /* as vLLM's LLM class: no HTTP server */
        atr_profile_set_offline(&t.profile);
    t.client.timeout_s = a->timeout_s;
    t.client.stall_timeout_s = a->stall_s;
    t.max_model_len = a->max_model_len;
    if (t.engine.prefill_first) {
        /* vLLM V0 without chunked prefill: a prompt runs whole. Unless
         * told, the budget is the model's length (vLLM's least then); a
         * smaller one given is kept (a server started with a shorter
         * --max-model-len, or SGLang's prefill cap), and a request longer
         * than it can never run: an error, or rejected with
         * --skip-oversized */
        t.engine.chunked_prefill = false;
        if (!t.engine.max_num_batched_tokens)
            t.engine.max_num_batched_tokens = a->max_model_len ? a->max_model_len
                                                               : t.profile.model->max_model_len;
    }
    t.replicas = a->replicas;
    struct llm_report_opts report = a->report;
    report.quiet |= table_only;
    struct llm_run r = {
        .from = a->from, .policies = &a->policies, .policy_opts = a->policy_opts,
        .sched = &a->sched, .report = &report, .iterations_out = a->iterations_out,
        .table_only = table_only,
    };
    int rc = llm_run(&r, &t, argv + a->first_arg, (size_t)(argc - a->first_arg));
    atr_target_release(&t);
    return rc;
}
