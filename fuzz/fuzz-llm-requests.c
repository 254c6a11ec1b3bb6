/* fuzz-llm-requests.c - libFuzzer target for --requests-out lines as
 * `atr replay llm --merge` reads them (stats/requests.h): every line into
 * a record, the records summarized, and each record written back, which
 * must read again (the writer and the reader agree on every record the
 * reader accepts). Errors are fine; crashes, leaks and a written line
 * that does not read back are not. */
#include <stdint.h>
#include <stdlib.h>

#include "stats/requests.h"
#include "stats/result.h"

/* Writes r and reads the line back; aborts when the reader refuses it. */
static void round_trip(const struct atr_llm_record *r, struct atr_buf *b,
                       struct atr_arena *keep, struct atr_arena *scratch)
{
    struct atr_llm_record again;
    struct atr_error err;
    atr_buf_clear(b);
    atr_llm_write_request_line(b, r);
    atr_arena_clear(keep);
    if (b->len == 0 ||
        atr_llm_request_parse(&again, b->data, b->len - 1, keep, scratch, "fuzz", 1, &err) < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_input *in = atr_input_open_mem(data, size, "fuzz");
    struct atr_llm_requests rs = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    atr_llm_requests_read(&rs, in, &err);
    atr_input_close(in);
    struct atr_llm_bench_config cfg = {.date = "fuzz", .backend = "openai", .model_id = "m"};
    struct atr_llm_summary sum;
    if (rs.n > 0 && atr_llm_summarize(rs.recs, rs.n, &cfg, &sum, &err) == 0)
        atr_llm_summary_release(&sum);
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_arena keep = ATR_ARENA_INIT, scratch = ATR_ARENA_INIT;
    for (size_t i = 0; i < rs.n; i++)
        round_trip(&rs.recs[i], &b, &keep, &scratch);
    atr_buf_release(&b);
    atr_arena_release(&keep);
    atr_arena_release(&scratch);
    atr_llm_requests_release(&rs);
    return 0;
}
