/* test-journal.c - the proxy's recording journal: the exact line, lines
 * read back as JSON and as atr traces, rotation, content only when kept,
 * hostile strings, a torn tail, and the fold into sessions. The fixture
 * tests/data/proxy/journal.ndjson is checked to be what the journal writes
 * for the records below (UPDATE_GOLDEN=1 rewrites it); journal-old.ndjson
 * beside it is the same requests as an older atr wrote them, kept as it is
 * (test-journal.sh reads it as the new one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/json.h"
#include "proxy/journal.h"
#include "trace/convo.h"
#include "trace/reader.h"
#include "trace/sessions.h"
#include "trace/tokens.h"
#include "slurp.h"

/* ---- helpers ---- */

static const struct atr_proxy_record base = {
    .session = "s1", .session_source = "header", .turn = 2,
    .start_unix = 1732530000.25, .api = "chat", .model = "llama-3.1-8b", .stream = true,
    .prompt_tokens = 42, .output_tokens = 64, .cached_tokens = 16, .est_prompt_tokens = 40,
    .block_size = 16, .block_ids = (const uint64_t[]){11, 12, 13}, .n_block_ids = 3,
    .ttft_s = 0.3125, .e2e_s = 1.652,
    .itl_mean_s = 0.02125, .itl_p50_s = 0.020, .itl_p99_s = 0.040125, .itl_max_s = 0.055,
    .n_itl = 63, .n_chunks = 64, .status = 200, .upstream = 1,
    .upstream_url = "http://10.0.0.2:8000", .policy = "max-tokens", .max_tokens_cap = 512,
};

static char *format(const struct atr_proxy_record *r)
{
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_journal_format(&b, r), 0);
    return b.data;
}

/* Every line of text parses as one JSON object; returns the line count. */
static size_t check_json_lines(const char *text, size_t len)
{
    size_t lines = 0;
    struct atr_arena a = ATR_ARENA_INIT;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(nl);                       /* every line is terminated */
        struct atr_json *doc;
        struct atr_json_err e;
        assert_int_equal(atr_json_parse(&a, p, (size_t)(nl - p), NULL, &doc, &e), 0);
        assert_int_equal(doc->type, ATR_JSON_OBJECT);
        atr_arena_clear(&a);
        lines++;
        p = nl + 1;
    }
    atr_arena_release(&a);
    return lines;
}

/* Reads path as traces; returns how many, each checked by the atr reader. */
static size_t read_traces(const char *path, uint64_t *first_turn)
{
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(path, NULL, NULL, &err);
    assert_non_null(r);
    assert_string_equal(atr_reader_format(r), "atr");
    struct atr_trace t = ATR_TRACE_INIT;
    size_t n = 0;
    int rc;
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        assert_int_equal(t.n_steps, 1);
        assert_int_equal(t.steps[0].kind, ATR_STEP_LLM);
        assert_string_equal(t.source, "atr-proxy");
        int64_t turn;
        assert_true(atr_json_get_i64(t.meta, "turn", &turn));
        if (n == 0 && first_turn)
            *first_turn = (uint64_t)turn;
        n++;
    }
    if (rc < 0)
        fail_msg("%s", err.msg);
    atr_trace_release(&t);
    atr_reader_close(r);
    return n;
}

struct dir {
    char path[64];
    char journal[96];
};

