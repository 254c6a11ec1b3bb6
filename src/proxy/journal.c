/* journal.c - the proxy's recording journal: one atr-trace line per request,
 * appended whole, synced on an interval, rotated by size (see journal.h). */
#include "proxy/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/json.h"
#include "json/writer.h"
#include "trace/convo.h"
#include "trace/otlp.h"
#include "trace/reader.h"
#include "trace/tokens.h"
#include "trace/trace.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/input.h"

struct atr_journal {
    int fd;
    char *path;
    struct atr_journal_cfg cfg;
    uint64_t size;             /* bytes in the current file (we are its one writer) */
    uint64_t cut;              /* bytes of a cut last line removed at open */
    bool dirty;                /* appended since the last sync */
    double last_sync;          /* CLOCK_MONOTONIC seconds; < 0: no tick yet */
    bool failed;               /* kept: the first sync or rotation failure */
    struct atr_error kept;
    struct atr_buf line;       /* the line being appended, reused */
    struct atr_buf otlp;       /* cfg.otlp: the line as OTLP/JSON, reused */
};

/* ---- the line -------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (a byte >= 0x80, n bytes left),
 * or 0: the JSON reader's rules (no overlongs, no surrogates, nothing past
 * U+10FFFF), so that what is written here is what it accepts. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4;
    else
        return 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* Offset of the first byte of s[0..len) that starts no valid UTF-8
 * character, or len. */
static size_t utf8_valid_prefix(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n;
    while (i < len) {
        if (p[i] < 0x80)
            i++;
        else if ((n = utf8_len(p + i, len - i)) != 0)
            i += n;
        else
            break;
    }
    return i;
}

void atr_journal_clean_text(struct atr_buf *out, const char *s, size_t len)
{
    size_t ok = utf8_valid_prefix(s, len);
    while (len) {
        atr_buf_append(out, s, ok);
        if (ok == len)
            break;
        atr_buf_append(out, "\xef\xbf\xbd", 3);
        s += ok + 1;
        len -= ok + 1;
        ok = utf8_valid_prefix(s, len);
    }
}

/* s[0..len) as a JSON string (NULs and control bytes escaped by the
 * writer), each byte that starts no valid UTF-8 character written as
 * U+FFFD; tmp is scratch. s NULL: null. */
static void put_text(struct atr_jw *w, struct atr_buf *tmp, const char *s, size_t len)
{
    if (!s) {
        atr_jw_null(w);
        return;
    }
    if (utf8_valid_prefix(s, len) == len) {
        atr_jw_strn(w, s, len);
        return;
    }
    atr_buf_clear(tmp);
    atr_journal_clean_text(tmp, s, len);
    atr_jw_strn(w, tmp->data ? tmp->data : "", tmp->len);
}

static void kv_text(struct atr_jw *w, struct atr_buf *tmp, const char *key, const char *s)
{
    atr_jw_key(w, key);
    put_text(w, tmp, s, s ? strlen(s) : 0);
}

/* Seconds as milliseconds to the microsecond ("312.5"); < 0 (not reached)
 * or not finite: null. */
static void kv_ms(struct atr_jw *w, const char *key, double s, bool known)
{
    if (known && s >= 0)
        atr_jw_kv_fixed_trim(w, key, s * 1000.0, 3);
    else
        atr_jw_kv_null(w, key);
}

static void kv_count(struct atr_jw *w, const char *key, int64_t v)
{
    if (v >= 0)
        atr_jw_kv_int(w, key, v);
    else
        atr_jw_kv_null(w, key);
}

static int64_t whole_ms(double s)
{
    return isfinite(s) && s > 0 ? (int64_t)llround(s * 1000.0) : 0;
}

/* The line's trace id, "proxy/SESSION/TURN", as the journal writes it
 * (cleaned, so the ids fitted from it are those a reader would fit). */
static void trace_id_text(struct atr_buf *out, const struct atr_proxy_record *r)
{
    struct atr_buf id = ATR_BUF_INIT;
    atr_buf_printf(&id, "proxy/%s/%llu", r->session ? r->session : "",
                   (unsigned long long)r->turn);
    atr_journal_clean_text(out, id.data, id.len);
    atr_buf_release(&id);
}

static void put_itl(struct atr_jw *w, const struct atr_proxy_record *r)
{
    bool any = r->n_itl > 0;
    atr_jw_key(w, "itl_ms");
    atr_jw_object_begin(w);
    kv_ms(w, "mean", r->itl_mean_s, any);
    kv_ms(w, "p50", r->itl_p50_s, any);
    kv_ms(w, "p99", r->itl_p99_s, any);
    kv_ms(w, "max", r->itl_max_s, any);
    atr_jw_kv_uint(w, "n", r->n_itl);
    atr_jw_object_end(w);
}

