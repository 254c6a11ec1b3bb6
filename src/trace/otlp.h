/* otlp.h - write traces as OpenTelemetry OTLP/JSON GenAI spans
 * (docs/otel.md): what a collector's otlpjsonfile receiver, Jaeger or
 * Phoenix reads, and what atr's own otlp reader turns back into the trace.
 * Reading is the "otlp" format of reader.h (src/trace/fmt/otlp.c). */
#ifndef ATR_TRACE_OTLP_H
#define ATR_TRACE_OTLP_H

#include "trace/trace.h"
#include "util/buf.h"

/* The Unix time, in ns, that a workload's time 0 is written as by
 * `atr convert --to otlp` (2024-01-01T00:00:00Z): viewers show dates, and
 * 1970 reads as a bug. Traces whose start_ms is Unix time already (atr
 * proxy's records) are written with epoch 0. */
#define ATR_OTLP_EPOCH_NS (UINT64_C(1704067200) * 1000000000)

/* Appends t to out (no cap) as one export document on one line, with its
 * final "\n": {"resourceSpans":[{"resource":..., "scopeSpans":[{"scope":
 * ..., "spans":[...]}]}]}. An invoke_agent span per agent (the main one
 * the root; left out for a trace of one step that names no agent, whose
 * step span is then the root), a chat span per llm step and an
 * execute_tool span per tool step, counts and timings only: no message,
 * command or other content. epoch_ns: the Unix time of start_ms 0.
 * Returns 0. */
int atr_trace_write_otlp(struct atr_buf *out, const struct atr_trace *t, uint64_t epoch_ns);

#endif
