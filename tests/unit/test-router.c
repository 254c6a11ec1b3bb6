/* test-router.c - the learned router: MLP gradient check, learning XOR,
 * determinism for a seed, model file round trip and bad files, metadata
 * features, the session split, the source-held-out protocol (no session
 * on both sides, every fold scored), unused inputs, and the learned
 * policy's delegation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/rng.h"
#include "policy/policy.h"
#include "policy/learned-features.h"
#include "router/mlp.h"
#include "router/train.h"

/* Central differences of the loss against the analytic gradient, for every
 * parameter of a 3-4-3-3 net. */
static void test_gradient_check(void **state)
{
    (void)state;
    struct atr_mlp m, g;
    struct atr_error err;
    size_t hidden[2] = { 4, 3 };
    assert_int_equal(atr_mlp_init(&m, 3, hidden, 2, 3, 7, &err), 0);
    for (size_t l = 0; l < m.n_layers; l++)          /* non-zero biases too */
        for (size_t o = 0; o < m.layers[l].out; o++)
            m.layers[l].b[o] = 0.1 * (double)(o + 1);
    double x[5 * 3];
    uint32_t y[5] = { 0, 1, 2, 1, 0 };
    size_t idx[5] = { 0, 1, 2, 3, 4 };
    double cw[3] = { 1, 2, 0.5 };
    struct atr_rng r;
    atr_rng_seed(&r, 1, 0);
    for (size_t i = 0; i < 15; i++)
        x[i] = atr_rng_normal(&r);
    atr_mlp_init_like(&g, &m);
    atr_mlp_loss(&m, x, y, idx, 5, cw, &g);
    for (size_t l = 0; l < m.n_layers; l++) {
        double *P[2] = { m.layers[l].w, m.layers[l].b }, *G[2] = { g.layers[l].w, g.layers[l].b };
        size_t len[2] = { m.layers[l].in * m.layers[l].out, m.layers[l].out };
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < len[k]; i++) {
                double keep = P[k][i], h = 1e-6;
                P[k][i] = keep + h;
                double up = atr_mlp_loss(&m, x, y, idx, 5, cw, NULL);
                P[k][i] = keep - h;
                double down = atr_mlp_loss(&m, x, y, idx, 5, cw, NULL);
                P[k][i] = keep;
                double num = (up - down) / (2 * h);
                assert_true(fabs(num - G[k][i]) <= 1e-6 + 1e-4 * fabs(num));
            }
    }
    atr_mlp_release(&g);
    atr_mlp_release(&m);
}

static void train_xor(uint64_t seed, struct atr_mlp *m)
{
    double x[8] = { 0, 0, 0, 1, 1, 0, 1, 1 };
    uint32_t y[4] = { 0, 1, 1, 0 };
    size_t hidden[1] = { 8 };
    struct atr_error err;
    assert_int_equal(atr_mlp_init(m, 2, hidden, 1, 2, seed, &err), 0);
    atr_mlp_fit_standardize(m, x, 4);
    struct atr_mlp_train_cfg cfg = { .epochs = 600, .batch = 4, .lr = 0.05, .seed = seed };
    atr_mlp_train(m, x, y, 4, &cfg);
}

static void test_learns_xor(void **state)
{
    (void)state;
    struct atr_mlp m;
    train_xor(3, &m);
    double x[8] = { 0, 0, 0, 1, 1, 0, 1, 1 };
    uint32_t y[4] = { 0, 1, 1, 0 };
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(atr_mlp_predict(&m, x + 2 * i), y[i]);
        double p[2];
        atr_mlp_forward(&m, x + 2 * i, p);
        assert_true(p[y[i]] > 0.9);
        assert_true(fabs(p[0] + p[1] - 1) < 1e-12);
    }
    atr_mlp_release(&m);
}

