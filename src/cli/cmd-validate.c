/* cmd-validate.c - `atr validate`: schema and invariants of atr-trace files;
 * the structure of GGUF model files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/gguf.h"

static const char help[] =
    "usage: atr validate [--max-line BYTES] FILE...\n"
    "\n"
    "Checks atr-trace v1 files (plain, .gz or .zst; - for stdin) against the\n"
    "schema in docs/trace-format.md and its invariants: steps numbered in\n"
    "order, start times non-decreasing, hash_ids length = ceil(input_tokens /\n"
    "block_size), prefix references to earlier llm steps, unique trace ids,\n"
    "and in DAGs (atr-trace/1.1) parents that are earlier steps, each once.\n"
    "Prints one line per valid file; the first problem of an invalid file is\n"
    "reported as FILE:LINE:COL: what was expected. A file of a source format\n"
    "(a SWE-agent .traj, an OpenHands event stream, ...) is named as such:\n"
    "convert it first. Exit status 1 if any file is invalid, or has no trace\n"
    "(\"empty input\").\n"
    "\n"
    "A last line without its newline that does not parse, after complete\n"
    "lines, is a file being written (a live or killed proxy's journal): the\n"
    "file is valid up to it (\"ok ... (up to the cut last line)\", exit 0)\n"
    "and a warning names the line; stats, convert and report read such a\n"
    "file the same way. A cut anywhere else is an error.\n"
    "\n"
    "A file that starts with the magic \"GGUF\" is checked as a GGUF model\n"
    "(llama.cpp's format; docs/engines.md): header, every key, every tensor's\n"
    "dimensions, type and place in the file. Prints a summary (architecture,\n"
    "layers, embedding length, heads, vocabulary, context, parameters), or the\n"
    "first problem as FILE: offset N: what was expected.\n";

/* Trace ids seen in one file: open addressing over 64-bit hashes, keeping
 * the line of the first occurrence. Memory is 16 bytes per trace. */
struct id_set {
    uint64_t *hash;
    unsigned long *line;
    size_t cap, n;
};

static void id_set_grow(struct id_set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *h = xcalloc(cap, sizeof *h);
    unsigned long *l = xcalloc(cap, sizeof *l);
    for (size_t i = 0; i < s->cap; i++)
        if (s->line[i]) {
            size_t j = s->hash[i] & (cap - 1);
            while (l[j])
                j = (j + 1) & (cap - 1);
            h[j] = s->hash[i];
            l[j] = s->line[i];
        }
    free(s->hash);
    free(s->line);
    s->hash = h;
    s->line = l;
    s->cap = cap;
}

/* Returns the line where id was first seen, or 0 after adding it. */
static unsigned long id_set_add(struct id_set *s, const char *id, unsigned long line)
{
    if (s->n * 2 >= s->cap)
        id_set_grow(s);
    uint64_t h = XXH3_64bits(id, strlen(id));
    size_t j = h & (s->cap - 1);
    while (s->line[j]) {
        if (s->hash[j] == h)
            return s->line[j];
        j = (j + 1) & (s->cap - 1);
    }
    s->hash[j] = h;
    s->line[j] = line;
    s->n++;
    return 0;
}

/* The words of a format's summary before its details: "SWE-agent .traj trajectory". */
static int summary_len(const char *summary)
{
    size_t n = strcspn(summary, "(:");
    while (n && summary[n - 1] == ' ')
        n--;
    return (int)n;
}

/* Whether the file being validated ended in a cut line (a journal being
 * written): valid up to it, which the "ok" line says. */
static bool cut_tail;

static void warn_cut(const char *msg)
{
    cli_warn(msg);
    cut_tail = true;
}

/* A regular file that starts with "GGUF" (never read from a pipe: the
 * trace reader would lose what the sniff took). */
