/* reqlog.c - the request-log readers' row driver, CSV line splitting and
 * number parsing. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace/fmt/reqlog.h"
#include "util/alloc.h"

/* Unescapes the quoted field whose opening quote is at s[*pos], in place
 * (the text moves one byte left). On success *pos is just after the
 * closing quote and the field's length is returned; -1 if unterminated. */
static long unquote(char *s, size_t len, size_t *pos)
{
    size_t start = *pos, rd = *pos + 1, wr = *pos;
    while (rd < len) {
        if (s[rd] != '"') {
            s[wr++] = s[rd++];
        } else if (rd + 1 < len && s[rd + 1] == '"') {
            s[wr++] = '"';
            rd += 2;
        } else {
            *pos = rd + 1;
            s[wr] = '\0';   /* wr < rd: s[*pos] is still the original byte */
            return (long)(wr - start);
        }
    }
    return -1;
}

/* One field starting at *pos; leaves *pos at the ',' or the end. */
static int split_field(char *s, size_t len, size_t *pos, struct csv_field *f,
                       unsigned long *bad_col)
{
    f->col = *pos + 1;
    f->s = s + *pos;
    if (*pos < len && s[*pos] == '"') {
        long n = unquote(s, len, pos);
        if (n < 0 || (*pos < len && s[*pos] != ',')) {
            *bad_col = n < 0 ? f->col : *pos + 1;
            return -1;
        }
        f->len = (size_t)n;
        return 0;
    }
    const char *comma = memchr(s + *pos, ',', len - *pos);
    size_t end = comma ? (size_t)(comma - s) : len;
    f->len = end - *pos;
    *pos = end;
    return 0;
}

int csv_split(struct atr_arena *a, const char *line, size_t len,
              struct csv_field *fields, int max, unsigned long *bad_col)
{
    char *s = atr_arena_strndup(a, line, len);
    size_t pos = 0;
    int n = 0;
    for (;;) {
        if (split_field(s, len, &pos, &fields[n], bad_col) < 0)
            return -1;
        n++;
        bool more = pos < len;     /* s[pos] is ',' */
        if (more)
            s[pos++] = '\0';
        else
            s[len] = '\0';
        if (!more || n > max)
            return n;
    }
}

/* Trims blanks (spaces and tabs) from both ends. */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

bool csv_parse_u63(const char *s, size_t len, int64_t *out)
{
    trim(&s, &len);
    if (len == 0)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (v > (INT64_MAX - (s[i] - '0')) / 10)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool csv_parse_nonneg_double(const char *s, size_t len, double *out)
{
    char tmp[64];
    trim(&s, &len);
    if (len == 0 || len >= sizeof tmp || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return false;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    /* strtod also takes hex and "inf"; the first-byte check and isfinite
     * keep it to plain decimals. */
    if (*end != '\0' || !isfinite(v) || v < 0 || strpbrk(tmp, "xXnN"))
        return false;
    *out = v;
    return true;
}

/* Whether the fields equal the expected header names (ignoring case and
 * surrounding blanks; a UTF-8 byte order mark before the first is skipped). */
static bool header_is(const struct csv_field *fields, int n, const char *const *names,
                      int n_names)
{
    if (n != n_names)
        return false;
    for (int i = 0; i < n; i++) {
        const char *s = fields[i].s;
        size_t len = fields[i].len;
        if (i == 0 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
            s += 3, len -= 3;
        trim(&s, &len);
        if (len != strlen(names[i]) || strncasecmp(s, names[i], len) != 0)
            return false;
    }
    return true;
}

/* Removes one known extension from the end of out, if present. */
static bool strip_ext(char *out)
{
    static const char *const exts[] = {".gz", ".zst", ".csv", ".jsonl", ".json",
                                       ".zip", ".txt", ".parquet", NULL};
    size_t n = strlen(out);
    for (int i = 0; exts[i]; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcasecmp(out + n - e, exts[i]) == 0) {
            out[n - e] = '\0';
            return true;
        }
    }
    return false;
}

void reqlog_basename(const char *name, char *out, size_t cap)
{
    if (cap == 0)
        return;
    if (!name || strcmp(name, "<stdin>") == 0 || strcmp(name, "-") == 0)
        name = "stdin";
    const char *slash = strrchr(name, '/');
    snprintf(out, cap, "%s", slash ? slash + 1 : name);
    while (strip_ext(out))
        ;
    if (out[0] == '\0')
        snprintf(out, cap, "input");
}

struct atr_step *reqlog_add_step(struct atr_trace *t, int64_t input_tokens,
                                 int64_t output_tokens)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_LLM);
    s->t_ms = 0;
    s->input_tokens = input_tokens;
    s->output_tokens = output_tokens;
    s->tokens_from = ATR_TOKENS_RECORDED;   /* request logs record lengths, not text */
    s->hash_ids = atr_arena_alloc(&t->arena, sizeof *s->hash_ids);
    s->n_hash_ids = 0;
    return s;
}

