#!/usr/bin/env bash
# Regenerates tests/debian/<scenario>/expected/ by running each scenario's site.yml with
# ansible-playbook against a fresh Debian test host (the base of build-base.sh, logged in
# as deploy), so anyone can re-check what tests/integration/debian_targets.rs compares
# turbo-play with.
#
# Usage (as root):
#   ANSIBLE_PLAYBOOK=/path/to/ansible-playbook bash tests/debian/record.sh [scenario...]
# The expected data was recorded with ansible-core 2.21.5.
#
# What it writes per scenario (OUT is the directory the scenario writes, /home/deploy/out):
#   expected/files/...        the files under OUT inside the host, byte for byte
#   expected/files.txt        one line per path: "<path> <type> <octal mode> <owner> <group>"
#   expected/recap.txt        Ansible's PLAY RECAP line for the first run
#   expected/recap-again.txt  the same for a second run (idempotence)
#   expected/packages.txt     the packages installed ("+ name\tversion") and removed
#                             ("- ...") from the fresh host to after both runs
#   expected/etc.txt          what changed under /etc from the fresh host to after both
#                             runs: "- <line>" gone, "+ <line>" new, a line a path as
#                             support/debian.rs's DebianHost::snapshot lists it
# A scenario's prepare.sh, if any, runs first (see support/debian_scenario.rs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ansible_playbook=${ANSIBLE_PLAYBOOK:-ansible-playbook}
command -v "$ansible_playbook" >/dev/null || {
    echo "record.sh: $ansible_playbook not found; set ANSIBLE_PLAYBOOK" >&2
    exit 1
}
OUT=/home/deploy/out
NAME=debian-target

bash "$here/build-base.sh"
# shellcheck source=tests/debian/host.sh
source "$here/host.sh"
debian_base "$repo"

work=
cleanup() {
    debian_host_stop
    if [[ -n "$work" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

if [[ $# -gt 0 ]]; then
    scenarios=("$@")
else
    scenarios=()
    for site in "$here"/*/site.yml; do scenarios+=("$(basename "$(dirname "$site")")"); done
fi

# /etc inside the started host, one sorted line a path:
# "<path> <type> <mode> <owner> <group> <sha256 of a file | a link's target | ->".
etc_snapshot() {
    local listing sums
    listing=$(mktemp)
    sums=$(mktemp)
    debian_host_run find /etc -mindepth 1 -printf '%P\0%y %m %u %g %l\0' >"$listing"
    # As debian.rs's SNAPSHOT_SUMS: a shadow file's digest leaves out each entry's day of
    # the last password change (the day the recording was made).
    debian_host_run sh -c 'cd "$1" && find . -type f -print0 | xargs -0r sha256sum -- &&
        for f in shadow shadow-; do [ -f "$f" ] || continue;
        printf "%s  ./%s\n" "$(sed -E "s/^([^:]*:[^:]*:)[0-9]*:/\1:/" "$f" | sha256sum | cut -d" " -f1)" "$f"; done' sh /etc >"$sums"
    python3 - "$listing" "$sums" <<'PY'
import sys
fields = open(sys.argv[1], "rb").read().decode().split("\0")
sums = {}
for line in open(sys.argv[2], "rb").read().decode().splitlines():
    if "  " in line:
        digest, path = line.split("  ", 1)
        sums[path.removeprefix("./")] = digest
lines = []
for path, meta in zip(fields[0::2], fields[1::2]):
    kind, mode, owner, group, link = meta.split(" ", 4)
    tail = sums.get(path, "?") if kind == "f" else link if kind == "l" else "-"
    lines.append(f"{path} {kind} {mode} {owner} {group} {tail}")
sys.stdout.write("".join(line + "\n" for line in sorted(lines, key=lambda l: l.encode())))
PY
    rm -f "$listing" "$sums"
}

packages() { debian_host_run dpkg-query -W -f '${Package}\t${Version}\n'; }

# The lines only in $1 as "- line", only in $2 as "+ line", sorted by the line (as
# debian_scenario.rs's changes()).
etc_changes() {
    python3 - "$1" "$2" <<'PY'
import sys
old = set(open(sys.argv[1], "rb").read().decode().splitlines())
new = set(open(sys.argv[2], "rb").read().decode().splitlines())
lines = [(l, "-") for l in old - new] + [(l, "+") for l in new - old]
lines.sort(key=lambda pair: (pair[0].encode(), pair[1]))
sys.stdout.write("".join(f"{sign} {line}\n" for line, sign in lines))
PY
}

for scenario in "${scenarios[@]}"; do
    dir="$here/$scenario"
    # Beside the base: overlayfs needs its upper directory on a filesystem like the base's.
    work=$(mktemp -d "$repo/target/debian/record-XXXXXX")
    debian_host_start "$work" "$NAME"
    debian_host_line "$work" "$NAME" >"$work/inventory"
    etc_snapshot >"$work/etc-before"
    packages >"$work/packages-before"
    # No ansible.cfg of the machine's or the caller's.
    : >"$work/ansible.cfg"
    if [[ -f "$dir/prepare.sh" ]]; then
        HOST_ROOT="$host_root" HOST_NAME="$NAME" REPO="$repo" bash "$dir/prepare.sh"
    fi
    run() {
        ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_CONFIG="$work/ansible.cfg" \
            "$ansible_playbook" -i "$work/inventory" "$dir/site.yml" >"$work/$1.log" 2>&1 || {
            cat "$work/$1.log" >&2
            echo "record.sh: $scenario: ansible-playbook failed" >&2
            exit 1
        }
        sed -n '/^PLAY RECAP/,$p' "$work/$1.log" | grep "^$NAME" | tr -s ' ' | sed 's/ *$//'
    }
    first=$(run first)
    again=$(run again)
    rm -rf "$dir/expected"
    mkdir -p "$dir/expected/files"
    # Contents only: files.txt keeps the modes and owners.
    cp -r "$host_root$OUT/." "$dir/expected/files/"
    # Owners by their names inside the host (uids differ from the outside's).
    debian_host_run find "$OUT" -mindepth 1 -printf '%P %y %m %u %g\n' | sort >"$dir/expected/files.txt"
    packages >"$work/packages-after"
    etc_changes "$work/packages-before" "$work/packages-after" >"$dir/expected/packages.txt"
    etc_snapshot >"$work/etc-after"
    etc_changes "$work/etc-before" "$work/etc-after" >"$dir/expected/etc.txt"
    echo "$first" >"$dir/expected/recap.txt"
    echo "$again" >"$dir/expected/recap-again.txt"
    echo "record.sh: $scenario: $first"
    debian_host_stop
    rm -rf "$work"
    work=
done
