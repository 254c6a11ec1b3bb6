/* opts.h - declarative command-line options: each command has one table
 * saying, per option, its names, what its value is and which field of the
 * command's argument struct it fills; opts_parse reads argv against it.
 *
 * Memory: tables are static and constant; string values point into argv. */
#ifndef ATR_CLI_OPTS_H
#define ATR_CLI_OPTS_H

#include <float.h>
#include <stdbool.h>
#include <stddef.h>

enum opt_kind {
    OPT_KIND_END,
    OPT_KIND_FLAG,     /* no value; stores `min` (1 or 0) into a bool */
    OPT_KIND_STRING,   /* const char * into argv; `check`, if set, must accept it */
    OPT_KIND_UINT,     /* decimal integer in [min, max] into an integer of `size` bytes */
    OPT_KIND_DOUBLE,   /* a number in [lo, hi] (inclusive; never NaN) into a double */
    OPT_KIND_SIZE,     /* "512M", "1G", "4096" in [min, max] into an integer of `size` bytes */
    OPT_KIND_ENUM,     /* one of `words`; stores its index into an integer of `size` bytes */
    OPT_KIND_CALL,     /* `call` parses the value */
    OPT_KIND_WORDS,    /* `call` parses the value, then each next argument `more` accepts */
    OPT_KIND_INCLUDE,  /* the options of `group`, filling the struct at `off` */
    OPT_KIND_SHARD,    /* "I:N" into a struct opts_shard; `min`: the old I/N's first I */
};

/* Parses one value into base, the struct the table fills. Returns false on
 * a bad value: opts_parse then prints the entry's err, or, when err is
 * NULL, takes it that the callback printed its own usage line for cmd. */
typedef bool opts_fn(void *base, const char *arg, const char *cmd);

struct opt {
    const char *name;               /* long name without "--"; NULL: none */
    char short_name;                /* 0: none */
    enum opt_kind kind;
    size_t off, size;               /* the field: its offset in base, its size */
    unsigned long long min, max;    /* uint, size bounds; flag: the value stored */
    double lo, hi;                  /* double bounds */
    const char *const *words;       /* enum: NULL-terminated */
    bool (*check)(const char *arg); /* string */
    opts_fn *call;                  /* call, words */
    bool (*more)(const char *arg);  /* words */
    const struct opt *group;        /* include */
    const char *err;                /* usage text for a bad value; a %s in it is the value */
};

/* An entry's names; the field F of struct type T. Integer kinds check that
 * F is an integer (`%` wants one), the others that F has the expected type. */
#define OPT_NAMED_(NAME, SHORT, KIND) .name = NAME, .short_name = SHORT, .kind = KIND
#define OPT_AT_(T, F) .off = offsetof(T, F), .size = sizeof(((T *)0)->F)
#define OPT_INT_(T, F) OPT_AT_(T, F) + 0 * sizeof(((T *)0)->F % 1)
#define OPT_TYPED_(T, F, type) \
    .off = offsetof(T, F) + 0 * sizeof(&((T *)0)->F == (type *)0), .size = sizeof(type)

#define OPT_FLAG(T, F, NAME, SHORT) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_FLAG), OPT_TYPED_(T, F, bool), .min = 1}
#define OPT_FLAG_OFF(T, F, NAME, SHORT) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_FLAG), OPT_TYPED_(T, F, bool), .min = 0}
#define OPT_STRING(T, F, NAME, SHORT) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_STRING), OPT_TYPED_(T, F, const char *)}
#define OPT_STRING_CHECK(T, F, NAME, SHORT, CHECK, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_STRING), OPT_TYPED_(T, F, const char *), .check = CHECK, \
     .err = ERR}
#define OPT_UINT(T, F, NAME, SHORT, MIN, MAX, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_UINT), OPT_INT_(T, F), .min = MIN, .max = MAX, .err = ERR}
#define OPT_SIZE(T, F, NAME, SHORT, MIN, MAX, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_SIZE), OPT_INT_(T, F), .min = MIN, .max = MAX, .err = ERR}
#define OPT_DOUBLE(T, F, NAME, SHORT, LO, HI, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_DOUBLE), OPT_TYPED_(T, F, double), .lo = LO, .hi = HI, \
     .err = ERR}
/* OPT_ENUM(..., OPT_WORDS("vllm", "sglang"), "--engine wants vllm or sglang") */
#define OPT_WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define OPT_ENUM(T, F, NAME, SHORT, WORDS, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_ENUM), OPT_INT_(T, F), .words = WORDS, .err = ERR}
#define OPT_CALL(NAME, SHORT, FN, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_CALL), .call = FN, .err = ERR}
#define OPT_CALL_WORDS(NAME, SHORT, FN, MORE, ERR) \
    {OPT_NAMED_(NAME, SHORT, OPT_KIND_WORDS), .call = FN, .more = MORE, .err = ERR}
#define OPT_INCLUDE(T, F, GROUP) {.kind = OPT_KIND_INCLUDE, OPT_AT_(T, F), .group = GROUP}
#define OPT_END {.kind = OPT_KIND_END}

/* -f, --from FMT: a reader's format name (trace/reader.h). */
bool opts_is_format(const char *name);
#define OPT_FROM(T, F) \
    OPT_STRING_CHECK(T, F, "from", 'f', opts_is_format, "unknown format '%s'")

/* --shard I:N: one of N shards, counted from 0 as Kubernetes'
 * JOB_COMPLETION_INDEX and Slurm's SLURM_ARRAY_TASK_ID are: the items k
 * (traces, sessions, bench items) with k mod N == I. n 0: no --shard. */
struct opts_shard {
    unsigned i, n;
};
#define OPTS_SHARD_MAX 1000000
/* The old spelling I/N counted from 1 in bench run and from 0 in replay:
 * it is refused, whatever its I, with the I:N that means the same shard
 * (OLD_FIRST: what its I counted from), so that no old script runs the
 * wrong shard without a word. */
#define OPT_SHARD(T, F, OLD_FIRST) \
    {OPT_NAMED_("shard", 0, OPT_KIND_SHARD), OPT_TYPED_(T, F, struct opts_shard), \
     .min = OLD_FIRST}

/* Bounds of OPT_DOUBLE: > 0 (the least positive double) and finite. */
#define OPT_GT0 0x1p-1074
#define OPT_FINITE DBL_MAX

/* A command's options. Usage errors name the command and the option:
 * "atr sim run: unknown option '--x'", "... option '--x' needs a value". */
struct opts_cmd {
    const char *name;        /* "sim run": errors read "atr sim run: ..." */
    const struct opt *opts;
};

/* Parses argv[1..argc) as getopt_long would: "--name value", "--name=value",
 * "-n value", "-nvalue", short flags bundled ("-qn 5"), options after
 * positional arguments, "--" ending the options; long names match exactly.
 * An entry found earlier in the table (includes expanded in place) wins.
 * Returns EXIT_OK with argv permuted so that argv[*first..argc) are the
 * positional arguments in their order, or EXIT_USAGE after printing one
 * usage line. */
int opts_parse(const struct opts_cmd *c, void *base, int argc, char **argv, int *first);

#endif
