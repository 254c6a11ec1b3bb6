/* cmd-replay-agent.c - `atr replay agent`: the llm turns of traces sent to a
 * server and their tool steps run as real processes, in one timeline per
 * session (exp/agent.h), reported as model, tool and queueing time. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/llm-report.h"
#include "cli/opts.h"
#include "cli/sched-opts.h"
#include "runner/agent.h"
#include "exp/exp.h"
#include "serve/thread.h"
#include "json/writer.h"
#include "llm/models.h"
#include "runner/guard.h"
#include "runner/spawn.h"
#include "sim/stats.h"
#include "stats/percentile.h"
#include "stats/result.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/output.h"

const char cmd_replay_agent_help[] =
    "usage: atr replay agent [OPTIONS] TRACE... --target URL[,URL...]|sim:GPU/MODEL\n"
    "\n"
    "Replays whole agents in one causal timeline: each llm turn of a trace is\n"
    "sent to the target (an OpenAI-compatible server, or sim:GPU/MODEL: atr's\n"
    "engine model served in real time inside atr), then the trace's tool steps\n"
    "that follow that turn run as real processes in per-step cgroups, as\n"
    "`atr replay tools` runs them (one work directory, and container with\n"
    "--image, per trace), then the next turn is sent. Instead of sleeping the\n"
    "recorded tool time (`replay llm`), a session's time is measured: model\n"
    "time (request sent -> last byte), tool time (reply -> last tool step\n"
    "before the next turn ended), queueing (turn due -> sent) and the rest\n"
    "(handoffs), which add up to its completion time; with the tool steps'\n"
    "peak memory and CPU (docs/replay-agent.md). Sessions run concurrently on\n"
    "the arrival schedule below.\n"
    "\n"
    "options:\n"
    "  -t, --target T            http://HOST:PORT of the server, several separated\n"
    "                            by commas (replicas --policy routes over), or\n"
    "                            sim:GPU/MODEL\n"
    "  -m, --model NAME          model to ask for (default: the server's first)\n"
    "      --api KIND            completions (default) or chat\n"
    "      --api-key KEY         Bearer token (default: $OPENAI_API_KEY)\n"
    "      --no-force-length     do not send min_tokens / ignore_eos\n"
    "      --warmup N            uncounted requests before the clock (default 1)\n"
    "      --timeout S           fail a request after S seconds (default 600)\n"
    "      --stall-timeout S     fail a request silent for S seconds (default 60)\n"
    "      --connections N       open connections at most (default 1024)\n"
    "      --tp N                tensor parallel degree of a sim target\n"
    "      --policy P            a runtime policy, as replay llm's (naive,\n"
    "                            prefix-cache, prefix-route, compaction,\n"
    "                            max-tokens, learned; docs/policies.md): it picks\n"
    "                            each turn's replica among the --target URLs (needed\n"
    "                            with several), may salt, rewrite or cap it; one\n"
    "                            policy per run\n"
    "      --policy-options K=V[,K=V...]   its options (e.g. budget=8192)\n"
    "      --session-hint        each turn with a turn to come sends its session's\n"
    "                            trace id as \"user\", which atr sim serve\n"
    "                            --kv-retain reads as the sign to pin its KV blocks\n"
    "      --kv-retain SECONDS   sim target: its engine pins a session's KV blocks\n"
    "                            this long after each turn with one to come (sets\n"
    "                            --session-hint)\n"
    "      --on-tool-fail WHAT   continue (default: the failure is recorded, the\n"
    "                            session goes on) or stop (the session ends: its\n"
    "                            later turns are dropped and counted)\n"
    "  -c, --config C            tool steps' cgroups: static-toolcall (default), none,\n"
    "                            static-env, dynamic (as replay tools --config)\n"
    "      --mem-high SIZE       memory.high of each step's group\n"
    "      --mem-max SIZE        memory.max (default 3/4 of the memory atr may use;\n"
    "                            none)\n"
    "      --cpu-max CPUS        CPU bandwidth in cores\n"
    "      --pids-max N          most processes in a group (default 1024; none)\n"
    "      --disk-max SIZE       cap each trace's work directory (a loop-mounted\n"
    "                            ext4, root only; default none)\n"
    "      --tool-timeout SEC    a bash step's timeout when the trace has none\n"
    "                            (default 120)\n"
    "      --sandbox MODE        ns (default) or none (run on the host)\n"
    "      --allow-network       keep the host network inside the sandbox\n"
    "      --rootfs DIR          run steps inside an exported root file system\n"
    "      --bind DIR            a host folder the sandboxed steps may write (up to 3)\n"
    "      --controller K        dynamic: psi-poll (default) or psi-trigger\n"
    "      --interval MS         psi-poll interval (default 50)\n"
    "      --max-output SIZE     captured output per step (default 1M)\n"
    "      --image IMAGE         run each trace's steps in a container of IMAGE\n"
    "      --container-cli C     podman (default), docker, or a path to one\n"
    "      --workdir DIR         where per-trace directories go (default $TMPDIR)\n"
    "      --save-result FILE    the result JSON (\"atr\": sessions and their split)\n"
    "      --requests-out FILE   one line per llm request (\"kind\": \"llm\") and per\n"
    "                            tool step (\"kind\": \"tool\"), times on one clock\n"
    "      --goodput SLOS        e.g. ttft:500 tpot:50 e2el:10000 (ms) per request;\n"
    "                            session:MS: a session's completion, tool time\n"
    "                            included (good sessions in the agent block)\n"
    "      --percentiles P,P...  percentiles of every latency figure (as replay llm)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block\n"
    SCHED_HELP
    "\n"
    "TRACEs are read twice (files, not pipes). Every trace needs llm steps. In\n"
    "a DAG trace (parents, sub-agents) each sub-agent's tool steps run on their\n"
    "own thread, in the session's one work directory (sub-agents share it, as\n"
    "in Claude Code and OpenHands), a step once its parents ended, a turn once\n"
    "its parents and the tool steps before it ended. Output files are checked\n"
    "before anything runs and written all or none. Ctrl-C or SIGTERM stops the\n"
    "run (every sub-agent's too): the running steps are killed, their groups\n"
    "and work directories removed, what finished is printed and saved marked\n"
    "incomplete, exit status 130. A run where every llm request failed exits 1.\n";

struct agent_args {
    const char *target, *model, *api_key, *from, *container_cli, *config, *policy_opts;
    struct llm_policy_list policies;     /* --policy: one at most */
    enum atr_llm_api api;
    bool force_length, stop_on_fail;
    bool session_hint;                   /* --session-hint (or --kv-retain on sim:) */
    double kv_retain;                    /* sim target: --kv-retain seconds */
    unsigned warmup, tp, connections;
    double timeout_s, stall_s;
    struct atr_replay_opts ro;
    struct sched_opts sched;
    struct llm_report_opts report;
    struct atr_ctr_cli ctr_cli;
    char bind_paths[ATR_REPLAY_MAX_BINDS][PATH_MAX];   /* ro.binds point here */
    int first_arg;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
    atr_replay_stop();
}

