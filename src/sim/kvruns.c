/* kvruns.c - the KV cache as runs of chained block ids: reference counts,
 * the eviction queue and lookups per run, not per block (see kvruns.h). */
#include "sim/kvruns.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define NIL UINT32_MAX

/* Holders whose hold ends at `end`. */
struct run_end {
    uint32_t end, n;
};

/* Positions [lo, c) of one id chain, cached. Its holders hold [lo, end)
 * each, so the unreferenced part is [max end, c): queued, in pieces,
 * deepest (oldest) first. */
struct run {
    uint64_t *ids;               /* ids[d - lo]: its own copy */
    uint32_t cap_ids;
    uint32_t lo, c;
    struct run_end *ends;        /* largest first */
    uint32_t n_ends, cap_ends;
    uint32_t oldest, newest;     /* its queued pieces, deepest and shallowest */
    uint32_t version;            /* changes with c, and when the run goes */
    uint32_t next_free;          /* in the pool's free list */
};

/* Positions [a, b) of a run, queued by one release: position d has queue
 * number seq_top + (top - 1 - d) (a release queues the deepest first).
 * A prefix hit takes positions from a; an eviction from b. */
struct piece {
    uint32_t run, a, b, top;
    uint64_t seq_top;
    uint32_t deeper, shallower;  /* the run's neighbouring pieces */
    bool dead;                   /* emptied by a hit; still in the queue */
    uint32_t next_free;
};

struct map_slot {
    uint64_t key;                /* mix(the run's first id) */
    uint32_t run;                /* NIL: empty */
};

struct kvr {
    struct kvr_counts k;
    bool one_copy;
    struct run *runs;
    uint32_t n_runs, free_runs;
    struct piece *pieces;
    uint32_t n_pieces, free_pieces;
    /* The eviction queue: pieces in the order they were queued, a ring
     * (power-of-two cap); dead ones are skipped at the head. */
    uint32_t *queue;
    uint32_t q_head, q_len, q_cap;
    /* Runs by their first id: open addressing, linear probing, backward
     * shift; at most a quarter full. */
    struct map_slot *map;
    uint32_t map_mask, map_used;
    unsigned map_shift;
    /* How many run starts have each top FILTER_BITS of their key (255:
     * that many or more, kept for good): a check-in asks about every
     * block it caches, and nearly always no run starts there, which one
     * byte answers without a probe of the map. */
    uint8_t *filter;
};

#define FILTER_BITS 16

/* Ids are odd-multiplied (a bijection) and homed by their top bits, as
 * engine.c's block map does. */
static uint64_t mix(uint64_t x)
{
    return x * 0x9e3779b97f4a7c15ULL;
}

/* ---- runs by first id ---- */

static void map_alloc(struct kvr *c, uint32_t cap)
{
    c->map = xreallocarray(NULL, cap, sizeof(*c->map));
    for (uint32_t i = 0; i < cap; i++)
        c->map[i].run = NIL;
    c->map_mask = cap - 1;
    c->map_shift = 64;
    for (uint32_t s = cap; s > 1; s >>= 1)
        c->map_shift--;
    c->map_used = 0;
}

static uint32_t map_find(const struct kvr *c, uint64_t id)
{
    uint64_t k = mix(id);
    for (uint32_t i = (uint32_t)(k >> c->map_shift);; i = (i + 1) & c->map_mask) {
        const struct map_slot *s = &c->map[i];
        if (s->run == NIL)
            return NIL;
        if (s->key == k)
            return s->run;
    }
}

/* Whether a run may start with id: false means none does. */
static bool maybe_start(const struct kvr *c, uint64_t id)
{
    return c->filter[mix(id) >> (64 - FILTER_BITS)] != 0;
}

/* The run that starts at position p of a chain with its id ids[p]; NIL:
 * none. (A run found under that id at another depth is not a chain's.) */
static uint32_t run_at(const struct kvr *c, const uint64_t *ids, uint32_t p)
{
    uint32_t r = maybe_start(c, ids[p]) ? map_find(c, ids[p]) : NIL;
    return r != NIL && c->runs[r].lo == p ? r : NIL;
}

