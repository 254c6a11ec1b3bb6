/* cmd-stats.c - `atr stats`: agent shapes of trace files (turns, tool mix,
 * tokens, prefix reuse, timing, token estimate error), as a table or JSON. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "json/writer.h"
#include "report/stats.h"
#include "trace/reader.h"
#include "util/buf.h"
#include "util/output.h"

static const char help[] =
    "usage: atr stats [OPTIONS] FILE...\n"
    "\n"
    "Summarises the shape of agent traces in any supported format (sniffed;\n"
    ".gz/.zst transparently; - for stdin); several files are aggregated.\n"
    "Percentiles are exact (numpy's default linear interpolation). Memory is\n"
    "bounded by the largest trace, 16 bytes per llm step and 8 per trace (for\n"
    "the percentiles) and the capped id set of --max-ids.\n"
    "\n"
    "options:\n"
    "      --json            one JSON object instead of the table\n"
    "  -f, --from FMT        input format instead of sniffing (see atr help convert)\n"
    "  -b, --block-size N    tokens per hash block for non-atr inputs (default 16)\n"
    "  -o, --output OUT      write there (atomically) instead of stdout\n"
    "      --max-ids N       cap of the cross-trace block id set (default 8388608);\n"
    "                        past it the across-trace reuse is approximate\n"
    "      --max-line BYTES  largest line/document accepted (default 256M)\n"
    "\n"
    "figures (JSON keys; absent figures are null, shown as n/a):\n"
    "  files[]                {name, format, traces, steps}\n"
    "  traces, steps, llm_steps, tool_steps, llm_pct, tool_pct\n"
    "  turns_per_trace        llm steps per trace: {n, mean, p50, p95, max, total}\n"
    "  input_tokens, output_tokens   per llm step, same keys (steps with counts)\n"
    "  tool_mix               {kinds, top:[{name, count, pct}]}: name is the command\n"
    "                         head (pytest, pip, git...), else tool:action or tool;\n"
    "                         top 15, the rest as \"other\"\n"
    "  prefix_reuse.within    {shared, blocks, ratio}: per llm step, the longest\n"
    "                         leading run of hash ids shared with an earlier llm step\n"
    "                         of its trace, summed, over all hash ids\n"
    "  prefix_reuse.across    {shared, blocks, ratio, approximate}: leading run of\n"
    "                         each trace's first llm step seen in earlier traces'\n"
    "                         first llm steps (a shared system prompt)\n"
    "  timing                 {llm_ms, llm_steps_timed, tool_ms, tool_steps_timed,\n"
    "                         llm_tool_ratio}: summed dur_ms where known\n"
    "  token_error.{step_input,step_output,trace_input,trace_output}\n"
    "                         {n, estimated, recorded, error_pct}: atr's token\n"
    "                         estimates vs the source's counts, per step\n"
    "                         (tokens_from recorded: estimated_*_tokens vs the\n"
    "                         counts) or per trace (meta recorded_*_tokens);\n"
    "                         error_pct = (estimated - recorded) / recorded * 100\n"
    "  token_origin           [{source, origin, steps, input_tokens,\n"
    "                         output_tokens}]: llm steps per source by where their\n"
    "                         counts came from (tokens_from: recorded, scaled,\n"
    "                         estimated; unknown without it)\n"
    "  sub_agents             {traces, agents, steps, steps_pct}: traces with\n"
    "                         sub-agents (step \"agent\", atr-trace/1.1), their\n"
    "                         distinct sub-agents summed, and those agents' steps\n"
    "                         (share of all steps); only when some trace has one\n";

struct stats_opts {
    const char *from, *out;
    bool json;
    struct atr_read_opts read;
    struct atr_stats_opts stats;
    int first_arg;           /* argv[first_arg..argc): the FILEs */
};

