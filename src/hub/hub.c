/* hub.c - the Hugging Face Hub's HTTP API over libcurl: one request with
 * its bounded retries (429 with Retry-After, 5xx, dropped connections),
 * the listing of a revision, and downloads that resume and verify. */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hub/hub.h"
#include "json/json.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/buf.h"

#define HUB_DEFAULT_ENDPOINT "https://huggingface.co"
/* A listing page or an error body; the Hub's pages of 1000 entries are
 * about 300 kB. */
#define HUB_BODY_MAX (64u << 20)
#define HUB_URL_MAX 4096
#define HUB_PAGES_MAX 100000

/* One request's state, reset before each try. */
struct xfer {
    CURL *h;
    struct atr_buf body;          /* JSON answers, and error bodies */
    FILE *out;                    /* downloads: the .part file, appended to */
    unsigned long long base;      /* bytes in out when the try started */
    unsigned long long got;       /* bytes this try wrote */
    unsigned long long moved;     /* bytes all tries wrote */
    unsigned long long total;     /* the file's size, for progress */
    long retry_after;             /* seconds; -1: none */
    char next[HUB_URL_MAX];       /* Link rel="next" of a listing page */
    char error_code[64];          /* X-Error-Code (RepoNotFound, GatedRepo, ...) */
    char error_msg[160];          /* X-Error-Message */
    bool write_failed;
    bool too_big;                 /* a JSON answer past HUB_BODY_MAX */
    const struct atr_hub_opts *o;
};

static long status_of(CURL *h)
{
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    return st;
}

/* A header value, trimmed, into out when line is "NAME: value". */
static bool header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return false;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v) < cap ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = 0;
    return true;
}

/* `Link: <URL>; rel="next"` (GitHub's form, which the Hub uses; other
 * links may come before it, comma-separated): the next page's URL into
 * x->next. */
static void parse_link(struct xfer *x, const char *v)
{
    for (const char *lt = strchr(v, '<'); lt; lt = strchr(lt + 1, '<')) {
        const char *gt = strchr(lt, '>');
        if (!gt)
            return;
        size_t params = strcspn(gt, "<");     /* up to the next link */
        const char *rel = strstr(gt, "rel=\"next\"");
        if (rel && rel < gt + params && (size_t)(gt - lt - 1) < sizeof x->next) {
            memcpy(x->next, lt + 1, (size_t)(gt - lt - 1));
            x->next[gt - lt - 1] = 0;
            return;
        }
    }
}

/* Each response of a redirect chain starts with its status line, which
 * resets what the one before said. */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct xfer *x = ctx;
    char v[HUB_URL_MAX + 64];
    n *= size;
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        x->retry_after = -1;
        x->next[0] = x->error_code[0] = x->error_msg[0] = 0;
    } else if (header_value(p, n, "retry-after", v, sizeof v)) {
        char *end;
        long s = strtol(v, &end, 10);
        x->retry_after = end != v && *end == 0 && s >= 0 ? s : -1;
    } else if (header_value(p, n, "link", v, sizeof v)) {
        parse_link(x, v);
    } else if (!header_value(p, n, "x-error-code", x->error_code, sizeof x->error_code)) {
        header_value(p, n, "x-error-message", x->error_msg, sizeof x->error_msg);
    }
    return n;
}

