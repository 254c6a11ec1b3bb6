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
#include "util/rng.h"

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
     * unrecognised trace format". Only a regular file is opened to look:
     * opening a FIFO would take its writer's data (a FIFO input is read
     * once, by the reader). */
    return S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && (parquet_name(path) || has_magic(path)));
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

int atr_parquet_sample(struct atr_parquet *p, unsigned long long n, uint64_t seed,
                       struct atr_error *err)
{
    return -1;
}

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
    X(duckdb_vector_get_data) X(duckdb_destroy_data_chunk) \
    X(duckdb_get_type_id) X(duckdb_destroy_logical_type) X(duckdb_list_type_child_type) \
    X(duckdb_map_type_key_type) X(duckdb_map_type_value_type) \
    X(duckdb_struct_type_child_count) X(duckdb_struct_type_child_name) \
    X(duckdb_struct_type_child_type) X(duckdb_free) X(duckdb_vector_get_validity) \
    X(duckdb_list_vector_get_child) X(duckdb_struct_vector_get_child) \
    X(duckdb_logical_type_get_alias) X(duckdb_prepared_statement_column_count) \
    X(duckdb_prepared_statement_column_name) X(duckdb_prepared_statement_column_logical_type) \
    X(duckdb_bind_varchar_length) X(duckdb_execute_prepared)
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

/* The JSON text of a row, built from DuckDB's vectors as to_json writes
 * it (same keys, nulls, escapes): to_json was most of DuckDB's time. A
 * column tree is made per file from the query's types; a column of a type
 * it does not know is to_json's text of it. */
struct col {
    duckdb_type type;
    char *key;                    /* the JSON text `"name":` (struct fields) */
    bool raw;                     /* VARCHAR holding to_json's text of the value */
    bool json;                    /* VARCHAR of DuckDB's JSON type */
    size_t nkids;
    struct col *kids;             /* LIST: the element; STRUCT: fields; MAP: key, value */
    void *data;                   /* this chunk's vector */
    uint64_t *valid;
};

/* A thread fetches DuckDB's chunks and writes their rows as JSON lines
 * (DuckDB's decoding and the JSON text run there) while the caller's
 * thread parses the text of the last one: QUEUE chunks' texts wait
 * between them, so memory stays a few chunks. */
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
    struct col row;               /* res's columns */
    duckdb_connection fix_con;    /* to_json of JSON values not written as they are */
    duckdb_prepared_statement fix;
    bool fix_tried;
    unsigned long long rows;      /* rows of files[file] fetched */
    struct atr_error ferr;        /* why it stopped, when failed */
    /* Between the threads, under mu. */
    pthread_t thread;
    bool started, done, failed, stop;
    pthread_mutex_t mu;
    pthread_cond_t more, room;
    struct atr_buf queue[QUEUE];  /* a chunk's rows as JSON lines */
    size_t queue_file[QUEUE], head, count;
    struct atr_buf spare[QUEUE + 2];  /* emitted texts, reused: their pages are mapped */
    size_t nspare;
    /* The caller's: the text being emitted, and its file. */
    struct atr_buf chunk;         /* bytes chunk_off.. not yet emitted */
    size_t chunk_off;
    size_t chunk_file;
    unsigned long long emitted;   /* rows emitted, all files */
    unsigned long long *first_row;/* per file: emitted before its first row */
    size_t started_files;         /* files whose first_row is set */
    /* atr_parquet_sample: per file, the 0-based rows to read, ascending
     * (NULL: all rows). */
    uint64_t **pick;
    size_t *npick;
};

static void col_free(struct col *c)
{
    for (size_t i = 0; i < c->nkids; i++)
        col_free(&c->kids[i]);
    free(c->kids);
    free(c->key);
    memset(c, 0, sizeof *c);
}

/* Escapes as to_json (yyjson) does: '"', '\\', and the control bytes
 * (\b \f \n \r \t, else \u00XX); other bytes, UTF-8 included, as they are. */
