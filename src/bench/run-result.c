/* run-result.c - `atr bench run`'s result file: ISO-Bench's fields, then
 * atr's, written atomically. */
#include "bench/run-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "json/writer.h"
#include "util/output.h"

static void write_timestamp(struct atr_jw *w)
{
    time_t now = time(NULL);
    struct tm tm;
    char ts[32];
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    atr_jw_kv_str(w, "timestamp", ts);
}

static void kv_num(struct atr_jw *w, const char *key, double v, int digits)
{
    atr_jw_key(w, key);
    if (isfinite(v) && v > 0)
        atr_jw_fixed(w, v, digits);
    else
        atr_jw_null(w);
}

static void write_timing(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "timing");
    atr_jw_object_begin(w);
    kv_num(w, "prepare_s", r->prepare_s, 3);
    kv_num(w, "startup_s", r->startup_s, 6);
    kv_num(w, "ready_unix_s", r->ready_unix, 6);
    kv_num(w, "benchmark_s", r->benchmark_s, 3);
    kv_num(w, "term_unix_s", r->term_unix, 6);
    kv_num(w, "teardown_s", r->teardown_s, 6);
    kv_num(w, "port_free_unix_s", r->port_free_unix, 6);
    atr_jw_object_end(w);
}

static void write_server_exit(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "server_exit");
    if (!r->proc.reaped) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "phase", r->exit_phase ? r->exit_phase : "stopped");
    atr_jw_key(w, "status");
    if (r->exit.term_signal)
        atr_jw_null(w);
    else
        atr_jw_int(w, r->exit.exit_code);
    atr_jw_key(w, "signal");
    if (r->exit.term_signal)
        atr_jw_int(w, r->exit.term_signal);
    else
        atr_jw_null(w);
    atr_jw_key(w, "killed");
    atr_jw_bool(w, r->killed);
    atr_jw_key(w, "oom_kills");
    atr_jw_int(w, r->oom_kills < 0 ? 0 : r->oom_kills);
    atr_jw_key(w, "memory_peak_bytes");
    if (r->mem_peak >= 0)
        atr_jw_int(w, r->mem_peak);
    else
        atr_jw_null(w);
    atr_jw_object_end(w);
}

static void write_override(struct atr_jw *w, const struct run *r)
{
    atr_jw_key(w, "model_override");
    if (!r->ov) {
        atr_jw_null(w);
        return;
    }
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "from", r->ov->from);
    atr_jw_kv_str(w, "to", r->ov->to);
    atr_jw_kv_str(w, "reason", r->ov->reason);
    atr_jw_object_end(w);
}

static const char *status_of(enum atr_bench_outcome o)
{
    return o == ATR_BENCH_SUCCESS ? "success"
           : o == ATR_BENCH_STARTUP_TIMEOUT || o == ATR_BENCH_BENCHMARK_TIMEOUT
                   || o == ATR_BENCH_PREPARE_TIMEOUT ? "timeout"
                                                                                : "error";
}

/* ISO-Bench's fields first, in its order, then atr's. */
static void write_result_fields(struct atr_jw *w, const struct run *r)
{
    const struct atr_bench_item *it = r->it;
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "human_commit", it->human_commit);
    atr_jw_kv_str(w, "human_commit_full", it->human_commit_full);
    atr_jw_kv_str(w, "parent_commit", it->parent_commit);
    atr_jw_kv_str(w, "model", r->vars.model);
    atr_jw_kv_str(w, "status", status_of(r->outcome));
    atr_jw_kv_str(w, "error", r->outcome == ATR_BENCH_SUCCESS ? NULL : r->error);
    atr_jw_key(w, "duration_s");
    atr_jw_fixed(w, mono_s() - r->t0, 3);
    atr_jw_key(w, "metrics");
    atr_jw_object_begin(w);
    if (r->outcome == ATR_BENCH_SUCCESS || r->outcome == ATR_BENCH_BENCHMARK_TIMEOUT)
        atr_bench_metrics_write(w, &r->m);
    atr_jw_object_end(w);
    atr_jw_kv_strn(w, "raw_output", r->raw.data ? r->raw.data : "", r->raw.len);
    write_timestamp(w);
    atr_jw_kv_str(w, "outcome", atr_bench_outcome_name(r->outcome));
    atr_jw_kv_str(w, "variant", r->var->name);
    atr_jw_kv_str(w, "agent", r->agent ? r->agent->name : NULL);
    atr_jw_kv_str(w, "patch", r->agent ? r->agent->patch : NULL);
    atr_jw_kv_uint(w, "repeat", r->repeat);
    atr_jw_kv_uint(w, "repeats", r->rn->repeats);
    write_override(w, r);
    atr_jw_kv_str(w, "server_command", r->server_cmd);
    if (r->image)                    /* only image variants: older results stay as they were */
        atr_jw_kv_str(w, "image", r->image);
    write_server_exit(w, r);
    atr_jw_kv_str(w, "contained_by", r->rn->use_cg ? "cgroup" : "process group");
    atr_jw_kv_str(w, "warning", *r->rn->st->warning ? r->rn->st->warning : NULL);
    atr_jw_kv_str(w, "benchmark", r->bench_summary);
    write_timing(w, r);
    char *tail = run_log_tail(r, LOG_TAIL_BYTES, LOG_TAIL_LINES);
    atr_jw_kv_str(w, "server_log", r->log_path);
    atr_jw_kv_str(w, "server_log_tail", tail);
    free(tail);
    atr_jw_kv_str(w, "atr_version", ATR_VERSION);
    atr_jw_kv_str(w, "spec_hash", r->rn->s->hash);
    atr_jw_object_end(w);
    atr_jw_newline(w);
}

int run_write_result(struct run *r)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_PYTHON);
    write_result_fields(&w, r);
    int rc = atr_jw_finish(&w) < 0
                 ? atr_error_set(r->rn->err, "%s: result too large", r->result_path)
                 : atr_output_write_file(r->result_path, b.data, b.len, r->rn->err);
    atr_buf_release(&b);
    return rc;
}
