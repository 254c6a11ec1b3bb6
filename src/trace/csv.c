/* csv.c - CSV line splitting and number parsing for the request-log readers. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace/csv.h"

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

bool csv_header_is(const struct csv_field *fields, int n, const char *const *names,
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
                                       ".zip", ".txt", NULL};
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
    s->hash_ids = atr_arena_alloc(&t->arena, sizeof *s->hash_ids);
    s->n_hash_ids = 0;
    return s;
}

static bool blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

int csv_next_row(struct atr_reader *r, bool *header_done, const char *header,
                 int (*check_header)(struct atr_reader *r, const char *line, size_t len),
                 const char **line, size_t *len)
{
    int rc;
    while ((rc = atr_reader_getline(r, line, len)) == 1) {
        if (!*header_done) {
            if (check_header(r, *line, *len) < 0)
                return -1;
            *header_done = true;
        } else if (!blank(*line, *len)) {
            return 1;
        }
    }
    if (rc == 0 && !*header_done)
        return atr_reader_fail(r, 1, 1, "expected header \"%s\", got empty input", header);
    return rc;
}
