/* test-tokens.c - the bitmap path of the token estimator and block hasher
 * (trace/tokens.c, included for its static helpers) against the serial
 * automaton it replaced (feed_short, estimate_short): every count, block
 * id, partial block and chained hash equal, on seeded adversarial texts
 * (class soups, random bytes, long runs with no sync pair, UTF-8), at every
 * block size 1..40, after a short piece that leaves the open block partly
 * full, and across chunk boundaries. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "trace/tokens.c"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Fills buf[0..len) in one of five shapes. */
static void fill_shape(char *buf, size_t len, int mode)
{
    static const char soup[] = "aAbZz09 _\t\n\r.,(){}\xc3\xa9\x80\xff-";
    for (size_t i = 0; i < len; i++) {
        switch (mode) {
        case 0: buf[i] = soup[rnd() % (sizeof soup - 1)]; break;
        case 1: buf[i] = (char)rnd(); break;
        case 2: buf[i] = "ab _\n"[rnd() % 5]; break;
        case 3: buf[i] = rnd() % 400 ? 'a' : soup[rnd() % (sizeof soup - 1)]; break;
        default: buf[i] = rnd() % 3 ? "Hello wORLD_x1234  \n"[rnd() % 20] : '_'; break;
        }
    }
}

/* A fresh buffer of exactly len bytes (so ASan sees a read past the text)
 * filled in the given shape; the caller frees it. */
static char *fill(size_t len, int mode)
{
    char *t = malloc(len ? len : 1);
    assert_non_null(t);
    fill_shape(t, len, mode);
    return t;
}

static void assert_same(const struct atr_blockhash *a, const struct atr_blockhash *b)
{
    assert_int_equal(a->tokens, b->tokens);
    assert_int_equal(a->in_block, b->in_block);
    assert_int_equal(a->n_ids, b->n_ids);
    assert_int_equal(a->chain, b->chain);
    assert_int_equal(a->open_hash, b->open_hash);
    for (size_t k = 0; k < a->n_ids; k++)
        assert_int_equal(a->ids[k], b->ids[k]);
    assert_int_equal(atr_blockhash_partial_id(a), atr_blockhash_partial_id(b));
}

static void test_feed_matches_serial(void **state)
{
    (void)state;
    enum { MAX = 3 * CHUNK + 777 };
    rng_state = 88172645463325252u;
    for (int it = 0; it < 6000; it++) {
        size_t len = (size_t)(rnd() % (it % 20 == 0 ? MAX : 3000));
        char *buf = fill(len, it % 5);
        uint32_t bs = (uint32_t)(1 + it % 40);
        size_t pre = (size_t)(rnd() % 50);
        if (pre > len)
            pre = len;
        struct atr_blockhash a, b;
        atr_blockhash_init(&a, bs);
        atr_blockhash_init(&b, bs);
        feed_short(&a, buf, pre);
        feed_short(&b, buf, pre);
        feed_short(&a, buf + pre, len - pre);
        atr_blockhash_feed(&b, buf + pre, len - pre);
        assert_same(&a, &b);
        atr_blockhash_release(&a);
        atr_blockhash_release(&b);
        free(buf);
    }
}

static void test_estimate_matches_serial(void **state)
{
    (void)state;
    enum { MAX = 2 * CHUNK + 99 };
    rng_state = 1234567;
    for (int it = 0; it < 6000; it++) {
        size_t len = (size_t)(rnd() % (it % 20 == 0 ? MAX : 3000));
        char *buf = fill(len, it % 5);
        assert_int_equal(estimate_short(buf, len), atr_tokens_estimate(buf, len));
        free(buf);
    }
}

/* A text with no sync pair anywhere (one letter repeated) runs as one lane;
 * the count is still exact: 8-byte words. */
static void test_no_sync_pair(void **state)
{
    (void)state;
    char buf[5000];
    memset(buf, 'a', sizeof buf);
    assert_int_equal(atr_tokens_estimate(buf, sizeof buf), sizeof buf / 8);
    struct atr_blockhash a, b;
    atr_blockhash_init(&a, 16);
    atr_blockhash_init(&b, 16);
    feed_short(&a, buf, sizeof buf);
    atr_blockhash_feed(&b, buf, sizeof buf);
    assert_same(&a, &b);
    atr_blockhash_release(&a);
    atr_blockhash_release(&b);
}

/* select64 picks the k-th set bit for every k of assorted words. */
static void test_select64(void **state)
{
    (void)state;
    rng_state = 42;
    for (int it = 0; it < 20000; it++) {
        uint64_t w = rnd() & rnd();
        if (it == 0)
            w = ~UINT64_C(0);
        unsigned k = 0;
        for (unsigned i = 0; i < 64; i++)
            if (w >> i & 1)
                assert_int_equal(select64(w, k++), i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_matches_serial),
        cmocka_unit_test(test_estimate_matches_serial),
        cmocka_unit_test(test_no_sync_pair),
        cmocka_unit_test(test_select64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
