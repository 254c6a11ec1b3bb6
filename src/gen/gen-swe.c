/* gen-swe.c - synthetic SWE-agent-style traces: one shared system prompt, a
 * task per trace, then turns of one llm step and one tool step, with the
 * command mix, output lengths, durations and exit codes of docs/gen.md;
 * optionally sub-agents that fork off a turn and join the next one. */
#include "gen/gen-impl.h"

#include <stdio.h>
#include <string.h>

enum swe_cmd {
    CMD_CAT, CMD_SED, CMD_GREP, CMD_FIND, CMD_LS, CMD_GIT_DIFF, CMD_GIT_STATUS,
    CMD_REPRO, CMD_PYTEST, CMD_PIP, CMD_PY_C, CMD_EDIT, CMD_CREATE, CMD_N
};

/* Per command kind: mix weight, output tokens and duration (lognormal
 * median, sigma), and the chance of a non-zero exit. The table is the
 * documentation's table; keep the two in step. */
struct swe_cmd_model {
    uint32_t weight;
    double out_median, out_sigma;
    double dur_median_ms, dur_sigma;
    double fail_p;
    int fail_code;
};

static const struct swe_cmd_model models[CMD_N] = {
    [CMD_CAT]        = {10, 500, 0.7, 4, 0.5, 0.02, 1},
    [CMD_SED]        = {8, 250, 0.5, 4, 0.5, 0.0, 0},
    [CMD_GREP]       = {12, 300, 1.0, 40, 0.8, 0.15, 1},
    [CMD_FIND]       = {5, 80, 0.8, 60, 0.8, 0.0, 0},
    [CMD_LS]         = {5, 50, 0.5, 3, 0.5, 0.02, 2},
    [CMD_GIT_DIFF]   = {4, 250, 0.9, 15, 0.5, 0.0, 0},
    [CMD_GIT_STATUS] = {2, 40, 0.5, 12, 0.5, 0.0, 0},
    [CMD_REPRO]      = {10, 80, 1.0, 900, 0.7, 0.35, 1},
    [CMD_PYTEST]     = {12, 600, 1.0, 4000, 0.9, 0.40, 1},
    [CMD_PIP]        = {3, 150, 0.6, 6000, 0.8, 0.05, 1},
    [CMD_PY_C]       = {5, 20, 0.8, 300, 0.5, 0.20, 1},
    [CMD_EDIT]       = {15, 60, 0.5, 15, 0.5, 0.0, 0},
    [CMD_CREATE]     = {3, 20, 0.3, 10, 0.5, 0.0, 0},
};

static const char *const repos[] = {
    "astropy", "django", "flask", "requests", "sympy", "xarray", "pylint",
    "sphinx", "seaborn", "pytest", "marshmallow", "sqlfluff",
};

#define SWE_MODULES 6
#define SWE_TIMEOUT_MS 120000
#define SWE_MAX_FANOUT 16

/* One agent of a trace: the main one, or a sub-agent (agent != NULL). */
struct swe_ctx {
    struct atr_gen *g;
    struct atr_trace *t;
    struct atr_rng *r;
    struct atr_convo c;
    const char *repo;
    const char *mods[SWE_MODULES];
    const char *cwd;
    int64_t t_ms;
    /* DAG mode (sub-agents asked for): the steps the agent's next step
     * waits for, and where it sits in the tree of agents. */
    bool dag;
    const char *agent;
    uint32_t depth;
    uint32_t wait[SWE_MAX_FANOUT];
    uint32_t n_wait;
    uint32_t n_subagents;        /* over the agent's whole subtree */
    uint32_t n_kids;             /* direct sub-agents so far: names them */
};

/* In DAG mode: s belongs to x's agent and waits for what x waits for;
 * the agent's next step waits for s. */
static void link_step(struct swe_ctx *x, struct atr_step *s)
{
    if (!x->dag)
        return;
    s->agent = x->agent;
    s->n_parents = x->n_wait;
    s->parents = atr_arena_alloc(&x->t->arena, (x->n_wait ? x->n_wait : 1) * sizeof *s->parents);
    memcpy(s->parents, x->wait, x->n_wait * sizeof *s->parents);
    x->wait[0] = s->i;
    x->n_wait = 1;
}

