/* heap.h - binary min-heap of timed events ordered by (time, seq), the one
 * priority queue shared by the simulator and the replay scheduler.
 *
 * seq is assigned on push from a per-heap counter, so events at the same time
 * come out in push order and ties never depend on the heap's layout.
 * Memory: the heap owns its item array only; data pointers are borrowed and
 * never freed by the heap. */
#ifndef ATR_SCHED_HEAP_H
#define ATR_SCHED_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct atr_heap_item {
    double t;            /* event time */
    uint64_t seq;        /* push order, breaks ties on t */
    void *data;          /* caller's payload (borrowed) */
};

struct atr_heap {
    struct atr_heap_item *items;
    size_t len, cap;
    uint64_t next_seq;
};

#define ATR_HEAP_INIT { NULL, 0, 0, 0 }

void atr_heap_init(struct atr_heap *h);
/* Frees the item array; the heap is empty and reusable afterwards. */
void atr_heap_release(struct atr_heap *h);

/* Adds (t, next seq, data). Returns the seq given, or -1 with err set when
 * out of memory or t is NaN (a NaN would break the ordering). */
int64_t atr_heap_push(struct atr_heap *h, double t, void *data,
                      struct atr_error *err);
/* The smallest item, or NULL when empty. Valid until the next push/pop. */
const struct atr_heap_item *atr_heap_peek(const struct atr_heap *h);
/* Removes the smallest item into *out; false when empty. */
bool atr_heap_pop(struct atr_heap *h, struct atr_heap_item *out);

static inline size_t atr_heap_len(const struct atr_heap *h) { return h->len; }

#endif