static void put_str(struct atr_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    atr_buf_reserve(b, 6 * n + 2);  /* every byte a \u00XX at most */
    char *o = b->data + b->len;
    *o++ = '"';
    size_t i = 0;
    while (i < n) {
        /* Eight bytes at a time up to the first control byte, '"' or '\\'
         * (the lowest flagged byte of the word is exact). */
        size_t stop = n;
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
            uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
            uint64_t hit = (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs;
            if (hit) {
                stop = i + (size_t)__builtin_ctzll(hit) / 8;
                break;
            }
            memcpy(o, s + i, 8);
            o += 8;
            i += 8;
        }
        for (; i < n; i++) {      /* the tail, or up to the byte found */
            unsigned char ch = (unsigned char)s[i];
            if (ch >= 0x20 && ch != '"' && ch != '\\') {
                *o++ = (char)ch;
                continue;
            }
            if (i > stop)
                break;
            *o++ = '\\';
            switch (ch) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            default:
                memcpy(o, "u00", 3);
                o[3] = hex[ch >> 4];
                o[4] = hex[ch & 15];
                o += 5;
            }
            if (i == stop) {
                i++;
                break;
            }
        }
    }
    *o++ = '"';
    *o = '\0';
    b->len = (size_t)(o - b->data);
}

/* duckdb_string_t: up to 12 bytes inline, else a pointer. */
static const char *str_text(const duckdb_string_t *s, size_t *len)
{
    *len = s->value.inlined.length;
    return *len <= 12 ? s->value.inlined.inlined : s->value.pointer.ptr;
}

static bool col_make(struct col *c, duckdb_logical_type t, const char *name);

static bool col_kid(struct col *c, size_t i, duckdb_logical_type t, const char *name)
{
    bool ok = col_make(&c->kids[i], t, name);
    duck.duckdb_destroy_logical_type(&t);
    return ok;
}

/* c for type t (named name in its struct, or NULL); false: a type to_json
 * must write. */
static bool col_make(struct col *c, duckdb_logical_type t, const char *name)
{
    memset(c, 0, sizeof *c);
    c->type = duck.duckdb_get_type_id(t);
    if (name) {
        struct atr_buf k = ATR_BUF_INIT;
        put_str(&k, name, strlen(name));
        atr_buf_putc(&k, ':');
        c->key = k.data;
    }
    switch (c->type) {
    case DUCKDB_TYPE_BOOLEAN: case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER: case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_SQLNULL:
        return true;
    case DUCKDB_TYPE_VARCHAR: {   /* text, or JSON (see put_json); no other alias */
        char *alias = duck.duckdb_logical_type_get_alias(t);
        c->json = alias && strcmp(alias, "JSON") == 0;
        bool ok = !alias || c->json;
        duck.duckdb_free(alias);
        return ok;
    }
    case DUCKDB_TYPE_LIST:
        c->kids = xcalloc(c->nkids = 1, sizeof *c->kids);
        return col_kid(c, 0, duck.duckdb_list_type_child_type(t), NULL);
    case DUCKDB_TYPE_MAP: {
        c->kids = xcalloc(c->nkids = 2, sizeof *c->kids);
        /* to_json writes a map as an object; keys other than text are cast. */
        bool ok = col_kid(c, 0, duck.duckdb_map_type_key_type(t), NULL) &&
                  c->kids[0].type == DUCKDB_TYPE_VARCHAR;
        return ok && col_kid(c, 1, duck.duckdb_map_type_value_type(t), NULL);
    }
    case DUCKDB_TYPE_STRUCT: {
        c->kids = xcalloc(c->nkids = duck.duckdb_struct_type_child_count(t), sizeof *c->kids);
        bool ok = true;
        for (size_t i = 0; i < c->nkids && ok; i++) {
            char *n = duck.duckdb_struct_type_child_name(t, i);
            ok = col_kid(c, i, duck.duckdb_struct_type_child_type(t, i), n);
            duck.duckdb_free(n);
        }
        return ok;
    }
    default:
        return false;
    }
}

