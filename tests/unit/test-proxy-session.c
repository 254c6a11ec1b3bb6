/* test-proxy-session.c - which session a proxied request belongs to
 * (proxy/session.c): named by header or user, prefix continuity of a
 * growing prompt, new sessions, names the proxy makes up never meeting
 * given ones, a table grown past its first size, long names capped, and
 * eviction beyond the cap that never repeats a name's turn. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proxy/proxy-impl.h"

static size_t find(struct proxy_sessions *s, const char *name, const uint64_t *ids, size_t n,
                   const char **src)
{
    return proxy_session_find(s, name, name ? strlen(name) : 0, "header", ids, n, src);
}

static void test_named(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    size_t a = find(&s, "agent-1", NULL, 0, &src);
    assert_string_equal(src, "header");
    size_t b = find(&s, "agent-2", NULL, 0, &src);
    assert_int_not_equal(a, b);
    assert_int_equal(find(&s, "agent-1", NULL, 0, &src), a);
    assert_string_equal(s.v[a].id, "agent-1");
    proxy_sessions_release(&s);
}

static void test_prefix_continuity(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    uint64_t turn1[] = {11, 12, 13}, turn2[] = {11, 12, 13, 14, 15}, other[] = {21, 22};
    size_t a = find(&s, NULL, turn1, 3, &src);
    assert_string_equal(src, "new");
    proxy_session_note(&s, a, turn1, 3);
    size_t b = find(&s, NULL, other, 2, &src);
    assert_string_equal(src, "new");
    assert_int_not_equal(a, b);
    proxy_session_note(&s, b, other, 2);
    assert_int_equal(find(&s, NULL, turn2, 5, &src), a);     /* turn 2 extends turn 1 */
    assert_string_equal(src, "prefix");
    proxy_session_note(&s, a, turn2, 5);
    uint64_t turn3[] = {11, 12, 13, 14, 15, 16};
    assert_int_equal(find(&s, NULL, turn3, 6, &src), a);
    uint64_t fork[] = {11, 12, 99};                          /* shares less than a whole prompt */
    size_t c = find(&s, NULL, fork, 3, &src);
    assert_string_equal(src, "new");
    assert_int_not_equal(c, a);
    proxy_sessions_release(&s);
}

/* Made-up names ("~N") and given ones share no name, whichever comes first. */
static void test_made_up_names_apart(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    uint64_t p1[] = {31}, p2[] = {41};
    size_t given = find(&s, "~1", NULL, 0, &src);           /* looks made up */
    size_t anon = find(&s, NULL, p1, 1, &src);
    assert_string_equal(src, "new");
    assert_string_equal(s.v[anon].id, "~1");
    assert_string_equal(s.v[given].id, "~~1");
    assert_int_not_equal(find(&s, "~~1", NULL, 0, &src), given);   /* "~~~1" */
    size_t s1 = find(&s, "s1", NULL, 0, &src);
    assert_string_equal(s.v[s1].id, "s1");
    size_t anon2 = find(&s, NULL, p2, 1, &src);
    assert_string_equal(s.v[anon2].id, "~2");
    assert_int_equal(find(&s, "~2", NULL, 0, &src) != anon2, 1);
    proxy_sessions_release(&s);
}

/* Names the journal writes alike (invalid UTF-8 as U+FFFD, cut at a NUL)
 * are one session, so no trace id repeats in it. */
static void test_names_as_written(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    size_t a = find(&s, "a\xff", NULL, 0, &src);
    assert_int_equal(find(&s, "a\xfe", NULL, 0, &src), a);
    assert_string_equal(s.v[a].id, "a\xef\xbf\xbd");
    size_t b = proxy_session_find(&s, "b\0x", 3, "user", NULL, 0, &src);
    assert_int_equal(proxy_session_find(&s, "b\0y", 3, "user", NULL, 0, &src), b);
    assert_string_equal(s.v[b].id, "b");
    proxy_sessions_release(&s);
}

/* A journal continued from an earlier run: its sessions go on at their
 * next turn, made-up names after the highest it holds. */