static bool opt_policies(void *b, const char *list, const char *cmd)
{
    return llm_policy_list_parse(&((struct agent_args *)b)->policies, list, cmd) == EXIT_OK;
}

static bool opt_mem_max(void *b, const char *arg, const char *cmd)
{
    (void)cmd;
    return cli_parse_limit(arg, &((struct agent_args *)b)->ro.limits.mem_max);
}

static bool opt_disk_max(void *b, const char *arg, const char *cmd)
{
    struct agent_args *a = b;
    (void)cmd;
    return cli_parse_limit(arg, &a->ro.disk_max) && (a->ro.disk_max < 0 || a->ro.disk_max >= 1 << 20);
}

static bool opt_cpu_max(void *b, const char *arg, const char *cmd)
{
    (void)cmd;
    return cli_parse_cpu_max(arg, &((struct agent_args *)b)->ro.limits);
}

static bool opt_pids_max(void *b, const char *arg, const char *cmd)
{
    (void)cmd;
    return cli_parse_pids_max(arg, &((struct agent_args *)b)->ro.limits.pids_max);
}

static bool opt_bind(void *b, const char *arg, const char *cmd)
{
    struct agent_args *a = b;
    int i = a->ro.n_binds;
    struct stat st;
    (void)cmd;
    if (i == ATR_REPLAY_MAX_BINDS || !realpath(arg, a->bind_paths[i]) ||
        stat(a->bind_paths[i], &st) < 0 || !S_ISDIR(st.st_mode))
        return false;
    a->ro.binds[a->ro.n_binds++] = a->bind_paths[i];
    return true;
}

static bool opt_tool_timeout(void *b, const char *arg, const char *cmd)
{
    unsigned long long v;
    (void)cmd;
    if (!cli_parse_uint(arg, 1, 86400, &v))
        return false;
    ((struct agent_args *)b)->ro.timeout_ms = (int64_t)v * 1000;
    return true;
}

