/* summary.h - summary.json of a tool replay: per-configuration figures of
 * the steps' metrics, so a live run (records from the runner) and a merge
 * of shards (atr replay tools --merge, lines read from metrics.jsonl) give
 * the same figures from the same steps.
 *
 * Memory: the summary owns its per-configuration samples and names; a
 * step's strings and sample arrays live in the arena given to the function
 * that filled it (until that arena is cleared). Percentiles sort the
 * samples, so reading the figures is not const. */
#ifndef ATR_RUNNER_SUMMARY_H
#define ATR_RUNNER_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/replay.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/error.h"

/* One step as the summary counts it: what its metrics.jsonl line holds,
 * at the line's precision. Negative figures are unknown (null there). */
struct atr_replay_step {
    const char *config, *trace_id;
    bool skipped;                   /* the line has "skipped" */
    double latency_ms, cpu_ms, max_rss_mb;
    int64_t mem_high_events, mem_max_events, oom_kills;
    int64_t pids_max_hit;           /* forks refused at pids.max */
    bool disk_full;                 /* its work directory's file system was full */
    double mem_some_ms, cpu_some_ms;    /* pressure stall */
    int64_t ctl_adjustments;
    int exit_code;                  /* nonzero: failed (-1: unknown) */
    bool timed_out;
    const char *missing_cwd;        /* the recorded cwd the replay lacked, or NULL */
    const char *restore;            /* a browser step's DOM restore (driver.h), or NULL */
    uint64_t restore_missing;       /* resources its restored page lacked */
    const char *missing_file;       /* editor: the recorded file the replay lacked, or NULL */
    /* dynamic: reaction times (us), condition seen -> limit written, and
     * its bound; negative samples are not counted. */
    const double *reaction_us, *reaction_bound_us;
    size_t n_reaction, n_reaction_bound;
};

/* out from a live record under config, its figures rounded as the line
 * atr_step_metrics_json writes for it; strings and samples copied to a. */
void atr_replay_step_from_metrics(struct atr_replay_step *out, const char *config,
                                  const struct atr_step_metrics *m, struct atr_arena *a);
/* out from one metrics.jsonl line (len bytes, no "\n"), parsed in a;
 * errors are "file:line:col: ..." (-1, err set). */
int atr_replay_step_parse(struct atr_replay_step *out, const char *line, size_t len,
                          struct atr_arena *a, const char *file, unsigned long lineno,
                          struct atr_error *err);

/* Why a step that ran failed, the first that applies in this order:
 * killed at its timeout, OOM-killed, exit 127 (the shell found no such
 * command), its recorded cwd absent here (the trace wants its repository
 * image), the file an editor step reads or edits absent here (it came
 * with that image), any other non-zero exit. */
enum atr_replay_cause {
    ATR_CAUSE_TIMEOUT,
    ATR_CAUSE_OOM,
    ATR_CAUSE_NOT_FOUND,
    ATR_CAUSE_NO_DIR,
    ATR_CAUSE_NO_FILE,
    ATR_CAUSE_EXIT,
    ATR_CAUSE_COUNT,
};
/* "timeout", "oom", "command_not_found", "missing_directory",
 * "missing_file", "nonzero_exit" */
const char *atr_replay_cause_key(enum atr_replay_cause c);
/* The cause of st, or ATR_CAUSE_COUNT when it did not fail (or was skipped). */
enum atr_replay_cause atr_replay_step_cause(const struct atr_replay_step *st);
/* The same from a step's figures (exit_code 0: ATR_CAUSE_COUNT). */
enum atr_replay_cause atr_replay_cause_of(int exit_code, bool timed_out, int64_t oom_kills,
                                          bool missing_cwd, bool missing_file);

/* A step's class (metrics.jsonl "class"): "skipped", "ok", "env_missing"
 * (failed because its environment is not here: command not found, its
 * cwd or file missing) or "failed" (on its own: non-zero exit, timeout,
 * OOM). */
