/* writer.h - serialise traces as atr-trace v1 NDJSON (docs/trace-format.md). */
#ifndef ATR_TRACE_WRITER_H
#define ATR_TRACE_WRITER_H

#include <stdbool.h>

#include "trace/trace.h"
#include "util/buf.h"

struct atr_write_opts {
    bool expand;           /* full hash_ids lists instead of "prefix" references */
    bool redact_commands;  /* drop "command", keep "command_head" */
};

/* Appends t as one line (with its final "\n") to out, which must have no
 * cap (max 0). Returns 0. */
int atr_trace_write(struct atr_buf *out, const struct atr_trace *t,
                    const struct atr_write_opts *opts);

#endif
