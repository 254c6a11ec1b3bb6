/* cmd-dashboard.c - `atr dashboard DIR...`: a live view of runs, replays
 * and the proxy's journal, served on 127.0.0.1 (docs/dashboard.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "dashboard/dashboard.h"

static const char help[] =
    "usage: atr dashboard [OPTIONS] DIR...\n"
    "\n"
    "Serves a live view of the folders runs write into (docs/dashboard.md):\n"
    "per-request files (--requests-out) and their results, atr proxy journals,\n"
    "atr replay tools folders and atr bench result folders, found down to 4\n"
    "folder levels (symbolic links are not followed). The page is the report\n"
    "of `atr report` built from the files as they are when it is loaded, with\n"
    "a run list on top (done, ok, failed, TTFT and latency p50/p90/p99 as\n"
    "numpy computes them, running / stopped / complete / interrupted) that\n"
    "server-sent events keep current; without JS it shows the state the page\n"
    "was built at. GET /runs.json gives the run list as JSON. Read-only.\n"
    "Once listening it prints 'atr dashboard: http://HOST:PORT/' (with\n"
    "'?token=T' when the address is not loopback: every request must carry\n"
    "it); SIGINT or SIGTERM stops it (exit 0).\n"
    "\n"
    "options:\n"
    "      --listen ADDR     address to bind (default 127.0.0.1); another than\n"
    "                        loopback requires the printed random token\n"
    "      --port P          default 8080; 0 = any free port\n"
    "      --poll-ms N       read the folders again every N ms (default 500)\n"
    "      --idle S          a run without growth for S seconds and no result\n"
    "                        saying it ended is \"stopped\" (default 10)\n"
    "      --max-clients N   event streams open at once (default 1024)\n"
    "      --proxy URL       also follow a running `atr proxy` (its GET /records:\n"
    "                        each request as it completes, no content), the run\n"
    "                        \"proxy URL\"; retried every 2 s while unreachable\n";

struct dash_opts {
    const char *listen, *proxy;
    unsigned port, poll_ms, max_clients;
    double idle;
    int first_arg;
};

#define ARGS struct dash_opts
static const struct opt options[] = {
    OPT_STRING(ARGS, listen, "listen", 0),
    OPT_STRING(ARGS, proxy, "proxy", 0),
    OPT_UINT(ARGS, port, "port", 0, 0, 65535, "a port number 0-65535"),
    OPT_UINT(ARGS, poll_ms, "poll-ms", 0, 10, 60000, "milliseconds, 10-60000"),
    OPT_UINT(ARGS, max_clients, "max-clients", 0, 1, 100000, "a count, 1-100000"),
    OPT_DOUBLE(ARGS, idle, "idle", 0, OPT_GT0, 86400, "seconds, above 0"),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"dashboard", options};

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void on_warn(void *ctx, const char *line)
{
    fprintf(stderr, "atr: %s\n", line);
}

static int serve(struct event_base *base, const struct dash_opts *o, int argc, char **argv)
{
    const char *host = o->listen ? o->listen : "127.0.0.1";
    struct atr_dash_cfg cfg = {
        .roots = (const char *const *)argv + o->first_arg, .n_roots = (size_t)(argc - o->first_arg),
        .host = host, .port = o->port, .token = !atr_dash_is_loopback(host),
        .poll_ms = o->poll_ms, .idle_s = o->idle, .max_clients = o->max_clients,
        .proxy = o->proxy, .warn = on_warn,
    };
    struct atr_error err;
    struct atr_dash *d = atr_dash_new(base, &cfg, &err);
    if (!d || atr_dash_listen(d, &err) < 0) {
        atr_dash_free(d);
        return cli_fail_err(&err);
    }
    const char *tok = atr_dash_token(d);
    printf("atr dashboard: http://%s:%u/%s%s\n", host, atr_dash_port(d), *tok ? "?token=" : "",
           tok);
    fflush(stdout);
    struct event *sigint = evsignal_new(base, SIGINT, on_stop, base);
    struct event *sigterm = evsignal_new(base, SIGTERM, on_stop, base);
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    event_base_dispatch(base);
    event_free(sigint);
    event_free(sigterm);
    atr_dash_free(d);
    return EXIT_OK;
}

static int run(int argc, char **argv)
{
    struct dash_opts o = {.port = 8080};
    if (opts_parse(&parser, &o, argc, argv, &o.first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (o.first_arg >= argc)
        return cli_usage("dashboard", "missing DIR");
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    if (!base)
        return cli_fail("dashboard: cannot make an event loop");
    int rc = serve(base, &o, argc, argv);
    event_base_free(base);
    return rc;
}

const struct atr_cmd cmd_dashboard_entry = {
    .name = "dashboard",
    .summary = "a live view of runs, replays and the proxy's journal (HTTP, server-sent events)",
    .help = help,
    .run = run,
};