const char *atr_replay_class_name(bool skipped, enum atr_replay_cause c);
bool atr_replay_cause_is_env(enum atr_replay_cause c);

/* One trace's steps by class (in summary.json's "per_trace"). */
struct atr_replay_trace_counts {
    const char *trace_id;           /* owned by the summary */
    unsigned long steps, ran, ok, env_missing, failed, skipped;
};

/* The restore outcomes a summary counts, in this order. */
#define ATR_RESTORE_KINDS 4
extern const char *const atr_restore_kinds[ATR_RESTORE_KINDS];

/* One configuration's figures as summary.json writes them: rounded to its
 * 3 decimals, NaN where it writes null (a percentile of no samples). */
struct atr_replay_config_summary {
    const char *config;             /* owned by the summary */
    unsigned long traces, total_steps, ran_steps, skipped_steps, failed_steps,
        timed_out_steps;
    unsigned long failures[ATR_CAUSE_COUNT];   /* failed_steps by cause */
    unsigned long env_missing_steps, own_failed_steps;   /* failed_steps by class */
    const struct atr_replay_trace_counts *per_trace;    /* in order; owned by the summary */
    size_t n_per_trace;
    unsigned long missing_cwd_steps;   /* steps whose recorded cwd was absent */
    const char *missing_cwd;        /* the first such cwd, or NULL (owned by the summary) */
    /* Browser steps by what restoring their DOM came to (docs/browser.md):
     * live, restored, snapshot_missing, selector_missing; and the resources
     * restored pages lacked. All 0 when no step tried. */
    unsigned long restore[ATR_RESTORE_KINDS];
    unsigned long restore_resources_missing;
    double latency_p50_ms, latency_p95_ms, latency_p99_ms, latency_max_ms;
    double cpu_ms_total, max_rss_mb;
    int64_t mem_high_events_total, mem_max_events_total, oom_kills;
    /* Steps that met a limit: memory.max (mem_max_events), pids.max, a
     * full work directory. */
    unsigned long mem_max_hit_steps, pids_max_hit_steps, disk_full_steps;
    double mem_pressure_some_ms_total, cpu_pressure_some_ms_total;
    int64_t ctl_adjustments;
    double ctl_reaction_p50_us, ctl_reaction_p99_us;
    double ctl_reaction_bound_p50_us, ctl_reaction_bound_p99_us;
};

struct atr_replay_summary;

struct atr_replay_summary *atr_replay_summary_new(void);
void atr_replay_summary_free(struct atr_replay_summary *s);   /* accepts NULL */

/* Counts one step (the steps of one trace come one after another: a trace
 * is a run of consecutive steps with its id). file and lineno name the
 * step's line in errors (file:line: too many configurations). */
int atr_replay_summary_add(struct atr_replay_summary *s, const struct atr_replay_step *st,
                           const char *file, unsigned long lineno, struct atr_error *err);

/* Configurations seen, in order of their first step; the figures of the
 * i-th (i < atr_replay_summary_n_configs). */
size_t atr_replay_summary_n_configs(const struct atr_replay_summary *s);
void atr_replay_summary_config(struct atr_replay_summary *s, size_t i,
                               struct atr_replay_config_summary *out);

/* summary.json's members "backend", "incomplete" and "configs":
 * [{config, traces, total_steps, ..., failures: {cause: n}, missing_cwd,
 * env_missing_steps, own_failed_steps, latency_p50_ms, ..., per_trace:
 * [{trace_id, steps, ran, ok, env_missing, failed, skipped}]}, ...], into an
 * object w has open (where callers may add members of their own).
 * backend may be NULL. */
struct atr_jw;
void atr_replay_summary_members(struct atr_replay_summary *s, const char *backend,
                                bool incomplete, struct atr_jw *w);
/* The whole summary.json document (with its "\n"), appended to out. */
void atr_replay_summary_json(struct atr_replay_summary *s, const char *backend,
                             bool incomplete, struct atr_buf *out);

#endif
