/* gguf.c - a random-weight Llama model as a GGUF v3 file (see gguf.h). */
#include "gen/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/words.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/gguf.h"
#include "util/rng.h"

#define MAX_FILE_BYTES (UINT64_C(4) << 30)
#define LOGIT_SD 2.0            /* spread of the ordinary tokens' logits */
#define FORBID_WEIGHT (-64.0f)  /* dimension-0 weight of a never-generated token */

/* ---- the vocabulary ---- */

enum { TOK_UNK, TOK_BOS, TOK_EOS, TOK_BYTE0 };
#define TOK_IM_START (TOK_BYTE0 + 256)
#define TOK_IM_END (TOK_IM_START + 1)
#define TOK_PIECES (TOK_IM_END + 1)

/* Role names of the ChatML template, tokenized without a leading space. */
static const char *const roles[] = {"user", "assistant", "system"};

struct vocab {
    char **text;
    int32_t *type;
    uint32_t n, cap;
};

static void vocab_add(struct vocab *v, char *text, int32_t type)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        v->text = xrealloc(v->text, v->cap * sizeof *v->text);
        v->type = xrealloc(v->type, v->cap * sizeof *v->type);
    }
    v->text[v->n] = text;
    v->type[v->n++] = type;
}

static bool vocab_has(const struct vocab *v, const char *text, size_t len)
{
    for (uint32_t i = TOK_PIECES; i < v->n; i++)
        if (strlen(v->text[i]) == len && memcmp(v->text[i], text, len) == 0)
            return true;
    return false;
}

/* SentencePiece merges two adjacent pieces only when their concatenation is
 * a token, so a word becomes one token only if the pieces on the way are
 * tokens too: every prefix of at least two characters is added. Every piece
 * that starts with U+2581 is a prefix of one word, so no merge crosses a
 * word boundary. skip is the length of the shortest prefix, in bytes. */
static void vocab_add_prefixes(struct vocab *v, const char *word, size_t skip)
{
    size_t len = strlen(word);
    for (size_t k = skip; k <= len; k++)
        if (!vocab_has(v, word, k))
            vocab_add(v, xasprintf("%.*s", (int)k, word), ATR_TOKEN_NORMAL);
}

static void vocab_build(struct vocab *v, uint32_t total)
{
    vocab_add(v, xstrdup("<unk>"), ATR_TOKEN_UNKNOWN);
    vocab_add(v, xstrdup("<s>"), ATR_TOKEN_CONTROL);
    vocab_add(v, xstrdup("</s>"), ATR_TOKEN_CONTROL);
    for (int b = 0; b < 256; b++)
        vocab_add(v, xasprintf("<0x%02X>", b), ATR_TOKEN_BYTE);
    vocab_add(v, xstrdup("<|im_start|>"), ATR_TOKEN_CONTROL);
    vocab_add(v, xstrdup("<|im_end|>"), ATR_TOKEN_CONTROL);
    for (int i = 0; i < ATR_PROMPT_WORDS; i++) {
        char *w = xasprintf("\xe2\x96\x81%s", atr_prompt_word((uint8_t)i) + 1);
        vocab_add_prefixes(v, w, 4);   /* U+2581 (3 bytes) and one letter */
        free(w);
    }
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++)
        vocab_add_prefixes(v, roles[i], 2);
    while (v->n < total)
        vocab_add(v, xasprintf("<pad_%u>", v->n), ATR_TOKEN_UNUSED);
}

static void vocab_release(struct vocab *v)
{
    for (uint32_t i = 0; i < v->n; i++)
        free(v->text[i]);
    free(v->text);
    free(v->type);
}

uint32_t atr_gguf_fixed_tokens(void)
{
    struct vocab v = {0};
    vocab_build(&v, 0);
    uint32_t n = v.n;
    vocab_release(&v);
    return n;
}

/* ---- shapes ---- */

