/* chat-render.c - chat messages as prompt text, shared by the agent-trajectory readers. */
#include "trace/fmt/chat-render.h"

#include <string.h>

/* Rendered text is bounded by the document it came from (itself capped by
 * the reader's max_line); this cap only guards against a logic error. */
#define RENDER_MAX ((size_t)1 << 31)

static void put_sep(struct atr_buf *b)
{
    if (b->len && b->data[b->len - 1] != '\n')
        atr_buf_putc(b, '\n');
}

static void render_content(struct atr_buf *b, const struct atr_json *content)
{
    if (atr_json_is(content, ATR_JSON_STRING)) {
        atr_buf_append(b, content->u.str.s, content->u.str.len);
        return;
    }
    if (!atr_json_is(content, ATR_JSON_ARRAY))
        return;
    /* Parts: only text reaches the token count; images and the like are
     * not text the estimator could count anyway. */
    for (const struct atr_json *p = content->u.kids.first; p; p = p->next) {
        size_t n = 0;
        const char *text;
        if (p->type == ATR_JSON_STRING) {
            text = p->u.str.s;
            n = p->u.str.len;
        } else {
            text = atr_json_get_str(p, "text", &n);
        }
        if (!text)
            continue;
        put_sep(b);
        atr_buf_append(b, text, n);
    }
}

int atr_chat_tool_call(const struct atr_json *call, const char **name,
                       const struct atr_json **arguments)
{
    const struct atr_json *fn = atr_json_get(call, "function");
    if (!atr_json_is(fn, ATR_JSON_OBJECT))
        fn = call;      /* some dumps flatten {"name", "arguments"} */
    *name = atr_json_get_str(fn, "name", NULL);
    *arguments = atr_json_get(fn, "arguments");
    return *name != NULL;
}

static void render_calls(struct atr_buf *b, const struct atr_json *calls)
{
    if (!atr_json_is(calls, ATR_JSON_ARRAY))
        return;
    for (const struct atr_json *c = calls->u.kids.first; c; c = c->next) {
        const char *name;
        const struct atr_json *args;
        if (!atr_chat_tool_call(c, &name, &args))
            continue;
        put_sep(b);
        atr_buf_puts(b, name);
        atr_buf_putc(b, '(');
        if (atr_json_is(args, ATR_JSON_STRING))
            atr_buf_append(b, args->u.str.s, args->u.str.len);
        else if (args && args->type != ATR_JSON_NULL)
            atr_json_write_value(b, args);
        atr_buf_putc(b, ')');
    }
}

const char *atr_chat_render(struct atr_arena *a, const struct atr_json *content,
                            const struct atr_json *tool_calls, size_t *len)
{
    /* The common case, a plain string without calls, needs no copy. */
    if (atr_json_is(content, ATR_JSON_STRING) &&
        !(atr_json_is(tool_calls, ATR_JSON_ARRAY) && tool_calls->u.kids.count)) {
        *len = content->u.str.len;
        return content->u.str.s;
    }
    struct atr_buf b = ATR_BUF_INIT;
    b.max = RENDER_MAX;
    render_content(&b, content);
    render_calls(&b, tool_calls);
    char *s = atr_arena_strndup(a, b.data ? b.data : "", b.len);
    *len = b.len;
    atr_buf_release(&b);
    return s;
}

int atr_chat_content_ok(const struct atr_json *content)
{
    return !content || content->type == ATR_JSON_NULL || content->type == ATR_JSON_STRING ||
           content->type == ATR_JSON_ARRAY;
}

const struct atr_json *atr_chat_object(struct atr_arena *a, const struct atr_json *v,
                                       unsigned max_depth)
{
    if (atr_json_is(v, ATR_JSON_OBJECT))
        return v;
    if (!atr_json_is(v, ATR_JSON_STRING))
        return NULL;
    struct atr_json_opts jo = {.max_depth = max_depth};
    struct atr_json_err je;
    struct atr_json *out;
    if (atr_json_parse(a, v->u.str.s, v->u.str.len, &jo, &out, &je) < 0)
        return NULL;
    return atr_json_is(out, ATR_JSON_OBJECT) ? out : NULL;
}

