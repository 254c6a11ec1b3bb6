/* driver.c - browser actions of driver.h: a page session over CDP, the
 * recorded network served on Fetch.requestPaused, Playwright calls mapped
 * to Input/Page/Runtime commands and the in-page selector engine. */
#include "browser/driver.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "json/writer.h"
#include "util/alloc.h"
#include "util/arena.h"

#include "browser/engine.js.h"

#define POLL_US 50000            /* selector and readyState polling */
#define CALL_GRACE_US 1000000    /* a command's reply after the action's deadline */

struct atr_browser {
    struct atr_cdp *c;
    struct atr_netlog *nl;
    char target[80], session[80];
    struct atr_browser_net net;
    uint64_t loads, dcls;        /* Page.loadEventFired / domContentEventFired */
    uint64_t nav_started;        /* Page.frameStartedLoading of the page */
    uint64_t nav_committed;      /* Page.frameNavigated of its main frame */
    uint64_t nav_stopped;        /* Page.frameStoppedLoading (also a navigation that failed) */
    bool dead;
    char last_missing[200];      /* the last request answered 404 */
    struct atr_arena arena;      /* call results, cleared per action */
    struct atr_buf p, body, expr;
};

const char *atr_browser_find(void)
{
    static const char *const candidates[] = {
        "/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    };
    const char *env = getenv("ATR_CHROMIUM");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
        if (access(candidates[i], X_OK) == 0)
            return candidates[i];
    return NULL;
}

/* s in single quotes for sh, quotes inside escaped. */
static void sh_quote(struct atr_buf *b, const char *s)
{
    atr_buf_putc(b, '\'');
    for (; *s; s++)
        if (*s == '\'')
            atr_buf_puts(b, "'\\''");
        else
            atr_buf_putc(b, *s);
    atr_buf_putc(b, '\'');
}

void atr_browser_command(struct atr_buf *cmd, const char *chromium, const char *profile_dir)
{
    static const char *const flags[] = {
        "--headless", "--remote-debugging-pipe", "--no-sandbox", "--no-first-run",
        "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter",
        "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider",
        "--password-store=basic", "--use-mock-keychain", "--mute-audio", "--hide-scrollbars",
        "--window-size=1280,720", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    };
    atr_buf_puts(cmd, "exec ");
    sh_quote(cmd, chromium);
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        atr_buf_putc(cmd, ' ');
        sh_quote(cmd, flags[i]);
    }
    atr_buf_puts(cmd, " --user-data-dir=");
    sh_quote(cmd, profile_dir);
    atr_buf_puts(cmd, " --no-startup-window");
}

static const char *const status_names[] = {
    "ok", "noop", "failed", "no_match", "unsupported", "timeout", "crashed",
};

const char *atr_browser_status_name(enum atr_browser_status s) { return status_names[s]; }

const char *atr_restore_status_name(enum atr_restore_status s)
{
    static const char *const names[] = {
        NULL, "live", "restored", "snapshot_missing", "selector_missing",
    };
    return names[s];
}

const struct atr_browser_net *atr_browser_net(const struct atr_browser *b) { return &b->net; }
bool atr_browser_dead(const struct atr_browser *b) { return b->dead || atr_cdp_closed(b->c); }
bool atr_browser_closed(const struct atr_browser *b) { return atr_cdp_closed(b->c); }
void atr_browser_set_hook(struct atr_browser *b, const struct atr_cdp_hook *hook)
{
    atr_cdp_set_hook(b->c, hook);
}

/* ---- the recorded network ---- */

static bool skip_header(const char *name)
{
    /* The body is served decoded and whole. */
    return strcasecmp(name, "content-encoding") == 0 || strcasecmp(name, "content-length") == 0 ||
           strcasecmp(name, "transfer-encoding") == 0;
}

static void fulfill(struct atr_browser *b, const char *rid, int status,
                    const struct atr_net_entry *e, const char *body, size_t body_len)
{
    struct atr_jw w;
    atr_buf_clear(&b->p);
    atr_jw_init(&w, &b->p, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "requestId", rid);
    atr_jw_kv_int(&w, "responseCode", status);
    atr_jw_key(&w, "responseHeaders");
    atr_jw_array_begin(&w);
    for (size_t i = 0; e && i < e->n_headers; i++) {
        if (skip_header(e->headers[i].name))
            continue;
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "name", e->headers[i].name);
        atr_jw_kv_str(&w, "value", e->headers[i].value);
        atr_jw_object_end(&w);
    }
    if (!e) {
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "name", "content-type");
        atr_jw_kv_str(&w, "value", "text/plain");
        atr_jw_object_end(&w);
    }
    atr_jw_array_end(&w);
    atr_jw_key(&w, "body");
    struct atr_buf b64 = ATR_BUF_INIT;
    if (body_len)
        atr_base64_append(&b64, body, body_len);
    atr_jw_strn(&w, b64.data ? b64.data : "", b64.len);
    atr_buf_release(&b64);
    atr_jw_object_end(&w);
    struct atr_error err;
    if (atr_jw_finish(&w) == 0 &&
        atr_cdp_send(b->c, b->session, "Fetch.fulfillRequest", b->p.data,
                     atr_cdp_now_us() + 5000000, &err) < 0)
        b->dead = atr_cdp_closed(b->c);
}

static void fail_request(struct atr_browser *b, const char *rid)
{
    struct atr_jw w;
    atr_buf_clear(&b->p);
    atr_jw_init(&w, &b->p, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "requestId", rid);
    atr_jw_kv_str(&w, "errorReason", "Failed");
    atr_jw_object_end(&w);
    struct atr_error err;
    if (atr_jw_finish(&w) == 0)
        atr_cdp_send(b->c, b->session, "Fetch.failRequest", b->p.data,
                     atr_cdp_now_us() + 5000000, &err);
}

