/* llm-merge.c - the request lines of a run's shards summarized as one run
 * (see llm-merge.h). */
#include "cli/llm-merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "json/json.h"
#include "stats/result.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/input.h"
#include "util/output.h"

enum { MAX_LINE = 1 << 28 };           /* an answer of ~20M tokens' gaps */

struct merged {
    struct atr_llm_record *recs;
    size_t n, cap;
    struct atr_arena keep;             /* chunk arrays and strings of the records */
    struct atr_arena line;             /* one parsed line, cleared per line */
};

/* Where a line went wrong: "FILE:LINE:COL: msg". */
struct at {
    const char *file;
    unsigned long line;
    struct atr_error *err;
};

static int bad(const struct at *at, const struct atr_json *v, const char *fmt, const char *key)
{
    char what[160];
    snprintf(what, sizeof what, fmt, key);
    return atr_error_set(at->err, "%s:%lu:%u: %s", at->file, at->line, v ? v->col : 1u, what);
}

/* A number member (null allowed when *have is given: *have says which). */
static int get_num(const struct at *at, const struct atr_json *o, const char *key, double *out,
                   bool *have)
{
    const struct atr_json *v = atr_json_get(o, key);
    if (have && (!v || v->type == ATR_JSON_NULL)) {
        *have = false;
        return 0;
    }
    if (!v || v->type != ATR_JSON_NUMBER || !isfinite(v->u.num))
        return bad(at, v ? v : NULL, "a request line wants \"%s\", a number", key);
    if (have)
        *have = true;
    *out = v->u.num;
    return 0;
}

static int get_int(const struct at *at, const struct atr_json *o, const char *key, int64_t *out)
{
    const struct atr_json *v = atr_json_get(o, key);
    if (!v || v->type != ATR_JSON_NUMBER || !v->is_int)
        return bad(at, v, "a request line wants \"%s\", an integer", key);
    *out = v->i;
    return 0;
}

/* A string member or null (NULL); absent is NULL too when optional. */
static int get_str(const struct at *at, const struct atr_json *o, const char *key,
                   bool optional, struct atr_arena *a, const char **out)
{
    const struct atr_json *v = atr_json_get(o, key);
    *out = NULL;
    if ((!v && optional) || (v && v->type == ATR_JSON_NULL))
        return 0;
    if (!v || v->type != ATR_JSON_STRING)
        return bad(at, v, "a request line wants \"%s\", a string or null", key);
    *out = atr_arena_strndup(a, v->u.str.s, v->u.str.len);
    return 0;
}

/* The chunk times back from ttft_ms and itl_ms: the first chunk at start_s
 * + TTFT, each next one an ITL later. A success without ttft_ms had none. */
static int get_chunks(const struct at *at, const struct atr_json *o, struct atr_llm_record *r,
                      struct atr_arena *a)
{
    double ttft;
    bool have;
    const struct atr_json *itl = atr_json_get(o, "itl_ms");
    if (get_num(at, o, "ttft_ms", &ttft, &have) < 0)
        return -1;
    if (!itl || itl->type != ATR_JSON_ARRAY)
        return bad(at, itl, "a request line wants \"%s\", an array of numbers", "itl_ms");
    if (!r->success || !have)
        return 0;
    double *c = atr_arena_calloc(a, itl->u.kids.count + 1, sizeof *c);
    size_t n = 0;
    c[n++] = r->start_s + ttft / 1000;
    for (const struct atr_json *k = itl->u.kids.first; k; k = k->next, n++) {
        if (k->type != ATR_JSON_NUMBER)
            return bad(at, k, "\"%s\" wants numbers", "itl_ms");
        c[n] = c[n - 1] + k->u.num / 1000;
    }
    r->chunk_s = c;
    r->n_chunks = n;
    return 0;
}