static bool is_gguf(const char *path)
{
    struct stat st;
    char magic[4];
    if (strcmp(path, "-") == 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    bool yes = fread(magic, 1, 4, f) == 4 && memcmp(magic, ATR_GGUF_MAGIC, 4) == 0;
    fclose(f);
    return yes;
}

static int validate_gguf(const char *path)
{
    struct atr_gguf_summary s;
    struct atr_error err;
    if (atr_gguf_check(path, &s, &err) < 0)
        return cli_fail_err(&err);
    printf("%s: ok, gguf v%u %s model: %llu layer%s, %llu-d, %llu/%llu heads, FF %llu, "
           "vocab %llu, context %llu, %.2f M parameters, %llu tensors, %llu keys, "
           "%llu bytes\n", path, s.version, s.arch[0] ? s.arch : "(no architecture)",
           (unsigned long long)s.layers, cli_s(s.layers), (unsigned long long)s.embd,
           (unsigned long long)s.heads, (unsigned long long)s.kv_heads,
           (unsigned long long)s.ff, (unsigned long long)s.vocab,
           (unsigned long long)s.context, s.params / 1e6, (unsigned long long)s.n_tensors,
           (unsigned long long)s.n_kv, (unsigned long long)s.file_bytes);
    return EXIT_OK;
}

static int validate_file(const char *path, const struct atr_read_opts *ro)
{
    if (is_gguf(path))
        return validate_gguf(path);
    cut_tail = false;
    struct atr_error err;
    struct atr_reader *r = atr_reader_open(path, "atr", ro, &err);
    if (!r)
        return cli_fail_err(&err);
    if (r->looks_like) {     /* a source format: its JSON error would say nothing useful */
        const char *what = r->looks_like->summary;
        int st = cli_fail("%s: this is the %s format (%.*s), not atr-trace: run atr convert "
                          "first (atr convert %s -o OUT.ndjson)", atr_reader_name(r),
                          r->looks_like->name, summary_len(what), what, path);
        atr_reader_close(r);
        return st;
    }
    struct atr_trace t = ATR_TRACE_INIT;
    struct id_set ids = {0};
    unsigned long traces = 0, steps = 0;
    int rc, status = EXIT_OK;
    while ((rc = atr_reader_next(r, &t, &err)) == 1) {
        unsigned long line = r->base_line;
        unsigned long first = id_set_add(&ids, t.trace_id, line);
        if (first) {
            status = cli_fail("%s:%lu: trace_id \"%s\" repeats the trace of line %lu",
                              atr_reader_name(r), line, t.trace_id, first);
            break;
        }
        traces++;
        steps += t.n_steps;
    }
    if (rc < 0)
        status = cli_fail_err(&err);
    else if (status == EXIT_OK && !traces)    /* as convert and stats say it */
        status = cli_fail("%s: empty input", atr_reader_name(r));
    if (status == EXIT_OK)
        printf("%s: ok, %lu trace%s, %lu step%s%s\n", atr_reader_name(r), traces,
               cli_s(traces), steps, cli_s(steps), cut_tail ? " (up to the cut last line)" : "");
    free(ids.hash);
    free(ids.line);
    atr_trace_release(&t);
    atr_reader_close(r);
    return status;
}

static const struct opt options[] = {
    OPT_SIZE(struct atr_read_opts, max_line, "max-line", 0, 1, SIZE_MAX,
             "--max-line wants a size like 64M"),
    OPT_END,
};

static const struct opts_cmd parser = {"validate", options};

static int run(int argc, char **argv)
{
    struct atr_read_opts ro = {.warn = warn_cut};
    int first;
    if (opts_parse(&parser, &ro, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first >= argc)
        return cli_usage("validate", "missing FILE");
    int status = EXIT_OK;
    for (int i = first; i < argc; i++)
        if (validate_file(argv[i], &ro) != EXIT_OK)
            status = EXIT_FAIL;
    return status;
}

const struct atr_cmd cmd_validate_entry = {
    "validate", "check atr-trace files (schema, invariants, errors at file:line:col) and GGUF models",
    help, run, NULL,
};