static void dir_make(struct dir *d)
{
    strcpy(d->path, "/tmp/atr-journal-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    snprintf(d->journal, sizeof d->journal, "%s/j.ndjson", d->path);
}

static void dir_remove(struct dir *d)
{
    char p[128];
    unlink(d->journal);
    for (int k = 1; k <= 9; k++) {
        snprintf(p, sizeof p, "%s.%d", d->journal, k);
        unlink(p);
    }
    rmdir(d->path);
}

/* ---- the line ---- */

static void test_format_exact(void **state)
{
    (void)state;
    char *line = format(&base);
    assert_string_equal(line,
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"proxy/s1/2\",\"source\":\"atr-proxy\","
        "\"start_ms\":1732530000250,\"block_size\":16,\"meta\":{\"session\":\"s1\","
        "\"session_source\":\"header\",\"turn\":2,\"api\":\"chat\",\"model\":\"llama-3.1-8b\","
        "\"stream\":true,\"status\":200,\"error\":null,\"upstream\":1,"
        "\"upstream_url\":\"http://10.0.0.2:8000\",\"policy\":\"max-tokens\","
        "\"max_tokens_cap\":512,\"retries\":0,\"ttft_ms\":312.5,\"itl_ms\":{\"mean\":21.25,"
        "\"p50\":20,\"p99\":40.125,\"max\":55,\"n\":63},\"chunks\":64,\"est_prompt_tokens\":40,"
        "\"cached_tokens\":16},\"steps\":[{\"i\":0,\"kind\":\"llm\",\"t_ms\":0,\"dur_ms\":1652,"
        "\"input_tokens\":42,\"output_tokens\":64,\"cached_tokens\":16,"
        "\"tokens_from\":\"recorded\",\"estimated_input_tokens\":40,"
        "\"hash_ids\":[11,12,13]}]}\n");
    free(line);

    /* Unknowns are null in meta and absent from the step. */
    struct atr_proxy_record r = base;
    r.model = r.policy = r.upstream_url = NULL;
    r.error = "upstream timeout";
    r.status = 504;
    r.prompt_tokens = r.output_tokens = r.cached_tokens = -1;
    r.ttft_s = r.e2e_s = -1;
    r.n_itl = 0;
    r.n_chunks = 0;
    line = format(&r);
    assert_non_null(strstr(line, "\"model\":null,"));
    assert_non_null(strstr(line, "\"error\":\"upstream timeout\","));
    assert_non_null(strstr(line, "\"ttft_ms\":null,\"itl_ms\":{\"mean\":null,\"p50\":null,"
                                 "\"p99\":null,\"max\":null,\"n\":0}"));
    assert_non_null(strstr(line, "\"cached_tokens\":null}"));
    assert_non_null(strstr(line, "[{\"i\":0,\"kind\":\"llm\",\"t_ms\":0,\"input_tokens\":40,"
                                 "\"tokens_from\":\"estimated\",\"hash_ids\":[11,12,13]}]"));
    free(line);
}

/* The step of a line as the reader gives it back. */
static struct atr_step read_step0(const char *line, struct atr_trace *t)
{
    struct dir d;
    dir_make(&d);
    FILE *f = fopen(d.journal, "w");
    fputs(line, f);
    fclose(f);
    struct atr_error err;
    struct atr_reader *rd = atr_reader_open(d.journal, NULL, NULL, &err);
    assert_non_null(rd);
    if (atr_reader_next(rd, t, &err) != 1)
        fail_msg("%s", err.msg);
    atr_reader_close(rd);
    dir_remove(&d);
    return t->steps[0];
}

/* With usage the step carries the upstream's counts, the estimate beside
 * them, and ids fitted to the recorded length: the estimated ids as far as
 * they go, then ids unique to the request (the trace library's rule). */
static void test_format_recorded_counts(void **state)
{
    (void)state;
    struct atr_proxy_record r = base;
    r.prompt_tokens = 70;                           /* 5 blocks; the estimate had 3 */
    char *line = format(&r);
    uint64_t want[5] = {11, 12, 13};
    atr_fit_ids_fill(want, 5, want, 3, "proxy/s1/2", 0);
    char ids[256];
    snprintf(ids, sizeof ids, "\"input_tokens\":70,\"output_tokens\":64,\"cached_tokens\":16,"
             "\"tokens_from\":\"recorded\",\"estimated_input_tokens\":40,"
             "\"hash_ids\":[11,12,13,%llu,%llu]}", (unsigned long long)want[3],
             (unsigned long long)want[4]);
    assert_non_null(strstr(line, ids));
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_step s = read_step0(line, &t);
    assert_int_equal(s.input_tokens, 70);
    assert_int_equal(s.estimated_input_tokens, 40);
    assert_string_equal(s.tokens_from, "recorded");
    assert_null(s.output_tokens_from);
    assert_int_equal(s.n_hash_ids, 5);
    assert_true(s.hash_ids[3] != s.hash_ids[4] && s.hash_ids[3] <= ATR_HASH_ID_MASK);
    atr_trace_release(&t);
    free(line);

    /* Another request's blocks past its estimate are its own. */
    r.turn = 3;
    line = format(&r);
    assert_null(strstr(line, ids));
    assert_non_null(strstr(line, "\"hash_ids\":[11,12,13,"));
    free(line);

    /* Fewer recorded than estimated tokens: the leading ids, cut. */
    r = base;
    r.prompt_tokens = 20;
    line = format(&r);
    assert_non_null(strstr(line, "\"input_tokens\":20,"));
    assert_non_null(strstr(line, "\"estimated_input_tokens\":40,\"hash_ids\":[11,12]}"));
    free(line);

    /* Completion tokens alone: the prompt is the estimate, the output not. */
    r.prompt_tokens = -1;
    line = format(&r);
    assert_non_null(strstr(line, "\"input_tokens\":40,\"output_tokens\":64,\"cached_tokens\":16,"
                                 "\"tokens_from\":\"estimated\",\"output_tokens_from\":"
                                 "\"recorded\",\"hash_ids\":[11,12,13]}"));
    free(line);

    /* A count no prompt has is not believed. */
    r.prompt_tokens = INT64_C(1) << 40;
    line = format(&r);
    assert_non_null(strstr(line, "\"input_tokens\":40,"));
    free(line);
}

/* A line of an older journal (the estimate as input_tokens, usage beside
 * it as recorded_input_tokens) reads as the proxy writes it now. */
static void test_old_line_reads_as_new(void **state)
{
    (void)state;
    struct atr_proxy_record r = base;
    r.prompt_tokens = 70;
    char *line = format(&r);
    struct atr_trace t = ATR_TRACE_INIT, o = ATR_TRACE_INIT;
    struct atr_step s = read_step0(line, &t);
    struct atr_step old = read_step0(
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"proxy/s1/2\",\"source\":\"atr-proxy\","
        "\"block_size\":16,\"steps\":[{\"i\":0,\"kind\":\"llm\",\"t_ms\":0,"
        "\"input_tokens\":40,\"output_tokens\":64,\"recorded_input_tokens\":70,"
        "\"hash_ids\":[11,12,13]}]}\n", &o);
    assert_int_equal(old.input_tokens, 70);
    assert_int_equal(old.estimated_input_tokens, 40);
    assert_int_equal(old.recorded_input_tokens, ATR_UNSET);
    assert_string_equal(old.tokens_from, "recorded");
    assert_null(old.output_tokens_from);
    assert_int_equal(old.n_hash_ids, s.n_hash_ids);
    assert_memory_equal(old.hash_ids, s.hash_ids, s.n_hash_ids * sizeof *s.hash_ids);
    atr_trace_release(&o);
    /* Without usage: the estimate, now said to be one. */
    old = read_step0(
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"proxy/s1/2\",\"source\":\"atr-proxy\","
        "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"input_tokens\":40,"
        "\"hash_ids\":[11,12,13]}]}\n", &o);
    assert_string_equal(old.tokens_from, "estimated");
    assert_int_equal(old.input_tokens, 40);
    assert_int_equal(old.n_hash_ids, 3);
    atr_trace_release(&o);
    /* Not a journal line: left as it is. */
    old = read_step0(
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"x\",\"steps\":[{\"i\":0,\"kind\":\"llm\","
        "\"input_tokens\":40,\"recorded_input_tokens\":70,\"hash_ids\":[11,12,13]}]}\n", &o);
    assert_null(old.tokens_from);
    assert_int_equal(old.input_tokens, 40);
    assert_int_equal(old.recorded_input_tokens, 70);
    atr_trace_release(&o);
    atr_trace_release(&t);
    free(line);
}

/* The format ties hash ids to input_tokens: a record that breaks it is
 * refused, and nothing is written. */
static void test_format_refuses_bad_ids(void **state)
{
    (void)state;
    struct atr_proxy_record r = base;
    r.est_prompt_tokens = 100;                      /* 7 blocks, 3 ids */
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_journal_format(&b, &r), -1);
    assert_int_equal(b.len, 0);
    r = base;
    r.block_ids = (const uint64_t[]){11, 12, UINT64_C(1) << 53};
    assert_int_equal(atr_journal_format(&b, &r), -1);
    r = base;
    r.n_block_ids = 0;                              /* no ids: fine */
    r.prompt_tokens = -1;
    assert_int_equal(atr_journal_format(&b, &r), 0);
    assert_non_null(strstr(b.data, "\"hash_ids\":[]"));
    atr_buf_clear(&b);
    /* ... and with usage, all of the recorded length are the request's own
     * (a token-id prompt: no text to estimate, nothing known shared) */
    r.prompt_tokens = 42;
    r.est_prompt_tokens = 0;
    assert_int_equal(atr_journal_format(&b, &r), 0);
    uint64_t own[3];
    atr_fit_ids_fill(own, 3, NULL, 0, "proxy/s1/2", 0);
    char ids[128];
    snprintf(ids, sizeof ids, "\"estimated_input_tokens\":0,\"hash_ids\":[%llu,%llu,%llu]}",
             (unsigned long long)own[0], (unsigned long long)own[1], (unsigned long long)own[2]);
    assert_non_null(strstr(b.data, ids));
    atr_buf_release(&b);

    struct dir d;
    dir_make(&d);
    struct atr_error err;
    struct atr_journal *j = atr_journal_open(d.journal, NULL, &err);
    assert_non_null(j);
    r = base;
    r.est_prompt_tokens = 100;
    assert_int_equal(atr_journal_append(j, &r, &err), -1);
    assert_non_null(strstr(err.msg, "3 block ids for 100 estimated tokens"));
    assert_int_equal(atr_journal_close(j, &err), 0);
    struct stat st;
    assert_int_equal(stat(d.journal, &st), 0);
    assert_int_equal(st.st_size, 0);
    dir_remove(&d);
}

