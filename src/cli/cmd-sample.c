/* cmd-sample.c - `atr sample`: a seeded subset of traces, stratified by
 * length and tool mix, in two passes so memory stays bounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "gen/sample.h"
#include "trace/reader.h"
#include "trace/writer.h"
#include "util/output.h"

static const char help[] =
    "usage: atr sample --size smoke|dev|paper|N [OPTIONS] FILE... -o OUT\n"
    "\n"
    "Picks a subset of the traces of FILE... (any supported format; - for\n"
    "stdin) and writes it as atr-trace v1 NDJSON in input order. Sizes: smoke\n"
    "= 5, dev = 20, paper = 100 traces, or N. The choice is stratified: traces\n"
    "fall into strata by turns (llm steps; 4 quantile bins) x dominant tool\n"
    "(the most frequent command head, e.g. pytest, grep, editor; the 8 most\n"
    "common, the rest 'other'); every non-empty stratum gets one pick when N\n"
    "allows, the rest go proportionally to stratum size, and the traces within\n"
    "a stratum are drawn by a seeded shuffle: the same seed and input give the\n"
    "same sample. Inputs are read twice (features, then the chosen traces);\n"
    "stdin is spooled to a temporary file. If N is not less than the number of\n"
    "traces, all are written. OUT is written atomically. With --by resource\n"
    "the second key is the resource class of the trace's tool steps instead\n"
    "(the AgentCgroup seed's classes): long-running (a step of a minute or\n"
    "more), else the class that took most of the tool time: bursty (pytest, make,\n"
    "npm/pip install, cargo, mvn), memory (java, node, docker), cpu (python,\n"
    "gcc, go), io (grep, find, git, cat, sed, the editor, and commands of\n"
    "no class).\n"
    "\n"
    "options:\n"
    "  -n, --size SIZE        smoke, dev, paper or a number of traces (required)\n"
    "  -s, --seed S           random seed (default 1)\n"
    "  -f, --from FMT         input format instead of sniffing (see atr help convert)\n"
    "  -b, --block-size N     tokens per hash block for non-atr inputs (default 16)\n"
    "  -o, --output OUT       where to write (required; - for stdout)\n"
    "      --by tool|resource the second stratum key (default tool)\n"
    "  -q, --quiet            no summary on stderr\n";

struct sample_cli {
    size_t size;
    uint64_t seed;
    const char *from, *out;
    struct atr_read_opts read;
    bool quiet;
    int by;                  /* 0 dominant tool, 1 resource class */
    char **files;
    int n_files;
    int spool_fd;            /* stdin copy, -1 if none */
    char spool_path[64];     /* "/proc/self/fd/N": the copy is unlinked at once */
};

static bool parse_size(const char *s, size_t *out)
{
    static const struct { const char *name; size_t n; } named[] = {
        {"smoke", 5}, {"dev", 20}, {"paper", 100},
    };
    for (size_t k = 0; k < sizeof named / sizeof *named; k++)
        if (strcmp(s, named[k].name) == 0) {
            *out = named[k].n;
            return true;
        }
    unsigned long long v;
    if (!cli_parse_uint(s, 1, SIZE_MAX / 2, &v))
        return false;
    *out = (size_t)v;
    return true;
}

static bool opt_size(void *o, const char *arg, const char *cmd)
{
    return parse_size(arg, &((struct sample_cli *)o)->size);
}

#define ARGS struct sample_cli
static const struct opt options[] = {
    OPT_CALL("size", 'n', opt_size, "--size wants smoke, dev, paper or a positive integer"),
    OPT_UINT(ARGS, seed, "seed", 's', 0, UINT64_MAX, "--seed wants a non-negative integer"),
    OPT_FROM(ARGS, from),
    OPT_UINT(ARGS, read.block_size, "block-size", 'b', 1, 1 << 20,
             "--block-size wants an integer 1..1048576"),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_ENUM(ARGS, by, "by", 0, OPT_WORDS("tool", "resource"), "--by wants tool or resource"),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"sample", options};

