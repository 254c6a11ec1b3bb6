/* test-webaction.c - the BrowserGym / WebArena action-string parser on the
 * action forms the Go-Browse and NNetNav data carry, and on broken ones. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "trace/webaction.h"

/* Parses the only action of s: its verb, target and url ("" when none). */
static void one(const char *s, enum atr_web_style style, const char *verb, const char *target,
                const char *url)
{
    struct atr_web_action a;
    size_t pos = 0, len = strlen(s);
    if (atr_web_action_next(s, len, &pos, &a) != 1)
        fail_msg("not parsed: %s", s);
    assert_int_equal(a.style, style);
    assert_string_equal(a.verb, verb);
    char got[256] = "";
    if (a.target)
        memcpy(got, a.target, a.target_len < 255 ? a.target_len : 255);
    assert_string_equal(got, target);
    memset(got, 0, sizeof got);
    if (a.url)
        memcpy(got, a.url, a.url_len < 255 ? a.url_len : 255);
    assert_string_equal(got, url);
    assert_int_equal(atr_web_action_next(s, len, &pos, &a), 0);
}

static void test_browsergym(void **state)
{
    (void)state;
    one("click('a123')", ATR_WEB_BROWSERGYM, "click", "a123", "");
    one("click(\"a123\", button=\"right\")", ATR_WEB_BROWSERGYM, "click", "a123", "");
    one("fill('b45', 'hello, (world)')", ATR_WEB_BROWSERGYM, "fill", "b45", "");
    one("fill('b45', 'it\\'s')", ATR_WEB_BROWSERGYM, "fill", "b45", "");
    one("select_option('12', ['a', 'b'])", ATR_WEB_BROWSERGYM, "select_option", "12", "");
    one("press(None, 'Enter')", ATR_WEB_BROWSERGYM, "press", "", "");
    one("press('a1', 'ControlOrMeta+a')", ATR_WEB_BROWSERGYM, "press", "a1", "");
    one("goto('http://localhost:7770/a?b=1,2')", ATR_WEB_BROWSERGYM, "goto", "",
        "http://localhost:7770/a?b=1,2");
    one("goto(url='http://x.test/')", ATR_WEB_BROWSERGYM, "goto", "", "http://x.test/");
    one("click(bid='77')", ATR_WEB_BROWSERGYM, "click", "77", "");
    one("drag_and_drop('1', '2')", ATR_WEB_BROWSERGYM, "drag_and_drop", "1", "");
    one("scroll(0, 200)", ATR_WEB_BROWSERGYM, "scroll", "", "");
    one("  go_back( )  ", ATR_WEB_BROWSERGYM, "go_back", "", "");
    one("noop(1000)", ATR_WEB_BROWSERGYM, "noop", "", "");
    one("send_msg_to_user('done: 3 items')", ATR_WEB_BROWSERGYM, "send_msg_to_user", "", "");
    one("report_infeasible('no such page')", ATR_WEB_BROWSERGYM, "report_infeasible", "", "");
    one("mouse_click(10.5, 20)", ATR_WEB_BROWSERGYM, "mouse_click", "", "");
}

static void test_webarena(void **state)
{
    (void)state;
    one("click [1234]", ATR_WEB_WEBARENA, "click", "1234", "");
    one("type [56] [my text] [1]", ATR_WEB_WEBARENA, "type", "56", "");
    one("hover [7]", ATR_WEB_WEBARENA, "hover", "7", "");
    one("press [Ctrl+Enter]", ATR_WEB_WEBARENA, "press", "", "");
    one("scroll [down]", ATR_WEB_WEBARENA, "scroll", "", "");
    one("goto [http://localhost:9999/forums]", ATR_WEB_WEBARENA, "goto", "",
        "http://localhost:9999/forums");
    one("stop [N/A]", ATR_WEB_WEBARENA, "stop", "", "");
    one("go_back", ATR_WEB_WEBARENA, "go_back", "", "");
    one("close_tab", ATR_WEB_WEBARENA, "close_tab", "", "");
}

/* The value an element action enters (content: kept only on request). */
static void value(const char *s, const char *want)
{
    struct atr_web_action a;
    size_t pos = 0;
    assert_int_equal(atr_web_action_next(s, strlen(s), &pos, &a), 1);
    char got[256] = "";
    if (a.value)
        memcpy(got, a.value, a.value_len < 255 ? a.value_len : 255);
    assert_string_equal(got, want);
}

static void test_values(void **state)
{
    (void)state;
    value("fill('b45', 'hello, (world)')", "hello, (world)");
    value("fill(bid='b45', value='x')", "x");
    value("fill(value='x', bid='b45')", "x");
    value("press('a1', 'Enter')", "Enter");
    value("press(None, 'Enter')", "Enter");
    value("select_option('12', ['a', 'b'])", "['a', 'b']");
    value("click('a1', button='right')", "");
    value("goto('http://x.test/')", "");
    value("type [56] [my text] [1]", "my text");
    value("press [Ctrl+Enter]", "Ctrl+Enter");
    value("click [12] trailing words", "");
}

/* BrowserGym's multiaction mode: one call a line (NNetNav's converted
 * `type [..] [..] [1]` becomes a fill and a press). */
static void test_several(void **state)
{
    (void)state;
    const char *s = "fill('12', 'shoes')\npress('12', 'Enter');\n\n  click('a9')\n";
    size_t pos = 0, len = strlen(s);
    struct atr_web_action a;
    const char *want[] = {"fill", "press", "click"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(atr_web_action_next(s, len, &pos, &a), 1);
        assert_string_equal(a.verb, want[k]);
    }
    assert_int_equal(atr_web_action_next(s, len, &pos, &a), 0);
    pos = 0;
    assert_int_equal(atr_web_action_next("", 0, &pos, &a), 0);
}

static void bad(const char *s, size_t want_pos)
{
    struct atr_web_action a;
    size_t pos = 0;
    if (atr_web_action_next(s, strlen(s), &pos, &a) != -1)
        fail_msg("parsed: %s", s);
    assert_int_equal(pos, want_pos);
}

static void test_bad(void **state)
{
    (void)state;
    bad("click('a1'", 0);                 /* call never closed */
    bad("fill('a1', 'unterminated)", 0);  /* string never closed */
    bad("I will click the button", 0);    /* prose, not an action */
    bad("click [12", 0);                  /* bracket never closed */
    bad("(1)", 0);
    bad("123()", 0);
    char longverb[64];
    memset(longverb, 'x', 40);
    strcpy(longverb + 40, "()");
    bad(longverb, 0);
}

/* The second bad case above: the first action parses, the next fails. */
static void test_partial(void **state)
{
    (void)state;
    const char *s = "click('a1') ; ???";
    size_t pos = 0;
    struct atr_web_action a;
    assert_int_equal(atr_web_action_next(s, strlen(s), &pos, &a), 1);
    assert_int_equal(atr_web_action_next(s, strlen(s), &pos, &a), -1);
    assert_int_equal(pos, 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_browsergym),
        cmocka_unit_test(test_webarena),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_several),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
