/* test-bench-spec.c - `atr bench` specs: parsing, defaults, model overrides,
 * placeholder expansion with shell quoting, every bad-spec error with its
 * position, and the names that may go into file names (docs/bench.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/run.h"
#include "bench/spec.h"

#define VARIANT "{\"server\": \"srv --port {port} --model {model}\", " \
                "\"ready_url\": \"http://127.0.0.1:{port}/health\"}"
#define ITEM "{\"human_commit\": \"c1\", \"parent_commit\": \"p1\", \"model\": \"m/a\"}"
/* The smallest valid spec: one variant, one item. */
#define MINIMAL "{\"format\": \"atr-bench-spec/1\", \"variants\": {\"baseline\": " VARIANT \
                "}, \"items\": [" ITEM "]}"

static struct atr_bench_spec *parse(const char *text, const char *path, struct atr_error *err)
{
    return atr_bench_spec_parse(text, strlen(text), path, err);
}

static void test_defaults(void **state)
{
    struct atr_error err;
    struct atr_bench_spec *s = parse(MINIMAL, "spec.json", &err);
    assert_non_null(s);
    assert_int_equal(s->port, 8000);
    assert_string_equal(s->workdir, "atr-bench");
    assert_null(s->cleanup);
    assert_int_equal(s->n_variants, 1);
    assert_string_equal(s->variants[0].name, "baseline");
    assert_null(s->variants[0].prepare);
    assert_false(s->variants[0].per_agent);
    assert_true(s->variants[0].startup_timeout_s == 300);
    assert_true(s->variants[0].benchmark_timeout_s == 900);
    assert_true(s->variants[0].prepare_timeout_s == 1800);
    assert_int_equal(s->min_free_disk, 0);
    assert_int_equal(s->repeat, 1);
    assert_int_equal(s->n_items, 1);
    assert_string_equal(s->items[0].human_commit_full, "c1");
    assert_int_equal(s->items[0].n_variants, 1);
    assert_int_equal(s->items[0].n_agents, 0);
    const struct atr_bench_workload *w = &s->workload;
    assert_int_equal(w->mode, ATR_BENCH_SERVING);
    assert_null(w->trace);
    assert_int_equal(w->requests, 100);
    assert_int_equal(w->input_tokens, 200);
    assert_int_equal(w->output_tokens, 64);
    assert_true(w->ignore_eos);
    assert_true(w->rate == 0 && w->concurrency == 0);
    atr_bench_spec_free(s);
}

static void test_repeat(void **state)
{
    struct atr_error err;
    const char *text = "{\"format\": \"atr-bench-spec/1\", \"repeat\": 5, \"variants\": "
                       "{\"baseline\": " VARIANT "}, \"items\": [" ITEM "]}";
    struct atr_bench_spec *s = parse(text, "spec.json", &err);
    assert_non_null(s);
    assert_int_equal(s->repeat, 5);
    atr_bench_spec_free(s);
}

static void test_example(void **state)
{
    struct atr_error err;
    struct atr_bench_spec *s =
        atr_bench_spec_load(ATR_TEST_DATA "/../../examples/bench/sim.json", &err);
    assert_non_null(s);
    assert_int_equal(s->n_variants, 3);
    assert_true(s->variants[2].per_agent);
    assert_int_equal(s->n_items, 2);
    assert_int_equal(s->items[0].n_agents, 4);
    assert_null(s->items[0].agents[3].patch);                   /* "none": null */
    assert_non_null(strstr(s->items[0].agents[0].patch, "examples/bench/patches/fast.flags"));
    assert_int_equal(s->workload.requests, 20);
    atr_bench_spec_free(s);
}

