/* calibrate.c - the probe of a llama-server's cost (OpenAI completions,
 * streamed, from atr's own client) and the non-negative least-squares fit
 * of the llama.cpp flavour's constants to it. */
#include "exp/calibrate.h"

#include <event2/event.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json.h"
#include "llm/client.h"
#include "llm/models.h"
#include "llm/prompt.h"
#include "util/alloc.h"

#define PROBE_OUT 64             /* forced output tokens of a decode point */
#define MODEL_MAX 256

struct probe {
    struct event_base *base;
    struct atr_llm_client *cl;
    const struct atr_calib_cfg *cfg;
    char model[MODEL_MAX];
    struct atr_calib_point *pts;
    size_t n, cap;
    unsigned conc;               /* of the round in flight */
    size_t waiting;
    bool keep;                   /* false: the warm-up, not recorded */
    uint64_t seq;                /* requests sent: each prompt's own words */
    char salt[32];               /* first word of every prompt: this run's own, so no
                                    slot or RAM cache holds one from an earlier run */
    struct atr_error *err;
    bool failed;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the gaps between chunks after the first (decode steps). */
static double median_gap(const double *t, size_t n)
{
    if (n < 3)
        return 0;
    double *g = xreallocarray(NULL, n - 1, sizeof *g);
    for (size_t i = 1; i < n; i++)
        g[i - 1] = t[i] - t[i - 1];
    qsort(g, n - 1, sizeof *g, cmp_double);
    double m = (n - 1) % 2 ? g[(n - 1) / 2] : (g[(n - 1) / 2 - 1] + g[(n - 1) / 2]) / 2;
    free(g);
    return m;
}

static void on_done(void *ctx, const struct atr_llm_result *r)
{
    struct probe *p = ctx;
    if (!r->success || r->n_chunks == 0 || r->prompt_tokens <= 0) {
        if (!p->failed)
            atr_error_set(p->err, "%s: a probe request failed: %s%s%s", p->cfg->base_url,
                          r->reason ? r->reason : "no chunks or no usage",
                          r->detail && *r->detail ? ": " : "", r->detail ? r->detail : "");
        p->failed = true;
    } else if (p->keep) {
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 64;
            p->pts = xreallocarray(p->pts, p->cap, sizeof *p->pts);
        }
        p->pts[p->n++] = (struct atr_calib_point){
            p->conc, (uint32_t)r->prompt_tokens, (uint32_t)r->output_tokens,
            r->chunk_s[0] - r->sent_s, median_gap(r->chunk_s, r->n_chunks),
            r->n_chunks > 1 ? (r->end_s - r->chunk_s[0]) / (double)(r->n_chunks - 1) : 0,
        };
    }
    if (--p->waiting == 0)
        event_base_loopbreak(p->base);
}

/* Sends `conc` requests of `prompt` tokens and `out` forced output tokens
 * at once, and waits for all of them. */
static int round_run(struct probe *p, unsigned conc, uint32_t prompt, uint32_t out)
{
    /* One client for every round: it renews a connection the server
     * closed (cpp-httplib closes kept-alive ones after a few requests
     * without saying so in a streamed answer; llm/client.c resends). */
    struct atr_llm_client_cfg cc = { .base_url = p->cfg->base_url,
                                     .timeout_s = p->cfg->timeout_s,
                                     .stall_timeout_s = p->cfg->timeout_s };
    if (!p->cl && !(p->cl = atr_llm_client_new(p->base, &cc, on_done, p, p->err)))
        return -1;
    struct atr_body_opts o = { .api = ATR_LLM_COMPLETIONS, .model = p->model, .stream = true,
                               .force_length = true, .run_salt = p->salt };
    struct atr_turn t = { .prompt_tokens = prompt, .output_tokens = out };
    p->conc = conc;
    p->waiting = conc;
    for (unsigned i = 0; i < conc; i++) {
        struct atr_buf b = ATR_BUF_INIT;
        int rc = atr_prompt_body(&b, &o, &t, 16, ++p->seq);
        if (rc == 0)
            rc = atr_llm_client_send(p->cl, p->seq, o.api, b.data, b.len, p->err);
        atr_buf_release(&b);
        if (rc < 0)
            return -1;
    }
    event_base_dispatch(p->base);
    return p->failed ? -1 : 0;
}

/* The fixed points (calibrate.h): never the lengths or loads validation
 * uses, so a good fit there is not a test of the fit. */
