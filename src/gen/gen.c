/* gen.c - the generator: arrivals, synthetic text, chat and request traces
 * (swe traces are in gen-swe.c; distributions in docs/gen.md). */
#include "gen/gen-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

/* Lowercase words of at most 7 letters: " word" is exactly one estimated
 * token (a word piece is a blank plus up to 7 letters), which is what lets
 * `--kind requests` hit exact token counts. */
static const char *const vocab[] = {
    "the", "value", "return", "self", "import", "class", "def", "error", "test",
    "file", "data", "path", "config", "parser", "result", "none", "true", "false",
    "list", "dict", "string", "index", "object", "method", "module", "field",
    "format", "check", "update", "create", "delete", "filter", "query", "model",
    "schema", "request", "client", "server", "handle", "event", "buffer", "stream",
    "token", "cache", "block", "loop", "async", "await", "raise", "except", "assert",
    "expect", "should", "when", "with", "from", "into", "each", "that", "this",
    "then", "else", "only", "after", "before", "while", "case", "type", "name",
    "key", "items", "count", "size", "length", "offset", "line", "column", "start",
    "end", "first", "last", "next", "prev", "node", "tree", "graph", "edge", "state",
    "status", "output", "input", "message", "warning", "debug", "info", "trace",
    "stack", "frame", "call", "args", "kwargs", "param", "option", "flag", "default",
    "env", "setup", "build", "install", "package", "version", "depend", "fix", "bug",
    "issue", "patch", "change", "diff", "commit", "branch", "merge", "run", "pass",
    "fail", "skip", "mark", "unit", "scope", "array", "number", "float", "integer",
};
#define VOCAB_N (sizeof vocab / sizeof *vocab)

const char *gen_word(struct atr_rng *r)
{
    return vocab[atr_rng_below(r, VOCAB_N)];
}

void gen_words(struct atr_buf *b, struct atr_rng *r, uint64_t n, unsigned line_words)
{
    for (uint64_t k = 0; k < n; k++) {
        bool line_start = b->len == 0 || b->data[b->len - 1] == '\n';
        if (!line_start)
            atr_buf_putc(b, ' ');
        atr_buf_puts(b, gen_word(r));
        if (line_words && (k + 1) % line_words == 0)
            atr_buf_putc(b, '\n');
    }
}

int64_t gen_llm_ms(int64_t input_tokens, int64_t output_tokens)
{
    return input_tokens * 3 / 200 + 25 * output_tokens;
}

void gen_add(struct atr_convo *c, const char *role, const struct atr_buf *b)
{
    atr_convo_add(c, role, b->data ? b->data : "", b->len);
}

bool atr_gen_kind_parse(const char *name, enum atr_gen_kind *out)
{
    static const char *const names[] = {"swe", "chat", "requests"};
    for (int k = 0; k < 3; k++)
        if (strcmp(name, names[k]) == 0) {
            *out = (enum atr_gen_kind)k;
            return true;
        }
    return false;
}

const char *atr_gen_kind_name(enum atr_gen_kind kind)
{
    return kind == ATR_GEN_SWE ? "swe" : kind == ATR_GEN_CHAT ? "chat" : "requests";
}

/* ---- shared texts ---- */

/* Tokens atr_convo puts around a message of this role (measured, not
 * assumed, so a change of the framing in convo.c cannot break exactness). */
static uint64_t frame_tokens(const char *role)
{
    struct atr_trace t = ATR_TRACE_INIT;
    struct atr_convo c;
    atr_convo_init(&c, &t, false);
    atr_convo_add(&c, role, "", 0);
    uint64_t n = (uint64_t)atr_convo_llm(&c, "", 0)->input_tokens;
    atr_convo_release(&c);
    atr_trace_release(&t);
    return n;
}

static void fixed_text(struct atr_buf *b, uint64_t stream, uint64_t words, unsigned line)
{
    struct atr_rng r;
    atr_rng_seed(&r, GEN_FIXED_SEED, stream);
    gen_words(b, &r, words, line);
}

/* --shared-prefix P: the user message starts with P - (its framing's head)
 * words common to every request, so exactly the first P prompt tokens are
 * shared. The head is what convo.h documents: "<|role|>\n" before the text. */
