/* cmd-proxy.c - `atr proxy`: the recording reverse proxy (proxy/proxy.h)
 * on one libevent loop, its journal (proxy/journal.h), keys from the
 * environment or files, -v request lines, and SIGTERM draining. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "proxy/journal.h"
#include "proxy/proxy.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/input.h"

static const char help[] =
    "usage: atr proxy --upstream URL [--upstream URL ...] [OPTIONS]\n"
    "\n"
    "An OpenAI-compatible reverse proxy (docs/proxy.md) between any client and\n"
    "one or more upstreams (vLLM, SGLang, llama.cpp, atr sim serve): POST\n"
    "/v1/chat/completions and /v1/completions go to the upstream a policy picks\n"
    "per request, streams relayed event by event as the upstream writes them;\n"
    "GET /v1/models merges the upstreams' lists; other paths go to the first\n"
    "upstream. GET /metrics (Prometheus) and /healthz are the proxy's own.\n"
    "With --record, every completed request is appended to a journal as a\n"
    "one-step atr trace (metadata only: token counts, prefix block hashes,\n"
    "times, status, upstream, the policy's decision). Once listening it prints\n"
    "'atr proxy: listening on http://HOST:PORT'. SIGTERM or SIGINT stops\n"
    "accepting, lets streams in flight finish (--drain-timeout), exits 0.\n"
    "\n"
    "  -u, --upstream URL        http://HOST:PORT of an upstream (repeat for more)\n"
    "  -p, --policy NAME         naive (default), prefix-cache, prefix-route,\n"
    "                            compaction, max-tokens, learned: which upstream,\n"
    "                            and a max_tokens cap (docs/policies.md)\n"
    "      --policy-options K=V,...   the policy's options\n"
    "      --host HOST           default 127.0.0.1\n"
    "      --port P              default 8080; 0 = any free port\n"
    "      --record FILE         append one line per completed request\n"
    "      --record-content      the request body in records (default: none)\n"
    "      --otlp FILE           also append each completed request to FILE as\n"
    "                            OpenTelemetry OTLP/JSON (one export document\n"
    "                            per line: a chat span with the model, token\n"
    "                            counts, session as gen_ai.conversation.id;\n"
    "                            never content), for a collector or Jaeger\n"
    "                            (docs/otel.md); fsync and rotation as --record\n"
    "      --fsync-interval S    journal fsync period (default 1)\n"
    "      --rotate-size SIZE    rename FILE to FILE.1 past SIZE (default never)\n"
    "      --session-header NAME session id header (default X-Session-Id)\n"
    "      --max-sessions N      sessions kept (default 100000): the least\n"
    "                            recently used idle one is forgotten beyond\n"
    "      --session-ttl S       forget a session idle this long (default 3600)\n"
    "      --client-key-env VAR  clients must send 'Authorization: Bearer $VAR'\n"
    "      --client-key-file F   ... the key in file F\n"
    "      --upstream-key-env VAR   send 'Authorization: Bearer $VAR' upstream\n"
    "      --upstream-key-file F    ... the key in file F\n"
    "limits (each answered with an OpenAI-format error):\n"
    "      --max-body SIZE       request body (default 16M)\n"
    "      --max-headers SIZE    request headers (default 64K)\n"
    "      --max-requests N      requests in flight (default 4096): 503 beyond\n"
    "      --max-connections N   client connections open at once; more wait to be\n"
    "                            accepted (default: the descriptor limit less 64,\n"
    "                            halved for the upstream connections)\n"
    "      --first-byte-timeout S    upstream's first byte (default 600): 504\n"
    "      --idle-timeout S      silence on either side (default 120)\n"
    "      --max-buffered SIZE   bytes queued for one slow client before the\n"
    "                            upstream is paused (default 256K)\n"
    "      --drain-timeout S     on SIGTERM, wait this long for streams (default 30)\n"
    "  -v, --verbose             one line per request on stderr\n";

struct proxy_args {
    struct atr_proxy_cfg cfg;
    const char *record;
    const char *otlp;
    double fsync_s, drain_s;
    size_t rotate;
    const char *client_env, *client_file, *up_env, *up_file;
    bool verbose;
};

static bool add_upstream(void *base, const char *arg, const char *cmd)
{
    struct proxy_args *a = base;
    if (a->cfg.n_upstreams == ATR_PROXY_MAX_UPSTREAMS || strncmp(arg, "http://", 7) != 0)
        return false;
    a->cfg.upstreams[a->cfg.n_upstreams++] = arg;
    return true;
}

static bool nonempty(const char *s)
{
    return *s != '\0';
}

#define ARGS struct proxy_args
static const struct opt options[] = {
    OPT_CALL("upstream", 'u', add_upstream,
             "--upstream wants http://HOST:PORT (at most 64), got '%s'"),
    OPT_STRING_CHECK(ARGS, cfg.policy, "policy", 'p', nonempty, "--policy wants a name"),
    OPT_STRING(ARGS, cfg.policy_options, "policy-options", 0),
    OPT_STRING_CHECK(ARGS, cfg.host, "host", 0, nonempty, "--host wants an address"),
    OPT_UINT(ARGS, cfg.port, "port", 0, 0, 65535, "--port wants 0..65535, got '%s'"),
    OPT_STRING_CHECK(ARGS, record, "record", 0, nonempty, "--record wants a file"),
    OPT_FLAG(ARGS, cfg.record_content, "record-content", 0),
    OPT_STRING_CHECK(ARGS, otlp, "otlp", 0, nonempty, "--otlp wants a file"),
    OPT_DOUBLE(ARGS, fsync_s, "fsync-interval", 0, 0.001, 86400,
               "--fsync-interval wants seconds, got '%s'"),
    OPT_SIZE(ARGS, rotate, "rotate-size", 0, 4096, SIZE_MAX, "--rotate-size wants a size >= 4K, got '%s'"),
    OPT_STRING_CHECK(ARGS, cfg.session_header, "session-header", 0, nonempty,
                     "--session-header wants a header name"),
    OPT_UINT(ARGS, cfg.max_sessions, "max-sessions", 0, 1, 100000000,
             "--max-sessions wants 1..100000000, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.session_ttl_s, "session-ttl", 0, 0.001, 1e9,
               "--session-ttl wants seconds, got '%s'"),
    OPT_STRING_CHECK(ARGS, client_env, "client-key-env", 0, nonempty, "--client-key-env wants a variable"),
    OPT_STRING_CHECK(ARGS, client_file, "client-key-file", 0, nonempty, "--client-key-file wants a file"),
    OPT_STRING_CHECK(ARGS, up_env, "upstream-key-env", 0, nonempty, "--upstream-key-env wants a variable"),
    OPT_STRING_CHECK(ARGS, up_file, "upstream-key-file", 0, nonempty, "--upstream-key-file wants a file"),
    OPT_SIZE(ARGS, cfg.max_body, "max-body", 0, 1, SIZE_MAX, "--max-body wants a size, got '%s'"),
    OPT_SIZE(ARGS, cfg.max_headers, "max-headers", 0, 1024, SIZE_MAX,
             "--max-headers wants a size >= 1K, got '%s'"),
    OPT_UINT(ARGS, cfg.max_connections, "max-requests", 0, 1, 1000000,
             "--max-requests wants 1..1000000, got '%s'"),
    OPT_UINT(ARGS, cfg.max_client_connections, "max-connections", 0, 1, 1u << 24,
             "--max-connections wants 1..16777216, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.first_byte_timeout_s, "first-byte-timeout", 0, 0.001, 86400,
               "--first-byte-timeout wants seconds, got '%s'"),
    OPT_DOUBLE(ARGS, cfg.idle_timeout_s, "idle-timeout", 0, 1, 86400,
               "--idle-timeout wants seconds >= 1, got '%s'"),
    OPT_SIZE(ARGS, cfg.max_buffered, "max-buffered", 0, 1024, SIZE_MAX,
             "--max-buffered wants a size >= 1K, got '%s'"),
    OPT_DOUBLE(ARGS, drain_s, "drain-timeout", 0, 0, 86400, "--drain-timeout wants seconds, got '%s'"),
    OPT_FLAG(ARGS, verbose, "verbose", 'v'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"proxy", options};

/* A key from a variable or the first line of a file; never printed. */
static int read_key(const char *env, const char *file, char **out, const char *what)
{
    *out = NULL;
    if (env) {
        const char *v = getenv(env);
        if (!v || !*v)
            return cli_usage("proxy", "%s: the variable %s is not set", what, env);
        *out = xstrdup(v);
        return EXIT_OK;
    }
    if (!file)
        return EXIT_OK;
    struct atr_error err;
    struct atr_input *in = atr_input_open(file, &err);
    struct atr_buf b = ATR_BUF_INIT;
    if (!in || atr_input_read_all(in, &b, 64 << 10, &err) < 0) {
        if (in)
            atr_input_close(in);
        return cli_fail_err(&err);
    }
    atr_input_close(in);
    size_t n = b.data ? strcspn(b.data, "\r\n") : 0;
    if (!n) {
        atr_buf_release(&b);
        return cli_usage("proxy", "%s: %s is empty", what, file);
    }
    *out = xstrndup(b.data, n);
    atr_buf_release(&b);
    return EXIT_OK;
}