static void test_deterministic_for_seed(void **state)
{
    (void)state;
    struct atr_mlp a, b, c;
    train_xor(11, &a);
    train_xor(11, &b);
    train_xor(12, &c);
    bool differ = false;
    for (size_t l = 0; l < a.n_layers; l++) {
        size_t n = a.layers[l].in * a.layers[l].out;
        assert_memory_equal(a.layers[l].w, b.layers[l].w, n * sizeof(double));
        assert_memory_equal(a.layers[l].b, b.layers[l].b, a.layers[l].out * sizeof(double));
        differ |= memcmp(a.layers[l].w, c.layers[l].w, n * sizeof(double)) != 0;
    }
    assert_true(differ);
    atr_mlp_release(&a);
    atr_mlp_release(&b);
    atr_mlp_release(&c);
}

/* A random router model over two candidates. */
static void make_model(struct atr_router_model *m, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    size_t hidden[2] = { 6, 5 };
    struct atr_error err;
    assert_int_equal(atr_mlp_init(&m->mlp, ATR_ROUTER_N_FEATURES, hidden, 2, 2, seed, &err), 0);
    for (size_t i = 0; i < ATR_ROUTER_N_FEATURES; i++) {
        m->mlp.mean[i] = 0.25 * (double)i;
        m->mlp.std[i] = 1.0 / 3 + (double)i;
    }
    m->n_candidates = 2;
    m->candidates[0] = strdup("prefix-cache");
    m->candidates[1] = strdup("naive");
    snprintf(m->objective, sizeof m->objective, "e2el");
    snprintf(m->profile, sizeof m->profile, "rtx3090/qwen3-4b-awq");
    snprintf(m->label, sizeof m->label, "request");
    m->margin = 0.05;
    m->holdout = 0.25;
    m->seed = seed;
}

static void test_model_round_trip(void **state)
{
    (void)state;
    struct atr_router_model a, b;
    struct atr_error err;
    make_model(&a, 5);
    struct atr_buf buf = ATR_BUF_INIT;
    assert_int_equal(atr_router_model_write(&a, &buf), 0);
    assert_int_equal(atr_router_model_parse(&b, buf.data, buf.len, "m.json", &err), 0);
    assert_int_equal(b.n_candidates, 2);
    assert_string_equal(b.candidates[1], "naive");
    assert_string_equal(b.objective, "e2el");
    assert_string_equal(b.profile, "rtx3090/qwen3-4b-awq");
    assert_int_equal(b.seed, 5);
    assert_int_equal(b.mlp.n_layers, 3);
    assert_memory_equal(a.mlp.std, b.mlp.std, ATR_ROUTER_N_FEATURES * sizeof(double));
    for (size_t l = 0; l < 3; l++)
        assert_memory_equal(a.mlp.layers[l].w, b.mlp.layers[l].w,
                            a.mlp.layers[l].in * a.mlp.layers[l].out * sizeof(double));
    struct atr_buf again = ATR_BUF_INIT;
    assert_int_equal(atr_router_model_write(&b, &again), 0);
    assert_string_equal(buf.data, again.data);       /* %.17g round-trips exactly */
    atr_buf_release(&buf);
    atr_buf_release(&again);
    atr_router_model_release(&a);
    atr_router_model_release(&b);
}