#define ARGS struct agent_args
static const struct opt options[] = {
    OPT_STRING(ARGS, target, "target", 't'),
    OPT_STRING(ARGS, model, "model", 'm'),
    OPT_ENUM(ARGS, api, "api", 0, OPT_WORDS("completions", "chat"),
             "--api wants completions or chat"),
    OPT_STRING(ARGS, api_key, "api-key", 0),
    OPT_FLAG_OFF(ARGS, force_length, "no-force-length", 0),
    OPT_UINT(ARGS, warmup, "warmup", 0, 0, 1000, "--warmup wants 0..1000"),
    OPT_DOUBLE(ARGS, timeout_s, "timeout", 0, 0, OPT_FINITE, "--timeout wants seconds"),
    OPT_DOUBLE(ARGS, stall_s, "stall-timeout", 0, 0, OPT_FINITE,
               "--stall-timeout wants seconds"),
    OPT_UINT(ARGS, connections, "connections", 0, 1, 65536, "--connections wants 1..65536"),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_CALL("policy", 0, opt_policies, NULL),
    OPT_STRING(ARGS, policy_opts, "policy-options", 0),
    OPT_FLAG(ARGS, session_hint, "session-hint", 0),
    OPT_DOUBLE(ARGS, kv_retain, "kv-retain", 0, 0, OPT_FINITE, "--kv-retain wants seconds >= 0"),
    OPT_ENUM(ARGS, stop_on_fail, "on-tool-fail", 0, OPT_WORDS("continue", "stop"),
             "--on-tool-fail wants continue or stop"),
    OPT_STRING(ARGS, config, "config", 'c'),
    OPT_SIZE(ARGS, ro.limits.mem_high, "mem-high", 0, 1, INT64_MAX,
             "--mem-high wants a size like 512M"),
    OPT_CALL("mem-max", 0, opt_mem_max, "--mem-max wants a size like 512M, or none"),
    OPT_CALL("disk-max", 0, opt_disk_max, "--disk-max wants a size of 1M or more, or none"),
    OPT_CALL("cpu-max", 0, opt_cpu_max, "--cpu-max wants a number of cores, e.g. 0.5"),
    OPT_CALL("pids-max", 0, opt_pids_max, "--pids-max wants a positive integer, or none"),
    OPT_CALL("tool-timeout", 0, opt_tool_timeout, "--tool-timeout wants seconds 1..86400"),
    OPT_ENUM(ARGS, ro.sandbox, "sandbox", 0, OPT_WORDS("none", "ns"),
             "--sandbox wants ns or none"),
    OPT_FLAG(ARGS, ro.allow_network, "allow-network", 0),
    OPT_STRING(ARGS, ro.rootfs, "rootfs", 0),
    OPT_CALL("bind", 0, opt_bind, "--bind wants an existing folder (at most 3)"),
    OPT_ENUM(ARGS, ro.controller, "controller", 0, OPT_WORDS("psi-poll", "psi-trigger"),
             "--controller wants psi-poll or psi-trigger"),
    OPT_UINT(ARGS, ro.interval_ms, "interval", 0, 1, 60000, "--interval wants 1..60000 ms"),
    OPT_SIZE(ARGS, ro.max_output, "max-output", 0, 0, SIZE_MAX,
             "--max-output wants a size like 1M"),
    OPT_STRING(ARGS, ro.image, "image", 0),
    OPT_STRING(ARGS, container_cli, "container-cli", 0),
    OPT_STRING(ARGS, ro.workdir, "workdir", 0),
    OPT_FROM(ARGS, from),
    OPT_INCLUDE(ARGS, report, llm_report_opts_group),
    OPT_INCLUDE(ARGS, sched, sched_opts_group),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"replay agent", options};

static void defaults(struct agent_args *a)
{
    memset(a, 0, sizeof *a);
    a->force_length = true;
    a->warmup = 1;
    a->tp = 1;
    a->timeout_s = 600;
    a->stall_s = 60;
    a->api_key = getenv("OPENAI_API_KEY");
    struct atr_cg_limits none = ATR_CG_LIMITS_NONE;
    a->ro.limits = none;
    a->ro.limits.pids_max = ATR_REPLAY_PIDS_MAX;
    a->ro.limits.mem_max = ATR_LIMIT_AUTO;
    a->ro.disk_max = -1;
    a->ro.sandbox = true;
    a->ro.max_output = 1 << 20;
    a->ro.timeout_ms = 120000;
    a->ro.interval_ms = 50;
    a->ro.config = ATR_CFG_STATIC_TOOLCALL;
    sched_opts_init(&a->sched);
    llm_report_init(&a->report);
}

static int parse_args(int argc, char **argv, struct agent_args *a)
{
    defaults(a);
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (!a->target)
        return cli_usage("replay agent", "missing --target URL|sim:GPU/MODEL");
    if (a->first_arg >= argc)
        return cli_usage("replay agent", "missing TRACE");
    if (a->config && atr_replay_config_parse(a->config, &a->ro.config) < 0)
        return cli_usage("replay agent", "--config wants none, static-env, static-toolcall or "
                         "dynamic, got '%s'", a->config);
    if (a->container_cli && !a->ro.image)
        return cli_usage("replay agent", "--container-cli needs --image");
    if (a->ro.image && (!a->ro.sandbox || a->ro.rootfs))
        return cli_usage("replay agent", "--image runs steps in the sandbox on the container's "
                         "root: not with --sandbox none or --rootfs");
    if ((a->ro.rootfs || a->ro.n_binds) && !a->ro.sandbox)
        return cli_usage("replay agent", "--rootfs and --bind need the sandbox: not with "
                         "--sandbox none");
    /* One timeline per run: a series of policies is replay llm's. */
    if (a->policies.n > 1)
        return cli_usage("replay agent", "--policy takes one policy here (replay llm --policy "
                         "A,B runs one after the other)");
    int rc = cli_check_policies("replay agent", a->policies.names, a->policies.n,
                                a->policy_opts);
    if (rc != EXIT_OK)
        return rc;
    const char *tmpdir = getenv("TMPDIR");
    if (!a->ro.workdir && tmpdir && *tmpdir)
        a->ro.workdir = tmpdir;
    return sched_opts_finish(&a->sched, "replay agent");
}

/* ---- inputs ---- */

struct inputs {
    struct atr_trace *traces;
    size_t n;
    struct atr_workload w;
    double *starts;
};

static void inputs_release(struct inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        atr_trace_release(&in->traces[i]);
    free(in->traces);
    atr_workload_release(&in->w);
    free(in->starts);
}

static size_t llm_steps(const struct atr_trace *t)
{
    size_t n = 0;
    for (size_t k = 0; k < t->n_steps; k++)
        n += t->steps[k].kind == ATR_STEP_LLM;
    return n;
}