/* The first of ids[from..end) that may start a run (end: none). Most
 * check-ins find none: four ids a round, one branch for the four. */
static uint32_t next_maybe_start(const struct kvr *c, const uint64_t *ids, uint32_t from,
                                 uint32_t end)
{
    const uint8_t *f = c->filter;
    unsigned s = 64 - FILTER_BITS;
    while (from + 4 <= end && !(f[mix(ids[from]) >> s] | f[mix(ids[from + 1]) >> s] |
                                f[mix(ids[from + 2]) >> s] | f[mix(ids[from + 3]) >> s]))
        from += 4;
    while (from < end && !maybe_start(c, ids[from]))
        from++;
    return from;
}

static void filter_add(struct kvr *c, uint64_t k)
{
    uint8_t *n = &c->filter[k >> (64 - FILTER_BITS)];
    if (*n < UINT8_MAX)
        ++*n;
}

static void filter_remove(struct kvr *c, uint64_t k)
{
    uint8_t *n = &c->filter[k >> (64 - FILTER_BITS)];
    if (*n < UINT8_MAX)
        --*n;
}

static void map_put(struct kvr *c, uint64_t k, uint32_t run)
{
    uint32_t i = (uint32_t)(k >> c->map_shift);
    while (c->map[i].run != NIL)
        i = (i + 1) & c->map_mask;
    c->map[i] = (struct map_slot){ k, run };
    c->map_used++;
}

static void map_insert(struct kvr *c, uint64_t id, uint32_t run)
{
    if (4 * (c->map_used + 1) > c->map_mask + 1) {
        struct map_slot *old = c->map;
        uint32_t cap = c->map_mask + 1;
        map_alloc(c, 2 * cap);
        for (uint32_t i = 0; i < cap; i++)
            if (old[i].run != NIL)
                map_put(c, old[i].key, old[i].run);
        free(old);
    }
    map_put(c, mix(id), run);
    filter_add(c, mix(id));
}

static void map_remove(struct kvr *c, uint64_t id)
{
    uint64_t k = mix(id);
    uint32_t mask = c->map_mask, i = (uint32_t)(k >> c->map_shift);
    while (c->map[i].key != k || c->map[i].run == NIL)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; c->map[j].run != NIL; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)(c->map[j].key >> c->map_shift);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            c->map[i] = c->map[j];
            i = j;
        }
    }
    c->map[i].run = NIL;
    c->map_used--;
    filter_remove(c, k);
}

/* ---- pools ---- */

static uint32_t run_new(struct kvr *c)
{
    uint32_t r = c->free_runs;
    if (r != NIL) {
        c->free_runs = c->runs[r].next_free;
    } else {
        if ((c->n_runs & (c->n_runs - 1)) == 0)    /* 0, 1, 2, 4, ...: double */
            c->runs = xreallocarray(c->runs, c->n_runs ? 2 * c->n_runs : 1, sizeof(*c->runs));
        r = c->n_runs++;
        c->runs[r] = (struct run){ 0 };
    }
    struct run *x = &c->runs[r];
    x->n_ends = 0;
    x->oldest = x->newest = NIL;
    x->version++;
    return r;
}

static void run_drop(struct kvr *c, uint32_t r)
{
    struct run *x = &c->runs[r];
    map_remove(c, x->ids[0]);
    x->version++;
    x->next_free = c->free_runs;
    c->free_runs = r;
}

static uint32_t piece_new(struct kvr *c)
{
    uint32_t p = c->free_pieces;
    if (p != NIL) {
        c->free_pieces = c->pieces[p].next_free;
        return p;
    }
    if ((c->n_pieces & (c->n_pieces - 1)) == 0)
        c->pieces = xreallocarray(c->pieces, c->n_pieces ? 2 * c->n_pieces : 1,
                                  sizeof(*c->pieces));
    return c->n_pieces++;
}

static void piece_drop(struct kvr *c, uint32_t p)
{
    c->pieces[p].next_free = c->free_pieces;
    c->free_pieces = p;
}

