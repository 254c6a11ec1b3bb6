/* stats.c - engine figures summed over replicas, and their result member. */
#include "sim/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

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
            hist = xcalloc(s.batch_hist_len, sizeof *hist);
        }
        for (unsigned k = 0; k < s.batch_hist_len && k < out->batch_hist_len; k++)
            hist[k] += s.batch_hist[k];
        out->iterations += s.iterations;
        out->requests_added += s.requests_added;
        out->requests_finished += s.requests_finished;
        out->requests_rejected += s.requests_rejected;
        out->prompt_tokens += s.prompt_tokens;
        out->cached_tokens += s.cached_tokens;
        out->prefill_tokens += s.prefill_tokens;
        out->decode_tokens += s.decode_tokens;
        out->preemptions += s.preemptions;
        out->evictions += s.evictions;
        out->kv_pins += s.kv_pins;
        out->kv_pins_dropped += s.kv_pins_dropped;
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

void atr_sim_stats_write(struct atr_jw *w, const struct atr_profile *p, unsigned replicas,
                         const char *flavour, const struct atr_engine_stats *st)
{
    char profile[128];
    snprintf(profile, sizeof profile, "%s/%s", p->gpu->name, p->model->name);
    atr_jw_key(w, "engine");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "profile", profile);
    atr_jw_kv_uint(w, "tp", p->tp);
    atr_jw_kv_uint(w, "replicas", replicas);
    atr_jw_kv_str(w, "flavour", flavour);
    atr_jw_kv_uint(w, "iterations", st->iterations);
    atr_jw_kv_pyfloat(w, "mean_batch", st->batch_mean);
    atr_jw_kv_pyfloat(w, "prefix_cache_hit_rate", st->prefix_hit_rate);
    atr_jw_kv_uint(w, "kv_blocks_total", st->kv_blocks_total);
    atr_jw_kv_uint(w, "kv_blocks_peak", st->kv_blocks_peak);
    atr_jw_kv_pyfloat(w, "kv_blocks_mean", st->kv_blocks_mean);
    atr_jw_kv_uint(w, "preemptions", st->preemptions);
    atr_jw_kv_uint(w, "evictions", st->evictions);
    atr_jw_kv_uint(w, "prefill_tokens", st->prefill_tokens);
    atr_jw_kv_uint(w, "decode_tokens", st->decode_tokens);
    atr_jw_kv_pyfloat(w, "busy_s", st->busy_seconds);
    atr_jw_kv_uint(w, "skipped_oversized", st->requests_rejected);
    if (st->kv_pins) {           /* --kv-retain: only then, so other results stay as they were */
        atr_jw_kv_uint(w, "kv_pins", st->kv_pins);
        atr_jw_kv_uint(w, "kv_pins_dropped", st->kv_pins_dropped);
    }
    unsigned last = 0;              /* the histogram ends at its last non-zero bucket */
    for (unsigned i = 0; i < st->batch_hist_len; i++)
        if (st->batch_hist[i])
            last = i;
    atr_jw_key(w, "batch_histogram");
    atr_jw_array_begin(w);
    for (unsigned i = 0; i <= last && st->batch_hist_len; i++)
        atr_jw_uint(w, st->batch_hist[i]);
    atr_jw_array_end(w);
    atr_jw_object_end(w);
}