static const char not_recorded[] = "atr: not in the recorded trace\n";

/* A paused request: the recording's answer, else 404 (counted). */
static void serve(struct atr_browser *b, const struct atr_json *params)
{
    const char *rid = atr_json_get_str(params, "requestId", NULL);
    const struct atr_json *req = atr_json_get(params, "request");
    const char *url = atr_json_get_str(req, "url", NULL);
    const char *method = atr_json_get_str(req, "method", NULL);
    if (!rid)
        return;
    struct atr_net_entry *e = b->nl && url && method ? atr_netlog_find(b->nl, method, url) : NULL;
    if (!e) {
        b->net.unrecorded++;
        snprintf(b->last_missing, sizeof b->last_missing, "%s", url ? url : "");
        fulfill(b, rid, 404, NULL, not_recorded, sizeof not_recorded - 1);
        return;
    }
    e->served++;
    struct atr_error err;
    if (atr_netlog_body(b->nl, e, &b->body, &err) < 0) {
        b->net.missing++;
        snprintf(b->last_missing, sizeof b->last_missing, "%s", url);
        fulfill(b, rid, 404, NULL, not_recorded, sizeof not_recorded - 1);
        return;
    }
    b->net.served++;
    if (e->status < 100 || e->status > 599)
        fail_request(b, rid);     /* the recording saw no response */
    else
        fulfill(b, rid, e->status, e, b->body.data, b->body.len);
}

static bool detached_ours(const struct atr_browser *b, const struct atr_json *params)
{
    const char *sid = atr_json_get_str(params, "sessionId", NULL);
    return sid && strcmp(sid, b->session) == 0;
}

static void on_event(void *ctx, const char *method, const char *session,
                     const struct atr_json *params)
{
    struct atr_browser *b = ctx;
    if (strcmp(method, "Fetch.requestPaused") == 0) {
        serve(b, params);
        return;
    }
    bool ours = strcmp(session, b->session) == 0;
    if (ours && strcmp(method, "Page.loadEventFired") == 0)
        b->loads++;
    else if (ours && strcmp(method, "Page.domContentEventFired") == 0)
        b->dcls++;
    else if (ours && strcmp(method, "Page.frameStartedLoading") == 0)
        b->nav_started++;
    else if (ours && strcmp(method, "Page.frameStoppedLoading") == 0)
        b->nav_stopped++;
    else if (ours && strcmp(method, "Page.frameNavigated") == 0 &&
             !atr_json_get(atr_json_get(params, "frame"), "parentId"))
        b->nav_committed++;
    else if ((ours && strcmp(method, "Inspector.targetCrashed") == 0) ||
             (strcmp(method, "Target.detachedFromTarget") == 0 && detached_ours(b, params))) {
        b->dead = true;
        atr_cdp_interrupt(b->c);
    }
}

/* ---- the session ---- */

static int copy_id(char *dst, size_t cap, const struct atr_json *res, const char *key,
                   struct atr_error *err)
{
    size_t len;
    const char *s = atr_json_get_str(res, key, &len);
    if (!s || len >= cap)
        return atr_error_set(err, "browser: expected \"%s\" in the reply", key);
    memcpy(dst, s, len + 1);
    return 0;
}

static int open_page(struct atr_browser *b, int64_t deadline_us, struct atr_error *err)
{
    struct atr_json *res;
    char params[160];
    if (atr_cdp_call(b->c, NULL, "Target.createTarget", "{\"url\":\"about:blank\"}", deadline_us,
                     &b->arena, &res, err) < 0 ||
        copy_id(b->target, sizeof b->target, res, "targetId", err) < 0)
        return -1;
    snprintf(params, sizeof params, "{\"targetId\":\"%s\",\"flatten\":true}", b->target);
    if (atr_cdp_call(b->c, NULL, "Target.attachToTarget", params, deadline_us, &b->arena, &res,
                     err) < 0 ||
        copy_id(b->session, sizeof b->session, res, "sessionId", err) < 0)
        return -1;
    static const char *const enable[][2] = {
        {"Page.enable", NULL},
        {"Inspector.enable", NULL},
        {"Fetch.enable", "{\"patterns\":[{\"urlPattern\":\"*\",\"requestStage\":\"Request\"}]}"},
    };
    for (size_t i = 0; i < sizeof enable / sizeof *enable; i++)
        if (atr_cdp_call(b->c, b->session, enable[i][0], enable[i][1], deadline_us, &b->arena,
                         NULL, err) < 0)
            return -1;
    return 0;
}

struct atr_browser *atr_browser_open(int to_browser, int from_browser, struct atr_netlog *nl,
                                     int64_t deadline_us, struct atr_error *err)
{
    struct atr_browser *b = xcalloc(1, sizeof *b);
    b->c = atr_cdp_new(to_browser, from_browser);
    b->nl = nl;
    atr_cdp_on_event(b->c, on_event, b);
    if (open_page(b, deadline_us, err) < 0) {
        atr_browser_close(b, 0);
        return NULL;
    }
    atr_arena_clear(&b->arena);
    return b;
}

void atr_browser_close(struct atr_browser *b, int64_t deadline_us)
{
    if (!b)
        return;
    struct atr_error err;
    if (deadline_us > 0 && !atr_cdp_closed(b->c))
        atr_cdp_call(b->c, NULL, "Browser.close", NULL, deadline_us, NULL, NULL, &err);
    atr_cdp_free(b->c);
    atr_arena_release(&b->arena);
    atr_buf_release(&b->p);
    atr_buf_release(&b->body);
    atr_buf_release(&b->expr);
    free(b);
}

/* ---- actions ---- */

struct act {
    struct atr_browser *b;
    const struct atr_browser_action *a;
    struct atr_browser_result *r;
    int64_t deadline;
};