#define ARGS struct stats_opts
static const struct opt options[] = {
    OPT_FLAG(ARGS, json, "json", 0),
    OPT_FROM(ARGS, from),
    OPT_UINT(ARGS, read.block_size, "block-size", 'b', 1, 1 << 20,
             "--block-size wants an integer 1..1048576"),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_UINT(ARGS, stats.max_seen_ids, "max-ids", 0, 1, (unsigned long long)1 << 32,
             "--max-ids wants an integer 1..4294967296"),
    OPT_SIZE(ARGS, read.max_line, "max-line", 0, 1, SIZE_MAX, "--max-line wants a size like 64M"),
    OPT_END,
};
#undef ARGS

/* Unknown options and missing values are named ("unknown option '-z'"). */
static const struct opts_cmd parser = {"stats", options};

static int parse_args(int argc, char **argv, struct stats_opts *o)
{
    if (opts_parse(&parser, o, argc, argv, &o->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (o->first_arg >= argc)
        return cli_usage("stats", "missing FILE");
    return EXIT_OK;
}

static int add_file(struct atr_stats *st, const char *path, const struct stats_opts *o,
                    struct atr_trace *t, struct atr_error *err)
{
    struct atr_reader *r = atr_reader_open(path, o->from, &o->read, err);
    if (!r)
        return -1;
    atr_stats_add_file(st, atr_reader_name(r), atr_reader_format(r));
    int rc;
    while ((rc = atr_reader_next(r, t, err)) == 1)
        atr_stats_add(st, t);
    atr_reader_close(r);
    return rc;
}

/* ---- the human table ---- */

/* A number right-aligned in width, or "n/a". */
static void put_num(struct atr_buf *b, int width, int decimals, double x)
{
    char cell[CLI_CELL_MAX];
    atr_buf_puts(b, cli_cell(cell, width, decimals, x));
}

/* A percentage right-aligned in width, then " %"; or "n/a" where the "%"
 * would end. */
static void put_pct(struct atr_buf *b, int width, double x)
{
    if (isnan(x))
        atr_buf_printf(b, "%*s", width + 2, "n/a");
    else
        atr_buf_printf(b, "%*.1f %%", width, x);
}

static void put_dist(struct atr_buf *b, const char *label, const struct atr_stats_dist *d)
{
    atr_buf_printf(b, "%-24s%8llu", label, (unsigned long long)d->n);
    put_num(b, 11, 2, d->mean);
    put_num(b, 11, 2, d->p50);
    put_num(b, 11, 2, d->p95);
    put_num(b, 11, 0, d->max);
    put_num(b, 13, 0, d->total);
    atr_buf_putc(b, '\n');
}

static void table_counts(struct atr_buf *b, const struct atr_stats_summary *s)
{
    atr_buf_puts(b, "files\n");
    for (size_t i = 0; i < s->n_files; i++) {
        const struct atr_stats_file *f = &s->files[i];
        atr_buf_printf(b, "  %s  (%s, %llu trace%s, %llu step%s)\n", f->name, f->format,
                       (unsigned long long)f->traces, cli_s(f->traces),
                       (unsigned long long)f->steps, cli_s(f->steps));
    }
    atr_buf_printf(b, "traces %25llu\n", (unsigned long long)s->traces);
    atr_buf_printf(b, "steps %26llu\n", (unsigned long long)s->steps);
    atr_buf_printf(b, "  llm steps %20llu", (unsigned long long)s->llm_steps);
    put_pct(b, 8, s->llm_pct);
    atr_buf_printf(b, "\n  tool steps %19llu", (unsigned long long)s->tool_steps);
    put_pct(b, 8, s->tool_pct);
    atr_buf_puts(b, "\n\n");
    atr_buf_printf(b, "%-24s%8s%11s%11s%11s%11s%13s\n", "", "n", "mean", "p50", "p95",
                   "max", "total");
    put_dist(b, "turns per trace", &s->turns);
    put_dist(b, "input tokens/llm step", &s->input_tokens);
    put_dist(b, "output tokens/llm step", &s->output_tokens);
}

/* Sections without a figure (no tool steps, no hash ids, nothing timed,
 * no recorded counts) are left out rather than shown as a row of n/a. */
static void table_tools(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->n_tools)
        return;
    char label[64];
    snprintf(label, sizeof label, "tool mix (%llu kind%s)", (unsigned long long)s->tool_kinds,
             cli_s(s->tool_kinds));
    atr_buf_printf(b, "\n%-32s%10s%8s\n", label, "count", "share");
    for (size_t i = 0; i < s->n_tools; i++) {
        atr_buf_printf(b, "  %-30s%10llu", s->tools[i].name,
                       (unsigned long long)s->tools[i].count);
        put_pct(b, 8, s->tools[i].pct);
        atr_buf_putc(b, '\n');
    }
}

static void put_reuse(struct atr_buf *b, const char *label, const struct atr_stats_reuse *r,
                      const char *what)
{
    atr_buf_printf(b, "  %-22s", label);
    put_pct(b, 8, r->ratio * 100.0);
    atr_buf_printf(b, "   %llu of %llu %s", (unsigned long long)r->shared,
                   (unsigned long long)r->blocks, what);
}

static void table_reuse(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->within.blocks && !s->across.blocks)
        return;
    atr_buf_puts(b, "\nprefix reuse\n");
    put_reuse(b, "within traces", &s->within, "blocks\n");
    put_reuse(b, "across traces", &s->across, "first-step blocks");
    atr_buf_puts(b, s->across_approximate ? " (approximate: id set full)\n" : "\n");
}

