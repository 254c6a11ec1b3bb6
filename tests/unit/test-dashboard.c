/* test-dashboard.c - the dashboard's run list (src/dashboard/runs.c):
 * records read as a file grows, a cut last line waited for, a replaced or
 * cut-back file read again, an overlong line skipped, journals' failures,
 * the statuses from a result file and from time (passed in, never read),
 * and symbolic links left alone. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dashboard/dash-impl.h"
#include "util/alloc.h"

static char dir[512];

static int setup(void **state)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/atr-dash-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char *cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return 0;
}

static char *at(const char *name)
{
    return xasprintf("%s/%s", dir, name);
}

static void put(const char *name, const char *mode, const char *text)
{
    char *p = at(name);
    FILE *f = fopen(p, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

static const char *rec_ok =
    "{\"id\":0,\"success\":true,\"ttft_ms\":10.0,\"e2el_ms\":100.0}\n";

static struct dash_run *run_named(struct dash_runs *r, const char *file)
{
    const char *base = strrchr(dir, '/') + 1;
    for (size_t i = 0; i < r->n; i++) {
        size_t n = strlen(base);
        if (strncmp(r->v[i].rel, base, n) == 0 && strcmp(r->v[i].rel + n + 1, file) == 0)
            return &r->v[i];
    }
    return NULL;
}

static void open_runs(struct dash_runs *r)
{
    struct atr_error err;
    const char *roots[] = {dir};
    assert_int_equal(dash_runs_init(r, roots, 1, 5, &err), 0);
}

static void test_grows_and_waits_for_cut_line(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("r.ndjson", "w", rec_ok);
    put("r.ndjson", "a", "{\"id\":1,\"success\":false,\"ttft_ms\":null,\"e2el_ms\":null}\n");
    put("r.ndjson", "a", "{\"id\":2,\"success\":true,\"ttft_ms\":30.0,\"e2e");   /* mid-write */
    assert_true(dash_runs_scan(&r, 100));
    struct dash_run *run = run_named(&r, "r.ndjson");
    assert_non_null(run);
    assert_int_equal(run->kind, DASH_REQUESTS);
    assert_int_equal(run->done, 2);
    assert_int_equal(run->failed, 1);
    assert_int_equal(run->bad, 0);
    put("r.ndjson", "a", "l_ms\":300.0}\n");
    assert_true(dash_runs_scan(&r, 101));
    run = run_named(&r, "r.ndjson");
    assert_int_equal(run->done, 3);
    assert_int_equal(run->ok, 2);
    assert_true(atr_samples_percentile(&run->e2el, 50) == 200.0);
    assert_true(atr_samples_percentile(&run->ttft, 100) == 30.0);
    assert_false(dash_runs_scan(&r, 102));     /* nothing new: no change */
    dash_runs_release(&r);
}

static void test_replaced_and_cut_back(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("r.ndjson", "w", rec_ok);
    put("r.ndjson", "a", rec_ok);
    put("r.ndjson", "a", rec_ok);
    dash_runs_scan(&r, 1);
    assert_int_equal(run_named(&r, "r.ndjson")->done, 3);
    put("new.tmp.x", "w", rec_ok);             /* a temporary: not followed */
    dash_runs_scan(&r, 2);
    assert_null(run_named(&r, "new.tmp.x"));
    char *from = at("new.tmp.x"), *to = at("r.ndjson");
    assert_int_equal(rename(from, to), 0);     /* replaced: another inode */
    dash_runs_scan(&r, 3);
    assert_int_equal(run_named(&r, "r.ndjson")->done, 1);
    assert_int_equal(truncate(to, 0), 0);      /* cut back, then one record */
    put("r.ndjson", "a", rec_ok);
    dash_runs_scan(&r, 4);
    assert_int_equal(run_named(&r, "r.ndjson")->done, 1);
    assert_int_equal(unlink(to), 0);           /* gone: forgotten */
    assert_true(dash_runs_scan(&r, 5));
    assert_null(run_named(&r, "r.ndjson"));
    free(from);
    free(to);
    dash_runs_release(&r);
}