/* Every trace of one file appended to in; an exit status. */
static int read_file(const char *path, const char *from, struct inputs *in, size_t *cap)
{
    struct atr_error err;
    struct atr_read_opts ro = {0};
    struct atr_reader *r = atr_reader_open(path, from, &ro, &err);
    if (!r)
        return cli_fail_err(&err);
    int got;
    for (;;) {
        if (in->n == *cap) {
            *cap = *cap ? 2 * *cap : 8;
            in->traces = xreallocarray(in->traces, *cap, sizeof *in->traces);
        }
        struct atr_trace *t = &in->traces[in->n];
        memset(t, 0, sizeof *t);
        if ((got = atr_reader_next(r, t, &err)) <= 0) {
            atr_trace_release(t);
            break;
        }
        in->n++;
        if (!llm_steps(t))
            break;
    }
    atr_reader_close(r);
    if (got < 0)
        return cli_fail_err(&err);
    if (got > 0 && !llm_steps(&in->traces[in->n - 1]))
        return cli_fail("%s: trace %s has no llm steps: replay agent needs llm turns (replay "
                        "tools runs tool steps alone)", path, in->traces[in->n - 1].trace_id);
    return EXIT_OK;
}

static int load_inputs(const struct agent_args *a, char *const *paths, size_t n,
                       struct inputs *in)
{
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = read_file(paths[i], a->from, in, &cap);
        if (rc != EXIT_OK)
            return rc;
    }
    if (!in->n)
        return cli_fail("%s: no traces", paths[0]);
    struct atr_error err;
    if (atr_workload_load(&in->w, paths, n, a->from, 0, &err) < 0)
        return cli_fail_err(&err);
    if (in->w.n_sessions != in->n)
        return cli_fail("%s: read %zu traces, then %zu sessions (is a TRACE a pipe?)",
                        paths[0], in->n, in->w.n_sessions);
    in->starts = xcalloc(in->n, sizeof *in->starts);
    if (atr_schedule_starts(&a->sched.schedule, &in->w, in->starts, &err) < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
}

/* ---- the run ---- */

struct target {
    struct atr_target t;
    struct atr_sim_thread *sim;
    struct atr_policy *policy;           /* --policy, or NULL */
    const char *url, *model;
    char model_buf[512];
};

static int open_target(const struct agent_args *a, struct target *tg)
{
    struct atr_error err;
    if (atr_target_parse(&tg->t, a->target, a->tp, &err) < 0)
        return cli_usage("replay agent", "%s", err.msg);
    if (tg->t.kind == ATR_TARGET_HTTP &&
        cli_check_replicas("replay agent", tg->t.n_urls, a->policies.n) != EXIT_OK)
        return EXIT_USAGE;
    if (tg->t.kind == ATR_TARGET_HTTP && a->kv_retain > 0)
        return cli_usage("replay agent", "--kv-retain is for a sim: target (a server pins with "
                         "its own --kv-retain: send --session-hint)");
    if (tg->t.kind == ATR_TARGET_SIM) {
        tg->t.engine.retain_s = a->kv_retain;
        tg->sim = atr_sim_thread_start(&tg->t.profile, &tg->t.engine, tg->t.max_model_len, &err);
        if (!tg->sim)
            return cli_fail_err(&err);
        tg->url = atr_sim_thread_url(tg->sim);
        tg->model = a->model ? a->model : atr_sim_thread_model(tg->sim);
        return EXIT_OK;
    }
    tg->url = tg->t.urls[0];
    tg->model = a->model;
    if (!tg->model) {
        enum atr_models_fail why;
        if (atr_llm_first_model(tg->url, a->api_key, 10, tg->model_buf, sizeof tg->model_buf,
                                &why, &err) < 0)
            return cli_fail_models(why, &err);
        tg->model = tg->model_buf;
    }
    return EXIT_OK;
}

/* The folders the options name, before anything runs. */
static int check_paths(const struct agent_args *a)
{
    struct stat st;
    char sh[PATH_MAX];
    if (a->ro.rootfs && (stat(a->ro.rootfs, &st) < 0 || !S_ISDIR(st.st_mode) ||
                         snprintf(sh, sizeof sh, "%s/bin/sh", a->ro.rootfs) >= (int)sizeof sh ||
                         lstat(sh, &st) < 0))
        return cli_fail("%s: not a root filesystem: no /bin/sh in it (--rootfs)", a->ro.rootfs);
    if (a->ro.workdir && (stat(a->ro.workdir, &st) < 0 || !S_ISDIR(st.st_mode)))
        return cli_fail("%s: not a directory (--workdir)", a->ro.workdir);
    return EXIT_OK;
}

/* The sandbox and the container engine, before anything runs. */
static int check_host(struct agent_args *a)
{
    struct atr_error err;
    int rc = check_paths(a);
    if (rc != EXIT_OK)
        return rc;
    if (a->ro.sandbox && atr_spawn_probe_sandbox(a->ro.allow_network, &err) < 0)
        return cli_usage("replay agent", "%s: pass --sandbox none to run steps on the host",
                         err.msg);
    if (!a->ro.image)
        return EXIT_OK;
    if (atr_ctr_detect(a->container_cli, &a->ctr_cli, &err) < 0)
        return cli_fail("%s", err.msg);
    a->ro.container_cli = &a->ctr_cli;
    return EXIT_OK;
}

