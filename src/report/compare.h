/* compare.h - the policy comparison table: benchmark results (every kind
 * bench/results.h reads: atr's --save-result, vLLM's `vllm bench serve
 * --save-result`, SGLang's bench_serving JSONL, `atr bench run`'s and
 * ISO-Bench's result files) as rows grouped by target, with the latency
 * cut of each policy against the `naive` row of its target.
 *
 * Rows come from files (atr_compare_add_file), from JSON text
 * (atr_compare_add_json), from the summary of a run just made
 * (atr_compare_add_summary: no JSON in between) or from figures
 * (atr_compare_add_row). Adding is all or nothing: a text that fails adds
 * no row.
 *
 * Memory: an atr_compare owns its rows and every string in them (copied);
 * rows returned by atr_compare_rows stay valid until the next add or
 * atr_compare_free. Writers append to a caller's atr_buf. Nothing prints. */
#ifndef ATR_REPORT_COMPARE_H
#define ATR_REPORT_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "stats/metrics.h"
#include "util/buf.h"
#include "util/error.h"

/* One result. Figures are NAN where the source has none. */
struct atr_compare_row {
    const char *file;      /* source name as given ("-" read as "<stdin>") */
    const char *kind;      /* "atr", "vllm", "sglang" or "iso-bench": which tool wrote it */
    /* grouping key: "sim:rtx3090/qwen3-4b-awq", "vllm:MODEL"; for a bench
     * or ISO-Bench result "MODEL@COMMIT" */
    const char *target;
    /* "naive", "prefix-cache", ... or the file stem; for a bench result
     * its variant ("agent/claude_code"), with its outcome when it failed
     * ("agent (server_crashed)") */
    const char *policy;
    double ttft_mean_ms, ttft_p50_ms, ttft_p99_ms;
    double e2el_mean_ms, e2el_p50_ms, e2el_p99_ms;
    double request_throughput;   /* requests/s */
    double output_throughput;    /* output tokens/s */
    double prefix_hit_rate;      /* 0..1, atr results only */
    /* Session completion time (atr.sessions of a multi-turn workload). */
    double session_mean_ms, session_p50_ms, session_p99_ms;
    /* The retention knob's cost (atr.engine of a simulated run): sessions'
     * blocks pinned by --kv-retain, pins dropped for memory, blocks evicted.
     * kv_pins NAN unless the knob was on. */
    double kv_pins, kv_pins_dropped, evictions;
    /* (naive - this) / naive * 100 of the means, against the first naive
     * row (in adding order) of the same target; NAN for that row itself,
     * without a naive row, or when either mean is missing or naive's is 0.
     * Filled by atr_compare_rows. */
    double e2el_cut_pct, ttft_cut_pct;
    /* The run's "repeat" (atr.repeat of sim run / replay llm --repeat, or a
     * bench result's "repeat"), from 1; 0: none. */
    unsigned repeat;
};

struct atr_compare;

struct atr_compare *atr_compare_new(void);
void atr_compare_free(struct atr_compare *c);              /* accepts NULL */

/* Reads path ("-" = stdin; .gz/.zst transparently) and adds its rows.
 * Texts read by both functions also give each row its "repeat". */
int atr_compare_add_file(struct atr_compare *c, const char *path, struct atr_error *err);

/* Adds the rows of json[0..len) (atr_bench_read_text): one JSON object, or
 * JSONL with one object per non-blank line (SGLang appends a line per
 * run). Non-standard Infinity/NaN are accepted. name is used in messages
 * ("NAME:LINE:COL: expected ...") and, without atr.policy, as the policy
 * (its base name without .json/.jsonl/.ndjson/.gz/.zst; "#LINE" appended
 * when a JSONL text holds several objects). */
int atr_compare_add_json(struct atr_compare *c, const char *name, const char *json,
                         size_t len, struct atr_error *err);

/* Adds the row of a run's summary s (cfg: its percentiles) as its result
 * file would give it: kind "atr", file and policy the policy's name. */
void atr_compare_add_summary(struct atr_compare *c, const char *target, const char *policy,
                             const struct atr_llm_summary *s,
                             const struct atr_llm_bench_config *cfg);

/* The row atr_compare_add_summary adds, into *out (strings borrowed). */
void atr_compare_row_of_summary(struct atr_compare_row *out, const char *target,
                                const char *policy, const struct atr_llm_summary *s,
                                const struct atr_llm_bench_config *cfg);

/* Adds r as it is (strings copied; NULL kind/target/policy/file read as
 * "atr"/"unknown"/"unknown"/""); its cut fields are ignored. */
void atr_compare_add_row(struct atr_compare *c, const struct atr_compare_row *r);

/* The rows in table order, cuts filled: targets in order of first
 * appearance; within one, naive, prefix-cache, prefix-route, compaction,
 * max-tokens, learned, then other policies by name; ties in adding order. */
const struct atr_compare_row *atr_compare_rows(struct atr_compare *c, size_t *n);

/* Whether some row has a repeat index (the table over repeats applies:
 * report/repeats.h). */
bool atr_compare_has_repeats(const struct atr_compare *c);

/* The Markdown table, one header, one row per result, '\n'-terminated
 * lines; missing figures show "-". The session columns are there only when
 * some row has a session figure; the retention columns (kv pins, pins
 * dropped, evictions) only when some row has kv_pins. Returns 0, or -1 at
 * b's cap. */
int atr_compare_write_markdown(struct atr_buf *b, struct atr_compare *c);

/* A JSON array with one object per row (keys in the help of `atr compare`),
 * one row per line, ending in "]\n"; missing figures are null. The session
 * keys are there only when some row has a session figure, kv_pins,
 * kv_pins_dropped and evictions only when some row has kv_pins. */
int atr_compare_write_json(struct atr_buf *b, struct atr_compare *c);

#endif