/* A server that ignored the Range header sends the whole file: start over. */
static bool restart_if_whole(struct xfer *x)
{
    if (x->got || !x->base || status_of(x->h) != 200)
        return true;
    if (fflush(x->out) != 0 || ftruncate(fileno(x->out), 0) != 0)
        return false;
    x->base = 0;
    return true;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct xfer *x = ctx;
    n *= size;
    if (!x->out || status_of(x->h) >= 300) {
        /* A download's error body is read for its message only: past the
         * cap it is dropped; a JSON answer past it fails. */
        if (atr_buf_append(&x->body, p, n) == 0 || x->out)
            return n;
        x->too_big = true;
        return 0;
    }
    if (!restart_if_whole(x) || fwrite(p, 1, n, x->out) != n) {
        x->write_failed = true;
        return 0;
    }
    x->got += n;
    x->moved += n;
    if (x->o->progress)
        x->o->progress(x->o->ctx, x->base + x->got, x->total);
    return n;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* What a failed try was, for the message and the caller's why. */
static int http_fail(struct xfer *x, const char *url, long st, enum atr_hub_fail *why,
                     struct atr_error *err)
{
    enum atr_hub_fail w = ATR_HUB_EOTHER;
    const char *what = "";
    if (st == 401 || st == 403)
        w = ATR_HUB_EAUTH, what = x->o->token ? ": the token was refused"
                                              : ": gated or private, and no token was given";
    if (st == 404 || strstr(x->error_code, "NotFound"))
        w = ATR_HUB_ENOTFOUND, what = ": no such dataset, revision or file";
    if (strcmp(x->error_code, "GatedRepo") == 0)
        w = ATR_HUB_EAUTH, what = x->o->token ? ": a gated dataset, and the token has no access"
                                              : ": a gated dataset, and no token was given";
    if (why)
        *why = w;
    return atr_error_set(err, "%s: HTTP %ld%s%s%s", url, st, what,
                         x->error_msg[0] ? ": " : "", x->error_msg);
}

/* Prepares try number `try`: empties the body, points a download's Range
 * at the end of what its .part file holds. */
static int try_begin(struct xfer *x, struct atr_error *err)
{
    atr_buf_clear(&x->body);
    x->got = 0;
    x->retry_after = -1;
    x->next[0] = x->error_code[0] = x->error_msg[0] = 0;
    x->write_failed = x->too_big = false;
    if (!x->out)
        return 0;
    if (fflush(x->out) != 0 || fseeko(x->out, 0, SEEK_END) != 0)
        return atr_error_set(err, "cannot write the download: %s", strerror(errno));
    x->base = (unsigned long long)ftello(x->out);
    char range[32];
    snprintf(range, sizeof range, "%llu-", x->base);
    curl_easy_setopt(x->h, CURLOPT_RANGE, x->base ? range : NULL);
    return 0;
}

/* Seconds to wait before try `try` + 1 after a failure without progress. */
static double backoff_s(const struct xfer *x, long st, unsigned try)
{
    if (st == 429 && x->retry_after >= 0)
        return (double)x->retry_after;
    double s = 0.25 * (double)(1u << (try < 10 ? try : 10));
    return s < x->o->max_wait_s ? s : x->o->max_wait_s;
}

static bool transient(CURLcode cc, long st)
{
    if (cc == CURLE_OK)
        return st == 429 || st == 500 || st == 502 || st == 503 || st == 504;
    return cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR ||
           cc == CURLE_GOT_NOTHING || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_COULDNT_CONNECT || cc == CURLE_HTTP2 || cc == CURLE_HTTP2_STREAM;
}

/* GET url into x with the retries of x->o. A try that moved bytes of a
 * download resets the count: a connection that drops now and then still
 * finishes, and each try resumes where the last one stopped. */
static int perform(struct xfer *x, const char *url, enum atr_hub_fail *why,
                   struct atr_error *err)
{
    curl_easy_setopt(x->h, CURLOPT_URL, url);
    for (unsigned try = 0;; try++) {
        if (try_begin(x, err) != 0)
            return -1;
        if (x->out && x->total && x->base >= x->total)
            return 0;            /* all bytes came before the connection dropped */
        CURLcode cc = curl_easy_perform(x->h);
        long st = status_of(x->h);
        if (x->write_failed)
            return atr_error_set(err, "cannot write the download: %s", strerror(errno));
        if (x->too_big)
            return atr_error_set(err, "%s: an answer of more than %u MB", url, HUB_BODY_MAX >> 20);
        if (cc == CURLE_OK && st < 300)
            return 0;
        if (cc == CURLE_OK && st == 416 && x->out && x->base) {
            /* The .part is not a prefix of this file (a changed revision): start over. */
            if (ftruncate(fileno(x->out), 0) != 0)
                return atr_error_set(err, "cannot write the download: %s", strerror(errno));
            continue;
        }
        if (x->got)
            try = 0;
        if (!transient(cc, st) || try >= x->o->retries) {
            if (cc != CURLE_OK) {
                if (why)
                    *why = ATR_HUB_EOTHER;
                return atr_error_set(err, "%s: %s%s", url, curl_easy_strerror(cc),
                                     try ? " (after retries)" : "");
            }
            return http_fail(x, url, st, why, err);
        }
        double wait = x->got ? 0 : backoff_s(x, st, try);
        if (wait > x->o->max_wait_s) {
            if (why)
                *why = ATR_HUB_EOTHER;
            return atr_error_set(err, "%s: HTTP 429: the server asks to wait %.0f s, "
                                 "more than %.0f s", url, wait, x->o->max_wait_s);
        }
        sleep_s(wait);
    }
}

static CURL *handle_new(struct xfer *x, const struct atr_hub_opts *o, struct curl_slist **hdr)
{
    memset(x, 0, sizeof *x);
    x->o = o;
    x->body.max = HUB_BODY_MAX;
    x->retry_after = -1;
    x->h = curl_easy_init();
    if (!x->h)
        return NULL;
    *hdr = NULL;
    if (o->token) {
        char *auth = xasprintf("Authorization: Bearer %s", o->token);
        *hdr = curl_slist_append(NULL, auth);
        free(auth);
    }
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, *hdr);
    /* libcurl sends this header to the first host only, never to the CDN
     * a redirect points at (whose URL is signed). */
    curl_easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(x->h, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->h, CURLOPT_USERAGENT, "atr/" ATR_VERSION);
    curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT, 30L);
    /* A stalled connection counts as dropped: under 1 byte/s for 60 s. */
    curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    return x->h;
}