static void fill_llm(const struct agent_args *a, const struct target *tg,
                     const struct inputs *in, struct atr_llm_replay_cfg *c)
{
    *c = (struct atr_llm_replay_cfg){
        .workload = &in->w, .starts = in->starts, .schedule = &a->sched.schedule,
        .max_concurrency = a->sched.max_concurrency,
        .body = { .api = a->api, .model = tg->model, .stream = true,
                  .force_length = a->force_length,
                  .session_hint = a->session_hint || a->kv_retain > 0 },
        .client = { .base_url = tg->url, .api_key = a->api_key, .timeout_s = a->timeout_s,
                    .stall_timeout_s = a->stall_s, .max_connections = a->connections },
        .warmup = a->warmup, .stop = &stop_requested, .policy = tg->policy,
    };
    if (!tg->sim && tg->t.n_urls > 1) {
        c->targets = (const char *const *)tg->t.urls;
        c->n_targets = tg->t.n_urls;
    }
}

/* --policy over the target's replicas (a sim: target is one), seeded as
 * replay llm seeds it: the schedule's seed. */
static int open_policy(const struct agent_args *a, const struct inputs *in, struct target *tg)
{
    if (!a->policies.n)
        return EXIT_OK;
    struct atr_policy_cfg pc = {
        .n_replicas = tg->sim ? 1 : tg->t.n_urls, .block_size = in->w.block_size,
        .options = a->policy_opts, .seed = a->sched.schedule.seed,
    };
    struct atr_error err;
    if (!(tg->policy = atr_policy_new(a->policies.names[0], &pc, &err)))
        return cli_usage("replay agent", "%s", err.msg);
    return EXIT_OK;
}

/* ---- what is printed and written ---- */

static double pct(const struct atr_agent_result *r, double p)
{
    double *v = xcalloc(r->n_sessions ? r->n_sessions : 1, sizeof *v);
    for (size_t i = 0; i < r->n_sessions; i++)
        v[i] = r->sessions[i].completion_s;
    double x = r->n_sessions ? atr_percentile(v, r->n_sessions, p) : 0;
    free(v);
    return x;
}

struct totals {
    size_t turns, ok, dropped, steps, failed, skipped, stopped;
    size_t good;                 /* --goodput session:MS: sessions within it */
    double cpu_s, exec_s, peak_mb, duration_s;
};

/* A session meets --goodput session:MS when it ran whole (every turn
 * sent and answered, not stopped) and its completion, tool time
 * included, is within MS: the agent's task, not its llm part. */
static bool session_good(const struct atr_agent_session *s, double slo_ms)
{
    return slo_ms > 0 && !s->stopped && !s->turns_dropped && s->turns_ok == s->turns &&
           s->completion_s * 1000 <= slo_ms;
}

static void count(const struct atr_agent_result *r, double slo_ms, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct atr_agent_session *s = &r->sessions[i];
        t->good += session_good(s, slo_ms);
        t->turns += s->turns;
        t->ok += s->turns_ok;
        t->dropped += s->turns_dropped;
        t->steps += s->tool_steps;
        t->failed += s->tool_failed;
        t->skipped += s->tool_skipped;
        t->stopped += s->stopped;
        t->cpu_s += s->tool_cpu_s;
        t->exec_s += s->tool_exec_s;
        if (s->tool_peak_rss_mb > t->peak_mb)
            t->peak_mb = s->tool_peak_rss_mb;
        if (s->end_s > t->duration_s)
            t->duration_s = s->end_s;
    }
}

static void print_block(const struct atr_agent_result *r, const char *config, double slo_ms)
{
    struct totals t;
    struct atr_agent_split sp;
    count(r, slo_ms, &t);
    atr_agent_split(r, &sp);
    if (r->incomplete)
        printf("INCOMPLETE (interrupted): %zu of %zu requests finished\n", r->llm.n,
               r->llm.total);
    printf("============== Agent Replay Result ==============\n");
    printf("%-40s %zu (%zu stopped by a tool failure)\n", "Sessions:", r->n_sessions, t.stopped);
    printf("%-40s %zu of %zu (%zu dropped)\n", "LLM turns ok:", t.ok, t.turns, t.dropped);
    printf("%-40s %zu (%zu failed, %zu skipped; %s)\n", "Tool steps:", t.steps, t.failed,
           t.skipped, config);
    printf("%-40s %.3f\n", "Benchmark duration (s):", t.duration_s);
    printf("%-40s %.3f / %.3f / %.3f\n", "Session completion p50/p90/max (s):", pct(r, 50),
           pct(r, 90), pct(r, 100));
    if (slo_ms > 0) {
        char label[64];
        snprintf(label, sizeof label, "Good sessions (<= %g ms, tools in):", slo_ms);
        printf("%-40s %zu of %zu\n", label, t.good, r->n_sessions);
        printf("%-40s %.3f\n", "Session goodput (sessions/s):",
               t.duration_s > 0 ? (double)t.good / t.duration_s : 0);
    }
    printf("---------- Split of session time (sum over sessions) ----------\n");
    printf("%-40s %.3f (%.1f %%)\n", "Model time (s):", sp.model_s, 100 * sp.model_share);
    printf("%-40s %.3f (%.1f %%)\n", "Tool time (s):", sp.tool_s, 100 * sp.tool_share);
    printf("%-40s %.3f (%.1f %%)\n", "Queueing (s):", sp.queue_s, 100 * sp.queue_share);
    printf("%-40s %.3f (%.1f %%)\n", "Other, handoffs (s):", sp.other_s, 100 * sp.other_share);
    printf("%-40s %.3f\n", "Tool steps' own latency (s):", t.exec_s);
    printf("%-40s %.3f\n", "Tool CPU (s):", t.cpu_s);
    printf("%-40s %.1f\n", "Tool peak memory, largest step (MB):", t.peak_mb);
    printf("==================================================\n");
}