static void test_seen(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    proxy_session_seen(&s, "s1", 2, 0);
    proxy_session_seen(&s, "~3", 2, 0);
    proxy_session_seen(&s, "s1", 2, 4);
    proxy_session_seen(&s, "s1", 2, 2);
    proxy_session_seen(&s, "~~1", 3, 1);
    size_t a = find(&s, "s1", NULL, 0, &src);
    assert_int_equal(s.v[a].turns, 5);
    size_t b = find(&s, "~1", NULL, 0, &src);           /* the journal's "~~1" */
    assert_int_equal(s.v[b].turns, 2);
    uint64_t p[] = {51};
    size_t c = find(&s, NULL, p, 1, &src);
    assert_string_equal(s.v[c].id, "~4");
    assert_int_equal(s.v[c].turns, 0);
    proxy_sessions_release(&s);
}

static void test_many(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "s-%d", i);
        assert_int_equal(find(&s, name, NULL, 0, &src), (size_t)i);
    }
    for (int i = 0; i < 5000; i += 97) {
        snprintf(name, sizeof name, "s-%d", i);
        assert_int_equal(find(&s, name, NULL, 0, &src), (size_t)i);
    }
    assert_int_equal(s.n, 5000);
    proxy_sessions_release(&s);
}

static void test_long_name_capped(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    char big[4000], other[4000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(other, big, sizeof big);
    other[3000] = 'b';                         /* same first 239 bytes, another name */
    size_t a = find(&s, big, NULL, 0, &src), b = find(&s, other, NULL, 0, &src);
    assert_int_not_equal(a, b);
    assert_int_equal(strlen(s.v[a].id), 256);
    assert_int_equal(s.v[a].id[239], '#');
    assert_int_equal(find(&s, big, NULL, 0, &src), a);
    proxy_sessions_release(&s);
}

static void test_evict_beyond_max(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 2, 0);
    const char *src;
    size_t a = find(&s, "a", NULL, 0, &src);
    for (int t = 0; t < 3; t++) {
        assert_int_equal(proxy_session_begin(&s, a), (uint64_t)t);
        proxy_session_end(&s, a, 0);
    }
    size_t b = find(&s, "b", NULL, 0, &src);
    size_t busy = find(&s, "busy", NULL, 0, &src);    /* "a", least recently used, goes */
    assert_int_equal(s.live, 2);
    assert_int_equal(s.evicted, 1);
    proxy_session_begin(&s, busy);                      /* in flight: never evicted */
    a = find(&s, "a", NULL, 0, &src);                   /* back: "b" goes */
    assert_string_equal(s.v[busy].id, "busy");
    assert_true(s.v[b].id == NULL || strcmp(s.v[b].id, "b") != 0);
    assert_true(proxy_session_begin(&s, a) >= 3);       /* its turns 0..2 are not given again */
    proxy_sessions_release(&s);
}

static void test_keys_bounded(void **state)
{
    struct proxy_sessions s;
    proxy_sessions_init(&s, 0, 0);
    const char *src;
    size_t a = find(&s, "long-lived", NULL, 0, &src);
    uint64_t ids[2] = {7, 0};
    for (uint64_t t = 0; t < 20000; t++) {           /* one new latest block per turn */
        ids[1] = 1000 + t;
        proxy_session_note(&s, a, ids, 2);
    }
    assert_int_equal(s.slots, 1024);                 /* older blocks are dropped on a rehash */
    uint64_t next[] = {7, 1000 + 19999, 5};
    assert_int_equal(find(&s, NULL, next, 3, &src), a);
    assert_string_equal(src, "prefix");
    proxy_sessions_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_named),
        cmocka_unit_test(test_prefix_continuity),
        cmocka_unit_test(test_made_up_names_apart),
        cmocka_unit_test(test_names_as_written),
        cmocka_unit_test(test_seen),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_long_name_capped),
        cmocka_unit_test(test_evict_beyond_max),
        cmocka_unit_test(test_keys_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