static void put_time(struct atr_buf *b, const char *label, uint64_t ms, uint64_t timed)
{
    atr_buf_printf(b, "  %-22s%8.1f s   %llu step%s timed\n", label, (double)ms / 1000.0,
                   (unsigned long long)timed, cli_s(timed));
}

static void table_time(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->llm_timed && !s->tool_timed)
        return;
    atr_buf_puts(b, "\ntime (summed dur_ms)\n");
    put_time(b, "llm", s->llm_ms, s->llm_timed);
    put_time(b, "tool", s->tool_ms, s->tool_timed);
    atr_buf_printf(b, "  %-22s", "llm/tool ratio");
    put_num(b, 8, 2, s->llm_tool_ratio);
    atr_buf_putc(b, '\n');
}

/* unit: singular, "step" or "trace". */
static void put_tokerr(struct atr_buf *b, const char *label, const struct atr_stats_tokerr *e,
                       const char *unit)
{
    atr_buf_printf(b, "  %-22s", label);
    if (isnan(e->error_pct)) {
        atr_buf_printf(b, "%8s\n", "n/a");
        return;
    }
    atr_buf_printf(b, "%+8.1f %%   estimated %llu vs recorded %llu over %llu %s%s\n",
                   e->error_pct, (unsigned long long)e->estimated,
                   (unsigned long long)e->recorded, (unsigned long long)e->n, unit,
                   cli_s(e->n));
}

static void table_tokens(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->step_input.n && !s->step_output.n && !s->trace_input.n && !s->trace_output.n)
        return;
    atr_buf_puts(b, "\ntoken estimates vs recorded counts\n");
    put_tokerr(b, "step input", &s->step_input, "step");
    put_tokerr(b, "step output", &s->step_output, "step");
    put_tokerr(b, "trace input", &s->trace_input, "trace");
    put_tokerr(b, "trace output", &s->trace_output, "trace");
}

/* Recorded vs scaled vs estimated counts, per source: what replay sends. */
static void table_origin(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->n_sources)
        return;
    atr_buf_printf(b, "\n%-31s %8s %15s %15s\n", "token counts by origin", "steps",
                   "input tokens", "output tokens");
    for (size_t k = 0; k < s->n_sources; k++) {
        const struct atr_stats_source *src = &s->sources[k];
        for (int o = 0; o < ATR_ORIGIN_COUNT; o++)
            if (src->steps[o])
                atr_buf_printf(b, "  %-18s %-10s %8llu %15llu %15llu\n", src->source,
                               atr_stats_origin_name((enum atr_stats_origin)o),
                               (unsigned long long)src->steps[o],
                               (unsigned long long)src->input_tokens[o],
                               (unsigned long long)src->output_tokens[o]);
    }
}

