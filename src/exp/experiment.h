/* experiment.h - the AgentCgroup experiments (`atr experiment`): arms side
 * by side on the same tool traces, repeated with the order rotating, each
 * run an `atr replay tools` of the atr binary (its own process, guard and
 * cgroup root), their step lines gathered into one metrics.jsonl (each
 * tagged with its arm and rep) and summed per arm into summary.json in
 * the seed's keys (docs/controller.md, "Experiments").
 *
 *   timescale    no controller, then the dynamic controller's user-space
 *                psi-poll and psi-trigger and the in-kernel ebpf
 *   domain       static-env, static-toolcall, dynamic
 *   overhead     none, static-toolcall, dynamic, beside plain fork/exec and
 *                systemd-run --scope (struct atr_xp_refs)
 *   multitenant  static-toolcall, dynamic (psi-poll), dynamic (ebpf), with
 *                a victim tenant (required) beside the traces, every tenant
 *                also replayed alone: its slowdown shared / solo per arm
 *
 * Memory: sums own their samples (atr_xp_sums_release). Nothing prints:
 * the caller reads the sums. */
#ifndef ATR_EXP_EXPERIMENT_H
#define ATR_EXP_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/percentile.h"
#include "util/error.h"

/* One arm: how its runs replay, and its name as a configuration of DIR's
 * metrics.jsonl and summary.json (what `atr report DIR` shows side by
 * side; the replay's own "config" is kept as "replay_config"). */
struct atr_xp_arm {
    const char *name;           /* DIR/NAME-REP, the table */
    const char *config;
    const char *replay_config;
    const char *controller;     /* dynamic: the controller */
};

#define ATR_XP_MAX_ARMS 4

/* An experiment: its arms, the first the baseline of "slowdown". */
struct atr_xp {
    const char *mode;
    struct atr_xp_arm arms[ATR_XP_MAX_ARMS];
    int n;
    bool needs_victim;
    bool solo;                  /* every tenant also alone (its slowdown's reference) */
};

/* The experiment named mode, or NULL; the names, NULL-terminated. */
const struct atr_xp *atr_xp_find(const char *mode);
extern const char *const atr_xp_modes[];

/* overhead: what a step costs without atr, measured between the arms'
 * repetitions: fork + exec + wait of `/bin/sh -c true` (what a bash step
 * runs), and `systemd-run --scope` of it where a systemd manager runs
 * (else systemd_why says why not). Milliseconds per step. */
struct atr_xp_refs {
    struct atr_samples fork_exec_ms, systemd_run_ms;
    char systemd_why[160];
};
#define ATR_XP_FORK_EXEC_PER_REP 50
#define ATR_XP_SYSTEMD_PER_REP 5

struct atr_xp_cfg {
    const struct atr_xp *x;
    const char *out;            /* existing folder */
    char *const *traces;
    int n_traces;
    unsigned reps, interval_ms;
    int64_t mem_high, mem_max;
    bool sandbox_ns;            /* false: the host's processes */
    const char *victim;         /* a tenant replayed beside (--tenants), or NULL */
    bool png;                   /* the report's charts also as PNG files in DIR/figures */
    struct atr_xp_refs *refs;   /* overhead: filled (its samples the caller's to release
                                   with atr_xp_refs_release); NULL: not measured */
};

#define ATR_XP_MAX_TENANTS 16

/* One tenant of a --tenants run under one arm: its step latencies (ms)
 * alone and shared. */
struct atr_xp_tenant {
    char id[128];               /* its trace_id */
    bool victim;
    struct atr_samples alone, shared;
};

/* One arm's figures over all its runs. */
struct atr_xp_sum {
    bool skipped;               /* the ebpf arm could not load: why says why */
    char why[320];
    unsigned runs;
    unsigned long steps;
    struct atr_samples latency, reaction, bound, victim;
    struct atr_samples wall;    /* each run's whole replay, ms: setup and teardown too */
    double max_rss_mb, held_ms, overshoot_mb;
    /* The victim's steps (shared): their latency, CPU and memory stall
     * (PSI "some"), ms summed: where its time went. */
    double victim_ms, victim_cpu_stall_ms, victim_mem_stall_ms;
    int64_t high_events, max_events, oom, holds;
    /* Tenants by trace id (those past ATR_XP_MAX_TENANTS are not kept
     * apart); only runs with the alone phase fill "alone". */
    struct atr_xp_tenant tenants[ATR_XP_MAX_TENANTS];
    int n_tenants;
};

/* Runs every arm of cfg->x reps times (an ebpf arm whose first run fails
 * is skipped with the reason; any other failure ends it), then writes
 * DIR/metrics.jsonl, DIR/summary.json and DIR/report.html. sums has
 * ATR_XP_MAX_ARMS entries; *base_p50 is the first arm's latency p50 (the
 * slowdowns' reference). 0, or -1 with err. */
int atr_xp_run(const struct atr_xp_cfg *cfg, struct atr_xp_sum *sums, double *base_p50,
               struct atr_error *err);
void atr_xp_sums_release(struct atr_xp_sum *sums);
void atr_xp_refs_release(struct atr_xp_refs *refs);

/* Percentile p of s, NAN when empty. */
double atr_xp_pct(struct atr_samples *s, double p);

#endif
