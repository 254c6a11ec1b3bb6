/* cost.c - GPU and model profiles (JSON files, parsed at first use) and the
 * cost of one engine iteration (GPU work plus the engine's CPU overhead).
 * Every constant here is explained in docs/sim.md. */
#include "sim/cost.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "util/arena.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_TP 64u
#define MIN_KV_TOKENS 16u         /* one vLLM block */
#define PROFILE_MAX_BYTES (1u << 20)

/* Calibration (docs/sim.md, "Calibration"): the same for every model,
 * fitted to the calibration figures of bench/sim-fidelity (fit.py). */
#define GPU_MEMORY_UTILIZATION 0.9
#define ACTIVATION_RESERVE_BYTES (1.5 * GIB)

/* The fitted constants. ATR_SIM_CONSTANTS="name=value,..." overrides them
 * (read once, with the profiles) so that bench/sim-fidelity/fit.py can
 * search them without rebuilding; names as in const_slot below. */
struct consts {
    /* of dense peak: model FLOPs utilisation of prefill, for a GPU whose
     * file gives no compute_efficiency of its own */
    double compute_efficiency;
    double memory_efficiency;   /* of HBM bandwidth, weights and KV streamed */
    /* A decoder layer is ~10 kernels (norm, QKV, rotary, KV write,
     * attention, output projection, norm, gate/up, activation, down); each
     * costs ~5 us of launch gap, ramp-up and tail beyond its bytes /
     * bandwidth even when replayed from a CUDA graph. Launched one by one
     * from Python (eager), each op adds ~8 us of dispatch the GPU waits
     * for: SGLang measured +69 us per layer on Llama-3-8B at batch 1
     * (sglang#1401) and +100 us on Qwen3-0.6B under load (sglang#40346). */
    double layer_graph_s;
    double layer_eager_extra_s;
};

static struct consts calib = {0.39, 0.76, 59e-6, 80e-6};

#define FRONTEND_S 4.1e-3
/* Tokenising a prompt in the API server, per token: HF tokenizers called
 * from Python encode 2.5-2.7 MiB/s with GPT-2's vocabulary on a 5.4 GHz
 * core, Qwen 2.5's vocabulary is slower than GPT-2's by 0.55-0.85x (the
 * IREE tokenizer's comparison), and a token is ~4 bytes of English text:
 * ~2 us at 5.4 GHz, 3-5 us on the 2.3-3.4 GHz cores of an A100 or H100
 * server. The low end, not fitted (docs/sim.md, "Calibration"). */
#define FRONTEND_TOKEN_S 3e-6

/* The CPU side of one engine flavour (docs/sim.md, "Calibration"). */
struct flavour {
    const char *name;
    double step_s;            /* per iteration: schedule, prepare inputs, launch */
    double seq_s;             /* per sequence: sampling bookkeeping, detokenise, stream */
    double token_s;           /* per prefill token: positions, slot mapping, copy-in */
    double overlap;           /* share of the CPU work hidden behind the GPU */
    unsigned graph_max_seqs;  /* largest decode batch captured in a CUDA graph */
    double frontend_s;        /* per request: the API server, in and out */
    double frontend_token_s;  /* per prompt token: tokenising it there */
};

