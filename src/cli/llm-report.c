/* llm-report.c - result JSON, per-request lines and the result block of an
 * LLM run (see llm-report.h). */
#include "cli/llm-report.h"

#include "cli/cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "util/output.h"

void llm_report_init(struct llm_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->slo_ttft_ms = o->slo_tpot_ms = o->slo_e2el_ms = -1;
}

bool llm_report_parse_goodput(struct llm_report_opts *o, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    bool ok = copy != NULL;
    for (char *tok = copy ? strtok_r(copy, ", ", &save) : NULL; tok && ok;
         tok = strtok_r(NULL, ", ", &save)) {
        char *colon = strchr(tok, ':'), *end;
        if (!colon) {
            ok = false;
            break;
        }
        *colon = 0;
        double v = strtod(colon + 1, &end);
        if (end == colon + 1 || *end || !(v > 0))
            ok = false;
        else if (strcmp(tok, "ttft") == 0)
            o->slo_ttft_ms = v;
        else if (strcmp(tok, "tpot") == 0)
            o->slo_tpot_ms = v;
        else if (strcmp(tok, "e2el") == 0)
            o->slo_e2el_ms = v;
        else
            ok = false;
    }
    free(copy);
    return ok;
}

/* "ttft:500" and the like: a key, a colon, a number. */
static bool is_slo_word(const char *s)
{
    const char *colon = strchr(s, ':');
    char *end;
    if (!colon || colon == s || strchr(s, '/'))
        return false;
    strtod(colon + 1, &end);
    return end != colon + 1 && *end == 0;
}

bool llm_report_goodput_opt(struct llm_report_opts *o, int argc, char **argv)
{
    if (!llm_report_parse_goodput(o, optarg))
        return false;
    while (optind < argc && is_slo_word(argv[optind]))
        if (!llm_report_parse_goodput(o, argv[optind++]))
            return false;
    return true;
}

/* FILE with ".NAME" before its extension (r.json -> r.naive.json), when
 * several policies share one --save-result / --requests-out. */
char *llm_report_policy_path(const char *path, const char *name)
{
    if (!path)
        return NULL;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash))
        dot = path + strlen(path);
    char *out;
    if (asprintf(&out, "%.*s.%s%s", (int)(dot - path), path, name, dot) < 0)
        abort();
    return out;
}

int llm_policy_list_parse(struct llm_policy_list *l, const char *arg, const char *cmd)
{
    llm_policy_list_release(l);
    l->arg = arg;
    if (!(l->buf = strdup(arg)))
        abort();
    char *save = NULL;
    for (char *tok = strtok_r(l->buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (l->n == LLM_MAX_POLICIES)
            return cli_usage(cmd, "--policy takes at most %d policies", LLM_MAX_POLICIES);
        l->names[l->n++] = tok;
    }
    return l->n ? EXIT_OK : cli_usage(cmd, "empty --policy");
}

void llm_policy_list_release(struct llm_policy_list *l)
{
    free(l->buf);
    memset(l, 0, sizeof *l);
}

void llm_report_date(char out[32])
{
    time_t now = time(NULL);
    struct tm tm;
    strftime(out, 32, "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
}

int llm_report_write(const struct llm_report_opts *o, const struct atr_llm_record *r, size_t n,
                     struct atr_llm_bench_config *cfg, struct atr_error *err)
{
    cfg->slo_ttft_ms = o->slo_ttft_ms;
    cfg->slo_tpot_ms = o->slo_tpot_ms;
    cfg->slo_e2el_ms = o->slo_e2el_ms;
    struct atr_llm_summary sum;
    if (atr_llm_summarize(r, n, cfg, &sum, err) < 0)
        return -1;
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (o->save_result || o->result_json) {
        atr_llm_write_result_json(&b, &sum, cfg);
        atr_buf_putc(&b, '\n');
        if (o->result_json)
            atr_buf_append(o->result_json, b.data, b.len);
        if (o->save_result)
            rc = atr_output_write_file(o->save_result, b.data, b.len, err);
    }
    if (rc == 0 && o->requests_out) {
        atr_buf_clear(&b);
        for (size_t i = 0; i < n; i++)
            atr_llm_write_request_line(&b, &r[i]);
        rc = atr_output_write_file(o->requests_out, b.data, b.len, err);
    }
    if (rc == 0 && !o->quiet) {
        atr_buf_clear(&b);
        atr_llm_write_block(&b, &sum, cfg);
        fputs(b.data ? b.data : "", stdout);
    }
    atr_llm_summary_release(&sum);
    atr_buf_release(&b);
    return rc;
}
