/* fuzz-metrics.c - libFuzzer target for metrics.jsonl lines as
 * `atr replay tools --merge` reads them: each line into the summary, then
 * the summary written out. */
#include <stdint.h>
#include <string.h>

#include "runner/summary.h"
#include "util/arena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_replay_summary *s = atr_replay_summary_new();
    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_replay_step step;
    struct atr_error err;
    const char *p = (const char *)data, *end = p + size;
    unsigned long line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        atr_arena_clear(&arena);
        if (atr_replay_step_parse(&step, p, len, &arena, "fuzz", ++line, &err) < 0 ||
            atr_replay_summary_add(s, &step, "fuzz", line, &err) < 0)
            break;
        p += len + (nl != NULL);
    }
    struct atr_buf b = ATR_BUF_INIT;
    atr_replay_summary_json(s, "fuzz", false, &b);
    atr_buf_release(&b);
    atr_replay_summary_free(s);
    atr_arena_release(&arena);
    return 0;
}
