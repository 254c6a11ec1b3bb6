/* report-impl.h - what the parts of `atr bench report` share (private to
 * src/bench/report*.c): a group's results gathered per commit and variant
 * over repeats, the ratios with their intervals and verdicts, per agent
 * counts; built by report.c, written by report-md.c (Markdown) and
 * report-data.c (JSON, CSV).
 *
 * Memory: a comparison owns its rows' value arrays (report_release);
 * strings point into the group's results. */
#ifndef ATR_BENCH_REPORT_IMPL_H
#define ATR_BENCH_REPORT_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/report.h"
#include "stats/ci.h"

struct group {
    char *name;
    struct atr_bench_set set;
};

struct atr_bench_report {
    double noise;            /* fraction: 0.05 for 5 %; only the tie margin */
    struct group *g;
    size_t n;
};

/* The figures compared: output throughput (higher is better), and the
 * median of each latency in a run (lower is better): a run's median is
 * steadier across repeats than its p99, and every format has it. */
enum metric { M_TOK_S, M_TTFT, M_TPOT, M_ITL, M_E2EL, METRICS };

struct metric_info {
    const char *key;         /* JSON and CSV: "tok_s", "ttft_ms", ... */
    const char *label;       /* Markdown and HTML */
    bool higher_is_better;
};
extern const struct metric_info report_metrics[METRICS];

struct counts {
    size_t total, status[3], outcome[ATR_BENCH_OUTCOMES];
};

/* The runs of one variant of one commit (one agent's, for agents), over
 * its repeats: how many, and the figures of the successful ones (a failed
 * repeat is counted, never averaged in). */
struct cell {
    size_t runs, ok;
    double *v[METRICS];      /* successful runs' figures that exist */
    unsigned *rep[METRICS];  /* the repeat (round) of each, for pairing */
    size_t n[METRICS];
    double median[METRICS];  /* NAN: no value */
};

/* A ratio cand/ref of medians with its interval and the verdict read off
 * it; has is false where a side has no value (shown as "-"). */
struct ratio {
    bool has;
    struct atr_ci ci;
    enum atr_verdict verdict;
};

/* One commit's agent (agent NULL: a commit without agent runs). */
struct row {
    const char *commit, *agent;
    struct cell base, human, agent_c;
    struct ratio vs_base[METRICS], vs_human[METRICS];
    bool true_success;       /* ran, and beats baseline on throughput beyond noise */
};

/* The human commit against its baseline: the reference an agent is held to. */
struct ref {
    const char *commit;
    struct cell base, human;
    struct ratio ratio[METRICS];
};

struct agent_stats {
    const char *name;        /* NULL: results with a commit but no variant */
    struct counts c;         /* the agent's runs only, every repeat */
    size_t commits, true_success;
};

/* Verdict counts of one comparison over the rows, on throughput. */
struct tally {
    size_t win, tie, loss, inconclusive;
};

struct comparison {
    struct row *rows;
    size_t n;
    struct ref *refs;
    size_t n_refs;
    struct agent_stats *agents;
    size_t n_agents;
    double gm_human, gm_base;          /* geometric means of the throughput ratios */
    size_t n_human, n_base;
    struct tally vs_human, vs_base, human_vs_base;
    size_t true_success;
};

struct counts report_count(const struct atr_bench_set *s);
double report_pct(size_t k, size_t n);
/* Builds the comparison of s; noise is the tie margin (a fraction). */
void report_compare(const struct atr_bench_set *s, double noise, struct comparison *c);
void report_release(struct comparison *c);

/* "win", "tie", ... for a ratio that has values, else NULL. */
const char *report_verdict(const struct ratio *r);

#endif
