/* fuzz-cdp.c - libFuzzer target for the DevTools pipe client
 * (browser/cdp.h): any bytes as what a browser wrote on its fd 4, split
 * at NUL bytes into messages, each parsed and dispatched (replies by id,
 * events to a callback that reads their params). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "browser/cdp.h"

static void on_event(void *ctx, const char *method, const char *session,
                     const struct atr_json *params)
{
    size_t *n = ctx;
    if (!method || !session)
        abort();
    *n += strlen(method) + strlen(session);
    if (params && params->type != ATR_JSON_OBJECT)
        abort();
    (void)atr_json_get_str(params, "requestId", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_cdp *c = atr_cdp_new(-1, -1);
    size_t seen = 0;
    atr_cdp_on_event(c, on_event, &seen);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);
        atr_cdp_feed(c, p, len);
        p += len + 1;
    }
    atr_cdp_free(c);
    return 0;
}
