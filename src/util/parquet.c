/* parquet.c - Parquet datasets read as JSON lines through a dlopened DuckDB. */
#include "util/parquet.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/buf.h"

static bool has_magic(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char magic[4];
    bool yes = fd >= 0 && pread(fd, magic, 4, 0) == 4 && memcmp(magic, "PAR1", 4) == 0;
    if (fd >= 0)
        close(fd);
    return yes;
}

static bool parquet_name(const char *path)
{
    size_t n = strlen(path);
    return n > 8 && strcasecmp(path + n - 8, ".parquet") == 0;
}

bool atr_parquet_wanted(const char *path)
{
    if (strcmp(path, "-") == 0)
        return false;
    struct stat st;
    if (stat(path, &st) != 0)
        return strpbrk(path, "*?[") != NULL;
    /* A .parquet name without the magic fails as Parquet, not as "an
     * unrecognised trace format". */
    return S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && parquet_name(path)) || has_magic(path);
}

#ifndef ATR_DUCKDB

struct atr_parquet { int unused; };

struct atr_parquet *atr_parquet_open(const char *path, struct atr_error *err)
{
    atr_error_set(err, "%s: Parquet input needs DuckDB, and this atr was built without it "
                  "(`make deps` or scripts/deps.sh installs it; then rebuild)", path);
    return NULL;
}

ssize_t atr_parquet_read(struct atr_parquet *p, char *dst, size_t cap, struct atr_error *err)
{
    return 0;
}

void atr_parquet_progress(const struct atr_parquet *p, unsigned long long *done,
                          unsigned long long *total)
{
    *done = *total = 0;
}

void atr_parquet_close(struct atr_parquet *p) {}

const char *atr_parquet_locate(const struct atr_parquet *p, unsigned long *line)
{
    return "";
}

#else

#include <dlfcn.h>
#include <duckdb.h>

/* The C API functions atr uses, looked up once in libduckdb.so. */
#define DUCK_FUNCS(X) X(duckdb_open) X(duckdb_connect) X(duckdb_disconnect) \
    X(duckdb_query) X(duckdb_prepare) X(duckdb_prepare_error) X(duckdb_destroy_prepare) \
    X(duckdb_execute_prepared_streaming) X(duckdb_result_error) X(duckdb_destroy_result) \
    X(duckdb_fetch_chunk) X(duckdb_data_chunk_get_size) X(duckdb_data_chunk_get_vector) \
    X(duckdb_vector_get_data) X(duckdb_destroy_data_chunk)
#define DUCK_PTR(f) __typeof__(f) *f;
static struct { DUCK_FUNCS(DUCK_PTR) } duck;
static void *duck_lib;
/* One in-memory database for the process, opened with the library and
 * kept (as the library is): each source has its own connection. Opening a
 * database per file costs milliseconds and memory DuckDB does not return. */
static duckdb_database duck_db;