/* Everything about the request that the step's fields do not say; every
 * key is always there (null when unknown), so consumers need no guessing. */
static void put_meta(struct atr_jw *w, struct atr_buf *tmp, const struct atr_proxy_record *r)
{
    atr_jw_key(w, "meta");
    atr_jw_object_begin(w);
    kv_text(w, tmp, "session", r->session ? r->session : "");
    kv_text(w, tmp, "session_source", r->session_source);
    atr_jw_kv_uint(w, "turn", r->turn);
    kv_text(w, tmp, "api", r->api);
    kv_text(w, tmp, "model", r->model);
    atr_jw_kv_bool(w, "stream", r->stream);
    atr_jw_kv_int(w, "status", r->status);
    kv_text(w, tmp, "error", r->error);
    atr_jw_kv_uint(w, "upstream", r->upstream);
    kv_text(w, tmp, "upstream_url", r->upstream_url);
    kv_text(w, tmp, "policy", r->policy);
    atr_jw_kv_uint(w, "max_tokens_cap", r->max_tokens_cap);
    atr_jw_kv_uint(w, "retries", r->retries);
    kv_ms(w, "ttft_ms", r->ttft_s, true);
    put_itl(w, r);
    atr_jw_kv_uint(w, "chunks", r->n_chunks);
    atr_jw_kv_uint(w, "est_prompt_tokens", r->est_prompt_tokens);
    kv_count(w, "cached_tokens", r->cached_tokens);
    atr_jw_object_end(w);
}

/* The prompt as the proxy kept it: one rendered text, one message. */
static void put_content(struct atr_jw *w, struct atr_buf *tmp, const struct atr_proxy_record *r)
{
    if (r->prompt_text) {
        atr_jw_key(w, "messages");
        atr_jw_array_begin(w);
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "role", "prompt");
        atr_jw_key(w, "content");
        put_text(w, tmp, r->prompt_text, r->prompt_len);
        atr_jw_object_end(w);
        atr_jw_array_end(w);
    }
    if (r->completion_text) {
        atr_jw_key(w, "output");
        put_text(w, tmp, r->completion_text, r->completion_len);
    }
}

/* The step's counts and ids: with the upstream's usage, its figures
 * ("recorded", atr's estimate beside) and ids fitted to the recorded
 * length by the readers' rule for one request (convo.h: the estimated ids
 * as far as they go, ids unique to the request past them); without, the
 * estimate and its ids. */
struct step_counts {
    bool in_recorded;
    const char *from, *out_from;
    const uint64_t *ids;
    uint32_t n_ids;
    uint64_t *fitted;          /* malloc'd ids when in_recorded, else NULL */
};

static void step_counts(struct step_counts *c, const struct atr_proxy_record *r,
                        const char *trace_id, uint32_t bs)
{
    c->in_recorded = r->prompt_tokens >= 0 && r->prompt_tokens <= ATR_FIT_MAX_TOKENS;
    c->from = c->in_recorded ? ATR_TOKENS_RECORDED : ATR_TOKENS_ESTIMATED;
    c->out_from = !c->in_recorded && r->output_tokens >= 0 ? ATR_TOKENS_RECORDED : NULL;
    c->ids = r->n_block_ids ? r->block_ids : NULL;
    c->n_ids = (uint32_t)r->n_block_ids;
    c->fitted = NULL;
    if (!c->in_recorded)
        return;
    uint32_t want = atr_fit_ids_count((uint64_t)r->prompt_tokens, bs);
    c->fitted = xmalloc((want ? want : 1) * sizeof *c->fitted);
    atr_fit_ids_fill(c->fitted, want, r->block_ids, c->n_ids, trace_id, 0);
    c->ids = c->fitted;
    c->n_ids = want;
}

/* The one llm step, its fields in the order src/trace/writer.c writes
 * them, so `atr convert` gives a journal line back unchanged. */