static int probe_points(struct probe *p)
{
    /* Lone prompts at seven lengths: with only 256, 1024 and 3072 the fit
     * of four TTFT terms was exactly determined, and one noisy median
     * moved the front end to 9-13 ms (a 100-token request's whole TTFT
     * is 3 ms) or the per-token cost to 0. 32 tokens pins the intercept. */
    static const uint32_t prompts[] = {32, 128, 256, 512, 1024, 1536, 3072};
    enum { LONE = sizeof prompts / sizeof *prompts };
    p->keep = false;
    if (round_run(p, 1, 256, 2) < 0)
        return -1;
    p->keep = true;
    for (unsigned rep = 0; rep < p->cfg->reps; rep++) {
        for (size_t i = 0; i < LONE; i++)
            if (round_run(p, 1, prompts[i], PROBE_OUT) < 0)
                return -1;
        for (size_t i = 2; i <= 4; i += 2)          /* 256 and 1024, 4 at once */
            if (round_run(p, 4, prompts[i], PROBE_OUT) < 0)
                return -1;
    }
    return 0;
}

int atr_calib_probe(const struct atr_calib_cfg *cfg, struct atr_calib_point **pts,
                    size_t *n, struct atr_error *err)
{
    struct probe p = { .cfg = cfg, .err = err };
    int rc = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(p.salt, sizeof p.salt, "calib%llx%lx ", (unsigned long long)ts.tv_sec,
             (long)ts.tv_nsec);
    if (cfg->model) {
        snprintf(p.model, sizeof p.model, "%s", cfg->model);
    } else if (atr_llm_first_model(cfg->base_url, NULL, cfg->timeout_s, p.model,
                                   sizeof p.model, NULL, err) < 0) {
        return -1;
    }
    p.base = event_base_new();
    if (!p.base)
        return atr_error_set(err, "cannot create the event loop");
    rc = probe_points(&p);
    atr_llm_client_free(p.cl);
    event_base_free(p.base);
    if (rc < 0) {
        free(p.pts);
        return -1;
    }
    *pts = p.pts;
    *n = p.n;
    return 0;
}

/* ---- the fit ---- */

enum { U, T, A, D, S, F, NCOL };

/* Solves the k x k system m x = v in place (Gaussian elimination with
 * partial pivoting); false when it is singular. */
static bool solve(double m[NCOL][NCOL], double v[NCOL], unsigned k)
{
    for (unsigned c = 0; c < k; c++) {
        unsigned piv = c;
        for (unsigned r = c + 1; r < k; r++)
            if (fabs(m[r][c]) > fabs(m[piv][c]))
                piv = r;
        if (!(fabs(m[piv][c]) > 1e-10))
            return false;
        for (unsigned j = 0; j < k; j++) {
            double x = m[c][j];
            m[c][j] = m[piv][j];
            m[piv][j] = x;
        }
        double x = v[c];
        v[c] = v[piv];
        v[piv] = x;
        for (unsigned r = c + 1; r < k; r++) {
            double f = m[r][c] / m[c][c];
            for (unsigned j = c; j < k; j++)
                m[r][j] -= f * m[c][j];
            v[r] -= f * v[c];
        }
    }
    for (unsigned c = k; c-- > 0;) {
        for (unsigned j = c + 1; j < k; j++)
            v[c] -= m[c][j] * v[j];
        v[c] /= m[c][c];
    }
    return true;
}

struct row {
    double x[NCOL], y;
};

/* The model's rows: a c = 1 point's TTFT, and every point's median gap
 * between chunks as one decode step. The median, not the mean (the
 * request's TPOT): a few stalls of a loaded CPU during the probe made
 * one run's mean gaps 2.7 times the median, and a profile fitted to
 * them twice as slow as the server a minute later. Refitted both ways on
 * the same two runs' timings (bench/sim-llama), the median gave a median
 * error of all figures of 30.8 % and 26.1 %, the mean 25.0 % and 47.0 %. */
static size_t rows_of(const struct atr_calib_point *pts, size_t n, unsigned ubatch,
                      struct row *rows)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct atr_calib_point *q = &pts[i];
        double P = q->prompt, c = q->concurrency;
        if (q->concurrency == 1 && q->ttft_s > 0)
            rows[k++] = (struct row){ { ceil(P / ubatch), P, P * (P + 1) / 2, 0, 1, 1 },
                                      q->ttft_s };
        if (q->gap_s > 0 && q->output >= 8) {
            double ctx = P + q->output / 2.0;
            rows[k++] = (struct row){ { 1, c, 0, c * ctx, c, 0 }, q->gap_s };
        }
    }
    return k;
}

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = memcmp(x->x, y->x, sizeof x->x);
    return c ? c : (x->y > y->y) - (x->y < y->y);
}

/* Each distinct point (same x) becomes one row, the median of its
 * timings: on a shared CPU one request in ten may take many times its
 * due, and a squared error would follow it. */
static size_t rows_median(struct row *rows, size_t n)
{
    qsort(rows, n, sizeof *rows, row_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && !memcmp(rows[j].x, rows[i].x, sizeof rows[i].x))
            j++;
        size_t m = j - i;
        double y = m % 2 ? rows[i + m / 2].y : (rows[i + m / 2 - 1].y + rows[i + m / 2].y) / 2;
        rows[k] = rows[i];
        rows[k++].y = y;
        i = j;
    }
    return k;
}