/* Points c (and its kids) at this chunk's vector v. */
static void col_bind(struct col *c, duckdb_vector v)
{
    c->data = duck.duckdb_vector_get_data(v);
    c->valid = duck.duckdb_vector_get_validity(v);
    if (c->type == DUCKDB_TYPE_LIST)
        col_bind(&c->kids[0], duck.duckdb_list_vector_get_child(v));
    else if (c->type == DUCKDB_TYPE_STRUCT)
        for (size_t i = 0; i < c->nkids; i++)
            col_bind(&c->kids[i], duck.duckdb_struct_vector_get_child(v, i));
    else if (c->type == DUCKDB_TYPE_MAP) {
        duckdb_vector kv = duck.duckdb_list_vector_get_child(v);
        col_bind(&c->kids[0], duck.duckdb_struct_vector_get_child(kv, 0));
        col_bind(&c->kids[1], duck.duckdb_struct_vector_get_child(kv, 1));
    }
}


/* The end of the JSON string at s (its '"') if to_json would write it as
 * it is: escapes only those put_str writes; else NULL. */
static const char *canon_string(const char *s, const char *e)
{
    for (s++; s < e; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            return s + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (++s == e)
            return NULL;
        if (*s && strchr("\"\\bfnrt", *s))
            continue;
        /* \u00XX: a control byte without a short form, upper-case hex. */
        if (*s != 'u' || e - s < 5 || memcmp(s + 1, "00", 2) != 0)
            return NULL;
        char hi = s[3], lo = s[4];
        bool hex = (lo >= '0' && lo <= '9') || (lo >= 'A' && lo <= 'F');
        if (!hex || (hi != '0' && hi != '1') || (hi == '0' && strchr("89ACD", lo)))
            return NULL;
        s += 4;
    }
    return NULL;
}

/* The end of the JSON value at s if to_json writes it as it is (no
 * spaces, integers only, strings as canon_string), else NULL. */
static const char *canon_value(const char *s, const char *e, int depth)
{
    if (s == e || depth > 64)
        return NULL;
    if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        if (++s < e && *s == close)
            return s + 1;
        for (;;) {
            if (close == '}' && (s == e || *s != '"' || !(s = canon_string(s, e)) ||
                                 s == e || *s++ != ':'))
                return NULL;
            if (!(s = canon_value(s, e, depth + 1)) || s == e)
                return NULL;
            if (*s == close)
                return s + 1;
            if (*s++ != ',')
                return NULL;
        }
    }
    if (*s == '"')
        return canon_string(s, e);
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++)
        if ((size_t)(e - s) >= strlen(words[i]) && memcmp(s, words[i], strlen(words[i])) == 0)
            return s + strlen(words[i]);
    const char *d = s + (*s == '-');
    size_t n = 0;
    while (d + n < e && d[n] >= '0' && d[n] <= '9')
        n++;
    /* 1-18 digits (an int64), no leading zero, not "-0". */
    if (n == 0 || n > 18 || (d[0] == '0' && (n > 1 || d > s)))
        return NULL;
    if (d + n < e && strchr(".eE", d[n]))
        return NULL;
    return d + n;
}

/* A value of DuckDB's JSON type as to_json writes it (parsed, written
 * again): its own text where that is the same, else to_json's. */
static void put_json(struct atr_buf *b, struct atr_parquet *p, const char *s, size_t n)
{
    if (canon_value(s, s + n, 0) == s + n) {
        atr_buf_append(b, s, n);
        return;
    }
    if (!p->fix_tried) {          /* once: a second connection, as res streams on con */
        p->fix_tried = true;
        if (duck.duckdb_connect(duck_db, &p->fix_con) == DuckDBSuccess &&
            duck.duckdb_prepare(p->fix_con, "SELECT to_json(?::JSON)::VARCHAR", &p->fix) != DuckDBSuccess)
            duck.duckdb_destroy_prepare(&p->fix);
    }
    duckdb_result r;
    memset(&r, 0, sizeof r);
    duckdb_data_chunk c = NULL;
    if (p->fix && duck.duckdb_bind_varchar_length(p->fix, 1, s, n) == DuckDBSuccess &&
        duck.duckdb_execute_prepared(p->fix, &r) == DuckDBSuccess) {
        c = duck.duckdb_fetch_chunk(r);
        if (c && duck.duckdb_data_chunk_get_size(c) == 1) {
            size_t len;
            const char *t = str_text(duck.duckdb_vector_get_data(
                duck.duckdb_data_chunk_get_vector(c, 0)), &len);
            atr_buf_append(b, t, len);
        } else
            atr_buf_append(b, s, n);
        if (c)
            duck.duckdb_destroy_data_chunk(&c);
        duck.duckdb_destroy_result(&r);
        return;
    }
    duck.duckdb_destroy_result(&r);
    atr_buf_append(b, s, n);      /* not JSON: the reader says so at this row */
}

