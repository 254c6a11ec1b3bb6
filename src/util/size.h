/* size.h - sizes written like "256M", "20G", "1000T" (options and specs). */
#ifndef ATR_UTIL_SIZE_H
#define ATR_UTIL_SIZE_H

#include <stdbool.h>
#include <stddef.h>

/* Parses a byte count with an optional K, M, G or T suffix (powers of 1024,
 * either case, an optional trailing B) into *out; false on junk, a sign or
 * a value that does not fit. */
bool atr_parse_size(const char *s, size_t *out);

#endif
