/* cmd-sim.c - `atr sim run`: the llm steps of traces through the engine
 * model in virtual time, reported as `vllm bench serve` reports a run;
 * dispatches `atr sim serve` (cmd-sim-serve.c). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "cli/llm-report.h"
#include "cli/sched-opts.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/run.h"
#include "sim/stats.h"
#include "policy/policy.h"
#include "report/compare.h"
#include "trace/reader.h"
#include "util/output.h"

static const char help[] =
    "usage: atr sim run [OPTIONS] TRACE... --profile GPU/MODEL\n"
    "       atr sim serve [OPTIONS] (--profile GPU/MODEL | --ttft MS --itl MS)\n"
    "\n"
    "`sim run` replays the llm steps of traces through atr's serving-engine\n"
    "model in virtual time (docs/sim.md, docs/sim-engine.md): continuous\n"
    "batching, chunked prefill, paged KV cache, a prefix cache over the steps'\n"
    "hash_ids with LRU eviction, preemption, and a roofline cost per\n"
    "iteration. It prints the result block `vllm bench serve` prints, then\n"
    "the engine's own figures, and writes the same files as `atr replay llm`\n"
    "(the result JSON also gets an \"engine\" object under \"atr\").\n"
    "`sim serve` runs the same engine in real time behind an OpenAI-compatible\n"
    "HTTP server (see `atr sim serve --help`).\n"
    "\n"
    "options of sim run:\n"
    "  -p, --profile GPU/MODEL   e.g. h100/llama-3.1-8b (required)\n"
    "      --tp N                tensor parallel degree (default 1)\n"
    "      --max-num-seqs N      default 256\n"
    "      --max-num-batched-tokens N   default 8192\n"
    "      --no-prefix-caching   disable the prefix cache\n"
    "      --save-result FILE    the result JSON (vLLM's --save-result keys + \"atr\")\n"
    "      --requests-out FILE   one line per request\n"
    "      --goodput SLOS        e.g. ttft:500 tpot:50 e2el:10000 (milliseconds)\n"
    "      --iterations-out FILE one line per engine iteration (batch, prefill\n"
    "                            tokens, decoding sequences, KV blocks over time;\n"
    "                            one policy, one replica)\n"
    "      --policy P[,P...]     run under each runtime policy in turn: naive,\n"
    "                            prefix-cache, prefix-route, compaction, max-tokens,\n"
    "                            learned (docs/policies.md); with several, output\n"
    "                            files get .P before their extension and a table\n"
    "                            compares them (as atr compare)\n"
    "      --policy-options K=V[,K=V...]   policy options; NAME.K=V for one policy\n"
    "                            of a list (e.g. compaction.budget=8192)\n"
    "      --replicas N          engine replicas the policy routes over (default 1)\n"
    "      --engine vllm|sglang  scheduler flavour: FCFS (vllm, default) or SGLang's\n"
    "                            longest-prefix-first\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block\n"
    SCHED_HELP
    "\n"
    "GPUs: h100 h200 a100-80g l4 rtx3090 rtx4090. Models: llama-3.1-8b\n"
    "llama-3.2-1b llama-3.2-3b llama-3-70b qwen3-4b qwen3-4b-awq qwen3-8b\n"
    "qwen1.5-0.5b.\n";

struct sim_args {
    const char *profile, *from, *iterations_out, *policy_opts;
    struct llm_policy_list policies;
    unsigned tp, replicas;
    struct atr_engine_cfg cfg;
    struct sched_opts sched;
    struct llm_report_opts report;
    struct atr_compare *compare; /* several policies: the closing table */
    bool table_only;             /* atr compare --run: only that table */
};

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

static void print_engine(const struct atr_profile *p, unsigned replicas,
                         const struct atr_engine_stats *st)
{
    char rep[32] = "";
    if (replicas > 1)
        snprintf(rep, sizeof rep, ", replicas %u", replicas);
    printf("engine (%s/%s, tp %u%s): %llu iterations, mean batch %.1f, prefix cache hit "
           "rate %.1f%%, KV peak %u of %u blocks (mean %.0f), %llu preemptions, "
           "%llu evictions\n",
           p->gpu->name, p->model->name, p->tp, rep, (unsigned long long)st->iterations,
           st->batch_mean,
           100 * st->prefix_hit_rate, st->kv_blocks_peak, st->kv_blocks_total,
           st->kv_blocks_mean, (unsigned long long)st->preemptions,
           (unsigned long long)st->evictions);
}

