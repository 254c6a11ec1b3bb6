/* cmd-replay-llm.c - `atr replay llm`: the llm turns of traces sent to an
 * OpenAI-compatible server (or run through the simulator), reported as
 * `vllm bench serve` reports a run. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cmd.h"
#include "cli/llm-report.h"
#include "cli/llm-run.h"
#include "exp/threads.h"
#include "cli/opts.h"
#include "cli/sched-opts.h"
#include "exp/exp.h"
#include "llm/models.h"
#include "stats/merge.h"
#include "stats/result.h"

const char cmd_replay_llm_help[] =
    "usage: atr replay llm [OPTIONS] TRACE... --target URL|sim:GPU/MODEL\n"
    "       atr replay llm --merge [OPTIONS] REQUESTS.ndjson...\n"
    "\n"
    "Sends the llm steps of traces to an OpenAI-compatible server (vLLM,\n"
    "SGLang, llama.cpp, atr sim serve) as streaming requests, or with\n"
    "--target sim:GPU/MODEL runs them through atr's engine model in virtual\n"
    "time (as `atr sim run`). Prompts of hash-only traces are synthesised per\n"
    "block id, so requests that share hash_ids share byte-identical prefixes;\n"
    "the output length is forced (max_tokens, min_tokens, ignore_eos).\n"
    "Metrics are vLLM's, with output tokens from usage; the result block is\n"
    "the one `vllm bench serve` prints (docs/replay-llm.md).\n"
    "\n"
    "options:\n"
    "  -t, --target T            http://HOST:PORT of the server, several separated\n"
    "                            by commas (replicas --policy routes over), or\n"
    "                            sim:GPU/MODEL\n"
    "  -m, --model NAME          model to ask for (default: the server's first\n"
    "                            model from /v1/models)\n"
    "      --api KIND            completions (default) or chat\n"
    "      --api-key KEY         Bearer token (default: $OPENAI_API_KEY)\n"
    "      --no-force-length     do not send min_tokens / ignore_eos\n"
    "      --warmup N            uncounted requests before the clock starts\n"
    "                            (default 1; 0 to skip)\n"
    "      --timeout S           fail a request after S seconds (default 600; a\n"
    "                            sim: target too, as atr sim run --timeout)\n"
    "      --stall-timeout S     fail a request silent for S seconds (default 60)\n"
    "      --policy P[,P...]     runtime policies: naive, prefix-cache, prefix-route,\n"
    "                            compaction, max-tokens, learned (docs/policies.md).\n"
    "                            Several run one after the other, each with its own\n"
    "                            run word in front of every prompt (no run reuses\n"
    "                            another's cached prefixes); output files get .P\n"
    "                            before their extension, and a table compares them\n"
    "      --policy-options K=V[,K=V...]   its options (e.g. budget=8192)\n"
    "      --repeat N            run each policy N times, interleaved (A, B, A, B,\n"
    "                            ...); repeat r with --seed S + r - 1 (fresh gaps\n"
    "                            of --rate; the traces and their own times are the\n"
    "                            same each time); files get .rK before their\n"
    "                            extension and \"repeat\": K; a table follows with\n"
    "                            per metric the median and 95 % interval, the\n"
    "                            ratio to naive with its interval and a verdict\n"
    "                            (--repeat 1: intervals within each run, over its\n"
    "                            requests; docs/statistics.md). A repeat that fails\n"
    "                            is left out and counted (exit 1 at the end)\n"
    "      --tp N                tensor parallel degree of a sim target\n"
    "      --skip-oversized      sim target: reject a request too long for the KV\n"
    "                            cache as vLLM does instead of stopping the run\n"
    "      --kv-retain SECONDS   sim target: pin a session's KV blocks this long\n"
    "                            after each turn that has one to come (atr sim run\n"
    "                            --help)\n"
    "      --session-hint        a server target: each turn with a turn to come\n"
    "                            sends its session's trace id as the request's\n"
    "                            \"user\" field, which atr sim serve --kv-retain\n"
    "                            reads as the sign to pin its KV blocks\n"
    "      --save-result FILE    the result JSON (vLLM's --save-result keys + \"atr\")\n"
    "      --requests-out FILE   one line per request\n"
    "      --goodput SLOS        e.g. ttft:500 tpot:50 e2el:10000 (milliseconds);\n"
    "                            session:MS: a session's completion time (its\n"
    "                            good sessions and sessions/s in the block)\n"
    "      --percentiles P,P...  percentiles of every latency figure, e.g.\n"
    "                            50,90,95,99,99.9 (default 99; sessions 90,99);\n"
    "                            vLLM's --metric-percentiles is the same option\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block, no progress\n"
    "      --shard I:N           send only sessions I, I+N, I+2N... (from 0, in\n"
    "                            the order of the traces given), each at its time\n"
    "                            on the whole workload's schedule: one of N\n"
    "                            machines sharing a run\n"
    "      --start-at EPOCH      the schedule's 0 on the wall clock (seconds since\n"
    "                            1970, e.g. $(($(date +%s) + 30))), the same for\n"
    "                            every shard; default: right after the warm-up\n"
    "      --connections N       open connections at most (default 1024, or\n"
    "                            --max-concurrency when larger); requests beyond\n"
    "                            wait for one. Under every result block: whether\n"
    "                            the client limited the run (CLIENT-BOUND: why),\n"
    "                            its CPU per request and send lag (\"client\" in\n"
    "                            --save-result; docs/replay-llm.md)\n"
    "      --threads N           N event loops on N threads (one client each,\n"
    "                            every N-th session, a share of the slots and\n"
    "                            connections), one clock; not with --policy\n"
    "      --merge               read --requests-out files of a run's shards and\n"
    "                            report them as one run (exact percentiles over\n"
    "                            all requests); --rate, --model and\n"
    "                            --max-concurrency only label the result\n"
    SCHED_HELP
    "\n"
    "Output files are checked before anything runs and written all or none.\n"
    "Ctrl-C or SIGTERM stops the run and says \"interrupted\" on stderr; against\n"
    "a server, what finished is printed under an \"INCOMPLETE (interrupted)\"\n"
    "line and saved, marked incomplete (a sim: target saves nothing); the exit\n"
    "status is 130. Traces without llm steps, and a run where every request\n"
    "failed, exit 1.\n";

struct llm_args {
    const char *target, *model, *api_key, *from, *policy_opts;
    struct opts_shard shard;     /* shard.n 0: none */
    unsigned threads;            /* --threads N */
    unsigned repeats;            /* --repeat N; 0: not given */
    double start_at;             /* --start-at, or 0 */
    bool merge;
    struct llm_policy_list policies;
    enum atr_llm_api api;
    bool force_length, skip_oversized;
    bool session_hint;           /* --session-hint */
    double kv_retain;            /* sim target: --kv-retain seconds */
    unsigned warmup, tp;
    unsigned connections;        /* --connections N; 0: the client's default */
    double timeout_s, stall_s;
    struct sched_opts sched;
    struct llm_report_opts report;
    int first_arg;               /* argv[first_arg..argc): the TRACEs */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static bool opt_policies(void *a, const char *list, const char *cmd)
{
    return llm_policy_list_parse(&((struct llm_args *)a)->policies, list, cmd) == EXIT_OK;
}

