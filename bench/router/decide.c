/* decide.c - per-decision cost of the learned policy (bench/router/run.sh).
 *
 * usage: decide MODEL.json TRACE N FEATURES_OUT
 * Loads the workload, builds each llm turn's atr_policy_req as the
 * simulator's driver would (recorded outputs, think time as the gap), and
 * times N decisions of `learned` cycling over them: decide + started +
 * finished (every candidate shadows every request), then N bare forward
 * passes (features + MLP argmax). Writes the first 10000 feature vectors
 * with the C prediction to FEATURES_OUT for the Python reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "policy/learned-features.h"
#include "policy/learned-model.h"
#include "sched/workload.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct atr_policy_req *requests(const struct atr_workload *w, size_t *n)
{
    struct atr_policy_req *r = calloc(w->n_turns ? w->n_turns : 1, sizeof *r);
    size_t k = 0, max_turns = 0;
    for (size_t s = 0; s < w->n_sessions; s++)
        max_turns = w->sessions[s].n_turns > max_turns ? w->sessions[s].n_turns : max_turns;
    for (size_t t = 0; t < max_turns; t++)          /* sessions interleaved, turn by turn */
        for (size_t s = 0; s < w->n_sessions; s++) {
            const struct atr_session *se = &w->sessions[s];
            if (t >= se->n_turns)
                continue;
            double sum = 0;
            for (size_t i = 0; i < t; i++)
                sum += se->turns[i].output_tokens;
            const struct atr_turn *u = &se->turns[t];
            r[k++] = (struct atr_policy_req){
                .session = s, .turn = t, .prompt_tokens = u->prompt_tokens, .ids = u->ids,
                .n_ids = u->n_ids, .block_size = w->block_size, .think_s = u->think_s,
                .prev_tool = u->prev_tool, .since_last_s = t ? u->think_s : 0,
                .prev_output_tokens = t ? se->turns[t - 1].output_tokens : 0,
                .mean_output_tokens = t ? sum / (double)t : 0,
                .recorded_output_tokens = u->output_tokens,
            };
        }
    *n = k;
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: decide MODEL.json TRACE N FEATURES_OUT\n");
        return 2;
    }
    struct atr_error err;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    struct atr_router_model m;
    if (atr_workload_load(&w, argv + 2, 1, NULL, 16, &err) < 0 ||
        atr_router_model_load(&m, argv[1], &err) < 0) {
        fprintf(stderr, "decide: %s\n", err.msg);
        return 1;
    }
    size_t n_req, n = strtoul(argv[3], NULL, 10);
    struct atr_policy_req *reqs = requests(&w, &n_req);
    char opts[4200];
    snprintf(opts, sizeof opts, "model=%s", argv[1]);
    struct atr_policy_cfg cfg = { .n_replicas = 1, .block_size = 16, .options = opts };
    struct atr_policy *p = atr_policy_new("learned", &cfg, &err);
    if (!p) {
        fprintf(stderr, "decide: %s\n", err.msg);
        return 1;
    }
    struct atr_policy_outcome o = { .success = true };
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        struct atr_policy_req r = reqs[i % n_req];
        r.id = i;
        struct atr_policy_decision d = { .prompt_tokens = r.prompt_tokens, .ids = r.ids,
                                         .n_ids = r.n_ids, .delegate = -1 };
        atr_policy_decide(p, &r, &d);
        atr_policy_started(p, &r, &d);
        o.output_tokens = r.recorded_output_tokens;
        atr_policy_finished(p, &r, &d, &o);
    }
    double t_decide = now_s() - t0;
    struct atr_router_fstate st = ATR_ROUTER_FSTATE_INIT;
    double x[ATR_ROUTER_N_FEATURES];
    size_t sink = 0;
    t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        atr_router_features(&st, &reqs[i % n_req], x);
        sink += atr_mlp_predict(&m.mlp, x);
    }
    double t_forward = now_s() - t0;
    /* prefix-route over 4 replicas on the same requests: its cost grows
     * with the prompt's blocks (one lookup and one stamp per block). */
    struct atr_policy_cfg rcfg = { .n_replicas = 4, .block_size = 16 };
    struct atr_policy *route = atr_policy_new("prefix-route", &rcfg, &err);
    if (!route) {
        fprintf(stderr, "decide: %s\n", err.msg);
        return 1;
    }
    t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        struct atr_policy_req r = reqs[i % n_req];
        r.id = i;
        struct atr_policy_decision d = { .prompt_tokens = r.prompt_tokens, .ids = r.ids,
                                         .n_ids = r.n_ids, .delegate = -1 };
        atr_policy_decide(route, &r, &d);
        atr_policy_started(route, &r, &d);
        atr_policy_finished(route, &r, &d, &o);
    }
    double t_route = now_s() - t0;
    atr_policy_free(route);
    FILE *f = fopen(argv[4], "w");
    atr_router_fstate_release(&st);
    for (size_t i = 0; f && i < n_req && i < 10000; i++) {
        atr_router_features(&st, &reqs[i], x);
        for (size_t j = 0; j < ATR_ROUTER_N_FEATURES; j++)
            fprintf(f, "%.17g ", x[j]);
        fprintf(f, "%zu\n", atr_mlp_predict(&m.mlp, x));
    }
    if (f)
        fclose(f);
    printf("%zu %.1f %.1f %zu %.1f\n", n, 1e9 * t_decide / (double)n,
           1e9 * t_forward / (double)n, sink, 1e9 * t_route / (double)n);
    atr_policy_free(p);
    atr_router_fstate_release(&st);
    atr_router_model_release(&m);
    atr_workload_release(&w);
    free(reqs);
    return 0;
}
