/* atr-lean.c - an atr-trace line of the common shape read in one pass,
 * without a JSON tree: members go straight into the trace (atr-impl.h).
 *
 * The tree (atr.c) costs a node, a position and a copy per value, then a
 * walk over them: ~12k instructions for a one-request line, most of what
 * `atr replay llm` spent reading its workload. This reader walks the line
 * once with a cursor of its own, keeps only what a struct atr_trace
 * holds, and makes atr.c's checks through the same functions. It accepts
 * a subset of JSON on which atr_json_parse agrees with it (the subset of
 * json/scan.h: strings plain or with short escapes, ASCII, integers of at
 * most 18 digits where the trace wants integers) and answers "cannot
 * tell" for anything else; atr.c then reads the line again with the tree,
 * so every error, and every line this reader does not know, is the
 * tree's. Values it does not keep (meta, unknown members, messages) are
 * stepped over by json/scan.h, which checks them as it goes. A line read
 * is recorded as its ops, and the next line replayed from them where it
 * differs only in its values ("ops" below). */
#include <stdlib.h>
#include <string.h>

#include "json/scan.h"
#include "trace/fmt/atr-impl.h"
#include "trace/tokens.h"

/* Nesting of what this reader opens itself: the line's object, "steps",
 * a step, its id lists. */
enum { DEPTH_STEP = 3, DEPTH_LIST = 4 };

/* The trace's own members; each may come once (a repeat: cannot tell). */
enum { H_FORMAT, H_TRACE_ID, H_SOURCE, H_START_MS, H_BLOCK_SIZE, H_META, H_STEPS, H_OTHER };

struct lean {
    const char *p, *end;         /* the cursor in the line */
    const char *line;
    struct atr_lean_memo *rec;   /* recording the line's ops into, or NULL */
    const struct atr_lean_opts *o;
    struct atr_trace *t;
    struct atr_step *s;          /* the step being read */
    uint64_t seen;               /* members of the object being read, by bit */
    bool kind, prefix;           /* the step has "kind", "prefix" */
    int64_t prefix_step, prefix_blocks;
};

static inline bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The next byte after blanks, or '\0' at the end of the line. */
static inline char peek(struct lean *l)
{
    while (l->p < l->end && blank(*l->p))
        l->p++;
    return l->p < l->end ? *l->p : '\0';
}

static inline bool eat(struct lean *l, char c)
{
    if (peek(l) != c)
        return false;
    l->p++;
    return true;
}

/* The rest of a string with a short escape at p (as json/scan.h accepts
 * them): its closing quote, or NULL. */
static const char *escaped_end(const char *p, const char *end)
{
    while (p < end && *p == '\\') {
        if (p + 1 == end || !memchr("\"\\/bfnrt", p[1], 8))
            return NULL;
        p = atr_json_scan_plain_end(p + 2, end);
    }
    return p < end && *p == '"' ? p : NULL;
}

/* A string at the cursor: its raw body[0..*len); *esc when it has short
 * escapes (then still raw). */
static bool read_raw(struct lean *l, const char **body, size_t *len, bool *esc)
{
    if (peek(l) != '"')
        return false;
    const char *b = l->p + 1, *q = atr_json_scan_plain_end(b, l->end);
    *esc = q < l->end && *q == '\\';
    if (*esc)
        q = escaped_end(q, l->end);
    if (!q || q == l->end || *q != '"')
        return false;
    *body = b;
    *len = (size_t)(q - b);
    l->p = q + 1;
    return true;
}

/* A key: a plain string and its ':' (a key with escapes: cannot tell). */
static bool read_key(struct lean *l, const char **key, size_t *len)
{
    bool esc;
    return read_raw(l, key, len, &esc) && !esc && eat(l, ':');
}

/* The literal null. */
static bool read_null(struct lean *l)
{
    if (l->end - l->p < 4 || memcmp(l->p, "null", 4) != 0)
        return false;
    l->p += 4;
    return true;
}

/* Short escapes of raw[0..n) (checked by read_raw) decoded into out. */
static size_t unescape(const char *raw, size_t n, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        out[k++] = raw[i] != '\\' ? raw[i] : to[strchr(from, raw[++i]) - from];
    return k;
}

/* A string (copied into the trace's arena, NUL-terminated) or null (*out
 * left as it is). */
