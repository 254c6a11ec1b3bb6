/* sample.c - stratified seeded subset choice over per-trace features. */
#include "gen/sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/alloc.h"
#include "util/rng.h"

#define HEAD_MAX 64
#define OTHER_CLASS "other"

struct sample_rec {
    uint32_t turns;
    uint32_t cls;            /* class id in the sampler's table */
};

struct sample_class {
    char *name;
    size_t traces;           /* traces whose dominant tool it is */
    uint32_t rank;           /* after choose: final class index */
};

struct atr_sampler {
    struct sample_rec *recs;
    size_t n, cap;
    struct sample_class *cls; /* class table, by id */
    size_t n_cls, cap_cls;
    uint32_t *slots;          /* open addressing: class id + 1, 0 = empty */
    size_t n_slots;
    unsigned char *picked;    /* bitmap over recs */
    struct atr_sample_stratum *strata;
    size_t n_strata;
    bool by_resource;         /* classes are resource classes, not tools */
};

struct atr_sampler *atr_sampler_new(void)
{
    return xcalloc(1, sizeof(struct atr_sampler));
}

void atr_sampler_free(struct atr_sampler *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->n_cls; k++)
        free(s->cls[k].name);
    free(s->cls);
    free(s->slots);
    free(s->recs);
    free(s->picked);
    free(s->strata);
    free(s);
}

/* ---- dominant tool of one trace ---- */

static void step_head(const struct atr_step *st, char *out, size_t cap)
{
    const char *tool = st->tool ? st->tool : "tool";
    if (st->command && *st->command)
        atr_command_head(st->command, out, cap);
    else if (st->command_head && *st->command_head)
        snprintf(out, cap, "%s", st->command_head);
    else
        out[0] = '\0';
    if (!out[0])
        snprintf(out, cap, "%s", tool);
}

void atr_trace_dominant_tool(const struct atr_trace *t, char *out, size_t cap)
{
    /* A trace has few distinct heads: a small linear table is enough. */
    enum { DISTINCT = 32 };
    char heads[DISTINCT][HEAD_MAX];
    size_t counts[DISTINCT], n = 0, best = 0;
    char h[HEAD_MAX];
    for (size_t i = 0; i < t->n_steps; i++) {
        if (t->steps[i].kind != ATR_STEP_TOOL)
            continue;
        step_head(&t->steps[i], h, sizeof h);
        size_t k = 0;
        while (k < n && strcmp(heads[k], h) != 0)
            k++;
        if (k == n && n == DISTINCT)
            continue;                     /* rare heads beyond 32 cannot dominate much */
        if (k == n) {
            memcpy(heads[n], h, sizeof h);
            counts[n++] = 0;
        }
        if (++counts[k] > counts[best])
            best = k;
    }
    snprintf(out, cap, "%s", n ? heads[best] : "none");
}

/* ---- resource class of one trace ---- */

enum { RC_BURSTY, RC_MEMORY, RC_CPU, RC_IO, RC_COUNT };
static const char *const rc_names[RC_COUNT] = {"bursty", "memory", "cpu", "io"};

/* The class of one command head (or tool name); -1: none of them. */
static int head_class(const char *h)
{
    static const char *const bursty[] = {"pytest", "make", "npm", "pip", "pip3", "yarn", "pnpm",
                                         "cargo", "mvn", "gradle", "tox", "cmake", "ninja",
                                         "bazel", "poetry", "conda", NULL};
    static const char *const memory[] = {"java", "node", "docker", "podman", "jupyter",
                                         "R", "julia", NULL};
    static const char *const cpu[] = {"python", "python3", "gcc", "g++", "cc", "clang", "go",
                                      "rustc", "javac", "tsc", NULL};
    static const char *const io[] = {"grep", "find", "git", "cat", "sed", "ls", "cp", "mv",
                                     "tar", "rg", "head", "tail", "awk", "wc", "diff", "editor",
                                     "str_replace_editor", NULL};
    const char *const *lists[RC_COUNT] = {bursty, memory, cpu, io};
    for (int c = 0; c < RC_COUNT; c++)
        for (const char *const *w = lists[c]; *w; w++)
            if (strcmp(h, *w) == 0)
                return c;
    return -1;
}

const char *atr_trace_resource_class(const struct atr_trace *t)
{
    /* weighted by time: a trace whose pytest runs take most of its tool
     * time is bursty, however many greps it runs around them */
    int64_t weight[RC_COUNT] = {0};
    size_t tools = 0;
    char h[HEAD_MAX];
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct atr_step *st = &t->steps[i];
        if (st->kind != ATR_STEP_TOOL)
            continue;
        tools++;
        if (st->dur_ms >= 60000)
            return "long-running";
        step_head(st, h, sizeof h);
        int c = head_class(h);
        if (c >= 0)
            weight[c] += st->dur_ms > 0 ? st->dur_ms : 1;
    }
    if (!tools)
        return "none";
    int best = RC_IO;                 /* a trace of unknown commands reads and edits files */
    for (int c = 0; c < RC_COUNT; c++)
        if (weight[c] > weight[best])
            best = c;
    return rc_names[best];
}

