/* result.h - the three outputs of an LLM serving run, written from its
 * summary (stats/metrics.h): the --save-result object (vLLM's keys in
 * vLLM's order, then atr's own under "atr"), the "Serving Benchmark Result"
 * block `vllm bench serve` prints, and one NDJSON line per request
 * (--requests-out). Floats are written as Python's repr would, so the files
 * diff cleanly against vLLM's.
 *
 * The result object is written in two halves so that layers above can add
 * their own members to its "atr" object as structs (target, policy,
 * engine), through the same writer, without JSON text passed around:
 *
 *     atr_llm_result_begin(&w, &summary, &cfg);   ... "atr": {... open
 *     atr_jw_kv_str(&w, "target", name);          members of "atr"
 *     atr_llm_result_end(&w);                     closes "atr" and the object
 *
 * Memory: nothing is kept; writers append to a caller's buffer or writer. */
#ifndef ATR_STATS_RESULT_H
#define ATR_STATS_RESULT_H

#include "json/writer.h"
#include "stats/metrics.h"
#include "util/buf.h"

/* Opens the result object on w (ATR_JW_PYTHON style) and writes every
 * member up to and into the "atr" object, which is left open. */
void atr_llm_result_begin(struct atr_jw *w, const struct atr_llm_summary *s,
                          const struct atr_llm_bench_config *cfg);
/* Closes the "atr" object and the result object. */
void atr_llm_result_end(struct atr_jw *w);

/* The whole result object with no members of callers, one line, no
 * trailing newline. 0, or -1 at b's cap. */
int atr_llm_write_result_json(struct atr_buf *b, const struct atr_llm_summary *s,
                              const struct atr_llm_bench_config *cfg);

/* The "Serving Benchmark Result" block, each line ending in '\n'. */
int atr_llm_write_block(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *cfg);

/* One --requests-out line for r, ending in '\n'. */
int atr_llm_write_request_line(struct atr_buf *b, const struct atr_llm_record *r);

#endif