static void put_fields(struct atr_buf *b, struct atr_parquet *p, const struct col *c, idx_t i);

/* Value i of c's vector as JSON. */
static void put_value(struct atr_buf *b, struct atr_parquet *p, const struct col *c, idx_t i)
{
    if (c->type == DUCKDB_TYPE_SQLNULL || (c->valid && !(c->valid[i / 64] >> (i % 64) & 1))) {
        atr_buf_append(b, "null", 4);
        return;
    }
    switch (c->type) {
    case DUCKDB_TYPE_BOOLEAN:
        if (((const bool *)c->data)[i])
            atr_buf_append(b, "true", 4);
        else
            atr_buf_append(b, "false", 5);
        break;
    case DUCKDB_TYPE_TINYINT: atr_buf_put_i64(b, ((const int8_t *)c->data)[i]); break;
    case DUCKDB_TYPE_SMALLINT: atr_buf_put_i64(b, ((const int16_t *)c->data)[i]); break;
    case DUCKDB_TYPE_INTEGER: atr_buf_put_i64(b, ((const int32_t *)c->data)[i]); break;
    case DUCKDB_TYPE_BIGINT: atr_buf_put_i64(b, ((const int64_t *)c->data)[i]); break;
    case DUCKDB_TYPE_UTINYINT: atr_buf_put_u64(b, ((const uint8_t *)c->data)[i]); break;
    case DUCKDB_TYPE_USMALLINT: atr_buf_put_u64(b, ((const uint16_t *)c->data)[i]); break;
    case DUCKDB_TYPE_UINTEGER: atr_buf_put_u64(b, ((const uint32_t *)c->data)[i]); break;
    case DUCKDB_TYPE_UBIGINT: atr_buf_put_u64(b, ((const uint64_t *)c->data)[i]); break;
    case DUCKDB_TYPE_VARCHAR: {
        size_t n;
        const char *s = str_text(&((const duckdb_string_t *)c->data)[i], &n);
        if (c->raw)
            atr_buf_append(b, s, n);
        else if (c->json)
            put_json(b, p, s, n);
        else
            put_str(b, s, n);
        break;
    }
    case DUCKDB_TYPE_LIST: case DUCKDB_TYPE_MAP: {
        const duckdb_list_entry *e = &((const duckdb_list_entry *)c->data)[i];
        bool map = c->type == DUCKDB_TYPE_MAP;
        atr_buf_putc(b, map ? '{' : '[');
        for (idx_t k = e->offset; k < e->offset + e->length; k++) {
            if (k > e->offset)
                atr_buf_putc(b, ',');
            if (map) {
                put_value(b, p, &c->kids[0], k);
                atr_buf_putc(b, ':');
            }
            put_value(b, p, &c->kids[map], k);
        }
        atr_buf_putc(b, map ? '}' : ']');
        break;
    }
    default:                      /* STRUCT */
        put_fields(b, p, c, i);
    }
}

/* Row i of struct c (or of a chunk's columns) as a JSON object. */
static void put_fields(struct atr_buf *b, struct atr_parquet *p, const struct col *c, idx_t i)
{
    atr_buf_putc(b, '{');
    for (size_t k = 0; k < c->nkids; k++) {
        if (k)
            atr_buf_putc(b, ',');
        atr_buf_puts(b, c->kids[k].key);
        put_value(b, p, &c->kids[k], i);
    }
    atr_buf_putc(b, '}');
}

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
    if (p->pick && *line >= 1 && *line <= p->npick[i - 1])
        *line = (unsigned long)p->pick[i - 1][*line - 1] + 1;
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

