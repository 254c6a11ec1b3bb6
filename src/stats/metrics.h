/* metrics.h - the request record both targets yield (the simulator and a
 * real server) and the benchmark figures of a run, as `vllm bench serve`
 * computes them. The outputs written from them are in stats/result.h.
 *
 * Definitions (vllm/benchmarks/serve.py, calculate_metrics):
 *   TTFT  = first chunk - start_s (a success without chunks: end_s - start_s)
 *   E2EL  = end_s (last chunk) - start_s
 *   ITL   = gaps between consecutive chunks (chunk_s[i] - chunk_s[i-1])
 *   TPOT  = (E2EL - TTFT) / (output_tokens - 1), only for output_tokens > 1
 *           (0 for goodput when output_tokens <= 1, as vLLM does)
 *   mean, std (population, ddof = 0), median and percentiles (numpy linear)
 *   over successful requests only; failures are counted, never averaged.
 *   duration = last end_s - first send_s over all records.
 *   Peak concurrency: vLLM's one-second buckets from the first successful
 *   start_s. Peak output tokens/s: the most output tokens in one of the
 *   same buckets (a chunk carries its record's usage tokens over its
 *   chunks), raised to total output tokens / (last successful end_s - first
 *   successful start_s) where that is higher, so it is never below the mean
 *   output throughput (vLLM's alone is, on a run shorter than a second).
 * Where TTFT starts: vLLM takes its start stamp inside the request function,
 * after the concurrency semaphore, so its TTFT excludes time spent waiting
 * for a slot. atr keeps that definition in the vLLM keys (comparable
 * figures) and reports the wait separately, never hidden: the "atr" object
 * of the result carries client queue time (start_s - send_s) and TTFT and
 * E2EL measured from send_s.
 *
 * Sessions (multi-turn agent workloads): a session is the records sharing
 * a trace_id (each trace is one session; records without one belong to
 * none). Its completion time runs from the send_s of its first turn to the
 * end_s of its last; its model time is the sum of end_s - send_s over its
 * turns (client queue included), its think time the rest (tool calls and
 * thinking between turns; in a DAG session turns overlap, so model time
 * can exceed completion and think time is then 0). A session with a
 * failed turn counts as failed
 * and is left out of the figures, as failed requests are.
 *
 * Memory: records and their strings are the caller's and are only read.
 * atr_llm_summarize fills a summary that owns its failure table (malloc);
 * atr_llm_summary_release frees it. */
#ifndef ATR_STATS_METRICS_H
#define ATR_STATS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/retention.h"
#include "util/error.h"

/* One request as the client saw it. Times in seconds on one clock. */
struct atr_llm_record {
    uint64_t id;            /* sequence number: the NDJSON line's "id" */
    double scheduled_s;     /* when the arrival schedule wanted it sent */
    double send_s;          /* released by the schedule (enters the slot queue) */
    double start_s;         /* got a concurrency slot, HTTP request issued */
    double sent_s;          /* its bytes start to leave on a connection (what the
                               server sees); 0: not measured (the simulator: its
                               requests reach the engine at start_s) or never sent */
    double end_s;           /* last chunk (streaming) or failure time */
    const double *chunk_s;  /* arrival of every chunk with content, first included */
    size_t n_chunks;
    int64_t prompt_tokens;  /* from usage */
    int64_t output_tokens;  /* from usage, never from counting chunks */
    int64_t cached_tokens;  /* usage.prompt_tokens_details.cached_tokens; -1 absent */
    bool success;
    const char *error;      /* failure reason ("http 429", "stream cut"...); NULL on success */
    const char *trace_id;   /* session it belongs to, or NULL (not written) */
    int64_t turn;           /* 0-based llm turn in that session */
    /* The prompt's length as atr built it (one token a synthetic word, salt
     * words included), to check against the server's prompt_tokens; 0: not
     * known (the simulator, older request files). */
    int64_t intended_prompt_tokens;
    const char *error_detail; /* on failure: the server's message or what was seen, or NULL */
    /* With several replicas (targets), the one that served it (0-based,
     * the policy's choice); written as "replica" only when has_replica. */
    uint32_t replica;
    bool has_replica;
    /* A turn of a DAG session (sched/workload.h): dag, and the turns it
     * waited for (borrowed from the workload; never written to request
     * files). dag false: it waited for turn - 1. */
    bool dag;
    const uint32_t *parents;
    uint32_t n_parents;
};

#define ATR_LLM_MAX_PCT 8

