/* output.h - write a file atomically: a temporary beside it, renamed on commit.
 *
 * A failed or interrupted command never leaves a partial output behind:
 * atr_output_abort (also called from the CLI's signal handler through
 * atr_output_abort_all) removes the temporary. "-" writes to stdout. */
#ifndef ATR_UTIL_OUTPUT_H
#define ATR_UTIL_OUTPUT_H

#include <stddef.h>

#include "util/error.h"

struct atr_output;

/* Creates the temporary now: open every output before the work starts,
 * and a missing or unwritable directory fails before anything ran. */
struct atr_output *atr_output_open(const char *path, struct atr_error *err);
int atr_output_write(struct atr_output *o, const void *p, size_t n, struct atr_error *err);
/* Flushes, renames over path and frees o; on failure removes the temporary. */
int atr_output_commit(struct atr_output *o, struct atr_error *err);
/* Removes the temporary and frees o; accepts NULL. */
void atr_output_abort(struct atr_output *o);
/* Commits the outputs os[0..n) (NULL entries skipped) as one: every
 * buffer is flushed before any file is renamed, so a write error (a full
 * disk) leaves none of them behind; only a failing rename, after the
 * temporaries were complete, can leave the earlier ones committed. Frees
 * them all and sets each os[i] to NULL. */
int atr_output_commit_all(struct atr_output **os, size_t n, struct atr_error *err);
/* Async-signal-safe: unlinks every open temporary. For SIGINT/SIGTERM handlers. */
void atr_output_abort_all(void);

/* The whole of data[0..len) to path ("-": stdout) atomically: open, write,
 * commit, or nothing left behind. 0, or -1 with err set. */
int atr_output_write_file(const char *path, const void *data, size_t len,
                          struct atr_error *err);

#endif