static void test_paths_from_spec_folder(void **state)
{
    const char *text = "{\"format\": \"atr-bench-spec/1\", \"workdir\": \"/abs/w\","
        "\"variants\": {\"agent\": {\"per_agent\": true, \"server\": \"s {patch}\","
        "\"ready_url\": \"u\"}}, \"items\": [{\"human_commit\": \"c\", \"parent_commit\": \"p\","
        "\"model\": \"m\", \"agents\": {\"a\": \"p/a.diff\", \"b\": \"/x/b.diff\"}}],"
        "\"workload\": {\"trace\": \"t.ndjson\"}}";
    struct atr_error err;
    struct atr_bench_spec *s = parse(text, "dir/sub/spec.json", &err);
    assert_non_null(s);
    assert_string_equal(s->workdir, "/abs/w");
    assert_string_equal(s->items[0].agents[0].patch, "dir/sub/p/a.diff");
    assert_string_equal(s->items[0].agents[1].patch, "/x/b.diff");
    assert_string_equal(s->workload.trace, "dir/sub/t.ndjson");
    assert_string_equal(s->dir, "dir/sub");              /* {spec_dir} */
    atr_bench_spec_free(s);
    s = parse(MINIMAL, "spec.json", &err);
    assert_string_equal(s->dir, ".");
    atr_bench_spec_free(s);
    s = parse(MINIMAL, "/spec.json", &err);
    assert_string_equal(s->dir, "/");
    atr_bench_spec_free(s);
}

static void test_overrides_and_item_variants(void **state)
{
    const char *text = "{\"format\": \"atr-bench-spec/1\", \"variants\": {\"baseline\": " VARIANT
        ", \"human\": " VARIANT "}, \"items\": [" ITEM ", {\"human_commit\": \"c2\","
        "\"parent_commit\": \"p2\", \"model\": \"m/b\", \"variants\": [\"human\"]}],"
        "\"model_overrides\": {\"m/a\": {\"to\": \"m/small\", \"reason\": \"too old\"}},"
        "\"workload\": {\"generate\": {\"requests\": 5, \"rate\": 2.5, \"ignore_eos\": false}}}";
    struct atr_error err;
    struct atr_bench_spec *s = parse(text, "s.json", &err);
    assert_non_null(s);
    const struct atr_bench_override *ov;
    assert_string_equal(atr_bench_model(s, &s->items[0], &ov), "m/small");
    assert_non_null(ov);
    assert_string_equal(ov->reason, "too old");
    assert_string_equal(atr_bench_model(s, &s->items[1], &ov), "m/b");
    assert_null(ov);
    assert_int_equal(s->items[0].n_variants, 2);
    assert_int_equal(s->items[1].n_variants, 1);
    assert_string_equal(s->items[1].variants[0]->name, "human");
    assert_int_equal(s->workload.requests, 5);
    assert_int_equal(s->workload.input_tokens, 200);
    assert_true(s->workload.rate == 2.5);
    assert_false(s->workload.ignore_eos);
    atr_bench_spec_free(s);
}

static void test_command_mode(void **state)
{
    const char *text = "{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT
        "}, \"items\": [" ITEM "], \"workload\": {\"mode\": \"command\","
        "\"command\": \"python bench.py --model {model}\"}}";
    struct atr_error err;
    struct atr_bench_spec *s = parse(text, "s.json", &err);
    assert_non_null(s);
    assert_int_equal(s->workload.mode, ATR_BENCH_COMMAND);
    assert_string_equal(s->workload.command, "python bench.py --model {model}");
    atr_bench_spec_free(s);
}

/* ---- placeholders ---- */

static char *expand(const char *tmpl, const char *patch, bool shell, struct atr_error *err)
{
    struct atr_bench_vars v = {"org/model-1", "abc123", "def456", patch, "/w d", 8001, "ex/b"};
    return atr_bench_expand(tmpl, &v, shell, err);
}

static void test_expand(void **state)
{
    struct atr_error err;
    char *s = expand("run {model} {port} {commit} {parent} {patch} {workdir} {spec_dir}",
                     "p.diff", true, &err);
    assert_string_equal(s, "run org/model-1 8001 abc123 def456 p.diff '/w d' ex/b");
    free(s);
    s = expand("{workdir}", NULL, false, &err);           /* URLs are not shell-quoted */
    assert_string_equal(s, "/w d");
    free(s);
    s = expand("awk '{{print $1}}' {{port}}", NULL, true, &err);
    assert_string_equal(s, "awk '{print $1}' {port}");
    free(s);
    s = expand("", NULL, true, &err);
    assert_string_equal(s, "");
    free(s);
}

