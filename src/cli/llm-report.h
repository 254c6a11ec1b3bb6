/* llm-report.h - the options of the outputs `atr sim run` and `atr replay
 * llm` share (--save-result, --requests-out, --goodput, --percentiles,
 * --quiet; an option group), the --policy list, and the warning about
 * prompt lengths. */
#ifndef ATR_CLI_LLM_REPORT_H
#define ATR_CLI_LLM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/opts.h"
#include "exp/series.h"
#include "stats/metrics.h"

struct llm_report_opts {
    const char *save_result;     /* --save-result FILE or NULL */
    const char *requests_out;    /* --requests-out FILE or NULL */
    bool quiet;                  /* no block on stdout */
    double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;   /* --goodput; < 0: unset */
    double slo_session_ms;                          /* --goodput session:MS; <= 0: unset */
    double percentiles[ATR_LLM_MAX_PCT];            /* --percentiles */
    size_t n_percentiles;                           /* 0: unset (the defaults) */
};

void llm_report_init(struct llm_report_opts *o);
/* Parses "--goodput ttft:MS tpot:MS e2el:MS" (one or more words, also
 * comma-separated in one argument); false on junk. */
bool llm_report_parse_goodput(struct llm_report_opts *o, const char *arg);

/* Parses "--percentiles 50,90,99.9": up to ATR_LLM_MAX_PCT distinct numbers
 * in [0, 100], comma-separated; false on junk (o keeps what it held). */
bool llm_report_parse_percentiles(struct llm_report_opts *o, const char *arg);

/* --save-result, --requests-out, --goodput (with vLLM's following
 * KEY:NUMBER words), --percentiles (or vLLM's --metric-percentiles) and
 * -q/--quiet, filling a struct llm_report_opts:
 * OPT_INCLUDE(struct my_args, report, llm_report_opts_group). */
extern const struct opt llm_report_opts_group[];

/* --policy a,b,c, shared by sim run and replay llm. */
#define LLM_MAX_POLICIES ATR_SERIES_MAX_POLICIES

struct llm_policy_list {
    const char *arg;                     /* as given (borrowed from argv) */
    const char *names[LLM_MAX_POLICIES]; /* point into buf */
    size_t n;
    char *buf;                           /* owned copy, split in place */
};

/* Splits arg into l (replacing what l held); EXIT_OK or a usage error of
 * cmd for an empty list or more than LLM_MAX_POLICIES names. Names are
 * checked when the policies are made (atr_policy_new). */
int llm_policy_list_parse(struct llm_policy_list *l, const char *arg, const char *cmd);
void llm_policy_list_release(struct llm_policy_list *l);

/* "atr: warning: ..." on stderr when some prompts' server token counts were
 * more than 1 % off the intended length (stats/metrics.h); else nothing. */
void llm_report_warn_prompts(const struct atr_llm_summary *s);

#endif
