/* csv.h - private helpers of the request-log readers (mooncake, azure,
 * burstgpt): a CSV line splitter with quotes, strict number parsing with
 * byte columns for file:line:col errors, and the file base name used in
 * trace ids.
 *
 * Memory: csv_split unescapes into a copy of the line made in the given
 * arena, so fields stay valid until that arena is cleared. */
#ifndef ATR_TRACE_CSV_H
#define ATR_TRACE_CSV_H

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

/* Whether the fields equal the expected header names (ignoring case and
 * surrounding blanks; a UTF-8 byte order mark before the first is skipped). */
bool csv_header_is(const struct csv_field *fields, int n, const char *const *names,
                   int n_names);

/* Next non-blank data row of a CSV input whose first line is a header;
 * check_header validates that line once (failing with its position).
 * Returns 1 with the row, 0 at the end, -1 after fail; an input without
 * even a header fails with "expected header "HEADER", got empty input". */
int csv_next_row(struct atr_reader *r, bool *header_done, const char *header,
                 int (*check_header)(struct atr_reader *r, const char *line, size_t len),
                 const char **line, size_t *len);

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

#endif