static void test_expand_quotes_every_unsafe_value(void **state)
{
    struct atr_bench_vars v = {"it's; rm -rf /", "", "$(x)", NULL, "a`b`", 1, NULL};
    struct atr_error err;
    char *s = atr_bench_expand("{model}|{commit}|{parent}|{workdir}", &v, true, &err);
    assert_string_equal(s, "'it'\\''s; rm -rf /'|''|'$(x)'|'a`b`'");
    free(s);
}

static void test_expand_errors(void **state)
{
    struct atr_error err;
    assert_null(expand("x {modle}", NULL, true, &err));
    assert_non_null(strstr(err.msg, "unknown placeholder {modle}"));
    assert_null(expand("x {patch}", NULL, true, &err));
    assert_non_null(strstr(err.msg, "{patch} is not available here"));
    assert_null(expand("x {model", NULL, true, &err));
    assert_non_null(strstr(err.msg, "unclosed '{'"));
    assert_null(expand("x }", NULL, true, &err));
    assert_non_null(strstr(err.msg, "a lone '}'"));
}

/* ---- bad specs: each with the position and words of its error ---- */

struct bad_case {
    const char *text;
    const char *msg;   /* the whole error begins with this */
};

static const struct bad_case bad_cases[] = {
    {"", "b.json:1:1: "},
    {"{\"format\": \"atr-bench-spec/1\",}", "b.json:1:31: "},
    {"[]", "b.json:1:1: spec: expected an object, not array"},
    {"{}", "b.json:1:1: spec: missing \"format\""},
    {"{\"format\": \"x\"}", "b.json:1:12: format: expected \"atr-bench-spec/1\""},
    {"{\"format\": \"atr-bench-spec/1\", \"bogus\": 1}", "b.json:1:41: spec: unknown field \"bogus\""},
    {"{\"format\": \"atr-bench-spec/1\", \"items\": []}", "b.json:1:1: spec: missing \"variants\""},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {}}",
     "b.json:1:44: variants: expected at least one variant"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": 1}}",
     "b.json:1:50: variants.v: expected an object, not number"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"ready_url\": \"u\"}}}",
     "b.json:1:50: variants.v: missing \"server\" (or an \"image\" to run)"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"server\": 5, \"ready_url\": \"u\"}}}",
     "b.json:1:61: variants.v.server: expected a non-empty string"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"server\": \"s {gpu}\", "
     "\"ready_url\": \"u\"}}}",
     "b.json:1:61: variants.v.server: unknown placeholder {gpu}"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"server\": \"s {patch}\", "
     "\"ready_url\": \"u\"}}}",
     "b.json:1:61: variants.v.server: {patch} is not available here (only in a per_agent variant)"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"server\": \"s\", \"ready_url\": "
     "\"u\", \"startup_timeout_s\": \"5\"}}}",
     "b.json:1:105: variants.v.startup_timeout_s: expected a number from 0.001 to 604800"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": {\"server\": \"s\", \"ready_url\": "
     "\"u\", \"per_agent\": 1}}}",
     "b.json:1:97: variants.v.per_agent: expected true or false"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}}",
     "b.json:1:1: spec: missing \"items\""},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": {}}",
     "b.json:1:156: items: expected a non-empty array of items"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": "
     "[{\"human_commit\": \"c\", \"parent_commit\": \"p\"}]}",
     "b.json:1:157: items[0]: missing \"model\""},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     ", " ITEM ", {\"human_commit\": \"c\", \"parent_commit\": 7, \"model\": \"m\"}]}",
     "b.json:1:"},  /* items[2].parent_commit: checked below by words */
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": "
     "[{\"human_commit\": \"c\", \"parent_commit\": \"p\", \"model\": \"m\", \"variants\": "
     "[\"v\", \"turbo\"]}]}",
     "b.json:1:233: items[0].variants: unknown variant \"turbo\""},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": "
     "[{\"human_commit\": \"c\", \"parent_commit\": \"p\", \"model\": \"m\", \"agents\": "
     "{\"a\": 3}}]}",
     "b.json:1:231: items[0].agents.a: expected a patch file name or null"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     "], \"model_overrides\": {\"m/a\": {\"to\": \"m/b\"}}}",
     "b.json:1:"},  /* model_overrides.m/a: missing "reason" */
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     "], \"workload\": {\"mode\": \"offline\"}}", "b.json:1:"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     "], \"workload\": {\"mode\": \"command\"}}", "b.json:1:"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     "], \"workload\": {\"generate\": {\"rate\": 1, \"concurrency\": 4}}}", "b.json:1:"},
    {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": [" ITEM
     "], \"workload\": {\"generate\": {\"requests\": 0}}}", "b.json:1:"},
    {"{\"format\": \"atr-bench-spec/1\", \"port\": 70000}",
     "b.json:1:40: spec.port: expected an integer from 0 to 65535"},
    {"{\"format\": \"atr-bench-spec/1\", \"cleanup\": \"rm {patch}\"}",
     "b.json:1:43: spec.cleanup: {patch} is not available here"},
    {"{\"format\": \"atr-bench-spec/1\", \"repeat\": \"5\"}",
     "b.json:1:42: spec.repeat: expected an integer from 1 to 1000"},
    {"{\"format\": \"atr-bench-spec/1\", \"repeat\": 0}",
     "b.json:1:42: spec.repeat: expected an integer from 1 to 1000"},
    {"{\"format\": \"atr-bench-spec/1\", \"repeat\": 2.5}",
     "b.json:1:42: spec.repeat: expected an integer from 1 to 1000"},
};

