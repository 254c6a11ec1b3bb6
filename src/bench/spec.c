/* spec.c - reads and checks `atr bench` specs (docs/bench.md) and expands
 * the placeholders of their command templates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bench/run.h"
#include "bench/spec.h"
#include "json/json.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/input.h"
#include "util/size.h"

/* Parsing state: the spec being filled and where errors point. */
struct ctx {
    struct atr_bench_spec *s;
    const char *dir;               /* the spec's folder with a final '/', or "" */
    struct atr_error *err;
};

static int bad(struct ctx *c, const struct atr_json *at, const char *what, const char *msg)
{
    return atr_error_at(c->err, c->s->path, at->line, at->col, "%s: %s", what, msg);
}

/* Fails on a member whose name is not in keys (NULL-terminated): a typo in
 * an optional field would otherwise be silently ignored. */
static int known_keys(struct ctx *c, const struct atr_json *obj, const char *what,
                      const char *const *keys)
{
    for (const struct atr_json *m = obj->u.kids.first; m; m = m->next) {
        size_t i = 0;
        while (keys[i] && !atr_json_key_is(m, keys[i]))
            i++;
        if (!keys[i])
            return atr_error_at(c->err, c->s->path, m->line, m->col,
                                "%s: unknown field \"%s\"", what, m->key);
    }
    return 0;
}

static int want_object(struct ctx *c, const struct atr_json *v, const char *what)
{
    if (atr_json_is(v, ATR_JSON_OBJECT))
        return 0;
    return atr_error_at(c->err, c->s->path, v->line, v->col, "%s: expected an object, not %s",
                        what, atr_json_type_name(v->type));
}

/* The string member key of obj into *out: required (missing is an error)
 * or optional (*out stays NULL; JSON null counts as absent). */
static int get_str(struct ctx *c, const struct atr_json *obj, const char *what, const char *key,
                   bool required, const char **out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v || (v->type == ATR_JSON_NULL && !required)) {
        if (!required)
            return 0;
        return atr_error_at(c->err, c->s->path, obj->line, obj->col,
                            "%s: missing \"%s\"", what, key);
    }
    if (v->type != ATR_JSON_STRING || v->u.str.len == 0)
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected a non-empty string", what, key);
    *out = v->u.str.s;
    return 0;
}

/* An optional number member in [lo, hi]; *out keeps its default. */
static int get_num(struct ctx *c, const struct atr_json *obj, const char *what, const char *key,
                   double lo, double hi, double *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !(v->u.num >= lo && v->u.num <= hi))
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected a number from %g to %g", what, key, lo, hi);
    *out = v->u.num;
    return 0;
}

static int get_uint(struct ctx *c, const struct atr_json *obj, const char *what,
                    const char *key, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v)
        return 0;
    if (v->type != ATR_JSON_NUMBER || !v->is_int || v->i < (int64_t)lo || v->i > (int64_t)hi)
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected an integer from %llu to %llu", what, key,
                            (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)v->i;
    return 0;
}

/* An optional size member ("20G", atr_parse_size) into *out; 0 if absent. */
static int get_size(struct ctx *c, const struct atr_json *obj, const char *what, const char *key,
                    size_t *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v)
        return 0;
    if (v->type != ATR_JSON_STRING || !atr_parse_size(v->u.str.s, out) || !*out)
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected a size like \"20G\" (bytes, or K, M, G or T "
                            "after the number), more than 0", what, key);
    return 0;
}

static int get_bool(struct ctx *c, const struct atr_json *obj, const char *what, const char *key,
                    bool *out)
{
    const struct atr_json *v = atr_json_get(obj, key);
    if (!v)
        return 0;
    if (v->type != ATR_JSON_TRUE && v->type != ATR_JSON_FALSE)
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected true or false", what, key);
    *out = v->type == ATR_JSON_TRUE;
    return 0;
}

/* ---- names ---- */

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
#define COMMIT_MAX 255

