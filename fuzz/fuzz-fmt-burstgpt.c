/* fuzz-fmt-burstgpt.c - libFuzzer target for the burstgpt reader. */
#define FUZZ_FORMAT "burstgpt"
#include "reader.inc"
