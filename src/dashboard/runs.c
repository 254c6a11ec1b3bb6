/* runs.c - the dashboard's run list: the watched folders walked on a
 * timer (no symbolic link followed, at most DASH_MAX_RUNS entries), each
 * file recognised once by its first bytes, and the records appended since
 * the last walk read, so a run's counts and latencies grow with its file
 * and memory stays bounded by what is kept per record (two doubles). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dashboard/dash-impl.h"
#include "json/json.h"
#include "report/html-impl.h"
#include "stats/requests.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/error.h"
#include "trace/reader.h"
#include "util/input.h"

#define SNIFF_BYTES 65536
#define CHUNK ((size_t)1 << 20)
#define RESULT_MAX ((size_t)16 << 20)

const char *dash_status_name(enum dash_status s)
{
    static const char *const names[] = {"running", "stopped", "complete", "interrupted"};
    return names[s];
}

const char *dash_kind_name(enum dash_kind k)
{
    static const char *const names[] = {"requests", "proxy journal", "tool replay", "bench",
                                        "result", "other"};
    return names[k];
}

int dash_runs_init(struct dash_runs *r, const char *const *roots, size_t n, double idle_s,
                   struct atr_error *err)
{
    *r = (struct dash_runs){.idle_s = idle_s > 0 ? idle_s : 10};
    r->roots = xcalloc(n, sizeof *r->roots);
    r->root_names = xcalloc(n, sizeof *r->root_names);
    for (size_t i = 0; i < n; i++, r->n_roots++) {
        struct stat sb;
        char *real = realpath(roots[i], NULL);
        if (!real || stat(real, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
            free(real);
            return atr_error_set(err, "%s: %s", roots[i], real ? "not a folder"
                                                              : "no such folder");
        }
        const char *slash = strrchr(real, '/');
        r->roots[i] = real;
        r->root_names[i] = xstrdup(slash && slash[1] ? slash + 1 : real);
    }
    return 0;
}

static void groups_clear(struct dash_run *run)
{
    for (size_t i = 0; i < run->n_groups; i++) {
        free(run->groups[i].upstream);
        free(run->groups[i].policy);
        atr_samples_release(&run->groups[i].ttft);
        atr_samples_release(&run->groups[i].itl);
    }
    run->n_groups = 0;
}

static void run_free(struct dash_run *run)
{
    groups_clear(run);
    free(run->rel);
    free(run->path);
    free(run->page_path);
    atr_samples_release(&run->ttft);
    atr_samples_release(&run->e2el);
}

void dash_runs_release(struct dash_runs *r)
{
    for (size_t i = 0; i < r->n; i++)
        run_free(&r->v[i]);
    for (size_t i = 0; i < r->n_roots; i++) {
        free(r->roots[i]);
        free(r->root_names[i]);
    }
    free(r->v);
    free(r->roots);
    free(r->root_names);
}

static void reset_counts(struct dash_run *run)
{
    run->read_to = 0;
    run->done = run->ok = run->failed = run->bad = 0;
    groups_clear(run);
    atr_samples_clear(&run->ttft);
    atr_samples_clear(&run->e2el);
}

static void add_sample(struct atr_samples *s, double ms)
{
    if (ms == ms && s->n < DASH_MAX_SAMPLES)
        atr_samples_add(s, ms);
}

/* ---- records ---- */

static double num_or_nan(const struct atr_json *o, const char *key)
{
    double v;
    return o && atr_json_get_num(o, key, &v) ? v : NAN;
}

static void count(struct dash_run *run, bool ok, double ttft, double e2el)
{
    run->done++;
    if (!ok) {
        run->failed++;
        return;
    }
    run->ok++;
    add_sample(&run->ttft, ttft);
    add_sample(&run->e2el, e2el);
}

/* A --requests-out line: success, ttft_ms, e2el_ms (percentiles over the
 * successful requests, as vLLM computes them). */