/* Where the library is: $ATR_DUCKDB_LIB, else where the build found it. */
static int duck_load(const char *path, struct atr_error *err)
{
    if (duck_lib)
        return 0;
    const char *lib = getenv("ATR_DUCKDB_LIB");
    if (!lib || !*lib)
        lib = ATR_DUCKDB_LIB;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return atr_error_set(err, "%s: Parquet input needs DuckDB: cannot load %s (%s); "
                             "`make deps` or scripts/deps.sh installs it, ATR_DUCKDB_LIB "
                             "names another libduckdb.so", path, lib, dlerror());
#define DUCK_SYM(f) if (!(*(void **)&duck.f = dlsym(h, #f))) { \
        dlclose(h); \
        return atr_error_set(err, "%s: %s lacks %s (DuckDB 1.4 or newer is needed)", \
                             path, lib, #f); }
    DUCK_FUNCS(DUCK_SYM)
    if (duck.duckdb_open(NULL, &duck_db) == DuckDBError) {
        dlclose(h);
        return atr_error_set(err, "%s: DuckDB cannot start an in-memory database", path);
    }
    duck_lib = h;
    return 0;
}

/* A thread fetches DuckDB's chunks (its decoding and to_json run there)
 * while the caller's thread parses the rows of the last one: QUEUE chunks
 * wait between them, so memory stays a few chunks. */
enum { QUEUE = 2 };

struct atr_parquet {
    char **files;
    size_t nfiles;
    unsigned long long done_bytes, total_bytes;
    /* The fetching thread's: the connection, the file it reads, its rows. */
    duckdb_connection con;
    size_t file;
    bool open;                    /* res holds files[file]'s query */
    duckdb_result res;
    unsigned long long rows;      /* rows of files[file] fetched */
    struct atr_error ferr;        /* why it stopped, when failed */
    /* Between the threads, under mu. */
    pthread_t thread;
    bool started, done, failed, stop;
    pthread_mutex_t mu;
    pthread_cond_t more, room;
    duckdb_data_chunk queue[QUEUE];
    size_t queue_file[QUEUE], head, count;
    /* The caller's: the chunk being emitted, and its file. */
    duckdb_data_chunk chunk;      /* rows chunk_row.. not yet emitted */
    idx_t chunk_rows, chunk_row;
    size_t row_off;               /* bytes of the current row emitted (rows larger than cap) */
    size_t chunk_file;
    unsigned long long emitted;   /* rows emitted, all files */
    unsigned long long *first_row;/* per file: emitted before its first row */
    size_t started_files;         /* files whose first_row is set */
};

static bool add_glob(const char *pattern, glob_t *g)
{
    return glob(pattern, 0, NULL, g) == 0 && g->gl_pathc > 0;
}

/* A folder: the first layout that holds files, as Hugging Face publishes
 * them; a glob: its matches, sorted; else the file itself. */
static int expand(struct atr_parquet *p, const char *path, struct atr_error *err)
{
    static const char *const layouts[] = {"data/*.parquet", "*/train-*.parquet", "*.parquet"};
    glob_t g = {0};
    struct stat st;
    bool found = false;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        for (size_t i = 0; i < 3 && !found; i++) {
            struct atr_buf pat = ATR_BUF_INIT;
            atr_buf_printf(&pat, "%s/%s", path, layouts[i]);
            globfree(&g);
            found = add_glob(pat.data, &g);
            atr_buf_release(&pat);
        }
        if (!found)
            return atr_error_set(err, "%s: no Parquet files in this folder (looked for "
                                 "data/*.parquet, */train-*.parquet, *.parquet)", path);
    } else if (stat(path, &st) != 0) {
        if (!add_glob(path, &g))
            return atr_error_set(err, "%s: %s", path, strpbrk(path, "*?[") ?
                                 "no file matches this pattern" : strerror(ENOENT));
    } else {
        if (!has_magic(path))
            return atr_error_set(err, "%s: not a Parquet file (it does not start with "
                                 "the magic bytes PAR1)", path);
        p->files = xmalloc(sizeof *p->files);
        p->files[p->nfiles++] = xstrdup(path);
        p->total_bytes = (unsigned long long)st.st_size;
        return 0;
    }
    p->files = xmalloc(g.gl_pathc * sizeof *p->files);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        p->files[p->nfiles++] = xstrdup(g.gl_pathv[i]);
        if (stat(g.gl_pathv[i], &st) == 0)
            p->total_bytes += (unsigned long long)st.st_size;
    }
    globfree(&g);
    return 0;
}

const char *atr_parquet_locate(const struct atr_parquet *p, unsigned long *line)
{
    size_t i = p->started_files;
    while (i > 1 && p->first_row[i - 1] >= *line)
        i--;
    if (i == 0)
        return p->files[0];
    *line -= (unsigned long)p->first_row[i - 1];
    return p->files[i - 1];
}

struct atr_parquet *atr_parquet_open(const char *path, struct atr_error *err)
{
    struct atr_parquet *p = xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->more, NULL);
    pthread_cond_init(&p->room, NULL);
    if (expand(p, path, err) < 0 || duck_load(path, err) < 0) {
        atr_parquet_close(p);
        return NULL;
    }
    p->first_row = xcalloc(p->nfiles, sizeof *p->first_row);
    if (duck.duckdb_connect(duck_db, &p->con) == DuckDBError) {
        atr_error_set(err, "%s: DuckDB cannot open a connection", path);
        atr_parquet_close(p);
        return NULL;
    }
    /* ATR_PARQUET_THREADS: DuckDB's worker threads (default: one per core). */
    const char *threads = getenv("ATR_PARQUET_THREADS");
    if (threads && *threads) {
        struct atr_buf q = ATR_BUF_INIT;
        atr_buf_printf(&q, "SET threads = %d", atoi(threads) > 0 ? atoi(threads) : 1);
        duckdb_result r;
        duck.duckdb_query(p->con, q.data, &r);
        duck.duckdb_destroy_result(&r);
        atr_buf_release(&q);
    }
    return p;
}

/* DuckDB's message up to its first line break (the rest quotes atr's SQL). */
static int duck_fail(struct atr_parquet *p, const char *where, const char *what,
                     struct atr_error *err)
{
    if (!what || !*what)
        what = "DuckDB failed";
    return atr_error_set(err, "%s: %s: %.*s", p->files[p->file], where,
                         (int)strcspn(what, "\n"), what);
}

/* The SQL string literal of s, quotes doubled. */
static void sql_str(struct atr_buf *q, const char *s)
{
    atr_buf_puts(q, "'");
    for (; *s; s++)
        atr_buf_printf(q, *s == '\'' ? "''" : "%c", *s);
    atr_buf_puts(q, "'");
}

