/* cmd-convert.c - `atr convert`: any supported format -> atr-trace v1 NDJSON. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "trace/reader.h"
#include "trace/otlp.h"
#include "trace/sessions.h"
#include "trace/writer.h"
#include "util/input.h"
#include "util/output.h"

static const char help[] =
    "usage: atr convert [OPTIONS] FILE... -o OUT\n"
    "\n"
    "Converts agent trajectories and request logs to atr-trace v1 NDJSON (one\n"
    "trace per line; docs/trace-format.md). The input format is sniffed from\n"
    "the content; .gz and .zst inputs are decompressed transparently; FILE may\n"
    "be - for stdin. A Parquet file (by its magic), a glob in quotes, or a\n"
    "dataset folder (data/*.parquet, */train-*.parquet, *.parquet) reads as\n"
    "the JSON lines of its rows, through DuckDB (docs/datasets.md; `make deps`\n"
    "installs it), then as any JSON input; a row's line is its row number.\n"
    "OUT is written atomically (a temporary renamed at the end): on any error\n"
    "no output is left behind, and a temporary that a killed run left (its\n"
    "writer's lock gone) goes at the next run writing OUT. -o - writes to\n"
    "stdout.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT      where to write (required)\n"
    "  -f, --from FMT        input format instead of sniffing (see below)\n"
    "  -t, --to FMT          output format: atr (default, atr-trace NDJSON) or\n"
    "                        otlp: OTLP/JSON GenAI spans, one export document\n"
    "                        per trace and line, counts and timings only\n"
    "                        (docs/otel.md)\n"
    "  -b, --block-size N    tokens per hash block (default 16)\n"
    "      --keep-content    also write message text (\"messages\", \"output\")\n"
    "      --redact-commands drop tool commands, keep only their program name\n"
    "      --expand          full hash_ids lists instead of prefix references\n"
    "      --sessions        fold an atr proxy journal into one trace per session\n"
    "      --max-line BYTES  largest line/document accepted (default 256M)\n"
    "      --limit N         stop after N traces (the rest is not read)\n"
    "      --sample N        Parquet input: a uniform random sample of N rows,\n"
    "                        chosen from the footers' row counts, read alone\n"
    "                        (one input; in file order)\n"
    "  -s, --seed S          the sample's seed (default 1)\n"
    "  -q, --quiet           no summary or progress line on stderr\n"
    "\n"
    "formats:\n"
    "  atr            atr-trace v1 NDJSON (normalises, expands/compacts)\n"
    "  swe-agent      SWE-agent .traj (trajectory + history + info)\n"
    "  mini-swe-agent mini-swe-agent .traj.json (1.1 with tool_calls; legacy array)\n"
    "  openhands      OpenHands/OpenDevin event streams; eval output JSONL\n"
    "  openai-chat    rows with OpenAI-chat \"messages\" (+ tool_calls), JSON array or NDJSON\n"
    "  mooncake       Mooncake request trace JSONL (512-token hash blocks)\n"
    "  azure          Azure LLM inference trace CSV\n"
    "  burstgpt       BurstGPT CSV\n"
    "  playwright     Playwright trace.zip\n"
    "  browsergym     BrowserGym web-agent steps (Go-Browse-WA JSONL rows)\n"
    "  otlp           OpenTelemetry OTLP/JSON GenAI spans, one trace per traceId\n"
    "                 (exports, JSON lines of them, or of spans; docs/otel.md)\n"
    "\n"
    "Message text is never written unless --keep-content; tool commands are\n"
    "kept (replay runs them) unless --redact-commands. OTLP content attributes\n"
    "(prompts, completions, tool arguments and results) are never read.\n"
    "\n"
    "--sessions reads the journal of atr proxy (one request per line; rotated\n"
    "files too: J.1 J) and writes one trace per meta.session, its requests in\n"
    "start order as llm steps and the time between a reply and the next\n"
    "request as \"client\" tool steps, which replay waits as think time\n"
    "(docs/proxy.md). A line without meta.session is an error.\n";

struct convert_opts {
    const char *out, *from;
    struct atr_read_opts read;
    struct atr_write_opts write;
    bool quiet, sessions;
    unsigned long limit;     /* --limit: traces to write at most; 0 = all */
    unsigned long long sample; /* --sample: Parquet rows to read; 0 = all */
    uint64_t seed;
    int to;                  /* --to: 0 atr-trace, 1 OTLP/JSON */
    int first_arg;           /* argv[first_arg..argc): the input FILEs */
};

struct convert_totals {
    unsigned long files, traces, steps, llm, tool;
};

#define ARGS struct convert_opts
static const struct opt options[] = {
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_FROM(ARGS, from),
    OPT_UINT(ARGS, read.block_size, "block-size", 'b', 1, 1 << 20,
             "--block-size wants an integer 1..1048576"),
    OPT_FLAG(ARGS, read.keep_content, "keep-content", 0),
    OPT_FLAG(ARGS, write.redact_commands, "redact-commands", 0),
    OPT_FLAG(ARGS, write.expand, "expand", 0),
    OPT_FLAG(ARGS, sessions, "sessions", 0),
    OPT_SIZE(ARGS, read.max_line, "max-line", 0, 1, SIZE_MAX, "--max-line wants a size like 64M"),
    OPT_UINT(ARGS, limit, "limit", 0, 1, ULONG_MAX, "--limit wants a positive integer"),
    OPT_UINT(ARGS, sample, "sample", 0, 1, ULLONG_MAX, "--sample wants a positive integer"),
    OPT_UINT(ARGS, seed, "seed", 's', 0, UINT64_MAX, "--seed wants a non-negative integer"),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_ENUM(ARGS, to, "to", 't', OPT_WORDS("atr", "otlp"), "--to wants atr or otlp"),
    OPT_END,
};
#undef ARGS

