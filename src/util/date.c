/* date.c - calendar arithmetic without libc time zones. */
#include "util/date.h"

#include <time.h>

/* H. Hinnant's days_from_civil: years counted from March, so the leap day
 * is the last of its year, in 400-year eras. */
int64_t atr_days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void atr_date_stamp(char out[32])
{
    time_t now = time(NULL);
    struct tm tm;
    strftime(out, 32, "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
}
