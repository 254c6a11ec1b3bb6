/* test-series.c - the run layer below the CLI: a series of policies x
 * repeats in interleaved order (exp/series.h), its file names, shards,
 * fresh schedule seeds per repeat, files all or none, a stop from the
 * caller; one run over threads (exp/threads.h); the sim target of sim
 * run's settings (exp/sim-target.h); shard merging (stats/merge.h) and
 * the router's leave-one-source-out folds (router/folds.h) on their error
 * paths. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exp/series.h"
#include "exp/sim-target.h"
#include "exp/threads.h"
#include "router/folds.h"
#include "stats/merge.h"
#include "util/alloc.h"

#define STRATA ATR_TEST_DATA "/gen/strata.ndjson"   /* 16 sessions */

static void test_place_interleaves(void **state)
{
    (void)state;
    const char *names[] = {"naive", "prefix-cache", "compaction"};
    struct atr_series_cfg cfg = {.policies = names, .n_policies = 3, .repeats = 2};
    assert_int_equal(atr_series_runs(&cfg), 6);
    const size_t want_policy[] = {0, 1, 2, 0, 1, 2};
    const unsigned want_repeat[] = {1, 1, 1, 2, 2, 2};
    for (size_t k = 0; k < 6; k++) {
        size_t p;
        unsigned r;
        atr_series_place(&cfg, k, &p, &r);
        assert_int_equal(p, want_policy[k]);
        assert_int_equal(r, want_repeat[k]);
    }
    struct atr_series_cfg once = {0};
    assert_int_equal(atr_series_runs(&once), 1);
}

static void test_paths(void **state)
{
    (void)state;
    char *p = atr_series_path("out/r.json", "naive", 2);
    assert_string_equal(p, "out/r.naive.r2.json");
    free(p);
    p = atr_series_path("out/r.json", NULL, 3);
    assert_string_equal(p, "out/r.r3.json");
    free(p);
    p = atr_series_path("a.b/res", "naive", 0);    /* a dot in a folder is no extension */
    assert_string_equal(p, "a.b/res.naive");
    free(p);
    assert_null(atr_series_path(NULL, "naive", 1));
}

static void test_shard(void **state)
{
    (void)state;
    struct atr_workload w = ATR_WORKLOAD_INIT;
    struct atr_error err;
    char *paths[] = {STRATA};
    assert_int_equal(atr_workload_load(&w, paths, 1, NULL, 16, &err), 0);
    assert_true(w.n_sessions >= 3);
    bool *keep;
    size_t turns = atr_series_shard(&w, 1, 3, &keep);
    size_t want = 0;
    for (size_t s = 0; s < w.n_sessions; s++) {
        assert_int_equal(keep[s], s % 3 == 1);
        want += s % 3 == 1 ? w.sessions[s].n_turns : 0;
    }
    assert_int_equal(turns, want);
    free(keep);
    assert_int_equal(atr_series_shard(&w, 0, (unsigned)w.n_sessions + 5, &keep),
                     w.sessions[0].n_turns);
    free(keep);
    atr_workload_release(&w);
}

/* What the callbacks saw. */
struct seen {
    size_t starts, ends, results;
    char order[16][32];
    double duration[16];
    int stop_at;                 /* stop after this many results (0: never) */
};

static void on_start(void *ctx, const struct atr_series_run *run)
{
    struct seen *s = ctx;
    assert_int_equal(run->k, s->starts);
    assert_null(run->res);
    s->starts++;
}

static void on_end(void *ctx, const struct atr_series_run *run)
{
    (void)run;
    ((struct seen *)ctx)->ends++;
}

static int on_result(void *ctx, const struct atr_series_run *run)
{
    struct seen *s = ctx;
    assert_non_null(run->res);
    assert_non_null(run->sum);
    assert_true(run->res->repeat == run->repeat || run->res->repeat == 0);   /* 0: no repeats */
    snprintf(s->order[s->results], sizeof s->order[0], "%s/%u", run->policy, run->repeat);
    s->duration[s->results] = run->sum->duration;
    s->results++;
    return s->stop_at && (int)s->results == s->stop_at ? 7 : 0;
}

static void series_cfg(struct atr_series_cfg *cfg, struct atr_schedule *sc, char **paths,
                       const char *const *names, struct seen *seen)
{
    atr_schedule_defaults(sc);
    sc->kind = ATR_ARRIVAL_POISSON;
    sc->rate = 4;
    *cfg = (struct atr_series_cfg){
        .paths = paths, .n_paths = 1, .schedule = sc, .policies = names, .n_policies = 2,
        .repeats = 2, .slo_ttft_ms = -1, .slo_tpot_ms = -1, .slo_e2el_ms = -1,
        .date = "20260101-000000", .on_start = on_start, .on_end = on_end,
        .on_result = on_result, .ctx = seen,
    };
}

