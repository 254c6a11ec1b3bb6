/* result.c - the result object, the printed block and the per-request
 * lines of an LLM run (see result.h). */
#include "stats/result.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "99" for integral percentiles, else Python's str(float), as vLLM names keys. */
static void pct_word(double p, char *out, size_t cap)
{
    if (p == floor(p))
        snprintf(out, cap, "%d", (int)p);
    else
        snprintf(out, cap, "%.15g", p);
}

/* mean_, median_, std_ and pN_ NAME_ms; session figures at their own
 * percentiles. */
static void put_stat_of(struct atr_jw *w, const char *name, const struct atr_llm_stat *st,
                        const struct atr_llm_bench_config *cfg, bool session)
{
    char key[64], pw[32];
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(cfg, session, pct);
    snprintf(key, sizeof key, "mean_%s_ms", name);
    atr_jw_kv_pyfloat(w, key, st->mean);
    snprintf(key, sizeof key, "median_%s_ms", name);
    atr_jw_kv_pyfloat(w, key, st->median);
    snprintf(key, sizeof key, "std_%s_ms", name);
    atr_jw_kv_pyfloat(w, key, st->std);
    for (size_t i = 0; i < n; i++) {
        pct_word(pct[i], pw, sizeof pw);
        snprintf(key, sizeof key, "p%s_%s_ms", pw, name);
        atr_jw_kv_pyfloat(w, key, st->p[i]);
    }
}

/* A per-session ratio (no unit): "NAME": {mean, median, std, pP...}. */
static void put_ratio(struct atr_jw *w, const char *name, const struct atr_llm_stat *st,
                      const struct atr_llm_bench_config *cfg)
{
    char key[64], pw[32];
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(cfg, true, pct);
    atr_jw_key(w, name);
    atr_jw_object_begin(w);
    atr_jw_kv_pyfloat(w, "mean", st->mean);
    atr_jw_kv_pyfloat(w, "median", st->median);
    atr_jw_kv_pyfloat(w, "std", st->std);
    for (size_t i = 0; i < n; i++) {
        pct_word(pct[i], pw, sizeof pw);
        snprintf(key, sizeof key, "p%s", pw);
        atr_jw_kv_pyfloat(w, key, st->p[i]);
    }
    atr_jw_object_end(w);
}

static void put_stat(struct atr_jw *w, const char *name, const struct atr_llm_stat *st,
                     const struct atr_llm_bench_config *cfg)
{
    put_stat_of(w, name, st, cfg, false);
}

/* A rate as vLLM writes request_rate: a float, the string "inf" (all at
 * once), or null (none). */
static void put_rate(struct atr_jw *w, const char *key, double rate)
{
    if (isnan(rate))
        atr_jw_kv_null(w, key);
    else if (isinf(rate))
        atr_jw_kv_str(w, key, "inf");
    else
        atr_jw_kv_pyfloat(w, key, rate);
}

static void put_header(struct atr_jw *w, const struct atr_llm_bench_config *c)
{
    atr_jw_kv_str(w, "date", c->date);
    atr_jw_kv_str(w, "endpoint_type", c->backend);
    atr_jw_kv_str(w, "backend", c->backend);
    atr_jw_kv_null(w, "label");
    atr_jw_kv_str(w, "model_id", c->model_id);
    atr_jw_kv_str(w, "tokenizer_id", c->tokenizer_id ? c->tokenizer_id : c->model_id);
    atr_jw_kv_int(w, "num_prompts", c->num_prompts);
    put_rate(w, "request_rate", c->request_rate);
    atr_jw_kv_pyfloat(w, "burstiness", c->burstiness);
    if (c->max_concurrency > 0)
        atr_jw_kv_int(w, "max_concurrency", c->max_concurrency);
    else
        atr_jw_kv_null(w, "max_concurrency");
}