__attribute__((format(printf, 3, 4)))
static int outcome(struct act *x, enum atr_browser_status s, const char *fmt, ...)
{
    x->r->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->r->error, sizeof x->r->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* A cdp failure as the step's outcome. */
static int cdp_outcome(struct act *x, int rc, const struct atr_error *err)
{
    if (rc == ATR_CDP_CLOSED || rc == ATR_CDP_INTERRUPTED || x->b->dead)
        return outcome(x, ATR_BR_CRASHED, "%s", err->msg);
    if (rc == ATR_CDP_TIMEOUT)
        return outcome(x, ATR_BR_TIMEOUT, "timed out after %lld ms: %s",
                       (long long)x->a->timeout_ms, err->msg);
    return outcome(x, ATR_BR_FAILED, "%s", err->msg);
}

/* A command on the page; the reply's result in *res (may be NULL). */
static int page_call(struct act *x, const char *method, const char *params, struct atr_json **res)
{
    struct atr_error err;
    /* A command sent just before the action's deadline still gets its
     * reply: polling loops check the deadline themselves. */
    int rc = atr_cdp_call(x->b->c, x->b->session, method, params, x->deadline + CALL_GRACE_US,
                          &x->b->arena, res, &err);
    return rc < 0 ? cdp_outcome(x, rc, &err) : 0;
}

/* Params built with a writer: begin, members by the caller, end. */
static struct atr_jw *params_begin(struct act *x, struct atr_jw *w)
{
    atr_buf_clear(&x->b->p);
    atr_jw_init(w, &x->b->p, ATR_JW_COMPACT);
    atr_jw_object_begin(w);
    return w;
}

static const char *params_end(struct atr_jw *w)
{
    atr_jw_object_end(w);
    return atr_jw_finish(w) == 0 ? w->b->data : "{}";
}

/* Runtime.evaluate of x->b->expr; *value: the result's value (by value). */
static int evaluate(struct act *x, struct atr_json **value)
{
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_strn(&w, "expression", x->b->expr.data, x->b->expr.len);
    atr_jw_kv_bool(&w, "returnByValue", true);
    atr_jw_kv_bool(&w, "awaitPromise", true);
    struct atr_json *res;
    if (page_call(x, "Runtime.evaluate", params_end(&w), &res) < 0)
        return -1;
    const struct atr_json *exc = atr_json_get(res, "exceptionDetails");
    if (exc) {
        const struct atr_json *e = atr_json_get(exc, "exception");
        const char *d = atr_json_get_str(e, "description", NULL);
        const char *t = atr_json_get_str(exc, "text", NULL);
        return outcome(x, ATR_BR_FAILED, "script error: %.200s", d ? d : t ? t : "exception");
    }
    if (value)
        *value = atr_json_get(atr_json_get(res, "result"), "value");
    return 0;
}

/* Did the last evaluation fail only because the page was navigating (its
 * context went away under the call)? Polling loops then try again. */
static bool navigating(struct act *x)
{
    if (x->r->status != ATR_BR_FAILED || x->b->dead)
        return false;
    static const char *const marks[] = {
        "Execution context was destroyed", "Cannot find context", "navigated or closed",
        "Cannot find default execution context",
    };
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (strstr(x->r->error, marks[i])) {
            x->r->status = ATR_BR_OK;
            x->r->error[0] = '\0';
            return true;
        }
    return false;
}

/* Sleeps until the next poll, serving events; -1 when the browser died. */
static int pause_poll(struct act *x)
{
    int64_t until = atr_cdp_now_us() + POLL_US;
    if (until > x->deadline)
        until = x->deadline;
    struct atr_error err;
    int rc = atr_cdp_wait(x->b->c, NULL, NULL, until, &err);
    return rc == ATR_CDP_TIMEOUT ? 0 : cdp_outcome(x, rc, &err);
}

/* After a failed evaluation in a polling loop: 0 to poll again (the page
 * was navigating), -1 with the outcome set. */
static int retry_after_navigation(struct act *x)
{
    if (!navigating(x))
        return -1;
    if (atr_cdp_now_us() >= x->deadline)
        return outcome(x, ATR_BR_TIMEOUT, "the page was still navigating after %lld ms",
                       (long long)x->a->timeout_ms);
    return pause_poll(x);
}

struct found {
    long n;
    bool visible;
    double x, y;
    const struct atr_json *r;
};

enum want { WANT_ATTACHED, WANT_VISIBLE, WANT_GONE, WANT_HIDDEN };

/* The engine is installed once per document as a hidden window property,
 * so each poll sends and compiles a one-line call, not the whole engine. */
#define ENGINE_NAME "__atr_selector_engine_1"

static void engine_expr(struct act *x, const char *sel, const char *op, const char *arg)
{
    struct atr_buf *e = &x->b->expr;
    atr_buf_clear(e);
    atr_buf_puts(e, "typeof " ENGINE_NAME "==='function'?" ENGINE_NAME "(");
    atr_json_write_string(e, sel, strlen(sel));
    atr_buf_putc(e, ',');
    atr_json_write_string(e, op, strlen(op));
    atr_buf_printf(e, ",%s):{missing:1}", arg ? arg : "null");
}

/* One evaluation of the engine on sel; installs it first where missing
 * (a new document). *v: its result. */
static int engine_call(struct act *x, const char *sel, const char *op, const char *arg,
                       struct atr_json **v)
{
    for (int attempt = 0;; attempt++) {
        atr_arena_clear(&x->b->arena);
        engine_expr(x, sel, op, arg);
        if (evaluate(x, v) < 0)
            return -1;
        if (!atr_json_get(*v, "missing") || attempt == 1)
            return 0;
        atr_buf_clear(&x->b->expr);
        atr_buf_puts(&x->b->expr, "Object.defineProperty(window,'" ENGINE_NAME "',{value:");
        atr_buf_puts(&x->b->expr, engine_js);
        atr_buf_puts(&x->b->expr, ",configurable:true,writable:true});0");
        if (evaluate(x, NULL) < 0)
            return -1;
    }
}

/* Polls the selector with op until it is in the wanted state or the
 * deadline: 0 with *f, or -1 with the outcome. arg: JSON text or NULL. */
static int probe(struct act *x, const char *sel, const char *op, const char *arg, enum want want,
                 struct found *f)
{
    if (!sel || !*sel)
        return outcome(x, ATR_BR_FAILED, "the step has no selector");
    for (;;) {
        struct atr_json *v;
        if (engine_call(x, sel, op, arg, &v) < 0) {
            if (retry_after_navigation(x) < 0)
                return -1;
            continue;
        }
        const char *u = atr_json_get_str(v, "u", NULL);
        if (u)
            return outcome(x, ATR_BR_UNSUPPORTED, "%.200s", u);
        double n = 0;
        atr_json_get_num(v, "n", &n);
        const struct atr_json *vis = atr_json_get(v, "v");
        memset(f, 0, sizeof *f);
        f->n = (long)n;
        f->visible = vis && vis->type == ATR_JSON_TRUE;
        atr_json_get_num(v, "x", &f->x);
        atr_json_get_num(v, "y", &f->y);
        f->r = atr_json_get(v, "r");
        bool done = want == WANT_ATTACHED ? f->n > 0
                    : want == WANT_VISIBLE ? f->n > 0 && f->visible
                    : want == WANT_GONE    ? f->n == 0
                                           : f->n == 0 || !f->visible;
        if (done)
            return 0;
        if (atr_cdp_now_us() >= x->deadline)
            break;
        if (pause_poll(x) < 0)
            return -1;
    }
    if (want == WANT_GONE || want == WANT_HIDDEN)
        return outcome(x, ATR_BR_TIMEOUT, "selector '%.120s' still matched after %lld ms", sel,
                       (long long)x->a->timeout_ms);
    if (f->n > 0)
        return outcome(x, ATR_BR_NO_MATCH, "selector '%.120s' matched only hidden elements "
                       "within %lld ms", sel, (long long)x->a->timeout_ms);
    return outcome(x, ATR_BR_NO_MATCH, "selector '%.120s' matched nothing within %lld ms", sel,
                   (long long)x->a->timeout_ms);
}

static const char *param_str(const struct act *x, const char *key)
{
    return atr_json_get_str(x->a->params, key, NULL);
}

/* Polls document.readyState until it is complete (interactive with
 * dcl_ok), then reads the navigation timing. */
static int wait_ready(struct act *x, bool dcl_ok)
{
    for (;;) {
        atr_arena_clear(&x->b->arena);
        atr_buf_clear(&x->b->expr);
        atr_buf_puts(&x->b->expr, "document.readyState");
        struct atr_json *v;
        if (evaluate(x, &v) < 0) {
            if (retry_after_navigation(x) < 0)
                return -1;
            continue;
        }
        const char *s = v && v->type == ATR_JSON_STRING ? v->u.str.s : "";
        if (strcmp(s, "complete") == 0 || (dcl_ok && strcmp(s, "interactive") == 0))
            return 0;
        if (atr_cdp_now_us() >= x->deadline)
            return outcome(x, ATR_BR_TIMEOUT, "the page did not finish loading within %lld ms",
                           (long long)x->a->timeout_ms);
        if (pause_poll(x) < 0)
            return -1;
    }
}

/* The page's navigation timing: load end (or DOMContentLoaded end) from
 * the navigation's start, ms. */
static void read_load_time(struct act *x)
{
    atr_arena_clear(&x->b->arena);
    atr_buf_clear(&x->b->expr);
    atr_buf_puts(&x->b->expr,
                 "(()=>{const n=performance.getEntriesByType('navigation')[0];if(!n)return -1;"
                 "const e=n.loadEventEnd>0?n.loadEventEnd:n.domContentLoadedEventEnd;"
                 "return e>0?e-n.startTime:-1;})()");
    struct atr_json *v;
    if (evaluate(x, &v) == 0 && atr_json_is(v, ATR_JSON_NUMBER) && v->u.num >= 0)
        x->r->page_load_ms = v->u.num;
}

struct counter_wait {
    const uint64_t *counter;
    uint64_t before;
};

static bool counter_moved(void *ctx)
{
    const struct counter_wait *w = ctx;
    return *w->counter > w->before;
}

static int navigate(struct act *x, const char *method, const char *params)
{
    const char *until = param_str(x, "waitUntil");
    bool dcl = until && strcmp(until, "domcontentloaded") == 0;
    bool commit = until && strcmp(until, "commit") == 0;
    struct counter_wait cw = {dcl ? &x->b->dcls : &x->b->loads, 0};
    cw.before = *cw.counter;
    struct atr_json *res;
    if (page_call(x, method, params, &res) < 0)
        return -1;
    const char *etext = atr_json_get_str(res, "errorText", NULL);
    if (etext && *etext)
        return outcome(x, ATR_BR_FAILED, "navigation failed: %.200s", etext);
    if (commit || (strcmp(method, "Page.navigate") == 0 && !atr_json_get(res, "loaderId")))
        return 0;                              /* same-document: no load to wait for */
    struct atr_error err;
    int rc = atr_cdp_wait(x->b->c, counter_moved, &cw, x->deadline, &err);
    if (rc == ATR_CDP_TIMEOUT)
        return outcome(x, ATR_BR_TIMEOUT, "the page did not load within %lld ms",
                       (long long)x->a->timeout_ms);
    if (rc < 0)
        return cdp_outcome(x, rc, &err);
    read_load_time(x);
    return 0;
}

static int do_goto(struct act *x)
{
    const char *url = x->a->url ? x->a->url : param_str(x, "url");
    if (!url)
        return outcome(x, ATR_BR_FAILED, "the step has no url");
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_str(&w, "url", url);
    return navigate(x, "Page.navigate", params_end(&w));
}

static int mouse(struct act *x, const char *type, double px, double py, int clicks)
{
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_str(&w, "type", type);
    atr_jw_kv_fixed(&w, "x", px, 2);
    atr_jw_kv_fixed(&w, "y", py, 2);
    if (clicks) {
        atr_jw_kv_str(&w, "button", "left");
        atr_jw_kv_int(&w, "clickCount", clicks);
    }
    return page_call(x, "Input.dispatchMouseEvent", params_end(&w), NULL);
}

/* Navigation counters before an input action. */
struct nav_mark {
    uint64_t started, committed, stopped;
};

static struct nav_mark nav_mark(const struct atr_browser *b)
{
    return (struct nav_mark){b->nav_started, b->nav_committed, b->nav_stopped};
}

struct nav_wait {
    const struct atr_browser *b;
    struct nav_mark m;
};

static bool nav_settled(void *ctx)
{
    const struct nav_wait *w = ctx;
    return w->b->nav_committed > w->m.committed || w->b->nav_stopped > w->m.stopped;
}

/* An input action may start a navigation (a link, a form's submit): as
 * Playwright does, wait for it to commit (or to stop: a failed or empty
 * one), so the next step sees the new document. One round trip first:
 * events the action caused arrive before its reply. */
static int settle_navigation(struct act *x, struct nav_mark before)
{
    bool gone = false;   /* the round trip itself lost the page: a navigation began */
    if (page_call(x, "Runtime.evaluate", "{\"expression\":\"0\"}", NULL) < 0) {
        if (!navigating(x))
            return -1;
        gone = true;
    }
    if (!gone && x->b->nav_started == before.started)
        return 0;
    struct nav_wait w = {x->b, before};
    struct atr_error err;
    int rc = atr_cdp_wait(x->b->c, nav_settled, &w, x->deadline, &err);
    if (rc == ATR_CDP_TIMEOUT)
        return outcome(x, ATR_BR_TIMEOUT, "the navigation it started did not commit within "
                       "%lld ms", (long long)x->a->timeout_ms);
    return rc < 0 ? cdp_outcome(x, rc, &err) : 0;
}

static int do_click(struct act *x, int times, bool hover_only)
{
    struct found f;
    if (probe(x, x->a->selector, "probe", NULL, WANT_VISIBLE, &f) < 0 ||
        mouse(x, "mouseMoved", f.x, f.y, 0) < 0)
        return -1;
    struct nav_mark started = nav_mark(x->b);
    for (int k = 1; !hover_only && k <= times; k++)
        if (mouse(x, "mousePressed", f.x, f.y, k) < 0 || mouse(x, "mouseReleased", f.x, f.y, k) < 0)
            return -1;
    return hover_only ? 0 : settle_navigation(x, started);
}

static int insert_text(struct act *x, const char *text)
{
    if (!text || !*text)
        return 0;
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_str(&w, "text", text);
    return page_call(x, "Input.insertText", params_end(&w), NULL);
}

static int do_fill(struct act *x)
{
    const char *value = param_str(x, "value");
    struct found f;
    if (probe(x, x->a->selector, "clear", NULL, WANT_VISIBLE, &f) < 0)
        return -1;
    return insert_text(x, value);
}

static int do_type(struct act *x)
{
    const char *text = param_str(x, "text");
    struct found f;
    if (x->a->selector && probe(x, x->a->selector, "focus", NULL, WANT_VISIBLE, &f) < 0)
        return -1;
    return insert_text(x, text);
}

/* Key names as Playwright writes them: "Enter", "Control+a", "x". */
struct keydef {
    const char *name;
    int code;
    const char *text;
};

static const struct keydef keys[] = {
    {"Enter", 13, "\r"}, {"Tab", 9, NULL}, {"Escape", 27, NULL}, {"Backspace", 8, NULL},
    {"Delete", 46, NULL}, {"ArrowLeft", 37, NULL}, {"ArrowUp", 38, NULL},
    {"ArrowRight", 39, NULL}, {"ArrowDown", 40, NULL}, {"Home", 36, NULL}, {"End", 35, NULL},
    {"PageUp", 33, NULL}, {"PageDown", 34, NULL}, {"Space", 32, " "}, {" ", 32, " "},
};

static int key_event(struct act *x, const char *type, const char *key, int code, const char *text,
                     int modifiers)
{
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_str(&w, "type", type);
    atr_jw_kv_str(&w, "key", key);
    atr_jw_kv_int(&w, "windowsVirtualKeyCode", code);
    atr_jw_kv_int(&w, "modifiers", modifiers);
    if (text)
        atr_jw_kv_str(&w, "text", text);
    return page_call(x, "Input.dispatchKeyEvent", params_end(&w), NULL);
}

static int press_key(struct act *x, const char *combo)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", combo);
    int mods = 0;
    char *key = buf, *plus;
    while ((plus = strchr(key, '+')) && plus[1]) {
        *plus = '\0';
        mods |= strcmp(key, "Alt") == 0 ? 1 : strcmp(key, "Control") == 0 ? 2
              : strcmp(key, "Meta") == 0 ? 4 : strcmp(key, "Shift") == 0 ? 8 : 0;
        key = plus + 1;
    }
    int code = 0;
    const char *text = NULL;
    char one[2] = {0, 0};
    for (size_t i = 0; i < sizeof keys / sizeof *keys && !code; i++)
        if (strcmp(keys[i].name, key) == 0) {
            code = keys[i].code;
            text = keys[i].text;
        }
    if (!code && strlen(key) == 1) {
        one[0] = key[0];
        code = toupper((unsigned char)key[0]);
        text = one;
    }
    if (!code)
        return outcome(x, ATR_BR_UNSUPPORTED, "unsupported key '%.40s'", key);
    if (mods & ~8)
        text = NULL;                     /* a shortcut types nothing */
    return key_event(x, text ? "keyDown" : "rawKeyDown", key, code, text, mods) < 0 ||
                   key_event(x, "keyUp", key, code, NULL, mods) < 0
               ? -1
               : 0;
}