void atr_sampler_by_resource(struct atr_sampler *s, bool on)
{
    s->by_resource = on;
}

/* ---- class table ---- */

static void slots_grow(struct atr_sampler *s)
{
    size_t n = s->n_slots ? s->n_slots * 2 : 64;
    uint32_t *slots = xcalloc(n, sizeof *slots);
    for (size_t k = 0; k < s->n_cls; k++) {
        size_t j = XXH3_64bits(s->cls[k].name, strlen(s->cls[k].name)) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = (uint32_t)k + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->n_slots = n;
}

static uint32_t class_id(struct atr_sampler *s, const char *name)
{
    if (s->n_cls * 2 >= s->n_slots)
        slots_grow(s);
    size_t j = XXH3_64bits(name, strlen(name)) & (s->n_slots - 1);
    for (; s->slots[j]; j = (j + 1) & (s->n_slots - 1))
        if (strcmp(s->cls[s->slots[j] - 1].name, name) == 0)
            return s->slots[j] - 1;
    if (s->n_cls == s->cap_cls) {
        s->cap_cls = s->cap_cls ? s->cap_cls * 2 : 16;
        s->cls = xreallocarray(s->cls, s->cap_cls, sizeof *s->cls);
    }
    s->cls[s->n_cls] = (struct sample_class){xstrdup(name), 0, 0};
    s->slots[j] = (uint32_t)++s->n_cls;
    return (uint32_t)s->n_cls - 1;
}

void atr_sampler_add(struct atr_sampler *s, const struct atr_trace *t)
{
    char head[HEAD_MAX];
    if (s->by_resource)
        snprintf(head, sizeof head, "%s", atr_trace_resource_class(t));
    else
        atr_trace_dominant_tool(t, head, sizeof head);
    uint32_t turns = 0;
    for (size_t i = 0; i < t->n_steps; i++)
        turns += t->steps[i].kind == ATR_STEP_LLM;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->recs = xreallocarray(s->recs, s->cap, sizeof *s->recs);
    }
    uint32_t id = class_id(s, head);
    s->cls[id].traces++;
    s->recs[s->n++] = (struct sample_rec){turns, id};
}

size_t atr_sampler_count(const struct atr_sampler *s)
{
    return s->n;
}

bool atr_sampler_picked(const struct atr_sampler *s, size_t index)
{
    return s->picked && index < s->n && (s->picked[index / 8] >> (index % 8)) & 1;
}

size_t atr_sampler_n_strata(const struct atr_sampler *s)
{
    return s->n_strata;
}

const struct atr_sample_stratum *atr_sampler_stratum(const struct atr_sampler *s, size_t k)
{
    return k < s->n_strata ? &s->strata[k] : NULL;
}

/* ---- choosing ---- */

#define MAX_CLASSES (ATR_SAMPLE_TOOL_CLASSES + 1)
#define MAX_STRATA (ATR_SAMPLE_LENGTH_BINS * MAX_CLASSES)

struct class_order {
    size_t traces;
    const char *name;
    uint32_t id;
};