static int prepare_requests(struct atr_gen *g, struct atr_error *err)
{
    struct atr_gen_opts *o = &g->o;
    g->user_frame = frame_tokens("user");
    g->user_head = atr_tokens_estimate("<|user|>\n", 9);
    if (o->shared_prefix && o->shared_prefix < g->user_head)
        return atr_error_set(err, "--shared-prefix must be at least %llu tokens (the "
                             "message framing) or 0", (unsigned long long)g->user_head);
    uint64_t fixed = o->shared_prefix ? o->shared_prefix + g->user_frame - g->user_head
                                      : g->user_frame;
    if (o->input_tokens <= fixed)
        return atr_error_set(err, "--input-tokens must be more than %llu (%s%llu tokens of "
                             "message framing)", (unsigned long long)fixed,
                             o->shared_prefix ? "the shared prefix plus " : "",
                             (unsigned long long)(fixed - o->shared_prefix));
    g->fixed_tokens = fixed;
    if (o->shared_prefix) {
        struct atr_rng r;
        atr_rng_seed(&r, o->seed, UINT64_MAX - 1);
        gen_words(&g->shared, &r, o->shared_prefix - g->user_head, 0);
    }
    return 0;
}

struct atr_gen *atr_gen_new(const struct atr_gen_opts *opts, struct atr_error *err)
{
    struct atr_gen *g = xcalloc(1, sizeof *g);
    g->o = *opts;
    if (!g->o.block_size)
        g->o.block_size = ATR_DEFAULT_BLOCK_SIZE;
    if (!g->o.input_tokens)
        g->o.input_tokens = 200;
    if (!g->o.output_tokens)
        g->o.output_tokens = 64;
    if (g->o.input_tokens_max < g->o.input_tokens)
        g->o.input_tokens_max = g->o.input_tokens;
    if (g->o.output_tokens_max < g->o.output_tokens)
        g->o.output_tokens_max = g->o.output_tokens;
    atr_rng_seed(&g->arrivals, g->o.seed, UINT64_MAX);
    if (g->o.kind == ATR_GEN_REQUESTS && prepare_requests(g, err) < 0) {
        atr_gen_free(g);
        return NULL;
    }
    /* ~2000 words in lines of 12: about 2170 estimated tokens. */
    if (g->o.kind == ATR_GEN_SWE)
        fixed_text(&g->swe_system, 1, 2000, 12);
    static const uint64_t chat_words[GEN_CHAT_SYSTEMS] = {30, 120, 400, 900};
    if (g->o.kind == ATR_GEN_CHAT)
        for (int k = 0; k < GEN_CHAT_SYSTEMS; k++)
            fixed_text(&g->chat_system[k], 100 + (uint64_t)k, chat_words[k], 14);
    return g;
}

void atr_gen_free(struct atr_gen *g)
{
    if (!g)
        return;
    atr_buf_release(&g->swe_system);
    for (int k = 0; k < GEN_CHAT_SYSTEMS; k++)
        atr_buf_release(&g->chat_system[k]);
    atr_buf_release(&g->shared);
    atr_buf_release(&g->text);
    atr_buf_release(&g->reply);
    atr_buf_release(&g->cmd);
    free(g);
}

/* ---- chat ---- */

/* 2..12 user/assistant turns under one of four system prompts; the user
 * reads and types for an exponential think time between turns. */
static void chat_trace(struct atr_gen *g, struct atr_trace *t, struct atr_rng *r)
{
    struct atr_convo c;
    atr_convo_init(&c, t, g->o.keep_content);
    uint64_t sys = atr_rng_below(r, GEN_CHAT_SYSTEMS);
    gen_add(&c, "system", &g->chat_system[sys]);
    int64_t turns = atr_rng_range(r, 2, 12), t_ms = 0;
    for (int64_t k = 0; k < turns; k++) {
        atr_buf_clear(&g->text);
        gen_words(&g->text, r, (uint64_t)atr_rng_lognormal_int(r, 50, 0.8, 1, 2000), 14);
        gen_add(&c, "user", &g->text);
        atr_buf_clear(&g->reply);
        gen_words(&g->reply, r, (uint64_t)atr_rng_lognormal_int(r, 180, 0.7, 1, 4000), 14);
        struct atr_step *s = atr_convo_llm(&c, g->reply.data, g->reply.len);
        s->t_ms = t_ms;
        s->dur_ms = gen_llm_ms(s->input_tokens, s->output_tokens);
        t_ms += s->dur_ms;
        gen_add(&c, "assistant", &g->reply);
        if (k + 1 < turns)
            t_ms += (int64_t)floor(atr_rng_exponential(r, 15000));
    }
    atr_trace_meta_set_i64(t, "system_prompt", (int64_t)sys);
    atr_convo_release(&c);
}

