/* reader.h - read traces of any supported format, one trace at a time.
 *
 * atr_reader_open sniffs the format from the first bytes (and the file name
 * as a hint) unless one is named; atr_reader_next then fills one trace per
 * call, so memory is bounded by the largest trace, never the file.
 *
 * Memory: the reader owns its input and buffers; the trace passed to
 * atr_reader_next is cleared and refilled by the reader, and owned by the
 * caller (release it with atr_trace_release). */
#ifndef ATR_TRACE_READER_H
#define ATR_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "json/json.h"
#include "trace/trace.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/input.h"

#define ATR_DEFAULT_MAX_LINE ((size_t)256 << 20)   /* one line or document */
/* A line or document holds at most max_line / ATR_LINE_BYTES_PER_VALUE +
 * ATR_LINE_VALUES_MIN JSON values: a value's node costs 80 bytes (more for
 * long strings, which their own bytes pay for), so this bounds a line's
 * tree at ~5 times max_line (valid JSON may have one value per 2 bytes,
 * `[0,0,...]`, which would cost 40 times). */
#define ATR_LINE_BYTES_PER_VALUE 16
#define ATR_LINE_VALUES_MIN 1024

struct atr_read_opts {
    uint32_t block_size;      /* tokens per hash block; 0 = 16 */
    bool keep_content;        /* fill step->messages */
    bool compact_ids;         /* atr "prefix" steps keep it: see struct atr_step */
    /* The caller reads no JSON node of a trace (meta, extra, messages,
     * output may then be NULL): atr-trace lines of the common shape are
     * read in one pass without a tree (fmt/atr-lean.c), every field the
     * same; other lines, and errors, as without it. Ignored with
     * keep_content and by other formats. */
    bool lean;
    size_t max_line;          /* 0 = ATR_DEFAULT_MAX_LINE */
    unsigned max_depth;       /* JSON nesting cap; 0 = 256 */
    /* Takes the reader's warnings, for the CLI to print (the library never
     * prints): "FILE:LINE: warning: the last line is cut ...". A JSON-lines
     * input whose final line has no newline and does not parse is a file
     * being written (a live or killed proxy's journal): with warn set, and
     * a complete line read before it, the input ends before that line and
     * warn is told; else the line fails the read as any other. A final
     * line that parses is complete. */
    void (*warn)(const char *msg);
};

struct atr_reader;

/* format: a name from atr_formats ("swe-agent", ...) or NULL to sniff. */
struct atr_reader *atr_reader_open(const char *path, const char *format,
                                   const struct atr_read_opts *opts,
                                   struct atr_error *err);
/* Same over an already open input, which the reader takes over (closes). */
struct atr_reader *atr_reader_open_input(struct atr_input *in, const char *format,
                                         const struct atr_read_opts *opts,
                                         struct atr_error *err);
/* Returns 1 with *t filled, 0 at the end, -1 with err set. After -1 the
 * reader is done: further calls return -1 again. */
int atr_reader_next(struct atr_reader *r, struct atr_trace *t, struct atr_error *err);
const char *atr_reader_format(const struct atr_reader *r);
const char *atr_reader_name(const struct atr_reader *r);
void atr_reader_close(struct atr_reader *r);     /* accepts NULL */

/* ---- the format interface: what src/trace/fmt/ implements ---- */

struct atr_format {
    const char *name;         /* --from name */
    const char *summary;      /* one line for `atr help convert` */
    /* Confidence 0..100 that the input is this format, from its first bytes
     * (decompressed; up to 64 KiB) and its file name (may be "<stdin>"). */
    int (*sniff)(const char *head, size_t len, const char *name);
    /* Fills t with the next trace: 1, 0 at the end, -1 after atr_reader_fail. */
    int (*next)(struct atr_reader *r, struct atr_trace *t);
    void (*free_state)(void *state);  /* may be NULL */
};

/* Registry, NULL-terminated, in sniffing priority order. */
extern const struct atr_format *const atr_formats[];
const struct atr_format *atr_format_find(const char *name);

/* What a format sees of the reader. */
struct atr_reader {
    const struct atr_format *fmt;
    struct atr_input *in;
    struct atr_read_opts opts;
    struct atr_error err;
    void *state;              /* the format's own, freed with fmt->free_state */
    /* With a named format: the one the input sniffs as instead, or NULL. */
    const struct atr_format *looks_like;
    unsigned long ntraces;    /* traces returned so far */
    struct atr_arena scratch; /* cleared by atr_reader_next before each call */
    bool failed;
    /* The last atr_reader_parse failed on the text itself (not on the
     * value budget or memory): only such a last line can be a cut one. */
    bool parse_invalid;
    /* Position of the text last handed to atr_reader_parse, to turn a JSON
     * node's line/col (relative to that text) into the file's line:col. */
    unsigned long base_line, base_col;
    /* Passed to atr_reader_parse's JSON parser (json.h, atr_json_opts):
     * a format that reads packed arrays names its key; NULL = none. */
    const char *pack_key;
    uint64_t pack_max;
};