/* text with `from` replaced by `to` must fail with an error matching want. */
static void expect_bad(const char *text, const char *from, const char *to, const char *want)
{
    char *bad = malloc(strlen(text) + strlen(to) + 1);
    const char *at = strstr(text, from);
    assert_non_null(at);
    sprintf(bad, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    struct atr_router_model m;
    struct atr_error err;
    assert_int_equal(atr_router_model_parse(&m, bad, strlen(bad), "bad.json", &err), -1);
    if (!strstr(err.msg, want))
        fail_msg("error '%s' lacks '%s'", err.msg, want);
    assert_true(strncmp(err.msg, "bad.json:", 9) == 0);
    free(bad);
}

static void test_bad_model_files(void **state)
{
    (void)state;
    struct atr_router_model a;
    make_model(&a, 9);
    struct atr_buf buf = ATR_BUF_INIT;
    assert_int_equal(atr_router_model_write(&a, &buf), 0);
    const char *t = buf.data;
    expect_bad(t, "{", "[", "expected");
    expect_bad(t, "atr-router/1", "atr-router/2", "expected \"format\": \"atr-router/1\"");
    expect_bad(t, "\"naive\"", "\"learned\"", "expected a policy name");
    expect_bad(t, "\"naive\"", "\"fastest\"", "expected a policy name");
    expect_bad(t, "log_turn", "turn", "expected feature \"log_turn\"");
    expect_bad(t, "\"in\": 6", "\"in\": 7", "expected a layer object with \"in\": 6");
    expect_bad(t, "\"out\": 2", "\"out\": 3", "(one per candidate)");
    expect_bad(t, "\"bias\": [", "\"bias\": [1, ", "expected \"bias\" array of 6 numbers");
    expect_bad(t, "\"e2el\"", "\"p99\"", "expected \"objective\"");
    expect_bad(t, "\"mean\": [", "\"mean\": [\"x\", ", "expected \"mean\" array");
    expect_bad(t, "\"weights\": [", "\"weights\": [true, ", "expected \"weights\" array");
    expect_bad(t, "\"std\": [", "\"std\": [0, ", "expected \"std\" array");
    /* position: the layer object's line and column */
    expect_bad(t, "\"in\": 6", "\"in\": 7", "bad.json:10:5: expected");
    struct atr_router_model m;
    struct atr_error err;
    assert_int_equal(atr_router_model_load(&m, "/nonexistent/m.json", &err), -1);
    atr_buf_release(&buf);
    atr_router_model_release(&a);
}

static void test_features(void **state)
{
    (void)state;
    uint64_t t0[3] = { 11, 12, 13 }, t1[5] = { 11, 12, 13, 14, 15 }, t2[4] = { 11, 12, 99, 98 };
    assert_int_equal(atr_router_shared_blocks(t1, 5, t0, 3), 3);
    assert_int_equal(atr_router_shared_blocks(t2, 4, t1, 5), 2);
    assert_int_equal(atr_router_shared_blocks(t2, 4, NULL, 0), 0);
    assert_int_equal(atr_router_tool_class(NULL), 0);
    assert_int_equal(atr_router_tool_class("bash"), 1);
    assert_int_equal(atr_router_tool_class("execute_bash"), 1);
    assert_int_equal(atr_router_tool_class("str_replace_editor"), 2);
    assert_int_equal(atr_router_tool_class("editor"), 2);
    assert_int_equal(atr_router_tool_class("browser"), 3);
    struct atr_router_fstate st = ATR_ROUTER_FSTATE_INIT;
    double x[ATR_ROUTER_N_FEATURES];
    struct atr_policy_req r0 = { .session = 40, .turn = 0, .prompt_tokens = 50, .ids = t0,
                                 .n_ids = 3, .block_size = 16 };
    atr_router_features(&st, &r0, x);
    assert_true(fabs(x[0] - atr_det_log(51)) < 1e-12);
    assert_true(x[2] == 0 && x[4] == 1 && x[5] == 0);
    struct atr_policy_req r1 = { .session = 40, .turn = 1, .prompt_tokens = 90, .ids = t1,
                                 .n_ids = 5, .block_size = 16, .think_s = 2, .prev_tool = "bash",
                                 .since_last_s = 2.5, .prev_output_tokens = 30,
                                 .mean_output_tokens = 30 };
    atr_router_features(&st, &r1, x);
    assert_true(fabs(x[2] - 0.6) < 1e-12);           /* 3 of 5 blocks seen last turn */
    assert_true(fabs(x[3] - atr_det_log(1 + 90 - 48)) < 1e-12);
    assert_true(x[4] == 0 && x[5] == 1 && x[6] == 0 && x[7] == 0);
    assert_true(fabs(x[8] - atr_det_log(3)) < 1e-12);
    assert_true(fabs(x[10] - atr_det_log(31)) < 1e-12);
    struct atr_policy_req r2 = r1;                   /* another session: no history */
    r2.session = 3;
    atr_router_features(&st, &r2, x);
    assert_true(x[2] == 0);
    r2.session = 40;                                 /* t2 after t1: 2 shared */
    r2.ids = t2;
    r2.n_ids = 4;
    r2.prev_tool = "str_replace_editor";
    atr_router_features(&st, &r2, x);
    assert_true(fabs(x[2] - 0.5) < 1e-12 && x[6] == 1);
    atr_router_fstate_release(&st);
}

static void test_held_out_split(void **state)
{
    (void)state;
    size_t held = 0;
    char id[32];
    for (int i = 0; i < 4000; i++) {
        snprintf(id, sizeof id, "trace-%d", i);
        bool h = atr_router_held_out(id, 3, 0.25);
        assert_true(h == atr_router_held_out(id, 3, 0.25));
        held += h;
    }
    assert_true(held > 850 && held < 1150);
}

/* Rows of 12 sessions of 5 turns in 4 groups (sources), in session order
 * as atr_router_label makes them; label 1 when the first feature is
 * positive, else 0. Arrays are the caller's to free (release). */
static void make_grouped(struct atr_router_data *d)
{
    memset(d, 0, sizeof *d);
    d->n = 60;
    d->n_candidates = 2;
    d->x = calloc(d->n * ATR_ROUTER_N_FEATURES, sizeof *d->x);
    d->y = calloc(d->n, sizeof *d->y);
    d->session = calloc(d->n, sizeof *d->session);
    d->group = calloc(d->n, sizeof *d->group);
    d->held_out = calloc(d->n, sizeof *d->held_out);
    struct atr_rng rng;
    atr_rng_seed(&rng, 5, 0);
    for (size_t i = 0; i < d->n; i++) {
        d->session[i] = i / 5;
        d->group[i] = d->session[i] % 4;
        for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++)
            d->x[i * ATR_ROUTER_N_FEATURES + f] = atr_rng_uniform(&rng) * 2 - 1;
        d->y[i] = d->x[i * ATR_ROUTER_N_FEATURES] > 0;
    }
}