static void test_content_only_when_given(void **state)
{
    (void)state;
    char *line = format(&base);
    assert_null(strstr(line, "\"messages\""));
    assert_null(strstr(line, "\"output\""));
    free(line);
    struct atr_proxy_record r = base;
    r.prompt_text = "<|user|>\nhi\n";
    r.prompt_len = strlen(r.prompt_text);
    line = format(&r);
    assert_non_null(strstr(line, ",\"hash_ids\":[11,12,13],\"messages\":[{\"role\":\"prompt\","
                                 "\"content\":\"<|user|>\\nhi\\n\"}]}]}\n"));
    assert_null(strstr(line, "\"output\""));
    free(line);
    r.completion_text = "hello";
    r.completion_len = 5;
    line = format(&r);
    assert_non_null(strstr(line, "\"content\":\"<|user|>\\nhi\\n\"}],\"output\":\"hello\"}]}\n"));
    free(line);
}

/* Quotes, newlines, NULs (through the lengths) and invalid UTF-8 in any
 * string: still one line, valid JSON, a valid trace. */
static void test_hostile_strings(void **state)
{
    (void)state;
    struct atr_proxy_record r = base;
    r.session = "a\"b\nc\\d\xff\xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80 \xc0\xaf";
    r.model = "m\r\n\t";
    r.error = "\x01\x1f";
    r.prompt_text = "x\0y\n\xfe";
    r.prompt_len = 5;
    r.completion_text = "\0";
    r.completion_len = 1;
    char *line = format(&r);
    size_t len = strlen(line);
    assert_ptr_equal(strchr(line, '\n'), line + len - 1);     /* one line */
    assert_int_equal(check_json_lines(line, len), 1);

    struct dir d;
    dir_make(&d);
    FILE *f = fopen(d.journal, "w");
    fputs(line, f);
    fclose(f);
    struct atr_error err;
    struct atr_reader *rd = atr_reader_open(d.journal, NULL, NULL, &err);
    assert_non_null(rd);
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(rd, &t, &err), 1);
    /* invalid bytes are U+FFFD, one per byte; the emoji stays */
    assert_string_equal(atr_json_get_str(t.meta, "session", NULL),
                        "a\"b\nc\\d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80 "
                        "\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(atr_json_get_str(t.meta, "error", NULL), "\x01\x1f");
    const struct atr_json *content = atr_json_get(t.steps[0].messages->u.kids.first, "content");
    assert_int_equal(content->u.str.len, 7);
    assert_memory_equal(content->u.str.s, "x\0y\n\xef\xbf\xbd", 7);
    assert_int_equal(t.steps[0].output->u.str.len, 1);
    assert_int_equal(atr_reader_next(rd, &t, &err), 0);
    atr_trace_release(&t);
    atr_reader_close(rd);
    free(line);
    dir_remove(&d);
}