int atr_chat_has_key(const char *head, size_t len, const char *key)
{
    size_t k = strlen(key);
    const char *p = head, *end = head + len;
    while ((p = memmem(p, (size_t)(end - p), key, k)) != NULL) {
        const char *q = p + k;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (q < end && *q == ':')
            return 1;
        p += k;
    }
    return 0;
}

int atr_chat_name_ends(const char *name, const char *suffix)
{
    if (!name)
        return 0;
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && strcmp(name + n - k, suffix) == 0;
}

static size_t strip_suffix(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    if (n > k && memcmp(s + n - k, suffix, k) == 0)
        return n - k;
    return n;
}

const char *atr_chat_base_name(struct atr_arena *a, const char *name,
                               const char *const *suffixes)
{
    if (!name || !*name || strcmp(name, "<stdin>") == 0 || strcmp(name, "-") == 0)
        return "stdin";
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    size_t n = strlen(base);
    n = strip_suffix(base, n, ".gz");
    n = strip_suffix(base, n, ".zst");
    for (size_t i = 0; suffixes && suffixes[i]; i++) {
        size_t m = strip_suffix(base, n, suffixes[i]);
        if (m != n) {
            n = m;
            break;
        }
    }
    return n ? atr_arena_strndup(a, base, n) : "stdin";
}

/* ---- SWE-agent commands -------------------------------------------------- */

struct words {
    const char *s;
    size_t len, pos;
};

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Position just past the quoted run starting at pos (a quote char). */
static size_t skip_quoted(const char *s, size_t len, size_t pos)
{
    char q = s[pos++];
    while (pos < len && s[pos] != q)
        pos += (q == '"' && s[pos] == '\\' && pos + 1 < len) ? 2 : 1;
    return pos < len ? pos + 1 : len;
}

/* Position just past the word starting at pos. */
static size_t word_end(const char *s, size_t len, size_t pos)
{
    while (pos < len && !is_blank(s[pos]) && s[pos] != '\n') {
        if (s[pos] == '\'' || s[pos] == '"')
            pos = skip_quoted(s, len, pos);
        else
            pos += (s[pos] == '\\' && pos + 1 < len) ? 2 : 1;
    }
    return pos;
}

/* Copies s[pos..end) into out without its quotes and escapes. */
static size_t unquote(const char *s, size_t pos, size_t end, char *out)
{
    size_t o = 0;
    char q = 0;
    for (; pos < end; pos++) {
        char c = s[pos];
        if (q ? c == q : (c == '\'' || c == '"')) {
            q = q ? 0 : c;
            continue;
        }
        if (c == '\\' && q != '\'' && pos + 1 < end)
            c = s[++pos];
        out[o++] = c;
    }
    return o;
}

/* Next shell word of the action's first line (a quoted word may span
 * lines), quotes removed, copied into arena a: 1, or 0 at the line's end. */
static int word_next(struct words *w, struct atr_arena *a, const char **out)
{
    while (w->pos < w->len && is_blank(w->s[w->pos]))
        w->pos++;
    if (w->pos >= w->len || w->s[w->pos] == '\n')
        return 0;
    size_t end = word_end(w->s, w->len, w->pos);
    char *buf = atr_arena_alloc(a, end - w->pos + 1);
    buf[unquote(w->s, w->pos, end, buf)] = '\0';
    w->pos = end;
    *out = buf;
    return 1;
}

/* The first n words (n <= 8) of the action; returns how many there were. */
int atr_swe_split_words(struct atr_arena *a, const char *s, size_t len, const char **v, int n)
{
    struct words w = {s, len, 0};
    int k = 0;
    while (k < n && word_next(&w, a, &v[k]))
        k++;
    return k;
}

static const struct atr_swe_cmd editor_cmds[] = {
    {"open", 1, 0},        {"create", 1, 0},      {"goto", -1, 0},
    {"scroll_up", -1, 0},  {"scroll_down", -1, 0}, {"edit", -1, 0},
    {"insert", -1, 0},     {"append", -1, 0},     {"search_file", 2, 1},
    {"search_dir", 2, 0},  {"find_file", 2, 0},   {"filemap", 1, 0},
    {"submit", 0, 0},
};

