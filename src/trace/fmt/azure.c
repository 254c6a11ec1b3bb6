/* azure.c - Azure LLM inference trace CSV (Splitwise, 2023/2024): one
 * single-step llm trace per row.
 *
 * Header "TIMESTAMP,ContextTokens,GeneratedTokens", then rows like
 * "2023-11-16 18:15:46.6805900,374,44" with CRLF line ends and often no final
 * newline. Timestamps are wall-clock without a zone; start_ms is the row's
 * arrival relative to the first row, so the zone does not matter. No prompt
 * content or prefix hashes exist, so steps have no hash_ids. */
#include <stdlib.h>

#include "trace/fmt/reqlog.h"
#include "trace/reader.h"
#include "util/date.h"

#define AZURE_COLS 3
#define AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define TICKS_PER_MS 10000    /* timestamps are kept in 100 ns ticks (7 digits) */

static const char *const azure_header[AZURE_COLS] = {
    "TIMESTAMP", "ContextTokens", "GeneratedTokens"};

struct azure_state {
    struct reqlog_state log;
    bool have_first;
    int64_t first_ticks;
};

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
    int64_t secs = atr_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *out = secs * 10000000 + frac;
    return true;
}

/* Fills t from one data row. */
static int fill_trace(struct atr_reader *r, void *state, struct atr_trace *t,
                      const struct reqlog_row *row)
{
    struct azure_state *st = state;
    const struct csv_field *f = row->f;
    int64_t ticks = 0, ctx = 0, gen = 0;
    if (!parse_timestamp(f[0].s, f[0].len, &ticks))
        return atr_reader_fail(r, row->line, f[0].col,
                               "expected TIMESTAMP as \"YYYY-MM-DD HH:MM:SS.fffffff\"");
    if (!csv_parse_u63(f[1].s, f[1].len, &ctx))
        return atr_reader_fail(r, row->line, f[1].col,
                               "expected ContextTokens as a non-negative integer");
    if (!csv_parse_u63(f[2].s, f[2].len, &gen))
        return atr_reader_fail(r, row->line, f[2].col,
                               "expected GeneratedTokens as a non-negative integer");
    if (!st->have_first) {
        st->have_first = true;
        st->first_ticks = ticks;
    }
    if (ticks < st->first_ticks)
        return atr_reader_fail(r, row->line, f[0].col,
                               "expected TIMESTAMP not before the first row's");
    t->start_ms = (ticks - st->first_ticks + TICKS_PER_MS / 2) / TICKS_PER_MS;
    reqlog_add_step(t, ctx, gen);
    return 0;
}

static const struct reqlog_format azure_log = {
    sizeof(struct azure_state), AZURE_HEADER, azure_header, AZURE_COLS, NULL, fill_trace,
};

static int next(struct atr_reader *r, struct atr_trace *t)
{
    return reqlog_next(r, t, &azure_log);
}

static int sniff(const char *head, size_t len, const char *name)
{
    return atr_sniff_prefix(head, len, AZURE_HEADER) ? 100 : 0;
}

const struct atr_format atr_format_azure = {
    "azure",
    "Azure LLM inference trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens)",
    sniff, next, free,
};