/* ---- the file ---- */

static void test_append_read_back(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    struct atr_error err;
    struct atr_journal *j = atr_journal_open(d.journal, NULL, &err);
    assert_non_null(j);
    char session[32];
    for (unsigned i = 0; i < 1000; i++) {
        struct atr_proxy_record r = base;
        snprintf(session, sizeof session, "sess-%u", i % 37);
        r.session = session;
        r.turn = i / 37;
        r.start_unix += i * 0.01;
        assert_int_equal(atr_journal_append(j, &r, &err), 0);
        atr_journal_tick(j, i * 0.01);              /* syncs about once a second */
    }
    assert_int_equal(atr_journal_status(j, &err), 0);
    assert_int_equal(atr_journal_cut_bytes(j), 0);
    assert_int_equal(atr_journal_close(j, &err), 0);
    size_t len;
    char *text = slurp(d.journal, &len);
    assert_int_equal(check_json_lines(text, len), 1000);
    free(text);
    assert_int_equal(read_traces(d.journal, NULL), 1000);

    /* Reopening continues the file. */
    j = atr_journal_open(d.journal, NULL, &err);
    assert_int_equal(atr_journal_append(j, &base, &err), 0);
    assert_int_equal(atr_journal_close(j, &err), 0);
    assert_int_equal(read_traces(d.journal, NULL), 1001);
    assert_int_equal(atr_journal_close(NULL, &err), 0);
    dir_remove(&d);
}

