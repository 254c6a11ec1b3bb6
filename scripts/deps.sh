#!/bin/sh
# Installs the Debian packages atr needs to build and test, only those missing.
# Runs as root on a fresh Debian 12 machine (CI, developers); no-op when all present.
set -eu
pkgs="cmake make gcc clang pkg-config python3 zlib1g-dev libzstd-dev
      libxxhash-dev libzip-dev libcmocka-dev libclang-rt-14-dev zstd gzip
      libevent-dev libcurl4-openssl-dev curl
      busybox-static iproute2 procps"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
