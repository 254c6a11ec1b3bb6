/* fuzz-sessions.c - libFuzzer target for `atr convert --sessions`: any
 * bytes read as atr traces (a proxy journal), each added to the session
 * fold, then every session built and written. Errors are fine; crashes
 * and leaks are not. */
#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"
#include "trace/sessions.h"
#include "trace/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_input *in = atr_input_open_mem(data, size, "fuzz");
    struct atr_read_opts opts = {.max_line = 1 << 20, .keep_content = size & 1};
    struct atr_error err;
    struct atr_reader *r = atr_reader_open_input(in, "atr", &opts, &err);
    if (!r)
        return 0;
    struct atr_sessions *s = atr_sessions_new();
    struct atr_trace t = ATR_TRACE_INIT;
    for (int n = 0; n < 1000 && atr_reader_next(r, &t, &err) == 1; n++)
        atr_sessions_add(s, &t, &err);
    atr_reader_close(r);
    struct atr_buf out = ATR_BUF_INIT;
    struct atr_write_opts wo = {0};
    for (size_t k = 0; k < atr_sessions_count(s); k++) {
        atr_sessions_build(s, k, size & 1, &t);
        atr_buf_clear(&out);
        atr_trace_write(&out, &t, &wo);
    }
    atr_buf_release(&out);
    atr_trace_release(&t);
    atr_sessions_free(s);
    return 0;
}
