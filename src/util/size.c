/* size.c - byte counts with K/M/G/T suffixes (see size.h). */
#include "util/size.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

bool atr_parse_size(const char *s, size_t *out)
{
    if (!s || !*s || *s == '-')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)(v << shift);
    return true;
}
