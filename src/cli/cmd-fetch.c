/* cmd-fetch.c - `atr fetch hf:OWNER/NAME[@REV]`: a dataset's files from the
 * Hugging Face Hub (or a mirror) into a folder (src/hub/hub.h). */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/progress.h"
#include "hub/hub.h"
#include "json/writer.h"
#include "util/alloc.h"
#include "util/dirlock.h"

static const char help[] =
    "usage: atr fetch hf:OWNER/NAME[@REVISION] -o DIR [--split S] [--files GLOB]\n"
    "                 [--limit-files N] [--retries N] [--json] [-q]\n"
    "\n"
    "Downloads the files of a Hugging Face dataset at one revision (a branch,\n"
    "tag or commit; default main; refs/convert/parquet too) into DIR, keeping\n"
    "the repository's folders (DIR/data/train-00000-of-00002.parquet). Every\n"
    "file comes from the one commit the revision names when the listing is\n"
    "read. A file goes to FILE.part first, is checked against the listing\n"
    "(its size, and the sha256 of an LFS file or git's sha1 of another), then\n"
    "renamed: DIR never holds a partial or unchecked file under its name. An\n"
    "interrupted fetch leaves its .part, and the next run resumes it with a\n"
    "Range request; files already present and correct are not fetched again.\n"
    "A DIR that another atr fetch is writing is refused.\n"
    "\n"
    "  --split S         only the files of split S: a folder or file named S,\n"
    "                    or a file named S-*, S_* or S.* (data/train-*.parquet)\n"
    "  --files GLOB      only the paths matching GLOB (fnmatch; '*' also matches\n"
    "                    '/'): --files 'data/*.parquet'\n"
    "  --limit-files N   only the first N of the selected files, by path\n"
    "  --retries N       tries after the first on HTTP 429 (waiting its\n"
    "                    Retry-After, up to 300 s), 5xx and dropped connections\n"
    "                    (default 5; a try that moved bytes resets the count)\n"
    "  -o, --output DIR  the folder (created if missing)\n"
    "      --json        one JSON object instead of the summary line: repo,\n"
    "                    revision, commit, dir, bytes_downloaded and files\n"
    "                    [{path, size, sha256 (null: not LFS), fetched}]\n"
    "  -q, --quiet       no progress on stderr\n"
    "\n"
    "HF_TOKEN (environment): a token sent as \"Authorization: Bearer\", for gated\n"
    "and private datasets; HF_ENDPOINT: another Hub (a mirror), default\n"
    "https://huggingface.co. Prints one summary line. Exit status 1 when the\n"
    "dataset, revision or a file cannot be fetched or fails its check (that\n"
    "file's .part is then removed), 2 on a usage error.\n";

struct fetch_cli {
    const char *spec, *out, *split, *files;
    unsigned limit, retries;
    bool quiet, json;
    char repo[256], rev[256];
};

#define ARGS struct fetch_cli
static const struct opt options[] = {
    OPT_STRING(ARGS, split, "split", 0),
    OPT_STRING(ARGS, files, "files", 0),
    OPT_UINT(ARGS, limit, "limit-files", 0, 1, 1000000000,
             "--limit-files wants a positive integer"),
    OPT_UINT(ARGS, retries, "retries", 0, 0, 100, "--retries wants an integer 0..100"),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_FLAG(ARGS, json, "json", 0),
    OPT_FLAG(ARGS, quiet, "quiet", 'q'),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"fetch", options};

/* "hf:OWNER/NAME[@REV]" into repo and rev; OWNER and NAME as the Hub
 * spells them: letters, digits, '-', '_', '.'. */
static bool parse_spec(struct fetch_cli *o)
{
    const char *s = o->spec;
    if (strncmp(s, "hf:", 3) != 0)
        return false;
    s += 3;
    const char *at = strchr(s, '@');
    size_t n = at ? (size_t)(at - s) : strlen(s);
    size_t slash = strcspn(s, "/");
    if (n == 0 || n >= sizeof o->repo || slash == 0 || slash >= n - 1 ||
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./") < n ||
        memchr(s + slash + 1, '/', n - slash - 1) || (at && (!at[1] || strlen(at + 1) >= sizeof o->rev)))
        return false;
    memcpy(o->repo, s, n);
    o->repo[n] = 0;
    snprintf(o->rev, sizeof o->rev, "%s", at ? at + 1 : "main");
    return true;
}