static const char *pick_mod(struct swe_ctx *x)
{
    return x->mods[atr_rng_below(x->r, SWE_MODULES)];
}

/* The shell command line of a bash kind, into b. */
static void bash_command(struct swe_ctx *x, enum swe_cmd k, struct atr_buf *b)
{
    struct atr_rng *r = x->r;
    const char *repo = x->repo;
    int64_t a, len;
    const char *mod;
    /* Every random draw is its own statement: the order in which a call's
     * arguments are evaluated is unspecified (gcc and clang differ), and
     * the output must be the same bytes whatever compiled it. */
    switch (k) {
    case CMD_CAT: atr_buf_printf(b, "cat %s/%s.py", repo, pick_mod(x)); break;
    case CMD_SED:
        a = atr_rng_range(r, 1, 400);
        len = atr_rng_range(r, 20, 80);
        mod = pick_mod(x);
        atr_buf_printf(b, "sed -n '%lld,%lldp' %s/%s.py", (long long)a, (long long)(a + len),
                       repo, mod);
        break;
    case CMD_GREP:
        if (atr_rng_chance(r, 0.5))
            atr_buf_printf(b, "grep -rn \"%s\" %s/", gen_word(r), repo);
        else
            atr_buf_printf(b, "grep -rn \"def %s\" %s --include=*.py", gen_word(r), repo);
        break;
    case CMD_FIND: atr_buf_printf(b, "find . -name \"*%s*\" -type f", gen_word(r)); break;
    case CMD_LS:
        atr_buf_printf(b, atr_rng_chance(r, 0.5) ? "ls -la %s/" : "ls %s", repo);
        break;
    case CMD_GIT_DIFF: atr_buf_puts(b, "git diff"); break;
    case CMD_GIT_STATUS: atr_buf_puts(b, "git status"); break;
    case CMD_REPRO: atr_buf_puts(b, "python reproduce.py"); break;
    case CMD_PYTEST:
        if (atr_rng_chance(r, 0.5))
            atr_buf_printf(b, "python -m pytest tests/test_%s.py -x -q", pick_mod(x));
        else {
            mod = pick_mod(x);
            atr_buf_printf(b, "pytest tests/test_%s.py::test_%s -q", mod, gen_word(r));
        }
        break;
    case CMD_PIP:
        if (atr_rng_chance(r, 0.5))
            atr_buf_puts(b, "pip install -e .");
        else
            atr_buf_printf(b, "pip install %s", gen_word(r));
        break;
    case CMD_PY_C:
        atr_buf_printf(b, "python -c \"import %s; print(%s.__version__)\"", repo, repo);
        break;
    default: break;
    }
}

/* The model's reply: some reasoning words, then the action in a fence. For
 * edits the action carries the old and new text, as str_replace_editor's
 * arguments do, so edits cost output tokens. */
static void reply_text(struct swe_ctx *x, enum swe_cmd k, const char *path, struct atr_buf *b)
{
    struct atr_rng *r = x->r;
    atr_buf_clear(b);
    gen_words(b, r, (uint64_t)atr_rng_lognormal_int(r, 110, 0.6, 1, 2000), 14);
    atr_buf_puts(b, "\n\n```\n");
    if (k == CMD_EDIT) {
        atr_buf_printf(b, "str_replace_editor str_replace %s --old_str\n", path);
        gen_words(b, r, (uint64_t)atr_rng_lognormal_int(r, 25, 0.6, 1, 500), 8);
        atr_buf_puts(b, "\n--new_str\n");
        gen_words(b, r, (uint64_t)atr_rng_lognormal_int(r, 35, 0.6, 1, 800), 8);
    } else if (k == CMD_CREATE) {
        atr_buf_printf(b, "str_replace_editor create %s --file_text\n", path);
        gen_words(b, r, (uint64_t)atr_rng_lognormal_int(r, 60, 0.5, 5, 800), 8);
    } else {
        atr_buf_append(b, x->g->cmd.data, x->g->cmd.len);
    }
    atr_buf_puts(b, "\n```\n");
}

