/* writer.h - streaming JSON output: objects, arrays, keys and values
 * appended to an atr_buf, the separators placed by the writer.
 *
 * Every JSON document atr writes goes through this: atr-trace lines,
 * metrics.jsonl records, result files, server responses. Call sites name
 * keys and values, one line each, and never write a ',' or a ':' of their
 * own; the writer knows whether a value is the first in its container.
 *
 *     struct atr_jw w;
 *     atr_jw_init(&w, &buf, ATR_JW_COMPACT);
 *     atr_jw_object_begin(&w);
 *     atr_jw_kv_str(&w, "config", name);
 *     atr_jw_kv_fixed(&w, "latency_ms", ms, 3);
 *     atr_jw_object_end(&w);
 *     atr_jw_newline(&w);
 *     if (atr_jw_finish(&w) < 0) ...buffer cap reached...
 *
 * Styles. ATR_JW_COMPACT writes "," and ":" (atr's own formats: atr-trace
 * NDJSON, metrics.jsonl, tenants.jsonl, summary.json, `stats --json`, the
 * server's responses). ATR_JW_PYTHON writes ", " and ": ", as Python's
 * json.dumps does by default: the vLLM-compatible result files, which
 * tools diff byte for byte against vLLM's.
 *
 * Numbers. atr_jw_pyfloat writes a double as Python's repr (the fewest
 * digits that read back exactly: "1.0", "0.1", "1e-05", "1e+16"), which is
 * what json.dumps writes for a float. atr_jw_fixed is printf's "%.Nf";
 * atr_jw_fixed_trim is the same with trailing zeros removed. Every double
 * writer writes null for NaN and +-inf: JSON has no form for them (Python
 * would write the non-standard Infinity/NaN, which strict readers refuse).
 *
 * Strings are written as given (UTF-8 unchanged, as json.dumps with
 * ensure_ascii=False) with '"', '\\' and control bytes escaped.
 *
 * Errors are sticky: the first append that fails (the buffer's cap, see
 * util/buf.h), or a misuse (a key outside an object, a value without a key
 * inside one, nesting past ATR_JW_MAX_DEPTH, an end that matches no begin),
 * puts the writer in the failed state; later calls do nothing. Call sites
 * check once, with atr_jw_finish, which on failure also cuts the buffer
 * back to its length at atr_jw_init, so no half document is ever left.
 *
 * Memory: the writer holds no memory of its own (no release needed) and
 * does not own the buffer; it only appends to it. Strings and DOM values
 * passed in are read, never kept. */
#ifndef ATR_JSON_WRITER_H
#define ATR_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "util/buf.h"

/* Deepest nesting of objects and arrays a writer accepts; atr's documents
 * are a few levels deep, so deeper is a bug (or a DOM value in PYTHON
 * style, which is walked level by level: see atr_jw_value). */
#define ATR_JW_MAX_DEPTH 32

enum atr_jw_style {
    ATR_JW_COMPACT,   /* "," and ":" */
    ATR_JW_PYTHON,    /* ", " and ": " (json.dumps default) */
};

struct atr_jw {
    struct atr_buf *b;
    enum atr_jw_style style;
    int err;                  /* 0, or -1 once anything failed (sticky) */
    size_t start;             /* b->len at init: where finish cuts back to */
    unsigned depth;           /* open containers */
    bool after_key;           /* a key was written, its value is due */
    /* Per open container: is it an object, has it a member yet. Level 0
     * is the top level (a stream of documents, no separators). */
    bool is_object[ATR_JW_MAX_DEPTH + 1];
    bool has_item[ATR_JW_MAX_DEPTH + 1];
};

/* Starts writing to b (appending after what it holds) in style. */
void atr_jw_init(struct atr_jw *w, struct atr_buf *b, enum atr_jw_style style);
/* 0 when everything was written and every container closed; else -1, with
 * the buffer cut back to its length at init. */
int atr_jw_finish(struct atr_jw *w);
/* True once something failed; the buffer is not cut back yet. */
static inline bool atr_jw_failed(const struct atr_jw *w) { return w->err != 0; }

/* Containers. */
void atr_jw_object_begin(struct atr_jw *w);
void atr_jw_object_end(struct atr_jw *w);
void atr_jw_array_begin(struct atr_jw *w);
void atr_jw_array_end(struct atr_jw *w);

/* The next member's name, inside an object; escaped like any string. */
void atr_jw_key(struct atr_jw *w, const char *key);
void atr_jw_keyn(struct atr_jw *w, const char *key, size_t len);

/* Values: after a key in an object, as an element of an array, or as a
 * top-level document. */
void atr_jw_str(struct atr_jw *w, const char *s);              /* NULL: null */
void atr_jw_strn(struct atr_jw *w, const char *s, size_t len); /* may hold NULs */
void atr_jw_int(struct atr_jw *w, int64_t v);
void atr_jw_uint(struct atr_jw *w, uint64_t v);
void atr_jw_bool(struct atr_jw *w, bool v);
void atr_jw_null(struct atr_jw *w);
void atr_jw_pyfloat(struct atr_jw *w, double v);               /* Python repr */
void atr_jw_fixed(struct atr_jw *w, double v, int digits);     /* "%.*f" */
/* "%.*f" without trailing zeros (and without a bare '.'): 2.5, 3, 0.125;
 * a result of "-0" is written "0". */
void atr_jw_fixed_trim(struct atr_jw *w, double v, int digits);
/* A whole array of integers, as a value: atr-trace's hash_ids lists are
 * most of its bytes, so this is one call, not one per element. */
void atr_jw_uint_array(struct atr_jw *w, const uint64_t *v, size_t n);
/* An already-encoded JSON value, copied as is (the caller vouches for it). */
void atr_jw_raw(struct atr_jw *w, const char *json, size_t len);
/* A parsed DOM value (NULL: null). COMPACT writes it as atr_json_write_value
 * does; PYTHON walks it with the style's separators, failing past
 * ATR_JW_MAX_DEPTH. */
void atr_jw_value(struct atr_jw *w, const struct atr_json *v);

/* Key and value in one call. */
void atr_jw_kv_str(struct atr_jw *w, const char *key, const char *s);
void atr_jw_kv_strn(struct atr_jw *w, const char *key, const char *s, size_t len);
void atr_jw_kv_int(struct atr_jw *w, const char *key, int64_t v);
void atr_jw_kv_uint(struct atr_jw *w, const char *key, uint64_t v);
void atr_jw_kv_bool(struct atr_jw *w, const char *key, bool v);
void atr_jw_kv_null(struct atr_jw *w, const char *key);
void atr_jw_kv_pyfloat(struct atr_jw *w, const char *key, double v);
void atr_jw_kv_fixed(struct atr_jw *w, const char *key, double v, int digits);
void atr_jw_kv_fixed_trim(struct atr_jw *w, const char *key, double v, int digits);
void atr_jw_kv_raw(struct atr_jw *w, const char *key, const char *json, size_t len);
void atr_jw_kv_value(struct atr_jw *w, const char *key, const struct atr_json *v);

/* '\n' after a top-level document (NDJSON); fails inside a container. */
void atr_jw_newline(struct atr_jw *w);

/* A double as Python's repr writes it (shortest round trip, "1.0", "1e-05",
 * positional for decimal exponents in [-4, 16)); NaN and +-inf write null.
 * For writers that format into a plain buffer. 0, or -1 at the cap. */
int atr_json_put_pyfloat(struct atr_buf *b, double v);

#endif