static void test_source_split(void **state)
{
    (void)state;
    struct atr_router_data d;
    make_grouped(&d);
    bool held[4] = { false, true, false, true };
    atr_router_split_groups(&d, held);
    assert_true(atr_router_split_sound(&d));
    assert_int_equal(d.n_sessions_held_out, 6);
    assert_int_equal(d.n_sessions_train, 6);
    for (size_t i = 0; i < d.n; i++)
        assert_true(d.held_out[i] == held[d.group[i]]);
    d.held_out[7] = !d.held_out[7];             /* one row of session 1 moved across */
    assert_false(atr_router_split_sound(&d));
    /* Every fold of leave-one-group-out is sound (checked inside), scores
     * exactly its group, and together they score every row once. */
    struct atr_router_train_cfg tc = { .hidden = { 4, 0 }, .epochs = 30, .batch = 8, .lr = 0.01,
                                       .seed = 1 };
    struct atr_router_eval pool, per[4];
    memset(&pool, 0, sizeof pool);
    struct atr_error err;
    assert_int_equal(atr_router_loso(&d, 4, SIZE_MAX, &tc, &pool, per, &err), 0);
    assert_int_equal(pool.n, d.n);
    for (size_t g = 0; g < 4; g++)
        assert_int_equal(per[g].n, 15);
    /* skip: that group is neither trained on nor scored */
    memset(&pool, 0, sizeof pool);
    assert_int_equal(atr_router_loso(&d, 4, 2, &tc, &pool, per, &err), 0);
    assert_int_equal(pool.n, 45);
    assert_int_equal(per[2].n, 0);
    for (size_t i = 0; i < d.n; i++)        /* the last fold held out 3 and skipped 2 */
        assert_true(d.held_out[i] == (d.group[i] == 2 || d.group[i] == 3));
    size_t best = 9;
    struct atr_router_train_cfg grid[2] = { tc, tc };
    grid[1].inputs = 1u << 0;                   /* the only informative feature */
    assert_int_equal(atr_router_select(&d, 4, 0, grid, 2, &best, &err), 0);
    assert_true(best <= 1);
    free(d.x);
    free(d.y);
    free(d.session);
    free(d.group);
    free(d.held_out);
}

