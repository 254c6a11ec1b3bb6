/* input.h - a byte source over a file or stdin, with transparent .gz/.zst.
 *
 * Compression is recognised by magic bytes, not by name, so `atr convert -`
 * takes a compressed stream too. Memory is a fixed window plus at most one
 * line or document, each bounded by a caller-given cap. */
#ifndef ATR_UTIL_INPUT_H
#define ATR_UTIL_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"
#include "util/error.h"

struct atr_input;

/* Opens path ("-" = stdin). Returns NULL with err set ("FILE: No such file"). */
struct atr_input *atr_input_open(const char *path, struct atr_error *err);
/* Reads from memory (not copied: data must outlive the input); for tests
 * and fuzzers. name is used in messages. */
struct atr_input *atr_input_open_mem(const void *data, size_t len, const char *name);
void atr_input_close(struct atr_input *in);          /* accepts NULL */

const char *atr_input_name(const struct atr_input *in);  /* "-" shown as "<stdin>" */
const char *atr_input_compression(const struct atr_input *in); /* "none", "gzip", "zstd", "parquet" */
/* For messages at line *line: the name of the file that holds it. Its own
 * name, but for a Parquet folder or glob the file of that row, with *line
 * made the row's number in that file. */
const char *atr_input_locate(const struct atr_input *in, unsigned long *line);

/* Makes a Parquet input read only a seeded uniform sample of n of its rows
 * (atr_parquet_sample); -1 with err set, also for any other input (its
 * records cannot be counted without reading them). */
int atr_input_sample(struct atr_input *in, unsigned long long n, uint64_t seed,
                     struct atr_error *err);

/* Progress for a progress bar: raw (possibly compressed) bytes read so far,
 * and the input's size when it is a regular file or memory (else 0). */
void atr_input_progress(const struct atr_input *in, unsigned long long *done,
                        unsigned long long *total);

/* The first up to n decompressed bytes, without consuming them (n <= 64 KiB).
 * Returns the number available (0 at empty input) or -1 on error. */
ssize_t atr_input_peek(struct atr_input *in, const char **p, size_t n,
                       struct atr_error *err);

/* Next line without its "\n" or "\r\n". *line stays valid until the next
 * call. Returns 1, 0 at end of input, -1 on I/O error or a line longer than
 * max ("FILE:LINE: line longer than MAX bytes"). A last line without a
 * final newline is returned normally. */
int atr_input_getline(struct atr_input *in, const char **line, size_t *len,
                      size_t max, struct atr_error *err);
unsigned long atr_input_lineno(const struct atr_input *in); /* of the last line */
/* Whether the last line returned ended the input without its newline: on
 * a file being appended to, perhaps a line still being written. */
bool atr_input_unterminated(const struct atr_input *in);

/* Reads up to n decompressed bytes; returns count, 0 at end, -1 on error. */
ssize_t atr_input_read(struct atr_input *in, void *p, size_t n, struct atr_error *err);

/* Appends everything left to out; -1 if more than max bytes remain. */
int atr_input_read_all(struct atr_input *in, struct atr_buf *out, size_t max,
                       struct atr_error *err);

/* Streaming split of a top-level JSON array into its elements, for datasets
 * shipped as one big array: memory stays bounded by the largest element.
 * begin consumes whitespace and '['; next returns 1 with the element's text
 * (valid until the next call) and where it starts, 0 after ']', -1 on error
 * (unterminated array, element longer than max, garbage after ']'). The
 * element text is not validated here: parse it with atr_json_parse. */
int atr_input_array_begin(struct atr_input *in, struct atr_error *err);
int atr_input_array_next(struct atr_input *in, const char **elem, size_t *len,
                         unsigned long *line, unsigned long *col, size_t max,
                         struct atr_error *err);

#endif
