/* engine.c - vLLM-v1-like engine model in virtual time: scheduler, paged KV
 * blocks and prefix cache (kept as runs, kvruns.c; or block by block, the
 * reference: a hash map and an LRU of unreferenced cached blocks),
 * recompute preemption, and a log of iteration ends that token times point
 * into. */
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/heap.h"
#include "sim/kvruns.h"
#include "sim/slots.h"
#include "util/alloc.h"

#define NIL UINT32_MAX
#define TAIL 0x80000000u        /* map entry: the block's shared tail, not its id */
/* Helpers run for every request of every iteration, kept inline. */
#define HOT static inline __attribute__((always_inline))

/* What outlives a request's scheduling: its public record and where its
 * token times are. Records sit in chunks (no allocation per request) and
 * stay put until released, so their pointers are stable; the scheduling
 * state (struct req, about 100 bytes more) is freed when the request ends,
 * which keeps a long run's memory per request to this (issue 16). */
struct req_rec {
    struct atr_sim_record rec;   /* first: the public view */
    union {
        struct req *live;        /* its scheduling state; NULL once it ended */
        struct req_rec *next_free;   /* released: the chunks' free list */
    };
    double *times;               /* its own token times, once they stopped being
                                    consecutive iterations of the log; else NULL */
    uint64_t first_iter;         /* iteration of its first token (tokens_done > 0) */
    size_t all_index;            /* position in e->all (atr_engine_release_record) */
};

/* A request being scheduled: from atr_engine_add until it finished or the
 * engine let go of it after an abort. */
struct req {
    struct req_rec *f;           /* its record */
    const uint64_t *hash_ids;
    uint32_t n_hash;             /* usable ids: full prompt blocks only */
    uint32_t tail;               /* radix_cache: its shared tail is e->tails[tail - 1];
                                    0: none (kept aside: few requests have one) */
    uint64_t num_tokens;         /* prompt + output tokens so far */
    uint64_t computed;           /* tokens whose KV is computed */
    union {
        struct {                 /* block_cache: the block table */
            uint32_t *blocks;
            uint32_t cap_blocks;
        };
        struct kvr_table kv;     /* else: the runs it holds (kvruns.h) */
    };
    uint32_t n_blocks;           /* blocks it holds */
    uint32_t n_hashed;           /* leading blocks already checked into the cache */
    /* Its last admission failed for want of blocks, with fail_hits prefix
     * hits (the oldest of them in the LRU queue appended as number
     * fail_lru_seq), fail_budget tokens of budget and the engine's
     * n_released then (see still_fails). */
    bool failed;
    uint32_t fail_hits;
    uint64_t fail_budget, fail_released, fail_lru_seq;
    uint32_t sched_new;          /* tokens scheduled in the current iteration */
    uint32_t slot;               /* slots: the one it holds + 1; 0: none */
    bool admitted_once;
    bool aborted;                /* atr_engine_abort: stop at the next safe point */
    bool arriving;               /* its arrival event is still in the heap */
    bool release_pending;        /* its record was released while the engine held it */
    bool retain;                 /* atr_engine_set_retain: pin its blocks when it finishes */
    bool pinned;                 /* finished, its blocks held by a pin (retain_s) */
};

/* retain_s: a finished request's pinned blocks, and when the pin ends
 * (kept here, not in struct req: every request would pay for it). */
struct pin {
    struct req *r;
    double until;
};

/* A request's shared partial block (atr_engine_set_tail). */
struct req_tail {
    uint64_t id;
    uint32_t block, tokens;
    uint32_t hit;                /* tokens of it its last prefix match found cached */
};

struct req_vec {
    struct req **v;
    size_t len, cap;
};

struct rec_vec {
    struct req_rec **v;
    size_t len, cap;
};

struct engine_ring {             /* the waiting queue: preempted go to the head */
    struct req **v;
    size_t head, len, cap;
};

struct engine_block {
    uint64_t hash;               /* valid while cached */
    uint64_t lru_seq;            /* its number when it last joined the LRU queue */
    uint32_t ref;                /* requests holding it */
    uint32_t lru_at;             /* its index in e->lru while cached and ref == 0, else NIL */
    bool cached;                 /* registered in the map */
};

struct atr_engine {
    struct atr_engine_cfg cfg;
    /* retain_s: finished requests whose blocks are pinned, in order of
     * their pin's end (one retain_s for all: the order they finished), a
     * ring of pin_len from pin_head. */
    struct pin *pins;
    size_t pin_head, pin_len, pin_cap;
    /* The cache kept as runs (kvruns.h); NULL for block_cache, which
     * keeps the blocks below. kc: the counts of the one in use. */
    struct kvr *kvr;
    const struct kvr_counts *kc;
    /* cfg.slots (llama.cpp): the slots' own prefix caches, in place of the
     * shared one (cfg.prefix_caching is then off; slot_cache says whether
     * the slots' are on), and the context of one slot. */
    struct atr_slots *slots;
    bool slot_cache;
    uint64_t slot_ctx;
    double now;
    struct atr_heap events;
    bool busy, due;              /* iteration in flight / to be scheduled now */

    /* block_cache: the block model, the reference the runs are tested
     * against (and what shared tails need). */
    struct engine_block *blk;
    uint32_t n_blocks;
    uint32_t *free_stack;        /* uncached, unreferenced blocks: bk.n_free */
    /* The LRU queue of cached unreferenced blocks, oldest first: a ring of
     * lru_len entries from lru_head in e->lru, where entry i counts only
     * while its block's lru_at is i (a block taken out by a prefix hit just
     * forgets its index; n_lru counts the live ones). An array, not a
     * linked list: appending is a store, and evictions read it in order. */
    uint32_t *lru;
    uint32_t lru_head, lru_len, lru_cap;   /* lru_cap: a power of two */
    struct kvr_counts bk;        /* its counts (n_lru: the live queue entries) */
    /* radix_cache only (else NULL): the tree over cached blocks. parent is
     * the cached block a block continues (NIL: none or not cached when it
     * was checked in), children how many cached blocks continue it; a
     * block holding a shared tail (atr_engine_set_tail) is also in the
     * map under tail_key, for tail_len tokens (0: none). */
    uint32_t *parent, *children;
    uint64_t *tail_key;
    uint32_t *tail_len;
    struct req_tail *tails;      /* atr_engine_set_tail, in call order */
    size_t n_tails, cap_tails;
    /* Open addressing (linear probing, backward-shift delete) over blocks,
     * their ids read from the blocks (key_of). */
    uint64_t *map;               /* slots: key top half, entry (NIL: empty); see key_of */
    size_t map_mask;
    unsigned block_shift;        /* log2(block_size) when a power of two, else 0 */
    unsigned map_shift;          /* 64 - log2(slots): home = key >> map_shift */
    /* Map entries of blocks evicted, to remove (n_blocks; radix: 2 n_blocks),
     * with their keys, read while the eviction had the block at hand:
     * map_flush then needs no second read of each block, a cache miss. */
    uint32_t *evicted;
    uint64_t *evicted_key;
    uint32_t n_evicted;

    struct req_vec running, batch;
    struct rec_vec all, done;        /* live records (not released); finished last step */
    /* Records are cut from chunks of REC_CHUNK; released ones are reused. */
    struct req_rec **rec_chunks;
    size_t n_rec_chunks, rec_chunk_used;
    struct req_rec *rec_free;
    struct engine_ring waiting;
    uint64_t pending;

    struct atr_engine_stats st;
    uint64_t *hist;
    double kv_time_sum, batch_sum;
    /* The iteration in flight is steps [window_first, st.iterations) (one
     * step unless a multi-step window); applying step j, cur_iter is its
     * index, the log entry its tokens take. */
    uint64_t window_first, cur_iter;

    /* End time of iterations log_base .. log_base + log_len - 1. A request
     * decoding without a pause gets one token per iteration, so its token
     * times are a slice of this log and need no array of their own. */
    double *log;
    uint64_t log_base;
    size_t log_len, log_cap;
};

/* The iteration-end event's payload: any unique non-request address. */
static char iter_end_tag;

/* ---- small containers ---- */

/* Array v of len elements of elem bytes, with room for one more (its
 * capacity *cap doubles when full). */
static void *grow_for_one(void *v, size_t len, size_t *cap, size_t elem)
{
    if (len < *cap)
        return v;
    *cap = *cap ? *cap * 2 : 64;
    return xreallocarray(v, *cap, elem);
}

static void vec_push(struct req_vec *v, struct req *r)
{
    v->v = grow_for_one(v->v, v->len, &v->cap, sizeof(*v->v));
    v->v[v->len++] = r;
}

static void rec_vec_push(struct rec_vec *v, struct req_rec *f)
{
    v->v = grow_for_one(v->v, v->len, &v->cap, sizeof(*v->v));
    v->v[v->len++] = f;
}

