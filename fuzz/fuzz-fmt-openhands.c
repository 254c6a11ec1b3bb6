/* fuzz-fmt-openhands.c - libFuzzer target for the openhands reader. */
#define FUZZ_FORMAT "openhands"
#include "reader.inc"