static int parse_args(int argc, char **argv, struct fetch_cli *o)
{
    int first;
    o->retries = 5;
    if (opts_parse(&parser, o, argc, argv, &first) != EXIT_OK)
        return EXIT_USAGE;
    if (first >= argc)
        return cli_usage("fetch", "missing the dataset, hf:OWNER/NAME[@REVISION]");
    if (argc - first > 1)
        return cli_usage("fetch", "one dataset at a time, not '%s'", argv[first + 1]);
    o->spec = argv[first];
    if (!parse_spec(o))
        return cli_usage("fetch", "'%s' is not hf:OWNER/NAME[@REVISION]", o->spec);
    if (!o->out)
        return cli_usage("fetch", "missing -o DIR");
    return EXIT_OK;
}

/* Keeps the files --split, --files and --limit-files select, in order. */
static void select_files(const struct fetch_cli *o, struct atr_hub_repo *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct atr_hub_file *f = &r->files[i];
        bool keep = (!o->split || atr_hub_in_split(f->path, o->split)) &&
                    (!o->files || fnmatch(o->files, f->path, 0) == 0) &&
                    (!o->limit || k < o->limit);
        if (keep)
            r->files[k++] = *f;
        else
            free(f->path);
    }
    r->n = k;
}

/* The folders of path (below the existing DIR) made, as mkdir -p would. */
static int make_parents(char *path)
{
    for (char *c = strchr(path + 1, '/'); c; c = strchr(c + 1, '/')) {
        *c = 0;
        int rc = mkdir(path, 0777);
        *c = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

struct fetch_run {
    struct cli_progress bar;
    unsigned long long done, total;   /* bytes of the selected files */
    unsigned long long moved;         /* bytes that came over the network */
    size_t file, files, fetched;
    bool *was_fetched;                /* per file: fetched now, not up to date */
};

static void on_progress(void *ctx, unsigned long long done, unsigned long long total)
{
    struct fetch_run *r = ctx;
    cli_progress_files(&r->bar, cli_progress_now(), r->done + done, r->total, r->file + 1,
                       r->files);
}

/* One file into DIR: 1 fetched, 0 up to date (checked), -1 failed with
 * err and why set. */
static int fetch_one(const struct fetch_cli *o, const struct atr_hub_opts *ho,
                     const struct atr_hub_repo *repo, const struct atr_hub_file *f,
                     unsigned long long *moved, enum atr_hub_fail *why, struct atr_error *err)
{
    char *dest = xasprintf("%s/%s", o->out, f->path);
    int rc = 0;
    *why = ATR_HUB_EOTHER;
    if (make_parents(dest) != 0)
        rc = atr_error_set(err, "%s: %s", dest, strerror(errno));
    else if (!atr_hub_file_ok(f, dest))
        rc = atr_hub_download(ho, o->repo, repo->commit, f, dest, moved, why, err) == 0 ? 1 : -1;
    free(dest);
    return rc;
}

/* The message of a failure; a refused request says what to do about it. */
static int fetch_fail(enum atr_hub_fail why, const struct atr_error *err)
{
    if (why != ATR_HUB_EAUTH)
        return cli_fail_err(err);
    return cli_fail("%s: %s", err->msg,
                    getenv("HF_TOKEN") ? "check that HF_TOKEN may read this dataset"
                                       : "set HF_TOKEN to a token that may read it "
                                         "(https://huggingface.co/settings/tokens)");
}

/* --json: what was fetched, for scripts. */
static void print_json(const struct fetch_cli *o, const struct atr_hub_repo *repo,
                       const struct fetch_run *run)
{
    struct atr_buf b = ATR_BUF_INIT;
    struct atr_jw w;
    atr_jw_init(&w, &b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "repo", o->repo);
    atr_jw_kv_str(&w, "revision", o->rev);
    atr_jw_kv_str(&w, "commit", repo->commit);
    atr_jw_kv_str(&w, "dir", o->out);
    atr_jw_kv_uint(&w, "bytes_downloaded", run->moved);
    atr_jw_key(&w, "files");
    atr_jw_array_begin(&w);
    for (size_t i = 0; i < repo->n; i++) {
        const struct atr_hub_file *f = &repo->files[i];
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "path", f->path);
        atr_jw_kv_uint(&w, "size", f->size);
        atr_jw_kv_str(&w, "sha256", f->sha256[0] ? f->sha256 : NULL);
        atr_jw_kv_bool(&w, "fetched", run->was_fetched[i]);
        atr_jw_object_end(&w);
    }
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    atr_jw_newline(&w);
    (void)atr_jw_finish(&w);     /* b has no cap */
    fwrite(b.data, 1, b.len, stdout);
    atr_buf_release(&b);
}

static void print_summary(const struct fetch_cli *o, const struct atr_hub_repo *repo,
                          const struct fetch_run *run)
{
    printf("hf:%s@%s: %zu file%s, %.1f MB in %s (%zu fetched, %zu up to date, "
           "%.1f MB downloaded)\n", o->repo, repo->commit, repo->n, cli_s(repo->n),
           (double)run->total / 1e6, o->out, run->fetched, repo->n - run->fetched,
           (double)run->moved / 1e6);
}

static int fetch_all(const struct fetch_cli *o, const struct atr_hub_opts *ho,
                     const struct atr_hub_repo *repo, struct fetch_run *run)
{
    for (run->file = 0; run->file < repo->n; run->file++) {
        const struct atr_hub_file *f = &repo->files[run->file];
        unsigned long long moved = 0;
        enum atr_hub_fail why;
        struct atr_error err;
        int rc = fetch_one(o, ho, repo, f, &moved, &why, &err);
        run->moved += moved;
        if (rc < 0) {
            cli_progress_end(&run->bar);
            return fetch_fail(why, &err);
        }
        run->was_fetched[run->file] = rc == 1;
        run->fetched += (size_t)rc;
        run->done += f->size;
    }
    cli_progress_end(&run->bar);
    if (o->json)
        print_json(o, repo, run);
    else
        print_summary(o, repo, run);
    return EXIT_OK;
}

/* Lists the revision, selects, fetches: the command once its options are read. */
static int fetch(const struct fetch_cli *o, const struct atr_hub_opts *ho, struct fetch_run *r)
{
    struct atr_hub_repo repo;
    enum atr_hub_fail why;
    struct atr_error err;
    if (atr_hub_list(ho, o->repo, o->rev, &repo, &why, &err) != 0)
        return fetch_fail(why, &err);
    select_files(o, &repo);
    if (repo.n == 0) {
        atr_hub_repo_release(&repo);
        return cli_fail("hf:%s@%s: no file matches the selection", o->repo, o->rev);
    }
    /* DIR only once there is something to put in it. */
    if (mkdir(o->out, 0777) != 0 && errno != EEXIST) {
        atr_hub_repo_release(&repo);
        return cli_fail("%s: %s", o->out, strerror(errno));
    }
    /* Two fetches into one DIR would append to the same .part files. */
    int lock = atr_dirlock(o->out, false);
    if (lock < 0) {
        atr_hub_repo_release(&repo);
        return errno == EWOULDBLOCK ? cli_fail("%s: another atr fetch is writing there", o->out)
                                    : cli_fail("%s: %s", o->out, strerror(errno));
    }
    for (size_t i = 0; i < repo.n; i++)
        r->total += repo.files[i].size;
    r->files = repo.n;
    r->was_fetched = xcalloc(repo.n, sizeof *r->was_fetched);
    cli_progress_start(&r->bar, "fetch", o->quiet);
    int rc = fetch_all(o, ho, &repo, r);
    free(r->was_fetched);
    atr_hub_repo_release(&repo);
    close(lock);
    return rc;
}

static int run(int argc, char **argv)
{
    struct fetch_cli o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK)
        return rc;
    const char *token = getenv("HF_TOKEN"), *endpoint = getenv("HF_ENDPOINT");
    /* HF_ENDPOINT=https://mirror/ is the same Hub as https://mirror. */
    size_t n = endpoint ? strlen(endpoint) : 0;
    while (n && endpoint[n - 1] == '/')
        n--;
    char *base = endpoint ? xstrndup(endpoint, n) : NULL;
    struct fetch_run r = {0};
    struct atr_hub_opts ho = {
        .endpoint = base, .token = token && *token ? token : NULL,
        .retries = o.retries, .max_wait_s = 300, .progress = on_progress, .ctx = &r,
    };
    rc = fetch(&o, &ho, &r);
    free(base);
    return rc;
}

const struct atr_cmd cmd_fetch_entry = {
    "fetch", "download a Hugging Face dataset's files (resumed, checked)", help, run, NULL,
};