/* Rotation at a small size: whole lines in every file, PATH.1 newer than
 * PATH.2, the oldest past `keep` dropped. */
static void test_rotation(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    char *line = format(&base);
    size_t line_len = strlen(line);
    free(line);
    struct atr_journal_cfg cfg = { .fsync_interval_s = 0, .rotate_bytes = 4 * line_len - 10,
                                   .keep = 2 };
    struct atr_error err;
    struct atr_journal *j = atr_journal_open(d.journal, &cfg, &err);
    assert_non_null(j);
    for (unsigned i = 0; i < 14; i++) {
        struct atr_proxy_record r = base;
        r.turn = i;                                 /* one more digit from 10 on */
        assert_int_equal(atr_journal_append(j, &r, &err), 0);
    }
    assert_int_equal(atr_journal_close(j, &err), 0);
    /* 4 lines per file: turns 0-3 dropped, 4-7 in .2, 8-11 in .1, 12-13 current */
    char p1[128], p2[128], p3[128];
    snprintf(p1, sizeof p1, "%s.1", d.journal);
    snprintf(p2, sizeof p2, "%s.2", d.journal);
    snprintf(p3, sizeof p3, "%s.3", d.journal);
    uint64_t first;
    assert_int_equal(read_traces(p2, &first), 4);
    assert_int_equal(first, 4);
    assert_int_equal(read_traces(p1, &first), 4);
    assert_int_equal(first, 8);
    assert_int_equal(read_traces(d.journal, &first), 2);
    assert_int_equal(first, 12);
    assert_int_equal(access(p3, F_OK), -1);
    const char *paths[] = { d.journal, p1, p2 };
    for (size_t k = 0; k < 3; k++) {
        size_t len;
        char *text = slurp(paths[k], &len);
        assert_true(len > 0 && text[len - 1] == '\n');
        check_json_lines(text, len);
        free(text);
    }
    /* A journal opened at its limit rotates at once. */
    cfg.rotate_bytes = 100;
    j = atr_journal_open(d.journal, &cfg, &err);
    assert_non_null(j);
    assert_int_equal(atr_journal_close(j, &err), 0);
    assert_int_equal(read_traces(p1, &first), 2);
    assert_int_equal(first, 12);
    dir_remove(&d);
}

/* atr_journal_scan: every line of the journal and its rotated files,
 * oldest first, as (session, turn); a line that is no record: FILE:LINE. */
struct seen {
    char names[16][16];
    uint64_t turns[16];
    size_t n;
};

static void on_seen(void *ctx, const char *session, size_t len, uint64_t turn)
{
    struct seen *s = ctx;
    assert_true(s->n < 16 && len < 16);
    memcpy(s->names[s->n], session, len);
    s->names[s->n][len] = '\0';
    s->turns[s->n++] = turn;
}

