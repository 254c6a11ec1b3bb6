/* test-sim-cost.c - profile resolution, KV sizing and the cost of one
 * iteration (GPU work and the engine's CPU overhead), on figures worked out
 * by hand from the profile files; the shape of the overhead terms; and user
 * profile directories (ATR_PROFILE_PATH), overrides and bad files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    for (size_t g = 0; atr_gpu_table()[g]; g++)
        for (size_t m = 0; atr_model_table()[m]; m++) {
            char spec[64];
            snprintf(spec, sizeof spec, "%s/%s", atr_gpu_table()[g]->name, atr_model_table()[m]->name);
            struct atr_profile p;
            int rc = -1;
            for (unsigned tp = 1; tp <= 8 && rc; tp++)
                rc = atr_profile_find(spec, tp, &p, NULL);
            assert_int_equal(rc, 0);
            assert_ptr_equal(p.gpu, atr_gpu_table()[g]);
            assert_ptr_equal(p.model, atr_model_table()[m]);
            assert_true(p.kv_capacity_tokens >= 16);
            n++;
        }
    assert_int_equal(n, 8 * 17);   /* 6 GPUs and 2 CPUs; 15 models and atr-tiny, atr-small */
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

/* vLLM's CPU terms: 1.4 ms a step, 29 us a sequence, nothing per prefill
 * token; kernel floors 59 us a layer from a CUDA graph, 139 us eager;
 * 39% of peak FLOP/s (on a GPU without a compute_efficiency of its own)
 * and 76% of HBM bandwidth. */
#define STEP_S 1.4e-3
#define SEQ_S 29e-6
#define LAYER_GRAPH_S 59e-6
#define LAYER_EAGER_S 139e-6
#define TOKEN_S 0.0
#define FLOPS_H100 (989.4e12 * 0.39)
#define HBM_H100 (3.35e12 * 0.76)
/* Llama-3.1-8B: an untied 128256 x 4096 input table and output head; a
 * step streams every weight but the input table. */
#define TABLE_8B (128256.0 * 4096)
#define BODY_8B (8.03e9 - 2 * TABLE_8B)
#define STREAMED_8B ((8.03e9 - TABLE_8B) * 2)

static void test_decode_is_memory_bound(void **state)
{
    struct atr_profile p = find("h100/llama-3.1-8b", 1);
    assert_string_equal(p.flavour, "vllm");
    struct atr_iter_work w = {0};
    atr_iter_add_decode(&w, 1000);
    /* memory: (15.01e9 + (1000 + 1) x 131072) / (3.35e12 x 0.76) = 5.95 ms,
     * compute: 2 x 8.03e9 / (989.4e12 x 0.39) = 0.04 ms; a decode batch of
     * one replays a CUDA graph: 32 layers x 59 us */
    assert_float_equal(p.streamed_bytes_per_gpu, STREAMED_8B, 1);
    assert_float_equal(p.body_params + 2 * p.head_params, 8.03e9, 1);
    double mem = (STREAMED_8B + 1001.0 * 131072) / HBM_H100;
    double compute = (2 * BODY_8B + 2 * TABLE_8B + 4.0 * 32 * 32 * 128 * 1000) / FLOPS_H100;
    assert_true(mem > 100 * compute);
    assert_float_equal(atr_iter_seconds(&p, &w),
                       STEP_S + SEQ_S + mem + compute + 32 * LAYER_GRAPH_S, 1e-12);

    /* 64 sequences: more KV read, and more of it the longer the context */
    struct atr_iter_work a = {0}, b = {0};
    for (int i = 0; i < 64; i++) {
        atr_iter_add_decode(&a, 1000);
        atr_iter_add_decode(&b, 4000);
    }
    double ta = atr_iter_seconds(&p, &a), tb = atr_iter_seconds(&p, &b);
    double kv = 64.0 * 3000 * 131072 / HBM_H100;
    double attn = 4.0 * 32 * 32 * 128 * 64 * 3000 / FLOPS_H100;
    assert_true(ta > atr_iter_seconds(&p, &w));
    assert_float_equal(tb - ta, kv + attn, 1e-12);
}

