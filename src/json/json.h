/* json.h - fast JSON parser into an arena DOM, and JSON string output.
 * Documents are written with the streaming writer, json/writer.h.
 *
 * atr parses hundreds of MB of trajectories per second, reports errors as
 * line:col, caps nesting depth, and reads the non-standard `Infinity`, `NaN`
 * that Python's json.dumps writes (SGLang results); a general DOM library
 * does not do all of that fast, so this is atr's own.
 *
 * Memory: every node and every string (always copied, unescaped) is
 * allocated in the arena passed to atr_json_parse or to a builder; the tree
 * lives until that arena is cleared, and the input text may be freed as soon
 * as atr_json_parse returns. Nothing here frees.
 *
 * Packed arrays: with atr_json_opts.pack_key set, an array of plain
 * integers under that key may come back as one node holding the values in
 * an arena array (ints) instead of a node per element; a caller that sets
 * pack_key reads both forms. No other option produces them. The writers
 * (atr_json_write_value, atr_jw_value) and atr_json_copy take both forms. */
#ifndef ATR_JSON_JSON_H
#define ATR_JSON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/buf.h"

enum atr_json_type {
    ATR_JSON_NULL,
    ATR_JSON_FALSE,
    ATR_JSON_TRUE,
    ATR_JSON_NUMBER,
    ATR_JSON_STRING,
    ATR_JSON_ARRAY,
    ATR_JSON_OBJECT,
};

struct atr_json {
    enum atr_json_type type;
    bool is_int;             /* NUMBER: integer literal that fits int64 */
    bool packed;             /* ARRAY held as ints[u.kids.count], first/last NULL */
    uint32_t line, col;      /* where the value starts, 1-based, in the parsed text */
    const char *key;         /* member name when inside an object, else NULL */
    uint32_t key_len;        /* the parser refuses longer keys and literals */
    uint32_t raw_len;        /* NUMBER */
    struct atr_json *next;   /* next sibling in the parent array/object */
    union {
        double num;          /* NUMBER (also set when is_int) */
        char num_text[24];   /* NUMBER: a literal of up to 15 bytes is kept in
                              * num_text[8..], where raw then points */
        struct {
            const char *s;   /* STRING: unescaped UTF-8, NUL-terminated */
            size_t len;
        } str;
        struct {
            struct atr_json *first;  /* ARRAY / OBJECT children, in order */
            struct atr_json *last;
            size_t count;
        } kids;
    } u;
    int64_t i;               /* NUMBER with is_int */
    union {
        const char *raw;     /* NUMBER: the literal's text (not NUL-terminated) */
        uint64_t *ints;      /* packed ARRAY: its values, in the arena; the
                              * caller may keep or change them while the
                              * arena lives */
    };
};

struct atr_json_opts {
    unsigned max_depth;      /* 0 = ATR_JSON_DEFAULT_DEPTH */
    bool allow_nonfinite;    /* accept Infinity, -Infinity, NaN */
    /* An array that is the value of a member named pack_key (at any depth),
     * not empty, whose elements are all integer literals of at most 18
     * digits, no sign, fraction or exponent, each <= pack_max, is returned
     * packed (see struct atr_json): no node or position per element. Any
     * other array, or with pack_key NULL, is read as usual; errors are the
     * same either way. */
    const char *pack_key;
    uint64_t pack_max;
    /* At most this many values (0 = no limit), packed ones included; past
     * it the parse fails with ATR_JSON_ETOOMANY. A node costs 80 bytes of
     * arena where its text may be 2 (`0,`), so a caller reading untrusted
     * text sets this to bound the tree by the text it accepts. */
    size_t max_values;
};

#define ATR_JSON_DEFAULT_DEPTH 256

enum atr_json_errcode {
    ATR_JSON_EINVAL,         /* not valid JSON, or nested too deep */
    ATR_JSON_ETOOMANY,       /* more than atr_json_opts.max_values values */
    ATR_JSON_ENOMEM,         /* the tree did not fit in memory (the arena
                              * keeps what was allocated until cleared) */
};

struct atr_json_err {
    enum atr_json_errcode code;
    uint32_t line, col;      /* 1-based position of the problem */
    char msg[160];           /* "expected ',' or '}' after object member" */
};

/* Parses exactly one JSON value (surrounding whitespace allowed) from
 * text[0..len). Returns 0 and sets *out, or -1 with *err filled. */
int atr_json_parse(struct atr_arena *arena, const char *text, size_t len,
                   const struct atr_json_opts *opts, struct atr_json **out,
                   struct atr_json_err *err);

/* Lookups; all return NULL/false/defaults when absent or of another type. */
struct atr_json *atr_json_get(const struct atr_json *obj, const char *key);
const char *atr_json_get_str(const struct atr_json *obj, const char *key, size_t *len);
bool atr_json_get_i64(const struct atr_json *obj, const char *key, int64_t *out);
bool atr_json_get_num(const struct atr_json *obj, const char *key, double *out);
static inline bool atr_json_is(const struct atr_json *j, enum atr_json_type t)
{
    return j && j->type == t;
}
bool atr_json_key_is(const struct atr_json *member, const char *key);

/* Builders: nodes allocated in arena, strings copied. line/col are 0. */
struct atr_json *atr_json_new(struct atr_arena *a, enum atr_json_type t);
struct atr_json *atr_json_new_str(struct atr_arena *a, const char *s, size_t len);
struct atr_json *atr_json_new_i64(struct atr_arena *a, int64_t v);
struct atr_json *atr_json_new_num(struct atr_arena *a, double v);
/* Appends child to an ARRAY, or to an OBJECT under key (copied; no check for
 * duplicates). O(1). A packed ARRAY is left as it is. */
void atr_json_append(struct atr_arena *a, struct atr_json *parent,
                     const char *key, struct atr_json *child);
/* Deep copy of v (and its key) into arena a; a packed array stays packed. */
struct atr_json *atr_json_copy(struct atr_arena *a, const struct atr_json *v);

/* Output. All return 0, or -1 when the buffer's cap is reached. */
int atr_json_write_string(struct atr_buf *b, const char *s, size_t len);
int atr_json_write_value(struct atr_buf *b, const struct atr_json *v); /* compact */

/* Type name for messages: "string", "object", ... */
const char *atr_json_type_name(enum atr_json_type t);

#endif
