/* test-sim-golden.c - the simulator's results, pinned bit for bit (issue
 * 16: it must get faster with identical results). Seeded synthetic agent
 * sessions (turns extending one id chain, a system prompt shared across
 * sessions, a compacted turn that starts a new chain) go through the
 * driver and engine (sim/run.c, sim/engine.c) under a fixed cost function
 * (so calibration work on the cost model leaves these alone), then through
 * atr_llm_summarize; each case's digest (every summary figure as %a, the
 * engine's figures, and an FNV-1a hash over every record and token time)
 * must equal the one recorded from the simulator as it was before the
 * speed work (commit 65875e7: this file compiled against that tree).
 * ATR_GOLDEN_PRINT=1 prints the digests instead of checking them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/run.h"
#include "stats/metrics.h"

/* ---- a seeded agent workload ---- */

struct gen {
    uint64_t x;
};

static uint64_t rnd(struct gen *g)
{
    g->x ^= g->x << 13;
    g->x ^= g->x >> 7;
    g->x ^= g->x << 17;
    return g->x;
}

static uint32_t rnd_in(struct gen *g, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)(rnd(g) % (hi - lo + 1));
}

#define MAX_TURNS 24
#define SYS_BLOCKS 20           /* shared system prompt: 320 tokens */
#define MAX_CHAIN 4096

struct wl {
    struct atr_workload w;
    struct atr_session *ses;
    struct atr_turn *turns;
    uint64_t **chains;          /* two per session: before and after compaction */
    char (*names)[24];
    double *starts;
    struct atr_schedule sched;
};

/* A session's chain: the shared system prompt ids, then its own. */
static void chain_fill(struct gen *g, uint64_t *c, uint32_t from)
{
    for (uint32_t i = from; i < MAX_CHAIN; i++)
        c[i] = i < SYS_BLOCKS ? 0x5157000000000000ULL + i : rnd(g) | 1;
}

static void wl_build(struct wl *l, uint64_t seed, size_t n_sessions, double gap)
{
    struct gen g = {seed};
    memset(l, 0, sizeof *l);
    l->ses = calloc(n_sessions, sizeof *l->ses);
    l->turns = calloc(n_sessions * MAX_TURNS, sizeof *l->turns);
    l->chains = calloc(2 * n_sessions, sizeof *l->chains);
    l->names = calloc(n_sessions, sizeof *l->names);
    l->starts = calloc(n_sessions, sizeof *l->starts);
    size_t n_turns = 0;
    for (size_t s = 0; s < n_sessions; s++) {
        uint64_t *c0 = malloc(MAX_CHAIN * sizeof *c0), *c1 = malloc(MAX_CHAIN * sizeof *c1);
        chain_fill(&g, c0, 0);
        /* After compaction: the system prompt and a little history kept. */
        memcpy(c1, c0, (SYS_BLOCKS + 8) * sizeof *c1);
        chain_fill(&g, c1, SYS_BLOCKS + 8);
        l->chains[2 * s] = c0;
        l->chains[2 * s + 1] = c1;
        snprintf(l->names[s], sizeof l->names[s], "s%03zu", s);
        struct atr_turn *t = &l->turns[s * MAX_TURNS];
        uint32_t nt = rnd_in(&g, 3, MAX_TURNS), prompt = rnd_in(&g, 400, 3000);
        uint32_t compact_at = rnd_in(&g, 2, MAX_TURNS + 4);
        const uint64_t *chain = c0;
        for (uint32_t k = 0; k < nt; k++) {
            if (k == compact_at) {
                chain = c1;
                prompt = (SYS_BLOCKS + 8) * 16 + rnd_in(&g, 0, 200);
            }
            uint32_t out = rnd_in(&g, 1, 400);
            uint32_t blocks = prompt / 16;
            t[k] = (struct atr_turn){
                .prompt_tokens = prompt, .output_tokens = out, .ids = chain,
                .n_ids = blocks - (k % 5 == 4 ? blocks / 3 : 0),   /* some ids missing */
                .think_s = k ? (double)rnd_in(&g, 0, 30000) / 1000 : 0,
            };
            prompt += out + rnd_in(&g, 20, 900);
            if (prompt > 16 * (MAX_CHAIN - 1) - 1000)
                prompt = 16 * (MAX_CHAIN - 1) - 1000;
        }
        l->ses[s] = (struct atr_session){ .trace_id = l->names[s], .turns = t, .n_turns = nt };
        n_turns += nt;
        l->starts[s] = gap * (double)s + (gap > 0 ? (double)rnd_in(&g, 0, 1000) / 1000 : 0);
    }
    l->w = (struct atr_workload){ l->ses, n_sessions, n_turns, 16 };
    atr_schedule_defaults(&l->sched);
}

