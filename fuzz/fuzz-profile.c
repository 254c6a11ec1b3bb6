/* fuzz-profile.c - libFuzzer target for simulator profile files: any bytes
 * as a user GPU profile (first byte even) or model profile (odd) in an
 * ATR_PROFILE_PATH directory, loaded over the built-ins, then a lookup and
 * an iteration cost when it was accepted. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/cost.h"

static char dir[64];

static void remove_dir(void)
{
    char sub[96];
    snprintf(sub, sizeof sub, "%s/gpus", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/models", dir);
    rmdir(sub);
    rmdir(dir);
}

static void make_dir(void)
{
    if (dir[0])
        return;
    atexit(remove_dir);
    snprintf(dir, sizeof dir, "/tmp/atr-fuzz-profile-%d", (int)getpid());
    char sub[96];
    mkdir(dir, 0700);
    snprintf(sub, sizeof sub, "%s/gpus", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/models", dir);
    mkdir(sub, 0700);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    make_dir();
    bool gpu = (data[0] & 1) == 0;
    char path[128];
    snprintf(path, sizeof path, "%s/%s/fz.json", dir, gpu ? "gpus" : "models");
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    struct atr_error err;
    if (atr_profiles_load(dir, &err) == 0) {
        struct atr_profile p;
        if (atr_profile_find(gpu ? "fz/llama-3.1-8b" : "h100/fz", 1, &p, &err) == 0) {
            struct atr_iter_work w = { 0 };
            atr_iter_add_prefill(&w, 512, 128);
            atr_iter_add_decode(&w, 1024);
            atr_iter_seconds(&p, &w);
        }
    }
    unlink(path);
    return 0;
}