static struct flavour flavours[] = {
    /* vLLM 0.6-0.7 (V0 engine), the ISO-Bench era: scheduling, input
     * preparation and output processing block the GPU. Fitted to batch-1
     * decode (Qwen2.5 speed benchmark: 1.4 ms a step), a 100-sequence step
     * (ISO-Bench) and a 256-sequence one (lm-eval gsm8k): 29 us a
     * sequence. CUDA graphs for decode batches up to 256. The API server
     * (HTTP, tokenising the prompt, detokenising and streaming) adds
     * FRONTEND_S to every request, fitted to short-prompt TTFTs at one
     * request at a time, and FRONTEND_TOKEN_S a prompt token. */
    {"vllm", 1.4e-3, 29e-6, 0.0, 0.0, 256, FRONTEND_S, FRONTEND_TOKEN_S},
    /* SGLang >= 0.4: the same CPU work, but the overlap scheduler prepares
     * batch i+1 while the GPU runs batch i, so a step costs the larger of
     * the two; graphs up to batch 160 (cuda_graph_max_bs). Not fitted:
     * no SGLang figure on a profiled GPU was found (docs/sim.md). */
    {"sglang", 1.4e-3, 29e-6, 0.0, 1.0, 160, FRONTEND_S, FRONTEND_TOKEN_S},
    /* llama.cpp's llama-server on a GPU: C++ scheduling between steps, no
     * overlap, no graphs here. Not fitted (no GPU here to fit it on): a
     * CPU profile carries its own constants (llama_*, from atr sim
     * calibrate), which replace this whole formula. */
    {"llama.cpp", 0.2e-3, 5e-6, 0.0, 0.0, 0, 1e-3, 0.0},
};

static double *const_slot(const char *name, size_t len)
{
    static const struct { const char *name; double *v; } names[] = {
        {"compute_efficiency", &calib.compute_efficiency},
        {"memory_efficiency", &calib.memory_efficiency},
        {"layer_graph_s", &calib.layer_graph_s},
        {"layer_eager_extra_s", &calib.layer_eager_extra_s},
        {"vllm.step_s", &flavours[0].step_s},
        {"vllm.seq_s", &flavours[0].seq_s},
        {"vllm.token_s", &flavours[0].token_s},
        {"vllm.frontend_s", &flavours[0].frontend_s},
        {"sglang.frontend_s", &flavours[1].frontend_s},
        {"vllm.frontend_token_s", &flavours[0].frontend_token_s},
        {"sglang.frontend_token_s", &flavours[1].frontend_token_s},
        {"sglang.step_s", &flavours[1].step_s},
        {"sglang.seq_s", &flavours[1].seq_s},
        {"sglang.token_s", &flavours[1].token_s},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == len && !memcmp(names[i].name, name, len))
            return names[i].v;
    return NULL;
}

