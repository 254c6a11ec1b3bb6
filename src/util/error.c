/* error.c - formatting of atr_error values. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

int atr_error_set(struct atr_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int atr_error_at(struct atr_error *err, const char *file, unsigned long line,
                 unsigned long col, const char *fmt, ...)
{
    if (!err)
        return -1;
    int n;
    if (line && col)
        n = snprintf(err->msg, sizeof err->msg, "%s:%lu:%lu: ", file, line, col);
    else if (line)
        n = snprintf(err->msg, sizeof err->msg, "%s:%lu: ", file, line);
    else
        n = snprintf(err->msg, sizeof err->msg, "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof err->msg)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}