static void ring_grow(struct engine_ring *q)
{
    size_t cap = q->cap ? q->cap * 2 : 64;
    struct req **n = xreallocarray(NULL, cap, sizeof(*n));
    for (size_t i = 0; i < q->len; i++)
        n[i] = q->v[(q->head + i) % q->cap];
    free(q->v);
    q->v = n;
    q->cap = cap;
    q->head = 0;
}

static void ring_push_back(struct engine_ring *q, struct req *r)
{
    if (q->len == q->cap)
        ring_grow(q);
    q->v[(q->head + q->len) % q->cap] = r;
    q->len++;
}

static void ring_push_front(struct engine_ring *q, struct req *r)
{
    if (q->len == q->cap)
        ring_grow(q);
    q->head = (q->head + q->cap - 1) % q->cap;
    q->v[q->head] = r;
    q->len++;
}

static struct req *ring_front(const struct engine_ring *q)
{
    return q->len ? q->v[q->head] : NULL;
}

static void ring_pop_front(struct engine_ring *q)
{
    q->head = (q->head + 1) % q->cap;
    q->len--;
}

/* ---- the log of iteration ends ---- */

/* The first log index a live record's token times still point to. */
static uint64_t log_needed_from(const struct atr_engine *e)
{
    uint64_t lo = e->log_base + e->log_len;
    for (size_t i = 0; i < e->all.len; i++) {
        const struct req_rec *f = e->all.v[i];
        if (f->rec.tokens_done && !f->times && f->first_iter < lo)
            lo = f->first_iter;
    }
    return lo;
}

/* Appends the end of the iteration being scheduled. When full, it first
 * drops the entries no live record needs (a server releases its records),
 * and grows only when more than half of it is still needed, so a long-lived
 * server's log stays as short as its live requests allow. */
static void log_push(struct atr_engine *e, double t)
{
    if (e->log_len == e->log_cap) {
        size_t drop = (size_t)(log_needed_from(e) - e->log_base);
        if (drop && drop >= e->log_cap / 2) {
            memmove(e->log, e->log + drop, (e->log_len - drop) * sizeof *e->log);
            e->log_len -= drop;
            e->log_base += drop;
        } else {
            e->log_cap = e->log_cap ? 2 * e->log_cap : 4096;
            e->log = xreallocarray(e->log, e->log_cap, sizeof *e->log);
        }
    }
    e->log[e->log_len++] = t;
}

/* Records r's next token, produced by the iteration ending now. The first
 * gap (a preemption, a batch that left it out) copies the slice so far into
 * an array of its own. */
static void token_add(struct atr_engine *e, struct req_rec *f)
{
    uint64_t k = e->cur_iter;               /* the step being applied */
    uint32_t n = f->rec.tokens_done;
    if (n == 0) {
        f->first_iter = k;
    } else if (!f->times && k != f->first_iter + n) {
        f->times = xreallocarray(NULL, f->rec.output_tokens, sizeof *f->times);
        memcpy(f->times, e->log + (f->first_iter - e->log_base), n * sizeof *f->times);
    }
    if (f->times)
        f->times[n] = e->now;
    f->rec.tokens_done = n + 1;
}

/* ---- prefix-cache hash map (linear probing, backward-shift delete) ---- */

/* Multiplying by an odd constant is a bijection of 64-bit values, so mixed
 * keys are equal exactly when ids are; a key's home slot is its top bits
 * (Fibonacci hashing: the high bits of the product depend on every bit of
 * the id). Two instructions where a full finaliser took a tenth of a run. */
static uint64_t mix(uint64_t x)
{
    return x * 0x9e3779b97f4a7c15ULL;
}

/* Keys are kept mixed, so an entry's home needs no mixing when it moves. */
static size_t home_of(const struct atr_engine *e, uint64_t k)
{
    return (size_t)(k >> e->map_shift);
}

/* The key of map entry v: a block's id, or (TAIL set) the shared tail it
 * holds. A slot holds the top half of its entry's key (which gives the
 * home slot: the map has at most 2^32 slots) and the entry: 8 bytes, one
 * load a probe, and only a match reads the block for the rest of the key.
 * Map and blocks then fit a core's cache better than 12-byte slots in two
 * arrays did (issue 16, second round). A block is in the map under the id
 * it has while cached, or until map_flush when just evicted (its id is
 * overwritten only at check-in). */
static uint64_t key_of(const struct atr_engine *e, uint32_t v)
{
    return v & TAIL ? mix(e->tail_key[v & ~TAIL]) : mix(e->blk[v].hash);
}

#define KEY_TOP 0xffffffff00000000ULL

static uint32_t slot_val(uint64_t slot)
{
    return (uint32_t)slot;
}

/* The block cached under hash, or NIL. */
static uint32_t map_find(const struct atr_engine *e, uint64_t hash)
{
    uint64_t k = mix(hash);
    for (size_t i = home_of(e, k);; i = (i + 1) & e->map_mask) {
        uint64_t s = e->map[i];
        if (slot_val(s) == NIL)
            return NIL;
        if ((s & KEY_TOP) == (k & KEY_TOP) && key_of(e, slot_val(s)) == k)
            return slot_val(s) & ~TAIL;
    }
}

/* Registers hash -> v (a block, TAIL set for a shared tail) unless hash is
 * there already; the block holding it, or NIL when v was registered (one
 * probe for both). The caller then gives the block that key. */
static uint32_t map_find_or_insert(struct atr_engine *e, uint64_t hash, uint32_t v)
{
    uint64_t k = mix(hash);
    size_t i = home_of(e, k);
    for (; slot_val(e->map[i]) != NIL; i = (i + 1) & e->map_mask) {
        uint64_t s = e->map[i];
        if ((s & KEY_TOP) == (k & KEY_TOP) && key_of(e, slot_val(s)) == k)
            return slot_val(s) & ~TAIL;
    }
    e->map[i] = (k & KEY_TOP) | v;
    return NIL;
}

/* Removes entry v, whose key is k. Over locals: a store to a slot (a
 * uint64_t) might change e->map_mask (a size_t) as far as the compiler
 * knows, so it would reload the fields after each one. */
static void map_remove(struct atr_engine *e, uint64_t k, uint32_t v)
{
    uint64_t *map = e->map;
    size_t mask = e->map_mask;
    unsigned shift = e->map_shift;
    size_t i = (size_t)(k >> shift);
    while (slot_val(map[i]) != v)
        i = (i + 1) & mask;
    /* Backward shift: pull later entries of the probe run into the hole so
     * lookups never stop early at it. A slot's home is that of its key:
     * the entry's bits shift out. */
    for (size_t j = (i + 1) & mask; slot_val(map[j]) != NIL; j = (j + 1) & mask) {
        size_t home = (size_t)(map[j] >> shift);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            map[i] = map[j];
            i = j;
        }
    }
    map[i] = UINT64_MAX;
}

/* ---- block pool ---- */

static void lru_unlink(struct atr_engine *e, uint32_t b)
{
    e->blk[b].lru_at = NIL;
    e->bk.n_lru--;
}

/* Rewrites the ring with its live entries only, from index 0: when it is
 * full, at least half of it is stale (lru_cap >= 2 * blocks), so this is
 * rare. */
static void lru_compact(struct atr_engine *e)
{
    uint32_t *v = xcalloc(e->lru_cap, sizeof(*v)), k = 0;  /* see block_alloc_run */
    for (uint32_t n = 0, i = e->lru_head; n < e->lru_len; n++, i = (i + 1) & (e->lru_cap - 1)) {
        uint32_t b = e->lru[i];
        if (e->blk[b].lru_at == i) {
            e->blk[b].lru_at = k;
            v[k++] = b;
        }
    }
    free(e->lru);
    e->lru = v;
    e->lru_head = 0;
    e->lru_len = k;
}

static void lru_append(struct atr_engine *e, uint32_t b)
{
    if (e->lru_len == e->lru_cap)
        lru_compact(e);
    uint32_t i = (e->lru_head + e->lru_len) & (e->lru_cap - 1);
    e->blk[b].lru_at = i;
    e->blk[b].lru_seq = ++e->bk.appended;
    e->lru[i] = b;
    e->lru_len++;
    e->bk.n_lru++;
}

/* The oldest block of the queue, taken out; callers check n_lru first. */
static uint32_t lru_pop(struct atr_engine *e)
{
    uint32_t mask = e->lru_cap - 1;
    for (;;) {
        uint32_t i = e->lru_head, b = e->lru[i];
        e->lru_head = (i + 1) & mask;
        e->lru_len--;
        if (e->blk[b].lru_at == i) {
            e->blk[b].lru_at = NIL;
            e->bk.n_lru--;
            e->bk.evicted_seq = e->blk[b].lru_seq;
            return b;
        }
    }
}

static void block_ref(struct atr_engine *e, uint32_t b)
{
    if (e->blk[b].ref++ == 0) {
        if (e->blk[b].cached)
            lru_unlink(e, b);
        e->bk.used++;
    }
}