static void put_step(struct atr_jw *w, struct atr_buf *tmp, const struct atr_proxy_record *r,
                     const struct step_counts *c)
{
    atr_jw_key(w, "steps");
    atr_jw_array_begin(w);
    atr_jw_object_begin(w);
    atr_jw_kv_uint(w, "i", 0);
    atr_jw_kv_str(w, "kind", "llm");
    atr_jw_kv_int(w, "t_ms", 0);
    if (isfinite(r->e2e_s) && r->e2e_s >= 0)
        atr_jw_kv_int(w, "dur_ms", whole_ms(r->e2e_s));
    if (c->in_recorded)
        atr_jw_kv_int(w, "input_tokens", r->prompt_tokens);
    else
        atr_jw_kv_uint(w, "input_tokens", r->est_prompt_tokens);
    if (r->output_tokens >= 0)
        atr_jw_kv_int(w, "output_tokens", r->output_tokens);
    if (r->cached_tokens >= 0)
        atr_jw_kv_int(w, "cached_tokens", r->cached_tokens);
    atr_jw_kv_str(w, "tokens_from", c->from);
    if (c->out_from)
        atr_jw_kv_str(w, "output_tokens_from", c->out_from);
    if (c->in_recorded)
        atr_jw_kv_uint(w, "estimated_input_tokens", r->est_prompt_tokens);
    atr_jw_key(w, "hash_ids");
    atr_jw_uint_array(w, c->ids, c->n_ids);
    put_content(w, tmp, r);
    atr_jw_object_end(w);
    atr_jw_array_end(w);
}

/* The format's invariant: ceil(input_tokens / block_size) ids, 53-bit. */
static bool ids_fit(const struct atr_proxy_record *r, uint32_t bs)
{
    if (!r->n_block_ids)
        return true;
    if (!r->block_ids || r->n_block_ids != (r->est_prompt_tokens + bs - 1) / bs)
        return false;
    for (size_t k = 0; k < r->n_block_ids; k++)
        if (r->block_ids[k] > ATR_HASH_ID_MASK)
            return false;
    return true;
}

int atr_journal_format(struct atr_buf *b, const struct atr_proxy_record *r)
{
    uint32_t bs = r->block_size ? r->block_size : ATR_DEFAULT_BLOCK_SIZE;
    if (!ids_fit(r, bs))
        return -1;
    struct atr_buf tmp = ATR_BUF_INIT, id = ATR_BUF_INIT;
    trace_id_text(&id, r);
    struct step_counts c;
    step_counts(&c, r, id.data, bs);
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "format", ATR_TRACE_FORMAT);
    atr_jw_key(&w, "trace_id");
    atr_jw_strn(&w, id.data, id.len);
    atr_jw_kv_str(&w, "source", "atr-proxy");
    atr_jw_kv_int(&w, "start_ms", whole_ms(r->start_unix));
    atr_jw_kv_uint(&w, "block_size", bs);
    put_meta(&w, &tmp, r);
    put_step(&w, &tmp, r, &c);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    free(c.fitted);
    atr_buf_release(&id);
    atr_buf_release(&tmp);
    return atr_jw_finish(&w);
}

/* ---- the file -------------------------------------------------------- */

/* Keeps the first sync or rotation failure for atr_journal_status/close. */
static void keep_failure(struct atr_journal *j, const char *what, int e)
{
    if (!j->failed)
        atr_error_set(&j->kept, "%s: %s: %s", j->path, what, strerror(e));
    j->failed = true;
}

static void sync_now(struct atr_journal *j)
{
    if (fdatasync(j->fd) < 0)
        keep_failure(j, "fdatasync", errno);
    j->dirty = false;
}

/* Offset just past the last '\n' in fd[0..size), or 0 when there is none. */
static int last_line_end(int fd, uint64_t size, uint64_t *end)
{
    char chunk[4096];
    uint64_t pos = size;
    while (pos > 0) {
        size_t n = pos < sizeof chunk ? (size_t)pos : sizeof chunk;
        pos -= n;
        ssize_t got = pread(fd, chunk, n, (off_t)pos);
        if (got != (ssize_t)n)
            return -1;
        for (size_t i = n; i-- > 0;)
            if (chunk[i] == '\n') {
                *end = pos + i + 1;
                return 0;
            }
    }
    *end = 0;
    return 0;
}

/* A writer killed between the parts of a line leaves it cut, without its
 * '\n' (journal.h): remove it, so that every line of the file is whole. */
static int cut_torn_tail(struct atr_journal *j, struct atr_error *err)
{
    uint64_t end;
    if (j->size == 0)
        return 0;
    if (last_line_end(j->fd, j->size, &end) < 0)
        return atr_error_set(err, "%s: read: %s", j->path, errno ? strerror(errno) : "short read");
    if (end == j->size)
        return 0;
    if (ftruncate(j->fd, (off_t)end) < 0)
        return atr_error_set(err, "%s: cutting a torn last line: %s", j->path, strerror(errno));
    j->cut = j->size - end;
    j->size = end;
    return 0;
}