static int report(const struct sim_args *a, const struct atr_profile *p,
                  struct atr_engine *const *engines, const struct atr_policy *policy,
                  const struct atr_llm_record *recs, size_t n, struct atr_error *err)
{
    char date[32], target[160];
    llm_report_date(date);
    struct atr_engine_stats st;
    atr_sim_stats_sum(engines, a->replicas, &st);
    /* The target names what makes runs comparable: profile, tensor
     * parallelism, replicas and scheduler flavour (atr compare groups by it). */
    int len = snprintf(target, sizeof target, "sim:%s/%s", p->gpu->name, p->model->name);
    if (p->tp > 1)
        len += snprintf(target + len, sizeof target - (size_t)len, " tp=%u", p->tp);
    if (a->replicas > 1)
        len += snprintf(target + len, sizeof target - (size_t)len, " x%u", a->replicas);
    if (a->cfg.longest_prefix_first)
        snprintf(target + len, sizeof target - (size_t)len, " sglang");
    struct atr_buf extra = ATR_BUF_INIT;
    atr_buf_printf(&extra, "\"target\": \"%s\", ", target);
    if (policy) {
        atr_policy_stats_json(&extra, policy);
        atr_buf_puts(&extra, ", ");
    }
    atr_sim_stats_json(&extra, p, a->replicas, a->cfg.longest_prefix_first ? "sglang" : "vllm",
                       &st);
    struct atr_llm_bench_config cfg = {
        .extra_members = extra.data,
        .date = date, .backend = "sim", .model_id = p->model->hf_name,
        .num_prompts = (int64_t)n, .request_rate = atr_schedule_rate(&a->sched.schedule),
        .burstiness = a->sched.schedule.burstiness,
        .max_concurrency = a->sched.max_concurrency,
    };
    struct llm_report_opts ro = a->report;
    bool several = a->policies.n > 1;
    if (several) {
        ro.save_result = llm_report_policy_path(a->report.save_result, atr_policy_name(policy));
        ro.requests_out = llm_report_policy_path(a->report.requests_out, atr_policy_name(policy));
        if (!ro.quiet)
            printf("\n== policy %s\n", atr_policy_name(policy));
    }
    struct atr_buf json = ATR_BUF_INIT;
    if (a->compare)
        ro.result_json = &json;
    int rc = llm_report_write(&ro, recs, n, &cfg, err);
    if (rc == 0 && !ro.quiet)
        print_engine(p, a->replicas, &st);
    if (rc == 0 && a->compare)
        rc = atr_compare_add_json(a->compare, policy ? atr_policy_name(policy) : "recorded",
                                  json.data, json.len, err);
    atr_buf_release(&json);
    if (several) {
        free((char *)ro.save_result);
        free((char *)ro.requests_out);
    }
    atr_sim_stats_release(&st);
    atr_buf_release(&extra);
    return rc;
}

/* --policy a,b,c; sim run checks the names before it starts. */
static int parse_policies(const char *list, struct sim_args *a)
{
    int rc = llm_policy_list_parse(&a->policies, list, "sim run");
    for (size_t k = 0; rc == EXIT_OK && k < a->policies.n; k++) {
        bool known = false;
        for (size_t i = 0; atr_policy_names[i]; i++)
            known |= strcmp(atr_policy_names[i], a->policies.names[k]) == 0;
        if (!known)
            rc = cli_usage("sim run", "unknown policy '%s' (naive, prefix-cache, prefix-route, "
                           "compaction, max-tokens, learned)", a->policies.names[k]);
    }
    return rc;
}