static void test_overlong_line_skipped(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("r.ndjson", "w", rec_ok);
    char *p = at("r.ndjson");
    FILE *f = fopen(p, "a");
    fputs("{\"success\":true,\"pad\":\"", f);
    for (size_t i = 0; i < DASH_MAX_LINE + 100; i++)
        fputc('x', f);
    fputs("\"}\n", f);
    fputs(rec_ok, f);
    for (size_t i = 0; i < 2 * DASH_MAX_LINE; i++)   /* longer than the read window */
        fputc('y', f);
    fputs("\n", f);
    fputs(rec_ok, f);
    fclose(f);
    dash_runs_scan(&r, 1);
    struct dash_run *run = run_named(&r, "r.ndjson");
    assert_int_equal(run->done, 3);
    assert_int_equal(run->bad, 2);
    free(p);
    dash_runs_release(&r);
}

static void test_journal_failures(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("j.ndjson", "w",
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"proxy/a/1\",\"source\":\"atr-proxy\","
        "\"meta\":{\"status\":200,\"error\":null,\"ttft_ms\":20},"
        "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"dur_ms\":120}]}\n"
        "{\"format\":\"atr-trace/1\",\"trace_id\":\"proxy/a/2\",\"source\":\"atr-proxy\","
        "\"meta\":{\"status\":502,\"error\":\"upstream\",\"ttft_ms\":null},"
        "\"steps\":[{\"i\":0,\"kind\":\"llm\",\"dur_ms\":5}]}\n");
    dash_runs_scan(&r, 1);
    struct dash_run *run = run_named(&r, "j.ndjson");
    assert_int_equal(run->kind, DASH_JOURNAL);
    assert_int_equal(run->done, 2);
    assert_int_equal(run->failed, 1);
    assert_true(atr_samples_percentile(&run->e2el, 50) == 120.0);
    assert_int_equal(run->n_groups, 1);        /* no upstream_url, no policy: "?" */
    assert_string_equal(run->groups[0].upstream, "?");
    assert_int_equal(run->groups[0].requests, 2);
    assert_int_equal(run->groups[0].ok, 1);
    assert_true(run->groups[0].ttft_sum_ms == 20.0);
    dash_runs_release(&r);
}

static void test_statuses(void **state)
{
    struct dash_runs r;
    open_runs(&r);                             /* idle: 5 s */
    put("a.ndjson", "w", rec_ok);
    put("b.ndjson", "w", rec_ok);
    put("c.ndjson", "w", rec_ok);
    put("b.json", "w", "{\"request_throughput\":1.0,\"num_prompts\":4,\"atr\":{\"incomplete\":false}}");
    put("c.json", "w", "{\"request_throughput\":1.0,\"atr\":{\"incomplete\":true}}");
    dash_runs_scan(&r, 10);
    assert_int_equal(dash_run_status(&r, run_named(&r, "a.ndjson"), 12), DASH_RUNNING);
    assert_int_equal(dash_run_status(&r, run_named(&r, "a.ndjson"), 16), DASH_STOPPED);
    assert_int_equal(dash_run_status(&r, run_named(&r, "b.ndjson"), 12), DASH_COMPLETE);
    assert_int_equal(dash_run_status(&r, run_named(&r, "c.ndjson"), 12), DASH_INTERRUPTED);
    assert_int_equal(dash_run_marker(&r, run_named(&r, "b.ndjson"))->total, 4);
    dash_runs_release(&r);
}

/* FILE.partial is the run FILE while it runs: total from its header,
 * running then stopped (never complete, even beside an old FILE and its
 * result), an ETA from the rate; the committed FILE then takes over. */