struct proxy_run {
    struct event_base *base;
    struct atr_proxy *proxy;
    struct atr_journal *journal;
    struct atr_journal *otlp;        /* --otlp: the same records as spans */
    struct event *tick, *sigint, *sigterm, *drain_check;
    double drain_s, drain_until;
    bool draining;
    int failed;
    struct atr_error err;
};

static void on_record(void *ctx, const struct atr_proxy_record *rec)
{
    struct proxy_run *r = ctx;
    if ((r->journal && !r->failed && atr_journal_append(r->journal, rec, &r->err) < 0) ||
        (r->otlp && !r->failed && atr_journal_append(r->otlp, rec, &r->err) < 0)) {
        r->failed = 1;                 /* a journal that cannot be written stops the proxy */
        event_base_loopbreak(r->base);
    }
}

/* A request of an earlier run in the journal continued (--record). */
static void on_seen(void *ctx, const char *session, size_t len, uint64_t turn)
{
    atr_proxy_session_seen(ctx, session, len, turn);
}

static void on_log(void *ctx, const char *line)
{
    fprintf(stderr, "atr proxy: %s\n", line);
}

static void on_warn(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "atr: %s\n", line);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_run *r = arg;
    if (r->journal)
        atr_journal_tick(r->journal, mono_now());
    if (r->otlp)
        atr_journal_tick(r->otlp, mono_now());
    if (r->draining &&
        (atr_proxy_in_flight(r->proxy) == 0 || mono_now() >= r->drain_until))
        event_base_loopbreak(r->base);
}

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
    struct proxy_run *r = arg;
    if (r->draining) {                 /* a second signal: stop now */
        event_base_loopbreak(r->base);
        return;
    }
    r->draining = true;
    r->drain_until = mono_now() + r->drain_s;
    atr_proxy_drain(r->proxy);
    on_tick(-1, 0, r);
}

