/* snapshot.c - frame-snapshot events of a Playwright trace kept per frame
 * and rendered into static HTML (snapshot.h). */
#include "browser/snapshot.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/arena.h"

#define SNAP_MAX_DEPTH 1024                 /* elements and references, nested */
#define SNAP_MAX_HTML ((size_t)64 << 20)    /* one rendered document */
#define SNAP_JSON_DEPTH 2048                /* a DOM is deeper than a trace line */

struct snap {
    const char *name, *frame_id, *doctype;
    bool main;
    const struct atr_json *html;
    const struct atr_json **nodes;   /* post-order, built when first referenced */
    size_t n_nodes;
    bool indexed;
    size_t frame, pos;               /* its frame, and its place in that frame's list */
};

struct frame {
    const char *id;
    size_t *snaps;                   /* indexes into atr_snapshots.v, recorded order */
    size_t n, cap;
};

struct atr_snapshots {
    struct atr_arena arena;          /* the events' JSON, names, node lists */
    struct snap *v;
    size_t n, cap;
    struct frame *frames;
    size_t n_frames, cap_frames;
};

struct atr_snapshots *atr_snapshots_new(void) { return xcalloc(1, sizeof(struct atr_snapshots)); }

void atr_snapshots_free(struct atr_snapshots *ss)
{
    if (!ss)
        return;
    for (size_t i = 0; i < ss->n_frames; i++)
        free(ss->frames[i].snaps);
    free(ss->frames);
    free(ss->v);
    atr_arena_release(&ss->arena);
    free(ss);
}

size_t atr_snapshots_count(const struct atr_snapshots *ss) { return ss->n; }

static size_t frame_of(struct atr_snapshots *ss, const char *id)
{
    for (size_t i = 0; i < ss->n_frames; i++)
        if (strcmp(ss->frames[i].id, id) == 0)
            return i;
    if (ss->n_frames == ss->cap_frames) {
        ss->cap_frames = ss->cap_frames ? 2 * ss->cap_frames : 4;
        ss->frames = xrealloc(ss->frames, ss->cap_frames * sizeof *ss->frames);
    }
    ss->frames[ss->n_frames] = (struct frame){.id = id};
    return ss->n_frames++;
}

static void frame_push(struct frame *f, size_t snap)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->snaps = xrealloc(f->snaps, f->cap * sizeof *f->snaps);
    }
    f->snaps[f->n++] = snap;
}

/* The snapshot's name: snapshotName (v4-v6), else "<phase>@<callId>". */
static const char *snap_name(struct atr_snapshots *ss, const struct atr_json *s)
{
    const char *name = atr_json_get_str(s, "snapshotName", NULL);
    if (name)
        return atr_arena_strdup(&ss->arena, name);
    const char *phase = atr_json_get_str(s, "phase", NULL);
    const char *call = atr_json_get_str(s, "callId", NULL);
    return phase && call ? atr_arena_printf(&ss->arena, "%s@%s", phase, call) : NULL;
}

/* Cheap test first: most lines of a trace are not snapshots. */
static bool maybe_snapshot(const char *text, size_t len)
{
    static const char mark[] = "\"frame-snapshot\"";
    return len >= sizeof mark - 1 && memmem(text, len, mark, sizeof mark - 1) != NULL;
}

int atr_snapshots_add_line(struct atr_snapshots *ss, const char *text, size_t len,
                           struct atr_json_err *jerr)
{
    if (!maybe_snapshot(text, len))
        return 0;
    struct atr_json_opts jo = {.max_depth = SNAP_JSON_DEPTH};
    struct atr_json *ev;
    if (atr_json_parse(&ss->arena, text, len, &jo, &ev, jerr) < 0)
        return -1;
    const char *type = atr_json_get_str(ev, "type", NULL);
    const struct atr_json *s = atr_json_get(ev, "snapshot");
    const char *frame_id = atr_json_get_str(s, "frameId", NULL);
    const struct atr_json *html = atr_json_get(s, "html");
    const char *name = s ? snap_name(ss, s) : NULL;
    if (!type || strcmp(type, "frame-snapshot") != 0 || !frame_id || !html || !name)
        return 0;   /* not one, or one without what rendering needs */
    if (ss->n == ss->cap) {
        ss->cap = ss->cap ? 2 * ss->cap : 32;
        ss->v = xrealloc(ss->v, ss->cap * sizeof *ss->v);
    }
    struct snap *sn = &ss->v[ss->n];
    const struct atr_json *main = atr_json_get(s, "isMainFrame");
    *sn = (struct snap){
        .name = name, .frame_id = frame_id, .html = html,
        .doctype = atr_json_get_str(s, "doctype", NULL),
        .main = !main || main->type == ATR_JSON_TRUE,
    };
    sn->frame = frame_of(ss, frame_id);
    sn->pos = ss->frames[sn->frame].n;
    frame_push(&ss->frames[sn->frame], ss->n++);
    return 0;
}