bool atr_bench_name_ok(const char *s)
{
    size_t n = strspn(s, NAME_CHARS);
    return n > 0 && n <= ATR_BENCH_NAME_MAX && !s[n] && s[0] != '.';
}

/* A commit as git reads it, never a path that climbs: '/'-joined parts of
 * NAME_CHARS, '^' and '~' (v0.6.0, origin/main, HEAD~1), none empty or
 * starting with '.'; not starting with '-', which git would take for an
 * option in `git checkout {commit}`. */
static bool commit_ok(const char *s)
{
    if (s[0] == '-' || strlen(s) > COMMIT_MAX)
        return false;
    for (const char *p = s;; p++) {
        size_t n = strspn(p, NAME_CHARS "^~");
        if (n == 0 || p[0] == '.' || (p[n] && p[n] != '/'))
            return false;
        if (!p[n])
            return true;
        p += n;
    }
}

/* A name for a message: at most 40 bytes, anything but printable ASCII as
 * '?' (the name was refused; it may hold terminal escapes). */
static const char *shown(struct ctx *c, const char *name)
{
    char *out = atr_arena_printf(&c->s->arena, "%.40s", name);
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    return out;
}

/* A member key used as a name (a variant, an agent); at is its value. */
static int check_name(struct ctx *c, const struct atr_json *at, const char *what,
                      const char *kind)
{
    if (strlen(at->key) == at->key_len && atr_bench_name_ok(at->key))
        return 0;
    return atr_error_at(c->err, c->s->path, at->line, at->col,
                        "%s: %s name \"%s\" wants 1 to %d letters, digits, '.', '_' or '-', "
                        "not starting with '.'", what, kind, shown(c, at->key),
                        ATR_BENCH_NAME_MAX);
}

/* The item's commits; human_commit also names its result files. */
static int check_commits(struct ctx *c, const struct atr_json *obj, const char *what,
                         const struct atr_bench_item *it)
{
    static const char *const keys[] = {"human_commit", "human_commit_full", "parent_commit"};
    const char *vals[] = {it->human_commit, it->human_commit_full, it->parent_commit};
    for (size_t i = 0; i < 3; i++) {
        if (!vals[i])
            continue;
        const struct atr_json *v = atr_json_get(obj, keys[i]);
        bool ok = strlen(vals[i]) == v->u.str.len
                  && (i ? commit_ok(vals[i]) : vals[i][0] != '-' && atr_bench_name_ok(vals[i]));
        if (ok)
            continue;
        if (i == 0)
            return atr_error_at(c->err, c->s->path, v->line, v->col,
                                "%s.%s: expected a commit of 1 to %d letters, digits, '.', '_' "
                                "or '-', not starting with '.' or '-' (it names the result "
                                "files)", what, keys[i], ATR_BENCH_NAME_MAX);
        return atr_error_at(c->err, c->s->path, v->line, v->col,
                            "%s.%s: expected a commit (hex, a ref or a revision: letters, "
                            "digits, '.', '_', '-', '^', '~' and '/', at most %d, no part "
                            "empty or starting with '.', not starting with '-')", what, keys[i],
                            COMMIT_MAX);
    }
    return 0;
}

/* A relative path in the spec is taken from the spec's folder. */
static const char *resolve(struct ctx *c, const char *p)
{
    if (!p || p[0] == '/' || !c->dir[0])
        return p;
    return atr_arena_printf(&c->s->arena, "%s%s", c->dir, p);
}

/* Checks that tmpl expands with the placeholders available to it. */
static int check_template(struct ctx *c, const struct atr_json *obj, const char *what,
                          const char *key, bool with_patch)
{
    const char *tmpl = atr_json_get_str(obj, key, NULL);
    if (!tmpl)
        return 0;
    struct atr_bench_vars v = {"m", "c", "p", with_patch ? "x" : NULL, "w", 1, "d"};
    struct atr_error e;
    char *out = atr_bench_expand(tmpl, &v, true, &e);
    if (out) {
        free(out);
        return 0;
    }
    const struct atr_json *at = atr_json_get(obj, key);
    return atr_error_at(c->err, c->s->path, at->line, at->col, "%s.%s: %s", what, key, e.msg);
}

