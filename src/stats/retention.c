/* retention.c - the KV retention curve of a run's sessions (retention.h). */
#include "stats/retention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats/metrics.h"
#include "util/alloc.h"

/* Upper ends of the pause bins, seconds: a model's own gap between turns,
 * a quick tool call, a test run, a build, a long install, beyond. */
static const double bin_hi[ATR_RETENTION_BINS] = {0.1, 1, 5, 30, 120, 600, INFINITY};

static int by_session(const void *x, const void *y)
{
    const struct atr_llm_record *a = *(const struct atr_llm_record *const *)x;
    const struct atr_llm_record *b = *(const struct atr_llm_record *const *)y;
    int c = strcmp(a->trace_id ? a->trace_id : "", b->trace_id ? b->trace_id : "");
    return c ? c : (a->turn > b->turn) - (a->turn < b->turn);
}

static void count(struct atr_retention *out, const struct atr_llm_record *prev,
                  const struct atr_llm_record *now)
{
    if (!prev->success || !now->success || now->cached_tokens < 0) {
        out->unknown++;
        return;
    }
    double pause = atr_llm_sent_s(now) - prev->end_s;
    int64_t shareable = prev->prompt_tokens + prev->output_tokens;
    if (shareable > now->prompt_tokens)
        shareable = now->prompt_tokens;
    if (shareable <= 0)
        return;
    size_t k = 0;
    while (k + 1 < ATR_RETENTION_BINS && !(pause < bin_hi[k]))
        k++;
    struct atr_retention_bin *b = &out->bins[k];
    b->turns++;
    b->shareable += shareable;
    b->cached += now->cached_tokens < shareable ? now->cached_tokens : shareable;
    out->turns++;
}

void atr_retention_of(const struct atr_llm_record *r, size_t n, struct atr_retention *out)
{
    memset(out, 0, sizeof *out);
    for (size_t k = 0; k < ATR_RETENTION_BINS; k++) {
        out->bins[k].lo_s = k ? bin_hi[k - 1] : 0;
        out->bins[k].hi_s = bin_hi[k];
    }
    const struct atr_llm_record **v = xcalloc(n ? n : 1, sizeof *v);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].trace_id)
            v[m++] = &r[i];
    qsort(v, m, sizeof *v, by_session);
    for (size_t i = 1; i < m; i++)
        if (strcmp(v[i - 1]->trace_id, v[i]->trace_id) == 0 && v[i]->turn == v[i - 1]->turn + 1)
            count(out, v[i - 1], v[i]);
    free(v);
}

double atr_retention_reuse(const struct atr_retention_bin *b)
{
    return b->shareable > 0 ? (double)b->cached / (double)b->shareable : NAN;
}