static int do_press(struct act *x)
{
    const char *key = param_str(x, "key");
    struct found f;
    if (!key)
        return outcome(x, ATR_BR_FAILED, "the step has no key");
    if (x->a->selector && probe(x, x->a->selector, "focus", NULL, WANT_VISIBLE, &f) < 0)
        return -1;
    struct nav_mark started = nav_mark(x->b);
    return press_key(x, key) < 0 ? -1 : settle_navigation(x, started);
}

/* selectOption's options ([{valueOrLabel|value|label|index}] or strings)
 * as a JSON array of strings and numbers for the engine. */
static void select_arg(struct act *x, struct atr_buf *out)
{
    const struct atr_json *opts = atr_json_get(x->a->params, "options");
    if (!opts)
        opts = atr_json_get(x->a->params, "values");
    atr_buf_putc(out, '[');
    bool first = true;
    for (const struct atr_json *o = atr_json_is(opts, ATR_JSON_ARRAY) ? opts->u.kids.first : NULL;
         o; o = o->next) {
        const struct atr_json *v = o->type == ATR_JSON_OBJECT ? NULL : o;
        static const char *const keys_[] = {"valueOrLabel", "value", "label", "index"};
        for (size_t i = 0; !v && i < 4; i++)
            v = atr_json_get(o, keys_[i]);
        if (!v || (v->type != ATR_JSON_STRING && v->type != ATR_JSON_NUMBER))
            continue;
        if (!first)
            atr_buf_putc(out, ',');
        atr_json_write_value(out, v);
        first = false;
    }
    atr_buf_putc(out, ']');
}