bool atr_gguf_preset(const char *name, struct atr_gguf_model *m)
{
    if (strcmp(name, "tiny") == 0) {
        m->layers = 2, m->embd = 64, m->heads = 4, m->kv_heads = 2, m->ff = 256;
    } else if (strcmp(name, "small") == 0) {
        m->layers = 8, m->embd = 512, m->heads = 8, m->kv_heads = 4, m->ff = 1408;
    } else {
        return false;
    }
    m->ctx = 4096;
    m->vocab = 0;
    return true;
}

enum tensor_kind { T_NORM, T_EMBD, T_OUTPUT, T_MAT, T_MAT_NO_ROW0 };

struct tensor {
    char name[48];
    uint64_t ne0, ne1;          /* ggml order: ne0 is the contiguous (input) dimension */
    enum tensor_kind kind;
    uint64_t offset;            /* in the data section */
};

static uint64_t tensor_bytes(const struct tensor *t)
{
    return t->kind == T_NORM ? 4 * t->ne0 : 2 * t->ne0 * t->ne1;
}

static uint64_t align_up(uint64_t x)
{
    return (x + ATR_GGUF_ALIGNMENT - 1) / ATR_GGUF_ALIGNMENT * ATR_GGUF_ALIGNMENT;
}

static void tensor_set(struct tensor *t, const char *name, uint64_t ne0, uint64_t ne1,
                       enum tensor_kind kind)
{
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->kind = kind;
}

/* The tensors llama.cpp's llama architecture loads, in file order; returns
 * how many (3 + 9 per layer) into ts (room for that many). */
static size_t tensors_list(const struct atr_gguf_model *m, uint32_t vocab, struct tensor *ts)
{
    uint64_t kv = (uint64_t)m->embd / m->heads * m->kv_heads;
    size_t n = 0;
    tensor_set(&ts[n++], "token_embd.weight", m->embd, vocab, T_EMBD);
    tensor_set(&ts[n++], "output_norm.weight", m->embd, 1, T_NORM);
    tensor_set(&ts[n++], "output.weight", m->embd, vocab, T_OUTPUT);
    for (uint32_t l = 0; l < m->layers; l++) {
        char b[40];
#define BLK(suffix) (snprintf(b, sizeof b, "blk.%u." suffix, l), b)
        tensor_set(&ts[n++], BLK("attn_norm.weight"), m->embd, 1, T_NORM);
        tensor_set(&ts[n++], BLK("attn_q.weight"), m->embd, m->embd, T_MAT);
        tensor_set(&ts[n++], BLK("attn_k.weight"), m->embd, kv, T_MAT);
        tensor_set(&ts[n++], BLK("attn_v.weight"), m->embd, kv, T_MAT);
        tensor_set(&ts[n++], BLK("attn_output.weight"), m->embd, m->embd, T_MAT_NO_ROW0);
        tensor_set(&ts[n++], BLK("ffn_norm.weight"), m->embd, 1, T_NORM);
        tensor_set(&ts[n++], BLK("ffn_gate.weight"), m->embd, m->ff, T_MAT);
        tensor_set(&ts[n++], BLK("ffn_down.weight"), m->ff, m->embd, T_MAT_NO_ROW0);
        tensor_set(&ts[n++], BLK("ffn_up.weight"), m->embd, m->ff, T_MAT);
#undef BLK
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ts[i].offset = off;
        off = align_up(off + tensor_bytes(&ts[i]));
    }
    return n;
}

/* Bytes of tensor data, computed in doubles so absurd shapes cannot wrap. */
static double data_bytes(const struct atr_gguf_model *m, uint32_t vocab)
{
    double e = m->embd, kv = e / m->heads * m->kv_heads;
    double layer = 2 * e * e + 2 * e * kv + 3 * e * m->ff;
    return 2 * (2 * e * vocab + m->layers * layer) + 4 * e * (1 + 2.0 * m->layers);
}