static void put_totals(struct atr_jw *w, const struct atr_llm_summary *s)
{
    atr_jw_kv_pyfloat(w, "duration", s->duration);
    atr_jw_kv_int(w, "completed", s->completed);
    atr_jw_kv_int(w, "failed", s->failed);
    atr_jw_kv_int(w, "total_input_tokens", s->total_input);
    atr_jw_kv_int(w, "total_output_tokens", s->total_output);
    atr_jw_kv_pyfloat(w, "request_throughput", s->request_throughput);
    if (s->goodput_configured)
        atr_jw_kv_pyfloat(w, "request_goodput", s->request_goodput);
    else
        atr_jw_kv_null(w, "request_goodput");
    atr_jw_kv_pyfloat(w, "output_throughput", s->output_throughput);
    atr_jw_kv_pyfloat(w, "total_token_throughput", s->total_token_throughput);
    atr_jw_kv_pyfloat(w, "max_output_tokens_per_s", s->max_output_tokens_per_s);
    atr_jw_kv_int(w, "max_concurrent_requests", s->max_concurrent_requests);
}

static void put_goodput(struct atr_jw *w, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *c)
{
    if (!s->goodput_configured) {
        atr_jw_kv_null(w, "goodput");
        return;
    }
    atr_jw_key(w, "goodput");
    atr_jw_object_begin(w);
    atr_jw_key(w, "slo_ms");
    atr_jw_object_begin(w);
    const struct { const char *key; double ms; } slo[] = {
        {"ttft", c->slo_ttft_ms}, {"tpot", c->slo_tpot_ms}, {"e2el", c->slo_e2el_ms},
    };
    for (size_t i = 0; i < sizeof slo / sizeof slo[0]; i++)
        if (slo[i].ms >= 0)
            atr_jw_kv_pyfloat(w, slo[i].key, slo[i].ms);
    atr_jw_object_end(w);
    atr_jw_kv_int(w, "good_requests", s->good_completed);
    atr_jw_kv_pyfloat(w, "request_goodput", s->request_goodput);
    atr_jw_object_end(w);
}

static void put_failures(struct atr_jw *w, const struct atr_llm_summary *s)
{
    atr_jw_key(w, "failures_by_reason");
    atr_jw_object_begin(w);
    for (size_t i = 0; i < s->n_failures; i++)
        atr_jw_kv_int(w, s->failures[i].reason, s->failures[i].count);
    atr_jw_object_end(w);
}

/* "prompt_tokens_check": the server's prompt_tokens against the length
 * atr built, only where some request had both (a real server's replay). */
static void put_prompt_check(struct atr_jw *w, const struct atr_llm_summary *s)
{
    if (!s->prompt_checked)
        return;
    atr_jw_key(w, "prompt_tokens_check");
    atr_jw_object_begin(w);
    atr_jw_kv_int(w, "requests", s->prompt_checked);
    atr_jw_kv_int(w, "template_tokens", s->prompt_template_tokens);
    atr_jw_kv_int(w, "mismatch", s->prompt_mismatch);
    atr_jw_kv_pyfloat(w, "max_rel_error", s->prompt_max_rel_error);
    atr_jw_object_end(w);
}

/* "kv_retention": per pause bin, the later turns and the share of the
 * prefix they shared with the turn before that the server still had
 * cached (stats/retention.h); null where no turn fell. */
