/* test-llm-sse.c - the SSE parser on streams split at every byte position,
 * CRLF and CR line ends, comments, multi-line data, size limits, garbage;
 * and the reading of OpenAI stream payloads (chunks, usage, [DONE],
 * errors, wrong shapes), read in place and as a tree with the same answers;
 * and the memo of payload shapes answering as the readers do, on streams
 * recorded from llama-server and atr sim serve and on mutations of them.
 * The file includes sse.c to reach both payload readers. */
/* First: cmocka.h defines a macro fail(), sse.c a function. */
#include "llm/sse.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Events joined as "<data>|" so a test compares one string. */
struct sink {
    struct atr_buf out;
    int n;
    int stop_at;          /* return 7 from this event on (1-based); 0 = never */
};

static int collect(void *ctx, const char *data, size_t len)
{
    struct sink *s = ctx;
    assert_int_equal(data[len], '\0');
    atr_buf_append(&s->out, data, len);
    atr_buf_putc(&s->out, '|');
    s->n++;
    return s->stop_at && s->n >= s->stop_at ? 7 : 0;
}

/* Feeds text whole, then finishes; returns the joined events (static). */
static int run(const char *text, size_t max_line, struct sink *s)
{
    struct atr_sse p;
    atr_sse_init(&p, max_line);
    int rc = atr_sse_feed(&p, text, strlen(text), collect, s);
    if (rc == 0)
        rc = atr_sse_finish(&p, collect, s);
    atr_sse_release(&p);
    return rc;
}

static void expect_events(const char *text, const char *want)
{
    struct sink s = {ATR_BUF_INIT, 0, 0};
    assert_int_equal(run(text, 0, &s), 0);
    assert_string_equal(s.out.data ? s.out.data : "", want);
    atr_buf_release(&s.out);
}

static void test_basic(void **state)
{
    expect_events("data: a\n\ndata: b\n\n", "a|b|");
    expect_events("data:x\n\n", "x|");              /* no space after the colon */
    expect_events("data:  x\n\n", " x|");           /* only one space is removed */
    expect_events("data\n\n", "|");                 /* field without colon: empty data */
    expect_events("\n\n\n", "");                    /* blank lines alone dispatch nothing */
    expect_events("", "");
}

static void test_line_ends(void **state)
{
    expect_events("data: a\r\n\r\ndata: b\r\n\r\n", "a|b|");
    expect_events("data: a\r\rdata: b\r\r", "a|b|");
    expect_events("data: a\r\n\ndata: b\n\r\n", "a|b|");
}

static void test_comments_and_fields(void **state)
{
    expect_events(": ping\n\n", "");
    expect_events(":\n: keep-alive\ndata: x\n\n", "x|");
    expect_events("event: message\nid: 7\nretry: 100\ndata: y\n\n", "y|");
    expect_events("\xEF\xBB\xBF" "data: bom\n\n", "bom|");
}

static void test_multiline(void **state)
{
    expect_events("data: a\ndata: b\ndata: c\n\n", "a\nb\nc|");
    expect_events("data: a\ndata:\ndata: c\n\n", "a\n\nc|");
    expect_events("data: a\n: comment inside\ndata: b\n\n", "a\nb|");
}

static void test_finish(void **state)
{
    /* A last event without its blank line, or without any newline. */
    expect_events("data: x\n", "x|");
    expect_events("data: [DONE]", "[DONE]|");
    expect_events("data: a\n\ndata: b", "a|b|");
}

static const char *const split_stream =
    "\xEF\xBB\xBF: hello\r\n"
    "data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n"
    "event: x\rdata: one\rdata: two\r\r"
    "data: three\n\n"
    ":ping\n\n"
    "data:\n"
    "data: four\r\n"
    "\n"
    "data: [DONE]\n\n";
static const char *const split_want =
    "{\"choices\":[{\"text\":\"a\"}]}|one\ntwo|three|\nfour|[DONE]|";

