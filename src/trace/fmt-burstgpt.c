/* fmt-burstgpt.c - BurstGPT request log CSV: one single-step llm trace per
 * row.
 *
 * Header "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type";
 * Timestamp is seconds since the log's start (integer or fraction), Model is
 * "ChatGPT" or "GPT-4", Log Type "Conversation log" or "API log". start_ms is
 * the arrival relative to the first row.
 *
 * Failed requests: BurstGPT marks them with 0 response tokens. They are kept
 * (dropping them would change the arrival process a replay reproduces), with
 * output_tokens 0 and meta "outcome":"failed", so a consumer can tell them
 * apart or filter them; successful rows carry no outcome. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace/csv.h"
#include "trace/reader.h"

#define BURSTGPT_COLS 6
#define BURSTGPT_HEADER \
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"

enum { COL_TS, COL_MODEL, COL_REQ, COL_RESP, COL_TOTAL, COL_LOG };

static const char *const burstgpt_header[BURSTGPT_COLS] = {
    "Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"};

struct burstgpt_state {
    bool header_done;
    bool have_first;
    double first_ts;          /* seconds */
    char base[128];
};

static int check_header(struct atr_reader *r, const char *line, size_t len)
{
    struct csv_field f[BURSTGPT_COLS + 1];
    unsigned long bad;
    int n = csv_split(&r->scratch, line, len, f, BURSTGPT_COLS, &bad);
    if (n < 0 || !csv_header_is(f, n, burstgpt_header, BURSTGPT_COLS))
        return atr_reader_fail(r, atr_input_lineno(r->in), 1,
                               "expected header \"" BURSTGPT_HEADER "\"");
    return 0;
}

static int split_row(struct atr_reader *r, const char *line, size_t len, unsigned long lineno,
                     struct csv_field *f)
{
    unsigned long bad;
    int n = csv_split(&r->scratch, line, len, f, BURSTGPT_COLS, &bad);
    if (n < 0)
        return atr_reader_fail(r, lineno, bad, "expected a well-formed quoted field");
    if (n < BURSTGPT_COLS)
        return atr_reader_fail(r, lineno, len + 1, "expected %d columns, got %d",
                               BURSTGPT_COLS, n);
    if (n > BURSTGPT_COLS)
        return atr_reader_fail(r, lineno, f[BURSTGPT_COLS].col, "expected %d columns, got more",
                               BURSTGPT_COLS);
    return 0;
}

/* The three token columns, each a non-negative integer. */
static int parse_tokens(struct atr_reader *r, unsigned long lineno, const struct csv_field *f,
                        int64_t tok[3])
{
    for (int c = COL_REQ; c <= COL_TOTAL; c++)
        if (!csv_parse_u63(f[c].s, f[c].len, &tok[c - COL_REQ]))
            return atr_reader_fail(r, lineno, f[c].col, "expected %s as a non-negative integer",
                                   burstgpt_header[c]);
    return 0;
}

/* Arrival in ms relative to the first row. */
static int arrival_ms(struct atr_reader *r, struct burstgpt_state *st, unsigned long lineno,
                      const struct csv_field *f, int64_t *out)
{
    double ts = 0;
    if (!csv_parse_nonneg_double(f[COL_TS].s, f[COL_TS].len, &ts) || ts > 9.0e12)
        return atr_reader_fail(r, lineno, f[COL_TS].col,
                               "expected Timestamp as a non-negative number of seconds");
    if (!st->have_first) {
        st->have_first = true;
        st->first_ts = ts;
    }
    if (ts < st->first_ts)
        return atr_reader_fail(r, lineno, f[COL_TS].col,
                               "expected Timestamp not before the first row's");
    *out = llround((ts - st->first_ts) * 1000.0);
    return 0;
}

/* Sets a meta string from a field unless it is empty. */
static void meta_field(struct atr_trace *t, const char *key, const struct csv_field *f)
{
    if (f->len)
        atr_trace_meta_set_str(t, key, f->s);
}

static int fill_trace(struct atr_reader *r, struct burstgpt_state *st, struct atr_trace *t,
                      const char *line, size_t len)
{
    unsigned long lineno = atr_input_lineno(r->in);
    struct csv_field f[BURSTGPT_COLS + 1];
    int64_t tok[3] = {0}, start = 0;
    if (split_row(r, line, len, lineno, f) < 0 || parse_tokens(r, lineno, f, tok) < 0 ||
        arrival_ms(r, st, lineno, f, &start) < 0)
        return -1;
    t->trace_id = atr_arena_printf(&t->arena, "burstgpt/%s/%lu", st->base, lineno);
    t->source = "burstgpt";
    t->start_ms = start;
    t->block_size = r->opts.block_size ? r->opts.block_size : ATR_DEFAULT_BLOCK_SIZE;
    meta_field(t, "model", &f[COL_MODEL]);
    meta_field(t, "log_type", &f[COL_LOG]);
    if (tok[1] == 0)
        atr_trace_meta_set_str(t, "outcome", "failed");
    reqlog_add_step(t, tok[0], tok[1]);
    return 0;
}

static struct burstgpt_state *state_of(struct atr_reader *r)
{
    if (!r->state) {
        struct burstgpt_state *st = calloc(1, sizeof *st);
        if (!st)
            abort();   /* as the arena does: no recovery from OOM */
        reqlog_basename(atr_input_name(r->in), st->base, sizeof st->base);
        r->state = st;
    }
    return r->state;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct burstgpt_state *st = state_of(r);
    const char *line;
    size_t len;
    int rc = csv_next_row(r, &st->header_done, BURSTGPT_HEADER, check_header, &line, &len);
    return rc <= 0 ? rc : fill_trace(r, st, t, line, len) < 0 ? -1 : 1;
}

static int sniff(const char *head, size_t len, const char *name)
{
    static const char hdr[] = "Timestamp,Model,Request tokens,Response tokens";
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

const struct atr_format atr_format_burstgpt = {
    "burstgpt",
    "BurstGPT request log CSV (Timestamp,Model,Request tokens,Response tokens,...)",
    sniff, next, free_state,
};