static void handle_free(struct xfer *x, struct curl_slist *hdr)
{
    curl_easy_cleanup(x->h);
    curl_slist_free_all(hdr);
    atr_buf_release(&x->body);
}

/* Percent-encodes s into b; '/' stays when keep_slash (a file's path),
 * else becomes %2F (a revision like refs/convert/parquet). */
static void url_escape(struct atr_buf *b, const char *s, bool keep_slash)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c) || (c == '/' && keep_slash))
            atr_buf_putc(b, (char)c);
        else
            atr_buf_printf(b, "%%%02X", c);
    }
}

static const char *endpoint_of(const struct atr_hub_opts *o)
{
    return o->endpoint && *o->endpoint ? o->endpoint : HUB_DEFAULT_ENDPOINT;
}

/* ---- the listing ---- */

static bool is_hex(const char *s, size_t n)
{
    if (!s || strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

/* A path the server sent that could write outside -o DIR is refused. */
static bool path_safe(const char *p)
{
    if (!*p || *p == '/' || strstr(p, "//") || p[strlen(p) - 1] == '/')
        return false;
    for (const char *c = p; c; c = strchr(c, '/')) {
        c += *c == '/';
        if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || !c[2]))
            return false;
        if (c[0] == '.' && (c[1] == '/' || !c[1]))
            return false;
    }
    return true;
}

static int parse_json(struct atr_arena *a, const char *body, size_t len, const char *url,
                      struct atr_json **out, struct atr_error *err)
{
    struct atr_json_err je;
    struct atr_json_opts jo = {.max_values = 16u << 20};
    if (atr_json_parse(a, body ? body : "", len, &jo, out, &je) != 0)
        return atr_error_set(err, "%s: %u:%u: %s", url, je.line, je.col, je.msg);
    return 0;
}

/* One entry of a tree page into r (a file), or nothing (a directory). */
static int add_entry(struct atr_hub_repo *r, const struct atr_json *e, const char *url,
                     struct atr_error *err)
{
    const char *type = atr_json_get_str(e, "type", NULL);
    const char *path = atr_json_get_str(e, "path", NULL);
    int64_t size;
    if (type && strcmp(type, "directory") == 0)
        return 0;
    if (!type || strcmp(type, "file") != 0 || !path || !atr_json_get_i64(e, "size", &size) ||
        size < 0)
        return atr_error_set(err, "%s: %u:%u: expected a file with \"path\" and \"size\"", url,
                             e->line, e->col);
    if (!path_safe(path))
        return atr_error_set(err, "%s: %u:%u: unsafe file path '%s'", url, e->line, e->col,
                             path);
    const char *oid = atr_json_get_str(e, "oid", NULL);
    const char *sha = atr_json_get_str(atr_json_get(e, "lfs"), "oid", NULL);
    if ((sha && !is_hex(sha, 64)) || (!sha && !is_hex(oid, 40)))
        return atr_error_set(err, "%s: %u:%u: expected a sha1 \"oid\" or an lfs sha256 for %s",
                             url, e->line, e->col, path);
    if (r->n == 0 || (r->n >= 64 && !(r->n & (r->n - 1))))     /* full: 64, 128, ... */
        r->files = xreallocarray(r->files, r->n ? r->n * 2 : 64, sizeof *r->files);
    struct atr_hub_file *f = &r->files[r->n++];
    memset(f, 0, sizeof *f);
    f->path = xstrdup(path);
    f->size = (unsigned long long)size;
    snprintf(f->sha256, sizeof f->sha256, "%s", sha ? sha : "");
    snprintf(f->oid, sizeof f->oid, "%s", is_hex(oid, 40) ? oid : "");
    return 0;
}