static void test_prefill_is_compute_bound(void **state)
{
    struct atr_profile p = find("h100/llama-3.1-8b", 1);
    struct atr_iter_work w = {0};
    atr_iter_add_prefill(&w, 8192, 0);
    assert_int_equal(w.prefill_seqs, 1);
    assert_int_equal(w.prefill_attn_pairs, 8192ull * 8193 / 2);
    /* 2 x 6.98e9 body weights x 8192 tokens, the output head once, and
     * 4 x 32 x 32 x 128 x 33558528 attention FLOPs, at 385.9 TFLOP/s */
    double flops = 2 * BODY_8B * 8192 + 2 * TABLE_8B + 4.0 * 32 * 32 * 128 * (8192.0 * 8193 / 2);
    double compute = flops / FLOPS_H100;
    double mem = (STREAMED_8B + 8192.0 * 131072) / HBM_H100;
    assert_true(compute > 10 * mem);
    /* a prefill runs eager: 32 layers x 139 us */
    assert_float_equal(atr_iter_seconds(&p, &w),
                       STEP_S + SEQ_S + TOKEN_S * 8192 + compute + mem + 32 * LAYER_EAGER_S, 1e-12);

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
    double mem = (STREAMED_8B / 2 + 65536.0) / HBM_H100;
    double compute = 2 * (BODY_8B + TABLE_8B) / (2 * FLOPS_H100);
    double ar = 64 * (8e-6 + 4096.0 * 2 * 2 * 0.5 / 450e9);
    assert_float_equal(atr_iter_seconds(&two, &w),
                       STEP_S + SEQ_S + mem + compute + 32 * LAYER_GRAPH_S + ar, 1e-12);

    /* a GPU file's own compute_efficiency replaces the default: the A100
     * reaches 81% of its peak in a prefill (docs/sim.md, "Calibration") */
    struct atr_profile a100 = find("a100-80g/llama-3.1-8b", 1);
    assert_float_equal(one.compute_efficiency, 0.39, 0);
    assert_float_equal(a100.compute_efficiency, 0.81, 0);

    /* tp 16 > 8 KV heads: one KV head per GPU, replicated */
    struct atr_profile sixteen = find("h100/llama-3.1-8b", 16);
    assert_int_equal(sixteen.kv_heads_per_gpu, 1);
}

/* A decode step of n sequences with ctx tokens of context each. */
static double decode_step(const struct atr_profile *p, unsigned n, uint64_t ctx)
{
    struct atr_iter_work w = {0};
    for (unsigned i = 0; i < n; i++)
        atr_iter_add_decode(&w, ctx);
    return atr_iter_seconds(p, &w);
}

/* The overhead terms' shape: a step grows with the batch, graphs beat
 * eager launches, and a small model's step is far below a large one's at
 * the same batch, because only the GPU work depends on the model. */
static void test_overhead_shape(void **state)
{
    struct atr_profile big = find("h100/llama-3.1-8b", 1);
    struct atr_profile small = find("h100/llama-3.2-1b", 1);
    double prev = 0;
    for (unsigned n = 1; n <= 256; n *= 2) {
        double t = decode_step(&small, n, 500);
        assert_true(t > prev);
        prev = t;
        /* the CPU share is the same for both models */
        double cpu = STEP_S + SEQ_S * n;
        assert_true(t > cpu && decode_step(&big, n, 500) > cpu);
    }
    /* at batch 1 the 1B model is overhead-bound: its weights stream in
     * ~1 ms, under half the step; the 8B's take ~6 ms of ~9 */
    double s1 = decode_step(&small, 1, 500), b1 = decode_step(&big, 1, 500);
    assert_true(2.48e9 / HBM_H100 < 0.5 * s1);
    assert_true(s1 < 0.5 * b1);
    assert_true(decode_step(&small, 64, 500) < 0.6 * decode_step(&big, 64, 500));

    /* eager (--enforce-eager, or a batch above the captured sizes) costs
     * 80 us more per layer than replaying a graph */
    struct atr_profile eager = small;
    eager.cuda_graphs = false;
    assert_float_equal(decode_step(&eager, 8, 500) - decode_step(&small, 8, 500),
                       16 * 80e-6, 1e-9);
    assert_true(decode_step(&small, 257, 500) - decode_step(&small, 256, 500) > 16 * 80e-6);

    /* SGLang overlaps the CPU work with the GPU: never slower than vLLM,
     * and a GPU-bound step costs only the GPU */
    struct atr_profile sg = big;
    assert_int_equal(atr_profile_set_flavour(&sg, "sglang"), 0);
    assert_string_equal(sg.flavour, "sglang");
    assert_true(decode_step(&sg, 64, 500) < decode_step(&big, 64, 500));
    double gpu = (STREAMED_8B + 64 * 501.0 * 131072) / HBM_H100 +
                 (2 * (BODY_8B + TABLE_8B) * 64 + 4.0 * 32 * 32 * 128 * 64 * 500) / FLOPS_H100 +
                 32 * LAYER_GRAPH_S;
    assert_float_equal(decode_step(&sg, 64, 500), gpu, 1e-12);
    assert_int_equal(atr_profile_set_flavour(&sg, "trt"), -1);
    assert_string_equal(sg.flavour, "sglang");

    /* more prefill tokens, more time */
    struct atr_iter_work a = {0}, b = {0};
    atr_iter_add_prefill(&a, 100, 0);
    atr_iter_add_prefill(&b, 200, 0);
    assert_true(atr_iter_seconds(&small, &b) > atr_iter_seconds(&small, &a));
}