static void put_session(struct atr_jw *w, const struct atr_agent_session *s)
{
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "trace_id", s->trace_id);
    atr_jw_kv_fixed(w, "start_s", s->start_s, 6);
    atr_jw_kv_fixed(w, "end_s", s->end_s, 6);
    atr_jw_kv_fixed(w, "completion_s", s->completion_s, 6);
    atr_jw_kv_fixed(w, "model_s", s->model_s, 6);
    atr_jw_kv_fixed(w, "tool_s", s->tool_s, 6);
    atr_jw_kv_fixed(w, "queue_s", s->queue_s, 6);
    atr_jw_kv_fixed(w, "other_s", s->other_s, 6);
    atr_jw_kv_fixed(w, "tool_exec_s", s->tool_exec_s, 6);
    atr_jw_kv_fixed(w, "tool_cpu_s", s->tool_cpu_s, 6);
    atr_jw_kv_fixed(w, "tool_peak_rss_mb", s->tool_peak_rss_mb, 3);
    atr_jw_kv_uint(w, "turns", s->turns);
    atr_jw_kv_uint(w, "turns_ok", s->turns_ok);
    atr_jw_kv_uint(w, "turns_dropped", s->turns_dropped);
    atr_jw_kv_uint(w, "tool_steps", s->tool_steps);
    atr_jw_kv_uint(w, "tool_failed", s->tool_failed);
    atr_jw_kv_uint(w, "tool_skipped", s->tool_skipped);
    atr_jw_kv_bool(w, "stopped", s->stopped);
    atr_jw_object_end(w);
}

static void put_split(struct atr_jw *w, const struct atr_agent_result *r)
{
    struct atr_agent_split sp;
    atr_agent_split(r, &sp);
    atr_jw_key(w, "split");
    atr_jw_object_begin(w);
    atr_jw_kv_fixed(w, "completion_s", sp.completion_s, 6);
    atr_jw_kv_fixed(w, "model_s", sp.model_s, 6);
    atr_jw_kv_fixed(w, "tool_s", sp.tool_s, 6);
    atr_jw_kv_fixed(w, "queue_s", sp.queue_s, 6);
    atr_jw_kv_fixed(w, "other_s", sp.other_s, 6);
    atr_jw_kv_fixed(w, "model_share", sp.model_share, 6);
    atr_jw_kv_fixed(w, "tool_share", sp.tool_share, 6);
    atr_jw_kv_fixed(w, "queue_share", sp.queue_share, 6);
    atr_jw_kv_fixed(w, "other_share", sp.other_share, 6);
    atr_jw_object_end(w);
}

/* vLLM's figures of the llm requests (as replay llm reports them). */
static void bench_config(const struct agent_args *a, const struct target *tg,
                         const struct inputs *in, const struct atr_agent_result *r,
                         struct atr_llm_bench_config *bc)
{
    const struct llm_report_opts *o = &a->report;
    *bc = (struct atr_llm_bench_config){
        .backend = tg->sim ? "sim" : a->api == ATR_LLM_CHAT ? "openai-chat" : "openai",
        .model_id = tg->model, .num_prompts = (int64_t)r->llm.total,
        .request_rate = atr_schedule_request_rate(&a->sched.schedule, &in->w),
        .schedule = atr_schedule_kind_name(a->sched.schedule.kind),
        .session_rate = atr_schedule_session_rate(&a->sched.schedule, &in->w),
        .time_scale = a->sched.schedule.time_scale,
        .burstiness = a->sched.schedule.burstiness,
        .max_concurrency = a->sched.max_concurrency, .incomplete = r->incomplete,
        .slo_ttft_ms = o->slo_ttft_ms, .slo_tpot_ms = o->slo_tpot_ms,
        .slo_e2el_ms = o->slo_e2el_ms, .slo_session_ms = o->slo_session_ms,
        .n_percentiles = o->n_percentiles,
    };
    memcpy(bc->percentiles, o->percentiles, sizeof bc->percentiles);
}

static void put_agent(struct atr_jw *w, const struct atr_agent_result *r, double slo_ms)
{
    struct totals t;
    count(r, slo_ms, &t);
    atr_jw_key(w, "agent");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "sessions", r->n_sessions);
    atr_jw_kv_uint(w, "turns", t.turns);
    atr_jw_kv_uint(w, "turns_ok", t.ok);
    atr_jw_kv_uint(w, "turns_dropped", t.dropped);
    atr_jw_kv_uint(w, "tool_steps", t.steps);
    atr_jw_kv_uint(w, "tool_failed", t.failed);
    atr_jw_kv_uint(w, "sessions_stopped", t.stopped);
    atr_jw_kv_fixed(w, "duration_s", t.duration_s, 6);
    atr_jw_kv_fixed(w, "completion_p50_s", pct(r, 50), 6);
    atr_jw_kv_fixed(w, "completion_p90_s", pct(r, 90), 6);
    atr_jw_kv_fixed(w, "tool_peak_rss_mb", t.peak_mb, 3);
    atr_jw_kv_fixed(w, "tool_cpu_s", t.cpu_s, 6);
    atr_jw_kv_fixed(w, "tool_exec_s", t.exec_s, 6);
    if (slo_ms > 0) {
        atr_jw_kv_pyfloat(w, "slo_session_ms", slo_ms);
        atr_jw_kv_uint(w, "sessions_good", t.good);
        atr_jw_kv_fixed(w, "session_goodput", t.duration_s > 0 ? (double)t.good / t.duration_s
                                                                : 0, 6);
    }
    put_split(w, r);
    atr_jw_key(w, "per_session");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < r->n_sessions; i++)
        put_session(w, &r->sessions[i]);
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

