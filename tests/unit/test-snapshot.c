/* test-snapshot.c - Playwright DOM snapshots rendered back into HTML
 * (browser/snapshot.h): references to earlier snapshots, form state,
 * scripts and handlers dropped, bad references refused; and the browser
 * step timeout rule (runner/replay.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "browser/netlog.h"
#include "browser/snapshot.h"
#include "runner/replay.h"

static void add(struct atr_snapshots *ss, const char *line)
{
    struct atr_json_err jerr;
    assert_int_equal(atr_snapshots_add_line(ss, line, strlen(line), &jerr), 0);
}

static void expect_html(struct atr_snapshots *ss, const char *name, const char *want)
{
    struct atr_buf out = ATR_BUF_INIT;
    assert_int_equal(atr_snapshots_render(ss, name, &out), 0);
    assert_string_equal(out.data, want);
    atr_buf_release(&out);
}

/* v7+ names: "phase" and "callId"; a later snapshot that refers back to
 * nodes of the first (post-order over strings and elements). */
static void test_references(void **state)
{
    (void)state;
    struct atr_snapshots *ss = atr_snapshots_new();
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"callId\":\"c@1\",\"phase\":\"before\","
            "\"frameId\":\"f1\",\"doctype\":\"html\",\"isMainFrame\":true,\"html\":"
            "[\"HTML\",{},[\"HEAD\",{},[\"TITLE\",{},\"T\"]],[\"BODY\",{},"
            "[\"P\",{\"id\":\"a\"},\"x < y & z\"],[\"SCRIPT\",{},\"alert(1)\"]]]}}");
    /* nodes of the first: 0 "T", 1 TITLE, 2 HEAD, 3 "x < y & z", 4 P, 5 "alert(1)",
     * 6 SCRIPT, 7 BODY, 8 HTML */
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"callId\":\"c@2\",\"phase\":\"before\","
            "\"frameId\":\"f1\",\"html\":[\"HTML\",{},[[1,2]],[\"BODY\",{},[[1,4]],"
            "[\"INPUT\",{\"__playwright_value_\":\"Ada\",\"onclick\":\"x()\",\"id\":\"n\"}],"
            "[\"INPUT\",{\"type\":\"checkbox\",\"__playwright_checked_\":\"true\","
            "\"__playwright_target__\":\"\"}]]]}}");
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"callId\":\"c@3\",\"phase\":\"after\","
            "\"frameId\":\"f1\",\"html\":[[1,0]]}}");
    add(ss, "{\"type\":\"before\",\"callId\":\"c@9\"}");   /* not a snapshot: ignored */
    assert_int_equal(atr_snapshots_count(ss), 3);
    expect_html(ss, "before@c@1",
                "<!DOCTYPE html><HTML><HEAD><TITLE>T</TITLE></HEAD><BODY>"
                "<P id=\"a\">x &lt; y &amp; z</P></BODY></HTML>");
    expect_html(ss, "before@c@2",
                "<HTML><HEAD><TITLE>T</TITLE></HEAD><BODY><P id=\"a\">x &lt; y &amp; z</P>"
                "<INPUT value=\"Ada\" id=\"n\"><INPUT type=\"checkbox\" checked></BODY></HTML>");
    /* [[1,0]] in the third: node 0 of the second, whose references are
     * not numbered (post-order: INPUT, INPUT, BODY, HTML). */
    expect_html(ss, "after@c@3", "<INPUT value=\"Ada\" id=\"n\">");
    struct atr_buf out = ATR_BUF_INIT;
    assert_int_equal(atr_snapshots_render(ss, "before@c@7", &out), -1);
    atr_buf_release(&out);
    atr_snapshots_free(ss);
}

/* v4-v6 names (snapshotName), a style sheet from the CSSOM, only the main
 * frame's snapshot, and references that point forward or past the end. */
static void test_names_and_bad_refs(void **state)
{
    (void)state;
    struct atr_snapshots *ss = atr_snapshots_new();
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"snapshotName\":\"before@call@4\","
            "\"frameId\":\"sub\",\"isMainFrame\":false,\"html\":[\"HTML\",{},\"iframe\"]}}");
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"snapshotName\":\"before@call@4\","
            "\"frameId\":\"main\",\"isMainFrame\":true,\"html\":[\"HTML\",{},[\"STYLE\","
            "{\"__playwright_style_sheet_\":\"p>a{color:red}\"},\"old\"],[[5,0]],[[0,99]],"
            "[\"BR\"]]}}");
    expect_html(ss, "before@call@4", "<HTML><STYLE>p>a{color:red}</STYLE><BR></HTML>");
    atr_snapshots_free(ss);
}

/* A crafted trace: names and texts that would write markup or code of
 * their own are dropped or escaped. */
