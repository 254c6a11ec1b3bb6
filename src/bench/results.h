/* results.h - benchmark result files read into structs, the one reader of
 * them (`atr bench report`, `atr compare`, `atr report`): atr bench's own
 * (results/<commit8>_<variant>[_<agent>]_result.json), ISO-Bench's (the
 * same fields without `outcome`: status and error text are mapped to one),
 * vLLM's --save-result JSON, atr's (`atr sim run` / `atr replay llm
 * --save-result`: vLLM's keys plus an "atr" object) and SGLang's
 * bench_serving JSONL, and `atr sweep` results (atr-sweep/1: a result per
 * run). Other atr files (router files, traces, tool replay summaries and
 * steps, request records) are refused with a message naming them.
 *
 * Memory: an atr_bench_set owns its results and every string in them
 * (copied); atr_bench_set_release frees them all. Nothing prints. */
#ifndef ATR_BENCH_RESULTS_H
#define ATR_BENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* Largest result file read (vLLM's --save-detailed adds per-request texts). */
#define ATR_BENCH_MAX_FILE ((size_t)256 << 20)

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
    ATR_BENCH_PREPARE_TIMEOUT,         /* prepare killed at prepare_timeout_s */
    ATR_BENCH_MODEL_INVALID,           /* refused by atr's reader, before the server */
    ATR_BENCH_DISK_FULL,               /* below min_free_disk after cleanup: not run */
    ATR_BENCH_OTHER_ERROR,
    ATR_BENCH_OUTCOMES,
};

/* The coarse status ISO-Bench's tools read. */
enum atr_bench_status { ATR_BENCH_OK, ATR_BENCH_ERROR, ATR_BENCH_TIMEOUT };

struct atr_bench_result {
    char *file;            /* as read; "#LINE" appended for a JSONL line */
    unsigned long line;    /* that JSONL line; 0 for a whole document */
    const char *kind;      /* "atr", "iso-bench", "vllm" or "sglang" (static) */
    char *commit;          /* human_commit (8 hex), NULL for vLLM/SGLang */
    char *model;           /* NULL when the file names none */
    char *variant;         /* "baseline", "human", "agent", ...; NULL if unknown */
    char *agent;           /* NULL when none */
    char *error;           /* NULL on success */
    char *when;            /* when it was measured, as the file says: "timestamp"
                            * (atr bench, ISO-Bench) or "date" (vLLM, atr
                            * replay); NULL when it says nothing */
    enum atr_bench_status status;
    enum atr_bench_outcome outcome;
    /* NAN where the file has none. */
    double req_s, tok_s, ttft_p99_ms, tpot_p99_ms;
    double ttft_mean_ms, ttft_p50_ms, e2el_mean_ms, e2el_p50_ms, e2el_p99_ms;
    double tpot_p50_ms, itl_p50_ms, itl_p99_ms;
    double prefix_hit_rate;               /* 0..1, atr's "atr" block only */
    double session_mean_ms, session_p50_ms, session_p99_ms;   /* atr.sessions */
    /* The simulator's retention knob and its cost (atr.engine of a sim or
     * sim: target): kv_pins NAN unless --kv-retain was on; evictions for
     * any simulated run. */
    double kv_pins, kv_pins_dropped, evictions;
    bool has_latency;      /* any TTFT or TPOT figure */
    unsigned repeat;       /* atr bench's "repeat" (1-based); 1 for every other file */
    /* Serving results: atr.target, else "sim:" + atr.engine.profile, else
     * BACKEND:MODEL (or either, or "unknown"); atr.policy or NULL. NULL
     * both for bench and ISO-Bench files. */
    char *target, *policy;
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

/* The result files of dir as atr_bench_read_dir reads them (its *.json
 * and *.jsonl by name, else those of dir/results), malloc'd paths: free
 * them with atr_bench_dir_files_free. 0, or -1 with err. */
int atr_bench_dir_files(const char *dir, char ***paths, size_t *n_paths, struct atr_error *err);
void atr_bench_dir_files_free(char **paths, size_t n);

/* A folder as atr_bench_read_dir reads it, or one result file (so a single
 * `results/<commit8>_<variant>_result.json` can be given); a missing path
 * is "PATH: no such result file or folder". */
int atr_bench_read_path(struct atr_bench_set *s, const char *path, struct atr_error *err);

void atr_bench_set_release(struct atr_bench_set *s);

/* Does text say the process ran out of memory (a CUDA or torch OOM line,
 * an OOM kill)? Case-insensitive; NULL: no. */
bool atr_bench_says_oom(const char *text);

#endif
