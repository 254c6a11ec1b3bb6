/* reader.c - format selection by sniffing, and the helpers formats share. */
#include "trace/reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"

/* LOOKS_LIKE_SCORE: a score that is no mere hint (a file name, a lone
 * "role" key), for telling a --from format that the input is another. */
enum { SNIFF_BYTES = 64 * 1024, SNIFF_MIN_SCORE = 20, LOOKS_LIKE_SCORE = 50 };

/* The format head looks most like, and its score. */
static const struct atr_format *best_sniff(const char *head, size_t n, const char *name,
                                           int *score)
{
    const struct atr_format *best = NULL;
    *score = 0;
    for (size_t i = 0; atr_formats[i]; i++) {
        int s = atr_formats[i]->sniff(head, n, name);
        if (s > *score) {
            best = atr_formats[i];
            *score = s;
        }
    }
    return best;
}

static const struct atr_format *sniff_format(struct atr_input *in, struct atr_error *err)
{
    const char *head;
    ssize_t n = atr_input_peek(in, &head, SNIFF_BYTES, err);
    if (n < 0)
        return NULL;
    if (n == 0) {
        atr_error_set(err, "%s: empty input", atr_input_name(in));
        return NULL;
    }
    int best_score;
    const struct atr_format *best = best_sniff(head, (size_t)n, atr_input_name(in), &best_score);
    if (best_score < SNIFF_MIN_SCORE) {
        atr_error_set(err, "%s: unrecognised trace format (use --from; "
                      "`atr help convert` lists the formats)", atr_input_name(in));
        return NULL;
    }
    return best;
}

/* For a format named with --from: the format the input sniffs as instead,
 * when it plainly is another one (NULL otherwise). A failure on the first
 * trace then says so: the error alone ("1:2: expected string key") would
 * not tell that the file is of another format. */
static const struct atr_format *looks_like(struct atr_input *in, const struct atr_format *fmt)
{
    const char *head;
    struct atr_error ignored;     /* reading fails again, and is reported, later */
    ssize_t n = atr_input_peek(in, &head, SNIFF_BYTES, &ignored);
    if (n <= 0 || fmt->sniff(head, (size_t)n, atr_input_name(in)) >= SNIFF_MIN_SCORE)
        return NULL;
    int score;
    const struct atr_format *best = best_sniff(head, (size_t)n, atr_input_name(in), &score);
    return score >= LOOKS_LIKE_SCORE ? best : NULL;
}

/* Appends to a first trace's error which format the input looks like. */
static void name_other_format(struct atr_reader *r)
{
    const char *name = r->fmt->name;
    size_t len = strlen(r->err.msg);
    snprintf(r->err.msg + len, sizeof r->err.msg - len, " (not %s %s trace: it looks like %s)",
             strchr("aeiou", name[0]) ? "an" : "a", name, r->looks_like->name);
}

struct atr_reader *atr_reader_open_input(struct atr_input *in, const char *format,
                                         const struct atr_read_opts *opts,
                                         struct atr_error *err)
{
    const struct atr_format *fmt;
    if (format) {
        fmt = atr_format_find(format);
        if (!fmt) {
            atr_error_set(err, "unknown format '%s' (`atr help convert` lists them)", format);
            atr_input_close(in);
            return NULL;
        }
    } else if (!(fmt = sniff_format(in, err))) {
        atr_input_close(in);
        return NULL;
    }
    struct atr_reader *r = xcalloc(1, sizeof *r);
    r->fmt = fmt;
    r->in = in;
    r->looks_like = format ? looks_like(in, fmt) : NULL;
    if (opts)
        r->opts = *opts;
    if (!r->opts.block_size)
        r->opts.block_size = ATR_DEFAULT_BLOCK_SIZE;
    if (!r->opts.max_line)
        r->opts.max_line = ATR_DEFAULT_MAX_LINE;
    if (!r->opts.max_depth)
        r->opts.max_depth = ATR_JSON_DEFAULT_DEPTH;
    return r;
}

struct atr_reader *atr_reader_open(const char *path, const char *format,
                                   const struct atr_read_opts *opts, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return NULL;
    return atr_reader_open_input(in, format, opts, err);
}

int atr_reader_next(struct atr_reader *r, struct atr_trace *t, struct atr_error *err)
{
    if (r->failed) {
        if (err)
            *err = r->err;
        return -1;
    }
    atr_arena_clear(&r->scratch);
    atr_reader_trace_reset(r, t);
    int rc = r->fmt->next(r, t);
    if (rc < 0) {
        if (r->looks_like && r->ntraces == 0)
            name_other_format(r);
        r->failed = true;
        if (err)
            *err = r->err;
        return -1;
    }
    if (rc > 0)
        r->ntraces++;
    return rc;
}