const struct atr_swe_cmd *atr_swe_cmd_find(const char *word)
{
    for (size_t i = 0; i < sizeof editor_cmds / sizeof editor_cmds[0]; i++)
        if (strcmp(editor_cmds[i].name, word) == 0)
            return &editor_cmds[i];
    return NULL;
}

const char *atr_swe_cmd_path(const struct atr_swe_cmd *c, const char *const *v, int n,
                             const char *open_file)
{
    if (c->path == -1)
        return open_file;
    if (c->path > 0 && c->path < n)
        return v[c->path];
    return c->from_open ? open_file : NULL;
}

int atr_chat_check_msg(struct atr_reader *r, const struct atr_json *m, const char *what,
                       const char **role)
{
    if (!atr_json_is(m, ATR_JSON_OBJECT))
        return atr_reader_fail_at(r, m, "expected a %s object, found %s", what,
                                  atr_json_type_name(m->type));
    struct atr_json *v;
    if (atr_reader_req(r, m, "role", ATR_JSON_STRING, &v) < 0)
        return -1;
    *role = v->u.str.s;
    const struct atr_json *c = atr_json_get(m, "content");
    if (!atr_chat_content_ok(c))
        return atr_reader_fail_at(r, c, "expected \"content\" to be a string or an array "
                                  "of parts, found %s", atr_json_type_name(c->type));
    const struct atr_json *tc = atr_json_get(m, "tool_calls");
    if (tc && tc->type != ATR_JSON_NULL && tc->type != ATR_JSON_ARRAY)
        return atr_reader_fail_at(r, tc, "expected \"tool_calls\" to be an array, found %s",
                                  atr_json_type_name(tc->type));
    return 0;
}

/* ---- editor steps as file operations ----------------------------------- */

const char *atr_editor_file_op(const char *action)
{
    static const char *const map[][2] = {
        {"create", "create"},    {"write", "create"},      {"overwrite", "overwrite"},
        {"edit", "replace"},     {"str_replace", "replace"}, {"replace", "replace"},
        {"insert", "insert"},    {"append", "insert"},     {"view", "view"},
        {"read", "view"},        {"open", "view"},         {"goto", "view"},
        {"scroll_up", "view"},   {"scroll_down", "view"},
    };
    for (size_t i = 0; action && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], action) == 0)
            return map[i][1];
    return NULL;
}

static int64_t str_bytes(const struct atr_json *args, const char *key)
{
    size_t n;
    return atr_json_get_str(args, key, &n) ? (int64_t)n : ATR_UNSET;
}

void atr_editor_sizes(struct atr_step *s, const struct atr_json *args)
{
    s->file_op = atr_editor_file_op(s->action);
    if (!s->file_op || !args)
        return;
    if (strcmp(s->file_op, "create") == 0 || strcmp(s->file_op, "overwrite") == 0) {
        s->bytes = str_bytes(args, "file_text");
        if (s->bytes == ATR_UNSET)
            s->bytes = str_bytes(args, "content");
    } else if (strcmp(s->file_op, "insert") == 0 || strcmp(s->file_op, "replace") == 0) {
        s->bytes = str_bytes(args, "new_str");
        if (strcmp(s->file_op, "replace") == 0)
            s->old_bytes = str_bytes(args, "old_str");
        if (s->bytes == ATR_UNSET && s->old_bytes == ATR_UNSET) {   /* SWE-agent's edit */
            s->bytes = str_bytes(args, "replace");
            s->old_bytes = str_bytes(args, "search");
        }
    }
}

int64_t atr_swe_edit_bytes(const char *act, size_t len)
{
    const char *nl = memchr(act, '\n', len);
    if (!nl)
        return 0;
    const char *body = nl + 1, *end = act + len;
    const char *last = end;
    while (last > body && last[-1] != '\n')
        last--;
    if (end - last >= 4 && memcmp(last, "end_", 4) == 0)
        end = last > body ? last - 1 : body;      /* drop the marker and its newline */
    return end > body ? (int64_t)(end - body) + 1 : 0;   /* the last line's newline */
}