static bool read_str(struct lean *l, const char **out)
{
    if (peek(l) == 'n')
        return read_null(l);
    const char *body;
    size_t n;
    bool esc;
    if (!read_raw(l, &body, &n, &esc))
        return false;
    char *s = atr_arena_try_alloc(&l->t->arena, n + 1);
    if (!s)
        return false;
    if (esc)
        n = unescape(body, n, s);
    else
        memcpy(s, body, n);
    s[n] = '\0';
    *out = s;
    return true;
}

/* A non-negative integer literal of at most 18 digits, which the tree
 * reads as is_int with this value; anything else (a sign, a fraction, an
 * exponent, more digits, a leading zero before a digit): cannot tell. */
/* Eight bytes at p that are all digits, as their value; else -1. Hash
 * ids have 16 digits: two of these, not sixteen steps of a loop. A byte
 * under '0' borrows and one over '9' carries only into later bytes, so
 * the first non-digit is flagged whatever follows it. */
static inline int64_t digits8(const char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t d = x - UINT64_C(0x3030303030303030);
    if (((x + UINT64_C(0x4646464646464646)) | d) & UINT64_C(0x8080808080808080))
        return -1;
    d = d * 10 + (d >> 8);       /* pairs, then quads, then all eight */
    d = ((d & UINT64_C(0x000000FF000000FF)) * (100 + (UINT64_C(1000000) << 32)) +
         ((d >> 16) & UINT64_C(0x000000FF000000FF)) * (1 + (UINT64_C(10000) << 32))) >> 32;
    return (int64_t)d;
#else
    (void)p;
    return -1;
#endif
}

static bool read_uint(struct lean *l, int64_t *out)
{
    peek(l);
    const char *p = l->p, *start = p;
    uint64_t v = 0;              /* 19 digits and more wrap: not used */
    int64_t eight;
    while (l->end - p >= 8 && p - start <= 10 && (eight = digits8(p)) >= 0) {
        v = v * 100000000 + (uint64_t)eight;
        p += 8;
    }
    while (p < l->end && (unsigned)(*p - '0') < 10)
        v = v * 10 + (unsigned)(*p++ - '0');
    size_t n = (size_t)(p - start);
    if (n == 0 || n > 18 || (*start == '0' && n > 1) ||
        (p < l->end && (*p == '.' || *p == 'e' || *p == 'E')))
        return false;
    l->p = p;
    *out = (int64_t)v;
    return true;
}

/* A non-negative integer or null (*out left as it is). */
static bool read_uint_or_null(struct lean *l, int64_t *out)
{
    return peek(l) == 'n' ? read_null(l) : read_uint(l, out);
}

/* Any one value, stepped over (and checked) by json/scan.h, nested at
 * most as deep as the tree allows below depth. */
static bool skip(struct lean *l, unsigned depth)
{
    struct atr_json_scan sc;
    atr_json_scan_init(&sc, l->p, (size_t)(l->end - l->p));
    if (l->o->max_depth - depth < sc.max_depth)
        sc.max_depth = l->o->max_depth - depth;
    if (!atr_json_scan_skip(&sc))
        return false;
    l->p = sc.p;
    return true;
}

/* Room for one more element of size bytes in *v holding n (cap: its
 * room): the array doubles in the arena (the old one stays there until
 * the clear). */
static bool grow(struct lean *l, void **v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return true;
    size_t room = *cap ? 2 * *cap : 8;
    void *w = atr_arena_try_alloc(&l->t->arena, room * size);
    if (!w)
        return false;
    if (n)
        memcpy(w, *v, n * size);
    *v = w;
    *cap = room;
    return true;
}

/* "[" elements "]": each read by elem; an empty list still gets an
 * array (of room for one), as the tree reader leaves it. */
static bool read_list(struct lean *l, bool (*elem)(struct lean *l, size_t i, size_t *cap))
{
    size_t n = 0, cap = 0;
    if (!eat(l, '['))
        return false;
    if (peek(l) == ']') {
        l->p++;
        return elem(l, SIZE_MAX, &cap);
    }
    do {
        if (!elem(l, n++, &cap))
            return false;
    } while (eat(l, ','));
    return eat(l, ']');
}

/* hash_ids element i (SIZE_MAX: the list is empty). */
static bool id_elem(struct lean *l, size_t i, size_t *cap)
{
    struct atr_step *s = l->s;
    int64_t v;
    if (i == SIZE_MAX)
        return grow(l, (void **)&s->hash_ids, 0, cap, sizeof *s->hash_ids);
    if (!read_uint(l, &v) || (uint64_t)v > ATR_HASH_ID_MASK ||
        !grow(l, (void **)&s->hash_ids, i, cap, sizeof *s->hash_ids))
        return false;
    s->hash_ids[i] = (uint64_t)v;
    s->n_hash_ids = (uint32_t)i + 1;
    return true;
}

