/* test-sim-memory.c - what the engine keeps per request (issue 11, item
 * 19; issue 16): a finished request keeps its record (in a chunk) but not
 * its scheduling state or block table, token
 * times of a request decoding without a pause are a slice of the engine's
 * log of iteration ends (no array of their own), a preempted one copies
 * them, and a server that releases its records keeps the log short. This
 * file includes engine.c to look at its private state. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/engine.c"

#define C0 (1.0 / 1024)       /* per-iteration cost: exact sums */

static double cost_const(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    (void)w;
    return C0;
}

static struct atr_engine *mk(uint64_t kv_tokens)
{
    struct atr_engine_cfg cfg;
    struct atr_error err;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost_const;
    cfg.kv_capacity_tokens = kv_tokens;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    return e;
}

static const struct atr_sim_record *add(struct atr_engine *e, uint64_t id, double at,
                                        uint32_t prompt, uint32_t out)
{
    struct atr_error err;
    struct atr_sim_req q = { id, at, prompt, out, NULL, 0 };
    const struct atr_sim_record *r = atr_engine_add(e, &q, &err);
    assert_non_null(r);
    return r;
}

/* A guard against the per-request state creeping back up: what a finished
 * request keeps is 104 bytes on a 64-bit build (no allocation of its own),
 * the state it is scheduled with 112 more while it runs. */
static void test_request_state_is_small(void **state)
{
    (void)state;
    assert_true(sizeof(struct req_rec) <= 104);
    assert_true(sizeof(struct req) <= 120);
}

static void test_finished_keeps_only_its_record(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(1 << 12);
    const struct atr_sim_record *r = add(e, 0, 0.5, 100, 6);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    const struct req_rec *q = (const struct req_rec *)r;
    assert_null(q->live);                    /* its scheduling state is gone */
    assert_null(q->times);                   /* six consecutive iterations */
    const double *t = atr_engine_token_times(e, r);
    assert_true(t >= e->log && t < e->log + e->log_len);
    for (int k = 0; k < 6; k++)
        assert_true(t[k] == 0.5 + (k + 1) * C0);
    assert_true(t[0] == r->first_token && t[5] == r->finish);
    atr_engine_free(e);
}

/* 10 blocks; three 40+40-token requests cannot all stay: the later ones
 * are preempted mid-decode and their token times get a gap, which the
 * engine copies out of the log. Every time is still an iteration's end. */
static void test_preempted_copies_its_times(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(160);
    const struct atr_sim_record *r[3];
    for (uint64_t i = 0; i < 3; i++)
        r[i] = add(e, i, 0, 40, 40);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    size_t copied = 0;
    for (int i = 0; i < 3; i++) {
        const struct req_rec *q = (const struct req_rec *)r[i];
        const double *t = atr_engine_token_times(e, r[i]);
        bool gap = false;
        for (int k = 1; k < 40; k++)
            gap |= t[k] != t[k - 1] + C0;
        assert_int_equal(gap, q->times != NULL);
        copied += q->times != NULL;
        assert_true(t[0] == r[i]->first_token && t[39] == r[i]->finish);
        for (int k = 0; k < 40; k++) {       /* t[k] is the end of iteration j */
            double j = t[k] / C0 - 1;
            assert_true(j == floor(j) && j < (double)e->log_len);
            assert_true(e->log[(size_t)j] == t[k]);
        }
    }
    assert_null(((const struct req_rec *)r[0])->times);     /* never paused */
    assert_true(copied >= 1);
    atr_engine_free(e);
}

/* A server's way: each request released once over. After a long-lived
 * request (which pins the log from its first token) is released, the
 * entries nobody needs are dropped rather than the log growing forever,
 * and a live request's times stay right across the moves. */
static void test_released_records_free_the_log(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(1 << 16);
    const struct atr_sim_record *pin = add(e, 0, 0, 16, 20000);
    for (uint64_t id = 1; id < 60000; id++) {
        const struct atr_sim_record *r = add(e, id, atr_engine_now(e), 16, 4);
        while (r->tokens_done < 4)
            assert_int_equal(atr_engine_step(e, &err), 0);
        const double *t = atr_engine_token_times(e, r);
        for (int k = 1; k < 4; k++)
            assert_true(t[k] == t[k - 1] + C0);
        assert_true(t[3] == r->finish);
        assert_int_equal(atr_engine_release_record(e, r), 0);
        if (pin && pin->tokens_done == pin->output_tokens) {
            const double *p = atr_engine_token_times(e, pin);
            for (uint32_t k = 1; k < pin->output_tokens; k++)
                assert_true(p[k] == p[k - 1] + C0);
            assert_int_equal(atr_engine_release_record(e, pin), 0);
            pin = NULL;
        }
    }
    assert_null(pin);
    assert_true(e->st.iterations > 4 * 20000);
    assert_true(e->log_base > 20000);        /* the pinned stretch was dropped */
    assert_true(e->log_cap <= 32768);        /* and the log stopped growing after it */
    atr_engine_free(e);
}

/* A server's records come back to the chunks: after a release the next
 * request reuses the record (a server with a few requests in flight keeps
 * one chunk however long it runs), and a released record is no longer the
 * engine's until then. */
static void test_released_records_are_reused(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_engine *e = mk(1 << 12);
    const struct atr_sim_record *r = add(e, 0, 0, 16, 2);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_int_equal(atr_engine_release_record(e, r), 0);
    assert_int_equal(atr_engine_release_record(e, r), -1);     /* not ours any more */
    assert_int_equal(atr_engine_abort(e, r), -1);
    const struct atr_sim_record *again = add(e, 1, atr_engine_now(e), 16, 2);
    assert_ptr_equal(again, r);                                 /* the same slot */
    assert_int_equal(again->id, 1);
    assert_int_equal(again->tokens_done, 0);
    assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
    assert_int_equal(again->tokens_done, 2);
    assert_int_equal(atr_engine_release_record(e, again), 0);
    for (uint64_t id = 2; id < 5000; id++) {
        const struct atr_sim_record *x = add(e, id, atr_engine_now(e), 16, 2);
        assert_int_equal(atr_engine_run_until(e, INFINITY, &err), 0);
        assert_int_equal(atr_engine_release_record(e, x), 0);
    }
    assert_int_equal(e->n_rec_chunks, 1);
    assert_int_equal(e->all.len, 0);
    atr_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_state_is_small),
        cmocka_unit_test(test_finished_keeps_only_its_record),
        cmocka_unit_test(test_preempted_copies_its_times),
        cmocka_unit_test(test_released_records_free_the_log),
        cmocka_unit_test(test_released_records_are_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