static void block_unref(struct atr_engine *e, uint32_t b)
{
    if (--e->blk[b].ref > 0)
        return;
    e->bk.used--;
    e->bk.n_released++;
    if (e->blk[b].cached)
        lru_append(e, b);
    else
        e->free_stack[e->bk.n_free++] = b;
}

/* Notes map entry v (its key still valid) for map_flush. */
static void evicted_add(struct atr_engine *e, uint32_t v)
{
    e->evicted_key[e->n_evicted] = key_of(e, v);
    e->evicted[e->n_evicted++] = v;
}

/* radix_cache: evicts the least recently used leaf (SGLang's radix tree
 * evicts leaves, oldest first): an inner block goes back to the end of the
 * queue to wait for its leaves. Unreferenced cached blocks form a forest
 * whose leaves are queued too (whoever holds a cached block holds its
 * parent, radix_dedup), so this ends. The evicted block leaves the tree
 * (its parent may become a leaf) and the map, under its id and its tail. */
static uint32_t radix_evict(struct atr_engine *e)
{
    uint32_t b;
    while (e->children[b = lru_pop(e)])
        lru_append(e, b);
    evicted_add(e, b);
    e->blk[b].cached = false;
    e->bk.evictions++;
    if (e->parent[b] != NIL)
        e->children[e->parent[b]]--;
    e->parent[b] = NIL;
    if (e->tail_len[b]) {
        evicted_add(e, b | TAIL);
        e->tail_len[b] = 0;
    }
    return b;
}

/* vLLM: evicts the least recently used cached block (its id leaves the
 * map at map_flush). */
static uint32_t block_evict(struct atr_engine *e)
{
    uint32_t b = lru_pop(e);
    evicted_add(e, b);
    e->blk[b].cached = false;
    e->bk.evictions++;
    return b;
}

/* Removes the ids of the blocks evicted since the last call from the map,
 * before it is read again. */
static void map_flush(struct atr_engine *e)
{
    for (uint32_t j = 0; j < e->n_evicted; j++)
        map_remove(e, e->evicted_key[j], e->evicted[j]);
    e->n_evicted = 0;
}

static void req_reserve_blocks(struct req *r, uint32_t n)
{
    if (n <= r->cap_blocks)
        return;
    uint32_t cap = r->cap_blocks ? r->cap_blocks : 16;
    while (cap < n)
        cap *= 2;
    r->blocks = xreallocarray(r->blocks, cap, sizeof(*r->blocks));
    r->cap_blocks = cap;
}

/* Blocks for a number of tokens: a shift for the usual power-of-two block
 * size (it is asked for every running request every iteration). */
static uint32_t blocks_for(const struct atr_engine *e, uint64_t tokens)
{
    tokens += e->cfg.block_size - 1;
    return (uint32_t)(e->block_shift ? tokens >> e->block_shift : tokens / e->cfg.block_size);
}

/* Extends r's block table to `want` blocks: free blocks first, then the
 * least recently used cached ones (radix_cache: leaves). Callers check
 * availability first. */
static void blocks_alloc_to(struct atr_engine *e, struct req *r, uint32_t want)
{
    while (r->n_blocks < want) {
        uint32_t b = e->bk.n_free ? e->free_stack[--e->bk.n_free]
                   : e->children ? radix_evict(e) : block_evict(e);
        e->blk[b].ref = 1;
        e->bk.used++;
        r->blocks[r->n_blocks++] = b;
    }
}

/* req_grow past r's blocks. */
static __attribute__((noinline)) void req_grow_to(struct atr_engine *e, struct req *r,
                                                  uint32_t want, bool *ok)
{
    if (e->kvr) {
        *ok = kvr_grow(e->kvr, want - r->n_blocks);
        if (*ok)
            r->n_blocks = want;
        return;
    }
    if (want - r->n_blocks > e->bk.n_free + e->bk.n_lru) {
        *ok = false;
        return;
    }
    req_reserve_blocks(r, want);
    blocks_alloc_to(e, r, want);
    map_flush(e);
}

/* Extends r's block table to hold `tokens` tokens; false (nothing changed)
 * when not enough blocks can be had. Inline: a decoding request asks every
 * iteration, and needs a block every block_size tokens. */
HOT void req_grow(struct atr_engine *e, struct req *r, uint64_t tokens, bool *ok)
{
    uint32_t want = blocks_for(e, tokens);
    *ok = true;
    if (want > r->n_blocks)
        req_grow_to(e, r, want, ok);
}

/* Frees in reverse so a request's tail blocks are evicted before its head:
 * the head is the part other prompts are likeliest to share. */
static void req_free_blocks(struct atr_engine *e, struct req *r)
{
    if (r->slot) {       /* the slot keeps what it computed, as its cache */
        uint64_t full = r->computed / e->cfg.block_size;
        uint32_t n = r->n_hash < full ? r->n_hash : (uint32_t)full;
        atr_slots_release(e->slots, r->slot - 1, r->hash_ids, n, r->computed);
        r->slot = 0;
    }
    if (e->kvr) {
        kvr_release(e->kvr, &r->kv, r->n_blocks);
        r->n_blocks = 0;
        r->n_hashed = 0;
        return;
    }
    for (uint32_t k = r->n_blocks; k > 0; k--)
        block_unref(e, r->blocks[k - 1]);
    r->n_blocks = 0;
    r->n_hashed = 0;
}

/* radix_cache: registers r's shared tail under block b, r's block i, when
 * the tail starts that block (once the whole block is checked in: then its
 * tokens are computed and kept) and no block holds that tail yet. */
static void radix_tail(struct atr_engine *e, const struct req *r, uint32_t i, uint32_t b)
{
    if (!r->tail)
        return;
    const struct req_tail *t = &e->tails[r->tail - 1];
    if (t->block == i && e->tail_len[b] == 0 && map_find_or_insert(e, t->id, b | TAIL) == NIL) {
        e->tail_key[b] = t->id;
        e->tail_len[b] = t->tokens;
    }
}

/* radix_cache: block i of r, just checked in, joins the tree under r's
 * block i - 1 when that one is cached (it then has r's id i - 1). */
static void radix_link(struct atr_engine *e, const struct req *r, uint32_t i)
{
    uint32_t b = r->blocks[i];
    uint32_t p = i > 0 && e->blk[r->blocks[i - 1]].cached ? r->blocks[i - 1] : NIL;
    e->parent[b] = p;
    if (p != NIL)
        e->children[p]++;
    radix_tail(e, r, i, b);
}

/* radix_cache: r computed block i while another request cached the same id
 * as block x (both prefilled it at once). The tree keeps one copy: r takes
 * x and frees its own, as SGLang's insert does (vLLM keeps both). Then
 * whoever holds a cached block holds its parent, which leaf-first eviction
 * relies on. */
static void radix_dedup(struct atr_engine *e, struct req *r, uint32_t i, uint32_t x)
{
    block_ref(e, x);
    block_unref(e, r->blocks[i]);
    r->blocks[i] = x;
    radix_tail(e, r, i, x);
}

/* Checks block b in under id h unless another block has that id (then b
 * stays private, as vLLM keeps duplicates). */
static void check_in(struct atr_engine *e, uint32_t b, uint64_t h)
{
    if (map_find_or_insert(e, h, b) != NIL)
        return;
    e->blk[b].cached = true;
    e->blk[b].hash = h;
}

/* req_cache_blocks for radix_cache: a block whose id is cached elsewhere
 * is given up for the cached one, and the tree is kept. */
static void radix_cache_blocks(struct atr_engine *e, struct req *r, uint32_t end)
{
    for (uint32_t i = r->n_hashed; i < end; i++) {
        uint32_t b = r->blocks[i];
        uint64_t h = r->hash_ids[i];
        uint32_t x = map_find_or_insert(e, h, b);
        if (x != NIL) {
            radix_dedup(e, r, i, x);
            continue;
        }
        e->blk[b].cached = true;
        e->blk[b].hash = h;
        radix_link(e, r, i);
    }
}

/* Checks newly computed full prompt blocks into the cache. A block past
 * r->n_hashed is never cached: it was allocated to r alone (hits all lie
 * before n_hashed), and only its holder checks a block in. */
static void req_cache_blocks(struct atr_engine *e, struct req *r)
{
    if (!e->cfg.prefix_caching)
        return;
    uint64_t full = r->computed / e->cfg.block_size;
    uint32_t end = r->n_hash < full ? r->n_hash : (uint32_t)full;
    if (r->n_hashed >= end)
        return;
    if (e->kvr) {
        kvr_check_in(e->kvr, &r->kv, r->hash_ids, r->n_hashed, end);
    } else if (e->children) {
        radix_cache_blocks(e, r, end);
    } else {
        for (uint32_t i = r->n_hashed; i < end; i++)
            check_in(e, r->blocks[i], r->hash_ids[i]);
    }
    r->n_hashed = end;
}

/* ---- admission and preemption ---- */