#define ARGS struct llm_args
static const struct opt options[] = {
    OPT_STRING(ARGS, target, "target", 't'),
    OPT_STRING(ARGS, model, "model", 'm'),
    OPT_ENUM(ARGS, api, "api", 0, OPT_WORDS("completions", "chat"),
             "--api wants completions or chat"),
    OPT_STRING(ARGS, api_key, "api-key", 0),
    OPT_FLAG_OFF(ARGS, force_length, "no-force-length", 0),
    OPT_FLAG(ARGS, session_hint, "session-hint", 0),
    OPT_UINT(ARGS, warmup, "warmup", 0, 0, 1000, "--warmup wants 0..1000"),
    OPT_DOUBLE(ARGS, timeout_s, "timeout", 0, 0, OPT_FINITE, "--timeout wants seconds"),
    OPT_DOUBLE(ARGS, stall_s, "stall-timeout", 0, 0, OPT_FINITE,
               "--stall-timeout wants seconds"),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_FLAG(ARGS, skip_oversized, "skip-oversized", 0),
    OPT_DOUBLE(ARGS, kv_retain, "kv-retain", 0, 0, OPT_FINITE, "--kv-retain wants seconds >= 0"),
    OPT_FROM(ARGS, from),
    OPT_CALL("policy", 0, opt_policies, NULL),
    OPT_STRING(ARGS, policy_opts, "policy-options", 0),
    OPT_SHARD(struct llm_args, shard, 0),
    OPT_DOUBLE(ARGS, start_at, "start-at", 0, 1, OPT_FINITE,
               "--start-at wants seconds since 1970 (date +%s)"),
    OPT_FLAG(ARGS, merge, "merge", 0),
    OPT_UINT(ARGS, repeats, "repeat", 0, 1, ATR_SERIES_MAX_REPEATS,
             "--repeat wants 1..1000 (runs of each policy)"),
    OPT_UINT(ARGS, threads, "threads", 0, 1, ATR_EXP_MAX_THREADS, "--threads wants 1..256"),
    OPT_UINT(ARGS, connections, "connections", 0, 1, 65536, "--connections wants 1..65536"),
    OPT_INCLUDE(ARGS, report, llm_report_opts_group),
    OPT_INCLUDE(ARGS, sched, sched_opts_group),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"replay llm", options};

