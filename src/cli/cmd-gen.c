/* cmd-gen.c - `atr gen`: seeded synthetic agent traces as atr-trace NDJSON,
 * and (--kind gguf) a random-weight model for a real serving engine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "gen/gen.h"
#include "gen/gguf.h"
#include "trace/writer.h"
#include "util/output.h"

static const char help[] =
    "usage: atr gen --kind swe|chat|requests|noisy --traces N [OPTIONS] -o OUT\n"
    "       atr gen --kind gguf [--preset tiny|small] [SHAPE OPTIONS] -o FILE.gguf\n"
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
    "            --output-tokens (or a count drawn uniformly from a range\n"
    "            LO-HI for each request); unique prompts unless --shared-prefix\n"
    "  noisy     noisy neighbours for `atr replay tools --tenants`: 3..6 bash\n"
    "            steps, each a CPU spin (1-4 busy loops for 0.25-1 s), a memory\n"
    "            hog (dd through a 64-256 MiB buffer) or a fork storm (100-400\n"
    "            /bin/true); all start at 0 (--rate and token options unused)\n"
    "  gguf      not a trace: a Llama-architecture model with seeded random\n"
    "            weights (F16) as a GGUF v3 file for llama.cpp's llama-server;\n"
    "            each prompt word of `atr replay llm` is one token of its\n"
    "            vocabulary (docs/engines.md); --traces is not used\n"
    "llm dur_ms = 0.015 ms x input tokens + 25 ms x output tokens. Traces\n"
    "arrive as a Poisson process at --rate (start_ms; the first at 0).\n"
    "\n"
    "options:\n"
    "  -k, --kind KIND         swe, chat, requests, noisy or gguf (required)\n"
    "  -n, --traces N          number of traces (required, 1..10000000)\n"
    "  -s, --seed S            random seed (default 1)\n"
    "  -r, --rate R            arrivals per second, or inf: all at 0 (default 1)\n"
    "  -b, --block-size N      tokens per hash block (default 16)\n"
    "      --input-tokens N|LO-HI   requests: prompt tokens (default 200)\n"
    "      --output-tokens N|LO-HI  requests: reply tokens (default 64)\n"
    "      --shared-prefix N   requests: leading prompt tokens all requests share\n"
    "      --subagent-prob P   swe: chance 0..1 that a turn forks sub-agents (default\n"
    "                          0: none); they run in parallel from the forking\n"
    "                          call and the next call joins them (atr-trace/1.1\n"
    "                          \"parents\" and \"agent\"; docs/gen.md)\n"
    "      --subagent-fanout N swe: sub-agents per fork, 1..16 (default 2)\n"
    "      --subagent-depth D  swe: levels of sub-agents, 1..4 (default 1: a\n"
    "                          sub-agent forks none)\n"
    "      --keep-content      also write the synthetic messages\n"
    "      --expand            full hash_ids lists instead of prefix references\n"
    "  -o, --output OUT        where to write (required; - for stdout)\n"
    "  -q, --quiet             no summary on stderr\n"
    "\n"
    "gguf options (a preset, then any of its numbers overridden):\n"
    "      --preset NAME       tiny (default): 2 layers, 64-d, 4 heads / 2 KV\n"
    "                          heads, FF 256, ~0.5 MiB; small: 8 layers, 512-d,\n"
    "                          8/4 heads, FF 1408, ~47 MiB; both context 4096\n"
    "      --layers N          transformer blocks\n"
    "      --embd N            embedding length (heads must divide it)\n"
    "      --heads N           attention heads\n"
    "      --kv-heads N        KV heads (must divide --heads)\n"
    "      --ff N              feed-forward length\n"
    "      --ctx N             training context length (llama-server's default -c)\n"
    "      --vocab N           tokens (default: the fixed ones; more are padding)\n"
    "      --eos-prob P        wanted end-of-sequence probability per generated\n"
    "                          token, 0..0.5 (default 0.01; measured: docs/engines.md)\n";

struct gen_cli {
    struct atr_gen_opts gen;
    struct atr_write_opts write;
    const char *out;
    bool quiet, have_kind;
    bool noisy;                 /* --kind noisy: gen-noisy.c, not atr_gen */
    bool gguf;                  /* --kind gguf: gen/gguf.c */
    const char *preset;
    struct atr_gguf_model shape;   /* overrides of the preset; UNSET = not given */
};

