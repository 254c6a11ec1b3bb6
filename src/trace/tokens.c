/* tokens.c - pseudo-tokenizer (token estimate) and chained block hashing.
 *
 * Tokens are found by byte classes, roughly the way BPE pre-tokenisers split:
 *   word:   letters, split at a lower->upper case change (camelCase); a
 *           single leading space or '_' belongs to the word (" foo", "_bar");
 *           one token per WORD_WIDTH bytes
 *   digits: groups of 3 (as cl100k and Llama-3 do)
 *   blanks: a run of spaces/tabs is one token per 16
 *   newlines: one token per 2
 *   punctuation: one token per 2 consecutive symbols
 *   other UTF-8: one token per code point
 *
 * It runs as a deterministic automaton: each byte's class and the current
 * state give the next state and whether the byte starts a token. Table
 * lookups and no data-dependent branch keep it fast; a branchy scanner
 * mispredicts on nearly every token. Long pieces run as four chains at once
 * into a bitmap of token starts (see "The bitmap path" below). Every byte
 * belongs to exactly one token, so a block boundary (every block_size
 * tokens) is a byte position, and blocks hash real bytes. */
#include "trace/tokens.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/alloc.h"

enum { WORD_WIDTH = 8, DIGIT_WIDTH = 3, SPACE_WIDTH = 16, NL_WIDTH = 2, PUNCT_WIDTH = 2,
       UTF8_MAX = 4 };

/* Byte classes. */
enum { B_LOWER, B_UPPER, B_DIGIT, B_SPACE, B_TAB, B_NL, B_UNDER, B_PUNCT, B_LEAD, B_CONT,
       B_COUNT };

/* States: what the current token is and how long it is so far. */
enum {
    S_START,                         /* before the first byte of a text */
    S_BLANK1,                        /* one ' ': a word may follow and take it */
    S_UNDER1,                        /* one '_': a word may follow and take it */
    S_UPPER = S_UNDER1 + 1,          /* word, last byte upper case: + len-1 */
    S_LOWER = S_UPPER + WORD_WIDTH,  /* word, last byte lower case: + len-1 */
    S_DIGIT = S_LOWER + WORD_WIDTH,
    S_SPACE = S_DIGIT + DIGIT_WIDTH, /* blank run (not a lone ' ') */
    S_NL = S_SPACE + SPACE_WIDTH,
    S_PUNCT = S_NL + NL_WIDTH,
    S_UTF8 = S_PUNCT + PUNCT_WIDTH,
    S_COUNT = S_UTF8 + UTF8_MAX,
};
#define START 0x80                   /* flag: this byte starts a token */

/* The run-time table is flat and pre-multiplied: entry = next state *
 * B_STRIDE, plus bit 15 when the byte starts a token, so each step of the
 * loop is one load, one mask and one add on the critical path. */
enum { B_STRIDE = 16 };
#define T_START 0x8000u
static unsigned char byte_class[256];
static uint16_t trans[S_COUNT * B_STRIDE];
/* The same automaton two bytes at a time, which halves the dependent loads.
 * The next state (times P_STRIDE) and the number of token starts (0..2)
 * live in separate tables so the critical path is one add and one load. */
enum { P_STRIDE = 128 };
static uint16_t next2[S_COUNT * P_STRIDE];
static uint8_t starts2[S_COUNT * P_STRIDE];

/* State entered by a byte of class b that starts a new token. */
static unsigned char fresh(int b)
{
    static const unsigned char first[B_COUNT] = {
        [B_LOWER] = S_LOWER, [B_UPPER] = S_UPPER, [B_DIGIT] = S_DIGIT, [B_SPACE] = S_BLANK1,
        [B_TAB] = S_SPACE, [B_NL] = S_NL, [B_UNDER] = S_UNDER1, [B_PUNCT] = S_PUNCT,
        [B_LEAD] = S_UTF8, [B_CONT] = S_UTF8,
    };
    return START | first[b];
}

/* Continue a run state `base` of length len (1-based) up to width, else
 * start afresh. */
static unsigned char extend(int base, int len, int width, int b)
{
    return len < width ? (unsigned char)(base + len) : fresh(b);
}

