/* fmt-azure.c - Azure LLM inference trace CSV (Splitwise, 2023/2024): one
 * single-step llm trace per row.
 *
 * Header "TIMESTAMP,ContextTokens,GeneratedTokens", then rows like
 * "2023-11-16 18:15:46.6805900,374,44" with CRLF line ends and often no final
 * newline. Timestamps are wall-clock without a zone; start_ms is the row's
 * arrival relative to the first row, so the zone does not matter. No prompt
 * content or prefix hashes exist, so steps have no hash_ids. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace/csv.h"
#include "trace/reader.h"

#define AZURE_COLS 3
#define AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define TICKS_PER_MS 10000    /* timestamps are kept in 100 ns ticks (7 digits) */

static const char *const azure_header[AZURE_COLS] = {
    "TIMESTAMP", "ContextTokens", "GeneratedTokens"};

struct azure_state {
    bool header_done;
    bool have_first;
    int64_t first_ticks;
    char base[128];
};

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so no libc time zone code is involved. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int64_t days_in_month(int64_t y, int64_t m)
{
    static const int8_t days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return days[m - 1] + (m == 2 && leap);
}

/* n digits at s as a number; false if any is not a digit. */
static bool digits(const char *s, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* The fraction after "SS." (1 to 9 digits) as 100 ns ticks, truncated. */
static bool fraction_ticks(const char *s, size_t len, int64_t *out)
{
    if (len == 0 || len > 9)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < 7; i++) {
        int d = 0;
        if (i < len) {
            if (s[i] < '0' || s[i] > '9')
                return false;
            d = s[i] - '0';
        }
        v = v * 10 + d;
    }
    for (size_t i = 7; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    *out = v;
    return true;
}

/* "YYYY-MM-DD HH:MM:SS[.fffffff]" (or with 'T') as 100 ns ticks since 1970. */
static bool parse_timestamp(const char *s, size_t len, int64_t *out)
{
    int64_t y, mo, d, h, mi, sec, frac = 0;
    if (len < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
        s[13] != ':' || s[16] != ':')
        return false;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 60)   /* 60: a leap second */
        return false;
    if (len > 19 && (s[19] != '.' || !fraction_ticks(s + 20, len - 20, &frac)))
        return false;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *out = secs * 10000000 + frac;
    return true;
}

/* Checks the header line. */
static int check_header(struct atr_reader *r, const char *line, size_t len)
{
    struct csv_field f[AZURE_COLS + 1];
    unsigned long bad;
    int n = csv_split(&r->scratch, line, len, f, AZURE_COLS, &bad);
    if (n < 0 || !csv_header_is(f, n, azure_header, AZURE_COLS))
        return atr_reader_fail(r, atr_input_lineno(r->in), 1,
                               "expected header \"" AZURE_HEADER "\"");
    return 0;
}

/* Splits a data row into exactly AZURE_COLS fields. */
static int split_row(struct atr_reader *r, const char *line, size_t len, unsigned long lineno,
                     struct csv_field *f)
{
    unsigned long bad;
    int n = csv_split(&r->scratch, line, len, f, AZURE_COLS, &bad);
    if (n < 0)
        return atr_reader_fail(r, lineno, bad, "expected a well-formed quoted field");
    if (n < AZURE_COLS)
        return atr_reader_fail(r, lineno, len + 1, "expected %d columns, got %d", AZURE_COLS, n);
    if (n > AZURE_COLS)
        return atr_reader_fail(r, lineno, f[AZURE_COLS].col, "expected %d columns, got more",
                               AZURE_COLS);
    return 0;
}

/* Fills t from one data row. */
static int fill_trace(struct atr_reader *r, struct azure_state *st, struct atr_trace *t,
                      const char *line, size_t len)
{
    unsigned long lineno = atr_input_lineno(r->in);
    struct csv_field f[AZURE_COLS + 1];
    int64_t ticks = 0, ctx = 0, gen = 0;
    if (split_row(r, line, len, lineno, f) < 0)
        return -1;
    if (!parse_timestamp(f[0].s, f[0].len, &ticks))
        return atr_reader_fail(r, lineno, f[0].col,
                               "expected TIMESTAMP as \"YYYY-MM-DD HH:MM:SS.fffffff\"");
    if (!csv_parse_u63(f[1].s, f[1].len, &ctx))
        return atr_reader_fail(r, lineno, f[1].col,
                               "expected ContextTokens as a non-negative integer");
    if (!csv_parse_u63(f[2].s, f[2].len, &gen))
        return atr_reader_fail(r, lineno, f[2].col,
                               "expected GeneratedTokens as a non-negative integer");
    if (!st->have_first) {
        st->have_first = true;
        st->first_ticks = ticks;
    }
    if (ticks < st->first_ticks)
        return atr_reader_fail(r, lineno, f[0].col,
                               "expected TIMESTAMP not before the first row's");
    t->trace_id = atr_arena_printf(&t->arena, "azure/%s/%lu", st->base, lineno);
    t->source = "azure";
    t->start_ms = (ticks - st->first_ticks + TICKS_PER_MS / 2) / TICKS_PER_MS;
    t->block_size = r->opts.block_size ? r->opts.block_size : ATR_DEFAULT_BLOCK_SIZE;
    reqlog_add_step(t, ctx, gen);
    return 0;
}

static struct azure_state *state_of(struct atr_reader *r)
{
    if (!r->state) {
        struct azure_state *st = calloc(1, sizeof *st);
        if (!st)
            abort();   /* as the arena does: no recovery from OOM */
        reqlog_basename(atr_input_name(r->in), st->base, sizeof st->base);
        r->state = st;
    }
    return r->state;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct azure_state *st = state_of(r);
    const char *line;
    size_t len;
    int rc = csv_next_row(r, &st->header_done, AZURE_HEADER, check_header, &line, &len);
    return rc <= 0 ? rc : fill_trace(r, st, t, line, len) < 0 ? -1 : 1;
}

static int sniff(const char *head, size_t len, const char *name)
{
    static const char hdr[] = AZURE_HEADER;
    if (len >= 3 && memcmp(head, "\xEF\xBB\xBF", 3) == 0)
        head += 3, len -= 3;
    if (len >= sizeof hdr - 1 && strncasecmp(head, hdr, sizeof hdr - 1) == 0)
        return 100;
    return 0;
}

static void free_state(void *state)
{
    free(state);
}

const struct atr_format atr_format_azure = {
    "azure",
    "Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens)",
    sniff, next, free_state,
};
