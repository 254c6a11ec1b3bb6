/* cmd-sweep.c - `atr sweep`: a GuideLLM-style rate sweep of a workload on
 * a target (exp/sweep.h), the result JSON, a table on stdout. */
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "exp/sweep.h"
#include "llm/client.h"
#include "llm/models.h"
#include "policy/policy.h"
#include "stats/ci.h"
#include "util/alloc.h"
#include "util/output.h"

static const char help[] =
    "usage: atr sweep (TRACE... | --generate N[:IN:OUT]) --target T -o RESULT.json\n"
    "                 [--policy NAME] [--rates N] [--arrival constant|poisson]\n"
    "                 [--slo KEY=VALUE,...] [--seed S] [--repeat N]\n"
    "\n"
    "Sweeps the request rate of a workload on a target, as GuideLLM's sweep\n"
    "profile does: a synchronous run (one request at a time), a throughput run\n"
    "(all at once), then N rates evenly spaced from the synchronous rate up\n"
    "to the throughput rate, arrivals evenly spaced (GuideLLM's default) or\n"
    "Poisson. Each run reports vLLM's figures. With\n"
    "--slo, the highest rate that meets every SLO is then searched by\n"
    "bisection between the highest passing and the lowest failing rate (until\n"
    "within 5 %, at most 6 more runs) and reported as the goodput rate.\n"
    "Rates are sessions per second (a trace is a session). Result fields:\n"
    "docs/sweep.md.\n"
    "\n"
    "options:\n"
    "  -t, --target T            sim:GPU/MODEL, or http://HOST:PORT[,URL...]\n"
    "  -g, --generate N[:IN:OUT] N single-turn requests of IN prompt and OUT\n"
    "                            output tokens (default 256:128) instead of TRACEs\n"
    "  -o, --output FILE         the result JSON (written atomically)\n"
    "      --policy NAME         runtime policy (docs/policies.md); default: as\n"
    "                            recorded\n"
    "      --policy-options K=V[,K=V...]   its options\n"
    "      --rates N             rates between synchronous and throughput (default 5;\n"
    "                            GuideLLM's --rate N+2 gives the same rates)\n"
    "      --arrival constant|poisson   the rate runs' arrivals: session i at\n"
    "                            i / rate (default), or Poisson gaps\n"
    "      --slo KEY=VALUE,...   keys ttft, tpot, itl, e2el with _p50, _p90 or _p99;\n"
    "                            values with ms or s, e.g. ttft_p99=500ms,tpot_p99=50ms\n"
    "      --seed S              seed of Poisson gaps and of the policy (default 0)\n"
    "      --repeat N            run every rate N times (repeat r with seed S + r - 1:\n"
    "                            fresh Poisson gaps; the same --generate workload and\n"
    "                            the same traces each time), the rates interleaved\n"
    "                            (all once, then all again); rates from the medians;\n"
    "                            a rate meets the SLOs when every repeat does; the\n"
    "                            table adds medians with 95 % intervals per rate\n"
    "      --tp N                tensor parallel degree of a sim target\n"
    "  -m, --model NAME          HTTP target: model to ask for (default: the\n"
    "                            server's first)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no progress on stderr, no table on stdout\n"
    "\n"
    "Progress goes to stderr, one line per run; a table (rate, req/s, tok/s,\n"
    "TTFT p99, TPOT p99, meets SLO) to stdout. Ctrl-C stops the sweep (exit\n"
    "130, no file written).\n";

struct sweep_args {
    const char *target, *generate, *out, *policy, *policy_opts, *slo_spec, *model, *from;
    unsigned rates, tp, repeats;
    int arrival;                 /* 0 constant, 1 poisson */
    unsigned long long seed;
    bool quiet;
    struct atr_slo slo;
    size_t gen_n;
    uint32_t gen_in, gen_out;
    int first_arg;
};