/* Checks the header line: the format's columns, nothing else. */
static int check_header(struct atr_reader *r, const struct reqlog_format *f, const char *line,
                        size_t len)
{
    struct csv_field fields[REQLOG_MAX_COLS + 1];
    unsigned long bad;
    int n = csv_split(&r->scratch, line, len, fields, f->ncols, &bad);
    if (n < 0 || !header_is(fields, n, f->columns, f->ncols))
        return atr_reader_fail(r, r->base_line, 1, "expected header \"%s\"", f->header);
    return 0;
}

/* Next data row of a CSV input, whose first line is the header. */
static int csv_row(struct atr_reader *r, struct reqlog_state *st, const struct reqlog_format *f,
                   const char **line, size_t *len)
{
    if (!st->header_done) {
        int rc = atr_reader_getline(r, line, len);
        if (rc == 0)
            return atr_reader_fail(r, 1, 1, "expected header \"%s\", got empty input",
                                   f->header);
        if (rc < 0 || check_header(r, f, *line, *len) < 0)
            return -1;
        st->header_done = true;
    }
    return atr_reader_getline_nonblank(r, line, len);
}

/* Splits a data row into exactly f->ncols fields. */
static int split_row(struct atr_reader *r, const struct reqlog_format *f, const char *line,
                     size_t len, struct csv_field *fields)
{
    unsigned long bad, lineno = r->base_line;
    int n = csv_split(&r->scratch, line, len, fields, f->ncols, &bad);
    if (n < 0)
        return atr_reader_fail(r, lineno, bad, "expected a well-formed quoted field");
    if (n < f->ncols)
        return atr_reader_fail(r, lineno, len + 1, "expected %d columns, got %d", f->ncols, n);
    if (n > f->ncols)
        return atr_reader_fail(r, lineno, fields[f->ncols].col,
                               "expected %d columns, got more", f->ncols);
    return 0;
}

/* The next row, CSV or JSON: 1, 0 at the end, -1 after fail. */
static int next_row(struct atr_reader *r, struct reqlog_state *st,
                    const struct reqlog_format *f, struct reqlog_row *row,
                    struct csv_field *fields)
{
    const char *line;
    size_t len;
    struct atr_json *obj;
    if (!f->header) {
        int rc = atr_reader_json_line(r, &r->scratch, &obj);
        if (rc == 0 && r->ntraces == 0)
            return atr_reader_fail(r, 1, 1, "expected %s, got empty input", f->what);
        row->obj = obj;
        return rc;
    }
    int rc = csv_row(r, st, f, &line, &len);
    if (rc <= 0)
        return rc;
    row->f = fields;
    return split_row(r, f, line, len, fields) < 0 ? -1 : 1;
}

int reqlog_next(struct atr_reader *r, struct atr_trace *t, const struct reqlog_format *f)
{
    if (!r->state) {
        struct reqlog_state *st = r->state = xcalloc(1, f->state_size);
        reqlog_basename(atr_input_name(r->in), st->base, sizeof st->base);
    }
    struct reqlog_state *st = r->state;
    struct csv_field fields[REQLOG_MAX_COLS + 1];
    struct reqlog_row row = {0};
    int rc = next_row(r, st, f, &row, fields);
    if (rc <= 0)
        return rc;
    row.line = r->base_line;
    t->trace_id = atr_arena_printf(&t->arena, "%s/%s/%lu", r->fmt->name, st->base, row.line);
    return f->fill(r, st, t, &row) < 0 ? -1 : 1;
}
