/* fmt-mini-swe-agent.c - placeholder: the mini-swe-agent reader is being written. */
#include "trace/reader.h"

static int sniff(const char *head, size_t len, const char *name) { return 0; }
static int next(struct atr_reader *r, struct atr_trace *t)
{
    return atr_reader_fail(r, 0, 0, "mini-swe-agent reader not implemented yet");
}
const struct atr_format atr_format_mini_swe_agent = {"mini-swe-agent", "(not yet)", sniff, next, NULL};
