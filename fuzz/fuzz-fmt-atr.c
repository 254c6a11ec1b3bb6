/* fuzz-fmt-atr.c - libFuzzer target for the atr-trace reader. */
#define FUZZ_FORMAT "atr"
#include "reader.inc"
