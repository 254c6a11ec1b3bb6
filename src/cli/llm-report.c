/* llm-report.c - result JSON, per-request lines and the result block of an
 * LLM run (see llm-report.h). */
#include "cli/llm-report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "util/alloc.h"
#include "util/output.h"

void llm_report_init(struct llm_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->slo_ttft_ms = o->slo_tpot_ms = o->slo_e2el_ms = -1;
}

bool llm_report_parse_goodput(struct llm_report_opts *o, const char *arg)
{
    char *copy = xstrdup(arg), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(copy, ", ", &save); tok && ok;
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
        else if (strcmp(tok, "session") == 0)
            o->slo_session_ms = v;
        else
            ok = false;
    }
    free(copy);
    return ok;
}

/* One percentile: a number in [0, 100], not one already listed. */
static bool add_percentile(struct llm_report_opts *o, const char *word)
{
    char *end;
    double p = strtod(word, &end);
    if (end == word || *end || !(p >= 0 && p <= 100) || o->n_percentiles == ATR_LLM_MAX_PCT)
        return false;
    for (size_t i = 0; i < o->n_percentiles; i++)
        if (o->percentiles[i] == p)
            return false;     /* two equal keys in one JSON object */
    o->percentiles[o->n_percentiles++] = p;
    return true;
}

bool llm_report_parse_percentiles(struct llm_report_opts *o, const char *arg)
{
    struct llm_report_opts t = *o;
    char *copy = xstrdup(arg), *save = NULL;
    bool ok = true;
    t.n_percentiles = 0;      /* a repeated option replaces the list */
    for (char *tok = strtok_r(copy, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save))
        ok = add_percentile(&t, tok);
    /* strtok_r skips empty words: "50,,90" and "50," are typos, not lists */
    size_t len = strlen(arg);
    ok = ok && t.n_percentiles && arg[0] != ',' && arg[len - 1] != ',' && !strstr(arg, ",,");
    if (ok)
        *o = t;
    free(copy);
    return ok;
}

static bool parse_percentiles(void *base, const char *arg, const char *cmd)
{
    (void)cmd;
    return llm_report_parse_percentiles(base, arg);
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

static bool parse_goodput(void *base, const char *arg, const char *cmd)
{
    return llm_report_parse_goodput(base, arg);
}

#define PCT_ERR(NAME) \
    "--" NAME " wants up to 8 distinct numbers 0..100, comma-separated " \
    "(e.g. 50,90,99,99.9), not '%s'"
_Static_assert(ATR_LLM_MAX_PCT == 8, "PCT_ERR names the limit");

/* vLLM's `--goodput ttft:500 tpot:50` takes every following KEY:NUMBER;
 * --metric-percentiles is vLLM's name of --percentiles. */
#define ARGS struct llm_report_opts
const struct opt llm_report_opts_group[] = {
    OPT_STRING(ARGS, save_result, "save-result", 0),
    OPT_STRING(ARGS, requests_out, "requests-out", 0),
    OPT_CALL_WORDS("goodput", 0, parse_goodput, is_slo_word,
                   "--goodput wants ttft:MS tpot:MS e2el:MS session:MS"),
    OPT_CALL("percentiles", 0, parse_percentiles, PCT_ERR("percentiles")),
    OPT_CALL("metric-percentiles", 0, parse_percentiles, PCT_ERR("metric-percentiles")),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS

int llm_policy_list_parse(struct llm_policy_list *l, const char *arg, const char *cmd)
{
    llm_policy_list_release(l);
    l->arg = arg;
    l->buf = xstrdup(arg);
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

/* Prompts the server counted otherwise than atr built them: replayed
 * lengths are not the recorded ones (a tokenizer that splits atr's words). */
void llm_report_warn_prompts(const struct atr_llm_summary *s)
{
    if (!s->prompt_mismatch)
        return;
    char msg[200];
    snprintf(msg, sizeof msg, "warning: %lld of %lld prompts differ from their intended "
             "length by more than 1%% (up to %.1f%%) in the server's prompt_tokens",
             (long long)s->prompt_mismatch, (long long)s->prompt_checked,
             s->prompt_max_rel_error * 100);
    cli_warn(msg);
}
