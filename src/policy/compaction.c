/* compaction.c - metadata-only context compaction (docs/policies.md): once
 * a session's prompt passes a token budget, the middle of it (old tool
 * outputs) is replaced by a short summary, keeping the head (system prompt
 * and task) and the most recent tail. The prefix stays stable up to the
 * first changed block; the blocks after it get new ids derived from the old
 * ones and the session's compaction epoch, so the next turns of the
 * session, which extend this prompt, reuse the compacted prefix exactly.
 * Round-robin over replicas.
 *
 * Per session, one compaction in original coordinates: the original blocks
 * [head, mid_end) are replaced by n_summary summary blocks. A later turn
 * whose ids extend the same original prefix (checked by the chained id at
 * mid_end - 1) maps the same way; a re-compaction replaces [head, new
 * mid_end) with a new summary (a summary of the old summary and what
 * followed it) under the next epoch. */
#include "policy/policy-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace/tokens.h"
#include "util/alloc.h"

struct session {
    uint32_t epoch;                    /* compactions so far; 0 = never */
    uint32_t mid_end;                  /* original blocks [head, mid_end) are replaced */
    uint64_t anchor;                   /* original id at mid_end - 1 */
    uint32_t last_n;                   /* ids sent on the previous turn (0 = none) */
    uint64_t last_id;                  /* and the last of them */
};

struct compaction_state {
    uint32_t budget, head_blocks, tail_tokens, summary_blocks;
    struct session *ses;
    size_t n_ses;
    uint64_t **bufs;                   /* by request id: ids owned until finished */
    size_t n_bufs;
};

static const char *const option_keys[] = {
    "budget", "keep_head", "keep_tail", "summary", NULL,
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* A block after the change point under epoch e. */
static uint64_t derived_id(uint64_t old, uint32_t epoch)
{
    return mix64(old ^ mix64(UINT64_C(0x636f6d7061637400) + epoch)) & ATR_HASH_ID_MASK;
}

/* Summary block j of the compaction anchored at `anchor` in epoch e. */
static uint64_t summary_id(uint64_t anchor, uint32_t epoch, uint32_t j)
{
    return derived_id(mix64(anchor + UINT64_C(0x9e3779b97f4a7c15) * (j + 1)), epoch);
}

static struct session *session_of(struct compaction_state *st, size_t i)
{
    if (i >= st->n_ses) {
        size_t n = st->n_ses ? st->n_ses : 16;
        while (n <= i)
            n *= 2;
        st->ses = xreallocarray(st->ses, n, sizeof *st->ses);
        memset(st->ses + st->n_ses, 0, (n - st->n_ses) * sizeof *st->ses);
        st->n_ses = n;
    }
    return &st->ses[i];
}

static uint64_t *buffer_for(struct compaction_state *st, uint64_t req, size_t n)
{
    if (req >= st->n_bufs) {
        size_t m = st->n_bufs ? st->n_bufs : 64;
        while (m <= req)
            m *= 2;
        st->bufs = xreallocarray(st->bufs, m, sizeof *st->bufs);
        memset(st->bufs + st->n_bufs, 0, (m - st->n_bufs) * sizeof *st->bufs);
        st->n_bufs = m;
    }
    free(st->bufs[req]);               /* a request id decided twice: the latest wins */
    st->bufs[req] = xreallocarray(NULL, n ? n : 1, sizeof **st->bufs);
    return st->bufs[req];
}

/* Does this turn extend the prompt the session's compaction was made on? */
static bool maps(const struct session *s, const uint64_t *ids, uint32_t n)
{
    return s->epoch && ids && n >= s->mid_end && ids[s->mid_end - 1] == s->anchor;
}

/* Tokens the prompt has once the session's compaction is applied. */
static uint32_t mapped_tokens(const struct compaction_state *st, const struct session *s,
                              uint32_t tokens, uint32_t bs)
{
    return tokens - (s->mid_end - st->head_blocks) * bs + st->summary_blocks * bs;
}

/* Writes the compacted ids of original ids[0..n) into out; returns the count. */
static uint32_t write_ids(const struct compaction_state *st, const struct session *s,
                          const uint64_t *ids, uint32_t n, uint64_t *out)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < st->head_blocks; i++)
        out[k++] = ids[i];
    for (uint32_t j = 0; j < st->summary_blocks; j++)
        out[k++] = summary_id(s->anchor, s->epoch, j);
    for (uint32_t i = s->mid_end; i < n; i++)
        out[k++] = derived_id(ids[i], s->epoch);
    return k;
}

/* Id k of the prompt as the session's compaction maps it. */
static uint64_t mapped_id_at(const struct compaction_state *st, const struct session *s,
                             const uint64_t *ids, uint32_t k)
{
    if (k < st->head_blocks)
        return ids[k];
    if (k < st->head_blocks + st->summary_blocks)
        return summary_id(s->anchor, s->epoch, k - st->head_blocks);
    return derived_id(ids[k - st->head_blocks - st->summary_blocks + s->mid_end], s->epoch);
}

