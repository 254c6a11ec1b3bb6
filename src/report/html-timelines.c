/* html-timelines.c - the explorer's step timelines as one deflated,
 * base64 block: at 10 000 traces they are most of the report's bytes, and
 * only the one trace a reader opens is ever drawn. */
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "report/html-impl.h"
#include "util/alloc.h"

/* Standard base64 (RFC 4648, with padding): no '<', '&' or quote, so the
 * text is inert inside a <script> element. */
static void put_base64(struct atr_buf *b, const unsigned char *p, size_t n)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char quad[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        quad[0] = digits[v >> 18];
        quad[1] = digits[(v >> 12) & 63];
        quad[2] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
        quad[3] = i + 2 < n ? digits[v & 63] : '=';
        atr_buf_append(b, quad, 4);
    }
}

/* {"labels": [tool labels], "tl": [one flat step array per trace]} (the
 * arrays are timeline_json's in html.c), zlib-deflated (RFC 1950: what the
 * browser's DecompressionStream("deflate") reads) and base64-encoded into
 * <script type="application/octet-stream" id="timelines">. report.js
 * inflates it the first time a timeline is opened. */
void atr_html_timelines_block(struct atr_buf *b, const struct atr_html *h)
{
    if (!h->traces)
        return;
    struct atr_buf json = ATR_BUF_INIT;
    atr_buf_puts(&json, "{\"labels\":[");
    atr_buf_append(&json, h->labels_json.data, h->labels_json.len);
    atr_buf_puts(&json, "],\"tl\":[");
    atr_buf_append(&json, h->timeline_json.data, h->timeline_json.len);
    atr_buf_puts(&json, "]}");
    uLongf n = compressBound(json.len);
    unsigned char *z = xmalloc(n);
    /* Level 6, zlib's default: level 9 saved 2 % more bytes at 10 000
     * traces for twice the time; level 1 cost 30 % more bytes. */
    if (compress2(z, &n, (const Bytef *)json.data, json.len, 6) == Z_OK) {
        atr_buf_printf(b, "<script type=\"application/octet-stream\" id=\"timelines\" "
                          "data-bytes=\"%zu\">", json.len);
        put_base64(b, z, n);
        atr_buf_puts(b, "</script>\n");
    }
    free(z);
    atr_buf_release(&json);
}