static unsigned char transition(int s, int b)
{
    bool letter = b == B_LOWER || b == B_UPPER;
    if (s >= S_UPPER && s < S_LOWER + WORD_WIDTH) {
        int len = s < S_LOWER ? s - S_UPPER + 1 : s - S_LOWER + 1;
        /* lower after lower or upper continues; upper continues an upper run */
        if (b == B_LOWER || (b == B_UPPER && s < S_LOWER))
            return extend(b == B_LOWER ? S_LOWER : S_UPPER, len, WORD_WIDTH, b);
        return fresh(b);                      /* camelCase break, or not a letter */
    }
    if (s == S_BLANK1 || s == S_UNDER1) {
        if (letter)                           /* " foo", "_bar": one word of 2+ bytes */
            return (unsigned char)((b == B_LOWER ? S_LOWER : S_UPPER) + 1);
        if (s == S_BLANK1 && (b == B_SPACE || b == B_TAB))
            return S_SPACE + 1;
        if (s == S_UNDER1 && (b == B_PUNCT || b == B_UNDER))
            return S_PUNCT + 1;
        return fresh(b);
    }
    if (s >= S_DIGIT && s < S_SPACE)
        return b == B_DIGIT ? extend(S_DIGIT, s - S_DIGIT + 1, DIGIT_WIDTH, b) : fresh(b);
    if (s >= S_SPACE && s < S_NL)
        return (b == B_SPACE || b == B_TAB) ? extend(S_SPACE, s - S_SPACE + 1, SPACE_WIDTH, b)
                                            : fresh(b);
    if (s >= S_NL && s < S_PUNCT)
        return b == B_NL ? extend(S_NL, s - S_NL + 1, NL_WIDTH, b) : fresh(b);
    if (s >= S_PUNCT && s < S_UTF8)
        return (b == B_PUNCT || b == B_UNDER) ? extend(S_PUNCT, s - S_PUNCT + 1, PUNCT_WIDTH, b)
                                              : fresh(b);
    if (s >= S_UTF8)
        return b == B_CONT ? extend(S_UTF8, s - S_UTF8 + 1, UTF8_MAX, b) : fresh(b);
    return fresh(b);                          /* S_START */
}

__attribute__((constructor)) static void tables_init(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = B_PUNCT;
        if (c >= 'a' && c <= 'z')
            k = B_LOWER;
        else if (c >= 'A' && c <= 'Z')
            k = B_UPPER;
        else if (c >= '0' && c <= '9')
            k = B_DIGIT;
        else if (c == ' ')
            k = B_SPACE;
        else if (c == '\t')
            k = B_TAB;
        else if (c == '\n' || c == '\r')
            k = B_NL;
        else if (c == '_')
            k = B_UNDER;
        else if (c >= 0xC0)
            k = B_LEAD;
        else if (c >= 0x80)
            k = B_CONT;
        byte_class[c] = k;
    }
    for (int s = 0; s < S_COUNT; s++)
        for (int b = 0; b < B_COUNT; b++) {
            unsigned char t = transition(s, b);
            trans[s * B_STRIDE + b] =
                (uint16_t)((t & ~START) * B_STRIDE | (t & START ? T_START : 0));
        }
    for (int s = 0; s < S_COUNT; s++)
        for (int b1 = 0; b1 < B_COUNT; b1++)
            for (int b2 = 0; b2 < B_COUNT; b2++) {
                unsigned char t1 = transition(s, b1);
                unsigned char t2 = transition(t1 & ~START, b2);
                unsigned i = (unsigned)(s * P_STRIDE + b1 * B_COUNT + b2);
                next2[i] = (uint16_t)((t2 & ~START) * P_STRIDE);
                starts2[i] = (uint8_t)((t1 >> 7) + (t2 >> 7));
            }
}

/* Pair class of p[0], p[1]: the column in next2/starts2. */
static inline unsigned pair(const unsigned char *p)
{
    return byte_class[p[0]] * B_COUNT + byte_class[p[1]];
}

/* One chain, for texts too short for the bitmap pass. */
static uint64_t estimate_short(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    uint64_t n = 0;
    const unsigned char *end = p + len;
    unsigned st2 = S_START * P_STRIDE;
    for (; end - p >= 2; p += 2) {
        unsigned i = st2 + pair(p);
        n += starts2[i];
        st2 = next2[i];
    }
    if (p < end)
        n += trans[st2 / P_STRIDE * B_STRIDE + byte_class[*p]] >> 15;
    return n;
}

