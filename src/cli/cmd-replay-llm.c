/* cmd-replay-llm.c - `atr replay llm`: the llm turns of traces sent to an
 * OpenAI-compatible server (or run through the simulator), reported as
 * `vllm bench serve` reports a run. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/llm-report.h"
#include "cli/sched-opts.h"
#include "llm/models.h"
#include "json/json.h"
#include "llm/replay.h"
#include "policy/policy.h"
#include "report/compare.h"
#include "trace/reader.h"

const char cmd_replay_llm_help[] =
    "usage: atr replay llm [OPTIONS] TRACE... --target URL|sim:GPU/MODEL\n"
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
    "                            by commas (replicas the policy routes over), or\n"
    "                            sim:GPU/MODEL\n"
    "  -m, --model NAME          model to ask for (default: the server's first\n"
    "                            model from /v1/models)\n"
    "      --api KIND            completions (default) or chat\n"
    "      --api-key KEY         Bearer token (default: $OPENAI_API_KEY)\n"
    "      --no-force-length     do not send min_tokens / ignore_eos\n"
    "      --warmup N            uncounted requests before the clock starts\n"
    "                            (default 1; 0 to skip)\n"
    "      --timeout S           fail a request after S seconds (default 600)\n"
    "      --stall-timeout S     fail a request silent for S seconds (default 60)\n"
    "      --policy P[,P...]     runtime policies: naive, prefix-cache, prefix-route,\n"
    "                            compaction, max-tokens, learned (docs/policies.md).\n"
    "                            Several run one after the other, each with its own\n"
    "                            run word in front of every prompt (no run reuses\n"
    "                            another's cached prefixes); output files get .P\n"
    "                            before their extension, and a table compares them\n"
    "      --policy-options K=V[,K=V...]   its options (e.g. budget=8192)\n"
    "      --tp N                tensor parallel degree of a sim target\n"
    "      --save-result FILE    the result JSON (vLLM's --save-result keys + \"atr\")\n"
    "      --requests-out FILE   one line per request\n"
    "      --goodput SLOS        e.g. ttft:500 tpot:50 e2el:10000 (milliseconds)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block, no progress\n"
    SCHED_HELP
    "\n"
    "Ctrl-C stops the run: what finished is saved, marked incomplete, and the\n"
    "exit status is 130. A run where every request failed exits 1.\n";

#define MAX_TARGETS 64

struct llm_args {
    const char *target, *model, *api_key, *from, *policy_opts;
    struct llm_policy_list policies;
    enum atr_llm_api api;
    bool force_length;
    unsigned warmup, tp;
    double timeout_s, stall_s;
    struct sched_opts sched;
    struct llm_report_opts report;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static bool parse_seconds(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static int parse_opt(int c, struct llm_args *a, int argc, char **argv)
{
    unsigned long long v;
    switch (c) {
    case 't': a->target = optarg; break;
    case 'm': a->model = optarg; break;
    case 'k': a->api_key = optarg; break;
    case 'A':
        if (strcmp(optarg, "completions") == 0)
            a->api = ATR_LLM_COMPLETIONS;
        else if (strcmp(optarg, "chat") == 0)
            a->api = ATR_LLM_CHAT;
        else
            return cli_usage("replay llm", "--api wants completions or chat");
        break;
    case 'L': a->force_length = false; break;
    case 'W':
        if (!cli_parse_uint(optarg, 0, 1000, &v))
            return cli_usage("replay llm", "--warmup wants 0..1000");
        a->warmup = (unsigned)v;
        break;
    case 'T':
        if (!parse_seconds(optarg, &a->timeout_s))
            return cli_usage("replay llm", "--timeout wants seconds");
        break;
    case 'S':
        if (!parse_seconds(optarg, &a->stall_s))
            return cli_usage("replay llm", "--stall-timeout wants seconds");
        break;
    case 'P':
        if (!cli_parse_uint(optarg, 1, 64, &v))
            return cli_usage("replay llm", "--tp wants 1..64");
        a->tp = (unsigned)v;
        break;
    case 'R': a->report.save_result = optarg; break;
    case 'O': a->report.requests_out = optarg; break;
    case 'G':
        if (!llm_report_goodput_opt(&a->report, argc, argv))
            return cli_usage("replay llm", "--goodput wants ttft:MS tpot:MS e2el:MS");
        break;
    case 'f':
        if (!atr_format_find(optarg))
            return cli_usage("replay llm", "unknown format '%s'", optarg);
        a->from = optarg;
        break;
    case 'q': a->report.quiet = true; break;
    case 'Y': return llm_policy_list_parse(&a->policies, optarg, "replay llm");
    case 'o': a->policy_opts = optarg; break;
    default: return cli_usage("replay llm", "unknown option");
    }
    return EXIT_OK;
}

static int parse_args(int argc, char **argv, struct llm_args *a)
{
    static const struct option longs[] = {
        {"target", required_argument, NULL, 't'}, {"model", required_argument, NULL, 'm'},
        {"api", required_argument, NULL, 'A'}, {"api-key", required_argument, NULL, 'k'},
        {"no-force-length", no_argument, NULL, 'L'}, {"warmup", required_argument, NULL, 'W'},
        {"timeout", required_argument, NULL, 'T'},
        {"stall-timeout", required_argument, NULL, 'S'}, {"tp", required_argument, NULL, 'P'},
        {"save-result", required_argument, NULL, 'R'},
        {"requests-out", required_argument, NULL, 'O'},
        {"goodput", required_argument, NULL, 'G'}, {"from", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'}, {"policy", required_argument, NULL, 'Y'},
        {"policy-options", required_argument, NULL, 'o'}, SCHED_LONG_OPTIONS, {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->force_length = true;
    a->warmup = 1;
    a->tp = 1;
    a->timeout_s = 600;
    a->stall_s = 60;
    a->api_key = getenv("OPENAI_API_KEY");
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
    int c, rc;
    while ((c = getopt_long(argc, argv, "t:m:f:q", longs, NULL)) != -1) {
        if ((rc = sched_opts_parse(&a->sched, c, optarg, "replay llm")) != 0) {
            if (rc < 0)
                return -rc;
            continue;
        }
        if ((rc = parse_opt(c, a, argc, argv)) != EXIT_OK)
            return rc;
    }
    if (!a->target)
        return cli_usage("replay llm", "missing --target URL|sim:GPU/MODEL");
    if (strncmp(a->target, "sim:", 4) != 0 && strncmp(a->target, "http://", 7) != 0 &&
        strncmp(a->target, "https://", 8) != 0)
        return cli_usage("replay llm", "--target wants http://HOST:PORT, https://... or "
                                       "sim:GPU/MODEL, not '%s'", a->target);
    if (optind >= argc)
        return cli_usage("replay llm", "missing TRACE");
    return sched_opts_finish(&a->sched, "replay llm");
}

/* A one-line progress display on a terminal, at most 4 redraws a second. */
struct progress {
    bool on;
    double last;
    size_t failed_seen;
};

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct progress *p = ctx;
    double now = atr_llm_now();
    if (!p->on || (now - p->last < 0.25 && done < total))
        return;
    p->last = now;
    fprintf(stderr, "\rreplay llm  %3.0f%%  %zu/%zu requests ", total ? 100.0 * done / total : 100.0,
            done, total);
    fflush(stderr);
}