/* Blocks of the previous turn's prompt that this turn, as it would be sent
 * without a new compaction, reuses: all of them when it extends it (ids
 * are chained: the last one equal means the whole prefix is), else none
 * (conservative: the exact common prefix would need the previous ids). */
static uint32_t reusable(const struct compaction_state *st, const struct session *s,
                         const struct atr_policy_req *r, bool mapped, uint32_t n)
{
    if (!s->last_n || s->last_n > n)
        return 0;
    uint64_t id = mapped ? mapped_id_at(st, s, r->ids, s->last_n - 1) : r->ids[s->last_n - 1];
    return id == s->last_id ? s->last_n : 0;
}

/* Compacts the session at this turn if its prompt passes the budget and
 * the compaction removes more blocks than the summary adds. */
static bool compact(struct atr_policy *p, struct compaction_state *st, struct session *s,
                    const struct atr_policy_req *r, uint32_t tokens_now)
{
    uint32_t bs = r->block_size ? r->block_size : p->cfg.block_size;
    if (tokens_now <= st->budget || !r->ids || r->prompt_tokens <= st->tail_tokens)
        return false;
    uint32_t mid_end = (r->prompt_tokens - st->tail_tokens) / bs;
    if (mid_end > r->n_ids)
        mid_end = r->n_ids;
    if (mid_end <= st->head_blocks + st->summary_blocks)
        return false;
    s->epoch++;
    s->mid_end = mid_end;
    s->anchor = r->ids[mid_end - 1];
    p->stats.compactions++;
    return true;
}

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    struct compaction_state *st = p->state;
    struct session *s = session_of(st, r->session);
    uint32_t bs = r->block_size ? r->block_size : p->cfg.block_size;
    uint32_t n = r->ids ? r->n_ids : 0;
    d->replica = atr_policy_round_robin(p);
    bool mapped = maps(s, r->ids, n);
    uint32_t tokens = mapped ? mapped_tokens(st, s, r->prompt_tokens, bs) : r->prompt_tokens;
    /* The prompt as it would be sent without a new compaction, for the
     * cache hits a new one loses. */
    uint32_t n_before = mapped ? n - s->mid_end + st->head_blocks + st->summary_blocks : n;
    uint32_t reused = reusable(st, s, r, mapped, n_before);
    if (compact(p, st, s, r, tokens)) {
        if (reused > st->head_blocks)
            p->stats.blocks_invalidated += reused - st->head_blocks;
        mapped = true;
        tokens = mapped_tokens(st, s, r->prompt_tokens, bs);
    }
    if (mapped) {
        uint64_t *out = buffer_for(st, r->id, n);
        d->n_ids = write_ids(st, s, r->ids, n, out);
        d->ids = out;
        d->prompt_tokens = tokens;
        p->stats.tokens_saved += r->prompt_tokens - tokens;
    }
    s->last_n = d->ids ? d->n_ids : 0;
    s->last_id = s->last_n ? d->ids[s->last_n - 1] : 0;
}

static void finished(struct atr_policy *p, const struct atr_policy_req *r,
                     const struct atr_policy_decision *d, const struct atr_policy_outcome *o)
{
    struct compaction_state *st = p->state;
    (void)d;
    (void)o;
    if (r->id < st->n_bufs) {
        free(st->bufs[r->id]);
        st->bufs[r->id] = NULL;
    }
}

static void free_state(struct atr_policy *p)
{
    struct compaction_state *st = p->state;
    for (size_t i = 0; i < st->n_bufs; i++)
        free(st->bufs[i]);
    free(st->bufs);
    free(st->ses);
    free(st);
    p->state = NULL;
}

static int init(struct atr_policy *p, const struct atr_policy_cfg *cfg, struct atr_error *err)
{
    double budget, head, tail, summary;
    if (atr_policy_opt_num(p, "budget", 8192, 1, 1e8, &budget, err) < 0 ||
        atr_policy_opt_num(p, "keep_head", 2304, 0, 1e8, &head, err) < 0 ||
        atr_policy_opt_num(p, "keep_tail", 2048, 0, 1e8, &tail, err) < 0 ||
        atr_policy_opt_num(p, "summary", 256, 0, 1e8, &summary, err) < 0)
        return -1;
    uint32_t bs = cfg->block_size;
    if (head + tail + summary >= budget)
        return atr_error_set(err, "policy compaction: keep_head + keep_tail + summary (%g) must "
                             "be below budget (%g), or compaction cannot shrink the prompt",
                             head + tail + summary, budget);
    struct compaction_state *st = xcalloc(1, sizeof *st);
    st->budget = (uint32_t)budget;
    st->head_blocks = (uint32_t)head / bs;
    st->tail_tokens = (uint32_t)tail;
    st->summary_blocks = (uint32_t)ceil(summary / bs);
    p->state = st;
    return 0;
}

const struct atr_policy_ops atr_policy_compaction = {
    .name = "compaction", .option_keys = option_keys, .init = init, .decide = decide,
    .finished = finished, .free_state = free_state,
};