/* Every split into two feeds, and byte by byte, gives the same events. */
static void test_split_everywhere(void **state)
{
    size_t n = strlen(split_stream);
    for (size_t cut = 0; cut <= n; cut++) {
        struct atr_sse p;
        struct sink s = {ATR_BUF_INIT, 0, 0};
        atr_sse_init(&p, 0);
        assert_int_equal(atr_sse_feed(&p, split_stream, cut, collect, &s), 0);
        assert_int_equal(atr_sse_feed(&p, split_stream + cut, n - cut, collect, &s), 0);
        assert_int_equal(atr_sse_finish(&p, collect, &s), 0);
        assert_string_equal(s.out.data, split_want);
        atr_sse_release(&p);
        atr_buf_release(&s.out);
    }
    struct atr_sse p;
    struct sink s = {ATR_BUF_INIT, 0, 0};
    atr_sse_init(&p, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(atr_sse_feed(&p, split_stream + i, 1, collect, &s), 0);
    assert_int_equal(atr_sse_finish(&p, collect, &s), 0);
    assert_string_equal(s.out.data, split_want);
    /* Reset forgets a partial event and the sticky state. */
    assert_int_equal(atr_sse_feed(&p, "data: partial", 13, collect, &s), 0);
    atr_sse_reset(&p);
    atr_buf_clear(&s.out);
    assert_int_equal(atr_sse_feed(&p, "data: z\n\n", 9, collect, &s), 0);
    assert_string_equal(s.out.data, "z|");
    atr_sse_release(&p);
    atr_buf_release(&s.out);
}

static void test_oversized(void **state)
{
    struct sink s = {ATR_BUF_INIT, 0, 0};
    assert_int_equal(run("data: 0123456789abcdef\n\n", 16, &s), ATR_SSE_ERR_SIZE);
    assert_int_equal(run("data: 0123456789\n\n", 16, &s), 0);  /* exactly 16 */
    /* Several lines, each within the limit, whose data is not. */
    assert_int_equal(run("data: 0123456\ndata: 0123456\ndata: 0\n\n", 16, &s),
                     ATR_SSE_ERR_SIZE);
    /* A line split over many feeds, and a never-ending comment. */
    struct atr_sse p;
    atr_sse_init(&p, 64);
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++)
        rc = atr_sse_feed(&p, ": xxxxxxxx", 10, collect, &s);
    assert_int_equal(rc, ATR_SSE_ERR_SIZE);
    /* Sticky: later feeds keep failing. */
    assert_int_equal(atr_sse_feed(&p, "\n\ndata: y\n\n", 11, collect, &s), ATR_SSE_ERR_SIZE);
    assert_int_equal(atr_sse_finish(&p, collect, &s), ATR_SSE_ERR_SIZE);
    assert_true(p.line.cap <= 256);
    atr_sse_release(&p);
    atr_buf_release(&s.out);
}

static void test_garbage(void **state)
{
    struct sink s = {ATR_BUF_INIT, 0, 0};
    assert_int_equal(run("hello\n\n", 0, &s), ATR_SSE_ERR_LINE);
    assert_int_equal(run("{\"choices\":[]}\n\n", 0, &s), ATR_SSE_ERR_LINE);
    assert_int_equal(run("Data: x\n\n", 0, &s), ATR_SSE_ERR_LINE);
    assert_int_equal(run(" data: x\n\n", 0, &s), ATR_SSE_ERR_LINE);
    assert_int_equal(run("data: ok\n\nnonsense", 0, &s), ATR_SSE_ERR_LINE);
    assert_int_equal(s.n, 1);  /* the event before the garbage was delivered */
    atr_buf_release(&s.out);
}

static void test_callback_stops(void **state)
{
    struct sink s = {ATR_BUF_INIT, 0, 2};
    assert_int_equal(run("data: 1\n\ndata: 2\n\ndata: 3\n\n", 0, &s), 7);
    assert_int_equal(s.n, 2);
    atr_buf_release(&s.out);
}

/* ---- payloads ---- */

static struct atr_arena arena = ATR_ARENA_INIT;

static int parse(const char *text, struct atr_sse_payload *pl)
{
    int rc = atr_sse_payload_parse(&arena, text, strlen(text), pl);
    atr_arena_clear(&arena);
    return rc;
}

static void test_payload_chunks(void **state)
{
    struct atr_sse_payload pl;
    assert_int_equal(parse("{\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"hi\"}]}", &pl), 0);
    assert_true(pl.chunk);
    assert_false(pl.usage || pl.done || pl.error);
    assert_int_equal(pl.completion_tokens, -1);
    /* vLLM counts a chunk with choices even when its text is empty. */
    assert_int_equal(parse("{\"choices\":[{\"text\":\"\"}]}", &pl), 0);
    assert_true(pl.chunk);
    assert_int_equal(parse("{\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}", &pl), 0);
    assert_true(pl.chunk);
    assert_int_equal(parse("{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}", &pl), 0);
    assert_true(pl.chunk);
    assert_int_equal(parse("{\"choices\":[]}", &pl), 0);
    assert_false(pl.chunk);
    assert_int_equal(parse("{\"choices\":null,\"usage\":null}", &pl), 0);
    assert_false(pl.chunk || pl.usage);
    assert_int_equal(parse(" [DONE] \r", &pl), 0);
    assert_true(pl.done);
    assert_false(pl.chunk);
}