static int serve(struct proxy_run *r, const struct proxy_args *a)
{
    r->tick = event_new(r->base, -1, EV_PERSIST, on_tick, r);
    r->sigint = evsignal_new(r->base, SIGINT, on_stop, r);
    r->sigterm = evsignal_new(r->base, SIGTERM, on_stop, r);
    if (!r->tick || !r->sigint || !r->sigterm)
        return cli_fail("proxy: out of memory");
    struct timeval tv = {0, 50000};
    event_add(r->tick, &tv);
    evsignal_add(r->sigint, NULL);
    evsignal_add(r->sigterm, NULL);
    if (atr_proxy_listen(r->proxy, &r->err) < 0)
        return cli_fail_err(&r->err);
    const char *host = a->cfg.host ? a->cfg.host : "127.0.0.1";
    printf("atr proxy: listening on http://%s:%u\n", host, atr_proxy_port(r->proxy));
    fflush(stdout);
    event_base_dispatch(r->base);
    return r->failed ? cli_fail_err(&r->err) : EXIT_OK;
}

/* epoll with a change list: libevent enables and disables a connection's
 * read and write events around every chunk; queued in the change list,
 * the changes of one loop pass collapse into at most one epoll_ctl per
 * socket (most cancel out) instead of one per change. */
static struct event_base *new_base(void)
{
    struct event_config *ec = event_config_new();
    if (!ec)
        return NULL;
    event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *b = event_base_new_with_config(ec);
    event_config_free(ec);
    return b;
}