/* radix_cache: tokens of r's shared tail found cached right after its n
 * full-block hits, at most what leaves the last prompt token to compute.
 * The tail's KV is read, not shared: r computes from after it into a block
 * of its own (SGLang shares it at page size 1; the memory is < 1 block). */
static void tail_match(struct atr_engine *e, const struct req *r, uint32_t n)
{
    struct req_tail *t = &e->tails[r->tail - 1];
    t->hit = 0;
    if (n != t->block)
        return;
    uint32_t b = map_find(e, t->id);
    if (b == NIL || !e->blk[b].cached || e->tail_len[b] == 0 || e->tail_key[b] != t->id)
        return;
    uint64_t room = r->num_tokens - 1 - (uint64_t)n * e->cfg.block_size;
    t->hit = t->tokens < room ? t->tokens : (uint32_t)room;
}

/* Prompt tokens r's last prefix match found past its full blocks. */
static uint32_t tail_hit(const struct atr_engine *e, const struct req *r)
{
    return r->tail ? e->tails[r->tail - 1].hit : 0;
}

/* The leading ids of r found in the map, at most max; their blocks go to
 * r->blocks[0..n). */
static uint32_t prefix_match(struct atr_engine *e, struct req *r, uint32_t max)
{
    uint32_t n = 0;
    for (; n < max; n++) {
        uint32_t b = map_find(e, r->hash_ids[n]);
        if (b == NIL)
            break;
        r->blocks[n] = b;
    }
    return n;
}

/* Leading blocks of r found in the cache, leaving at least one token to
 * compute (the last token must run to produce logits, as in vLLM): as runs
 * (kvr_match), or blocks in r->blocks[0..n), which admit takes as they
 * are. */
static uint32_t prefix_hits(struct atr_engine *e, struct req *r)
{
    uint64_t limit = (r->num_tokens - 1) / e->cfg.block_size;
    uint32_t max = r->n_hash < limit ? r->n_hash : (uint32_t)limit;
    uint32_t n = 0;
    if (r->tail)
        e->tails[r->tail - 1].hit = 0;
    if (!e->cfg.prefix_caching)
        return 0;
    if (max == 0) {
        if (r->tail)
            tail_match(e, r, 0);
        return 0;
    }
    if (e->kvr)
        return kvr_match(e->kvr, &r->kv, r->hash_ids, max);
    req_reserve_blocks(r, max);
    n = prefix_match(e, r, max);
    if (r->tail)
        tail_match(e, r, n);
    return n;
}

/* How many of r's n prefix hits are in the LRU queue (nobody holds them),
 * and the oldest queue number among them (UINT64_MAX: none). */
static void hits_in_lru(const struct atr_engine *e, const struct req *r, uint32_t n,
                        uint32_t *in_lru, uint64_t *oldest)
{
    if (e->kvr) {
        kvr_hits_in_lru(e->kvr, &r->kv, in_lru, oldest);
        return;
    }
    const struct engine_block *blk = e->blk;
    uint32_t k = 0;
    uint64_t old = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const struct engine_block *x = &blk[r->blocks[i]];
        if (x->ref == 0) {
            k++;
            if (x->lru_seq < old)
                old = x->lru_seq;
        }
    }
    *in_lru = k;
    *oldest = old;
}

/* Whether r, with its n prefix hits, can have the blocks for `want`: the
 * free and evictable ones less its own hits in the LRU queue. Those are
 * counted only when they could matter (they are at most min(n, n_lru)),
 * which is seldom: a pass over the hits each admission was mostly wasted.
 * When r cannot, *oldest is the oldest queue number among its hits in the
 * queue (see still_fails). */
static void req_end(struct atr_engine *e, struct req *r);

/* The event of a pin's end (its data; the pin itself is the ring's
 * oldest whose time is over). */
static char pin_end_tag;

/* cfg.retain_s: r (marked by atr_engine_set_retain) finished; its blocks
 * stay held (cached and matched, but evicted only after every unpinned
 * block) until retain_s from now, so the session's next turn after a tool
 * pause finds its prefix, at the cost of other requests' cached blocks,
 * evicted in their place. An event at the pin's end releases it. */
static void pin(struct atr_engine *e, struct req *r)
{
    struct atr_error ignored;
    if (atr_heap_push(&e->events, e->now + e->cfg.retain_s, &pin_end_tag, &ignored) < 0) {
        req_free_blocks(e, r);       /* out of memory: no pin, as without retain_s */
        return;
    }
    if (e->pin_len == e->pin_cap) {         /* grow the ring, oldest first */
        size_t cap = e->pin_cap ? 2 * e->pin_cap : 64;
        struct pin *v = xcalloc(cap, sizeof *v);
        for (size_t i = 0; i < e->pin_len; i++)
            v[i] = e->pins[(e->pin_head + i) % e->pin_cap];
        free(e->pins);
        e->pins = v;
        e->pin_head = 0;
        e->pin_cap = cap;
    }
    r->pinned = true;
    e->pins[(e->pin_head + e->pin_len++) % e->pin_cap] =
        (struct pin){ r, e->now + e->cfg.retain_s };
    e->st.kv_pins++;
}

/* The oldest pin ends: its blocks are released as at a request's end
 * (tail first into the LRU queue) and the request goes. */
static void unpin_oldest(struct atr_engine *e)
{
    struct req *r = e->pins[e->pin_head].r;
    e->pin_head = (e->pin_head + 1) % e->pin_cap;
    e->pin_len--;
    r->pinned = false;
    req_free_blocks(e, r);
    req_end(e, r);
}

/* Pins whose time is over. Lazily, when the engine next schedules: an idle
 * engine's cache does not change meanwhile, so the result is the same. */
static void unpin_expired(struct atr_engine *e)
{
    while (e->pin_len && e->pins[e->pin_head].until <= e->now)
        unpin_oldest(e);
}

/* Memory is short for a running or waiting request once nothing unpinned
 * can be evicted: the oldest pin gives way before anything is preempted or
 * kept waiting (a pin is an eviction priority, as in the TTL/priority
 * eviction of vLLM's RFC #52113, not a reservation: a reservation would
 * hold the FCFS queue's head, and every turn behind it, for a pin's
 * sake); counted as the pin's cost. */
static bool unpin_for_memory(struct atr_engine *e)
{
    if (!e->pin_len)
        return false;
    unpin_oldest(e);
    e->st.kv_pins_dropped++;
    return true;
}

static bool blocks_fit(const struct atr_engine *e, const struct req *r, uint32_t n,
                       uint32_t want, uint64_t *oldest)
{
    uint32_t lru = e->kc->n_lru, most = n < lru ? n : lru;
    if (want - n <= e->kc->n_free + lru - most)
        return true;
    uint32_t in_lru;
    hits_in_lru(e, r, n, &in_lru, oldest);
    return want - n <= e->kc->n_free + lru - in_lru;
}

static void preempt(struct atr_engine *e, struct req *r)
{
    req_free_blocks(e, r);
    r->failed = false;
    r->computed = 0;
    r->f->rec.preemptions++;
    e->st.preemptions++;
}

static void batch_add(struct atr_engine *e, struct req *r, uint32_t n, uint64_t *budget)
{
    r->sched_new = n;
    *budget -= n;
    e->batch.v[e->batch.len++] = r;
}

/* slots: as llama-server's update_slots, every generating slot's next
 * token first, then prompt chunks in admission order while the logical
 * batch has room. Nothing is preempted: a slot's KV is its own. */
static void schedule_slots(struct atr_engine *e, uint64_t *budget)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < e->running.len && *budget > 0; i++) {
            struct req *r = e->running.v[i];
            uint64_t n = r->num_tokens - r->computed;
            bool decode = r->f->rec.tokens_done > 0;
            if (decode != (pass == 0))
                continue;
            if (n > *budget)
                n = *budget;
            bool ok;
            req_grow(e, r, r->computed + n, &ok);   /* always ok: see slot_take */
            batch_add(e, r, (uint32_t)n, budget);
        }
}

/* Schedules the running set: decodes and unfinished prefill chunks in
 * admission order; a request that cannot get a block preempts the most
 * recently admitted one (itself last). Returns 1 if anything was preempted. */
static void schedule_running(struct atr_engine *e, uint64_t *budget, bool *preempted)
{
    *preempted = false;
    if (e->slots) {
        schedule_slots(e, budget);
        return;
    }
    for (size_t i = 0; i < e->running.len && *budget > 0; i++) {
        struct req *r = e->running.v[i];
        uint64_t n = r->num_tokens - r->computed;
        if (n > *budget)
            n = *budget;
        for (;;) {
            bool ok;
            req_grow(e, r, r->computed + n, &ok);
            if (ok)
                break;
            if (unpin_for_memory(e))
                continue;
            struct req *victim = e->running.v[--e->running.len];
            preempt(e, victim);
            *preempted = true;
            ring_push_front(&e->waiting, victim);
            if (victim == r)
                return;
        }
        batch_add(e, r, (uint32_t)n, budget);
    }
}

