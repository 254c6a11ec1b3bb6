/* heap.c - binary min-heap of (time, seq, data) events. */
#include "sched/heap.h"

#include <math.h>
#include <stdlib.h>

void atr_heap_init(struct atr_heap *h)
{
    h->items = NULL;
    h->len = h->cap = 0;
    h->next_seq = 0;
}

void atr_heap_release(struct atr_heap *h)
{
    free(h->items);
    atr_heap_init(h);
}

static bool item_less(const struct atr_heap_item *a, const struct atr_heap_item *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    return a->seq < b->seq;
}

static void sift_up(struct atr_heap *h, size_t i)
{
    struct atr_heap_item x = h->items[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!item_less(&x, &h->items[p]))
            break;
        h->items[i] = h->items[p];
        i = p;
    }
    h->items[i] = x;
}

static void sift_down(struct atr_heap *h, size_t i)
{
    struct atr_heap_item x = h->items[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->len)
            break;
        if (c + 1 < h->len && item_less(&h->items[c + 1], &h->items[c]))
            c++;
        if (!item_less(&h->items[c], &x))
            break;
        h->items[i] = h->items[c];
        i = c;
    }
    h->items[i] = x;
}

int64_t atr_heap_push(struct atr_heap *h, double t, void *data,
                      struct atr_error *err)
{
    if (isnan(t))
        return atr_error_set(err, "heap: event time is NaN");
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct atr_heap_item *n = realloc(h->items, cap * sizeof(*n));
        if (!n)
            return atr_error_set(err, "heap: out of memory");
        h->items = n;
        h->cap = cap;
    }
    uint64_t seq = h->next_seq++;
    h->items[h->len] = (struct atr_heap_item){ t, seq, data };
    h->len++;
    sift_up(h, h->len - 1);
    return (int64_t)seq;
}

const struct atr_heap_item *atr_heap_peek(const struct atr_heap *h)
{
    return h->len ? &h->items[0] : NULL;
}

bool atr_heap_pop(struct atr_heap *h, struct atr_heap_item *out)
{
    if (!h->len)
        return false;
    *out = h->items[0];
    h->len--;
    if (h->len) {
        h->items[0] = h->items[h->len];
        sift_down(h, 0);
    }
    return true;
}
