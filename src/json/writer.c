/* writer.c - the streaming JSON writer (writer.h): separators, nesting,
 * sticky errors, and the number formats atr's outputs use. */
#include "json/writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ------------------------------------------------------------- */

static void fail(struct atr_jw *w)
{
    w->err = -1;
}

static void put(struct atr_jw *w, const char *s, size_t n)
{
    if (w->err)
        return;
    /* Most of what the writer adds is one byte: ',' ':' '{' '}'. */
    if ((n == 1 ? atr_buf_putc(w->b, *s) : atr_buf_append(w->b, s, n)) < 0)
        fail(w);
}

static void put_rc(struct atr_jw *w, int rc)
{
    if (rc < 0)
        fail(w);
}

static void put_sep(struct atr_jw *w)
{
    if (w->style == ATR_JW_PYTHON)
        put(w, ", ", 2);
    else
        put(w, ",", 1);
}

/* Readies the writer for a value: the separator before an array element,
 * nothing after a key. False (and nothing to write) when failed, or when
 * a value stands where a key is due. */
static bool value_slot(struct atr_jw *w)
{
    if (w->err)
        return false;
    if (w->after_key) {
        w->after_key = false;
        return true;
    }
    if (w->is_object[w->depth]) {
        fail(w);
        return false;
    }
    if (w->depth && w->has_item[w->depth])
        put_sep(w);
    w->has_item[w->depth] = true;
    return !w->err;
}

void atr_jw_init(struct atr_jw *w, struct atr_buf *b, enum atr_jw_style style)
{
    memset(w, 0, sizeof *w);
    w->b = b;
    w->style = style;
    w->start = b->len;
}

int atr_jw_finish(struct atr_jw *w)
{
    if (w->depth || w->after_key)
        fail(w);
    if (w->err && w->b->len > w->start) {
        w->b->len = w->start;
        w->b->data[w->start] = '\0';
    }
    return w->err;
}

/* ---- containers -------------------------------------------------------- */

static void open_container(struct atr_jw *w, bool object)
{
    if (!value_slot(w))
        return;
    if (w->depth == ATR_JW_MAX_DEPTH) {
        fail(w);
        return;
    }
    put(w, object ? "{" : "[", 1);
    w->depth++;
    w->is_object[w->depth] = object;
    w->has_item[w->depth] = false;
}

static void close_container(struct atr_jw *w, bool object)
{
    if (w->err)
        return;
    if (!w->depth || w->is_object[w->depth] != object || w->after_key) {
        fail(w);
        return;
    }
    put(w, object ? "}" : "]", 1);
    w->depth--;
}

void atr_jw_object_begin(struct atr_jw *w) { open_container(w, true); }
void atr_jw_object_end(struct atr_jw *w) { close_container(w, true); }
void atr_jw_array_begin(struct atr_jw *w) { open_container(w, false); }
void atr_jw_array_end(struct atr_jw *w) { close_container(w, false); }

/* Keys are short and need no escapes, nearly always: then the separator,
 * the quoted key and its colon go in with one reserve and one copy (a
 * trace line has a dozen keys per step, so this is convert's hot path).
 * False when the key needs the general path. */
static bool put_plain_key(struct atr_jw *w, const char *key, size_t len, bool sep)
{
    if (len > 64)
        return false;
    bool spaced = w->style == ATR_JW_PYTHON;
    size_t n = (sep ? 1 + spaced : 0) + len + 3 + spaced;
    if (atr_buf_reserve(w->b, n) < 0) {
        fail(w);
        return true;
    }
    char *o = w->b->data + w->b->len;
    if (sep) {
        *o++ = ',';
        if (spaced)
            *o++ = ' ';
    }
    *o++ = '"';
    bool escape = false;          /* copied and checked in one pass */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        escape |= c < 0x20 || c == '"' || c == '\\';
        o[i] = (char)c;
    }
    if (escape)                   /* nothing counted yet: the general path rewrites it */
        return false;
    o += len;
    *o++ = '"';
    *o++ = ':';
    if (spaced)
        *o++ = ' ';
    w->b->len += n;
    *o = '\0';
    return true;
}