/* Inputs left out get zero first-layer weights: the model ignores them. */
static void test_unused_inputs(void **state)
{
    (void)state;
    struct atr_router_data d;
    make_grouped(&d);
    struct atr_router_train_cfg tc = { .hidden = { 8, 0 }, .epochs = 20, .batch = 8, .lr = 0.01,
                                       .l2 = 1e-4, .seed = 2, .inputs = 1u << 0 | 1u << 3 };
    struct atr_mlp m;
    struct atr_error err;
    assert_int_equal(atr_router_train(&d, &tc, &m, &err), 0);
    const struct atr_mlp_layer *L = &m.layers[0];
    size_t nonzero = 0;
    for (size_t o = 0; o < L->out; o++)
        for (size_t f = 0; f < L->in; f++) {
            if (f != 0 && f != 3)
                assert_true(L->w[o * L->in + f] == 0);
            else
                nonzero += L->w[o * L->in + f] != 0;
        }
    assert_true(nonzero > 0);
    double x[ATR_ROUTER_N_FEATURES] = { 0.5 }, x2[ATR_ROUTER_N_FEATURES] = { 0.5 };
    for (size_t f = 4; f < ATR_ROUTER_N_FEATURES; f++)
        x2[f] = 1e3 * (double)f;                /* unused features change nothing */
    double p[2], p2[2];
    atr_mlp_forward(&m, x, p);
    atr_mlp_forward(&m, x2, p2);
    assert_true(p[0] == p2[0] && p[1] == p2[1]);
    atr_mlp_release(&m);
    free(d.x);
    free(d.y);
    free(d.session);
    free(d.group);
    free(d.held_out);
}

/* The best single-feature rule: the feature and cut that label the
 * training rows, fitted on those only (the held-out rows' labels are
 * scrambled and change nothing), scored beside the model. */
static void test_rule_fit(void **state)
{
    (void)state;
    struct atr_router_data d;
    make_grouped(&d);
    for (size_t i = 0; i < d.n; i++) {
        d.held_out[i] = d.group[i] == 3;
        d.y[i] = d.held_out[i] ? i % 2 : d.x[i * ATR_ROUTER_N_FEATURES + 5] > 0.3;
    }
    struct atr_router_rule r;
    atr_router_rule_fit(&d, &r);
    assert_int_equal(r.feature, 5);
    assert_int_equal(r.below, 0);
    assert_int_equal(r.above, 1);
    double lo = -1, hi = 1;                     /* the rule cuts between the nearest values */
    for (size_t i = 0; i < d.n; i++) {
        double v = d.x[i * ATR_ROUTER_N_FEATURES + 5];
        if (!d.held_out[i] && v <= 0.3 && v > lo)
            lo = v;
        if (!d.held_out[i] && v > 0.3 && v < hi)
            hi = v;
        if (!d.held_out[i])
            assert_int_equal(atr_router_rule_predict(&r, d.x + i * ATR_ROUTER_N_FEATURES), d.y[i]);
    }
    assert_true(r.threshold == lo + (hi - lo) / 2);
    for (size_t i = 0; i < d.n; i++)            /* no training row: the default, no cut */
        d.held_out[i] = true;
    atr_router_rule_fit(&d, &r);
    assert_true(isinf(r.threshold) && r.below == d.default_candidate && r.above == r.below);
    free(d.x);
    free(d.y);
    free(d.session);
    free(d.group);
    free(d.held_out);
}

/* A feature with one value on every training row gets zero weights (it
 * taught nothing), so the model decides the same whatever its value. */