static void wl_free(struct wl *l)
{
    for (size_t s = 0; s < 2 * l->w.n_sessions; s++)
        free(l->chains[s]);
    free(l->chains);
    free(l->ses);
    free(l->turns);
    free(l->names);
    free(l->starts);
}

/* ---- a fixed cost model ---- */

static double cost(void *ctx, const struct atr_iter_work *w)
{
    (void)ctx;
    return 4e-3 + 1.1e-6 * (double)w->prefill_tokens + 3e-5 * (double)w->decode_seqs +
           2e-9 * (double)w->decode_ctx_tokens + 1e-10 * (double)w->prefill_ctx_tokens;
}

/* ---- digests ---- */

static void fnv(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 0x100000001b3ULL;
    }
}

#define PUT(b, ...) (b)->len += (size_t)snprintf((b)->s + (b)->len, sizeof (b)->s - (b)->len, \
                                                 __VA_ARGS__)

struct text {
    char s[8192];
    size_t len;
};

static void put_stat(struct text *t, const char *name, const struct atr_llm_stat *s)
{
    PUT(t, "%s %a %a %a %a\n", name, s->mean, s->median, s->std, s->p[0]);
}

static void digest(struct text *t, const struct atr_llm_record *r, size_t n,
                   struct atr_engine *const *e, unsigned n_e)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        fnv(&h, &r[i].id, sizeof r[i].id);
        fnv(&h, &r[i].send_s, sizeof r[i].send_s);
        fnv(&h, &r[i].start_s, sizeof r[i].start_s);
        fnv(&h, &r[i].end_s, sizeof r[i].end_s);
        fnv(&h, &r[i].n_chunks, sizeof r[i].n_chunks);
        fnv(&h, &r[i].cached_tokens, sizeof r[i].cached_tokens);
        fnv(&h, &r[i].prompt_tokens, sizeof r[i].prompt_tokens);
        fnv(&h, &r[i].success, sizeof r[i].success);
        fnv(&h, &r[i].turn, sizeof r[i].turn);
        if (r[i].n_chunks)
            fnv(&h, r[i].chunk_s, r[i].n_chunks * sizeof *r[i].chunk_s);
    }
    PUT(t, "records %zu fnv %016llx\n", n, (unsigned long long)h);
    struct atr_llm_bench_config cfg = {
        .slo_ttft_ms = -1, .slo_tpot_ms = -1, .slo_e2el_ms = -1,
        .percentiles = {99}, .n_percentiles = 1,
    };
    struct atr_llm_summary s;
    struct atr_error err;
    assert_int_equal(atr_llm_summarize(r, n, &cfg, &s, &err), 0);
    PUT(t, "completed %lld failed %lld in %lld out %lld cached %lld duration %a\n",
        (long long)s.completed, (long long)s.failed, (long long)s.total_input,
        (long long)s.total_output, (long long)s.cached_tokens, s.duration);
    PUT(t, "peaks %a %lld\n", s.max_output_tokens_per_s, (long long)s.max_concurrent_requests);
    put_stat(t, "ttft", &s.ttft);
    put_stat(t, "tpot", &s.tpot);
    put_stat(t, "itl", &s.itl);
    put_stat(t, "e2el", &s.e2el);
    put_stat(t, "session", &s.sessions.completion);
    PUT(t, "queue %a %a\n", s.queue_mean_ms, s.queue_p99_ms);
    atr_llm_summary_release(&s);
    for (unsigned k = 0; k < n_e; k++) {
        struct atr_engine_stats st;
        atr_engine_get_stats(e[k], &st);
        uint64_t hh = 0xcbf29ce484222325ULL;
        fnv(&hh, st.batch_hist, st.batch_hist_len * sizeof *st.batch_hist);
        PUT(t, "engine %u: it %llu fin %llu pre %llu ev %llu prefill %llu decode %llu "
            "cached %llu peak %u kvmean %a busy %a batch %a hist %016llx\n", k,
            (unsigned long long)st.iterations, (unsigned long long)st.requests_finished,
            (unsigned long long)st.preemptions, (unsigned long long)st.evictions,
            (unsigned long long)st.prefill_tokens, (unsigned long long)st.decode_tokens,
            (unsigned long long)st.cached_tokens, st.kv_blocks_peak, st.kv_blocks_mean,
            st.busy_seconds, st.batch_mean, (unsigned long long)hh);
    }
}

