#!/bin/sh
# prepare.sh WORK PATCH|- [CMAKE_FLAG...] - one variant of llama.cpp's
# llama-server for examples/bench/llama.json (`atr bench run`'s prepare):
# the pinned source (scripts/llama.sh --package), the patch applied, built
# incrementally, left as WORK/current/llama-server for the server command.
#
#   WORK/src      git clone of the pinned release's source bundle (once)
#   WORK/build    one CMake + Ninja build folder shared by every variant:
#                 the tree is reset to the release before each patch, and
#                 git rewrites only the files that differ, so ninja rebuilds
#                 only what the previous and this variant's patch touch (a
#                 changed CMake flag rebuilds what it changes: GGML_NATIVE
#                 all of ggml-cpu)
#   WORK/bin/KEY  each built binary, KEY the hash of the flags and the
#                 patch, so a second bench run builds nothing
#
# A patch that does not apply, or a build that fails, exits 1 with its
# reason as the last line (the run's outcome is patch_failed, that line
# its error). Builds use -j2 (ATR_LLAMA_JOBS).
set -eu
[ $# -ge 2 ] || { echo "usage: prepare.sh WORK PATCH|- [CMAKE_FLAG...]" >&2; exit 2; }
work=$1 patch=$2
shift 2
llama_sh=$(cd "$(dirname "$0")/../../.." && pwd)/scripts/llama.sh
flags="$(sh "$llama_sh" --cmake-flags) $*"
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Two bench runs sharing WORK would patch one tree at once: the second waits.
exec 9>"$work/lock"
flock 9

if [ ! -d "$work/src/.git" ]; then
    pkg=$(sh "$llama_sh" --package)
    echo "prepare: cloning the source of $pkg into $work/src (once)"
    rm -rf "$work/src" "$work/pack"
    mkdir -p "$work/pack"
    (cd "$work/pack" && npm pack --silent "$pkg" >/dev/null &&
        tar -xzf ./*.tgz package/llama/gitRelease.bundle)
    git -c advice.detachedHead=false clone -q "$work/pack/package/llama/gitRelease.bundle" "$work/src"
    rm -rf "$work/pack"
fi

key=$( { echo "$flags"; [ "$patch" = - ] || cat "$patch"; } | sha256sum | cut -c1-16)
if [ -x "$work/bin/$key/llama-server" ]; then
    ln -sfn "bin/$key" "$work/current"
    echo "prepare: $work/bin/$key/llama-server built before (flags and patch unchanged)"
    exit 0
fi

# The release as it was, then this variant's patch.
git -C "$work/src" checkout -q -f HEAD
git -C "$work/src" clean -q -f -d
if [ "$patch" != - ] && ! git -C "$work/src" apply --verbose "$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")"; then
    echo "patch does not apply: $patch"
    exit 1
fi

t0=$(date +%s)
# shellcheck disable=SC2086 # the flags are words
cmake -S "$work/src" -B "$work/build" -G Ninja $flags >"$work/configure.log" 2>&1 ||
    { tail -n 20 "$work/configure.log"; echo "configure failed: $(grep -m1 'Error' "$work/configure.log")"; exit 1; }
if ! ninja -C "$work/build" -j"${ATR_LLAMA_JOBS:-2}" llama-server >"$work/ninja.log" 2>&1; then
    tail -n 30 "$work/ninja.log"
    echo "build failed: $(grep -m1 'error:' "$work/ninja.log" | sed "s|$work/src/||")"
    exit 1
fi
steps=$(sed -n 's/^\[[0-9]*\/\([0-9]*\)\].*/\1/p' "$work/ninja.log" | tail -n 1)
mkdir -p "$work/bin/$key"
cp "$work/build/bin/llama-server" "$work/bin/$key/llama-server.tmp"
mv "$work/bin/$key/llama-server.tmp" "$work/bin/$key/llama-server"
ln -sfn "bin/$key" "$work/current"
echo "prepare: built $work/bin/$key/llama-server in $(( $(date +%s) - t0 )) s (${steps:-0} ninja steps; flags:$* patch: $patch)"