static void test_payload_usage(void **state)
{
    struct atr_sse_payload pl;
    assert_int_equal(parse("{\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
                           "\"completion_tokens\":7,\"total_tokens\":19,"
                           "\"prompt_tokens_details\":{\"cached_tokens\":8}}}", &pl), 0);
    assert_true(pl.usage);
    assert_false(pl.chunk);
    assert_int_equal(pl.prompt_tokens, 12);
    assert_int_equal(pl.completion_tokens, 7);
    assert_int_equal(pl.cached_tokens, 8);
    /* Usage together with the last choice, no details. */
    assert_int_equal(parse("{\"choices\":[{\"text\":\"z\",\"finish_reason\":\"length\"}],"
                           "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,"
                           "\"prompt_tokens_details\":null}}", &pl), 0);
    assert_true(pl.usage && pl.chunk);
    assert_int_equal(pl.cached_tokens, -1);
    /* A non-streaming body: message content and usage. */
    assert_int_equal(parse("{\"object\":\"chat.completion\",\"choices\":[{\"message\":"
                           "{\"role\":\"assistant\",\"content\":\"hello\"}}],"
                           "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}", &pl), 0);
    assert_true(pl.usage && pl.chunk);
    assert_int_equal(pl.completion_tokens, 2);
    /* Without completion_tokens a usage object says nothing useful. */
    assert_int_equal(parse("{\"usage\":{\"prompt_tokens\":5}}", &pl), 0);
    assert_false(pl.usage);
}

static void test_payload_errors(void **state)
{
    struct atr_sse_payload pl;
    assert_int_equal(parse("{\"error\":{\"message\":\"boom\",\"code\":500}}", &pl), 0);
    assert_true(pl.error);
    assert_string_equal(pl.detail, "boom");
    assert_int_equal(parse("{\"error\":\"plain\"}", &pl), 0);
    assert_true(pl.error);
    assert_string_equal(pl.detail, "plain");
    assert_int_equal(parse("{\"error\":42}", &pl), 0);
    assert_true(pl.error);
    assert_int_equal(parse("{\"error\":null,\"choices\":[{}]}", &pl), 0);
    assert_false(pl.error);

    static const char *const bad[] = {
        "", "{", "[1,2]", "\"str\"", "[DONE", "{\"choices\":{}}", "{\"choices\":[1]}",
        "{\"usage\":[]}", "{\"usage\":{\"completion_tokens\":\"7\"}}",
        "{\"usage\":{\"completion_tokens\":-1}}", "{\"usage\":{\"completion_tokens\":1.5}}",
        "{\"usage\":{\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":true}}}",
        "{\"a\":1} x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i], &pl), -1);
        assert_true(pl.detail[0] != '\0');
    }
}

/* Both payload readers on the same text: the scanner answers only what
 * the tree would, and answers it the same. Returns whether it answered. */
static bool scanned_as_tree(const char *text)
{
    struct atr_sse_payload a, b;
    payload_init(&a);
    payload_init(&b);
    if (payload_scan(text, strlen(text), &a, NULL) != SCAN_OK)
        return false;
    assert_int_equal(payload_tree(&arena, text, strlen(text), &b), 0);
    atr_arena_clear(&arena);
    assert_true(a.chunk == b.chunk && a.usage == b.usage && a.error == b.error);
    assert_true(a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
                a.cached_tokens == b.cached_tokens);
    return true;
}

static void test_payload_scan(void **state)
{
    /* What vLLM and atr sim serve stream: read in place. */
    static const char *const fast[] = {
        "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1795881713,"
        "\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" the\",\"logprobs\":null,"
        "\"finish_reason\":null,\"stop_reason\":null}]}",
        "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":11,"
        "\"completion_tokens\":8,\"prompt_tokens_details\":{\"cached_tokens\":0}}}",
        "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"a\\n\\\"b\\\"\"}}],"
        "\"usage\":null,\"error\":null}",
        "{\"choices\":[{\"x\":[1,-2.5e+3,0.1,true,false,null,{},[]]}],\"usage\":"
        "{\"completion_tokens\":0,\"prompt_tokens_details\":[1]}}",
        "{\"choices\":null}", "{}", " { \"choices\" : [ ] } ",
    };
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
        assert_true(scanned_as_tree(fast[i]));
    /* The tree's: errors, escapes it would decode, non-ASCII, error
     * objects, repeated counts, deep nesting, anything malformed. */
    static const char *const tree[] = {
        "{\"choices\":[{\"text\":\"\\u00e9\"}]}", "{\"choices\":[{\"text\":\"\xc3\xa9\"}]}",
        "{\"error\":{\"message\":\"x\"}}", "{\"usage\":{\"completion_tokens\":1,"
        "\"completion_tokens\":2}}", "{\"usage\":{\"completion_tokens\":-0}}",
        "{\"usage\":{\"completion_tokens\":1e2}}", "{\"choices\":[1]}", "{\"choices\":{}}",
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":1,}", "{\"a\" 1}",
        "{\"a\":\"\t\"}", "{\"a\":1} x", "[1]", "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", "{\"usage\":{\"completion_tokens\":1234567890123456789}}",
    };
    for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++)
        assert_false(scanned_as_tree(tree[i]));
}