/* Whether r cannot be admitted now whatever its prefix hits: even with the
 * most hits possible, the blocks for its first chunk exceed the free and
 * evictable ones. A queue head that waits for memory is tried every
 * iteration, and matching its prefix each time was most of the lookups. */
static bool cannot_fit(const struct atr_engine *e, const struct req *r, uint64_t budget)
{
    uint64_t hmax = 0;
    if (e->cfg.prefix_caching) {
        hmax = (r->num_tokens - 1) / e->cfg.block_size;
        if (r->n_hash < hmax)
            hmax = r->n_hash;
    }
    uint64_t rest = r->num_tokens - hmax * e->cfg.block_size;   /* computed at least */
    if (r->tail && hmax == e->tails[r->tail - 1].block) {
        uint32_t t = e->tails[r->tail - 1].tokens;
        rest -= t < rest - 1 ? t : rest - 1;
    }
    if (rest > budget && !e->cfg.chunked_prefill)
        return true;
    return blocks_for(e, rest < budget ? rest : budget) > (uint64_t)e->kc->n_free + e->kc->n_lru;
}

/* Whether r, whose last admission failed, must fail again, without
 * matching its prefix. Blocks it can have = free + evictable - its own
 * hits in the LRU queue. That never grew if no block was released since
 * (a release is the only way into the free stack or the queue; another
 * request referencing one of r's hits takes one from both terms) and none
 * of r's hits in the queue was evicted (the queue is evicted in order, so
 * none at or after the oldest of them: else the hits after it stop being
 * hits and become evictable). Its prefix cannot have grown if the id it
 * stopped at is still not cached. And its budget changed in the direction
 * that needs more (with chunked prefill a larger first chunk; without, a
 * smaller limit). */
static bool still_fails(struct atr_engine *e, const struct req *r, uint64_t budget)
{
    if (!r->failed || r->fail_released != e->kc->n_released ||
        e->kc->evicted_seq >= r->fail_lru_seq)
        return false;
    if (e->cfg.chunked_prefill ? budget < r->fail_budget : budget > r->fail_budget)
        return false;
    if (r->tail && r->fail_hits == e->tails[r->tail - 1].block)
        return false;       /* its tail may have been cached since: match again */
    uint64_t limit = (r->num_tokens - 1) / e->cfg.block_size;
    uint32_t max = r->n_hash < limit ? r->n_hash : (uint32_t)limit;
    if (!e->cfg.prefix_caching || r->fail_hits >= max)
        return true;
    if (e->kvr)
        return !kvr_cached_at(e->kvr, &r->kv, r->hash_ids, r->fail_hits);
    return map_find(e, r->hash_ids[r->fail_hits]) == NIL;
}

static void admit_failed(struct atr_engine *e, struct req *r, uint32_t hits, uint64_t budget,
                         uint64_t oldest)
{
    r->failed = true;
    r->fail_lru_seq = oldest;
    r->fail_hits = hits;
    r->fail_budget = budget;
    r->fail_released = e->kc->n_released;
}

/* block_ref for each of r's n prefix hits, over locals (see
 * req_free_blocks): a hit taken out of the LRU queue just forgets its
 * index there. */
static void ref_hits(struct atr_engine *e, const uint32_t *v, uint32_t n)
{
    struct engine_block *blk = e->blk;
    uint32_t taken = 0, unlinked = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct engine_block *x = &blk[v[i]];
        if (x->ref++ != 0)
            continue;
        taken++;
        if (x->cached) {
            x->lru_at = NIL;
            unlinked++;
        }
    }
    e->bk.used += taken;
    e->bk.n_lru -= unlinked;
}

/* slots: takes a slot for r (one is idle: running < slots), and returns
 * the prompt tokens it holds. Its blocks then always suffice: the pool is
 * a slot's context per slot (atr_engine_new) and r fits one. */
static uint64_t slot_take(struct atr_engine *e, struct req *r)
{
    uint32_t cached;
    int i = atr_slots_take(e->slots, r->hash_ids, r->n_hash, (uint32_t)r->num_tokens, &cached);
    r->slot = (uint32_t)i + 1;
    return e->slot_cache ? cached : 0;
}

/* Admits r with its prefix hits and a first chunk; *ok false if it does not
 * fit now (then nothing changed but what the next try may skip). */
static void admit(struct atr_engine *e, struct req *r, uint64_t *budget, bool *ok)
{
    *ok = false;
again:
    if (still_fails(e, r, *budget) || cannot_fit(e, r, *budget)) {
        if (unpin_for_memory(e))
            goto again;
        return;
    }
    uint32_t in_lru, hits = 0;
    uint64_t oldest, cached;
    if (e->slots) {
        cached = slot_take(e, r);
    } else {
        hits = prefix_hits(e, r);
        cached = (uint64_t)hits * e->cfg.block_size + tail_hit(e, r);
    }
    uint64_t n = r->num_tokens - cached;
    if (n > *budget) {
        if (!e->cfg.chunked_prefill) {
            hits_in_lru(e, r, hits, &in_lru, &oldest);
            admit_failed(e, r, hits, *budget, oldest);
            return;
        }
        n = *budget;
    }
    uint32_t want = blocks_for(e, cached + n);
    if (!blocks_fit(e, r, hits, want, &oldest)) {
        if (unpin_for_memory(e))
            goto again;
        admit_failed(e, r, hits, *budget, oldest);
        return;
    }
    r->failed = false;
    if (e->kvr) {
        kvr_ref_hits(e->kvr, &r->kv);   /* kvr_match found them */
    } else {
        req_reserve_blocks(r, want);
        ref_hits(e, r->blocks, hits);   /* prefix_hits put them there */
    }
    r->n_blocks = hits;
    r->n_hashed = hits;
    r->computed = cached;
    bool grown;
    req_grow(e, r, cached + n, &grown);
    if (!r->admitted_once) {
        r->admitted_once = true;
        r->f->rec.cached_tokens = (uint32_t)cached;
        r->f->rec.first_scheduled = e->now;
        e->st.prompt_tokens += r->f->rec.prompt_tokens;
        e->st.cached_tokens += cached;
    }
    batch_add(e, r, (uint32_t)n, budget);
    *ok = true;
    vec_push(&e->running, r);
}

/* Longest-prefix-first: reorders the waiting queue by cached prefix length
 * (stable), as SGLang's scheduler does; it falls back to FCFS over 128
 * waiting requests because matching them all would cost too much. */
#define LPM_MAX_WAITING 128

struct lpm_item {
    struct req *r;
    uint64_t hits;           /* cached prompt tokens */
    size_t order;
};

/* Whether x goes before y: more cached tokens first, then queue order. */
static bool lpm_before(const struct lpm_item *x, const struct lpm_item *y)
{
    return x->hits != y->hits ? x->hits > y->hits : x->order < y->order;
}

static void lpm_sort(struct atr_engine *e)
{
    struct engine_ring *q = &e->waiting;
    if (q->len < 2 || q->len > LPM_MAX_WAITING)
        return;
    struct lpm_item items[LPM_MAX_WAITING];
    for (size_t i = 0; i < q->len; i++) {
        struct req *r = q->v[(q->head + i) % q->cap];
        uint64_t hits = (uint64_t)prefix_hits(e, r) * e->cfg.block_size;
        items[i] = (struct lpm_item){ r, hits + tail_hit(e, r), i };
    }
    /* Insertion sort: the queue is mostly in this order already (it was
     * sorted the iteration before), and the keys are unique (the order),
     * so any sort gives this one result. */
    for (size_t i = 1; i < q->len; i++) {
        struct lpm_item x = items[i];
        size_t j = i;
        for (; j > 0 && lpm_before(&x, &items[j - 1]); j--)
            items[j] = items[j - 1];
        items[j] = x;
    }
    for (size_t i = 0; i < q->len; i++)
        q->v[(q->head + i) % q->cap] = items[i].r;
}

static void schedule_waiting(struct atr_engine *e, uint64_t *budget)
{
    if (e->cfg.longest_prefix_first)
        lpm_sort(e);
    while (*budget > 0 && e->running.len < e->cfg.max_num_seqs) {
        struct req *r = ring_front(&e->waiting);
        bool ok;
        if (!r)
            break;
        admit(e, r, budget, &ok);
        if (!ok)
            break;          /* FCFS: the head blocks the queue */
        ring_pop_front(&e->waiting);
    }
}

/* ---- iterations ---- */

static void work_of_batch(const struct atr_engine *e, struct atr_iter_work *w)
{
    memset(w, 0, sizeof(*w));
    for (size_t i = 0; i < e->batch.len; i++) {
        const struct req *r = e->batch.v[i];
        bool decode = r->f->rec.tokens_done > 0 && r->num_tokens - r->computed == 1;
        if (decode) {
            w->decode_seqs++;
            w->decode_ctx_tokens += r->num_tokens;
        } else {     /* one chunk per request: its own attention pairs, its own sequence */
            atr_iter_add_prefill(w, r->sched_new, r->computed);
        }
    }
}

