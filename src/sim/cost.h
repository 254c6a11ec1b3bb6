/* cost.h - hardware and model profiles, and the cost of one engine
 * iteration (docs/sim.md).
 *
 * A profile is "GPU/MODEL" (e.g. "h100/llama-3.1-8b") with --tp tensor
 * parallelism. An iteration runs a batch: some prefill tokens (chunked
 * prefill) and some sequences decoding one token each. Its time is
 *   CPU x (1 - overlap) + max(GPU, CPU x overlap)
 *   GPU = compute + memory + layers x per-layer kernel floor + all-reduce
 *   CPU = per step + per sequence x sequences + per token x prefill tokens
 * where compute = (2 x body weights x tokens + 2 x output head x sequences
 * + attention FLOPs) / (peak FLOPs x efficiency) and memory = (weights
 * streamed + KV bytes read) / (HBM bandwidth x efficiency), per GPU under
 * tensor parallelism. The two add: a step's kernels run one after another,
 * and at decode batch sizes a GEMM saturates neither. The per-layer floor is the
 * fixed cost of a layer's ~10 small kernels: less under CUDA-graph replay
 * than when launched one by one from Python (eager). The CPU terms belong
 * to the engine flavour (vllm, sglang), never to the model; overlap is the
 * share of CPU work the engine hides behind GPU execution.
 *
 * GPUs and models are JSON files (docs/sim.md, "Profile files"): the
 * built-in ones in profiles/, embedded at build time, and the user's in the
 * directories of ATR_PROFILE_PATH. They are parsed once, at first use.
 * Memory: the loaded GPUs and models live until atr_profiles_load replaces
 * them; every struct atr_profile points into them. Loading is not
 * thread-safe against atr_profiles_load; first use from several threads is. */
#ifndef ATR_SIM_COST_H
#define ATR_SIM_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct atr_gpu {
    const char *name;            /* "h100" */
    const char *full_name;       /* "NVIDIA H100 SXM 80GB" */
    double peak_flops;           /* dense BF16/FP16, FLOP/s */
    double hbm_bytes_per_s;      /* memory bandwidth */
    double mem_bytes;            /* HBM capacity */
    /* Extension: the tensor-parallel interconnect (docs/sim.md). */
    double link_bytes_per_s;     /* per direction: NVLink, or PCIe without P2P links */
    double link_latency_s;       /* fixed cost of one small all-reduce */
    /* Optional (0 when absent: the calibrated default): the share of the
     * dense peak a prefill reaches on this GPU (docs/sim.md, "Calibration"). */
    double compute_efficiency;
    /* Optional (0 when absent): llama.cpp's iteration cost on this device
     * when it is a CPU, as `atr sim calibrate` fits it for one model
     * (docs/sim.md, "llama.cpp on a CPU"): per ubatch, per token computed,
     * per query-key pair of a prompt's attention, per context token a
     * decoding sequence reads, per sequence sampled; and the HTTP server's
     * time per request and per prompt token. */
    double llama_ubatch_s, llama_token_s, llama_pair_s, llama_ctx_s, llama_seq_s;
    double llama_frontend_s, llama_frontend_token_s;
    const char *note;            /* the file's "note", or "" */
};

struct atr_model {
    const char *name;            /* "llama-3.1-8b" */
    const char *hf_name;         /* "meta-llama/Llama-3.1-8B-Instruct" (for /v1/models) */
    double params;               /* parameter count */
    unsigned layers, hidden, heads, kv_heads, head_dim;
    double bytes_per_weight;     /* 2 for BF16, ~0.5-0.6 for 4-bit AWQ */
    unsigned kv_bytes_per_elem;  /* 2 (fp16 KV cache) */
    unsigned max_model_len;
    const char *note;            /* the file's "note", or "" */
    /* Optional (0 / false when absent: the output head is then not told
     * apart, and every weight counts as a matrix product per token): */
    unsigned vocab;              /* tokens in the vocabulary (logits per sequence) */
    bool tied_embeddings;        /* the output head is the input embedding table */
};