void atr_jw_keyn(struct atr_jw *w, const char *key, size_t len)
{
    if (w->err)
        return;
    if (!w->is_object[w->depth] || w->after_key) {
        fail(w);
        return;
    }
    bool sep = w->has_item[w->depth];
    w->has_item[w->depth] = true;
    w->after_key = true;
    if (put_plain_key(w, key, len, sep))
        return;
    if (sep)
        put_sep(w);
    if (!w->err)
        put_rc(w, atr_json_write_string(w->b, key, len));
    put(w, ": ", w->style == ATR_JW_PYTHON ? 2 : 1);
}

void atr_jw_key(struct atr_jw *w, const char *key)
{
    atr_jw_keyn(w, key, strlen(key));
}

void atr_jw_newline(struct atr_jw *w)
{
    if (w->depth || w->after_key)
        fail(w);
    put(w, "\n", 1);
}

/* ---- scalars ----------------------------------------------------------- */

void atr_jw_strn(struct atr_jw *w, const char *s, size_t len)
{
    if (value_slot(w))
        put_rc(w, atr_json_write_string(w->b, s, len));
}

void atr_jw_str(struct atr_jw *w, const char *s)
{
    if (!s)
        atr_jw_null(w);
    else
        atr_jw_strn(w, s, strlen(s));
}

void atr_jw_int(struct atr_jw *w, int64_t v)
{
    if (value_slot(w))
        put_rc(w, atr_buf_put_i64(w->b, v));
}

void atr_jw_uint(struct atr_jw *w, uint64_t v)
{
    if (value_slot(w))
        put_rc(w, atr_buf_put_u64(w->b, v));
}

void atr_jw_bool(struct atr_jw *w, bool v)
{
    if (value_slot(w))
        put(w, v ? "true" : "false", v ? 4 : 5);
}

void atr_jw_null(struct atr_jw *w)
{
    if (value_slot(w))
        put(w, "null", 4);
}

void atr_jw_uint_array(struct atr_jw *w, const uint64_t *v, size_t n)
{
    atr_jw_array_begin(w);
    if (w->err)
        return;
    bool spaced = w->style == ATR_JW_PYTHON;
    /* One call for the list: block ids are most of a trace line. */
    put_rc(w, atr_buf_put_u64_list(w->b, v, n, spaced ? ", " : ",", spaced ? 2 : 1));
    w->has_item[w->depth] = n > 0;
    atr_jw_array_end(w);
}

void atr_jw_raw(struct atr_jw *w, const char *json, size_t len)
{
    if (value_slot(w))
        put(w, json, len);
}

/* ---- numbers ----------------------------------------------------------- */

/* Python repr: the fewest significant digits that read back exactly,
 * positional for decimal exponents in [-4, 16), else d.ddde+XX. */
