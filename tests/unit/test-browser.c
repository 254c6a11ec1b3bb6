/* test-browser.c - atr's DevTools driver against the real headless
 * Chromium: the pipe protocol (commands, replies by id, events, garbage),
 * a page from a data: URL, actions (setContent, click, fill, press,
 * select, wait, screenshot, evaluate), selectors (CSS, text=, role=,
 * internal:role, >> chains, nth=), a selector matching nothing (an error
 * at its deadline), an unsupported engine, the recorded network of a real
 * Playwright trace served back, and a browser killed mid-session. Skipped
 * (not failed) where no Chromium is installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser/driver.h"
#include "runner/spawn.h"
#include "util/buf.h"

#define DATA ATR_TEST_DATA "/playwright/"

static char *const test_env[] = {"PATH=/usr/bin:/bin", NULL};

struct live {
    struct atr_spawn_proc proc;
    struct atr_browser *b;
    char profile[64];
    struct atr_netlog *nl;
};

/* Starts Chromium (no cgroup, no sandbox) and opens a session on it. */
static void start(struct live *l, const char *zip)
{
    const char *chromium = atr_browser_find();
    if (!chromium)
        skip();
    memset(l, 0, sizeof *l);
    snprintf(l->profile, sizeof l->profile, "/tmp/atr-test-browser-XXXXXX");
    assert_non_null(mkdtemp(l->profile));
    struct atr_error err = {""};
    if (zip) {
        l->nl = atr_netlog_open(zip, &err);
        assert_non_null(l->nl);
    }
    int to[2], from[2];
    assert_int_equal(pipe2(to, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from, O_CLOEXEC), 0);
    struct atr_buf cmd = ATR_BUF_INIT;
    atr_browser_command(&cmd, chromium, l->profile);
    int pass[2] = {to[0], from[1]};
    struct atr_spawn_opts o = {.command = cmd.data, .cwd = l->profile, .env = test_env,
                               .pass_fds = pass, .n_pass_fds = 2};
    if (atr_spawn_start(&o, -1, &l->proc, &err) < 0)
        fail_msg("start: %s", err.msg);
    atr_buf_release(&cmd);
    close(to[0]);
    close(from[1]);
    l->b = atr_browser_open(to[1], from[0], l->nl, atr_cdp_now_us() + 30000000, &err);
    if (!l->b)
        fail_msg("open: %s", err.msg);
}

static void stop(struct live *l)
{
    atr_browser_close(l->b, atr_cdp_now_us() + 5000000);
    struct atr_spawn_result r;
    if (atr_spawn_wait(&l->proc, 5000, &r) == 0)
        fail_msg("the browser did not exit after Browser.close");
    atr_spawn_kill(&l->proc, &r);
    atr_netlog_free(l->nl);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", l->profile);
    assert_int_equal(system(rm), 0);
}

static struct atr_browser_result act(struct live *l, const char *action, const char *selector,
                                     const char *params_json, int64_t timeout_ms)
{
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *params = NULL;
    struct atr_json_err jerr;
    if (params_json)
        assert_int_equal(
            atr_json_parse(&a, params_json, strlen(params_json), NULL, &params, &jerr), 0);
    struct atr_browser_action ba = {.action = action, .selector = selector, .params = params,
                                    .timeout_ms = timeout_ms};
    struct atr_browser_result r;
    atr_browser_run(l->b, &ba, &r);
    atr_arena_release(&a);
    return r;
}

static void ok(struct live *l, const char *action, const char *selector, const char *params)
{
    struct atr_browser_result r = act(l, action, selector, params, 5000);
    if (r.status != ATR_BR_OK)
        fail_msg("%s %s: %s: %s", action, selector ? selector : "",
                 atr_browser_status_name(r.status), r.error);
}

/* The page's answer to expr (wrapped so the step fails unless it is true). */
static void expect_true(struct live *l, const char *expr)
{
    char p[1024];
    snprintf(p, sizeof p, "{\"expression\":\"if(!(%s))throw new Error('false');\"}", expr);
    struct atr_browser_result r = act(l, "page.evaluate", NULL, p, 5000);
    if (r.status != ATR_BR_OK)
        fail_msg("%s: %s", expr, r.error);
}

