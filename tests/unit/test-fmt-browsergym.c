/* test-fmt-browsergym.c - the BrowserGym (Go-Browse-WA rows) reader: the
 * sample's trajectories, rows grouped by traj_num as they come, exit codes
 * from the next observation, and a bad row after a held one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "trace/reader.h"

#define SAMPLE ATR_TEST_DATA "/browsergym/go-browse-wa.jsonl"

static struct atr_reader *open_text(const char *text)
{
    struct atr_error err;
    struct atr_input *in = atr_input_open_mem(text, strlen(text), "rows.jsonl");
    struct atr_reader *r = atr_reader_open_input(in, NULL, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_string_equal(atr_reader_format(r), "browsergym");
    return r;
}

static void test_sample(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(SAMPLE, NULL, NULL, &err);
    assert_non_null(r);
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_string_equal(t.trace_id, "browsergym/shopping-0");
    assert_int_equal(t.n_steps, 6);    /* 5 rows, one with fill + press */
    assert_string_equal(t.steps[1].action, "fill");
    assert_string_equal(t.steps[2].action, "press");
    assert_string_equal(t.steps[2].selector, "[bid=\"1520\"]");
    assert_int_equal(t.steps[2].t_ms, 4846);
    assert_int_equal(t.steps[3].exit_code, 1);   /* the next row's error */
    assert_int_equal(t.steps[5].exit_code, ATR_UNSET);
    assert_string_equal(atr_json_get_str(t.meta, "outcome", NULL), "success");
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_string_equal(t.trace_id, "browsergym/shopping-1");
    assert_int_equal(t.n_steps, 3);
    int64_t skipped = 0;
    assert_true(atr_json_get_i64(t.meta, "skipped_actions", &skipped));
    assert_int_equal(skipped, 1);
    assert_string_equal(t.steps[0].url, "http://localhost:7770/customer/account/");
    assert_int_equal(atr_reader_next(r, &t, &err), 0);
    atr_trace_release(&t);
    atr_reader_close(r);
}

/* A traj_num that comes back later is a new trace: rows are not sorted. */
static void test_runs(void **state)
{
    (void)state;
    struct atr_reader *r = open_text(
        "{\"step_data\": {\"action\": \"click('a')\"}, \"traj_data\": {\"traj_num\": 1}}\n"
        "{\"step_data\": {\"action\": \"click('b')\"}, \"traj_data\": {\"traj_num\": 2}}\n"
        "\n"
        "{\"step_data\": {\"action\": \"click('c')\"}, \"traj_data\": {\"traj_num\": 1}}\n");
    struct atr_error err;
    struct atr_trace t = ATR_TRACE_INIT;
    const char *want[] = {"[bid=\"a\"]", "[bid=\"b\"]", "[bid=\"c\"]"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(atr_reader_next(r, &t, &err), 1);
        assert_int_equal(t.n_steps, 1);
        assert_string_equal(t.steps[0].selector, want[k]);
    }
    assert_int_equal(atr_reader_next(r, &t, &err), 0);
    atr_trace_release(&t);
    atr_reader_close(r);
}

/* The bad row is the one named, also when it comes after a held row. */
static void test_bad_after_held(void **state)
{
    (void)state;
    struct atr_reader *r = open_text(
        "{\"step_data\": {\"action\": \"click('a')\"}, \"traj_data\": {\"traj_num\": 1}}\n"
        "{\"step_data\": {\"action\": \"click('b')\"}, \"traj_data\": {\"traj_num\": 2}}\n"
        "{\"step_data\": {\"action\": \"click('c')\"}, \"traj_data\": {\"traj_num\": 2.5}}\n");
    struct atr_error err;
    struct atr_trace t = ATR_TRACE_INIT;
    assert_int_equal(atr_reader_next(r, &t, &err), 1);
    assert_int_equal(atr_reader_next(r, &t, &err), -1);
    assert_string_equal(err.msg, "rows.jsonl:3:67: expected \"traj_num\" to be an integer");
    atr_trace_release(&t);
    atr_reader_close(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_bad_after_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
