/* fuzz-fmt-playwright.c - libFuzzer target for the playwright reader. */
#define FUZZ_FORMAT "playwright"
#include "reader.inc"
