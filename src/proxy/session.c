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
 * ("proxy/<session>/<turn>") never repeat within one run. */
#include "proxy/proxy-impl.h"
#include "proxy/journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "util/alloc.h"

/* Name keys carry the top bit; block ids are 53-bit, so the two never meet. */
#define NAME_BIT (UINT64_C(1) << 63)

void proxy_sessions_init(struct proxy_sessions *s)
{
    memset(s, 0, sizeof *s);
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

static size_t slot_of(const struct proxy_sessions *s, uint64_t key)
{
    size_t mask = s->slots - 1, i = (size_t)(key * UINT64_C(0x9E3779B97F4A7C15) >> 20) & mask;
    while (s->vals[i] && s->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

static void grow(struct proxy_sessions *s)
{
    struct proxy_sessions old = *s;
    s->slots = old.slots ? old.slots * 2 : 1024;
    s->keys = xcalloc(s->slots, sizeof *s->keys);
    s->vals = xcalloc(s->slots, sizeof *s->vals);
    for (size_t i = 0; i < old.slots; i++)
        if (old.vals[i]) {
            size_t k = slot_of(s, old.keys[i]);
            s->keys[k] = old.keys[i];
            s->vals[k] = old.vals[i];
        }
    free(old.keys);
    free(old.vals);
}

static void put(struct proxy_sessions *s, uint64_t key, size_t index)
{
    if ((s->used + 1) * 4 > s->slots * 3)
        grow(s);
    size_t k = slot_of(s, key);
    if (!s->vals[k])
        s->used++;
    s->keys[k] = key;
    s->vals[k] = (uint32_t)(index + 1);
}

static long get(const struct proxy_sessions *s, uint64_t key)
{
    if (!s->slots)
        return -1;
    size_t k = slot_of(s, key);
    return s->vals[k] ? (long)s->vals[k] - 1 : -1;
}

static size_t add(struct proxy_sessions *s, char *id)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
    }
    memset(&s->v[s->n], 0, sizeof s->v[s->n]);
    s->v[s->n].id = id;
    return s->n++;
}

/* The journal's name for a client's name: as the journal writes it (cut at
 * a NUL, invalid UTF-8 as U+FFFD), so names written alike are one session,
 * and a leading '~' doubled (the made-up names' namespace). */
static void journal_name(struct atr_buf *b, const char *name, size_t len)
{
    if (name[0] == '~')
        atr_buf_append(b, "~", 1);
    atr_journal_clean_text(b, name, len);
}

/* The session of the journal's name[0..len), made if new. */
static size_t by_journal_name(struct proxy_sessions *s, const char *name, size_t len)
{
    uint64_t key = XXH3_64bits(name, len) | NAME_BIT;
    long i = get(s, key);
    if (i >= 0)
        return (size_t)i;
    size_t k = add(s, xstrndup(name, len));
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
}

size_t proxy_session_find(struct proxy_sessions *s, const char *name, size_t name_len,
                          const char *source, const uint64_t *ids, size_t n_ids,
                          const char **source_out)
{
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
    return add(s, xasprintf("~%llu", (unsigned long long)++s->next_anon));
}

void proxy_session_note(struct proxy_sessions *s, size_t i, const uint64_t *ids, size_t n_ids)
{
    if (n_ids)
        put(s, ids[n_ids - 1], i);
}