int atr_hub_parse_tree(struct atr_hub_repo *r, const char *body, size_t len, const char *url,
                       struct atr_error *err)
{
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *doc;
    int rc = parse_json(&a, body, len, url, &doc, err);
    if (rc == 0 && !atr_json_is(doc, ATR_JSON_ARRAY))
        rc = atr_error_set(err, "%s: expected an array of files", url);
    for (struct atr_json *e = rc == 0 ? doc->u.kids.first : NULL; e && rc == 0; e = e->next)
        rc = add_entry(r, e, url, err);
    atr_arena_release(&a);
    return rc;
}

int atr_hub_parse_revision(struct atr_hub_repo *r, const char *body, size_t len,
                           const char *url, struct atr_error *err)
{
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *doc;
    int rc = parse_json(&a, body, len, url, &doc, err);
    const char *sha = rc == 0 ? atr_json_get_str(doc, "sha", NULL) : NULL;
    if (rc == 0 && !is_hex(sha, 40))
        rc = atr_error_set(err, "%s: expected a commit \"sha\" of 40 hex digits", url);
    if (rc == 0) {
        free(r->commit);
        r->commit = xstrdup(sha);
    }
    atr_arena_release(&a);
    return rc;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const struct atr_hub_file *)a)->path, ((const struct atr_hub_file *)b)->path);
}

static int list_pages(struct atr_hub_repo *r, struct xfer *x, const char *repo,
                      enum atr_hub_fail *why, struct atr_error *err)
{
    struct atr_buf url = ATR_BUF_INIT;
    atr_buf_printf(&url, "%s/api/datasets/%s/tree/%s?recursive=true", endpoint_of(x->o), repo,
                   r->commit);
    int rc = 0;
    for (unsigned page = 0; rc == 0 && url.len; page++) {
        if (page == HUB_PAGES_MAX) {
            rc = atr_error_set(err, "%s: more than %u pages of files", url.data, page);
            break;
        }
        rc = perform(x, url.data, why, err);
        if (rc == 0)
            rc = atr_hub_parse_tree(r, x->body.data, x->body.len, url.data, err);
        atr_buf_clear(&url);
        if (rc == 0 && x->next[0])
            atr_buf_puts(&url, x->next);
    }
    atr_buf_release(&url);
    return rc;
}

int atr_hub_list(const struct atr_hub_opts *o, const char *repo, const char *rev,
                 struct atr_hub_repo *out, enum atr_hub_fail *why, struct atr_error *err)
{
    struct xfer x;
    struct curl_slist *hdr;
    memset(out, 0, sizeof *out);
    if (why)
        *why = ATR_HUB_EOTHER;
    if (!handle_new(&x, o, &hdr))
        return atr_error_set(err, "cannot start libcurl");
    struct atr_buf url = ATR_BUF_INIT;
    atr_buf_printf(&url, "%s/api/datasets/%s/revision/", endpoint_of(o), repo);
    url_escape(&url, rev, false);
    int rc = perform(&x, url.data, why, err);
    if (rc == 0)
        rc = atr_hub_parse_revision(out, x.body.data, x.body.len, url.data, err);
    if (rc == 0)
        rc = list_pages(out, &x, repo, why, err);
    atr_buf_release(&url);
    handle_free(&x, hdr);
    if (rc != 0) {
        atr_hub_repo_release(out);
        return -1;
    }
    qsort(out->files, out->n, sizeof *out->files, cmp_path);
    if (why)
        *why = ATR_HUB_OK;
    return 0;
}

void atr_hub_repo_release(struct atr_hub_repo *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->files[i].path);
    free(r->files);
    free(r->commit);
    memset(r, 0, sizeof *r);
}

/* ---- downloads ---- */

/* The hex digest of the file at path: sha256 of its bytes for an LFS
 * file, else git's blob sha1 ("blob SIZE\0" then the bytes). */