/* The steps a batch runs: a multi-step window (num_scheduler_steps) for a
 * decode-only batch whose requests all get the KV blocks of its later
 * steps first (vLLM's lookahead slots); else one. A request that cannot
 * have them makes it one step (blocks already taken stay its own; vLLM
 * would preempt instead). */
static unsigned window_steps(struct atr_engine *e, const struct atr_iter_work *w)
{
    unsigned k = e->cfg.num_scheduler_steps;
    if (k <= 1 || w->prefill_tokens)
        return 1;
    for (size_t i = 0; i < e->batch.len; i++) {
        struct req *r = e->batch.v[i];
        bool ok;
        req_grow(e, r, r->computed + k, &ok);
        if (!ok)
            return 1;
    }
    return k;
}

static int start_iteration(struct atr_engine *e, struct atr_error *err)
{
    uint64_t budget = e->cfg.max_num_batched_tokens;
    bool preempted;
    e->batch.len = 0;
    unpin_expired(e);
    if (e->cfg.prefill_first) {
        /* V0: a prefill-only iteration if any prompt fits, else decodes */
        schedule_waiting(e, &budget);
        if (e->batch.len == 0)
            schedule_running(e, &budget, &preempted);
    } else {
        schedule_running(e, &budget, &preempted);
        if (!preempted)
            schedule_waiting(e, &budget);
    }
    if (e->batch.len == 0)
        return atr_error_set(err, "engine: stalled with %zu waiting requests",
                             e->waiting.len);
    struct atr_iter_work w;
    work_of_batch(e, &w);
    unsigned steps = window_steps(e, &w);
    uint32_t used = e->kc->used;
    if (used > e->st.kv_blocks_peak)
        e->st.kv_blocks_peak = used;
    e->window_first = e->st.iterations;
    double dt = 0;
    for (unsigned s = 0; s < steps; s++) {
        if (s) {                             /* each step a token further on */
            w.decode_ctx_tokens += w.decode_seqs;
            w.window_step = true;
        }
        double ds = e->cfg.iter_seconds(e->cfg.cost_ctx, &w);
        if (!(ds > 0) || !isfinite(ds))
            return atr_error_set(err, "engine: iteration cost %g s is not a positive time", ds);
        e->kv_time_sum += (double)used * ds;
        e->batch_sum += (double)e->batch.len;
        e->st.busy_seconds += ds;
        e->st.prefill_tokens += w.prefill_tokens;
        e->st.decode_tokens += w.decode_seqs;
        e->hist[e->batch.len]++;
        if (e->cfg.on_iter) {
            struct atr_iter_info it = { e->st.iterations, e->now + dt, ds,
                                        (unsigned)e->batch.len, w, used };
            e->cfg.on_iter(e->cfg.iter_ctx, &it);
        }
        e->st.iterations++;
        dt += ds;
    }
    if (atr_heap_push(&e->events, e->now + dt, &iter_end_tag, err) < 0)
        return -1;
    /* The same double the clock will reach; a window's tokens all come at
     * its end (one log entry per step). */
    for (unsigned s = 0; s < steps; s++)
        log_push(e, e->now + dt);
    e->busy = true;
    return 0;
}

static void rec_destroy(struct atr_engine *e, struct req_rec *f);

static void req_table_free(const struct atr_engine *e, struct req *r)
{
    if (e->kvr)
        kvr_table_release(&r->kv);
    else
        free(r->blocks);
}

/* Frees r's scheduling state once the engine holds it nowhere (its blocks
 * already released): a request that ended keeps only its record, which
 * goes too when it was released meanwhile. */
static void req_end(struct atr_engine *e, struct req *r)
{
    struct req_rec *f = r->f;
    bool release = r->release_pending;
    req_table_free(e, r);
    free(r);
    f->live = NULL;
    if (release)
        rec_destroy(e, f);
}

/* Whether r is over: it produced its last token, or was aborted. */
static bool req_over(const struct req *r)
{
    return r->aborted || r->f->rec.tokens_done == r->f->rec.output_tokens;
}

/* Applies the finished iteration to r; true when r leaves the running set
 * (finished or aborted: req_over). */
HOT bool req_end_iteration(struct atr_engine *e, struct req *r)
{
    struct req_rec *f = r->f;
    r->computed += r->sched_new;
    r->sched_new = 0;
    if (r->n_hashed < r->n_hash)   /* prompt blocks left to check in */
        req_cache_blocks(e, r);
    if (r->aborted) {      /* computed KV stays cached; nothing is sampled */
        req_free_blocks(e, r);
        return true;
    }
    if (r->computed < r->num_tokens)
        return false;
    token_add(e, f);
    if (f->rec.tokens_done == 1)
        f->rec.first_token = e->now;
    r->num_tokens++;
    if (f->rec.tokens_done < f->rec.output_tokens)
        return false;
    f->rec.finish = e->now;
    if (r->retain && e->cfg.retain_s > 0 && !e->slots && r->n_blocks)
        pin(e, r);
    else
        req_free_blocks(e, r);
    e->pending--;
    e->st.requests_finished++;
    rec_vec_push(&e->done, f);
    return true;
}

/* Applies the finished iteration: KV computed, tokens sampled, requests
 * done. Only a request of the batch can have finished or been aborted
 * since the last iteration and still be running (atr_engine_abort takes
 * any other out at once), so without one the running set stays as it is:
 * most iterations finish nobody. */
static void end_iteration(struct atr_engine *e)
{
    size_t gone = 0;
    bool later = false;                 /* a multi-step window's later steps */
    for (e->cur_iter = e->window_first; e->cur_iter < e->st.iterations; e->cur_iter++) {
        for (size_t i = 0; i < e->batch.len; i++) {
            struct req *r = e->batch.v[i];
            if (later) {
                if (req_over(r))
                    continue;
                r->sched_new = 1;
            }
            gone += req_end_iteration(e, r);
        }
        later = true;
    }
    if (gone) {
        size_t k = 0;       /* drop finished requests, keeping admission order */
        for (size_t i = 0; i < e->running.len; i++)
            if (!req_over(e->running.v[i]))
                e->running.v[k++] = e->running.v[i];
        e->running.len = k;
        for (size_t i = 0; i < e->batch.len; i++)
            if (req_over(e->batch.v[i]) && !e->batch.v[i]->pinned)
                req_end(e, e->batch.v[i]);
    }
    e->batch.len = 0;
    e->busy = false;
}

/* ---- public API ---- */

void atr_engine_cfg_defaults(struct atr_engine_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->block_size = 16;
    cfg->max_num_seqs = 256;
    cfg->max_num_batched_tokens = 8192;
    cfg->chunked_prefill = true;
    cfg->prefix_caching = true;
}

/* The block model's structures (block_cache). */
static void blocks_alloc(struct atr_engine *e)
{
    /* A sparse map, at most 1/16 full: an eviction's backward shift walks
     * the rest of its probe run. */
    size_t map_cap = 64;
    while (map_cap < 16 * (size_t)e->n_blocks && map_cap < ((size_t)1 << 32))
        map_cap *= 2;
    e->map_mask = map_cap - 1;
    e->map_shift = 64;
    for (size_t c = map_cap; c > 1; c >>= 1)
        e->map_shift--;
    size_t nb = e->n_blocks ? e->n_blocks : 1;
    e->blk = xcalloc(nb, sizeof(*e->blk));
    e->free_stack = xreallocarray(NULL, e->n_blocks ? e->n_blocks : 1, sizeof(*e->free_stack));
    e->map = xreallocarray(NULL, map_cap, sizeof(*e->map));
    /* an evicted block leaves the map under its id and (radix) its tail */
    e->evicted = xreallocarray(NULL, (e->cfg.radix_cache ? 2 : 1) * nb, sizeof(*e->evicted));
    e->evicted_key = xreallocarray(NULL, (e->cfg.radix_cache ? 2 : 1) * nb,
                                   sizeof(*e->evicted_key));
    if (e->cfg.radix_cache) {
        e->parent = xreallocarray(NULL, nb, sizeof(*e->parent));
        memset(e->parent, 0xff, nb * sizeof(*e->parent));
        e->children = xcalloc(nb, sizeof(*e->children));
        e->tail_key = xcalloc(nb, sizeof(*e->tail_key));
        e->tail_len = xcalloc(nb, sizeof(*e->tail_len));
    }
    size_t lru_cap = 64;                 /* >= 2 * blocks + 64: see lru_compact */
    while (lru_cap < 2 * (size_t)e->n_blocks + 64)
        lru_cap *= 2;
    e->lru_cap = (uint32_t)lru_cap;
    e->lru = xcalloc(e->lru_cap, sizeof(*e->lru));
    memset(e->map, 0xff, map_cap * sizeof(*e->map));
    /* Stack order makes block 0 the first allocated: easier to read in tests. */
    for (uint32_t i = 0; i < e->n_blocks; i++) {
        e->blk[i].lru_at = NIL;
        e->free_stack[i] = e->n_blocks - 1 - i;
    }
    e->bk.n_free = e->n_blocks;
}

