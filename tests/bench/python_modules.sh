#!/usr/bin/env bash
# The Python-module benchmark (issue 14): 100 calls of one collection module,
# community.general.ini_file, as 100 separate tasks and as one 100-item loop, on 1 and 3
# hosts, first run (no ini file, empty module cache on the targets; the agent itself is
# cached) and rerun (nothing changes); turbo-play, ansible-playbook (pipelining,
# ControlPersist) and Ansible+Mitogen (mitogen_linear) in the same run, against a loopback
# sshd with throw-away users (one per host, each its own home, so every host has its own
# caches and interpreters). Every connection goes through count_proxy.py, which counts the
# bytes and the round trips. Needs root (sshd, useradd). Prints Markdown tables; not a test.
#
#   bash tests/python_modules/fetch.sh && cargo build --release && tests/bench/python_modules.sh
#   BENCH_TOOLS="turbo mitogen" BENCH_HOSTS=1 BENCH_SHAPES=loop tests/bench/python_modules.sh
#
# Knobs (environment):
#   BENCH_TURBO_BIN  turbo-play binary (default target/release/turbo-play; build it first)
#   BENCH_VENV       a venv with ansible-core and mitogen (default .bench/venv, else
#                    /work/main/.bench/venv; tests/bench/run.sh makes one)
#   BENCH_TOOLS      turbo ansible mitogen
#   BENCH_HOSTS      host counts (default "1 3")
#   BENCH_SHAPES     tasks loop (100 separate tasks; one task looping over 100 items)
#   BENCH_CALLS      calls per playbook (default 100)
#   BENCH_REPEAT     runs of each row (default 1); the summary takes each row's median, so
#                    that one burst of load on a shared machine does not make the figure
#   BENCH_KEEP=1     keep the scratch directory (outputs of every run)
#
# The collections come from the `ansible` package as tests/python_modules/fetch.sh unpacks
# them (target/python-modules/collections); all three tools get that collections path, and
# turbo-play packs modules with the venv's ansible-core (TURBO_ANSIBLE_PYTHON).
#
# "payload sends" is how many times the module's files crossed the wire, over all hosts:
# for turbo-play the payloads the agents wrote into their caches (written only from files
# the controller sent, which it sends only to an agent that lacks them; the first run's
# extra bytes up over the rerun's are that payload); Ansible's pipelining sends the
# AnsiballZ payload with every call; Mitogen's file service serves each module file once
# per target interpreter, which this script does not count (its bytes are in the table).
# BENCH_TURBO_AGENT=path runs turbo-play with another agent build (TURBO_PLAY_AGENT), to
# compare agents under one controller.
set -euo pipefail
ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$ROOT"
BENCH_NAME=python_modules
BENCH_WORK=$(mktemp -d /tmp/bench-pymod.XXXXXX)
chmod 755 "$BENCH_WORK"
# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_setup_cleanup
WORK=$BENCH_WORK
BIN=${BENCH_TURBO_BIN:-target/release/turbo-play}
VENV=$(bench_find_venv)
BENCH_VENV_DIR=$VENV
TOOLS=${BENCH_TOOLS:-turbo ansible mitogen}
HOST_COUNTS=${BENCH_HOSTS:-1 3}
SHAPES=${BENCH_SHAPES:-tasks loop}
CALLS=${BENCH_CALLS:-100}
REPEAT=${BENCH_REPEAT:-1}
COLLECTIONS="$ROOT/target/python-modules/collections"
[[ $EUID -eq 0 ]] || bench_die "run as root: it creates throw-away users and starts an sshd"
[[ -x "$BIN" ]] || bench_die "$BIN not built (cargo build --release)"
[[ -d "$COLLECTIONS/ansible_collections/community/general" ]] ||
    bench_die "no community.general in $COLLECTIONS (bash tests/python_modules/fetch.sh)"
MAX_HOSTS=0
for n in $HOST_COUNTS; do ((n > MAX_HOSTS)) && MAX_HOSTS=$n; done
USER_PREFIX=${BENCH_USER_PREFIX:-tpm}
bench_add_users "$USER_PREFIX" "$MAX_HOSTS"
bench_start_sshd
SSHD_PORT=$BENCH_SSHD_PORT
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || PYTHON=$(command -v python3)

# The playbooks: the same ini_file call, CALLS times, as tasks and as a loop.
{
    printf -- '- hosts: all\n  gather_facts: false\n  tasks:\n'
    for i in $(seq "$CALLS"); do
        printf '    - community.general.ini_file:\n        path: ~/bench.ini\n'
        printf '        section: bench\n        option: o%s\n        value: v%s\n' "$i" "$i"
    done
} >"$WORK/tasks.yml"
cat >"$WORK/loop.yml" <<EOF
- hosts: all
  gather_facts: false
  tasks:
    - community.general.ini_file:
        path: ~/bench.ini
        section: bench
        option: "o{{ item }}"
        value: "v{{ item }}"
      loop: "{{ range(1, $CALLS + 1) | list }}"
EOF
printf -- '- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n' >"$WORK/warm.yml"

# inventory HOSTS PORT: one line per host, each logging in as its own user.
inventory() {
    local i
    for i in $(seq "$1"); do
        echo "h$i ansible_host=127.0.0.1 ansible_port=$2 ansible_user=$USER_PREFIX$i" \
            "ansible_ssh_private_key_file=$WORK/user_key ansible_python_interpreter=$PYTHON"
    done
}
inventory "$MAX_HOSTS" "$SSHD_PORT" >"$WORK/warm-hosts"