/* ---- holders ---- */

static uint32_t max_end(const struct run *x)
{
    return x->n_ends ? x->ends[0].end : x->lo;
}

static void end_add(struct run *x, uint32_t end)
{
    uint32_t i = 0;
    while (i < x->n_ends && x->ends[i].end > end)
        i++;
    if (i < x->n_ends && x->ends[i].end == end) {
        x->ends[i].n++;
        return;
    }
    if (x->n_ends == x->cap_ends) {
        x->cap_ends = x->cap_ends ? 2 * x->cap_ends : 4;
        x->ends = xreallocarray(x->ends, x->cap_ends, sizeof(*x->ends));
    }
    memmove(&x->ends[i + 1], &x->ends[i], (x->n_ends - i) * sizeof(*x->ends));
    x->ends[i] = (struct run_end){ end, 1 };
    x->n_ends++;
}

static void end_remove(struct run *x, uint32_t end)
{
    uint32_t i = 0;
    while (x->ends[i].end != end)
        i++;
    if (--x->ends[i].n)
        return;
    memmove(&x->ends[i], &x->ends[i + 1], (x->n_ends - i - 1) * sizeof(*x->ends));
    x->n_ends--;
}

/* ---- the eviction queue ---- */

static uint64_t seq_of(const struct piece *p, uint32_t d)
{
    return p->seq_top + (p->top - 1 - d);
}

/* Takes piece p out of its run's list (it stays in the queue, dead, when
 * it still has a slot there). */
static void piece_unlink(struct kvr *c, uint32_t p)
{
    struct piece *x = &c->pieces[p];
    struct run *r = &c->runs[x->run];
    if (x->deeper != NIL)
        c->pieces[x->deeper].shallower = x->shallower;
    else
        r->oldest = x->shallower;
    if (x->shallower != NIL)
        c->pieces[x->shallower].deeper = x->deeper;
    else
        r->newest = x->deeper;
}

/* Rewrites the ring with its live pieces, from index 0; grows it when
 * more than half of them are live. */
static void queue_compact(struct kvr *c)
{
    uint32_t cap = c->q_cap, k = 0, live = 0;
    for (uint32_t n = 0; n < c->q_len; n++)
        live += !c->pieces[c->queue[(c->q_head + n) & (cap - 1)]].dead;
    uint32_t new_cap = cap ? cap : 64;
    while (2 * (live + 1) > new_cap)
        new_cap *= 2;
    uint32_t *v = xreallocarray(NULL, new_cap, sizeof(*v));
    for (uint32_t n = 0; n < c->q_len; n++) {
        uint32_t p = c->queue[(c->q_head + n) & (cap - 1)];
        if (c->pieces[p].dead)
            piece_drop(c, p);
        else
            v[k++] = p;
    }
    free(c->queue);
    c->queue = v;
    c->q_cap = new_cap;
    c->q_head = 0;
    c->q_len = k;
}

/* Queues positions [a, b) of run r, just unreferenced: deepest first. */
static void queue_piece(struct kvr *c, uint32_t r, uint32_t a, uint32_t b)
{
    if (c->q_len == c->q_cap)
        queue_compact(c);
    uint32_t p = piece_new(c);
    struct run *x = &c->runs[r];
    c->pieces[p] = (struct piece){ r, a, b, b, c->k.appended + 1, x->newest, NIL, false, NIL };
    if (x->newest != NIL)
        c->pieces[x->newest].shallower = p;
    else
        x->oldest = p;
    x->newest = p;
    c->queue[(c->q_head + c->q_len++) & (c->q_cap - 1)] = p;
    c->k.appended += b - a;
    c->k.n_lru += b - a;
}

/* Evicts the n oldest queued blocks: the deepest of the oldest piece
 * first. A run left with nothing cached leaves the map. */
