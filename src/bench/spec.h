/* spec.h - benchmark specs of `atr bench` (docs/bench.md): the items (a
 * commit, its parent, a model, the agents' patches), the variants (server
 * command templates), model overrides and the workload, read from JSON and
 * checked whole before anything runs; and the placeholder expansion.
 *
 * Memory: a spec owns one arena; every string and array below lives in it
 * until atr_bench_spec_free. Expansion returns a malloc'd string. */
#ifndef ATR_BENCH_SPEC_H
#define ATR_BENCH_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/error.h"

#define ATR_BENCH_PREPARE_TIMEOUT_S 1800   /* slow image pulls and builds */
#define ATR_BENCH_STARTUP_TIMEOUT_S 300
#define ATR_BENCH_BENCHMARK_TIMEOUT_S 900
#define ATR_BENCH_DEFAULT_PORT 8000
#define ATR_BENCH_SPEC_MAX (16u << 20)   /* bytes of spec text read at most */
#define ATR_BENCH_NAME_MAX 64            /* bytes of a variant, agent or human_commit */
#define ATR_BENCH_REPEAT_MAX 1000        /* runs of each item x variant (x agent) at most */

struct atr_bench_variant {
    const char *name;              /* "baseline", "human", "agent", ... */
    const char *server;            /* start command template (required without image;
                                    * with one: run in it by /bin/sh -c, NULL: its CMD) */
    const char *image;             /* template of a container image atr runs itself,
                                    * or NULL (docs/bench.md, "Containers") */
    const char **run_args;         /* image: templates of more `run` arguments, one word each */
    size_t n_run_args;
    unsigned container_port;       /* image: publish {port} to it; 0: the host's network */
    size_t memory;                 /* bytes: the server group's memory limit; 0: none */
    const char *prepare;           /* optional template, NULL: none */
    const char *ready_url;         /* template, GET until 200 */
    bool per_agent;                /* run once per agent of the item; {patch} allowed */
    double prepare_timeout_s, startup_timeout_s, benchmark_timeout_s;
};

struct atr_bench_agent {
    const char *name;
    const char *patch;             /* resolved path, NULL: the agent made none */
};

struct atr_bench_item {
    const char *human_commit, *human_commit_full, *parent_commit;
    const char *model;             /* as written; atr_bench_model() applies overrides */
    struct atr_bench_agent *agents;
    size_t n_agents;
    const struct atr_bench_variant **variants;  /* to run: the item's list or all */
    size_t n_variants;
};

struct atr_bench_override {
    const char *from, *to, *reason;
};

enum atr_bench_mode { ATR_BENCH_SERVING, ATR_BENCH_COMMAND };

struct atr_bench_workload {
    enum atr_bench_mode mode;
    const char *trace;             /* serving: resolved path of an atr trace, or NULL */
    const char *command;           /* command: template of the benchmark script */
    /* serving without a trace: generated fixed-size requests */
    uint64_t requests, input_tokens, output_tokens;   /* 100, 200, 64 */
    bool ignore_eos;               /* default true */
    double rate;                   /* requests/s; 0: all at once */
    uint64_t concurrency;          /* at most this many in flight; 0: no limit */
};

struct atr_bench_spec {
    struct atr_arena arena;
    const char *path;              /* as given, for messages */
    const char *workdir;           /* resolved; default "atr-bench" beside the spec */
    const char *dir;               /* the spec file's folder ("." for a bare name) */
    unsigned port;                 /* 0: a free one, chosen before each server start */
    const char *cleanup;           /* template run after each item, or NULL */
    size_t min_free_disk;          /* bytes free in workdir before each item; 0: no check */
    unsigned repeat;               /* runs of each item x variant (x agent), interleaved; 1 */
    struct atr_bench_variant *variants;
    size_t n_variants;
    struct atr_bench_item *items;
    size_t n_items;
    struct atr_bench_override *overrides;
    size_t n_overrides;
    struct atr_bench_workload workload;
    char hash[17];                 /* XXH3-64 of the spec text, hex: results name it */
};

/* Is s a name that may go into a result or log file's name (a variant, an
 * agent, a human_commit): 1 to ATR_BENCH_NAME_MAX of [A-Za-z0-9._-], not
 * starting with '.', so never a path separator, "." or "..". */
bool atr_bench_name_ok(const char *s);

/* Parses spec text; path names it in errors ("spec.json:3:14: ..." or
 * "spec.json: items[2].model: ...") and relative paths in it (trace, patches,
 * workdir) are taken from path's folder. Names are checked here, so that
 * no spec can write outside the output folder: variant and agent names and
 * human_commit with atr_bench_name_ok (human_commit not starting with '-'),
 * human_commit_full and parent_commit as git commits (hex, a ref or a
 * revision: [A-Za-z0-9._^~-] parts joined by '/', none empty or starting
 * with '.', the whole not starting with '-'); and no two runs may share a
 * file name (atr_bench_run_name). Returns NULL with err set. */
struct atr_bench_spec *atr_bench_spec_parse(const char *text, size_t len, const char *path,
                                            struct atr_error *err);
/* Reads and parses the file at path. */
struct atr_bench_spec *atr_bench_spec_load(const char *path, struct atr_error *err);
void atr_bench_spec_free(struct atr_bench_spec *s);   /* accepts NULL */

/* The model served for item: the override's `to`, or the item's model.
 * *ov, when not NULL, is set to the override applied or NULL. */
const char *atr_bench_model(const struct atr_bench_spec *s, const struct atr_bench_item *item,
                            const struct atr_bench_override **ov);

/* The values placeholders stand for; NULL: not available here (a {patch}
 * outside a per-agent variant). */
struct atr_bench_vars {
    const char *model, *commit, *parent, *patch, *workdir;
    unsigned port;
    const char *spec_dir;          /* the spec's folder: scripts beside the spec */
};

/* Expands {model} {port} {commit} {parent} {patch} {workdir} {spec_dir} in tmpl; "{{"
 * and "}}" stand for a brace. With shell set, every value is single-quoted
 * unless it is made of [A-Za-z0-9_./:@%+=,-] only, so a value never splits
 * into words or runs as code. Returns a malloc'd string, or NULL with err
 * naming the placeholder (unknown one, unavailable value, unclosed brace). */
char *atr_bench_expand(const char *tmpl, const struct atr_bench_vars *v, bool shell,
                       struct atr_error *err);

#endif
