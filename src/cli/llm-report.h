/* llm-report.h - the outputs `atr sim run` and `atr replay llm` share: the
 * --save-result JSON, --requests-out lines, and the printed result block,
 * plus the --goodput option. */
#ifndef ATR_CLI_LLM_REPORT_H
#define ATR_CLI_LLM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "stats/metrics.h"

struct llm_report_opts {
    const char *save_result;     /* --save-result FILE or NULL */
    const char *requests_out;    /* --requests-out FILE or NULL */
    bool quiet;                  /* no block on stdout */
    double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;   /* --goodput; < 0: unset */
    struct atr_buf *result_json; /* if set, receives the result JSON too (borrowed) */
};

void llm_report_init(struct llm_report_opts *o);
/* Parses "--goodput ttft:MS tpot:MS e2el:MS" (one or more words, also
 * comma-separated in one argument); false on junk. */
bool llm_report_parse_goodput(struct llm_report_opts *o, const char *arg);

/* The --goodput option inside a getopt loop: parses optarg, then, as
 * vLLM's `--goodput ttft:500 tpot:50` takes several words, every following
 * argument of the form KEY:NUMBER (advancing optind past them). */
bool llm_report_goodput_opt(struct llm_report_opts *o, int argc, char **argv);

/* PATH with ".NAME" before its extension (r.json -> r.naive.json), for
 * runs of several policies sharing one --save-result / --requests-out;
 * malloc'd, NULL for a NULL path. */
char *llm_report_policy_path(const char *path, const char *name);

/* --policy a,b,c, shared by sim run and replay llm. */
#define LLM_MAX_POLICIES 8

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

/* "YYYYMMDD-HHMMSS" of now (UTC), as vLLM stamps results. */
void llm_report_date(char out[32]);

/* Summarizes r[0..n) under cfg (its slo_* fields are taken from o) and
 * writes the outputs o asks for, atomically. Prints the block to stdout
 * unless quiet. 0, or -1 with err set. */
int llm_report_write(const struct llm_report_opts *o, const struct atr_llm_record *r, size_t n,
                     struct atr_llm_bench_config *cfg, struct atr_error *err);

#endif