void atr_blockhash_init(struct atr_blockhash *h, uint32_t block_size)
{
    memset(h, 0, sizeof *h);
    h->block_size = block_size ? block_size : 16;
}

static void push_id(struct atr_blockhash *h, uint64_t id)
{
    if (h->n_ids == h->cap_ids) {
        size_t cap = h->cap_ids ? h->cap_ids * 2 : 256;
        h->ids = xreallocarray(h->ids, cap, sizeof *h->ids);
        h->cap_ids = cap;
    }
    h->ids[h->n_ids++] = id;
}

/* Folds the bytes of the open block seen in this feed into its hash. Empty
 * segments are skipped so a block's id does not depend on where a feed
 * happened to stop. */
static void fold(struct atr_blockhash *h, const unsigned char *seg, const unsigned char *p)
{
    if (p > seg)
        h->open_hash = XXH3_64bits_withSeed(seg, (size_t)(p - seg), h->open_hash);
}

/* A block closes lazily, when the token after its last one starts, so that a
 * full block at the end of a feed keeps the same id when it is closed later.
 * The open block's hash is chained over its byte segments, starting from the
 * parent block's hash. */
/* Records the block that ends just before p and opens the next one. */
static void close_block(struct atr_blockhash *h, const unsigned char **seg,
                        const unsigned char *p)
{
    fold(h, *seg, p);
    h->chain = h->open_hash;
    push_id(h, h->chain & ATR_HASH_ID_MASK);
    *seg = p;
}

/* The byte-at-a-time-near-block-ends path, for pieces too short for the
 * bitmap pass (role headers, newlines) to pay for its setup. */
static void feed_short(struct atr_blockhash *h, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len, *seg = p;
    /* left: token starts the open block can still take; a start past it
     * begins the next block. Pairs of bytes run through next2 while they
     * cannot close a block; near a block's end, one byte at a time. */
    int64_t left = (int64_t)h->block_size - h->in_block;
    uint64_t starts = 0;
    unsigned state = S_START;
    while (p < end) {
        /* While two more starts fit, no pair can close a block: no checks. */
        unsigned st2 = state * P_STRIDE;
        while (left >= 4 && end - p >= 4) {
            unsigned i = st2 + pair(p);
            st2 = next2[i];
            unsigned j = st2 + pair(p + 2);
            st2 = next2[j];
            unsigned k = starts2[i] + starts2[j];
            starts += k;
            left -= k;
            p += 4;
        }
        while (left >= 2 && end - p >= 2) {
            unsigned i = st2 + pair(p);
            starts += starts2[i];
            left -= starts2[i];
            st2 = next2[i];
            p += 2;
        }
        state = st2 / P_STRIDE;
        if (p == end)
            break;
        unsigned t = trans[state * B_STRIDE + byte_class[*p]];
        state = (t & 0x7fff) / B_STRIDE;
        if (t & T_START) {
            if (left == 0) {
                close_block(h, &seg, p);
                left = h->block_size;
            }
            starts++;
            left--;
        }
        p++;
    }
    fold(h, seg, p);
    h->tokens += starts;
    h->in_block = (uint32_t)((int64_t)h->block_size - left);
}


/* ---- The bitmap path for long pieces --------------------------------------
 *
 * The automaton's one-load-per-pair chain is latency bound (~2.5 cycles a
 * byte), and leaving the pair loop near every block end costs as much again.
 * Long pieces therefore run in chunks: first the automaton writes a bitmap of
 * token starts (one bit per byte), in LANES independent chains at once over
 * the chunk's quarters, so the loads overlap; then the block cuts come off the
 * bitmap with popcount, a word of 64 bytes at a time.
 *
 * A quarter's chain can start mid-text only where the state is known without
 * the bytes before: a sync pair (a, b) is one where every state a byte of
 * class a can leave gives the same (state, start) after a byte of class b
 * (e.g. a letter then a space). The split moves forward to the first such
 * pair; none within SYNC_SEARCH bytes and the quarter merges into the one
 * before, so the bitmap is always exactly the serial automaton's. */
enum { CHUNK = 16384, LANES = 4, LANE_MIN = 512, SYNC_SEARCH = 256, SHORT_FEED = 64,
       BM_WORDS = CHUNK / 64 + 2 };