struct atr_profile {
    const struct atr_gpu *gpu;
    const struct atr_model *model;
    unsigned tp;                 /* tensor parallel degree, >= 1 */
    /* Derived: */
    double weight_bytes_per_gpu;     /* every weight, resident */
    double streamed_bytes_per_gpu;   /* read by every step: all but an untied input table */
    double body_params;          /* weights applied to every token (no embedding tables) */
    double head_params;          /* output head, applied once per sequence (vocab x hidden) */
    double kv_bytes_per_token;   /* all layers, K and V, per GPU */
    uint64_t kv_capacity_tokens; /* (gpu_mem * util - weights - activation reserve) / kv per token */
    /* Calibration constants (documented in docs/sim.md): */
    double compute_efficiency, memory_efficiency;   /* achieved / peak, 0..1 */
    double iter_overhead_s;      /* fixed per-iteration cost (scheduler, launch) */
    double gpu_memory_utilization;   /* vLLM's default 0.9 */
    /* Extension: */
    double per_seq_overhead_s;   /* CPU cost per sequence in the batch (sampling,
                                    detokenising, streaming) */
    double activation_reserve_bytes; /* per GPU, kept out of the KV cache */
    unsigned kv_heads_per_gpu;   /* kv_heads / tp, or 1 when heads are replicated */
    /* Overhead model (docs/sim.md, "Cost of one iteration"): */
    const char *flavour;         /* engine flavour of the CPU terms: "vllm", "sglang" */
    double per_token_overhead_s; /* CPU cost per prefill token (input preparation) */
    double cpu_overlap;          /* share of the CPU time hidden behind the GPU, 0..1 */
    double layer_graph_s;        /* GPU floor per layer, kernels replayed from a CUDA graph */
    double layer_eager_s;        /* the same, kernels launched one by one (eager) */
    unsigned graph_max_seqs;     /* decode-only batches up to this size replay a graph */
    bool cuda_graphs;            /* true (default); false as with vLLM's --enforce-eager */
    /* Seconds a request spends in the engine's HTTP front end (the API
     * server: parse, tokenise, hand over; detokenise and stream the
     * tokens) on top of the engine's work, as a client sees it; 0 for an
     * offline run (vLLM's LLM class). Not part of an iteration's cost:
     * atr_sim_run adds it to each request's latency. */
    double frontend_s;
    /* Seconds more per prompt token in the same front end, tokenising the
     * prompt before the engine sees it (atr_sim_run queues a replica's
     * prompts for it one at a time). 0 offline. */
    double frontend_token_s;
    /* llama.cpp flavour on a calibrated CPU (the GPU has llama_ubatch_s):
     * the iteration is costed from those constants, its tokens split into
     * physical batches of `ubatch` (llama-server -ub, 512). */
    bool llama_cpu;
    unsigned ubatch;
};

/* Sets the CPU terms of an engine flavour, "vllm" (the default),
 * "sglang" or "llama.cpp" (on a GPU file with llama_* constants, the
 * whole cost comes from them); -1 for an unknown name (p unchanged). */
int atr_profile_set_flavour(struct atr_profile *p, const char *flavour);

/* No API server in front of the engine (`--offline`, as vLLM's offline LLM
 * class): frontend_s and frontend_token_s 0. */
void atr_profile_set_offline(struct atr_profile *p);

/* Resolves "GPU/MODEL" with tp; errors name the known GPUs and models.
 * Loads the profiles first if nothing loaded them yet, as
 * atr_profiles_load(getenv("ATR_PROFILE_PATH")) would; when that failed,
 * every call fails with its error ("FILE:LINE:COL: expected ..."). */
int atr_profile_find(const char *spec, unsigned tp, struct atr_profile *out,
                     struct atr_error *err);

/* (Re)loads the profiles: the built-in ones, then the files NAME.json in
 * DIR/gpus and DIR/models for each DIR of the colon-separated path_list
 * (NULL or "" = built-ins only). A name in an earlier DIR overrides the same
 * name in a later one and a built-in. Every file is checked, used or not.
 * Returns 0, or -1 with err set; the tables are then empty and
 * atr_profile_find returns the same error until a load succeeds.
 * Invalidates every profile, GPU and model obtained before. */
int atr_profiles_load(const char *path_list, struct atr_error *err);

/* NULL-terminated tables of the loaded GPUs and models (built-ins first, in
 * their order, then the user's by file name), for help texts and tests;
 * loads them like atr_profile_find if needed. */
const struct atr_gpu *const *atr_gpu_table(void);
const struct atr_model *const *atr_model_table(void);

/* The built-in profile files, generated into the build directory by
 * profiles/embed.cmake; for cost.c only. Ends with a NULL path. */
struct atr_profile_blob {
    const char *path;            /* "profiles/gpus/h100.json" */
    const unsigned char *text;   /* NUL-terminated */
    size_t len;                  /* bytes, without the NUL */
};
extern const struct atr_profile_blob atr_profile_blobs[];

/* One iteration's work. */
struct atr_iter_work {
    uint64_t prefill_tokens;     /* new prompt tokens computed this iteration */
    uint64_t prefill_ctx_tokens; /* sum over prefill chunks of (cached+earlier) context they attend to */
    uint64_t decode_seqs;        /* sequences producing one token */
    uint64_t decode_ctx_tokens;  /* sum of their context lengths (KV read) */
    /* Extension (zero is allowed; atr_iter_add_prefill fills both): */
    uint64_t prefill_seqs;       /* prefill chunks in the batch */
    uint64_t prefill_attn_pairs; /* sum over new prompt tokens of the tokens each
                                    attends to (itself included); 0 = estimate */
    /* A step after the first of a multi-step window (vLLM V0's
     * --num-scheduler-steps): the scheduler does not run before it and
     * its inputs are advanced on the GPU, so it has no per-iteration CPU
     * cost; the per-sequence work stays. */
    bool window_step;
};

/* Adds a prefill chunk of n new tokens after ctx tokens already in the KV
 * cache (prefix-cache hits and earlier chunks). */
void atr_iter_add_prefill(struct atr_iter_work *w, uint64_t n, uint64_t ctx);
/* Adds a sequence decoding one token with ctx tokens of context. */
void atr_iter_add_decode(struct atr_iter_work *w, uint64_t ctx);

/* Seconds the iteration takes on profile p; 0 for an empty batch. */
double atr_iter_seconds(const struct atr_profile *p, const struct atr_iter_work *w);

#endif