declare -A TIME
# run SHAPE TOOL HOSTS RUN: one run through a fresh count proxy; prints a row.
run() {
    local shape=$1 tool=$2 hosts=$3 which=$4 inv i
    if [[ $which = first ]]; then
        for i in $(seq "$hosts"); do
            rm -rf "$WORK/home-$i/bench.ini" "$WORK/home-$i/.cache/turbo-play/modules"
        done
    fi
    bench_count_start "$WORK/count.json"
    local count_port=$BENCH_COUNT_PORT
    inv="$WORK/hosts-$hosts-$count_port"
    inventory "$hosts" "$count_port" >"$inv"
    bench_tool_env "$tool" "$WORK/cp-$count_port"
    local cmd=() env=("${BENCH_ENV[@]}" ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS")
    case $tool in
        turbo)
            cmd=("$BIN" -i "$inv" "$WORK/$shape.yml")
            env+=(TURBO_ANSIBLE_PYTHON="$VENV/bin/python")
            if [[ -n "${BENCH_TURBO_AGENT:-}" ]]; then env+=(TURBO_PLAY_AGENT="$BENCH_TURBO_AGENT"); fi
            ;;
        ansible | mitogen) cmd=("$VENV/bin/ansible-playbook" -i "$inv" "$WORK/$shape.yml") ;;
    esac
    local start end rc=0
    start=$(date +%s.%N)
    env "${env[@]}" "${cmd[@]}" >"$WORK/last.out" 2>&1 || rc=$?
    end=$(date +%s.%N)
    bench_count_stop
    bench_close_masters "$WORK/cp-$count_port"
    local recap sends=—
    recap=$(grep -E '^h1 +:' "$WORK/last.out" | sed -E 's/ +/ /g; s/(rescued|ignored|skipped)=[0-9]+ ?//g' || true)
    [[ $rc = 0 ]] || recap="exit $rc: $(tail -n 3 "$WORK/last.out" | tr '\n' ' ')"
    # Every host's file must hold every call's option.
    for i in $(seq "$hosts"); do
        [[ $(grep -c '^o[0-9]* = v' "$WORK/home-$i/bench.ini" 2>/dev/null) = "$CALLS" ]] ||
            recap="$recap (h$i: bench.ini wrong)"
    done
    case $tool in
        turbo) if [[ $which = first ]]; then
            sends=0
            for i in $(seq "$hosts"); do
                sends=$((sends + $(find "$WORK/home-$i/.cache/turbo-play/modules" -mindepth 1 \
                    -maxdepth 1 -type d 2>/dev/null | wc -l)))
            done
        fi ;;
        ansible) sends=$((CALLS * hosts)) ;;
    esac
    cp "$WORK/last.out" "$WORK/$shape-$tool-$hosts-$which.out"
    local secs
    secs=$(printf '%.2f' "$(echo "$end - $start" | bc)")
    TIME[$shape-$tool-$hosts-$which]+="$secs "
    printf '| %s | %s | %s | %s | %s s | %s | %s | %s | %s |\n' "$shape" "$hosts" "$which" "$tool" \
        "$secs" \
        "$(python3 -c "import json; d=json.load(open('$WORK/count.json')); print('%.1f / %.1f KB' % (d['up'] / 1e3, d['down'] / 1e3))")" \
        "$(python3 -c "import json; d=json.load(open('$WORK/count.json')); print(d['turns']//2)")" \
        "$sends" "$recap"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| calls | hosts | run | tool | time | up / down | round trips | payload sends | recap (h1) |"
echo "|---|---|---|---|---|---|---|---|---|"
for shape in $SHAPES; do
    for hosts in $HOST_COUNTS; do
        for tool in $TOOLS; do
            if [[ $tool != turbo && -z "$VENV" ]]; then
                echo "| $shape | $hosts | | $tool | no venv with ansible-core and mitogen (BENCH_VENV) | | | | |"
                continue
            fi
            # The agent is cached on the hosts before the first measured run.
            [[ $tool = turbo ]] && env ANSIBLE_HOST_KEY_CHECKING=False \
                ${BENCH_TURBO_AGENT:+TURBO_PLAY_AGENT="$BENCH_TURBO_AGENT"} "$BIN" \
                -i "$WORK/warm-hosts" "$WORK/warm.yml" >/dev/null 2>&1
            for _ in $(seq "$REPEAT"); do
                run "$shape" "$tool" "$hosts" first
                run "$shape" "$tool" "$hosts" rerun
            done
        done
    done
done
# median TIMES...: the middle one (the mean of the middle two), nothing for no time.
median() {
    [[ $# -gt 0 ]] || return 0
    printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {
        if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| calls | hosts | run | turbo-play | ansible | mitogen | vs ansible | vs mitogen |"
echo "|---|---|---|---|---|---|---|---|"
for shape in $SHAPES; do
    for hosts in $HOST_COUNTS; do
        for which in first rerun; do
            t=$(median ${TIME[$shape-turbo-$hosts-$which]:-})
            a=$(median ${TIME[$shape-ansible-$hosts-$which]:-})
            m=$(median ${TIME[$shape-mitogen-$hosts-$which]:-})
            echo "| $shape | $hosts | $which | ${t:-—} | ${a:-—} | ${m:-—} | $(bench_ratio "$t" "$a") | $(bench_ratio "$t" "$m") |"
        done
    done
done
