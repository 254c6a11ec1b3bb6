/* merge.c - the request lines of a run's shards summarized as one run
 * (see merge.h); the lines are read by stats/requests.h. */
#include "stats/merge.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats/result.h"
#include "util/date.h"
#include "util/output.h"

/* What the merged result echoes: the shards' settings as given. */
static void bench_config(const struct atr_llm_merge_cfg *c, struct atr_llm_merged *m)
{
    const struct atr_schedule *sc = c->schedule;
    bool multi_turn = false;     /* sessions of several turns have no request rate */
    for (size_t i = 0; i < m->reqs.n && !multi_turn; i++)
        multi_turn = m->reqs.recs[i].turn > 0;
    m->bc = (struct atr_llm_bench_config){
        .date = m->date, .backend = "openai", .model_id = c->model ? c->model : "merged",
        .num_prompts = (int64_t)m->reqs.n,
        .request_rate = multi_turn ? NAN : atr_schedule_rate(sc),
        .schedule = atr_schedule_kind_name(sc->kind), .session_rate = atr_schedule_rate(sc),
        .time_scale = sc->time_scale,
        .burstiness = sc->burstiness, .max_concurrency = c->max_concurrency,
        .slo_ttft_ms = c->slo_ttft_ms, .slo_tpot_ms = c->slo_tpot_ms,
        .slo_e2el_ms = c->slo_e2el_ms, .slo_session_ms = c->slo_session_ms,
        .n_percentiles = c->n_percentiles < ATR_LLM_MAX_PCT ? c->n_percentiles : ATR_LLM_MAX_PCT,
    };
    if (m->bc.n_percentiles)
        memcpy(m->bc.percentiles, c->percentiles, m->bc.n_percentiles * sizeof *c->percentiles);
}

/* The result object and every request line into their files. */
static int write_files(const struct atr_llm_merge_cfg *c, const struct atr_llm_merged *m,
                       struct atr_error *err)
{
    struct atr_output *files[2] = { NULL, NULL };
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (c->save_result && !(files[0] = atr_output_open(c->save_result, err)))
        rc = -1;
    if (rc == 0 && files[0]) {
        atr_llm_write_result_json(&b, &m->sum, &m->bc);
        atr_buf_putc(&b, '\n');
        rc = atr_output_write(files[0], b.data, b.len, err);
    }
    if (rc == 0 && c->requests_out && !(files[1] = atr_output_open(c->requests_out, err)))
        rc = -1;
    for (size_t i = 0; rc == 0 && files[1] && i < m->reqs.n; i++) {
        atr_buf_clear(&b);
        atr_llm_write_request_line(&b, &m->reqs.recs[i]);
        rc = atr_output_write(files[1], b.data, b.len, err);
    }
    if (rc == 0)
        rc = atr_output_commit_all(files, 2, err);
    else
        for (size_t i = 0; i < 2; i++)
            atr_output_abort(files[i]);
    atr_buf_release(&b);
    return rc;
}

int atr_llm_merge(const struct atr_llm_merge_cfg *cfg, char *const *paths, size_t n,
                  struct atr_llm_merged *out, struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    out->reqs = (struct atr_llm_requests)ATR_LLM_REQUESTS_INIT;
    if (cfg->date)
        snprintf(out->date, sizeof out->date, "%s", cfg->date);
    else
        atr_date_stamp(out->date);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = atr_llm_requests_read_path(&out->reqs, paths[i], err);
    if (rc == 0 && out->reqs.n == 0)
        rc = atr_error_set(err, "no request lines in the files given");
    if (rc == 0) {
        bench_config(cfg, out);
        rc = atr_llm_summarize(out->reqs.recs, out->reqs.n, &out->bc, &out->sum, err);
        if (rc == 0 && write_files(cfg, out, err) < 0) {
            atr_llm_summary_release(&out->sum);
            rc = -1;
        }
    }
    if (rc < 0)
        atr_llm_requests_release(&out->reqs);
    return rc;
}

void atr_llm_merged_release(struct atr_llm_merged *m)
{
    atr_llm_summary_release(&m->sum);
    atr_llm_requests_release(&m->reqs);
}