static void test_partial_then_committed(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("r.ndjson", "w", rec_ok);              /* an earlier run's files */
    put("r.json", "w", "{\"request_throughput\":1.0,\"num_prompts\":1,\"atr\":{}}");
    put("r.ndjson.partial", "w", "{\"atr_partial\":\"requests\",\"total\":10}\n");
    put("r.ndjson.partial", "a", rec_ok);
    dash_runs_scan(&r, 10);
    struct dash_run *run = run_named(&r, "r.ndjson");
    assert_non_null(run);
    assert_null(run_named(&r, "r.ndjson.partial"));
    assert_true(run->partial);
    assert_null(run->page_path);               /* the report reads committed files only */
    assert_int_equal(run->done, 1);
    assert_int_equal(run->bad, 0);
    assert_int_equal(dash_run_total(&r, run), 10);
    assert_int_equal(dash_run_status(&r, run, 11), DASH_RUNNING);
    put("r.ndjson.partial", "a", rec_ok);
    put("r.ndjson.partial", "a", rec_ok);
    dash_runs_scan(&r, 12);                    /* 2 more in 2 s: 1/s, 7 left */
    run = run_named(&r, "r.ndjson");
    assert_int_equal(run->done, 3);
    assert_true(fabs(dash_run_eta(&r, run, 12.5) - 7.0) < 1e-9);
    assert_int_equal(dash_run_status(&r, run, 30), DASH_STOPPED);
    assert_true(isnan(dash_run_eta(&r, run, 30)));
    char *p = at("r.ndjson.partial");          /* the writer commits FILE, then removes it */
    put("r.ndjson", "w", rec_ok);
    put("r.ndjson", "a", rec_ok);
    assert_int_equal(unlink(p), 0);
    free(p);
    dash_runs_scan(&r, 31);
    run = run_named(&r, "r.ndjson");
    assert_false(run->partial);
    assert_int_equal(run->done, 2);
    assert_non_null(run->page_path);
    assert_int_equal(dash_run_status(&r, run, 31), DASH_COMPLETE);
    assert_true(fabs(dash_run_rate(run) - 1.0 / 21.0) < 1e-9);   /* base: the .partial at first sight */
    dash_runs_release(&r);
}

/* A bench folder reads its runner's state file: running while the pid
 * lives (however long since the last result), complete, interrupted. */
static void test_bench_state(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    char *res = at("results");
    assert_int_equal(mkdir(res, 0755), 0);
    free(res);
    put("results/x_baseline_result.json", "w", "{\"status\":\"success\"}");
    dash_runs_scan(&r, 1);
    struct dash_run *run = run_named(&r, "results");
    assert_non_null(run);
    assert_int_equal(run->kind, DASH_BENCH);
    assert_int_equal(dash_run_status(&r, run, 100), DASH_STOPPED);    /* no state: growth */
    char line[128];
    snprintf(line, sizeof line, "{\"state\":\"running\",\"planned\":4,\"pid\":%ld}\n",
             (long)getpid());
    put("results/.atr-bench-state.json", "w", line);
    dash_runs_scan(&r, 2);
    run = run_named(&r, "results");
    assert_int_equal(dash_run_status(&r, run, 100), DASH_RUNNING);
    assert_int_equal(dash_run_total(&r, run), 4);
    put("results/.atr-bench-state.json", "w", "{\"state\":\"complete\",\"planned\":4,\"pid\":1}");
    dash_runs_scan(&r, 3);
    assert_int_equal(dash_run_status(&r, run_named(&r, "results"), 100), DASH_COMPLETE);
    put("results/.atr-bench-state.json", "w", "{\"state\":\"interrupted\",\"planned\":4,\"pid\":1}");
    dash_runs_scan(&r, 4);
    assert_int_equal(dash_run_status(&r, run_named(&r, "results"), 100), DASH_INTERRUPTED);
    dash_runs_release(&r);
}

static void test_links_not_followed(void **state)
{
    struct dash_runs r;
    open_runs(&r);
    put("real.ndjson", "w", rec_ok);
    char *target = at("real.ndjson"), *link = at("link.ndjson");
    assert_int_equal(symlink(target, link), 0);
    dash_runs_scan(&r, 1);
    assert_non_null(run_named(&r, "real.ndjson"));
    assert_null(run_named(&r, "link.ndjson"));
    assert_int_equal(r.skipped_links, 1);
    free(target);
    free(link);
    dash_runs_release(&r);
}

static void test_root_must_be_folder(void **state)
{
    struct dash_runs r;
    struct atr_error err;
    char *file = at("f");
    put("f", "w", "x");
    const char *roots[] = {file};
    assert_int_equal(dash_runs_init(&r, roots, 1, 5, &err), -1);
    assert_non_null(strstr(err.msg, "not a folder"));
    dash_runs_release(&r);
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grows_and_waits_for_cut_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_and_cut_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlong_line_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_links_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_then_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bench_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_must_be_folder, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