static const char *const variant_keys[] = {"server", "prepare", "ready_url", "image",
    "per_agent", "startup_timeout_s", "benchmark_timeout_s", "prepare_timeout_s", "run_args",
    "container_port", "memory", NULL};

/* An image variant's "run_args": an array of templates, one word each. */
static int parse_run_args(struct ctx *c, const struct atr_json *j, const char *what,
                          struct atr_bench_variant *v)
{
    const struct atr_json *a = atr_json_get(j, "run_args");
    if (!a)
        return 0;
    if (!v->image)
        return atr_error_at(c->err, c->s->path, a->line, a->col,
                            "%s.run_args: only with \"image\"", what);
    if (!atr_json_is(a, ATR_JSON_ARRAY) || a->packed)
        return atr_error_at(c->err, c->s->path, a->line, a->col,
                            "%s.run_args: expected an array of strings", what);
    v->run_args = atr_arena_calloc(&c->s->arena, a->u.kids.count + 1, sizeof *v->run_args);
    size_t k = 0;
    for (const struct atr_json *m = a->u.kids.first; m; m = m->next, k++) {
        const char *w = atr_arena_printf(&c->s->arena, "%s.run_args[%zu]", what, k);
        if (m->type != ATR_JSON_STRING || !m->u.str.len)
            return atr_error_at(c->err, c->s->path, m->line, m->col,
                                "%s: expected a non-empty string", w);
        struct atr_bench_vars vars = {"m", "c", "p", v->per_agent ? "x" : NULL, "w", 1, "d"};
        struct atr_error e;
        char *out = atr_bench_expand(m->u.str.s, &vars, false, &e);
        if (!out)
            return atr_error_at(c->err, c->s->path, m->line, m->col, "%s: %s", w, e.msg);
        free(out);
        v->run_args[v->n_run_args++] = m->u.str.s;
    }
    return 0;
}

/* "image" instead of, or with, "server"; the container keys need it. */
static int parse_container(struct ctx *c, const struct atr_json *j, const char *what,
                           struct atr_bench_variant *v)
{
    uint64_t port = 0;
    if (get_str(c, j, what, "image", false, &v->image))
        return -1;
    if (!v->image && !atr_json_get(j, "server"))
        return atr_error_at(c->err, c->s->path, j->line, j->col,
                            "%s: missing \"server\" (or an \"image\" to run)", what);
    if (get_str(c, j, what, "server", !v->image, &v->server)
        || get_uint(c, j, what, "container_port", 1, 65535, &port)
        || get_size(c, j, what, "memory", &v->memory)
        || parse_run_args(c, j, what, v))
        return -1;
    const struct atr_json *p = atr_json_get(j, "container_port");
    if (p && !v->image)
        return atr_error_at(c->err, c->s->path, p->line, p->col,
                            "%s.container_port: only with \"image\"", what);
    v->container_port = (unsigned)port;
    return 0;
}

static int parse_variant(struct ctx *c, const struct atr_json *j, struct atr_bench_variant *v)
{
    if (check_name(c, j, "variants", "variant"))
        return -1;
    const char *what = atr_arena_printf(&c->s->arena, "variants.%s", j->key);
    v->name = j->key;
    v->prepare_timeout_s = ATR_BENCH_PREPARE_TIMEOUT_S;
    v->startup_timeout_s = ATR_BENCH_STARTUP_TIMEOUT_S;
    v->benchmark_timeout_s = ATR_BENCH_BENCHMARK_TIMEOUT_S;
    if (want_object(c, j, what) || known_keys(c, j, what, variant_keys)
        || parse_container(c, j, what, v)
        || get_str(c, j, what, "prepare", false, &v->prepare)
        || get_str(c, j, what, "ready_url", true, &v->ready_url)
        || get_bool(c, j, what, "per_agent", &v->per_agent)
        || get_num(c, j, what, "prepare_timeout_s", 0.001, 86400 * 7, &v->prepare_timeout_s)
        || get_num(c, j, what, "startup_timeout_s", 0.001, 86400 * 7, &v->startup_timeout_s)
        || get_num(c, j, what, "benchmark_timeout_s", 0.001, 86400 * 7, &v->benchmark_timeout_s))
        return -1;
    for (const char *const *k = variant_keys; k < variant_keys + 4; k++)
        if (check_template(c, j, what, *k, v->per_agent))
            return -1;
    return 0;
}