static void put_retention(struct atr_jw *w, const struct atr_retention *rt)
{
    atr_jw_key(w, "kv_retention");
    atr_jw_object_begin(w);
    atr_jw_kv_int(w, "turns", rt->turns);
    atr_jw_kv_int(w, "unknown", rt->unknown);
    atr_jw_key(w, "bins");
    atr_jw_array_begin(w);
    for (size_t k = 0; k < ATR_RETENTION_BINS; k++) {
        const struct atr_retention_bin *b = &rt->bins[k];
        atr_jw_object_begin(w);
        atr_jw_kv_pyfloat(w, "pause_from_s", b->lo_s);
        if (isinf(b->hi_s))
            atr_jw_kv_null(w, "pause_to_s");
        else
            atr_jw_kv_pyfloat(w, "pause_to_s", b->hi_s);
        atr_jw_kv_int(w, "turns", b->turns);
        double reuse = atr_retention_reuse(b);
        if (isnan(reuse))
            atr_jw_kv_null(w, "reuse");
        else
            atr_jw_kv_pyfloat(w, "reuse", reuse);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}

/* "sessions": counts and per-session figures, for multi-turn workloads only
 * (a workload of single requests would repeat its request figures). */
static void put_sessions(struct atr_jw *w, const struct atr_llm_sessions *ss,
                         const struct atr_llm_bench_config *c)
{
    if (!ss->multi_turn)
        return;
    atr_jw_key(w, "sessions");
    atr_jw_object_begin(w);
    atr_jw_kv_int(w, "completed", ss->completed);
    atr_jw_kv_int(w, "failed", ss->failed);
    put_stat_of(w, "completion", &ss->completion, c, true);
    put_stat_of(w, "model_time", &ss->model, c, true);
    put_stat_of(w, "think_time", &ss->think, c, true);
    if (ss->dag) {                   /* DAG sessions only: chains' results stay as they were */
        put_stat_of(w, "critical_path", &ss->critical_path, c, true);
        put_ratio(w, "parallelism", &ss->parallelism, c);
    }
    if (ss->goodput_configured) {    /* --goodput session:MS */
        atr_jw_kv_pyfloat(w, "slo_completion_ms", c->slo_session_ms);
        atr_jw_kv_int(w, "good_completed", ss->good_completed);
        atr_jw_kv_pyfloat(w, "goodput", ss->goodput);
    }
    put_retention(w, &ss->retention);
    atr_jw_object_end(w);
}

/* "schedule": when the sessions started, as configured. */
static void put_schedule(struct atr_jw *w, const struct atr_llm_bench_config *c)
{
    if (!c->schedule)
        return;
    atr_jw_key(w, "schedule");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "arrival", c->schedule);
    put_rate(w, "session_rate", c->session_rate);
    atr_jw_kv_pyfloat(w, "time_scale", c->time_scale);
    atr_jw_object_end(w);
}

/* atr's figures, under one "atr" key so no vLLM reader trips on them. */
static void put_atr_figures(struct atr_jw *w, const struct atr_llm_summary *s,
                            const struct atr_llm_bench_config *c)
{
    double hit = s->total_input ? (double)s->cached_tokens / (double)s->total_input : 0.0;
    atr_jw_kv_bool(w, "incomplete", c->incomplete);
    put_schedule(w, c);
    atr_jw_kv_pyfloat(w, "mean_client_queue_ms", s->queue_mean_ms);
    atr_jw_kv_pyfloat(w, "p99_client_queue_ms", s->queue_p99_ms);
    atr_jw_kv_pyfloat(w, "p50_schedule_lag_ms", s->lag_p50_ms);
    atr_jw_kv_pyfloat(w, "p99_schedule_lag_ms", s->lag_p99_ms);
    atr_jw_kv_pyfloat(w, "p50_send_lag_ms", s->send_lag_p50_ms);
    atr_jw_kv_pyfloat(w, "p99_send_lag_ms", s->send_lag_p99_ms);
    put_stat(w, "ttft_from_send", &s->ttft_send, c);
    put_stat(w, "e2el_from_send", &s->e2el_send, c);
    atr_jw_kv_int(w, "cached_tokens", s->cached_tokens);
    atr_jw_kv_pyfloat(w, "prefix_cache_hit_rate", hit);
    put_goodput(w, s, c);
    put_failures(w, s);
    put_prompt_check(w, s);
    put_sessions(w, &s->sessions, c);
}

void atr_llm_result_begin(struct atr_jw *w, const struct atr_llm_summary *s,
                          const struct atr_llm_bench_config *cfg)
{
    atr_jw_object_begin(w);
    put_header(w, cfg);
    put_totals(w, s);
    put_stat(w, "ttft", &s->ttft, cfg);
    put_stat(w, "tpot", &s->tpot, cfg);
    put_stat(w, "itl", &s->itl, cfg);
    put_stat(w, "e2el", &s->e2el, cfg);
    atr_jw_key(w, "atr");
    atr_jw_object_begin(w);
    put_atr_figures(w, s, cfg);
}

