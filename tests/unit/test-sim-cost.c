/* test-sim-cost.c - profile resolution, KV sizing and the roofline cost of
 * one iteration, on figures worked out by hand from the profile tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sim/cost.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

static struct atr_profile find(const char *spec, unsigned tp)
{
    struct atr_profile p;
    struct atr_error err = {{0}};
    int rc = atr_profile_find(spec, tp, &p, &err);
    if (rc)
        print_error("%s: %s\n", spec, err.msg);
    assert_int_equal(rc, 0);
    return p;
}

/* Every GPU x model pair resolves at some tp up to 8, with KV room. */
static void test_every_profile_resolves(void **state)
{
    size_t n = 0;
    for (size_t g = 0; atr_gpus[g]; g++)
        for (size_t m = 0; atr_models[m]; m++) {
            char spec[64];
            snprintf(spec, sizeof spec, "%s/%s", atr_gpus[g]->name, atr_models[m]->name);
            struct atr_profile p;
            int rc = -1;
            for (unsigned tp = 1; tp <= 8 && rc; tp++)
                rc = atr_profile_find(spec, tp, &p, NULL);
            assert_int_equal(rc, 0);
            assert_ptr_equal(p.gpu, atr_gpus[g]);
            assert_ptr_equal(p.model, atr_models[m]);
            assert_true(p.kv_capacity_tokens >= 16);
            n++;
        }
    assert_int_equal(n, 6 * 8);
    /* the small models fit on every GPU at tp 1 */
    struct atr_profile p = find("l4/qwen1.5-0.5b", 1);
    assert_int_equal(p.tp, 1);
}

static void test_h100_llama8b_by_hand(void **state)
{
    struct atr_profile p = find("h100/llama-3.1-8b", 1);
    assert_string_equal(p.model->hf_name, "meta-llama/Llama-3.1-8B-Instruct");
    assert_float_equal(p.weight_bytes_per_gpu, 16.06e9, 1);
    /* 2 (K,V) x 32 layers x 8 KV heads x 128 x 2 bytes */
    assert_float_equal(p.kv_bytes_per_token, 131072, 0);
    assert_int_equal(p.kv_heads_per_gpu, 8);
    /* (0.9 x 81559 MiB - 16.06e9 - 1.5 GiB) / 131072 = 452408.72 */
    assert_int_equal(p.kv_capacity_tokens, 452408);
    assert_float_equal(p.gpu_memory_utilization, 0.9, 0);
}

static void test_decode_is_memory_bound(void **state)
{
    struct atr_profile p = find("h100/llama-3.1-8b", 1);
    struct atr_iter_work w = {0};
    atr_iter_add_decode(&w, 1000);
    /* memory: (16.06e9 + (1000 + 1) x 131072) / (3.35e12 x 0.75) = 6.4443 ms,
     * compute: 2 x 8.03e9 / (989.4e12 x 0.5) = 0.03 ms */
    double mem = (16.06e9 + 1001.0 * 131072) / (3.35e12 * 0.75);
    assert_float_equal(atr_iter_seconds(&p, &w), 4e-3 + 100e-6 + mem, 1e-12);

    /* 64 sequences: more KV read, and more of it the longer the context */
    struct atr_iter_work a = {0}, b = {0};
    for (int i = 0; i < 64; i++) {
        atr_iter_add_decode(&a, 1000);
        atr_iter_add_decode(&b, 4000);
    }
    double ta = atr_iter_seconds(&p, &a), tb = atr_iter_seconds(&p, &b);
    double kv = 64.0 * 3000 * 131072 / (3.35e12 * 0.75);
    assert_true(ta > atr_iter_seconds(&p, &w));
    assert_float_equal(tb - ta, kv, 1e-12);
}

static void test_prefill_is_compute_bound(void **state)
{
    struct atr_profile p = find("h100/llama-3.1-8b", 1);
    struct atr_iter_work w = {0};
    atr_iter_add_prefill(&w, 8192, 0);
    assert_int_equal(w.prefill_seqs, 1);
    assert_int_equal(w.prefill_attn_pairs, 8192ull * 8193 / 2);
    /* 2 x 8.03e9 x 8192 + 4 x 32 x 32 x 128 x 33558528 FLOPs at 494.7 TFLOP/s */
    double flops = 2 * 8.03e9 * 8192 + 4.0 * 32 * 32 * 128 * (8192.0 * 8193 / 2);
    double compute = flops / (989.4e12 * 0.5);
    double mem = (16.06e9 + 8192.0 * 131072) / (3.35e12 * 0.75);
    assert_true(compute > 10 * mem);
    assert_float_equal(atr_iter_seconds(&p, &w), 4e-3 + 100e-6 + compute, 1e-12);

    /* only the sums filled in: the one-chunk estimate gives the same cost */
    struct atr_iter_work s = {.prefill_tokens = 8192};
    assert_float_equal(atr_iter_seconds(&p, &s), atr_iter_seconds(&p, &w), 1e-15);

    /* an empty batch costs nothing */
    struct atr_iter_work none = {0};
    assert_float_equal(atr_iter_seconds(&p, &none), 0, 0);
}

