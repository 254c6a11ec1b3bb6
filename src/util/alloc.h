/* alloc.h - the one allocator atr uses: malloc and friends that never
 * return NULL. atr does not recover from out-of-memory (neither does the
 * arena): a failed allocation aborts at once, where it happened, so callers
 * never test the result. As git's xmalloc.
 *
 * Memory: every pointer returned is the caller's, released with free(). */
#ifndef ATR_UTIL_ALLOC_H
#define ATR_UTIL_ALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);                       /* size 0 allocates 1 byte */
void *xcalloc(size_t n, size_t size);             /* zeroed; n or size 0: 1 byte */
void *xrealloc(void *p, size_t size);             /* size 0 keeps 1 byte, never frees */
void *xreallocarray(void *p, size_t n, size_t size);   /* overflow of n * size aborts */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* asprintf that aborts on failure; returns the new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