static void test_scan(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    char *line = format(&base);
    size_t line_len = strlen(line);
    free(line);
    struct atr_journal_cfg cfg = { .fsync_interval_s = 0, .rotate_bytes = 2 * line_len - 10,
                                   .keep = 3 };
    struct atr_error err;
    struct atr_journal *j = atr_journal_open(d.journal, &cfg, &err);
    for (unsigned i = 0; i < 5; i++) {
        struct atr_proxy_record r = base;
        r.turn = i;
        r.session = i % 2 ? "~1" : "a\"b";
        assert_int_equal(atr_journal_append(j, &r, &err), 0);
    }
    assert_int_equal(atr_journal_close(j, &err), 0);
    struct seen s = {.n = 0};
    assert_int_equal(atr_journal_scan(d.journal, 3, on_seen, &s, &err), 0);
    assert_int_equal(s.n, 5);                       /* .2 (0, 1), .1 (2, 3), current (4) */
    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(s.turns[i], i);
        assert_string_equal(s.names[i], i % 2 ? "~1" : "a\"b");
    }
    FILE *f = fopen(d.journal, "a");
    fputs("{\"meta\": {\"turn\": 1}}\n", f);
    fclose(f);
    s.n = 0;
    assert_int_equal(atr_journal_scan(d.journal, 3, on_seen, &s, &err), -1);
    assert_non_null(strstr(err.msg, "j.ndjson:2:1: expected \"meta\" with \"session\""));
    dir_remove(&d);
}

/* A writer killed mid-line leaves a cut line without '\n': the next open
 * removes it, so the file holds whole lines only. */
static void test_torn_tail(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    char *line = format(&base);
    FILE *f = fopen(d.journal, "w");
    fputs(line, f);
    fputs(line, f);
    fwrite(line, 1, 50, f);
    fclose(f);
    struct atr_error err;
    struct atr_journal *j = atr_journal_open(d.journal, NULL, &err);
    assert_non_null(j);
    assert_int_equal(atr_journal_cut_bytes(j), 50);
    assert_int_equal(atr_journal_append(j, &base, &err), 0);
    assert_int_equal(atr_journal_close(j, &err), 0);
    assert_int_equal(read_traces(d.journal, NULL), 3);
    /* a file of only a cut line */
    f = fopen(d.journal, "w");
    fwrite(line, 1, 10, f);
    fclose(f);
    j = atr_journal_open(d.journal, NULL, &err);
    assert_int_equal(atr_journal_cut_bytes(j), 10);
    assert_int_equal(atr_journal_close(j, &err), 0);
    struct stat st;
    assert_int_equal(stat(d.journal, &st), 0);
    assert_int_equal(st.st_size, 0);
    free(line);
    dir_remove(&d);
    assert_null(atr_journal_open("/nonexistent-dir/j.ndjson", NULL, &err));
    assert_non_null(strstr(err.msg, "/nonexistent-dir/j.ndjson: No such file or directory"));
}

/* ---- the fixture: 3 sessions, 7 requests, interleaved ---- */

struct fixture_req {
    const char *session, *source;
    uint64_t turn;
    double start, ttft, e2e;
    const char *api, *model;
    int64_t usage_in, usage_out, cached;
    int status;
    const char *error;
    unsigned upstream, retries;
    const char *prompt;           /* rendered; its hash ids are computed */
};

/* Each session's prompts grow by the reply and the next message, as an
 * agent's do; gamma talks to /v1/completions. */
#define A0 "<|system|>\nYou are a coding agent. Use the shell tool to run commands.\n" \
           "<|user|>\nThe test test_parse_dates fails on leap years; fix utils/dates.py.\n"
#define A1 A0 "<|assistant|>\nshell(cat utils/dates.py)\n<|tool|>\ndef parse(s):\n" \
           "    y, m, d = s.split('-')\n    return date(int(y), int(m), int(d))\n"
#define A2 A1 "<|assistant|>\nshell(pytest -x tests/test_dates.py -k leap)\n<|tool|>\n" \
           "1 failed: ValueError: day is out of range for month\n"
#define B0 "<|user|>\nSummarise the release notes of version 2.4 in three bullet points.\n"
#define B1 B0 "<|assistant|>\n- faster startup\n- new cache\n- fixes\n<|user|>\n" \
           "Now in German, please.\n"
