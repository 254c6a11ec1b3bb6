/* gguf.c - checks a GGUF file field by field and summarises it (see gguf.h). */
#include "util/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A cursor over the image; every read checks the bytes are there. */
struct rd {
    const unsigned char *p;
    size_t len, pos;
    const char *name;
    struct atr_error *err;
};

/* "NAME: offset N: what" with N the offset of the field being read. */
static int fail_at(struct rd *r, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(struct rd *r, size_t at, const char *fmt, ...)
{
    char what[ATR_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return atr_error_set(r->err, "%s: offset %zu: %s", r->name, at, what);
}

static int need(struct rd *r, size_t n, const char *what)
{
    if (r->len - r->pos < n)
        return fail_at(r, r->pos, "expected %s, found end of file (%zu bytes)", what, r->len);
    return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int get(struct rd *r, int n, const char *what, uint64_t *v)
{
    if (need(r, (size_t)n, what) < 0)
        return -1;
    *v = le(r->p + r->pos, n);
    r->pos += (size_t)n;
    return 0;
}

/* A string: u64 length, then that many bytes, inside the file. */
static int get_str(struct rd *r, const char *what, const unsigned char **s, uint64_t *n)
{
    size_t at = r->pos;
    if (get(r, 8, what, n) < 0)
        return -1;
    if (*n > r->len - r->pos)
        return fail_at(r, at, "%s of %llu bytes runs past the end of the file", what,
                       (unsigned long long)*n);
    *s = r->p + r->pos;
    r->pos += (size_t)*n;
    return 0;
}

/* ---- metadata ---- */

static const unsigned char type_size[ATR_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* What the summary takes from the keys: ARCH.SUFFIX values, kept with their
 * prefix until general.architecture (which may come later) is known. */
static const char *const arch_keys[] = {
    ".block_count", ".embedding_length", ".attention.head_count",
    ".attention.head_count_kv", ".feed_forward_length", ".context_length",
};
#define N_ARCH_KEYS (sizeof arch_keys / sizeof *arch_keys)

struct meta {
    const unsigned char *arch;
    uint64_t arch_len;
    const unsigned char *prefix[N_ARCH_KEYS];
    uint64_t prefix_len[N_ARCH_KEYS], value[N_ARCH_KEYS];
    uint64_t alignment, vocab;
};

static bool key_is(const unsigned char *k, uint64_t n, const char *s)
{
    return n == strlen(s) && memcmp(k, s, n) == 0;
}

static int skip_value(struct rd *r, uint32_t type)
{
    uint64_t v;
    if (type == ATR_GGUF_STRING) {
        const unsigned char *s;
        return get_str(r, "a string value", &s, &v);
    }
    return get(r, type_size[type], "a value", &v);
}

/* An array: element type (no nested arrays: ggml refuses them), count, and
 * count elements that must fit in what is left of the file. */
static int read_array(struct rd *r, const unsigned char *key, uint64_t klen, struct meta *m)
{
    size_t at = r->pos;
    uint64_t type, n;
    if (get(r, 4, "an array element type", &type) < 0)
        return -1;
    if (type >= ATR_GGUF_TYPE_COUNT || type == ATR_GGUF_ARRAY)
        return fail_at(r, at, "array of key '%.*s' has element type %llu, expected 0..12 "
                       "other than 9 (array)", (int)klen, key, (unsigned long long)type);
    at = r->pos;
    if (get(r, 8, "an array length", &n) < 0)
        return -1;
    uint64_t each = type == ATR_GGUF_STRING ? 8 : type_size[type];
    if (n > (r->len - r->pos) / each)
        return fail_at(r, at, "array of key '%.*s' has %llu elements, more than the file holds",
                       (int)klen, key, (unsigned long long)n);
    if (key_is(key, klen, "tokenizer.ggml.tokens"))
        m->vocab = n;
    if (type != ATR_GGUF_STRING) {
        r->pos += (size_t)(n * each);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++)
        if (skip_value(r, ATR_GGUF_STRING) < 0)
            return -1;
    return 0;
}

static bool is_uint(uint32_t type)
{
    return type == ATR_GGUF_U8 || type == ATR_GGUF_U16 || type == ATR_GGUF_U32 ||
           type == ATR_GGUF_U64;
}

/* Notes the values the summary wants; the value itself is at r->pos. */
static void note(struct rd *r, const unsigned char *key, uint64_t klen, uint32_t type,
                 struct meta *m)
{
    const unsigned char *v = r->p + r->pos;
    if (type == ATR_GGUF_STRING && key_is(key, klen, "general.architecture")) {
        m->arch_len = le(v, 8);
        m->arch = v + 8;
    }
    if (!is_uint(type))
        return;
    uint64_t x = le(v, type_size[type]);
    if (key_is(key, klen, "general.alignment"))
        m->alignment = x;
    for (size_t i = 0; i < N_ARCH_KEYS; i++) {
        size_t sl = strlen(arch_keys[i]);
        if (klen > sl && memcmp(key + klen - sl, arch_keys[i], sl) == 0) {
            m->prefix[i] = key;
            m->prefix_len[i] = klen - sl;
            m->value[i] = x;
        }
    }
}

static int read_kv(struct rd *r, struct meta *m)
{
    const unsigned char *key;
    uint64_t klen, type;
    if (get_str(r, "a key", &key, &klen) < 0)
        return -1;
    size_t at = r->pos;
    if (get(r, 4, "a value type", &type) < 0)
        return -1;
    if (type >= ATR_GGUF_TYPE_COUNT)
        return fail_at(r, at, "key '%.*s' has value type %llu, expected 0..12", (int)klen, key,
                       (unsigned long long)type);
    if (type == ATR_GGUF_ARRAY)
        return read_array(r, key, klen, m);
    size_t start = r->pos;
    if (skip_value(r, (uint32_t)type) < 0)
        return -1;
    r->pos = start;
    note(r, key, klen, (uint32_t)type, m);
    return skip_value(r, (uint32_t)type);
}

/* ---- tensors ---- */

/* ggml's types: elements per block and bytes per block (ggml.c's
 * type_traits); 0 where the number is no longer a type. */
static const struct { uint8_t blck; uint16_t size; } ggml_types[] = {
    [0] = {1, 4},     [1] = {1, 2},     [2] = {32, 18},   [3] = {32, 20},   [6] = {32, 22},
    [7] = {32, 24},   [8] = {32, 34},   [9] = {32, 36},   [10] = {0, 84},   [11] = {0, 110},
    [12] = {0, 144},  [13] = {0, 176},  [14] = {0, 210},  [15] = {0, 292},  [16] = {0, 66},
    [17] = {0, 74},   [18] = {0, 98},   [19] = {0, 50},   [20] = {32, 18},  [21] = {0, 110},
    [22] = {0, 82},   [23] = {0, 136},  [24] = {1, 1},    [25] = {1, 2},    [26] = {1, 4},
    [27] = {1, 8},    [28] = {1, 8},    [29] = {0, 56},   [30] = {1, 2},    [34] = {0, 54},
    [35] = {0, 66},   [39] = {32, 17},  [40] = {64, 36},  [41] = {128, 18}, [42] = {64, 18},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof *ggml_types)

/* blck 0 in the table stands for QK_K = 256 (it does not fit a byte). */
static uint64_t type_block(uint64_t t)
{
    return ggml_types[t].blck ? ggml_types[t].blck : 256;
}

struct tinfo {
    size_t at;                  /* file offset of the info */
    size_t off_at;              /* file offset of its data offset, for messages */
    const unsigned char *name;
    uint64_t name_len, offset, bytes;
};

/* dims: 1..4 of them, each >= 0, the product without overflow, the first a
 * whole number of blocks; elements and bytes out. */
static int read_dims(struct rd *r, struct tinfo *t, uint64_t *elems)
{
    size_t at = r->pos;
    uint64_t nd, type, ne[ATR_GGUF_MAX_DIMS];
    if (get(r, 4, "a dimension count", &nd) < 0)
        return -1;
    if (nd < 1 || nd > ATR_GGUF_MAX_DIMS)
        return fail_at(r, at, "tensor '%.*s' has %llu dimensions, expected 1..4",
                       (int)t->name_len, t->name, (unsigned long long)nd);
    *elems = 1;
    for (uint64_t i = 0; i < nd; i++) {
        at = r->pos;
        if (get(r, 8, "a dimension", &ne[i]) < 0)
            return -1;
        if (ne[i] >> 62 || (ne[i] && *elems > INT64_MAX / ne[i]))
            return fail_at(r, at, "tensor '%.*s' has %llu elements in dimension %llu, too many",
                           (int)t->name_len, t->name, (unsigned long long)ne[i],
                           (unsigned long long)i);
        *elems *= ne[i];
    }
    at = r->pos;
    if (get(r, 4, "a tensor type", &type) < 0)
        return -1;
    if (type >= N_GGML_TYPES || !ggml_types[type].size)
        return fail_at(r, at, "tensor '%.*s' has ggml type %llu, which is no type",
                       (int)t->name_len, t->name, (unsigned long long)type);
    if (ne[0] % type_block(type))
        return fail_at(r, at, "tensor '%.*s': its first dimension %llu is not a multiple of "
                       "its type's block of %llu", (int)t->name_len, t->name,
                       (unsigned long long)ne[0], (unsigned long long)type_block(type));
    uint64_t blocks = *elems / type_block(type);
    if (blocks > r->len / ggml_types[type].size)
        return fail_at(r, at, "tensor '%.*s' of %llu elements takes more bytes than the file "
                       "holds", (int)t->name_len, t->name, (unsigned long long)*elems);
    t->bytes = blocks * ggml_types[type].size;
    return 0;
}

static int read_tinfo(struct rd *r, struct tinfo *t, uint64_t *elems)
{
    t->at = r->pos;
    if (get_str(r, "a tensor name", &t->name, &t->name_len) < 0)
        return -1;
    if (t->name_len > ATR_GGUF_MAX_NAME)
        return fail_at(r, t->at, "tensor name of %llu bytes, expected at most %d",
                       (unsigned long long)t->name_len, ATR_GGUF_MAX_NAME);
    if (read_dims(r, t, elems) < 0)
        return -1;
    t->off_at = r->pos;
    return get(r, 8, "a tensor offset", &t->offset);
}

/* llama.cpp's loader wants the tensors packed in order, each starting at
 * the aligned end of the one before, and all inside the file. */
static int check_placement(struct rd *r, const struct tinfo *t, uint64_t expect, size_t data,
                           uint64_t align)
{
    size_t at = t->off_at;
    if (t->offset % align)
        return fail_at(r, at, "tensor '%.*s' at data offset %llu, expected a multiple of the "
                       "alignment %llu", (int)t->name_len, t->name,
                       (unsigned long long)t->offset, (unsigned long long)align);
    if (t->offset < expect)
        return fail_at(r, at, "tensor '%.*s' at data offset %llu overlaps the tensor before "
                       "it, expected %llu", (int)t->name_len, t->name,
                       (unsigned long long)t->offset, (unsigned long long)expect);
    if (t->offset > expect)
        return fail_at(r, at, "tensor '%.*s' at data offset %llu leaves a gap, expected %llu",
                       (int)t->name_len, t->name, (unsigned long long)t->offset,
                       (unsigned long long)expect);
    if (t->offset > r->len - data || t->bytes > r->len - data - t->offset)
        return fail_at(r, at, "tensor '%.*s' (%llu bytes at file offset %llu) ends past the end "
                       "of the file (%zu bytes)", (int)t->name_len, t->name,
                       (unsigned long long)t->bytes, (unsigned long long)(data + t->offset),
                       r->len);
    return 0;
}

/* ---- the whole file ---- */

static int read_header(struct rd *r, struct atr_gguf_summary *s)
{
    uint64_t v;
    if (need(r, 4, "the magic \"GGUF\"") < 0)
        return -1;
    if (memcmp(r->p, ATR_GGUF_MAGIC, 4) != 0)
        return fail_at(r, 0, "expected the magic \"GGUF\"");
    r->pos = 4;
    if (get(r, 4, "a version", &v) < 0)
        return -1;
    if (v != 2 && v != 3)
        return fail_at(r, 4, "version %llu, expected 2 or 3", (unsigned long long)v);
    s->version = (uint32_t)v;
    if (get(r, 8, "a tensor count", &s->n_tensors) < 0 || get(r, 8, "a key count", &s->n_kv) < 0)
        return -1;
    /* the smallest key takes 8 + 4 + 1 bytes, the smallest tensor info 8 + 4 + 8 + 4 + 8 */
    if (s->n_kv > (r->len - r->pos) / 13)
        return fail_at(r, 16, "%llu keys, more than the file can hold",
                       (unsigned long long)s->n_kv);
    if (s->n_tensors > (r->len - r->pos) / 32)
        return fail_at(r, 8, "%llu tensors, more than the file can hold",
                       (unsigned long long)s->n_tensors);
    return 0;
}

static void summarise(const struct meta *m, struct atr_gguf_summary *s)
{
    uint64_t *out[N_ARCH_KEYS] = {&s->layers, &s->embd, &s->heads, &s->kv_heads, &s->ff,
                                  &s->context};
    size_t n = m->arch_len < sizeof s->arch ? (size_t)m->arch_len : sizeof s->arch - 1;
    if (m->arch)
        memcpy(s->arch, m->arch, n);
    s->arch[m->arch ? n : 0] = '\0';
    for (size_t i = 0; i < N_ARCH_KEYS; i++)
        if (m->prefix[i] && m->prefix_len[i] == m->arch_len &&
            memcmp(m->prefix[i], m->arch, m->arch_len) == 0)
            *out[i] = m->value[i];
    s->vocab = m->vocab;
}

static int read_tensors(struct rd *r, struct atr_gguf_summary *s, uint64_t align)
{
    /* Infos first, then placement: the data section starts after the last
     * info, so a second pass checks the offsets against it. */
    size_t first = r->pos;
    uint64_t elems;
    for (uint64_t i = 0; i < s->n_tensors; i++) {
        struct tinfo t;
        if (read_tinfo(r, &t, &elems) < 0)
            return -1;
        s->params += elems;
    }
    size_t data = (size_t)((r->pos + align - 1) / align * align);
    if (data > r->len)
        return fail_at(r, r->pos, "expected the tensor data to start at offset %zu, past the "
                       "end of the file (%zu bytes)", data, r->len);
    r->pos = first;
    uint64_t expect = 0;
    for (uint64_t i = 0; i < s->n_tensors; i++) {
        struct tinfo t;
        read_tinfo(r, &t, &elems);
        if (check_placement(r, &t, expect, data, align) < 0)
            return -1;
        expect = (t.offset + t.bytes + align - 1) / align * align;
    }
    s->data_bytes = r->len - data;
    return 0;
}

int atr_gguf_parse(const void *data, size_t len, const char *name, struct atr_gguf_summary *s,
                   struct atr_error *err)
{
    struct rd r = {data, len, 0, name, err};
    struct meta m = {.alignment = ATR_GGUF_ALIGNMENT};
    memset(s, 0, sizeof *s);
    s->file_bytes = len;
    if (read_header(&r, s) < 0)
        return -1;
    for (uint64_t i = 0; i < s->n_kv; i++)
        if (read_kv(&r, &m) < 0)
            return -1;
    if (!m.alignment || (m.alignment & (m.alignment - 1)) || m.alignment > 1 << 20)
        return atr_error_set(err, "%s: general.alignment %llu, expected a power of two", name,
                             (unsigned long long)m.alignment);
    summarise(&m, s);
    return read_tensors(&r, s, m.alignment);
}

int atr_gguf_check(const char *path, struct atr_gguf_summary *s, struct atr_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return atr_error_set(err, "%s: not a regular file", path);
    }
    static const char empty[1];
    size_t len = (size_t)st.st_size;
    const void *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : empty;
    close(fd);
    if (p == MAP_FAILED)
        return atr_error_set(err, "%s: %s", path, strerror(errno));
    int rc = atr_gguf_parse(p, len, path, s, err);
    if (len)
        munmap((void *)p, len);
    return rc;
}
