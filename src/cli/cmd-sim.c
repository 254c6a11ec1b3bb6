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
    "                            tokens, decoding sequences, KV blocks over time)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block\n"
    SCHED_HELP
    "\n"
    "GPUs: h100 h200 a100-80g l4 rtx3090 rtx4090. Models: llama-3.1-8b\n"
    "llama-3.2-1b llama-3.2-3b llama-3-70b qwen3-4b qwen3-4b-awq qwen3-8b\n"
    "qwen1.5-0.5b.\n";

struct sim_args {
    const char *profile, *from, *iterations_out;
    unsigned tp;
    struct atr_engine_cfg cfg;
    struct sched_opts sched;
    struct llm_report_opts report;
};

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

static void print_engine(const struct atr_profile *p, const struct atr_engine *e)
{
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    printf("engine (%s/%s, tp %u): %llu iterations, mean batch %.1f, prefix cache hit "
           "rate %.1f%%, KV peak %u of %u blocks (mean %.0f), %llu preemptions, "
           "%llu evictions\n",
           p->gpu->name, p->model->name, p->tp, (unsigned long long)st.iterations,
           st.batch_mean, 100 * st.prefix_hit_rate, st.kv_blocks_peak, st.kv_blocks_total,
           st.kv_blocks_mean, (unsigned long long)st.preemptions,
           (unsigned long long)st.evictions);
}

/* The result's "engine" member: what the engine did over the run. The
 * batch histogram is trimmed after its last non-zero bucket. */
static void engine_json(struct atr_buf *b, const struct atr_profile *p, const struct atr_engine *e)
{
    struct atr_engine_stats st;
    atr_engine_get_stats(e, &st);
    atr_buf_printf(b, "\"engine\": {\"profile\": \"%s/%s\", \"tp\": %u, \"iterations\": %llu, "
                   "\"mean_batch\": ", p->gpu->name, p->model->name, p->tp,
                   (unsigned long long)st.iterations);
    atr_llm_put_pyfloat(b, st.batch_mean);
    atr_buf_puts(b, ", \"prefix_cache_hit_rate\": ");
    atr_llm_put_pyfloat(b, st.prefix_hit_rate);
    atr_buf_printf(b, ", \"kv_blocks_total\": %u, \"kv_blocks_peak\": %u, \"kv_blocks_mean\": ",
                   st.kv_blocks_total, st.kv_blocks_peak);
    atr_llm_put_pyfloat(b, st.kv_blocks_mean);
    atr_buf_printf(b, ", \"preemptions\": %llu, \"evictions\": %llu, \"prefill_tokens\": %llu, "
                   "\"decode_tokens\": %llu, \"busy_s\": ", (unsigned long long)st.preemptions,
                   (unsigned long long)st.evictions, (unsigned long long)st.prefill_tokens,
                   (unsigned long long)st.decode_tokens);
    atr_llm_put_pyfloat(b, st.busy_seconds);
    unsigned last = 0;
    for (unsigned i = 0; i < st.batch_hist_len; i++)
        if (st.batch_hist[i])
            last = i;
    atr_buf_puts(b, ", \"batch_histogram\": [");
    for (unsigned i = 0; i <= last && st.batch_hist_len; i++)
        atr_buf_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)st.batch_hist[i]);
    atr_buf_puts(b, "]}");
}

static int report(const struct sim_args *a, const struct atr_profile *p,
                  const struct atr_engine *e, const struct atr_llm_record *recs, size_t n,
                  struct atr_error *err)
{
    char date[32];
    llm_report_date(date);
    struct atr_buf engine = ATR_BUF_INIT;
    engine_json(&engine, p, e);
    struct atr_llm_bench_config cfg = {
        .extra_members = engine.data,
        .date = date, .backend = "sim", .model_id = p->model->hf_name,
        .num_prompts = (int64_t)n, .request_rate = atr_schedule_rate(&a->sched.schedule),
        .burstiness = a->sched.schedule.burstiness,
        .max_concurrency = a->sched.max_concurrency,
    };
    int rc = llm_report_write(&a->report, recs, n, &cfg, err);
    atr_buf_release(&engine);
    if (rc == 0 && !a->report.quiet)
        print_engine(p, e);
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
        SCHED_LONG_OPTIONS,
        {"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c, taken;
    atr_engine_cfg_defaults(&a->cfg);
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
    a->tp = 1;
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
        case 'O': a->report.requests_out = optarg; break;
        case 'G':
            if (!llm_report_parse_goodput(&a->report, optarg))
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

static int write_iterations(const char *path, const struct atr_buf *b, struct atr_error *err)
{
    struct atr_output *o = atr_output_open(path, err);
    if (!o)
        return -1;
    if (atr_output_write(o, b->data ? b->data : "", b->len, err) < 0) {
        atr_output_abort(o);
        return -1;
    }
    return atr_output_commit(o, err);
}

/* Loads the workload, runs it through a fresh engine, reports. */
static int simulate(const struct sim_args *a, char *const *paths, size_t n_paths,
                    const struct atr_profile *p, struct atr_error *err)
{
    struct atr_engine_cfg cfg = a->cfg;
    cfg.iter_seconds = profile_cost;
    cfg.cost_ctx = (void *)p;
    cfg.kv_capacity_tokens = p->kv_capacity_tokens;
    struct atr_buf iters = ATR_BUF_INIT;
    if (a->iterations_out) {
        cfg.on_iter = on_iter;
        cfg.iter_ctx = &iters;
    }
    struct atr_workload w = ATR_WORKLOAD_INIT;
    struct atr_llm_record *recs = NULL;
    double *starts = NULL;
    size_t n = 0;
    struct atr_engine *e = atr_engine_new(&cfg, err);
    int rc = e ? atr_workload_load(&w, paths, n_paths, a->from, cfg.block_size, err) : -1;
    if (rc == 0) {
        starts = calloc(w.n_sessions ? w.n_sessions : 1, sizeof *starts);
        if (!starts)
            abort();
        rc = atr_schedule_starts(&a->sched.schedule, &w, starts, err);
    }
    if (rc == 0) {
        struct atr_sim_run_cfg rc_cfg = { &w, starts, &a->sched.schedule,
                                          a->sched.max_concurrency };
        rc = atr_sim_run(e, &rc_cfg, &recs, &n, err);
    }
    if (rc == 0)
        rc = report(a, p, e, recs, n, err);
    if (rc == 0 && a->iterations_out)
        rc = write_iterations(a->iterations_out, &iters, err);
    atr_buf_release(&iters);
    free(recs);
    free(starts);
    atr_workload_release(&w);
    atr_engine_free(e);
    return rc;
}

int cmd_sim_workload(const char *profile, unsigned tp, const struct sched_opts *sched,
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
    struct atr_error err;
    struct atr_profile p;
    if (atr_profile_find(profile, tp, &p, &err) < 0 ||
        simulate(&a, paths, n_paths, &p, &err) < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
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
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    struct atr_profile p;
    if (atr_profile_find(a.profile, a.tp, &p, &err) < 0)
        return cli_fail_err(&err);
    if (simulate(&a, argv + optind, (size_t)(argc - optind), &p, &err) < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
}

static const struct atr_cmd_mode modes[] = { {"serve", cmd_sim_serve_help}, {NULL, NULL} };

const struct atr_cmd cmd_sim_entry = {
    "sim", "`sim run`: llm steps through the serving-engine model in virtual time; "
    "`sim serve`: the same engine behind an OpenAI-compatible server", help, run, modes,
};
