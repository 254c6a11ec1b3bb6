/* session.c - which session a proxied request belongs to: a name the
 * client gives (a header, the `user` field), else prefix continuity (an
 * agent's next prompt starts with its previous prompt: the previous
 * prompt's last full block id, a chained hash, appears among the new
 * prompt's ids), else a new session. One open-addressing table maps both
 * kinds of keys (name hashes, block ids) to sessions.
 *
 * Names the proxy makes up ("~1", "~2", ...) live in a namespace of their
 * own: a leading '~' is reserved, and a client's name that starts with one
 * gets a second ("~1" given becomes "~~1"). So a given name never meets a
 * made-up one, whatever the order of arrival, and the journal's trace ids
 * ("proxy/<session>/<turn>") never repeat within one run.
 *
 * The table is bounded: names over 256 bytes are cut and hashed, idle
 * sessions past the ttl or beyond the cap (least recently used first) are
 * freed, and a key of a freed session (or an older prompt's block) goes
 * stale by its slot's generation and is dropped at the next rehash. A
 * named session made after any eviction starts at the turn floor, above
 * every turn given or seen: it may be a name evicted before. */
#include "proxy/proxy-impl.h"
#include "proxy/journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "util/alloc.h"

/* Name keys carry the top bit; block ids are 53-bit, so the two never meet. */
#define NAME_BIT (UINT64_C(1) << 63)
#define NAME_MAX_BYTES 256              /* longer names: a prefix, '#', a hash */
#define DEFAULT_MAX 100000
#define DEFAULT_TTL_S 3600.0

void proxy_sessions_init(struct proxy_sessions *s, size_t max, double ttl_s)
{
    memset(s, 0, sizeof *s);
    s->max = max ? max : DEFAULT_MAX;
    s->ttl_s = ttl_s > 0 ? ttl_s : DEFAULT_TTL_S;
}

void proxy_sessions_release(struct proxy_sessions *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].id);
    free(s->v);
    free(s->keys);
    free(s->vals);
    memset(s, 0, sizeof *s);
}

static size_t slot_of(const uint64_t *keys, const uint64_t *vals, size_t slots, uint64_t key)
{
    size_t mask = slots - 1, i = (size_t)(key * UINT64_C(0x9E3779B97F4A7C15) >> 20) & mask;
    while (vals[i] && keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* A key still leads to its session: the session is not freed and reused
 * since, and a block key is its latest prompt's (so a session holds at
 * most two keys, however many turns it has). */
static bool current(const struct proxy_sessions *s, uint64_t key, uint64_t val)
{
    size_t i = (uint32_t)val - 1;
    return val && i < s->n && s->v[i].id && s->v[i].gen == (uint32_t)(val >> 32) &&
           ((key & NAME_BIT) || s->v[i].last_key == key);
}

/* Rehashes the keys of live sessions only (stale ones are dropped), into
 * twice the slots when they still fill half. */
static void grow(struct proxy_sessions *s)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->slots; i++)
        keep += current(s, s->keys[i], s->vals[i]);
    size_t slots = s->slots ? s->slots : 1024;
    if (keep * 2 > slots)
        slots *= 2;
    uint64_t *keys = xcalloc(slots, sizeof *keys), *vals = xcalloc(slots, sizeof *vals);
    for (size_t i = 0; i < s->slots; i++)
        if (current(s, s->keys[i], s->vals[i])) {
            size_t k = slot_of(keys, vals, slots, s->keys[i]);
            keys[k] = s->keys[i];
            vals[k] = s->vals[i];
        }
    free(s->keys);
    free(s->vals);
    s->keys = keys;
    s->vals = vals;
    s->slots = slots;
    s->used = keep;
}

static void put(struct proxy_sessions *s, uint64_t key, size_t index)
{
    if ((s->used + 1) * 4 > s->slots * 3)
        grow(s);
    size_t k = slot_of(s->keys, s->vals, s->slots, key);
    if (!s->vals[k])
        s->used++;
    s->keys[k] = key;
    s->vals[k] = (uint64_t)s->v[index].gen << 32 | (uint64_t)(index + 1);
}

static long get(const struct proxy_sessions *s, uint64_t key)
{
    if (!s->slots)
        return -1;
    uint64_t val = s->vals[slot_of(s->keys, s->vals, s->slots, key)];
    return current(s, key, val) ? (long)(uint32_t)val - 1 : -1;
}

/* ---- LRU list of idle sessions ---- */

static void lru_unlink(struct proxy_sessions *s, size_t i)
{
    struct proxy_session *e = &s->v[i];
    if (e->prev)
        s->v[e->prev - 1].next = e->next;
    else
        s->lru_head = e->next;
    if (e->next)
        s->v[e->next - 1].prev = e->prev;
    else
        s->lru_tail = e->prev;
    e->prev = e->next = 0;
}

static void lru_append(struct proxy_sessions *s, size_t i)
{
    struct proxy_session *e = &s->v[i];
    e->prev = s->lru_tail;
    e->next = 0;
    if (s->lru_tail)
        s->v[s->lru_tail - 1].next = (uint32_t)(i + 1);
    else
        s->lru_head = (uint32_t)(i + 1);
    s->lru_tail = (uint32_t)(i + 1);
}

