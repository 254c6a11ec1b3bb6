/* sample.h - seeded stratified choice of a subset of traces, for `atr sample`.
 *
 * The sampler sees every trace once (atr_sampler_add) but keeps only a
 * feature record of 8 bytes per trace: its turns (llm steps) and its
 * dominant tool class. atr_sampler_choose then stratifies by turns (quantile
 * bins) x tool class, allocates the picks across strata proportionally with
 * at least one per non-empty stratum when n allows, and picks within each
 * stratum by a seeded shuffle; callers re-read the input and keep the
 * traces atr_sampler_picked says, in input order.
 *
 * Memory: the sampler owns its records and class names (atr_sampler_free). */
#ifndef ATR_GEN_SAMPLE_H
#define ATR_GEN_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"

#define ATR_SAMPLE_LENGTH_BINS 4      /* quantile bins of turns */
#define ATR_SAMPLE_TOOL_CLASSES 8     /* most common dominant tools kept; the rest "other" */

struct atr_sample_stratum {
    uint32_t turns_lo, turns_hi;      /* range of its members' turns */
    const char *tool;                 /* dominant tool class */
    size_t size, picked;
};

struct atr_sampler;

struct atr_sampler *atr_sampler_new(void);
void atr_sampler_free(struct atr_sampler *s);        /* accepts NULL */
/* Records trace number atr_sampler_count() (0-based, in call order). */
void atr_sampler_add(struct atr_sampler *s, const struct atr_trace *t);
size_t atr_sampler_count(const struct atr_sampler *s);
/* Chooses min(n, count) traces, deterministically for (records, n, seed). */
void atr_sampler_choose(struct atr_sampler *s, size_t n, uint64_t seed);
bool atr_sampler_picked(const struct atr_sampler *s, size_t index);
/* The non-empty strata of the last choose, by (turns bin, tool class). */
size_t atr_sampler_n_strata(const struct atr_sampler *s);
const struct atr_sample_stratum *atr_sampler_stratum(const struct atr_sampler *s, size_t k);

/* Stratify by the trace's resource class (atr_trace_resource_class)
 * instead of its dominant tool. Call before the first add. */
void atr_sampler_by_resource(struct atr_sampler *s, bool on);

/* The class of resources a trace's tool steps stress, as the AgentCgroup
 * seed's Section 6 lists them: "long-running" (a tool step that took a
 * minute or more), else the class that took most of its tool time (a
 * step of unknown duration counts 1 ms):
 * "bursty" (test runs, builds and installs whose memory jumps: pytest,
 * make, npm/pip install, cargo, mvn, gradle, tox), "memory" (interpreters
 * and servers that hold large heaps: java, node, docker, jupyter),
 * "cpu" (compilers and scripts: python, gcc, clang, go, rustc), "io"
 * (file and repository walks: grep, find, git, cat, sed, ls, cp, tar, rg,
 * the editor); "none" without tool steps. */
const char *atr_trace_resource_class(const struct atr_trace *t);

/* The trace's most frequent tool class: the command head of bash steps
 * ("pytest", "grep"; atr_command_head), else the tool name ("editor");
 * ties go to the one seen first; "none" without tool steps. */
void atr_trace_dominant_tool(const struct atr_trace *t, char *out, size_t cap);

#endif
