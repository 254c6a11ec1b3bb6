/* parquet.h - Parquet files as JSON lines (one row per line), through DuckDB.
 *
 * A Parquet dataset (a file, a glob, or a Hugging Face dataset folder) reads
 * as the JSON-lines text of its rows, so every JSON reader takes it as it
 * takes the JSON form of the same rows. DuckDB (libduckdb.so) is loaded
 * with dlopen on first use: atr runs without it, and only a Parquet input
 * then fails. Rows are streamed one DuckDB chunk (2048 rows) at a time;
 * their JSON text is written from the chunk's vectors, as DuckDB's to_json
 * writes it (ATR_PARQUET_TO_JSON=1: through to_json itself).
 *
 * Memory: the source owns its DuckDB handles and the current chunk; the
 * caller owns dst. */
#ifndef ATR_UTIL_PARQUET_H
#define ATR_UTIL_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

struct atr_parquet;

/* Whether path names Parquet input: a folder, a glob ('*', '?', '['), or a
 * file that starts with the magic "PAR1". */
bool atr_parquet_wanted(const char *path);
/* Expands path to its files (a folder: the first of the layouts data/,
 * any train- files one folder down, any Parquet file in it) and loads
 * DuckDB. NULL with err set. */
struct atr_parquet *atr_parquet_open(const char *path, struct atr_error *err);
/* Makes p read only a uniform random sample of min(n, all) rows of its
 * files, chosen from the row counts in their footers (deterministic per
 * seed) and emitted in file order: DuckDB reads only the row groups that
 * hold them. Before the first read; -1 with err set. */
int atr_parquet_sample(struct atr_parquet *p, unsigned long long n, uint64_t seed,
                       struct atr_error *err);
/* Up to cap bytes of JSON lines; 0 at the end, -1 with err set ("FILE: row
 * N: what DuckDB said"). */
ssize_t atr_parquet_read(struct atr_parquet *p, char *dst, size_t cap, struct atr_error *err);
/* Bytes of the files finished so far, and of all of them (progress). */
void atr_parquet_progress(const struct atr_parquet *p, unsigned long long *done,
                          unsigned long long *total);
/* The file that holds JSON line *line of the rows emitted so far, with
 * *line made its row number in that file (1-based; of the file, also when
 * sampled). */
const char *atr_parquet_locate(const struct atr_parquet *p, unsigned long *line);
void atr_parquet_close(struct atr_parquet *p);     /* accepts NULL */

#endif
