#!/usr/bin/env bash
# The local repository (tests/debian/repos/deb.sh) copied into the host as /opt/turbo-repo
# but with its line commented out in /etc/apt/sources.list (for apt_repository to enable,
# with the cache update), the archive's line left out so that update stays on this
# machine; and files in sources.list.d holding a line to remove (one with nothing else),
# removed first: apt-get update would fail on their hosts. Disabled lines are kept.
set -euo pipefail
repo_dir=$(bash "$REPO/tests/debian/repos/deb.sh")
rm -rf "$HOST_ROOT/opt/turbo-repo"
mkdir -p "$HOST_ROOT/opt"
cp -r "$repo_dir" "$HOST_ROOT/opt/turbo-repo"
chmod -R a+rX "$HOST_ROOT/opt/turbo-repo"
cat >"$HOST_ROOT/etc/apt/sources.list" <<'LIST'
## the local repository, off for now
#deb  [trusted=yes]   file:/opt/turbo-repo ./   # local

LIST
printf 'deb http://gone.invalid/debian stable main\n' >"$HOST_ROOT/etc/apt/sources.list.d/gone.list"
printf '# kept\ndeb http://gone.invalid/debian stable main\n#deb http://gone.invalid/debian stable main\n' \
    >"$HOST_ROOT/etc/apt/sources.list.d/mixed.list"
