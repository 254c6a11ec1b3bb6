/* scan.h - a cursor that reads one JSON text in place, without a tree:
 * for hot paths that want a few members of small, well-formed documents.
 *
 * The scanner accepts a strict subset of JSON and answers "cannot tell"
 * (false) for anything outside it: strings with \u escapes, non-ASCII or
 * control bytes, nesting deeper than max_depth, and every syntax error.
 * Where it answers, atr_json_parse reads the same text the same way (the
 * unit test and fuzz-json-scan check it); where it cannot tell, the caller
 * hands the whole text to atr_json_parse, which reads anything valid and
 * gives every error with its line:col. False is therefore not "invalid".
 *
 * After a false the cursor's position is unspecified: drop the scan.
 * Every call reads only bytes in [text, text + len): the text need not be
 * NUL-terminated.
 *
 * A scan can also record the text's shape (atr_json_scan_record): the
 * text with holes where atr_json_scan_skip stepped over a string value or
 * a number (keys, literals and structure stay fixed bytes). A later text that matches the shape (atr_json_shape_match)
 * differs only inside holes, by strings and numbers the scanner accepts,
 * so its scan would answer as the recorded one did wherever the callbacks
 * read nothing that is in a hole: a stream of payloads that differ in
 * their text and ids is then read with a few memcmp()s each.
 *
 * Memory: nothing is allocated. Strings and keys handed out point into
 * the caller's text and live as long as it does; a shape holds its own
 * copy of the recorded text. */
#ifndef ATR_JSON_SCAN_H
#define ATR_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ATR_JSON_SCAN_DEPTH 32   /* default nesting limit of a scan */

enum {
    ATR_JSON_SHAPE_TEXT = 1024,   /* longest text a shape records */
    ATR_JSON_SHAPE_HOLES = 32,    /* most holes a shape records */
};

/* One recorded text and its holes, in text order. A hole is a string's
 * body (between its quotes, which are not in the hole) or a number's
 * whole literal. len 0: no shape (nothing matches it). */
struct atr_json_shape {
    size_t len;
    unsigned n_holes;
    uint16_t hole_at[ATR_JSON_SHAPE_HOLES];
    uint16_t hole_end[ATR_JSON_SHAPE_HOLES];
    bool hole_num[ATR_JSON_SHAPE_HOLES];
    char text[ATR_JSON_SHAPE_TEXT];
};

struct atr_json_scan {
    const char *p;           /* the cursor; read-only for callers */
    const char *end;         /* one past the text's last byte */
    unsigned depth;          /* arrays and objects open around the cursor */
    unsigned max_depth;      /* deeper nesting is "cannot tell" */
    const char *start;       /* the text's first byte (hole offsets) */
    struct atr_json_shape *rec;   /* recording into, or NULL */
    unsigned skipping;       /* atr_json_scan_skip calls open (when rec) */
};

/* Called by atr_json_scan_object with the cursor before a member's value.
 * key is the raw key text (no quotes), or NULL when the key has escapes.
 * fn must read the value whole (atr_json_scan_skip when it does not want
 * it) and return true, or return false to give up the scan. */
typedef bool (*atr_json_scan_member_fn)(struct atr_json_scan *s, const char *key,
                                        size_t key_len, void *ctx);
/* Called by atr_json_scan_array with the cursor before element index;
 * the same contract as atr_json_scan_member_fn. */
typedef bool (*atr_json_scan_elem_fn)(struct atr_json_scan *s, size_t index, void *ctx);

/* A scan of text[0..len), nesting at most ATR_JSON_SCAN_DEPTH deep. */
void atr_json_scan_init(struct atr_json_scan *s, const char *text, size_t len);

/* Records the shape of the scan that follows into sh (call it before
 * the first read). False, and nothing recorded (sh->len 0), when the text
 * is longer than a shape holds. The shape is the text's only if every
 * read of the scan answered true: on any false, set sh->len to 0. Past
 * ATR_JSON_SHAPE_HOLES holes the recording gives up (sh->len 0). */
bool atr_json_scan_record(struct atr_json_scan *s, struct atr_json_shape *sh);

/* text[0..len) is sh's text with each hole's string body or number
 * replaced by one the scanner accepts (a string body that is plain or has
 * short escapes, a number by JSON's grammar), and every other byte the
 * same. A scan of it then answers as the recorded scan did, provided its
 * callbacks decide only on keys and values that were not stepped over by
 * atr_json_scan_skip. Reads only text[0..len). */
bool atr_json_shape_match(const struct atr_json_shape *sh, const char *text, size_t len);

static inline bool atr_json_scan_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

char atr_json_scan_peek_slow(struct atr_json_scan *s);

/* Steps over blanks; the next byte (which starts the next value, or is a
 * ',', ':', ']', '}'), or '\0' at the end of the text. */
static inline char atr_json_scan_peek(struct atr_json_scan *s)
{
    if (s->p < s->end && !atr_json_scan_blank(*s->p))
        return *s->p;   /* compact JSON: no blank to skip */
    return atr_json_scan_peek_slow(s);
}

/* Where the run of bytes from p that a string body holds as they are
 * ends (at a quote, a backslash, a control or non-ASCII byte, or end):
 * for a reader of its own that keeps to what the scanner accepts. */
const char *atr_json_scan_plain_end(const char *p, const char *end);

/* Each reader below steps over blanks first, reads one value of its kind
 * and returns true, or returns false (cannot tell, or another kind). */

/* Any one value. */
bool atr_json_scan_skip(struct atr_json_scan *s);
/* The literal null. */
bool atr_json_scan_null(struct atr_json_scan *s);
/* A string: *body points at its raw text between the quotes, or is NULL
 * when it has (short) escapes, which the scanner checks but does not
 * decode; *len is the raw length either way. */
bool atr_json_scan_string(struct atr_json_scan *s, const char **body, size_t *len);
/* A number by JSON's grammar: its literal text in the input. */
bool atr_json_scan_number(struct atr_json_scan *s, const char **raw, size_t *len);
/* A non-negative integer literal of at most 18 digits (no '-', fraction
 * or exponent), which atr_json_parse reads as is_int with the same value;
 * any other number is "cannot tell". */
bool atr_json_scan_uint(struct atr_json_scan *s, int64_t *out);
/* An object, '{' to '}', fn called once per member in text order (fn
 * NULL steps over the members). */
bool atr_json_scan_object(struct atr_json_scan *s, atr_json_scan_member_fn fn, void *ctx);
/* An array, '[' to ']', fn called once per element in order (fn NULL
 * steps over the elements). */
bool atr_json_scan_array(struct atr_json_scan *s, atr_json_scan_elem_fn fn, void *ctx);
/* Only blanks are left: the text was one value and nothing after it. */
bool atr_json_scan_end(struct atr_json_scan *s);

/* key (as handed to a member callback) is want: NULL keys match nothing. */
static inline bool atr_json_scan_key_is(const char *key, size_t key_len, const char *want)
{
    return key && key_len == strlen(want) && memcmp(key, want, key_len) == 0;
}

#endif