/* ---- node kinds ---- */

static const struct atr_json *first_kid(const struct atr_json *n)
{
    return atr_json_is(n, ATR_JSON_ARRAY) ? n->u.kids.first : NULL;
}

/* ["TAG", attrs, child...] */
static bool is_element(const struct atr_json *n)
{
    const struct atr_json *k = first_kid(n);
    return k && k->type == ATR_JSON_STRING;
}

/* [[snapshots back, node index]] */
static bool is_reference(const struct atr_json *n)
{
    const struct atr_json *k = first_kid(n);
    return k && k->type == ATR_JSON_ARRAY;
}

static const struct atr_json *element_kids(const struct atr_json *n)
{
    const struct atr_json *attrs = n->u.kids.first->next;
    return attrs ? attrs->next : NULL;
}

/* Post-order numbering over strings and elements (references are not
 * numbered nor descended), as the recorder counts. */
static void number(struct snap *sn, const struct atr_json *n, size_t *count, unsigned depth)
{
    if (depth > SNAP_MAX_DEPTH)
        return;
    if (n->type == ATR_JSON_STRING) {
        if (sn->nodes)
            sn->nodes[*count] = n;
        ++*count;
    } else if (is_element(n)) {
        for (const struct atr_json *k = element_kids(n); k; k = k->next)
            number(sn, k, count, depth + 1);
        if (sn->nodes)
            sn->nodes[*count] = n;
        ++*count;
    }
}

static void index_nodes(struct atr_snapshots *ss, struct snap *sn)
{
    if (sn->indexed)
        return;
    size_t n = 0;
    number(sn, sn->html, &n, 0);
    sn->nodes = atr_arena_calloc(&ss->arena, n ? n : 1, sizeof *sn->nodes);
    sn->n_nodes = 0;
    number(sn, sn->html, &sn->n_nodes, 0);
    sn->indexed = true;
}

/* ---- rendering ---- */

struct render {
    struct atr_snapshots *ss;
    const struct frame *f;
    struct atr_buf *out;
    bool failed;                     /* past a cap */
};

static void put_escaped(struct atr_buf *b, const char *s, bool attr)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': atr_buf_puts(b, "&amp;"); break;
        case '<': atr_buf_puts(b, attr ? "<" : "&lt;"); break;
        case '>': atr_buf_puts(b, attr ? ">" : "&gt;"); break;
        case '"': atr_buf_puts(b, attr ? "&quot;" : "\""); break;
        default: atr_buf_putc(b, *s);
        }
    }
}

/* CSS text inside <style>: "<" as its CSS escape, so no text can end the
 * element early and start markup of its own. */
static void put_css(struct atr_buf *b, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            atr_buf_puts(b, "\\3C ");
        else
            atr_buf_putc(b, *s);
}

/* A tag or attribute name as HTML writes them; anything else (spaces,
 * quotes, "=" from a crafted trace) would change the markup around it. */
static bool valid_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == ':' || *s == '.'))
            return false;
    return true;
}

/* Attributes that would run or load code, or leave the page: handlers
 * (on*, not "open"), srcdoc, http-equiv (refresh), javascript: URLs. */
static bool active_attr(const char *key, const char *v)
{
    while (*v == ' ' || *v == '\t' || *v == '\n')
        v++;
    return (strncasecmp(key, "on", 2) == 0 && strcasecmp(key, "open") != 0) ||
           strcasecmp(key, "srcdoc") == 0 || strcasecmp(key, "http-equiv") == 0 ||
           strncasecmp(v, "javascript:", 11) == 0;
}

/* HTML's void elements: no end tag. */
static bool is_void(const char *tag)
{
    static const char *const tags[] = {
        "AREA", "BASE", "BR", "COL", "EMBED", "HR", "IMG", "INPUT", "LINK", "META", "PARAM",
        "SOURCE", "TRACK", "WBR",
    };
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
        if (strcasecmp(tag, tags[i]) == 0)
            return true;
    return false;
}

/* One attribute: form state recorded as __playwright_* becomes the
 * attribute that shows it; other recorder attributes and handlers go. */
