/* cmd-router.c - `atr router train|eval|decide`: the learned policy's MLP,
 * trained on labels from simulated runs of the candidate policies, scored
 * on held-out sessions, and asked for single decisions (src/router/train.h,
 * src/router/decide.h, docs/policies.md "## learned"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "cli/opts.h"
#include "cli/sched-opts.h"
#include "json/writer.h"
#include "policy/policy.h"
#include "policy/learned-features.h"
#include "router/decide.h"
#include "router/folds.h"
#include "router/sources.h"
#include "router/train.h"
#include "sched/schedule.h"
#include "sched/workload.h"
#include "sim/cost.h"
#include "trace/reader.h"
#include "util/alloc.h"
#include "util/input.h"
#include "util/output.h"

static const char help[] =
    "usage: atr router train TRACE... --profile GPU/MODEL -o MODEL.json [OPTIONS]\n"
    "       atr router eval TRACE... --model MODEL.json [--profile GPU/MODEL] [OPTIONS]\n"
    "       atr router eval TRACE... --by-source --profile GPU/MODEL [OPTIONS]\n"
    "       atr router decide --model MODEL.json [--features NAME=V,... | --trace FILE]\n"
    "\n"
    "The `learned` policy's router: a small MLP that picks, per request, which\n"
    "candidate policy decides it, from metadata only (input tokens, turn,\n"
    "prefix reuse against the previous turn, previous tool and its time, time\n"
    "since the last call, output lengths so far; docs/policies.md).\n"
    "`train` runs the traces in the simulator once per candidate on the same\n"
    "schedule, labels each request with the candidate that gave it the lowest\n"
    "objective (prefix-cache keeps ties and wins within --margin; a candidate\n"
    "that sent the same request as prefix-cache, or cut the output shorter,\n"
    "wins nothing), holds out a seeded 25% of the sessions (or --holdout-sources),\n"
    "trains on the inputs of --inputs (default the prompt size alone, which\n"
    "transfers best to sources not trained on), names the features left\n"
    "without weight (not inputs, or constant in training), and writes the\n"
    "model JSON. Every accuracy printed stands beside the majority-class\n"
    "baseline and the best single-feature rule: the threshold on one feature\n"
    "(a label each side) with the most hits on the training sessions.\n"
    "`eval` labels the traces the same way and reports, on the held-out\n"
    "sessions: accuracy beside those baselines, the confusion\n"
    "matrix, and the mean latency of the held-out workload simulated under\n"
    "`learned` (with the model) and under each candidate alone; --json FILE also\n"
    "writes them as JSON (atr report draws the confusion matrix from it).\n"
    "`eval --by-source` is the source-held-out protocol: the sessions are grouped\n"
    "by their trace's source (gen traces by kind: gen-swe, gen-chat), each source\n"
    "is labelled in the simulator on its own, and for every source a fresh model\n"
    "(the train options) is trained on all the other sources and scored on it;\n"
    "it prints per source accuracy beside the rule fitted on the other sources\n"
    "and that source's majority baseline, and the pooled accuracy and\n"
    "confusion matrix (--json: with \"folds\").\n"
    "`decide` prints, one JSON line per feature set, the candidate the model\n"
    "picks and every candidate's logit and probability, as the learned policy\n"
    "decides; feature sets come from --features (one per flag) or stdin (one\n"
    "per line); features not named are 0. --trace FILE decides every llm turn\n"
    "of the traces with the features the simulator computes (on-time sends,\n"
    "recorded outputs).\n"
    "\n"
    "options:\n"
    "  -p, --profile GPU/MODEL   simulator profile (eval: default the model's)\n"
    "  -o, --output FILE         train: the model file\n"
    "  -m, --model FILE          eval, decide: the model file\n"
    "      --json FILE           eval: also write the evaluation as JSON\n"
    "      --features N=V,...    decide: one feature set (log_input_tokens, log_turn,\n"
    "                            prefix_reuse, log_new_tokens, tool_none, tool_shell,\n"
    "                            tool_editor, tool_other, log_think_s,\n"
    "                            log_since_last_s, log_prev_output_tokens,\n"
    "                            log_mean_output_tokens); repeatable\n"
    "      --trace FILE          decide: every llm turn of these traces\n"
    "      --policies A,B,...    train: candidates (default naive,prefix-cache,\n"
    "                            compaction,max-tokens)\n"
    "      --objective e2el|ttft train: latency to minimise (default e2el)\n"
    "      --label request|session   train: one label per request (default) or\n"
    "                            the best policy of the whole session\n"
    "      --margin F            train: relative win needed over prefix-cache\n"
    "                            (default 0.05)\n"
    "      --holdout F           train: fraction of sessions held out (default 0.25)\n"
    "      --holdout-sources A,B train: hold out these sources' sessions instead\n"
    "                            (each source labelled on its own; eval repeats it)\n"
    "      --by-source           eval: leave-one-source-out cross-validation\n"
    "      --select              eval --by-source: per fold, pick the inputs (all,\n"
    "                            size, size+reuse, size+new, size+outputs,\n"
    "                            no-timing) by inner leave-one-source-out on the\n"
    "                            training sources\n"
    "      --inputs all|A,B,...  train, eval --by-source: features the model uses\n"
    "                            (default log_input_tokens; the others get zero\n"
    "                            weights)\n"
    "      --cut-wins yes|no     train, eval --by-source: whether a candidate whose\n"
    "                            request produced fewer output tokens than\n"
    "                            prefix-cache's may take the label (default no: a\n"
    "                            cut answer is less work, not a faster one)\n"
    "      --balance-sources     train, eval --by-source: every source weighs the\n"
    "                            same in the loss\n"
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
    bool eval, decide, all, seed_given, by_session, by_source;
    const char *profile, *out, *model, *from, *json, *trace, *holdout_sources;
    char **features;             /* decide: the --features values, copies */
    size_t n_features;
    const char *cands[MAX_CANDS];
    size_t n_cands;
    char *cand_list;
    enum atr_router_objective objective;
    double margin, holdout;
    size_t hidden[2];
    unsigned epochs, replicas, tp;
    bool sglang, balance, select, cut_wins;
    uint32_t inputs;             /* feature bits used (train cfg); 0 all */
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

