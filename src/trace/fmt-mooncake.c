/* fmt-mooncake.c - Mooncake request traces (JSONL): one single-step llm
 * trace per request line.
 *
 * Each line is {"timestamp": ms, "input_length": N, "output_length": N,
 * "hash_ids": [...]}. The hash ids are Mooncake's remapped 512-token prefix
 * blocks; they cannot be rehashed at another block size (no text is
 * published), so they are kept as they are and the trace says
 * block_size = 512 whatever --block-size asks for. Whether
 * len(hash_ids) == ceil(input_length / 512) is left to `atr validate`: a
 * reader converts what the file says. start_ms is the arrival relative to
 * the file's first request. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace/csv.h"
#include "trace/reader.h"
#include "trace/tokens.h"

#define MOONCAKE_BLOCK_SIZE 512

struct mooncake_state {
    bool have_first;
    int64_t first_ts;         /* timestamp of the first request, ms */
    char base[128];           /* file base name, for trace ids */
};

/* A required non-negative integer member. */
static int req_count(struct atr_reader *r, const struct atr_json *obj, const char *key,
                     int64_t *out)
{
    struct atr_json *v;
    if (atr_reader_req(r, obj, key, ATR_JSON_NUMBER, &v) < 0)
        return -1;
    if (!v->is_int || v->i < 0)
        return atr_reader_fail_at(r, v, "expected \"%s\" to be a non-negative integer", key);
    *out = v->i;
    return 0;
}

/* The arrival time in ms: integers as they are, fractions rounded. */
static int req_timestamp(struct atr_reader *r, const struct atr_json *obj, int64_t *out)
{
    struct atr_json *v;
    if (atr_reader_req(r, obj, "timestamp", ATR_JSON_NUMBER, &v) < 0)
        return -1;
    if (v->is_int && v->i >= 0) {
        *out = v->i;
        return 0;
    }
    if (v->is_int || !(v->u.num >= 0 && v->u.num < 9.0e15))
        return atr_reader_fail_at(r, v, "expected \"timestamp\" to be a non-negative number of ms");
    *out = llround(v->u.num);
    return 0;
}

/* Copies the optional "hash_ids" array into the step. */
static int read_hash_ids(struct atr_reader *r, struct atr_trace *t, const struct atr_json *obj,
                         struct atr_step *s)
{
    struct atr_json *arr = atr_json_get(obj, "hash_ids");
    if (!arr || arr->type == ATR_JSON_NULL)
        return 0;
    if (arr->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, arr, "expected \"hash_ids\" to be an array, got %s",
                                  atr_json_type_name(arr->type));
    s->hash_ids = atr_arena_calloc(&t->arena, arr->u.kids.count ? arr->u.kids.count : 1,
                                   sizeof *s->hash_ids);
    uint32_t n = 0;
    for (struct atr_json *e = arr->u.kids.first; e; e = e->next) {
        if (!atr_json_is(e, ATR_JSON_NUMBER) || !e->is_int || e->i < 0 ||
            (uint64_t)e->i > ATR_HASH_ID_MASK)
            return atr_reader_fail_at(r, e, "expected a hash id (integer 0..2^53-1)");
        s->hash_ids[n++] = (uint64_t)e->i;
    }
    s->n_hash_ids = n;
    return 0;
}

/* Fills t from one parsed request object found at line `line`. */
static int fill_trace(struct atr_reader *r, struct mooncake_state *st, struct atr_trace *t,
                      const struct atr_json *obj, unsigned long line)
{
    int64_t ts = 0, in_len = 0, out_len = 0;
    if (obj->type != ATR_JSON_OBJECT)
        return atr_reader_fail_at(r, obj, "expected a request object, got %s",
                                  atr_json_type_name(obj->type));
    if (req_timestamp(r, obj, &ts) < 0 || req_count(r, obj, "input_length", &in_len) < 0 ||
        req_count(r, obj, "output_length", &out_len) < 0)
        return -1;
    if (!st->have_first) {
        st->have_first = true;
        st->first_ts = ts;
    }
    if (ts < st->first_ts)
        return atr_reader_fail_at(r, atr_json_get(obj, "timestamp"),
                                  "expected \"timestamp\" not before the first request's (%lld)",
                                  (long long)st->first_ts);
    t->trace_id = atr_arena_printf(&t->arena, "mooncake/%s/%lu", st->base, line);
    t->source = "mooncake";
    t->start_ms = ts - st->first_ts;
    t->block_size = MOONCAKE_BLOCK_SIZE;
    struct atr_step *s = reqlog_add_step(t, in_len, out_len);
    return read_hash_ids(r, t, obj, s);
}

/* Whether a line holds only blanks (skipped, as in most JSONL readers). */
static struct mooncake_state *state_of(struct atr_reader *r)
{
    if (!r->state) {
        struct mooncake_state *st = calloc(1, sizeof *st);
        if (!st)
            abort();   /* as the arena does: no recovery from OOM */
        reqlog_basename(atr_input_name(r->in), st->base, sizeof st->base);
        r->state = st;
    }
    return r->state;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    struct mooncake_state *st = state_of(r);
    struct atr_json *obj;
    int rc = atr_reader_json_line(r, &r->scratch, &obj);
    if (rc == 0 && r->ntraces == 0)
        return atr_reader_fail(r, 1, 1, "expected a mooncake request line, got empty input");
    if (rc <= 0)
        return rc;
    return fill_trace(r, st, t, obj, r->base_line) < 0 ? -1 : 1;
}

/* Mooncake lines are flat objects with exactly these four keys. */
static int sniff(const char *head, size_t len, const char *name)
{
    size_t i = 0;
    while (i < len && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
        i++;
    if (i == len || head[i] != '{')
        return 0;
    const char *nl = memchr(head + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - head) - i : len - i;
    const char *first = head + i;
    bool in = memmem(first, n, "\"input_length\"", 14) != NULL;
    bool out = memmem(first, n, "\"output_length\"", 15) != NULL;
    bool ts = memmem(first, n, "\"timestamp\"", 11) != NULL;
    bool ids = memmem(first, n, "\"hash_ids\"", 10) != NULL;
    if (in && out && ts)
        return ids ? 95 : 70;
    return 0;
}

static void free_state(void *state)
{
    free(state);
}

const struct atr_format atr_format_mooncake = {
    "mooncake",
    "Mooncake request trace JSONL (timestamp, input_length, output_length, hash_ids)",
    sniff, next, free_state,
};
