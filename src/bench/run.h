/* run.h - the runner of `atr bench run`: every item x variant (x agent) of
 * a spec, one after another: prepare, start the server in its own process
 * group and cgroup, poll its readiness URL, run the workload (atr's own
 * client, or a benchmark command whose output is parsed), stop the server
 * (SIGTERM, SIGKILL after a grace period) until its port is free, and
 * write one result file with exactly one outcome (docs/bench.md).
 *
 * Files under the output folder:
 *   results/<commit8>_<variant>[_<agent>][_r<K>]_result.json   atomically
 *                                                       renamed
 *   logs/<commit8>_<variant>[_<agent>][_r<K>].log       prepare, server and
 *                                                       benchmark output
 *   logs/<commit8>_cleanup.log                          the item's cleanup
 *   results/.atr-bench-state.json                       {"state": "running" |
 *                                                       "complete" | "interrupted" |
 *                                                       "failed", "planned", "pid"}
 * With repeats, an item's runs go round by round (baseline, human, agents;
 * baseline, human, agents; ...) so that drift on the machine hits every
 * variant alike; repeat K > 1 adds "_r<K>" to the names (repeat 1 keeps the
 * plain ones, so folders of single runs read as before).
 * A run with a result file is skipped (resume), unless retry_failed and
 * its outcome is not success. A guard process (runner/guard.h) stops the
 * server and removes the cgroups should atr die.
 *
 * Memory: nothing is kept past the call. Nothing prints: progress goes
 * through the callback. */
#ifndef ATR_BENCH_RUN_H
#define ATR_BENCH_RUN_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench/results.h"
#include "bench/spec.h"
#include "util/error.h"

#define ATR_BENCH_STATE_FILE ".atr-bench-state.json"   /* in results/ */
#define ATR_BENCH_GRACE_S 10.0         /* SIGTERM to SIGKILL */
#define ATR_BENCH_PORT_FREE_S 30.0     /* after the server stopped */

enum atr_bench_phase {
    ATR_BENCH_PHASE_SKIP,              /* has a result already */
    ATR_BENCH_PHASE_PREPARE,
    ATR_BENCH_PHASE_START,
    ATR_BENCH_PHASE_BENCHMARK,
    ATR_BENCH_PHASE_STOP,
    ATR_BENCH_PHASE_DONE,              /* result written: outcome set */
    ATR_BENCH_PHASE_CLEANUP,           /* the item's cleanup command */
};

struct atr_bench_progress {
    size_t index, total;               /* 1-based run number of this invocation */
    const char *commit, *variant, *agent;   /* agent NULL when none */
    unsigned repeat, repeats;          /* this run's round (1-based) of how many */
    enum atr_bench_phase phase;
    double elapsed_s;                  /* since the run began */
    enum atr_bench_outcome outcome;    /* DONE */
    const char *error;                 /* DONE: NULL on success */
    const char *result_path;           /* DONE, SKIP */
};

struct atr_bench_run_opts {
    const char *out_dir;               /* created if missing */
    bool retry_failed;                 /* rerun results whose outcome is not success */
    const char *only;                  /* run only items whose commit starts so; NULL all */
    unsigned shard, shards;            /* run items k with k % shards == shard; 0: all */
    unsigned repeat;                   /* runs of each item x variant (x agent); 0: the
                                          spec's */
    double grace_s;                    /* 0: ATR_BENCH_GRACE_S */
    int port;                          /* >= 0: instead of the spec's (0: a free one
                                          per run); -1: the spec's */
    const char *self;                  /* the atr binary, put first on the commands' PATH
                                          (so "atr sim serve" in a spec is this atr); or NULL */
    const char *container_cli;         /* image variants: podman, docker, a path; NULL:
                                          podman, else docker (runner/container.h) */
    const volatile sig_atomic_t *stop; /* set by a signal: tear down, write nothing more */
    void (*on_progress)(void *ctx, const struct atr_bench_progress *p);
    /* Serving mode, during BENCHMARK: requests done of total (may be NULL). */
    void (*on_requests)(void *ctx, size_t done, size_t total);
    void *ctx;
};

struct atr_bench_run_stats {
    size_t runs;                       /* in this invocation's share */
    size_t skipped;                    /* had a result */
    size_t done;                       /* results written now */
    size_t outcomes[ATR_BENCH_OUTCOMES];    /* of those written now */
    bool interrupted;
    /* "" when every server and command ran in a cgroup of atr's own (what
     * they start is killed with it, setsid or not); else why not. */
    char warning[768];
    /* The container engine image variants run on, and its quirks: "" when
     * no variant names an image. */
    char engine[PATH_MAX + 256];
};

/* Runs s. 0 when every run of the share has a result (or stop was set:
 * st->interrupted), -1 with err set when the run could not go on (the
 * output folder is not writable, the port is held by another program, a
 * server outlived its stop). */
int atr_bench_run(const struct atr_bench_spec *s, const struct atr_bench_run_opts *o,
                  struct atr_bench_run_stats *st, struct atr_error *err);

/* The file name of one run's result and log, "<commit8>_<variant>[_<agent>]"
 * (an item's cleanup log: variant "cleanup"); the runner adds "_r<K>" for
 * repeat K > 1. -1 when commit, variant or
 * agent is not a name (atr_bench_name_ok: a '/', "." or ".." would put the
 * file outside the results folder) or the name does not fit in cap. */
int atr_bench_run_name(char *out, size_t cap, const char *commit, const char *variant,
                       const char *agent);

#endif
