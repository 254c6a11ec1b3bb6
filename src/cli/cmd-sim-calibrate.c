/* cmd-sim-calibrate.c - `atr sim calibrate`: probes a llama-server and
 * writes the device profile of the llama.cpp flavour fitted to it
 * (src/exp/calibrate.h, docs/sim.md "llama.cpp on a CPU"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "exp/calibrate.h"
#include "util/output.h"

const char cmd_sim_calibrate_help[] =
    "usage: atr sim calibrate --target URL -o FILE [OPTIONS]\n"
    "\n"
    "Measures a running llama-server (start it with --parallel 4 or more)\n"
    "from the client's side and fits the llama.cpp flavour's cost constants:\n"
    "one request at a time with prompts of 32, 128, 256, 512, 1024, 1536 and\n"
    "3072 tokens, then 4 at once with 256- and 1024-token prompts, each 64\n"
    "forced tokens long; a lone request's TTFT is the front end and one\n"
    "prefill, every request's median gap between chunks one decode step.\n"
    "Each point --reps times, every prompt unique: 46 requests by default,\n"
    "a few seconds with the tiny model. FILE is a device profile\n"
    "(docs/sim.md, \"Profile files\"): put it at DIR/gpus/NAME.json and run\n"
    "  ATR_PROFILE_PATH=DIR atr sim run TRACE --profile NAME/MODEL --engine llama.cpp\n"
    "\n"
    "options:\n"
    "  -t, --target URL          the server, e.g. http://127.0.0.1:8080\n"
    "  -o, --output FILE         the device profile to write\n"
    "      --model NAME          served model to ask for (default: the server's\n"
    "                            first in /v1/models)\n"
    "      --name TEXT           the profile's full_name (default \"CPU (atr sim\n"
    "                            calibrate)\")\n"
    "      --points-out FILE     the measured requests, one JSON line each\n"
    "                            (concurrency, prompt, output, ttft_ms, gap_ms:\n"
    "                            the median gap, tpot_ms: the mean)\n"
    "      --reps N              repetitions of each point (default 3)\n"
    "      --ubatch-size N       the server's -ub (default 512)\n"
    "      --timeout S           per request (default 60)\n";

struct calib_args {
    struct atr_calib_cfg cfg;
    const char *out, *name, *points_out;
    unsigned ubatch;
};

#define ARGS struct calib_args
static const struct opt options[] = {
    OPT_STRING(ARGS, cfg.base_url, "target", 't'),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, cfg.model, "model", 0),
    OPT_STRING(ARGS, name, "name", 0),
    OPT_STRING(ARGS, points_out, "points-out", 0),
    OPT_UINT(ARGS, cfg.reps, "reps", 0, 1, 100, "--reps wants 1..100"),
    OPT_UINT(ARGS, ubatch, "ubatch-size", 0, 1, 1 << 20, "--ubatch-size wants 1..1048576"),
    OPT_DOUBLE(ARGS, cfg.timeout_s, "timeout", 0, 0.001, 86400, "--timeout wants seconds"),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"sim calibrate", options};

static void print_fit(const struct atr_calib_fit *f, size_t n_points, const char *out)
{
    printf("calibrated from %zu requests (%zu timings), fit rms error %.1f %%\n",
           n_points, f->n_used, 100 * f->rms_rel);
    printf("  per ubatch       %10.4f ms\n", f->ubatch_s * 1e3);
    printf("  per token        %10.4f us\n", f->token_s * 1e6);
    printf("  per prompt pair  %10.6f us\n", f->pair_s * 1e6);
    printf("  per decode ctx   %10.6f us\n", f->ctx_s * 1e6);
    printf("  per sequence     %10.4f us\n", f->seq_s * 1e6);
    printf("  front end        %10.4f ms a request\n", f->frontend_s * 1e3);
    printf("wrote %s\n", out);
}

static int write_points(const char *path, const struct atr_calib_point *pts, size_t n,
                        struct atr_error *err)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        rc |= atr_buf_printf(&b, "{\"concurrency\":%u,\"prompt\":%u,\"output\":%u,"
                             "\"ttft_ms\":%.4f,\"gap_ms\":%.4f,\"tpot_ms\":%.4f}\n",
                             pts[i].concurrency, pts[i].prompt, pts[i].output,
                             pts[i].ttft_s * 1e3, pts[i].gap_s * 1e3, pts[i].mean_gap_s * 1e3);
    rc = rc ? atr_error_set(err, "out of memory") : atr_output_write_file(path, b.data, b.len, err);
    atr_buf_release(&b);
    return rc;
}

static int calibrate(const struct calib_args *a)
{
    struct atr_error err;
    struct atr_calib_point *pts;
    size_t n;
    struct atr_calib_fit fit;
    if (atr_calib_probe(&a->cfg, &pts, &n, &err) < 0)
        return cli_fail_err(&err);
    int rc = a->points_out ? write_points(a->points_out, pts, n, &err) : 0;
    if (rc == 0)
        rc = atr_calib_fit(pts, n, a->ubatch, &fit, &err);
    free(pts);
    if (rc < 0)
        return cli_fail_err(&err);
    struct atr_buf b = ATR_BUF_INIT;
    char note[512];
    snprintf(note, sizeof note, "llama.cpp's llama-server at %s, fitted by atr sim calibrate "
             "(%zu requests, rms error %.1f %%); use with --engine llama.cpp",
             a->cfg.base_url, n, 100 * fit.rms_rel);
    if (atr_calib_profile_json(&b, &fit, a->name, note) < 0 ||
        atr_output_write_file(a->out, b.data, b.len, &err) < 0) {
        atr_buf_release(&b);
        return cli_fail_err(&err);
    }
    atr_buf_release(&b);
    print_fit(&fit, n, a->out);
    return EXIT_OK;
}

int cmd_sim_calibrate(int argc, char **argv)
{
    struct calib_args a = { .cfg = { .reps = 3, .timeout_s = 60 }, .ubatch = 512,
                            .name = "CPU (atr sim calibrate)" };
    int first;
    if (opts_parse(&parser, &a, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first < argc)
        return cli_usage("sim calibrate", "unexpected argument '%s'", argv[first]);
    if (!a.cfg.base_url)
        return cli_usage("sim calibrate", "missing --target URL");
    if (!a.out)
        return cli_usage("sim calibrate", "missing -o FILE");
    if (strncmp(a.cfg.base_url, "http://", 7) && strncmp(a.cfg.base_url, "https://", 8))
        return cli_usage("sim calibrate", "--target wants an http:// or https:// URL, got '%s'",
                         a.cfg.base_url);
    return calibrate(&a);
}