/* Only for DAG traces: a chain-only table keeps its old shape. */
static void table_agents(struct atr_buf *b, const struct atr_stats_summary *s)
{
    if (!s->dag_traces)
        return;
    atr_buf_printf(b, "\nsub-agents\n");
    atr_buf_printf(b, "  %-22s%8llu   of %llu trace%s\n", "traces with them",
                   (unsigned long long)s->dag_traces, (unsigned long long)s->traces,
                   s->traces == 1 ? "" : "s");
    atr_buf_printf(b, "  %-22s%8llu\n", "sub-agents", (unsigned long long)s->sub_agents);
    atr_buf_printf(b, "  %-22s%8llu", "their steps", (unsigned long long)s->sub_agent_steps);
    put_pct(b, 9, s->sub_agent_pct);
    atr_buf_printf(b, "\n");
}

static void render_table(struct atr_buf *b, const struct atr_stats_summary *s)
{
    table_counts(b, s);
    table_tools(b, s);
    table_reuse(b, s);
    table_time(b, s);
    table_tokens(b, s);
    table_origin(b, s);
    table_agents(b, s);
}

/* ---- JSON ---- */

/* Figures are rounded to 6 decimals without trailing zeros; absent (NaN)
 * ones are null. */
static void kv_num(struct atr_jw *w, const char *key, double x)
{
    atr_jw_kv_fixed_trim(w, key, x, 6);
}

static void json_dist(struct atr_jw *w, const char *key, const struct atr_stats_dist *d)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "n", d->n);
    kv_num(w, "mean", d->mean);
    kv_num(w, "p50", d->p50);
    kv_num(w, "p95", d->p95);
    kv_num(w, "max", d->max);
    kv_num(w, "total", d->total);
    atr_jw_object_end(w);
}

static void json_files(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "files");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < s->n_files; i++) {
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "name", s->files[i].name);
        atr_jw_kv_str(w, "format", s->files[i].format);
        atr_jw_kv_uint(w, "traces", s->files[i].traces);
        atr_jw_kv_uint(w, "steps", s->files[i].steps);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
}

static void json_tools(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "tool_mix");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "kinds", s->tool_kinds);
    atr_jw_key(w, "top");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < s->n_tools; i++) {
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "name", s->tools[i].name);
        atr_jw_kv_uint(w, "count", s->tools[i].count);
        kv_num(w, "pct", s->tools[i].pct);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

/* Leaves the object open: "across" adds whether it is approximate. */
static void json_reuse(struct atr_jw *w, const char *key, const struct atr_stats_reuse *r)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "shared", r->shared);
    atr_jw_kv_uint(w, "blocks", r->blocks);
    kv_num(w, "ratio", r->ratio);
}

static void json_prefix_reuse(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "prefix_reuse");
    atr_jw_object_begin(w);
    json_reuse(w, "within", &s->within);
    atr_jw_object_end(w);
    json_reuse(w, "across", &s->across);
    atr_jw_kv_bool(w, "approximate", s->across_approximate);
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

static void json_timing(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "timing");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "llm_ms", s->llm_ms);
    atr_jw_kv_uint(w, "llm_steps_timed", s->llm_timed);
    atr_jw_kv_uint(w, "tool_ms", s->tool_ms);
    atr_jw_kv_uint(w, "tool_steps_timed", s->tool_timed);
    kv_num(w, "llm_tool_ratio", s->llm_tool_ratio);
    atr_jw_object_end(w);
}

static void json_tokerr(struct atr_jw *w, const char *key, const struct atr_stats_tokerr *e)
{
    atr_jw_key(w, key);
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "n", e->n);
    atr_jw_kv_uint(w, "estimated", e->estimated);
    atr_jw_kv_uint(w, "recorded", e->recorded);
    kv_num(w, "error_pct", e->error_pct);
    atr_jw_object_end(w);
}