static int parse_args(int argc, char **argv, struct llm_args *a)
{
    memset(a, 0, sizeof *a);
    a->force_length = true;
    a->warmup = 1;
    a->tp = 1;
    a->timeout_s = 600;
    a->stall_s = 60;
    a->api_key = getenv("OPENAI_API_KEY");
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (a->merge && (a->target || a->shard.n || a->start_at > 0 || a->policies.n ||
                     a->threads > 1 || a->repeats))
        return cli_usage("replay llm", "--merge reads request files: it takes no --target, "
                         "--shard, --start-at, --threads, --policy or --repeat");
    if (a->merge && a->first_arg >= argc)
        return cli_usage("replay llm", "missing REQUESTS.ndjson");
    if (a->merge)
        return sched_opts_finish(&a->sched, "replay llm");
    if (!a->target)
        return cli_usage("replay llm", "missing --target URL|sim:GPU/MODEL");
    if (a->first_arg >= argc)
        return cli_usage("replay llm", "missing TRACE");
    if (a->threads > 1 && a->policies.n)   /* a policy sees every request: one loop */
        return cli_usage("replay llm", "--threads does not combine with --policy");
    if (a->threads > 1 && a->sched.max_concurrency && a->sched.max_concurrency < a->threads)
        return cli_usage("replay llm", "--max-concurrency %u leaves a thread of --threads %u "
                         "no slot", a->sched.max_concurrency, a->threads);
    int rc = cli_check_policies("replay llm", a->policies.names, a->policies.n, a->policy_opts);
    return rc != EXIT_OK ? rc : sched_opts_finish(&a->sched, "replay llm");
}

/* One connection per request in flight: lift the soft descriptor limit
 * (often 1024) to the hard one. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The target of --target and the client options; an exit status. */