#define UNSET UINT32_MAX

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

static bool opt_rate(void *o, const char *arg, const char *cmd)
{
    return parse_rate(arg, &((struct gen_cli *)o)->gen.rate);
}

#define MAX_TOKENS 10000000

/* A count for cli_parse_uint: digits only (it would take a leading space). */
static bool parse_count(const char *s, unsigned long long min, unsigned long long *out)
{
    return *s >= '0' && *s <= '9' && cli_parse_uint(s, min, MAX_TOKENS, out);
}

/* "N" or "LO-HI" (1 <= LO <= HI <= MAX_TOKENS): *max is 0 for "N". */
static bool parse_count_range(const char *s, uint64_t *min, uint64_t *max)
{
    char lo_s[24];
    const char *dash = strchr(s, '-');
    unsigned long long lo, hi = 0;
    if (dash) {
        size_t n = (size_t)(dash - s);
        if (n >= sizeof lo_s)
            return false;
        memcpy(lo_s, s, n);
        lo_s[n] = '\0';
    }
    if (!parse_count(dash ? lo_s : s, 1, &lo) || (dash && !parse_count(dash + 1, lo, &hi)))
        return false;
    *min = lo;
    *max = hi;
    return true;
}

static bool opt_input_tokens(void *o, const char *arg, const char *cmd)
{
    struct atr_gen_opts *g = &((struct gen_cli *)o)->gen;
    return parse_count_range(arg, &g->input_tokens, &g->input_tokens_max);
}

static bool opt_output_tokens(void *o, const char *arg, const char *cmd)
{
    struct atr_gen_opts *g = &((struct gen_cli *)o)->gen;
    return parse_count_range(arg, &g->output_tokens, &g->output_tokens_max);
}

static bool opt_kind(void *base, const char *arg, const char *cmd)
{
    struct gen_cli *o = base;
    o->noisy = strcmp(arg, "noisy") == 0;
    o->gguf = strcmp(arg, "gguf") == 0;
    o->have_kind = true;
    return o->noisy || o->gguf || atr_gen_kind_parse(arg, &o->gen.kind);
}

#define ARGS struct gen_cli
static const struct opt options[] = {
    OPT_CALL("kind", 'k', opt_kind, "unknown kind '%s' (swe, chat, requests, noisy, gguf)"),
    OPT_UINT(ARGS, gen.traces, "traces", 'n', 1, 10000000,
             "--traces wants an integer 1..10000000"),
    OPT_UINT(ARGS, gen.seed, "seed", 's', 0, INT64_MAX, "--seed wants a non-negative integer"),
    OPT_CALL("rate", 'r', opt_rate, "--rate wants a positive number or inf"),
    OPT_UINT(ARGS, gen.block_size, "block-size", 'b', 1, 1 << 20,
             "--block-size wants an integer 1..1048576"),
    OPT_CALL("input-tokens", 0, opt_input_tokens,
             "--input-tokens wants an integer 1..10000000 or a range LO-HI, LO <= HI"),
    OPT_CALL("output-tokens", 0, opt_output_tokens,
             "--output-tokens wants an integer 1..10000000 or a range LO-HI, LO <= HI"),
    OPT_UINT(ARGS, gen.shared_prefix, "shared-prefix", 0, 0, 10000000,
             "--shared-prefix wants an integer 0..10000000"),
    OPT_DOUBLE(ARGS, gen.subagent_prob, "subagent-prob", 0, 0, 1,
               "--subagent-prob wants a number 0..1"),
    OPT_UINT(ARGS, gen.subagent_fanout, "subagent-fanout", 0, 1, 16,
             "--subagent-fanout wants an integer 1..16"),
    OPT_UINT(ARGS, gen.subagent_depth, "subagent-depth", 0, 1, 4,
             "--subagent-depth wants an integer 1..4"),
    OPT_FLAG(ARGS, gen.keep_content, "keep-content", 0),
    OPT_FLAG(ARGS, write.expand, "expand", 0),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_STRING(ARGS, preset, "preset", 0),
    OPT_UINT(ARGS, shape.layers, "layers", 0, 0, 1 << 30, "--layers wants an integer"),
    OPT_UINT(ARGS, shape.embd, "embd", 0, 0, 1 << 30, "--embd wants an integer"),
    OPT_UINT(ARGS, shape.heads, "heads", 0, 0, 1 << 30, "--heads wants an integer"),
    OPT_UINT(ARGS, shape.kv_heads, "kv-heads", 0, 0, 1 << 30, "--kv-heads wants an integer"),
    OPT_UINT(ARGS, shape.ff, "ff", 0, 0, 1 << 30, "--ff wants an integer"),
    OPT_UINT(ARGS, shape.ctx, "ctx", 0, 0, 1 << 30, "--ctx wants an integer"),
    OPT_UINT(ARGS, shape.vocab, "vocab", 0, 0, 1 << 30, "--vocab wants an integer"),
    OPT_DOUBLE(ARGS, shape.eos_prob, "eos-prob", 0, 0, 0.5, "--eos-prob wants a number 0..0.5"),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"gen", options};

