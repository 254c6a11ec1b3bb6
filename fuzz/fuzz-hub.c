/* fuzz-hub.c - libFuzzer target for the Hugging Face Hub answers atr_hub_list
 * reads: a tree page (the first byte even) or a revision (odd). Whatever the
 * server sends, parsing ends in 0 or one error, and every file it accepts
 * has a path that stays inside -o DIR and a checksum to verify. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub.h"

static void must(int ok)
{
    if (!ok)
        abort();
}

static int hex_of(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    return strspn(s, "0123456789abcdef") == n;
}

/* Inside DIR: relative, no empty, "." or ".." component. */
static int path_inside(const char *p)
{
    if (!*p || *p == '/')
        return 0;
    for (const char *c = p;;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (!c[n])
            return 1;
        c += n + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct atr_hub_repo r = {0};
    struct atr_error err = {0};
    const char *body = (const char *)data + 1;
    int rc = data[0] & 1 ? atr_hub_parse_revision(&r, body, size - 1, "u", &err)
                         : atr_hub_parse_tree(&r, body, size - 1, "u", &err);
    must(rc == 0 || rc == -1);
    if (rc < 0)
        must(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof err.msg) != NULL);
    if (rc == 0 && (data[0] & 1))
        must(hex_of(r.commit, 40));
    for (size_t i = 0; i < r.n; i++) {
        const struct atr_hub_file *f = &r.files[i];
        must(path_inside(f->path));
        must(hex_of(f->sha256, 64) || (!f->sha256[0] && hex_of(f->oid, 40)));
    }
    atr_hub_repo_release(&r);
    return 0;
}