static int do_select(struct act *x)
{
    struct atr_buf arg = ATR_BUF_INIT;
    select_arg(x, &arg);
    struct found f;
    int rc = probe(x, x->a->selector, "select", arg.data, WANT_VISIBLE, &f);
    atr_buf_release(&arg);
    return rc;
}

static int do_wait_selector(struct act *x)
{
    const char *state = param_str(x, "state");
    enum want w = !state || strcmp(state, "visible") == 0 ? WANT_VISIBLE
                  : strcmp(state, "attached") == 0        ? WANT_ATTACHED
                  : strcmp(state, "detached") == 0        ? WANT_GONE
                                                          : WANT_HIDDEN;
    struct found f;
    return probe(x, x->a->selector, "count", NULL, w, &f);
}

static int do_wait_load(struct act *x)
{
    const char *state = param_str(x, "state");
    if (wait_ready(x, state && strcmp(state, "domcontentloaded") == 0) < 0)
        return -1;
    read_load_time(x);
    return 0;
}

/* After document.close(): a promise of the document's stylesheets and
 * images, loaded or failed. Its listeners are added in the same task as
 * the write, so no load or error event can fire before them (a written
 * document's readyState may say "complete" before its stylesheet is even
 * requested); lazy images and links without a URL are not waited for. */
