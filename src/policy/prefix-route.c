/* prefix-route.c - cache-aware routing across replicas, after sgl-router's
 * cache_aware policy (docs/policies.md): the least loaded replica when the
 * load is imbalanced, else the replica whose approximate prefix tree
 * matches the most of the prompt above a threshold, else the replica with
 * the smallest tree.
 *
 * The tree: block ids are chained hashes (an id stands for its whole
 * prefix), so a set of the ids routed to a replica is an exact stand-in
 * for a radix tree over blocks. The match of a request on a replica is the
 * number of its leading ids in the set. Each set is an open-addressing
 * table with a capacity in blocks and LRU eviction by stamp: a request
 * stamps its blocks (clock << 20 | depth complement), so that a prefix is
 * always at least as recent as its extensions and eviction removes leaves
 * first, as a radix tree's LRU does. */
#include "policy/policy-impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define DEPTH_BITS 20
#define DEPTH_MAX ((UINT64_C(1) << DEPTH_BITS) - 1)

struct slot {
    uint64_t id;
    uint64_t stamp;                    /* 0 = empty */
};

/* One replica's blocks. */
struct blockset {
    struct slot *slots;
    size_t mask;                       /* slots - 1; slots is a power of two */
    size_t n;                          /* live entries */
};

struct route_state {
    struct blockset *sets;             /* [n_replicas] */
    double cache_threshold, balance_abs, balance_rel;
    uint32_t slots;                    /* requests a replica serves at once; 0: unknown */
    size_t cap;                        /* blocks per replica */
    size_t max_slots;                  /* table size at capacity (load <= 1/2) */
    uint64_t clock;                    /* decisions so far */
    struct slot *spare;                /* rebuild target, swapped in */
    size_t spare_slots;
    uint64_t *scratch;                 /* stamps, for choosing what to evict */
    size_t scratch_cap;
    uint32_t *match;                   /* [n_replicas] per decision */
};

static const char *const option_keys[] = {
    "cache_threshold", "balance_abs", "balance_rel", "tree_blocks", "slots", NULL,
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* Slot of id, or the empty slot where it would go. */
static size_t probe(const struct blockset *s, uint64_t id)
{
    size_t i = mix64(id) & s->mask;
    while (s->slots[i].stamp && s->slots[i].id != id)
        i = (i + 1) & s->mask;
    return i;
}

static bool contains(const struct blockset *s, uint64_t id)
{
    return s->slots && s->slots[probe(s, id)].stamp != 0;
}

static void put(struct blockset *s, uint64_t id, uint64_t stamp)
{
    size_t i = probe(s, id);
    if (!s->slots[i].stamp) {
        s->slots[i].id = id;
        s->n++;
    }
    if (stamp > s->slots[i].stamp)
        s->slots[i].stamp = stamp;
}

/* Moves every entry of s into an empty table of `slots` slots. */
static void rehash(struct blockset *s, struct slot *into, size_t slots, uint64_t keep_above)
{
    struct slot *old = s->slots;
    size_t old_slots = old ? s->mask + 1 : 0;
    memset(into, 0, slots * sizeof *into);
    s->slots = into;
    s->mask = slots - 1;
    s->n = 0;
    for (size_t i = 0; i < old_slots; i++)
        if (old[i].stamp > keep_above)
            put(s, old[i].id, old[i].stamp);
}

/* Room for `more` new entries at load <= 1/2, up to the capacity table. */
static void reserve(struct route_state *st, struct blockset *s, size_t more)
{
    size_t slots = s->slots ? s->mask + 1 : 0;
    if (slots && (s->n + more) * 2 <= slots)
        return;
    size_t want = slots ? slots : 1024;
    while (want < st->max_slots && (s->n + more) * 2 > want)
        want *= 2;
    if (want == slots)
        return;                        /* at the capacity table: eviction keeps it sparse */
    struct slot *old = s->slots;
    rehash(s, xcalloc(want, sizeof *old), want, 0);
    free(old);
}

static void swap_u64(uint64_t *a, uint64_t *b)
{
    uint64_t t = *a;
    *a = *b;
    *b = t;
}

/* The k-th smallest (0-based) of a[0..n), reordering a (quickselect). */
static uint64_t kth_smallest(uint64_t *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo])
            swap_u64(&a[mid], &a[lo]);
        if (a[hi] < a[lo])
            swap_u64(&a[hi], &a[lo]);
        if (a[hi] < a[mid])
            swap_u64(&a[hi], &a[mid]);
        uint64_t pivot = a[mid];
        size_t i = lo, j = hi;
        for (;;) {                     /* Hoare partition; sentinels at lo and hi */
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i >= j)
                break;
            swap_u64(&a[i++], &a[j--]);
        }
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return a[k];
}

