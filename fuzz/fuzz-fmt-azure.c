/* fuzz-fmt-azure.c - libFuzzer target for the azure reader. */
#define FUZZ_FORMAT "azure"
#include "reader.inc"
