/* fuzz-fmt-mini-swe-agent.c - libFuzzer target for the mini-swe-agent reader. */
#define FUZZ_FORMAT "mini-swe-agent"
#include "reader.inc"