static void requests_line(struct dash_run *run, const struct atr_json *o)
{
    if (atr_llm_request_is_tool(o))
        return;                  /* replay agent's tool step: no request */
    if (run->partial && run->done == 0 && atr_json_get(o, "atr_partial")) {
        double n = num_or_nan(o, "total");    /* the header: the planned count */
        run->total = n == n && n > 0 ? (uint64_t)n : 0;
        return;
    }
    const struct atr_json *s = atr_json_get(o, "success");
    if (!s || !(atr_json_is(s, ATR_JSON_TRUE) || atr_json_is(s, ATR_JSON_FALSE))) {
        run->bad++;
        return;
    }
    count(run, atr_json_is(s, ATR_JSON_TRUE), num_or_nan(o, "ttft_ms"), num_or_nan(o, "e2el_ms"));
}

/* The request's upstream x policy pair, counted (the first
 * DASH_MAX_GROUPS pairs only: a proxy has a few upstreams, one policy). */
static void count_group(struct dash_run *run, const struct atr_json *meta, bool ok, double ttft)
{
    double itl = num_or_nan(atr_json_get(meta, "itl_ms"), "mean");
    const char *up = atr_json_get_str(meta, "upstream_url", NULL);
    const char *pol = atr_json_get_str(meta, "policy", NULL);
    up = up ? up : "?";
    pol = pol ? pol : "?";
    size_t i = 0;
    while (i < run->n_groups &&
           (strcmp(run->groups[i].upstream, up) != 0 || strcmp(run->groups[i].policy, pol) != 0))
        i++;
    if (i == run->n_groups) {
        if (i == DASH_MAX_GROUPS)
            return;
        run->groups[i] = (struct dash_group){.upstream = xstrdup(up), .policy = xstrdup(pol)};
        run->n_groups++;
    }
    struct dash_group *g = &run->groups[i];
    g->requests++;
    g->ok += ok;
    if (ok && ttft == ttft) {
        g->ttft_sum_ms += ttft;
        g->ttft_n++;
    }
    if (ok) {
        add_sample(&g->ttft, ttft);
        add_sample(&g->itl, itl);
    }
}

/* A journal line: meta.status 200 and no meta.error is a success; TTFT
 * from meta.ttft_ms, E2EL from the step's dur_ms. */
static void journal_line(struct dash_run *run, const struct atr_json *o)
{
    const struct atr_json *meta = atr_json_get(o, "meta");
    const struct atr_json *steps = atr_json_get(o, "steps");
    if (!meta || !steps || !atr_json_is(steps, ATR_JSON_ARRAY)) {
        run->bad++;
        return;
    }
    const struct atr_json *e = atr_json_get(meta, "error");
    bool ok = num_or_nan(meta, "status") == 200 && (!e || atr_json_is(e, ATR_JSON_NULL));
    count(run, ok, num_or_nan(meta, "ttft_ms"), num_or_nan(steps->u.kids.first, "dur_ms"));
    count_group(run, meta, ok, num_or_nan(meta, "ttft_ms"));
}

/* A tool replay's metrics.jsonl line: a step, its latency_ms; a failed
 * step (exit code not 0, timed out, killed) counts as failed. */
static void tools_line(struct dash_run *run, const struct atr_json *o)
{
    const struct atr_json *t = atr_json_get(o, "timed_out");
    bool ok = num_or_nan(o, "exit_code") == 0 && !(t && atr_json_is(t, ATR_JSON_TRUE));
    run->done++;
    run->ok += ok;
    run->failed += !ok;
    add_sample(&run->e2el, num_or_nan(o, "latency_ms"));
}

static void one_line(struct dash_run *run, struct atr_arena *a, const char *p, size_t n)
{
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
        n--;
    if (!n)
        return;
    struct atr_json *o;
    struct atr_json_err jerr;
    struct atr_json_opts opts = {.max_values = 1u << 20};
    if (atr_json_parse(a, p, n, &opts, &o, &jerr) < 0 || !atr_json_is(o, ATR_JSON_OBJECT)) {
        run->bad++;
        return;
    }
    if (run->kind == DASH_REQUESTS)
        requests_line(run, o);
    else if (run->kind == DASH_JOURNAL)
        journal_line(run, o);
    else
        tools_line(run, o);
}