static void test_crafted(void **state)
{
    (void)state;
    struct atr_snapshots *ss = atr_snapshots_new();
    add(ss, "{\"type\":\"frame-snapshot\",\"snapshot\":{\"snapshotName\":\"s\","
            "\"frameId\":\"m\",\"html\":[\"BODY\",{\"x onload=alert(1)\":\"1\","
            "\"onclick\":\"f()\",\"open\":\"\"},[\"A\",{\"href\":\" JavaScript:f()\"},\"a\"],"
            "[\"IFRAME\",{\"srcdoc\":\"<script>f()</script>\"}],[\"IMG src=x onerror=f()\"],"
            "[\"STYLE\",{},\"p{}</style><script>f()</script>\"]]}}");
    expect_html(ss, "s", "<BODY open=\"\"><A>a</A><IFRAME></IFRAME>"
                         "<STYLE>p{}\\3C /style>\\3C script>f()\\3C /script></STYLE></BODY>");
    atr_snapshots_free(ss);
}

static void test_not_json(void **state)
{
    (void)state;
    struct atr_snapshots *ss = atr_snapshots_new();
    struct atr_json_err jerr;
    const char *cut = "{\"type\":\"frame-snapshot\",\"snapshot\":{\"html\":[";
    assert_int_equal(atr_snapshots_add_line(ss, cut, strlen(cut), &jerr), -1);
    assert_true(jerr.col > 1);
    atr_snapshots_free(ss);
}

/* The recorded trace: every "before" snapshot of a locator action renders
 * the form it acted on. */
static void test_recorded_trace(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_netlog *nl = atr_netlog_open(ATR_TEST_DATA "/browser/restore.zip", &err);
    assert_non_null(nl);
    struct atr_snapshots *ss = atr_netlog_snapshots(nl);
    assert_int_equal(atr_snapshots_count(ss), 19);   /* every frame-snapshot line */
    struct atr_buf out = ATR_BUF_INIT;
    assert_int_equal(atr_snapshots_render(ss, "before@cwnp@19", &out), 0);
    assert_non_null(strstr(out.data, "<BUTTON id=\"submit\" type=\"button\">Create account"));
    assert_non_null(strstr(out.data, "<INPUT value=\"ada@example.com\" id=\"email\""));
    assert_non_null(strstr(out.data, "<INPUT value=\"on\" checked type=\"checkbox\" id=\"terms\">"));
    assert_non_null(strstr(out.data, "href=\"https://app.test/style.css\""));
    assert_null(strstr(out.data, "SCRIPT"));
    assert_null(strstr(out.data, "id=\"done\""));
    assert_int_equal(atr_snapshots_render(ss, "before@cwnp@21", &out), 0);
    assert_null(strstr(out.data, "id=\"done\""));   /* added 300 ms after */
    assert_int_equal(atr_snapshots_render(ss, "after@cwnp@21", &out), 0);
    assert_non_null(strstr(out.data, "<P id=\"done\">Welcome</P>"));
    atr_buf_release(&out);
    atr_netlog_free(nl);
}

static void test_timeout_rule(void **state)
{
    (void)state;
    struct atr_step s = {.dur_ms = 3, .timeout_ms = ATR_UNSET};
    assert_int_equal(atr_browser_step_timeout_ms(&s, 0), 5000);     /* the floor */
    s.dur_ms = 1200;
    assert_int_equal(atr_browser_step_timeout_ms(&s, 0), 12000);    /* 10x */
    s.dur_ms = 4000;
    assert_int_equal(atr_browser_step_timeout_ms(&s, 0), 30000);    /* the cap */
    s.dur_ms = ATR_UNSET;
    assert_int_equal(atr_browser_step_timeout_ms(&s, 0), 30000);    /* not recorded */
    assert_int_equal(atr_browser_step_timeout_ms(&s, 2000), 2000);  /* --browser-timeout */
    s.timeout_ms = 7000;
    assert_int_equal(atr_browser_step_timeout_ms(&s, 0), 7000);     /* the trace's own */
    /* The call's recorded params.timeout (Playwright's own setting) when lower. */
    struct atr_arena a = ATR_ARENA_INIT;
    struct atr_json *extra;
    struct atr_json_err jerr;
    const char *x = "{\"params\":{\"selector\":\"#a\",\"timeout\":2500}}";
    assert_int_equal(atr_json_parse(&a, x, strlen(x), NULL, &extra, &jerr), 0);
    struct atr_step p = {.dur_ms = 3, .timeout_ms = ATR_UNSET, .extra = extra};
    assert_int_equal(atr_browser_step_timeout_ms(&p, 0), 2500);
    p.dur_ms = 100;
    assert_int_equal(atr_browser_step_timeout_ms(&p, 0), 2500);
    x = "{\"params\":{\"timeout\":0}}";                           /* 0: no timeout */
    assert_int_equal(atr_json_parse(&a, x, strlen(x), NULL, &p.extra, &jerr), 0);
    assert_int_equal(atr_browser_step_timeout_ms(&p, 0), 5000);
    atr_arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_references),
        cmocka_unit_test(test_names_and_bad_refs),
        cmocka_unit_test(test_crafted),
        cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_recorded_trace),
        cmocka_unit_test(test_timeout_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
