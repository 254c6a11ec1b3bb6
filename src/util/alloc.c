/* alloc.c - allocation that aborts on out-of-memory (alloc.h). */
#include "util/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *must(void *p)
{
    if (!p)
        abort();
    return p;
}

void *xmalloc(size_t size)
{
    return must(malloc(size ? size : 1));
}

void *xcalloc(size_t n, size_t size)
{
    return must(calloc(n ? n : 1, size ? size : 1));
}

void *xrealloc(void *p, size_t size)
{
    return must(realloc(p, size ? size : 1));
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        abort();
    return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
    return must(strdup(s));
}

char *xstrndup(const char *s, size_t n)
{
    return must(strndup(s, n));
}

char *xasprintf(const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    return s;
}