/* The whole lines of buf[0..len); returns the bytes they took. */
static size_t lines(struct dash_run *run, const char *buf, size_t len)
{
    struct atr_arena a = {0};
    size_t at = 0;
    for (const char *nl; (nl = memchr(buf + at, '\n', len - at)); at = (size_t)(nl - buf) + 1) {
        size_t n = (size_t)(nl - buf) - at;
        if (n > DASH_MAX_LINE) {
            run->bad++;
            continue;
        }
        one_line(run, &a, buf + at, n);
        atr_arena_clear(&a);
    }
    atr_arena_release(&a);
    return at;
}

/* The offset after the next newline at or past at (or past the end). */
static off_t skip_line(int fd, char *buf, off_t at)
{
    ssize_t got;
    while ((got = pread(fd, buf, CHUNK, at)) > 0) {
        char *nl = memchr(buf, '\n', (size_t)got);
        if (nl)
            return at + (nl - buf) + 1;
        at += got;
    }
    return at;
}

/* Reads what fd holds past run->read_to, whole lines only: a cut last
 * line (a writer mid-append) waits for the next walk. A line longer than
 * DASH_MAX_LINE is skipped and counted bad. */
static void read_appended(struct dash_run *run, int fd, off_t size)
{
    char *buf = xmalloc(DASH_MAX_LINE + CHUNK);
    size_t have = 0;
    off_t at = run->read_to;
    while (at < size) {
        ssize_t got = pread(fd, buf + have, CHUNK, at);
        if (got <= 0)
            break;
        at += got;
        have += (size_t)got;
        size_t used = lines(run, buf, have);
        run->read_to += (off_t)used;
        memmove(buf, buf + used, have - used);
        have -= used;
        if (have >= DASH_MAX_LINE) {       /* no newline in sight: skip the line */
            at = skip_line(fd, buf, at);
            run->read_to = at;
            run->bad++;
            have = 0;
        }
    }
    free(buf);
}

/* ---- result files and bench folders: read whole when they change ---- */

static struct atr_json *read_json_file(struct atr_arena *a, int fd, off_t size)
{
    if (size <= 0 || (size_t)size > RESULT_MAX)
        return NULL;
    char *text = xmalloc((size_t)size);
    struct atr_json *root = NULL;
    struct atr_json_err jerr;
    if (pread(fd, text, (size_t)size, 0) != size ||
        atr_json_parse(a, text, (size_t)size, NULL, &root, &jerr) < 0 ||
        !atr_json_is(root, ATR_JSON_OBJECT))
        root = NULL;
    free(text);
    return root;
}

static bool flag(const struct atr_json *o, const char *key)
{
    const struct atr_json *v = o ? atr_json_get(o, key) : NULL;
    return v && atr_json_is(v, ATR_JSON_TRUE);
}

/* A result (or a tool replay's summary.json): finished, marked incomplete
 * or not, the planned request count. */
static void read_marker(struct dash_run *run, int fd, off_t size)
{
    struct atr_arena a = {0};
    struct atr_json *root = read_json_file(&a, fd, size);
    run->finished = root != NULL;
    run->incomplete = flag(root, "incomplete") || flag(atr_json_get(root, "atr"), "incomplete");
    double n = num_or_nan(root, "num_prompts");
    run->total = n == n && n > 0 ? (uint64_t)n : 0;
    atr_arena_release(&a);
}