static int parse_args(int argc, char **argv, struct gen_cli *o)
{
    int first;
    o->gen.seed = 1;
    o->gen.rate = 1;
    o->shape = (struct atr_gguf_model){UNSET, UNSET, UNSET, UNSET, UNSET, UNSET, UNSET, 0.01, 0};
    if (opts_parse(&parser, o, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first < argc)
        return cli_usage("gen", "unexpected argument '%s'", argv[first]);
    if (!o->have_kind)
        return cli_usage("gen", "missing --kind");
    bool subagents = o->gen.subagent_prob > 0 || o->gen.subagent_fanout || o->gen.subagent_depth;
    if (subagents && (o->noisy || o->gguf || o->gen.kind != ATR_GEN_SWE))
        return cli_usage("gen", "--subagent-prob, --subagent-fanout and --subagent-depth are "
                         "for --kind swe");
    if (!o->gguf && !o->gen.traces)
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

/* The preset's shape with the options given on top. */
static int gguf_shape(const struct gen_cli *o, struct atr_gguf_model *m)
{
    const char *preset = o->preset ? o->preset : "tiny";
    if (!atr_gguf_preset(preset, m))
        return cli_usage("gen", "unknown preset '%s' (tiny, small)", preset);
#define OVERRIDE(f) (m->f = o->shape.f != UNSET ? o->shape.f : m->f)
    OVERRIDE(layers), OVERRIDE(embd), OVERRIDE(heads), OVERRIDE(kv_heads);
    OVERRIDE(ff), OVERRIDE(ctx), OVERRIDE(vocab);
#undef OVERRIDE
    m->eos_prob = o->shape.eos_prob;
    m->seed = o->gen.seed;
    return EXIT_OK;
}

static int run_gguf(const struct gen_cli *o)
{
    struct atr_gguf_model m;
    struct atr_error err;
    if (gguf_shape(o, &m) != EXIT_OK)
        return EXIT_USAGE;
    if (atr_gguf_model_check(&m, &err) < 0)
        return cli_usage("gen", "%s", err.msg);
    struct atr_output *out = atr_output_open(o->out, &err);
    if (!out)
        return cli_fail_err(&err);
    if (atr_gguf_model_write(&m, out, &err) < 0) {
        atr_output_abort(out);
        return cli_fail_err(&err);
    }
    if (atr_output_commit(out, &err) < 0)
        return cli_fail_err(&err);
    if (!o->quiet)
        fprintf(stderr, "atr: generated a gguf model (%u layers, %u-d, %u/%u heads, FF %u, "
                "seed %llu) -> %s\n", m.layers, m.embd, m.heads, m.kv_heads, m.ff,
                (unsigned long long)m.seed, strcmp(o->out, "-") ? o->out : "<stdout>");
    return EXIT_OK;
}

static int run(int argc, char **argv)
{
    struct gen_cli o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    if (o.gguf)
        return run_gguf(&o);
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
        fprintf(stderr, "atr: generated %llu %s trace%s (seed %llu), %llu step%s -> %s\n",
                (unsigned long long)o.gen.traces, o.noisy ? "noisy" : atr_gen_kind_name(o.gen.kind),
                cli_s(o.gen.traces), (unsigned long long)o.gen.seed, steps, cli_s(steps),
                strcmp(o.out, "-") ? o.out : "<stdout>");
    return EXIT_OK;
}

const struct atr_cmd cmd_gen_entry = {
    "gen", "seeded synthetic agent traces (swe, chat, requests, noisy), gguf models", help, run, NULL,
};
