/* cmd-sim-serve.c - `atr sim serve`: the engine model (or fixed latencies)
 * behind an OpenAI-compatible HTTP server, with fault injection. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "serve/server.h"

const char cmd_sim_serve_help[] =
    "usage: atr sim serve --profile GPU/MODEL [OPTIONS]\n"
    "       atr sim serve --ttft MS --itl MS [OPTIONS]\n"
    "\n"
    "An OpenAI-compatible HTTP server (docs/sim-serve.md): POST /v1/completions\n"
    "and /v1/chat/completions (streaming SSE or not, usage with\n"
    "prompt_tokens_details.cached_tokens), GET /v1/models, /health and /metrics\n"
    "(Prometheus, vLLM names). With --profile, atr's engine model runs in real\n"
    "time and decides when each token is ready; with --ttft/--itl every request\n"
    "gets its first token after TTFT and one more every ITL (0 and 0: all at\n"
    "once). Every request produces exactly max_tokens tokens. Once listening it\n"
    "prints 'atr sim serve: listening on http://HOST:PORT'; SIGINT or SIGTERM\n"
    "stops it (exit 0).\n"
    "\n"
    "engine:\n"
    "  -p, --profile GPU/MODEL   e.g. h100/llama-3.1-8b\n"
    "      --tp N                tensor parallel degree (default 1)\n"
    "      --max-num-seqs N      default 256\n"
    "      --max-num-batched-tokens N   default 8192\n"
    "      --no-prefix-caching   disable the prefix cache\n"
    "      --offline             no modelled API-server time: a request reaches the\n"
    "                            engine when it arrives (as atr sim run --offline);\n"
    "                            by default it waits the profile's front end (4.1 ms,\n"
    "                            and 3 us a prompt token, one prompt at a time)\n"
    "      --kv-retain SECONDS   pin the KV blocks of a finished request that carries\n"
    "                            a session hint (a non-empty \"user\" field or an\n"
    "                            X-Session-Id header; replay llm --session-hint)\n"
    "                            this many simulated seconds, as atr sim run\n"
    "                            --kv-retain; every hinted request is pinned;\n"
    "                            /metrics counts them (docs/sim-serve.md)\n"
    "      --ttft MS, --itl MS   fixed latencies instead of the engine model\n"
    "server:\n"
    "      --host HOST           default 127.0.0.1\n"
    "      --port P              default 8000; 0 = any free port\n"
    "      --model NAME          served model id (default: the profile's model\n"
    "                            name on Hugging Face; fixed mode: atr-sim)\n"
    "      --max-model-len N     prompt + output token limit (default: the\n"
    "                            model's; fixed mode 131072)\n"
    "      --max-body SIZE       request body limit (default 16M)\n"
    "      --time-scale F        wall seconds per simulated second: 0.1 serves ten\n"
    "                            times faster than the profile or --ttft/--itl say\n"
    "                            (tests, demos); /metrics stays in simulated time\n"
    "      --header-timeout S    a connection's first request must arrive whole within S\n"
    "                            of its accept, however slowly it trickles (default 10)\n"
    "      --idle-timeout S      silence on a connection closes it (default 86400)\n"
    "      --max-connections N   connections open at once; more wait to be accepted\n"
    "                            (default: the descriptor limit less 64)\n"
    "faults (for testing clients):\n"
    "      --fail-rate P         fraction of completion requests that fail (0..1)\n"
    "      --fail-kinds LIST     of 429,500,cut,stall (default all)\n"
    "      --stall-seconds S     how long a stalled request is held (default 3600)\n"
    "      --seed N              which requests fail (default 0)\n"
    "      --startup-delay S     listen only after S seconds\n"
    "      --crash-after N       exit with status 3 when the N-th completion\n"
    "                            request arrives\n"
    "      --oom-after N         print a CUDA out-of-memory error as vLLM does and\n"
    "                            exit with status 1 when the N-th completion\n"
    "                            request arrives\n"
    "      --oom-at-start        the same while starting, instead of listening\n"
    "      --hang                accept and read requests, never answer\n";

struct serve_args {
    struct atr_serve_cfg cfg;
    const char *profile;
    unsigned tp;
    bool ttft_given, itl_given;  /* fixed latencies: both or neither */
    double startup_delay;
    uint64_t oom_after;
    bool oom_at_start;
    bool offline;                /* --offline: no modelled front end */
};

struct serve_run {
    struct event_base *base;
    struct atr_serve *srv;
    const struct serve_args *a;
    struct atr_error err;
    int failed;
};

static int usage(const char *fmt, const char *arg)
{
    return cli_usage("sim serve", fmt, arg);
}