static int open_plain(const char *path, struct stat *sb)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, sb) < 0 || !S_ISREG(sb->st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int64_t mtime_ns(const struct stat *sb)
{
    return (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
}

/* One bench result's status word into outcomes. */
static void bench_outcome(struct dash_run *run, const char *path)
{
    struct stat sb;
    int fd = open_plain(path, &sb);
    if (fd < 0)
        return;
    struct atr_arena a = {0};
    struct atr_json *root = read_json_file(&a, fd, sb.st_size);
    const char *st = root ? atr_json_get_str(root, "status", NULL) : NULL;
    static const char *const words[] = {"success", "error", "timeout"};
    size_t k = 0;
    while (k < 3 && !(st && strcmp(st, words[k]) == 0))
        k++;
    run->outcomes[k]++;
    run->done++;
    run->ok += k == 0;
    run->failed += k != 0;
    atr_arena_release(&a);
    close(fd);
}

static bool is_bench_name(const char *name)
{
    size_t n = strlen(name);
    return n > 12 && strcmp(name + n - 12, "_result.json") == 0;
}

/* The runner's results/.atr-bench-state.json (bench/run.h): "complete"
 * finishes the folder, "interrupted" or "failed" marks it incomplete,
 * "running" names the runner's pid. true when what it says changed. */
static bool bench_state(struct dash_run *run, int dfd)
{
    int fd = openat(dfd, ".atr-bench-state.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    bool fin = false, inc = false;
    long pid = 0;
    uint64_t total = 0;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        struct atr_arena a = {0};
        struct atr_json *root = read_json_file(&a, fd, sb.st_size);
        const char *st = root ? atr_json_get_str(root, "state", NULL) : NULL;
        double n = num_or_nan(root, "planned"), p = num_or_nan(root, "pid");
        total = n == n && n > 0 ? (uint64_t)n : 0;
        fin = st && strcmp(st, "running") != 0;
        inc = fin && strcmp(st, "complete") != 0;
        pid = st && !fin && p == p && p > 0 ? (long)p : 0;
        atr_arena_release(&a);
    }
    if (fd >= 0)
        close(fd);
    bool changed = fin != run->finished || inc != run->incomplete || pid != run->writer_pid ||
                   total != run->total;
    run->finished = fin;
    run->incomplete = inc;
    run->writer_pid = pid;
    run->total = total;
    return changed;
}

/* A bench folder: its *_result.json files counted by outcome, again
 * whenever the folder's listing or one file's time changed. */
static bool bench_refresh(struct dash_run *run)
{
    DIR *d = opendir(run->path);
    if (!d)
        return false;
    bool state_changed = bench_state(run, dirfd(d));
    int64_t newest = 0;
    uint64_t files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat sb;
        if (!is_bench_name(e->d_name) || fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(sb.st_mode))
            continue;
        files++;
        newest = mtime_ns(&sb) > newest ? mtime_ns(&sb) : newest;
    }
    bool changed = files != run->done || newest != run->mtime_ns;
    if (changed) {
        run->done = run->ok = run->failed = 0;
        memset(run->outcomes, 0, sizeof run->outcomes);
        rewinddir(d);
        while ((e = readdir(d)))
            if (is_bench_name(e->d_name)) {
                char *p = xasprintf("%s/%s", run->path, e->d_name);
                bench_outcome(run, p);
                free(p);
            }
        run->mtime_ns = newest;
    }
    closedir(d);
    return changed || state_changed;
}

/* ---- following one run ---- */

static bool refresh_file(struct dash_run *run, double now);

double dash_run_rate(const struct dash_run *run)
{
    double dt = run->changed_at - run->base_at;
    return run->done > run->base_done && dt > 0 ? (double)(run->done - run->base_done) / dt : NAN;
}

/* Reads what changed in run's file; true when something did. */
static bool refresh(struct dash_run *run, double now)
{
    bool changed = refresh_file(run, now);
    if (run->base_at == 0) {     /* first sight */
        run->base_at = now;
        run->base_done = run->done;
    }
    return changed;
}

static bool refresh_file(struct dash_run *run, double now)
{
    if (run->remote)
        return false;
    if (run->kind == DASH_BENCH)
        return bench_refresh(run) && (run->changed_at = now, true);
    struct stat sb;
    int fd = open_plain(run->path, &sb);
    if (fd < 0)
        return false;
    bool changed = sb.st_ino != run->ino || sb.st_size != run->size ||
                   mtime_ns(&sb) != run->mtime_ns;
    if (run->kind == DASH_OTHER) {
        /* a report input only: its stat is what says the Router lab (or
         * another section built from it) is to be sent again */
        run->ino = sb.st_ino;
        run->size = sb.st_size;
        run->mtime_ns = mtime_ns(&sb);
        close(fd);
        return changed;
    }
    if (changed && (sb.st_ino != run->ino || sb.st_size < run->read_to)) {
        reset_counts(run);      /* replaced or cut: read it again */
        if (run->ino)           /* not after repoint: the same run, its rate goes on */
            run->base_at = 0;
    }
    if (changed) {
        run->ino = sb.st_ino;
        run->size = sb.st_size;
        run->mtime_ns = mtime_ns(&sb);
        run->changed_at = now;
        if (run->kind == DASH_RESULT)
            read_marker(run, fd, sb.st_size);
        else
            read_appended(run, fd, sb.st_size);
    }
    close(fd);
    return changed;
}

/* The kind of a file, from its first bytes. */
static enum dash_kind sniff(const char *path)
{
    struct stat sb;
    int fd = open_plain(path, &sb);
    if (fd < 0)
        return DASH_OTHER;
    char head[SNIFF_BYTES];
    ssize_t n = pread(fd, head, sizeof head, 0);
    close(fd);
    size_t len = n > 0 ? (size_t)n : 0;
    if (atr_html_looks_like_requests(head, len))
        return DASH_REQUESTS;
    if (memmem(head, len, "\"atr-trace/1\"", 13) && memmem(head, len, "\"atr-proxy\"", 11))
        return DASH_JOURNAL;
    if (atr_sniff_first(head, len, NULL) == '{' &&
        (memmem(head, len, "\"request_throughput\"", 20) ||
         memmem(head, len, "\"mean_ttft_ms\"", 14)))
        return DASH_RESULT;
    return DASH_OTHER;
}

static int by_rel(const void *a, const void *b)
{
    return strcmp(((const struct dash_run *)a)->rel, ((const struct dash_run *)b)->rel);
}

static struct dash_run *find(struct dash_runs *r, const char *rel)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].rel, rel) == 0)
            return &r->v[i];
    return NULL;
}

