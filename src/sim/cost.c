/* cost.c - GPU and model profiles and the roofline cost of one engine
 * iteration. Every constant here is explained in docs/sim.md. */
#include "sim/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define NVLINK_LATENCY_S 8e-6
#define PCIE_BYTES_PER_S 25e9     /* PCIe 4.0 x16, achieved, no P2P */
#define PCIE_LATENCY_S 30e-6
#define MAX_TP 64u
#define MIN_KV_TOKENS 16u         /* one vLLM block */

/* Calibration (docs/sim.md, "Calibration"). */
#define COMPUTE_EFFICIENCY 0.5
#define MEMORY_EFFICIENCY 0.75
#define ITER_OVERHEAD_S 4e-3
#define PER_SEQ_OVERHEAD_S 100e-6
#define GPU_MEMORY_UTILIZATION 0.9
#define ACTIVATION_RESERVE_BYTES (1.5 * GIB)

/* Memory is what the driver reports as total (nvidia-smi, MiB): vLLM's
 * gpu_memory_utilization applies to that figure. */
static const struct atr_gpu gpu_h100 = {
    "h100", "NVIDIA H100 SXM 80GB", 989.4e12, 3.35e12, 81559 * MIB,
    450e9, NVLINK_LATENCY_S,
};
static const struct atr_gpu gpu_h200 = {
    "h200", "NVIDIA H200 SXM 141GB", 989.4e12, 4.8e12, 143771 * MIB,
    450e9, NVLINK_LATENCY_S,
};
static const struct atr_gpu gpu_a100 = {
    "a100-80g", "NVIDIA A100 SXM 80GB", 312e12, 2.039e12, 81920 * MIB,
    300e9, NVLINK_LATENCY_S,
};
static const struct atr_gpu gpu_l4 = {
    "l4", "NVIDIA L4 24GB", 121e12, 300e9, 23034 * MIB,
    PCIE_BYTES_PER_S, PCIE_LATENCY_S,
};
static const struct atr_gpu gpu_rtx3090 = {
    "rtx3090", "NVIDIA GeForce RTX 3090 24GB", 71e12, 936e9, 24576 * MIB,
    PCIE_BYTES_PER_S, PCIE_LATENCY_S,
};
static const struct atr_gpu gpu_rtx4090 = {
    "rtx4090", "NVIDIA GeForce RTX 4090 24GB", 165.2e12, 1008e9, 24564 * MIB,
    PCIE_BYTES_PER_S, PCIE_LATENCY_S,
};

const struct atr_gpu *const atr_gpus[] = {
    &gpu_h100, &gpu_h200, &gpu_a100, &gpu_l4, &gpu_rtx3090, &gpu_rtx4090, NULL,
};

/* name, hf_name, params, layers, hidden, heads, kv_heads, head_dim,
 * bytes_per_weight, kv_bytes_per_elem, max_model_len */
static const struct atr_model model_llama31_8b = {
    "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 8.03e9,
    32, 4096, 32, 8, 128, 2.0, 2, 131072,
};
static const struct atr_model model_llama32_1b = {
    "llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct", 1.24e9,
    16, 2048, 32, 8, 64, 2.0, 2, 131072,
};
static const struct atr_model model_llama32_3b = {
    "llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct", 3.21e9,
    28, 3072, 24, 8, 128, 2.0, 2, 131072,
};
static const struct atr_model model_llama3_70b = {
    "llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct", 70.6e9,
    80, 8192, 64, 8, 128, 2.0, 2, 8192,
};
static const struct atr_model model_qwen3_4b = {
    "qwen3-4b", "Qwen/Qwen3-4B", 4.02e9,
    36, 2560, 32, 8, 128, 2.0, 2, 40960,
};
/* 3.63e9 non-embedding weights at 4 bits plus an fp16 scale and a 4-bit
 * zero per group of 128 (0.5195 B), 0.39e9 tied embedding weights kept in
 * fp16 (2 B): (3.63 x 0.5195 + 0.39 x 2) / 4.02 = 0.66 B per weight. */
static const struct atr_model model_qwen3_4b_awq = {
    "qwen3-4b-awq", "Qwen/Qwen3-4B-AWQ", 4.02e9,
    36, 2560, 32, 8, 128, 0.66, 2, 40960,
};
static const struct atr_model model_qwen3_8b = {
    "qwen3-8b", "Qwen/Qwen3-8B", 8.19e9,
    36, 4096, 32, 8, 128, 2.0, 2, 40960,
};
static const struct atr_model model_qwen15_05b = {
    "qwen1.5-0.5b", "Qwen/Qwen1.5-0.5B-Chat", 0.46e9,
    24, 1024, 16, 16, 64, 2.0, 2, 32768,
};