/* One request line into r (strings and chunks in m->keep). */
static int parse_line(struct merged *m, const struct at *at, const char *text, size_t len,
                      struct atr_llm_record *r)
{
    struct atr_json *o;
    struct atr_json_err je;
    atr_arena_clear(&m->line);
    if (atr_json_parse(&m->line, text, len, NULL, &o, &je) < 0)
        return atr_error_set(at->err, "%s:%lu:%u: %s", at->file, at->line, je.col, je.msg);
    if (o->type != ATR_JSON_OBJECT)
        return bad(at, o, "a request line is a JSON object%s", "");
    const struct atr_json *ok = atr_json_get(o, "success");
    if (!ok || (ok->type != ATR_JSON_TRUE && ok->type != ATR_JSON_FALSE))
        return bad(at, ok, "a request line wants \"%s\", true or false", "success");
    memset(r, 0, sizeof *r);
    r->success = ok->type == ATR_JSON_TRUE;
    int64_t id;
    bool sent;
    const struct { const char *key; double *to; bool *have; } nums[] = {
        {"scheduled_s", &r->scheduled_s, NULL}, {"send_s", &r->send_s, NULL},
        {"start_s", &r->start_s, NULL}, {"sent_s", &r->sent_s, &sent},
        {"end_s", &r->end_s, NULL},
    };
    const struct { const char *key; int64_t *to; } ints[] = {
        {"id", &id}, {"prompt_tokens", &r->prompt_tokens},
        {"output_tokens", &r->output_tokens}, {"cached_tokens", &r->cached_tokens},
    };
    int rc = 0;      /* the first problem of the line is the one named */
    for (size_t i = 0; rc == 0 && i < sizeof nums / sizeof nums[0]; i++)
        rc = get_num(at, o, nums[i].key, nums[i].to, nums[i].have);
    for (size_t i = 0; rc == 0 && i < sizeof ints / sizeof ints[0]; i++)
        rc = get_int(at, o, ints[i].key, ints[i].to);
    if (rc == 0)
        rc = get_str(at, o, "error", false, &m->keep, &r->error);
    if (rc == 0)
        rc = get_str(at, o, "trace_id", true, &m->keep, &r->trace_id);
    if (rc == 0 && r->trace_id)
        rc = get_int(at, o, "turn", &r->turn);
    if (rc == 0)
        rc = get_chunks(at, o, r, &m->keep);
    if (rc < 0)
        return -1;
    r->id = (uint64_t)id;
    if (!r->success && !r->error)
        r->error = "unknown";
    return 0;
}

static int read_file(struct merged *m, const char *path, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    const char *line;
    size_t len;
    int rc;
    while ((rc = atr_input_getline(in, &line, &len, MAX_LINE, err)) > 0) {
        if (len == 0)
            continue;
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 1024;
            m->recs = xreallocarray(m->recs, m->cap, sizeof *m->recs);
        }
        struct at at = { atr_input_name(in), atr_input_lineno(in), err };
        if ((rc = parse_line(m, &at, line, len, &m->recs[m->n])) < 0)
            break;
        m->n++;
    }
    atr_input_close(in);
    return rc < 0 ? -1 : 0;
}

/* The summary of all records, printed and written (each file all or none). */
static int report(const struct llm_merge *mo, const struct merged *m, struct atr_error *err)
{
    const struct llm_report_opts *o = mo->report;
    char date[32];
    llm_report_date(date);
    struct atr_llm_bench_config bc = {
        .date = date, .backend = "openai", .model_id = mo->model ? mo->model : "merged",
        .num_prompts = (int64_t)m->n, .request_rate = mo->request_rate,
        .burstiness = mo->burstiness, .max_concurrency = mo->max_concurrency,
        .slo_ttft_ms = o->slo_ttft_ms, .slo_tpot_ms = o->slo_tpot_ms,
        .slo_e2el_ms = o->slo_e2el_ms, .n_percentiles = o->n_percentiles,
    };
    memcpy(bc.percentiles, o->percentiles, sizeof bc.percentiles);
    struct atr_llm_summary sum;
    if (atr_llm_summarize(m->recs, m->n, &bc, &sum, err) < 0)
        return -1;
    struct atr_output *files[2] = { NULL, NULL };
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (o->save_result && !(files[0] = atr_output_open(o->save_result, err)))
        rc = -1;
    if (rc == 0 && files[0]) {
        atr_llm_write_result_json(&b, &sum, &bc);
        atr_buf_putc(&b, '\n');
        rc = atr_output_write(files[0], b.data, b.len, err);
    }
    if (rc == 0 && o->requests_out && !(files[1] = atr_output_open(o->requests_out, err)))
        rc = -1;
    for (size_t i = 0; rc == 0 && files[1] && i < m->n; i++) {
        atr_buf_clear(&b);
        atr_llm_write_request_line(&b, &m->recs[i]);
        rc = atr_output_write(files[1], b.data, b.len, err);
    }
    if (rc == 0)
        rc = atr_output_commit_all(files, 2, err);
    else
        for (size_t i = 0; i < 2; i++)
            atr_output_abort(files[i]);
    if (rc == 0 && !o->quiet) {
        atr_buf_clear(&b);
        atr_llm_write_block(&b, &sum, &bc);
        fputs(b.data ? b.data : "", stdout);
    }
    atr_buf_release(&b);
    atr_llm_summary_release(&sum);
    return rc;
}

int llm_merge(const struct llm_merge *mo, char *const *paths, size_t n)
{
    struct merged m = {0};
    struct atr_error err;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = read_file(&m, paths[i], &err);
    if (rc == 0 && m.n == 0)
        rc = atr_error_set(&err, "no request lines in the files given");
    if (rc == 0)
        rc = report(mo, &m, &err);
    free(m.recs);
    atr_arena_release(&m.keep);
    atr_arena_release(&m.line);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}
