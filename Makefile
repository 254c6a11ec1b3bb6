# Top-level wrapper around CMake. `make demo` and `make check` work on a fresh
# Debian 12 machine: both first install any missing Debian packages.
JOBS ?= $(shell nproc)
BUILD ?= build
ATR = $(BUILD)/atr

.PHONY: all deps build demo check unit-asan fuzz bench bench-tools bench-sim bench-client bench-llama clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) -- --no-print-directory

demo: build
	@sh scripts/demo.sh $(ATR)

# Tests ctest runs at once: most of the black-box files (cli/NAME) wait on
# servers, timeouts and Chromium rather than compute, so two per CPU keep
# the CPUs busy without crowding the ones that do compute.
TEST_JOBS ?= $(shell echo $$(($(JOBS) * 2)))

# All tests: unit + CLI golden tests on the release build (gcc), all of
# them again built with clang under AddressSanitizer + UndefinedBehavior-
# Sanitizer (the same goldens, so output cannot depend on the compiler), and
# a short run of every fuzz target (`make fuzz` runs longer).
check: build unit-asan
	@cd build-asan && ctest --output-on-failure -j$(TEST_JOBS)
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=3
	@cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS)
	@sh scripts/llama.sh --status

unit-asan: deps
	@CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATR_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j$(JOBS) -- --no-print-directory

# Each libFuzzer target for FUZZ_SECONDS, seeded from tests/data.
FUZZ_SECONDS ?= 20
fuzz: deps
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATR_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j$(JOBS) -- --no-print-directory
	@sh fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

bench: build
	@sh bench/convert/run.sh $(ATR)

bench-tools: build
	@sh bench/tool-overhead/run.sh $(ATR)

bench-sim: build
	@sh bench/sim/run.sh $(ATR)

bench-client: build
	@sh bench/replay-client/run.sh $(ATR)

bench-llama: build
	@sh bench/llama/run.sh $(ATR)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