static void test_constant_inputs(void **state)
{
    (void)state;
    struct atr_router_data d;
    make_grouped(&d);
    for (size_t i = 0; i < d.n; i++)
        d.x[i * ATR_ROUTER_N_FEATURES + 7] = 1;
    assert_int_equal(atr_router_constant_inputs(&d), 1u << 7);
    struct atr_router_train_cfg tc = { .hidden = { 8, 0 }, .epochs = 20, .batch = 8, .lr = 0.01,
                                       .l2 = 1e-4, .seed = 2 };
    struct atr_mlp m;
    struct atr_error err;
    assert_int_equal(atr_router_train(&d, &tc, &m, &err), 0);
    for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++)
        assert_true(atr_mlp_input_weighted(&m, f) == (f != 7));
    double x[ATR_ROUTER_N_FEATURES] = { 0.5, 0.1, 0, 0, 0, 0, 0, 1 }, p[2], p2[2];
    atr_mlp_forward(&m, x, p);
    x[7] = 40;
    atr_mlp_forward(&m, x, p2);
    assert_true(p[0] == p2[0] && p[1] == p2[1]);
    atr_mlp_release(&m);
    free(d.x);
    free(d.y);
    free(d.session);
    free(d.group);
    free(d.held_out);
}

static void test_learned_policy(void **state)
{
    (void)state;
    struct atr_error err;
    struct atr_policy_cfg cfg = { .n_replicas = 2, .block_size = 16 };
    assert_null(atr_policy_new("learned", &cfg, &err));
    assert_non_null(strstr(err.msg, "needs model=PATH (train one with atr router train)"));
    char path[] = "/tmp/atr-test-router-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    struct atr_router_model m;
    make_model(&m, 21);
    struct atr_buf b = ATR_BUF_INIT;
    assert_int_equal(atr_router_model_write(&m, &b), 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    char opts[64];
    snprintf(opts, sizeof opts, "model=%s", path);
    cfg.options = opts;
    struct atr_policy *p = atr_policy_new("learned", &cfg, &err);
    assert_non_null(p);
    /* 300 requests in flight at once (the ring grows), then finished. */
    uint64_t ids[4] = { 1, 2, 3, 4 };
    struct atr_policy_decision d[300];
    struct atr_policy_req r[300];
    for (uint64_t i = 0; i < 300; i++) {
        r[i] = (struct atr_policy_req){ .id = i, .session = i % 7, .turn = i / 7,
                                        .prompt_tokens = 64 + (uint32_t)i, .ids = ids, .n_ids = 4,
                                        .block_size = 16 };
        d[i] = (struct atr_policy_decision){ .prompt_tokens = r[i].prompt_tokens, .ids = ids,
                                             .n_ids = 4, .delegate = -1 };
        atr_policy_decide(p, &r[i], &d[i]);
        assert_true(d[i].delegate == 0 || d[i].delegate == 1);   /* naive or prefix-cache */
        assert_true(d[i].salt == (d[i].delegate == 0));
        atr_policy_started(p, &r[i], &d[i]);
    }
    assert_int_equal(atr_policy_load(p)[0] + atr_policy_load(p)[1], 300);
    struct atr_policy_outcome o = { .success = true, .output_tokens = 10 };
    for (size_t i = 0; i < 300; i++)
        atr_policy_finished(p, &r[i], &d[i], &o);
    assert_int_equal(atr_policy_load(p)[0] + atr_policy_load(p)[1], 0);
    struct atr_policy_stats st;
    atr_policy_get_stats(p, &st);
    assert_int_equal(st.requests, 300);
    assert_int_equal(st.per_delegate[0] + st.per_delegate[1], 300);
    assert_int_equal(st.per_delegate[0], st.salted);
    atr_policy_free(p);
    /* a bad model file is the policy's error */
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"atr-router/1\",\n \"objective\": 3}", f);
    fclose(f);
    assert_null(atr_policy_new("learned", &cfg, &err));
    assert_non_null(strstr(err.msg, ":2:15: expected \"objective\""));
    unlink(path);
    atr_buf_release(&b);
    atr_router_model_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_check),
        cmocka_unit_test(test_learns_xor),
        cmocka_unit_test(test_deterministic_for_seed),
        cmocka_unit_test(test_model_round_trip),
        cmocka_unit_test(test_bad_model_files),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_held_out_split),
        cmocka_unit_test(test_source_split),
        cmocka_unit_test(test_unused_inputs),
        cmocka_unit_test(test_rule_fit),
        cmocka_unit_test(test_constant_inputs),
        cmocka_unit_test(test_learned_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