/* ---- user profile directories ---------------------------------------- */

static char *make_dir(void)
{
    char *d = strdup("/tmp/atr-test-profiles-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

/* Writes dir/rel (rel is "gpus/NAME.json" or "models/NAME.json"). */
static void write_file(const char *dir, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%.*s", dir, (int)(strchr(rel, '/') - rel), rel);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void remove_dir(char *dir)
{
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static const char *gpu_json(const char *full_name, const char *mem_bytes)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"full_name\": \"%s\", \"peak_flops\": 2250e12, \"hbm_bytes_per_s\": 8e12,\n"
             " \"mem_bytes\": %s, \"link_bytes_per_s\": 900e9, \"link_latency_s\": 8e-6}\n",
             full_name, mem_bytes);
    return buf;
}

static const char tiny_model[] =
    "{\n  \"note\": \"a made-up model\",\n  \"hf_name\": \"me/tiny\",\n"
    "  \"params\": 1e9,\n  \"layers\": 4,\n  \"hidden\": 1024,\n  \"heads\": 8,\n"
    "  \"kv_heads\": 2,\n  \"head_dim\": 128,\n  \"bytes_per_weight\": 2,\n"
    "  \"kv_bytes_per_elem\": 2,\n  \"max_model_len\": 4096\n}\n";

/* The built-in device files: 6 GPUs and the 2 CPUs of the llama.cpp
 * flavour (cpu2-small, cpu2-tiny, after them by name). */
#define BUILTIN_GPUS 8

static size_t count_gpus(void)
{
    size_t n = 0;
    while (atr_gpu_table()[n])
        n++;
    return n;
}

/* Runs first: nothing has loaded the profiles yet, so the first lookup
 * reads ATR_PROFILE_PATH. */
static void test_profile_path_env(void **state)
{
    char *dir = make_dir();
    write_file(dir, "gpus/b200.json", gpu_json("NVIDIA B200", "192e9"));
    write_file(dir, "gpus/h100.json", gpu_json("my H100", "42949672960"));
    write_file(dir, "models/tiny.json", tiny_model);
    write_file(dir, "models/README", "not a profile: ignored");
    setenv("ATR_PROFILE_PATH", dir, 1);

    struct atr_profile p = find("b200/tiny", 1);
    assert_string_equal(p.gpu->full_name, "NVIDIA B200");
    assert_float_equal(p.gpu->mem_bytes, 192e9, 0);
    assert_string_equal(p.model->hf_name, "me/tiny");
    assert_string_equal(p.model->note, "a made-up model");
    assert_string_equal(p.gpu->note, "");
    /* 2 x 4 layers x 2 KV heads x 128 x 2 bytes */
    assert_float_equal(p.kv_bytes_per_token, 4096, 0);

    /* the user's h100 replaces the built-in one, in its place */
    p = find("h100/llama-3.1-8b", 1);
    assert_string_equal(p.gpu->full_name, "my H100");
    assert_int_equal(p.kv_capacity_tokens,
                     (unsigned long long)((0.9 * 40 * GIB - 16.06e9 - 1.5 * GIB) / 131072));
    assert_ptr_equal(atr_gpu_table()[0], p.gpu);
    assert_int_equal(count_gpus(), BUILTIN_GPUS + 1);
    assert_string_equal(atr_gpu_table()[BUILTIN_GPUS]->name, "b200");

    /* names listed in errors include the user's */
    struct atr_error err = {{0}};
    assert_int_equal(atr_profile_find("b300/tiny", 1, &p, &err), -1);
    assert_non_null(strstr(err.msg, "cpu2-tiny, b200)"));

    unsetenv("ATR_PROFILE_PATH");
    assert_int_equal(atr_profiles_load(NULL, &err), 0);
    assert_int_equal(count_gpus(), BUILTIN_GPUS);
    assert_string_equal(find("h100/llama-3.1-8b", 1).gpu->full_name, "NVIDIA H100 SXM 80GB");
    assert_int_equal(atr_profile_find("b200/llama-3.1-8b", 1, &p, NULL), -1);
    remove_dir(dir);
}

/* The first directory of the path wins; empty entries are skipped. */
static void test_profile_path_order(void **state)
{
    char *a = make_dir(), *b = make_dir();
    write_file(a, "gpus/b200.json", gpu_json("from a", "192e9"));
    write_file(b, "gpus/b200.json", gpu_json("from b", "192e9"));
    write_file(b, "models/tiny.json", tiny_model);
    char list[256];
    struct atr_error err = {{0}};

    snprintf(list, sizeof list, ":%s::%s:", a, b);
    assert_int_equal(atr_profiles_load(list, &err), 0);
    assert_string_equal(find("b200/tiny", 1).gpu->full_name, "from a");
    snprintf(list, sizeof list, "%s:%s", b, a);
    assert_int_equal(atr_profiles_load(list, &err), 0);
    assert_string_equal(find("b200/tiny", 1).gpu->full_name, "from b");
    assert_int_equal(count_gpus(), BUILTIN_GPUS + 1);

    assert_int_equal(atr_profiles_load("/nonexistent-atr-profiles", &err), -1);
    assert_string_equal(err.msg, "profile directory /nonexistent-atr-profiles: "
                                 "No such file or directory");
    assert_int_equal(atr_profiles_load("", &err), 0);
    assert_int_equal(count_gpus(), BUILTIN_GPUS);
    remove_dir(a);
    remove_dir(b);
}

struct bad_case {
    const char *file, *text, *msg;   /* msg follows "DIR/file" */
};

static const struct bad_case bad_cases[] = {
    {"gpus/x.json", "{\"full_name\": \"X\",\n \"peak_flops\": 1e15,\n",
     ":3:1: expected string key after ',', found end of input"},
    {"gpus/x.json", "{\"full_name\": \"X\", \"peak_flops\": 1e15, \"hbm_bytes_per_s\": 1e12,\n"
                    " \"mem_bytes\": 1e10, \"link_bytes_per_s\": 1e10}",
     ":1:1: expected a member \"link_latency_s\" (a positive number, seconds)"},
    {"gpus/x.json", "{\"full_name\": \"X\", \"peak_flops\": \"fast\"}",
     ":1:34: expected \"peak_flops\" to be a positive number (dense BF16/FP16 FLOP/s), "
     "got string"},
    {"gpus/x.json", "{\n  \"mem_bytes\": -85520809984\n}",
     ":2:16: expected \"mem_bytes\" to be a positive number (bytes), got -85520809984"},
    {"gpus/x.json", "{\"full_name\": \"\"}",
     ":1:15: expected \"full_name\" to be a non-empty string, got string"},
    {"gpus/x.json", "{\"peak_flop\": 1e15}", ":1:15: unknown member \"peak_flop\""},
    {"gpus/x.json", "{\"note\": \"a\", \"note\": \"b\"}", ":1:23: duplicate member \"note\""},
    {"gpus/x.json", "[1, 2]", ":1:1: expected an object, got array"},
    {"gpus/x.json", "{\"full_name\": \"X\", \"peak_flops\": 1e15, \"hbm_bytes_per_s\": 1e12,\n"
                    " \"mem_bytes\": 1e10, \"link_bytes_per_s\": 1e10, \"link_latency_s\": 1e-5,\n"
                    " \"compute_efficiency\": 1.5}",
     ":1:1: expected \"compute_efficiency\" to be at most 1, got 1.5"},
    {"gpus/x.json", "", ":1:1: expected a JSON value, found end of input"},
    {"models/x.json", "{\"layers\": 32.5}",
     ":1:12: expected \"layers\" to be a positive integer, got 32.5"},
    {"models/x.json", "{\"layers\": 0}",
     ":1:12: expected \"layers\" to be a positive integer, got 0"},
    {"models/x.json", "{\"max_model_len\": 99999999999}",
     ":1:19: expected \"max_model_len\" to be a positive integer (tokens), got 99999999999"},
    {"models/x.json", "{\"bytes_per_weight\": true}",
     ":1:22: expected \"bytes_per_weight\" to be a positive number (bytes), got boolean"},
    {"models/x.json", "{\"tied_embeddings\": 1}",
     ":1:21: expected \"tied_embeddings\" to be true or false, got 1"},
};

/* Every bad file fails the load with FILE:LINE:COL, and every lookup after
 * it with the same message, until a load succeeds. */
static void test_malformed_profiles(void **state)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        char *dir = make_dir();
        write_file(dir, "models/tiny.json", tiny_model);
        write_file(dir, c->file, c->text);
        char want[512];
        snprintf(want, sizeof want, "%s/%s%s", dir, c->file, c->msg);
        struct atr_error err = {{0}};
        assert_int_equal(atr_profiles_load(dir, &err), -1);
        if (strcmp(err.msg, want))
            print_error("case %zu: %s\n", i, err.msg);
        assert_string_equal(err.msg, want);

        struct atr_profile p;
        struct atr_error again = {{0}};
        assert_int_equal(atr_profile_find("h100/llama-3.1-8b", 1, &p, &again), -1);
        assert_string_equal(again.msg, want);
        assert_null(atr_gpu_table()[0]);
        assert_null(atr_model_table()[0]);
        remove_dir(dir);
    }
    /* the heads must split evenly over the KV heads */
    char *dir = make_dir();
    char text[sizeof tiny_model];
    snprintf(text, sizeof text, "%s", tiny_model);
    memcpy(strstr(text, "\"kv_heads\": 2"), "\"kv_heads\": 3", 13);
    write_file(dir, "models/tiny.json", text);
    struct atr_error err = {{0}};
    assert_int_equal(atr_profiles_load(dir, &err), -1);
    assert_non_null(strstr(err.msg, "/models/tiny.json:8:15: expected \"kv_heads\" to "
                                    "divide \"heads\" (8), got 3"));
    remove_dir(dir);

    /* the embedding tables must leave room for the body: 2 x 600k x 1024 >= 1e9 */
    dir = make_dir();
    snprintf(text, sizeof text, "%s", tiny_model);
    char big[sizeof tiny_model + 64];
    *strrchr(text, '}') = 0;
    snprintf(big, sizeof big, "%s,  \"vocab\": 600000\n}\n", text);
    *strrchr(big, '\n') = 0;
    write_file(dir, "models/tiny.json", big);
    assert_int_equal(atr_profiles_load(dir, &err), -1);
    assert_non_null(strstr(err.msg, "expected \"vocab\" x \"hidden\" x 2 (1.229e+09) below "
                                    "\"params\" (1e+09), got 600000"));
    remove_dir(dir);

    assert_int_equal(atr_profiles_load(NULL, &err), 0);
    find("h100/llama-3.1-8b", 1);
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
        cmocka_unit_test(test_profile_path_env),   /* first: before any load */
        cmocka_unit_test(test_every_profile_resolves),
        cmocka_unit_test(test_h100_llama8b_by_hand),
        cmocka_unit_test(test_decode_is_memory_bound),
        cmocka_unit_test(test_prefill_is_compute_bound),
        cmocka_unit_test(test_prefill_chunks_accumulate),
        cmocka_unit_test(test_tp_halves_weights),
        cmocka_unit_test(test_overhead_shape),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_profile_path_order),
        cmocka_unit_test(test_malformed_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