/* The words of the cases whose column is long to count by hand (the
 * position is that of the value, or of the object a member is missing from). */
static const char *const bad_words[] = {
    [18] = "items[2].parent_commit: expected a non-empty string",
    [21] = "model_overrides.m/a: missing \"reason\"",
    [22] = "workload.mode: expected \"serving\" or \"command\"",
    [23] = "workload: mode \"command\" wants \"command\"",
    [24] = "workload.generate: give \"rate\" or \"concurrency\", not both",
    [25] = "workload.generate.requests: expected an integer from 1 to",
};

static void test_bad_specs(void **state)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        struct atr_error err = {{0}};
        struct atr_bench_spec *s = parse(bad_cases[i].text, "b.json", &err);
        if (s)
            fail_msg("case %zu parsed", i);
        if (strncmp(err.msg, bad_cases[i].msg, strlen(bad_cases[i].msg)) != 0)
            fail_msg("case %zu: got '%s', wanted '%s...'", i, err.msg, bad_cases[i].msg);
        if (i < sizeof bad_words / sizeof *bad_words && bad_words[i]
            && !strstr(err.msg, bad_words[i]))
            fail_msg("case %zu: got '%s', wanted '%s'", i, err.msg, bad_words[i]);
    }
}

/* ---- names: nothing a spec names may leave the output folder ---- */

static void test_name_ok(void **state)
{
    static const char *const good[] = {"baseline", "agent-no-cuda-graphs", "claude_code",
        "human.tuned", "e206b543", "v0.6.0", "-x", "a..b"};
    static const char *const bad[] = {"", ".", "..", ".hidden", "a/b", "../x", "a b",
        "x\n", "caf\xc3\xa9", "a\\b",
        "12345678901234567890123456789012345678901234567890123456789012345"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!atr_bench_name_ok(good[i]))
            fail_msg("refused \"%s\"", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (atr_bench_name_ok(bad[i]))
            fail_msg("took \"%s\"", bad[i]);
}

/* The result-path builder refuses a name the spec reader would have. */
static void test_run_name(void **state)
{
    char name[64];
    assert_int_equal(atr_bench_run_name(name, sizeof name, "e206b5433109", "agent", "codex"), 0);
    assert_string_equal(name, "e206b543_agent_codex");
    assert_int_equal(atr_bench_run_name(name, sizeof name, "c", "cleanup", NULL), 0);
    assert_string_equal(name, "c_cleanup");
    assert_int_equal(atr_bench_run_name(name, sizeof name, "../../..", "v", NULL), -1);
    assert_int_equal(atr_bench_run_name(name, sizeof name, "c", "../v", NULL), -1);
    assert_int_equal(atr_bench_run_name(name, sizeof name, "c", "v", "x/y"), -1);
    assert_int_equal(atr_bench_run_name(name, sizeof name, "c", "v", ".."), -1);
    assert_int_equal(atr_bench_run_name(name, 8, "c", "variant", NULL), -1);   /* cut */
}

/* One item's field set to value (JSON text), the rest valid. */
static struct atr_bench_spec *with_item(const char *fields, const char *variant,
                                        struct atr_error *err)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"format\": \"atr-bench-spec/1\", \"variants\": {\"%s\": "
             VARIANT "}, \"items\": [{\"model\": \"m/a\", %s}]}", variant, fields);
    return parse(text, "b.json", err);
}