int atr_gguf_model_check(const struct atr_gguf_model *m, struct atr_error *err)
{
    uint32_t fixed = atr_gguf_fixed_tokens();
    if (m->layers < 1 || m->layers > 1024)
        return atr_error_set(err, "the layer count %u is not in 1..1024", m->layers);
    if (m->heads < 1 || m->kv_heads < 1)
        return atr_error_set(err, "head counts must be at least 1");
    if (m->embd < 2 || m->embd % m->heads)
        return atr_error_set(err, "the head count %u does not divide the embedding length %u",
                             m->heads, m->embd);
    if (m->heads % m->kv_heads)
        return atr_error_set(err, "the KV head count %u does not divide the head count %u",
                             m->kv_heads, m->heads);
    if ((m->embd / m->heads) % 2)
        return atr_error_set(err, "the head size %u (embedding length / heads) must be even "
                             "for rotary embeddings", m->embd / m->heads);
    if (m->ff < 1)
        return atr_error_set(err, "the feed-forward length must be at least 1");
    if (m->ctx < 8)
        return atr_error_set(err, "the context length %u is below 8", m->ctx);
    if (m->vocab && m->vocab < fixed)
        return atr_error_set(err, "a vocabulary of %u tokens is smaller than the %u fixed "
                             "tokens (specials, bytes, prompt words)", m->vocab, fixed);
    if (!(m->eos_prob >= 0 && m->eos_prob <= 0.5))
        return atr_error_set(err, "the end-of-sequence probability must be in 0..0.5");
    double bytes = data_bytes(m, m->vocab ? m->vocab : fixed);
    if (bytes > (double)MAX_FILE_BYTES)
        return atr_error_set(err, "the model would take %.1f GiB, over the 4 GiB limit",
                             bytes / (1 << 30));
    return 0;
}

/* ---- metadata ---- */

static void put_u32(struct atr_buf *b, uint32_t v)
{
    unsigned char p[4] = {v, v >> 8, v >> 16, v >> 24};
    atr_buf_append(b, p, 4);
}

