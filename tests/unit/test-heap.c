/* test-heap.c - the (time, seq) event heap: order, ties in push order,
 * NaN rejection, and a randomized comparison with a sorted reference. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "sched/heap.h"

static void test_order_and_ties(void **state)
{
    (void)state;
    struct atr_heap h = ATR_HEAP_INIT;
    struct atr_error err;
    int tags[5] = { 0, 1, 2, 3, 4 };
    double ts[5] = { 2.0, 1.0, 2.0, 0.5, 1.0 };
    for (int i = 0; i < 5; i++)
        assert_int_equal(atr_heap_push(&h, ts[i], &tags[i], &err), i);
    assert_int_equal(atr_heap_len(&h), 5);
    assert_ptr_equal(atr_heap_peek(&h)->data, &tags[3]);
    int want[5] = { 3, 1, 4, 0, 2 };   /* by time, ties by push order */
    struct atr_heap_item it;
    for (int i = 0; i < 5; i++) {
        assert_true(atr_heap_pop(&h, &it));
        assert_int_equal(*(int *)it.data, want[i]);
    }
    assert_false(atr_heap_pop(&h, &it));
    assert_null(atr_heap_peek(&h));
    assert_int_equal(atr_heap_push(&h, NAN, NULL, &err), -1);
    atr_heap_release(&h);
}

static void test_random_against_sorted(void **state)
{
    (void)state;
    struct atr_heap h;
    struct atr_error err;
    atr_heap_init(&h);
    uint64_t x = 12345;
    double last_t = -1;
    uint64_t last_seq = 0;
    size_t popped = 0;
    for (int round = 0; round < 20000; round++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        if ((x >> 60) < 10) {
            /* few distinct times so that ties are frequent; never earlier
             * than what was popped, as in an event loop */
            double t = (last_t < 0 ? 0 : last_t) + (double)((x >> 33) % 4);
            assert_true(atr_heap_push(&h, t, NULL, &err) >= 0);
        } else {
            struct atr_heap_item it;
            if (!atr_heap_pop(&h, &it))
                continue;
            if (popped++)
                assert_true(it.t > last_t || (it.t == last_t && it.seq > last_seq));
            last_t = it.t;
            last_seq = it.seq;
        }
    }
    atr_heap_release(&h);
    assert_int_equal(atr_heap_len(&h), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_ties),
        cmocka_unit_test(test_random_against_sorted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