/* The row of res's columns (see struct col), and the select list that
 * gives them: a column of a type atr does not write is to_json's text.
 * ATR_PARQUET_TO_JSON=1 makes every column to_json's (the two are
 * compared). The number of such columns. */
static size_t make_row(struct atr_parquet *p, duckdb_prepared_statement st, struct atr_buf *sel)
{
    const char *force = getenv("ATR_PARQUET_TO_JSON");
    bool all = force && *force && strcmp(force, "0") != 0;
    struct col *r = &p->row;
    r->type = DUCKDB_TYPE_STRUCT;
    r->kids = xcalloc(r->nkids = duck.duckdb_prepared_statement_column_count(st), sizeof *r->kids);
    size_t raw = 0;
    for (size_t i = 0; i < r->nkids; i++) {
        char *cname = (char *)duck.duckdb_prepared_statement_column_name(st, i);
        const char *name = cname ? cname : "";
        struct atr_buf id = ATR_BUF_INIT;     /* t."name", quotes doubled */
        atr_buf_puts(&id, "t.\"");
        for (const char *c = name; *c; c++)
            atr_buf_printf(&id, *c == '"' ? "\"\"" : "%c", *c);
        atr_buf_puts(&id, "\"");
        struct col *k = &r->kids[i];
        if (!col_kid(r, i, duck.duckdb_prepared_statement_column_logical_type(st, i), name) || all) {
            char *key = k->key;
            k->key = NULL;
            col_free(k);
            *k = (struct col){.type = DUCKDB_TYPE_VARCHAR, .raw = true, .key = key};
            raw++;
        }
        atr_buf_printf(sel, k->raw ? "%sto_json(%s)::VARCHAR" : "%s%s", i ? ", " : "", id.data);
        atr_buf_release(&id);
        duck.duckdb_free(cname);
    }
    return raw;
}

static int bad_row_group(struct atr_parquet *p, const char *what, struct atr_error *err);

/* Prepares the query of select over files[file] (t: its rows; when
 * sampled, only the picked ones: the filter on file_row_number lets DuckDB
 * skip the row groups that hold none). */
static int prepare(struct atr_parquet *p, const char *select, duckdb_prepared_statement *st,
                   struct atr_error *err)
{
    struct atr_buf q = ATR_BUF_INIT;
    atr_buf_printf(&q, "SELECT %s FROM read_parquet(", select);
    sql_str(&q, p->files[p->file]);
    if (p->pick) {
        atr_buf_puts(&q, ", file_row_number = true) AS t WHERE file_row_number IN (");
        for (size_t i = 0; i < p->npick[p->file]; i++)
            atr_buf_printf(&q, "%s%llu", i ? "," : "", (unsigned long long)p->pick[p->file][i]);
        atr_buf_puts(&q, ")");
    } else
        atr_buf_puts(&q, ") AS t");
    int rc = 0;
    if (duck.duckdb_prepare(p->con, q.data, st) == DuckDBError)
        rc = duck_fail(p, "not a readable Parquet file", duck.duckdb_prepare_error(*st), err);
    atr_buf_release(&q);
    return rc;
}

/* Starts files[file]: its columns as they are, and to_json's text of
 * those atr does not write (known from the types, before any row). */
