/* playwright.c - Playwright trace archives (trace.zip, trace format
 * v4-v8): one trace of browser tool steps per archive.
 *
 * The archive holds *.trace members, each newline-delimited JSON events.
 * Every "before" event (callId, startTime, apiName, params) paired with the
 * "after" event of the same callId (endTime, error) in the same member is
 * one tool step: tool "browser", action = apiName ("page.click"; the
 * protocol class and method go in extra), selector = params.selector,
 * url = params.url, t_ms = startTime relative to the first call, dur_ms =
 * endTime - startTime, exit_code 1 when the after event has an error. A
 * call without its after event (trace cut short) keeps dur_ms/exit_code
 * unset. extra.snapshot names the DOM snapshot taken before the call
 * (beforeSnapshot; v7+ "before@<callId>" when the archive has
 * frame-snapshot events): a name only, the replay reads the snapshot
 * from the archive (browser/snapshot.h).
 *
 * A test run records the same calls twice: in the library's trace
 * ("trace.trace", "0-trace.trace": real page actions with selectors) and
 * in the test runner's ("test.trace": hooks, fixtures, expect steps). Only
 * the library calls are kept; the runner's steps are used only when the
 * archive has no library call at all.
 *
 * Untrusted archives: the archive is read whole (it is a zip, the central
 * directory is at its end) up to opts.max_line bytes; the members read are
 * capped by the same total, so a zip bomb stops with an error, and so does
 * an archive with more than PW_MAX_ENTRIES entries. Errors inside a member
 * are "ARCHIVE: MEMBER:LINE:COL: expected ...". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "trace/fmt/reqlog.h"
#include "trace/reader.h"

#define PW_MAX_ENTRIES 100000
#define PW_MAX_MS 1.0e15      /* monotonic ms; larger values are not times */

/* One API call of the trace, in r->scratch until it becomes a step. */
struct pw_call {
    const char *call_id, *action, *klass, *method, *selector, *url, *parent_id;
    const char *snapshot;     /* the DOM snapshot taken before it (beforeSnapshot), or NULL */
    struct atr_json *params;  /* only with keep_content */
    double start, end;
    bool has_end, failed, runner;
    size_t order;             /* position in the archive, to keep sorting stable */
};

/* What one reading pass collects. */
struct pw_ctx {
    struct atr_reader *r;
    struct atr_trace *t;
    struct pw_call *calls;
    size_t n_calls, cap_calls;
    size_t *slots;            /* callId -> index + 1, open addressing, this member only */
    size_t cap_slots, n_slots;
    bool have_meta;
    bool have_snapshots;      /* the archive holds frame-snapshot events */
    /* the member being read */
    const char *member;
    unsigned long line;
    size_t first_call;        /* its first call in calls[] */
    bool has_options, options_runner;
};

/* The cap on the archive and on all members read from it. */
static size_t max_bytes(const struct atr_reader *r)
{
    return r->opts.max_line ? r->opts.max_line : ATR_DEFAULT_MAX_LINE;
}

/* Fails with "MEMBER:LINE:COL: message" (col of node j in the line, or 1). */
__attribute__((format(printf, 3, 4)))
static int pw_fail(struct pw_ctx *c, const struct atr_json *j, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return atr_reader_fail(c->r, 0, 0, "%.100s:%lu:%lu: %s", c->member, c->line,
                           j && j->col ? (unsigned long)j->col : 1UL, msg);
}

/* ---- callId lookup ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The slot of id: the one holding it, or the empty one where it goes. */
static size_t *slot_of(struct pw_ctx *c, const char *id)
{
    size_t mask = c->cap_slots - 1;
    for (size_t i = hash_str(id) & mask;; i = (i + 1) & mask)
        if (!c->slots[i] || strcmp(c->calls[c->slots[i] - 1].call_id, id) == 0)
            return &c->slots[i];
}

/* Empties the table for a new member, keeping its capacity. */
static void slots_reset(struct pw_ctx *c)
{
    if (c->slots)
        memset(c->slots, 0, c->cap_slots * sizeof *c->slots);
    c->n_slots = 0;
}