/* Over capacity: drop the least recently stamped entries down to 7/8 of
 * it, in one batch (amortized O(1) per insert, like sgl-router's periodic
 * eviction). Stamps are unique, so exactly that many go. */
static void evict(struct route_state *st, struct blockset *s)
{
    if (s->n <= st->cap)
        return;
    size_t target = st->cap - st->cap / 8, drop = s->n - target, k = 0;
    if (st->scratch_cap < s->n) {
        free(st->scratch);
        st->scratch_cap = s->n;
        st->scratch = xcalloc(s->n, sizeof *st->scratch);
    }
    for (size_t i = 0; i <= s->mask; i++)
        if (s->slots[i].stamp)
            st->scratch[k++] = s->slots[i].stamp;
    uint64_t cut = kth_smallest(st->scratch, k, drop - 1);
    size_t slots = s->mask + 1;
    if (st->spare_slots < slots) {
        free(st->spare);
        st->spare = xcalloc(slots, sizeof *st->spare);
        st->spare_slots = slots;
    }
    struct slot *old = s->slots;
    rehash(s, st->spare, slots, cut);
    st->spare = old;                   /* the old table is the next spare */
    st->spare_slots = slots;
}

/* Leading ids present in s, up to the first miss: the prefix-tree match,
 * in blocks. */
/* Leading ids of the request present in s. Along one request's chain,
 * presence is prefix-closed: whole prefixes are inserted, and a block is
 * stamped no older than anything deeper in the same chain, so eviction takes
 * descendants first. The match is therefore the last present position, found
 * by binary search: O(log n) lookups instead of n. */
