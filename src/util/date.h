/* date.h - calendar arithmetic without libc time zones, for timestamps read
 * from traces; the stamp results carry. */
#ifndef ATR_UTIL_DATE_H
#define ATR_UTIL_DATE_H

#include <stdint.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12). */
int64_t atr_days_from_civil(int64_t y, int64_t m, int64_t d);

/* "YYYYMMDD-HHMMSS" of now (UTC), as vLLM stamps results. */
void atr_date_stamp(char out[32]);

#endif
