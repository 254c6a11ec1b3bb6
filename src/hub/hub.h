/* hub.h - a client of the Hugging Face Hub's HTTP API (libcurl): the files
 * of a dataset at one revision, and downloads of them that resume, retry
 * and verify. What `atr fetch` is built on (docs/fetch.md).
 *
 * Endpoints (ENDPOINT is https://huggingface.co or a mirror's HF_ENDPOINT):
 *   GET ENDPOINT/api/datasets/REPO/revision/REV    {"sha": commit, ...}
 *   GET ENDPOINT/api/datasets/REPO/tree/SHA?recursive=true
 *       [{"type":"file","path":..,"size":N,"oid":git-sha1,
 *         "lfs":{"oid":sha256,"size":N}}, ...], more pages behind a
 *       `Link: <URL>; rel="next"` header
 *   GET ENDPOINT/datasets/REPO/resolve/SHA/PATH    the bytes, LFS files
 *       behind a redirect to a CDN
 *
 * Memory: an atr_hub_repo owns its files and their strings;
 * atr_hub_repo_release frees them. Options' strings are borrowed. */
#ifndef ATR_HUB_HUB_H
#define ATR_HUB_HUB_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* What went wrong, for a caller that tells failures apart. */
enum atr_hub_fail {
    ATR_HUB_OK,
    ATR_HUB_EAUTH,       /* 401/403: gated or private, or the token refused */
    ATR_HUB_ENOTFOUND,   /* 404: no such dataset, revision or file */
    ATR_HUB_ECHECK,      /* the bytes are not the listed size or checksum */
    ATR_HUB_EOTHER,      /* network, server, disk, bad answer */
};

struct atr_hub_file {
    char *path;                  /* relative, '/'-separated, checked: no "..", no leading '/' */
    unsigned long long size;
    char sha256[65];             /* LFS files: the content's sha256, hex; else "" */
    char oid[41];                /* the git blob sha1, hex (checked where there is no sha256) */
};

struct atr_hub_repo {
    char *commit;                /* the revision's commit sha */
    struct atr_hub_file *files;  /* sorted by path; directories left out */
    size_t n;
};

/* Progress of one download: done of total bytes of the file. */
typedef void atr_hub_progress_fn(void *ctx, unsigned long long done,
                                 unsigned long long total);

struct atr_hub_opts {
    const char *endpoint;        /* no trailing '/'; NULL: https://huggingface.co */
    const char *token;           /* sent as "Authorization: Bearer"; NULL: none */
    unsigned retries;            /* tries after the first, per request, on 429, 5xx
                                  * and dropped connections */
    double max_wait_s;           /* the longest wait between tries (a longer
                                  * Retry-After fails at once, saying so) */
    atr_hub_progress_fn *progress;
    void *ctx;
};

/* Lists the files of dataset repo ("OWNER/NAME") at rev (a branch, tag
 * or commit; "refs/convert/parquet" too). 0, or -1 with err set and *why
 * (may be NULL) saying what failed. */
int atr_hub_list(const struct atr_hub_opts *o, const char *repo, const char *rev,
                 struct atr_hub_repo *out, enum atr_hub_fail *why, struct atr_error *err);
void atr_hub_repo_release(struct atr_hub_repo *r);

/* The two answers atr_hub_list reads, parsed alone (tests, fuzzing):
 * a tree page's files appended to r (directories left out; a path that
 * could leave -o DIR, or a file without a size or a checksum, fails), and
 * a revision's commit into r->commit. 0, or -1 with err set ("URL:
 * LINE:COL: what was expected"); after -1, r holds what came before the
 * bad entry: release it. */
int atr_hub_parse_tree(struct atr_hub_repo *r, const char *body, size_t len, const char *url,
                       struct atr_error *err);
int atr_hub_parse_revision(struct atr_hub_repo *r, const char *body, size_t len,
                           const char *url, struct atr_error *err);

/* Downloads f of repo at commit into dest: the bytes go to dest.part,
 * which a previous, interrupted try resumes with a Range request; the
 * size and checksum are checked, then dest.part is renamed to dest.
 * A wrong checksum removes dest.part. The folders above dest must exist.
 * *bytes (may be NULL) gets how many bytes came over the network. */
int atr_hub_download(const struct atr_hub_opts *o, const char *repo, const char *commit,
                     const struct atr_hub_file *f, const char *dest,
                     unsigned long long *bytes, enum atr_hub_fail *why,
                     struct atr_error *err);

/* Whether the file at path has f's size and checksum (a download that
 * finished before: nothing to fetch again). */
bool atr_hub_file_ok(const struct atr_hub_file *f, const char *path);

/* Whether path belongs to split (a folder or file named split, or a file
 * named "split-...", "split_..." or "split.EXT": data/train-0000.parquet,
 * train/0.jsonl, test.jsonl are the layouts of the Hub's datasets). */
bool atr_hub_in_split(const char *path, const char *split);

#endif