/* --inputs NAME,...: the features the model may use ("all": every one). */
static bool opt_inputs(void *base, const char *arg, const char *cmd)
{
    struct router_args *a = base;
    a->inputs = 0;
    if (strcmp(arg, "all") == 0)
        return true;
    char *copy = xstrdup(arg), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(copy, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        size_t f = 0;
        while (f < ATR_ROUTER_N_FEATURES && strcmp(atr_router_feature_names[f], t) != 0)
            f++;
        ok = f < ATR_ROUTER_N_FEATURES;
        if (ok)
            a->inputs |= 1u << f;
    }
    free(copy);
    return ok && a->inputs;
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
    a->inputs = 1u << 0;         /* log_input_tokens: what transfers across sources (eval
                                    --by-source --select picks it; docs/policies.md) */
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

/* --features: one more feature set, checked here: a bad one is a usage
 * error (exit 2), as any bad option value. */
static bool opt_features(void *base, const char *arg, const char *cmd)
{
    struct router_args *a = base;
    double x[ATR_ROUTER_N_FEATURES];
    struct atr_error err;
    if (atr_router_parse_features(arg, "--features", a->n_features + 1, x, &err) < 0) {
        cli_usage(cmd, "%s", err.msg);
        return false;
    }
    a->features = xreallocarray(a->features, a->n_features + 1, sizeof *a->features);
    a->features[a->n_features++] = xstrdup(arg);
    return true;
}

#define ARGS struct router_args
static const struct opt options[] = {
    OPT_STRING(ARGS, profile, "profile", 'p'),
    OPT_STRING(ARGS, out, "output", 'o'),
    OPT_STRING(ARGS, model, "model", 'm'),
    OPT_FROM(ARGS, from),
    OPT_STRING(ARGS, json, "json", 0),
    OPT_STRING(ARGS, trace, "trace", 0),
    OPT_CALL("features", 0, opt_features, NULL),
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
    OPT_FLAG(ARGS, by_source, "by-source", 0),
    OPT_FLAG(ARGS, balance, "balance-sources", 0),
    OPT_FLAG(ARGS, select, "select", 0),
    OPT_ENUM(ARGS, cut_wins, "cut-wins", 0, OPT_WORDS("no", "yes"),
             "--cut-wins wants yes or no"),
    OPT_CALL("inputs", 0, opt_inputs, "--inputs wants all or feature names separated by commas "
             "(log_input_tokens, log_turn, prefix_reuse, log_new_tokens, tool_none, tool_shell, "
             "tool_editor, tool_other, log_think_s, log_since_last_s, log_prev_output_tokens, "
             "log_mean_output_tokens)"),
    OPT_STRING(ARGS, holdout_sources, "holdout-sources", 0),
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

static int parse_decide(const struct router_args *a, int argc)
{
    if (a->first_arg < argc)
        return cli_usage("router", "decide takes no TRACE argument (use --trace FILE)");
    if (!a->model)
        return cli_usage("router", "decide: missing --model MODEL.json");
    if (a->trace && a->n_features)
        return cli_usage("router", "decide: --features or --trace, not both");
    if (a->json || a->out)
        return cli_usage("router", "decide prints JSON lines on stdout (no --json or -o)");
    return EXIT_OK;
}

static int parse_args(int argc, char **argv, struct router_args *a)
{
    if (opts_parse(&parser, a, argc, argv, &a->first_arg) != EXIT_OK)
        return EXIT_USAGE;
    if (a->decide)
        return parse_decide(a, argc);
    if (a->trace || a->n_features)
        return cli_usage("router", "--trace and --features are for router decide");
    if (a->json && !a->eval)
        return cli_usage("router", "--json is for router eval");
    if (a->by_source && !a->eval)
        return cli_usage("router", "--by-source is for router eval");
    if (a->by_source && (a->model || a->all))
        return cli_usage("router", "eval --by-source trains its own models (no --model, --all)");
    if (a->balance && a->eval && !a->by_source)
        return cli_usage("router", "--balance-sources is for train and eval --by-source");
    if (a->select && !a->by_source)
        return cli_usage("router", "--select is for router eval --by-source");
    if (a->by_source && !a->profile)
        return cli_usage("router", "eval --by-source: missing --profile GPU/MODEL");
    if (a->holdout_sources && (a->eval || !*a->holdout_sources))
        return cli_usage("router", "--holdout-sources is for router train (eval repeats the "
                         "model's) and wants A[,B...]");
    if (a->first_arg >= argc)
        return cli_usage("router", "missing TRACE");
    if (!a->eval && !a->profile)
        return cli_usage("router", "missing --profile GPU/MODEL");
    if (!a->eval && !a->out)
        return cli_usage("router", "train: missing -o MODEL.json");
    if (a->eval && !a->model && !a->by_source)
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
    struct atr_router_sources src;   /* loaded by setup_sources only */
    bool *held_group;                /* [src.n_names]: setup_sources with a list */
};

static int setup_open(struct setup *s, const struct router_args *a, char *const *paths,
                      size_t n_paths, struct atr_error *err)
{
    memset(s, 0, sizeof *s);
    if (atr_target_sim(&s->target, a->profile, a->tp, err) < 0)
        return -1;
    s->target.engine.longest_prefix_first = a->sglang;
    s->target.engine.radix_cache = a->sglang;
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

/* Every session's source, and (list "A,B", or NULL) which sources are held
 * out: an unknown name is an error naming the sources there are. */
static int setup_sources(struct setup *s, char *const *paths, size_t n_paths, const char *from,
                         const char *list, struct atr_error *err)
{
    if (atr_router_sources_load(&s->src, paths, n_paths, from, &s->w, err) < 0)
        return -1;
    if (!list)
        return 0;
    s->held_group = xcalloc(s->src.n_names ? s->src.n_names : 1, sizeof *s->held_group);
    char *copy = xstrdup(list), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
        long g = atr_router_source_index(&s->src, t);
        if (g >= 0) {
            s->held_group[g] = true;
            continue;
        }
        struct atr_buf names = ATR_BUF_INIT;
        for (size_t i = 0; i < s->src.n_names; i++)
            atr_buf_printf(&names, "%s%s", i ? ", " : "", s->src.names[i]);
        rc = atr_error_set(err, "holdout sources: no trace has source '%s' (sources: %s)", t,
                           names.len ? names.data : "none");
        atr_buf_release(&names);
    }
    free(copy);
    bool all = rc == 0;
    for (size_t g = 0; g < s->src.n_names; g++)
        all &= s->held_group[g];
    if (all)
        rc = atr_error_set(err, "holdout sources: every source is held out (%s); nothing to "
                           "train on", list);
    return rc;
}

static void setup_close(struct setup *s)
{
    free(s->held_group);
    atr_router_sources_release(&s->src);
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

static double pct(size_t k, size_t n)
{
    return n ? 100.0 * (double)k / (double)n : 0;
}

/* The single-feature rule as text: "log_input_tokens <= 9.01: A, else B". */
static void rule_text(char *out, size_t cap, const struct atr_router_rule *r,
                      const char *const *cands)
{
    if (r->below == r->above)
        snprintf(out, cap, "always %s", cands[r->below]);
    else
        snprintf(out, cap, "%s <= %.4g: %s, else %s", atr_router_feature_names[r->feature],
                 r->threshold, cands[r->below], cands[r->above]);
}

static void print_accuracy(const char *what, const struct atr_router_eval *ev,
                           const char *const *cands)
{
    char rule[160];
    rule_text(rule, sizeof rule, &ev->rule, cands);
    printf("%s: %zu requests, accuracy %.1f%% (majority baseline %s %.1f%%; best single-feature "
           "rule %.1f%%: %s)\n", what, ev->n, pct(ev->correct, ev->n), cands[ev->majority],
           pct(ev->majority_correct, ev->n), pct(ev->rule_correct, ev->n), rule);
}

/* The features the model ignores (zero first-layer weights), by why: not
 * an input (--inputs), or one value on every training row. */
static void print_weights(const struct atr_mlp *m, uint32_t inputs, uint32_t constant)
{
    static const char *const what[] = { "features with weight: ",
                                        "features without weight (not in --inputs): ",
                                        "features without weight (constant in training): ",
                                        "features without weight: " };
    for (int k = 0; k < 4; k++) {
        size_t n = 0;
        for (size_t f = 0; f < ATR_ROUTER_N_FEATURES; f++) {
            bool input = !inputs || inputs >> f & 1;
            int why = atr_mlp_input_weighted(m, f) ? 0 : !input ? 1 : constant >> f & 1 ? 2 : 3;
            if (why == k)
                printf("%s%s", n++ ? ", " : what[k], atr_router_feature_names[f]);
        }
        if (n)
            printf("\n");
    }
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

static struct atr_router_train_cfg train_cfg(const struct router_args *a)
{
    return (struct atr_router_train_cfg){ .hidden = { a->hidden[0], a->hidden[1] },
                                          .epochs = a->epochs, .batch = 32, .lr = 0.005,
                                          .l2 = 1e-4, .seed = a->sched.schedule.seed,
                                          .inputs = a->inputs, .balance_sources = a->balance };
}

/* The label settings of the options (train, eval --by-source). */
static struct atr_router_label_cfg label_cfg(const struct router_args *a, const struct setup *s)
{
    struct atr_router_label_cfg lc = {
        a->n_cands ? a->cands : default_cands, a->n_cands ? a->n_cands : 4, a->objective,
        a->by_session, a->margin, a->holdout, a->sched.schedule.seed,
        .group = s->src.group, .n_groups = s->src.n_names, .held_group = s->held_group,
        .cut_wins = a->cut_wins,
    };
    return lc;
}

static int train(const struct router_args *a, struct setup *s, struct atr_output *out,
                 struct atr_error *err)
{
    struct atr_router_label_cfg lc = label_cfg(a, s);
    const char *const *cands = lc.candidates;
    size_t nc = lc.n_candidates;
    struct atr_router_data d;
    if (atr_router_label(&s->sim, &lc, &d, err) < 0)
        return -1;
    struct atr_router_model m;
    memset(&m, 0, sizeof m);
    struct atr_router_train_cfg tc = train_cfg(a);
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
        m.cut_wins = a->cut_wins;
        m.holdout = a->holdout;
        if (a->holdout_sources)
            snprintf(m.holdout_sources, sizeof m.holdout_sources, "%s", a->holdout_sources);
        m.seed = a->sched.schedule.seed;
        m.traces = s->w.n_sessions;
        m.samples = d.n;
        printf("atr router: %zu requests in %zu sessions (%zu train, %zu held out), objective %s, "
               "labels per %s (margin %g)\n", d.n, d.n_sessions_train + d.n_sessions_held_out,
               d.n_sessions_train, d.n_sessions_held_out, m.objective, m.label, m.margin);
        print_labels(&d, cands);
        print_weights(&m.mlp, tc.inputs, atr_router_constant_inputs(&d));
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
    if (rc == 0 && a->holdout_sources)
        rc = setup_sources(&s, paths, n_paths, a->from, a->holdout_sources, err);
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
                         double *e, double *t, struct atr_error *err)
{
    bool *keep = NULL;
    if (!a->all) {
        keep = xcalloc(s->w.n_sessions, sizeof *keep);
        for (size_t i = 0; i < d->n; i++)
            keep[d->session[i]] |= d->held_out[i];
    }
    char *opts = xasprintf("model=%s", a->model);
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

/* The single-feature rule's hits, and (one_rule: not a pool of folds, each
 * with its own) the rule: {"feature", "threshold" (null: no cut), "below",
 * "above"}. */
static void rule_json(struct atr_jw *w, const struct atr_router_eval *ev, bool one_rule,
                      const char *const *cands)
{
    atr_jw_kv_uint(w, "rule_correct", ev->rule_correct);
    if (!one_rule)
        return;
    const struct atr_router_rule *r = &ev->rule;
    atr_jw_key(w, "rule");
    atr_jw_object_begin(w);
    atr_jw_kv_str(w, "feature", atr_router_feature_names[r->feature]);
    if (isfinite(r->threshold))
        atr_jw_kv_pyfloat(w, "threshold", r->threshold);
    else
        atr_jw_kv_null(w, "threshold");
    atr_jw_kv_str(w, "below", cands[r->below]);
    atr_jw_kv_str(w, "above", cands[r->above]);
    atr_jw_object_end(w);
}

/* `router eval --json`: the evaluation as one JSON object
 * ("atr-router-eval/1"; docs/policies.md), what `atr report` draws. */
static void eval_json(struct atr_buf *b, const struct router_args *a,
                      const struct atr_router_eval *ev, const struct atr_router_model *m,
                      const double *e, const double *t)
{
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "format", "atr-router-eval/1");
    atr_jw_kv_str(&w, "model", a->model);
    atr_jw_kv_str(&w, "profile", a->profile);
    atr_jw_kv_str(&w, "objective", m->objective);
    atr_jw_kv_bool(&w, "cut_wins", m->cut_wins);   /* which labels were scored */
    atr_jw_kv_str(&w, "scope", a->all ? "all" : "held-out");
    atr_jw_key(&w, "candidates");
    atr_jw_array_begin(&w);
    for (size_t c = 0; c < m->n_candidates; c++)
        atr_jw_str(&w, m->candidates[c]);
    atr_jw_array_end(&w);
    atr_jw_kv_uint(&w, "requests", ev->n);
    atr_jw_kv_uint(&w, "correct", ev->correct);
    atr_jw_kv_str(&w, "majority", m->candidates[ev->majority]);
    atr_jw_kv_uint(&w, "majority_correct", ev->majority_correct);
    rule_json(&w, ev, true, (const char *const *)m->candidates);
    atr_jw_key(&w, "confusion");                 /* [label][predicted] */
    atr_jw_array_begin(&w);
    for (size_t r = 0; r < m->n_candidates; r++)
        atr_jw_uint_array(&w, ev->confusion[r], m->n_candidates);
    atr_jw_array_end(&w);
    atr_jw_key(&w, "latency");
    atr_jw_array_begin(&w);
    for (size_t c = 0; c <= m->n_candidates; c++) {
        atr_jw_object_begin(&w);
        atr_jw_kv_str(&w, "policy", c ? m->candidates[c - 1] : "learned");
        atr_jw_kv_fixed_trim(&w, "mean_e2el_ms", 1000 * e[c], 3);
        atr_jw_kv_fixed_trim(&w, "mean_ttft_ms", 1000 * t[c], 3);
        atr_jw_object_end(&w);
    }
    atr_jw_array_end(&w);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    atr_buf_putc(b, '\n');
}

static int eval(struct router_args *a, char *const *paths, size_t n_paths,
                struct atr_output *json, struct atr_error *err)
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
    if (rc == 0 && m.holdout_sources[0])
        rc = setup_sources(&s, paths, n_paths, a->from, m.holdout_sources, err);
    struct atr_router_label_cfg lc = {
        (const char *const *)m.candidates, m.n_candidates,
        strcmp(m.objective, "ttft") == 0 ? ATR_ROUTER_TTFT : ATR_ROUTER_E2EL,
        strcmp(m.label, "session") == 0, m.margin, m.holdout, m.seed,
        .group = s.src.group, .n_groups = s.src.n_names, .held_group = s.held_group,
        .cut_wins = m.cut_wins,
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
        double e[MAX_CANDS + 1], t[MAX_CANDS + 1];
        rc = print_latency(a, &s, &d, &m, e, t, err);
        if (rc == 0 && json) {
            struct atr_buf b = ATR_BUF_INIT;
            eval_json(&b, a, &ev, &m, e, t);
            rc = atr_output_write(json, b.data, b.len, err);
            atr_buf_release(&b);
        }
    }
    atr_router_data_release(&d);
    setup_close(&s);
    atr_router_model_release(&m);
    return rc;
}

/* ---- eval --by-source: leave one source out ---- */

static void print_folds(const struct router_args *a, const struct setup *s,
                        const struct atr_router_folds *fo, const char *const *cands)
{
    const struct atr_router_fold_result *f = fo->f;
    const struct atr_router_eval *pool = &fo->pool;
    size_t n_folds = fo->n;
    size_t maj = 0;
    double macro = 0, rule_macro = 0;
    printf("%-16s %8s %8s %9s %9s  %-24s%s\n", "held-out source", "sessions", "requests",
           "accuracy", "1-feature", "majority baseline", a->select ? "inputs picked" : "rule");
    for (size_t i = 0; i < n_folds; i++) {
        const struct atr_router_eval *e = &f[i].ev;
        double acc = pct(e->correct, e->n), racc = pct(e->rule_correct, e->n);
        char base[64], rule[160];
        snprintf(base, sizeof base, "%s %.1f%%", cands[e->majority],
                 pct(e->majority_correct, e->n));
        rule_text(rule, sizeof rule, &e->rule, cands);
        printf("%-16s %8zu %8zu %8.1f%% %8.1f%%  %-24s%s\n", s->src.names[f[i].group],
               f[i].sessions, e->n, acc, racc, base, a->select ? atr_router_select_names[f[i].pick] : rule);
        maj += e->majority_correct;
        macro += acc / (double)n_folds;
        rule_macro += racc / (double)n_folds;
    }
    printf("pooled: %zu requests, accuracy %.1f%% (majority baseline %s %.1f%%; each source's "
           "own majority %.1f%%; best single-feature rule, fitted per fold %.1f%%); mean over "
           "sources %.1f%% (rule %.1f%%)\n", pool->n, pct(pool->correct, pool->n),
           cands[pool->majority], pct(pool->majority_correct, pool->n), pct(maj, pool->n),
           pct(pool->rule_correct, pool->n), macro, rule_macro);
}

/* The folds as JSON, after the pooled evaluation (by_source_json). */
static void folds_json(struct atr_jw *w, const struct router_args *a, const struct setup *s,
                       const struct atr_router_folds *fo, size_t nc, const char *const *cands)
{
    const struct atr_router_fold_result *f = fo->f;
    size_t n_folds = fo->n;
    atr_jw_key(w, "folds");
    atr_jw_array_begin(w);
    for (size_t i = 0; i < n_folds; i++) {
        const struct atr_router_eval *e = &f[i].ev;
        atr_jw_object_begin(w);
        atr_jw_kv_str(w, "source", s->src.names[f[i].group]);
        atr_jw_kv_uint(w, "sessions", f[i].sessions);
        atr_jw_kv_uint(w, "requests", e->n);
        atr_jw_kv_uint(w, "correct", e->correct);
        atr_jw_kv_str(w, "majority", cands[e->majority]);
        atr_jw_kv_uint(w, "majority_correct", e->majority_correct);
        rule_json(w, e, true, cands);
        if (a->select)
            atr_jw_kv_str(w, "inputs", atr_router_select_names[f[i].pick]);
        atr_jw_key(w, "confusion");
        atr_jw_array_begin(w);
        for (size_t r = 0; r < nc; r++)
            atr_jw_uint_array(w, e->confusion[r], nc);
        atr_jw_array_end(w);
        atr_jw_object_end(w);
    }
    atr_jw_array_end(w);
}

static void by_source_json(struct atr_buf *b, const struct router_args *a, const struct setup *s,
                           const struct atr_router_label_cfg *lc,
                           const struct atr_router_folds *fo)
{
    const struct atr_router_eval *pool = &fo->pool;
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_PYTHON);
    atr_jw_object_begin(&w);
    atr_jw_kv_str(&w, "format", "atr-router-eval/1");
    atr_jw_kv_str(&w, "profile", a->profile);
    atr_jw_kv_str(&w, "objective", lc->objective == ATR_ROUTER_TTFT ? "ttft" : "e2el");
    atr_jw_kv_bool(&w, "cut_wins", lc->cut_wins);
    atr_jw_kv_str(&w, "scope", "by-source");
    atr_jw_key(&w, "candidates");
    atr_jw_array_begin(&w);
    for (size_t c = 0; c < lc->n_candidates; c++)
        atr_jw_str(&w, lc->candidates[c]);
    atr_jw_array_end(&w);
    atr_jw_kv_uint(&w, "requests", pool->n);
    atr_jw_kv_uint(&w, "correct", pool->correct);
    atr_jw_kv_str(&w, "majority", lc->candidates[pool->majority]);
    atr_jw_kv_uint(&w, "majority_correct", pool->majority_correct);
    rule_json(&w, pool, false, lc->candidates);
    atr_jw_key(&w, "confusion");
    atr_jw_array_begin(&w);
    for (size_t r = 0; r < lc->n_candidates; r++)
        atr_jw_uint_array(&w, pool->confusion[r], lc->n_candidates);
    atr_jw_array_end(&w);
    atr_jw_key(&w, "latency");                  /* none: each fold has its own model */
    atr_jw_array_begin(&w);
    atr_jw_array_end(&w);
    folds_json(&w, a, s, fo, lc->n_candidates, lc->candidates);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    atr_buf_putc(b, '\n');
}

/* `router eval --by-source`: every source labelled on its own, then one
 * fold per source with llm requests. */
static int eval_by_source(struct router_args *a, char *const *paths, size_t n_paths,
                          struct atr_output *json, struct atr_error *err)
{
    struct setup s;
    int rc = setup_open(&s, a, paths, n_paths, err);
    if (rc == 0)
        rc = setup_sources(&s, paths, n_paths, a->from, NULL, err);
    bool *none = xcalloc(s.src.n_names + 1, sizeof *none);
    struct atr_router_label_cfg lc = label_cfg(a, &s);
    lc.held_group = none;
    struct atr_router_data d;
    memset(&d, 0, sizeof d);
    if (rc == 0 && s.src.n_names > ATR_ROUTER_MAX_SOURCES)   /* before the labelling runs */
        rc = atr_error_set(err, "router eval --by-source: %zu sources, at most %d",
                           s.src.n_names, ATR_ROUTER_MAX_SOURCES);
    if (rc == 0)
        rc = atr_router_label(&s.sim, &lc, &d, err);
    struct atr_router_folds_cfg fc = {
        .train = train_cfg(a), .select = a->select, .n_groups = s.src.n_names,
        .n_candidates = lc.n_candidates,
    };
    struct atr_router_folds *fo = xcalloc(1, sizeof *fo);
    if (rc == 0)
        rc = atr_router_folds_run(&d, &fc, fo, err);
    if (rc == 0) {
        printf("atr router eval --by-source: %zu sources, %zu requests in %zu sessions; each "
               "source scored by a model trained on the others%s\n", fo->n, d.n,
               d.n_sessions_held_out + d.n_sessions_train,
               a->select ? " (inputs picked by inner leave-one-source-out on those)" : "");
        print_folds(a, &s, fo, lc.candidates);
        struct atr_router_model m = { .n_candidates = lc.n_candidates };
        memcpy(m.candidates, lc.candidates, lc.n_candidates * sizeof *m.candidates);
        print_confusion(&fo->pool, &m);
        if (json) {
            struct atr_buf b = ATR_BUF_INIT;
            by_source_json(&b, a, &s, &lc, fo);
            rc = atr_output_write(json, b.data, b.len, err);
            atr_buf_release(&b);
        }
    }
    free(fo);
    free(none);
    atr_router_data_release(&d);
    setup_close(&s);
    return rc;
}

/* `router eval`: --json is opened first, so a path that cannot be written
 * fails before the runs, and is committed only when all succeeded. */
static int eval_file(struct router_args *a, char *const *paths, size_t n_paths,
                     struct atr_error *err)
{
    struct atr_output *json = NULL;
    if (a->json && !(json = atr_output_open(a->json, err)))
        return -1;
    int rc = a->by_source ? eval_by_source(a, paths, n_paths, json, err)
                          : eval(a, paths, n_paths, json, err);
    if (json && rc < 0)
        atr_output_abort(json);
    else if (json)
        rc = atr_output_commit(json, err);
    return rc;
}

/* ---- decide ---- */

/* One decision as a JSON line: the pick, then each candidate's logit and
 * probability, then the features (the shortest text that reads back as
 * the same double, so another implementation can be compared exactly). */
static void decision_json(struct atr_buf *b, const struct atr_router_model *m, const double *x,
                          const char *trace_id, size_t turn)
{
    double logits[ATR_ROUTER_MAX_CANDIDATES], probs[ATR_ROUTER_MAX_CANDIDATES];
    size_t c = atr_router_model_decide(m, x, logits, probs);
    struct atr_jw w;
    atr_jw_init(&w, b, ATR_JW_COMPACT);
    atr_jw_object_begin(&w);
    if (trace_id) {
        atr_jw_kv_str(&w, "trace", trace_id);
        atr_jw_kv_uint(&w, "turn", turn);
    }
    atr_jw_kv_str(&w, "pick", m->candidates[c]);
    atr_jw_kv_uint(&w, "index", c);
    const char *what[2] = { "scores", "logits" };
    const double *v[2] = { probs, logits };
    for (int k = 0; k < 2; k++) {
        atr_jw_key(&w, what[k]);
        atr_jw_object_begin(&w);
        for (size_t i = 0; i < m->n_candidates; i++)
            atr_jw_kv_pyfloat(&w, m->candidates[i], v[k][i]);
        atr_jw_object_end(&w);
    }
    atr_jw_key(&w, "features");
    atr_jw_object_begin(&w);
    for (size_t i = 0; i < ATR_ROUTER_N_FEATURES; i++)
        atr_jw_kv_pyfloat(&w, atr_router_feature_names[i], x[i]);
    atr_jw_object_end(&w);
    atr_jw_object_end(&w);
    atr_jw_finish(&w);
    atr_buf_putc(b, '\n');
}

/* Feature sets from stdin, one per non-empty line. */
static int decide_stdin(const struct atr_router_model *m, struct atr_buf *b,
                        struct atr_error *err)
{
    struct atr_input *in = atr_input_open("-", err);
    if (!in)
        return -1;
    const char *line;
    size_t len;
    int more, rc = 0;
    while (rc == 0 && (more = atr_input_getline(in, &line, &len, 1 << 16, err)) == 1) {
        if (len == 0)
            continue;
        char *spec = xstrndup(line, len);
        double x[ATR_ROUTER_N_FEATURES];
        rc = atr_router_parse_features(spec, "<stdin>", atr_input_lineno(in), x, err);
        if (rc == 0)
            decision_json(b, m, x, NULL, 0);
        free(spec);
    }
    atr_input_close(in);
    return rc < 0 || more < 0 ? -1 : 0;
}

/* Every llm turn of the traces in path. */
static int decide_trace(const struct router_args *a, const struct atr_router_model *m,
                        struct atr_buf *b, struct atr_error *err)
{
    struct atr_workload w = ATR_WORKLOAD_INIT;
    char *paths[1] = { (char *)a->trace };
    int rc = atr_workload_load(&w, paths, 1, a->from, 0, err);
    for (size_t s = 0; rc == 0 && s < w.n_sessions; s++)
        for (size_t t = 0; t < w.sessions[s].n_turns; t++) {
            struct atr_router_turn turn;
            double x[ATR_ROUTER_N_FEATURES];
            atr_router_turn_of(&w, s, t, &turn, x);
            decision_json(b, m, x, w.sessions[s].trace_id, t);
        }
    atr_workload_release(&w);
    return rc;
}

/* `router decide`: every line is made before any is printed, so a bad
 * feature set leaves no partial output. */
static int decide(const struct router_args *a, struct atr_error *err)
{
    struct atr_router_model m;
    if (atr_router_model_load(&m, a->model, err) < 0)
        return -1;
    struct atr_buf b = ATR_BUF_INIT;
    int rc = 0;
    if (a->trace) {
        rc = decide_trace(a, &m, &b, err);
    } else if (a->n_features) {
        for (size_t i = 0; rc == 0 && i < a->n_features; i++) {
            double x[ATR_ROUTER_N_FEATURES];
            rc = atr_router_parse_features(a->features[i], "--features", i + 1, x, err);
            if (rc == 0)
                decision_json(&b, &m, x, NULL, 0);
        }
    } else {
        rc = decide_stdin(&m, &b, err);
    }
    if (rc == 0 && b.len)
        fwrite(b.data, 1, b.len, stdout);
    atr_buf_release(&b);
    atr_router_model_release(&m);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "train") && strcmp(argv[1], "eval") &&
                     strcmp(argv[1], "decide")))
        return cli_usage_mode("router", argc, argv,
                              (const char *const[]){"train", "eval", "decide", NULL});
    struct router_args a;
    defaults(&a);
    a.eval = strcmp(argv[1], "eval") == 0;
    a.decide = strcmp(argv[1], "decide") == 0;
    int rc = parse_args(argc - 1, argv + 1, &a);
    if (rc == EXIT_OK) {
        struct atr_error err;
        char *const *paths = argv + 1 + a.first_arg;
        size_t n_paths = (size_t)(argc - 1 - a.first_arg);
        int r;
        if (a.decide) {
            r = decide(&a, &err);
        } else if (a.eval) {
            r = eval_file(&a, paths, n_paths, &err);
        } else {
            r = train_file(&a, paths, n_paths, &err);
        }
        rc = r < 0 ? cli_fail_err(&err) : EXIT_OK;
    }
    free(a.cand_list);
    for (size_t i = 0; i < a.n_features; i++)
        free(a.features[i]);
    free(a.features);
    return rc;
}

const struct atr_cmd cmd_router_entry = {
    "router", "train, evaluate and query the learned policy's metadata router (an MLP "
    "over simulated candidate runs)", help, run, NULL,
};
