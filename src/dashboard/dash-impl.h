/* dash-impl.h - what the dashboard's parts share: the run list that
 * runs.c keeps from the watched folders, view.c renders and server.c
 * serves. */
#ifndef ATR_DASHBOARD_IMPL_H
#define ATR_DASHBOARD_IMPL_H

#include <stdint.h>
#include <sys/types.h>

#include "stats/percentile.h"
#include "util/buf.h"
#include "util/error.h"

#define DASH_MAX_RUNS 1024          /* files and folders followed at once */
#define DASH_MAX_DEPTH 4            /* folder levels below a root */
#define DASH_MAX_LINE ((size_t)4 << 20)      /* a longer record is skipped, counted bad */
/* Latencies kept per run and metric (8 bytes each): past it the counts
 * still grow, the percentiles are of the first DASH_MAX_SAMPLES. */
#define DASH_MAX_SAMPLES ((size_t)1 << 20)

enum dash_kind {
    DASH_REQUESTS,       /* --requests-out lines */
    DASH_JOURNAL,        /* atr proxy's journal (atr-trace lines, source atr-proxy) */
    DASH_TOOLS,          /* atr replay tools --out folder: metrics.jsonl (+ summary.json) */
    DASH_BENCH,          /* a folder of *_result.json (atr bench run) */
    DASH_RESULT,         /* a --save-result JSON: marks its requests file done */
    DASH_OTHER,          /* traces, sweeps, router files: report sections only */
};

#define DASH_MAX_GROUPS 8           /* upstream x policy pairs counted per journal */

/* A journal's requests that one upstream served under one policy. */
struct dash_group {
    char *upstream, *policy;
    uint64_t requests, ok;
    double ttft_sum_ms;      /* over the ok ones with a TTFT */
    uint64_t ttft_n;
    /* The ok ones' TTFTs and mean inter-token latencies (meta.itl_ms.mean:
     * the journal keeps a request's gaps summarized, not each one), for
     * the pair's percentiles and CDFs; DASH_MAX_SAMPLES each at most. */
    struct atr_samples ttft, itl;
};

enum dash_status { DASH_RUNNING, DASH_STOPPED, DASH_COMPLETE, DASH_INTERRUPTED };

struct dash_run {
    char *rel;               /* "ROOT-NAME/sub/file", shown */
    char *path;              /* what is opened */
    char *page_path;         /* what the report reads (a folder for tools/bench), NULL: nothing */
    enum dash_kind kind;
    /* What was read: bytes of whole lines up to read_to of the file with
     * this inode; a file that shrinks or is replaced is read again. */
    ino_t ino;
    off_t size, read_to;
    int64_t mtime_ns;
    double changed_at;       /* monotonic seconds of the last growth seen */
    uint64_t done, ok, failed, bad;
    /* The rate is of what this dashboard saw arrive: records past base_done
     * (the count at first sight) over the time since base_at. */
    double base_at;
    uint64_t base_done;
    struct atr_samples ttft, e2el;
    /* DASH_BENCH: outcomes by status word; DASH_RESULT: its figures. */
    uint64_t outcomes[4];    /* success, error, timeout, other */
    struct dash_group groups[DASH_MAX_GROUPS];   /* DASH_JOURNAL; past the last: not split */
    size_t n_groups;
    bool incomplete;         /* the writer marked it stopped early */
    bool finished;           /* a completion marker was seen (summary, result) */
    uint64_t total;          /* planned work when the writer says it; 0: unknown */
    bool has_symlink;        /* a folder run holding a link: kept out of the page */
    /* A requests file's live copy (FILE.partial, shown as FILE): its
     * header gives total; never complete, the committed FILE replaces it. */
    bool partial;
    /* DASH_BENCH: the runner's pid while results/.atr-bench-state.json
     * says "running" (alive: running, however long a run takes); 0: none. */
    long writer_pid;
    bool seen;               /* met by the current scan */
    uint64_t gen;            /* +1 whenever its records changed: its CDF is redrawn */
    /* Fed by a live feed (atr dashboard --proxy), not a file: never walked
     * or forgotten; connected says whether the feed is up now. */
    bool remote, connected;
};