static int parse_args(int argc, char **argv, struct sim_args *a)
{
    static const struct option longs[] = {
        {"profile", required_argument, NULL, 'p'}, {"tp", required_argument, NULL, 'T'},
        {"max-num-seqs", required_argument, NULL, 'S'},
        {"max-num-batched-tokens", required_argument, NULL, 'B'},
        {"no-prefix-caching", no_argument, NULL, 'N'},
        {"save-result", required_argument, NULL, 'R'},
        {"requests-out", required_argument, NULL, 'O'}, {"from", required_argument, NULL, 'f'},
        {"goodput", required_argument, NULL, 'G'},
        {"iterations-out", required_argument, NULL, 'I'},
        {"policy", required_argument, NULL, 'P'},
        {"policy-options", required_argument, NULL, 'o'},
        {"replicas", required_argument, NULL, 'n'},
        {"engine", required_argument, NULL, 'E'},
        SCHED_LONG_OPTIONS,
        {"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c, taken;
    atr_engine_cfg_defaults(&a->cfg);
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
    a->tp = 1;
    a->replicas = 1;
    while ((c = getopt_long(argc, argv, "p:f:q", longs, NULL)) != -1) {
        if ((taken = sched_opts_parse(&a->sched, c, optarg, "sim run")) != 0) {
            if (taken < 0)
                return -taken;
            continue;
        }
        switch (c) {
        case 'p': a->profile = optarg; break;
        case 'T':
            if (!cli_parse_uint(optarg, 1, 64, &v))
                return cli_usage("sim run", "--tp wants 1..64");
            a->tp = (unsigned)v;
            break;
        case 'S':
            if (!cli_parse_uint(optarg, 1, 65536, &v))
                return cli_usage("sim run", "--max-num-seqs wants 1..65536");
            a->cfg.max_num_seqs = (unsigned)v;
            break;
        case 'B':
            if (!cli_parse_uint(optarg, 16, 1 << 24, &v))
                return cli_usage("sim run", "--max-num-batched-tokens wants 16..16777216");
            a->cfg.max_num_batched_tokens = (unsigned)v;
            break;
        case 'N': a->cfg.prefix_caching = false; break;
        case 'R': a->report.save_result = optarg; break;
        case 'I': a->iterations_out = optarg; break;
        case 'P':
            if (parse_policies(optarg, a) != EXIT_OK)
                return EXIT_USAGE;
            break;
        case 'o': a->policy_opts = optarg; break;
        case 'n':
            if (!cli_parse_uint(optarg, 1, 256, &v))
                return cli_usage("sim run", "--replicas wants 1..256");
            a->replicas = (unsigned)v;
            break;
        case 'E':
            if (strcmp(optarg, "vllm") == 0)
                a->cfg.longest_prefix_first = false;
            else if (strcmp(optarg, "sglang") == 0)
                a->cfg.longest_prefix_first = true;
            else
                return cli_usage("sim run", "--engine wants vllm or sglang");
            break;
        case 'O': a->report.requests_out = optarg; break;
        case 'G':
            if (!llm_report_goodput_opt(&a->report, argc, argv))
                return cli_usage("sim run", "--goodput wants ttft:MS tpot:MS e2el:MS");
            break;
        case 'f':
            if (!atr_format_find(optarg))
                return cli_usage("sim run", "unknown format '%s'", optarg);
            a->from = optarg;
            break;
        case 'q': a->report.quiet = true; break;
        default: return cli_usage("sim run", "unknown option");
        }
    }
    if (!a->profile)
        return cli_usage("sim run", "missing --profile GPU/MODEL");
    if (optind >= argc)
        return cli_usage("sim run", "missing TRACE");
    return sched_opts_finish(&a->sched, "sim run");
}

/* One --iterations-out line per engine iteration: the batch over time. */
static void on_iter(void *ctx, const struct atr_iter_info *it)
{
    struct atr_buf *b = ctx;
    atr_buf_puts(b, "{\"i\": ");
    atr_buf_put_u64(b, it->index);
    atr_buf_puts(b, ", \"start_s\": ");
    atr_llm_put_pyfloat(b, it->start);
    atr_buf_puts(b, ", \"dur_ms\": ");
    atr_llm_put_pyfloat(b, it->seconds * 1000);
    atr_buf_printf(b, ", \"seqs\": %u, \"prefill_tokens\": %llu, \"decode_seqs\": %llu, "
                   "\"kv_blocks\": %u}\n", it->num_seqs,
                   (unsigned long long)it->work.prefill_tokens,
                   (unsigned long long)it->work.decode_seqs, it->kv_blocks_used);
}

/* One run of the workload under policy `name` (NULL: as recorded) on
 * fresh engine replicas. */
static int run_policy(const struct sim_args *a, const struct atr_profile *p,
                      const struct atr_workload *w, const double *starts, const char *name,
                      struct atr_error *err)
{
    struct atr_engine_cfg cfg = a->cfg;
    cfg.iter_seconds = profile_cost;
    cfg.cost_ctx = (void *)p;
    cfg.kv_capacity_tokens = p->kv_capacity_tokens;
    struct atr_buf iters = ATR_BUF_INIT;
    if (a->iterations_out && a->policies.n <= 1 && a->replicas == 1) {
        cfg.on_iter = on_iter;
        cfg.iter_ctx = &iters;
    }
    struct atr_engine **engines = calloc(a->replicas, sizeof *engines);
    if (!engines)
        abort();
    int rc = 0;
    for (unsigned i = 0; i < a->replicas && rc == 0; i++)
        rc = (engines[i] = atr_engine_new(&cfg, err)) ? 0 : -1;
    struct atr_policy *policy = NULL;
    if (rc == 0 && name) {
        struct atr_policy_cfg pc = { .n_replicas = a->replicas, .block_size = w->block_size,
                                     .options = a->policy_opts, .seed = a->sched.schedule.seed };
        rc = (policy = atr_policy_new(name, &pc, err)) ? 0 : -1;
    }
    struct atr_llm_record *recs = NULL;
    size_t n = 0;
    if (rc == 0) {
        struct atr_sim_run_cfg rcfg = { w, starts, &a->sched.schedule, a->sched.max_concurrency,
                                        policy };
        rc = atr_sim_run(engines, a->replicas, &rcfg, &recs, &n, err);
    }
    if (rc == 0)
        rc = report(a, p, engines, policy, recs, n, err);
    if (rc == 0 && cfg.on_iter)
        rc = atr_output_write_file(a->iterations_out, iters.data, iters.len, err);
    atr_buf_release(&iters);
    free(recs);
    atr_policy_free(policy);
    for (unsigned i = 0; i < a->replicas; i++)
        atr_engine_free(engines[i]);
    free(engines);
    return rc;
}

/* Loads the workload and the schedule once, then runs each policy. */
static int simulate(struct sim_args *a, char *const *paths, size_t n_paths,
                    const struct atr_profile *p, struct atr_error *err)
{
    bool table = a->table_only || (a->policies.n > 1 && !a->report.quiet);
    if (table && !(a->compare = atr_compare_new()))
        abort();
    struct atr_workload w = ATR_WORKLOAD_INIT;
    double *starts = NULL;
    int rc = atr_workload_load(&w, paths, n_paths, a->from, a->cfg.block_size, err);
    if (rc == 0) {
        starts = calloc(w.n_sessions ? w.n_sessions : 1, sizeof *starts);
        if (!starts)
            abort();
        rc = atr_schedule_starts(&a->sched.schedule, &w, starts, err);
    }
    if (rc == 0 && a->policies.n == 0)
        rc = run_policy(a, p, &w, starts, NULL, err);
    for (size_t i = 0; rc == 0 && i < a->policies.n; i++)
        rc = run_policy(a, p, &w, starts, a->policies.names[i], err);
    if (rc == 0 && a->compare) {      /* the policies side by side, as atr compare */
        struct atr_buf t = ATR_BUF_INIT;
        atr_compare_write_markdown(&t, a->compare);
        printf("%s%s", a->table_only ? "" : "\n== comparison\n", t.data ? t.data : "");
        atr_buf_release(&t);
    }
    free(starts);
    atr_workload_release(&w);
    atr_compare_free(a->compare);
    a->compare = NULL;
    return rc;
}

int cmd_sim_workload(const char *profile, unsigned tp, const char *policy,
                     const char *policy_opts, const struct sched_opts *sched,
                     const struct llm_report_opts *report, const char *from, char *const *paths,
                     size_t n_paths)
{
    struct sim_args a;
    memset(&a, 0, sizeof a);
    atr_engine_cfg_defaults(&a.cfg);
    a.profile = profile;
    a.tp = tp;
    a.sched = *sched;
    a.report = *report;
    a.from = from;
    a.replicas = 1;
    a.policy_opts = policy_opts;
    int rc = policy ? parse_policies(policy, &a) : EXIT_OK;
    struct atr_error err;
    struct atr_profile p;
    if (rc == EXIT_OK && (atr_profile_find(profile, tp, &p, &err) < 0 ||
                          simulate(&a, paths, n_paths, &p, &err) < 0))
        rc = cli_fail_err(&err);
    llm_policy_list_release(&a.policies);
    return rc;
}

int cmd_sim_compare(int argc, char **argv)
{
    struct sim_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    struct atr_error err;
    struct atr_profile p;
    if (rc == EXIT_OK && atr_profile_find(a.profile, a.tp, &p, &err) < 0)
        rc = cli_fail_err(&err);
    if (rc == EXIT_OK) {
        a.table_only = true;
        a.report.quiet = true;
        rc = simulate(&a, argv + optind, (size_t)(argc - optind), &p, &err) < 0
                 ? cli_fail_err(&err) : EXIT_OK;
    }
    llm_policy_list_release(&a.policies);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return cmd_sim_serve(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return cli_usage("sim", "wants a mode: atr sim run ... or atr sim serve ...");
    argc--;
    argv++;
    struct sim_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    struct atr_error err;
    struct atr_profile p;
    if (rc == EXIT_OK && atr_profile_find(a.profile, a.tp, &p, &err) < 0)
        rc = cli_fail_err(&err);
    if (rc != EXIT_OK) {
        llm_policy_list_release(&a.policies);
        return rc;
    }
    rc = simulate(&a, argv + optind, (size_t)(argc - optind), &p, &err) < 0
             ? cli_fail_err(&err) : EXIT_OK;
    llm_policy_list_release(&a.policies);
    return rc;
}

static const struct atr_cmd_mode modes[] = { {"serve", cmd_sim_serve_help}, {NULL, NULL} };

const struct atr_cmd cmd_sim_entry = {
    "sim", "`sim run`: llm steps through the serving-engine model in virtual time; "
    "`sim serve`: the same engine behind an OpenAI-compatible server", help, run, modes,
};