#define G0 "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
#define G1 G0 "    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n" \
           "\n\ndef test_fibonacci():\n"

static const struct fixture_req fixture[] = {
    {"s-alpha", "header", 0, 1732530000.000, 0.210, 1.480, "chat", "llama-3.1-8b", 45, 58, 0, 200,
     NULL, 0, 0, A0},
    {"s-beta", "user", 0, 1732530000.400, 0.150, 0.902, "chat", "llama-3.1-8b", 18, 21, 0, 200,
     NULL, 1, 0, B0},
    {"s-alpha", "header", 1, 1732530003.100, 0.180, 1.250, "chat", "llama-3.1-8b", 88, 44, 48, 200,
     NULL, 0, 0, A1},
    {"s-gamma", "prefix", 0, 1732530003.500, 0.095, 0.655, "completions", "llama-3.1-8b", 19, 40,
     0, 200, NULL, 1, 1, G0},
    {"s-beta", "user", 1, 1732530005.000, 0.140, 0.610, "chat", "llama-3.1-8b", 41, 25, 16, 200,
     NULL, 0, 0, B1},
    {"s-alpha", "header", 2, 1732530006.200, 0.250, 2.075, "chat", "llama-3.1-8b", 120, 96, 80, 200,
     NULL, 0, 0, A2},
    {"s-gamma", "prefix", 1, 1732530007.000, -1, 30.0, "completions", "llama-3.1-8b", -1, -1, -1,
     504, "upstream timeout", 0, 0, G1},
};

static char *fixture_text(void)
{
    struct atr_buf all = ATR_BUF_INIT;
    for (size_t i = 0; i < sizeof fixture / sizeof *fixture; i++) {
        const struct fixture_req *q = &fixture[i];
        struct atr_blockhash h;
        atr_blockhash_init(&h, 16);
        atr_blockhash_feed(&h, q->prompt, strlen(q->prompt));
        uint64_t ids[64];
        size_t n = h.n_ids;
        memcpy(ids, h.ids, n * sizeof *ids);
        if (atr_blockhash_partial_id(&h))
            ids[n++] = atr_blockhash_partial_id(&h);
        bool ok = q->status == 200;
        struct atr_proxy_record r = {
            .session = q->session, .session_source = q->source, .turn = q->turn,
            .start_unix = q->start, .api = q->api, .model = q->model, .stream = true,
            .prompt_tokens = q->usage_in, .output_tokens = q->usage_out, .cached_tokens = q->cached,
            .est_prompt_tokens = h.tokens, .block_size = 16, .block_ids = ids, .n_block_ids = n,
            .ttft_s = q->ttft, .e2e_s = q->e2e,
            .itl_mean_s = ok ? 0.0195 : 0, .itl_p50_s = ok ? 0.019 : 0,
            .itl_p99_s = ok ? 0.0305 : 0, .itl_max_s = ok ? 0.0412 : 0,
            .n_itl = ok ? (size_t)q->usage_out - 1 : 0, .n_chunks = ok ? (size_t)q->usage_out : 0,
            .status = q->status, .error = q->error, .upstream = q->upstream,
            .upstream_url = q->upstream ? "http://127.0.0.1:8002" : "http://127.0.0.1:8001",
            .policy = "prefix-route", .retries = q->retries,
        };
        assert_int_equal(atr_journal_format(&all, &r), 0);
        atr_blockhash_release(&h);
    }
    return all.data;
}

static void test_fixture_is_what_the_journal_writes(void **state)
{
    (void)state;
    const char *path = ATR_TEST_DATA "/proxy/journal.ndjson";
    char *want = fixture_text();
    if (getenv("UPDATE_GOLDEN") && strcmp(getenv("UPDATE_GOLDEN"), "1") == 0) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(want, f);
        fclose(f);
    }
    size_t len;
    char *got = slurp(path, &len);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

/* The fold: 3 sessions in order of first start, requests in start order,
 * a client step (the think time) between two requests. */
