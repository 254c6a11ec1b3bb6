/* progress.c - terminal progress line for long conversions. */
#include "cli/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_init(struct cli_progress *p, bool quiet)
{
    p->on = !quiet && isatty(2);
    p->start = p->last = now();
}

void cli_progress_update(struct cli_progress *p, const char *name, unsigned long long done,
                         unsigned long long total, unsigned long traces)
{
    if (!p->on)
        return;
    double t = now();
    if (t - p->last < 0.25)
        return;
    p->last = t;
    double mb = (double)done / 1e6, rate = mb / (t - p->start);
    if (total)
        fprintf(stderr, "\r\033[K%s  %3.0f%%  %.0f MB  %.0f MB/s  %lu traces", name,
                100.0 * (double)done / (double)total, mb, rate, traces);
    else
        fprintf(stderr, "\r\033[K%s  %.0f MB  %.0f MB/s  %lu traces", name, mb, rate, traces);
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->on)
        fputs("\r\033[K", stderr);
}
