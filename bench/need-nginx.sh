#!/bin/sh
# need-nginx.sh - prints the path of Debian's nginx, installing the package
# first when it is missing and we are root (the way the build installs its
# own dependencies); exit 1 with one message when there is none.
PATH=$PATH:/usr/sbin:/sbin
if ! command -v nginx >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "need-nginx.sh: installing Debian's nginx" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null 2>&1; } || true
fi
command -v nginx || { echo "need-nginx.sh: nginx is missing (apt-get install -y nginx)" >&2; exit 1; }
