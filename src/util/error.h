/* error.h - error values: library code fills an atr_error, only the CLI prints it.
 *
 * Messages are lowercase, without a final period, and name where the problem
 * is: "trace.ndjson:12:44: expected \"steps\" array". */
#ifndef ATR_UTIL_ERROR_H
#define ATR_UTIL_ERROR_H

#include <stddef.h>

#define ATR_ERROR_MAX 512

struct atr_error {
    char msg[ATR_ERROR_MAX];
};

/* Formats msg into err (err may be NULL) and returns -1, so callers can
 * write `return atr_error_set(err, "...")`. */
int atr_error_set(struct atr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like atr_error_set, prefixed with "file:line:col: " (line/col 1-based;
 * col 0 omits the column, line 0 omits both). */
int atr_error_at(struct atr_error *err, const char *file, unsigned long line,
                 unsigned long col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