static uint8_t bits2[S_COUNT * P_STRIDE];       /* start bits of a pair: bit 0, bit 1 */
static uint8_t sync_ok[B_COUNT * B_COUNT];      /* pair (a, b) fixes the state after b */
static uint8_t sync_next[B_COUNT * B_COUNT];    /* that state (unflagged) */
static uint8_t sync_start[B_COUNT * B_COUNT];   /* and whether b starts a token */
static uint8_t select8[256 * 8];                /* index of the k-th set bit of a byte */
/* Pair column by the two bytes at once (one load instead of two plus a
 * multiply); the text's byte pairs touch few of its lines. */
static uint8_t pair16[65536];

/* Pair column of p[0], p[1] through pair16 (little-endian load order). */
static inline unsigned pair_fast(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return pair16[v];
}

/* Built on first use, not at start-up: the 64 KiB pair table costs
 * ~0.2 ms, which every atr command that hashes no long text would pay. */
static void bitmap_tables_build(void)
{
    for (int s = 0; s < S_COUNT; s++)
        for (int b1 = 0; b1 < B_COUNT; b1++)
            for (int b2 = 0; b2 < B_COUNT; b2++) {
                unsigned char t1 = transition(s, b1);
                unsigned char t2 = transition(t1 & ~START, b2);
                bits2[s * P_STRIDE + b1 * B_COUNT + b2] = (uint8_t)((t1 >> 7) | (t2 >> 7) << 1);
            }
    for (int a = 0; a < B_COUNT; a++)
        for (int b = 0; b < B_COUNT; b++) {
            int first = -1, ok = 1;
            for (int s = 0; s < S_COUNT && ok; s++) {
                int t = transition(transition(s, a) & ~START, b);
                if (first < 0)
                    first = t;
                else if (t != first)
                    ok = 0;
            }
            sync_ok[a * B_COUNT + b] = (uint8_t)ok;
            sync_next[a * B_COUNT + b] = (uint8_t)(first & ~START);
            sync_start[a * B_COUNT + b] = (uint8_t)(first >> 7);
        }
    for (int v = 0; v < 65536; v++) {
        uint16_t u = (uint16_t)v;
        unsigned char b[2];
        memcpy(b, &u, 2);
        pair16[v] = (uint8_t)pair(b);
    }
    for (int x = 0; x < 256; x++)
        for (int i = 0, k = 0; i < 8; i++)
            if (x >> i & 1)
                select8[x * 8 + k++] = (uint8_t)i;
}

/* ORs the 64 bits of w into the bitmap at bit offset off (the next word is
 * spare, so a straddling write needs no check). */
static inline void or_bits(uint64_t *bm, size_t off, uint64_t w)
{
    unsigned sh = off & 63;
    bm[off >> 6] |= w << sh;
    if (sh)
        bm[(off >> 6) + 1] |= w >> (64 - sh);
}

/* One chain over [p, end) of the chunk at base, from state st2 (times
 * P_STRIDE); returns the state after end (times P_STRIDE). */
static unsigned lane_run(uint64_t *bm, const unsigned char *base, const unsigned char *p,
                         const unsigned char *end, unsigned st2)
{
    for (;;) {
        /* Up to 32 pairs into one word, no branch on the data. */
        size_t pairs = (size_t)(end - p) / 2;
        if (!pairs)
            break;
        unsigned n = pairs < 32 ? (unsigned)pairs : 32;
        uint64_t w = 0;
        const unsigned char *from = p;
        for (unsigned sh = 0; sh < 2 * n; sh += 2, p += 2) {
            unsigned i = st2 + pair(p);
            w |= (uint64_t)bits2[i] << sh;
            st2 = next2[i];
        }
        or_bits(bm, (size_t)(from - base), w);
    }
    if (p < end) {
        unsigned t = trans[st2 / P_STRIDE * B_STRIDE + byte_class[*p]];
        if (t & T_START)
            or_bits(bm, (size_t)(p - base), 1);
        st2 = (t & 0x7fff) / B_STRIDE * P_STRIDE;
    }
    return st2;
}

/* First sync position in [from, lim) (from > text start), or NULL; reads
 * [from - 1, lim). */
static const unsigned char *find_sync(const unsigned char *from, const unsigned char *lim)
{
    for (const unsigned char *p = from; p < lim; p++)
        if (sync_ok[byte_class[p[-1]] * B_COUNT + byte_class[p[0]]])
            return p;
    return NULL;
}

/* A chain that starts at a sync position q: the byte at q is decided by the
 * pair (q[-1], q[0]); the chain goes on from q + 1. */
