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

for scenario in "${scenarios[@]}"; do
    dir="$here/$scenario"
    # Beside the base: overlayfs needs its upper directory on a filesystem like the base's.
    work=$(mktemp -d "$repo/target/debian/record-XXXXXX")
    debian_host_start "$work" "$NAME"
    debian_host_line "$work" "$NAME" >"$work/inventory"
    # No ansible.cfg of the machine's or the caller's.
    : >"$work/ansible.cfg"
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
    echo "$first" >"$dir/expected/recap.txt"
    echo "$again" >"$dir/expected/recap-again.txt"
    echo "record.sh: $scenario: $first"
    debian_host_stop
    rm -rf "$work"
    work=
done