/* ---- requests ---- */

/* A word unique to request i: "q" and six base-26 letters, one token. */
static void id_word(struct atr_buf *b, uint64_t i)
{
    char w[8] = "q";
    for (int k = 6; k >= 1; k--, i /= 26)
        w[k] = (char)('a' + i % 26);
    atr_buf_puts(b, w);
}

/* A count from lo..hi, drawn only for a range: exact counts take nothing
 * from the stream, so their traces are what they were before ranges. */
static uint64_t draw_count(struct atr_rng *r, uint64_t lo, uint64_t hi)
{
    return hi > lo ? (uint64_t)atr_rng_range(r, (int64_t)lo, (int64_t)hi) : lo;
}

/* One llm step with exactly the asked (or drawn) token counts. The user
 * message is the shared words, then request i's id word (so every prompt
 * differs from token P on, never by chance), then random words. */
static void request_trace(struct atr_gen *g, struct atr_trace *t, struct atr_rng *r,
                          uint64_t i)
{
    const struct atr_gen_opts *o = &g->o;
    uint64_t input = draw_count(r, o->input_tokens, o->input_tokens_max);
    uint64_t output = draw_count(r, o->output_tokens, o->output_tokens_max);
    struct atr_convo c;
    atr_convo_init(&c, t, o->keep_content);
    atr_buf_clear(&g->text);
    if (g->shared.len) {
        atr_buf_append(&g->text, g->shared.data, g->shared.len);
        atr_buf_putc(&g->text, ' ');
    }
    id_word(&g->text, i);
    gen_words(&g->text, r, input - g->fixed_tokens - 1, 0);
    gen_add(&c, "user", &g->text);
    atr_buf_clear(&g->reply);
    gen_words(&g->reply, r, output, 0);
    struct atr_step *s = atr_convo_llm(&c, g->reply.data, g->reply.len);
    s->t_ms = 0;
    s->dur_ms = gen_llm_ms(s->input_tokens, s->output_tokens);
    s->max_tokens = (int64_t)output;
    atr_convo_release(&c);
}

/* ---- traces ---- */

/* Poisson arrivals: the first trace at 0, then exponential gaps of mean
 * 1000 / rate ms. rate 0 or infinite puts every trace at 0. */
static int64_t next_arrival(struct atr_gen *g)
{
    int64_t now = (int64_t)floor(g->clock_ms);
    if (g->o.rate > 0 && isfinite(g->o.rate))
        g->clock_ms += atr_rng_exponential(&g->arrivals, 1000.0 / g->o.rate);
    return now;
}

static void set_header(struct atr_gen *g, struct atr_trace *t, uint64_t i)
{
    const char *kind = atr_gen_kind_name(g->o.kind);
    t->trace_id = atr_arena_printf(&t->arena, "gen-%s-%llu-%06llu", kind,
                                   (unsigned long long)g->o.seed, (unsigned long long)i);
    t->source = "gen";
    t->block_size = g->o.block_size;
    t->start_ms = next_arrival(g);
    atr_trace_meta_set_str(t, "generator", "atr gen");
    atr_trace_meta_set_str(t, "kind", kind);
    atr_trace_meta_set_i64(t, "seed", (int64_t)g->o.seed);
    atr_trace_meta_set_str(t, "model", "synthetic");
}

int atr_gen_next(struct atr_gen *g, struct atr_trace *t)
{
    if (g->next >= g->o.traces)
        return 0;
    uint64_t i = g->next++;
    atr_trace_clear(t);
    set_header(g, t, i);
    struct atr_rng r;
    atr_rng_seed(&r, g->o.seed, i);
    switch (g->o.kind) {
    case ATR_GEN_SWE: gen_swe_trace(g, t, &r); break;
    case ATR_GEN_CHAT: chat_trace(g, t, &r); break;
    case ATR_GEN_REQUESTS: request_trace(g, t, &r, i); break;
    }
    return 1;
}
