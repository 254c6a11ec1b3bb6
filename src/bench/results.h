/* results.h - benchmark result files read into structs: atr's own
 * (results/<commit8>_<variant>[_<agent>]_result.json), ISO-Bench's (the
 * same fields without `outcome`: status and error text are mapped to one),
 * vLLM's --save-result JSON and SGLang's bench_serving JSONL.
 *
 * Memory: an atr_bench_set owns its results and every string in them
 * (copied); atr_bench_set_release frees them all. Nothing prints. */
#ifndef ATR_BENCH_RESULTS_H
#define ATR_BENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* Largest result file read (raw_output holds a console tail, not more). */
#define ATR_BENCH_MAX_FILE ((size_t)64 << 20)

/* Exactly one per result (docs/bench.md). OTHER_ERROR is only for files
 * found in the wild whose error text names none of the others. */
enum atr_bench_outcome {
    ATR_BENCH_SUCCESS,
    ATR_BENCH_NO_METRICS,
    ATR_BENCH_SERVER_CRASHED,
    ATR_BENCH_STARTUP_TIMEOUT,
    ATR_BENCH_BENCHMARK_TIMEOUT,
    ATR_BENCH_OOM,
    ATR_BENCH_PATCH_FAILED,
    ATR_BENCH_OTHER_ERROR,
    ATR_BENCH_OUTCOMES,
};

/* The coarse status ISO-Bench's tools read. */
enum atr_bench_status { ATR_BENCH_OK, ATR_BENCH_ERROR, ATR_BENCH_TIMEOUT };

struct atr_bench_result {
    char *file;            /* as read; "#LINE" appended for a JSONL line */
    const char *kind;      /* "atr", "iso-bench", "vllm" or "sglang" (static) */
    char *commit;          /* human_commit (8 hex), NULL for vLLM/SGLang */
    char *model;           /* NULL when the file names none */
    char *variant;         /* "baseline", "human", "agent", ...; NULL if unknown */
    char *agent;           /* NULL when none */
    char *error;           /* NULL on success */
    enum atr_bench_status status;
    enum atr_bench_outcome outcome;
    /* NAN where the file has none. */
    double req_s, tok_s, ttft_p99_ms, tpot_p99_ms;
    bool has_latency;      /* any TTFT or TPOT figure */
};

struct atr_bench_set {
    struct atr_bench_result *v;
    size_t n, cap;
};

/* "success", "no_metrics", ... */
const char *atr_bench_outcome_name(enum atr_bench_outcome o);
const char *atr_bench_status_name(enum atr_bench_status s);

/* Adds the results of text[0..len) read from name: one JSON object, or
 * JSONL with one object per non-blank line. All or nothing: on error
 * ("NAME:LINE:COL: expected ...") nothing is added. */
int atr_bench_read_text(struct atr_bench_set *s, const char *name, const char *text,
                        size_t len, struct atr_error *err);
/* Reads one file (.gz/.zst transparently). */
int atr_bench_read_file(struct atr_bench_set *s, const char *path, struct atr_error *err);
/* Reads every *.json and *.jsonl in dir, by name; a folder without one
 * but with a results/ folder (what `atr bench run -o DIR` makes) is read
 * through that; otherwise it is an error. */
int atr_bench_read_dir(struct atr_bench_set *s, const char *dir, struct atr_error *err);

void atr_bench_set_release(struct atr_bench_set *s);

/* Does text say the process ran out of memory (a CUDA or torch OOM line,
 * an OOM kill)? Case-insensitive; NULL: no. */
bool atr_bench_says_oom(const char *text);

#endif