static void evict(struct kvr *c, uint32_t n)
{
    c->k.evictions += n;
    c->k.n_lru -= n;
    while (n > 0) {
        uint32_t p = c->queue[c->q_head];
        struct piece *x = &c->pieces[p];
        if (!x->dead) {
            uint32_t take = x->b - x->a < n ? x->b - x->a : n;
            struct run *r = &c->runs[x->run];
            x->b -= take;
            r->c = x->b;
            r->version++;
            n -= take;
            c->k.evicted_seq = seq_of(x, x->b);
            if (x->a < x->b)
                return;
            piece_unlink(c, p);
            if (r->c == r->lo)
                run_drop(c, x->run);
        }
        c->q_head = (c->q_head + 1) & (c->q_cap - 1);
        c->q_len--;
        piece_drop(c, p);
    }
}

/* ---- public ---- */

struct kvr *kvr_new(uint32_t n_blocks, bool one_copy)
{
    struct kvr *c = xcalloc(1, sizeof(*c));
    c->one_copy = one_copy;
    c->k.n_free = n_blocks;
    c->free_runs = c->free_pieces = NIL;
    map_alloc(c, 64);
    c->filter = xcalloc((size_t)1 << FILTER_BITS, sizeof(*c->filter));
    return c;
}

void kvr_free(struct kvr *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_runs; i++) {
        free(c->runs[i].ids);
        free(c->runs[i].ends);
    }
    free(c->runs);
    free(c->pieces);
    free(c->queue);
    free(c->map);
    free(c->filter);
    free(c);
}

const struct kvr_counts *kvr_counts(const struct kvr *c)
{
    return &c->k;
}

void kvr_table_release(struct kvr_table *t)
{
    free(t->holds);
    *t = (struct kvr_table){ 0 };
}

static void hold_push(struct kvr_table *t, uint32_t run, uint32_t end, uint32_t version)
{
    if (t->n_holds == t->cap_holds) {
        t->cap_holds = t->cap_holds ? 2 * t->cap_holds : 4;
        t->holds = xreallocarray(t->holds, t->cap_holds, sizeof(*t->holds));
    }
    t->holds[t->n_holds++] = (struct kvr_hold){ run, end, version };
}

#define AGREE_CHUNK 64          /* ids compared by one memcmp */

/* The first of ids[from..lim) where run r differs from them (lim at most
 * r's cached end). A match runs along hundreds of ids: memcmp compares
 * them several at a time, in chunks so that a difference is looked for
 * one by one only in its own chunk. */
static uint32_t run_agrees_to(const struct run *r, const uint64_t *ids, uint32_t from,
                              uint32_t lim)
{
    const uint64_t *own = r->ids - r->lo;
    for (;;) {
        uint32_t n = lim - from < AGREE_CHUNK ? lim - from : AGREE_CHUNK;
        if (n == 0 || memcmp(own + from, ids + from, n * sizeof(*ids)) != 0)
            break;
        from += n;
    }
    while (from < lim && own[from] == ids[from])
        from++;
    return from;
}

/* Whether t's holds are still what matching ids[0..max) would find: the
 * same match asked for, none of its runs changed, and no run starts
 * where it stopped. */
static bool match_kept(const struct kvr *c, const struct kvr_table *t, const uint64_t *ids,
                       uint32_t max)
{
    if (t->memo_max == 0 || t->memo_max != max)
        return false;
    for (uint32_t h = 0; h < t->n_holds; h++)
        if (c->runs[t->holds[h].run].version != t->holds[h].version)
            return false;
    uint32_t p = t->n_holds ? t->holds[t->n_holds - 1].end : 0;
    return p >= max || run_at(c, ids, p) == NIL;
}

uint32_t kvr_match(struct kvr *c, struct kvr_table *t, const uint64_t *ids, uint32_t max)
{
    if (match_kept(c, t, ids, max))
        return t->n_holds ? t->holds[t->n_holds - 1].end : 0;
    uint32_t i = 0;
    t->n_holds = 0;
    t->memo_max = max;
    uint32_t r;
    while (i < max && (r = run_at(c, ids, i)) != NIL) {
        const struct run *x = &c->runs[r];
        uint32_t j = run_agrees_to(x, ids, i + 1, x->c < max ? x->c : max);
        hold_push(t, r, j, x->version);
        i = j;
    }
    return i;
}

