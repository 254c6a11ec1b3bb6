/* cmd-router.c - `atr router train|eval`: the learned policy's MLP, trained
 * on labels from simulated runs of the candidate policies, and scored on
 * held-out sessions (src/router/train.h, docs/policies.md "## learned"). */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/sched-opts.h"
#include "policy/policy.h"
#include "policy/learned-features.h"
#include "router/train.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/cost.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/output.h"

static const char help[] =
    "usage: atr router train TRACE... --profile GPU/MODEL -o MODEL.json [OPTIONS]\n"
    "       atr router eval TRACE... --model MODEL.json [--profile GPU/MODEL] [OPTIONS]\n"
    "\n"
    "The `learned` policy's router: a small MLP that picks, per request, which\n"
    "candidate policy decides it, from metadata only (input tokens, turn,\n"
    "prefix reuse against the previous turn, previous tool and its time, time\n"
    "since the last call, output lengths so far; docs/policies.md).\n"
    "`train` runs the traces in the simulator once per candidate on the same\n"
    "schedule, labels each request with the candidate that gave it the lowest\n"
    "objective (prefix-cache keeps ties and wins within --margin), holds out a\n"
    "seeded 25% of the sessions, trains, and writes the model JSON.\n"
    "`eval` labels the traces the same way and reports, on the held-out\n"
    "sessions: accuracy beside the majority-class baseline, the confusion\n"
    "matrix, and the mean latency of the held-out workload simulated under\n"
    "`learned` (with the model) and under each candidate alone.\n"
    "\n"
    "options:\n"
    "  -p, --profile GPU/MODEL   simulator profile (eval: default the model's)\n"
    "  -o, --output FILE         train: the model file\n"
    "  -m, --model FILE          eval: the model file\n"
    "      --policies A,B,...    train: candidates (default naive,prefix-cache,\n"
    "                            compaction,max-tokens)\n"
    "      --objective e2el|ttft train: latency to minimise (default e2el)\n"
    "      --label request|session   train: one label per request (default) or\n"
    "                            the best policy of the whole session\n"
    "      --margin F            train: relative win needed over prefix-cache\n"
    "                            (default 0.05)\n"
    "      --holdout F           train: fraction of sessions held out (default 0.25)\n"
    "      --hidden N[,M]        train: hidden layer widths (default 32,16)\n"
    "      --epochs N            train: passes over the data (default 200)\n"
    "      --all                 eval: score every session (traces not trained on)\n"
    "      --replicas N          engine replicas (default 1)\n"
    "      --engine vllm|sglang  scheduler flavour (default vllm)\n"
    "      --tp N                tensor parallel degree (default 1)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    SCHED_HELP
    "--seed also seeds the split and the weights; eval defaults to the model's.\n";

#define MAX_CANDS 8

struct router_args {
    bool eval, all, seed_given, by_session;
    const char *profile, *out, *model, *from;
    const char *cands[MAX_CANDS];
    size_t n_cands;
    char *cand_list;
    enum atr_router_objective objective;
    double margin, holdout;
    size_t hidden[2];
    unsigned epochs, replicas, tp;
    bool sglang;
    struct sched_opts sched;
    int first_arg;               /* argv[first_arg..argc) of parse_args: the TRACEs */
};