/* The tool step of kind k at the current time; returns its duration. */
static int64_t tool_step(struct swe_ctx *x, enum swe_cmd k, const char *path)
{
    const struct swe_cmd_model *m = &models[k];
    struct atr_step *s = atr_trace_add_step(x->t, ATR_STEP_TOOL);
    struct atr_arena *a = &x->t->arena;
    link_step(x, s);
    s->t_ms = x->t_ms;
    s->dur_ms = atr_rng_lognormal_int(x->r, m->dur_median_ms, m->dur_sigma, 1, SWE_TIMEOUT_MS);
    if (k == CMD_EDIT || k == CMD_CREATE) {
        s->tool = "editor";
        s->action = k == CMD_EDIT ? "str_replace" : "create";
        s->path = atr_arena_strdup(a, path);
        return s->dur_ms;
    }
    s->tool = "bash";
    s->command = atr_arena_strndup(a, x->g->cmd.data, x->g->cmd.len);
    s->cwd = x->cwd;
    s->timeout_ms = SWE_TIMEOUT_MS;
    s->exit_code = atr_rng_chance(x->r, m->fail_p) ? m->fail_code : 0;
    return s->dur_ms;
}

static void task_message(struct swe_ctx *x);
static void fork_subagents(struct swe_ctx *x, uint32_t fanout);

/* The llm call of a turn, at the agent's clock, which it advances. */
static void llm_step(struct swe_ctx *x)
{
    struct atr_gen *g = x->g;
    struct atr_step *s = atr_convo_llm(&x->c, g->reply.data, g->reply.len);
    link_step(x, s);
    s->t_ms = x->t_ms;
    s->dur_ms = gen_llm_ms(s->input_tokens, s->output_tokens);
    x->t_ms += s->dur_ms;
    gen_add(&x->c, "assistant", &g->reply);
}

/* Whether this turn forks sub-agents: drawn only when they were asked for,
 * so that traces without them draw what they always drew. */
static bool spawns(struct swe_ctx *x)
{
    const struct atr_gen_opts *o = &x->g->o;
    uint32_t depth = o->subagent_depth ? o->subagent_depth : 1;
    return o->subagent_prob > 0 && x->depth < depth && atr_rng_chance(x->r, o->subagent_prob);
}

/* A turn that forks: the call that hands out the sub-tasks, the sub-agents
 * in parallel, their reports back as tool messages. */
static void spawn_turn(struct swe_ctx *x)
{
    struct atr_gen *g = x->g;
    uint32_t fanout = g->o.subagent_fanout ? g->o.subagent_fanout : 2;
    atr_buf_clear(&g->reply);
    gen_words(&g->reply, x->r, (uint64_t)atr_rng_lognormal_int(x->r, 60, 0.5, 1, 1000), 14);
    atr_buf_printf(&g->reply, "\n\n```\ntask --parallel %u\n```\n", fanout);
    llm_step(x);
    fork_subagents(x, fanout);
}

/* One turn: the llm call that decides the action, then the action; its
 * output joins the conversation as a tool message. */
static void turn(struct swe_ctx *x)
{
    struct atr_gen *g = x->g;
    if (spawns(x)) {
        spawn_turn(x);
        return;
    }
    uint32_t w[CMD_N];
    for (int k = 0; k < CMD_N; k++)
        w[k] = models[k].weight;
    enum swe_cmd k = (enum swe_cmd)atr_rng_choice(x->r, w, CMD_N);
    char path[128] = "";
    if (k == CMD_EDIT)
        snprintf(path, sizeof path, "%s/%s/%s.py", x->cwd, x->repo, pick_mod(x));
    else if (k == CMD_CREATE)
        snprintf(path, sizeof path, "%s/reproduce.py", x->cwd);
    atr_buf_clear(&g->cmd);
    bash_command(x, k, &g->cmd);
    reply_text(x, k, path, &g->reply);
    llm_step(x);

    x->t_ms += tool_step(x, k, path);
    const struct swe_cmd_model *m = &models[k];
    /* about 11 tokens per line of 10 words */
    uint64_t tokens = (uint64_t)atr_rng_lognormal_int(x->r, m->out_median, m->out_sigma, 1, 16000);
    atr_buf_clear(&g->text);
    gen_words(&g->text, x->r, tokens * 10 / 11 + 1, 10);
    gen_add(&x->c, "tool", &g->text);
}