/* One trace as a line of the output format. */
static void write_trace(struct atr_buf *line, const struct atr_trace *t,
                        const struct convert_opts *o)
{
    atr_buf_clear(line);
    if (o->to == 1)
        atr_trace_write_otlp(line, t, ATR_OTLP_EPOCH_NS);
    else
        atr_trace_write(line, t, &o->write);
}

static const struct opts_cmd parser = {"convert", options};

static int parse_args(int argc, char **argv, struct convert_opts *o)
{
    if (opts_parse(&parser, o, argc, argv, &o->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (!o->out)
        return cli_usage("convert", "missing -o OUT");
    if (o->first_arg >= argc)
        return cli_usage("convert", "missing input FILE");
    if (o->sample && (argc - o->first_arg != 1 || o->sessions))
        return cli_usage("convert", "--sample takes one input (a Parquet file, a quoted glob "
                         "or a dataset folder), without --sessions");
    return EXIT_OK;
}

/* Streams one input file's traces into out. */
static int convert_file(const char *path, const struct convert_opts *o, struct atr_output *out,
                        struct atr_trace *t, struct atr_buf *line, struct convert_totals *tot,
                        struct cli_progress *bar, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    if (o->sample && atr_input_sample(in, o->sample, o->seed, err) < 0) {
        atr_input_close(in);
        return -1;
    }
    struct atr_reader *r = atr_reader_open_input(in, o->from, &o->read, err);
    if (!r)
        return -1;
    int rc = 0;
    while ((!o->limit || tot->traces < o->limit) && (rc = atr_reader_next(r, t, err)) == 1) {
        write_trace(line, t, o);
        if (atr_output_write(out, line->data, line->len, err) < 0) {
            rc = -1;
            break;
        }
        tot->traces++;
        tot->steps += t->n_steps;
        double now = cli_progress_now();
        if (cli_progress_due(bar, now)) {
            unsigned long long done, total;
            atr_input_progress(r->in, &done, &total);
            bar->name = atr_reader_name(r);
            cli_progress_bytes(bar, now, done, total, tot->traces);
        }
        for (size_t k = 0; k < t->n_steps; k++)
            *(t->steps[k].kind == ATR_STEP_LLM ? &tot->llm : &tot->tool) += 1;
    }
    atr_reader_close(r);
    tot->files++;
    return rc;
}

/* --sessions: every input's requests folded, then one trace per session. */
static int convert_sessions(int argc, char **argv, const struct convert_opts *o,
                            struct atr_output *out, struct convert_totals *tot,
                            struct atr_error *err)
{
    struct atr_sessions *s = atr_sessions_new();
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_buf line = ATR_BUF_INIT;
    int rc = 0;
    for (int i = o->first_arg; i < argc && rc == 0; i++, tot->files++)
        rc = atr_sessions_read(s, argv[i], o->from, &o->read, err);
    for (size_t k = 0; rc == 0 && k < atr_sessions_count(s) && (!o->limit || k < o->limit);
         k++) {
        atr_sessions_build(s, k, o->read.keep_content, &t);
        write_trace(&line, &t, o);
        rc = atr_output_write(out, line.data, line.len, err);
        tot->traces++;
        tot->steps += t.n_steps;
        for (size_t j = 0; j < t.n_steps; j++)
            *(t.steps[j].kind == ATR_STEP_LLM ? &tot->llm : &tot->tool) += 1;
    }
    atr_buf_release(&line);
    atr_trace_release(&t);
    atr_sessions_free(s);
    return rc;
}

static int run(int argc, char **argv)
{
    struct convert_opts o = {.read.warn = cli_warn, .seed = 1};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    struct atr_output *out = atr_output_open(o.out, &err);
    if (!out)
        return cli_fail_err(&err);
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_buf line = ATR_BUF_INIT;
    struct convert_totals tot = {0};
    struct cli_progress bar;
    cli_progress_start(&bar, "convert", o.quiet);
    int failed = 0;
    if (o.sessions)
        failed = convert_sessions(argc, argv, &o, out, &tot, &err) < 0;
    for (int i = o.first_arg; i < argc && !failed && !o.sessions &&
                              (!o.limit || tot.traces < o.limit); i++)
        failed = convert_file(argv[i], &o, out, &t, &line, &tot, &bar, &err) < 0;
    cli_progress_end(&bar);
    atr_trace_release(&t);
    atr_buf_release(&line);
    if (failed) {
        atr_output_abort(out);
        return cli_fail_err(&err);
    }
    if (atr_output_commit(out, &err) < 0)
        return cli_fail_err(&err);
    if (!o.quiet)
        fprintf(stderr, "atr: converted %lu file%s: %lu trace%s, %lu step%s (%lu llm, %lu tool)"
                " -> %s\n", tot.files, cli_s(tot.files), tot.traces, cli_s(tot.traces),
                tot.steps, cli_s(tot.steps), tot.llm, tot.tool,
                strcmp(o.out, "-") ? o.out : "<stdout>");
    return EXIT_OK;
}

const struct atr_cmd cmd_convert_entry = {
    "convert", "convert traces of any supported format to atr-trace NDJSON", help, run, NULL,
};