/* Grows the table (at half load) and rehashes this member's calls. */
static void slots_grow(struct pw_ctx *c)
{
    if (c->n_slots + 1 <= c->cap_slots / 2)
        return;
    c->cap_slots = c->cap_slots ? c->cap_slots * 2 : 64;
    c->slots = atr_arena_calloc(&c->r->scratch, c->cap_slots, sizeof *c->slots);
    c->n_slots = 0;
    for (size_t k = c->first_call; k < c->n_calls; k++) {
        size_t *s = slot_of(c, c->calls[k].call_id);
        if (!*s)
            c->n_slots++;
        *s = k + 1;
    }
}

static struct pw_call *add_call(struct pw_ctx *c)
{
    if (c->n_calls == c->cap_calls) {
        size_t cap = c->cap_calls ? c->cap_calls * 2 : 64;
        struct pw_call *n = atr_arena_calloc(&c->r->scratch, cap, sizeof *n);
        if (c->n_calls)
            memcpy(n, c->calls, c->n_calls * sizeof *n);
        c->calls = n;
        c->cap_calls = cap;
    }
    struct pw_call *call = &c->calls[c->n_calls];
    memset(call, 0, sizeof *call);
    call->order = c->n_calls++;
    return call;
}

/* ---- events ---- */

/* A required string member, copied to the scratch arena. */
static int req_str(struct pw_ctx *c, const struct atr_json *ev, const char *key,
                   const char **out)
{
    struct atr_json *v = atr_json_get(ev, key);
    if (!atr_json_is(v, ATR_JSON_STRING))
        return pw_fail(c, v ? v : ev, "expected \"%s\" string", key);
    *out = atr_arena_strndup(&c->r->scratch, v->u.str.s, v->u.str.len);
    return 0;
}

/* An optional string member (absent or not a string: NULL), copied. */
static const char *opt_str(struct pw_ctx *c, const struct atr_json *obj, const char *key)
{
    size_t len;
    const char *s = atr_json_get_str(obj, key, &len);
    return s ? atr_arena_strndup(&c->r->scratch, s, len) : NULL;
}

/* A required time in monotonic ms. */
static int req_ms(struct pw_ctx *c, const struct atr_json *ev, const char *key, double *out)
{
    struct atr_json *v = atr_json_get(ev, key);
    if (!atr_json_is(v, ATR_JSON_NUMBER) || !(v->u.num >= 0 && v->u.num < PW_MAX_MS))
        return pw_fail(c, v ? v : ev, "expected \"%s\" to be a non-negative number of ms", key);
    *out = v->u.num;
    return 0;
}

/* context-options: the archive's metadata (first one wins) and whether this
 * member is the test runner's. */