static unsigned sync_enter(uint64_t *bm, const unsigned char *base, const unsigned char *q)
{
    unsigned k = byte_class[q[-1]] * B_COUNT + byte_class[q[0]];
    if (sync_start[k])
        or_bits(bm, (size_t)(q - base), 1);
    return sync_next[k] * P_STRIDE;
}

/* Token-start bitmap of [base, end) from state st2; returns the state after.
 * Four quarters run in lockstep while all have 64 bytes left. */
static pthread_once_t bitmap_tables_once = PTHREAD_ONCE_INIT;

static unsigned chunk_bitmap(uint64_t *bm, const unsigned char *base, const unsigned char *end,
                             unsigned st2)
{
    pthread_once(&bitmap_tables_once, bitmap_tables_build);
    size_t len = (size_t)(end - base);
    memset(bm, 0, ((len + 63) / 64 + 1) * sizeof *bm);
    if (len < LANE_MIN)
        return lane_run(bm, base, base, end, st2);
    /* cut[k]: where lane k starts (cut[0] = base, cut[LANES] = end); a lane
     * whose sync search failed starts where the next one does (empty). */
    const unsigned char *cut[LANES + 1];
    cut[0] = base;
    cut[LANES] = end;
    for (int k = LANES - 1; k >= 1; k--) {
        /* The search stops at the next lane's start: never past the text. */
        const unsigned char *from = base + len * (size_t)k / LANES + 1;
        const unsigned char *lim = cut[k + 1] - from > SYNC_SEARCH ? from + SYNC_SEARCH : cut[k + 1];
        const unsigned char *q = find_sync(from, lim);
        cut[k] = q ? q : cut[k + 1];
    }
    unsigned st[LANES];
    const unsigned char *p[LANES];
    st[0] = st2;
    p[0] = base;
    for (int k = 1; k < LANES; k++) {
        if (cut[k] < cut[k + 1]) {
            st[k] = sync_enter(bm, base, cut[k]);
            p[k] = cut[k] + 1;
        } else {
            st[k] = 0;
            p[k] = cut[k];
        }
    }
    /* The lockstep part: every lane has 64 more bytes. */
    for (;;) {
        bool room = true;
        for (int k = 0; k < LANES; k++)
            room &= cut[k + 1] - p[k] >= 64;
        if (!room)
            break;
        uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;
        unsigned s0 = st[0], s1 = st[1], s2 = st[2], s3 = st[3];
        const unsigned char *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
        for (unsigned sh = 0; sh < 64; sh += 2) {
            unsigned i0 = s0 + pair_fast(p0 + sh), i1 = s1 + pair_fast(p1 + sh);
            unsigned i2 = s2 + pair_fast(p2 + sh), i3 = s3 + pair_fast(p3 + sh);
            w0 |= (uint64_t)bits2[i0] << sh;
            w1 |= (uint64_t)bits2[i1] << sh;
            w2 |= (uint64_t)bits2[i2] << sh;
            w3 |= (uint64_t)bits2[i3] << sh;
            s0 = next2[i0];
            s1 = next2[i1];
            s2 = next2[i2];
            s3 = next2[i3];
        }
        or_bits(bm, (size_t)(p0 - base), w0);
        or_bits(bm, (size_t)(p1 - base), w1);
        or_bits(bm, (size_t)(p2 - base), w2);
        or_bits(bm, (size_t)(p3 - base), w3);
        st[0] = s0, st[1] = s1, st[2] = s2, st[3] = s3;
        p[0] = p0 + 64, p[1] = p1 + 64, p[2] = p2 + 64, p[3] = p3 + 64;
    }
    unsigned last = st2;
    for (int k = 0; k < LANES; k++)
        if (p[k] < cut[k + 1] || k == 0 || cut[k] < cut[k + 1])
            last = lane_run(bm, base, p[k], cut[k + 1], st[k]);
    /* The state after the chunk is the last non-empty lane's. */
    return last;
}

/* Index of the k-th (0-based) set bit of w; k < popcount(w). Bytes'
 * popcounts summed by a multiply, then a table for the byte. */