static void test_cdp_garbage(void **state)
{
    int p1[2], p2[2];
    assert_int_equal(pipe(p1), 0);
    assert_int_equal(pipe(p2), 0);
    struct atr_cdp *c = atr_cdp_new(p1[1], p2[0]);
    atr_cdp_feed(c, "not json", 8);
    atr_cdp_feed(c, "[1]", 3);
    atr_cdp_feed(c, "{\"no\":1}", 8);
    assert_int_equal(atr_cdp_bad_messages(c), 3);
    /* A reply that never comes: a timeout, then the peer gone: closed. */
    struct atr_error err;
    int64_t soon = atr_cdp_now_us() + 50000;
    assert_int_equal(atr_cdp_call(c, NULL, "X.y", NULL, soon, NULL, NULL, &err), ATR_CDP_TIMEOUT);
    close(p2[1]);
    int64_t later = atr_cdp_now_us() + 1000000;
    assert_int_equal(atr_cdp_call(c, NULL, "X.y", NULL, later, NULL, NULL, &err), ATR_CDP_CLOSED);
    atr_cdp_free(c);
    close(p1[0]);
}

static const char page[] =
    "{\"html\":\"<title>t</title>"
    "<form onsubmit='document.title=\\\"sent:\\\"+q.value;return false'>"
    "<label for=q>Search</label><input id=q placeholder=Find>"
    "<button type=submit>Go now</button><select id=s><option value=a>Alpha</option>"
    "<option value=b>Beta</option></select></form>"
    "<ul><li>one</li><li>two</li></ul>"
    "<div data-testid=box onclick='this.textContent=\\\"clicked\\\"'>box</div>"
    "<div id=far style='margin-top:3000px'>far</div>\"}";

static void test_actions(void **state)
{
    struct live l;
    start(&l, NULL);
    ok(&l, "page.setContent", NULL, page);
    expect_true(&l, "document.title==='t'");
    ok(&l, "locator.fill", "internal:label=\"Search\"i", "{\"value\":\"cats\"}");
    expect_true(&l, "q.value==='cats'");
    ok(&l, "locator.fill", "#q", "{\"value\":\"dogs\"}");
    ok(&l, "locator.press", "#q", "{\"key\":\"Enter\"}");
    expect_true(&l, "document.title==='sent:dogs'");
    ok(&l, "locator.selectOption", "select#s", "{\"options\":[{\"valueOrLabel\":\"Beta\"}]}");
    expect_true(&l, "s.value==='b'");
    ok(&l, "page.click", "internal:testid=[data-testid=\"box\"s]", NULL);
    expect_true(&l, "document.querySelector('[data-testid=box]').textContent"
                    "==='clicked'");
    ok(&l, "page.click", "internal:role=button[name=\"go now\"i]", NULL);
    ok(&l, "page.click", "text=Go now", NULL);
    ok(&l, "locator.click", "ul >> li >> nth=1", NULL);
    ok(&l, "page.waitForSelector", "role=listitem", NULL);
    ok(&l, "locator.scrollIntoViewIfNeeded", "#far", NULL);
    expect_true(&l, "window.scrollY>1000");
    ok(&l, "page.mouse.wheel", NULL, "{\"deltaX\":0,\"deltaY\":-5000}");
    ok(&l, "keyboard.type", NULL, "{\"text\":\"x\"}");
    struct atr_browser_result r = act(&l, "page.screenshot", NULL, "{}", 5000);
    assert_int_equal(r.status, ATR_BR_OK);
    assert_true(r.screenshot_bytes > 1000);
    /* Nothing matches: an error at the deadline, and the session goes on. */
    int64_t t0 = atr_cdp_now_us();
    r = act(&l, "page.click", "#nope", NULL, 300);
    assert_int_equal(r.status, ATR_BR_NO_MATCH);
    assert_non_null(strstr(r.error, "matched nothing within 300 ms"));
    assert_true(atr_cdp_now_us() - t0 >= 300000);
    r = act(&l, "page.click", "_react=App", NULL, 300);
    assert_int_equal(r.status, ATR_BR_UNSUPPORTED);
    assert_non_null(strstr(r.error, "_react"));
    r = act(&l, "page.frobnicate", NULL, NULL, 300);
    assert_int_equal(r.status, ATR_BR_UNSUPPORTED);
    r = act(&l, "page.route", NULL, NULL, 300);
    assert_int_equal(r.status, ATR_BR_NOOP);
    r = act(&l, "page.evaluate", NULL, "{\"expression\":\"throw new Error('boom')\"}", 2000);
    assert_int_equal(r.status, ATR_BR_FAILED);
    assert_non_null(strstr(r.error, "boom"));
    /* A data: URL navigation: loads, with a load time from the page. */
    r = act(&l, "page.goto", NULL, "{\"url\":\"data:text/html,<p id=x>hi</p>\"}", 5000);
    assert_int_equal(r.status, ATR_BR_OK);
    assert_true(r.page_load_ms >= 0);
    expect_true(&l, "document.getElementById('x').textContent==='hi'");
    stop(&l);
}

