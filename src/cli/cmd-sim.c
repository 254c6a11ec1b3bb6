/* cmd-sim.c - `atr sim run`: the llm steps of traces through the engine
 * model in virtual time, reported as `vllm bench serve` reports a run;
 * dispatches `atr sim serve` (cmd-sim-serve.c). */
#include <string.h>

#include "cli/cmd.h"
#include "cli/sim-run.h"

static const char help[] =
    "usage: atr sim run [OPTIONS] TRACE... --profile GPU/MODEL\n"
    "       atr sim serve [OPTIONS] (--profile GPU/MODEL | --ttft MS --itl MS)\n"
    "       atr sim calibrate --target URL -o FILE [OPTIONS]\n"
    "\n"
    "`sim run` replays the llm steps of traces through atr's serving-engine\n"
    "model in virtual time (docs/sim.md, docs/sim-engine.md): continuous\n"
    "batching, chunked prefill, paged KV cache, a prefix cache over the steps'\n"
    "hash_ids with LRU eviction, preemption, and a cost per iteration from\n"
    "the GPU's compute and memory work and the engine's CPU work. It prints\n"
    "the result block `vllm bench serve` prints, then the engine's own\n"
    "figures, and writes the same files as `atr replay llm`\n"
    "(the result JSON also gets an \"engine\" object under \"atr\").\n"
    "`sim serve` runs the same engine in real time behind an OpenAI-compatible\n"
    "HTTP server (see `atr sim serve --help`). `sim calibrate` fits a CPU\n"
    "profile of the llama.cpp flavour to a running llama-server (see `atr sim\n"
    "calibrate --help`).\n"
    "\n"
    "options of sim run:\n"
    "  -p, --profile GPU/MODEL   e.g. h100/llama-3.1-8b (required)\n"
    "      --tp N                tensor parallel degree (default 1)\n"
    "      --max-num-seqs N      default 256\n"
    "      --max-num-batched-tokens N   default 8192 (--scheduler v0: the model's\n"
    "                            max length)\n"
    "      --no-prefix-caching   disable the prefix cache\n"
    "      --skip-oversized      reject a request too long for the KV cache as vLLM\n"
    "                            does (a failed request, its session goes on)\n"
    "                            instead of stopping the run\n"
    "      --kv-retain SECONDS   keep each finished request's KV blocks pinned this\n"
    "                            long (never evicted; the oldest pin gives way when\n"
    "                            another request needs the memory), so a session's\n"
    "                            next turn after a tool pause finds its prefix; the\n"
    "                            cost shows as evictions and kv_pins_dropped\n"
    "      --save-result FILE    the result JSON (vLLM's --save-result keys + \"atr\")\n"
    "      --requests-out FILE   one line per request\n"
    "      --goodput SLOS        e.g. ttft:500 tpot:50 e2el:10000 (milliseconds);\n"
    "                            session:MS: a session's completion time (its\n"
    "                            good sessions and sessions/s in the block)\n"
    "      --percentiles P,P...  percentiles of every latency figure, e.g.\n"
    "                            50,90,95,99,99.9 (default 99; sessions 90,99);\n"
    "                            vLLM's --metric-percentiles is the same option\n"
    "      --iterations-out FILE one line per engine iteration (batch, prefill\n"
    "                            tokens, decoding sequences, KV blocks over time;\n"
    "                            one policy, one replica)\n"
    "      --policy P[,P...]     run under each runtime policy in turn: naive,\n"
    "                            prefix-cache, prefix-route, compaction, max-tokens,\n"
    "                            learned (docs/policies.md); with several, output\n"
    "                            files get .P before their extension and a table\n"
    "                            compares them (as atr compare)\n"
    "      --policy-options K=V[,K=V...]   policy options; NAME.K=V for one policy\n"
    "                            of a list (e.g. compaction.budget=8192)\n"
    "      --repeat N            run each policy N times, interleaved (A, B, A, B,\n"
    "                            ...); repeat r with --seed S + r - 1 (fresh gaps\n"
    "                            of --rate; the traces and their own times are the\n"
    "                            same each time); files get .rK before their\n"
    "                            extension and \"repeat\": K; a table follows with\n"
    "                            per metric the median and 95 % interval, the\n"
    "                            ratio to naive with its interval and a verdict\n"
    "                            (--repeat 1: intervals within each run, over its\n"
    "                            requests; docs/statistics.md). A repeat that fails\n"
    "                            is left out and counted (exit 1 at the end)\n"
    "      --replicas N          engine replicas the policy routes over (default 1)\n"
    "      --engine vllm|sglang|llama.cpp   engine flavour: FCFS, 16-token block\n"
    "                            cache, CPU work between steps (vllm, default);\n"
    "                            SGLang's longest-prefix-first, radix cache (one copy\n"
    "                            per prefix, leaf-first eviction), CPU work overlapped\n"
    "                            with the GPU; or llama-server's fixed slots, each\n"
    "                            with its own prefix cache, and a RAM prompt cache\n"
    "                            (docs/sim-engine.md)\n"
    "      --parallel N          llama.cpp: slots (llama-server -np; default 4)\n"
    "      --ctx-size N          llama.cpp: context of all slots together (-c;\n"
    "                            default: the model's length), split evenly\n"
    "      --cache-ram MIB       llama.cpp: the RAM prompt cache (default 8192; 0 off)\n"
    "      --slot-prompt-similarity F   llama.cpp: share of a prompt an idle slot's\n"
    "                            cache must hold to be chosen for it (default 0.1)\n"
    "      --ubatch-size N       llama.cpp: physical batch (-ub; default 512); the\n"
    "                            logical batch (-b) is --max-num-batched-tokens,\n"
    "                            2048 unless given\n"
    "      --scheduler v1|v0     vLLM's scheduler: decodes first, then prefill\n"
    "                            chunks in the same step (v1, default); or V0's\n"
    "                            default without chunked prefill: waiting prompts\n"
    "                            first, whole, in prefill-only steps that pause the\n"
    "                            decodes (token budget: the model's max length\n"
    "                            unless --max-num-batched-tokens is given)\n"
    "      --num-scheduler-steps K   with --scheduler v0: a decode-only batch runs\n"
    "                            K steps without the scheduler between them, its\n"
    "                            tokens delivered at the end (vLLM V0's multi-step\n"
    "                            scheduling; default 1)\n"
    "      --offline             no API server in front of the engine (as vLLM's\n"
    "                            offline LLM class): requests reach the scheduler\n"
    "                            when sent, without the front end's time\n"
    "      --max-model-len N     prompt + output tokens a request may have, as\n"
    "                            sim serve's (default: the model's); one longer\n"
    "                            fails at once, as vLLM refuses it\n"
    "      --timeout S           fail a request not over S seconds after it got its\n"
    "                            slot, as replay llm's client does (default 600;\n"
    "                            0: none)\n"
    "      --stall-timeout S     fail a request that got no token for S seconds\n"
    "                            (from its slot, then from each token), as replay\n"
    "                            llm's client (default 60; 0: none)\n"
    "  -f, --from FMT            input format instead of sniffing\n"
    "  -q, --quiet               no result block, no progress\n"
    SCHED_HELP
    "\n"
    "GPUs: h100 h200 a100-80g l4 rtx3090 rtx4090; CPUs for --engine llama.cpp:\n"
    "cpu2-tiny cpu2-small. Models: llama-3.1-8b llama-3.2-1b llama-3.2-3b\n"
    "llama-3-70b qwen3-4b qwen3-4b-awq qwen3-8b qwen1.5-0.5b qwen2.5-0.5b\n"
    "qwen2.5-1.5b qwen2.5-3b qwen2.5-7b qwen2.5-14b qwen3-0.6b qwen3-1.7b; atr\n"
    "gen --kind gguf's atr-tiny atr-small; more from files on ATR_PROFILE_PATH\n"
    "(docs/sim.md).\n";

static const struct opts_cmd parser = {"sim run", sim_run_options};

static int run(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return cmd_sim_serve(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "calibrate") == 0)
        return cmd_sim_calibrate(argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return cli_usage_mode("sim", argc, argv,
                              (const char *const[]){"run", "serve", "calibrate", NULL});
    argc--;
    argv++;
    struct sim_run_args a;
    sim_run_args_init(&a);
    int rc = opts_parse(&parser, &a, argc, argv, &a.first_arg);
    if (rc == EXIT_OK)
        rc = sim_run_args_check(&a, argc, "sim run");
    if (rc == EXIT_OK)
        rc = sim_run_exec(&a, argc, argv);
    sim_run_args_release(&a);
    return rc;
}

static const struct atr_cmd_mode modes[] = {
    {"serve", cmd_sim_serve_help}, {"calibrate", cmd_sim_calibrate_help}, {NULL, NULL},
};

const struct atr_cmd cmd_sim_entry = {
    "sim", "the serving-engine model: `sim run` replays llm steps in virtual time, "
    "`sim serve` serves the OpenAI API", help, run, modes,
};
