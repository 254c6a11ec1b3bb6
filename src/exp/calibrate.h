/* calibrate.h - `atr sim calibrate`: a short probe of a llama-server's
 * prefill and decode cost from the client's side, and the fit of the
 * llama.cpp flavour's CPU constants to it (docs/sim.md, "llama.cpp on a
 * CPU").
 *
 * The probe (fixed points, so that validation can use others): one
 * request at a time with prompts of 32, 128, 256, 512, 1024, 1536 and 3072
 * tokens, then 4
 * concurrent requests with prompts of 256 and 1024 tokens, each with 64
 * forced output tokens: a request alone gives its TTFT (the front end and
 * one prefill), every request the median gap between its chunks (one
 * decode step at that batch and context). Each point `reps` times, after
 * one warm-up request; every prompt is unique (its own words, after a
 * word of this run's), so no slot or RAM cache holds it.
 *
 * Memory: points are malloc'd (caller frees); the fit is plain values. */
#ifndef ATR_EXP_CALIBRATE_H
#define ATR_EXP_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* One measured request. */
struct atr_calib_point {
    unsigned concurrency;        /* requests sent together */
    uint32_t prompt, output;     /* tokens, the server's usage */
    double ttft_s;               /* first chunk - sent */
    double gap_s;                /* median gap between chunks (0: under 3 chunks) */
    double mean_gap_s;           /* their mean: the request's TPOT (0: under 2 chunks) */
};

struct atr_calib_cfg {
    const char *base_url;        /* "http://127.0.0.1:8080" */
    const char *model;           /* served model name, or NULL: the server's first */
    unsigned reps;               /* repetitions of each point, >= 1 */
    double timeout_s;            /* per request */
};

/* The llama.cpp flavour's constants (struct atr_gpu's llama_*). */
struct atr_calib_fit {
    double ubatch_s, token_s, pair_s, ctx_s, seq_s, frontend_s;
    double rms_rel;              /* root mean square relative error of the fit */
    size_t n_used;               /* points the fit used */
};

/* Runs the probe against cfg->base_url. 0, or -1 with err set (the server
 * cannot be reached, answers an error, or gives no usage). */
int atr_calib_probe(const struct atr_calib_cfg *cfg, struct atr_calib_point **pts,
                    size_t *n, struct atr_error *err);

/* Fits the constants to the points by least squares on relative errors
 * of each point's median, none negative: a lone request's TTFT is the
 * front end + one prefill of its prompt (in ubatches of `ubatch` tokens),
 * every request's median gap one decode step of `concurrency` sequences
 * at their mean context. 0, or -1 with
 * err set when the points cannot determine them. */
int atr_calib_fit(const struct atr_calib_point *pts, size_t n, unsigned ubatch,
                  struct atr_calib_fit *out, struct atr_error *err);

/* The device profile file (gpus/NAME.json) holding the fit. */
int atr_calib_profile_json(struct atr_buf *b, const struct atr_calib_fit *fit,
                           const char *full_name, const char *note);

#endif