static int digest_file(const struct atr_hub_file *f, const char *path, char *hex,
                       struct atr_error *err)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    bool lfs = f->sha256[0] != 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, lfs ? EVP_sha256() : EVP_sha1(), NULL);
    if (!lfs) {
        char head[40];
        int n = snprintf(head, sizeof head, "blob %llu", f->size);
        EVP_DigestUpdate(md, head, (size_t)n + 1);
    }
    enum { CHUNK = 1 << 16 };
    char *chunk = xmalloc(CHUNK);
    size_t n;
    while ((n = fread(chunk, 1, CHUNK, in)) > 0)
        EVP_DigestUpdate(md, chunk, n);
    free(chunk);
    int rc = ferror(in) ? atr_error_set(err, "%s: %s", path, strerror(errno)) : 0;
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(md, d, &len);
    EVP_MD_CTX_free(md);
    fclose(in);
    for (unsigned i = 0; i < len; i++)
        sprintf(hex + 2 * i, "%02x", d[i]);
    hex[2 * len] = 0;
    return rc;
}

static unsigned long long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (unsigned long long)st.st_size : ~0ull;
}

/* Size and checksum of the finished download at part; a wrong one removes it. */
static int verify(const struct atr_hub_file *f, const char *part, enum atr_hub_fail *why,
                  struct atr_error *err)
{
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    const char *want = f->sha256[0] ? f->sha256 : f->oid;
    unsigned long long got = size_of(part);
    int rc = 0;
    if (got != f->size)
        rc = atr_error_set(err, "%s: %llu bytes, the listing says %llu: the download is "
                           "corrupt (removed)", f->path, got, f->size);
    else if (digest_file(f, part, hex, err) != 0)
        return -1;
    else if (want[0] && strcmp(hex, want) != 0)
        rc = atr_error_set(err, "%s: %s is %s, the listing says %s: the download is corrupt "
                           "(removed)", f->path, f->sha256[0] ? "sha256" : "git sha1", hex, want);
    if (rc != 0) {
        unlink(part);
        if (why)
            *why = ATR_HUB_ECHECK;
    }
    return rc;
}

bool atr_hub_file_ok(const struct atr_hub_file *f, const char *path)
{
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    const char *want = f->sha256[0] ? f->sha256 : f->oid;
    return size_of(path) == f->size && digest_file(f, path, hex, NULL) == 0 &&
           (!want[0] || strcmp(hex, want) == 0);
}

static int fetch_part(struct xfer *x, const char *repo, const char *commit,
                      const struct atr_hub_file *f, const char *part, enum atr_hub_fail *why,
                      struct atr_error *err)
{
    x->out = fopen(part, "ab");
    if (!x->out)
        return atr_error_set(err, "%s: %s", part, strerror(errno));
    if (size_of(part) > f->size && ftruncate(fileno(x->out), 0) != 0) {
        fclose(x->out);
        return atr_error_set(err, "%s: %s", part, strerror(errno));
    }
    x->total = f->size;
    struct atr_buf url = ATR_BUF_INIT;
    atr_buf_printf(&url, "%s/datasets/%s/resolve/%s/", endpoint_of(x->o), repo, commit);
    url_escape(&url, f->path, true);
    int rc = perform(x, url.data, why, err);
    atr_buf_release(&url);
    if (fclose(x->out) != 0 && rc == 0)
        rc = atr_error_set(err, "%s: %s", part, strerror(errno));
    x->out = NULL;
    return rc;
}

int atr_hub_download(const struct atr_hub_opts *o, const char *repo, const char *commit,
                     const struct atr_hub_file *f, const char *dest,
                     unsigned long long *bytes, enum atr_hub_fail *why,
                     struct atr_error *err)
{
    struct xfer x;
    struct curl_slist *hdr;
    if (why)
        *why = ATR_HUB_EOTHER;
    if (!handle_new(&x, o, &hdr))
        return atr_error_set(err, "cannot start libcurl");
    char *part = xasprintf("%s.part", dest);
    int rc = fetch_part(&x, repo, commit, f, part, why, err);
    if (bytes)
        *bytes = x.moved;
    if (rc == 0)
        rc = verify(f, part, why, err);
    if (rc == 0 && rename(part, dest) != 0)
        rc = atr_error_set(err, "%s: %s", dest, strerror(errno));
    if (rc == 0 && why)
        *why = ATR_HUB_OK;
    free(part);
    handle_free(&x, hdr);
    return rc;
}

/* ---- selection ---- */

bool atr_hub_in_split(const char *path, const char *split)
{
    size_t k = strlen(split);
    for (const char *c = path; c; c = strchr(c, '/')) {
        c += *c == '/';
        if (strncmp(c, split, k) == 0 && (c[k] == 0 || strchr("/-_.", c[k])))
            return true;
    }
    return false;
}
