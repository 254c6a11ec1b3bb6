/* progress.c - the progress display of long jobs (see progress.h). */
#include "cli/progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TTY_S 0.25

double cli_progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double line_interval(void)
{
    const char *env = getenv("ATR_PROGRESS_INTERVAL_MS");
    char *end;
    double ms = env ? strtod(env, &end) : 0;
    return env && end != env && *end == '\0' && ms >= 0 ? ms / 1000.0 : CLI_PROGRESS_LINE_S;
}

void cli_progress_start_at(struct cli_progress *p, const char *name,
                           enum cli_progress_mode mode, double now)
{
    p->mode = mode;
    p->name = name;
    p->start = p->last = now;
    p->interval = mode == CLI_PROGRESS_TTY ? TTY_S : line_interval();
    p->drawn = false;
    p->out = stderr;
}

void cli_progress_start(struct cli_progress *p, const char *name, bool quiet)
{
    enum cli_progress_mode m = quiet ? CLI_PROGRESS_OFF
                               : isatty(STDERR_FILENO) ? CLI_PROGRESS_TTY
                                                       : CLI_PROGRESS_LINES;
    cli_progress_start_at(p, name, m, cli_progress_now());
}

bool cli_progress_due(const struct cli_progress *p, double now)
{
    return p->mode != CLI_PROGRESS_OFF && now - p->last >= p->interval;
}

/* The text goes after "\r\033[K" on a terminal, on a line of its own else. */
static void show(struct cli_progress *p, double now, const char *text)
{
    p->last = now;
    if (p->mode == CLI_PROGRESS_TTY) {
        fprintf(p->out, "\r\033[K%s", text);
        p->drawn = true;
    } else {
        fprintf(p->out, "atr: %s\n", text);
    }
    fflush(p->out);
}

/* " ETA 1 h 02 min", " ETA 3 min 05 s", " ETA 12 s" into out. */
static void eta_text(double s, char *out, size_t cap)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, cap, ", ETA %ld h %02ld min", t / 3600, t % 3600 / 60);
    else if (t >= 60)
        snprintf(out, cap, ", ETA %ld min %02ld s", t / 60, t % 60);
    else
        snprintf(out, cap, ", ETA %ld s", t);
}

void cli_progress_count(struct cli_progress *p, double now, size_t done, size_t total,
                        const char *unit)
{
    if (!cli_progress_due(p, now))
        return;
    double el = now - p->start, rate = el > 0 ? (double)done / el : 0;
    char pct[16] = "", eta[48] = "", text[256];
    if (total) {
        snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * (double)done / (double)total);
        if (rate > 0 && done < total)
            eta_text((double)(total - done) / rate, eta, sizeof eta);
    }
    if (total)
        snprintf(text, sizeof text, "%s: %zu/%zu %s%s, %.1f/s%s", p->name, done, total, unit,
                 pct, rate, eta);
    else         /* "1 step", "2 steps": the unit is given in the plural */
        snprintf(text, sizeof text, "%s: %zu %.*s, %.1f/s", p->name, done,
                 (int)strlen(unit) - (done == 1), unit, rate);
    show(p, now, text);
}

/* "NAME  45%  230 MB  210 MB/s  WHAT  ETA": the line of a job over bytes. */
static void bytes_line(struct cli_progress *p, double now, unsigned long long done,
                       unsigned long long total, const char *what)
{
    double mb = (double)done / 1e6, el = now - p->start, rate = el > 0 ? mb / el : 0;
    char pct[16] = "", eta[48] = "", text[256];
    if (total) {
        snprintf(pct, sizeof pct, "  %3.0f%%", 100.0 * (double)done / (double)total);
        if (rate > 0 && done < total)
            eta_text((double)(total - done) / 1e6 / rate, eta, sizeof eta);
    }
    snprintf(text, sizeof text, "%s%s  %.0f MB  %.0f MB/s  %s%s", p->name, pct, mb, rate, what,
             eta);
    show(p, now, text);
}

void cli_progress_bytes(struct cli_progress *p, double now, unsigned long long done,
                        unsigned long long total, unsigned long traces)
{
    if (!cli_progress_due(p, now))
        return;
    char what[40];
    snprintf(what, sizeof what, "%lu traces", traces);
    bytes_line(p, now, done, total, what);
}

void cli_progress_files(struct cli_progress *p, double now, unsigned long long done,
                        unsigned long long total, size_t file, size_t files)
{
    if (!cli_progress_due(p, now))
        return;
    char what[48];
    snprintf(what, sizeof what, "file %zu/%zu", file, files);
    bytes_line(p, now, done, total, what);
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->drawn)
        fputs("\r\033[K", p->out);
    p->drawn = false;
}