/* ---- the memo of shapes ---- */

/* Payloads of one recorded stream, each NUL-terminated, in an atr_buf. */
struct payloads {
    struct atr_buf all;
    size_t at[64], len[64];
    size_t n;
};

static int keep_payload(void *ctx, const char *data, size_t len)
{
    struct payloads *ps = ctx;
    assert_true(ps->n < 64);
    ps->at[ps->n] = ps->all.len;
    ps->len[ps->n++] = len;
    atr_buf_append(&ps->all, data, len);
    atr_buf_putc(&ps->all, '\0');
    return 0;
}

static void load_stream(const char *name, struct payloads *ps)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sse/%s", ATR_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char text[16384];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    memset(ps, 0, sizeof *ps);
    struct atr_sse p;
    atr_sse_init(&p, 0);
    assert_int_equal(atr_sse_feed(&p, text, n, keep_payload, ps), 0);
    assert_int_equal(atr_sse_finish(&p, keep_payload, ps), 0);
    atr_sse_release(&p);
    assert_true(ps->n >= 3);
}

/* The memo answers data as atr_sse_payload_parse does: the same return
 * value and the same payload. */
static void memo_as_parse(struct atr_sse_memo *m, const char *data, size_t len)
{
    struct atr_sse_payload a, b;
    int ra = atr_sse_payload_parse_memo(m, &arena, data, len, &a);
    atr_arena_clear(&arena);
    int rb = atr_sse_payload_parse(&arena, data, len, &b);
    atr_arena_clear(&arena);
    assert_int_equal(ra, rb);
    assert_true(a.done == b.done && a.chunk == b.chunk && a.usage == b.usage &&
                a.error == b.error);
    assert_true(a.prompt_tokens == b.prompt_tokens && a.completion_tokens == b.completion_tokens &&
                a.cached_tokens == b.cached_tokens);
    assert_string_equal(a.detail, b.detail);
}

static const char *const streams[] = {
    "llama-server-completions.txt", "llama-server-chat.txt", "sim-completions.txt",
    "completions.txt", "chat-crlf.txt",
};
enum { N_STREAMS = sizeof streams / sizeof streams[0] };

/* Each recorded stream three times over, and all of them interleaved:
 * from the second time on its payloads are matched, not scanned. */