static const char subresources_js[] =
    "new Promise(d=>{const w=[...document.querySelectorAll('link[rel~=stylesheet i]')]"
    ".filter(l=>l.href&&!l.disabled&&!l.sheet).concat([...document.images]"
    ".filter(i=>!i.complete&&i.loading!=='lazy'));let n=w.length;if(!n)return d(0);"
    "const one=()=>{if(--n===0)d(0)};"
    "for(const e of w){e.addEventListener('load',one);e.addEventListener('error',one)}})";

/* The page's document replaced by html, loaded with its stylesheets and
 * images (from the recording), as setContent's "load" waits. */
static int write_document(struct act *x, const char *html, size_t len)
{
    atr_buf_clear(&x->b->expr);
    atr_buf_puts(&x->b->expr, "document.open();document.write(");
    atr_json_write_string(&x->b->expr, html ? html : "", html ? len : 0);
    atr_buf_puts(&x->b->expr, ");document.close();");
    atr_buf_puts(&x->b->expr, subresources_js);
    if (evaluate(x, NULL) < 0)
        return -1;
    return wait_ready(x, false);
}

static int do_set_content(struct act *x)
{
    const char *html = param_str(x, "html");
    return write_document(x, html, html ? strlen(html) : 0);
}

static int do_screenshot(struct act *x)
{
    struct atr_json *res;
    if (page_call(x, "Page.captureScreenshot", "{\"format\":\"png\"}", &res) < 0)
        return -1;
    size_t len = 0;
    atr_json_get_str(res, "data", &len);
    x->r->screenshot_bytes = len / 4 * 3;
    return 0;
}

static int do_wheel(struct act *x)
{
    double dx = 0, dy = 0;
    atr_json_get_num(x->a->params, "deltaX", &dx);
    atr_json_get_num(x->a->params, "deltaY", &dy);
    struct atr_jw w;
    params_begin(x, &w);
    atr_jw_kv_str(&w, "type", "mouseWheel");
    atr_jw_kv_int(&w, "x", 100);
    atr_jw_kv_int(&w, "y", 100);
    atr_jw_kv_fixed(&w, "deltaX", dx, 2);
    atr_jw_kv_fixed(&w, "deltaY", dy, 2);
    return page_call(x, "Input.dispatchMouseEvent", params_end(&w), NULL);
}

