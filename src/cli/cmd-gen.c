/* cmd-gen.c - `atr gen`: seeded synthetic agent traces as atr-trace NDJSON. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "gen/gen.h"
#include "trace/writer.h"
#include "util/output.h"

static const char help[] =
    "usage: atr gen --kind swe|chat|requests|noisy --traces N [OPTIONS] -o OUT\n"
    "\n"
    "Writes seeded synthetic traces as atr-trace v1 NDJSON. The output is a\n"
    "function of the options only: the same seed gives the same bytes on every\n"
    "run and machine, and trace i does not depend on how many traces follow.\n"
    "Text is drawn from a fixed vocabulary and run through the same token\n"
    "estimator and block hasher as converted traces, so prefix sharing is real.\n"
    "\n"
    "kinds (full distributions: docs/gen.md):\n"
    "  swe       coding agent: a shared ~2200-token system prompt, a task, then\n"
    "            turns ~ lognormal(median 25, sigma 0.6, 1..100) of one llm step\n"
    "            (reply ~150 tokens) and one tool step: cat/sed, grep, find, ls,\n"
    "            git diff/status, python reproduce.py, pytest, pip install,\n"
    "            python -c, editor str_replace/create; output length, duration\n"
    "            and exit code lognormal/Bernoulli per command kind\n"
    "  chat      2..12 user/assistant turns (user ~50, reply ~180 tokens) under\n"
    "            one of 4 system prompts; user think time ~ exponential(15 s)\n"
    "  requests  one llm step per trace with exactly --input-tokens and\n"
    "            --output-tokens; unique prompts unless --shared-prefix\n"
    "  noisy     noisy neighbours for `atr replay tools --tenants`: 3..6 bash\n"
    "            steps, each a CPU spin (1-4 busy loops for 0.25-1 s), a memory\n"
    "            hog (dd through a 64-256 MiB buffer) or a fork storm (100-400\n"
    "            /bin/true); all start at 0 (--rate and token options unused)\n"
    "llm dur_ms = 0.015 ms x input tokens + 25 ms x output tokens. Traces\n"
    "arrive as a Poisson process at --rate (start_ms; the first at 0).\n"
    "\n"
    "options:\n"
    "  -k, --kind KIND         swe, chat, requests or noisy (required)\n"
    "  -n, --traces N          number of traces (required, 1..10000000)\n"
    "  -s, --seed S            random seed (default 1)\n"
    "  -r, --rate R            arrivals per second, or inf: all at 0 (default 1)\n"
    "  -b, --block-size N      tokens per hash block (default 16)\n"
    "      --input-tokens N    requests: prompt tokens (default 200)\n"
    "      --output-tokens N   requests: reply tokens (default 64)\n"
    "      --shared-prefix N   requests: leading prompt tokens all requests share\n"
    "      --keep-content      also write the synthetic messages\n"
    "      --expand            full hash_ids lists instead of prefix references\n"
    "  -o, --output OUT        where to write (required; - for stdout)\n"
    "  -q, --quiet             no summary on stderr\n";

struct gen_cli {
    struct atr_gen_opts gen;
    struct atr_write_opts write;
    const char *out;
    bool quiet, have_kind;
    bool noisy;                 /* --kind noisy: gen-noisy.c, not atr_gen */
};

