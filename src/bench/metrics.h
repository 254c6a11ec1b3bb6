/* metrics.h - the figures of one benchmark run as result files keep them
 * (ISO-Bench's `metrics` object, plus the latency percentiles it lacks):
 * taken from atr's own client (serving mode) or parsed from what an
 * offline benchmark script printed (command mode: vLLM's "Serving
 * Benchmark Result" block, "Throughput: ..." and "Avg latency: ..." lines).
 *
 * Memory: plain values, nothing owned. Nothing prints. */
#ifndef ATR_BENCH_METRICS_H
#define ATR_BENCH_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "json/writer.h"
#include "stats/metrics.h"

/* One latency in ms; NAN where the source has no such figure. */
struct atr_bench_latency {
    double mean, median, p90, p99;
};

struct atr_bench_metrics {
    /* NAN / -1 where absent. */
    double req_s;                   /* request_throughput_req_s */
    double out_tok_s;               /* output_token_throughput_tok_s */
    double total_tok_s;             /* total_token_throughput_tok_s */
    int64_t completed, failed;      /* requests; -1 unknown */
    double duration_s;              /* the benchmark's own duration */
    struct atr_bench_latency ttft, tpot, itl, e2el;
    double avg_latency_s;           /* a latency script's "Avg latency: X seconds" */
    size_t n_figures;               /* how many of the above are present */
};

/* Every figure absent. */
void atr_bench_metrics_init(struct atr_bench_metrics *m);

/* From atr's own client: the summary of the run's records (its
 * percentiles must include 90 and 99). */
void atr_bench_metrics_from_summary(struct atr_bench_metrics *m, const struct atr_llm_summary *s,
                                    const struct atr_llm_bench_config *cfg);

/* Parses a benchmark script's console output text[0..len) (not
 * NUL-terminated; '\n', '\r\n' or '\r' end lines): the "Serving Benchmark
 * Result" block's lines ("Successful requests", "Failed requests",
 * duration, throughputs and "Mean/Median/P90/P99 TTFT/TPOT/ITL/E2EL (ms)"),
 * "Throughput: X requests/s, Y total tokens/s, Z output tokens/s" (vLLM's
 * benchmark_throughput; older ones print only "Y tokens/s", also the total)
 * and "Avg latency: X seconds" with its "50/90/99% percentile latency: X
 * seconds" lines (benchmark_latency: e2el in ms, the average also in
 * avg_latency_s). Lines it does not know are skipped, and so are lines
 * whose value is not a finite number >= 0; a figure printed twice keeps
 * the last. Returns m->n_figures (0: no metrics). Never fails on any
 * input. */
size_t atr_bench_metrics_parse(struct atr_bench_metrics *m, const char *text, size_t len);

/* The `metrics` object's members (the caller opened the object): the
 * present figures only, ISO-Bench's names (ttft_mean_ms, ...,
 * request_throughput_req_s) with 2 decimals as vLLM prints them. */
void atr_bench_metrics_write(struct atr_jw *w, const struct atr_bench_metrics *m);

#endif