static int parse_variants(struct ctx *c, const struct atr_json *root)
{
    const struct atr_json *j = atr_json_get(root, "variants");
    if (!j)
        return bad(c, root, "spec", "missing \"variants\"");
    if (want_object(c, j, "variants"))
        return -1;
    if (!j->u.kids.count)
        return bad(c, j, "variants", "expected at least one variant");
    struct atr_bench_spec *s = c->s;
    s->variants = atr_arena_calloc(&s->arena, j->u.kids.count, sizeof *s->variants);
    for (const struct atr_json *m = j->u.kids.first; m; m = m->next)
        if (parse_variant(c, m, &s->variants[s->n_variants++]))
            return -1;
    return 0;
}

static const struct atr_bench_variant *find_variant(const struct atr_bench_spec *s,
                                                    const char *name)
{
    for (size_t i = 0; i < s->n_variants; i++)
        if (strcmp(s->variants[i].name, name) == 0)
            return &s->variants[i];
    return NULL;
}

/* The item's "variants": names of spec variants, or absent for all. */
static int parse_item_variants(struct ctx *c, const struct atr_json *obj, const char *what,
                               struct atr_bench_item *it)
{
    struct atr_bench_spec *s = c->s;
    const struct atr_json *j = atr_json_get(obj, "variants");
    size_t n = j && j->type == ATR_JSON_ARRAY ? j->u.kids.count : s->n_variants;
    it->variants = atr_arena_calloc(&s->arena, n, sizeof *it->variants);
    if (!j) {
        for (size_t i = 0; i < n; i++)
            it->variants[it->n_variants++] = &s->variants[i];
        return 0;
    }
    if (j->type != ATR_JSON_ARRAY || !n)
        return bad(c, j, what, "\"variants\" wants a non-empty array of variant names");
    for (const struct atr_json *e = j->u.kids.first; e; e = e->next) {
        const struct atr_bench_variant *v =
            e->type == ATR_JSON_STRING ? find_variant(s, e->u.str.s) : NULL;
        if (!v)
            return atr_error_at(c->err, s->path, e->line, e->col,
                                "%s.variants: unknown variant %s%s%s", what,
                                e->type == ATR_JSON_STRING ? "\"" : "(a ",
                                e->type == ATR_JSON_STRING ? e->u.str.s
                                                           : atr_json_type_name(e->type),
                                e->type == ATR_JSON_STRING ? "\"" : ")");
        it->variants[it->n_variants++] = v;
    }
    return 0;
}

/* "agents": {NAME: "patch path" or null}. */
static int parse_agents(struct ctx *c, const struct atr_json *obj, const char *what,
                        struct atr_bench_item *it)
{
    const struct atr_json *j = atr_json_get(obj, "agents");
    if (!j)
        return 0;
    const char *w = atr_arena_printf(&c->s->arena, "%s.agents", what);
    if (want_object(c, j, w))
        return -1;
    it->agents = atr_arena_calloc(&c->s->arena, j->u.kids.count, sizeof *it->agents);
    for (const struct atr_json *m = j->u.kids.first; m; m = m->next) {
        if (check_name(c, m, w, "agent"))
            return -1;
        struct atr_bench_agent *a = &it->agents[it->n_agents++];
        a->name = m->key;
        if (m->type == ATR_JSON_NULL)
            continue;
        if (m->type != ATR_JSON_STRING || !m->u.str.len)
            return atr_error_at(c->err, c->s->path, m->line, m->col,
                                "%s.%s: expected a patch file name or null", w, m->key);
        a->patch = resolve(c, m->u.str.s);
    }
    return 0;
}