static void end_file(struct atr_parquet *p)
{
    if (p->open)
        duck.duckdb_destroy_result(&p->res);
    p->open = false;
}

static int bad_row_group(struct atr_parquet *p, const char *what, struct atr_error *err);

/* Starts the query of files[file]: each row as its JSON object. The name
 * is a SQL string literal, quotes doubled. */
static int start_file(struct atr_parquet *p, struct atr_error *err)
{
    struct atr_buf q = ATR_BUF_INIT;
    atr_buf_puts(&q, "SELECT to_json(t)::VARCHAR FROM read_parquet(");
    sql_str(&q, p->files[p->file]);
    atr_buf_puts(&q, ") AS t");
    duckdb_prepared_statement st;
    int rc = 0;
    p->rows = 0;
    if (duck.duckdb_prepare(p->con, q.data, &st) == DuckDBError)
        rc = duck_fail(p, "not a readable Parquet file", duck.duckdb_prepare_error(st), err);
    else if (duck.duckdb_execute_prepared_streaming(st, &p->res) == DuckDBError) {
        /* The footer was read (prepare): the pages are what fails. */
        p->open = true;
        rc = bad_row_group(p, duck.duckdb_result_error(&p->res), err);
        end_file(p);
    } else
        p->open = true;
    duck.duckdb_destroy_prepare(&st);
    atr_buf_release(&q);
    return rc;
}


/* Whether DuckDB reads rows first..first+n-1 of files[file]: a filter on
 * file_row_number makes it read only the row groups that hold them. */
static bool rows_read(struct atr_parquet *p, unsigned long long first, unsigned long long n)
{
    struct atr_buf q = ATR_BUF_INIT;
    atr_buf_puts(&q, "SELECT count(to_json(t)) FROM read_parquet(");
    sql_str(&q, p->files[p->file]);
    atr_buf_printf(&q, ", file_row_number = true) AS t WHERE file_row_number BETWEEN %llu "
                   "AND %llu", first, first + n - 1);
    duckdb_result r;
    bool ok = duck.duckdb_query(p->con, q.data, &r) == DuckDBSuccess;
    duck.duckdb_destroy_result(&r);
    atr_buf_release(&q);
    return ok;
}

/* A read that failed inside the file: DuckDB's threads read row groups
 * ahead and out of order, so each group (the footer's row counts) is read
 * alone, in order, until one fails. Only on error: it reads the file again. */
static int bad_row_group(struct atr_parquet *p, const char *what, struct atr_error *err)
{
    char msg[ATR_ERROR_MAX];
    snprintf(msg, sizeof msg, "%.*s", (int)strcspn(what, "\n"), what);
    end_file(p);
    struct atr_buf q = ATR_BUF_INIT;
    atr_buf_puts(&q, "SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata(");
    sql_str(&q, p->files[p->file]);
    atr_buf_puts(&q, ") ORDER BY 1");
    duckdb_result r;
    long long group = -1;
    unsigned long long first = 0, num = 0;
    if (duck.duckdb_query(p->con, q.data, &r) == DuckDBSuccess) {
        duckdb_data_chunk c;
        while (group < 0 && (c = duck.duckdb_fetch_chunk(r))) {
            int64_t *ids = duck.duckdb_vector_get_data(duck.duckdb_data_chunk_get_vector(c, 0));
            int64_t *rows = duck.duckdb_vector_get_data(duck.duckdb_data_chunk_get_vector(c, 1));
            for (idx_t i = 0; i < duck.duckdb_data_chunk_get_size(c) && group < 0; i++) {
                num = (unsigned long long)rows[i];
                if (num && !rows_read(p, first, num))
                    group = ids[i];
                else
                    first += num;
            }
            duck.duckdb_destroy_data_chunk(&c);
        }
    }
    duck.duckdb_destroy_result(&r);
    atr_buf_release(&q);
    if (group < 0)
        return atr_error_set(err, "%s: after row %llu: %s", p->files[p->file], p->rows, msg);
    return atr_error_set(err, "%s: row group %lld (rows %llu-%llu): %s", p->files[p->file],
                         group, first + 1, first + num, msg);
}

/* Hands chunk c of files[file] over: false when the reader closes first. */
static bool hand_over(struct atr_parquet *p, duckdb_data_chunk c)
{
    pthread_mutex_lock(&p->mu);
    while (p->count == QUEUE && !p->stop)
        pthread_cond_wait(&p->room, &p->mu);
    bool ok = !p->stop;
    if (ok) {
        size_t at = (p->head + p->count++) % QUEUE;
        p->queue[at] = c;
        p->queue_file[at] = p->file;
        pthread_cond_signal(&p->more);
    }
    pthread_mutex_unlock(&p->mu);
    if (!ok)
        duck.duckdb_destroy_data_chunk(&c);
    return ok;
}