/* trace-1.37 recorded https://playwright.dev/index.html and its style.css
 * (bodies in resources/): both are served, an unrecorded URL gets 404. */
static void test_recorded_network(void **state)
{
    struct live l;
    start(&l, DATA "trace-1.37.zip");
    struct atr_browser_result r = act(&l, "page.goto", NULL,
                                      "{\"url\":\"https://playwright.dev/index.html\"}", 10000);
    if (r.status != ATR_BR_OK)
        fail_msg("goto: %s", r.error);
    assert_true(r.page_load_ms >= 0);
    expect_true(&l, "document.body.textContent.includes('hello')");
    expect_true(&l, "getComputedStyle(document.querySelector('div')).backgroundColor"
                    "==='rgb(255, 0, 0)'");
    const struct atr_browser_net *net = atr_browser_net(l.b);
    assert_int_equal(net->served, 2);
    r = act(&l, "page.goto", NULL, "{\"url\":\"https://example.com/\"}", 10000);
    assert_int_equal(r.status, ATR_BR_OK);          /* a 404 page still loads */
    assert_true(r.net.unrecorded >= 1);           /* the page, maybe its favicon */
    expect_true(&l, "document.body.textContent.includes('not in the recorded trace')");
    stop(&l);
}

/* The browser killed under a step: that step ends "crashed", promptly. */
static void test_killed(void **state)
{
    struct live l;
    start(&l, NULL);
    ok(&l, "page.setContent", NULL, "{\"html\":\"<p>x</p>\"}");
    kill(-l.proc.pid, SIGKILL);
    int64_t t0 = atr_cdp_now_us();
    struct atr_browser_result r = act(&l, "page.click", "#never", NULL, 20000);
    assert_int_equal(r.status, ATR_BR_CRASHED);
    assert_true(atr_cdp_now_us() - t0 < 10000000);
    assert_true(atr_browser_dead(l.b));
    atr_browser_close(l.b, 0);
    struct atr_spawn_result sr;
    atr_spawn_kill(&l.proc, &sr);
    assert_int_equal(sr.term_signal, SIGKILL);
    atr_netlog_free(l.nl);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", l.profile);
    assert_int_equal(system(rm), 0);
}

static void test_netlog_missing(void **state)
{
    struct atr_error err = {""};
    /* test-trace1.zip records 18 responses but ships no resources/. */
    struct atr_netlog *nl = atr_netlog_open(DATA "test-trace1.zip", &err);
    assert_non_null(nl);
    assert_int_equal(atr_netlog_count(nl), 18);
    struct atr_net_entry *e = atr_netlog_find(nl, "GET", "https://playwright.dev/");
    assert_non_null(e);
    assert_int_equal(e->status, 200);
    struct atr_buf body = ATR_BUF_INIT;
    assert_int_equal(atr_netlog_body(nl, e, &body, &err), -1);
    assert_non_null(strstr(err.msg, "is not in the archive"));
    assert_null(atr_netlog_find(nl, "POST", "https://playwright.dev/"));
    atr_buf_release(&body);
    atr_netlog_free(nl);
    assert_null(atr_netlog_open(DATA "SOURCE.txt", &err));
    assert_non_null(strstr(err.msg, "expected a Playwright trace zip"));
    struct atr_buf b = ATR_BUF_INIT;
    atr_base64_append(&b, "hello", 5);
    assert_memory_equal(b.data, "aGVsbG8=", 8);
    atr_buf_release(&b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cdp_garbage),
        cmocka_unit_test(test_netlog_missing),
        cmocka_unit_test(test_actions),
        cmocka_unit_test(test_recorded_network),
        cmocka_unit_test(test_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