static void put_attr(struct atr_buf *b, const char *tag, const struct atr_json *a)
{
    const char *v = a->type == ATR_JSON_STRING ? a->u.str.s : NULL;
    if (!v || !valid_name(a->key) || active_attr(a->key, v))
        return;
    if (strncmp(a->key, "__playwright_", 13) != 0) {
        atr_buf_printf(b, " %s=\"", a->key);
        put_escaped(b, v, true);
        atr_buf_putc(b, '"');
    } else if (strcmp(a->key, "__playwright_value_") == 0 && strcasecmp(tag, "INPUT") == 0) {
        atr_buf_puts(b, " value=\"");
        put_escaped(b, v, true);
        atr_buf_putc(b, '"');
    } else if (strcmp(a->key, "__playwright_checked_") == 0 && strcmp(v, "true") == 0) {
        atr_buf_puts(b, " checked");
    } else if (strcmp(a->key, "__playwright_selected_") == 0 && strcmp(v, "true") == 0) {
        atr_buf_puts(b, " selected");
    }
}

static void render_node(struct render *r, const struct atr_json *n, size_t pos, const char *parent,
                        unsigned depth);

/* [[back, m]]: node m of the frame's snapshot `back` places before pos. */
static void render_reference(struct render *r, const struct atr_json *n, size_t pos,
                             const char *parent, unsigned depth)
{
    const struct atr_json *ref = n->u.kids.first;
    const struct atr_json *back = first_kid(ref), *idx = back ? back->next : NULL;
    if (!atr_json_is(back, ATR_JSON_NUMBER) || !atr_json_is(idx, ATR_JSON_NUMBER) ||
        back->u.num < 0 || back->u.num > (double)pos || idx->u.num < 0)
        return;   /* a reference the recorder could not have written */
    size_t at = pos - (size_t)back->u.num;
    struct snap *sn = &r->ss->v[r->f->snaps[at]];
    index_nodes(r->ss, sn);
    if (idx->u.num < (double)sn->n_nodes)
        render_node(r, sn->nodes[(size_t)idx->u.num], at, parent, depth + 1);
}

static void render_element(struct render *r, const struct atr_json *n, size_t pos,
                           unsigned depth)
{
    const char *tag = n->u.kids.first->u.str.s;
    if (strcasecmp(tag, "SCRIPT") == 0 || !valid_name(tag))
        return;   /* the DOM, not the program (nor markup a name would inject) */
    const struct atr_json *attrs = n->u.kids.first->next;
    const char *sheet = NULL;
    atr_buf_printf(r->out, "<%s", tag);
    for (const struct atr_json *a = atr_json_is(attrs, ATR_JSON_OBJECT) ? attrs->u.kids.first
                                                                         : NULL;
         a; a = a->next) {
        put_attr(r->out, tag, a);
        if (strcmp(a->key, "__playwright_style_sheet_") == 0 && a->type == ATR_JSON_STRING)
            sheet = a->u.str.s;
    }
    atr_buf_putc(r->out, '>');
    if (sheet)
        put_css(r->out, sheet);        /* the stylesheet as the CSSOM had it */
    else
        for (const struct atr_json *k = element_kids(n); k && !r->failed; k = k->next)
            render_node(r, k, pos, tag, depth + 1);
    if (!is_void(tag))
        atr_buf_printf(r->out, "</%s>", tag);
}

static void render_node(struct render *r, const struct atr_json *n, size_t pos, const char *parent,
                        unsigned depth)
{
    if (depth > SNAP_MAX_DEPTH || r->out->len > SNAP_MAX_HTML) {
        r->failed = true;
        return;
    }
    if (n->type == ATR_JSON_STRING) {
        if (parent && strcasecmp(parent, "STYLE") == 0)
            put_css(r->out, n->u.str.s);         /* CSS is not HTML-escaped */
        else
            put_escaped(r->out, n->u.str.s, false);
    } else if (is_reference(n)) {
        render_reference(r, n, pos, parent, depth);
    } else if (is_element(n)) {
        render_element(r, n, pos, depth);
    }
}

/* The main frame's last snapshot called name (a name repeats only when a
 * trace holds several recordings). */
static struct snap *find(struct atr_snapshots *ss, const char *name)
{
    for (size_t i = ss->n; i-- > 0;)
        if (ss->v[i].main && strcmp(ss->v[i].name, name) == 0)
            return &ss->v[i];
    return NULL;
}

int atr_snapshots_render(struct atr_snapshots *ss, const char *name, struct atr_buf *out)
{
    atr_buf_clear(out);
    struct snap *sn = name ? find(ss, name) : NULL;
    if (!sn)
        return -1;
    struct render r = {ss, &ss->frames[sn->frame], out, false};
    if (sn->doctype)
        atr_buf_printf(out, "<!DOCTYPE %s>", sn->doctype);
    render_node(&r, sn->html, sn->pos, NULL, 0);
    return r.failed ? -1 : 0;
}