static void test_commits_and_refs(void **state)
{
    static const char *const good[] = {
        "\"human_commit\": \"e206b543\", \"human_commit_full\": "
        "\"e206b5433109d298e53451015465b2bf8f03ef0a\", \"parent_commit\": \"HEAD~1\"",
        "\"human_commit\": \"v0.6.0\", \"human_commit_full\": \"refs/tags/v0.6.0\", "
        "\"parent_commit\": \"origin/main^\"",
        "\"human_commit\": \"c\", \"parent_commit\": \"p\", \"agents\": {\"claude_code\": null, "
        "\"trae-1.2\": null}",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        struct atr_error err;
        struct atr_bench_spec *s = with_item(good[i], "agent-no-cuda-graphs", &err);
        if (!s)
            fail_msg("case %zu: %s", i, err.msg);
        atr_bench_spec_free(s);
    }
}

struct bad_name {
    const char *fields, *variant;
    const char *msg;   /* the error holds this */
};

static const struct bad_name bad_names[] = {
    {"\"human_commit\": \"../../..\", \"parent_commit\": \"p\"", "v",
     "b.json:1:190: items[0].human_commit: expected a commit of 1 to 64 letters"},
    {"\"human_commit\": \"a/b\", \"parent_commit\": \"p\"", "v", "items[0].human_commit: "},
    {"\"human_commit\": \"-rf\", \"parent_commit\": \"p\"", "v", "items[0].human_commit: "},
    {"\"human_commit\": \"c\\u0000/../x\", \"parent_commit\": \"p\"", "v",
     "items[0].human_commit: "},
    {"\"human_commit\": \"c\", \"human_commit_full\": \"../x\", \"parent_commit\": \"p\"", "v",
     "items[0].human_commit_full: expected a commit (hex, a ref or a revision"},
    {"\"human_commit\": \"c\", \"parent_commit\": \"a/../../b\"", "v", "items[0].parent_commit: "},
    {"\"human_commit\": \"c\", \"parent_commit\": \"/etc\"", "v", "items[0].parent_commit: "},
    {"\"human_commit\": \"c\", \"parent_commit\": \"--upload-pack=x\"", "v",
     "items[0].parent_commit: "},
    {"\"human_commit\": \"c\", \"parent_commit\": \"a b\"", "v", "items[0].parent_commit: "},
    {"\"human_commit\": \"c\", \"parent_commit\": \"p\", \"agents\": {\"x/y\": \"p.diff\"}",
     "v", "items[0].agents: agent name \"x/y\" wants 1 to 64 letters"},
    {"\"human_commit\": \"c\", \"parent_commit\": \"p\", \"agents\": {\"..\": null}", "v",
     "items[0].agents: agent name \"..\""},
    {"\"human_commit\": \"c\", \"parent_commit\": \"p\"", "../v",
     "b.json:1:53: variants: variant name \"../v\" wants 1 to 64 letters"},
    {"\"human_commit\": \"c\", \"parent_commit\": \"p\"", ".hidden", "variant name \".hidden\""},
    {"\"human_commit\": \"c\", \"parent_commit\": \"p\"", "v\\u001b[2J",
     "variant name \"v?[2J\""},   /* a terminal escape is not echoed */
};