void atr_reader_trace_reset(const struct atr_reader *r, struct atr_trace *t)
{
    atr_trace_clear(t);
    t->block_size = r->opts.block_size;
    t->source = r->fmt->name;
}

const char *atr_reader_format(const struct atr_reader *r) { return r->fmt->name; }
const char *atr_reader_name(const struct atr_reader *r) { return atr_input_name(r->in); }

void atr_reader_close(struct atr_reader *r)
{
    if (!r)
        return;
    if (r->state && r->fmt->free_state)
        r->fmt->free_state(r->state);
    atr_input_close(r->in);
    atr_arena_release(&r->scratch);
    free(r);
}

static int vfail(struct atr_reader *r, unsigned long line, unsigned long col,
                 const char *fmt, va_list ap)
{
    char msg[ATR_ERROR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *name = atr_input_locate(r->in, &line);   /* a Parquet folder: its file */
    return atr_error_at(&r->err, name, line, col, "%s", msg);
}

int atr_reader_fail(struct atr_reader *r, unsigned long line, unsigned long col,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

/* A node's line:col is relative to the text parsed; the text began at
 * base_line:base_col of the file. */
static void file_pos(const struct atr_reader *r, unsigned long rel_line, unsigned long rel_col,
                     unsigned long *line, unsigned long *col)
{
    *line = r->base_line + rel_line - 1;
    *col = rel_line == 1 ? r->base_col + rel_col - 1 : rel_col;
}

int atr_reader_fail_at(struct atr_reader *r, const struct atr_json *j, const char *fmt, ...)
{
    unsigned long line = r->base_line, col = r->base_col;
    if (j && j->line)
        file_pos(r, j->line, j->col, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    vfail(r, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

static bool blank_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static bool blank_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i]) || !s[i])
            return false;
    return true;
}

int atr_reader_parse(struct atr_reader *r, struct atr_arena *a, const char *text, size_t len,
                     unsigned long line, unsigned long col, bool allow_nonfinite,
                     struct atr_json **out)
{
    struct atr_json_opts jo = {r->opts.max_depth, allow_nonfinite, r->pack_key, r->pack_max,
                               r->opts.max_line / ATR_LINE_BYTES_PER_VALUE + ATR_LINE_VALUES_MIN};
    struct atr_json_err je;
    r->base_line = line;
    r->base_col = col;
    if (atr_json_parse(a, text, len, &jo, out, &je) == 0)
        return 0;
    r->parse_invalid = je.code == ATR_JSON_EINVAL;
    unsigned long fl, fc;
    file_pos(r, je.line, je.col, &fl, &fc);
    if (je.code == ATR_JSON_ETOOMANY)
        return atr_reader_fail(r, fl, fc, "more than %zu JSON values in one line, the limit "
                               "for a line cap of %zu bytes (one value per %d bytes)",
                               jo.max_values, r->opts.max_line, ATR_LINE_BYTES_PER_VALUE);
    /* Text that ends inside a value was cut: say so, or "found end of
     * input" in the middle of a file reads as nonsense. */
    bool cut = (strstr(je.msg, "end of input") || strstr(je.msg, "unterminated string")) &&
               !blank_text(text, len);     /* an empty input is no cut one */
    return atr_reader_fail(r, fl, fc, "%s%s", je.msg, cut ? " (the text is truncated)" : "");
}

int atr_reader_parse_all(struct atr_reader *r, struct atr_arena *a, struct atr_json **out)
{
    struct atr_buf doc = ATR_BUF_INIT;
    if (atr_input_read_all(r->in, &doc, r->opts.max_line, &r->err) < 0) {
        atr_buf_release(&doc);
        return -1;
    }
    int rc = atr_reader_parse(r, a, doc.data ? doc.data : "", doc.len, 1, 1, false, out);
    atr_buf_release(&doc);
    return rc;
}

int atr_reader_getline(struct atr_reader *r, const char **line, size_t *len)
{
    int rc = atr_input_getline(r->in, line, len, r->opts.max_line, &r->err);
    if (rc > 0) {
        r->base_line = atr_input_lineno(r->in);
        r->base_col = 1;
    }
    return rc;
}


int atr_reader_getline_nonblank(struct atr_reader *r, const char **line, size_t *len)
{
    int rc;
    while ((rc = atr_reader_getline(r, line, len)) > 0 && blank_line(*line, *len))
        ;
    return rc;
}

/* The last line of a file being written, cut where the writer was: the
 * input ends before it, with a warning. Only at the very end, only for a
 * line that does not parse (too many values or no memory is no cut), and
 * only after a complete one: a file that is one cut line holds nothing to
 * read up to, and a cut anywhere else is an error. */
static int cut_last_line(struct atr_reader *r, size_t len)
{
    if (!r->opts.warn || !r->parse_invalid || !atr_input_unterminated(r->in) ||
        r->ntraces == 0)
        return -1;
    char msg[ATR_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s:%lu: warning: the last line is cut (a file being written?): "
             "%zu bytes ignored", atr_input_name(r->in), r->base_line, len);
    r->opts.warn(msg);
    return 0;
}

int atr_reader_parse_line(struct atr_reader *r, struct atr_arena *a, const char *line,
                          size_t len, struct atr_json **out)
{
    if (atr_reader_parse(r, a, line, len, r->base_line, 1, false, out) < 0)
        return cut_last_line(r, len);
    return 1;
}

int atr_reader_json_line(struct atr_reader *r, struct atr_arena *a, struct atr_json **out)
{
    const char *line;
    size_t len;
    int rc = atr_reader_getline_nonblank(r, &line, &len);
    return rc <= 0 ? rc : atr_reader_parse_line(r, a, line, len, out);
}

int atr_reader_json_shape(struct atr_reader *r, const char *what, enum atr_json_shape *shape)
{
    const char *head;
    ssize_t n = atr_input_peek(r->in, &head, SNIFF_BYTES, &r->err);
    if (n < 0)
        return -1;
    unsigned long line = 1, col = 1;
    ssize_t i = 0;
    for (; i < n && strchr(" \t\r\n", head[i]) && head[i]; i++, col++)
        if (head[i] == '\n')
            line++, col = 0;
    if (i < n && head[i] == '[') {
        *shape = ATR_SHAPE_ARRAY;
        return 0;
    }
    if (i < n && head[i] == '{') {
        /* A pretty-printed document opens with a line holding only "{". */
        ssize_t j = i + 1;
        while (j < n && (head[j] == ' ' || head[j] == '\t' || head[j] == '\r'))
            j++;
        *shape = j == n || head[j] == '\n' ? ATR_SHAPE_DOCUMENT : ATR_SHAPE_LINES;
        return 0;
    }
    return atr_reader_fail(r, line, col, "expected %s", what);
}

int atr_reader_document(struct atr_reader *r, struct atr_json **doc)
{
    if (r->ntraces > 0)
        return 0;
    return atr_reader_parse_all(r, &r->scratch, doc) < 0 ? -1 : 1;
}

int atr_reader_array_begin(struct atr_reader *r)
{
    return atr_input_array_begin(r->in, &r->err);
}

int atr_reader_array_next(struct atr_reader *r, struct atr_arena *a, struct atr_json **out)
{
    const char *elem;
    size_t len;
    unsigned long line, col;
    int rc = atr_input_array_next(r->in, &elem, &len, &line, &col, r->opts.max_line, &r->err);
    if (rc <= 0)
        return rc;
    if (atr_reader_parse(r, a, elem, len, line, col, false, out) < 0)
        return -1;
    return 1;
}

/* ---- JSON streams ---- */

enum stream_mode { STREAM_START, STREAM_ROWS, STREAM_LINES, STREAM_DONE };

struct stream_state {
    enum stream_mode mode;
    struct atr_arena elem;      /* the elements of a one-trace array, one at a time */
};

static int stream_row(struct atr_reader *r, struct atr_trace *t, const struct atr_json_stream *s)
{
    struct atr_json *row;
    int rc = atr_reader_array_next(r, &r->scratch, &row);
    return rc <= 0 ? rc : s->row(r, t, row);
}

static int stream_line(struct atr_reader *r, struct atr_trace *t, const struct atr_json_stream *s)
{
    struct atr_json *row;
    int rc = atr_reader_json_line(r, &r->scratch, &row);
    if (rc == 0 && !r->ntraces)
        return atr_reader_fail(r, 1, 1, "expected %s", s->no_lines);
    return rc <= 0 ? rc : s->row(r, t, row);
}

/* The first element decides: rows, or the elements of one trace. */
static int stream_array(struct atr_reader *r, struct atr_trace *t, struct stream_state *st,
                        const struct atr_json_stream *s)
{
    struct atr_json *first;
    if (atr_reader_array_begin(r) < 0)
        return -1;
    int rc = atr_reader_array_next(r, &r->scratch, &first);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return atr_reader_fail(r, r->base_line ? r->base_line : 1, 1, "expected %s",
                               s->no_elements);
    st->mode = s->one_trace(first) ? STREAM_DONE : STREAM_ROWS;
    if (st->mode == STREAM_DONE)
        return s->elements(r, t, first, &st->elem);
    return s->row(r, t, first);
}

static int stream_start(struct atr_reader *r, struct atr_trace *t, struct stream_state *st,
                        const struct atr_json_stream *s)
{
    enum atr_json_shape shape;
    struct atr_json *row;
    if (atr_reader_json_shape(r, s->expected, &shape) < 0)
        return -1;
    if (shape == ATR_SHAPE_ARRAY)
        return stream_array(r, t, st, s);
    if (shape == ATR_SHAPE_LINES) {
        st->mode = STREAM_LINES;
        return stream_line(r, t, s);
    }
    st->mode = STREAM_DONE;
    return atr_reader_parse_all(r, &r->scratch, &row) < 0 ? -1 : s->row(r, t, row);
}

int atr_reader_json_stream(struct atr_reader *r, struct atr_trace *t,
                           const struct atr_json_stream *s)
{
    if (!r->state)
        r->state = xcalloc(1, sizeof(struct stream_state));
    struct stream_state *st = r->state;
    switch (st->mode) {
    case STREAM_START:
        return stream_start(r, t, st, s);
    case STREAM_ROWS:
        return stream_row(r, t, s);
    case STREAM_LINES:
        return stream_line(r, t, s);
    default:
        return 0;
    }
}

void atr_reader_json_stream_free(void *state)
{
    struct stream_state *st = state;
    atr_arena_release(&st->elem);
    free(st);
}

int atr_reader_json_each(struct atr_reader *r, struct atr_arena *a, const struct atr_json *first,
                         int (*fn)(void *ctx, const struct atr_json *e), void *ctx)
{
    struct atr_json *e;
    int rc = fn(ctx, first);
    while (rc == 0) {
        atr_arena_clear(a);
        if ((rc = atr_reader_array_next(r, a, &e)) <= 0)
            break;
        rc = fn(ctx, e);
    }
    return rc;
}

/* ---- sniffing ---- */

char atr_sniff_first(const char *head, size_t len, size_t *at)
{
    size_t i = 0;
    while (i < len && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
        i++;
    if (at)
        *at = i;
    return i < len ? head[i] : '\0';
}

bool atr_sniff_prefix(const char *head, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (len >= 3 && memcmp(head, "\xEF\xBB\xBF", 3) == 0)
        head += 3, len -= 3;
    return len >= n && strncasecmp(head, prefix, n) == 0;
}

int atr_reader_req(struct atr_reader *r, const struct atr_json *obj, const char *key,
                   enum atr_json_type type, struct atr_json **out)
{
    struct atr_json *v = atr_json_get(obj, key);
    if (!v)
        return atr_reader_fail_at(r, obj, "expected \"%s\" (%s) in this object", key,
                                  atr_json_type_name(type));
    bool ok = v->type == type ||
              (type == ATR_JSON_TRUE && v->type == ATR_JSON_FALSE);   /* "boolean" */
    if (!ok)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be %s, found %s", key,
                                  atr_json_type_name(type), atr_json_type_name(v->type));
    *out = v;
    return 0;
}

int atr_reader_opt_i64(struct atr_reader *r, const struct atr_json *obj, const char *key,
                       int64_t *out)
{
    struct atr_json *v = atr_json_get(obj, key);
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be an integer", key);
    *out = v->i;
    return 0;
}

int atr_reader_opt(struct atr_reader *r, const struct atr_json *obj, const char *key,
                   enum atr_json_type type, const struct atr_json **out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    const char *want = atr_json_type_name(type);
    *out = NULL;
    if (!v || v->type == ATR_JSON_NULL)
        return 0;
    if (v->type != type)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be %s %s, found %s", key,
                                  strchr("aeiou", want[0]) ? "an" : "a", want,
                                  atr_json_type_name(v->type));
    *out = v;
    return 0;
}

int atr_reader_opt_str(struct atr_reader *r, const struct atr_json *obj, const char *key,
                       const char **out)
{
    const struct atr_json *v;
    if (atr_reader_opt(r, obj, key, ATR_JSON_STRING, &v) < 0)
        return -1;
    if (v)
        *out = v->u.str.s;
    return 0;
}