static void test_sessions_fold(void **state)
{
    (void)state;
    struct atr_sessions *s = atr_sessions_new();
    struct atr_error err;
    if (atr_sessions_read(s, ATR_TEST_DATA "/proxy/journal.ndjson", NULL, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(atr_sessions_count(s), 3);
    assert_int_equal(atr_sessions_requests(s), 7);
    struct atr_trace t = ATR_TRACE_INIT;
    atr_sessions_build(s, 0, false, &t);
    assert_string_equal(t.trace_id, "proxy/s-alpha");
    assert_int_equal(t.start_ms, 1732530000000);
    assert_int_equal(t.n_steps, 5);
    assert_int_equal(t.steps[1].kind, ATR_STEP_TOOL);
    assert_string_equal(t.steps[1].tool, "client");
    assert_int_equal(t.steps[1].t_ms, 1480);             /* end of turn 0 */
    assert_int_equal(t.steps[1].dur_ms, 3100 - 1480);    /* until turn 1 */
    assert_int_equal(t.steps[2].t_ms, 3100);
    assert_int_equal(t.steps[4].t_ms, 6200);
    assert_true(t.steps[4].n_hash_ids > t.steps[2].n_hash_ids);
    atr_sessions_build(s, 2, false, &t);
    assert_string_equal(t.trace_id, "proxy/s-gamma");
    assert_int_equal(t.n_steps, 3);
    atr_trace_release(&t);

    /* A trace that is no journal line is refused, with its position. */
    struct dir d;
    dir_make(&d);
    FILE *f = fopen(d.journal, "w");
    fputs("{\"format\":\"atr-trace/1\",\"trace_id\":\"x\",\"meta\":{\"turn\":1},"
          "\"steps\":[{\"i\":0,\"kind\":\"llm\"}]}\n", f);
    fclose(f);
    assert_int_equal(atr_sessions_read(s, d.journal, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "j.ndjson:1:47: expected \"meta\".\"session\""));
    atr_sessions_free(s);
    atr_sessions_free(NULL);
    dir_remove(&d);
}

/* With content kept, a prompt that continues the previous one keeps only
 * what it adds ("messages since the previous llm step"); without, none. */
static void test_sessions_content(void **state)
{
    (void)state;
    struct dir d;
    dir_make(&d);
    const char *prompts[] = { "<|user|>\nhi\n", "<|user|>\nhi\n<|assistant|>\nhello\n<|user|>\nbye\n",
                              "<|user|>\nother\n" };
    struct atr_buf b = ATR_BUF_INIT;
    for (unsigned i = 0; i < 3; i++) {
        struct atr_proxy_record r = base;
        r.n_block_ids = 0;
        r.turn = i;
        r.start_unix += i;
        r.prompt_text = prompts[i];
        r.prompt_len = strlen(prompts[i]);
        r.completion_text = "hello";
        r.completion_len = 5;
        assert_int_equal(atr_journal_format(&b, &r), 0);
    }
    FILE *f = fopen(d.journal, "w");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    atr_buf_release(&b);
    struct atr_sessions *s = atr_sessions_new();
    struct atr_error err;
    assert_int_equal(atr_sessions_read(s, d.journal, NULL, NULL, &err), 0);
    struct atr_trace t = ATR_TRACE_INIT;
    atr_sessions_build(s, 0, true, &t);
    assert_int_equal(t.n_steps, 5);
    const char *want[] = { prompts[0], "<|assistant|>\nhello\n<|user|>\nbye\n", prompts[2] };
    for (unsigned i = 0; i < 3; i++) {
        const struct atr_step *st = &t.steps[2 * i];
        assert_string_equal(atr_json_get_str(st->messages->u.kids.first, "content", NULL), want[i]);
        assert_string_equal(st->output->u.str.s, "hello");
    }
    atr_sessions_build(s, 0, false, &t);
    assert_null(t.steps[0].messages);
    assert_null(t.steps[0].output);
    atr_trace_release(&t);
    atr_sessions_free(s);
    dir_remove(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_exact),
        cmocka_unit_test(test_format_recorded_counts),
        cmocka_unit_test(test_old_line_reads_as_new),
        cmocka_unit_test(test_format_refuses_bad_ids),
        cmocka_unit_test(test_content_only_when_given),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_append_read_back),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_torn_tail),
        cmocka_unit_test(test_fixture_is_what_the_journal_writes),
        cmocka_unit_test(test_sessions_fold),
        cmocka_unit_test(test_sessions_content),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
