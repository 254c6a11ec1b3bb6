/* output.h - write a file atomically: a temporary beside it, renamed on
 * commit; and a folder of results the same way (atr_outdir).
 *
 * A failed or interrupted command never leaves a partial output behind:
 * atr_output_abort (also called from the CLI's signal handler through
 * atr_output_abort_all) removes the temporary. "-" writes to stdout. */
#ifndef ATR_UTIL_OUTPUT_H
#define ATR_UTIL_OUTPUT_H

#include <stdbool.h>
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

/* ---- result folders ----
 * A folder of results written whole: its files go into a temporary
 * folder beside it (DIR.tmp.XXXXXX), which atr_outdir_commit renames into
 * place, so a run that fails before its commit leaves DIR as it was.
 * Memory: the atr_outdir owns its paths; _commit, _keep and _abort free it. */
struct atr_outdir;

enum atr_outdir_state {
    ATR_OUTDIR_ABSENT,       /* nothing at the path */
    ATR_OUTDIR_EMPTY,        /* an empty directory */
    ATR_OUTDIR_FULL,         /* a directory with entries: a result to lose */
};

/* What is at dir now. -1 with err set when it is not a directory (or cannot
 * be read). Commands refuse ATR_OUTDIR_FULL unless told to replace it. */
int atr_outdir_state(const char *dir, enum atr_outdir_state *st, struct atr_error *err);
/* Makes the temporary folder beside dir (a symbolic link: beside its
 * target). NULL with err set when dir's parent is missing or unwritable. */
struct atr_outdir *atr_outdir_open(const char *dir, struct atr_error *err);
/* The temporary folder, where the files go until the commit. */
const char *atr_outdir_path(const struct atr_outdir *d);
/* The temporary folder takes dir's place; what dir held (replace must be
 * true if it held anything) is moved aside first and removed after, and
 * put back if the rename fails. Frees d; on failure the temporary stays,
 * named in err. */
int atr_outdir_commit(struct atr_outdir *d, bool replace, struct atr_error *err);
/* Removes the temporary folder and what it holds, frees d; NULL: nothing. */
void atr_outdir_abort(struct atr_outdir *d);
/* Leaves the temporary folder as it is and frees d; returns its path
 * (the caller frees it), for a message saying where an unfinished run is. */
char *atr_outdir_keep(struct atr_outdir *d);

#endif
