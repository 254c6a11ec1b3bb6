/* fuzz-fmt-mooncake.c - libFuzzer target for the mooncake reader. */
#define FUZZ_FORMAT "mooncake"
#include "reader.inc"
