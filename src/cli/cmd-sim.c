/* cmd-sim.c - `atr sim run`: the llm steps of traces through the engine
 * model in virtual time, reported as `vllm bench serve` reports a run. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd.h"
#include "llm/metrics.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/heap.h"
#include "trace/reader.h"
#include "util/output.h"

static const char help[] =
    "usage: atr sim run [OPTIONS] TRACE... --profile GPU/MODEL\n"
    "\n"
    "Runs the llm steps of traces through atr's serving-engine model in\n"
    "virtual time (docs/sim.md, docs/sim-engine.md): continuous batching,\n"
    "chunked prefill, paged KV cache, a prefix cache over the steps' hash_ids\n"
    "with LRU eviction, preemption, and a roofline cost per iteration. Each\n"
    "trace is a session: its first llm step arrives at the trace's start_ms,\n"
    "each next one when the previous finished plus the recorded duration of\n"
    "the tool steps between them. Prints the result block `vllm bench serve`\n"
    "prints, then the engine's own figures.\n"
    "\n"
    "options:\n"
    "  -p, --profile GPU/MODEL   e.g. h100/llama-3.1-8b (required)\n"
    "      --tp N                tensor parallel degree (default 1)\n"
    "      --max-num-seqs N      default 256\n"
    "      --max-num-batched-tokens N   default 8192\n"
    "      --no-prefix-caching   disable the prefix cache\n"
    "      --rate inf            every session starts at once (instead of its\n"
    "                            start_ms); other schedules are not built yet\n"
    "      --save-result FILE    the result JSON (vLLM's --save-result keys + \"atr\")\n"
    "      --requests-out FILE   one line per request\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block\n"
    "\n"
    "GPUs: h100 h200 a100-80g l4 rtx3090 rtx4090. Models: llama-3.1-8b\n"
    "llama-3.2-1b llama-3.2-3b llama-3-70b qwen3-4b qwen3-4b-awq qwen3-8b\n"
    "qwen1.5-0.5b. Not yet: atr sim serve, Poisson/gamma schedules.\n";

/* One llm step of a session, copied out of its trace. */
struct turn {
    uint32_t prompt, output;
    uint64_t *ids;               /* malloc; NULL when the trace's blocks differ */
    uint32_t n_ids;
    double think_s;              /* tool time recorded before this turn */
};

struct session {
    struct turn *turns;
    size_t n, next;
    double start_s;
};

struct sim_args {
    const char *profile, *save, *requests_out, *from;
    unsigned tp;
    struct atr_engine_cfg cfg;
    bool quiet;
    bool all_at_once;            /* --rate inf: every session starts at 0 */
};

static double profile_cost(void *ctx, const struct atr_iter_work *w)
{
    return atr_iter_seconds(ctx, w);
}

/* Copies t's llm steps into a session. */
static void load_session(const struct atr_trace *t, unsigned block_size, struct session *s)
{
    memset(s, 0, sizeof *s);
    s->start_s = t->start_ms > 0 ? (double)t->start_ms / 1000.0 : 0;
    s->turns = calloc(t->n_steps ? t->n_steps : 1, sizeof *s->turns);
    if (!s->turns)
        abort();
    double tool_ms = 0;
    for (size_t k = 0; k < t->n_steps; k++) {
        const struct atr_step *st = &t->steps[k];
        if (st->kind == ATR_STEP_TOOL) {
            tool_ms += st->dur_ms > 0 ? (double)st->dur_ms : 0;
            continue;
        }
        if (st->input_tokens <= 0)
            continue;
        struct turn *u = &s->turns[s->n++];
        u->prompt = (uint32_t)st->input_tokens;
        u->output = st->output_tokens > 0 ? (uint32_t)st->output_tokens : 1;
        u->think_s = tool_ms / 1000.0;
        tool_ms = 0;
        if (st->n_hash_ids && t->block_size == block_size) {
            u->ids = malloc(st->n_hash_ids * sizeof *u->ids);
            if (!u->ids)
                abort();
            memcpy(u->ids, st->hash_ids, st->n_hash_ids * sizeof *u->ids);
            u->n_ids = st->n_hash_ids;
        }
    }
}

