/* reqlog.h - private helpers of the request-log readers (mooncake, azure,
 * burstgpt): the one-trace-per-row driver they share, a CSV line splitter
 * with quotes, strict number parsing with byte columns for file:line:col
 * errors, and the file base name used in trace ids.
 *
 * Memory: csv_split unescapes into a copy of the line made in the given
 * arena, so fields stay valid until that arena is cleared. */
#ifndef ATR_TRACE_FMT_REQLOG_H
#define ATR_TRACE_FMT_REQLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"
#include "trace/trace.h"
#include "util/arena.h"

struct csv_field {
    const char *s;            /* unquoted, unescaped, NUL-terminated */
    size_t len;
    unsigned long col;        /* 1-based byte column of the field in the line */
};

/* Splits one line (no line terminator) into fields; fields has room for
 * max + 1. Returns the number of fields found, or -1 with *bad_col set on a
 * malformed quoted field. A line with more than max fields returns max + 1
 * with fields[max] the first extra one (its column is what to report).
 * Quoted fields may hold commas and "" escapes, not newlines. */
int csv_split(struct atr_arena *a, const char *line, size_t len,
              struct csv_field *fields, int max, unsigned long *bad_col);

/* Non-negative decimal integer, digits only (surrounding blanks allowed).
 * Returns false on anything else, overflow included. */
bool csv_parse_u63(const char *s, size_t len, int64_t *out);

/* Non-negative finite decimal number ("12", "12.5", "1e3"). */
bool csv_parse_nonneg_double(const char *s, size_t len, double *out);

/* Appends the one llm step of a request: t_ms 0, the token counts, and
 * no hash ids. hash_ids is an empty array rather than NULL so consumers
 * that do pointer arithmetic on it (the writer's hash_ids + 0) stay
 * defined behaviour. */
struct atr_step *reqlog_add_step(struct atr_trace *t, int64_t input_tokens,
                                 int64_t output_tokens);

/* Base name of an input name for trace ids: directory and the extensions
 * .gz/.zst/.csv/.jsonl/.json/.zip/.txt removed; "<stdin>" gives "stdin".
 * Writes at most cap - 1 bytes. */
void reqlog_basename(const char *name, char *out, size_t cap);

/* ---- one trace per row ---- */

/* What every request-log reader's state starts with. */
struct reqlog_state {
    bool header_done;         /* CSV: the header line was checked */
    char base[128];           /* file base name, for trace ids */
};

#define REQLOG_MAX_COLS 8

/* One row: its file line and, for CSV, its fields; for JSON lines, its value. */
struct reqlog_row {
    unsigned long line;
    const struct csv_field *f;     /* CSV: exactly ncols fields */
    const struct atr_json *obj;    /* JSON lines */
};

/* A request-log format: CSV under a header line when header is set, else
 * JSON lines. */
struct reqlog_format {
    size_t state_size;             /* the reader's state: a struct reqlog_state first */
    const char *header;            /* CSV: the header line, */
    const char *const *columns;    /* its ncols names (case and blanks ignored) */
    int ncols;                     /* at most REQLOG_MAX_COLS */
    const char *what;              /* JSON lines: what an empty input lacks */
    /* Fills t, whose trace_id "FORMAT/BASE/LINE" is set: 0, or -1 after fail. */
    int (*fill)(struct atr_reader *r, void *state, struct atr_trace *t,
                const struct reqlog_row *row);
};

/* A request-log format's next(); its free_state is free. */
int reqlog_next(struct atr_reader *r, struct atr_trace *t, const struct reqlog_format *f);

#endif
