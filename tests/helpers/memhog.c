/* memhog.c - test helper with known resource use: touches N MiB (at
 * once or at a steady pace), spins for N ms of CPU, forks sleeping children or a background process, and
 * prints the pids it creates ("child PID", "bg PID") so tests can check
 * they are gone afterwards. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct hog {
    long mib;          /* -m: MiB to allocate and touch */
    long ramp_ms;      /* -r: touch them evenly over this long */
    long spin_ms;      /* -c: CPU time to burn */
    long sleep_ms;     /* -s: sleep before exiting */
    long children;     /* -g: sleeping children to fork */
    int in_child;      /* -f: allocate and spin in a forked child */
    int background;    /* -b: leave a sleeping process behind */
};

static void usage(void)
{
    fprintf(stderr, "usage: atr-memhog [-m MIB [-r MS]] [-c MS] [-s MS] [-g N] [-f] [-b]\n"
                    "  -m MIB  allocate and touch MIB MiB\n"
                    "  -r MS   touch them one MiB at a time, evenly over MS ms\n"
                    "  -c MS   spin for MS ms of CPU time\n"
                    "  -s MS   sleep MS ms before exiting\n"
                    "  -g N    fork N children that sleep an hour (prints \"child PID\")\n"
                    "  -f      allocate and spin in a forked child, then wait for it\n"
                    "  -b      leave a background process sleeping an hour (prints \"bg PID\")\n");
    exit(2);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Burns CPU in user mode: the clock is read (a system call) only every
 * few hundred microseconds of arithmetic. */
static void spin(long ms)
{
    volatile unsigned long x = 1;
    double end = cpu_ms() + (double)ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 200000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
}

/* Volatile so the compiler can neither drop the allocation nor the writes. */
static volatile char *held;

/* A step whose memory grows for a known time gives a controller that
 * polls every few ms many chances to act, however loaded the host. */
static void touch(long mib, long ramp_ms)
{
    size_t n = (size_t)mib << 20;
    volatile char *p = malloc(n ? n : 1);
    if (!p) {
        perror("atr-memhog: malloc");
        exit(1);
    }
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i += (size_t)page) {
        if (ramp_ms > 0 && i && !(i & ((1u << 20) - 1)))
            sleep_ms(ramp_ms / mib);
        p[i] = (char)(i | 1);
    }
    held = p;   /* held until exit, sleeping included */
}

static void work(const struct hog *h)
{
    if (h->mib > 0)
        touch(h->mib, h->ramp_ms);
    if (h->spin_ms > 0)
        spin(h->spin_ms);
}

static pid_t fork_sleeper(const char *label)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("atr-memhog: fork");
        exit(1);
    }
    if (pid == 0) {
        sleep_ms(3600 * 1000L);
        _exit(0);
    }
    printf("%s %d\n", label, (int)pid);
    fflush(stdout);
    return pid;
}

static void parse(int argc, char **argv, struct hog *h)
{
    int c;
    while ((c = getopt(argc, argv, "m:r:c:s:g:fb")) != -1) {
        switch (c) {
        case 'm': h->mib = atol(optarg); break;
        case 'r': h->ramp_ms = atol(optarg); break;
        case 'c': h->spin_ms = atol(optarg); break;
        case 's': h->sleep_ms = atol(optarg); break;
        case 'g': h->children = atol(optarg); break;
        case 'f': h->in_child = 1; break;
        case 'b': h->background = 1; break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();
}

int main(int argc, char **argv)
{
    struct hog h;
    memset(&h, 0, sizeof h);
    parse(argc, argv, &h);
    for (long i = 0; i < h.children; i++)
        fork_sleeper("child");
    if (h.background)
        fork_sleeper("bg");
    if (h.in_child) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            work(&h);
            if (h.sleep_ms > 0)
                sleep_ms(h.sleep_ms);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
        return 0;
    }
    work(&h);
    if (h.sleep_ms > 0)
        sleep_ms(h.sleep_ms);
    return 0;
}