/* Least squares over the columns in `on`, rows weighted by 1 / y
 * (relative errors); false when singular. */
static bool fit_cols(const struct row *rows, size_t n, const bool on[NCOL], double x[NCOL])
{
    unsigned idx[NCOL], k = 0;
    for (unsigned j = 0; j < NCOL; j++)
        if (on[j])
            idx[k++] = j;
    /* Columns scaled to a largest weighted entry of 1: pairs run to
     * millions where ubatches are 1, and the pivot test is relative. */
    double m[NCOL][NCOL] = {{0}}, v[NCOL] = {0}, scale[NCOL] = {0};
    for (size_t r = 0; r < n; r++)
        for (unsigned a = 0; a < k; a++)
            scale[a] = fmax(scale[a], fabs(rows[r].x[idx[a]] / rows[r].y));
    for (unsigned a = 0; a < k; a++)
        if (!(scale[a] > 0))
            return false;               /* a column no row has */
    for (size_t r = 0; r < n; r++) {
        double y = rows[r].y;
        for (unsigned a = 0; a < k; a++) {
            double xa = rows[r].x[idx[a]] / y / scale[a];
            v[a] += xa;
            for (unsigned b = 0; b < k; b++)
                m[a][b] += xa * rows[r].x[idx[b]] / y / scale[b];
        }
    }
    if (!solve(m, v, k))
        return false;
    memset(x, 0, NCOL * sizeof *x);
    for (unsigned a = 0; a < k; a++)
        x[idx[a]] = v[a] / scale[a];
    return true;
}

int atr_calib_fit(const struct atr_calib_point *pts, size_t n, unsigned ubatch,
                  struct atr_calib_fit *out, struct atr_error *err)
{
    struct row *rows = xreallocarray(NULL, 2 * n + 1, sizeof *rows);
    size_t k = rows_median(rows, rows_of(pts, n, ubatch ? ubatch : 512, rows));
    bool on[NCOL] = {true, true, true, true, true, true};
    double x[NCOL];
    /* Non-negative: a constant the data pushes below zero is dropped (a
     * cost too small to see) and the rest refitted. */
    for (unsigned round = 0;; round++) {
        if (round == NCOL || !fit_cols(rows, k, on, x)) {
            free(rows);
            return atr_error_set(err, "calibration: %zu timings cannot determine the cost "
                                 "constants (need TTFTs at three prompt lengths and "
                                 "decode gaps at two batch sizes and contexts)", k);
        }
        unsigned worst = NCOL;
        for (unsigned j = 0; j < NCOL; j++)
            if (on[j] && x[j] < 0 && (worst == NCOL || x[j] < x[worst]))
                worst = j;
        if (worst == NCOL)
            break;
        on[worst] = false;
    }
    double ss = 0;
    for (size_t r = 0; r < k; r++) {
        double p = 0;
        for (unsigned j = 0; j < NCOL; j++)
            p += rows[r].x[j] * x[j];
        ss += (p / rows[r].y - 1) * (p / rows[r].y - 1);
    }
    free(rows);
    *out = (struct atr_calib_fit){ x[U], x[T], x[A], x[D], x[S], x[F], sqrt(ss / (double)k), k };
    return 0;
}

/* Profile numbers must be positive: a constant fitted to 0 is written as
 * a time too small to matter. */
static double positive(double v)
{
    return v > 1e-12 ? v : 1e-12;
}

int atr_calib_profile_json(struct atr_buf *b, const struct atr_calib_fit *fit,
                           const char *full_name, const char *note)
{
    int rc = atr_buf_puts(b, "{\n  \"note\": ");
    rc |= atr_json_write_string(b, note, strlen(note));
    rc |= atr_buf_puts(b, ",\n  \"full_name\": ");
    rc |= atr_json_write_string(b, full_name, strlen(full_name));
    /* The GPU terms are unused by the llama.cpp flavour on a calibrated
     * device; nominal values keep the file a valid device profile. */
    rc |= atr_buf_printf(b, ",\n  \"peak_flops\": 1e12,\n  \"hbm_bytes_per_s\": 2e10,\n"
                         "  \"mem_bytes\": 17179869184,\n  \"link_bytes_per_s\": 1e10,\n"
                         "  \"link_latency_s\": 1e-5,\n");
    rc |= atr_buf_printf(b, "  \"llama_ubatch_s\": %.6g,\n  \"llama_token_s\": %.6g,\n"
                         "  \"llama_pair_s\": %.6g,\n  \"llama_ctx_s\": %.6g,\n"
                         "  \"llama_seq_s\": %.6g,\n  \"llama_frontend_s\": %.6g\n}\n",
                         positive(fit->ubatch_s), positive(fit->token_s),
                         positive(fit->pair_s), positive(fit->ctx_s), positive(fit->seq_s),
                         positive(fit->frontend_s));
    return rc ? -1 : 0;
}
