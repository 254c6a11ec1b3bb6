/* fuzz-router-model.c - libFuzzer target for the learned router's model
 * file reader (atr-router/1 JSON): any bytes, and a forward pass when a
 * model is accepted. */
#include <stdint.h>
#include <stdlib.h>

#include "policy/learned-features.h"
#include "policy/learned-model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_router_model m;
    struct atr_error err;
    if (atr_router_model_parse(&m, (const char *)data, size, "fuzz.json", &err) < 0)
        return 0;
    double x[ATR_ROUTER_N_FEATURES] = { 0 };
    atr_mlp_predict(&m.mlp, x);
    atr_router_model_release(&m);
    return 0;
}
