/* series.h - a workload on one target under each policy of a list, each
 * repeated, in interleaved order (policies A, B, C, then A, B, C again:
 * drift hits every policy alike), with the outputs of every run: what
 * `atr sim run`, `atr replay llm` and `atr compare --run` do after parsing.
 *
 *     struct atr_series_cfg cfg = { .paths = argv, .n_paths = n, .policies = names,
 *                                   .n_policies = 2, .repeats = 3, .on_result = print };
 *     int rc = atr_series_run(&t, &cfg, &err);
 *
 * The output files of the whole series are opened before the workload is
 * read (a path that cannot be written fails before any work) and
 * committed together after the last run: all or none. Results reach the
 * caller through callbacks (run k: its summary, records and engine
 * figures), which print; nothing here prints.
 *
 * Repeats: repeat r (from 1) runs with the schedule's seed + r - 1 (the
 * policy's too), so a generated schedule (--rate's Poisson or gamma gaps)
 * is a fresh draw per repeat and repeat 1 is the run without repeats; a
 * schedule of the traces' own times is the same in every repeat.
 *
 * Memory: cfg and everything it points to are borrowed for the call; what
 * a callback gets is valid only during the callback. */
#ifndef ATR_EXP_SERIES_H
#define ATR_EXP_SERIES_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "exp/exp.h"
#include "stats/metrics.h"
#include "util/error.h"

#define ATR_SERIES_MAX_POLICIES 8
#define ATR_SERIES_MAX_REPEATS 1000

/* One run of the series, as the callbacks see it. */
struct atr_series_run {
    size_t k, n;                          /* run k of n (from 0), in run order */
    const char *policy;                   /* cfg's name, or NULL: as recorded */
    size_t policy_index;                  /* into cfg->policies (0 without) */
    unsigned repeat;                      /* 1..repeats */
    /* on_result only: the run's figures; or, with repeats, res NULL and
     * failed the error of a run that could not be made (it has no files,
     * and the series goes on unless on_result stops it) */
    const struct atr_error *failed;
    const struct atr_exp_result *res;
    const struct atr_llm_summary *sum;
    const struct atr_llm_bench_config *bc;
};

struct atr_series_cfg {
    /* The workload: traces read from paths (from: their format, or NULL to
     * sniff); one without llm steps is an error. */
    char *const *paths;
    size_t n_paths;
    const char *from;
    const struct atr_schedule *schedule;
    unsigned max_concurrency;             /* 0: unlimited */
    const char *const *policies;          /* n_policies 0: one run as recorded */
    size_t n_policies;                    /* 0..ATR_SERIES_MAX_POLICIES */
    const char *policy_options;
    unsigned repeats;                     /* 0 or 1: once; up to ATR_SERIES_MAX_REPEATS */
    /* One shard of a run on several machines: the sessions i with
     * i % shard_n == shard_i, each at its start on the whole schedule;
     * shard_n 0 or 1: all. A shard left without llm steps is an error. */
    unsigned shard_i, shard_n;
    double start_at;                      /* HTTP: the schedule's 0 (wall-clock epoch), or 0 */
    unsigned threads;                     /* HTTP: event loops (exp/threads.h); <= 1: one */
    const volatile sig_atomic_t *stop;    /* HTTP: set (by a signal) to stop early */
    /* Outputs, each NULL for none. With several runs, each run's files get
     * ".POLICY" (several policies) and ".rK" (repeats) before their
     * extension (atr_series_path). iterations_out: one line per engine
     * iteration, only for a single run on a single sim replica. */
    const char *save_result, *requests_out, *iterations_out;
    /* The summaries: SLOs of goodput (< 0: unset), the percentiles (0: the
     * defaults), and the date results are stamped with (NULL: now, UTC). */
    double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;
    double slo_session_ms;       /* a session's completion time; <= 0: none */
    const double *percentiles;
    size_t n_percentiles;
    const char *date;
    /* Before each run, and right after it ran (also when it failed: before
     * atr_series_run returns its error); during it, its requests done. */
    void (*on_start)(void *ctx, const struct atr_series_run *run);
    void (*on_end)(void *ctx, const struct atr_series_run *run);
    void (*on_progress)(void *ctx, size_t done, size_t total);
    /* After run k is summarized and its files written: 0 to go on, > 0 to
     * stop the series there (the runs so far keep their files), e.g. on a
     * run stopped early or one where every request failed. */
    int (*on_result)(void *ctx, const struct atr_series_run *run);
    void *ctx;
};

/* The number of runs: policies (at least 1) times repeats (at least 1). */
size_t atr_series_runs(const struct atr_series_cfg *cfg);

/* Run k's place: its policy's index and its repeat (from 1). Run order
 * interleaves: k = (repeat - 1) * policies + policy_index. */
void atr_series_place(const struct atr_series_cfg *cfg, size_t k, size_t *policy_index,
                      unsigned *repeat);

/* PATH with ".POLICY" (policy not NULL) and ".rREPEAT" (repeat > 0) before
 * its extension: r.json -> r.naive.r2.json; malloc'd, NULL for a NULL path. */
char *atr_series_path(const char *path, const char *policy, unsigned repeat);

/* Sessions of shard i of n (n > 1) of w: keep[s] for every n-th by its
 * place in the workload (the order of the traces given), so shards of the
 * same files split them alike on every machine. Returns the turns kept
 * (0: an empty shard); keep is malloc'd (at least one element). */
size_t atr_series_shard(const struct atr_workload *w, unsigned i, unsigned n, bool **keep);

/* Runs the series on t. Returns 0; > 0, what on_result returned to stop
 * it (the runs so far written); -1 with err set when a file cannot be
 * opened or written, the workload cannot be read or has no llm steps (or
 * the shard none), or a run failed without repeats (nothing is written
 * then). */
int atr_series_run(const struct atr_target *t, const struct atr_series_cfg *cfg,
                   struct atr_error *err);

#endif