/* The run named rel, made when new (NULL past DASH_MAX_RUNS). */
static struct dash_run *track(struct dash_runs *r, const char *rel, const char *path,
                              enum dash_kind kind, bool *is_new)
{
    struct dash_run *run = find(r, rel);
    *is_new = run == NULL;
    if (run)
        return run;
    if (r->n == DASH_MAX_RUNS) {
        r->over_cap++;
        return NULL;
    }
    if (r->n == r->cap)
        r->v = xrealloc(r->v, (r->cap = r->cap ? r->cap * 2 : 16) * sizeof *r->v);
    run = &r->v[r->n++];
    *run = (struct dash_run){.rel = xstrdup(rel), .path = xstrdup(path), .kind = kind,
                             .ttft = ATR_SAMPLES_INIT, .e2el = ATR_SAMPLES_INIT};
    return run;
}

/* ---- the walk ---- */

struct walk {
    struct dash_runs *r;
    double now;
    bool changed;
};

static bool has_file(int dfd, const char *name)
{
    struct stat sb;
    return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
}

/* Whether a folder holds a symbolic link: the report's readers follow
 * them, so such a folder stays out of the page. */
static bool dir_has_link(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return true;
    }
    bool link = false;
    struct dirent *e;
    struct stat sb;
    while (!link && (e = readdir(d)))
        link = fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode);
    closedir(d);
    return link;
}

static void note(struct walk *w, struct dash_run *run, bool is_new)
{
    if (!run)
        return;
    run->seen = true;
    if (refresh(run, w->now) || is_new) {
        w->changed = true;
        run->gen++;
    }
}

static void walk_dir(struct walk *w, const char *path, const char *rel, int depth);

/* A folder below a root: a tool replay (metrics.jsonl, summary.json
 * marks it finished), a bench folder (*_result.json), or neither; its
 * subfolders are walked in any case. */
