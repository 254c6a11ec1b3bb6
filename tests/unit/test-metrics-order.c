/* test-metrics-order.c - the orders stats/metrics.c keeps without sorting
 * everything: the records' session order (grouped by trace id, then turn
 * and send time) against a stable sort of them all, and the gap buckets
 * against the 16 top bits the passes count them by. The file includes
 * metrics.c to reach its static functions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "stats/metrics.c"

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* The reference: every record with an id, in input order, then a stable
 * insertion sort by cmp_session. */
static size_t reference_order(const struct atr_llm_record *r, size_t n,
                              const struct atr_llm_record **v)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].trace_id)
            continue;
        const struct atr_llm_record *p = &r[i];
        size_t j = m++;
        for (; j > 0 && cmp_session(&v[j - 1], &p) > 0; j--)
            v[j] = v[j - 1];
        v[j] = p;
    }
    return m;
}

/* n records over `ids` trace ids (each id's text in its own buffer, so
 * equal ids are equal strings, not equal pointers), turns and send times
 * with repeats, some without an id; session_order must match the
 * reference record for record, ties in input order. */
static void check_order(size_t n, size_t ids, uint64_t seed)
{
    static char text[256][16];
    static char copy[4096][16];
    static struct atr_llm_record r[4096];
    static const struct atr_llm_record *got[4096], *want[4096];
    assert_true(n <= 4096 && ids <= 256);
    uint64_t x = seed;
    for (size_t k = 0; k < ids; k++)      /* shared prefixes: t1, t10, t12... */
        snprintf(text[k], sizeof text[k], "%s%zu", k % 3 ? "t" : "sess-", k);
    for (size_t i = 0; i < n; i++) {
        uint64_t y = next(&x);
        strcpy(copy[i], text[y % ids]);
        r[i] = (struct atr_llm_record){ .id = i, .send_s = (double)(y >> 8 & 3),
                                        .end_s = 9, .success = true,
                                        .trace_id = y % 17 == 0 ? NULL : copy[i],
                                        .turn = (int64_t)(y >> 16) % 4 };
    }
    size_t m = reference_order(r, n, want), mm = 0;
    for (size_t i = 0; i < n; i++)
        mm += r[i].trace_id != NULL;
    assert_int_equal(m, mm);
    session_order(r, n, got, m);
    for (size_t i = 0; i < m; i++)
        assert_ptr_equal(got[i], want[i]);
}

static void test_session_order_matches_stable_sort(void **state)
{
    (void)state;
    check_order(0, 1, 1);
    check_order(1, 1, 2);
    check_order(2, 2, 3);
    check_order(40, 1, 4);          /* one session */
    check_order(60, 60, 5);         /* mostly one record each */
    check_order(3000, 7, 6);
    check_order(4096, 200, 7);      /* the tables grow past 64 ids */
}

/* Records already in session order stay as they are. */
static void test_session_order_sorted_input(void **state)
{
    (void)state;
    static const char *const id[] = {"a", "a", "a", "b", "b", "c"};
    struct atr_llm_record r[6];
    const struct atr_llm_record *v[6];
    for (size_t i = 0; i < 6; i++)
        r[i] = (struct atr_llm_record){ .id = i, .trace_id = id[i], .turn = (int64_t)i % 3 };
    r[2].turn = 2, r[1].turn = 2;   /* a tie on turn and send time: input order */
    session_order(r, 6, v, 6);
    for (size_t i = 0; i < 6; i++)
        assert_ptr_equal(v[i], &r[i]);
}

/* gap_top_of_bucket undoes gap_bucket: the passes' counts, indexed by the
 * top bits, are found again when walking the buckets in value order. */
static void test_gap_bucket_top_bits(void **state)
{
    (void)state;
    for (uint64_t top = 0; top < GAP_BUCKETS; top++) {
        uint64_t bits = top << 48 | 0x123456789abULL;
        double v;
        memcpy(&v, &bits, sizeof v);
        assert_int_equal(gap_top(v), top);
        assert_int_equal(gap_top_of_bucket(gap_bucket(v)), top);
    }
    assert_true(gap_bucket(-1.0) < gap_bucket(-0.5));
    assert_true(gap_bucket(-0.5) < gap_bucket(0.0));
    assert_true(gap_bucket(0.0) < gap_bucket(1.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_order_matches_stable_sort),
        cmocka_unit_test(test_session_order_sorted_input),
        cmocka_unit_test(test_gap_bucket_top_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
