/* burstgpt.c - BurstGPT request log CSV: one single-step llm trace per
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

#include "trace/fmt/reqlog.h"
#include "trace/reader.h"

#define BURSTGPT_COLS 6
#define BURSTGPT_HEADER \
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"

enum { COL_TS, COL_MODEL, COL_REQ, COL_RESP, COL_TOTAL, COL_LOG };

static const char *const burstgpt_header[BURSTGPT_COLS] = {
    "Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"};

struct burstgpt_state {
    struct reqlog_state log;
    bool have_first;
    double first_ts;          /* seconds */
};

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

static int fill_trace(struct atr_reader *r, void *state, struct atr_trace *t,
                      const struct reqlog_row *row)
{
    const struct csv_field *f = row->f;
    int64_t tok[3] = {0}, start = 0;
    if (parse_tokens(r, row->line, f, tok) < 0 || arrival_ms(r, state, row->line, f, &start) < 0)
        return -1;
    t->start_ms = start;
    meta_field(t, "model", &f[COL_MODEL]);
    meta_field(t, "log_type", &f[COL_LOG]);
    if (tok[1] == 0)
        atr_trace_meta_set_str(t, "outcome", "failed");
    reqlog_add_step(t, tok[0], tok[1]);
    return 0;
}

static const struct reqlog_format burstgpt_log = {
    sizeof(struct burstgpt_state), BURSTGPT_HEADER, burstgpt_header, BURSTGPT_COLS, NULL,
    fill_trace,
};

static int next(struct atr_reader *r, struct atr_trace *t)
{
    return reqlog_next(r, t, &burstgpt_log);
}

static int sniff(const char *head, size_t len, const char *name)
{
    return atr_sniff_prefix(head, len, "Timestamp,Model,Request tokens,Response tokens") ? 100
                                                                                        : 0;
}

const struct atr_format atr_format_burstgpt = {
    "burstgpt",
    "BurstGPT request log CSV (Timestamp,Model,Request tokens,Response tokens,...)",
    sniff, next, free,
};