static int open_target(const struct llm_args *a, struct atr_target *t, char *model, size_t cap)
{
    struct atr_error err;
    int rc = atr_target_parse(t, a->target, a->tp, &err);
    if (rc < 0)          /* not a target, or a sim: profile or --tp that is none */
        return cli_usage("replay llm", "%s", err.msg);
    if (t->kind == ATR_TARGET_SIM && (a->start_at > 0 || a->threads > 1))
        return cli_usage("replay llm", "%s is for servers: a sim: target runs in virtual time",
                         a->start_at > 0 ? "--start-at" : "--threads");
    t->client.timeout_s = a->timeout_s;
    t->client.stall_timeout_s = a->stall_s;
    if (t->kind == ATR_TARGET_SIM) {
        t->engine.skip_oversized = a->skip_oversized;
        t->engine.retain_s = a->kv_retain;
        return EXIT_OK;
    }
    if (cli_check_replicas("replay llm", t->n_urls, a->policies.n) != EXIT_OK)
        return EXIT_USAGE;
    t->body.api = a->api;
    t->body.model = a->model;
    t->body.force_length = a->force_length;
    t->body.session_hint = a->session_hint;
    t->client.api_key = a->api_key;
    t->client.max_connections = a->connections;
    t->warmup = a->warmup;
    if (!t->body.model) {         /* the server's first model */
        enum atr_models_fail why;
        if (atr_llm_first_model(t->urls[0], a->api_key, 10, model, cap, &why, &err) < 0)
            return cli_fail_models(why, &err);
        t->body.model = model;
    }
    return EXIT_OK;
}

/* --merge: the request files as one run, its block printed. */
static int merge(const struct llm_args *a, char *const *paths, size_t n)
{
    const struct llm_report_opts *o = &a->report;
    struct atr_llm_merge_cfg cfg = {
        .model = a->model, .schedule = &a->sched.schedule,
        .max_concurrency = a->sched.max_concurrency, .slo_ttft_ms = o->slo_ttft_ms,
        .slo_tpot_ms = o->slo_tpot_ms, .slo_e2el_ms = o->slo_e2el_ms,
        .slo_session_ms = o->slo_session_ms, .percentiles = o->percentiles, .n_percentiles = o->n_percentiles,
        .save_result = o->save_result, .requests_out = o->requests_out,
    };
    struct atr_llm_merged m;
    struct atr_error err;
    if (atr_llm_merge(&cfg, paths, n, &m, &err) < 0)
        return cli_fail_err(&err);
    if (!o->quiet) {
        struct atr_buf b = ATR_BUF_INIT;
        atr_llm_write_block(&b, &m.sum, &m.bc);
        fputs(b.data ? b.data : "", stdout);
        atr_buf_release(&b);
    }
    llm_report_warn_prompts(&m.sum);
    atr_llm_merged_release(&m);
    return EXIT_OK;
}

int cmd_replay_llm(int argc, char **argv)
{
    struct llm_args a;
    struct atr_target t = {0};
    char model[512];
    int rc = parse_args(argc, argv, &a);
    if (rc == EXIT_OK && a.merge) {
        rc = merge(&a, argv + a.first_arg, (size_t)(argc - a.first_arg));
        llm_policy_list_release(&a.policies);
        return rc;
    }
    if (rc == EXIT_OK && (rc = open_target(&a, &t, model, sizeof model)) == EXIT_OK) {
        if (t.kind == ATR_TARGET_HTTP) {
            raise_fd_limit();
            cli_on_stop_signals(on_stop);
        }
        struct llm_run r = {
            .from = a.from, .policies = &a.policies, .policy_opts = a.policy_opts,
            .sched = &a.sched, .report = &a.report, .stop = &stop_requested,
            .shard_i = a.shard.i, .shard_n = a.shard.n, .start_at = a.start_at,
            .threads = a.threads, .repeats = a.repeats,
        };
        rc = llm_run(&r, &t, argv + a.first_arg, (size_t)(argc - a.first_arg));
    }
    atr_target_release(&t);
    llm_policy_list_release(&a.policies);
    return rc;
}