static void visit_dir(struct walk *w, const char *path, const char *rel, int depth, int dfd)
{
    bool is_new;
    if (has_file(dfd, "metrics.jsonl")) {
        char *m = xasprintf("%s/metrics.jsonl", path);
        struct dash_run *run = track(w->r, rel, m, DASH_TOOLS, &is_new);
        free(m);
        if (run && is_new)
            run->page_path = xstrdup(path);
        if (run)
            run->has_symlink = dir_has_link(dfd);
        note(w, run, is_new);
        if (run && has_file(dfd, "summary.json")) {
            struct dash_run marker = {0};
            char *s = xasprintf("%s/summary.json", path);
            struct stat sb;
            int fd = open_plain(s, &sb);
            if (fd >= 0) {
                read_marker(&marker, fd, sb.st_size);
                close(fd);
            }
            free(s);
            w->changed |= marker.finished != run->finished || marker.incomplete != run->incomplete;
            run->finished = marker.finished;
            run->incomplete = marker.incomplete;
        }
        return;
    }
    walk_dir(w, path, rel, depth);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The run now reads path (FILE.partial gave way to FILE, or back): read
 * again from the start. */
static void repoint(struct dash_run *run, const char *path, bool partial)
{
    free(run->path);
    free(run->page_path);
    run->path = xstrdup(path);
    run->page_path = partial ? NULL : xstrdup(path);    /* the report reads committed files */
    run->partial = partial;
    run->ino = 0;               /* read again, keeping the rate's base */
    run->total = 0;
    reset_counts(run);
}

static void visit_file(struct walk *w, int dfd, const char *path, const char *rel,
                       const char *name, off_t size)
{
    bool is_new;
    if (size == 0 || strstr(name, ".tmp."))   /* empty, or an output not yet committed */
        return;
    if (is_bench_name(name))
        return;                               /* the folder's run counts it */
    bool partial = ends_with(name, ".partial") && strlen(name) > 8;
    char *live = partial ? NULL : xasprintf("%s.partial", name);
    bool superseded = live && has_file(dfd, live);
    free(live);
    if (superseded)        /* an older FILE while a new run writes FILE.partial */
        return;
    char *shown = partial ? xstrndup(rel, strlen(rel) - 8) : xstrdup(rel);
    struct dash_run *run = find(w->r, shown);
    enum dash_kind kind = partial ? DASH_REQUESTS : run ? run->kind : sniff(path);
    run = track(w->r, shown, path, kind, &is_new);
    free(shown);
    if (run && is_new)
        repoint(run, path, partial);
    else if (run && strcmp(run->path, path) != 0)
        repoint(run, path, partial);
    note(w, run, is_new);
}

static void walk_dir(struct walk *w, const char *path, const char *rel, int depth)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    bool bench = false, link = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat sb;
        if (e->d_name[0] == '.' || fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char *p = xasprintf("%s/%s", path, e->d_name);
        char *rp = xasprintf("%s/%s", rel, e->d_name);
        if (S_ISLNK(sb.st_mode)) {
            w->r->skipped_links++;
            link = true;
        }
        else if (S_ISDIR(sb.st_mode) && depth < DASH_MAX_DEPTH) {
            int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                visit_dir(w, p, rp, depth + 1, sub);
                close(sub);
            }
        } else if (S_ISREG(sb.st_mode)) {
            bench |= is_bench_name(e->d_name);
            visit_file(w, fd, p, rp, e->d_name, sb.st_size);
        }
        free(p);
        free(rp);
    }
    closedir(d);
    if (bench) {
        bool is_new;
        struct dash_run *run = track(w->r, rel, path, DASH_BENCH, &is_new);
        if (run && is_new)
            run->page_path = xstrdup(path);
        if (run)
            run->has_symlink = link;
        note(w, run, is_new);
    }
}

/* The run whose file is a result's stem ("r.naive.json" for
 * "r.naive.ndjson"), or NULL. */