static bool parse_rate(const char *s, double *out)
{
    if (strcmp(s, "inf") == 0 || strcmp(s, "infinity") == 0) {
        *out = INFINITY;
        return true;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* One option's value; returns EXIT_OK or the usage status. */
static int parse_one(int c, const char *arg, struct gen_cli *o)
{
    unsigned long long v;
    switch (c) {
    case 'k':
        o->noisy = strcmp(arg, "noisy") == 0;
        if (!o->noisy && !atr_gen_kind_parse(arg, &o->gen.kind))
            return cli_usage("gen", "unknown kind '%s' (swe, chat, requests, noisy)", arg);
        o->have_kind = true;
        return EXIT_OK;
    case 'n':
        if (!cli_parse_uint(arg, 1, 10000000, &v))
            return cli_usage("gen", "--traces wants an integer 1..10000000");
        o->gen.traces = v;
        return EXIT_OK;
    case 's':
        if (!cli_parse_uint(arg, 0, INT64_MAX, &v))
            return cli_usage("gen", "--seed wants a non-negative integer");
        o->gen.seed = v;
        return EXIT_OK;
    case 'r':
        if (!parse_rate(arg, &o->gen.rate))
            return cli_usage("gen", "--rate wants a positive number or inf");
        return EXIT_OK;
    case 'b':
        if (!cli_parse_uint(arg, 1, 1 << 20, &v))
            return cli_usage("gen", "--block-size wants an integer 1..1048576");
        o->gen.block_size = (uint32_t)v;
        return EXIT_OK;
    case 'I': case 'O': case 'P':
        if (!cli_parse_uint(arg, c == 'P' ? 0 : 1, 10000000, &v))
            return cli_usage("gen", "--%s wants an integer %s..10000000",
                             c == 'I' ? "input-tokens" : c == 'O' ? "output-tokens"
                                                                  : "shared-prefix",
                             c == 'P' ? "0" : "1");
        *(c == 'I' ? &o->gen.input_tokens : c == 'O' ? &o->gen.output_tokens
                                                     : &o->gen.shared_prefix) = v;
        return EXIT_OK;
    }
    return cli_usage("gen", "unknown option");
}

static int parse_args(int argc, char **argv, struct gen_cli *o)
{
    static const struct option longs[] = {
        {"kind", required_argument, NULL, 'k'},
        {"traces", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"rate", required_argument, NULL, 'r'},
        {"block-size", required_argument, NULL, 'b'},
        {"input-tokens", required_argument, NULL, 'I'},
        {"output-tokens", required_argument, NULL, 'O'},
        {"shared-prefix", required_argument, NULL, 'P'},
        {"keep-content", no_argument, NULL, 'K'},
        {"expand", no_argument, NULL, 'E'},
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0},
    };
    o->gen.seed = 1;
    o->gen.rate = 1;
    int c, rc;
    while ((c = getopt_long(argc, argv, "k:n:s:r:b:o:q", longs, NULL)) != -1) {
        switch (c) {
        case 'K': o->gen.keep_content = true; break;
        case 'E': o->write.expand = true; break;
        case 'o': o->out = optarg; break;
        case 'q': o->quiet = true; break;
        default:
            if ((rc = parse_one(c, optarg, o)) != EXIT_OK)
                return rc;
        }
    }
    if (optind < argc)
        return cli_usage("gen", "unexpected argument '%s'", argv[optind]);
    if (!o->have_kind)
        return cli_usage("gen", "missing --kind");
    if (!o->gen.traces)
        return cli_usage("gen", "missing --traces N");
    if (!o->out)
        return cli_usage("gen", "missing -o OUT");
    return EXIT_OK;
}

/* Generates every trace into out; counts steps. */
static int write_all(struct atr_gen *g, const struct gen_cli *o, struct atr_output *out,
                     unsigned long long *steps, struct atr_error *err)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_buf line = ATR_BUF_INIT;
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && (o->noisy ? i < o->gen.traces : atr_gen_next(g, &t) == 1);
         i++) {
        if (o->noisy)
            atr_gen_noisy_trace(o->gen.seed, i, &t);
        atr_buf_clear(&line);
        atr_trace_write(&line, &t, &o->write);
        rc = atr_output_write(out, line.data, line.len, err);
        *steps += t.n_steps;
    }
    atr_trace_release(&t);
    atr_buf_release(&line);
    return rc;
}

static int run(int argc, char **argv)
{
    struct gen_cli o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    struct atr_gen *g = atr_gen_new(&o.gen, &err);
    if (!g)
        return cli_usage("gen", "%s", err.msg);
    struct atr_output *out = atr_output_open(o.out, &err);
    if (!out) {
        atr_gen_free(g);
        return cli_fail_err(&err);
    }
    unsigned long long steps = 0;
    rc = write_all(g, &o, out, &steps, &err);
    atr_gen_free(g);
    if (rc < 0) {
        atr_output_abort(out);
        return cli_fail_err(&err);
    }
    if (atr_output_commit(out, &err) < 0)
        return cli_fail_err(&err);
    if (!o.quiet)
        fprintf(stderr, "atr: generated %llu %s traces (seed %llu), %llu steps -> %s\n",
                (unsigned long long)o.gen.traces, o.noisy ? "noisy" : atr_gen_kind_name(o.gen.kind),
                (unsigned long long)o.gen.seed, steps, strcmp(o.out, "-") ? o.out : "<stdout>");
    return EXIT_OK;
}

const struct atr_cmd cmd_gen_entry = {
    "gen", "seeded synthetic agent traces (swe, chat, requests)", help, run, NULL,
};