/* What the run was asked to do: echoed into the result, never computed. */
struct atr_llm_bench_config {
    const char *date;          /* "YYYYMMDD-HHMMSS", passed in for determinism */
    const char *backend;       /* "openai", "openai-chat", "vllm", "sim" */
    const char *model_id;
    const char *tokenizer_id;  /* NULL: same as model_id */
    int64_t num_prompts;
    /* vLLM's request_rate: requests a second the schedule sends, whatever
     * the server does (atr_schedule_request_rate); INFINITY writes the
     * string "inf" (all at once), NAN null (none: sessions of several
     * turns, each sent after the answer to the one before). */
    double request_rate;
    /* atr's "schedule": the arrival kind ("trace", "poisson", ...; NULL:
     * none written), sessions a second it starts (INFINITY: all at once,
     * NAN: unknown) and the time scale of trace times and think times. */
    const char *schedule;
    double session_rate, time_scale;
    double burstiness;
    int64_t max_concurrency;   /* <= 0: none (JSON null, no block line) */
    double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;   /* < 0: not set */
    double slo_session_ms;     /* a session's completion time; <= 0: not set */
    double percentiles[ATR_LLM_MAX_PCT];            /* e.g. {99} */
    size_t n_percentiles;      /* 0 means {99}, vLLM's default ({90, 99} for sessions) */
    bool e2el_section;         /* print the End-to-end Latency section */
    bool incomplete;           /* interrupted: only what finished is counted */
};

/* mean, median, std and the configured percentiles of one metric, in ms. */
struct atr_llm_stat {
    double mean, median, std;
    double p[ATR_LLM_MAX_PCT];
};

/* Per-session figures, in ms, over the sessions whose turns all succeeded.
 * Percentiles: the configured ones, else {90, 99}. */
struct atr_llm_sessions {
    bool multi_turn;                 /* some session has two turns or more */
    int64_t completed, failed;       /* sessions */
    struct atr_llm_stat completion;  /* first send_s to last end_s */
    struct atr_llm_stat model;       /* sum of end_s - send_s over turns */
    struct atr_llm_stat think;       /* completion - model: tools, thinking */
    /* Reported once some record has dag (a chain's are its model time and
     * model / completion, nothing new): over every completed session, the
     * longest chain of dependent turns' model times (end_s - send_s summed
     * along parents), and the parallelism achieved, model time /
     * completion (turns that overlap add up, so above 1 means branches ran
     * at once). */
    bool dag;
    struct atr_llm_stat critical_path;
    struct atr_llm_stat parallelism; /* a ratio, not ms */
    struct atr_retention retention;  /* the prefix still cached after each pause */
    /* --goodput session:MS: completed sessions within it, and those a
     * second over the run's duration */
    bool goodput_configured;
    int64_t good_completed;
    double goodput;
};

struct atr_llm_failure {
    char *reason;              /* owned */
    int64_t count;
};

struct atr_llm_summary {
    int64_t completed, failed;
    int64_t total_input, total_output, cached_tokens;
    /* The server's prompt_tokens against intended_prompt_tokens, over the
     * successes that have both: how many, the constant excess (the least
     * of server - intended: BOS, the chat template), how many differ by more
     * than 1 % once it is taken off, and the largest such relative error. */
    int64_t prompt_checked, prompt_template_tokens, prompt_mismatch;
    double prompt_max_rel_error;
    double duration;
    double request_throughput, output_throughput, total_token_throughput;
    bool goodput_configured;
    int64_t good_completed;
    double request_goodput;
    double max_output_tokens_per_s;
    int64_t max_concurrent_requests;
    struct atr_llm_stat ttft, tpot, itl, e2el;         /* vLLM's */
    struct atr_llm_stat ttft_send, e2el_send;          /* from send_s */
    double queue_mean_ms, queue_p99_ms;                /* start_s - send_s */
    double lag_p50_ms, lag_p99_ms;                     /* send_s - scheduled_s */
    double send_lag_p50_ms, send_lag_p99_ms;           /* atr_llm_sent_s - scheduled_s */
    struct atr_llm_sessions sessions;
    struct atr_llm_failure *failures;                  /* sorted by reason */
    size_t n_failures;
};

/* Computes every figure of records r[0..n) under cfg. */
int atr_llm_summarize(const struct atr_llm_record *r, size_t n,
                      const struct atr_llm_bench_config *cfg,
                      struct atr_llm_summary *out, struct atr_error *err);
void atr_llm_summary_release(struct atr_llm_summary *s);

/* The configured percentiles: how many, and the i-th (vLLM's default {99}
 * when none is set). */
size_t atr_llm_pct_count(const struct atr_llm_bench_config *cfg);
double atr_llm_pct_at(const struct atr_llm_bench_config *cfg, size_t i);
/* The percentiles of request figures (sessions false: as above) or of
 * session figures (the configured ones, else {90, 99}) into out; how many. */
size_t atr_llm_pct_list(const struct atr_llm_bench_config *cfg, bool sessions,
                        double out[ATR_LLM_MAX_PCT]);

/* TTFT of one record in seconds: first chunk (or the end of a response
 * without chunks) minus start_s. */
double atr_llm_ttft_s(const struct atr_llm_record *r);
/* TPOT as vLLM's goodput sees it, seconds: 0 for one output token or none. */
double atr_llm_tpot_s(const struct atr_llm_record *r);
/* When the request left: sent_s, or start_s where that was not measured.
 * The send lag (this minus scheduled_s) holds every wait before the server
 * could see the request: timer, slot queue, connection, libcurl. */
double atr_llm_sent_s(const struct atr_llm_record *r);

#endif
