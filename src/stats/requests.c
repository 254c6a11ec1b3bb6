/* requests.c - --requests-out lines read back into request records (see
 * requests.h); the inverse of atr_llm_write_request_line. */
#include "stats/requests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "util/alloc.h"

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
    return atr_error_at(at->err, at->file, at->line, v ? v->col : 1u, "%s", what);
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
        return bad(at, v, "a request line wants \"%s\", a number", key);
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
    double ttft = 0;
    bool have = false;    /* set by get_num; initialised for gcc -O3's flow analysis */
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
    if (!isfinite(c[0]))
        return bad(at, atr_json_get(o, "ttft_ms"), "\"%s\" past the range of times", "ttft_ms");
    /* Finite sums only: an infinite chunk time would be written back as a
     * NaN gap, which no reader (this one included) takes. */
    for (const struct atr_json *k = itl->u.kids.first; k; k = k->next, n++) {
        if (k->type != ATR_JSON_NUMBER || !isfinite(k->u.num))
            return bad(at, k, "\"%s\" wants numbers", "itl_ms");
        c[n] = c[n - 1] + k->u.num / 1000;
        if (!isfinite(c[n]))
            return bad(at, k, "\"%s\" past the range of times", "itl_ms");
    }
    r->chunk_s = c;
    r->n_chunks = n;
    return 0;
}

/* The members every line has: times, counts, error, session. */
static int get_fields(const struct at *at, const struct atr_json *o, struct atr_llm_record *r,
                      struct atr_arena *keep)
{
    int64_t id = 0;
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
        rc = get_str(at, o, "error", false, keep, &r->error);
    if (rc == 0)
        rc = get_str(at, o, "error_detail", true, keep, &r->error_detail);
    if (rc == 0 && atr_json_get(o, "intended_prompt_tokens"))   /* written when known */
        rc = get_int(at, o, "intended_prompt_tokens", &r->intended_prompt_tokens);
    if (rc == 0)
        rc = get_str(at, o, "trace_id", true, keep, &r->trace_id);
    if (rc == 0 && r->trace_id)
        rc = get_int(at, o, "turn", &r->turn);
    if (rc == 0 && (r->has_replica = atr_json_get(o, "replica") != NULL)) {
        int64_t k = 0;
        rc = get_int(at, o, "replica", &k);
        if (rc == 0 && (k < 0 || k > UINT32_MAX))
            rc = bad(at, atr_json_get(o, "replica"), "a request line wants \"%s\" >= 0", "replica");
        r->replica = (uint32_t)k;
    }
    r->id = (uint64_t)id;
    return rc;
}

bool atr_llm_request_is_tool(const struct atr_json *o)
{
    const struct atr_json *k = atr_json_get(o, "kind");
    return k && k->type == ATR_JSON_STRING && strcmp(k->u.str.s, "tool") == 0;
}

int atr_llm_request_parse(struct atr_llm_record *r, const char *text, size_t len,
                          struct atr_arena *keep, struct atr_arena *scratch,
                          const char *file, unsigned long lineno, struct atr_error *err)
{
    const struct at at = { file, lineno, err };
    struct atr_json *o;
    struct atr_json_err je;
    atr_arena_clear(scratch);
    if (atr_json_parse(scratch, text, len, NULL, &o, &je) < 0)
        return atr_error_at(err, file, lineno, je.col, "%s", je.msg);
    if (o->type != ATR_JSON_OBJECT)
        return bad(&at, o, "a request line is a JSON object%s", "");
    if (atr_llm_request_is_tool(o))
        return 1;
    const struct atr_json *ok = atr_json_get(o, "success");
    if (!ok || (ok->type != ATR_JSON_TRUE && ok->type != ATR_JSON_FALSE))
        return bad(&at, ok, "a request line wants \"%s\", true or false", "success");
    memset(r, 0, sizeof *r);
    r->success = ok->type == ATR_JSON_TRUE;
    if (get_fields(&at, o, r, keep) < 0 || get_chunks(&at, o, r, keep) < 0)
        return -1;
    if (!r->success && !r->error)
        r->error = "unknown";
    return 0;
}

/* Room for one more record at rs->recs[rs->n]. */
static struct atr_llm_record *next_slot(struct atr_llm_requests *rs)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 1024;
        rs->recs = xreallocarray(rs->recs, rs->cap, sizeof *rs->recs);
    }
    return &rs->recs[rs->n];
}

int atr_llm_requests_read(struct atr_llm_requests *rs, struct atr_input *in,
                          struct atr_error *err)
{
    const char *line;
    size_t len;
    int rc;
    while ((rc = atr_input_getline(in, &line, &len, ATR_LLM_REQUEST_MAX_LINE, err)) > 0) {
        if (len == 0)
            continue;
        int got = atr_llm_request_parse(next_slot(rs), line, len, &rs->keep, &rs->line,
                                        atr_input_name(in), atr_input_lineno(in), err);
        if (got < 0)
            return -1;
        rs->n += got == 0;
    }
    return rc < 0 ? -1 : 0;
}

int atr_llm_requests_read_path(struct atr_llm_requests *rs, const char *path,
                               struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    int rc = atr_llm_requests_read(rs, in, err);
    atr_input_close(in);
    return rc;
}

void atr_llm_requests_release(struct atr_llm_requests *rs)
{
    free(rs->recs);
    atr_arena_release(&rs->keep);
    atr_arena_release(&rs->line);
    *rs = (struct atr_llm_requests)ATR_LLM_REQUESTS_INIT;
}