struct run {
    struct session *sessions;
    size_t n_sessions;
    const struct atr_sim_record **done;  /* in finish order; engine-owned */
    size_t n_done, cap_done;
    struct atr_heap arrivals;    /* (time, session) of turns not yet added */
    uint64_t next_id;
    struct atr_engine *engine;
};

static int add_turn(struct run *rn, struct session *s, double t, struct atr_error *err)
{
    const struct turn *u = &s->turns[s->next];
    struct atr_sim_req req = {
        .id = rn->next_id++, .arrival = t, .prompt_tokens = u->prompt,
        .output_tokens = u->output, .hash_ids = u->ids, .n_hash_ids = u->n_ids,
    };
    return atr_engine_add(rn->engine, &req, err) ? 0 : -1;
}

/* Requests are ids in add order; the session of id is found through this. */
struct id_map {
    size_t *session;
    size_t cap;
};

static void map_set(struct id_map *m, uint64_t id, size_t s)
{
    if (id >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        while (cap <= id)
            cap *= 2;
        m->session = realloc(m->session, cap * sizeof *m->session);
        if (!m->session)
            abort();
        m->cap = cap;
    }
    m->session[id] = s;
}

/* Drives the engine: turns enter at their time, a session's next turn when
 * its previous one finished plus the recorded tool time. */
static int drive(struct run *rn, struct atr_error *err)
{
    struct id_map map = {0};
    int rc = 0;
    for (size_t i = 0; i < rn->n_sessions && rc == 0; i++)
        if (rn->sessions[i].n)
            rc = atr_heap_push(&rn->arrivals, rn->sessions[i].start_s, &rn->sessions[i], err) <
                 0 ? -1 : 0;
    while (rc == 0) {
        const struct atr_heap_item *top = atr_heap_peek(&rn->arrivals);
        double t_add = top ? top->t : INFINITY, t_eng = atr_engine_next_time(rn->engine);
        if (isinf(t_add) && isinf(t_eng))
            break;
        if (t_add <= t_eng) {
            struct atr_heap_item it;
            atr_heap_pop(&rn->arrivals, &it);
            struct session *s = it.data;
            map_set(&map, rn->next_id, (size_t)(s - rn->sessions));
            rc = add_turn(rn, s, it.t, err);
            continue;
        }
        if ((rc = atr_engine_step(rn->engine, err)) < 0)
            break;
        size_t n;
        struct atr_sim_record *const *done = atr_engine_finished(rn->engine, &n);
        for (size_t k = 0; k < n && rc == 0; k++) {
            if (rn->n_done == rn->cap_done) {
                rn->cap_done = rn->cap_done ? rn->cap_done * 2 : 1024;
                rn->done = realloc(rn->done, rn->cap_done * sizeof *rn->done);
                if (!rn->done)
                    abort();
            }
            rn->done[rn->n_done++] = done[k];
            struct session *s = &rn->sessions[map.session[done[k]->id]];
            if (++s->next < s->n)
                rc = atr_heap_push(&rn->arrivals, done[k]->finish + s->turns[s->next].think_s, s,
                                   err) < 0 ? -1 : 0;
        }
    }
    free(map.session);
    return rc < 0 ? -1 : 0;
}