void kvr_hits_in_lru(const struct kvr *c, const struct kvr_table *t, uint32_t *in_lru,
                     uint64_t *oldest)
{
    uint32_t k = 0;
    uint64_t old = UINT64_MAX;
    for (uint32_t h = 0; h < t->n_holds; h++) {
        const struct run *x = &c->runs[t->holds[h].run];
        uint32_t m = max_end(x), j = t->holds[h].end;
        if (j <= m)
            continue;
        k += j - m;
        uint32_t p = x->newest;                 /* the piece holding j - 1 */
        while (c->pieces[p].a > j - 1)
            p = c->pieces[p].deeper;
        uint64_t s = seq_of(&c->pieces[p], j - 1);
        if (s < old)
            old = s;
    }
    *in_lru = k;
    *oldest = old;
}

/* A new holder of run r to position j: what it takes of the queue
 * ([largest end, j), the shallow end of the run's newest pieces) leaves
 * it. */
static void run_ref(struct kvr *c, uint32_t r, uint32_t j)
{
    struct run *x = &c->runs[r];
    uint32_t m = max_end(x);
    if (j > m) {
        uint32_t p = x->newest;
        while (p != NIL && c->pieces[p].a < j) {
            struct piece *y = &c->pieces[p];
            uint32_t deeper = y->deeper;
            if (y->b > j) {
                y->a = j;
                break;
            }
            piece_unlink(c, p);
            y->dead = true;
            p = deeper;
        }
        c->k.n_lru -= j - m;
        c->k.used += j - m;
    }
    end_add(x, j);
}

uint32_t kvr_ref_hits(struct kvr *c, struct kvr_table *t)
{
    uint32_t blocks = 0;
    t->memo_max = 0;                /* references now, not a match */
    for (uint32_t h = 0; h < t->n_holds; h++) {
        run_ref(c, t->holds[h].run, t->holds[h].end);
        blocks += t->holds[h].end - c->runs[t->holds[h].run].lo;
    }
    return blocks;
}

bool kvr_grow(struct kvr *c, uint32_t n)
{
    if (n > c->k.n_free + c->k.n_lru)
        return false;
    uint32_t f = n < c->k.n_free ? n : c->k.n_free;
    c->k.n_free -= f;
    if (n > f)
        evict(c, n - f);
    c->k.used += n;
    return true;
}

/* Whether run r has position s cached with the id ids[s]. */
static bool run_covers(const struct kvr *c, uint32_t r, const uint64_t *ids, uint32_t s)
{
    const struct run *x = &c->runs[r];
    return x->lo <= s && s < x->c && x->ids[s - x->lo] == ids[s];
}

/* The run that has position s of t's chain cached, when one that starts
 * before s does (NIL: none). Before s, t holds runs up to its last hold's
 * end, then duplicates; such a run covers s - 1 too, so it starts in that
 * stretch or is the last held run. Ids being chains, the first run found
 * going down either covers s or none does. */
static uint32_t covering_run(const struct kvr *c, const struct kvr_table *t,
                             const uint64_t *ids, uint32_t s)
{
    uint32_t held = t->n_holds ? t->holds[t->n_holds - 1].end : 0;
    for (uint32_t j = s; j-- > held;) {
        uint32_t r = run_at(c, ids, j);
        if (r != NIL)
            return run_covers(c, r, ids, s) ? r : NIL;
    }
    if (t->n_holds && run_covers(c, t->holds[t->n_holds - 1].run, ids, s))
        return t->holds[t->n_holds - 1].run;
    return NIL;
}

bool kvr_cached_at(const struct kvr *c, const struct kvr_table *t, const uint64_t *ids,
                   uint32_t p)
{
    return run_at(c, ids, p) != NIL ||
           (t->n_holds && run_covers(c, t->holds[t->n_holds - 1].run, ids, p));
}

