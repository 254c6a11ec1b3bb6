/* atr-impl.h - what the two readers of atr-trace lines share: atr.c,
 * which reads a line's JSON tree and gives every error at file:line:col,
 * and atr-lean.c, which reads the common line in one pass without a tree
 * and hands anything it cannot vouch for to atr.c. Both take the step's
 * members from one table and make the same checks through the functions
 * here, so a line they both read comes out the same.
 *
 * Memory: atr_prefix_apply, atr_old_journal_line and atr_lean_line
 * allocate in the trace's arena; a memo is malloc'd (atr_lean_memo_new)
 * and freed by its owner, the reader (its format state). */
#ifndef ATR_TRACE_FMT_ATR_IMPL_H
#define ATR_TRACE_FMT_ATR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"   /* not reader.h: its enum atr_json_shape is scan.h's struct */

/* A step member's kind: M_INT, M_STR a field of struct atr_step at off. */
enum atr_member_kind { M_INT, M_STR, M_EXIT, M_I, M_IDS, M_PREFIX, M_MESSAGES, M_OUTPUT,
                       M_KIND, M_PARENTS, M_AGENT };

struct atr_member {
    const char *key;
    size_t len;
    enum atr_member_kind kind;
    size_t off;
    unsigned bit;     /* distinct per member, < 64: the lean reader's "seen" set */
};

/* The step member named key[0..len), or NULL when a step does not know it. */
const struct atr_member *atr_member_find(const char *key, size_t len);

/* What is wrong with a step whose members are all read, in the order the
 * tree reader reports them; ATR_CHECK_ORDER names the earlier step. */
enum atr_step_check { ATR_CHECK_OK, ATR_CHECK_TOKENS_FROM, ATR_CHECK_OUTPUT_FROM,
                      ATR_CHECK_IDS, ATR_CHECK_TOOL, ATR_CHECK_ORDER };

/* Checks step s (the last of t) and turns its tokens_from names into the
 * static ATR_TOKENS_* strings; *earlier: the step it is out of order with. */
enum atr_step_check atr_step_check(const struct atr_trace *t, struct atr_step *s,
                                   size_t *earlier);

/* "prefix":{"step":k,"blocks":n} on step s: 0 when it fits, 1 when k is
 * not an earlier llm step, 2 when that step has fewer than n ids. */
int atr_prefix_check(const struct atr_trace *t, const struct atr_step *s, int64_t k, int64_t n);
/* Applies a fitting prefix: the full id list in s (copied into the trace
 * arena), or with compact the reference to it. */
void atr_prefix_apply(struct atr_trace *t, struct atr_step *s, int64_t k, int64_t n,
                      bool compact);

/* Whether parent v may be added to step s's parents[0..s->n_parents):
 * 0 yes, 1 not an earlier step, 2 already there. */
int atr_parent_check(const struct atr_step *s, int64_t v);

/* The format names this reader reads: "atr-trace/1" and "/1.1". */
bool atr_format_known(const char *s, size_t len);
#define ATR_BLOCK_SIZE_MAX (1 << 20)

/* An old atr proxy journal line read as the proxy writes it now (see atr.c). */
void atr_old_journal_line(struct atr_trace *t);

/* The limits of the tree reader that the lean one must keep to. */
struct atr_lean_opts {
    size_t max_values;        /* the tree's cap on a line's values */
    unsigned max_depth;       /* its nesting cap */
    bool compact_ids;         /* atr_read_opts.compact_ids */
    uint32_t block_size;      /* a trace's block size when it names none */
};

/* The ops of the last line read, replayed on the next (atr-lean.c): a
 * reader's, malloc'd by _new (NULL when out of memory), freed by _free. */
struct atr_lean_memo;
struct atr_lean_memo *atr_lean_memo_new(void);
void atr_lean_memo_free(struct atr_lean_memo *m);   /* accepts NULL */

/* atr-lean.c: reads line[0..len) into t (as atr_reader_next hands it to
 * a format) without a JSON tree. 1: t is what atr.c's tree reader makes
 * of the line, but for the JSON nodes (meta, extra, messages, output:
 * NULL). 0: cannot tell (anything outside the common shape: escapes past
 * the short ones, non-ASCII, repeated members, every error); t then holds
 * a partial read: reset it and read the line with the tree. memo (NULL:
 * none) holds the ops of the last line read; lines that share its bytes
 * but for their values are read by replaying them. */
int atr_lean_line(struct atr_trace *t, const char *line, size_t len,
                  const struct atr_lean_opts *o, struct atr_lean_memo *memo);

#endif