static int run(int argc, char **argv)
{
    struct proxy_args a;
    memset(&a, 0, sizeof a);
    a.cfg.port = 8080;
    a.fsync_s = 1;
    a.drain_s = 30;
    int first;
    if (opts_parse(&parser, &a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first < argc)
        return cli_usage("proxy", "unexpected argument '%s'", argv[first]);
    if (!a.cfg.n_upstreams)
        return cli_usage("proxy", "wants at least one --upstream URL");
    if ((a.client_env && a.client_file) || (a.up_env && a.up_file))
        return cli_usage("proxy", "a key comes from a variable or a file, not both");
    const char *policies[1] = {a.cfg.policy ? a.cfg.policy : "naive"};
    if (cli_check_policies("proxy", policies, 1, a.cfg.policy_options) != EXIT_OK)
        return EXIT_USAGE;
    char *client_key, *up_key;
    int rc = read_key(a.client_env, a.client_file, &client_key, "--client-key");
    if (rc != EXIT_OK)
        return rc;
    rc = read_key(a.up_env, a.up_file, &up_key, "--upstream-key");
    if (rc != EXIT_OK) {
        free(client_key);
        return rc;
    }
    a.cfg.client_key = client_key;
    a.cfg.upstream_key = up_key;
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct proxy_run r = {0};
    a.cfg.on_record = on_record;
    a.cfg.on_log = a.verbose ? on_log : NULL;
    a.cfg.on_warn = on_warn;
    a.cfg.ctx = &r;
    r.base = new_base();
    if (a.record) {
        struct atr_journal_cfg jc = {.fsync_interval_s = a.fsync_s, .rotate_bytes = a.rotate};
        r.journal = atr_journal_open(a.record, &jc, &r.err);
    }
    if (a.otlp && (!a.record || r.journal)) {
        struct atr_journal_cfg jc = {.fsync_interval_s = a.fsync_s, .rotate_bytes = a.rotate,
                                     .otlp = true};
        r.otlp = atr_journal_open(a.otlp, &jc, &r.err);
    }
    if (!r.base || (a.record && !r.journal) || (a.otlp && !r.otlp)) {
        rc = r.base ? cli_fail_err(&r.err) : cli_fail("proxy: cannot create the event loop");
    } else if (!(r.proxy = atr_proxy_new(r.base, &a.cfg, &r.err)) ||
               (a.record && atr_journal_scan(a.record, 0, on_seen, r.proxy, &r.err) < 0)) {
        rc = cli_fail_err(&r.err);
    } else {
        r.drain_s = a.drain_s;
        rc = serve(&r, &a);
    }
    atr_proxy_free(r.proxy);
    struct atr_error err;
    if (atr_journal_close(r.journal, &err) < 0 && rc == EXIT_OK)
        rc = cli_fail_err(&err);
    if (atr_journal_close(r.otlp, &err) < 0 && rc == EXIT_OK)
        rc = cli_fail_err(&err);
    if (r.tick)
        event_free(r.tick);
    if (r.sigint)
        event_free(r.sigint);
    if (r.sigterm)
        event_free(r.sigterm);
    if (r.base)
        event_base_free(r.base);
    free(client_key);
    free(up_key);
    return rc;
}

const struct atr_cmd cmd_proxy_entry = {
    "proxy", "OpenAI reverse proxy: policies per request, live metrics, records traffic as traces",
    help, run, NULL,
};