static const struct dash_run *result_of(const struct dash_runs *r, const struct dash_run *run)
{
    const char *dot = strrchr(run->rel, '.'), *slash = strrchr(run->rel, '/');
    size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - run->rel) : strlen(run->rel);
    for (size_t i = 0; i < r->n; i++) {
        const struct dash_run *o = &r->v[i];
        if (o->kind == DASH_RESULT && strncmp(o->rel, run->rel, stem) == 0 &&
            o->rel[stem] == '.' && !strchr(o->rel + stem + 1, '.') &&
            !strchr(o->rel + stem + 1, '/'))
            return o;
    }
    return NULL;
}

const struct dash_run *dash_run_marker(const struct dash_runs *r, const struct dash_run *run)
{
    /* a live copy's result, if one is there, is of an earlier run */
    return run->kind == DASH_REQUESTS && !run->partial ? result_of(r, run) : run;
}

/* Whether the process pid is alive (kill's EPERM: alive, someone else's). */
static bool alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

enum dash_status dash_run_status(const struct dash_runs *r, const struct dash_run *run,
                                 double now)
{
    const struct dash_run *marker = dash_run_marker(r, run);
    if (marker && marker->finished)
        return marker->incomplete ? DASH_INTERRUPTED : DASH_COMPLETE;
    if (run->kind == DASH_BENCH && alive(run->writer_pid))
        return DASH_RUNNING;       /* one bench run takes minutes: growth says little */
    return now - run->changed_at < r->idle_s ? DASH_RUNNING : DASH_STOPPED;
}

uint64_t dash_run_total(const struct dash_runs *r, const struct dash_run *run)
{
    const struct dash_run *m = dash_run_marker(r, run);
    return m ? m->total : 0;
}

double dash_run_eta(const struct dash_runs *r, const struct dash_run *run, double now)
{
    uint64_t total = dash_run_total(r, run);
    double rate = dash_run_rate(run);
    if (!total || !(rate > 0) || dash_run_status(r, run, now) != DASH_RUNNING)
        return NAN;
    return total > run->done ? (double)(total - run->done) / rate : 0;
}

static struct dash_run *remote_run(struct dash_runs *r, const char *rel)
{
    bool is_new;
    struct dash_run *run = track(r, rel, rel, DASH_JOURNAL, &is_new);
    if (run && is_new) {
        run->remote = run->seen = true;
        qsort(r->v, r->n, sizeof *r->v, by_rel);
        run = find(r, rel);
    }
    return run;
}

bool dash_runs_feed(struct dash_runs *r, const char *rel, const char *line, size_t len,
                    double now)
{
    struct dash_run *run = remote_run(r, rel);
    if (!run)
        return false;
    struct atr_arena a = {0};
    if (len > DASH_MAX_LINE)
        run->bad++;
    else
        one_line(run, &a, line, len);
    atr_arena_release(&a);
    if (run->base_at == 0) {
        run->base_at = now;
        run->base_done = run->done - 1;
    }
    run->changed_at = now;
    run->connected = true;
    run->gen++;
    r->version++;
    return true;
}

void dash_runs_feed_state(struct dash_runs *r, const char *rel, bool connected)
{
    struct dash_run *run = remote_run(r, rel);
    if (run && run->connected != connected) {
        run->connected = connected;
        r->version++;
    }
}

/* Forgets runs whose file went away. */
static bool sweep(struct dash_runs *r)
{
    size_t k = 0;
    bool gone = false;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].seen) {
            r->v[k++] = r->v[i];
            continue;
        }
        run_free(&r->v[i]);
        gone = true;
    }
    r->n = k;
    return gone;
}

bool dash_runs_scan(struct dash_runs *r, double now)
{
    struct walk w = {r, now, false};
    for (size_t i = 0; i < r->n; i++)
        r->v[i].seen = r->v[i].remote;
    r->skipped_links = r->over_cap = 0;
    for (size_t i = 0; i < r->n_roots; i++) {
        int fd = open(r->roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            visit_dir(&w, r->roots[i], r->root_names[i], 0, fd);
            close(fd);
        }
    }
    w.changed |= sweep(r);
    if (w.changed) {
        qsort(r->v, r->n, sizeof *r->v, by_rel);   /* rows in name order, whatever readdir's */
        r->version++;
    }
    return w.changed;
}
