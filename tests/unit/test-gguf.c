/* test-gguf.c - the model generator and the GGUF reader: a generated model
 * reads back with its shape, the same seed gives the same bytes, and every
 * kind of damage (truncation anywhere, wrong magic, huge counts, strings past
 * the end, misplaced tensors) is one clear error, never a crash. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/gguf.h"
#include "util/buf.h"
#include "util/gguf.h"
#include "util/output.h"

/* The whole file a model gives, in memory (malloc'd); *len its size. */
static unsigned char *model_bytes(const struct atr_gguf_model *m, size_t *len)
{
    char path[] = "/tmp/atr-test-gguf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct atr_error err;
    struct atr_output *out = atr_output_open(path, &err);
    assert_non_null(out);
    assert_int_equal(atr_gguf_model_write(m, out, &err), 0);
    assert_int_equal(atr_output_commit(out, &err), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *p = malloc(*len);
    assert_int_equal(fread(p, 1, *len, f), *len);
    fclose(f);
    unlink(path);
    return p;
}

static struct atr_gguf_model tiny(uint64_t seed)
{
    struct atr_gguf_model m = {.eos_prob = 0.01, .seed = seed};
    assert_true(atr_gguf_preset("tiny", &m));
    return m;
}

/* parse fails with a message that contains want. */
static void expect_error(const void *p, size_t len, const char *want)
{
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_parse(p, len, "m.gguf", &s, &err), -1);
    if (!strstr(err.msg, want))
        fail_msg("error '%s' does not say '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, "m.gguf: "));
}

static void test_round_trip(void **state)
{
    (void)state;
    struct atr_gguf_model m = tiny(1);
    size_t len;
    unsigned char *p = model_bytes(&m, &len);
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_parse(p, len, "m.gguf", &s, &err), 0);
    assert_string_equal(s.arch, "llama");
    assert_int_equal(s.version, 3);
    assert_int_equal(s.layers, 2);
    assert_int_equal(s.embd, 64);
    assert_int_equal(s.heads, 4);
    assert_int_equal(s.kv_heads, 2);
    assert_int_equal(s.ff, 256);
    assert_int_equal(s.context, 4096);
    assert_int_equal(s.vocab, atr_gguf_fixed_tokens());
    assert_int_equal(s.n_tensors, 3 + 9 * 2);
    uint64_t per_layer = 2 * 64 + 64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 256;
    assert_int_equal(s.params, 2 * 64 * s.vocab + 64 + 2 * per_layer);
    assert_int_equal(s.file_bytes, len);
    free(p);
}

static void test_same_seed_same_bytes(void **state)
{
    (void)state;
    struct atr_gguf_model a = tiny(7), c = tiny(8);
    size_t la, lb, lc;
    unsigned char *pa = model_bytes(&a, &la), *pb = model_bytes(&a, &lb);
    unsigned char *pc = model_bytes(&c, &lc);
    assert_int_equal(la, lb);
    assert_memory_equal(pa, pb, la);
    assert_int_equal(la, lc);                        /* same shape, other weights */
    assert_memory_not_equal(pa, pc, la);
    free(pa);
    free(pb);
    free(pc);
}

static void test_vocab_padding(void **state)
{
    (void)state;
    struct atr_gguf_model m = tiny(1);
    m.vocab = atr_gguf_fixed_tokens() + 100;
    size_t len;
    unsigned char *p = model_bytes(&m, &len);
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_parse(p, len, "m.gguf", &s, &err), 0);
    assert_int_equal(s.vocab, m.vocab);
    free(p);
}

static void test_impossible_shapes(void **state)
{
    (void)state;
    struct atr_gguf_model m;
    struct atr_error err;
    m = tiny(1), m.heads = 3;
    assert_int_equal(atr_gguf_model_check(&m, &err), -1);
    assert_non_null(strstr(err.msg, "head count 3 does not divide the embedding length 64"));
    m = tiny(1), m.kv_heads = 3;
    assert_int_equal(atr_gguf_model_check(&m, &err), -1);
    assert_non_null(strstr(err.msg, "KV head count 3 does not divide the head count 4"));
    m = tiny(1), m.layers = 0;
    assert_int_equal(atr_gguf_model_check(&m, &err), -1);
    assert_non_null(strstr(err.msg, "layer count 0"));
    m = tiny(1), m.vocab = 300;
    assert_int_equal(atr_gguf_model_check(&m, &err), -1);
    assert_non_null(strstr(err.msg, "smaller than the"));
    m = tiny(1), m.embd = 65536, m.heads = 64, m.kv_heads = 64, m.ff = 65536;
    assert_int_equal(atr_gguf_model_check(&m, &err), -1);
    assert_non_null(strstr(err.msg, "over the 4 GiB limit"));
    m = tiny(1);
    assert_int_equal(atr_gguf_model_check(&m, &err), 0);
}