static const char *const item_keys[] = {"human_commit", "human_commit_full", "parent_commit",
    "model", "agents", "variants", NULL};

static int parse_item(struct ctx *c, const struct atr_json *j, size_t i)
{
    struct atr_bench_item *it = &c->s->items[i];
    const char *what = atr_arena_printf(&c->s->arena, "items[%zu]", i);
    if (want_object(c, j, what) || known_keys(c, j, what, item_keys)
        || get_str(c, j, what, "human_commit", true, &it->human_commit)
        || get_str(c, j, what, "human_commit_full", false, &it->human_commit_full)
        || get_str(c, j, what, "parent_commit", true, &it->parent_commit)
        || get_str(c, j, what, "model", true, &it->model)
        || check_commits(c, j, what, it) || parse_agents(c, j, what, it)
        || parse_item_variants(c, j, what, it))
        return -1;
    if (!it->human_commit_full)
        it->human_commit_full = it->human_commit;
    return 0;
}

static int parse_items(struct ctx *c, const struct atr_json *root)
{
    const struct atr_json *j = atr_json_get(root, "items");
    if (!j)
        return bad(c, root, "spec", "missing \"items\"");
    if (j->type != ATR_JSON_ARRAY || !j->u.kids.count)
        return bad(c, j, "items", "expected a non-empty array of items");
    struct atr_bench_spec *s = c->s;
    s->items = atr_arena_calloc(&s->arena, j->u.kids.count, sizeof *s->items);
    for (const struct atr_json *e = j->u.kids.first; e; e = e->next, s->n_items++)
        if (parse_item(c, e, s->n_items))
            return -1;
    return 0;
}

/* One run's file name (atr_bench_run_name; the names fit, being checked)
 * and where it comes from. */
struct run_file {
    char name[8 + 3 * ATR_BENCH_NAME_MAX];
    size_t seq;                    /* spec order: the later of two is reported */
    const struct atr_json *item;
    size_t index;
    const char *variant, *agent;
};

static int run_file_cmp(const void *a, const void *b)
{
    const struct run_file *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static void add_run_file(struct run_file *f, size_t *n, const struct atr_json *item, size_t i,
                         const struct atr_bench_item *it, const char *variant, const char *agent)
{
    struct run_file *r = &f[*n];
    *r = (struct run_file){.seq = *n, .item = item, .index = i, .variant = variant,
                           .agent = agent};
    atr_bench_run_name(r->name, sizeof r->name, it->human_commit, variant, agent);
    (*n)++;
}

/* "items[2] (v0.6.0) variant human" or "... agent x of variant agent"
 * (the names were checked: no escapes to hide). */
static const char *run_desc(struct ctx *c, const struct run_file *r)
{
    return atr_arena_printf(&c->s->arena, "items[%zu] (%s) %s%s%s%s", r->index,
                            c->s->items[r->index].human_commit,
                            r->agent ? "agent " : "variant ", r->agent ? r->agent : r->variant,
                            r->agent ? " of variant " : "", r->agent ? r->variant : "");
}

/* Two runs whose file names agree would share a result (the second
 * skipped as already done) and a log: the first 8 characters of
 * human_commit name the files, and '_' joins variant and agent. */
static int check_run_files(struct ctx *c, const struct atr_json *root)
{
    const struct atr_bench_spec *s = c->s;
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < s->n_items; i++)
        cap += 1 + s->items[i].n_variants * (1 + s->items[i].n_agents);
    struct run_file *f = xcalloc(cap, sizeof *f);
    const struct atr_json *item = atr_json_get(root, "items")->u.kids.first;
    for (size_t i = 0; i < s->n_items; i++, item = item->next) {
        const struct atr_bench_item *it = &s->items[i];
        if (s->cleanup)
            add_run_file(f, &n, item, i, it, "cleanup", NULL);   /* its log */
        for (size_t k = 0; k < it->n_variants; k++) {
            const struct atr_bench_variant *v = it->variants[k];
            if (!v->per_agent)
                add_run_file(f, &n, item, i, it, v->name, NULL);
            for (size_t a = 0; v->per_agent && a < it->n_agents; a++)
                if (it->agents[a].patch)
                    add_run_file(f, &n, item, i, it, v->name, it->agents[a].name);
        }
    }
    qsort(f, n, sizeof *f, run_file_cmp);
    int rc = 0;
    for (size_t k = 1; k < n && !rc; k++) {
        if (strcmp(f[k - 1].name, f[k].name) != 0)
            continue;
        const struct run_file *later = f[k - 1].seq > f[k].seq ? &f[k - 1] : &f[k];
        const struct run_file *first = later == &f[k] ? &f[k - 1] : &f[k];
        rc = atr_error_at(c->err, s->path, later->item->line, later->item->col,
                          "items[%zu]: %s and %s would both write %s (results/, logs/): the "
                          "first 8 characters of human_commit name the files, and '_' joins "
                          "variant and agent", later->index, run_desc(c, first),
                          run_desc(c, later), later->name);
    }
    free(f);
    return rc;
}

