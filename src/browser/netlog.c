/* netlog.c - the recorded network of netlog.h: *.network members of a
 * Playwright trace zip parsed into entries, bodies read on demand. */
#include "browser/netlog.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "browser/snapshot.h"
#include "json/json.h"
#include "util/alloc.h"
#include "util/arena.h"

/* Caps against a zip bomb: all *.network text, and one body. */
#define NETLOG_MAX_TEXT ((size_t)512 << 20)
#define NETLOG_MAX_BODY ((size_t)256 << 20)

struct atr_netlog {
    zip_t *za;
    char *path;
    struct atr_arena arena;      /* entries' strings and headers */
    struct atr_net_entry *v;
    size_t n, cap;
    struct atr_snapshots *snaps;  /* frame-snapshot events of the *.trace members */
};

size_t atr_netlog_count(const struct atr_netlog *nl) { return nl->n; }
struct atr_snapshots *atr_netlog_snapshots(struct atr_netlog *nl) { return nl->snaps; }

void atr_netlog_free(struct atr_netlog *nl)
{
    if (!nl)
        return;
    if (nl->za)
        zip_discard(nl->za);
    free(nl->path);
    free(nl->v);
    atr_snapshots_free(nl->snaps);
    atr_arena_release(&nl->arena);
    free(nl);
}

/* Reads member i whole into out, at most cap bytes. */
static int read_member(struct atr_netlog *nl, zip_int64_t i, const char *name,
                       struct atr_buf *out, size_t cap, struct atr_error *err)
{
    zip_file_t *f = zip_fopen_index(nl->za, (zip_uint64_t)i, 0);
    if (!f)
        return atr_error_set(err, "%s: %s: %s", nl->path, name, zip_strerror(nl->za));
    char chunk[65536];
    zip_int64_t n;
    atr_buf_clear(out);
    while ((n = zip_fread(f, chunk, sizeof chunk)) > 0) {
        if ((size_t)n > cap - out->len) {
            zip_fclose(f);
            return atr_error_set(err, "%s: %s: expected at most %zu bytes", nl->path, name, cap);
        }
        atr_buf_append(out, chunk, (size_t)n);
    }
    int rc = 0;
    if (n < 0)
        rc = atr_error_set(err, "%s: %s: expected valid compressed data (%s)", nl->path, name,
                           zip_file_strerror(f));
    zip_fclose(f);
    return rc;
}

static const char *dup_str(struct atr_netlog *nl, const struct atr_json *o, const char *key)
{
    size_t len;
    const char *s = atr_json_get_str(o, key, &len);
    return s ? atr_arena_strndup(&nl->arena, s, len) : NULL;
}

static void add_headers(struct atr_netlog *nl, struct atr_net_entry *e, const struct atr_json *hs)
{
    if (!atr_json_is(hs, ATR_JSON_ARRAY) || !hs->u.kids.count)
        return;
    e->headers = atr_arena_calloc(&nl->arena, hs->u.kids.count, sizeof *e->headers);
    for (const struct atr_json *h = hs->u.kids.first; h; h = h->next) {
        const char *name = dup_str(nl, h, "name"), *value = dup_str(nl, h, "value");
        if (name && value)
            e->headers[e->n_headers++] = (struct atr_net_header){name, value};
    }
}

/* One resource-snapshot's HAR entry; lines of other types are skipped. */
static void add_entry(struct atr_netlog *nl, const struct atr_json *line)
{
    const char *type = atr_json_get_str(line, "type", NULL);
    const struct atr_json *snap = atr_json_get(line, "snapshot");
    const struct atr_json *req = atr_json_get(snap, "request");
    const struct atr_json *resp = atr_json_get(snap, "response");
    if (!type || strcmp(type, "resource-snapshot") != 0 || !req || !resp)
        return;
    const char *method = dup_str(nl, req, "method"), *url = dup_str(nl, req, "url");
    int64_t status;
    if (!method || !url || !atr_json_get_i64(resp, "status", &status))
        return;
    if (nl->n == nl->cap) {
        nl->cap = nl->cap ? 2 * nl->cap : 32;
        nl->v = xrealloc(nl->v, nl->cap * sizeof *nl->v);
    }
    struct atr_net_entry *e = &nl->v[nl->n++];
    memset(e, 0, sizeof *e);
    e->method = method;
    char *hash = strchr(url, '#');
    if (hash)
        *hash = '\0';
    e->url = url;
    e->status = (int)status;
    e->status_text = dup_str(nl, resp, "statusText");
    add_headers(nl, e, atr_json_get(resp, "headers"));
    const struct atr_json *content = atr_json_get(resp, "content");
    /* The blob: "_sha1" (v4-v7), "_file" (later, with or without the
     * folder). */
    const char *sha1 = atr_json_get_str(content, "_sha1", NULL);
    const char *file = atr_json_get_str(content, "_file", NULL);
    if (sha1)
        e->resource = atr_arena_printf(&nl->arena, "resources/%s", sha1);
    else if (file)
        e->resource = strncmp(file, "resources/", 10) == 0
                          ? atr_arena_strdup(&nl->arena, file)
                          : atr_arena_printf(&nl->arena, "resources/%s", file);
    size_t tlen;
    const char *text = atr_json_get_str(content, "text", &tlen);
    if (text) {
        e->text = atr_arena_strndup(&nl->arena, text, tlen);
        e->text_len = tlen;
    }
}