void atr_llm_result_end(struct atr_jw *w)
{
    atr_jw_object_end(w);
    atr_jw_object_end(w);
}

int atr_llm_write_result_json(struct atr_buf *b, const struct atr_llm_summary *s,
                              const struct atr_llm_bench_config *cfg)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_llm_result_begin(&w, s, cfg);
    atr_llm_result_end(&w);
    return atr_jw_finish(&w);
}

/* ---- the printed block ---- */

/* Python's "{:<40} {:<10.2f}" and "{:<40} {:<10}". */
static int line_f(struct atr_buf *b, const char *label, double v)
{
    return atr_buf_printf(b, "%-40s %-10.2f\n", label, v);
}

static int line_i(struct atr_buf *b, const char *label, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return atr_buf_printf(b, "%-40s %-10s\n", label, num);
}

/* "{s:{c}^{n}}": centred in 50 columns, the extra fill char on the right. */
static int header_line(struct atr_buf *b, const char *title, char fill)
{
    size_t len = strlen(title), pad = len < 50 ? 50 - len : 0;
    char line[64];
    memset(line, fill, pad / 2);
    memcpy(line + pad / 2, title, len < 50 ? len : 50);
    memset(line + pad / 2 + (len < 50 ? len : 50), fill, pad - pad / 2);
    line[(len < 50 ? len : 50) + pad] = '\0';
    return atr_buf_printf(b, "%s\n", line);
}

/* Mean, median and percentile lines of one metric. */
static int block_lines(struct atr_buf *b, const char *name, const struct atr_llm_stat *st,
                       const struct atr_llm_bench_config *c, bool session)
{
    char label[64], w[32];
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(c, session, pct);
    snprintf(label, sizeof label, "Mean %s (ms):", name);
    int rc = line_f(b, label, st->mean);
    snprintf(label, sizeof label, "Median %s (ms):", name);
    rc |= line_f(b, label, st->median);
    for (size_t i = 0; i < n; i++) {
        pct_word(pct[i], w, sizeof w);
        snprintf(label, sizeof label, "P%s %s (ms):", w, name);
        rc |= line_f(b, label, st->p[i]);
    }
    return rc;
}

/* A per-session ratio's lines: as block_lines, without "(ms)". */
static int block_ratio(struct atr_buf *b, const char *name, const struct atr_llm_stat *st,
                       const struct atr_llm_bench_config *c)
{
    char label[64], w[32];
    double pct[ATR_LLM_MAX_PCT];
    size_t n = atr_llm_pct_list(c, true, pct);
    snprintf(label, sizeof label, "Mean %s:", name);
    int rc = line_f(b, label, st->mean);
    snprintf(label, sizeof label, "Median %s:", name);
    rc |= line_f(b, label, st->median);
    for (size_t i = 0; i < n; i++) {
        pct_word(pct[i], w, sizeof w);
        snprintf(label, sizeof label, "P%s %s:", w, name);
        rc |= line_f(b, label, st->p[i]);
    }
    return rc;
}

static int block_metric(struct atr_buf *b, const char *name, const char *title,
                        const struct atr_llm_stat *st, const struct atr_llm_bench_config *c)
{
    return header_line(b, title, '-') | block_lines(b, name, st, c, false);
}