/* "model_overrides": {FROM: {"to": TO, "reason": WHY}}. */
static int parse_overrides(struct ctx *c, const struct atr_json *root)
{
    static const char *const keys[] = {"to", "reason", NULL};
    const struct atr_json *j = atr_json_get(root, "model_overrides");
    if (!j)
        return 0;
    if (want_object(c, j, "model_overrides"))
        return -1;
    struct atr_bench_spec *s = c->s;
    s->overrides = atr_arena_calloc(&s->arena, j->u.kids.count, sizeof *s->overrides);
    for (const struct atr_json *m = j->u.kids.first; m; m = m->next) {
        struct atr_bench_override *o = &s->overrides[s->n_overrides++];
        const char *what = atr_arena_printf(&s->arena, "model_overrides.%s", m->key);
        o->from = m->key;
        if (want_object(c, m, what) || known_keys(c, m, what, keys)
            || get_str(c, m, what, "to", true, &o->to)
            || get_str(c, m, what, "reason", true, &o->reason))
            return -1;
    }
    return 0;
}

/* "generate": fixed-size requests, all at once unless a rate or a
 * concurrency limit is given (not both: one of them decides the pace). */
static int parse_generate(struct ctx *c, const struct atr_json *j)
{
    static const char *const keys[] = {"requests", "input_tokens", "output_tokens",
        "ignore_eos", "rate", "concurrency", NULL};
    struct atr_bench_workload *w = &c->s->workload;
    const char *what = "workload.generate";
    if (want_object(c, j, what) || known_keys(c, j, what, keys)
        || get_uint(c, j, what, "requests", 1, 10000000, &w->requests)
        || get_uint(c, j, what, "input_tokens", 1, 10000000, &w->input_tokens)
        || get_uint(c, j, what, "output_tokens", 1, 10000000, &w->output_tokens)
        || get_bool(c, j, what, "ignore_eos", &w->ignore_eos)
        || get_num(c, j, what, "rate", 1e-9, 1e9, &w->rate)
        || get_uint(c, j, what, "concurrency", 1, 1000000, &w->concurrency))
        return -1;
    if (w->rate > 0 && w->concurrency)
        return bad(c, j, what, "give \"rate\" or \"concurrency\", not both");
    return 0;
}

