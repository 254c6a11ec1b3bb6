/* fmt-openhands.c - placeholder: the openhands reader is being written. */
#include "trace/reader.h"

static int sniff(const char *head, size_t len, const char *name) { return 0; }
static int next(struct atr_reader *r, struct atr_trace *t)
{
    return atr_reader_fail(r, 0, 0, "openhands reader not implemented yet");
}
const struct atr_format atr_format_openhands = {"openhands", "(not yet)", sniff, next, NULL};