/* Session figures, for multi-turn workloads only (see put_sessions). */
static int block_sessions(struct atr_buf *b, const struct atr_llm_sessions *ss,
                          const struct atr_llm_bench_config *c)
{
    if (!ss->multi_turn)
        return 0;
    int rc = header_line(b, "Session Metrics", '-');
    rc |= line_i(b, "Completed sessions:", ss->completed);
    rc |= line_i(b, "Failed sessions:", ss->failed);
    if (ss->goodput_configured) {
        rc |= line_i(b, "Good sessions:", ss->good_completed);
        rc |= line_f(b, "Session goodput (sess/s):", ss->goodput);
    }
    rc |= block_lines(b, "completion time", &ss->completion, c, true);
    rc |= block_lines(b, "model time", &ss->model, c, true);
    rc |= block_lines(b, "think/tool time", &ss->think, c, true);
    if (ss->dag) {
        rc |= block_lines(b, "critical path", &ss->critical_path, c, true);
        rc |= block_ratio(b, "parallelism", &ss->parallelism, c);
    }
    return rc;
}

/* The server's own cache figures, for a replay against a server (where
 * the prompt check has requests; the simulator's and vLLM's blocks stay
 * as vLLM prints them). */
static int block_cache(struct atr_buf *b, const struct atr_llm_summary *s)
{
    if (!s->prompt_checked)
        return 0;
    double hit = s->total_input ? (double)s->cached_tokens / (double)s->total_input : 0.0;
    int rc = line_i(b, "Cached prompt tokens:", s->cached_tokens);
    return rc | line_f(b, "Prefix cache hit rate (%):", hit * 100);
}

static int block_totals(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *c)
{
    int rc = line_i(b, "Successful requests:", s->completed);
    rc |= line_i(b, "Failed requests:", s->failed);
    if (c->max_concurrency > 0)
        rc |= line_i(b, "Maximum request concurrency:", c->max_concurrency);
    if (isfinite(c->request_rate))
        rc |= line_f(b, "Request rate configured (RPS):", c->request_rate);
    if (c->schedule)
        rc |= atr_buf_printf(b, "%-40s %-10s\n", "Arrival schedule:", c->schedule);
    if (isnan(c->request_rate) && isfinite(c->session_rate))
        rc |= line_f(b, "Session start rate (/s):", c->session_rate);
    rc |= line_f(b, "Benchmark duration (s):", s->duration);
    rc |= line_i(b, "Total input tokens:", s->total_input);
    rc |= line_i(b, "Total generated tokens:", s->total_output);
    rc |= line_f(b, "Request throughput (req/s):", s->request_throughput);
    if (s->goodput_configured)
        rc |= line_f(b, "Request goodput (req/s):", s->request_goodput);
    rc |= line_f(b, "Output token throughput (tok/s):", s->output_throughput);
    rc |= line_f(b, "Peak output token throughput (tok/s):", s->max_output_tokens_per_s);
    rc |= line_f(b, "Peak concurrent requests:", (double)s->max_concurrent_requests);
    rc |= line_f(b, "Total Token throughput (tok/s):", s->total_token_throughput);
    return rc | block_cache(b, s);
}

int atr_llm_write_block(struct atr_buf *b, const struct atr_llm_summary *s,
                        const struct atr_llm_bench_config *cfg)
{
    int rc = header_line(b, " Serving Benchmark Result ", '=');
    rc |= block_totals(b, s, cfg);
    rc |= block_metric(b, "TTFT", "Time to First Token", &s->ttft, cfg);
    rc |= block_metric(b, "TPOT", "Time per Output Token (excl. 1st token)", &s->tpot, cfg);
    rc |= block_metric(b, "ITL", "Inter-token Latency", &s->itl, cfg);
    if (cfg->e2el_section)
        rc |= block_metric(b, "E2EL", "End-to-end Latency", &s->e2el, cfg);
    rc |= block_sessions(b, &s->sessions, cfg);
    return rc | header_line(b, "", '=') ? -1 : 0;
}

/* ---- one line per request ---- */

/* A time of s seconds rounded to whole nanoseconds (the resolution of the
 * clock it came from), written in seconds (unit_digits 9) or milliseconds
 * (6) with the fraction's trailing zeros dropped but one kept: 1.5, 0.000123,
 * 2.0. Integer arithmetic only: shortest round-trip formatting of doubles
 * was 27 % of a fast replay's CPU, for digits past the clock's. Values
 * past +-9.2e9 s or not finite take the slow path. */