static uint32_t match_len(const struct blockset *s, const uint64_t *ids, uint32_t n)
{
    if (!s->slots || n == 0 || !contains(s, ids[0]))
        return 0;
    uint32_t lo = 1, hi = n;      /* ids[lo - 1] is present; the answer is in [lo, hi] */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (contains(s, ids[mid - 1]))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void insert_request(struct route_state *st, struct blockset *s, const uint64_t *ids,
                           uint32_t n)
{
    if (n > st->cap)
        n = (uint32_t)st->cap;         /* a tree holds at most its capacity */
    if (!n)
        return;
    reserve(st, s, n);
    uint64_t base = ++st->clock << DEPTH_BITS;
    for (uint32_t i = 0; i < n; i++) {
        put(s, ids[i], base | (DEPTH_MAX - (i < DEPTH_MAX ? i : DEPTH_MAX)));
        if (s->n * 2 > s->mask + 1)    /* only at the capacity table: keep it sparse */
            evict(st, s);
    }
    evict(st, s);
}

static bool imbalanced(const struct atr_policy *p, const struct route_state *st)
{
    uint32_t lo = p->load[0], hi = p->load[0];
    for (unsigned i = 1; i < p->cfg.n_replicas; i++) {
        lo = p->load[i] < lo ? p->load[i] : lo;
        hi = p->load[i] > hi ? p->load[i] : hi;
    }
    return (double)(hi - lo) > st->balance_abs && (double)hi > (double)lo * st->balance_rel;
}

/* Better candidate: more match, then lower load, then lower index (the
 * caller scans in index order). */
static unsigned best_match(const struct atr_policy *p, const struct route_state *st)
{
    unsigned best = 0;
    for (unsigned i = 1; i < p->cfg.n_replicas; i++)
        if (st->match[i] > st->match[best] ||
            (st->match[i] == st->match[best] && p->load[i] < p->load[best]))
            best = i;
    return best;
}

static unsigned smallest_tree(const struct atr_policy *p, const struct route_state *st)
{
    unsigned best = 0;
    for (unsigned i = 1; i < p->cfg.n_replicas; i++)
        if (st->sets[i].n < st->sets[best].n ||
            (st->sets[i].n == st->sets[best].n && p->load[i] < p->load[best]))
            best = i;
    return best;
}

/* With slots known, whether replica i has all of them busy while another
 * replica has one free: a request sent there would wait, and on an engine
 * with per-slot caches (llama-server) take a slot holding another
 * session's context, overwriting it. */
static bool full(const struct atr_policy *p, const struct route_state *st, unsigned i)
{
    return st->slots && p->load[i] >= st->slots &&
           p->load[atr_policy_least_loaded(p)] < st->slots;
}

static void decide(struct atr_policy *p, const struct atr_policy_req *r,
                   struct atr_policy_decision *d)
{
    struct route_state *st = p->state;
    const uint64_t *ids = r->ids;
    uint32_t n = ids ? r->n_ids : 0;
    unsigned to = 0;
    bool by_load = imbalanced(p, st), by_match = false;
    if (!by_load) {
        for (unsigned i = 0; i < p->cfg.n_replicas; i++)
            st->match[i] = match_len(&st->sets[i], ids, n);
        to = best_match(p, st);
        by_match = n && (double)st->match[to] / (double)n > st->cache_threshold;
        if (!by_match)
            to = smallest_tree(p, st);
        by_load = full(p, st, to);
    }
    if (by_load)
        to = atr_policy_least_loaded(p);
    p->stats.routed_by_load += by_load;
    p->stats.routed_by_match += by_match && !by_load;
    insert_request(st, &st->sets[to], ids, n);
    d->replica = to;
}

static void free_state(struct atr_policy *p)
{
    struct route_state *st = p->state;
    for (unsigned i = 0; i < p->cfg.n_replicas; i++)
        free(st->sets[i].slots);
    free(st->sets);
    free(st->spare);
    free(st->scratch);
    free(st->match);
    free(st);
    p->state = NULL;
}

static int init(struct atr_policy *p, const struct atr_policy_cfg *cfg, struct atr_error *err)
{
    double thr, abs, rel, blocks, slots;
    if (atr_policy_opt_num(p, "cache_threshold", 0.3, 0, 1, &thr, err) < 0 ||
        atr_policy_opt_num(p, "balance_abs", 2, 0, 1e9, &abs, err) < 0 ||
        atr_policy_opt_num(p, "balance_rel", 1.5, 1, 1e9, &rel, err) < 0 ||
        atr_policy_opt_num(p, "tree_blocks", 100000, 16, 1e8, &blocks, err) < 0 ||
        atr_policy_opt_num(p, "slots", 0, 0, 1e6, &slots, err) < 0)
        return -1;
    struct route_state *st = xcalloc(1, sizeof *st);
    st->cache_threshold = thr;
    st->balance_abs = abs;
    st->balance_rel = rel;
    st->cap = (size_t)blocks;
    st->slots = (uint32_t)slots;
    st->max_slots = 1024;
    while (st->max_slots < 2 * st->cap)
        st->max_slots *= 2;
    st->sets = xcalloc(cfg->n_replicas, sizeof *st->sets);
    st->match = xcalloc(cfg->n_replicas, sizeof *st->match);
    p->state = st;
    return 0;
}

const struct atr_policy_ops atr_policy_prefix_route = {
    .name = "prefix-route", .option_keys = option_keys, .init = init, .decide = decide,
    .free_state = free_state,
};