static int start_file(struct atr_parquet *p, struct atr_error *err)
{
    col_free(&p->row);
    p->rows = 0;
    duckdb_prepared_statement st;
    if (prepare(p, p->pick ? "* EXCLUDE (file_row_number)" : "*", &st, err) < 0) {
        duck.duckdb_destroy_prepare(&st);
        return -1;
    }
    struct atr_buf sel = ATR_BUF_INIT;
    int rc = 0;
    if (make_row(p, st, &sel)) {
        duck.duckdb_destroy_prepare(&st);
        rc = prepare(p, sel.data, &st, err);
    }
    atr_buf_release(&sel);
    if (rc == 0 && duck.duckdb_execute_prepared_streaming(st, &p->res) == DuckDBError) {
        /* The footer was read (prepare): the pages are what fails. */
        p->open = true;
        rc = bad_row_group(p, duck.duckdb_result_error(&p->res), err);
        end_file(p);
    } else if (rc == 0)
        p->open = true;
    duck.duckdb_destroy_prepare(&st);
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

/* Hands the text of a chunk of files[file] over: false when the reader
 * closes first. */
static bool hand_over(struct atr_parquet *p, struct atr_buf text)
{
    pthread_mutex_lock(&p->mu);
    while (p->count == QUEUE && !p->stop)
        pthread_cond_wait(&p->room, &p->mu);
    bool ok = !p->stop;
    if (ok) {
        size_t at = (p->head + p->count++) % QUEUE;
        p->queue[at] = text;
        p->queue_file[at] = p->file;
        pthread_cond_signal(&p->more);
    }
    pthread_mutex_unlock(&p->mu);
    if (!ok)
        atr_buf_release(&text);
    return ok;
}

/* A text to fill: an emitted one when there is one (its pages are
 * mapped already). */
static struct atr_buf spare_text(struct atr_parquet *p)
{
    struct atr_buf b = ATR_BUF_INIT;
    pthread_mutex_lock(&p->mu);
    if (p->nspare)
        b = p->spare[--p->nspare];
    pthread_mutex_unlock(&p->mu);
    atr_buf_clear(&b);
    return b;
}

/* Chunk c's rows as JSON lines, handed over a few MB at a time (a chunk
 * of long rows is hundreds of MB): false when the reader closes first.
 * c is destroyed. */
static bool hand_chunk(struct atr_parquet *p, duckdb_data_chunk c)
{
    enum { TEXT = 4 << 20 };
    idx_t rows = duck.duckdb_data_chunk_get_size(c);
    for (size_t k = 0; k < p->row.nkids; k++)
        col_bind(&p->row.kids[k], duck.duckdb_data_chunk_get_vector(c, k));
    struct atr_buf b = spare_text(p);
    bool ok = true;
    for (idx_t i = 0; i < rows && ok; i++) {
        put_fields(&b, p, &p->row, i);
        atr_buf_putc(&b, '\n');
        if (b.len >= TEXT || i + 1 == rows) {
            ok = hand_over(p, b);
            b = spare_text(p);
        }
    }
    atr_buf_release(&b);
    duck.duckdb_destroy_data_chunk(&c);
    return ok;
}

/* The fetching thread: every file's chunks in order, then done. */
static void *fetch_all(void *arg)
{
    struct atr_parquet *p = arg;
    bool failed = false;
    while (!failed && (p->open || p->file < p->nfiles)) {
        if (!p->open && p->pick && !p->npick[p->file]) {
            p->file++;          /* sampled: none of its rows */
            continue;
        }
        if (!p->open && start_file(p, &p->ferr) < 0) {
            failed = true;
            break;
        }
        duckdb_data_chunk c = duck.duckdb_fetch_chunk(p->res);
        if (c) {
            p->rows += duck.duckdb_data_chunk_get_size(c);
            if (!hand_chunk(p, c))
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

/* Makes a chunk with bytes to emit current: 1, 0 after the last file, -1. */
static int next_chunk(struct atr_parquet *p, struct atr_error *err)
{
    while (p->chunk_off == p->chunk.len) {
        pthread_mutex_lock(&p->mu);
        if (p->chunk.data && p->nspare < QUEUE + 2)
            p->spare[p->nspare++] = p->chunk;
        else
            atr_buf_release(&p->chunk);
        pthread_mutex_unlock(&p->mu);
        p->chunk = (struct atr_buf)ATR_BUF_INIT;
        p->chunk_off = 0;
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
    }
    return 1;
}

/* files[file]'s rows, from its footer; -1 with err set. */
static long long file_rows(struct atr_parquet *p, struct atr_error *err)
{
    struct atr_buf q = ATR_BUF_INIT;
    atr_buf_puts(&q, "SELECT num_rows FROM parquet_file_metadata(");
    sql_str(&q, p->files[p->file]);
    atr_buf_puts(&q, ")");
    duckdb_result r;
    long long rows = -1;
    if (duck.duckdb_query(p->con, q.data, &r) == DuckDBError)
        duck_fail(p, "not a readable Parquet file", duck.duckdb_result_error(&r), err);
    else {
        duckdb_data_chunk c = duck.duckdb_fetch_chunk(r);
        if (c && duck.duckdb_data_chunk_get_size(c) == 1)
            rows = *(int64_t *)duck.duckdb_vector_get_data(duck.duckdb_data_chunk_get_vector(c, 0));
        if (c)
            duck.duckdb_destroy_data_chunk(&c);
        if (rows < 0)
            atr_error_set(err, "%s: its footer gives no row count", p->files[p->file]);
    }
    duck.duckdb_destroy_result(&r);
    atr_buf_release(&q);
    return rows;
}

int atr_parquet_sample(struct atr_parquet *p, unsigned long long n, uint64_t seed,
                       struct atr_error *err)
{
    uint64_t *rows = xcalloc(p->nfiles, sizeof *rows), total = 0;
    for (p->file = 0; p->file < p->nfiles; p->file++) {
        long long r = file_rows(p, err);
        if (r < 0) {
            free(rows);
            return -1;
        }
        total += rows[p->file] = (uint64_t)r;
    }
    p->file = 0;
    /* Selection sampling (Knuth's algorithm S): each row in turn is taken
     * with probability (still wanted) / (still to see), which gives every
     * n-subset the same chance, in file order, in one pass over counts. */
    p->pick = xcalloc(p->nfiles, sizeof *p->pick);
    p->npick = xcalloc(p->nfiles, sizeof *p->npick);
    uint64_t want = n < total ? n : total, seen = 0;
    struct atr_rng rng;
    atr_rng_seed(&rng, seed, 0);
    for (size_t f = 0; f < p->nfiles; f++) {
        for (uint64_t i = 0; i < rows[f] && want; i++, seen++) {
            if (atr_rng_below(&rng, total - seen) >= want)
                continue;
            if (!(p->npick[f] & (p->npick[f] - 1)))      /* 0, 1, 2, 4, ...: grow */
                p->pick[f] = xrealloc(p->pick[f], (p->npick[f] ? 2 * p->npick[f] : 1) *
                                      sizeof *p->pick[f]);
            p->pick[f][p->npick[f]++] = i;
            want--;
        }
    }
    free(rows);
    return 0;
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
        size_t take = p->chunk.len - p->chunk_off < cap - n ? p->chunk.len - p->chunk_off : cap - n;
        const char *s = p->chunk.data + p->chunk_off, *end = s + take;
        memcpy(dst + n, s, take);
        /* Rows emitted: JSON text holds no raw newline but the row's own. */
        while ((s = memchr(s, '\n', (size_t)(end - s)))) {
            p->emitted++;
            s++;
        }
        n += take;
        p->chunk_off += take;
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
            atr_buf_release(&p->queue[p->head]);
    }
    atr_buf_release(&p->chunk);
    for (size_t i = 0; i < p->nspare; i++)
        atr_buf_release(&p->spare[i]);
    if (duck_lib) {
        end_file(p);
        col_free(&p->row);
        if (p->con)
            duck.duckdb_disconnect(&p->con);
        if (p->fix)
            duck.duckdb_destroy_prepare(&p->fix);
        if (p->fix_con)
            duck.duckdb_disconnect(&p->fix_con);
    }
    pthread_cond_destroy(&p->more);
    pthread_cond_destroy(&p->room);
    pthread_mutex_destroy(&p->mu);
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    free(p->first_row);
    if (p->pick)
        for (size_t i = 0; i < p->nfiles; i++)
            free(p->pick[i]);
    free(p->pick);
    free(p->npick);
    free(p);
}

#endif
