/* fuzz-fmt-swe-agent.c - libFuzzer target for the SWE-agent .traj reader. */
#define FUZZ_FORMAT "swe-agent"
#include "reader.inc"