/* A sim: target's engine kind, as sim run names it. */
static const char *engine_flavour(const struct atr_target *t)
{
    return t->engine.longest_prefix_first ? "sglang" : t->engine.slots ? "llama.cpp" : "vllm";
}

/* A sim: target's engine under the agent block: what the real tool pauses
 * cost its cache (--kv-retain's pins among them). */
static void print_engine(const struct atr_engine_stats *st)
{
    printf("engine (sim, in atr): prefix cache hit rate %.1f%%, KV peak %u of %u blocks, "
           "%llu evictions, %llu preemptions", 100 * st->prefix_hit_rate, st->kv_blocks_peak,
           st->kv_blocks_total, (unsigned long long)st->evictions,
           (unsigned long long)st->preemptions);
    if (st->kv_pins)
        printf(", %llu pinned requests (%llu pins dropped early)",
               (unsigned long long)st->kv_pins, (unsigned long long)st->kv_pins_dropped);
    printf("\n");
}

/* The result object: vLLM's members of the requests, then "atr" with the
 * run's settings and "agent". */
static int result_json(struct atr_buf *b, const struct agent_args *a, const struct target *tg,
                       const struct atr_llm_summary *sum, const struct atr_llm_bench_config *bc,
                       const struct atr_agent_result *r, const struct atr_engine_stats *eng)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_llm_result_begin(&w, sum, bc);
    atr_jw_kv_str(&w, "command", "replay agent");
    atr_jw_kv_str(&w, "target", a->target);
    atr_jw_kv_str(&w, "config", atr_replay_config_name(a->ro.config));
    atr_jw_kv_str(&w, "on_tool_fail", a->stop_on_fail ? "stop" : "continue");
    atr_jw_kv_bool(&w, "incomplete", r->incomplete);
    atr_jw_kv_bool(&w, "session_hint", a->session_hint || a->kv_retain > 0);
    if (tg->policy) {
        struct atr_policy_stats ps;
        atr_policy_get_stats(tg->policy, &ps);
        atr_policy_stats_write(&w, atr_policy_name(tg->policy), &ps);
    }
    put_agent(&w, r, a->report.slo_session_ms);
    if (eng)
        atr_sim_stats_write(&w, &tg->t.profile, 1, engine_flavour(&tg->t), eng);
    atr_llm_result_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);
}

static size_t session_index(const struct inputs *in, const char *trace_id)
{
    for (size_t i = 0; i < in->w.n_sessions; i++)
        if (in->w.sessions[i].trace_id == trace_id)
            return i;
    return 0;
}

/* The llm lines (request lines with "kind" and "session" in front) and
 * the tool lines, each group in completion order. */
static int requests_lines(struct atr_buf *b, const struct inputs *in,
                          const struct atr_agent_result *r)
{
    struct atr_buf one = ATR_BUF_INIT;
    int rc = 0;
    for (size_t k = 0; k < r->llm.n && rc == 0; k++) {
        atr_buf_clear(&one);
        rc = atr_llm_write_request_line(&one, &r->llm.recs[k]);
        if (rc == 0 && one.len > 1) {
            char head[64];
            int n = snprintf(head, sizeof head, "{\"kind\":\"llm\",\"session\":%zu,",
                             session_index(in, r->llm.recs[k].trace_id));
            atr_buf_append(b, head, (size_t)n);
            atr_buf_append(b, one.data + 1, one.len - 1);
        }
    }
    for (size_t k = 0; k < r->n_steps; k++)
        atr_buf_append(b, r->steps[k].line, strlen(r->steps[k].line));
    atr_buf_release(&one);
    return rc;
}

struct outs {
    struct atr_output *v[2];     /* save-result, requests-out */
};

static int open_outs(const struct agent_args *a, struct outs *o)
{
    struct atr_error err;
    const char *paths[2] = { a->report.save_result, a->report.requests_out };
    for (int k = 0; k < 2; k++)
        if (paths[k] && !(o->v[k] = atr_output_open(paths[k], &err))) {
            for (int j = 0; j < k; j++)
                atr_output_abort(o->v[j]);
            return cli_fail_err(&err);
        }
    return EXIT_OK;
}

static int write_outs(const struct agent_args *a, const struct target *tg,
                      const struct inputs *in, const struct atr_agent_result *r,
                      const struct atr_llm_summary *sum, const struct atr_llm_bench_config *bc,
                      const struct atr_engine_stats *eng, struct outs *o)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_error err = {0};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (!o->v[k])
            continue;
        atr_buf_clear(&b);
        if ((k == 0 ? result_json(&b, a, tg, sum, bc, r, eng) : requests_lines(&b, in, r)) < 0)
            rc = atr_error_set(&err, "output too large");
        else if (b.len && atr_output_write(o->v[k], b.data, b.len, &err) < 0)
            rc = -1;
    }
    atr_buf_release(&b);
    if (rc == 0 && atr_output_commit_all(o->v, 2, &err) < 0)
        rc = -1;
    if (rc < 0) {
        for (int k = 0; k < 2; k++)
            atr_output_abort(o->v[k]);
        return cli_fail_err(&err);
    }
    return EXIT_OK;
}

