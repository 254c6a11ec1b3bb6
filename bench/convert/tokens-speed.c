/* tokens-speed.c - in-process speed of the block hasher and token estimator
 * on a file's first 32 MiB, fed in 3000-byte pieces (best of 7 passes).
 *
 * Builds against src/trace/tokens.c by default, or any other version
 * (git show REV:src/trace/tokens.c >/tmp/old-tokens.c):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -DTOKENS_C='"/tmp/old-tokens.c"' \
 *      bench/convert/tokens-speed.c src/util/alloc.c -lxxhash -o /tmp/tokens-speed
 *   /tmp/tokens-speed bench/convert/work/chat-512mb.ndjson
 * The token count printed must be the same for every version. */
#ifndef TOKENS_C
#define TOKENS_C "trace/tokens.c"
#endif
#include TOKENS_C
#include <stdio.h>
#include <time.h>

enum { PIECE = 3000, PASSES = 7 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (!f) {
        fprintf(stderr, "usage: tokens-speed FILE\n");
        return 2;
    }
    size_t n = (size_t)32 << 20;
    char *b = malloc(n);
    if (!b)
        return 1;
    n = fread(b, 1, n, f);
    fclose(f);
    double best = 1e9, beste = 1e9;
    uint64_t tok = 0, est = 0;
    for (int r = 0; r < PASSES; r++) {
        struct atr_blockhash h;
        atr_blockhash_init(&h, 16);
        double t0 = now();
        for (size_t o = 0; o + PIECE <= n; o += PIECE)
            atr_blockhash_feed(&h, b + o, PIECE);
        double t = now() - t0;
        best = t < best ? t : best;
        tok = h.tokens;
        atr_blockhash_release(&h);
        t0 = now();
        est = 0;
        for (size_t o = 0; o + PIECE <= n; o += PIECE)
            est += atr_tokens_estimate(b + o, PIECE);
        t = now() - t0;
        beste = t < beste ? t : beste;
    }
    printf("feed %.0f MB/s  estimate %.0f MB/s  tokens %llu%s\n", (double)n / best / 1e6,
           (double)n / beste / 1e6, (unsigned long long)tok, est == tok ? "" : " (MISMATCH)");
    free(b);
    return est != tok;
}
