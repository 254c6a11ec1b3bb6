/* arena.h - bump allocator for per-trace and per-document memory.
 *
 * Everything allocated from an arena lives until atr_arena_clear (keeps the
 * first chunk for reuse) or atr_arena_release (frees all). Allocation never
 * fails silently: on out-of-memory the process aborts, as there is no
 * sensible recovery for a streaming converter. atr_arena_try_alloc is the
 * exception, for a caller that can turn out-of-memory into an error (the
 * JSON parser, whose tree grows with untrusted input). */
#ifndef ATR_UTIL_ARENA_H
#define ATR_UTIL_ARENA_H

#include <stddef.h>

struct atr_arena_chunk;

struct atr_arena {
    struct atr_arena_chunk *head;
    size_t used;     /* bytes handed out since the last clear */
};

#define ATR_ARENA_INIT {0, 0}

void *atr_arena_alloc(struct atr_arena *a, size_t n);          /* 16-byte aligned */
void *atr_arena_try_alloc(struct atr_arena *a, size_t n);      /* NULL on out-of-memory */
void *atr_arena_calloc(struct atr_arena *a, size_t n, size_t size);
char *atr_arena_strndup(struct atr_arena *a, const char *s, size_t n); /* NUL-terminated */
char *atr_arena_strdup(struct atr_arena *a, const char *s);
char *atr_arena_printf(struct atr_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void atr_arena_clear(struct atr_arena *a);
void atr_arena_release(struct atr_arena *a);

#endif