static void test_series_on_sim(void **state)
{
    (void)state;
    struct atr_target t;
    struct atr_error err;
    struct atr_sim_target_cfg sc_cfg;
    atr_sim_target_defaults(&sc_cfg);
    sc_cfg.profile = "h100/llama-3.1-8b";
    assert_int_equal(atr_sim_target_make(&t, &sc_cfg, &err), 0);
    const char *tmp = getenv("TMPDIR");
    char *base = xasprintf("%s/atr-series-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(base));
    char *save = xasprintf("%s/r.json", base);
    char *paths[] = {STRATA};
    const char *names[] = {"naive", "prefix-cache"};
    struct atr_schedule sc;
    struct atr_series_cfg cfg;
    struct seen seen = {0};
    series_cfg(&cfg, &sc, paths, names, &seen);
    cfg.save_result = save;
    assert_int_equal(atr_series_run(&t, &cfg, &err), 0);
    assert_int_equal(seen.starts, 4);
    assert_int_equal(seen.ends, 4);
    assert_int_equal(seen.results, 4);
    assert_string_equal(seen.order[0], "naive/1");
    assert_string_equal(seen.order[1], "prefix-cache/1");
    assert_string_equal(seen.order[2], "naive/2");
    assert_string_equal(seen.order[3], "prefix-cache/2");
    /* Poisson gaps with seed + r - 1: the repeats are different draws */
    assert_true(seen.duration[0] != seen.duration[2]);
    for (int k = 1; k <= 2; k++) {
        char *f = xasprintf("%s/r.naive.r%d.json", base, k);
        assert_int_equal(access(f, F_OK), 0);
        unlink(f);
        free(f);
        f = xasprintf("%s/r.prefix-cache.r%d.json", base, k);
        assert_int_equal(access(f, F_OK), 0);
        unlink(f);
        free(f);
    }

    /* on_result stops the series: its value comes back, the runs so far
     * keep their files, the others have none */
    struct seen stop = {.stop_at = 3};
    series_cfg(&cfg, &sc, paths, names, &stop);
    cfg.save_result = save;
    assert_int_equal(atr_series_run(&t, &cfg, &err), 7);
    assert_int_equal(stop.results, 3);
    char *kept = xasprintf("%s/r.naive.r2.json", base);
    char *gone = xasprintf("%s/r.prefix-cache.r2.json", base);
    assert_int_equal(access(kept, F_OK), 0);
    assert_int_not_equal(access(gone, F_OK), 0);
    unlink(kept);
    char *f = xasprintf("%s/r.naive.r1.json", base);
    unlink(f);
    free(f);
    f = xasprintf("%s/r.prefix-cache.r1.json", base);
    unlink(f);
    free(f);
    free(kept);
    free(gone);

    /* an unknown policy fails the series: no file is left */
    const char *bad[] = {"naive", "no-such-policy"};
    struct seen none = {0};
    series_cfg(&cfg, &sc, paths, bad, &none);
    cfg.repeats = 1;
    cfg.save_result = save;
    assert_int_equal(atr_series_run(&t, &cfg, &err), -1);
    f = xasprintf("%s/r.naive.json", base);
    assert_int_not_equal(access(f, F_OK), 0);
    free(f);
    assert_int_equal(rmdir(base), 0);
    free(save);
    free(base);
    atr_target_release(&t);
}

static void test_series_errors(void **state)
{
    (void)state;
    struct atr_target t;
    struct atr_error err;
    assert_int_equal(atr_target_sim(&t, "h100/llama-3.1-8b", 1, &err), 0);
    char *paths[] = {STRATA};
    const char *names[] = {"naive", "prefix-cache"};
    struct atr_schedule sc;
    struct atr_series_cfg cfg;
    struct seen seen = {0};
    series_cfg(&cfg, &sc, paths, names, &seen);
    cfg.shard_i = 0;
    cfg.shard_n = 1000;           /* shard 999 of 1000 has no session */
    cfg.shard_i = 999;
    assert_int_equal(atr_series_run(&t, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "shard 999:1000 has no llm steps"));
    assert_int_equal(seen.starts, 0);
    char *none[] = {ATR_TEST_DATA "/no-such-file.ndjson"};
    series_cfg(&cfg, &sc, none, names, &seen);
    assert_int_equal(atr_series_run(&t, &cfg, &err), -1);
    atr_target_release(&t);
}

/* One run split over threads: every session in exactly one share, the
 * records joined (a sim target runs each share on its own engine, which
 * is enough to check the split and the join). */
static void test_threads_split_and_join(void **state)
{
    (void)state;
    struct atr_target t;
    struct atr_error err;
    assert_int_equal(atr_target_sim(&t, "h100/llama-3.1-8b", 1, &err), 0);
    struct atr_workload w = ATR_WORKLOAD_INIT;
    char *paths[] = {STRATA};
    assert_int_equal(atr_workload_load(&w, paths, 1, NULL, 16, &err), 0);
    struct atr_schedule sc;
    atr_schedule_defaults(&sc);
    struct atr_exp_cfg cfg = {.workload = &w, .schedule = &sc};
    struct atr_exp_result one, all;
    assert_int_equal(atr_exp_run(&t, &cfg, &one, &err), 0);
    struct atr_exp_threads *th = xcalloc(1, sizeof *th);
    th->n = 3;
    assert_int_equal(atr_exp_threads_run(th, &t, &cfg, &all, &err), 0);
    assert_int_equal(all.n, one.n);
    assert_int_equal(all.total, one.total);
    size_t per_part = 0;
    for (unsigned k = 0; k < 3; k++) {
        assert_true(th->parts[k].n > 0);       /* 16 sessions: every thread has some */
        per_part += th->parts[k].n;
    }
    assert_int_equal(per_part, one.n);
    atr_exp_threads_release(th, &all);
    free(th);
    atr_exp_result_release(&one);
    atr_workload_release(&w);
    atr_target_release(&t);
}

/* sim run's settings: the flavour's engine as it runs. */
static void test_sim_target(void **state)
{
    (void)state;
    struct atr_sim_target_cfg c;
    atr_sim_target_defaults(&c);
    c.profile = "h100/llama-3.1-8b";
    c.flavour = ATR_SIM_SGLANG;
    c.replicas = 3;
    struct atr_target t;
    struct atr_error err;
    assert_int_equal(atr_sim_target_make(&t, &c, &err), 0);
    assert_true(t.engine.radix_cache && t.engine.longest_prefix_first);
    assert_int_equal(t.engine.slots, 0);
    assert_int_equal(t.replicas, 3);
    assert_true(t.client.timeout_s == 600 && t.client.stall_timeout_s == 60);
    atr_target_release(&t);
    c.flavour = ATR_SIM_VLLM;
    c.engine.prefill_first = true;           /* V0: whole prompts, the model's length */
    assert_int_equal(atr_sim_target_make(&t, &c, &err), 0);
    assert_false(t.engine.chunked_prefill);
    assert_int_equal(t.engine.max_num_batched_tokens, t.profile.model->max_model_len);
    atr_target_release(&t);
    c.profile = "b200/llama-3.1-8b";
    assert_int_equal(atr_sim_target_make(&t, &c, &err), -1);
    atr_target_release(&t);
}

static void test_merge_errors(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char *path = xasprintf("%s/atr-merge-empty-%d.ndjson", tmp && *tmp ? tmp : "/tmp",
                           (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    struct atr_schedule sc;
    atr_schedule_defaults(&sc);
    struct atr_llm_merge_cfg cfg = {.schedule = &sc, .slo_ttft_ms = -1, .slo_tpot_ms = -1,
                                    .slo_e2el_ms = -1};
    struct atr_llm_merged m;
    struct atr_error err;
    char *paths[] = {path};
    assert_int_equal(atr_llm_merge(&cfg, paths, 1, &m, &err), -1);
    assert_string_equal(err.msg, "no request lines in the files given");
    f = fopen(path, "w");
    fputs("{\"id\": \"x\"}\n", f);
    fclose(f);
    assert_int_equal(atr_llm_merge(&cfg, paths, 1, &m, &err), -1);
    assert_non_null(strstr(err.msg, ":1:"));         /* FILE:LINE:COL */
    unlink(path);
    free(path);
}

/* Folds want two sources with requests; the session count per source. */
static void test_folds_errors(void **state)
{
    (void)state;
    size_t session[] = {0, 0, 1, 2}, group[] = {0, 0, 0, 0};
    struct atr_router_data d = {.n = 4, .session = session, .group = group};
    assert_int_equal(atr_router_group_sessions(&d, 0), 3);
    assert_int_equal(atr_router_group_sessions(&d, 1), 0);
    struct atr_router_folds_cfg cfg = {.n_groups = 2, .n_candidates = 2};
    struct atr_router_folds *fo = xcalloc(1, sizeof *fo);
    struct atr_error err;
    assert_int_equal(atr_router_folds_run(&d, &cfg, fo, &err), -1);
    assert_non_null(strstr(err.msg, "wants traces of 2 or more sources with llm requests, "
                                    "found 1"));
    cfg.n_groups = ATR_ROUTER_MAX_SOURCES + 1;
    assert_int_equal(atr_router_folds_run(&d, &cfg, fo, &err), -1);
    assert_non_null(strstr(err.msg, "at most 64"));
    assert_string_equal(atr_router_select_names[2], "size+reuse");
    free(fo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_interleaves),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_shard),
        cmocka_unit_test(test_series_on_sim),
        cmocka_unit_test(test_series_errors),
        cmocka_unit_test(test_threads_split_and_join),
        cmocka_unit_test(test_sim_target),
        cmocka_unit_test(test_merge_errors),
        cmocka_unit_test(test_folds_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
