/* fuzz-fmt-browsergym.c - libFuzzer target for the BrowserGym (Go-Browse-WA) reader. */
#define FUZZ_FORMAT "browsergym"
#include "reader.inc"