#define ARGS struct sweep_args
static const struct opt options[] = {
    OPT_STRING(ARGS, target, "target", 't'),
    OPT_STRING(ARGS, generate, "generate", 'g'),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, policy, "policy", 0),
    OPT_STRING(ARGS, policy_opts, "policy-options", 0),
    OPT_UINT(ARGS, rates, "rates", 0, 1, 100, "--rates wants 1..100"),
    OPT_ENUM(ARGS, arrival, "arrival", 0, OPT_WORDS("constant", "poisson"),
             "--arrival wants constant or poisson, not '%s'"),
    OPT_STRING(ARGS, slo_spec, "slo", 0),
    OPT_UINT(ARGS, seed, "seed", 0, 0, UINT64_MAX, "--seed wants a non-negative integer"),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_UINT(ARGS, repeats, "repeat", 0, 1, 1000, "--repeat wants 1..1000 (runs of each rate)"),
    OPT_STRING(ARGS, model, "model", 'm'),
    OPT_FROM(ARGS, from),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"sweep", options};

/* One decimal field of "N[:IN:OUT]" in 1..1000000 at *s, moving *s past
 * it; false on junk. */
static bool gen_field(const char **s, unsigned long long *v)
{
    char *end;
    if (**s < '0' || **s > '9')
        return false;
    *v = strtoull(*s, &end, 10);
    *s = end;
    return *v >= 1 && *v <= 1000000;
}

/* "N[:IN:OUT]" into a's generated workload; false on junk. */
static bool parse_generate(struct sweep_args *a, const char *s)
{
    unsigned long long n, in = 256, out = 128;
    if (!gen_field(&s, &n))
        return false;
    if (*s == ':' && (s++, !gen_field(&s, &in) || *s++ != ':' || !gen_field(&s, &out)))
        return false;
    if (*s)
        return false;
    a->gen_n = (size_t)n;
    a->gen_in = (uint32_t)in;
    a->gen_out = (uint32_t)out;
    return true;
}

static int check_args(struct sweep_args *a, int argc)
{
    struct atr_error err;
    if (!a->target)
        return cli_usage("sweep", "missing --target sim:GPU/MODEL|URL");
    if (!a->generate && a->first_arg >= argc)
        return cli_usage("sweep", "missing workload: TRACE... or --generate N[:IN:OUT]");
    if (a->generate && a->first_arg < argc)
        return cli_usage("sweep", "give TRACEs or --generate, not both");
    if (a->generate && !parse_generate(a, a->generate))
        return cli_usage("sweep", "--generate wants N[:IN:OUT] (each 1..1000000), not '%s'",
                         a->generate);
    if (!a->out)
        return cli_usage("sweep", "missing -o RESULT.json");
    if (a->slo_spec && atr_slo_parse(&a->slo, a->slo_spec, &err) < 0)
        return cli_usage("sweep", "%s", err.msg);
    const char *names[1] = {a->policy};
    return cli_check_policies("sweep", names, a->policy ? 1 : 0, a->policy_opts);
}

static int parse_args(int argc, char **argv, struct sweep_args *a)
{
    memset(a, 0, sizeof *a);
    a->rates = 5;
    a->tp = 1;
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    return check_args(a, argc);
}

static int open_target(const struct sweep_args *a, struct atr_target *t, char *model,
                       size_t cap)
{
    struct atr_error err;
    if (atr_target_parse(t, a->target, a->tp, &err) < 0)
        return cli_usage("sweep", "%s", err.msg);
    if (t->kind == ATR_TARGET_SIM)
        return EXIT_OK;
    t->body.model = a->model;
    t->client.api_key = getenv("OPENAI_API_KEY");
    if (!t->body.model) {
        enum atr_models_fail why;
        if (atr_llm_first_model(t->urls[0], t->client.api_key, 10, model, cap, &why, &err) < 0)
            return cli_fail_models(why, &err);
        t->body.model = model;
    }
    return EXIT_OK;
}

static int load_workload(const struct sweep_args *a, const struct atr_target *t, int argc,
                         char **argv, struct atr_workload *w)
{
    struct atr_error err;
    if (a->generate) {
        atr_workload_generated(w, a->gen_n, a->gen_in, a->gen_out);
        return EXIT_OK;
    }
    uint32_t block = t->kind == ATR_TARGET_SIM ? t->engine.block_size : 16;
    if (atr_workload_load(w, argv + a->first_arg, (size_t)(argc - a->first_arg), a->from, block,
                          &err) < 0)
        return cli_fail_err(&err);
    return w->n_turns ? EXIT_OK : cli_fail("no llm steps in the traces");
}

