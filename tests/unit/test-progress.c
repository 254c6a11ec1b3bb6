/* test-progress.c - the progress display of long jobs (src/cli/progress.c):
 * plain lines once per interval off a terminal, a redrawn line on one,
 * nothing when quiet; times are given, so no test waits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli/progress.c"

static char text[4096];

/* What p printed so far, as a string; the stream is then reset. */
static const char *printed(struct cli_progress *p)
{
    fflush(p->out);
    long n = ftell(p->out);
    rewind(p->out);
    size_t got = fread(text, 1, (size_t)n < sizeof text - 1 ? (size_t)n : sizeof text - 1,
                       p->out);
    text[got] = '\0';
    fclose(p->out);
    p->out = tmpfile();
    return text;
}

static void start(struct cli_progress *p, enum cli_progress_mode m, double now)
{
    cli_progress_start_at(p, "replay llm", m, now);
    p->out = tmpfile();
}

static void test_lines_once_per_interval(void **state)
{
    (void)state;
    unsetenv("ATR_PROGRESS_INTERVAL_MS");
    struct cli_progress p;
    start(&p, CLI_PROGRESS_LINES, 100.0);
    assert_true(p.interval == CLI_PROGRESS_LINE_S);
    cli_progress_count(&p, 101.0, 2, 40, "requests");     /* before the interval: nothing */
    assert_string_equal(printed(&p), "");
    cli_progress_count(&p, 105.0, 10, 40, "requests");
    assert_string_equal(printed(&p), "atr: replay llm: 10/40 requests (25%), 2.0/s, ETA 15 s\n");
    cli_progress_count(&p, 107.0, 14, 40, "requests");    /* 2 s after the last line */
    assert_string_equal(printed(&p), "");
    cli_progress_count(&p, 110.0, 20, 40, "requests");
    assert_string_equal(printed(&p), "atr: replay llm: 20/40 requests (50%), 2.0/s, ETA 10 s\n");
    cli_progress_end(&p);                                 /* plain lines stay */
    assert_string_equal(printed(&p), "");
    fclose(p.out);
}

static void test_unknown_total_and_long_eta(void **state)
{
    (void)state;
    unsetenv("ATR_PROGRESS_INTERVAL_MS");
    struct cli_progress p;
    start(&p, CLI_PROGRESS_LINES, 0.0);
    p.name = "replay tools";
    cli_progress_count(&p, 8.0, 4, 0, "steps");
    assert_string_equal(printed(&p), "atr: replay tools: 4 steps, 0.5/s\n");
    p.name = "sim";
    cli_progress_count(&p, 20.0, 10, 10000, "requests");
    assert_string_equal(printed(&p),
                        "atr: sim: 10/10000 requests (0%), 0.5/s, ETA 5 h 33 min\n");
    fclose(p.out);
}

static void test_tty_redraws_and_clears(void **state)
{
    (void)state;
    struct cli_progress p;
    start(&p, CLI_PROGRESS_TTY, 0.0);
    cli_progress_count(&p, 0.1, 1, 4, "charts");          /* under 0.25 s: no redraw */
    assert_string_equal(printed(&p), "");
    cli_progress_count(&p, 0.5, 2, 4, "charts");
    assert_string_equal(printed(&p), "\r\033[Kreplay llm: 2/4 charts (50%), 4.0/s, ETA 1 s");
    cli_progress_end(&p);
    assert_string_equal(printed(&p), "\r\033[K");
    cli_progress_end(&p);                                 /* cleared once */
    assert_string_equal(printed(&p), "");
    fclose(p.out);
}

static void test_quiet_prints_nothing(void **state)
{
    (void)state;
    struct cli_progress p;
    start(&p, CLI_PROGRESS_OFF, 0.0);
    cli_progress_count(&p, 1000.0, 1, 2, "requests");
    cli_progress_bytes(&p, 1000.0, 1, 2, 1);
    cli_progress_end(&p);
    assert_string_equal(printed(&p), "");
    fclose(p.out);
    cli_progress_start(&p, "x", true);                    /* -q */
    assert_int_equal(p.mode, CLI_PROGRESS_OFF);
}

static void test_interval_from_the_environment(void **state)
{
    (void)state;
    struct cli_progress p;
    setenv("ATR_PROGRESS_INTERVAL_MS", "0", 1);           /* every update: what tests use */
    start(&p, CLI_PROGRESS_LINES, 0.0);
    cli_progress_count(&p, 0.0, 1, 3, "requests");
    cli_progress_count(&p, 0.0, 2, 3, "requests");
    assert_int_equal(strlen(printed(&p)) > 0, 1);
    assert_non_null(strstr(text, "1/3 requests"));
    assert_non_null(strstr(text, "2/3 requests"));
    fclose(p.out);
    setenv("ATR_PROGRESS_INTERVAL_MS", "250", 1);
    start(&p, CLI_PROGRESS_LINES, 0.0);
    assert_true(p.interval == 0.25);
    fclose(p.out);
    setenv("ATR_PROGRESS_INTERVAL_MS", "soon", 1);        /* junk: the default */
    start(&p, CLI_PROGRESS_LINES, 0.0);
    assert_true(p.interval == CLI_PROGRESS_LINE_S);
    fclose(p.out);
    setenv("ATR_PROGRESS_INTERVAL_MS", "100", 1);         /* a terminal keeps its 4 a second */
    start(&p, CLI_PROGRESS_TTY, 0.0);
    assert_true(p.interval == 0.25);
    fclose(p.out);
    unsetenv("ATR_PROGRESS_INTERVAL_MS");
}

static void test_bytes_line(void **state)
{
    (void)state;
    unsetenv("ATR_PROGRESS_INTERVAL_MS");
    struct cli_progress p;
    start(&p, CLI_PROGRESS_LINES, 0.0);
    p.name = "openhands";
    cli_progress_bytes(&p, 10.0, 200000000ULL, 400000000ULL, 1234);
    assert_string_equal(printed(&p),
                        "atr: openhands   50%  200 MB  20 MB/s  1234 traces, ETA 10 s\n");
    fclose(p.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_once_per_interval),
        cmocka_unit_test(test_unknown_total_and_long_eta),
        cmocka_unit_test(test_tty_redraws_and_clears),
        cmocka_unit_test(test_quiet_prints_nothing),
        cmocka_unit_test(test_interval_from_the_environment),
        cmocka_unit_test(test_bytes_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
