/* progress.h - a one-line progress display on stderr, only on a terminal. */
#ifndef ATR_CLI_PROGRESS_H
#define ATR_CLI_PROGRESS_H

#include <stdbool.h>

struct cli_progress {
    bool on;
    double start, last;      /* CLOCK_MONOTONIC seconds */
};

/* On when stderr is a terminal and quiet is false. */
void cli_progress_init(struct cli_progress *p, bool quiet);
/* Redraws at most 4 times a second: "NAME  45%  230 MB  210 MB/s  1234 traces". */
void cli_progress_update(struct cli_progress *p, const char *name, unsigned long long done,
                         unsigned long long total, unsigned long traces);
/* Clears the line. */
void cli_progress_end(struct cli_progress *p);

#endif
