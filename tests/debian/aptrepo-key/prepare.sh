#!/usr/bin/env bash
# A keyring holding the second test key (files/second.asc), for apt_key to delete it from.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/files/second.asc" "$HOST_ROOT/tmp/second.asc"
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C chroot "$HOST_ROOT" \
    apt-key --keyring /etc/apt/trusted.gpg.d/old.gpg add /tmp/second.asc >/dev/null 2>&1
rm -f "$HOST_ROOT/tmp/second.asc"