static void test_prefill_chunks_accumulate(void **state)
{
    struct atr_iter_work w = {0};
    atr_iter_add_prefill(&w, 3, 10);   /* attends to 11, 12, 13 */
    atr_iter_add_prefill(&w, 2, 0);    /* attends to 1, 2 */
    atr_iter_add_prefill(&w, 0, 99);   /* nothing */
    atr_iter_add_decode(&w, 7);
    assert_int_equal(w.prefill_tokens, 5);
    assert_int_equal(w.prefill_ctx_tokens, 10);
    assert_int_equal(w.prefill_seqs, 2);
    assert_int_equal(w.prefill_attn_pairs, 36 + 3);
    assert_int_equal(w.decode_seqs, 1);
    assert_int_equal(w.decode_ctx_tokens, 7);
}

static void test_tp_halves_weights(void **state)
{
    struct atr_profile one = find("h100/llama-3.1-8b", 1);
    struct atr_profile two = find("h100/llama-3.1-8b", 2);
    assert_float_equal(two.weight_bytes_per_gpu, one.weight_bytes_per_gpu / 2, 1e-3);
    assert_float_equal(two.kv_bytes_per_token, one.kv_bytes_per_token / 2, 0);
    assert_int_equal(two.kv_heads_per_gpu, 4);
    assert_true(two.kv_capacity_tokens > 2 * one.kv_capacity_tokens);

    /* tp 2 adds 2 x 32 all-reduces of 4096 x 2 bytes over NVLink */
    struct atr_iter_work w = {0};
    atr_iter_add_decode(&w, 0);
    double mem = (8.03e9 + 65536.0) / (3.35e12 * 0.75);
    double ar = 64 * (8e-6 + 4096.0 * 2 * 2 * 0.5 / 450e9);
    assert_float_equal(atr_iter_seconds(&two, &w), 4e-3 + 100e-6 + mem + ar, 1e-12);

    /* tp 16 > 8 KV heads: one KV head per GPU, replicated */
    struct atr_profile sixteen = find("h100/llama-3.1-8b", 16);
    assert_int_equal(sixteen.kv_heads_per_gpu, 1);
}

static void test_errors(void **state)
{
    struct atr_profile p;
    struct atr_error err = {{0}};
    assert_int_equal(atr_profile_find("b200/llama-3.1-8b", 1, &p, &err), -1);
    assert_non_null(strstr(err.msg, "unknown GPU \"b200\""));
    assert_non_null(strstr(err.msg, "h100, h200, a100-80g, l4, rtx3090, rtx4090"));

    assert_int_equal(atr_profile_find("h100/llama-9", 1, &p, &err), -1);
    assert_non_null(strstr(err.msg, "unknown model \"llama-9\""));
    assert_non_null(strstr(err.msg, "llama-3.1-8b, llama-3.2-1b"));

    assert_int_equal(atr_profile_find("h100", 1, &p, &err), -1);
    assert_non_null(strstr(err.msg, "expected GPU/MODEL"));

    assert_int_equal(atr_profile_find("h100/llama-3.1-8b", 0, &p, &err), -1);
    assert_int_equal(atr_profile_find("h100/llama-3.1-8b", 3, &p, &err), -1);
    assert_non_null(strstr(err.msg, "--tp 3 does not suit llama-3.1-8b"));

    assert_int_equal(atr_profile_find("h100/llama-3-70b", 1, &p, &err), -1);
    assert_string_equal(err.msg,
                        "llama-3-70b needs ~141 GB of weights: it does not fit on one "
                        "NVIDIA H100 SXM 80GB at tp 1 with room for its KV cache; "
                        "use --tp 2 or more");
    assert_int_equal(atr_profile_find("l4/llama-3-70b", 4, &p, &err), -1);
    assert_non_null(strstr(err.msg, "~35 GB per GPU"));
    assert_non_null(strstr(err.msg, "use --tp 8 or more"));
    /* NULL err is allowed */
    assert_int_equal(atr_profile_find("h100/llama-3-70b", 1, &p, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_profile_resolves),
        cmocka_unit_test(test_h100_llama8b_by_hand),
        cmocka_unit_test(test_decode_is_memory_bound),
        cmocka_unit_test(test_prefill_is_compute_bound),
        cmocka_unit_test(test_prefill_chunks_accumulate),
        cmocka_unit_test(test_tp_halves_weights),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