/* Applies "name=value,..." to the constants; -1 with err on a bad item. */
static int consts_override(const char *list, struct atr_error *err)
{
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        double *slot = eq ? const_slot(p, (size_t)(eq - p)) : NULL;
        char *num_end;
        double v = slot ? strtod(eq + 1, &num_end) : 0;
        if (!slot || num_end != p + len || !isfinite(v) || v < 0)
            return atr_error_set(err, "ATR_SIM_CONSTANTS: expected name=value (a known "
                                 "constant, a number >= 0), got \"%.*s\"", (int)len, p);
        *slot = v;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

/* ---- profile files ------------------------------------------------------ */

/* The fields of a profile file; docs/sim.md, "Profile files", lists them. */
enum field_kind { FIELD_STR, FIELD_NUM, FIELD_UINT, FIELD_BOOL };

struct field {
    const char *key;
    enum field_kind kind;
    size_t off;
    bool optional;
    const char *unit;        /* for messages */
};

#define GPU_F(k, kind, opt, unit) {#k, kind, offsetof(struct atr_gpu, k), opt, unit}
static const struct field gpu_fields[] = {
    GPU_F(note, FIELD_STR, true, ""),
    GPU_F(full_name, FIELD_STR, false, ""),
    GPU_F(peak_flops, FIELD_NUM, false, "dense BF16/FP16 FLOP/s"),
    GPU_F(hbm_bytes_per_s, FIELD_NUM, false, "bytes/s"),
    GPU_F(mem_bytes, FIELD_NUM, false, "bytes"),
    GPU_F(link_bytes_per_s, FIELD_NUM, false, "bytes/s per direction"),
    GPU_F(link_latency_s, FIELD_NUM, false, "seconds"),
    GPU_F(compute_efficiency, FIELD_NUM, true, "share of the dense peak, at most 1"),
    GPU_F(llama_ubatch_s, FIELD_NUM, true, "seconds per physical batch"),
    GPU_F(llama_token_s, FIELD_NUM, true, "seconds per token computed"),
    GPU_F(llama_pair_s, FIELD_NUM, true, "seconds per query-key pair of a prompt"),
    GPU_F(llama_ctx_s, FIELD_NUM, true, "seconds per context token of a decode"),
    GPU_F(llama_seq_s, FIELD_NUM, true, "seconds per sequence sampled"),
    GPU_F(llama_frontend_s, FIELD_NUM, true, "seconds per request"),
    GPU_F(llama_frontend_token_s, FIELD_NUM, true, "seconds per prompt token"),
    {NULL, FIELD_STR, 0, false, NULL},
};

#define MODEL_F(k, kind, opt, unit) {#k, kind, offsetof(struct atr_model, k), opt, unit}
static const struct field model_fields[] = {
    MODEL_F(note, FIELD_STR, true, ""),
    MODEL_F(hf_name, FIELD_STR, false, ""),
    MODEL_F(params, FIELD_NUM, false, "parameter count"),
    MODEL_F(layers, FIELD_UINT, false, ""),
    MODEL_F(hidden, FIELD_UINT, false, ""),
    MODEL_F(heads, FIELD_UINT, false, "attention heads"),
    MODEL_F(kv_heads, FIELD_UINT, false, "KV heads"),
    MODEL_F(head_dim, FIELD_UINT, false, ""),
    MODEL_F(bytes_per_weight, FIELD_NUM, false, "bytes"),
    MODEL_F(kv_bytes_per_elem, FIELD_UINT, false, "bytes"),
    MODEL_F(max_model_len, FIELD_UINT, false, "tokens"),
    MODEL_F(vocab, FIELD_UINT, true, "tokens in the vocabulary"),
    MODEL_F(tied_embeddings, FIELD_BOOL, true, ""),
    {NULL, FIELD_STR, 0, false, NULL},
};

/* The loaded GPUs and models; arrays NULL-terminated, all in arena. */
struct profile_set {
    struct atr_arena arena;
    const struct atr_gpu **gpus;
    const struct atr_model **models;
    size_t ngpus, nmodels, gcap, mcap;
    bool loaded, failed;
    struct atr_error error;  /* why the last load failed */
};

static struct profile_set profiles;
static pthread_once_t first_load = PTHREAD_ONCE_INIT;
static const struct atr_gpu *const no_gpus[1];
static const struct atr_model *const no_models[1];

static const char *kind_name(enum field_kind k)
{
    return k == FIELD_STR ? "a non-empty string"
         : k == FIELD_NUM ? "a positive number"
         : k == FIELD_BOOL ? "true or false" : "a positive integer";
}

/* What v is, for "got ..." in messages: a number's literal, else its type. */
static void describe(const struct atr_json *v, char *buf, size_t size)
{
    if (v->type == ATR_JSON_NUMBER)
        snprintf(buf, size, "%.*s", (int)(v->raw_len < 40 ? v->raw_len : 40), v->raw);
    else
        snprintf(buf, size, "%s", atr_json_type_name(v->type));
}

/* Stores member v into the struct at base as field f. */
static int set_field(struct atr_arena *a, const char *path, const struct field *f,
                     const struct atr_json *v, void *base, struct atr_error *err)
{
    char *dst = (char *)base + f->off;
    bool ok;
    if (f->kind == FIELD_STR)
        ok = v->type == ATR_JSON_STRING && (f->optional || v->u.str.len);
    else if (f->kind == FIELD_NUM)
        ok = v->type == ATR_JSON_NUMBER && isfinite(v->u.num) && v->u.num > 0;
    else if (f->kind == FIELD_BOOL)
        ok = v->type == ATR_JSON_TRUE || v->type == ATR_JSON_FALSE;
    else
        ok = v->type == ATR_JSON_NUMBER && v->is_int && v->i > 0 && v->i <= UINT32_MAX;
    if (!ok) {
        char got[48];
        describe(v, got, sizeof got);
        return atr_error_at(err, path, v->line, v->col,
                            "expected \"%s\" to be %s%s%s%s, got %s", f->key,
                            kind_name(f->kind), *f->unit ? " (" : "", f->unit,
                            *f->unit ? ")" : "", got);
    }
    if (f->kind == FIELD_STR)
        *(const char **)dst = atr_arena_strndup(a, v->u.str.s, v->u.str.len);
    else if (f->kind == FIELD_NUM)
        memcpy(dst, &v->u.num, sizeof(double));
    else if (f->kind == FIELD_BOOL)
        *(bool *)dst = v->type == ATR_JSON_TRUE;
    else
        *(unsigned *)dst = (unsigned)v->i;
    return 0;
}

/* Fills the struct at base from a parsed file: every member known and
 * once, every required field there. */
static int set_fields(struct atr_arena *a, const char *path, const struct field *fields,
                      const struct atr_json *obj, void *base, struct atr_error *err)
{
    if (obj->type != ATR_JSON_OBJECT)
        return atr_error_at(err, path, obj->line, obj->col, "expected an object, got %s",
                            atr_json_type_name(obj->type));
    unsigned long seen = 0;
    for (const struct atr_json *v = obj->u.kids.first; v; v = v->next) {
        size_t i = 0;
        while (fields[i].key && !atr_json_key_is(v, fields[i].key))
            i++;
        if (!fields[i].key || (seen >> i & 1))
            return atr_error_at(err, path, v->line, v->col, "%s member \"%.*s\"",
                                fields[i].key ? "duplicate" : "unknown",
                                (int)(v->key_len < 64 ? v->key_len : 64), v->key);
        seen |= 1ul << i;
        if (set_field(a, path, &fields[i], v, base, err) < 0)
            return -1;
    }
    for (size_t i = 0; fields[i].key; i++) {
        if (seen >> i & 1)
            continue;
        if (!fields[i].optional)
            return atr_error_at(err, path, obj->line, obj->col,
                                "expected a member \"%s\" (%s%s%s)", fields[i].key,
                                kind_name(fields[i].kind), *fields[i].unit ? ", " : "",
                                fields[i].unit);
        if (fields[i].kind == FIELD_STR)   /* other kinds stay 0 (calloc) */
            *(const char **)((char *)base + fields[i].off) = "";
    }
    return 0;
}

/* The checks one field at a time cannot make. */
static int check_model(const char *path, const struct atr_json *obj,
                       const struct atr_model *m, struct atr_error *err)
{
    double tables = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
    if (tables >= m->params) {
        const struct atr_json *v = atr_json_get(obj, "vocab");
        return atr_error_at(err, path, v->line, v->col,
                            "expected \"vocab\" x \"hidden\"%s (%.4g) below \"params\" "
                            "(%.4g), got %u", m->tied_embeddings ? "" : " x 2", tables,
                            m->params, m->vocab);
    }
    if (m->heads % m->kv_heads == 0)
        return 0;
    const struct atr_json *v = atr_json_get(obj, "kv_heads");
    return atr_error_at(err, path, v->line, v->col,
                        "expected \"kv_heads\" to divide \"heads\" (%u), got %u",
                        m->heads, m->kv_heads);
}

/* Room for one more entry and the NULL after it in an array of n pointers
 * (copied bytewise: the arrays hold GPU or model pointers). */
static void *grow(struct atr_arena *a, void *v, size_t n, size_t *cap)
{
    if (n + 1 < *cap)
        return v;
    *cap = *cap ? *cap * 2 : 16;
    void *nv = atr_arena_calloc(a, *cap, sizeof(void *));
    if (n)
        memcpy(nv, v, n * sizeof(void *));
    return nv;
}

/* Adds g, or replaces the GPU of the same name where it stands. */
static void put_gpu(struct profile_set *set, const struct atr_gpu *g)
{
    for (size_t i = 0; i < set->ngpus; i++)
        if (!strcmp(set->gpus[i]->name, g->name)) {
            set->gpus[i] = g;
            return;
        }
    set->gpus = grow(&set->arena, set->gpus, set->ngpus, &set->gcap);
    set->gpus[set->ngpus++] = g;
    set->gpus[set->ngpus] = NULL;
}

static void put_model(struct profile_set *set, const struct atr_model *m)
{
    for (size_t i = 0; i < set->nmodels; i++)
        if (!strcmp(set->models[i]->name, m->name)) {
            set->models[i] = m;
            return;
        }
    set->models = grow(&set->arena, set->models, set->nmodels, &set->mcap);
    set->models[set->nmodels++] = m;
    set->models[set->nmodels] = NULL;
}

/* Parses one profile file (text[len], NUL-terminated) named name into set. */
static int load_text(struct profile_set *set, struct atr_arena *scratch, const char *path,
                     bool gpu, const char *name, const char *text, size_t len,
                     struct atr_error *err)
{
    struct atr_json *root;
    struct atr_json_err jerr;
    struct atr_json_opts opts = {.max_depth = 16};
    if (atr_json_parse(scratch, text, len, &opts, &root, &jerr) < 0)
        return atr_error_at(err, path, jerr.line, jerr.col, "%s", jerr.msg);
    struct atr_arena *a = &set->arena;
    if (gpu) {
        struct atr_gpu *g = atr_arena_calloc(a, 1, sizeof *g);
        g->name = atr_arena_strdup(a, name);
        if (set_fields(a, path, gpu_fields, root, g, err) < 0)
            return -1;
        if (g->compute_efficiency > 1)
            return atr_error_at(err, path, root->line, root->col,
                                "expected \"compute_efficiency\" to be at most 1, got %g",
                                g->compute_efficiency);
        put_gpu(set, g);
    } else {
        struct atr_model *m = atr_arena_calloc(a, 1, sizeof *m);
        m->name = atr_arena_strdup(a, name);
        if (set_fields(a, path, model_fields, root, m, err) < 0 ||
            check_model(path, root, m, err) < 0)
            return -1;
        put_model(set, m);
    }
    return 0;
}

/* Reads a whole profile file into scratch, NUL-terminated. */
static char *read_file(struct atr_arena *scratch, const char *path, size_t *len,
                       struct atr_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return atr_error_at(err, path, 0, 0, "%s", strerror(errno)), NULL;
    char *text = atr_arena_alloc(scratch, PROFILE_MAX_BYTES + 1);
    size_t n = fread(text, 1, PROFILE_MAX_BYTES + 1, f);
    int failed = ferror(f), saved = errno;
    fclose(f);
    errno = saved;
    if (failed)
        return atr_error_at(err, path, 0, 0, "%s", strerror(errno)), NULL;
    if (n > PROFILE_MAX_BYTES)
        return atr_error_at(err, path, 0, 0, "larger than %u bytes",
                            PROFILE_MAX_BYTES), NULL;
    text[n] = '\0';
    *len = n;
    return text;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Loads DIR/SUB/NAME.json, by name; a missing SUB is fine. */
static int load_subdir(struct profile_set *set, struct atr_arena *scratch,
                       const char *dir, const char *sub, struct atr_error *err)
{
    const char *path = atr_arena_printf(scratch, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : atr_error_at(err, path, 0, 0, "%s", strerror(errno));
    const char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 5 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            const char **nv = atr_arena_calloc(scratch, cap, sizeof *nv);
            if (n)
                memcpy(nv, names, n * sizeof *nv);
            names = nv;
        }
        names[n++] = atr_arena_strndup(scratch, e->d_name, len - 5);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        /* the text and its DOM go once the file is parsed */
        struct atr_arena text_arena = ATR_ARENA_INIT;
        const char *file = atr_arena_printf(scratch, "%s/%s.json", path, names[i]);
        size_t len;
        const char *text = read_file(&text_arena, file, &len, err);
        int rc = text ? load_text(set, &text_arena, file, !strcmp(sub, "gpus"), names[i],
                                  text, len, err) : -1;
        atr_arena_release(&text_arena);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The built-in files, as embedded by profiles/embed.cmake. */
static int load_builtin(struct profile_set *set, struct atr_arena *scratch,
                        struct atr_error *err)
{
    for (const struct atr_profile_blob *b = atr_profile_blobs; b->path; b++) {
        const char *base = strrchr(b->path, '/') + 1;
        const char *name = atr_arena_strndup(scratch, base, strlen(base) - 5);
        bool gpu = strstr(b->path, "/gpus/") != NULL;
        if (load_text(set, scratch, b->path, gpu, name, (const char *)b->text, b->len,
                      err) < 0)
            return -1;
    }
    return 0;
}

/* Built-ins, then the directories of path_list from the last to the first,
 * so that an earlier one overrides a later one. */
static int load_all(struct profile_set *set, const char *path_list, struct atr_error *err)
{
    struct atr_arena scratch = ATR_ARENA_INIT;
    int rc = load_builtin(set, &scratch, err);
    const char *end = path_list ? path_list + strlen(path_list) : NULL;
    while (rc == 0 && end && end > path_list) {
        const char *start = end;
        while (start > path_list && start[-1] != ':')
            start--;
        if (start < end) {
            const char *dir = atr_arena_strndup(&scratch, start, (size_t)(end - start));
            DIR *d = opendir(dir);
            if (!d)
                rc = atr_error_set(err, "profile directory %s: %s", dir, strerror(errno));
            else
                closedir(d);
            if (rc == 0)
                rc = load_subdir(set, &scratch, dir, "gpus", err);
            if (rc == 0)
                rc = load_subdir(set, &scratch, dir, "models", err);
        }
        end = start > path_list ? start - 1 : path_list;
    }
    atr_arena_release(&scratch);
    return rc;
}

int atr_profiles_load(const char *path_list, struct atr_error *err)
{
    struct profile_set next = {.loaded = true};
    int rc = load_all(&next, path_list, &next.error);
    if (rc < 0) {
        atr_arena_release(&next.arena);
        next = (struct profile_set){.loaded = true, .failed = true, .error = next.error};
        atr_error_set(err, "%s", next.error.msg);
    }
    atr_arena_release(&profiles.arena);
    profiles = next;
    return rc;
}

static struct atr_error consts_error;
static bool consts_failed;

static void load_from_env(void)
{
    consts_failed = consts_override(getenv("ATR_SIM_CONSTANTS"), &consts_error) < 0;
    if (!profiles.loaded)
        atr_profiles_load(getenv("ATR_PROFILE_PATH"), NULL);
}

static void ensure_loaded(void)
{
    pthread_once(&first_load, load_from_env);
}

const struct atr_gpu *const *atr_gpu_table(void)
{
    ensure_loaded();
    return profiles.gpus ? profiles.gpus : no_gpus;
}

const struct atr_model *const *atr_model_table(void)
{
    ensure_loaded();
    return profiles.models ? profiles.models : no_models;
}

/* ---- resolving GPU/MODEL ------------------------------------------------ */

/* Writes "a, b, c" of the table's names into buf. */
static void list_names(char *buf, size_t size, int gpus)
{
    const struct atr_gpu *const *g = atr_gpu_table();
    const struct atr_model *const *m = atr_model_table();
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0;; i++) {
        const char *name = gpus ? (g[i] ? g[i]->name : NULL) : (m[i] ? m[i]->name : NULL);
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
    const struct atr_gpu *const *g = atr_gpu_table();
    for (size_t i = 0; g[i]; i++)
        if (strlen(g[i]->name) == len && !memcmp(g[i]->name, name, len))
            return g[i];
    return NULL;
}

static const struct atr_model *find_model(const char *name)
{
    const struct atr_model *const *m = atr_model_table();
    for (size_t i = 0; m[i]; i++)
        if (!strcmp(m[i]->name, name))
            return m[i];
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
    p->compute_efficiency = p->gpu->compute_efficiency ? p->gpu->compute_efficiency
                                                       : calib.compute_efficiency;
    p->memory_efficiency = calib.memory_efficiency;
    p->gpu_memory_utilization = GPU_MEMORY_UTILIZATION;
    p->activation_reserve_bytes = ACTIVATION_RESERVE_BYTES;
    p->layer_graph_s = calib.layer_graph_s;
    p->layer_eager_s = calib.layer_graph_s + calib.layer_eager_extra_s;
    p->cuda_graphs = true;
    atr_profile_set_flavour(p, "vllm");
    p->kv_heads_per_gpu = kv_heads_per_gpu(m, p->tp);
    p->weight_bytes_per_gpu = m->params * m->bytes_per_weight / p->tp;
    /* the embedding table(s): one when tied, an input table and an output
     * head otherwise; without a vocab every weight is a body weight */
    double table = (double)m->vocab * m->hidden;
    p->head_params = table;
    p->body_params = m->params - table * (m->tied_embeddings ? 1 : 2);
    p->streamed_bytes_per_gpu = (m->params - (m->tied_embeddings ? 0 : table)) *
                                m->bytes_per_weight / p->tp;
    p->kv_bytes_per_token = 2.0 * m->layers * p->kv_heads_per_gpu * m->head_dim *
                            m->kv_bytes_per_elem;
    double free_bytes = p->gpu->mem_bytes * p->gpu_memory_utilization -
                        p->weight_bytes_per_gpu - p->activation_reserve_bytes;
    double tokens = floor(free_bytes / p->kv_bytes_per_token);
    /* a user profile may claim absurd memory: no overflowing conversion */
    p->kv_capacity_tokens = !(tokens > 0) ? 0 : tokens >= 0x1p63 ? (uint64_t)1 << 63
                                                                 : (uint64_t)tokens;
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
    char names[400];
    ensure_loaded();
    if (consts_failed)
        return atr_error_set(err, "%s", consts_error.msg);
    if (profiles.failed)
        return atr_error_set(err, "%s", profiles.error.msg);
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

/* FLOPs per GPU: 2 per body weight per new token for the matrix products,
 * 2 per output-head weight per sequence (vLLM computes logits only for the
 * last token of each sequence in the batch), and 4 x layers x heads x
 * head_dim per query-key pair (QK^T and PV). */
static double compute_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    const struct atr_model *m = p->model;
    double tokens = (double)(w->prefill_tokens + w->decode_seqs);
    double seqs = (double)(w->decode_seqs + (w->prefill_seqs ? w->prefill_seqs
                                             : w->prefill_tokens ? 1 : 0));
    double flops = 2.0 * p->body_params * tokens + 2.0 * p->head_params * seqs +
                   4.0 * m->layers * (double)m->heads * m->head_dim * attn_pairs(w);
    return flops / (p->tp * p->gpu->peak_flops * p->compute_efficiency);
}

/* Bytes per GPU: the weights a step streams once (all but an untied input
 * embedding, of which only the batch's rows are read), the KV of every
 * context read once, and the KV of every new token written. */
static double memory_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    double kv_tokens = (double)(w->decode_ctx_tokens + w->prefill_ctx_tokens +
                                w->prefill_tokens + w->decode_seqs);
    double bytes = p->streamed_bytes_per_gpu + kv_tokens * p->kv_bytes_per_token;
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

int atr_profile_set_flavour(struct atr_profile *p, const char *flavour)
{
    for (size_t i = 0; i < sizeof flavours / sizeof flavours[0]; i++)
        if (!strcmp(flavours[i].name, flavour)) {
            const struct flavour *f = &flavours[i];
            p->flavour = f->name;
            p->iter_overhead_s = f->step_s;
            p->per_seq_overhead_s = f->seq_s;
            p->per_token_overhead_s = f->token_s;
            p->cpu_overlap = f->overlap;
            p->graph_max_seqs = f->graph_max_seqs;
            p->frontend_s = f->frontend_s;
            p->frontend_token_s = f->frontend_token_s;
            p->llama_cpu = !strcmp(f->name, "llama.cpp") && p->gpu->llama_ubatch_s > 0;
            p->ubatch = 512;
            if (p->llama_cpu) {
                p->frontend_s = p->gpu->llama_frontend_s;
                p->frontend_token_s = p->gpu->llama_frontend_token_s;
            }
            return 0;
        }
    return -1;
}

void atr_profile_set_offline(struct atr_profile *p)
{
    p->frontend_s = 0;
    p->frontend_token_s = 0;
}

/* The fixed kernel cost of every layer: decode-only batches small enough
 * replay a captured CUDA graph; prefill and mixed batches, and everything
 * without graphs, launch kernel by kernel. */
static double layer_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    bool graph = p->cuda_graphs && !w->prefill_tokens && w->decode_seqs <= p->graph_max_seqs;
    return p->model->layers * (graph ? p->layer_graph_s : p->layer_eager_s);
}

/* llama.cpp on a CPU: one llama_decode over the batch, which runs it in
 * physical batches of p->ubatch tokens, each a pass over the weights;
 * then per token its matrix products, per query-key pair of a prompt
 * chunk its attention (a matrix product over the chunk), per context
 * token of a decoding sequence its KV read (one query: a vector product,
 * dearer a pair), per sequence its logits, sampling and streaming. The
 * constants are the device file's, fitted by atr sim calibrate
 * (docs/sim.md). */
static double llama_cpu_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    const struct atr_gpu *g = p->gpu;
    uint64_t tokens = w->prefill_tokens + w->decode_seqs;
    double ubatches = (double)((tokens + p->ubatch - 1) / p->ubatch);
    double seqs = (double)(w->prefill_seqs + w->decode_seqs);
    double prompt_pairs = attn_pairs(w) - (double)w->decode_ctx_tokens;
    return ubatches * g->llama_ubatch_s + (double)tokens * g->llama_token_s +
           prompt_pairs * g->llama_pair_s + (double)w->decode_ctx_tokens * g->llama_ctx_s +
           seqs * g->llama_seq_s;
}

double atr_iter_seconds(const struct atr_profile *p, const struct atr_iter_work *w)
{
    if (!w->prefill_tokens && !w->decode_seqs)
        return 0;
    if (p->llama_cpu)
        return llama_cpu_seconds(p, w);
    double seqs = (double)(w->prefill_seqs + w->decode_seqs);
    if (w->prefill_tokens && !w->prefill_seqs)
        seqs += 1;   /* at least one chunk */
    double cpu = (w->window_step ? 0 : p->iter_overhead_s) + p->per_seq_overhead_s * seqs +
                 p->per_token_overhead_s * (double)w->prefill_tokens;
    /* A step's kernels run one after another, each bound by compute or by
     * memory, and at decode batch sizes a GEMM saturates neither: the two
     * add (a roofline max() fits the calibration figures worse, docs/sim.md). */
    double gpu = compute_seconds(p, w) + memory_seconds(p, w) + layer_seconds(p, w) +
                 allreduce_seconds(p, w);
    return cpu * (1 - p->cpu_overlap) + fmax(gpu, cpu * p->cpu_overlap);
}
