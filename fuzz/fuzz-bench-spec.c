/* fuzz-bench-spec.c - libFuzzer target for `atr bench` specs: any bytes as
 * a spec, then, when accepted, every template of every item and variant
 * expanded as the dry-run plan does, and every run's file name built: an
 * accepted spec whose names the runner would refuse aborts. Seeds:
 * tests/data/bench-spec. */
#include <stdint.h>
#include <stdlib.h>

#include "bench/run.h"
#include "bench/spec.h"

static void expand(const char *tmpl, const struct atr_bench_vars *v, bool shell)
{
    struct atr_error err;
    if (tmpl)
        free(atr_bench_expand(tmpl, v, shell, &err));
}

static void expand_item(const struct atr_bench_spec *s, const struct atr_bench_item *it)
{
    struct atr_bench_vars v = {atr_bench_model(s, it, NULL), it->human_commit_full,
                               it->parent_commit, NULL, s->workdir, s->port, "/spec"};
    for (size_t k = 0; k < it->n_variants; k++) {
        const struct atr_bench_variant *var = it->variants[k];
        v.patch = var->per_agent && it->n_agents ? it->agents[0].patch : NULL;
        expand(var->server, &v, true);
        expand(var->prepare, &v, true);
        expand(var->ready_url, &v, false);
        char name[256];
        for (size_t a = 0; a <= (var->per_agent ? it->n_agents : 0); a++)
            if (atr_bench_run_name(name, sizeof name, it->human_commit, var->name,
                                   a ? it->agents[a - 1].name : NULL) < 0)
                abort();
    }
    v.patch = NULL;
    expand(s->cleanup, &v, true);
    expand(s->workload.command, &v, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_error err;
    struct atr_bench_spec *s =
        atr_bench_spec_parse((const char *)data, size, "dir/fuzz.json", &err);
    for (size_t i = 0; s && i < s->n_items; i++)
        expand_item(s, &s->items[i]);
    atr_bench_spec_free(s);
    return 0;
}