/* ---- cases ---- */

struct gcase {
    const char *name;
    uint64_t seed;
    size_t sessions;
    double gap;                  /* seconds between session starts (0: burst) */
    uint64_t kv_tokens;
    unsigned max_seqs, max_batched;
    bool no_chunked, no_prefix, lpm;
    unsigned max_concurrency;
};

static void run_case(const struct gcase *c, struct text *t)
{
    struct wl l;
    wl_build(&l, c->seed, c->sessions, c->gap);
    struct atr_engine_cfg cfg;
    atr_engine_cfg_defaults(&cfg);
    cfg.iter_seconds = cost;
    cfg.kv_capacity_tokens = c->kv_tokens;
    if (c->max_seqs)
        cfg.max_num_seqs = c->max_seqs;
    if (c->max_batched)
        cfg.max_num_batched_tokens = c->max_batched;
    cfg.chunked_prefill = !c->no_chunked;
    cfg.prefix_caching = !c->no_prefix;
    cfg.longest_prefix_first = c->lpm;
    cfg.radix_cache = c->lpm;         /* the SGLang flavour as a whole */
    cfg.skip_oversized = true;
    struct atr_error err;
    struct atr_engine *e = atr_engine_new(&cfg, &err);
    assert_non_null(e);
    struct atr_sim_run_cfg rc = {
        .workload = &l.w, .starts = l.starts, .schedule = &l.sched,
        .max_concurrency = c->max_concurrency,
    };
    struct atr_llm_record *recs;
    size_t n;
    assert_int_equal(atr_sim_run(&e, 1, &rc, &recs, &n, &err), 0);
    t->len = 0;
    digest(t, recs, n, &e, 1);
    free(recs);
    atr_engine_free(e);
    wl_free(&l);
}

static const struct gcase cases[] = {
    {"light", 1, 40, 20.0, 200000, 0, 0, false, false, false, 0},
    {"busy", 2, 60, 1.0, 120000, 0, 0, false, false, false, 0},
    {"burst-thrash", 3, 60, 0, 60000, 0, 0, false, false, false, 0},
    {"sglang", 4, 60, 0.5, 80000, 0, 0, false, false, true, 0},
    {"no-chunked", 5, 40, 0.5, 100000, 32, 4096, true, false, false, 0},
    {"no-prefix", 6, 30, 1.0, 60000, 0, 0, false, true, false, 8},
    {"small-batch", 7, 50, 0.2, 90000, 6, 1024, false, false, false, 0},
    {"preempt", 8, 80, 0.05, 24000, 0, 0, false, false, false, 0},
    {"preempt-sglang", 9, 80, 0.05, 24000, 0, 0, false, false, true, 0},
    /* A queue head waiting for memory with a budget-bound first chunk: the
     * cases where evicting one of its hits makes it fit. */
    {"blocked-head", 10, 80, 0.02, 12000, 0, 512, false, false, false, 0},
    {"blocked-head-2", 11, 120, 0, 9000, 48, 256, false, false, false, 0},
    {"blocked-lpm", 12, 100, 0.01, 10000, 0, 384, false, false, true, 0},
};

#include "sim-golden.inc"     /* wants[]: the digests, in case order */

static void test_golden(void **state)
{
    (void)state;
    bool print = getenv("ATR_GOLDEN_PRINT") != NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct text t;
        run_case(&cases[i], &t);
        if (print) {
            printf("/* %s */\n\"", cases[i].name);
            for (size_t k = 0; k < t.len; k++)
                fputs(t.s[k] == '\n' ? "\\n\"\n\"" : (char[]){t.s[k], 0}, stdout);
            printf("\",\n");
            continue;
        }
        if (strcmp(t.s, wants[i]) != 0) {
            fprintf(stderr, "case %s differs:\n--- want\n%s--- got\n%s", cases[i].name,
                    wants[i], t.s);
            fail();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
