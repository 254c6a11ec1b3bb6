/* gguf.h - the GGUF model file format (llama.cpp's): its constants, and a
 * reader that checks a whole file before a serving engine is asked to load it.
 *
 * A GGUF file is a header (magic "GGUF", version, tensor and key counts),
 * key/value metadata, tensor infos (name, dims, ggml type, data offset), then
 * the tensor data, each tensor aligned to general.alignment (default 32)
 * from the start of the data section. All integers are little-endian.
 *
 * Memory: the summary holds only numbers and a fixed-size architecture name;
 * nothing to free. */
#ifndef ATR_UTIL_GGUF_H
#define ATR_UTIL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define ATR_GGUF_MAGIC "GGUF"
#define ATR_GGUF_VERSION 3
#define ATR_GGUF_ALIGNMENT 32           /* when general.alignment is absent */
#define ATR_GGUF_MAX_DIMS 4             /* ggml's GGML_MAX_DIMS */
#define ATR_GGUF_MAX_NAME 63            /* ggml's GGML_MAX_NAME - 1 */

enum atr_gguf_type {                    /* metadata value types */
    ATR_GGUF_U8, ATR_GGUF_I8, ATR_GGUF_U16, ATR_GGUF_I16, ATR_GGUF_U32, ATR_GGUF_I32,
    ATR_GGUF_F32, ATR_GGUF_BOOL, ATR_GGUF_STRING, ATR_GGUF_ARRAY, ATR_GGUF_U64,
    ATR_GGUF_I64, ATR_GGUF_F64, ATR_GGUF_TYPE_COUNT,
};

enum atr_ggml_type {                    /* the tensor types atr writes */
    ATR_GGML_F32 = 0,
    ATR_GGML_F16 = 1,
};

/* Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type). */
enum atr_gguf_token_type {
    ATR_TOKEN_NORMAL = 1, ATR_TOKEN_UNKNOWN = 2, ATR_TOKEN_CONTROL = 3,
    ATR_TOKEN_USER_DEFINED = 4, ATR_TOKEN_UNUSED = 5, ATR_TOKEN_BYTE = 6,
};

struct atr_gguf_summary {
    uint32_t version;
    char arch[32];                      /* general.architecture ("" if absent) */
    uint64_t n_kv, n_tensors;
    uint64_t layers, embd, heads, kv_heads, ff, context;   /* ARCH.* keys; 0 if absent */
    uint64_t vocab;                     /* entries of tokenizer.ggml.tokens */
    uint64_t params;                    /* elements of all tensors */
    uint64_t data_bytes;                /* the tensor data section */
    uint64_t file_bytes;
};

/* Checks the GGUF image data[0..len) named name (for messages): magic,
 * version, counts, every key (type, string and array lengths inside the
 * file), every tensor info (dims, type, offset aligned, packed in order and
 * inside the file). 0 and *s filled, or -1 with err "NAME: offset N: what was
 * expected", N the file offset of the field at fault. */
int atr_gguf_parse(const void *data, size_t len, const char *name, struct atr_gguf_summary *s,
                   struct atr_error *err);

/* atr_gguf_parse on the file at path (mapped, not read). */
int atr_gguf_check(const char *path, struct atr_gguf_summary *s, struct atr_error *err);

#endif