/* Frees session i: its keys go stale (gen), its slot is reused. */
static void evict(struct proxy_sessions *s, size_t i)
{
    struct proxy_session *e = &s->v[i];
    lru_unlink(s, i);
    free(e->id);
    uint32_t gen = e->gen + 1;
    memset(e, 0, sizeof *e);
    e->gen = gen;
    e->next = s->free_head;
    s->free_head = (uint32_t)(i + 1);
    s->live--;
    s->evicted++;
}

void proxy_sessions_expire(struct proxy_sessions *s, double now)
{
    while (s->lru_head && now - s->v[s->lru_head - 1].used >= s->ttl_s)
        evict(s, s->lru_head - 1);
}

uint64_t proxy_session_begin(struct proxy_sessions *s, size_t i)
{
    struct proxy_session *e = &s->v[i];
    if (e->busy++ == 0)
        lru_unlink(s, i);
    if (s->turn_floor <= e->turns)
        s->turn_floor = e->turns + 1;
    return e->turns++;
}

void proxy_session_end(struct proxy_sessions *s, size_t i, double now)
{
    s->v[i].used = now;
    if (--s->v[i].busy == 0)
        lru_append(s, i);
}

/* A new idle session, after making room: beyond max, the least recently
 * used idle one goes (busy ones stay, so live may pass max while they are
 * in flight). After any eviction a named session's first turn is the turn
 * floor: it may be one evicted before, whose turns must not repeat. */
static size_t add(struct proxy_sessions *s, char *id, bool named)
{
    while (s->live >= s->max && s->lru_head)
        evict(s, s->lru_head - 1);
    size_t i;
    if (s->free_head) {
        i = s->free_head - 1;
        s->free_head = s->v[i].next;
    } else {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 64;
            s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
        }
        i = s->n++;
        memset(&s->v[i], 0, sizeof s->v[i]);
    }
    struct proxy_session *e = &s->v[i];
    e->id = id;
    e->turns = named && s->evicted ? s->turn_floor : 0;
    e->next = 0;
    e->used = proxy_now();
    lru_append(s, i);
    s->live++;
    return i;
}

/* The journal's name for a client's name: as the journal writes it (cut at
 * a NUL, invalid UTF-8 as U+FFFD), and a leading '~' doubled (the made-up
 * names' namespace). Over NAME_MAX_BYTES, it is its first whole
 * characters, '#' and the 16 hex digits of the whole name's XXH3-64: so
 * the table and the journal hold bounded names, still one per client name,
 * the same in every run. */
static void journal_name(struct atr_buf *b, const char *name, size_t len)
{
    if (name[0] == '~')
        atr_buf_append(b, "~", 1);
    atr_journal_clean_text(b, name, len);
    if (b->len <= NAME_MAX_BYTES)
        return;
    char tail[18];
    snprintf(tail, sizeof tail, "#%016llx", (unsigned long long)XXH3_64bits(b->data, b->len));
    size_t cut = NAME_MAX_BYTES - 17;
    while (cut && ((unsigned char)b->data[cut] & 0xC0) == 0x80)
        cut--;                         /* not inside a character */
    b->len = cut;
    atr_buf_append(b, tail, 17);
}

/* The session of the journal's name[0..len), made if new. */
static size_t by_journal_name(struct proxy_sessions *s, const char *name, size_t len)
{
    uint64_t key = XXH3_64bits(name, len) | NAME_BIT;
    long i = get(s, key);
    if (i >= 0)
        return (size_t)i;
    size_t k = add(s, xstrndup(name, len), true);
    put(s, key, k);
    return k;
}

static size_t find_named(struct proxy_sessions *s, const char *name, size_t len)
{
    struct atr_buf b = ATR_BUF_INIT;
    journal_name(&b, name, len);
    size_t k = by_journal_name(s, b.data, b.len);
    atr_buf_release(&b);
    return k;
}

/* "~N", a name the proxy made up: N. */
static bool made_up(const char *name, size_t len, uint64_t *n)
{
    if (len < 2 || len > 20 || name[0] != '~')
        return false;
    *n = 0;
    for (size_t i = 1; i < len; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        *n = *n * 10 + (uint64_t)(name[i] - '0');
    }
    return true;
}

void proxy_session_seen(struct proxy_sessions *s, const char *name, size_t len, uint64_t turn)
{
    uint64_t n;
    if (made_up(name, len, &n)) {
        if (n > s->next_anon)
            s->next_anon = n;
        return;
    }
    size_t k = by_journal_name(s, name, len);      /* may move s->v */
    if (s->v[k].turns <= turn)
        s->v[k].turns = turn + 1;
    if (s->turn_floor <= turn)
        s->turn_floor = turn + 1;
}

size_t proxy_session_find(struct proxy_sessions *s, const char *name, size_t name_len,
                          const char *source, const uint64_t *ids, size_t n_ids,
                          const char **source_out)
{
    proxy_sessions_expire(s, proxy_now());
    if (name && (name_len = strnlen(name, name_len)) != 0) {
        *source_out = source;
        return find_named(s, name, name_len);
    }
    /* The longest earlier prompt this one continues. */
    for (size_t k = n_ids; k > 0; k--) {
        long i = get(s, ids[k - 1]);
        if (i >= 0) {
            *source_out = "prefix";
            return (size_t)i;
        }
    }
    *source_out = "new";
    return add(s, xasprintf("~%llu", (unsigned long long)++s->next_anon), false);
}

void proxy_session_note(struct proxy_sessions *s, size_t i, const uint64_t *ids, size_t n_ids)
{
    if (n_ids) {
        s->v[i].last_key = ids[n_ids - 1];
        put(s, ids[n_ids - 1], i);
    }
}
