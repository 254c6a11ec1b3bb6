/* webaction.c - BrowserGym and WebArena action strings (webaction.h). */
#include <string.h>

#include "trace/webaction.h"

/* Verbs whose first argument is the element acted on; goto's is the url. */
static const char *const target_verbs[] = {
    "click", "dblclick", "hover", "fill", "type", "select_option", "clear", "focus",
    "press", "upload_file", "drag_and_drop", "check", "uncheck", NULL,
};

static int is_ident(char c, int first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static int has_target(const char *verb)
{
    for (size_t i = 0; target_verbs[i]; i++)
        if (strcmp(verb, target_verbs[i]) == 0)
            return 1;
    return 0;
}

static size_t skip_blanks(const char *s, size_t len, size_t i)
{
    while (i < len && is_blank(s[i]))
        i++;
    return i;
}

/* Past the quoted string opening at s[i], or len when it never closes. */
static size_t skip_quoted(const char *s, size_t len, size_t i)
{
    char q = s[i++];
    while (i < len && s[i] != q && s[i] != '\n')
        i += s[i] == '\\' && i + 1 < len ? 2 : 1;
    return i < len && s[i] == q ? i + 1 : len;
}

/* End of one call argument from i: the ',' or ')' at depth 0, or len when
 * a string or bracket is left open. */
static size_t arg_end(const char *s, size_t len, size_t i)
{
    int depth = 0;
    while (i < len) {
        char c = s[i];
        if (c == '\'' || c == '"') {
            i = skip_quoted(s, len, i);
            continue;
        }
        if (depth == 0 && (c == ',' || c == ')'))
            return i;
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if (c == ')' || c == ']' || c == '}')
            depth--;
        i++;
    }
    return len;
}

/* One argument's value without its quotes and blanks; an argument named
 * `name=` gives *name (else NULL). Python's None is no value. */
static void arg_value(const char *s, size_t b, size_t e, const char **name, size_t *name_len,
                      const char **v, size_t *vlen)
{
    b = skip_blanks(s, e, b);
    while (e > b && (is_blank(s[e - 1]) || s[e - 1] == '\n'))
        e--;
    *name = NULL;
    size_t k = b;
    while (k < e && is_ident(s[k], k == b))
        k++;
    size_t eq = skip_blanks(s, e, k);
    if (k > b && eq < e && s[eq] == '=' && (eq + 1 >= e || s[eq + 1] != '=')) {
        *name = s + b;
        *name_len = k - b;
        b = skip_blanks(s, e, eq + 1);
    }
    if (e - b >= 2 && (s[b] == '\'' || s[b] == '"') && s[e - 1] == s[b])
        b++, e--;
    else if (e - b == 4 && memcmp(s + b, "None", 4) == 0)
        e = b;
    *v = e > b ? s + b : NULL;
    *vlen = e - b;
}

static int named(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

/* Which of a call's arguments is the element (or url), 1, or the value
 * entered, 2: by position (first, second) or by BrowserGym's names. */
static int arg_role(const char *name, size_t name_len, unsigned positional)
{
    if (!name)
        return positional == 0 ? 1 : positional == 1 ? 2 : 0;
    if (named(name, name_len, "bid") || named(name, name_len, "from_bid") ||
        named(name, name_len, "url"))
        return 1;
    if (named(name, name_len, "value") || named(name, name_len, "key_comb") ||
        named(name, name_len, "options"))
        return 2;
    return 0;
}

/* The arguments of a BrowserGym call, from just past its '('. */
static int call_args(const char *s, size_t len, size_t *pos, struct atr_web_action *a)
{
    int is_goto = strcmp(a->verb, "goto") == 0, takes = has_target(a->verb);
    size_t i = *pos;
    for (unsigned positional = 0;;) {
        size_t e = arg_end(s, len, i);
        if (e >= len) {
            *pos = i;
            return -1;
        }
        const char *name, *v;
        size_t name_len = 0, vlen;
        arg_value(s, i, e, &name, &name_len, &v, &vlen);
        int role = arg_role(name, name_len, positional);
        positional += !name;
        if (role == 1 && is_goto && !a->url)
            a->url = v, a->url_len = vlen;
        else if (role == 1 && takes && !a->target)
            a->target = v, a->target_len = vlen;
        else if (role == 2 && takes && !a->value)
            a->value = v, a->value_len = vlen;
        i = e + 1;
        if (s[e] == ')')
            break;
    }
    *pos = i;
    return 1;
}

/* WebArena's `verb [a] [b]`: the first bracket is the element of click,
 * hover and type (press's is a key), goto's url; the command runs to the
 * end of its line. */
static int bracket_args(const char *s, size_t len, size_t *pos, struct atr_web_action *a)
{
    size_t i = *pos, eol = i;
    while (eol < len && s[eol] != '\n')
        eol++;
    int is_press = strcmp(a->verb, "press") == 0;
    for (unsigned n = 0; i < eol; n++) {
        if (s[i] != '[' && n == 0)
            return -1;
        if (s[i] != '[')
            break;              /* text after the arguments: WebArena ignores it */
        const char *close = memchr(s + i + 1, ']', eol - i - 1);
        if (!close)
            return -1;
        size_t b = i + 1, e = (size_t)(close - s);
        const char *v = e > b ? s + b : NULL;
        if (n == 0 && strcmp(a->verb, "goto") == 0)
            a->url = v, a->url_len = e - b;
        else if (n == 0 && has_target(a->verb) && !is_press)
            a->target = v, a->target_len = e - b;
        else if (n == (unsigned)!is_press && has_target(a->verb))
            a->value = v, a->value_len = e - b;
        i = skip_blanks(s, eol, e + 1);
    }
    *pos = eol;
    return 1;
}

int atr_web_action_next(const char *s, size_t len, size_t *pos, struct atr_web_action *out)
{
    size_t i = *pos;
    while (i < len && (is_blank(s[i]) || s[i] == '\n' || s[i] == ';'))
        i++;
    *pos = i;
    if (i >= len)
        return 0;
    memset(out, 0, sizeof *out);
    size_t b = i;
    while (i < len && is_ident(s[i], i == b))
        i++;
    if (i == b || i - b >= ATR_WEB_VERB_MAX)
        return -1;
    memcpy(out->verb, s + b, i - b);
    i = skip_blanks(s, len, i);
    size_t at = i + 1;
    if (i < len && s[i] == '(') {
        out->style = ATR_WEB_BROWSERGYM;
        if (call_args(s, len, &at, out) < 0)
            return -1;
    } else {
        out->style = ATR_WEB_WEBARENA;
        at = i;
        if (bracket_args(s, len, &at, out) < 0)
            return -1;
    }
    *pos = at;
    return 1;
}