/* ---- progress and the table ---- */

struct show {
    bool quiet;
    double start;
    struct cli_progress run;    /* requests of the run going on */
};

static void rate_text(const struct atr_sweep_run *run, char *out, size_t cap)
{
    if (isnan(run->rate))
        snprintf(out, cap, "%s", run->kind == ATR_SWEEP_SYNCHRONOUS ? "sync" : "max");
    else
        snprintf(out, cap, "%.3f", run->rate);
}

static void on_start(void *ctx, size_t i, size_t planned, const struct atr_sweep_run *run)
{
    (void)i, (void)planned, (void)run;
    struct show *s = ctx;
    cli_progress_start(&s->run, "sweep", s->quiet);
}

static void on_progress(void *ctx, size_t done, size_t total)
{
    struct show *s = ctx;
    cli_progress_count(&s->run, cli_progress_now(), done, total, "requests");
}

static void on_done(void *ctx, size_t i, size_t planned, const struct atr_sweep_run *run)
{
    struct show *s = ctx;
    cli_progress_end(&s->run);
    if (s->quiet)
        return;
    char rate[32];
    rate_text(run, rate, sizeof rate);
    fprintf(stderr, "atr: sweep: run %zu/%zu %s, rate %s: %.3f req/s, %lld ok, %lld failed "
            "(%.1f s)\n", i + 1, planned, atr_sweep_kind_name(run->kind), rate,
            run->m.request_throughput, (long long)run->m.completed, (long long)run->m.failed,
            atr_llm_now() - s->start);
}

/* One figure of the runs i with same[i]: "median [lo .. hi]". */
static void median_cell(const struct atr_sweep_result *r, const bool *same, size_t off,
                        char *out, size_t cap)
{
    double *v = xcalloc(r->n + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (same[i] && r->runs[i].m.completed > 0)
            v[n++] = *(const double *)((const char *)&r->runs[i].m + off);
    struct atr_ci ci;
    atr_ci_median(v, n, ATR_CI_SEED, &ci);
    if (isnan(ci.lo))
        snprintf(out, cap, "%.3f", ci.point);
    else
        snprintf(out, cap, "%.3f [%.3f .. %.3f]", ci.point, ci.lo, ci.hi);
    free(v);
}

/* Per rate (each kind and rate once, in the order first run): the median
 * of its repeats with the 95 % interval (stats/ci.h, over repeats). */
static void print_medians(const struct atr_sweep_result *r)
{
    bool *same = xcalloc(r->n + 1, sizeof *same), *shown = xcalloc(r->n + 1, sizeof *shown);
    printf("\nmedians over repeats, 95 %% intervals (method repeats; failed runs left out):\n"
           "%-12s %10s %5s  %-30s %s\n", "kind", "rate", "runs", "req/s", "TTFT p99 ms");
    for (size_t i = 0; i < r->n; i++) {
        if (shown[i])
            continue;
        size_t runs = 0;
        for (size_t j = i; j < r->n; j++) {
            same[j] = r->runs[j].kind == r->runs[i].kind &&
                      (r->runs[j].rate == r->runs[i].rate ||
                       (isnan(r->runs[j].rate) && isnan(r->runs[i].rate)));
            shown[j] |= same[j];
            runs += same[j] && r->runs[j].m.completed > 0;
        }
        char rate[32], rps[64], ttft[64];
        rate_text(&r->runs[i], rate, sizeof rate);
        median_cell(r, same, offsetof(struct atr_sweep_metrics, request_throughput), rps,
                    sizeof rps);
        median_cell(r, same, offsetof(struct atr_sweep_metrics, ttft.p99), ttft, sizeof ttft);
        printf("%-12s %10s %5zu  %-30s %s\n", atr_sweep_kind_name(r->runs[i].kind), rate,
               runs, rps, ttft);
        memset(same, 0, r->n * sizeof *same);
    }
    free(same);
    free(shown);
}

static void print_table(const struct atr_sweep_cfg *cfg, const struct atr_sweep_result *r)
{
    bool slo = cfg->slo && cfg->slo->n, rep = cfg->repeats > 1;
    printf("%-12s %10s%s %10s %10s %12s %12s%s\n", "kind", "rate", rep ? " repeat" : "",
           "req/s", "tok/s", "TTFT p99 ms", "TPOT p99 ms", slo ? "  SLO" : "");
    for (size_t i = 0; i < r->n; i++) {
        const struct atr_sweep_run *run = &r->runs[i];
        char rate[32], k[16] = "";
        rate_text(run, rate, sizeof rate);
        if (rep)
            snprintf(k, sizeof k, " %6u", run->repeat);
        printf("%-12s %10s%s %10.3f %10.1f %12.2f %12.2f%s\n", atr_sweep_kind_name(run->kind),
               rate, k, run->m.request_throughput, run->m.output_throughput, run->m.ttft.p99,
               run->m.tpot.p99, !slo ? "" : run->meets ? "  yes" : "  no");
    }
    if (rep)
        print_medians(r);
    if (!slo)
        return;
    if (r->has_goodput)
        printf("goodput rate: %.3f sessions/s meets every SLO (run %zu)\n", r->goodput_rate,
               r->goodput_run + 1);
    else
        printf("goodput rate: none; no rate meets every SLO\n");
}

/* ---- the command ---- */

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static int write_result(const struct sweep_args *a, const struct atr_target *t,
                        const struct atr_sweep_cfg *cfg, const struct atr_sweep_result *r)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_error err;
    int rc = atr_sweep_write(&b, t, cfg, r) < 0
                 ? atr_error_set(&err, "%s: result too large", a->out)
                 : atr_output_write_file(a->out, b.data, b.len, &err);
    atr_buf_release(&b);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}