/* Every cut of the header and tensor infos, and many of the data, is an
 * error that names an offset inside the file. */
static void test_truncated_anywhere(void **state)
{
    (void)state;
    struct atr_gguf_model m = tiny(1);
    size_t len;
    unsigned char *p = model_bytes(&m, &len);
    for (size_t cut = 0; cut < len; cut += cut < 32768 ? 1 : 4093) {
        unsigned char *q = malloc(cut ? cut : 1);     /* exact size: ASan sees overreads */
        memcpy(q, p, cut);
        struct atr_gguf_summary s;
        struct atr_error err;
        assert_int_equal(atr_gguf_parse(q, cut, "m.gguf", &s, &err), -1);
        assert_non_null(strstr(err.msg, "m.gguf: offset "));
        free(q);
    }
    free(p);
}

/* ---- hand-made files ---- */

static void put32(struct atr_buf *b, uint32_t v)
{
    atr_buf_append(b, &v, 4);                    /* little-endian hosts only, as ggml */
}

static void put64(struct atr_buf *b, uint64_t v)
{
    atr_buf_append(b, &v, 8);
}

static void putstr(struct atr_buf *b, const char *s)
{
    put64(b, strlen(s));
    atr_buf_puts(b, s);
}

/* A file of one string key and two F32 [8] tensors at offsets o1, o2
 * (32 bytes each, so 0 and 32 is right); positions of fields noted. */
struct small {
    struct atr_buf b;
    size_t key_len_at, type_at, off2_at, dims_at, name2_at;
};

static void small_make(struct small *f, uint64_t o1, uint64_t o2, uint64_t data_bytes)
{
    struct atr_buf *b = &f->b;
    *b = (struct atr_buf)ATR_BUF_INIT;
    atr_buf_append(b, "GGUF", 4);
    put32(b, 3);
    put64(b, 2);
    put64(b, 1);
    f->key_len_at = b->len;
    putstr(b, "general.architecture");
    f->type_at = b->len;
    put32(b, ATR_GGUF_STRING);
    putstr(b, "llama");
    putstr(b, "a");
    f->dims_at = b->len;
    put32(b, 1);
    put64(b, 8);
    put32(b, ATR_GGML_F32);
    put64(b, o1);
    f->name2_at = b->len + 8;
    putstr(b, "b");
    put32(b, 1);
    put64(b, 8);
    put32(b, ATR_GGML_F32);
    f->off2_at = b->len;
    put64(b, o2);
    while (b->len % 32)
        atr_buf_putc(b, 0);
    for (uint64_t i = 0; i < data_bytes; i++)
        atr_buf_putc(b, 0);
}

static void test_hand_made_ok(void **state)
{
    (void)state;
    struct small f;
    small_make(&f, 0, 32, 64);
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_parse(f.b.data, f.b.len, "m.gguf", &s, &err), 0);
    assert_int_equal(s.params, 16);
    assert_string_equal(s.arch, "llama");
    atr_buf_release(&f.b);
}

static void test_bad_header(void **state)
{
    (void)state;
    struct small f;
    small_make(&f, 0, 32, 64);
    f.b.data[0] = 'X';
    expect_error(f.b.data, f.b.len, "offset 0: expected the magic \"GGUF\"");
    f.b.data[0] = 'G';
    f.b.data[4] = 9;
    expect_error(f.b.data, f.b.len, "offset 4: version 9, expected 2 or 3");
    f.b.data[4] = 3;
    uint64_t huge = UINT64_C(1) << 60;
    memcpy(f.b.data + 8, &huge, 8);
    expect_error(f.b.data, f.b.len, "offset 8: 1152921504606846976 tensors, more than the file");
    uint64_t two = 2;
    memcpy(f.b.data + 8, &two, 8);
    memcpy(f.b.data + 16, &huge, 8);
    expect_error(f.b.data, f.b.len, "offset 16: 1152921504606846976 keys, more than the file");
    atr_buf_release(&f.b);
}

