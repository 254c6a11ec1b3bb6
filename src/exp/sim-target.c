/* sim-target.c - `atr sim run`'s settings into a simulator target (see
 * sim-target.h). */
#include "exp/sim-target.h"

#include <string.h>

void atr_sim_target_defaults(struct atr_sim_target_cfg *c)
{
    memset(c, 0, sizeof *c);
    atr_engine_cfg_defaults(&c->engine);
    /* unset: the engine's 8192, or the model's length with --scheduler v0 */
    c->engine.max_num_batched_tokens = 0;
    c->tp = 1;
    c->replicas = 1;
    c->timeout_s = 600;          /* replay llm's client */
    c->engine.slots = 4;         /* llama.cpp: llama-server's -np auto */
    c->engine.slot_similarity = 0.1;
    c->cache_ram_mib = 8192;
    c->ubatch = 512;
    c->stall_s = 60;
}

/* llama.cpp: the slots share the context (the model's length unless
 * given); the logical batch is 2048 unless max_num_batched_tokens says;
 * the prompt cache's MiB become tokens of KV, at least the context, as
 * llama-server's prompt cache raises its token limit to what fits. */
static void llama_target(const struct atr_sim_target_cfg *c, struct atr_target *t)
{
    uint64_t ctx = c->ctx_size ? c->ctx_size : t->profile.model->max_model_len;
    t->engine.kv_capacity_tokens = ctx;
    if (!t->engine.max_num_batched_tokens)
        t->engine.max_num_batched_tokens = 2048;
    double ram = (double)c->cache_ram_mib * 1048576.0 / t->profile.kv_bytes_per_token;
    t->engine.prompt_cache_tokens = !c->cache_ram_mib ? 0 : ram > ctx ? (uint64_t)ram : ctx;
    t->profile.ubatch = c->ubatch;
}

/* vLLM V0 without chunked prefill: a prompt runs whole. Unless told, the
 * budget is the model's length (vLLM's least then); a smaller one given
 * is kept (a server started with a shorter --max-model-len, or SGLang's
 * prefill cap), and a request longer than it can never run: an error, or
 * rejected with skip_oversized. */
static void whole_prompts(const struct atr_sim_target_cfg *c, struct atr_target *t)
{
    t->engine.chunked_prefill = false;
    if (!t->engine.max_num_batched_tokens)
        t->engine.max_num_batched_tokens = c->max_model_len ? c->max_model_len
                                                            : t->profile.model->max_model_len;
}

int atr_sim_target_make(struct atr_target *t, const struct atr_sim_target_cfg *c,
                        struct atr_error *err)
{
    static const char *const flavours[] = {"vllm", "sglang", "llama.cpp"};
    if (atr_target_sim(t, c->profile, c->tp, err) < 0)
        return -1;
    t->engine = c->engine;
    t->engine.longest_prefix_first = c->flavour == ATR_SIM_SGLANG;
    t->engine.radix_cache = c->flavour == ATR_SIM_SGLANG;   /* SGLang's radix cache */
    /* the flavour's CPU terms (docs/sim.md, "Cost of one iteration") */
    atr_profile_set_flavour(&t->profile, flavours[c->flavour]);
    if (c->flavour == ATR_SIM_LLAMA_CPP)
        llama_target(c, t);
    else
        t->engine.slots = 0;
    if (c->offline)             /* as vLLM's LLM class: no HTTP server */
        atr_profile_set_offline(&t->profile);
    t->client.timeout_s = c->timeout_s;
    t->client.stall_timeout_s = c->stall_s;
    t->max_model_len = c->max_model_len;
    if (t->engine.prefill_first)
        whole_prompts(c, t);
    t->replicas = c->replicas;
    return 0;
}