static void put_u64(struct atr_buf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_f32(struct atr_buf *b, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(b, v);
}

static void put_str(struct atr_buf *b, const char *s)
{
    put_u64(b, strlen(s));
    atr_buf_puts(b, s);
}

static void kv_head(struct atr_buf *b, const char *key, enum atr_gguf_type type)
{
    put_str(b, key);
    put_u32(b, type);
}

static void kv_u32(struct atr_buf *b, const char *key, uint32_t v)
{
    kv_head(b, key, ATR_GGUF_U32);
    put_u32(b, v);
}

static void kv_f32(struct atr_buf *b, const char *key, float v)
{
    kv_head(b, key, ATR_GGUF_F32);
    put_f32(b, v);
}

static void kv_bool(struct atr_buf *b, const char *key, bool v)
{
    kv_head(b, key, ATR_GGUF_BOOL);
    atr_buf_putc(b, v);
}

static void kv_str(struct atr_buf *b, const char *key, const char *v)
{
    kv_head(b, key, ATR_GGUF_STRING);
    put_str(b, v);
}

static void kv_array(struct atr_buf *b, const char *key, enum atr_gguf_type elem, uint64_t n)
{
    kv_head(b, key, ATR_GGUF_ARRAY);
    put_u32(b, elem);
    put_u64(b, n);
}

/* ChatML: what llama-server applies to /v1/chat/completions messages. */
static const char chat_template[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

#define N_KV 25

static void put_hparams(struct atr_buf *b, const struct atr_gguf_model *m, uint32_t vocab)
{
    kv_str(b, "general.architecture", "llama");
    kv_str(b, "general.name", "atr random llama");
    kv_u32(b, "general.file_type", 1);               /* mostly F16 */
    kv_u32(b, "general.alignment", ATR_GGUF_ALIGNMENT);
    kv_u32(b, "llama.context_length", m->ctx);
    kv_u32(b, "llama.embedding_length", m->embd);
    kv_u32(b, "llama.block_count", m->layers);
    kv_u32(b, "llama.feed_forward_length", m->ff);
    kv_u32(b, "llama.attention.head_count", m->heads);
    kv_u32(b, "llama.attention.head_count_kv", m->kv_heads);
    kv_f32(b, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_u32(b, "llama.rope.dimension_count", m->embd / m->heads);
    kv_f32(b, "llama.rope.freq_base", 10000.0f);
    kv_u32(b, "llama.vocab_size", vocab);
}

static void put_tokenizer(struct atr_buf *b, const struct vocab *v)
{
    kv_str(b, "tokenizer.ggml.model", "llama");
    kv_array(b, "tokenizer.ggml.tokens", ATR_GGUF_STRING, v->n);
    for (uint32_t i = 0; i < v->n; i++)
        put_str(b, v->text[i]);
    kv_array(b, "tokenizer.ggml.scores", ATR_GGUF_F32, v->n);
    for (uint32_t i = 0; i < v->n; i++)
        put_f32(b, -(float)i);
    kv_array(b, "tokenizer.ggml.token_type", ATR_GGUF_I32, v->n);
    for (uint32_t i = 0; i < v->n; i++)
        put_u32(b, (uint32_t)v->type[i]);
    kv_u32(b, "tokenizer.ggml.bos_token_id", TOK_BOS);
    kv_u32(b, "tokenizer.ggml.eos_token_id", TOK_EOS);
    kv_u32(b, "tokenizer.ggml.unknown_token_id", TOK_UNK);
    kv_bool(b, "tokenizer.ggml.add_bos_token", true);
    kv_bool(b, "tokenizer.ggml.add_eos_token", false);
    /* " the" must stay one token at the start of a prompt: no extra space */
    kv_bool(b, "tokenizer.ggml.add_space_prefix", false);
    kv_str(b, "tokenizer.chat_template", chat_template);
}

static void put_header(struct atr_buf *b, const struct atr_gguf_model *m, const struct vocab *v,
                       const struct tensor *ts, size_t n)
{
    atr_buf_append(b, ATR_GGUF_MAGIC, 4);
    put_u32(b, ATR_GGUF_VERSION);
    put_u64(b, n);
    put_u64(b, N_KV);
    put_hparams(b, m, v->n);
    put_tokenizer(b, v);
    for (size_t i = 0; i < n; i++) {
        put_str(b, ts[i].name);
        bool vec = ts[i].kind == T_NORM;
        put_u32(b, vec ? 1 : 2);
        put_u64(b, ts[i].ne0);
        if (!vec)
            put_u64(b, ts[i].ne1);
        put_u32(b, vec ? ATR_GGML_F32 : ATR_GGML_F16);
        put_u64(b, ts[i].offset);
    }
    while (b->len % ATR_GGUF_ALIGNMENT)
        atr_buf_putc(b, 0);
}

/* ---- weights ---- */

/* IEEE half, round to nearest even; values below the normal range become 0
 * (the weights never need them), above it infinity. */
static uint16_t f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mag = x & 0x7fffffff;
    if (mag >= 0x477ff000)
        return (uint16_t)(sign | 0x7c00);
    if (mag < 0x38800000)
        return (uint16_t)sign;
    uint32_t h = (mag - 0x38000000) >> 13, rem = mag & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static float uniform(struct atr_rng *r, double scale)
{
    return (float)((2 * atr_rng_uniform(r) - 1) * scale);
}

struct weights {
    double embd0;               /* the constant of embedding dimension 0 */
    double out_scale;           /* ordinary output rows */
    float eos0;                 /* </s>'s output weight on dimension 0 */
    const int32_t *type;        /* token types, to tell never-generated rows */
};

/* Row `row` of tensor t into v[0..ne0). */
static void fill_row(const struct tensor *t, uint64_t row, const struct weights *w,
                     struct atr_rng *r, float *v)
{
    for (uint64_t i = 0; i < t->ne0; i++) {
        switch (t->kind) {
        case T_NORM: v[i] = 1; break;
        case T_EMBD: v[i] = i ? uniform(r, 1) : (float)w->embd0; break;
        case T_MAT: v[i] = uniform(r, 1 / sqrt((double)t->ne0)); break;
        case T_MAT_NO_ROW0: v[i] = row ? uniform(r, 1 / sqrt((double)t->ne0)) : 0; break;
        case T_OUTPUT: v[i] = i ? uniform(r, w->out_scale) : 0; break;
        }
    }
    if (t->kind != T_OUTPUT || w->type[row] == ATR_TOKEN_NORMAL)
        return;
    memset(v, 0, t->ne0 * sizeof *v);
    v[0] = row == TOK_EOS && w->eos0 != 0 ? w->eos0 : FORBID_WEIGHT;
}

static int write_tensor(const struct tensor *t, const struct weights *w, struct atr_rng *r,
                        struct atr_buf *b, struct atr_output *out, struct atr_error *err)
{
    float *v = xmalloc(t->ne0 * sizeof *v);
    int rc = 0;
    for (uint64_t row = 0; row < t->ne1 && rc == 0; row++) {
        fill_row(t, row, w, r, v);
        atr_buf_clear(b);
        for (uint64_t i = 0; i < t->ne0; i++) {
            if (t->kind == T_NORM) {
                put_f32(b, v[i]);
            } else {
                uint16_t h = f16(v[i]);
                unsigned char p[2] = {h & 0xff, h >> 8};
                atr_buf_append(b, p, 2);
            }
        }
        rc = atr_output_write(out, b->data, b->len, err);
    }
    free(v);
    return rc;
}

/* Dimension 0 of the residual stream holds embd0 in every position (no layer
 * writes it), so after the final RMS norm it is about sqrt(embd / 2) when
 * embd0^2 equals the other dimensions' total variance. </s>'s logit is then
 * eos0 * sqrt(embd / 2) against n ordinary tokens of logit sd LOGIT_SD:
 * P(</s>) ~ p when its logit is log(p / (1 - p)) + log(n) + sd^2 / 2. */
static void weights_init(struct weights *w, const struct atr_gguf_model *m, const struct vocab *v)
{
    double n = m->embd, normal = 0;
    for (uint32_t i = 0; i < v->n; i++)
        normal += v->type[i] == ATR_TOKEN_NORMAL;
    w->embd0 = sqrt((n - 1) / 3);
    w->out_scale = LOGIT_SD * sqrt(6 / n);
    w->eos0 = 0;
    if (m->eos_prob > 0) {
        double p = m->eos_prob;
        double logit = atr_det_log(p / (1 - p)) + atr_det_log(normal) + LOGIT_SD * LOGIT_SD / 2;
        w->eos0 = (float)(logit / sqrt(n / 2));
    }
    w->type = v->type;
}

int atr_gguf_model_write(const struct atr_gguf_model *m, struct atr_output *out,
                         struct atr_error *err)
{
    if (atr_gguf_model_check(m, err) < 0)
        return -1;
    struct vocab v = {0};
    vocab_build(&v, m->vocab);
    struct tensor *ts = xcalloc(3 + 9 * (size_t)m->layers, sizeof *ts);
    size_t n = tensors_list(m, v.n, ts);
    struct weights w;
    weights_init(&w, m, &v);
    struct atr_buf b = ATR_BUF_INIT;
    put_header(&b, m, &v, ts, n);
    int rc = atr_output_write(out, b.data, b.len, err);
    uint64_t at = 0;                    /* bytes of the data section written */
    for (size_t i = 0; i < n && rc == 0; i++) {
        static const char pad[ATR_GGUF_ALIGNMENT];
        rc = atr_output_write(out, pad, ts[i].offset - at, err);
        struct atr_rng r;
        atr_rng_seed(&r, m->seed, i);   /* tensor i's own stream */
        if (rc == 0)
            rc = write_tensor(&ts[i], &w, &r, &b, out, err);
        at = ts[i].offset + tensor_bytes(&ts[i]);
    }
    atr_buf_release(&b);
    free(ts);
    vocab_release(&v);
    return rc;
}