/* one_copy: t computed blocks [i, j) that run r has cached (it holds r to
 * i, or r starts at i): t holds r's instead, and frees its own. */
static void take_copy(struct kvr *c, struct kvr_table *t, uint32_t r, uint32_t i, uint32_t j)
{
    struct kvr_hold *h = t->n_holds ? &t->holds[t->n_holds - 1] : NULL;
    run_ref(c, r, j);               /* while t's old end still counts */
    if (h && h->run == r && h->end == i) {
        end_remove(&c->runs[r], i);
        h->end = j;
    } else {
        hold_push(t, r, j, 0);
    }
    c->k.n_free += j - i;
    c->k.used -= j - i;
    c->k.n_released += j - i;
}

/* Caches t's blocks [i, j) (ids[i..j) cached nowhere): they extend the run
 * t holds to its end, or start one. */
static void own(struct kvr *c, struct kvr_table *t, const uint64_t *ids, uint32_t i,
                uint32_t j)
{
    struct kvr_hold *h = t->n_holds ? &t->holds[t->n_holds - 1] : NULL;
    uint32_t r;
    if (h && h->end == i && c->runs[h->run].c == i) {
        r = h->run;
        end_remove(&c->runs[r], i);
        h->end = j;
    } else {
        r = run_new(c);
        c->runs[r].lo = c->runs[r].c = i;
        hold_push(t, r, j, 0);
    }
    struct run *x = &c->runs[r];
    if (j - x->lo > x->cap_ids) {
        uint32_t cap = x->cap_ids ? x->cap_ids : 16;
        while (cap < j - x->lo)
            cap *= 2;
        x->ids = xreallocarray(x->ids, cap, sizeof(*x->ids));
        x->cap_ids = cap;
    }
    memcpy(x->ids + (i - x->lo), ids + i, (size_t)(j - i) * sizeof(*ids));
    x->c = j;
    x->version++;
    end_add(x, j);
    if (x->lo == i)
        map_insert(c, ids[i], r);
}

void kvr_check_in(struct kvr *c, struct kvr_table *t, const uint64_t *ids, uint32_t from,
                  uint32_t end)
{
    uint32_t cur = from ? covering_run(c, t, ids, from) : NIL;
    uint32_t i = from;
    while (i < end) {
        if (cur != NIL) {           /* a duplicate of run cur while it agrees */
            const struct run *x = &c->runs[cur];
            uint32_t j = run_agrees_to(x, ids, i, x->c < end ? x->c : end);
            if (c->one_copy && j > i)
                take_copy(c, t, cur, i, j);
            i = j;
            cur = NIL;
            continue;
        }
        uint32_t r = maybe_start(c, ids[i]) ? map_find(c, ids[i]) : NIL;
        if (r != NIL) {
            if (c->runs[r].lo == i)
                cur = r;
            else
                i++;                /* not a chain: an id cached at another depth */
            continue;
        }
        uint32_t j = next_maybe_start(c, ids, i + 1, end);
        while (j < end && map_find(c, ids[j]) == NIL)
            j = next_maybe_start(c, ids, j + 1, end);
        own(c, t, ids, i, j);
        i = j;
    }
}

void kvr_release(struct kvr *c, struct kvr_table *t, uint32_t n_blocks)
{
    uint32_t in_runs = 0;
    t->memo_max = 0;
    if (n_blocks == 0)              /* matched (waiting) but never referenced */
        t->n_holds = 0;
    for (uint32_t h = t->n_holds; h-- > 0;) {
        uint32_t r = t->holds[h].run, e = t->holds[h].end;
        struct run *x = &c->runs[r];
        uint32_t before = max_end(x);
        in_runs += e - x->lo;
        end_remove(x, e);
        uint32_t after = max_end(x);
        if (after < before) {
            queue_piece(c, r, after, before);
            c->k.used -= before - after;
            c->k.n_released += before - after;
        }
    }
    uint32_t own = n_blocks - in_runs;      /* held by t alone, uncached */
    c->k.n_free += own;
    c->k.used -= own;
    c->k.n_released += own;
    t->n_holds = 0;
}