static void on_options(struct pw_ctx *c, const struct atr_json *ev)
{
    const char *origin = atr_json_get_str(ev, "origin", NULL);
    c->has_options = true;
    c->options_runner = origin && strcmp(origin, "testRunner") == 0;
    if (c->have_meta || c->options_runner)
        return;
    static const char *const keys[][2] = {
        {"browserName", "browser_name"}, {"platform", "platform"},
        {"sdkLanguage", "sdk_language"}, {"title", "title"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = atr_json_get_str(ev, keys[i][0], NULL);
        if (v)
            atr_trace_meta_set_str(c->t, keys[i][1], v);
    }
    int64_t version;
    if (atr_json_get_i64(ev, "version", &version))
        atr_trace_meta_set_i64(c->t, "trace_version", version);
    c->have_meta = true;
}

/* The action name: apiName (v4-v7), title (v8 renamed it), else the method. */
static const char *call_action(struct pw_ctx *c, const struct atr_json *ev,
                               const struct pw_call *call)
{
    const char *a = opt_str(c, ev, "apiName");
    if (!a)
        a = opt_str(c, ev, "title");
    return a ? a : call->method;
}

static int on_before(struct pw_ctx *c, const struct atr_json *ev)
{
    const char *id = NULL;
    double start = 0;
    if (req_str(c, ev, "callId", &id) < 0 || req_ms(c, ev, "startTime", &start) < 0)
        return -1;
    slots_grow(c);
    struct pw_call *call = add_call(c);
    call->call_id = id;
    call->start = start;
    call->klass = opt_str(c, ev, "class");
    call->method = opt_str(c, ev, "method");
    call->parent_id = opt_str(c, ev, "parentId");
    call->action = call_action(c, ev, call);
    call->snapshot = opt_str(c, ev, "beforeSnapshot");
    struct atr_json *params = atr_json_get(ev, "params");
    if (atr_json_is(params, ATR_JSON_OBJECT)) {
        call->selector = opt_str(c, params, "selector");
        call->url = opt_str(c, params, "url");
        if (c->r->opts.keep_content)
            call->params = atr_json_copy(&c->r->scratch, params);
    }
    size_t *s = slot_of(c, id);
    if (!*s)
        c->n_slots++;
    *s = c->n_calls;   /* index + 1 of the call just added */
    return 0;
}

/* An after event without its before (tracing started mid-call) is ignored. */
static int on_after(struct pw_ctx *c, const struct atr_json *ev)
{
    const char *id = NULL;
    double end = 0;
    if (req_str(c, ev, "callId", &id) < 0 || req_ms(c, ev, "endTime", &end) < 0)
        return -1;
    if (!c->slots)
        return 0;
    size_t k = *slot_of(c, id);
    if (!k)
        return 0;
    struct pw_call *call = &c->calls[k - 1];
    struct atr_json *err = atr_json_get(ev, "error");
    call->end = end;
    call->has_end = true;
    call->failed = err && err->type != ATR_JSON_NULL;
    return 0;
}

/* One line of a member: parsed into the line arena, dispatched on "type". */
static int on_line(struct pw_ctx *c, struct atr_arena *a, const char *text, size_t len)
{
    struct atr_json_opts jo = {.max_depth = c->r->opts.max_depth};
    struct atr_json_err jerr;
    struct atr_json *ev;
    if (atr_json_parse(a, text, len, &jo, &ev, &jerr) < 0)
        return atr_reader_fail(c->r, 0, 0, "%.100s:%lu:%lu: %s", c->member, c->line,
                               (unsigned long)jerr.col, jerr.msg);
    if (ev->type != ATR_JSON_OBJECT)
        return pw_fail(c, ev, "expected an event object, got %s", atr_json_type_name(ev->type));
    const char *type = atr_json_get_str(ev, "type", NULL);
    if (!type)
        return pw_fail(c, atr_json_get(ev, "type") ? atr_json_get(ev, "type") : ev,
                       "expected \"type\" string");
    if (strcmp(type, "context-options") == 0)
        on_options(c, ev);
    else if (strcmp(type, "before") == 0)
        return on_before(c, ev);
    else if (strcmp(type, "after") == 0)
        return on_after(c, ev);
    else if (strcmp(type, "frame-snapshot") == 0)
        c->have_snapshots = true;
    return 0;   /* log, event, frame-snapshot, screencast-frame, ...: not steps */
}

/* Whether the member just read is the test runner's: its context-options
 * says so (v7+), or it has none and its calls are "Test" steps (v4-v6
 * "test.trace" / "1-trace.trace"). */
static bool member_is_runner(const struct pw_ctx *c)
{
    if (c->has_options)
        return c->options_runner;
    const char *slash = strrchr(c->member, '/');
    const char *base = slash ? slash + 1 : c->member;
    if (strcmp(base, "test.trace") == 0)
        return true;
    return c->first_call < c->n_calls && c->calls[c->first_call].klass &&
           strcmp(c->calls[c->first_call].klass, "Test") == 0;
}

/* Reads every line of one member's text. */
static int read_member_lines(struct pw_ctx *c, const char *data, size_t len)
{
    struct atr_arena line_arena = ATR_ARENA_INIT;
    int rc = 0;
    c->line = 0;
    c->first_call = c->n_calls;
    c->has_options = c->options_runner = false;
    slots_reset(c);
    for (size_t pos = 0; pos < len && rc == 0;) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;
        c->line++;
        if (n && data[pos + n - 1] == '\r')
            n--;
        size_t i = 0;
        while (i < n && (data[pos + i] == ' ' || data[pos + i] == '\t'))
            i++;
        if (i < n) {
            rc = on_line(c, &line_arena, data + pos, n);
            atr_arena_clear(&line_arena);
        }
        pos = end + 1;
    }
    atr_arena_release(&line_arena);
    bool runner = member_is_runner(c);
    for (size_t k = c->first_call; k < c->n_calls; k++)
        c->calls[k].runner = runner;
    return rc;
}

/* ---- the archive ---- */