static int parse_cands(struct router_args *a, const char *list)
{
    free(a->cand_list);
    a->cand_list = xstrdup(list);
    a->n_cands = 0;
    char *save = NULL;
    for (char *t = strtok_r(a->cand_list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool known = strcmp(t, "learned") != 0;
        for (size_t i = 0; known && atr_policy_names[i]; i++)
            if (strcmp(atr_policy_names[i], t) == 0)
                break;
            else if (!atr_policy_names[i + 1])
                known = false;
        if (!known)
            return cli_usage("router", "--policies: '%s' is not a candidate (naive, "
                             "prefix-cache, prefix-route, compaction, max-tokens)", t);
        if (a->n_cands == MAX_CANDS)
            return cli_usage("router", "--policies takes at most %d policies", MAX_CANDS);
        a->cands[a->n_cands++] = t;
    }
    return a->n_cands >= 2 ? EXIT_OK : cli_usage("router", "--policies wants 2 or more");
}

static bool parse_hidden(void *base, const char *arg, const char *cmd)
{
    struct router_args *a = base;
    unsigned long long v;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", arg);
    char *comma = strchr(buf, ',');
    if (comma)
        *comma = 0;
    a->hidden[0] = a->hidden[1] = 0;
    if (!cli_parse_uint(buf, 1, 128, &v))
        return false;
    a->hidden[0] = (size_t)v;
    if (comma) {
        if (!cli_parse_uint(comma + 1, 1, 128, &v))
            return false;
        a->hidden[1] = (size_t)v;
    }
    return true;
}

static void defaults(struct router_args *a)
{
    memset(a, 0, sizeof *a);
    sched_opts_init(&a->sched);
    a->margin = 0.05;
    a->holdout = 0.25;
    a->hidden[0] = 32;
    a->hidden[1] = 16;
    a->epochs = 200;
    a->replicas = 1;
    a->tp = 1;
}

static bool opt_cands(void *a, const char *list, const char *cmd)
{
    return parse_cands(a, list) == EXIT_OK;
}

/* --seed of the schedule group, noting that it was given. */
static bool opt_seed(void *base, const char *arg, const char *cmd)
{
    struct router_args *a = base;
    unsigned long long v;
    if (!cli_parse_uint(arg, 0, UINT64_MAX, &v))
        return false;
    a->sched.schedule.seed = v;
    a->seed_given = true;
    return true;
}

#define ARGS struct router_args
static const struct opt options[] = {
    OPT_STRING(ARGS, profile, "profile", 'p'),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, model, "model", 'm'),
    OPT_FROM(ARGS, from),
    OPT_CALL("policies", 0, opt_cands, NULL),
    OPT_ENUM(ARGS, objective, "objective", 0, OPT_WORDS("e2el", "ttft"),
             "--objective wants e2el or ttft"),
    OPT_ENUM(ARGS, by_session, "label", 0, OPT_WORDS("request", "session"),
             "--label wants request or session"),
    OPT_DOUBLE(ARGS, margin, "margin", 0, 0, 10, "--margin wants a number in [0, 10]"),
    OPT_DOUBLE(ARGS, holdout, "holdout", 0, 0.01, 0.99,
               "--holdout wants a number in [0.01, 0.99]"),
    OPT_CALL("hidden", 0, parse_hidden, "--hidden wants N or N,M with widths 1..128"),
    OPT_UINT(ARGS, epochs, "epochs", 0, 1, 100000, "--epochs wants 1..100000"),
    OPT_FLAG(ARGS, all, "all", 0),
    OPT_UINT(ARGS, replicas, "replicas", 0, 1, 256, "--replicas wants 1..256"),
    OPT_UINT(ARGS, tp, "tp", 0, 1, 64, "--tp wants 1..64"),
    OPT_ENUM(ARGS, sglang, "engine", 0, OPT_WORDS("vllm", "sglang"),
             "--engine wants vllm or sglang"),
    OPT_CALL("seed", 0, opt_seed, "--seed wants a non-negative integer"),
    OPT_INCLUDE(ARGS, sched, sched_opts_group),
    OPT_END,
};
#undef ARGS

static const struct opts_cmd parser = {"router", options};

static int parse_args(int argc, char **argv, struct router_args *a)
{
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (a->first_arg >= argc)
        return cli_usage("router", "missing TRACE");
    if (!a->eval && !a->profile)
        return cli_usage("router", "missing --profile GPU/MODEL");
    if (!a->eval && !a->out)
        return cli_usage("router", "train: missing -o MODEL.json");
    if (a->eval && !a->model)
        return cli_usage("router", "eval: missing --model MODEL.json");
    if (a->profile && cli_check_profile("router", a->profile, a->tp) != EXIT_OK)
        return EXIT_USAGE;
    return sched_opts_finish(&a->sched, "router");
}

/* The workload, its schedule and the simulator target, for either mode. */
struct setup {
    struct atr_target target;
    struct atr_workload w;
    struct atr_router_sim sim;
};

static int setup_open(struct setup *s, const struct router_args *a, char *const *paths,
                      size_t n_paths, struct atr_error *err)
{
    memset(s, 0, sizeof *s);
    if (atr_target_sim(&s->target, a->profile, a->tp, err) < 0)
        return -1;
    s->target.engine.longest_prefix_first = a->sglang;
    s->target.replicas = a->replicas;
    if (atr_workload_load(&s->w, paths, n_paths, a->from, s->target.engine.block_size, err) < 0)
        return -1;
    s->sim = (struct atr_router_sim){
        .workload = &s->w, .schedule = &a->sched.schedule,
        .max_concurrency = a->sched.max_concurrency, .target = &s->target,
        .seed = a->sched.schedule.seed,
    };
    return 0;
}

static void setup_close(struct setup *s)
{
    atr_workload_release(&s->w);
    atr_target_release(&s->target);
}

static void print_labels(const struct atr_router_data *d, const char *const *cands)
{
    size_t count[MAX_CANDS] = { 0 };
    for (size_t i = 0; i < d->n; i++)
        count[d->y[i]]++;
    printf("labels:");
    for (size_t c = 0; c < d->n_candidates; c++)
        printf(" %s %zu%s", cands[c], count[c], c + 1 < d->n_candidates ? "," : "\n");
}

