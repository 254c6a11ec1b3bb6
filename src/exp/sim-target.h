/* sim-target.h - the simulator target of `atr sim run`'s settings (also
 * `atr compare --run`'s): the profile, the engine flavour (vLLM, SGLang,
 * llama.cpp) and its limits, replicas, the client's timeouts, made into an
 * atr_target (exp/exp.h) as the flavour's engine would run.
 *
 * Memory: the settings are values (profile borrowed); the target is the
 * caller's to release (atr_target_release). */
#ifndef ATR_EXP_SIM_TARGET_H
#define ATR_EXP_SIM_TARGET_H

#include <stdbool.h>

#include "exp/exp.h"
#include "sim/engine.h"
#include "util/error.h"

enum atr_sim_flavour { ATR_SIM_VLLM, ATR_SIM_SGLANG, ATR_SIM_LLAMA_CPP };

struct atr_sim_target_cfg {
    const char *profile;         /* "GPU/MODEL" */
    unsigned tp, replicas;
    unsigned flavour;            /* enum atr_sim_flavour */
    bool offline;                /* no API server in front */
    double timeout_s;            /* a request's limit from its slot; 0 none */
    double stall_s;              /* the most time without a token; 0 none */
    unsigned max_model_len;      /* 0: the model's */
    /* llama.cpp: the context of all slots (0: the model's length), the RAM
     * prompt cache in MiB, the physical batch (the slots are engine.slots) */
    unsigned ctx_size, cache_ram_mib, ubatch;
    struct atr_engine_cfg engine;
};

/* The defaults of `atr sim run`: vLLM's engine (max_num_batched_tokens 0:
 * the flavour's), tp 1, one replica, replay llm's client timeouts (600 s,
 * 60 s of silence), llama-server's 4 slots, 8 GiB prompt cache, -ub 512. */
void atr_sim_target_defaults(struct atr_sim_target_cfg *c);

/* Makes the target of c into *t. 0, or -1 with err set (an unknown
 * profile, a tp it does not have). */
int atr_sim_target_make(struct atr_target *t, const struct atr_sim_target_cfg *c,
                        struct atr_error *err);

#endif
