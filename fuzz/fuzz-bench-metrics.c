/* fuzz-bench-metrics.c - libFuzzer target for the benchmark console
 * scraper (bench/metrics.h): any bytes as a script's output (not
 * NUL-terminated), then the figures written as a result file's members. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_bench_metrics m;
    size_t n = atr_bench_metrics_parse(&m, (const char *)data, size);
    /* Whatever was kept is a figure: finite and >= 0. */
    const double *d[] = {&m.req_s, &m.out_tok_s, &m.total_tok_s, &m.duration_s,
                         &m.avg_latency_s, &m.ttft.mean, &m.tpot.p90, &m.itl.median,
                         &m.e2el.p99};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (!isnan(*d[i]) && (!isfinite(*d[i]) || *d[i] < 0))
            abort();
    if (n > 23)
        abort();
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_bench_metrics_write(&w, &m);
    atr_jw_object_end(&w);
    if (atr_jw_finish(&w) < 0)
        abort();
    atr_buf_release(&b);
    return 0;
}
