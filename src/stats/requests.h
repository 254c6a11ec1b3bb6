/* requests.h - the --requests-out lines (written by stats/result.h's
 * atr_llm_write_request_line) read back into request records, for
 * `atr replay llm --merge` and anyone else who summarizes saved runs.
 *
 * What a line gives back: every field the summary uses. Chunk times are
 * rebuilt from ttft_ms and itl_ms (the first chunk at start_s + TTFT, each
 * next one an ITL later); derived fields (queue_ms, e2el_ms, ...) are
 * ignored, as the writer computes them again.
 *
 * Memory: a struct atr_llm_requests owns its record array (malloc) and an
 * arena holding the records' strings and chunk arrays; release frees both.
 * Records stay valid until release. */
#ifndef ATR_STATS_REQUESTS_H
#define ATR_STATS_REQUESTS_H

#include <stdbool.h>
#include <stddef.h>

#include "stats/metrics.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/input.h"

/* Longest line read: an answer of ~20M tokens' gaps. */
#define ATR_LLM_REQUEST_MAX_LINE ((size_t)1 << 28)

struct atr_llm_requests {
    struct atr_llm_record *recs;   /* in file order */
    size_t n, cap;
    struct atr_arena keep;         /* strings and chunk arrays of recs */
    struct atr_arena line;         /* one parsed line, cleared per line */
};

#define ATR_LLM_REQUESTS_INIT {NULL, 0, 0, ATR_ARENA_INIT, ATR_ARENA_INIT}

/* Parses one request line text[0..len) into r; its strings and chunks go
 * to keep, the JSON tree to scratch (cleared first). 0; 1 for a line that
 * is a tool step of `atr replay agent` ("kind": "tool": no request, r
 * untouched); or -1 with "FILE:LINE:COL: what was expected" in err (file
 * and lineno name the line there). */
int atr_llm_request_parse(struct atr_llm_record *r, const char *text, size_t len,
                          struct atr_arena *keep, struct atr_arena *scratch,
                          const char *file, unsigned long lineno, struct atr_error *err);

/* Whether a parsed line o is replay agent's tool line ("kind": "tool"),
 * which request readers skip. */
struct atr_json;
bool atr_llm_request_is_tool(const struct atr_json *o);

/* Appends every request line of in (blank lines and replay agent's tool
 * lines skipped) to rs. 0, or -1
 * at the first bad line or read error; the lines before it stay in rs. */
int atr_llm_requests_read(struct atr_llm_requests *rs, struct atr_input *in,
                          struct atr_error *err);

/* The same for a file ("-": stdin; .gz/.zst read transparently). */
int atr_llm_requests_read_path(struct atr_llm_requests *rs, const char *path,
                               struct atr_error *err);

/* Frees what rs holds and leaves it empty (ATR_LLM_REQUESTS_INIT). */
void atr_llm_requests_release(struct atr_llm_requests *rs);

#endif