/* Decompresses member i into buf, counting against *budget. */
static int extract(struct pw_ctx *c, zip_t *za, zip_uint64_t i, struct atr_buf *buf,
                   size_t *budget)
{
    zip_file_t *f = zip_fopen_index(za, i, 0);
    if (!f)
        return atr_reader_fail(c->r, 0, 0, "%.100s: expected a readable archive member (%s)",
                               c->member, zip_strerror(za));
    char tmp[64 * 1024];
    zip_int64_t n;
    atr_buf_clear(buf);
    while ((n = zip_fread(f, tmp, sizeof tmp)) > 0) {
        if ((size_t)n > *budget) {
            zip_fclose(f);
            return atr_reader_fail(c->r, 0, 0,
                                   "%.100s: expected at most %zu uncompressed bytes in all members",
                                   c->member, max_bytes(c->r));
        }
        *budget -= (size_t)n;
        atr_buf_append(buf, tmp, (size_t)n);
    }
    if (n < 0) {
        atr_reader_fail(c->r, 0, 0, "%.100s: expected valid compressed data (%s)", c->member,
                        zip_file_strerror(f));
        zip_fclose(f);
        return -1;
    }
    zip_fclose(f);
    return 0;
}

/* A copy of a member name safe for a one-line message. */
static const char *printable(struct atr_arena *a, const char *name)
{
    char *s = atr_arena_strdup(a, name);
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return s;
}

static bool is_trace_member(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".trace") == 0;
}

/* Reads every *.trace member; returns how many, or -1. */
static long read_members(struct pw_ctx *c, zip_t *za)
{
    zip_int64_t n = zip_get_num_entries(za, 0);
    if (n > PW_MAX_ENTRIES)
        return atr_reader_fail(c->r, 0, 0, "expected at most %d archive entries, got %lld",
                               PW_MAX_ENTRIES, (long long)n);
    struct atr_buf buf = ATR_BUF_INIT;
    size_t budget = max_bytes(c->r);
    long members = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(za, (zip_uint64_t)i, 0);
        if (!name || !is_trace_member(name))
            continue;
        c->member = printable(&c->r->scratch, name);
        if (extract(c, za, (zip_uint64_t)i, &buf, &budget) < 0 ||
            read_member_lines(c, buf.data ? buf.data : "", buf.len) < 0) {
            atr_buf_release(&buf);
            return -1;
        }
        members++;
    }
    atr_buf_release(&buf);
    return members;
}

/* ---- steps ---- */

static int cmp_calls(const void *pa, const void *pb)
{
    const struct pw_call *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static const char *dup_or_null(struct atr_trace *t, const char *s)
{
    return s ? atr_arena_strdup(&t->arena, s) : NULL;
}

/* Appends key: s to object x unless s is NULL. */
static void put_str(struct atr_trace *t, struct atr_json *x, const char *key, const char *s)
{
    if (s)
        atr_json_append(&t->arena, x, key, atr_json_new_str(&t->arena, s, strlen(s)));
}

/* extra: the protocol class/method (a replayer's real call), the parent
 * step of runner steps, the name of the DOM snapshot taken before the
 * call (a name, no content: the replay reads the snapshot itself from the
 * archive, docs/browser.md), and the params with keep_content. */
static struct atr_json *call_extra(struct atr_trace *t, const struct pw_call *call)
{
    struct atr_json *x = atr_json_new(&t->arena, ATR_JSON_OBJECT);
    put_str(t, x, "class", call->klass);
    put_str(t, x, "method", call->method);
    put_str(t, x, "parent_id", call->parent_id);
    put_str(t, x, "snapshot", call->snapshot);
    if (call->params)
        atr_json_append(&t->arena, x, "params", atr_json_copy(&t->arena, call->params));
    return x->u.kids.count ? x : NULL;
}

static void add_step(struct atr_trace *t, const struct pw_call *call, double t0)
{
    struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
    s->tool = "browser";
    s->action = dup_or_null(t, call->action);
    s->selector = dup_or_null(t, call->selector);
    s->url = dup_or_null(t, call->url);
    s->t_ms = llround(call->start - t0);
    if (call->has_end) {
        s->dur_ms = call->end > call->start ? llround(call->end - call->start) : 0;
        s->exit_code = call->failed;
    }
    s->extra = call_extra(t, call);
}

/* Library calls, or the runner's when there are none, in start order. */
static void emit_steps(struct pw_ctx *c)
{
    bool have_library = false;
    for (size_t k = 0; k < c->n_calls; k++)
        have_library |= !c->calls[k].runner;
    size_t n = 0;
    for (size_t k = 0; k < c->n_calls; k++)
        if (c->calls[k].runner != have_library)
            c->calls[n++] = c->calls[k];
    if (n == 0)
        return;   /* an archive without calls is a trace without steps */
    qsort(c->calls, n, sizeof *c->calls, cmp_calls);
    /* v7+ names no snapshot in the call: its events say "phase":"before"
     * and the callId, which snapshot.h names "before@<callId>". */
    for (size_t k = 0; k < n && c->have_snapshots; k++)
        if (!c->calls[k].snapshot)
            c->calls[k].snapshot = atr_arena_printf(&c->r->scratch, "before@%s",
                                                    c->calls[k].call_id);
    for (size_t k = 0; k < n; k++)
        add_step(c->t, &c->calls[k], c->calls[0].start);
    atr_trace_meta_set_str(c->t, "steps_from", have_library ? "library" : "test-runner");
}

/* Opens the archive held in memory; NULL after failing. */
static zip_t *open_archive(struct atr_reader *r, const struct atr_buf *data)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data->data, data->len, 0, &ze);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY, &ze) : NULL;
    if (!za) {
        if (src)
            zip_source_free(src);
        if (zip_error_code_zip(&ze) == ZIP_ER_NOZIP)
            atr_reader_fail(r, 0, 0, "expected a zip archive (playwright trace.zip)");
        else
            atr_reader_fail(r, 0, 0, "expected a readable zip archive (%s)",
                            zip_error_strerror(&ze));
    }
    zip_error_fini(&ze);
    return za;
}