static void print_accuracy(const char *what, const struct atr_router_eval *ev,
                           const char *const *cands)
{
    printf("%s: %zu requests, accuracy %.1f%% (majority baseline %s %.1f%%)\n", what, ev->n,
           ev->n ? 100.0 * (double)ev->correct / (double)ev->n : 0, cands[ev->majority],
           ev->n ? 100.0 * (double)ev->majority_correct / (double)ev->n : 0);
}

/* The model JSON into o (committed by the caller). */
static int write_model(struct atr_output *o, const char *path, const struct atr_router_model *m,
                       struct atr_error *err)
{
    struct atr_buf b = ATR_BUF_INIT;
    int rc = atr_router_model_write(m, &b) < 0 ? atr_error_set(err, "%s: model too large", path)
             : atr_output_write(o, b.data, b.len, err);
    atr_buf_release(&b);
    return rc;
}

static const char *const default_cands[] = { "naive", "prefix-cache", "compaction", "max-tokens" };

static int train(const struct router_args *a, struct setup *s, struct atr_output *out,
                 struct atr_error *err)
{
    const char *const *cands = a->n_cands ? a->cands : default_cands;
    size_t nc = a->n_cands ? a->n_cands : 4;
    struct atr_router_label_cfg lc = { cands, nc, a->objective, a->by_session, a->margin,
                                       a->holdout, a->sched.schedule.seed };
    struct atr_router_data d;
    if (atr_router_label(&s->sim, &lc, &d, err) < 0)
        return -1;
    struct atr_router_model m;
    memset(&m, 0, sizeof m);
    struct atr_router_train_cfg tc = { .hidden = { a->hidden[0], a->hidden[1] },
                                       .epochs = a->epochs, .batch = 32, .lr = 0.005,
                                       .l2 = 1e-4, .seed = a->sched.schedule.seed };
    int rc = atr_router_train(&d, &tc, &m.mlp, err);
    if (rc == 0) {
        m.n_candidates = nc;
        for (size_t c = 0; c < nc; c++)
            m.candidates[c] = xstrdup(cands[c]);
        snprintf(m.objective, sizeof m.objective, "%s",
                 a->objective == ATR_ROUTER_TTFT ? "ttft" : "e2el");
        snprintf(m.profile, sizeof m.profile, "%s", a->profile);
        snprintf(m.label, sizeof m.label, "%s", a->by_session ? "session" : "request");
        m.margin = a->margin;
        m.holdout = a->holdout;
        m.seed = a->sched.schedule.seed;
        m.traces = s->w.n_sessions;
        m.samples = d.n;
        printf("atr router: %zu requests in %zu sessions (%zu train, %zu held out), objective %s, "
               "labels per %s (margin %g)\n", d.n, d.n_sessions_train + d.n_sessions_held_out,
               d.n_sessions_train, d.n_sessions_held_out, m.objective, m.label, m.margin);
        print_labels(&d, cands);
        struct atr_router_eval tr, ho;
        atr_router_evaluate(&m.mlp, &d, true, &tr);
        atr_router_evaluate(&m.mlp, &d, false, &ho);
        print_accuracy("all", &tr, cands);
        print_accuracy("held-out", &ho, cands);
        rc = write_model(out, a->out, &m, err);
    }
    atr_router_model_release(&m);
    atr_router_data_release(&d);
    return rc;
}

/* `router train`: -o is opened first, so a path that cannot be written
 * fails before the labelling runs, and the model is committed only when
 * everything succeeded. */
static int train_file(const struct router_args *a, char *const *paths, size_t n_paths,
                      struct atr_error *err)
{
    struct atr_output *out = atr_output_open(a->out, err);
    if (!out)
        return -1;
    struct setup s;
    int rc = setup_open(&s, a, paths, n_paths, err);
    if (rc == 0)
        rc = train(a, &s, out, err);
    setup_close(&s);
    if (rc < 0) {
        atr_output_abort(out);
        return -1;
    }
    if (atr_output_commit(out, err) < 0)
        return -1;
    printf("wrote %s\n", a->out);
    return 0;
}

static void print_confusion(const struct atr_router_eval *ev, const struct atr_router_model *m)
{
    printf("confusion (rows: label, columns: predicted):\n%-14s", "");
    for (size_t c = 0; c < m->n_candidates; c++)
        printf(" %13s", m->candidates[c]);
    printf("\n");
    for (size_t r = 0; r < m->n_candidates; r++) {
        printf("%-14s", m->candidates[r]);
        for (size_t c = 0; c < m->n_candidates; c++)
            printf(" %13llu", (unsigned long long)ev->confusion[r][c]);
        printf("\n");
    }
}

