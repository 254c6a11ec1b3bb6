/* fuzz-snapshot.c - libFuzzer target for the DOM snapshot renderer
 * (browser/snapshot.h), which reads untrusted Playwright traces: the
 * input's first line names the snapshot to render, every other line is a
 * *.trace line (frame-snapshot events kept, the rest ignored). Rendering
 * must end in 0 with a NUL-terminated document, or -1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "browser/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    const char *nl = memchr(p, '\n', size);
    size_t name_len = nl ? (size_t)(nl - p) : size;
    char *name = malloc(name_len + 1);
    memcpy(name, p, name_len);
    name[name_len] = '\0';
    struct atr_snapshots *ss = atr_snapshots_new();
    for (p = nl ? nl + 1 : end; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
        struct atr_json_err jerr;
        (void)atr_snapshots_add_line(ss, p, n, &jerr);
        p += n + 1;
    }
    struct atr_buf out = ATR_BUF_INIT;
    if (atr_snapshots_render(ss, name, &out) == 0 && out.data && strlen(out.data) != out.len)
        abort();
    atr_buf_release(&out);
    atr_snapshots_free(ss);
    free(name);
    return 0;
}