static void json_token_error(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "token_error");
    atr_jw_object_begin(w);
    json_tokerr(w, "step_input", &s->step_input);
    json_tokerr(w, "step_output", &s->step_output);
    json_tokerr(w, "trace_input", &s->trace_input);
    json_tokerr(w, "trace_output", &s->trace_output);
    atr_jw_object_end(w);
}

static void json_origin(struct atr_jw *w, const struct atr_stats_summary *s)
{
    atr_jw_key(w, "token_origin");
    atr_jw_array_begin(w);
    for (size_t k = 0; k < s->n_sources; k++)
        for (int o = 0; o < ATR_ORIGIN_COUNT; o++) {
            const struct atr_stats_source *src = &s->sources[k];
            if (!src->steps[o])
                continue;
            atr_jw_object_begin(w);
            atr_jw_kv_str(w, "source", src->source);
            atr_jw_kv_str(w, "origin", atr_stats_origin_name((enum atr_stats_origin)o));
            atr_jw_kv_uint(w, "steps", src->steps[o]);
            atr_jw_kv_uint(w, "input_tokens", src->input_tokens[o]);
            atr_jw_kv_uint(w, "output_tokens", src->output_tokens[o]);
            atr_jw_object_end(w);
        }
    atr_jw_array_end(w);
}

static void json_agents(struct atr_jw *w, const struct atr_stats_summary *s)
{
    if (!s->dag_traces)
        return;
    atr_jw_key(w, "sub_agents");
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "traces", s->dag_traces);
    atr_jw_kv_uint(w, "agents", s->sub_agents);
    atr_jw_kv_uint(w, "steps", s->sub_agent_steps);
    kv_num(w, "steps_pct", s->sub_agent_pct);
    atr_jw_object_end(w);
}

static void render_json(struct atr_buf *b, const struct atr_stats_summary *s)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    json_files(&w, s);
    atr_jw_kv_uint(&w, "traces", s->traces);
    atr_jw_kv_uint(&w, "steps", s->steps);
    atr_jw_kv_uint(&w, "llm_steps", s->llm_steps);
    atr_jw_kv_uint(&w, "tool_steps", s->tool_steps);
    kv_num(&w, "llm_pct", s->llm_pct);
    kv_num(&w, "tool_pct", s->tool_pct);
    json_dist(&w, "turns_per_trace", &s->turns);
    json_dist(&w, "input_tokens", &s->input_tokens);
    json_dist(&w, "output_tokens", &s->output_tokens);
    json_tools(&w, s);
    json_prefix_reuse(&w, s);
    json_timing(&w, s);
    json_token_error(&w, s);
    json_origin(&w, s);
    json_agents(&w, s);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);     /* b has no cap */
}

static int emit(const char *path, const struct atr_buf *b)
{
    struct atr_error err;
    if (atr_output_write_file(path ? path : "-", b->data, b->len, &err) < 0)
        return cli_fail_err(&err);
    return EXIT_OK;
}

static int run(int argc, char **argv)
{
    struct stats_opts o = {.read.warn = cli_warn};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    struct atr_stats *st = atr_stats_new(&o.stats);
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_error err;
    int failed = 0;
    for (int i = o.first_arg; i < argc && !failed; i++)
        failed = add_file(st, argv[i], &o, &t, &err) < 0;
    atr_trace_release(&t);
    if (failed) {
        atr_stats_free(st);
        return cli_fail_err(&err);
    }
    struct atr_stats_summary sum;
    atr_stats_summarize(st, &sum);
    struct atr_buf b = ATR_BUF_INIT;
    (o.json ? render_json : render_table)(&b, &sum);
    atr_stats_free(st);
    rc = emit(o.out, &b);
    atr_buf_release(&b);
    return rc;
}

const struct atr_cmd cmd_stats_entry = {
    "stats", "shapes of traces: turns, tool mix, tokens, prefix reuse, timing",
    help, run, NULL,
};