static int by_frequency(const void *a, const void *b)
{
    const struct class_order *x = a, *y = b;
    if (x->traces != y->traces)
        return x->traces > y->traces ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Gives each class its final rank: the most common keep their own, the
 * rest share "other". Fills names[rank]; returns the number of ranks. */
static size_t rank_classes(struct atr_sampler *s, const char **names)
{
    struct class_order *o = xreallocarray(NULL, s->n_cls, sizeof *o);
    for (size_t k = 0; k < s->n_cls; k++)
        o[k] = (struct class_order){s->cls[k].traces, s->cls[k].name, (uint32_t)k};
    qsort(o, s->n_cls, sizeof *o, by_frequency);
    size_t keep = s->n_cls < ATR_SAMPLE_TOOL_CLASSES ? s->n_cls : ATR_SAMPLE_TOOL_CLASSES;
    for (size_t r = 0; r < s->n_cls; r++) {
        s->cls[o[r].id].rank = (uint32_t)(r < keep ? r : keep);
        if (r < keep)
            names[r] = o[r].name;
    }
    free(o);
    if (s->n_cls > keep)
        names[keep] = OTHER_CLASS;
    return s->n_cls > keep ? keep + 1 : keep;
}

static int by_value(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Quantile cut points of turns, distinct and above the minimum so that no
 * bin is empty by construction; a trace's bin is the number of cuts <= its
 * turns. Returns the number of cuts. */
static size_t length_cuts(const struct atr_sampler *s, uint32_t *cuts)
{
    uint32_t *v = xreallocarray(NULL, s->n, sizeof *v);
    for (size_t k = 0; k < s->n; k++)
        v[k] = s->recs[k].turns;
    qsort(v, s->n, sizeof *v, by_value);
    size_t n = 0;
    for (size_t q = 1; q < ATR_SAMPLE_LENGTH_BINS; q++) {
        uint32_t c = v[s->n * q / ATR_SAMPLE_LENGTH_BINS];
        if (c > v[0] && (n == 0 || c > cuts[n - 1]))
            cuts[n++] = c;
    }
    free(v);
    return n;
}

static size_t stratum_of(const struct atr_sampler *s, const struct sample_rec *r,
                         const uint32_t *cuts, size_t n_cuts, size_t n_ranks)
{
    size_t bin = 0;
    while (bin < n_cuts && r->turns >= cuts[bin])
        bin++;
    return bin * n_ranks + s->cls[r->cls].rank;
}

/* Adds to quota[] r picks spread over weight[] by largest remainder
 * (Hamilton): floors of r * w / W, then one more for the largest
 * remainders, ties to the lower stratum. */
static void apportion(size_t r, const size_t *weight, size_t n, size_t *quota)
{
    uint64_t total = 0, rem[MAX_STRATA];
    for (size_t k = 0; k < n; k++)
        total += weight[k];
    if (!total)
        return;
    size_t given = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t x = (uint64_t)r * weight[k];
        quota[k] += (size_t)(x / total);
        given += (size_t)(x / total);
        rem[k] = x % total;
    }
    for (; given < r; given++) {
        size_t best = 0;
        for (size_t k = 1; k < n; k++)
            if (rem[k] > rem[best])
                best = k;
        quota[best]++;
        rem[best] = 0;
    }
}

/* How many picks each stratum gets: all when want >= total; else one per
 * non-empty stratum first when want allows, the rest proportionally. */
static void allocate(const size_t *size, size_t n, size_t total, size_t want, size_t *quota)
{
    size_t nonempty = 0, spare[MAX_STRATA] = {0};
    for (size_t k = 0; k < n; k++) {
        quota[k] = want >= total ? size[k] : 0;
        nonempty += size[k] > 0;
    }
    if (want >= total)
        return;
    if (want < nonempty) {
        apportion(want, size, n, quota);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        quota[k] = size[k] > 0;
        spare[k] = size[k] - quota[k];
    }
    apportion(want - nonempty, spare, n, quota);
}

/* Marks quota members of one stratum by a partial Fisher-Yates shuffle of
 * its own seeded stream (so one stratum's picks do not move another's). */
static void pick(struct atr_sampler *s, size_t *members, size_t size, size_t quota,
                 uint64_t seed, uint64_t stratum)
{
    struct atr_rng r;
    atr_rng_seed(&r, seed, stratum);
    for (size_t j = 0; j < quota; j++) {
        size_t k = j + (size_t)atr_rng_below(&r, size - j);
        size_t tmp = members[j];
        members[j] = members[k];
        members[k] = tmp;
        s->picked[members[j] / 8] |= (unsigned char)(1u << (members[j] % 8));
    }
}

static void record_strata(struct atr_sampler *s, const size_t *size, const size_t *quota,
                          const uint32_t *lo, const uint32_t *hi, const char **names,
                          size_t n, size_t n_ranks)
{
    s->strata = xreallocarray(s->strata, n, sizeof *s->strata);
    s->n_strata = 0;
    for (size_t k = 0; k < n; k++)
        if (size[k])
            s->strata[s->n_strata++] = (struct atr_sample_stratum){
                lo[k], hi[k], names[k % n_ranks], size[k], quota[k]};
}

void atr_sampler_choose(struct atr_sampler *s, size_t want, uint64_t seed)
{
    free(s->picked);
    s->picked = xcalloc(s->n / 8 + 1, 1);
    s->n_strata = 0;
    if (s->n == 0)
        return;
    const char *names[MAX_CLASSES];
    uint32_t cuts[ATR_SAMPLE_LENGTH_BINS], lo[MAX_STRATA], hi[MAX_STRATA];
    size_t n_ranks = rank_classes(s, names), n_cuts = length_cuts(s, cuts);
    size_t n = (n_cuts + 1) * n_ranks, size[MAX_STRATA] = {0}, start[MAX_STRATA + 1];
    size_t quota[MAX_STRATA], *at = xreallocarray(NULL, s->n, sizeof *at);
    size_t *members = xreallocarray(NULL, s->n, sizeof *members);
    for (size_t i = 0; i < s->n; i++) {
        size_t k = stratum_of(s, &s->recs[i], cuts, n_cuts, n_ranks);
        at[i] = k;
        lo[k] = size[k] && lo[k] < s->recs[i].turns ? lo[k] : s->recs[i].turns;
        hi[k] = size[k] && hi[k] > s->recs[i].turns ? hi[k] : s->recs[i].turns;
        size[k]++;
    }
    /* Counting sort: members of stratum k, in input order, at start[k]. */
    start[0] = 0;
    for (size_t k = 0; k < n; k++)
        start[k + 1] = start[k] + size[k];
    for (size_t i = 0; i < s->n; i++)
        members[start[at[i]]++] = i;
    allocate(size, n, s->n, want, quota);
    for (size_t k = 0; k < n; k++)
        pick(s, members + start[k] - size[k], size[k], quota[k], seed, k);
    record_strata(s, size, quota, lo, hi, names, n, n_ranks);
    free(at);
    free(members);
}