static void engine_alloc(struct atr_engine *e)
{
    if (e->cfg.block_cache) {
        blocks_alloc(e);
        e->kc = &e->bk;
    } else {
        e->kvr = kvr_new(e->n_blocks, e->cfg.radix_cache);
        e->kc = kvr_counts(e->kvr);
    }
    e->hist = xcalloc(e->cfg.max_num_seqs + 1, sizeof(*e->hist));
    e->batch.v = xreallocarray(NULL, e->cfg.max_num_seqs + 1, sizeof(*e->batch.v));
    if (e->cfg.block_size > 1 && !(e->cfg.block_size & (e->cfg.block_size - 1)))
        while ((1u << e->block_shift) < e->cfg.block_size)
            e->block_shift++;
}

struct atr_engine *atr_engine_new(const struct atr_engine_cfg *cfg, struct atr_error *err)
{
    struct atr_engine_cfg c = *cfg;
    if (!c.iter_seconds)
        return atr_error_set(err, "engine: no iteration cost callback"), NULL;
    if (!c.block_size)
        c.block_size = 16;
    if (!c.max_num_seqs)
        c.max_num_seqs = 256;
    if (!c.max_num_batched_tokens)
        c.max_num_batched_tokens = 8192;
    uint64_t nb = c.kv_capacity_tokens / c.block_size, slot_ctx = 0;
    bool slot_cache = c.prefix_caching;
    if (c.slots) {
        slot_ctx = c.kv_capacity_tokens / c.slots;
        if (slot_ctx < 2)
            return atr_error_set(err, "engine: a context of %llu tokens over %u slots leaves "
                                 "less than 2 tokens a slot",
                                 (unsigned long long)c.kv_capacity_tokens, c.slots), NULL;
        /* each slot's context in whole blocks, so a request that fits a
         * slot always has its blocks */
        nb = (uint64_t)c.slots * ((slot_ctx + c.block_size - 1) / c.block_size);
        c.max_num_seqs = c.slots;
        c.chunked_prefill = true;
        c.prefix_caching = false;        /* the slots' caches instead */
        c.longest_prefix_first = c.radix_cache = c.prefill_first = false;
        c.num_scheduler_steps = 0;
    }
    if (nb == 0 || nb >= NIL / 2)
        return atr_error_set(err, "engine: KV capacity of %llu tokens gives %llu blocks",
                             (unsigned long long)c.kv_capacity_tokens,
                             (unsigned long long)nb), NULL;
    struct atr_engine *e = xcalloc(1, sizeof(*e));
    e->cfg = c;
    e->n_blocks = (uint32_t)nb;
    if (c.slots) {
        struct atr_slots_cfg sc = { c.slots, c.block_size, c.slot_similarity,
                                    c.prompt_cache_tokens };
        e->slots = atr_slots_new(&sc);
        e->slot_cache = slot_cache;
        e->slot_ctx = slot_ctx;
    }
    atr_heap_init(&e->events);
    engine_alloc(e);
    return e;
}

void atr_engine_free(struct atr_engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->all.len; i++) {
        struct req_rec *f = e->all.v[i];
        if (f->live) {
            req_table_free(e, f->live);
            free(f->live);
        }
        free(f->times);
    }
    for (size_t i = 0; i < e->n_rec_chunks; i++)
        free(e->rec_chunks[i]);
    free(e->rec_chunks);
    free(e->log);
    free(e->all.v);
    free(e->running.v);
    free(e->batch.v);
    free(e->done.v);
    free(e->waiting.v);
    free(e->blk);
    free(e->parent);
    free(e->children);
    free(e->tail_key);
    free(e->tail_len);
    free(e->tails);
    free(e->free_stack);
    free(e->map);
    free(e->evicted);
    free(e->evicted_key);
    free(e->lru);
    free(e->pins);
    free(e->hist);
    kvr_free(e->kvr);
    atr_slots_free(e->slots);
    atr_heap_release(&e->events);
    free(e);
}

bool atr_engine_fits_kv(const struct atr_engine *e, uint32_t prompt_tokens,
                        uint32_t output_tokens)
{
    uint64_t tokens = (uint64_t)prompt_tokens + output_tokens;
    if (e->slots)
        return tokens <= e->slot_ctx;
    return blocks_for(e, tokens) <= e->n_blocks;
}

bool atr_engine_fits(const struct atr_engine *e, uint32_t prompt_tokens,
                     uint32_t output_tokens)
{
    uint64_t tokens = (uint64_t)prompt_tokens + output_tokens;
    return atr_engine_fits_kv(e, prompt_tokens, output_tokens) &&
           (e->cfg.chunked_prefill || tokens <= e->cfg.max_num_batched_tokens);
}

static int check_req(const struct atr_engine *e, const struct atr_sim_req *q,
                     struct atr_error *err)
{
    unsigned long long id = q->id;
    if (!(q->arrival >= e->now) || !isfinite(q->arrival))
        return atr_error_set(err, "engine: request %llu arrives at %g s, before the clock (%g s)",
                             id, q->arrival, e->now);
    if (q->prompt_tokens == 0 || q->output_tokens == 0)
        return atr_error_set(err, "engine: request %llu has no prompt or output tokens", id);
    return 0;
}

/* Why a request can never run, with its sizes (no "engine:" prefix: the
 * driver puts the trace and turn in front). */
static int oversized_error(const struct atr_engine *e, const struct atr_sim_req *q,
                           struct atr_error *err)
{
    uint64_t need = blocks_for(e, (uint64_t)q->prompt_tokens + q->output_tokens);
    if (e->slots)
        return atr_error_set(err, "request %llu (%u prompt + %u output tokens) is longer than "
                             "a slot's context (%llu tokens)", (unsigned long long)q->id,
                             q->prompt_tokens, q->output_tokens,
                             (unsigned long long)e->slot_ctx);
    if (need > e->n_blocks)
        return atr_error_set(err, "request %llu needs %llu KV blocks (%u prompt + %u output "
                             "tokens), the KV cache holds %u", (unsigned long long)q->id,
                             (unsigned long long)need, q->prompt_tokens, q->output_tokens,
                             e->n_blocks);
    return atr_error_set(err, "request %llu (%u prompt + %u output tokens) is longer than "
                         "max_num_batched_tokens (%u) without chunked prefill",
                         (unsigned long long)q->id, q->prompt_tokens, q->output_tokens,
                         e->cfg.max_num_batched_tokens);
}

#define REC_CHUNK 1024

/* A zeroed record from the chunks, listed in e->all. */
static struct req_rec *rec_new(struct atr_engine *e)
{
    struct req_rec *f = e->rec_free;
    if (f) {
        e->rec_free = f->next_free;
        memset(f, 0, sizeof *f);
    } else {
        if (e->n_rec_chunks == 0 || e->rec_chunk_used == REC_CHUNK) {
            e->rec_chunks = xreallocarray(e->rec_chunks, e->n_rec_chunks + 1,
                                          sizeof *e->rec_chunks);
            e->rec_chunks[e->n_rec_chunks++] = xcalloc(REC_CHUNK, sizeof(struct req_rec));
            e->rec_chunk_used = 0;
        }
        f = &e->rec_chunks[e->n_rec_chunks - 1][e->rec_chunk_used++];
    }
    rec_vec_push(&e->all, f);
    f->all_index = e->all.len - 1;
    return f;
}

static struct req_rec *req_new(struct atr_engine *e, const struct atr_sim_req *q)
{
    struct req_rec *f = rec_new(e);
    f->rec.id = q->id;
    f->rec.prompt_tokens = q->prompt_tokens;
    f->rec.output_tokens = q->output_tokens;
    f->rec.arrival = q->arrival;
    f->rec.first_scheduled = f->rec.first_token = f->rec.finish = NAN;
    return f;
}

/* The scheduling state of a request that fits. */
static struct req *req_live(struct atr_engine *e, struct req_rec *f, const struct atr_sim_req *q)
{
    struct req *r = xcalloc(1, sizeof(*r));
    f->live = r;
    r->f = f;
    r->hash_ids = q->hash_ids;
    uint64_t full = q->prompt_tokens / e->cfg.block_size;
    r->n_hash = q->hash_ids ? (uint32_t)(q->n_hash_ids < full ? q->n_hash_ids : full) : 0;
    r->num_tokens = q->prompt_tokens;
    return r;
}