/* The fetching thread: every file's chunks in order, then done. */
static void *fetch_all(void *arg)
{
    struct atr_parquet *p = arg;
    bool failed = false;
    while (!failed && (p->open || p->file < p->nfiles)) {
        if (!p->open && start_file(p, &p->ferr) < 0) {
            failed = true;
            break;
        }
        duckdb_data_chunk c = duck.duckdb_fetch_chunk(p->res);
        if (c) {
            p->rows += duck.duckdb_data_chunk_get_size(c);
            if (!hand_over(p, c))
                break;
            continue;
        }
        const char *e = duck.duckdb_result_error(&p->res);
        if (e && *e) {
            bad_row_group(p, e, &p->ferr);
            failed = true;
        }
        end_file(p);
        p->file++;
    }
    end_file(p);
    pthread_mutex_lock(&p->mu);
    p->done = true;
    p->failed = failed;
    pthread_cond_signal(&p->more);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Makes a chunk with rows to emit current: 1, 0 after the last file, -1. */
static int next_chunk(struct atr_parquet *p, struct atr_error *err)
{
    while (!p->chunk || p->chunk_row == p->chunk_rows) {
        if (p->chunk)
            duck.duckdb_destroy_data_chunk(&p->chunk);
        p->chunk = NULL;
        if (!p->started) {
            if (pthread_create(&p->thread, NULL, fetch_all, p) != 0)
                return atr_error_set(err, "%s: cannot start a thread", p->files[0]);
            p->started = true;
        }
        pthread_mutex_lock(&p->mu);
        while (!p->count && !p->done)
            pthread_cond_wait(&p->more, &p->mu);
        bool have = p->count > 0;
        if (have) {
            p->chunk = p->queue[p->head];
            p->chunk_file = p->queue_file[p->head];
            p->head = (p->head + 1) % QUEUE;
            p->count--;
            pthread_cond_signal(&p->room);
        }
        pthread_mutex_unlock(&p->mu);
        if (!have) {
            if (p->failed) {
                *err = p->ferr;
                return -1;
            }
            p->done_bytes = p->total_bytes;
            return 0;
        }
        for (; p->started_files <= p->chunk_file; p->started_files++)
            p->first_row[p->started_files] = p->emitted;
        p->done_bytes = 0;      /* progress: the files before this chunk's */
        for (size_t i = 0; i < p->chunk_file; i++) {
            struct stat st;
            if (stat(p->files[i], &st) == 0)
                p->done_bytes += (unsigned long long)st.st_size;
        }
        p->chunk_rows = duck.duckdb_data_chunk_get_size(p->chunk);
        p->chunk_row = 0;
        p->row_off = 0;
    }
    return 1;
}

/* duckdb_string_t: up to 12 bytes inline, else a pointer. */
static const char *row_text(duckdb_string_t *s, size_t *len)
{
    *len = s->value.inlined.length;
    return *len <= 12 ? s->value.inlined.inlined : s->value.pointer.ptr;
}

ssize_t atr_parquet_read(struct atr_parquet *p, char *dst, size_t cap, struct atr_error *err)
{
    size_t n = 0;
    while (n < cap) {
        int rc = next_chunk(p, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        duckdb_vector v = duck.duckdb_data_chunk_get_vector(p->chunk, 0);
        duckdb_string_t *rows = duck.duckdb_vector_get_data(v);
        while (p->chunk_row < p->chunk_rows && n < cap) {
            size_t len;
            const char *s = row_text(&rows[p->chunk_row], &len);
            size_t take = len - p->row_off < cap - n ? len - p->row_off : cap - n;
            memcpy(dst + n, s + p->row_off, take);
            n += take;
            p->row_off += take;
            if (p->row_off == len && n < cap) {   /* the row ends: its newline */
                dst[n++] = '\n';
                p->row_off = 0;
                p->chunk_row++;
                p->emitted++;
            }
        }
    }
    return (ssize_t)n;
}

void atr_parquet_progress(const struct atr_parquet *p, unsigned long long *done,
                          unsigned long long *total)
{
    *done = p->done_bytes;
    *total = p->total_bytes;
}

void atr_parquet_close(struct atr_parquet *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_signal(&p->room);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
        for (; p->count; p->count--, p->head = (p->head + 1) % QUEUE)
            duck.duckdb_destroy_data_chunk(&p->queue[p->head]);
    }
    if (duck_lib) {
        if (p->chunk)
            duck.duckdb_destroy_data_chunk(&p->chunk);
        end_file(p);
        if (p->con)
            duck.duckdb_disconnect(&p->con);
    }
    pthread_cond_destroy(&p->more);
    pthread_cond_destroy(&p->room);
    pthread_mutex_destroy(&p->mu);
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    free(p->first_row);
    free(p);
}

#endif
