/* mooncake.c - Mooncake request traces (JSONL): one single-step llm
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

#include "trace/fmt/reqlog.h"
#include "trace/reader.h"
#include "trace/tokens.h"

#define MOONCAKE_BLOCK_SIZE 512

struct mooncake_state {
    struct reqlog_state log;
    bool have_first;
    int64_t first_ts;         /* timestamp of the first request, ms */
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

/* Fills t from one parsed request object. */
static int fill_trace(struct atr_reader *r, void *state, struct atr_trace *t,
                      const struct reqlog_row *row)
{
    struct mooncake_state *st = state;
    const struct atr_json *obj = row->obj;
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
    t->start_ms = ts - st->first_ts;
    t->block_size = MOONCAKE_BLOCK_SIZE;
    struct atr_step *s = reqlog_add_step(t, in_len, out_len);
    return read_hash_ids(r, t, obj, s);
}

static const struct reqlog_format mooncake_log = {
    sizeof(struct mooncake_state), NULL, NULL, 0, "a mooncake request line", fill_trace,
};

static int next(struct atr_reader *r, struct atr_trace *t)
{
    return reqlog_next(r, t, &mooncake_log);
}

/* Mooncake lines are flat objects with exactly these four keys. */
static int sniff(const char *head, size_t len, const char *name)
{
    size_t i;
    if (atr_sniff_first(head, len, &i) != '{')
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

const struct atr_format atr_format_mooncake = {
    "mooncake",
    "Mooncake request trace JSONL (timestamp, input_length, output_length, hash_ids)",
    sniff, next, free,
};