static int do_evaluate(struct act *x)
{
    const char *expr = param_str(x, "expression");
    if (!expr)
        return outcome(x, ATR_BR_FAILED, "the step has no expression");
    const struct atr_json *fn = atr_json_get(x->a->params, "isFunction");
    atr_buf_clear(&x->b->expr);
    if (fn && fn->type == ATR_JSON_TRUE)
        atr_buf_printf(&x->b->expr, "(%s)()", expr);
    else
        atr_buf_puts(&x->b->expr, expr);
    return evaluate(x, NULL);
}

static int do_probe(struct act *x)
{
    struct found f;
    if (!x->a->selector)
        return 0;
    return probe(x, x->a->selector, "count", NULL, WANT_ATTACHED, &f);
}

static int do_scroll_into(struct act *x)
{
    struct found f;
    return probe(x, x->a->selector, "probe", NULL, WANT_ATTACHED, &f);
}

static int do_reload(struct act *x) { return navigate(x, "Page.reload", "{}"); }

enum verb {
    V_UNKNOWN, V_NOOP, V_GOTO, V_RELOAD, V_SET_CONTENT, V_CLICK, V_DBLCLICK, V_HOVER, V_FILL,
    V_TYPE, V_PRESS, V_SELECT, V_WAIT_SEL, V_WAIT_LOAD, V_SCREENSHOT, V_WHEEL, V_SCROLL_INTO,
    V_EVAL, V_PROBE,
};

static const struct {
    const char *name;
    enum verb v;
} verbs[] = {
    {"goto", V_GOTO}, {"navigate", V_GOTO}, {"reload", V_RELOAD}, {"setContent", V_SET_CONTENT},
    {"click", V_CLICK}, {"tap", V_CLICK}, {"check", V_CLICK}, {"uncheck", V_CLICK},
    {"setChecked", V_CLICK}, {"dblclick", V_DBLCLICK}, {"hover", V_HOVER}, {"fill", V_FILL},
    {"clear", V_FILL}, {"type", V_TYPE}, {"pressSequentially", V_TYPE},
    {"keyboardType", V_TYPE}, {"insertText", V_TYPE}, {"keyboardInsertText", V_TYPE},
    {"press", V_PRESS}, {"keyboardPress", V_PRESS}, {"selectOption", V_SELECT},
    {"waitForSelector", V_WAIT_SEL}, {"waitFor", V_WAIT_SEL},
    {"waitForLoadState", V_WAIT_LOAD}, {"waitForNavigation", V_WAIT_LOAD},
    {"waitForURL", V_WAIT_LOAD}, {"screenshot", V_SCREENSHOT}, {"mouseWheel", V_WHEEL},
    {"wheel", V_WHEEL}, {"scrollIntoViewIfNeeded", V_SCROLL_INTO}, {"evaluate", V_EVAL},
    {"evaluateExpression", V_EVAL}, {"evaluateHandle", V_EVAL},
    {"evaluateExpressionHandle", V_EVAL}, {"textContent", V_PROBE}, {"innerText", V_PROBE},
    {"innerHTML", V_PROBE}, {"getAttribute", V_PROBE}, {"inputValue", V_PROBE},
    {"isVisible", V_PROBE}, {"isHidden", V_PROBE}, {"isEnabled", V_PROBE},
    {"isChecked", V_PROBE}, {"queryCount", V_PROBE}, {"count", V_PROBE},
    /* Not page actions: the context, routing (the recording answers every
     * request), tracing, assertions, timers (think time is not replayed). */
    {"newPage", V_NOOP}, {"newContext", V_NOOP}, {"launch", V_NOOP}, {"route", V_NOOP},
    {"unroute", V_NOOP}, {"unrouteAll", V_NOOP}, {"setNetworkInterceptionPatterns", V_NOOP},
    {"fulfill", V_NOOP}, {"continue", V_NOOP}, {"abort", V_NOOP}, {"fallback", V_NOOP},
    {"close", V_NOOP}, {"start", V_NOOP}, {"stop", V_NOOP}, {"startChunk", V_NOOP},
    {"stopChunk", V_NOOP}, {"tracingStart", V_NOOP}, {"tracingStop", V_NOOP},
    {"tracingStartChunk", V_NOOP}, {"tracingStopChunk", V_NOOP}, {"setViewportSize", V_NOOP},
    {"expect", V_NOOP}, {"step", V_NOOP}, {"addInitScript", V_NOOP},
    {"exposeBinding", V_NOOP}, {"bringToFront", V_NOOP}, {"waitForTimeout", V_NOOP},
    {"title", V_NOOP}, {"url", V_NOOP}, {"content", V_NOOP}, {"setExtraHTTPHeaders", V_NOOP},
    {"grantPermissions", V_NOOP}, {"clearCookies", V_NOOP}, {"addCookies", V_NOOP},
    {"cookies", V_NOOP}, {"storageState", V_NOOP}, {"setDefaultTimeout", V_NOOP},
    {"setDefaultNavigationTimeout", V_NOOP}, {"waitForEvent", V_NOOP},
};

/* The protocol method when known, else apiName's last word; "expect.*"
 * is an assertion whatever follows. */
static enum verb verb_of(const struct atr_browser_action *a)
{
    const char *name = a->method;
    if (a->action && strncmp(a->action, "expect", 6) == 0)
        return V_NOOP;
    if (!name || !*name) {
        const char *dot = a->action ? strrchr(a->action, '.') : NULL;
        name = dot ? dot + 1 : a->action;
    }
    for (size_t i = 0; name && i < sizeof verbs / sizeof *verbs; i++)
        if (strcmp(verbs[i].name, name) == 0)
            return verbs[i].v;
    return V_UNKNOWN;
}