struct dash_runs {
    char **roots;            /* real paths */
    char **root_names;       /* the last component, shown */
    size_t n_roots;
    struct dash_run *v;
    size_t n, cap;
    size_t skipped_links;    /* symbolic links met and not followed */
    size_t over_cap;         /* entries left out past DASH_MAX_RUNS */
    uint64_t version;        /* +1 whenever what the list shows changed */
    double idle_s;
};

/* runs.c */
int dash_runs_init(struct dash_runs *r, const char *const *roots, size_t n, double idle_s,
                   struct atr_error *err);
/* Walks the roots again and reads what grew; now is monotonic seconds.
 * true when the list changed. */
bool dash_runs_scan(struct dash_runs *r, double now);
/* One record of a live feed (a journal line) for the remote run named rel,
 * made when new; connected: the feed's state. true when it changed. */
bool dash_runs_feed(struct dash_runs *r, const char *rel, const char *line, size_t len,
                    double now);
void dash_runs_feed_state(struct dash_runs *r, const char *rel, bool connected);
enum dash_status dash_run_status(const struct dash_runs *r, const struct dash_run *run,
                                 double now);
/* What says whether run ended: its result file (a requests file's, the
 * same name with .json for its last extension), itself, or NULL. */
const struct dash_run *dash_run_marker(const struct dash_runs *r, const struct dash_run *run);
/* Records a second since first sight, or NaN (nothing arrived since). */
double dash_run_rate(const struct dash_run *run);
/* Seconds left at that rate for a running run whose total is known, or NaN. */
double dash_run_eta(const struct dash_runs *r, const struct dash_run *run, double now);
/* The planned count (a result's num_prompts, a .partial's header, a bench
 * state's planned runs); 0: unknown. */
uint64_t dash_run_total(const struct dash_runs *r, const struct dash_run *run);
const char *dash_status_name(enum dash_status s);
const char *dash_kind_name(enum dash_kind k);
void dash_runs_release(struct dash_runs *r);

/* follow.c: a running proxy's GET /records fed into r as the run
 * "proxy URL" (the loop retries a feed that fails). NULL with err on a URL
 * that is not http://HOST[:PORT][/PREFIX]. */
struct event_base;
struct dash_follow;
struct dash_follow *dash_follow_new(struct event_base *base, struct dash_runs *r,
                                    const char *url, struct atr_error *err);
void dash_follow_free(struct dash_follow *f);

/* view.c: the run list's <tbody> rows, its section (for the page), its
 * JSON (GET /runs.json, with the event streams open), and the whole page (the report of what is in
 * the folders now, the section on top, the live script). */
void dash_view_rows(struct atr_buf *b, struct dash_runs *r, double now);
void dash_view_section(struct atr_buf *b, struct dash_runs *r, double now);
void dash_view_json(struct atr_buf *b, struct dash_runs *r, double now, unsigned streams);
int dash_view_page(struct atr_buf *b, struct dash_runs *r, double now);
/* One "cdf" event's data (one line of JSON): run's TTFT and latency CDFs
 * as the report encodes them (atr_html_cdf_json: at most 1000 points),
 * its status and the list's version; for a journal also "groups", each
 * upstream x policy pair's TTFT and ITL CDFs. Sorts run's samples in place. */
void dash_view_cdf(struct atr_buf *b, struct dash_runs *r, struct dash_run *run, double now);
/* The report's <section id="ID"> (bench, router) built from the inputs
 * of kind alone; -1 (b untouched) when there is none to show. */
int dash_view_fragment(struct atr_buf *b, struct dash_runs *r, enum dash_kind kind,
                       const char *id);

#endif
