/* arena.c - chunked bump allocator. */
#include "util/arena.h"
#include "util/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct atr_arena_chunk {
    struct atr_arena_chunk *next;
    size_t size, off;
    _Alignas(16) unsigned char data[];
};

enum { ARENA_MIN_CHUNK = 64 * 1024 };

/* A chunk of at least need bytes, or NULL when malloc fails. */
static struct atr_arena_chunk *chunk_new(size_t need)
{
    size_t size = need > ARENA_MIN_CHUNK ? need : ARENA_MIN_CHUNK;
    if (size > SIZE_MAX - sizeof(struct atr_arena_chunk))
        return NULL;
    struct atr_arena_chunk *c = malloc(sizeof *c + size);
    if (!c)
        return NULL;
    c->next = NULL;
    c->size = size;
    c->off = 0;
    return c;
}

void *atr_arena_try_alloc(struct atr_arena *a, size_t n)
{
    if (n > SIZE_MAX - 15)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct atr_arena_chunk *c = a->head;
    if (!c || c->size - c->off < n) {
        /* Grow geometrically so a large trace costs few mallocs. */
        size_t want = c ? c->size * 2 : ARENA_MIN_CHUNK;
        if (want > 64u << 20)
            want = 64u << 20;
        c = chunk_new(n > want ? n : want);
        if (!c)
            return NULL;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->off;
    c->off += n;
    a->used += n;
    return p;
}

void *atr_arena_alloc(struct atr_arena *a, size_t n)
{
    void *p = atr_arena_try_alloc(a, n);
    if (!p)
        abort();
    return p;
}

void *atr_arena_calloc(struct atr_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        abort();
    void *p = atr_arena_alloc(a, n * size);
    memset(p, 0, n * size);
    return p;
}

char *atr_arena_strndup(struct atr_arena *a, const char *s, size_t n)
{
    char *p = atr_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *atr_arena_strdup(struct atr_arena *a, const char *s)
{
    return atr_arena_strndup(a, s, strlen(s));
}

char *atr_arena_printf(struct atr_arena *a, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if ((size_t)n < sizeof small)
        return atr_arena_strndup(a, small, (size_t)n);
    char *p = atr_arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void atr_arena_clear(struct atr_arena *a)
{
    /* Keep the largest (newest) chunk: the next trace is likely similar. */
    struct atr_arena_chunk *keep = a->head;
    if (!keep)
        return;
    struct atr_arena_chunk *c = keep->next;
    while (c) {
        struct atr_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    keep->next = NULL;
    keep->off = 0;
    a->used = 0;
}

void atr_arena_release(struct atr_arena *a)
{
    struct atr_arena_chunk *c = a->head;
    while (c) {
        struct atr_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}