static int open_file(struct atr_journal *j, struct atr_error *err)
{
    int fd = open(j->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return atr_error_set(err, "%s: %s", j->path, strerror(errno));
    struct stat st;
    const char *why = fstat(fd, &st) < 0 ? strerror(errno)
                      : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
    if (why) {
        close(fd);
        return atr_error_set(err, "%s: %s", j->path, why);
    }
    j->fd = fd;
    j->size = (uint64_t)st.st_size;
    return 0;
}

/* Makes the renames of a rotation durable; best effort. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xasprintf("%.*s", (int)(slash - path + 1), path) : xstrdup(".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* PATH.k-1 -> PATH.k down to PATH -> PATH.1, then a new PATH. The open
 * descriptor follows its file through the rename, so until the new file
 * is open every line still lands in a kept file. */
static int rotate(struct atr_journal *j, struct atr_error *err)
{
    unsigned keep = j->cfg.keep ? j->cfg.keep : 5;
    int rc = 0;
    for (unsigned k = keep; k >= 1 && rc == 0; k--) {
        char *from = k > 1 ? xasprintf("%s.%u", j->path, k - 1) : xstrdup(j->path);
        char *to = xasprintf("%s.%u", j->path, k);
        if (rename(from, to) < 0 && (errno != ENOENT || k == 1))
            rc = atr_error_set(err, "%s: rotating to %s: %s", j->path, to, strerror(errno));
        free(from);
        free(to);
    }
    if (rc < 0)
        return -1;
    if (j->dirty)
        sync_now(j);
    int old = j->fd;
    if (open_file(j, err) < 0)
        return -1;       /* j->fd is still the old file, now PATH.1 */
    close(old);
    sync_dir(j->path);
    return 0;
}

static void rotate_if_full(struct atr_journal *j)
{
    struct atr_error e;
    if (j->cfg.rotate_bytes && j->size >= j->cfg.rotate_bytes && rotate(j, &e) < 0 && !j->failed) {
        j->kept = e;
        j->failed = true;
    }
}

struct atr_journal *atr_journal_open(const char *path, const struct atr_journal_cfg *cfg,
                                     struct atr_error *err)
{
    static const struct atr_journal_cfg defaults = ATR_JOURNAL_CFG_INIT;
    struct atr_journal *j = xcalloc(1, sizeof *j);
    j->path = xstrdup(path);
    j->cfg = cfg ? *cfg : defaults;
    if (!(j->cfg.fsync_interval_s >= 0))    /* NaN too */
        j->cfg.fsync_interval_s = defaults.fsync_interval_s;
    j->last_sync = -1;
    j->fd = -1;
    if (open_file(j, err) < 0 || cut_torn_tail(j, err) < 0) {
        if (j->fd >= 0)
            close(j->fd);
        free(j->path);
        free(j);
        return NULL;
    }
    if (j->cfg.rotate_bytes && j->size >= j->cfg.rotate_bytes && rotate(j, err) < 0) {
        atr_journal_close(j, NULL);
        return NULL;
    }
    return j;
}

/* The whole of p[0..n) at the end of the file, in as few write() calls as
 * the kernel allows (one, unless it writes short). On failure the file is
 * cut back to its length before, so no partial line stays. */
static int write_line(struct atr_journal *j, const char *p, size_t n, struct atr_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(j->fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            if (done && ftruncate(j->fd, (off_t)j->size) < 0)
                return atr_error_set(err, "%s: write: %s (and a partial line is left: %s)",
                                     j->path, strerror(e), strerror(errno));
            return atr_error_set(err, "%s: write: %s", j->path, strerror(e));
        }
        done += (size_t)w;
    }
    j->size += n;
    j->dirty = true;
    return 0;
}

/* The OTLP/JSON form of the atr line in j->line, into j->otlp: the line
 * is read back by the atr reader, so the two files say the same. */
static int otlp_line(struct atr_journal *j, struct atr_error *err)
{
    struct atr_input *in = atr_input_open_mem(j->line.data, j->line.len, "record");
    struct atr_reader *rd = atr_reader_open_input(in, "atr", NULL, err);
    if (!rd)
        return -1;
    struct atr_trace t = ATR_TRACE_INIT;
    int rc = atr_reader_next(rd, &t, err);
    if (rc == 1) {
        atr_buf_clear(&j->otlp);
        atr_trace_write_otlp(&j->otlp, &t, 0);   /* start_ms is Unix ms */
    }
    atr_trace_release(&t);
    atr_reader_close(rd);
    return rc == 1 ? 0 : -1;
}