static bool parent_elem(struct lean *l, size_t i, size_t *cap)
{
    struct atr_step *s = l->s;
    int64_t v;
    if (i == SIZE_MAX)
        return grow(l, (void **)&s->parents, 0, cap, sizeof *s->parents);
    if (!read_uint(l, &v) || atr_parent_check(s, v) != 0 ||
        !grow(l, (void **)&s->parents, i, cap, sizeof *s->parents))
        return false;
    s->parents[s->n_parents++] = (uint32_t)v;
    return true;
}

/* {"step":K,"blocks":N}: other members are ignored, as the tree reader
 * does; a repeated one cannot be told (the tree takes the first). */
static bool read_prefix(struct lean *l)
{
    int64_t v[2] = {-1, -1};
    if (!eat(l, '{'))
        return false;
    do {
        const char *key;
        size_t n;
        int64_t *at = NULL;
        if (!read_key(l, &key, &n))
            return false;
        if (n == 4 && memcmp(key, "step", 4) == 0)
            at = &v[0];
        else if (n == 6 && memcmp(key, "blocks", 6) == 0)
            at = &v[1];
        if (at ? *at != -1 || !read_uint(l, at) : !skip(l, DEPTH_LIST))
            return false;
    } while (eat(l, ','));
    l->prefix = true;
    l->prefix_step = v[0];
    l->prefix_blocks = v[1];
    return eat(l, '}');
}

static bool read_kind(struct lean *l)
{
    const char *body;
    size_t n;
    bool esc;
    l->kind = true;
    if (!read_raw(l, &body, &n, &esc) || esc)
        return false;
    if (n == 3 && memcmp(body, "llm", 3) == 0)
        l->s->kind = ATR_STEP_LLM;
    else if (n == 4 && memcmp(body, "tool", 4) == 0)
        l->s->kind = ATR_STEP_TOOL;
    else
        return false;
    return true;
}

/* Marks bit as seen; false when it was (a repeated member). */
static bool first_time(struct lean *l, unsigned bit)
{
    uint64_t m = UINT64_C(1) << bit;
    if (l->seen & m)
        return false;
    l->seen |= m;
    return true;
}

/* The value of step member e, as atr.c's read_member stores it; the JSON
 * nodes (messages, output) are stepped over. */
static bool member_value(struct lean *l, const struct atr_member *e)
{
    struct atr_step *s = l->s;
    int64_t v;
    switch (e->kind) {
    case M_INT:
        return read_uint_or_null(l, (int64_t *)(void *)((char *)s + e->off));
    case M_STR:
        return read_str(l, (const char **)(void *)((char *)s + e->off));
    case M_EXIT:   /* a negative exit code: for the tree */
        return read_uint_or_null(l, &s->exit_code);
    case M_I:
        return read_uint(l, &v) && v == (int64_t)s->i;
    case M_IDS:
        return read_list(l, id_elem);
    case M_PREFIX:
        return read_prefix(l);
    case M_MESSAGES:
    case M_OUTPUT:
        return skip(l, DEPTH_STEP);
    case M_KIND:
        return read_kind(l);
    case M_PARENTS:
        return read_list(l, parent_elem);
    case M_AGENT:
        return read_str(l, &s->agent) && s->agent && s->agent[0];
    }
    return false;
}

static unsigned header_member(const char *key, size_t n)
{
    static const struct {
        const char *key;
        size_t len;
    } names[] = {{"format", 6}, {"trace_id", 8}, {"source", 6}, {"start_ms", 8},
                 {"block_size", 10}, {"meta", 4}, {"steps", 5}};
    for (unsigned k = 0; k < H_OTHER; k++)
        if (names[k].len == n && memcmp(names[k].key, key, n) == 0)
            return k;
    return H_OTHER;
}

static bool read_format(struct lean *l)
{
    const char *body;
    size_t n;
    bool esc;
    return read_raw(l, &body, &n, &esc) && !esc && atr_format_known(body, n);
}

static bool read_block_size(struct lean *l)
{
    int64_t v;
    if (!read_uint(l, &v) || v < 1 || v > ATR_BLOCK_SIZE_MAX)
        return false;
    l->t->block_size = (uint32_t)v;
    return true;
}