/* The held-out workload under learned and under each candidate alone. */
static int print_latency(const struct router_args *a, struct setup *s,
                         const struct atr_router_data *d, const struct atr_router_model *m,
                         struct atr_error *err)
{
    bool *keep = NULL;
    if (!a->all) {
        keep = xcalloc(s->w.n_sessions, sizeof *keep);
        for (size_t i = 0; i < d->n; i++)
            keep[d->session[i]] |= d->held_out[i];
    }
    char *opts = xasprintf("model=%s", a->model);
    double e[MAX_CANDS + 1], t[MAX_CANDS + 1];
    int rc = atr_router_simulate(&s->sim, keep, "learned", opts, &e[0], &t[0], err);
    size_t best = 1;
    for (size_t c = 0; rc == 0 && c < m->n_candidates; c++) {
        rc = atr_router_simulate(&s->sim, keep, m->candidates[c], NULL, &e[c + 1], &t[c + 1], err);
        if (e[c + 1] < e[best])
            best = c + 1;
    }
    if (rc == 0) {
        printf("%s workload, simulated (mean ms):\n%-14s %10s %10s\n",
               a->all ? "whole" : "held-out", "policy", "e2el", "ttft");
        printf("%-14s %10.1f %10.1f\n", "learned", 1000 * e[0], 1000 * t[0]);
        for (size_t c = 0; c < m->n_candidates; c++)
            printf("%-14s %10.1f %10.1f\n", m->candidates[c], 1000 * e[c + 1], 1000 * t[c + 1]);
        printf("learned vs best fixed (%s): %+.1f%% e2el\n", m->candidates[best - 1],
               e[best] > 0 ? 100 * (e[0] - e[best]) / e[best] : 0);
    }
    free(opts);
    free(keep);
    return rc;
}

static int eval(struct router_args *a, char *const *paths, size_t n_paths, struct atr_error *err)
{
    struct atr_router_model m;
    if (atr_router_model_load(&m, a->model, err) < 0)
        return -1;
    if (!a->profile)
        a->profile = m.profile;
    if (!a->seed_given)
        a->sched.schedule.seed = m.seed;
    struct setup s;
    int rc = setup_open(&s, a, paths, n_paths, err);
    struct atr_router_label_cfg lc = {
        (const char *const *)m.candidates, m.n_candidates,
        strcmp(m.objective, "ttft") == 0 ? ATR_ROUTER_TTFT : ATR_ROUTER_E2EL,
        strcmp(m.label, "session") == 0, m.margin, m.holdout, m.seed,
    };
    struct atr_router_data d;
    memset(&d, 0, sizeof d);
    if (rc == 0)
        rc = atr_router_label(&s.sim, &lc, &d, err);
    if (rc == 0 && !a->all && d.n_sessions_held_out == 0)
        rc = atr_error_set(err, "router eval: no held-out session in these traces (use --all "
                           "for traces the model was not trained on)");
    if (rc == 0) {
        struct atr_router_eval ev;
        atr_router_evaluate(&m.mlp, &d, a->all, &ev);
        printf("atr router eval: %s, %s sessions: %zu\n", a->model,
               a->all ? "all" : "held-out", a->all ? d.n_sessions_held_out + d.n_sessions_train
               : d.n_sessions_held_out);
        print_accuracy(a->all ? "all" : "held-out", &ev, (const char *const *)m.candidates);
        print_confusion(&ev, &m);
        rc = print_latency(a, &s, &d, &m, err);
    }
    atr_router_data_release(&d);
    setup_close(&s);
    atr_router_model_release(&m);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "train") && strcmp(argv[1], "eval")))
        return cli_usage("router", "wants a mode: atr router train ... or atr router eval ...");
    struct router_args a;
    defaults(&a);
    a.eval = strcmp(argv[1], "eval") == 0;
    int rc = parse_args(argc - 1, argv + 1, &a);
    if (rc == EXIT_OK) {
        struct atr_error err;
        char *const *paths = argv + 1 + a.first_arg;
        size_t n_paths = (size_t)(argc - 1 - a.first_arg);
        int r;
        if (a.eval) {
            r = eval(&a, paths, n_paths, &err);
        } else {
            r = train_file(&a, paths, n_paths, &err);
        }
        rc = r < 0 ? cli_fail_err(&err) : EXIT_OK;
    }
    free(a.cand_list);
    return rc;
}

const struct atr_cmd cmd_router_entry = {
    "router", "train and evaluate the learned policy's metadata router (an MLP over "
    "simulated candidate runs)", help, run, NULL,
};