/* Sets r->err to "FILE:LINE:COL: message" and returns -1. */
int atr_reader_fail(struct atr_reader *r, unsigned long line, unsigned long col,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Same, at the position of node j from the last atr_reader_parse (j may be
 * NULL: then the start of that text). */
int atr_reader_fail_at(struct atr_reader *r, const struct atr_json *j,
                       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses text (which starts at file position line:col) into arena a with the
 * reader's depth cap; on error fails with the JSON error's file position. */
int atr_reader_parse(struct atr_reader *r, struct atr_arena *a, const char *text,
                     size_t len, unsigned long line, unsigned long col,
                     bool allow_nonfinite, struct atr_json **out);

/* Whole input as one JSON document (single-document formats like .traj). */
int atr_reader_parse_all(struct atr_reader *r, struct atr_arena *a, struct atr_json **out);

/* Next line of the input; 1, 0 at end, -1 after fail (line too long). */
int atr_reader_getline(struct atr_reader *r, const char **line, size_t *len);
/* Same, skipping lines of only blanks (spaces, tabs, CR). */
int atr_reader_getline_nonblank(struct atr_reader *r, const char **line, size_t *len);

/* How a JSON input is laid out, from its first non-blank byte: '[' a
 * top-level array, '{' alone on its line one pretty-printed document, '{'
 * otherwise JSON lines. Anything else fails at that byte with "expected
 * <what>". Consumes nothing. */
enum atr_json_shape { ATR_SHAPE_ARRAY, ATR_SHAPE_DOCUMENT, ATR_SHAPE_LINES };
int atr_reader_json_shape(struct atr_reader *r, const char *what, enum atr_json_shape *shape);

/* Next non-blank line parsed as one JSON value into a: 1, 0 at the end,
 * -1 after fail. */
int atr_reader_json_line(struct atr_reader *r, struct atr_arena *a, struct atr_json **out);
/* Same for a line just read with atr_reader_getline(_nonblank): 1, 0 when
 * it is the cut last line of a file being written (opts.warn), -1 after
 * fail. */
int atr_reader_parse_line(struct atr_reader *r, struct atr_arena *a, const char *line,
                          size_t len, struct atr_json **out);
/* Empties t as atr_reader_next hands it to a format's next(): cleared,
 * with the reader's block size and the format's name as its source. */
void atr_reader_trace_reset(const struct atr_reader *r, struct atr_trace *t);

/* Elements of a top-level JSON array, parsed one at a time: begin once,
 * then next returns 1 with *out, 0 after the last, -1 after fail. */
int atr_reader_array_begin(struct atr_reader *r);
int atr_reader_array_next(struct atr_reader *r, struct atr_arena *a, struct atr_json **out);

/* Single-document formats (.traj): the whole input parsed into r->scratch
 * on the first call: 1 with *doc, 0 on later calls, -1 after fail. */
int atr_reader_document(struct atr_reader *r, struct atr_json **doc);

/* A JSON stream: a top-level array, JSON lines, or one pretty-printed
 * document (atr_reader_json_shape decides). Each row is one trace, except
 * an array whose first element one_trace accepts: its elements are one
 * trace, streamed one at a time. */
struct atr_json_stream {
    const char *expected;     /* "expected %s" when neither '[' nor '{' opens */
    const char *no_elements;  /* "expected %s" for an empty array */
    const char *no_lines;     /* "expected %s" for JSON lines without a line */
    bool (*one_trace)(const struct atr_json *first);
    /* Fill t: 1, or -1 after fail. elements walks first and the rest with
     * atr_reader_json_each, parsing each into tmp. */
    int (*row)(struct atr_reader *r, struct atr_trace *t, const struct atr_json *row);
    int (*elements)(struct atr_reader *r, struct atr_trace *t, const struct atr_json *first,
                    struct atr_arena *tmp);
};
/* A format's next() for a JSON stream; its free_state is
 * atr_reader_json_stream_free (the stream keeps its mode in r->state). */
int atr_reader_json_stream(struct atr_reader *r, struct atr_trace *t,
                           const struct atr_json_stream *s);
void atr_reader_json_stream_free(void *state);
/* Calls fn on first, then on each further array element, parsed into a
 * (cleared before each): 0 after the last, -1 once fn or parsing fails. */
int atr_reader_json_each(struct atr_reader *r, struct atr_arena *a, const struct atr_json *first,
                         int (*fn)(void *ctx, const struct atr_json *e), void *ctx);

/* Sniffing: the first byte of head that is not JSON whitespace ('\0' when
 * none), its index in *at (may be NULL). */
char atr_sniff_first(const char *head, size_t len, size_t *at);
/* Whether head starts with prefix, ignoring case and a UTF-8 byte order
 * mark (CSV headers). */
bool atr_sniff_prefix(const char *head, size_t len, const char *prefix);

/* Schema helpers that fail with a position when the type is wrong.
 * req_*: the member must exist; opt_*: absent or null gives the default. */
int atr_reader_req(struct atr_reader *r, const struct atr_json *obj, const char *key,
                   enum atr_json_type type, struct atr_json **out);
int atr_reader_opt(struct atr_reader *r, const struct atr_json *obj, const char *key,
                   enum atr_json_type type, const struct atr_json **out);   /* NULL if absent */
int atr_reader_opt_i64(struct atr_reader *r, const struct atr_json *obj, const char *key,
                       int64_t *out);
int atr_reader_opt_str(struct atr_reader *r, const struct atr_json *obj, const char *key,
                       const char **out);

#endif