static bool parse_kinds(void *base, const char *list, const char *cmd)
{
    static const char *const names[] = { "429", "500", "cut", "stall" };
    unsigned *out = &((struct serve_args *)base)->cfg.fail_kinds;
    char buf[128];
    if (strlen(list) >= sizeof buf)
        return false;
    strcpy(buf, list);
    *out = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < 4 && strcmp(tok, names[k]) != 0)
            k++;
        if (k == 4)
            return false;
        *out |= 1u << k;
    }
    return *out != 0;
}

/* --ttft MS and --itl MS: fixed latencies instead of the engine model. */
static bool parse_fixed(double *out, bool *given, const char *arg)
{
    double ms;
    if (!cli_parse_double(arg, 0, 3.6e6, &ms))
        return false;
    *out = ms / 1000;
    *given = true;
    return true;
}

static bool parse_ttft(void *base, const char *arg, const char *cmd)
{
    struct serve_args *a = base;
    return parse_fixed(&a->cfg.ttft_s, &a->ttft_given, arg);
}

static bool parse_itl(void *base, const char *arg, const char *cmd)
{
    struct serve_args *a = base;
    return parse_fixed(&a->cfg.itl_s, &a->itl_given, arg);
}

static bool nonempty(const char *s)
{
    return *s != 0;
}

#define ARGS struct serve_args
static const struct opt options[] = {
    OPT_STRING(ARGS, profile, "profile", 'p'),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64, got '%s'"),
    OPT_UINT(ARGS, cfg.engine.max_num_seqs, "max-num-seqs", 0, 1, 65536,
             "--max-num-seqs wants 1..65536, got '%s'"),
    OPT_UINT(ARGS, cfg.engine.max_num_batched_tokens, "max-num-batched-tokens", 0, 16, 1 << 24,
             "--max-num-batched-tokens wants 16..16777216, got '%s'"),
    OPT_FLAG_OFF(ARGS, cfg.engine.prefix_caching, "no-prefix-caching", 0),
    OPT_FLAG(ARGS, offline, "offline", 0),
    OPT_DOUBLE(ARGS, cfg.engine.retain_s, "kv-retain", 0, 0, 1e7, "--kv-retain wants seconds >= 0"),
    OPT_CALL("ttft", 0, parse_ttft, "--ttft and --itl want milliseconds >= 0, got '%s'"),
    OPT_CALL("itl", 0, parse_itl, "--ttft and --itl want milliseconds >= 0, got '%s'"),
    /* server */
    OPT_STRING(ARGS, cfg.host, "host", 0),
    OPT_UINT(ARGS, cfg.port, "port", 0, 0, 65535, "--port wants 0..65535, got '%s'"),
    OPT_STRING_CHECK(ARGS, cfg.model_id, "model", 0, nonempty, "--model wants a name"),
    OPT_UINT(ARGS, cfg.max_model_len, "max-model-len", 0, 2, UINT32_MAX / 2,
             "--max-model-len wants 2..2147483647, got '%s'"),
    OPT_SIZE(ARGS, cfg.max_body, "max-body", 0, 1, SIZE_MAX, "--max-body wants a size, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.time_scale, "time-scale", 0, 1e-6, 1e6,
               "--time-scale wants a factor > 0, got '%s'"),
    /* faults */
    OPT_DOUBLE(ARGS, cfg.fail_rate, "fail-rate", 0, 0, 1, "--fail-rate wants 0..1, got '%s'"),
    OPT_CALL("fail-kinds", 0, parse_kinds,
             "--fail-kinds wants a list of 429,500,cut,stall, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.header_timeout_s, "header-timeout", 0, 0.001, 86400,
               "--header-timeout wants seconds > 0, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.idle_timeout_s, "idle-timeout", 0, 0.001, 1e7,
               "--idle-timeout wants seconds > 0, got '%s'"),
    OPT_UINT(ARGS, cfg.max_connections, "max-connections", 0, 1, 1u << 24,
             "--max-connections wants 1..16777216, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.stall_s, "stall-seconds", 0, 0, 1e7,
               "--stall-seconds wants seconds >= 0, got '%s'"),
    OPT_UINT(ARGS, cfg.seed, "seed", 0, 0, UINT64_MAX, "--seed wants an integer >= 0, got '%s'"),
    OPT_DOUBLE(ARGS, startup_delay, "startup-delay", 0, 0, 1e6,
               "--startup-delay wants seconds >= 0, got '%s'"),
    OPT_UINT(ARGS, cfg.crash_after, "crash-after", 0, 1, UINT64_MAX,
             "--crash-after wants an integer >= 1, got '%s'"),
    OPT_UINT(ARGS, oom_after, "oom-after", 0, 1, UINT64_MAX,
             "--oom-after wants an integer >= 1, got '%s'"),
    OPT_FLAG(ARGS, oom_at_start, "oom-at-start", 0),
    OPT_FLAG(ARGS, cfg.hang, "hang", 0),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"sim serve", options};