/* The runner and its guard (a SIGKILLed atr leaves no group or mount),
 * then the run. */
static int run_agent(struct agent_args *a, const struct target *tg, const struct inputs *in,
                     struct atr_agent_result *res)
{
    struct atr_error err;
    struct atr_replay *rp = atr_replay_new(&a->ro, &err);
    if (!rp)
        return cli_fail_err(&err);
    const struct atr_cg_host *host = atr_replay_host(rp);
    if (host->mode == ATR_CG_NONE && a->ro.config != ATR_CFG_NONE && !a->report.quiet)
        fprintf(stderr, "atr: warning: no usable cgroups here (%s): tool steps run without "
                "limits, rusage only\n", host->note);
    struct atr_guard guard;
    char filter[64], *sweep[8] = {NULL};
    if (a->ro.container_cli)
        atr_ctr_sweep_argv(a->ro.container_cli, (long)getpid(), filter, sizeof filter, sweep);
    if (atr_guard_start_cleanup(&guard, host, atr_replay_root(rp),
                                a->ro.workdir ? a->ro.workdir : "/tmp", sweep, &err) < 0) {
        atr_replay_free(rp);
        return cli_fail_err(&err);
    }
    struct atr_agent_cfg cfg = {
        .rp = rp, .config = atr_replay_config_name(a->ro.config), .traces = in->traces,
        .n_traces = in->n, .stop_on_tool_fail = a->stop_on_fail,
    };
    fill_llm(a, tg, in, &cfg.llm);
    int rc = atr_agent_run(&cfg, res, &err);
    atr_replay_free(rp);
    atr_guard_stop(&guard);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}

static int report(const struct agent_args *a, const struct target *tg, const struct inputs *in,
                  const struct atr_agent_result *res, struct outs *o)
{
    struct atr_llm_bench_config bc;
    struct atr_llm_summary sum;
    struct atr_error err;
    struct atr_engine_stats eng = {0};
    /* the run is over: the in-process engine stops and is read */
    bool has_eng = tg->sim && atr_sim_thread_halt(tg->sim, &eng) == 0;
    bench_config(a, tg, in, res, &bc);
    if (atr_llm_summarize(res->llm.recs, res->llm.n, &bc, &sum, &err) < 0) {
        atr_sim_stats_release(&eng);
        return cli_fail_err(&err);
    }
    int rc = write_outs(a, tg, in, res, &sum, &bc, has_eng ? &eng : NULL, o);
    if (rc == EXIT_OK && !a->report.quiet) {
        struct atr_buf b = ATR_BUF_INIT;
        atr_llm_write_block(&b, &sum, &bc);
        fputs(b.data ? b.data : "", stdout);
        atr_buf_release(&b);
        print_block(res, atr_replay_config_name(a->ro.config), a->report.slo_session_ms);
        if (has_eng)
            print_engine(&eng);
    }
    atr_sim_stats_release(&eng);
    atr_llm_summary_release(&sum);
    if (rc != EXIT_OK)
        return rc;
    struct totals t;
    count(res, 0, &t);
    if (res->incomplete) {
        cli_fail("interrupted: %zu of %zu requests finished, the result is marked incomplete",
                 res->llm.n, res->llm.total);
        return 128 + SIGINT;
    }
    if (res->llm.n && !t.ok)
        return cli_fail("every request failed (first: %s)", res->llm.recs[0].error);
    return EXIT_OK;
}

static int cmd_replay_agent_run(struct agent_args *a, int argc, char **argv)
{
    struct inputs in = {0};
    struct target tg = {0};
    struct outs o = {{NULL, NULL}};
    struct atr_agent_result res = {0};
    int rc = check_host(a);
    if (rc == EXIT_OK)
        rc = load_inputs(a, argv + a->first_arg, (size_t)(argc - a->first_arg), &in);
    if (rc == EXIT_OK)
        rc = open_target(a, &tg);
    if (rc == EXIT_OK)
        rc = open_policy(a, &in, &tg);
    if (rc == EXIT_OK)
        rc = open_outs(a, &o);
    if (rc == EXIT_OK) {
        cli_on_stop_signals(on_stop);
        signal(SIGPIPE, SIG_IGN);
        rc = run_agent(a, &tg, &in, &res);
        if (rc == EXIT_OK)
            rc = report(a, &tg, &in, &res, &o);
        else
            atr_output_abort(o.v[0]), atr_output_abort(o.v[1]);
    }
    atr_agent_result_release(&res);
    atr_policy_free(tg.policy);
    atr_sim_thread_stop(tg.sim);
    atr_target_release(&tg.t);
    inputs_release(&in);
    return rc;
}

int cmd_replay_agent(int argc, char **argv)
{
    struct agent_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc == EXIT_OK)
        rc = cmd_replay_agent_run(&a, argc, argv);
    llm_policy_list_release(&a.policies);
    return rc;
}