static void test_memo_streams(void **state)
{
    (void)state;
    static struct payloads ps[N_STREAMS];
    struct atr_sse_memo m;
    for (size_t i = 0; i < N_STREAMS; i++) {
        load_stream(streams[i], &ps[i]);
        atr_sse_memo_init(&m);
        for (int round = 0; round < 3; round++) {
            for (size_t k = 0; k < ps[i].n; k++)
                memo_as_parse(&m, ps[i].all.data + ps[i].at[k], ps[i].len[k]);
        }
        /* At most 4 shapes in a stream's payloads: none scanned after the
         * first round. */
        assert_true(m.misses <= ps[i].n);
        assert_true(m.hits >= 2 * (ps[i].n - 1));
    }
    atr_sse_memo_init(&m);
    for (size_t k = 0; k < 64; k++) {
        for (size_t i = 0; i < N_STREAMS; i++) {
            if (k < ps[i].n)
                memo_as_parse(&m, ps[i].all.data + ps[i].at[k], ps[i].len[k]);
        }
    }
    for (size_t i = 0; i < N_STREAMS; i++)
        atr_buf_release(&ps[i].all);
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One random edit of buf[0..*len): a byte replaced, inserted or deleted,
 * drawn from JSON's structural bytes, digits, letters, escapes, blanks,
 * control and non-ASCII bytes, so edits land inside holes and outside. */
static void mutate(char *buf, size_t *len, size_t cap, uint64_t *x)
{
    static const char pick[] = "\"\\{}[],:. 0123456789eE+-abnlu\t\n\x01\x7f\xc3";
    char c = pick[rng_next(x) % (sizeof pick - 1)];
    size_t at = *len ? rng_next(x) % *len : 0;
    switch (rng_next(x) % 3) {
    case 0:
        if (*len)
            buf[at] = c;
        break;
    case 1:
        if (*len + 1 < cap) {
            memmove(buf + at + 1, buf + at, *len - at);
            buf[at] = c;
            (*len)++;
        }
        break;
    default:
        if (*len) {
            memmove(buf + at, buf + at + 1, *len - at - 1);
            (*len)--;
        }
    }
}

/* Recorded payloads with one to four random edits, through a memo that
 * holds the shapes of the originals and of every edit it scanned: where
 * an edit is only inside a hole it is matched, anywhere else it must not
 * be, and the answer is the readers' every time. */
static void test_memo_mutations(void **state)
{
    (void)state;
    static struct payloads ps[N_STREAMS];
    for (size_t i = 0; i < N_STREAMS; i++)
        load_stream(streams[i], &ps[i]);
    struct atr_sse_memo m;
    atr_sse_memo_init(&m);
    uint64_t x = 0x9e3779b97f4a7c15u;
    char buf[4096];
    for (int t = 0; t < 60000; t++) {
        const struct payloads *p = &ps[rng_next(&x) % N_STREAMS];
        size_t k = rng_next(&x) % p->n;
        size_t len = p->len[k];
        memcpy(buf, p->all.data + p->at[k], len);
        if (t % 4 == 0) {   /* the original too: its shape back in the memo */
            memo_as_parse(&m, buf, len);
        }
        for (int e = 0, edits = 1 + (int)(rng_next(&x) % 4); e < edits; e++)
            mutate(buf, &len, sizeof buf, &x);
        memo_as_parse(&m, buf, len);
    }
    assert_true(m.hits > 0 && m.misses > 0);
    for (size_t i = 0; i < N_STREAMS; i++)
        atr_buf_release(&ps[i].all);
}

/* A shape's holes are the values stepped over, nothing else: keys, the
 * counts read and the literals stay fixed; strings and numbers in holes
 * take any accepted replacement, and only that. */
static void test_memo_holes(void **state)
{
    (void)state;
    static const char base[] =
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"text\":\"x\",\"i\":0}],"
        "\"usage\":{\"completion_tokens\":8}}";
    struct atr_sse_memo m;
    atr_sse_memo_init(&m);
    memo_as_parse(&m, base, strlen(base));
    assert_int_equal(m.misses, 1);
    static const char *const same[] = {
        "{\"id\":\"cmpl-9f\",\"created\":1796224339,\"choices\":[{\"text\":\"\",\"i\":17}],"
        "\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\\n\\\"\",\"created\":-1.5e3,\"choices\":[{\"text\":\" w\",\"i\":0}],"
        "\"usage\":{\"completion_tokens\":8}}",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        memo_as_parse(&m, same[i], strlen(same[i]));
        assert_int_equal(m.misses, 1);
    }
    static const char *const other[] = {
        /* a count, a key, a literal, a type, an unaccepted string, a bad number */
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"text\":\"x\",\"i\":0}],\"usage\":{\"completion_tokens\":9}}",
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"texT\":\"x\",\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"text\":null,\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"text\":\"x\",\"i\":\"0\"}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"\\u00e9\",\"created\":12,\"choices\":[{\"text\":\"x\",\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\",\"created\":012,\"choices\":[{\"text\":\"x\",\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\",\"created\":1.,\"choices\":[{\"text\":\"x\",\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
        "{\"id\":\"a\",\"created\":12,\"choices\":[{\"text\":\"x\"\",\"i\":0}],\"usage\":{\"completion_tokens\":8}}",
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        unsigned long before = m.misses;
        memo_as_parse(&m, other[i], strlen(other[i]));
        assert_int_equal(m.misses, before + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_line_ends),
        cmocka_unit_test(test_comments_and_fields),
        cmocka_unit_test(test_multiline),
        cmocka_unit_test(test_finish),
        cmocka_unit_test(test_split_everywhere),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_payload_chunks),
        cmocka_unit_test(test_payload_usage),
        cmocka_unit_test(test_payload_errors),
        cmocka_unit_test(test_payload_scan),
        cmocka_unit_test(test_memo_streams),
        cmocka_unit_test(test_memo_mutations),
        cmocka_unit_test(test_memo_holes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    atr_arena_release(&arena);
    return rc;
}
