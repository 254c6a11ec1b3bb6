/* fuzz-sse.c - libFuzzer target for the SSE parser and the OpenAI payload
 * reader. The first byte picks the line limit, the second seeds how the
 * rest is sliced; fed whole or in slices, the stream must give the same
 * events and the same result, buffers must stay within the limit, and
 * every event's payload must read without crashing and consistently, and
 * the in-place scanner, where it answers, must answer as the tree does,
 * and the memo of shapes (kept across inputs) as atr_sse_payload_parse
 * does (the file includes sse.c to reach both). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/sse.c"

static struct atr_arena arena = ATR_ARENA_INIT;
static struct atr_sse_memo memo;
static int memo_ready;

static void must(int ok)
{
    if (!ok)
        abort();
}

struct sink {
    struct atr_buf out;
    size_t max_line;
};

/* The scanner answers only what the tree would, and the same. */
static void check_scan(const char *data, size_t len)
{
    struct atr_sse_payload a, b;
    payload_init(&a);
    payload_init(&b);
    if (payload_scan(data, len, &a, NULL) != SCAN_OK)
        return;
    must(payload_tree(&arena, data, len, &b) == 0);
    atr_arena_clear(&arena);
    must(a.chunk == b.chunk && a.usage == b.usage && a.error == b.error);
    must(a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
         a.cached_tokens == b.cached_tokens);
}

/* The memo answers as atr_sse_payload_parse did (pl, rc). */
static void check_memo(const char *data, size_t len, const struct atr_sse_payload *pl, int rc)
{
    if (!memo_ready) {
        atr_sse_memo_init(&memo);
        memo_ready = 1;
    }
    struct atr_sse_payload m;
    must(atr_sse_payload_parse_memo(&memo, &arena, data, len, &m) == rc);
    atr_arena_clear(&arena);
    must(m.done == pl->done && m.chunk == pl->chunk && m.usage == pl->usage &&
         m.error == pl->error && m.prompt_tokens == pl->prompt_tokens &&
         m.completion_tokens == pl->completion_tokens && m.cached_tokens == pl->cached_tokens &&
         strcmp(m.detail, pl->detail) == 0);
}

static void check_payload(const char *data, size_t len)
{
    check_scan(data, len);
    struct atr_sse_payload pl;
    int rc = atr_sse_payload_parse(&arena, data, len, &pl);
    atr_arena_clear(&arena);
    check_memo(data, len, &pl, rc);
    must(memchr(pl.detail, '\0', sizeof pl.detail) != NULL);
    if (rc < 0) {
        must(pl.detail[0] != '\0');
        return;
    }
    must(rc == 0);
    if (pl.done)
        must(!pl.chunk && !pl.usage && !pl.error);
    if (pl.usage)
        must(pl.completion_tokens >= 0);
    must(pl.prompt_tokens >= -1 && pl.cached_tokens >= -1);
}

static int on_event(void *ctx, const char *data, size_t len)
{
    struct sink *s = ctx;
    must(len <= s->max_line && data[len] == '\0');
    atr_buf_put_u64(&s->out, len);
    atr_buf_putc(&s->out, ':');
    atr_buf_append(&s->out, data, len);
    return 0;
}

/* Parses data[0..n) in slices drawn from seed (0: whole). */
static int parse(const uint8_t *data, size_t n, size_t max_line, unsigned seed, struct sink *s)
{
    struct atr_sse p;
    atr_sse_init(&p, max_line);
    s->max_line = p.max_line;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t step = n - i;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            size_t want = 1 + (seed >> 16) % 64;
            step = want < step ? want : step;
        }
        rc = atr_sse_feed(&p, (const char *)data + i, step, on_event, s);
        must(p.line.len <= p.max_line && p.data.len <= p.max_line);
        i += step;
    }
    if (rc == 0)
        rc = atr_sse_finish(&p, on_event, s);
    must(rc == 0 || rc == ATR_SSE_ERR_LINE || rc == ATR_SSE_ERR_SIZE);
    atr_sse_release(&p);
    return rc;
}

static size_t walk_events(const struct atr_buf *b)
{
    size_t count = 0;
    if (!b->data)
        return 0;
    const char *p = b->data, *end = b->data + b->len;
    while (p < end) {
        char *colon;
        size_t len = strtoull(p, &colon, 10);
        check_payload(colon + 1, len);
        p = colon + 1 + len;
        count++;
    }
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max_line = data[0] < 128 ? 0 : (size_t)(data[0] - 127) * 4;
    unsigned seed = data[1] | 1u;
    data += 2;
    size -= 2;
    check_scan((const char *)data, size);
    struct sink whole = {ATR_BUF_INIT, 0}, sliced = {ATR_BUF_INIT, 0};
    int rc1 = parse(data, size, max_line, 0, &whole);
    int rc2 = parse(data, size, max_line, seed, &sliced);
    must(rc1 == rc2);
    must(whole.out.len == sliced.out.len &&
         (whole.out.len == 0 || memcmp(whole.out.data, sliced.out.data, whole.out.len) == 0));
    walk_events(&whole.out);
    atr_buf_release(&whole.out);
    atr_buf_release(&sliced.out);
    return 0;
}
