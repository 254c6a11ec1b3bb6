/* opts.c - the one option parser: argv read against a command's table of
 * options (opts.h), values stored into its argument struct. */
#include "cli/opts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "trace/reader.h"
#include "util/alloc.h"

/* An entry and the struct it fills (a group's struct sits inside base). */
struct found {
    const struct opt *o;
    char *base;
};

/* The state of one parse: argv is rewritten in place, options first. */
struct parse {
    const struct opts_cmd *c;
    void *base;
    int argc, i;         /* argv[i] is the next argument to read */
    char **argv;
    int n_opts;          /* argv[0..n_opts) are argv[0] and the options read */
    char **pos;          /* positional arguments, in order */
    int n_pos;
};

/* The entry of a long (name, len) or, when len is 0, short option c. */
static bool find(const struct opt *t, char *base, const char *name, size_t len, char c,
                 struct found *out)
{
    for (; t->kind != OPT_KIND_END; t++) {
        if (t->kind == OPT_KIND_INCLUDE) {
            if (find(t->group, base + t->off, name, len, c, out))
                return true;
            continue;
        }
        bool hit = len ? t->name && strncmp(t->name, name, len) == 0 && !t->name[len]
                       : t->short_name && t->short_name == c;
        if (hit) {
            *out = (struct found){t, base};
            return true;
        }
    }
    return false;
}

/* The entry's message (a %s in it is the value); a callback without one
 * has printed its own. */
static int bad_value(const struct parse *p, const struct opt *o, const char *arg)
{
    return o->err ? cli_usage(p->c->name, o->err, arg) : EXIT_USAGE;
}

static int unknown(const struct parse *p, const char *what)
{
    return cli_usage(p->c->name, "unknown option '%s'", what);
}

static int needs_value(const struct parse *p, const char *what)
{
    return cli_usage(p->c->name, "option '%s' needs a value", what);
}

/* Stores v into an integer field of size bytes (bounds made it fit). */
static void store(void *field, size_t size, unsigned long long v)
{
    switch (size) {
    case 1: *(uint8_t *)field = (uint8_t)v; break;
    case 2: *(uint16_t *)field = (uint16_t)v; break;
    case 4: *(uint32_t *)field = (uint32_t)v; break;
    default: *(uint64_t *)field = v; break;
    }
}

static bool parse_enum(const char *s, const char *const *words, unsigned long long *out)
{
    for (unsigned long long k = 0; words[k]; k++)
        if (strcmp(words[k], s) == 0) {
            *out = k;
            return true;
        }
    return false;
}

/* A plain decimal at *s, advancing it; false when there is none or it
 * is past OPTS_SHARD_MAX. */
static bool shard_number(const char **s, unsigned *v)
{
    unsigned long long x = 0;
    const char *p = *s;
    while (*p >= '0' && *p <= '9' && x <= OPTS_SHARD_MAX)
        x = x * 10 + (unsigned)(*p++ - '0');
    if (p == *s || x > OPTS_SHARD_MAX)
        return false;
    *v = (unsigned)x;
    *s = p;
    return true;
}

/* --shard I:N (opts.h); prints its own usage line on a bad value. */
static bool parse_shard(const char *cmd, const char *arg, unsigned old_first,
                        struct opts_shard *out)
{
    const char *p = arg;
    unsigned i, n;
    bool ok = shard_number(&p, &i) && (*p == ':' || *p == '/');
    char sep = ok ? *p++ : 0;
    if (!ok || !shard_number(&p, &n) || *p || n < 1) {
        cli_usage(cmd, "--shard wants I:N with 0 <= I < N (shards count from 0), got '%s'",
                  arg);
        return false;
    }
    if (sep == '/') {      /* the old spelling, whatever its I: which base did it mean? */
        if (i >= old_first && i - old_first < n)
            cli_usage(cmd, "--shard %s: the I/N spelling is gone (%s counted from %u): "
                      "write --shard %u:%u, shards count from 0", arg, cmd, old_first,
                      i - old_first, n);
        else
            cli_usage(cmd, "--shard %s: the I/N spelling is gone: write I:N, shards count "
                      "from 0 (the last of %u is %u:%u)", arg, n, n - 1, n);
        return false;
    }
    if (i >= n) {
        cli_usage(cmd, "--shard %s: shards count from 0: the last of %u is %u:%u", arg, n,
                  n - 1, n);
        return false;
    }
    *out = (struct opts_shard){i, n};
    return true;
}

