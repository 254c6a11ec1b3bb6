/* progress.h - the one progress display of long jobs, on stderr: a line
 * redrawn in place on a terminal, else a plain line every few seconds
 * (logs and CI see progress too); -q turns both off. */
#ifndef ATR_CLI_PROGRESS_H
#define ATR_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_progress_mode {
    CLI_PROGRESS_OFF,
    CLI_PROGRESS_TTY,        /* redrawn with \r, at most 4 times a second */
    CLI_PROGRESS_LINES,      /* one plain line per interval */
};

struct cli_progress {
    enum cli_progress_mode mode;
    const char *name;        /* the job: "replay llm", "report --png", ... */
    double start, last;      /* CLOCK_MONOTONIC seconds */
    double interval;         /* seconds between lines or redraws */
    bool drawn;              /* a redrawn line is on the terminal */
    FILE *out;               /* stderr (tests may give another stream) */
};

/* The default seconds between plain lines; ATR_PROGRESS_INTERVAL_MS
 * (milliseconds, >= 0; 0: every update, which tests use so that no check
 * depends on how long a run takes) replaces it, for logs that want more or
 * fewer lines. */
#define CLI_PROGRESS_LINE_S 5.0

/* Monotonic seconds: the clock the updates are given. */
double cli_progress_now(void);

/* Off when quiet, else a terminal line when stderr is a terminal, else
 * plain lines. name is the job's label (not copied). */
void cli_progress_start(struct cli_progress *p, const char *name, bool quiet);
/* Mode and clock given (tests; cli_progress_start reads both). */
void cli_progress_start_at(struct cli_progress *p, const char *name,
                           enum cli_progress_mode mode, double now);
/* Whether an update at now would be shown. */
bool cli_progress_due(const struct cli_progress *p, double now);

/* "NAME: 120/400 requests (30%), 12.5/s, ETA 22 s"; total 0: unknown
 * (no percent or ETA). Shown at most once per interval. */
void cli_progress_count(struct cli_progress *p, double now, size_t done, size_t total,
                        const char *unit);
/* "NAME  45%  230 MB  210 MB/s  1234 traces": bytes of input read. */
void cli_progress_bytes(struct cli_progress *p, double now, unsigned long long done,
                        unsigned long long total, unsigned long traces);
/* "NAME  45%  230 MB  210 MB/s  file 2/5": bytes of a download of files. */
void cli_progress_files(struct cli_progress *p, double now, unsigned long long done,
                        unsigned long long total, size_t file, size_t files);
/* Clears a redrawn line (plain lines stay). */
void cli_progress_end(struct cli_progress *p);

#endif
