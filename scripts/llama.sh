#!/bin/sh
# llama.sh [--path|--status] - llama.cpp's llama-server, the real engine of
# atr's engine tests, demo and simulator validation (docs/engines.md).
#
# Debian has no llama.cpp package and no npm package ships the server, but
# npm's node-llama-cpp carries llama.cpp's full source as a git bundle of a
# pinned release. This builds llama-server from it once (CMake + Ninja,
# static, CPU only, ~4-5 min on 2 CPUs) into a cache outside the tree, keyed
# by the pinned version, and prints the binary's path. Never committed.
#
#   (no option)  build when missing, print the path (exit 1 if it cannot)
#   --path       print the path when built, else exit 1 (never builds)
#   --status     one line for a summary: where it is, or why it is missing
#   --package    the npm package whose source bundle is built (pinned)
#   --cmake-flags  the configuration used (examples/bench/llama builds
#                variants of it)
#
# ATR_LLAMA_SERVER=PATH uses a llama-server built elsewhere instead.
set -eu
NLC=3.21.1                        # node-llama-cpp: llama.cpp release v0.4.0
dir=${ATR_LLAMA_DIR:-${XDG_CACHE_HOME:-${HOME:-.}/.cache}/atr/llama-server-nlc$NLC}
bin=$dir/llama-server
FLAGS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF
 -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"

if [ -n "${ATR_LLAMA_SERVER:-}" ]; then
    [ -x "$ATR_LLAMA_SERVER" ] || { echo "llama.sh: ATR_LLAMA_SERVER=$ATR_LLAMA_SERVER is not executable" >&2; exit 1; }
    bin=$ATR_LLAMA_SERVER
fi
case "${1:-}" in
--package) echo "node-llama-cpp@$NLC"; exit 0 ;;
--cmake-flags) echo $FLAGS; exit 0 ;;
--path)
    [ -x "$bin" ] && echo "$bin" && exit 0
    exit 1 ;;
--status)
    if [ -x "$bin" ]; then echo "llama-server: $bin ($(cat "$dir/VERSION" 2>/dev/null || echo external))"
    elif [ -f "$dir/build.log" ]; then echo "llama-server: not built, engine tests skipped (build failed: $dir/build.log)"
    else echo "llama-server: not built, engine tests skipped (run sh scripts/llama.sh)"; fi
    exit 0 ;;
"") ;;
*) echo "usage: llama.sh [--path|--status|--package|--cmake-flags]" >&2; exit 2 ;;
esac
[ -x "$bin" ] && echo "$bin" && exit 0

for t in npm git cmake ninja g++; do
    command -v "$t" >/dev/null 2>&1 || { echo "llama.sh: $t is missing (sh scripts/deps.sh installs it)" >&2; exit 1; }
done
mkdir -p "$dir"
# Two builds at once (two checkouts' `make check`) would race: the second
# waits for the first and then finds its binary.
exec 9>"$dir/lock"
flock 9
[ -x "$bin" ] && echo "$bin" && exit 0

echo "llama.sh: building llama-server (node-llama-cpp $NLC) into $dir, a few minutes, once" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$dir/build.log
jobs=$(nproc 2>/dev/null || echo 2)
if ! (
    cd "$tmp" &&
    npm pack --silent "node-llama-cpp@$NLC" &&
    tar -xzf "node-llama-cpp-$NLC.tgz" package/llama/gitRelease.bundle package/llama/binariesGithubRelease.json &&
    git clone -q package/llama/gitRelease.bundle src &&
    cmake -S src -B src/build -G Ninja $FLAGS &&
    ninja -C src/build -j"$jobs" llama-server
) >"$log" 2>&1; then
    echo "llama.sh: build failed, see $log: $(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-300)" >&2
    exit 1
fi
release=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$tmp/package/llama/binariesGithubRelease.json")
cp "$tmp/src/build/bin/llama-server" "$bin.tmp"
echo "llama.cpp $release from node-llama-cpp $NLC" >"$dir/VERSION"
mv "$bin.tmp" "$bin"
rm -f "$log"
echo "$bin"
