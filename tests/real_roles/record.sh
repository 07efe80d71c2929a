#!/usr/bin/env bash
# Regenerates tests/real_roles/<scenario>/expected/ by running each scenario's site.yml with
# ansible-playbook against a throw-away sshd on 127.0.0.1 (logged in as root, as the
# integration test does), so anyone can re-check what tests/integration/real_roles.rs
# compares turbo-play with.
#
# Usage (as root, with openssh-server installed):
#   ANSIBLE_PLAYBOOK=/path/to/ansible-playbook bash tests/real_roles/record.sh [scenario...]
# The expected data was recorded with ansible-core 2.21.5.
#
# What it writes per scenario:
#   expected/files/...      the files the run left in out_dir, byte for byte
#   expected/files.txt      one line per path: "<path> <type> <octal mode> <owner> <group>"
#   expected/recap.txt      Ansible's PLAY RECAP line for the first run
#   expected/recap-again.txt  the same for a second run over the result (idempotence)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ansible_playbook=${ANSIBLE_PLAYBOOK:-ansible-playbook}
command -v "$ansible_playbook" >/dev/null || {
    echo "record.sh: $ansible_playbook not found; set ANSIBLE_PLAYBOOK" >&2
    exit 1
}

bash "$here/fetch.sh"

work=$(mktemp -d)
sshd_pid=
cleanup() {
    if [[ -n "$sshd_pid" ]]; then kill "$sshd_pid" 2>/dev/null || true; fi
    if [[ -n "${RECORD_LOGS:-}" ]]; then mkdir -p "$RECORD_LOGS" && cp "$work"/*.log "$RECORD_LOGS"/; fi
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=tests/real_roles/loopback.sh
source "$here/loopback.sh"
loopback_sshd "$work"
inventory=$(loopback_inventory "$work" "$port")
real_roles_paths "$repo"

if [[ $# -gt 0 ]]; then
    scenarios=("$@")
else
    scenarios=()
    for site in "$here"/*/site.yml; do scenarios+=("$(basename "$(dirname "$site")")"); done
fi

for scenario in "${scenarios[@]}"; do
    dir="$here/$scenario"
    out="$work/out-$scenario"
    mkdir -p "$out"
    run() {
        ANSIBLE_ROLES_PATH="$roles_path" ANSIBLE_COLLECTIONS_PATH="$collections_path" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
            "$ansible_playbook" -i "$inventory" "$dir/site.yml" -e "out_dir=$out" \
            >"$work/$scenario-$1.log" 2>&1 || {
            cat "$work/$scenario-$1.log" >&2
            echo "record.sh: $scenario: ansible-playbook failed" >&2
            exit 1
        }
        sed -n '/^PLAY RECAP/,$p' "$work/$scenario-$1.log" | grep '^loopback' | tr -s ' ' | sed 's/ *$//'
    }
    first=$(run first)
    again=$(run again)
    rm -rf "$dir/expected"
    mkdir -p "$dir/expected/files"
    cp -a "$out/." "$dir/expected/files/"
    (cd "$out" && find . -mindepth 1 -printf '%P %y %m %u %g\n' | sort) >"$dir/expected/files.txt"
    echo "$first" >"$dir/expected/recap.txt"
    echo "$again" >"$dir/expected/recap-again.txt"
    echo "record.sh: $scenario: $first"
done
