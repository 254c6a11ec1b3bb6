/* gen-noisy.c - noisy-neighbour traces (`atr gen --kind noisy`): bash steps
 * that hog memory, storm fork and spin the CPU, built only from tools of a
 * Debian base image (sh, timeout, dd, true), for `atr replay tools
 * --tenants`. The tables are docs/gen.md's; keep the two in step. */
#include <stdio.h>

#include "gen/gen.h"
#include "util/rng.h"
#include "util/buf.h"

enum noisy_kind { NOISY_CPU, NOISY_MEM, NOISY_FORK, NOISY_N };

static const uint32_t noisy_mix[NOISY_N] = {[NOISY_CPU] = 40, [NOISY_MEM] = 30,
                                            [NOISY_FORK] = 30};

/* CPU spin: P shell busy loops, each stopped by timeout after D ms. */
static const int64_t spin_ms[] = {250, 500, 1000};
static const int64_t spin_par[] = {1, 2, 4};
/* Memory hog: dd copies COUNT blocks of SIZE MiB through one SIZE buffer,
 * so the step's resident memory reaches SIZE MiB (plus dd itself). */
static const int64_t hog_mib[] = {64, 128, 256};
static const int64_t hog_count[] = {1, 2, 4};
/* Fork storm: N background /bin/true processes (fork + exec each), then wait. */
static const int64_t storm_n[] = {100, 200, 400};

#define NOISY_STEPS_MIN 3
#define NOISY_STEPS_MAX 6
#define NOISY_TIMEOUT_MS 30000
#define PICK(r, table) (table)[atr_rng_below((r), sizeof(table) / sizeof *(table))]

/* The command of kind k into b; returns its nominal duration in ms (the
 * documented estimate: spins exactly, the others by rule of thumb). Every
 * draw is its own statement so the output is the same whatever compiled it. */
static int64_t noisy_command(enum noisy_kind k, struct atr_rng *r, struct atr_buf *b)
{
    int64_t a, c;
    switch (k) {
    case NOISY_CPU:
        a = PICK(r, spin_ms);
        c = PICK(r, spin_par);
        atr_buf_printf(b, "i=0; while [ $i -lt %lld ]; do timeout %lld.%03lld sh -c "
                          "'while :; do :; done' & i=$((i+1)); done; wait",
                       (long long)c, (long long)(a / 1000), (long long)(a % 1000));
        return a;
    case NOISY_MEM:
        a = PICK(r, hog_mib);
        c = PICK(r, hog_count);
        atr_buf_printf(b, "dd if=/dev/zero of=/dev/null bs=%lldM count=%lld", (long long)a,
                       (long long)c);
        return a * c / 4;           /* ~4 MiB per ms: fault in, zero, copy */
    case NOISY_FORK:
    default:
        a = PICK(r, storm_n);
        atr_buf_printf(b, "i=0; while [ $i -lt %lld ]; do /bin/true & i=$((i+1)); done; wait",
                       (long long)a);
        return a;                   /* ~1 ms per fork + exec */
    }
}

static const char *const kind_names[NOISY_N] = {"cpu-spin", "memory-hog", "fork-storm"};

void atr_gen_noisy_trace(uint64_t seed, uint64_t i, struct atr_trace *t)
{
    atr_trace_clear(t);
    t->trace_id = atr_arena_printf(&t->arena, "gen-noisy-%llu-%06llu",
                                   (unsigned long long)seed, (unsigned long long)i);
    t->source = "gen";
    t->block_size = ATR_DEFAULT_BLOCK_SIZE;
    t->start_ms = 0;                /* neighbours arrive together */
    atr_trace_meta_set_str(t, "generator", "atr gen");
    atr_trace_meta_set_str(t, "kind", "noisy");
    atr_trace_meta_set_i64(t, "seed", (int64_t)seed);
    struct atr_rng r;
    atr_rng_seed(&r, seed, i);
    int64_t n = atr_rng_range(&r, NOISY_STEPS_MIN, NOISY_STEPS_MAX), t_ms = 0;
    struct atr_buf cmd = ATR_BUF_INIT;
    for (int64_t k = 0; k < n; k++) {
        enum noisy_kind kind = (enum noisy_kind)atr_rng_choice(&r, noisy_mix, NOISY_N);
        atr_buf_clear(&cmd);
        int64_t dur = noisy_command(kind, &r, &cmd);
        struct atr_step *s = atr_trace_add_step(t, ATR_STEP_TOOL);
        s->t_ms = t_ms;
        s->dur_ms = dur;
        s->tool = "bash";
        s->command = atr_arena_strndup(&t->arena, cmd.data, cmd.len);
        s->cwd = NULL;
        s->timeout_ms = NOISY_TIMEOUT_MS;
        s->exit_code = 0;
        s->action = kind_names[kind];
        t_ms += dur;
    }
    atr_buf_release(&cmd);
}