/* Parses arg into f's field; false on a bad value. */
static bool set_value(const struct parse *p, const struct found *f, const char *arg)
{
    const struct opt *o = f->o;
    void *field = f->base + o->off;
    unsigned long long v = 0;
    size_t sz;
    bool ok = true;
    switch (o->kind) {
    case OPT_KIND_STRING:
        if ((ok = !o->check || o->check(arg)))
            *(const char **)field = arg;
        return ok;
    case OPT_KIND_UINT: ok = cli_parse_uint(arg, o->min, o->max, &v); break;
    case OPT_KIND_SIZE:
        ok = atr_parse_size(arg, &sz) && sz >= o->min && sz <= o->max;
        v = sz;
        break;
    case OPT_KIND_ENUM: ok = parse_enum(arg, o->words, &v); break;
    case OPT_KIND_DOUBLE: return cli_parse_double(arg, o->lo, o->hi, field);
    case OPT_KIND_SHARD: return parse_shard(p->c->name, arg, (unsigned)o->min, field);
    default: return o->call(f->base, arg, p->c->name);
    }
    if (ok)
        store(field, o->size, v);
    return ok;
}

/* Moves argv[i] to the options' side. */
static void take(struct parse *p)
{
    p->argv[p->n_opts++] = p->argv[p->i++];
}

/* The words after a words option's value that its `more` accepts. */
static int take_words(struct parse *p, const struct found *f)
{
    while (p->i < p->argc && f->o->more(p->argv[p->i])) {
        const char *w = p->argv[p->i];
        take(p);
        if (!set_value(p, f, w))
            return bad_value(p, f->o, w);
    }
    return EXIT_OK;
}

static void set_flag(const struct found *f)
{
    *(bool *)(f->base + f->o->off) = f->o->min != 0;
}

/* Applies option f with its value: arg (after '=' or a short name's
 * letter), or when NULL the next argument. `what` names it for errors. */
static int apply(struct parse *p, const struct found *f, const char *arg, const char *what)
{
    if (f->o->kind == OPT_KIND_FLAG) {
        if (arg)
            return unknown(p, what);
        set_flag(f);
        return EXIT_OK;
    }
    if (!arg) {
        if (p->i >= p->argc)
            return needs_value(p, what);
        arg = p->argv[p->i];
        take(p);
    }
    if (!set_value(p, f, arg))
        return bad_value(p, f->o, arg);
    return f->o->kind == OPT_KIND_WORDS ? take_words(p, f) : EXIT_OK;
}

/* "--name" or "--name=value" (already taken into the options' side). */
static int long_option(struct parse *p, const char *tok)
{
    const char *name = tok + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    struct found f;
    if (len == 0 || !find(p->c->opts, p->base, name, len, 0, &f))
        return unknown(p, tok);
    return apply(p, &f, eq ? eq + 1 : NULL, tok);
}

/* "-abc": flags, until a letter that takes a value (the rest, or the next
 * argument). */
static int short_options(struct parse *p, const char *tok)
{
    for (const char *s = tok + 1; *s; s++) {
        struct found f;
        char name[3] = {'-', *s, 0};
        if (!find(p->c->opts, p->base, NULL, 0, *s, &f))
            return unknown(p, name);
        if (f.o->kind != OPT_KIND_FLAG)
            return apply(p, &f, s[1] ? s + 1 : NULL, tok);
        set_flag(&f);
    }
    return EXIT_OK;
}

/* One argument: an option (with its values), "--", or a positional. */
static int step(struct parse *p)
{
    const char *tok = p->argv[p->i];
    if (tok[0] != '-' || tok[1] == 0) {
        p->pos[p->n_pos++] = p->argv[p->i++];
        return EXIT_OK;
    }
    take(p);
    if (strcmp(tok, "--") == 0) {
        while (p->i < p->argc)
            p->pos[p->n_pos++] = p->argv[p->i++];
        return EXIT_OK;
    }
    return tok[1] == '-' ? long_option(p, tok) : short_options(p, tok);
}

bool opts_is_format(const char *name)
{
    return atr_format_find(name) != NULL;
}

int opts_parse(const struct opts_cmd *c, void *base, int argc, char **argv, int *first)
{
    struct parse p = {.c = c, .base = base, .argc = argc, .i = 1, .argv = argv, .n_opts = 1,
                      .pos = xcalloc((size_t)argc, sizeof *p.pos)};
    int rc = EXIT_OK;
    while (rc == EXIT_OK && p.i < argc)
        rc = step(&p);
    memcpy(argv + p.n_opts, p.pos, (size_t)p.n_pos * sizeof *p.pos);
    *first = p.n_opts;
    free(p.pos);
    return rc;
}