int atr_journal_append(struct atr_journal *j, const struct atr_proxy_record *r,
                       struct atr_error *err)
{
    atr_buf_clear(&j->line);
    if (atr_journal_format(&j->line, r) < 0)
        return atr_error_set(err, "%s: record of session turn %llu: %zu block ids for %llu "
                             "estimated tokens in blocks of %u (want ceil(tokens / block "
                             "size) ids below 2^53)", j->path, (unsigned long long)r->turn,
                             r->n_block_ids, (unsigned long long)r->est_prompt_tokens,
                             r->block_size ? r->block_size : ATR_DEFAULT_BLOCK_SIZE);
    if (j->cfg.otlp && otlp_line(j, err) < 0)
        return -1;
    const struct atr_buf *out = j->cfg.otlp ? &j->otlp : &j->line;
    if (write_line(j, out->data, out->len, err) < 0)
        return -1;
    if (j->cfg.fsync_interval_s == 0)
        sync_now(j);
    rotate_if_full(j);
    return 0;
}

void atr_journal_tick(struct atr_journal *j, double now_mono)
{
    if (j->last_sync < 0)
        j->last_sync = now_mono;
    if (!j->dirty || now_mono - j->last_sync < j->cfg.fsync_interval_s)
        return;
    sync_now(j);
    j->last_sync = now_mono;
}

int atr_journal_status(const struct atr_journal *j, struct atr_error *err)
{
    if (!j->failed)
        return 0;
    if (err)
        *err = j->kept;
    return -1;
}

uint64_t atr_journal_cut_bytes(const struct atr_journal *j) { return j->cut; }

int atr_journal_close(struct atr_journal *j, struct atr_error *err)
{
    if (!j)
        return 0;
    if (j->dirty)
        sync_now(j);
    if (close(j->fd) < 0)
        keep_failure(j, "close", errno);
    int rc = atr_journal_status(j, err);
    atr_buf_release(&j->line);
    atr_buf_release(&j->otlp);
    free(j->path);
    free(j);
    return rc;
}

/* ---- reading an existing journal back ---- */

enum { SCAN_MAX_LINE = 256 << 20 };    /* a line with --record-content's text */

/* One line's meta.session and meta.turn to fn; -1 with err set when the
 * line is not a record. */
static int scan_line(const char *path, unsigned long lineno, const char *line, size_t len,
                     struct atr_arena *arena, atr_journal_seen_fn *fn, void *ctx,
                     struct atr_error *err)
{
    struct atr_json *root;
    struct atr_json_err je;
    if (atr_json_parse(arena, line, len, NULL, &root, &je) < 0)
        return atr_error_at(err, path, lineno, je.col, "%s", je.msg);
    const struct atr_json *meta = atr_json_get(root, "meta");
    size_t n;
    const char *name = atr_json_get_str(meta, "session", &n);
    int64_t turn;
    if (!name || !atr_json_get_i64(meta, "turn", &turn) || turn < 0)
        return atr_error_at(err, path, lineno, 1, "expected \"meta\" with \"session\" and "
                            "\"turn\" (a line of atr proxy's journal)");
    fn(ctx, name, n, (uint64_t)turn);
    return 0;
}

static int scan_file(const char *path, atr_journal_seen_fn *fn, void *ctx, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return -1;
    struct atr_arena arena = ATR_ARENA_INIT;
    const char *line;
    size_t len;
    int more, rc = 0;
    while (rc == 0 && (more = atr_input_getline(in, &line, &len, SCAN_MAX_LINE, err)) == 1) {
        atr_arena_clear(&arena);
        if (len)
            rc = scan_line(path, atr_input_lineno(in), line, len, &arena, fn, ctx, err);
    }
    if (rc == 0 && more < 0)
        rc = -1;
    atr_arena_release(&arena);
    atr_input_close(in);
    return rc;
}

int atr_journal_scan(const char *path, unsigned keep, atr_journal_seen_fn *fn, void *ctx,
                     struct atr_error *err)
{
    int rc = 0;
    for (unsigned k = keep ? keep : 5;; k--) {
        char *p = k ? xasprintf("%s.%u", path, k) : xstrdup(path);
        if (access(p, F_OK) == 0)
            rc = scan_file(p, fn, ctx, err);
        free(p);
        if (rc < 0 || k == 0)
            return rc;
    }
}
