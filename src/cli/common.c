/* common.c - helpers every command shares: messages, numbers, signals. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "policy/policy.h"
#include "runner/cgroup.h"
#include "sim/cost.h"
#include "util/output.h"
#include "util/size.h"

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("atr: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_FAIL;
}

int cli_fail_err(const struct atr_error *err)
{
    return cli_fail("%s", err->msg);
}

void cli_warn(const char *msg)
{
    fprintf(stderr, "atr: %s\n", msg);
}

int cli_fail_models(enum atr_models_fail why, const struct atr_error *err)
{
    if (why == ATR_MODELS_UNREACHABLE)
        return cli_fail("%s", err->msg);
    return cli_fail("%s (give --model)", err->msg);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "atr %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (try 'atr help %s')\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_usage_mode(const char *cmd, int argc, char **argv, const char *const *modes)
{
    char list[256] = "";
    size_t n = 0;
    for (size_t i = 0; modes[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                              i == 0 ? "" : modes[i + 1] ? ", " : " or ", modes[i]);
    if (argc < 2)
        return cli_usage(cmd, "wants a mode: %s", list);
    return cli_usage(cmd, "wants a mode, %s, not '%s'", list, argv[1]);
}

const char *cli_mode_help(const struct atr_cmd *cmd, const char *mode)
{
    for (const struct atr_cmd_mode *m = cmd->modes; m && m->name && mode; m++)
        if (strcmp(mode, m->name) == 0)
            return m->help;
    return cmd->help;
}

bool cli_wants_help(const struct atr_cmd *cmd, int argc, char **argv)
{
    const char *help = cli_mode_help(cmd, argc > 1 ? argv[1] : NULL);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(help, stdout);
            return true;
        }
    }
    return false;
}

int cli_check_profile(const char *cmd, const char *profile, unsigned tp)
{
    struct atr_profile p;
    struct atr_error err;
    if (atr_profile_find(profile, tp, &p, &err) < 0)
        return cli_usage(cmd, "%s", err.msg);
    return EXIT_OK;
}

int cli_check_replicas(const char *cmd, unsigned n_urls, size_t n_policies)
{
    if (n_urls > 1 && !n_policies)
        return cli_usage(cmd, "%u --target URLs need --policy to route among them "
                         "(naive: round robin; prefix-route: by prefix)", n_urls);
    return EXIT_OK;
}

int cli_check_policies(const char *cmd, const char *const *names, size_t n, const char *options)
{
    struct atr_error err;
    if (options && !n)
        return cli_usage(cmd, "--policy-options wants --policy (without one the run is as "
                         "recorded)");
    if (atr_policy_check(names, n, options, &err) < 0)
        return cli_usage(cmd, "%s", err.msg);
    return EXIT_OK;
}

bool cli_parse_uint(const char *s, unsigned long long min, unsigned long long max,
                    unsigned long long *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_limit(const char *s, int64_t *out)
{
    size_t v;
    if (strcmp(s, "none") == 0) {
        *out = -1;
        return true;
    }
    if (!atr_parse_size(s, &v) || v < 1 || v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

bool cli_parse_cpu_max(const char *s, struct atr_cg_limits *l)
{
    char *end;
    errno = 0;
    double cores = strtod(s, &end);
    if (errno || *end || !(cores > 0) || cores > 4096)
        return false;
    l->cpu_period_us = 100000;
    l->cpu_quota_us = (int64_t)llround(cores * 100000);
    return true;
}

bool cli_parse_pids_max(const char *s, int64_t *out)
{
    unsigned long long v;
    if (strcmp(s, "none") == 0)
        *out = -1;
    else if (cli_parse_uint(s, 1, 1 << 22, &v))
        *out = (int64_t)v;
    else
        return false;
    return true;
}

const char *cli_cell(char *cell, int width, int decimals, double x)
{
    if (isfinite(x))
        snprintf(cell, CLI_CELL_MAX, "%*.*f", width, decimals, x);
    else
        snprintf(cell, CLI_CELL_MAX, "%*s", width, "n/a");
    return cell;
}

bool cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* Says why the command stops (write: async-signal-safe), removes the
 * temporaries, and dies of sig so the parent sees the signal (130, 143). */
static void on_signal(int sig)
{
    static const char msg[] = "atr: interrupted\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    atr_output_abort_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_on_stop_signals(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

void cli_install_signal_cleanup(void)
{
    cli_on_stop_signals(on_signal);
    signal(SIGPIPE, SIG_IGN);
}