static int parse_mode(struct ctx *c, const struct atr_json *j, enum atr_bench_mode *mode)
{
    const char *m = NULL;
    if (get_str(c, j, "workload", "mode", false, &m))
        return -1;
    if (!m || strcmp(m, "serving") == 0)
        *mode = ATR_BENCH_SERVING;
    else if (strcmp(m, "command") == 0)
        *mode = ATR_BENCH_COMMAND;
    else
        return bad(c, atr_json_get(j, "mode"), "workload.mode", "expected \"serving\" or \"command\"");
    return 0;
}

static int parse_workload(struct ctx *c, const struct atr_json *root)
{
    static const char *const keys[] = {"mode", "trace", "generate", "command", NULL};
    struct atr_bench_workload *w = &c->s->workload;
    *w = (struct atr_bench_workload){.requests = 100, .input_tokens = 200,
                                     .output_tokens = 64, .ignore_eos = true};
    const struct atr_json *j = atr_json_get(root, "workload");
    if (!j)
        return 0;
    if (want_object(c, j, "workload") || known_keys(c, j, "workload", keys)
        || parse_mode(c, j, &w->mode)
        || get_str(c, j, "workload", "trace", false, &w->trace)
        || get_str(c, j, "workload", "command", false, &w->command))
        return -1;
    const struct atr_json *gen = atr_json_get(j, "generate");
    if (w->mode == ATR_BENCH_COMMAND) {
        if (!w->command)
            return bad(c, j, "workload", "mode \"command\" wants \"command\"");
        if (w->trace || gen)
            return bad(c, j, "workload", "mode \"command\" takes no \"trace\" or \"generate\"");
        return check_template(c, j, "workload", "command", false);
    }
    if (w->command)
        return bad(c, j, "workload", "\"command\" wants mode \"command\"");
    if (w->trace && gen)
        return bad(c, j, "workload", "give \"trace\" or \"generate\", not both");
    w->trace = resolve(c, w->trace);
    return gen ? parse_generate(c, gen) : 0;
}

static int parse_top(struct ctx *c, const struct atr_json *root)
{
    static const char *const keys[] = {"format", "workdir", "port", "cleanup", "min_free_disk",
        "repeat", "variants", "items", "model_overrides", "workload", NULL};
    struct atr_bench_spec *s = c->s;
    const char *format = NULL;
    uint64_t port = ATR_BENCH_DEFAULT_PORT, repeat = 1;
    if (want_object(c, root, "spec") || known_keys(c, root, "spec", keys)
        || get_str(c, root, "spec", "format", true, &format))
        return -1;
    if (strcmp(format, "atr-bench-spec/1") != 0)
        return bad(c, atr_json_get(root, "format"), "format", "expected \"atr-bench-spec/1\"");
    s->workdir = "atr-bench";
    if (get_str(c, root, "spec", "workdir", false, &s->workdir)
        || get_uint(c, root, "spec", "port", 0, 65535, &port)
        || get_str(c, root, "spec", "cleanup", false, &s->cleanup)
        || check_template(c, root, "spec", "cleanup", false)
        || get_size(c, root, "spec", "min_free_disk", &s->min_free_disk)
        || get_uint(c, root, "spec", "repeat", 1, ATR_BENCH_REPEAT_MAX, &repeat))
        return -1;
    s->workdir = resolve(c, s->workdir);
    s->port = (unsigned)port;
    s->repeat = (unsigned)repeat;
    return parse_variants(c, root) || parse_items(c, root) || check_run_files(c, root)
        || parse_overrides(c, root) || parse_workload(c, root);
}