static void test_bad_names(void **state)
{
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        struct atr_error err = {{0}};
        struct atr_bench_spec *s = with_item(bad_names[i].fields, bad_names[i].variant, &err);
        if (s)
            fail_msg("case %zu parsed", i);
        if (strncmp(err.msg, "b.json:1:", 9) != 0 || !strstr(err.msg, bad_names[i].msg))
            fail_msg("case %zu: got '%s', wanted '%s'", i, err.msg, bad_names[i].msg);
    }
}

/* Two runs that would write one file name are refused when the spec is
 * read: the second would be skipped as done, the logs mixed. */
static void test_run_files_collide(void **state)
{
    static const char *const specs[][2] = {
        {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"v\": " VARIANT "}, \"items\": ["
         "{\"human_commit\": \"v0.6.0.post1\", \"parent_commit\": \"p\", \"model\": \"m\"},\n"
         "{\"human_commit\": \"v0.6.0.post2\", \"parent_commit\": \"p\", \"model\": \"m\"}]}",
         "c.json:2:1: items[1]: items[0] (v0.6.0.post1) variant v and items[1] (v0.6.0.post2) "
         "variant v would both write v0.6.0.p_v (results/, logs/)"},
        {"{\"format\": \"atr-bench-spec/1\", \"variants\": {\"agent\": {\"per_agent\": true, "
         "\"server\": \"s\", \"ready_url\": \"u\"}, \"agent_x\": " VARIANT "}, \"items\": ["
         "{\"human_commit\": \"c\", \"parent_commit\": \"p\", \"model\": \"m\", "
         "\"agents\": {\"x\": \"x.diff\"}}]}",
         "items[0] (c) agent x of variant agent and items[0] (c) variant agent_x would both "
         "write c_agent_x"},
        {"{\"format\": \"atr-bench-spec/1\", \"cleanup\": \"true\", \"variants\": "
         "{\"cleanup\": " VARIANT "}, \"items\": [" ITEM "]}",
         "variant cleanup would both write "},
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        struct atr_error err = {{0}};
        struct atr_bench_spec *s = parse(specs[i][0], "c.json", &err);
        if (s)
            fail_msg("case %zu parsed", i);
        if (!strstr(err.msg, specs[i][1]))
            fail_msg("case %zu: got '%s', wanted '%s'", i, err.msg, specs[i][1]);
    }
    /* the same commit prefix without a shared file: no cleanup, other variants */
    struct atr_error err;
    struct atr_bench_spec *s = parse(MINIMAL, "c.json", &err);
    assert_non_null(s);
    atr_bench_spec_free(s);
}

/* A spec made in code, not read: the runner refuses its names before it
 * makes the output folder or starts anything. */
static void test_runner_refuses_names(void **state)
{
    struct atr_error err;
    struct atr_bench_spec *s = parse(MINIMAL, "spec.json", &err);
    assert_non_null(s);
    char dir[] = "/tmp/atr-test-bench-names-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[64];
    snprintf(out, sizeof out, "%s/out", dir);
    s->variants[0].name = "../../escaped";
    struct atr_bench_run_opts o = {.out_dir = out, .port = -1};
    struct atr_bench_run_stats st;
    assert_int_equal(atr_bench_run(s, &o, &st, &err), -1);
    assert_non_null(strstr(err.msg, "variant \"../../escaped\": not a name for a file"));
    struct stat sb;
    assert_int_equal(stat(out, &sb), -1);
    assert_int_equal(rmdir(dir), 0);     /* nothing written beside it either */
    atr_bench_spec_free(s);
}

static void test_missing_file(void **state)
{
    struct atr_error err;
    assert_null(atr_bench_spec_load("/nonexistent/spec.json", &err));
    assert_non_null(strstr(err.msg, "/nonexistent/spec.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_repeat),
        cmocka_unit_test(test_example),
        cmocka_unit_test(test_paths_from_spec_folder),
        cmocka_unit_test(test_overrides_and_item_variants),
        cmocka_unit_test(test_command_mode),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_expand_quotes_every_unsafe_value),
        cmocka_unit_test(test_expand_errors),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_name_ok),
        cmocka_unit_test(test_run_name),
        cmocka_unit_test(test_commits_and_refs),
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_run_files_collide),
        cmocka_unit_test(test_runner_refuses_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