static int load_traces(int argc, char **argv, const struct sim_args *a, struct run *rn,
                       struct atr_error *err)
{
    struct atr_read_opts ro = {0};
    struct atr_trace t = ATR_TRACE_INIT;
    size_t cap = 0;
    int rc = 0;
    for (int i = optind; i < argc && rc == 0; i++) {
        struct atr_reader *r = atr_reader_open(argv[i], a->from, &ro, err);
        if (!r)
            return -1;
        while ((rc = atr_reader_next(r, &t, err)) == 1) {
            if (rn->n_sessions == cap) {
                cap = cap ? cap * 2 : 256;
                rn->sessions = realloc(rn->sessions, cap * sizeof *rn->sessions);
                if (!rn->sessions)
                    abort();
            }
            load_session(&t, a->cfg.block_size, &rn->sessions[rn->n_sessions]);
            if (a->all_at_once)
                rn->sessions[rn->n_sessions].start_s = 0;
            rn->n_sessions++;
        }
        rc = rc < 0 ? -1 : 0;
        atr_reader_close(r);
    }
    atr_trace_release(&t);
    return rc;
}

/* The engine's records as the benchmark metrics see a real run: sent at
 * arrival, a chunk per token. */
static struct atr_llm_record *to_records(const struct run *rn)
{
    struct atr_llm_record *v = calloc(rn->n_done ? rn->n_done : 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < rn->n_done; i++) {
        const struct atr_sim_record *r = rn->done[i];
        v[i] = (struct atr_llm_record){
            .id = r->id, .scheduled_s = r->arrival, .send_s = r->arrival, .start_s = r->arrival,
            .end_s = r->finish, .chunk_s = r->token_times, .n_chunks = r->output_tokens,
            .prompt_tokens = r->prompt_tokens, .output_tokens = r->output_tokens,
            .cached_tokens = r->cached_tokens, .success = true,
        };
    }
    return v;
}

static int write_file(const char *path, const struct atr_buf *b, struct atr_error *err)
{
    struct atr_output *o = atr_output_open(path, err);
    if (!o)
        return -1;
    if (atr_output_write(o, b->data, b->len, err) < 0) {
        atr_output_abort(o);
        return -1;
    }
    return atr_output_commit(o, err);
}

static int report(const struct sim_args *a, const struct atr_profile *p, const struct run *rn,
                  struct atr_error *err)
{
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y%m%d-%H%M%S", gmtime(&now));
    struct atr_llm_bench_config cfg = {
        .date = date, .backend = "sim", .model_id = p->model->hf_name,
        .num_prompts = (int64_t)rn->n_done, .request_rate = a->all_at_once ? INFINITY : 0,
        .burstiness = 1.0,
        .slo_ttft_ms = -1, .slo_tpot_ms = -1, .slo_e2el_ms = -1,
    };
    struct atr_llm_record *recs = to_records(rn);
    struct atr_llm_summary sum;
    struct atr_buf b = ATR_BUF_INIT;
    int rc = atr_llm_summarize(recs, rn->n_done, &cfg, &sum, err);
    if (rc == 0 && a->save) {
        atr_llm_write_result_json(&b, &sum, &cfg);
        atr_buf_putc(&b, '\n');
        rc = write_file(a->save, &b, err);
    }
    if (rc == 0 && a->requests_out) {
        atr_buf_clear(&b);
        for (size_t i = 0; i < rn->n_done; i++)
            atr_llm_write_request_line(&b, &recs[i]);
        rc = write_file(a->requests_out, &b, err);
    }
    if (rc == 0 && !a->quiet) {
        atr_buf_clear(&b);
        atr_llm_write_block(&b, &sum, &cfg);
        fputs(b.data ? b.data : "", stdout);
        struct atr_engine_stats st;
        atr_engine_get_stats(rn->engine, &st);
        printf("engine (%s/%s, tp %u): %llu iterations, mean batch %.1f, prefix cache hit "
               "rate %.1f%%, KV peak %u of %u blocks, %llu preemptions, %llu evictions\n",
               p->gpu->name, p->model->name, p->tp, (unsigned long long)st.iterations,
               st.batch_mean, 100 * st.prefix_hit_rate, st.kv_blocks_peak, st.kv_blocks_total,
               (unsigned long long)st.preemptions, (unsigned long long)st.evictions);
    }
    if (rc == 0)
        atr_llm_summary_release(&sum);
    atr_buf_release(&b);
    free(recs);
    return rc;
}

