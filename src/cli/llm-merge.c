/* llm-merge.c - the request lines of a run's shards summarized as one run
 * (see llm-merge.h); the lines are read by stats/requests.h. */
#include "cli/llm-merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "stats/requests.h"
#include "stats/result.h"
#include "util/output.h"

/* The summary of all records, printed and written (each file all or none). */
static int report(const struct llm_merge *mo, const struct atr_llm_requests *m,
                  struct atr_error *err)
{
    const struct llm_report_opts *o = mo->report;
    char date[32];
    llm_report_date(date);
    const struct atr_schedule *sc = mo->schedule;
    bool multi_turn = false;     /* sessions of several turns have no request rate */
    for (size_t i = 0; i < m->n && !multi_turn; i++)
        multi_turn = m->recs[i].turn > 0;
    struct atr_llm_bench_config bc = {
        .date = date, .backend = "openai", .model_id = mo->model ? mo->model : "merged",
        .num_prompts = (int64_t)m->n,
        .request_rate = multi_turn ? NAN : atr_schedule_rate(sc),
        .schedule = atr_schedule_kind_name(sc->kind), .session_rate = atr_schedule_rate(sc),
        .time_scale = sc->time_scale,
        .burstiness = sc->burstiness, .max_concurrency = mo->max_concurrency,
        .slo_ttft_ms = o->slo_ttft_ms, .slo_tpot_ms = o->slo_tpot_ms,
        .slo_e2el_ms = o->slo_e2el_ms, .n_percentiles = o->n_percentiles,
    };
    memcpy(bc.percentiles, o->percentiles, sizeof bc.percentiles);
    struct atr_llm_summary sum;
    if (atr_llm_summarize(m->recs, m->n, &bc, &sum, err) < 0)
        return -1;
    struct atr_output *files[2] = { NULL, NULL };
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (o->save_result && !(files[0] = atr_output_open(o->save_result, err)))
        rc = -1;
    if (rc == 0 && files[0]) {
        atr_llm_write_result_json(&b, &sum, &bc);
        atr_buf_putc(&b, '\n');
        rc = atr_output_write(files[0], b.data, b.len, err);
    }
    if (rc == 0 && o->requests_out && !(files[1] = atr_output_open(o->requests_out, err)))
        rc = -1;
    for (size_t i = 0; rc == 0 && files[1] && i < m->n; i++) {
        atr_buf_clear(&b);
        atr_llm_write_request_line(&b, &m->recs[i]);
        rc = atr_output_write(files[1], b.data, b.len, err);
    }
    if (rc == 0)
        rc = atr_output_commit_all(files, 2, err);
    else
        for (size_t i = 0; i < 2; i++)
            atr_output_abort(files[i]);
    if (rc == 0 && !o->quiet) {
        atr_buf_clear(&b);
        atr_llm_write_block(&b, &sum, &bc);
        fputs(b.data ? b.data : "", stdout);
    }
    if (rc == 0)
        llm_report_warn_prompts(&sum);
    atr_buf_release(&b);
    atr_llm_summary_release(&sum);
    return rc;
}

int llm_merge(const struct llm_merge *mo, char *const *paths, size_t n)
{
    struct atr_llm_requests m = ATR_LLM_REQUESTS_INIT;
    struct atr_error err;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = atr_llm_requests_read_path(&m, paths[i], &err);
    if (rc == 0 && m.n == 0)
        rc = atr_error_set(&err, "no request lines in the files given");
    if (rc == 0)
        rc = report(mo, &m, &err);
    atr_llm_requests_release(&m);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}