struct atr_bench_spec *atr_bench_spec_parse(const char *text, size_t len, const char *path,
                                            struct atr_error *err)
{
    struct atr_bench_spec *s = xcalloc(1, sizeof *s);
    s->path = atr_arena_strdup(&s->arena, path);
    const char *slash = strrchr(path, '/');
    struct ctx c = {s, slash ? atr_arena_strndup(&s->arena, path, (size_t)(slash - path) + 1) : "",
                    err};
    s->dir = !slash ? "." : slash == path ? "/" : atr_arena_strndup(&s->arena, path,
                                                                    (size_t)(slash - path));
    struct atr_json *root;
    struct atr_json_err je;
    if (atr_json_parse(&s->arena, text, len, NULL, &root, &je) != 0) {
        atr_error_at(err, path, je.line, je.col, "%s", je.msg);
        atr_bench_spec_free(s);
        return NULL;
    }
    if (parse_top(&c, root) != 0) {
        atr_bench_spec_free(s);
        return NULL;
    }
    snprintf(s->hash, sizeof s->hash, "%016llx", (unsigned long long)XXH3_64bits(text, len));
    return s;
}

struct atr_bench_spec *atr_bench_spec_load(const char *path, struct atr_error *err)
{
    struct atr_input *in = atr_input_open(path, err);
    if (!in)
        return NULL;
    struct atr_buf b = {0};
    struct atr_bench_spec *s = NULL;
    if (atr_input_read_all(in, &b, ATR_BENCH_SPEC_MAX, err) == 0)
        s = atr_bench_spec_parse(b.len ? b.data : "", b.len, path, err);
    atr_buf_release(&b);
    atr_input_close(in);
    return s;
}

void atr_bench_spec_free(struct atr_bench_spec *s)
{
    if (!s)
        return;
    atr_arena_release(&s->arena);
    free(s);
}

const char *atr_bench_model(const struct atr_bench_spec *s, const struct atr_bench_item *item,
                            const struct atr_bench_override **ov)
{
    for (size_t i = 0; i < s->n_overrides; i++)
        if (strcmp(s->overrides[i].from, item->model) == 0) {
            if (ov)
                *ov = &s->overrides[i];
            return s->overrides[i].to;
        }
    if (ov)
        *ov = NULL;
    return item->model;
}

/* ---- placeholders ---- */

/* The value of placeholder name[0..n), or NULL with err set. */
static const char *lookup(const struct atr_bench_vars *v, const char *name, size_t n,
                          char port[16], struct atr_error *err)
{
    static const char *const names[] = {"model",  "port",    "commit",  "parent",
                                        "patch",  "workdir", "spec_dir"};
    const char *vals[] = {v->model, port, v->commit, v->parent, v->patch, v->workdir,
                          v->spec_dir};
    snprintf(port, 16, "%u", v->port);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0) {
            if (!vals[i])
                atr_error_set(err, "{%s} is not available here%s", names[i],
                              i == 4 ? " (only in a per_agent variant)" : "");
            return vals[i];
        }
    atr_error_set(err, "unknown placeholder {%.*s} (known: {model} {port} {commit} {parent} "
                  "{patch} {workdir} {spec_dir})", (int)(n > 40 ? 40 : n), name);
    return NULL;
}

char *atr_bench_expand(const char *tmpl, const struct atr_bench_vars *v, bool shell,
                       struct atr_error *err)
{
    struct atr_buf b = {0};
    char port[16];
    for (const char *p = tmpl; *p; p++) {
        if ((*p == '{' && p[1] == '{') || (*p == '}' && p[1] == '}')) {
            atr_buf_putc(&b, *p++);
            continue;
        }
        if (*p == '}') {
            atr_buf_release(&b);
            atr_error_set(err, "a lone '}' (write }} for a brace)");
            return NULL;
        }
        if (*p != '{') {
            atr_buf_putc(&b, *p);
            continue;
        }
        const char *end = strchr(p, '}');
        const char *val = end ? lookup(v, p + 1, (size_t)(end - p - 1), port, err) : NULL;
        if (!val) {
            if (!end)
                atr_error_set(err, "unclosed '{' (write {{ for a brace)");
            atr_buf_release(&b);
            return NULL;
        }
        if (shell)
            atr_buf_put_shell_word(&b, val);
        else
            atr_buf_puts(&b, val);
        p = end;
    }
    return b.data ? b.data : xstrdup("");
}
