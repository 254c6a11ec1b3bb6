/* stats.h - agent-shape statistics over a stream of traces (`atr stats`):
 * step mix, turns, token sizes, tool mix, prefix reuse, think vs tool time,
 * sub-agents, and the error of atr's token estimates against a source's
 * real counts.
 *
 * Memory stays bounded however many traces are added: the accumulator keeps
 * per-trace working state sized by the largest trace (a prefix trie, freed
 * or reused per trace), one double per trace and two per llm step for the
 * exact percentiles, a capped set of first-step block ids for cross-trace
 * reuse (max_seen_ids; past it the figure is marked approximate), and a
 * capped table of tool names (past ATR_STATS_MAX_TOOL_NAMES distinct names,
 * new names count as "other").
 *
 * Ownership: atr_stats_new/atr_stats_free own everything; the summary's
 * arrays and strings point into the accumulator and stay valid until the
 * next atr_stats_add*, atr_stats_summarize or atr_stats_free. Library code:
 * nothing here prints; out-of-memory aborts, as the arena does. */
#ifndef ATR_REPORT_STATS_H
#define ATR_REPORT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"

#define ATR_STATS_DEFAULT_MAX_IDS ((size_t)8 << 20)  /* cross-trace id set cap */
#define ATR_STATS_TOP_TOOLS 15                       /* tool mix rows before "other" */
#define ATR_STATS_MAX_TOOL_NAMES 65536               /* distinct names tracked */

struct atr_stats_opts {
    size_t max_seen_ids;     /* cap of the cross-trace id set; 0 = default */
};

/* A distribution: n values, their mean, exact percentiles (numpy "linear",
 * stats/percentile.h), max and total. Figures are NAN when n == 0. */
struct atr_stats_dist {
    uint64_t n;
    double mean, p50, p95, max;
    double total;
};

struct atr_stats_file {
    const char *name;        /* as the reader names it ("<stdin>" for -) */
    const char *format;      /* the reader's format name */
    uint64_t traces, steps;
};

struct atr_stats_tool {
    const char *name;        /* command head, "tool:action", tool, or "other" */
    uint64_t count;
    double pct;              /* share of all tool steps, 0..100 */
};

/* estimated vs recorded token counts; error_pct = (estimated - recorded) /
 * recorded * 100, signed (positive: atr overestimates); NAN when n == 0 or
 * recorded == 0. */
struct atr_stats_tokerr {
    uint64_t n;              /* steps or traces the figure is based on */
    uint64_t estimated, recorded;
    double error_pct;
};

/* Where one source's llm step counts came from (atr_step.tokens_from):
 * steps and their input/output token sums per origin. */
enum atr_stats_origin {
    ATR_ORIGIN_RECORDED,
    ATR_ORIGIN_SCALED,
    ATR_ORIGIN_ESTIMATED,
    ATR_ORIGIN_UNKNOWN,          /* no tokens_from: hand-made or generated traces */
    ATR_ORIGIN_COUNT,
};
const char *atr_stats_origin_name(enum atr_stats_origin o);   /* "recorded", ..., "unknown" */

#define ATR_STATS_MAX_SOURCES 32     /* past it, sources count as "other" */
struct atr_stats_source {
    const char *source;          /* the trace's source ("openhands", ...) or "other" */
    uint64_t steps[ATR_ORIGIN_COUNT], input_tokens[ATR_ORIGIN_COUNT],
        output_tokens[ATR_ORIGIN_COUNT];
};

/* shared / blocks, NAN when blocks == 0. */
struct atr_stats_reuse {
    uint64_t shared, blocks;
    double ratio;
};

struct atr_stats_summary {
    const struct atr_stats_file *files;
    size_t n_files;
    uint64_t traces, steps, llm_steps, tool_steps;
    double llm_pct, tool_pct;            /* of all steps; NAN without steps */

    struct atr_stats_dist turns;         /* llm steps per trace */
    struct atr_stats_dist input_tokens;  /* per llm step that has the field */
    struct atr_stats_dist output_tokens;

    const struct atr_stats_tool *tools;  /* count desc, name asc; "other" last */
    size_t n_tools;
    uint64_t tool_kinds;                 /* distinct names (capped) */

    /* within: per llm step, the longest leading run of hash ids shared with
     * any earlier llm step of the same trace, summed, over all hash ids of
     * llm steps. across: the leading run of each trace's first llm step
     * already seen in the first llm steps of earlier traces, over all
     * first-step ids. */
    struct atr_stats_reuse within, across;
    bool across_approximate;             /* the id set hit its cap */

    uint64_t llm_ms, tool_ms;            /* summed dur_ms where known */
    uint64_t llm_timed, tool_timed;      /* steps with dur_ms */
    double llm_tool_ratio;               /* llm_ms / tool_ms; NAN if tool_ms == 0 */

    const struct atr_stats_source *sources;   /* in order of first appearance */
    size_t n_sources;

    /* step_*: llm steps with a recorded count and the estimate beside it
     * (estimated_*_tokens, or recorded_*_tokens of older traces).
     * trace_*: traces whose meta has recorded_*_tokens (the source's total)
     * vs the sum of their llm steps' estimates (only traces where every
     * llm step has the estimate). */
    struct atr_stats_tokerr step_input, step_output, trace_input, trace_output;

    /* Sub-agents (atr-trace/1.1 step "agent"): traces with a step of one,
     * the distinct sub-agents of each trace summed, and their steps (the
     * share is of all steps). All 0 (share NAN) for chains. */
    uint64_t dag_traces, sub_agents, sub_agent_steps;
    double sub_agent_pct;
};

struct atr_stats;

struct atr_stats *atr_stats_new(const struct atr_stats_opts *opts);  /* opts may be NULL */
void atr_stats_free(struct atr_stats *s);                             /* accepts NULL */

/* Starts a new input file: the traces added after it count for it. Adding
 * a trace before any file puts it under a file named "-". */
void atr_stats_add_file(struct atr_stats *s, const char *name, const char *format);
void atr_stats_add(struct atr_stats *s, const struct atr_trace *t);

/* Computes the summary of everything added so far (may be called again
 * after more adds). */
void atr_stats_summarize(struct atr_stats *s, struct atr_stats_summary *out);

/* The tool mix name of a tool step: the command head of its command
 * (step->command_head when the command was redacted), else "tool:action",
 * else the tool name. Writes at most cap-1 bytes. */
void atr_stats_tool_name(const struct atr_step *step, char *out, size_t cap);

#endif