const struct atr_model *const atr_models[] = {
    &model_llama31_8b, &model_llama32_1b, &model_llama32_3b, &model_llama3_70b,
    &model_qwen3_4b, &model_qwen3_4b_awq, &model_qwen3_8b, &model_qwen15_05b,
    NULL,
};

/* Writes "a, b, c" of the table's names into buf. */
static void list_names(char *buf, size_t size, int gpus)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0;; i++) {
        const char *name = gpus ? (atr_gpus[i] ? atr_gpus[i]->name : NULL)
                                : (atr_models[i] ? atr_models[i]->name : NULL);
        if (!name)
            break;
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

static const struct atr_gpu *find_gpu(const char *name, size_t len)
{
    for (size_t i = 0; atr_gpus[i]; i++)
        if (strlen(atr_gpus[i]->name) == len && !memcmp(atr_gpus[i]->name, name, len))
            return atr_gpus[i];
    return NULL;
}

static const struct atr_model *find_model(const char *name)
{
    for (size_t i = 0; atr_models[i]; i++)
        if (!strcmp(atr_models[i]->name, name))
            return atr_models[i];
    return NULL;
}

/* KV heads each GPU holds: vLLM splits them when tp divides them and
 * replicates one per GPU when tp is a multiple of them; 0 = invalid tp. */
static unsigned kv_heads_per_gpu(const struct atr_model *m, unsigned tp)
{
    if (m->heads % tp)
        return 0;
    if (m->kv_heads >= tp)
        return m->kv_heads % tp ? 0 : m->kv_heads / tp;
    return tp % m->kv_heads ? 0 : 1;
}

/* Fills the derived fields; KV capacity may come out below zero (as a
 * double) when the model does not fit. */
static double derive(struct atr_profile *p)
{
    const struct atr_model *m = p->model;
    p->compute_efficiency = COMPUTE_EFFICIENCY;
    p->memory_efficiency = MEMORY_EFFICIENCY;
    p->iter_overhead_s = ITER_OVERHEAD_S;
    p->per_seq_overhead_s = PER_SEQ_OVERHEAD_S;
    p->gpu_memory_utilization = GPU_MEMORY_UTILIZATION;
    p->activation_reserve_bytes = ACTIVATION_RESERVE_BYTES;
    p->kv_heads_per_gpu = kv_heads_per_gpu(m, p->tp);
    p->weight_bytes_per_gpu = m->params * m->bytes_per_weight / p->tp;
    p->kv_bytes_per_token = 2.0 * m->layers * p->kv_heads_per_gpu * m->head_dim *
                            m->kv_bytes_per_elem;
    double free_bytes = p->gpu->mem_bytes * p->gpu_memory_utilization -
                        p->weight_bytes_per_gpu - p->activation_reserve_bytes;
    double tokens = floor(free_bytes / p->kv_bytes_per_token);
    p->kv_capacity_tokens = tokens > 0 ? (uint64_t)tokens : 0;
    return tokens;
}

/* Smallest valid tp above `from` (up to 8) at which m fits on g; 0 if none. */
static unsigned fitting_tp(const struct atr_gpu *g, const struct atr_model *m,
                           unsigned from)
{
    for (unsigned tp = from + 1; tp <= 8; tp++) {
        struct atr_profile p = {.gpu = g, .model = m, .tp = tp};
        if (kv_heads_per_gpu(m, tp) && derive(&p) >= MIN_KV_TOKENS)
            return tp;
    }
    return 0;
}

static int does_not_fit(const struct atr_profile *p, struct atr_error *err)
{
    const struct atr_model *m = p->model;
    char per_gpu[64] = "";
    if (p->tp > 1)
        snprintf(per_gpu, sizeof per_gpu, ", ~%.0f GB per GPU",
                 p->weight_bytes_per_gpu / 1e9);
    char hint[64];
    unsigned tp = fitting_tp(p->gpu, m, p->tp);
    if (tp)
        snprintf(hint, sizeof hint, "use --tp %u or more", tp);
    else
        snprintf(hint, sizeof hint, "no --tp up to 8 makes it fit");
    return atr_error_set(err,
                         "%s needs ~%.0f GB of weights%s: it does not fit on one %s "
                         "at tp %u with room for its KV cache; %s",
                         m->name, m->params * m->bytes_per_weight / 1e9, per_gpu,
                         p->gpu->full_name, p->tp, hint);
}

static int bad_tp(const struct atr_model *m, unsigned tp, struct atr_error *err)
{
    return atr_error_set(err,
                         "--tp %u does not suit %s (%u attention heads, %u KV heads): "
                         "tp must divide the heads, and divide or be a multiple of "
                         "the KV heads",
                         tp, m->name, m->heads, m->kv_heads);
}

int atr_profile_find(const char *spec, unsigned tp, struct atr_profile *out,
                     struct atr_error *err)
{
    char names[256];
    const char *slash = strchr(spec, '/');
    if (!slash)
        return atr_error_set(err, "profile \"%s\": expected GPU/MODEL, e.g. "
                             "h100/llama-3.1-8b", spec);
    const struct atr_gpu *g = find_gpu(spec, (size_t)(slash - spec));
    if (!g) {
        list_names(names, sizeof names, 1);
        return atr_error_set(err, "profile \"%s\": unknown GPU \"%.*s\" (known: %s)",
                             spec, (int)(slash - spec), spec, names);
    }
    const struct atr_model *m = find_model(slash + 1);
    if (!m) {
        list_names(names, sizeof names, 0);
        return atr_error_set(err, "profile \"%s\": unknown model \"%s\" (known: %s)",
                             spec, slash + 1, names);
    }
    if (tp < 1 || tp > MAX_TP)
        return atr_error_set(err, "--tp %u: expected 1 to %u", tp, MAX_TP);
    if (!kv_heads_per_gpu(m, tp))
        return bad_tp(m, tp, err);
    struct atr_profile p = {.gpu = g, .model = m, .tp = tp};
    if (derive(&p) < MIN_KV_TOKENS)
        return does_not_fit(&p, err);
    *out = p;
    return 0;
}

void atr_iter_add_prefill(struct atr_iter_work *w, uint64_t n, uint64_t ctx)
{
    if (!n)
        return;
    w->prefill_tokens += n;
    w->prefill_ctx_tokens += ctx;
    w->prefill_seqs++;
    /* token i (1-based) of the chunk attends to ctx + i tokens */
    w->prefill_attn_pairs += n * ctx + n * (n + 1) / 2;
}

void atr_iter_add_decode(struct atr_iter_work *w, uint64_t ctx)
{
    w->decode_seqs++;
    w->decode_ctx_tokens += ctx;
}

/* Query-key pairs of the batch; estimated as one chunk when the caller
 * filled only the sums. */
static double attn_pairs(const struct atr_iter_work *w)
{
    double pairs = (double)w->decode_ctx_tokens;
    if (w->prefill_attn_pairs)
        return pairs + (double)w->prefill_attn_pairs;
    double n = (double)w->prefill_tokens;
    return pairs + n * (double)w->prefill_ctx_tokens + n * (n + 1) / 2;
}

/* FLOPs per GPU: 2 per weight per token for the matrix products, and
 * 4 x layers x heads x head_dim per query-key pair (QK^T and PV). */
static double compute_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    const struct atr_model *m = p->model;
    double tokens = (double)(w->prefill_tokens + w->decode_seqs);
    double flops = 2.0 * m->params * tokens +
                   4.0 * m->layers * (double)m->heads * m->head_dim * attn_pairs(w);
    return flops / (p->tp * p->gpu->peak_flops * p->compute_efficiency);
}