static int sweep(const struct sweep_args *a, const struct atr_target *t,
                 const struct atr_workload *w, int argc, char **argv)
{
    struct show show = {.quiet = a->quiet, .start = atr_llm_now()};
    struct atr_sweep_cfg cfg = {
        .workload = w, .policy = a->policy, .policy_options = a->policy_opts,
        .seed = a->seed, .n_rates = a->rates, .poisson = a->arrival == 1,
        .repeats = a->repeats,
        .slo = a->slo_spec ? &a->slo : NULL,
        .stop = &stop_requested, .on_start = on_start, .on_done = on_done,
        .on_progress = on_progress, .ctx = &show,
        .desc = {.generated = a->generate != NULL, .requests = a->gen_n,
                 .prompt_tokens = a->gen_in, .output_tokens = a->gen_out,
                 .paths = argv + a->first_arg, .n_paths = (size_t)(argc - a->first_arg)},
    };
    struct atr_sweep_result r;
    struct atr_error err;
    int ran = atr_sweep_run(t, &cfg, &r, &err);
    cli_progress_end(&show.run);
    if (ran < 0) {
        atr_sweep_result_release(&r);
        return cli_fail_err(&err);
    }
    int rc;
    if (r.stopped) {
        cli_fail("interrupted after %zu run%s; nothing written", r.n, cli_s(r.n));
        rc = 128 + SIGINT;
    } else if ((rc = write_result(a, t, &cfg, &r)) == EXIT_OK && !a->quiet) {
        print_table(&cfg, &r);
    }
    atr_sweep_result_release(&r);
    return rc;
}

static int run(int argc, char **argv)
{
    struct sweep_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc;
    struct atr_target t = {0};
    char model[512];
    struct atr_workload w = ATR_WORKLOAD_INIT;
    rc = open_target(&a, &t, model, sizeof model);
    if (rc == EXIT_OK)
        rc = load_workload(&a, &t, argc, argv, &w);
    if (rc == EXIT_OK) {
        if (t.kind == ATR_TARGET_HTTP)
            cli_on_stop_signals(on_stop);
        rc = sweep(&a, &t, &w, argc, argv);
    }
    atr_workload_release(&w);
    atr_target_release(&t);
    return rc;
}

const struct atr_cmd cmd_sweep_entry = {
    "sweep", "rate sweep of a workload on a target, goodput rate under SLOs", help, run, NULL,
};
