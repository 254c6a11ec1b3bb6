/* fuzz-bench-result.c - libFuzzer target for `atr bench report`'s result
 * reader: any bytes as a result file (one JSON object, then JSONL), then
 * every report writer over what was read. */
#include <stdint.h>

#include "bench/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_bench_set s = {0};
    struct atr_error err;
    atr_bench_read_text(&s, "0a1b2c3d_agent_x_result.json", (const char *)data, size, &err);
    atr_bench_read_text(&s, "runs.jsonl", (const char *)data, size, &err);
    struct atr_bench_report *r = atr_bench_report_new(5);
    atr_bench_report_add(r, "fuzz", &s);
    struct atr_buf b = ATR_BUF_INIT;
    atr_bench_report_markdown(&b, r);
    atr_buf_clear(&b);
    atr_bench_report_json(&b, r);
    atr_buf_clear(&b);
    atr_bench_report_csv(&b, r);
    atr_buf_release(&b);
    atr_bench_report_free(r);
    atr_bench_set_release(&s);
    return 0;
}
