/* fuzz-fmt-otlp.c - libFuzzer target for the OTLP/JSON GenAI reader. */
#define FUZZ_FORMAT "otlp"
#include "reader.inc"