static void put_ns(struct atr_jw *w, double s, int unit_digits)
{
    if (!(fabs(s) < 9.2e9)) {
        atr_jw_pyfloat(w, unit_digits == 9 ? s : s * 1000);
        return;
    }
    long long ns = llround(s * 1e9);
    unsigned long long u = ns < 0 ? 0ULL - (unsigned long long)ns : (unsigned long long)ns;
    char buf[40], *end = buf + sizeof buf, *p = end;
    int frac = unit_digits;
    while (frac > 1 && u % 10 == 0) {     /* trailing zeros of the fraction */
        u /= 10;
        frac--;
    }
    for (int i = 0; i < frac; i++, u /= 10)
        *--p = (char)('0' + u % 10);
    *--p = '.';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (ns < 0)
        *--p = '-';
    atr_jw_raw(w, p, (size_t)(end - p));
}

static void put_ms_or_null(struct atr_jw *w, const char *key, bool have, double s)
{
    atr_jw_key(w, key);
    if (have)
        put_ns(w, s, 6);
    else
        atr_jw_null(w);
}

static void put_s(struct atr_jw *w, const char *key, double s)
{
    atr_jw_key(w, key);
    put_ns(w, s, 9);
}

static void put_itls(struct atr_jw *w, const struct atr_llm_record *r)
{
    atr_jw_key(w, "itl_ms");
    atr_jw_array_begin(w);
    for (size_t i = 1; i < r->n_chunks; i++)
        put_ns(w, r->chunk_s[i] - r->chunk_s[i - 1], 6);
    atr_jw_array_end(w);
}

int atr_llm_write_request_line(struct atr_buf *b, const struct atr_llm_record *r)
{
    bool ok = r->success, first = r->success && r->n_chunks > 0;
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_int(&w, "id", (int64_t)r->id);
    if (r->trace_id) {
        atr_jw_kv_str(&w, "trace_id", r->trace_id);
        atr_jw_kv_int(&w, "turn", r->turn);
    }
    if (r->has_replica)
        atr_jw_kv_uint(&w, "replica", r->replica);
    atr_jw_kv_bool(&w, "success", ok);
    atr_jw_kv_str(&w, "error", ok ? NULL : (r->error ? r->error : "unknown"));
    put_s(&w, "scheduled_s", r->scheduled_s);
    put_s(&w, "send_s", r->send_s);
    put_s(&w, "start_s", r->start_s);
    if (r->sent_s > 0)
        put_s(&w, "sent_s", r->sent_s);
    else
        atr_jw_kv_null(&w, "sent_s");
    put_s(&w, "end_s", r->end_s);
    put_ms_or_null(&w, "schedule_lag_ms", true, r->send_s - r->scheduled_s);
    put_ms_or_null(&w, "send_lag_ms", true, atr_llm_sent_s(r) - r->scheduled_s);
    put_ms_or_null(&w, "queue_ms", true, r->start_s - r->send_s);
    put_ms_or_null(&w, "ttft_ms", first, first ? atr_llm_ttft_s(r) : 0);
    put_ms_or_null(&w, "tpot_ms", ok && r->output_tokens > 1, atr_llm_tpot_s(r));
    put_ms_or_null(&w, "e2el_ms", ok, r->end_s - r->start_s);
    put_itls(&w, r);
    atr_jw_kv_int(&w, "prompt_tokens", r->prompt_tokens);
    atr_jw_kv_int(&w, "output_tokens", r->output_tokens);
    atr_jw_kv_int(&w, "cached_tokens", r->cached_tokens);
    if (r->intended_prompt_tokens > 0)
        atr_jw_kv_int(&w, "intended_prompt_tokens", r->intended_prompt_tokens);
    if (!ok && r->error_detail && r->error_detail[0])
        atr_jw_kv_str(&w, "error_detail", r->error_detail);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    return atr_jw_finish(&w);
}
