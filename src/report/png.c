/* png.c - one PNG per chart of a report page through headless Chromium
 * (see png.h): the page numbered and written once, then one Chromium
 * screenshot per chart, moved into place when all succeeded. */
#include "report/png.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"

extern char **environ;

#define PNG_WIDTH_MAX 720         /* svg.chart's max-width in report.css */
#define PNG_MARGIN 48             /* body margins and the figure's */
#define PNG_CAPTION 70            /* room for a caption under the chart */
#define PNG_PARALLEL 4            /* Chromiums at once: each is ~1 s, mostly start-up */

static const char figure_tag[] = "<figure";

/* Keeps figure N alone on the page once the report's module script has
 * run (module scripts run in document order), on a plain background. */
static const char isolate_js[] =
    "<script type=\"module\">\n"
    "const n = new URLSearchParams(location.search).get(\"png\");\n"
    "const f = n === null ? null : document.querySelector(`figure[data-png=\"${n}\"]`);\n"
    "if (f) { document.body.replaceChildren(f); document.body.style.margin = \"16px\"; }\n"
    "</script>\n";

/* A figure starts at "<figure" followed by '>' or a space. */
static const char *next_figure(const char *p, const char *end)
{
    size_t n = sizeof figure_tag - 1;
    while ((p = memmem(p, (size_t)(end - p), figure_tag, n)))
        if (p + n < end && (p[n] == '>' || p[n] == ' '))
            return p;
        else
            p += n;
    return NULL;
}

size_t atr_report_png_count(const char *page, size_t len)
{
    size_t n = 0;
    for (const char *p = page, *end = page + len; (p = next_figure(p, end)); p++)
        n++;
    return n;
}

/* One chart: its file name and the window it is shot in. */
struct chart {
    char name[80];
    int w, h;
};

/* The id of the last <section id="..."> before at, as a file name part. */
static void section_of(const char *page, const char *at, char *out, size_t cap)
{
    static const char tag[] = "<section id=\"";
    const char *s = NULL;
    for (const char *p = page; (p = memmem(p, (size_t)(at - p), tag, sizeof tag - 1)); p++)
        s = p + sizeof tag - 1;
    size_t n = 0;
    for (; s && s < at && *s != '"' && n + 1 < cap; s++)   /* ids are atr's own words */
        if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-')
            out[n++] = *s;
    if (n == 0)
        n = (size_t)snprintf(out, cap, "chart");
    out[n] = '\0';
}

/* The window for the figure at p: its first viewBox's aspect at the
 * chart's displayed width, or 800 x 560 for a figure the JS fills. */
static void window_of(const char *p, const char *end, struct chart *c)
{
    const char *close = memmem(p, (size_t)(end - p), "</figure>", 9);
    const char *vb = memmem(p, (size_t)((close ? close : end) - p), "viewBox=\"0 0 ", 13);
    double w = 0, h = 0;
    if (!vb || sscanf(vb + 13, "%lf %lf", &w, &h) != 2 || !(w > 0) || !(h > 0)) {
        c->w = 800;
        c->h = 560;
        return;
    }
    double shown = w < PNG_WIDTH_MAX ? w : PNG_WIDTH_MAX;
    c->w = (int)shown + PNG_MARGIN;
    c->h = (int)(shown * h / w) + PNG_MARGIN + PNG_CAPTION;
}

/* The page with each figure numbered (data-png="N") and isolate_js before
 * </body>; the charts' names and windows into charts[0..n). */
static void numbered_page(const char *page, size_t len, struct atr_buf *out, struct chart *charts)
{
    const char *end = page + len, *from = page, *p;
    size_t i = 0;
    while ((p = next_figure(from, end))) {
        char sec[48];
        section_of(page, p, sec, sizeof sec);
        snprintf(charts[i].name, sizeof charts[i].name, "%02zu-%s.png", i + 1, sec);
        window_of(p, end, &charts[i]);
        atr_buf_append(out, from, (size_t)(p - from) + sizeof figure_tag - 1);
        atr_buf_printf(out, " data-png=\"%zu\"", i++);
        from = p + sizeof figure_tag - 1;
    }
    const char *body = NULL;
    for (const char *q = from; (q = memmem(q, (size_t)(end - q), "</body>", 7)); q++)
        body = q;
    if (!body)
        body = end;
    atr_buf_append(out, from, (size_t)(body - from));
    atr_buf_puts(out, isolate_js);
    atr_buf_append(out, body, (size_t)(end - body));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static int write_file(const char *path, const char *data, size_t len, struct atr_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : atr_error_set(err, "%s: cannot write it", path);
}

/* "file://" and the absolute path, bytes other than [A-Za-z0-9/._-~]
 * percent-encoded, then the query. */
static char *file_url(const char *path, size_t chart)
{
    struct atr_buf b = ATR_BUF_INIT;
    atr_buf_puts(&b, "file://");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p))
            atr_buf_putc(&b, (char)*p);
        else
            atr_buf_printf(&b, "%%%02X", *p);
    atr_buf_printf(&b, "?png=%zu", chart);
    return b.data;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Waits for pid until the deadline (CLOCK_MONOTONIC seconds), polling:
 * Chromium has no way to tell us it hangs. Past the deadline its whole
 * process group is killed (the browser forks a zygote, renderers and a
 * GPU process; killing the first pid alone would leave them). Returns the
 * wait status, or -1 on timeout. */
static int wait_until(pid_t pid, double deadline)
{
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -1;
        if (now_s() > deadline) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
}

/* Starts Chromium on chart i of the page at html, writing png, with
 * profile folder `slot` under tmp (a profile is locked by the Chromium
 * using it). The child gets its own process group (so a timeout kills all
 * of it), stdin and output on /dev/null (Chromium logs D-Bus noise), and
 * no user profile. posix_spawn reports an exec failure (a missing binary)
 * as its return value. */
