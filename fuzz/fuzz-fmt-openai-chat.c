/* fuzz-fmt-openai-chat.c - libFuzzer target for the openai-chat reader. */
#define FUZZ_FORMAT "openai-chat"
#include "reader.inc"