static int dispatch(struct act *x, enum verb v)
{
    switch (v) {
    case V_GOTO: return do_goto(x);
    case V_RELOAD: return do_reload(x);
    case V_SET_CONTENT: return do_set_content(x);
    case V_CLICK: return do_click(x, 1, false);
    case V_DBLCLICK: return do_click(x, 2, false);
    case V_HOVER: return do_click(x, 0, true);
    case V_FILL: return do_fill(x);
    case V_TYPE: return do_type(x);
    case V_PRESS: return do_press(x);
    case V_SELECT: return do_select(x);
    case V_WAIT_SEL: return do_wait_selector(x);
    case V_WAIT_LOAD: return do_wait_load(x);
    case V_SCREENSHOT: return do_screenshot(x);
    case V_WHEEL: return do_wheel(x);
    case V_SCROLL_INTO: return do_scroll_into(x);
    case V_PROBE: return do_probe(x);
    case V_EVAL: return do_evaluate(x);
    case V_NOOP:
    case V_UNKNOWN: break;
    }
    return 0;
}

/* ---- restoring the recorded DOM ---- */

/* Actions that wait for their selector to be there: the ones a missing
 * DOM would leave waiting (waits for hidden/detached want the opposite). */
static bool wants_selector(const struct act *x, enum verb v)
{
    if (!x->a->selector || !*x->a->selector)
        return false;
    if (v == V_WAIT_SEL) {
        const char *state = param_str(x, "state");
        return !state || strcmp(state, "visible") == 0 || strcmp(state, "attached") == 0;
    }
    return v == V_CLICK || v == V_DBLCLICK || v == V_HOVER || v == V_FILL || v == V_TYPE ||
           v == V_PRESS || v == V_SELECT || v == V_SCROLL_INTO || v == V_PROBE;
}

/* Does the live page show the selector within the action's live wait?
 * An unsupported selector or a dead browser sets the step's outcome. */
static bool live_has(struct act *x)
{
    int64_t saved = x->deadline, until = atr_cdp_now_us() + x->a->live_wait_ms * 1000;
    if (until < x->deadline)
        x->deadline = until;
    struct found f;
    int rc = probe(x, x->a->selector, "count", NULL, WANT_ATTACHED, &f);
    x->deadline = saved;
    if (rc == 0 || x->r->status != ATR_BR_NO_MATCH)
        return true;
    x->r->status = ATR_BR_OK;
    x->r->error[0] = '\0';
    return false;
}

/* Sets the action's snapshot as the page's document where it is needed
 * (docs/browser.md); the outcome of a failed write is the step's. Without
 * a snapshot nothing is tried (the action's end tells whether one was
 * missed). */
static void restore_dom(struct act *x, enum verb v)
{
    const struct atr_browser_action *a = x->a;
    if (a->restore == ATR_RESTORE_NEVER || !a->snapshot_html || !wants_selector(x, v))
        return;
    if (a->restore == ATR_RESTORE_AUTO) {
        bool live = live_has(x);
        if (x->r->status != ATR_BR_OK)
            return;
        if (live) {
            x->r->restore = ATR_RS_LIVE;
            return;
        }
    }
    struct atr_browser_net before = x->b->net;
    if (write_document(x, a->snapshot_html, a->snapshot_len) < 0)
        return;
    x->r->restore = ATR_RS_RESTORED;
    x->r->restore_missing = x->b->net.unrecorded - before.unrecorded +
                            x->b->net.missing - before.missing;
    if (x->r->restore_missing)
        snprintf(x->r->restore_missing_url, sizeof x->r->restore_missing_url, "%s",
                 x->b->last_missing);
}

/* After the action: a selector that never appeared, with or without a
 * restored snapshot, is what could not be restored. */
static void restore_verdict(struct act *x, enum verb v)
{
    if (x->r->status != ATR_BR_NO_MATCH || x->a->restore == ATR_RESTORE_NEVER ||
        !wants_selector(x, v))
        return;
    if (x->r->restore == ATR_RS_RESTORED)
        x->r->restore = ATR_RS_SELECTOR_MISSING;
    else if (!x->a->snapshot_html)
        x->r->restore = ATR_RS_SNAPSHOT_MISSING;
}

/* The action on its recorded DOM where that is needed. */
static void run_restored(struct act *x, enum verb v)
{
    restore_dom(x, v);
    if (x->r->status == ATR_BR_OK)
        dispatch(x, v);
    restore_verdict(x, v);
}

void atr_browser_run(struct atr_browser *b, const struct atr_browser_action *a,
                     struct atr_browser_result *r)
{
    memset(r, 0, sizeof *r);
    r->page_load_ms = -1;
    struct act x = {b, a, r, atr_cdp_now_us() + (a->timeout_ms > 0 ? a->timeout_ms : 30000) * 1000};
    struct atr_browser_net before = b->net;
    enum verb v = verb_of(a);
    if (v == V_UNKNOWN)
        outcome(&x, ATR_BR_UNSUPPORTED, "unsupported browser action '%.100s'",
                a->action ? a->action : "(none)");
    else if (v == V_NOOP)
        r->status = ATR_BR_NOOP;
    else if (atr_browser_dead(b))
        outcome(&x, ATR_BR_CRASHED, "the browser is gone");
    else
        run_restored(&x, v);
    /* Requests the action set off may still be in flight: serve what has
     * arrived, so they count for this step. */
    struct atr_error err;
    if (!atr_browser_dead(b))
        atr_cdp_wait(b->c, NULL, NULL, atr_cdp_now_us(), &err);
    r->net.served = b->net.served - before.served;
    r->net.unrecorded = b->net.unrecorded - before.unrecorded;
    r->net.missing = b->net.missing - before.missing;
    atr_arena_clear(&b->arena);
}