/* ---- ops: what the reader does at each value, recorded and replayed ----
 *
 * Lines of one workload differ, as a rule, only in their values: the
 * keys, their order and the structure around them are the same bytes.
 * A line read here is recorded as its ops, each a value read (or a step
 * begun or ended) at an offset, with the line's bytes between them. The
 * next line is read by replaying them: the bytes between values must be
 * the recorded ones (16 at a time, memcmp), and each value is read by
 * the same function the reader would call there, since what the reader
 * calls depends only on those bytes (keys, brackets, commas, blanks).
 * So a replay reads a line as the reader would; where the bytes differ
 * it stops, and the reader reads the line (and records it). Values the
 * reader steps over (meta, unknown members) that are the recorded bytes
 * are not scanned again: the recorded ones were one valid value, and the
 * bytes after them must match as well. */

enum op_kind { OP_FORMAT, OP_TRACE_ID, OP_SOURCE, OP_START_MS, OP_BLOCK_SIZE, OP_META, OP_SKIP,
               OP_STEP_BEGIN, OP_STEP_END, OP_MEMBER };
enum { MEMO_TEXT = 4096, MEMO_OPS = 256 };

struct lean_op {
    uint16_t start, end;         /* the value in the recorded line */
    uint8_t kind, depth;         /* OP_SKIP: the depth it is at */
    const struct atr_member *e;  /* OP_MEMBER */
};

struct atr_lean_memo {
    size_t len;                  /* the recorded line's length; 0: none */
    unsigned n_ops;
    bool full;                   /* recording gave up: more ops than fit */
    struct lean_op ops[MEMO_OPS];
    char text[MEMO_TEXT];
};

struct atr_lean_memo *atr_lean_memo_new(void)
{
    struct atr_lean_memo *m = malloc(sizeof *m);
    if (m)
        m->len = 0;
    return m;
}

void atr_lean_memo_free(struct atr_lean_memo *m)
{
    free(m);
}

static void begin_step(struct lean *l)
{
    l->s = atr_trace_add_step(l->t, ATR_STEP_LLM);
    l->seen = 0;
    l->kind = l->prefix = false;
}

/* After a step's '}': it has "kind"; its prefix applied. */
static bool end_step(struct lean *l)
{
    if (!l->kind)
        return false;
    if (l->prefix) {
        if (atr_prefix_check(l->t, l->s, l->prefix_step, l->prefix_blocks) != 0)
            return false;
        atr_prefix_apply(l->t, l->s, l->prefix_step, l->prefix_blocks, l->o->compact_ids);
    }
    return true;
}

static bool run_op(struct lean *l, unsigned kind, const struct atr_member *e, unsigned depth)
{
    switch (kind) {
    case OP_FORMAT:
        return read_format(l);
    case OP_TRACE_ID:
        return read_str(l, &l->t->trace_id);
    case OP_SOURCE:
        return read_str(l, &l->t->source);
    case OP_START_MS:
        return read_uint_or_null(l, &l->t->start_ms);
    case OP_BLOCK_SIZE:
        return read_block_size(l);
    case OP_META:
        return peek(l) == 'n' ? read_null(l) : peek(l) == '{' && skip(l, 1);
    case OP_SKIP:
        return skip(l, depth);
    case OP_STEP_BEGIN:
        begin_step(l);
        return true;
    case OP_STEP_END:
        return end_step(l);
    case OP_MEMBER:
        return member_value(l, e);
    }
    return false;
}

/* Runs an op at the cursor, and records it when recording. */
static bool op(struct lean *l, unsigned kind, const struct atr_member *e, unsigned depth)
{
    const char *start = l->p;
    if (!run_op(l, kind, e, depth))
        return false;
    struct atr_lean_memo *m = l->rec;
    if (m && !m->full) {
        if (m->n_ops == MEMO_OPS) {
            m->full = true;
            return true;
        }
        m->ops[m->n_ops++] = (struct lean_op){(uint16_t)(start - l->line),
                                              (uint16_t)(l->p - l->line), (uint8_t)kind,
                                              (uint8_t)depth, e};
    }
    return true;
}

/* A step member: its name looked up, once per step; unknown ones are
 * stepped over. */
static bool step_member(struct lean *l, const char *key, size_t n)
{
    const struct atr_member *e = atr_member_find(key, n);
    if (!e)
        return op(l, OP_SKIP, NULL, DEPTH_STEP);
    return first_time(l, e->bit) && op(l, OP_MEMBER, e, 0);
}

