/* forkexec.c - reference loops for bench/tool-overhead: times N plain
 * fork + execve("/bin/sh", "-c", CMD) + waitpid steps (what atr's latency_ms
 * spans, without cgroups, pipes or namespaces), and a gradual memory grower
 * for the controller reaction-time run, and a time stamper for whole
 * step-to-step cycles. Built by run.sh, not by CMake. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One step: fork, exec /bin/sh -c CMD in the child, wait. Returns the span
 * from just before fork() to the return of waitpid(), in ms; -1 if the
 * command failed (the benchmark must not time failures). */
static double step(const char *cmd)
{
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *argv[] = {"sh", "-c", (char *)cmd, NULL};
        execve("/bin/sh", argv, environ);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    double t1 = now_ms();
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t1 - t0 : -1;
}

/* loop N CMD: one "ms" line per step, then "total MS" for the whole loop. */
static int loop(long n, const char *cmd)
{
    double t0 = now_ms();
    for (long i = 0; i < n; i++) {
        double ms = step(cmd);
        if (ms < 0) {
            fprintf(stderr, "forkexec: step %ld of '%s' failed\n", i, cmd);
            return 1;
        }
        printf("%.4f\n", ms);
    }
    printf("total %.3f\n", now_ms() - t0);
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

/* grow MIB HOLD_MS: touches MIB MiB one MiB per ms (so a controller sees
 * usage climb through several limits), then holds it HOLD_MS. */
static int grow(long mib, long hold_ms)
{
    long page = sysconf(_SC_PAGESIZE);
    for (long m = 0; m < mib; m++) {
        volatile char *p = malloc(1 << 20);
        if (!p)
            return 1;
        for (long i = 0; i < (1 << 20); i += page)
            p[i] = 1;   /* never freed: held until exit */
        sleep_ms(1);
    }
    sleep_ms(hold_ms);
    return 0;
}

/* stamp FILE: appends the CLOCK_MONOTONIC time in ns as a text line; the
 * differences between consecutive stamps are whole step-to-step cycles,
 * everything a runner does between two steps included. */
static int stamp(const char *path)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    FILE *f = fopen(path, "a");
    if (!f)
        return 1;
    fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "loop") == 0)
        return loop(atol(argv[2]), argv[3]);
    if (argc == 4 && strcmp(argv[1], "grow") == 0)
        return grow(atol(argv[2]), atol(argv[3]));
    if (argc == 3 && strcmp(argv[1], "stamp") == 0)
        return stamp(argv[2]);
    fprintf(stderr, "usage: forkexec loop N CMD | grow MIB HOLD_MS | stamp FILE\n");
    return 2;
}