static int parse_args(int argc, char **argv, struct sim_args *a)
{
    static const struct option longs[] = {
        {"profile", required_argument, NULL, 'p'}, {"tp", required_argument, NULL, 'T'},
        {"max-num-seqs", required_argument, NULL, 'S'},
        {"max-num-batched-tokens", required_argument, NULL, 'B'},
        {"no-prefix-caching", no_argument, NULL, 'N'},
        {"save-result", required_argument, NULL, 'R'},
        {"requests-out", required_argument, NULL, 'O'}, {"from", required_argument, NULL, 'f'},
        {"rate", required_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c;
    atr_engine_cfg_defaults(&a->cfg);
    a->tp = 1;
    while ((c = getopt_long(argc, argv, "p:f:q", longs, NULL)) != -1) {
        switch (c) {
        case 'p': a->profile = optarg; break;
        case 'T':
            if (!cli_parse_uint(optarg, 1, 64, &v))
                return cli_usage("sim run", "--tp wants 1..64");
            a->tp = (unsigned)v;
            break;
        case 'S':
            if (!cli_parse_uint(optarg, 1, 65536, &v))
                return cli_usage("sim run", "--max-num-seqs wants 1..65536");
            a->cfg.max_num_seqs = (unsigned)v;
            break;
        case 'B':
            if (!cli_parse_uint(optarg, 16, 1 << 24, &v))
                return cli_usage("sim run", "--max-num-batched-tokens wants 16..16777216");
            a->cfg.max_num_batched_tokens = (unsigned)v;
            break;
        case 'N': a->cfg.prefix_caching = false; break;
        case 'r':
            if (strcmp(optarg, "inf") != 0)
                return cli_usage("sim run", "--rate: only inf is supported so far");
            a->all_at_once = true;
            break;
        case 'R': a->save = optarg; break;
        case 'O': a->requests_out = optarg; break;
        case 'f':
            if (!atr_format_find(optarg))
                return cli_usage("sim run", "unknown format '%s'", optarg);
            a->from = optarg;
            break;
        case 'q': a->quiet = true; break;
        default: return cli_usage("sim run", "unknown option");
        }
    }
    if (!a->profile)
        return cli_usage("sim run", "missing --profile GPU/MODEL");
    if (optind >= argc)
        return cli_usage("sim run", "missing TRACE");
    return EXIT_OK;
}

static void run_free(struct run *rn)
{
    for (size_t i = 0; i < rn->n_sessions; i++) {
        for (size_t k = 0; k < rn->sessions[i].n; k++)
            free(rn->sessions[i].turns[k].ids);
        free(rn->sessions[i].turns);
    }
    free(rn->sessions);
    free(rn->done);
    atr_heap_release(&rn->arrivals);
    atr_engine_free(rn->engine);
}

static int run(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return cli_usage("sim", "wants a mode: atr sim run ...");
    argc--;
    argv++;
    struct sim_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc;
    struct atr_error err;
    struct atr_profile p;
    if (atr_profile_find(a.profile, a.tp, &p, &err) < 0)
        return cli_fail_err(&err);
    a.cfg.iter_seconds = profile_cost;
    a.cfg.cost_ctx = &p;
    a.cfg.kv_capacity_tokens = p.kv_capacity_tokens;
    struct run rn;
    memset(&rn, 0, sizeof rn);
    atr_heap_init(&rn.arrivals);
    rn.engine = atr_engine_new(&a.cfg, &err);
    rc = rn.engine ? 0 : -1;
    if (rc == 0)
        rc = load_traces(argc, argv, &a, &rn, &err);
    if (rc == 0)
        rc = drive(&rn, &err);
    if (rc == 0)
        rc = report(&a, &p, &rn, &err);
    run_free(&rn);
    return rc < 0 ? cli_fail_err(&err) : EXIT_OK;
}

const struct atr_cmd cmd_sim_entry = {
    "sim", "`sim run`: llm steps through the serving-engine model in virtual time", help, run,
};