const struct atr_sim_record *atr_engine_add(struct atr_engine *e, const struct atr_sim_req *q,
                                            struct atr_error *err)
{
    if (check_req(e, q, err) < 0)
        return NULL;
    bool fits = atr_engine_fits(e, q->prompt_tokens, q->output_tokens);
    if (!fits && !e->cfg.skip_oversized)
        return oversized_error(e, q, err), NULL;
    struct req_rec *f = req_new(e, q);
    if (!fits) {             /* vLLM answers such a request with an error at once */
        f->rec.rejected = true;
        f->rec.finish = q->arrival;
        e->st.requests_rejected++;
        return &f->rec;
    }
    struct req *r = req_live(e, f, q);
    r->arriving = true;
    e->pending++;
    e->st.requests_added++;
    return atr_heap_push(&e->events, q->arrival, r, err) < 0 ? NULL : &f->rec;
}

int atr_engine_set_tail(struct atr_engine *e, const struct atr_sim_record *rec,
                        uint64_t tail_id, uint32_t tail_block, uint32_t tail_tokens,
                        struct atr_error *err)
{
    if (tail_tokens == 0 || tail_tokens >= e->cfg.block_size)
        return atr_error_set(err, "engine: request %llu: a shared tail of %u tokens, not "
                             "1 to %u", (unsigned long long)rec->id, tail_tokens,
                             e->cfg.block_size - 1);
    if (e->cfg.radix_cache && e->kvr)
        return atr_error_set(err, "engine: request %llu: shared tails need the radix "
                             "cache kept block by block (block_cache)",
                             (unsigned long long)rec->id);
    struct req *r = ((const struct req_rec *)rec)->live;   /* rec is the first member */
    if (!e->cfg.radix_cache || !r)          /* rejected (or already over) */
        return 0;
    if (!r->tail) {
        if (e->n_tails == e->cap_tails) {
            e->cap_tails = e->cap_tails ? 2 * e->cap_tails : 16;
            e->tails = xreallocarray(e->tails, e->cap_tails, sizeof(*e->tails));
        }
        r->tail = (uint32_t)++e->n_tails;
    }
    e->tails[r->tail - 1] = (struct req_tail){ tail_id, tail_block, tail_tokens, 0 };
    return 0;
}

const double *atr_engine_token_times(const struct atr_engine *e,
                                     const struct atr_sim_record *rec)
{
    const struct req_rec *f = (const struct req_rec *)rec;      /* rec is the first member */
    if (!rec->tokens_done)
        return NULL;
    return f->times ? f->times : e->log + (f->first_iter - e->log_base);
}

double atr_engine_now(const struct atr_engine *e)
{
    return e->now;
}

double atr_engine_next_time(const struct atr_engine *e)
{
    if (e->due)
        return e->now;
    const struct atr_heap_item *top = atr_heap_peek(&e->events);
    return top ? top->t : INFINITY;
}

static void process_event(struct atr_engine *e, void *data)
{
    if (data == &iter_end_tag) {
        end_iteration(e);
        return;
    }
    if (data == &pin_end_tag) {
        unpin_expired(e);
        return;
    }
    struct req *r = data;
    if (r->aborted) {          /* aborted before it arrived */
        r->arriving = false;
        req_end(e, r);
        return;
    }
    r->arriving = false;
    ring_push_back(&e->waiting, data);
}

static int engine_step(struct atr_engine *e, struct atr_error *err)
{
    struct atr_heap_item it;
    if (e->due) {
        e->due = false;
        return start_iteration(e, err);
    }
    if (!atr_heap_pop(&e->events, &it))
        return 0;
    e->now = it.t;
    process_event(e, it.data);
    /* Every event at this instant lands before the next schedule, so an
     * arrival tied with an iteration end joins that next iteration. */
    while (atr_heap_peek(&e->events) && atr_heap_peek(&e->events)->t == e->now) {
        atr_heap_pop(&e->events, &it);
        process_event(e, it.data);
    }
    if (!e->busy && (e->running.len || e->waiting.len))
        e->due = true;
    return 0;
}

int atr_engine_step(struct atr_engine *e, struct atr_error *err)
{
    e->done.len = 0;
    return engine_step(e, err);
}

int atr_engine_run_until(struct atr_engine *e, double t, struct atr_error *err)
{
    e->done.len = 0;
    for (;;) {
        double next = atr_engine_next_time(e);
        if (next > t || next == INFINITY)
            return 0;
        if (engine_step(e, err) < 0)
            return -1;
    }
}

struct atr_sim_record *const *atr_engine_finished(const struct atr_engine *e, size_t *n)
{
    *n = e->done.len;
    return (struct atr_sim_record *const *)e->done.v;
}

size_t atr_engine_pending(const struct atr_engine *e)
{
    return e->pending;
}

void atr_engine_get_stats(const struct atr_engine *e, struct atr_engine_stats *out)
{
    *out = e->st;
    out->evictions = e->kc->evictions;
    out->prefix_hit_rate = e->st.prompt_tokens
        ? (double)e->st.cached_tokens / (double)e->st.prompt_tokens : 0;
    out->kv_blocks_total = e->n_blocks;
    out->kv_blocks_mean = e->st.busy_seconds > 0 ? e->kv_time_sum / e->st.busy_seconds : 0;
    out->batch_mean = e->st.iterations ? e->batch_sum / (double)e->st.iterations : 0;
    out->batch_hist_len = e->cfg.max_num_seqs + 1;
    out->batch_hist = e->hist;
}

size_t atr_engine_num_running(const struct atr_engine *e)
{
    return e->running.len;
}

size_t atr_engine_num_waiting(const struct atr_engine *e)
{
    return e->waiting.len;
}

uint32_t atr_engine_kv_blocks_used(const struct atr_engine *e)
{
    return e->kc->used;
}

unsigned atr_engine_slots(const struct atr_engine *e)
{
    return e->cfg.slots;
}

uint32_t atr_engine_kv_blocks_total(const struct atr_engine *e)
{
    return e->n_blocks;
}

/* Unlinks record f (its request over) from e->all and the finished list
 * and puts it on the free list. */
static void rec_destroy(struct atr_engine *e, struct req_rec *f)
{
    for (size_t i = 0; i < e->done.len; i++)
        if (e->done.v[i] == f) {
            memmove(&e->done.v[i], &e->done.v[i + 1], (e->done.len - i - 1) * sizeof(f));
            e->done.len--;
            break;
        }
    struct req_rec *last = e->all.v[--e->all.len];
    e->all.v[f->all_index] = last;
    last->all_index = f->all_index;
    free(f->times);
    f->times = NULL;
    f->all_index = SIZE_MAX;        /* no longer this engine's (see rec_of) */
    f->next_free = e->rec_free;
    e->rec_free = f;
}

/* rec as this engine's record, or NULL when it is not (any more). */
static struct req_rec *rec_of(const struct atr_engine *e, const struct atr_sim_record *rec)
{
    struct req_rec *f = (struct req_rec *)rec;      /* rec is the first member */
    return f->all_index < e->all.len && e->all.v[f->all_index] == f ? f : NULL;
}

static bool in_vec(const struct req_vec *v, const struct req *r)
{
    for (size_t i = 0; i < v->len; i++)
        if (v->v[i] == r)
            return true;
    return false;
}

/* Removes r from the waiting queue; false when it is not there. */
static bool ring_remove(struct engine_ring *q, const struct req *r)
{
    for (size_t i = 0; i < q->len; i++) {
        if (q->v[(q->head + i) % q->cap] != r)
            continue;
        for (size_t k = i; k + 1 < q->len; k++)
            q->v[(q->head + k) % q->cap] = q->v[(q->head + k + 1) % q->cap];
        q->len--;
        return true;
    }
    return false;
}

int atr_engine_abort(struct atr_engine *e, const struct atr_sim_record *rec)
{
    struct req_rec *f = rec_of(e, rec);
    if (!f)
        return -1;
    struct req *r = f->live;
    if (!r || r->aborted)
        return 0;                           /* already over */
    r->aborted = true;
    f->rec.aborted = true;
    f->rec.finish = e->now;
    e->pending--;
    e->st.requests_aborted++;
    if (r->arriving || (e->busy && in_vec(&e->batch, r)))
        return 0;                           /* the event or iteration end lets go of it */
    if (!ring_remove(&e->waiting, r)) {     /* running, between iterations */
        size_t k = 0;
        for (size_t i = 0; i < e->running.len; i++)
            if (e->running.v[i] != r)
                e->running.v[k++] = e->running.v[i];
        e->running.len = k;
    }
    req_free_blocks(e, r);
    req_end(e, r);
    return 0;
}

int atr_engine_release_record(struct atr_engine *e, const struct atr_sim_record *rec)
{
    struct req_rec *f = rec_of(e, rec);
    struct req *r = f ? f->live : NULL;
    if (!f || (r && (!r->aborted || r->release_pending)))
        return -1;                          /* not ours, still running or released */
    if (r) {                                /* aborted, still in an event or iteration */
        r->release_pending = true;          /* freed when the engine lets go of it */
        return 0;
    }
    rec_destroy(e, f);
    return 0;
}

void atr_engine_set_retain(struct atr_engine *e, const struct atr_sim_record *rec)
{
    struct req_rec *f = rec_of(e, rec);
    if (f->live)
        f->live->retain = true;
}