/* The next sub-agent of parent x: the shared system prompt, a sub-task, LN(6,0.5)
 * turns from the parent's clock, then its report (a last llm call, which
 * joins any sub-agents of its own), left in g->reply for the parent. */
static void run_subagent(struct swe_ctx *x, int64_t *end, uint32_t *last)
{
    struct swe_ctx y = *x;
    uint32_t j = ++x->n_kids;    /* unique within the trace: forks go on counting */
    y.agent = x->agent ? atr_arena_printf(&x->t->arena, "%s.%u", x->agent, j)
                       : atr_arena_printf(&x->t->arena, "sub-%u", j);
    y.depth = x->depth + 1;
    y.n_subagents = y.n_kids = 0;
    atr_convo_init(&y.c, x->t, x->g->o.keep_content);
    gen_add(&y.c, "system", &x->g->swe_system);
    task_message(&y);
    int64_t turns = atr_rng_lognormal_int(x->r, 6, 0.5, 1, 30);
    for (int64_t k = 0; k < turns; k++)
        turn(&y);
    atr_buf_clear(&x->g->reply);
    gen_words(&x->g->reply, x->r, (uint64_t)atr_rng_lognormal_int(x->r, 150, 0.6, 1, 4000), 10);
    llm_step(&y);
    atr_convo_release(&y.c);
    *end = y.t_ms;
    *last = y.wait[0];
    x->n_subagents += 1 + y.n_subagents;
}

static void fork_subagents(struct swe_ctx *x, uint32_t fanout)
{
    struct atr_gen *g = x->g;
    int64_t end = x->t_ms;
    uint32_t last[SWE_MAX_FANOUT];
    for (uint32_t j = 0; j < fanout; j++) {
        int64_t e;
        run_subagent(x, &e, &last[j]);
        end = e > end ? e : end;
        gen_add(&x->c, "tool", &g->reply);
    }
    memcpy(x->wait, last, fanout * sizeof *last);
    x->n_wait = fanout;
    x->t_ms = end;
}

static void task_message(struct swe_ctx *x)
{
    struct atr_buf *b = &x->g->text;
    atr_buf_clear(b);
    if (x->agent) {     /* a sub-agent's: a part of its parent's task */
        atr_buf_printf(b, "You are sub-agent %s working in %s. Your part of the task:\n",
                       x->agent, x->cwd);
        gen_words(b, x->r, (uint64_t)atr_rng_lognormal_int(x->r, 80, 0.5, 10, 1000), 12);
        gen_add(&x->c, "user", b);
        return;
    }
    atr_buf_printf(b, "I've uploaded a python code repository in the directory %s. Consider "
                   "the following issue:\n<pr_description>\n", x->cwd);
    gen_words(b, x->r, (uint64_t)atr_rng_lognormal_int(x->r, 250, 0.6, 20, 3000), 12);
    atr_buf_puts(b, "\n</pr_description>\n");
    gen_add(&x->c, "user", b);
}

void gen_swe_trace(struct atr_gen *g, struct atr_trace *t, struct atr_rng *r)
{
    struct swe_ctx x = {.g = g, .t = t, .r = r, .dag = g->o.subagent_prob > 0};
    x.repo = repos[atr_rng_below(r, sizeof repos / sizeof *repos)];
    for (int k = 0; k < SWE_MODULES; k++)
        x.mods[k] = gen_word(r);
    x.cwd = atr_arena_printf(&t->arena, "/workspace/%s", x.repo);
    atr_convo_init(&x.c, t, g->o.keep_content);
    gen_add(&x.c, "system", &g->swe_system);
    task_message(&x);
    int64_t turns = atr_rng_lognormal_int(r, 25, 0.6, 1, 100);
    for (int64_t k = 0; k < turns; k++)
        turn(&x);
    atr_convo_release(&x.c);
    atr_trace_meta_set_str(t, "repo", x.repo);
    atr_trace_meta_set_i64(t, "turns", turns);
    if (x.dag) {
        uint32_t cycle;
        atr_trace_order_steps(t, &cycle);   /* sub-agents interleave in time */
        atr_trace_meta_set_i64(t, "subagents", x.n_subagents);
    }
}