/* A *.trace member's line: its frame-snapshot events are kept. */
static int trace_line(struct atr_netlog *nl, const char *text, size_t len,
                      struct atr_json_err *jerr)
{
    return atr_snapshots_add_line(nl->snaps, text, len, jerr);
}

/* A *.network member's line, parsed in a. */
static int network_line(struct atr_netlog *nl, struct atr_arena *a, const char *text, size_t len,
                        struct atr_json_err *jerr)
{
    struct atr_json *line;
    if (atr_json_parse(a, text, len, NULL, &line, jerr) < 0)
        return -1;
    add_entry(nl, line);
    return 0;
}

/* Every line of a *.network (or, is_trace, a *.trace) member. */
static int parse_member(struct atr_netlog *nl, const char *name, const struct atr_buf *b,
                        bool is_trace, struct atr_error *err)
{
    struct atr_arena a = ATR_ARENA_INIT;
    unsigned long lineno = 0;
    int rc = 0;
    for (size_t pos = 0; pos < b->len && rc == 0;) {
        const char *nl_at = memchr(b->data + pos, '\n', b->len - pos);
        size_t end = nl_at ? (size_t)(nl_at - b->data) : b->len;
        lineno++;
        struct atr_json_err jerr;
        if (end > pos) {
            const char *text = b->data + pos;
            int lrc = is_trace ? trace_line(nl, text, end - pos, &jerr)
                               : network_line(nl, &a, text, end - pos, &jerr);
            if (lrc < 0)
                rc = atr_error_set(err, "%s: %s:%lu:%u: %s", nl->path, name, lineno,
                                   (unsigned)jerr.col, jerr.msg);
            atr_arena_clear(&a);
        }
        pos = end + 1;
    }
    atr_arena_release(&a);
    return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

struct atr_netlog *atr_netlog_open(const char *path, struct atr_error *err)
{
    struct atr_netlog *nl = xcalloc(1, sizeof *nl);
    nl->path = xstrdup(path);
    nl->snaps = atr_snapshots_new();
    int zerr = 0;
    nl->za = zip_open(path, ZIP_RDONLY, &zerr);
    if (!nl->za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        atr_error_set(err, "%s: expected a Playwright trace zip (%s)", path,
                      zip_error_strerror(&ze));
        zip_error_fini(&ze);
        atr_netlog_free(nl);
        return NULL;
    }
    struct atr_buf b = ATR_BUF_INIT;
    size_t budget = NETLOG_MAX_TEXT;
    zip_int64_t n = zip_get_num_entries(nl->za, 0);
    int rc = 0;
    for (zip_int64_t i = 0; i < n && rc == 0; i++) {
        const char *name = zip_get_name(nl->za, (zip_uint64_t)i, 0);
        bool is_trace = name && ends_with(name, ".trace");
        if (!name || (!is_trace && !ends_with(name, ".network")))
            continue;
        rc = read_member(nl, i, name, &b, budget, err);
        if (rc == 0) {
            budget -= b.len;
            rc = parse_member(nl, name, &b, is_trace, err);
        }
    }
    atr_buf_release(&b);
    if (rc < 0) {
        atr_netlog_free(nl);
        return NULL;
    }
    return nl;
}

/* Does url, up to its fragment, equal want (which has none)? */
static bool same_url(const char *url, const char *want)
{
    size_t n = strcspn(url, "#");
    return strlen(want) == n && strncmp(url, want, n) == 0;
}

struct atr_net_entry *atr_netlog_find(struct atr_netlog *nl, const char *method, const char *url)
{
    struct atr_net_entry *last = NULL;
    for (size_t i = 0; i < nl->n; i++) {
        struct atr_net_entry *e = &nl->v[i];
        if (strcmp(e->method, method) != 0 || !same_url(url, e->url))
            continue;
        if (e->served == 0)
            return e;
        last = e;
    }
    return last;
}

int atr_netlog_body(struct atr_netlog *nl, const struct atr_net_entry *e, struct atr_buf *out,
                    struct atr_error *err)
{
    atr_buf_clear(out);
    if (!e->resource) {
        if (e->text)
            atr_buf_append(out, e->text, e->text_len);
        return 0;
    }
    zip_int64_t i = zip_name_locate(nl->za, e->resource, 0);
    if (i < 0)
        return atr_error_set(err, "%s: %s is not in the archive", nl->path, e->resource);
    return read_member(nl, i, e->resource, out, NETLOG_MAX_BODY, err);
}

void atr_base64_append(struct atr_buf *out, const void *data, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    atr_buf_reserve(out, (len + 2) / 3 * 4 + 1);
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        char q[4] = {tab[v >> 18], tab[v >> 12 & 63], tab[v >> 6 & 63], tab[v & 63]};
        atr_buf_append(out, q, 4);
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        char q[4] = {tab[v >> 18], tab[v >> 12 & 63], i + 1 < len ? tab[v >> 6 & 63] : '=', '='};
        atr_buf_append(out, q, 4);
    }
}