/* Bytes per GPU: all weights once, the KV of every context read once, and
 * the KV of every new token written. */
static double memory_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    double kv_tokens = (double)(w->decode_ctx_tokens + w->prefill_ctx_tokens +
                                w->prefill_tokens + w->decode_seqs);
    double bytes = p->weight_bytes_per_gpu + kv_tokens * p->kv_bytes_per_token;
    return bytes / (p->gpu->hbm_bytes_per_s * p->memory_efficiency);
}

/* Two ring all-reduces of tokens x hidden fp16 activations per layer. */
static double allreduce_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    if (p->tp < 2)
        return 0;
    const struct atr_model *m = p->model;
    double tokens = (double)(w->prefill_tokens + w->decode_seqs);
    double bytes = tokens * m->hidden * 2.0 * 2.0 * (p->tp - 1) / p->tp;
    return 2.0 * m->layers * (p->gpu->link_latency_s + bytes / p->gpu->link_bytes_per_s);
}

double atr_iter_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    if (!w->prefill_tokens && !w->decode_seqs)
        return 0;
    double seqs = (double)(w->prefill_seqs + w->decode_seqs);
    if (w->prefill_tokens && !w->prefill_seqs)
        seqs += 1;   /* at least one chunk */
    double overhead = p->iter_overhead_s + p->per_seq_overhead_s * seqs;
    return overhead + fmax(compute_seconds(p, w), memory_seconds(p, w)) +
           allreduce_seconds(p, w);
}
