/* stats.c - engine figures summed over replicas, and their JSON. */
#include "sim/stats.h"

#include <stdlib.h>
#include <string.h>

#include "stats/metrics.h"

void atr_sim_stats_sum(struct atr_engine *const *engines, unsigned n,
                       struct atr_engine_stats *out)
{
    memset(out, 0, sizeof *out);
    uint64_t *hist = NULL;
    double batch_w = 0, kv_w = 0;
    for (unsigned i = 0; i < n; i++) {
        struct atr_engine_stats s;
        atr_engine_get_stats(engines[i], &s);
        if (!hist) {
            out->batch_hist_len = s.batch_hist_len;
            if (!(hist = calloc(s.batch_hist_len ? s.batch_hist_len : 1, sizeof *hist)))
                abort();
        }
        for (unsigned k = 0; k < s.batch_hist_len && k < out->batch_hist_len; k++)
            hist[k] += s.batch_hist[k];
        out->iterations += s.iterations;
        out->requests_added += s.requests_added;
        out->requests_finished += s.requests_finished;
        out->prompt_tokens += s.prompt_tokens;
        out->cached_tokens += s.cached_tokens;
        out->prefill_tokens += s.prefill_tokens;
        out->decode_tokens += s.decode_tokens;
        out->preemptions += s.preemptions;
        out->evictions += s.evictions;
        out->kv_blocks_total += s.kv_blocks_total;
        if (s.kv_blocks_peak > out->kv_blocks_peak)
            out->kv_blocks_peak = s.kv_blocks_peak;
        out->busy_seconds += s.busy_seconds;
        batch_w += s.batch_mean * (double)s.iterations;
        kv_w += s.kv_blocks_mean * s.busy_seconds;
    }
    out->prefix_hit_rate = out->prompt_tokens
                               ? (double)out->cached_tokens / (double)out->prompt_tokens : 0;
    out->batch_mean = out->iterations ? batch_w / (double)out->iterations : 0;
    out->kv_blocks_mean = out->busy_seconds > 0 ? kv_w / out->busy_seconds : 0;
    out->batch_hist = hist;
}

void atr_sim_stats_release(struct atr_engine_stats *s)
{
    free((void *)s->batch_hist);
    s->batch_hist = NULL;
}

int atr_sim_stats_json(struct atr_buf *b, const struct atr_profile *p, unsigned replicas,
                       const char *flavour, const struct atr_engine_stats *st)
{
    int rc = atr_buf_printf(b, "\"engine\": {\"profile\": \"%s/%s\", \"tp\": %u, "
                            "\"replicas\": %u, \"flavour\": \"%s\", \"iterations\": %llu, "
                            "\"mean_batch\": ", p->gpu->name, p->model->name, p->tp, replicas,
                            flavour, (unsigned long long)st->iterations);
    rc |= atr_llm_put_pyfloat(b, st->batch_mean);
    rc |= atr_buf_puts(b, ", \"prefix_cache_hit_rate\": ");
    rc |= atr_llm_put_pyfloat(b, st->prefix_hit_rate);
    rc |= atr_buf_printf(b, ", \"kv_blocks_total\": %u, \"kv_blocks_peak\": %u, "
                         "\"kv_blocks_mean\": ", st->kv_blocks_total, st->kv_blocks_peak);
    rc |= atr_llm_put_pyfloat(b, st->kv_blocks_mean);
    rc |= atr_buf_printf(b, ", \"preemptions\": %llu, \"evictions\": %llu, "
                         "\"prefill_tokens\": %llu, \"decode_tokens\": %llu, \"busy_s\": ",
                         (unsigned long long)st->preemptions, (unsigned long long)st->evictions,
                         (unsigned long long)st->prefill_tokens,
                         (unsigned long long)st->decode_tokens);
    rc |= atr_llm_put_pyfloat(b, st->busy_seconds);
    unsigned last = 0;
    for (unsigned i = 0; i < st->batch_hist_len; i++)
        if (st->batch_hist[i])
            last = i;
    rc |= atr_buf_puts(b, ", \"batch_histogram\": [");
    for (unsigned i = 0; i <= last && st->batch_hist_len; i++)
        rc |= atr_buf_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)st->batch_hist[i]);
    rc |= atr_buf_puts(b, "]}");
    return rc ? -1 : 0;
}