static int read_archive(struct atr_reader *r, struct atr_trace *t, zip_t *za)
{
    struct pw_ctx c = {.r = r, .t = t};
    char base[128];
    long members = read_members(&c, za);
    if (members < 0)
        return -1;
    if (members == 0)
        return atr_reader_fail(r, 0, 0, "expected a playwright *.trace member in the archive");
    reqlog_basename(atr_input_name(r->in), base, sizeof base);
    t->trace_id = atr_arena_printf(&t->arena, "playwright/%s", base);
    t->source = "playwright";
    t->start_ms = 0;
    t->block_size = r->opts.block_size ? r->opts.block_size : ATR_DEFAULT_BLOCK_SIZE;
    emit_steps(&c);
    return 1;
}

static int next(struct atr_reader *r, struct atr_trace *t)
{
    if (r->ntraces > 0)
        return 0;   /* one trace per archive */
    struct atr_buf data = ATR_BUF_INIT;
    if (atr_input_read_all(r->in, &data, max_bytes(r), &r->err) < 0) {
        atr_buf_release(&data);
        return -1;
    }
    if (data.len == 0) {
        atr_buf_release(&data);
        return atr_reader_fail(r, 0, 0,
                               "expected a zip archive (playwright trace.zip), got empty input");
    }
    zip_t *za = open_archive(r, &data);
    int rc = za ? read_archive(r, t, za) : -1;
    if (za)
        zip_discard(za);
    atr_buf_release(&data);
    return rc;
}

/* A zip whose first member is a trace file (or a resource of one). */
static int sniff(const char *head, size_t len, const char *name)
{
    if (len < 30 || memcmp(head, "PK\x03\x04", 4) != 0)
        return 0;
    size_t n = (unsigned char)head[26] | (size_t)(unsigned char)head[27] << 8;
    if (30 + n > len)
        n = len - 30;
    const char *first = head + 30;
    if ((n > 6 && memcmp(first + n - 6, ".trace", 6) == 0) ||
        (n > 8 && memcmp(first + n - 8, ".network", 8) == 0) ||
        (n > 7 && memcmp(first + n - 7, ".stacks", 7) == 0) ||
        (n > 10 && memcmp(first, "resources/", 10) == 0))
        return 95;
    return 60;   /* some other zip: no other reader takes zips */
}

const struct atr_format atr_format_playwright = {
    "playwright",
    "Playwright trace.zip (browser actions from *.trace before/after events)",
    sniff, next, NULL,
};
