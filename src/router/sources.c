/* sources.c - the source of every session of a workload (see sources.h). */
#include "router/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "trace/reader.h"
#include "trace/trace.h"
#include "util/alloc.h"

/* The source name of t: "gen" is split by generator kind, since gen's
 * kinds are different workloads. */
static void source_name(const struct atr_trace *t, char *out, size_t cap)
{
    const char *s = t->source && *t->source ? t->source : "unknown";
    const char *kind = t->meta ? atr_json_get_str(t->meta, "kind", NULL) : NULL;
    if (strcmp(s, "gen") == 0 && kind && *kind)
        snprintf(out, cap, "gen-%s", kind);
    else
        snprintf(out, cap, "%s", s);
}

long atr_router_source_index(const struct atr_router_sources *s, const char *name)
{
    for (size_t i = 0; i < s->n_names; i++)
        if (strcmp(s->names[i], name) == 0)
            return (long)i;
    return -1;
}

static void add_session(struct atr_router_sources *s, const char *name)
{
    long g = atr_router_source_index(s, name);
    if (g < 0) {
        s->names = xreallocarray(s->names, s->n_names + 1, sizeof *s->names);
        s->names[s->n_names] = xstrdup(name);
        g = (long)s->n_names++;
    }
    s->group[s->n_sessions++] = (size_t)g;
}

int atr_router_sources_load(struct atr_router_sources *out, char *const *paths, size_t n_paths,
                            const char *format, const struct atr_workload *w,
                            struct atr_error *err)
{
    memset(out, 0, sizeof *out);
    out->group = xcalloc(w->n_sessions ? w->n_sessions : 1, sizeof *out->group);
    struct atr_read_opts ro = { .block_size = w->block_size };
    struct atr_trace t = ATR_TRACE_INIT;
    int rc = 0;
    for (size_t i = 0; i < n_paths && rc == 0; i++) {
        struct atr_reader *r = atr_reader_open(paths[i], format, &ro, err);
        if (!r) {
            rc = -1;
            break;
        }
        int more = 0;
        while (rc == 0 && (more = atr_reader_next(r, &t, err)) == 1) {
            size_t k = out->n_sessions;
            if (k >= w->n_sessions || strcmp(w->sessions[k].trace_id, t.trace_id) != 0) {
                rc = atr_error_set(err, "%s: traces changed while reading (trace %zu)",
                                   paths[i], k + 1);
                break;
            }
            char name[128];
            source_name(&t, name, sizeof name);
            add_session(out, name);
        }
        if (rc == 0 && more < 0)
            rc = -1;
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    if (rc == 0 && out->n_sessions != w->n_sessions)
        rc = atr_error_set(err, "router: traces changed while reading (%zu of %zu sessions)",
                           out->n_sessions, w->n_sessions);
    if (rc < 0)
        atr_router_sources_release(out);
    return rc;
}

void atr_router_sources_release(struct atr_router_sources *s)
{
    for (size_t i = 0; i < s->n_names; i++)
        free(s->names[i]);
    free(s->names);
    free(s->group);
    memset(s, 0, sizeof *s);
}