static int parse_args(int argc, char **argv, struct serve_args *a)
{
    int first;
    atr_engine_cfg_defaults(&a->cfg.engine);
    a->tp = 1;
    a->cfg.port = 8000;
    a->cfg.stall_s = 3600;
    if (opts_parse(&parser, a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first < argc)
        return usage("unexpected argument '%s'", argv[first]);
    bool fixed = a->ttft_given || a->itl_given;
    if (!a->profile == !fixed)
        return usage("wants either --profile GPU/MODEL or --ttft MS --itl MS%s", "");
    /* One of the two alone would leave the other at 0 without a word. */
    if (a->ttft_given != a->itl_given)
        return usage("%s alone: fixed latencies want both --ttft MS and --itl MS",
                     a->ttft_given ? "--ttft" : "--itl");
    if (a->offline && fixed)
        return usage("--offline is for the engine model (--profile)%s", "");
    if (a->cfg.engine.retain_s > 0 && fixed)   /* fixed mode has no KV cache to pin */
        return usage("--kv-retain is for the engine model (--profile)%s", "");
    if (a->oom_after && a->cfg.crash_after)
        return usage("--oom-after and --crash-after both say when to exit; give one%s", "");
    return EXIT_OK;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void on_warn(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "atr: %s\n", line);
}

static void on_crash(void *ctx, uint64_t n)
{
    fprintf(stderr, "atr sim serve: crashing after %llu requests (--crash-after)\n",
            (unsigned long long)n);
    fflush(stderr);
    _exit(3);
}

/* The line a real engine dies with when the GPU runs out of memory: what
 * `atr bench run` (and ISO-Bench's scripts) look for in a server log. */
static void die_of_oom(void)
{
    fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                    "GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. "
                    "(atr sim serve --oom-after/--oom-at-start)\n");
    fflush(stderr);
    _exit(1);
}

static void on_oom(void *ctx, uint64_t n)
{
    die_of_oom();
}

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
    struct serve_run *r = arg;
    if (r->a->oom_at_start)          /* dies where it would have listened */
        die_of_oom();
    if (atr_serve_listen(r->srv, &r->err) < 0) {
        r->failed = 1;
        event_base_loopbreak(r->base);
        return;
    }
    const char *host = r->a->cfg.host ? r->a->cfg.host : "127.0.0.1";
    printf("atr sim serve: listening on http://%s:%u\n", host, atr_serve_port(r->srv));
    fflush(stdout);
}

static struct event_base *new_base(void)
{
    struct event_config *ec = event_config_new();
    if (!ec)
        return NULL;
    /* timerfd: token times to the microsecond, not epoll's millisecond */
    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *b = event_base_new_with_config(ec);
    event_config_free(ec);
    return b;
}

/* Runs the loop: signals stop it, the listening starts after the delay. */
static int serve_loop(struct serve_run *r)
{
    struct event *sigint = evsignal_new(r->base, SIGINT, on_stop, r->base);
    struct event *sigterm = evsignal_new(r->base, SIGTERM, on_stop, r->base);
    struct event *ready = evtimer_new(r->base, on_ready, r);
    if (!sigint || !sigterm || !ready)
        return cli_fail("sim serve: out of memory");
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    double d = r->a->startup_delay;
    struct timeval tv = { (time_t)d, (suseconds_t)((d - floor(d)) * 1e6) };
    evtimer_add(ready, &tv);
    event_base_dispatch(r->base);
    event_free(ready);
    event_free(sigterm);
    event_free(sigint);
    const char *why = atr_serve_failed(r->srv);
    if (r->failed)
        return cli_fail_err(&r->err);
    return why ? cli_fail("sim serve: %s", why) : EXIT_OK;
}

int cmd_sim_serve(int argc, char **argv)
{
    struct serve_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    struct atr_profile p;
    if (a.profile) {
        if (atr_profile_find(a.profile, a.tp, &p, &err) < 0)
            return usage("%s", err.msg);     /* --profile or --tp */
        if (a.offline)
            atr_profile_set_offline(&p);
        a.cfg.profile = &p;
        if (!a.cfg.model_id)
            a.cfg.model_id = p.model->hf_name;
        if (!a.cfg.max_model_len)
            a.cfg.max_model_len = p.model->max_model_len;
    } else if (!a.cfg.max_model_len) {
        a.cfg.max_model_len = 131072;
    }
    a.cfg.on_crash = on_crash;
    a.cfg.on_warn = on_warn;
    if (a.oom_after) {
        a.cfg.crash_after = a.oom_after;
        a.cfg.on_crash = on_oom;
    }

    raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    struct serve_run r = { .a = &a };
    r.base = new_base();
    if (!r.base)
        return cli_fail("sim serve: cannot create the event loop");
    r.srv = atr_serve_new(r.base, &a.cfg, &err);
    if (!r.srv) {
        event_base_free(r.base);
        return cli_fail_err(&err);
    }
    rc = serve_loop(&r);
    atr_serve_free(r.srv);
    event_base_free(r.base);
    return rc;
}