/* Step i of "steps": an object with "kind"; its prefix applied. */
static bool step_elem(struct lean *l, size_t i, size_t *cap)
{
    (void)cap;
    if (i == SIZE_MAX)
        return true;
    if (!op(l, OP_STEP_BEGIN, NULL, 0) || !eat(l, '{'))
        return false;
    if (peek(l) != '}') {
        do {
            const char *key;
            size_t n;
            if (!read_key(l, &key, &n) || !step_member(l, key, n))
                return false;
        } while (eat(l, ','));
    }
    return eat(l, '}') && op(l, OP_STEP_END, NULL, 0);
}

/* The value of trace member key[0..n), as atr.c's read_header and
 * read_trace read it. Steps are read as they come; the checks that need
 * the block size wait for the end of the line. */
static bool trace_member(struct lean *l, const char *key, size_t n)
{
    static const unsigned ops[] = {[H_FORMAT] = OP_FORMAT, [H_TRACE_ID] = OP_TRACE_ID,
                                   [H_SOURCE] = OP_SOURCE, [H_START_MS] = OP_START_MS,
                                   [H_BLOCK_SIZE] = OP_BLOCK_SIZE, [H_META] = OP_META};
    unsigned h = header_member(key, n);
    if (h == H_OTHER)
        return op(l, OP_SKIP, NULL, 1);
    if (!first_time(l, h))
        return false;
    if (h != H_STEPS)
        return op(l, ops[h], NULL, 0);
    uint64_t seen = l->seen;
    bool ok = read_list(l, step_elem);
    l->seen = seen;   /* the steps used it for their own members */
    return ok;
}

/* The checks of a whole line, once its members are read. */
static int finish(struct lean *l)
{
    struct atr_trace *t = l->t;
    if (!t->trace_id)
        return 0;
    for (size_t k = 0; k < t->n_steps; k++) {
        size_t earlier;
        if (atr_step_check(t, &t->steps[k], &earlier) != ATR_CHECK_OK)
            return 0;
    }
    if (!t->source)
        t->source = "atr";
    if (t->n_steps)
        atr_old_journal_line(t);
    return 1;
}

/* The line read member by member. */
static bool read_line(struct lean *l)
{
    if (!eat(l, '{'))
        return false;
    do {
        const char *key;
        size_t n;
        if (!read_key(l, &key, &n) || !trace_member(l, key, n))
            return false;
    } while (eat(l, ','));
    if (!eat(l, '}') || peek(l) != '\0' || l->p != l->end)
        return false;
    uint64_t need = (UINT64_C(1) << H_FORMAT) | (UINT64_C(1) << H_STEPS);
    return (l->seen & need) == need;
}

/* line[0..len) equals text[0..n) from the cursor on: stepped over. */
static bool same_bytes(struct lean *l, const char *text, size_t n)
{
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, text, n) != 0)
        return false;
    l->p += n;
    return true;
}

/* The line read by the recorded ops (see above). */
static bool replay(struct lean *l, const struct atr_lean_memo *m)
{
    size_t at = 0;
    for (unsigned k = 0; k < m->n_ops; k++) {
        const struct lean_op *o = &m->ops[k];
        if (!same_bytes(l, m->text + at, o->start - at))
            return false;
        bool skipped = (o->kind == OP_SKIP || o->kind == OP_META) &&
                       same_bytes(l, m->text + o->start, (size_t)(o->end - o->start));
        if (!skipped && !run_op(l, o->kind, o->e, o->depth))
            return false;
        at = o->end;
    }
    return same_bytes(l, m->text + at, m->len - at) && l->p == l->end;
}

int atr_lean_line(struct atr_trace *t, const char *line, size_t len,
                  const struct atr_lean_opts *o, struct atr_lean_memo *memo)
{
    /* Past the tree's limits the tree fails, so this reader must not
     * answer (a line of len bytes holds at most len / 2 + 1 values). */
    if (len / 2 + 1 > o->max_values || o->max_depth < DEPTH_LIST)
        return 0;
    struct lean l = {.p = line, .end = line + len, .line = line, .o = o, .t = t};
    t->source = NULL;            /* as atr.c's read_trace: "atr" when absent */
    if (memo && memo->len) {
        if (replay(&l, memo))
            return finish(&l);
        atr_trace_clear(t);      /* as it came, to be read again */
        t->block_size = o->block_size;
        l = (struct lean){.p = line, .end = line + len, .line = line, .o = o, .t = t};
    }
    if (memo && len <= MEMO_TEXT) {
        memo->len = 0;
        memo->n_ops = 0;
        memo->full = false;
        l.rec = memo;
    }
    if (!read_line(&l))
        return 0;
    int rc = finish(&l);
    if (rc == 1 && l.rec && !memo->full) {
        memcpy(memo->text, line, len);
        memo->len = len;
    }
    return rc;
}
