/* fuzz-trace-lean.c - libFuzzer target: the atr-trace reader without a
 * tree (opts.lean) against the tree reader on the same bytes. Both must
 * give the same traces (every field but the JSON nodes) and the same
 * errors; any difference aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"

static int same_str(const char *a, const char *b)
{
    return (!a || !b) ? a == b : strcmp(a, b) == 0;
}

static int same_step(const struct atr_step *a, const struct atr_step *b)
{
    uint32_t own = a->n_hash_ids - a->prefix_blocks;
    return a->i == b->i && a->kind == b->kind && a->t_ms == b->t_ms && a->dur_ms == b->dur_ms &&
           a->input_tokens == b->input_tokens && a->output_tokens == b->output_tokens &&
           a->cached_tokens == b->cached_tokens && a->max_tokens == b->max_tokens &&
           a->recorded_input_tokens == b->recorded_input_tokens &&
           a->recorded_output_tokens == b->recorded_output_tokens &&
           a->estimated_input_tokens == b->estimated_input_tokens &&
           a->estimated_output_tokens == b->estimated_output_tokens &&
           a->bytes == b->bytes && a->old_bytes == b->old_bytes &&
           a->timeout_ms == b->timeout_ms && a->exit_code == b->exit_code &&
           same_str(a->agent, b->agent) && same_str(a->tool, b->tool) &&
           same_str(a->command, b->command) && same_str(a->action, b->action) &&
           same_str(a->path, b->path) && same_str(a->file_op, b->file_op) &&
           same_str(a->selector, b->selector) && same_str(a->url, b->url) &&
           same_str(a->cwd, b->cwd) && same_str(a->command_head, b->command_head) &&
           a->tokens_from == b->tokens_from && a->output_tokens_from == b->output_tokens_from &&
           a->n_hash_ids == b->n_hash_ids && a->prefix_step == b->prefix_step &&
           a->prefix_blocks == b->prefix_blocks && !a->hash_ids == !b->hash_ids &&
           (!own || memcmp(a->hash_ids, b->hash_ids, own * sizeof *a->hash_ids) == 0) &&
           !a->parents == !b->parents && a->n_parents == b->n_parents &&
           (!a->n_parents || memcmp(a->parents, b->parents, a->n_parents * sizeof *a->parents) == 0);
}

static int same_trace(const struct atr_trace *a, const struct atr_trace *b)
{
    if (!same_str(a->trace_id, b->trace_id) || !same_str(a->source, b->source) ||
        a->start_ms != b->start_ms || a->block_size != b->block_size || a->n_steps != b->n_steps)
        return 0;
    for (size_t k = 0; k < a->n_steps; k++)
        if (!same_step(&a->steps[k], &b->steps[k]))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct atr_read_opts tree = {.max_line = 1 << 20, .compact_ids = size & 1,
                                 .max_depth = size & 2 ? 4 : 0};
    struct atr_read_opts lean = tree;
    lean.lean = true;
    struct atr_error ea, eb;
    struct atr_reader *ra = atr_reader_open_input(atr_input_open_mem(data, size, "fuzz"), "atr",
                                                  &tree, &ea);
    struct atr_reader *rb = atr_reader_open_input(atr_input_open_mem(data, size, "fuzz"), "atr",
                                                  &lean, &eb);
    if (!ra || !rb)
        abort();
    struct atr_trace a = ATR_TRACE_INIT, b = ATR_TRACE_INIT;
    for (int n = 0; n < 1000; n++) {
        int x = atr_reader_next(ra, &a, &ea), y = atr_reader_next(rb, &b, &eb);
        if (x != y || (x < 0 && strcmp(ea.msg, eb.msg) != 0) || (x > 0 && !same_trace(&a, &b)))
            abort();
        if (x <= 0)
            break;
    }
    atr_trace_release(&a);
    atr_trace_release(&b);
    atr_reader_close(ra);
    atr_reader_close(rb);
    return 0;
}
