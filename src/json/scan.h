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
 * Memory: nothing is allocated or copied. Strings and keys handed out
 * point into the caller's text and live as long as it does. */
#ifndef ATR_JSON_SCAN_H
#define ATR_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ATR_JSON_SCAN_DEPTH 32   /* default nesting limit of a scan */

struct atr_json_scan {
    const char *p;           /* the cursor; read-only for callers */
    const char *end;         /* one past the text's last byte */
    unsigned depth;          /* arrays and objects open around the cursor */
    unsigned max_depth;      /* deeper nesting is "cannot tell" */
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