static int spawn_chart(const struct atr_png_cfg *cfg, const char *tmp, const char *html,
                       size_t i, size_t slot, const struct chart *c, const char *png, pid_t *pid,
                       struct atr_error *err)
{
    char *size = xasprintf("--window-size=%d,%d", c->w, c->h);
    char *shot = xasprintf("--screenshot=%s", png);
    char *profile = xasprintf("--user-data-dir=%s/profile-%zu", tmp, slot);
    char *url = file_url(html, i);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)cfg->chromium;
    argv[n++] = "--headless";
    argv[n++] = "--disable-gpu";
    argv[n++] = "--hide-scrollbars";
    argv[n++] = "--no-first-run";
    argv[n++] = "--disable-breakpad";        /* no crash database under $HOME */
    argv[n++] = "--force-device-scale-factor=2";
    if (cfg->no_sandbox)
        argv[n++] = "--no-sandbox";
    argv[n++] = profile;
    argv[n++] = size;
    argv[n++] = shot;
    argv[n++] = url;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    int e = posix_spawn(pid, cfg->chromium, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(size);
    free(shot);
    free(profile);
    free(url);
    if (e != 0)
        return atr_error_set(err, "%s: cannot run it: %s (set CHROMIUM to Chromium's path)",
                             cfg->chromium, strerror(e));
    return 0;
}

/* Waits for the Chromium of chart i (killed past the deadline) and checks
 * that it wrote png. */
static int reap_chart(const struct atr_png_cfg *cfg, pid_t pid, double deadline, size_t i,
                      const char *png, struct atr_error *err)
{
    int st = wait_until(pid, deadline);
    struct stat sb;
    if (st == -1)
        return atr_error_set(err, "%s: no screenshot of chart %zu within %d s", cfg->chromium,
                             i + 1, cfg->timeout_s > 0 ? cfg->timeout_s : 60);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || stat(png, &sb) < 0 || sb.st_size < 8)
        return atr_error_set(err, "%s: no screenshot of chart %zu (exit status %d)",
                             cfg->chromium, i + 1,
                             WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

/* Charts [from, to) at once, under one deadline; every Chromium started
 * is waited for, even after a failure, and the first error is kept. */
static int shoot_batch(const struct atr_png_cfg *cfg, const char *tmp, const char *html,
                       const struct chart *charts, size_t from, size_t to, struct atr_error *err)
{
    pid_t pids[PNG_PARALLEL];
    size_t started = 0;
    int rc = 0;
    double deadline = now_s() + (cfg->timeout_s > 0 ? cfg->timeout_s : 60);
    for (size_t i = from; rc == 0 && i < to; i++) {
        char *png = xasprintf("%s/%s", tmp, charts[i].name);
        rc = spawn_chart(cfg, tmp, html, i, i - from, &charts[i], png, &pids[i - from], err);
        started += rc == 0;
        free(png);
    }
    for (size_t k = 0; k < started; k++) {
        char *png = xasprintf("%s/%s", tmp, charts[from + k].name);
        struct atr_error later;
        if (reap_chart(cfg, pids[k], deadline, from + k, png, rc == 0 ? err : &later) < 0)
            rc = -1;
        free(png);
    }
    return rc;
}

/* Every chart shot into tmp, then moved into dir. */
static int shoot_all(const char *page, size_t len, const char *dir, const char *tmp,
                     const struct atr_png_cfg *cfg, size_t n, struct atr_error *err)
{
    struct chart *charts = xcalloc(n ? n : 1, sizeof *charts);
    struct atr_buf numbered = ATR_BUF_INIT;
    numbered_page(page, len, &numbered, charts);
    char *html = xasprintf("%s/report.html", tmp);
    int rc = write_file(html, numbered.data, numbered.len, err);
    atr_buf_release(&numbered);
    for (size_t i = 0; rc == 0 && i < n; i += PNG_PARALLEL) {
        size_t to = i + PNG_PARALLEL < n ? i + PNG_PARALLEL : n;
        rc = shoot_batch(cfg, tmp, html, charts, i, to, err);
        if (rc == 0 && cfg->on_progress)
            cfg->on_progress(cfg->progress_ctx, to, n);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *from = xasprintf("%s/%s", tmp, charts[i].name);
        char *to = xasprintf("%s/%s", dir, charts[i].name);
        if (rename(from, to) < 0)
            rc = atr_error_set(err, "%s: %s", to, strerror(errno));
        free(from);
        free(to);
    }
    free(html);
    free(charts);
    return rc;
}

int atr_report_png(const char *page, size_t len, const char *dir, const struct atr_png_cfg *cfg,
                   size_t *written, struct atr_error *err)
{
    *written = 0;
    if (access(cfg->chromium, X_OK) < 0)
        return atr_error_set(err, "%s: Chromium not found (install chromium, or set CHROMIUM "
                             "to its path)", cfg->chromium);
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return atr_error_set(err, "%s: %s", dir, strerror(errno));
    char *tmpl = xasprintf("%s/.atr-png-XXXXXX", dir);
    if (!mkdtemp(tmpl)) {
        int rc = atr_error_set(err, "%s: %s", dir, strerror(errno));
        free(tmpl);
        return rc;
    }
    char *tmp = realpath(tmpl, NULL);             /* the file:// URL needs an absolute path */
    size_t n = atr_report_png_count(page, len);
    int rc = tmp ? shoot_all(page, len, dir, tmp, cfg, n, err)
                 : atr_error_set(err, "%s: %s", tmpl, strerror(errno));
    nftw(tmpl, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(tmp);
    free(tmpl);
    if (rc == 0)
        *written = n;
    return rc;
}
