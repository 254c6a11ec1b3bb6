/* run-impl.h - what the parts of `atr bench run`'s runner share (private
 * to src/bench/run*.c): the state of the whole invocation (struct runner)
 * and of one run (struct run), and the functions each part offers:
 *   run.c          the loop over items, variants and agents; set-up,
 *                  resume, shards; the log; prepare and cleanup commands
 *   run-server.c   the server: port checks, start, readiness, stop
 *   run-bench.c    the benchmark phase: atr's client or a command, the
 *                  watchdog, the final outcome
 *   run-model.c    the model file the server command names, checked
 *   run-result.c   the result file */
#ifndef ATR_BENCH_RUN_IMPL_H
#define ATR_BENCH_RUN_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "bench/metrics.h"
#include "bench/run.h"
#include "runner/cgroup.h"
#include "runner/container.h"
#include "runner/guard.h"
#include "runner/spawn.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "util/buf.h"

#define READY_POLL_MS 5              /* readiness probe interval */
#define PROBE_TIMEOUT_MS 1000        /* one probe: a server that accepts but hangs */
#define LOG_TAIL_LINES 50
#define LOG_TAIL_BYTES 8192
#define RAW_OUTPUT_MAX (64u << 10)   /* raw_output keeps the end of the output */
#define STEP_OUTPUT_MAX (4u << 20)   /* prepare/command output kept in memory */
#define OOM_SCAN_BYTES (8u << 20)    /* the end of the server log searched for OOM */
#define CRASH_SETTLE_MS 300          /* failed requests: did the server die? */
#define RUN_NAME_MAX 256             /* bytes of a run's file name (atr_bench_run_name) */

/* ---- time ---------------------------------------------------------------- */

static inline double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double unix_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the run's state ------------------------------------------------------- */

struct runner {
    const struct atr_bench_spec *s;
    const struct atr_bench_run_opts *o;
    struct atr_bench_run_stats *st;
    struct atr_error *err;
    struct atr_cg_host host;
    bool use_cg;                     /* a cgroup per server */
    struct atr_cg root;
    struct atr_guard guard;
    char **env;                      /* environ with the atr binary's folder on PATH */
    struct atr_workload workload;    /* serving: loaded once, before anything starts */
    struct atr_schedule schedule;
    char *path_var;
    char *results_dir, *logs_dir;
    size_t index, total, serial;
    unsigned repeats;                /* rounds of each item's runs */
    char disk_full[320];             /* the item's runs are disk_full with this; "": no */
    bool has_ctr;                    /* a variant names an image: ctr is the engine */
    struct atr_ctr_cli ctr;
    size_t n_containers;
};

/* Why the benchmark phase ended early. */
enum cut { CUT_NONE, CUT_TIMEOUT, CUT_CRASH, CUT_INTERRUPT };

struct run {
    struct runner *rn;
    const struct atr_bench_item *it;
    const struct atr_bench_variant *var;
    const struct atr_bench_agent *agent;     /* NULL: not a per-agent variant */
    const struct atr_bench_override *ov;
    unsigned repeat;                         /* 1..rn->repeats */
    struct atr_bench_vars vars;
    unsigned port;                           /* where the server listens */
    char name[RUN_NAME_MAX];                 /* atr_bench_run_name */
    char *result_path, *log_path;
    int log_fd;
    char *server_cmd, *ready_url;
    /* an "image" variant: the container, its command inside (NULL: the
     * image's own) and run_args, expanded; server_cmd starts it */
    char *image, *inner_cmd, **run_args;
    char ctr_name[64];                       /* "" until it may exist */
    int oom_fd;                              /* v1 OOM events below the server's group; -1 */
    bool ctr_oom;                            /* the container saw an OOM kill */
    double t0, t0_unix;
    /* what happened */
    bool decided, interrupted;
    enum atr_bench_outcome outcome;
    char error[1024];
    struct atr_bench_metrics m;
    struct atr_buf raw;                      /* raw_output */
    char *bench_summary;                     /* one line: requests done/failed */
    /* the server */
    bool started, has_cg;
    struct atr_spawn_proc proc;
    struct atr_cg cg;
    struct atr_spawn_result exit;
    const char *exit_phase;                  /* "startup", "benchmark", or NULL: stopped */
    bool killed;                             /* needed SIGKILL at stop */
    int64_t oom_kills, mem_peak;
    /* timing */
    double prepare_s, startup_s, benchmark_s, teardown_s;
    double ready_unix, term_unix, port_free_unix;
};

/* run.c */
void run_progress(struct run *r, enum atr_bench_phase ph);
bool run_stopped(const struct run *r);
/* Sets the outcome once: the first cause seen is the one reported. */
void run_decide(struct run *r, enum atr_bench_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void run_log_text(struct run *r, const char *text, size_t len);
void run_log_line(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last lines of the log (malloc'd): at most cap bytes, max_lines lines. */
char *run_log_tail(const struct run *r, size_t cap, size_t max_lines);
/* Does the server log have an OOM line? It is copied to out. */
bool run_log_says_oom(const struct run *r, char *out, size_t cap);
/* Runs cmd to completion, its output into the log: its exit status, or -1
 * (r->error says why) when it could not start. res->output is the caller's. */
int run_command(struct run *r, const char *label, const char *cmd, double timeout_s,
                const struct atr_spawn_watch *watch, struct atr_spawn_result *res);
void run_describe_exit(const struct atr_spawn_result *res, char *out, size_t cap);

/* run-server.c */
unsigned run_free_port(void);
/* An image variant's image, command and run_args expanded (r->image set);
 * 0, or -1 with rn->err set. */
int run_expand_container(struct run *r);
void run_release_container(struct run *r);
int run_server_start(struct run *r);
bool run_await_ready(struct run *r);
void run_server_died(struct run *r, const char *phase);
int run_server_stop(struct run *r);

/* run-bench.c */
int run_load_workload(struct runner *rn);
void run_benchmark(struct run *r);
void run_final_outcome(struct run *r);

/* run-model.c: checks each GGUF the server command names (-m FILE,
 * --model FILE); false with the outcome model_invalid decided
 * when one is refused. */
bool run_check_model(struct run *r);

/* run-result.c */
int run_write_result(struct run *r);

#endif