static void test_bad_keys(void **state)
{
    (void)state;
    struct small f;
    small_make(&f, 0, 32, 64);
    uint64_t huge = UINT64_C(1) << 40;
    memcpy(f.b.data + f.key_len_at, &huge, 8);
    expect_error(f.b.data, f.b.len, "offset 24: a key of 1099511627776 bytes runs past the end");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 64);
    uint32_t t = 77;
    memcpy(f.b.data + f.type_at, &t, 4);
    expect_error(f.b.data, f.b.len, "value type 77, expected 0..12");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 64);
    t = ATR_GGUF_ARRAY;                     /* then 5 of "llama"'s length is the elem type */
    memcpy(f.b.data + f.type_at, &t, 4);
    expect_error(f.b.data, f.b.len, "elements, more than the file holds");
    atr_buf_release(&f.b);
}

/* Two u8 keys, the second named k2, and no tensors. */
static void two_keys(struct atr_buf *b, const char *k2)
{
    *b = (struct atr_buf)ATR_BUF_INIT;
    atr_buf_append(b, "GGUF", 4);
    put32(b, 3);
    put64(b, 0);
    put64(b, 2);
    putstr(b, "a.b");
    put32(b, ATR_GGUF_U8);
    atr_buf_putc(b, 1);
    putstr(b, k2);
    put32(b, ATR_GGUF_U8);
    atr_buf_putc(b, 1);
}

static void test_repeats_and_empty_keys(void **state)
{
    (void)state;
    struct atr_buf b;
    two_keys(&b, "a.c");
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_parse(b.data, b.len, "m.gguf", &s, &err), 0);
    atr_buf_release(&b);
    two_keys(&b, "a.b");
    expect_error(b.data, b.len, "offset 40: key 'a.b' repeats an earlier key");
    atr_buf_release(&b);
    two_keys(&b, "");
    expect_error(b.data, b.len, "offset 40: expected a key, found an empty string");
    atr_buf_release(&b);
    struct small f;
    small_make(&f, 0, 32, 64);
    f.b.data[f.name2_at] = 'a';
    expect_error(f.b.data, f.b.len, "tensor name 'a' repeats an earlier tensor's");
    atr_buf_release(&f.b);
}

static void test_bad_tensors(void **state)
{
    (void)state;
    struct small f;
    small_make(&f, 0, 4, 64);
    expect_error(f.b.data, f.b.len, "tensor 'b' at data offset 4, expected a multiple of the "
                 "alignment 32");
    atr_buf_release(&f.b);
    small_make(&f, 0, 0, 64);
    expect_error(f.b.data, f.b.len, "tensor 'b' at data offset 0 overlaps the tensor before it");
    atr_buf_release(&f.b);
    small_make(&f, 0, 64, 96);
    expect_error(f.b.data, f.b.len, "tensor 'b' at data offset 64 leaves a gap, expected 32");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 40);                /* b's 32 bytes stop 24 short */
    expect_error(f.b.data, f.b.len, "tensor 'b' (32 bytes at file offset");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 64);
    uint32_t nd = 5;
    memcpy(f.b.data + f.dims_at, &nd, 4);
    expect_error(f.b.data, f.b.len, "tensor 'a' has 5 dimensions, expected 1..4");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 64);
    uint32_t type = 4;                        /* Q4_2: no longer a type */
    memcpy(f.b.data + f.dims_at + 12, &type, 4);
    expect_error(f.b.data, f.b.len, "tensor 'a' has ggml type 4, which is no type");
    atr_buf_release(&f.b);
    small_make(&f, 0, 32, 64);
    uint64_t ne = UINT64_C(1) << 61;
    memcpy(f.b.data + f.dims_at + 4, &ne, 8);
    expect_error(f.b.data, f.b.len, "is too large for any file");
    atr_buf_release(&f.b);
}

static void test_check_file(void **state)
{
    (void)state;
    struct atr_gguf_summary s;
    struct atr_error err;
    assert_int_equal(atr_gguf_check("/nonexistent/m.gguf", &s, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/m.gguf: No such file"));
    char path[] = "/tmp/atr-test-gguf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(atr_gguf_check(path, &s, &err), -1);   /* empty */
    assert_non_null(strstr(err.msg, ": offset 0: expected the magic"));
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_same_seed_same_bytes),
        cmocka_unit_test(test_vocab_padding),
        cmocka_unit_test(test_impossible_shapes),
        cmocka_unit_test(test_truncated_anywhere),
        cmocka_unit_test(test_hand_made_ok),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_repeats_and_empty_keys),
        cmocka_unit_test(test_check_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