/* Cuts a trailing '/' or '/v1' off a base URL, in place. */
static void trim_base_url(char *out)
{
    size_t n = strlen(out);
    while (n && out[n - 1] == '/')
        out[--n] = 0;
    if (n >= 3 && strcmp(out + n - 3, "/v1") == 0)
        out[n - 3] = 0;
}

static int report(const struct llm_args *a, const struct atr_llm_replay_result *res,
                  const struct atr_policy *policy, struct atr_compare *cmp,
                  struct atr_error *err)
{
    char date[32];
    llm_report_date(date);
    struct atr_buf extra = ATR_BUF_INIT, json = ATR_BUF_INIT;
    atr_buf_puts(&extra, "\"target\": ");
    atr_json_write_string(&extra, a->target, strlen(a->target));
    if (policy) {
        atr_buf_puts(&extra, ", ");
        atr_policy_stats_json(&extra, policy);
    }
    struct atr_llm_bench_config cfg = {
        .extra_members = extra.data,
        .date = date, .backend = a->api == ATR_LLM_CHAT ? "openai-chat" : "openai",
        .model_id = a->model, .num_prompts = (int64_t)res->total,
        .request_rate = atr_schedule_rate(&a->sched.schedule),
        .burstiness = a->sched.schedule.burstiness,
        .max_concurrency = a->sched.max_concurrency, .incomplete = res->incomplete,
    };
    struct llm_report_opts ro = a->report;
    bool several = a->policies.n > 1;
    if (several) {
        ro.save_result = llm_report_policy_path(a->report.save_result, atr_policy_name(policy));
        ro.requests_out = llm_report_policy_path(a->report.requests_out, atr_policy_name(policy));
        ro.result_json = &json;
        if (!ro.quiet)
            printf("\n== policy %s\n", atr_policy_name(policy));
    }
    int rc = llm_report_write(&ro, res->recs, res->n, &cfg, err);
    if (rc == 0 && cmp)
        rc = atr_compare_add_json(cmp, atr_policy_name(policy), json.data, json.len, err);
    if (several) {
        free((char *)ro.save_result);
        free((char *)ro.requests_out);
    }
    atr_buf_release(&extra);
    atr_buf_release(&json);
    return rc;
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

static size_t count_ok(const struct atr_llm_replay_result *res)
{
    size_t ok = 0;
    for (size_t i = 0; i < res->n; i++)
        ok += res->recs[i].success;
    return ok;
}

/* Splits --target at commas into base URLs (normalised in place). */
static int split_targets(const char *target, char *storage, size_t cap, const char **urls,
                         unsigned *n)
{
    snprintf(storage, cap, "%s", target);
    char *save = NULL;
    *n = 0;
    for (char *tok = strtok_r(storage, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_TARGETS)
            return cli_usage("replay llm", "--target takes at most %d URLs", MAX_TARGETS);
        if (strncmp(tok, "http://", 7) != 0 && strncmp(tok, "https://", 8) != 0)
            return cli_usage("replay llm", "--target wants http://HOST:PORT URLs, not '%s'", tok);
        trim_base_url(tok);
        urls[(*n)++] = tok;
    }
    return *n ? EXIT_OK : cli_usage("replay llm", "empty --target");
}

/* One run of the workload under policy index k (or as recorded); its exit
 * status. */
static int run_policy(struct llm_args *a, const struct atr_workload *w, const double *starts,
                      const char *const *urls, unsigned n_urls, size_t k,
                      struct atr_compare *cmp)
{
    struct atr_error err;
    struct atr_policy *policy = NULL;
    if (a->policies.n) {
        struct atr_policy_cfg pc = { .n_replicas = n_urls, .block_size = 16,
                                     .options = a->policy_opts, .seed = a->sched.schedule.seed };
        if (!(policy = atr_policy_new(a->policies.names[k], &pc, &err)))
            return cli_fail_err(&err);
    }
    char run_salt[32];
    snprintf(run_salt, sizeof run_salt, "run%zu ", k + 1);
    struct progress prog = { .on = !a->report.quiet && isatty(STDERR_FILENO) };
    struct atr_llm_replay_cfg cfg = {
        .workload = w, .starts = starts, .schedule = &a->sched.schedule,
        .max_concurrency = a->sched.max_concurrency,
        .body = { .api = a->api, .model = a->model, .stream = true,
                  .force_length = a->force_length,
                  .run_salt = a->policies.n > 1 ? run_salt : NULL },
        .client = { .base_url = urls[0], .api_key = a->api_key, .timeout_s = a->timeout_s,
                    .stall_timeout_s = a->stall_s,
                    .max_connections = a->sched.max_concurrency > ATR_LLM_DEFAULT_CONNECTIONS
                                           ? a->sched.max_concurrency : 0 },
        .targets = urls, .n_targets = n_urls, .policy = policy,
        .warmup = a->warmup, .stop = &stop_requested,
        .on_progress = on_progress, .progress_ctx = &prog,
    };
    struct atr_llm_replay_result res;
    int status = EXIT_OK;
    if (atr_llm_replay(&cfg, &res, &err) < 0) {
        status = cli_fail_err(&err);
    } else {
        if (prog.on)
            fputs("\r\033[K", stderr);
        if (report(a, &res, policy, cmp, &err) < 0)
            status = cli_fail_err(&err);
        else if (res.incomplete)
            status = 128 + SIGINT;
        else if (res.n && !count_ok(&res))
            status = cli_fail("every request failed (first: %s)", res.recs[0].error);
        atr_llm_replay_release(&res);
    }
    atr_policy_free(policy);
    return status;
}

static int replay(struct llm_args *a, char *const *paths, size_t n_paths)
{
    struct atr_error err;
    char targets[8192], model[512];
    const char *urls[MAX_TARGETS];
    unsigned n_urls;
    int st = split_targets(a->target, targets, sizeof targets, urls, &n_urls);
    if (st != EXIT_OK)
        return st;
    if (!a->model) {
        if (atr_llm_first_model(urls[0], a->api_key, 10, model, sizeof model, &err) < 0)
            return cli_fail("%s (give --model)", err.msg);
        a->model = model;
    }
    struct atr_workload w = ATR_WORKLOAD_INIT;
    if (atr_workload_load(&w, paths, n_paths, a->from, 16, &err) < 0)
        return cli_fail_err(&err);
    double *starts = calloc(w.n_sessions ? w.n_sessions : 1, sizeof *starts);
    if (!starts)
        abort();
    struct atr_compare *cmp = a->policies.n > 1 && !a->report.quiet ? atr_compare_new() : NULL;
    int status = EXIT_OK;
    raise_fd_limit();
    cli_on_stop_signals(on_stop);
    if (atr_schedule_starts(&a->sched.schedule, &w, starts, &err) < 0)
        status = cli_fail_err(&err);
    size_t runs = a->policies.n ? a->policies.n : 1;
    for (size_t k = 0; k < runs && status == EXIT_OK; k++)
        status = run_policy(a, &w, starts, urls, n_urls, k, cmp);
    if (status == EXIT_OK && cmp) {
        struct atr_buf t = ATR_BUF_INIT;
        atr_compare_write_markdown(&t, cmp);
        printf("\n== comparison\n%s", t.data ? t.data : "");
        atr_buf_release(&t);
    }
    atr_compare_free(cmp);
    free(starts);
    atr_workload_release(&w);
    return status;
}

int cmd_replay_llm(int argc, char **argv)
{
    struct llm_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc == EXIT_OK && strncmp(a.target, "sim:", 4) == 0)
        rc = cmd_sim_workload(a.target + 4, a.tp, a.policies.arg, a.policy_opts, &a.sched,
                              &a.report, a.from, argv + optind, (size_t)(argc - optind));
    else if (rc == EXIT_OK)
        rc = replay(&a, argv + optind, (size_t)(argc - optind));
    llm_policy_list_release(&a.policies);
    return rc;
}