int atr_json_put_pyfloat(struct atr_buf *b, double v)
{
    if (!isfinite(v))
        return atr_buf_puts(b, "null");
    /* The fewest digits that read back: binary search over 1..17 (17 always
     * do). More digits never read back worse (each rounding to nearest is
     * at least as close as the shorter one), so the search finds what a
     * scan from 1 up would, in 5 tries instead of up to 17. */
    char tmp[64];
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(tmp, sizeof tmp, "%.*e", mid - 1, v);
        if (strtod(tmp, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    int prec = lo;
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    int exp10 = atoi(strchr(tmp, 'e') + 1);
    if (v == 0 || exp10 < -4 || exp10 >= 16)
        return v == 0 ? atr_buf_puts(b, signbit(v) ? "-0.0" : "0.0") : atr_buf_puts(b, tmp);
    int decimals = prec - 1 - exp10;
    snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, v);
    if (atr_buf_puts(b, tmp) < 0)
        return -1;
    return decimals > 0 ? 0 : atr_buf_puts(b, ".0");
}

void atr_jw_pyfloat(struct atr_jw *w, double v)
{
    if (value_slot(w))
        put_rc(w, atr_json_put_pyfloat(w->b, v));
}

void atr_jw_fixed(struct atr_jw *w, double v, int digits)
{
    if (!isfinite(v)) {
        atr_jw_null(w);
        return;
    }
    if (value_slot(w))
        put_rc(w, atr_buf_printf(w->b, "%.*f", digits, v));
}

/* Drops the trailing zeros of the fraction that the buffer holds from `from` on. */
static void trim_fraction(struct atr_buf *b, size_t from)
{
    if (!memchr(b->data + from, '.', b->len - from))
        return;     /* no fraction: the zeros are the integer's */
    while (b->data[b->len - 1] == '0')
        b->len--;
    if (b->data[b->len - 1] == '.')
        b->len--;
    if (b->len - from == 2 && memcmp(b->data + from, "-0", 2) == 0) {
        b->data[from] = '0';   /* -0.0000001 rounds to "-0": say 0 */
        b->len--;
    }
    b->data[b->len] = '\0';
}

void atr_jw_fixed_trim(struct atr_jw *w, double v, int digits)
{
    if (!isfinite(v)) {
        atr_jw_null(w);
        return;
    }
    if (!value_slot(w))
        return;
    size_t from = w->b->len;
    if (atr_buf_printf(w->b, "%.*f", digits, v) < 0)
        fail(w);
    else
        trim_fraction(w->b, from);
}

/* ---- DOM values -------------------------------------------------------- */

static void walk_value(struct atr_jw *w, const struct atr_json *v);

static void walk_kids(struct atr_jw *w, const struct atr_json *v)
{
    bool object = v->type == ATR_JSON_OBJECT;
    open_container(w, object);
    for (const struct atr_json *k = v->u.kids.first; k && !w->err; k = k->next) {
        if (object)
            atr_jw_keyn(w, k->key ? k->key : "", k->key ? k->key_len : 0);
        walk_value(w, k);
    }
    close_container(w, object);
}

/* Scalars are written the same in every style: json.c writes them. */
static void walk_value(struct atr_jw *w, const struct atr_json *v)
{
    if (v->packed)
        atr_jw_uint_array(w, v->ints, v->u.kids.count);
    else if (v->type == ATR_JSON_ARRAY || v->type == ATR_JSON_OBJECT)
        walk_kids(w, v);
    else if (value_slot(w))
        put_rc(w, atr_json_write_value(w->b, v));
}

void atr_jw_value(struct atr_jw *w, const struct atr_json *v)
{
    if (!v)
        atr_jw_null(w);
    else if (w->style == ATR_JW_PYTHON)
        walk_value(w, v);
    else if (value_slot(w))
        put_rc(w, atr_json_write_value(w->b, v));
}

/* ---- key and value ----------------------------------------------------- */

void atr_jw_kv_str(struct atr_jw *w, const char *key, const char *s)
{
    atr_jw_key(w, key);
    atr_jw_str(w, s);
}

void atr_jw_kv_strn(struct atr_jw *w, const char *key, const char *s, size_t len)
{
    atr_jw_key(w, key);
    atr_jw_strn(w, s, len);
}

void atr_jw_kv_int(struct atr_jw *w, const char *key, int64_t v)
{
    atr_jw_key(w, key);
    atr_jw_int(w, v);
}

void atr_jw_kv_uint(struct atr_jw *w, const char *key, uint64_t v)
{
    atr_jw_key(w, key);
    atr_jw_uint(w, v);
}

void atr_jw_kv_bool(struct atr_jw *w, const char *key, bool v)
{
    atr_jw_key(w, key);
    atr_jw_bool(w, v);
}

void atr_jw_kv_null(struct atr_jw *w, const char *key)
{
    atr_jw_key(w, key);
    atr_jw_null(w);
}

void atr_jw_kv_pyfloat(struct atr_jw *w, const char *key, double v)
{
    atr_jw_key(w, key);
    atr_jw_pyfloat(w, v);
}

void atr_jw_kv_fixed(struct atr_jw *w, const char *key, double v, int digits)
{
    atr_jw_key(w, key);
    atr_jw_fixed(w, v, digits);
}

void atr_jw_kv_fixed_trim(struct atr_jw *w, const char *key, double v, int digits)
{
    atr_jw_key(w, key);
    atr_jw_fixed_trim(w, v, digits);
}

void atr_jw_kv_raw(struct atr_jw *w, const char *key, const char *json, size_t len)
{
    atr_jw_key(w, key);
    atr_jw_raw(w, json, len);
}

void atr_jw_kv_value(struct atr_jw *w, const char *key, const struct atr_json *v)
{
    atr_jw_key(w, key);
    atr_jw_value(w, v);
}