static inline unsigned select64(uint64_t w, unsigned k)
{
    const uint64_t m1 = 0x5555555555555555u, m2 = 0x3333333333333333u,
                   m4 = 0x0f0f0f0f0f0f0f0fu, ones = 0x0101010101010101u, hi = 0x8080808080808080u;
    uint64_t b = w - ((w >> 1) & m1);
    b = (b & m2) + ((b >> 2) & m2);
    b = (b + (b >> 4)) & m4;
    uint64_t cum = b * ones;                        /* byte i: set bits in bytes 0..i */
    /* bytes whose cumulative count is <= k come before the one holding it */
    unsigned byte = (unsigned)__builtin_popcountll((((k * ones) | hi) - cum) & hi);
    unsigned before = byte ? (unsigned)(cum >> (8 * (byte - 1)) & 0xff) : 0;
    return byte * 8 + select8[(w >> (8 * byte) & 0xff) * 8 + (k - before)];
}

/* Block cuts off the bitmap of the chunk at p (n bytes): closes every block
 * whose room a start overflows; returns the starts counted. Cloned for
 * POPCNT (runtime-picked): without it popcount is a libgcc call. */
__attribute__((target_clones("popcnt", "default")))
static uint64_t cut_blocks(struct atr_blockhash *h, const uint64_t *bm, const unsigned char *p,
                           size_t n, const unsigned char **seg, int64_t *left_io)
{
    int64_t left = *left_io;
    uint64_t starts = 0;
    size_t words = (n + 63) / 64;
    for (size_t wi = 0; wi < words; wi++) {
        uint64_t w = bm[wi];
        if (wi == words - 1 && n % 64)
            w &= (UINT64_C(1) << (n % 64)) - 1;
        unsigned c = (unsigned)__builtin_popcountll(w);
        starts += c;
        /* A start past the open block's room closes it (lazily, as in
         * feed_short: only when the next token begins). */
        while ((int64_t)c > left) {
            unsigned q = select64(w, (unsigned)left);
            close_block(h, seg, p + wi * 64 + q);
            w &= q == 63 ? 0 : ~((UINT64_C(2) << q) - 1);
            c -= (unsigned)left + 1;
            left = h->block_size - 1;
        }
        left -= c;
    }
    *left_io = left;
    return starts;
}

/* Set bits in the first n bits of bm. */
__attribute__((target_clones("popcnt", "default")))
static uint64_t count_bits(const uint64_t *bm, size_t n)
{
    uint64_t c = 0;
    size_t full = n / 64;
    for (size_t wi = 0; wi < full; wi++)
        c += (uint64_t)__builtin_popcountll(bm[wi]);
    if (n % 64)
        c += (uint64_t)__builtin_popcountll(bm[full] & ((UINT64_C(1) << (n % 64)) - 1));
    return c;
}

/* Long texts go through the same bitmap as the block hasher (its four
 * chains overlap), then a popcount. */
uint64_t atr_tokens_estimate(const char *text, size_t len)
{
    if (len < LANE_MIN)
        return estimate_short(text, len);
    uint64_t bm[BM_WORDS], n = 0;
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    unsigned st2 = S_START * P_STRIDE;
    while (p < end) {
        const unsigned char *ce = end - p > CHUNK ? p + CHUNK : end;
        st2 = chunk_bitmap(bm, p, ce, st2);
        n += count_bits(bm, (size_t)(ce - p));
        p = ce;
    }
    return n;
}

void atr_blockhash_feed(struct atr_blockhash *h, const char *text, size_t len)
{
    if (len < SHORT_FEED) {
        feed_short(h, text, len);
        return;
    }
    uint64_t bm[BM_WORDS];
    const unsigned char *p = (const unsigned char *)text, *end = p + len, *seg = p;
    int64_t left = (int64_t)h->block_size - h->in_block;
    uint64_t starts = 0;
    unsigned st2 = S_START * P_STRIDE;
    while (p < end) {
        const unsigned char *ce = end - p > CHUNK ? p + CHUNK : end;
        st2 = chunk_bitmap(bm, p, ce, st2);
        starts += cut_blocks(h, bm, p, (size_t)(ce - p), &seg, &left);
        p = ce;
    }
    fold(h, seg, end);
    h->tokens += starts;
    h->in_block = (uint32_t)((int64_t)h->block_size - left);
}

uint64_t atr_blockhash_partial_id(const struct atr_blockhash *h)
{
    return h->in_block ? h->open_hash & ATR_HASH_ID_MASK : 0;
}

void atr_blockhash_release(struct atr_blockhash *h)
{
    free(h->ids);
    memset(h, 0, sizeof *h);
}