static int parse_args(int argc, char **argv, struct sample_cli *o)
{
    int first;
    o->seed = 1;
    if (opts_parse(&parser, o, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (!o->size)
        return cli_usage("sample", "missing --size");
    if (!o->out)
        return cli_usage("sample", "missing -o OUT");
    if (first >= argc)
        return cli_usage("sample", "missing input FILE");
    o->files = argv + first;
    o->n_files = argc - first;
    return EXIT_OK;
}

/* stdin cannot be read twice: copy it to an unlinked temporary, reopened by
 * its /proc name on each pass, so nothing is left behind even on a kill. */
static int spool_stdin(struct sample_cli *o, struct atr_error *err)
{
    const char *dir = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/atr-sample-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return atr_error_set(err, "%s: cannot create a temporary file for stdin", tmpl);
    unlink(tmpl);
    char chunk[1 << 16];
    ssize_t n;
    while ((n = read(STDIN_FILENO, chunk, sizeof chunk)) > 0)
        if (write(fd, chunk, (size_t)n) != n) {
            close(fd);
            return atr_error_set(err, "<stdin>: cannot spool to a temporary file (disk full?)");
        }
    if (n < 0) {
        close(fd);
        return atr_error_set(err, "<stdin>: read error");
    }
    o->spool_fd = fd;
    snprintf(o->spool_path, sizeof o->spool_path, "/proc/self/fd/%d", fd);
    return 0;
}

static const char *input_path(const struct sample_cli *o, int k)
{
    return strcmp(o->files[k], "-") == 0 ? o->spool_path : o->files[k];
}

/* Messages about the spool name stdin, not the /proc path. */
static int fail_err(const struct sample_cli *o, const struct atr_error *err)
{
    size_t n = strlen(o->spool_path);
    if (o->spool_fd >= 0 && strncmp(err->msg, o->spool_path, n) == 0)
        return cli_fail("<stdin>%s", err->msg + n);
    return cli_fail_err(err);
}

/* Calls visit(t, index, ctx) for every trace of every input, in order. */
typedef int (*visit_fn)(const struct atr_trace *t, size_t index, void *ctx,
                        struct atr_error *err);

static int each_trace(const struct sample_cli *o, visit_fn visit, void *ctx, size_t *count,
                      struct atr_error *err)
{
    struct atr_trace t = ATR_TRACE_INIT;
    int rc = 0;
    *count = 0;
    for (int k = 0; k < o->n_files && rc == 0; k++) {
        struct atr_reader *r = atr_reader_open(input_path(o, k), o->from, &o->read, err);
        if (!r) {
            rc = -1;
            break;
        }
        while ((rc = atr_reader_next(r, &t, err)) == 1) {
            if (visit(&t, (*count)++, ctx, err) < 0) {
                rc = -1;
                break;
            }
        }
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    return rc;
}

static int visit_features(const struct atr_trace *t, size_t index, void *ctx,
                          struct atr_error *err)
{
    atr_sampler_add(ctx, t);
    return 0;
}

struct writer_ctx {
    const struct atr_sampler *sampler;
    struct atr_output *out;
    struct atr_buf line;
    size_t written;
};

static int visit_write(const struct atr_trace *t, size_t index, void *ctx,
                       struct atr_error *err)
{
    struct writer_ctx *w = ctx;
    if (index >= atr_sampler_count(w->sampler))
        return atr_error_set(err, "%s: input changed between the two passes", t->trace_id);
    if (!atr_sampler_picked(w->sampler, index))
        return 0;
    static const struct atr_write_opts opts = {0};
    atr_buf_clear(&w->line);
    atr_trace_write(&w->line, t, &opts);
    w->written++;
    return atr_output_write(w->out, w->line.data, w->line.len, err);
}

static void print_summary(const struct sample_cli *o, const struct atr_sampler *s,
                          size_t written)
{
    size_t total = atr_sampler_count(s);
    if (o->size >= total)
        fprintf(stderr, "atr: --size %zu is not less than the %zu traces of the input: "
                "writing all of them\n", o->size, total);
    if (o->quiet)
        return;
    fprintf(stderr, "atr: sampled %zu of %zu traces (seed %llu) from %d file%s -> %s\n",
            written, total, (unsigned long long)o->seed, o->n_files, o->n_files == 1 ? "" : "s",
            strcmp(o->out, "-") ? o->out : "<stdout>");
    fprintf(stderr, "  %-13s %-16s %8s %8s\n", "turns", o->by ? "resource class" : "dominant tool",
            "traces", "picked");
    for (size_t k = 0; k < atr_sampler_n_strata(s); k++) {
        const struct atr_sample_stratum *st = atr_sampler_stratum(s, k);
        char range[32];
        snprintf(range, sizeof range, "%u-%u", st->turns_lo, st->turns_hi);
        fprintf(stderr, "  %-13s %-16s %8zu %8zu\n", range, st->tool, st->size, st->picked);
    }
}

/* Pass 1 (features), choice, pass 2 (write the picks). */
static int sample(struct sample_cli *o, struct atr_sampler *s, struct atr_output *out,
                  size_t *written, struct atr_error *err)
{
    size_t count;
    if (each_trace(o, visit_features, s, &count, err) < 0)
        return -1;
    atr_sampler_choose(s, o->size, o->seed);
    struct writer_ctx w = {s, out, ATR_BUF_INIT, 0};
    int rc = each_trace(o, visit_write, &w, &count, err);
    atr_buf_release(&w.line);
    if (rc == 0 && count != atr_sampler_count(s))
        rc = atr_error_set(err, "input changed between the two passes (%zu traces, then %zu)",
                           atr_sampler_count(s), count);
    *written = w.written;
    return rc;
}

static bool reads_stdin(const struct sample_cli *o)
{
    for (int k = 0; k < o->n_files; k++)
        if (strcmp(o->files[k], "-") == 0)
            return true;
    return false;
}

static int run(int argc, char **argv)
{
    struct sample_cli o = {.spool_fd = -1};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    if (reads_stdin(&o) && spool_stdin(&o, &err) < 0)
        return cli_fail_err(&err);
    struct atr_output *out = atr_output_open(o.out, &err);
    if (!out) {
        if (o.spool_fd >= 0)
            close(o.spool_fd);
        return cli_fail_err(&err);
    }
    struct atr_sampler *s = atr_sampler_new();
    atr_sampler_by_resource(s, o.by == 1);
    size_t written = 0;
    rc = sample(&o, s, out, &written, &err);
    if (rc < 0) {
        atr_output_abort(out);
        rc = fail_err(&o, &err);
    } else if (atr_output_commit(out, &err) < 0) {
        rc = cli_fail_err(&err);
    } else {
        print_summary(&o, s, written);
        rc = EXIT_OK;
    }
    atr_sampler_free(s);
    if (o.spool_fd >= 0)
        close(o.spool_fd);
    return rc;
}

const struct atr_cmd cmd_sample_entry = {
    "sample", "seeded smoke/dev/paper subsets, stratified by length and tool mix",
    help, run, NULL,
};
