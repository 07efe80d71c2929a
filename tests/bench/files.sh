#!/usr/bin/env bash
# The files benchmark (issue 13): fetch of 100 small files, 100 lineinfile edits of one
# file, a 100 MiB file copied (and plain scp of it), the same file with 1 MiB changed in
# the middle, and a 1,000-file tree copied as one directory; each a first run and a rerun
# with nothing changed, for turbo-play, ansible-playbook (pipelining, ControlPersist) and
# Ansible+Mitogen (mitogen_linear) in the same run, against a loopback sshd with a
# throw-away user. Every connection goes through count_proxy.py, which counts the bytes
# each way and the round trips. Copying 100 small files and 100 templates are in
# tests/bench/run.sh. Needs root (sshd, useradd). Prints Markdown tables; not a test.
#
#   cargo build --release && tests/bench/files.sh
#   BENCH_TOOLS="turbo mitogen" BENCH_SCENARIOS="big" tests/bench/files.sh
#
# Knobs (environment):
#   BENCH_TURBO_BIN   turbo-play binary (default target/release/turbo-play; build it first)
#   BENCH_VENV        a venv with ansible-core and mitogen (default .bench/venv, else
#                     /work/main/.bench/venv; tests/bench/run.sh makes one)
#   BENCH_TOOLS       turbo ansible mitogen
#   BENCH_SCENARIOS   fetch lineinfile big tree
#   BENCH_BIG_MIB     size of the big file (default 100)
#   BENCH_TREE_FILES  files in the tree (default 1000, in directories of 100)
#   BENCH_KEEP=1      keep the scratch directory (outputs of every run)
#
# The agent is cached on the target before turbo-play's first measured run (a ping), as
# Ansible's and Mitogen's own code is installed before theirs: "first" is the first run
# of the scenario, not of the tool.
set -euo pipefail
ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$ROOT"
BENCH_NAME=files
BENCH_WORK=$(mktemp -d /tmp/bench-files.XXXXXX)
chmod 755 "$BENCH_WORK"
# shellcheck source=tests/bench/lib.sh
source "$ROOT/tests/bench/lib.sh"
bench_setup_cleanup

BIN=${BENCH_TURBO_BIN:-target/release/turbo-play}
BENCH_VENV_DIR=$(bench_find_venv)
TOOLS=${BENCH_TOOLS:-turbo ansible mitogen}
SCENARIOS=${BENCH_SCENARIOS:-fetch lineinfile big tree}
BIG_MIB=${BENCH_BIG_MIB:-100}
TREE_FILES=${BENCH_TREE_FILES:-1000}
[[ $EUID -eq 0 ]] || bench_die "run as root: it creates a throw-away user and starts an sshd"
[[ -x "$BIN" ]] || bench_die "$BIN not built (cargo build --release)"
W=$BENCH_WORK
HOME1="$W/home-1"
USER1=${BENCH_USER_PREFIX:-tpf}1

bench_add_users "${BENCH_USER_PREFIX:-tpf}" 1
bench_start_sshd

# ---------------------------------------------------------------- sources and playbooks
mkdir -p "$W/src/tree"
head -c "$((BIG_MIB * 1024 * 1024))" /dev/urandom >"$W/src/big.bin"
cp "$W/src/big.bin" "$W/src/big-mid.bin"
# 1 MiB of other bytes in the middle: what a rolling checksum should find and send alone.
head -c $((1024 * 1024)) /dev/urandom |
    dd of="$W/src/big-mid.bin" bs=1M seek=$((BIG_MIB / 2)) conv=notrunc status=none
for i in $(seq "$TREE_FILES"); do
    d="$W/src/tree/d$(((i - 1) / 100))"
    mkdir -p "$d"
    printf 'tree file %s\n%s\n' "$i" "$(head -c 600 /dev/urandom | base64 -w 76)" >"$d/f$i.txt"
done
chmod -R a+rX "$W/src"

cat >"$W/fetch.yml" <<EOF
- hosts: all
  gather_facts: false
  tasks:
    - fetch:
        src: "$HOME1/fetch/f{{ item }}.log"
        dest: "{{ fetched }}/"
      loop: "{{ range(1, 101) | list }}"
EOF
cat >"$W/lineinfile.yml" <<EOF
- hosts: all
  gather_facts: false
  tasks:
    - lineinfile:
        path: "$HOME1/lines.conf"
        create: true
        regexp: "^key{{ item }} ="
        line: "key{{ item }} = value {{ item }}"
      loop: "{{ range(1, 101) | list }}"
EOF
cat >"$W/big.yml" <<EOF
- hosts: all
  gather_facts: false
  tasks:
    - copy:
        src: "{{ big_src }}"
        dest: "$HOME1/big.bin"
EOF
cat >"$W/tree.yml" <<EOF
- hosts: all
  gather_facts: false
  tasks:
    - copy:
        src: "$W/src/tree/"
        dest: "$HOME1/tree/"
EOF
printf -- '- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n' >"$W/warm.yml"
inventory() {
    echo "h1 ansible_host=127.0.0.1 ansible_port=$1 ansible_user=$USER1" \
        "ansible_ssh_private_key_file=$W/user_key ansible_python_interpreter=/usr/bin/python3"
}
inventory "$BENCH_SSHD_PORT" >"$W/warm-hosts"

# reset SCENARIO TOOL: the target (and the fetch destination) as before the first run.
reset() {
    case $1 in
        fetch)
            rm -rf "$HOME1/fetch" "$W/fetched-$2"
            mkdir -p "$HOME1/fetch" "$W/fetched-$2"
            for i in $(seq 100); do printf 'log line %s\n' "$i" >"$HOME1/fetch/f$i.log"; done
            chown -R "$USER1:" "$HOME1/fetch"
            ;;
        lineinfile) rm -f "$HOME1/lines.conf" ;;
        big) rm -f "$HOME1/big.bin" "$HOME1/big.scp" ;;
        tree) rm -rf "$HOME1/tree" ;;
    esac
}

# verify SCENARIO TOOL WHICH: empty when the target holds what the run should have left.
verify() {
    case $1 in
        fetch)
            local n
            n=$(find "$W/fetched-$2" -type f -name 'f*.log' | wc -l)
            [[ $n = 100 ]] || echo "fetched $n files, not 100"
            ;;
        lineinfile)
            [[ $(grep -c '^key[0-9]* = value' "$HOME1/lines.conf" 2>/dev/null) = 100 ]] ||
                echo "lines.conf does not hold 100 lines"
            ;;
        big)
            local want="$W/src/big.bin"
            [[ $3 = changed ]] && want="$W/src/big-mid.bin"
            cmp -s "$want" "$HOME1/big.bin" || echo "big.bin differs from $(basename "$want")"
            ;;
        tree) diff -rq "$W/src/tree" "$HOME1/tree" >/dev/null 2>&1 || echo "tree differs" ;;
    esac
}

declare -A TIME
# run SCENARIO TOOL WHICH: one run through a fresh count proxy; prints a row.
run() {
    local scenario=$1 tool=$2 which=$3 inv cmd=() extra=()
    bench_count_start "$W/count.json"
    inv="$W/hosts-$BENCH_COUNT_PORT"
    inventory "$BENCH_COUNT_PORT" >"$inv"
    case $scenario in
        fetch) extra=(-e "fetched=$W/fetched-$tool") ;;
        big) extra=(-e "big_src=$W/src/big.bin")
            [[ $which = changed ]] && extra=(-e "big_src=$W/src/big-mid.bin") ;;
    esac
    bench_tool_env "$tool" "$W/cp-$BENCH_COUNT_PORT"
    case $tool in
        turbo) cmd=("$BIN" -i "$inv" "$W/$scenario.yml" "${extra[@]}") ;;
        *) cmd=("$BENCH_VENV_DIR/bin/ansible-playbook" -i "$inv" "$W/$scenario.yml" "${extra[@]}") ;;
    esac
    local start end rc=0
    start=$(date +%s.%N)
    env "${BENCH_ENV[@]}" timeout 1800 "${cmd[@]}" >"$W/last.out" 2>&1 || rc=$?
    end=$(date +%s.%N)
    bench_count_stop
    bench_close_masters "$W/cp-$BENCH_COUNT_PORT"
    local recap wrong
    recap=$(grep -E '^h1 +:' "$W/last.out" | sed -E 's/ +/ /g; s/(rescued|ignored|skipped)=[0-9]+ ?//g' || true)
    [[ $rc = 0 ]] || recap="exit $rc: $(tail -n 3 "$W/last.out" | tr '\n' ' ')"
    wrong=$(verify "$scenario" "$tool" "$which")
    [[ -z "$wrong" ]] || recap="$recap ($wrong)"
    cp "$W/last.out" "$W/$scenario-$tool-$which.out"
    row "$scenario" "$which" "$tool" "$(printf '%.2f' "$(echo "$end - $start" | bc)")" "$recap"
}

# row SCENARIO WHICH TOOL SECONDS RECAP: one line of the table, bytes from count.json.
row() {
    TIME[$1-$3-$2]=$4
    printf '| %s | %s | %s | %s s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" \
        "$(python3 -c "import json; d=json.load(open('$W/count.json')); print('%.1f / %.1f KB' % (d['up'] / 1e3, d['down'] / 1e3))")" \
        "$(python3 -c "import json; d=json.load(open('$W/count.json')); print(d['turns']//2)")" "$5"
}

# The OpenSSH floor for the big file: scp, through the same proxy, to a fresh file.
scp_floor() {
    local which=$1 src=$W/src/big.bin start end rc=0
    [[ $which = changed ]] && src=$W/src/big-mid.bin
    bench_count_start "$W/count.json"
    start=$(date +%s.%N)
    scp -q -F /dev/null -i "$W/user_key" -P "$BENCH_COUNT_PORT" -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null "$src" "$USER1@127.0.0.1:$HOME1/big.scp" 2>"$W/scp.err" || rc=$?
    end=$(date +%s.%N)
    bench_count_stop
    local note="whole file"
    [[ $rc = 0 ]] || note="exit $rc: $(head -c 200 "$W/scp.err")"
    cmp -s "$src" "$HOME1/big.scp" || note="$note (big.scp differs)"
    row big "$which" scp "$(printf '%.2f' "$(echo "$end - $start" | bc)")" "$note"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| scenario | run | tool | time | up / down | round trips | recap / check |"
echo "|---|---|---|---|---|---|---|"
for scenario in $SCENARIOS; do
    runs="first rerun"
    [[ $scenario = big ]] && runs="first rerun changed"
    if [[ $scenario = big ]]; then
        reset big scp
        scp_floor first
        scp_floor changed
    fi
    for tool in $TOOLS; do
        if [[ $tool != turbo && -z "$BENCH_VENV_DIR" ]]; then
            echo "| $scenario | | $tool | no venv with ansible-core and mitogen (BENCH_VENV) | | | |"
            continue
        fi
        [[ $tool = turbo ]] && env ANSIBLE_HOST_KEY_CHECKING=False "$BIN" -i "$W/warm-hosts" \
            "$W/warm.yml" >/dev/null 2>&1
        reset "$scenario" "$tool"
        for which in $runs; do run "$scenario" "$tool" "$which"; done
    done
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| scenario | run | turbo-play | ansible | mitogen | scp | vs ansible | vs mitogen | turbo-play ÷ scp |"
echo "|---|---|---|---|---|---|---|---|---|"
for scenario in $SCENARIOS; do
    runs="first rerun"
    [[ $scenario = big ]] && runs="first rerun changed"
    for which in $runs; do
        t=${TIME[$scenario-turbo-$which]:-} a=${TIME[$scenario-ansible-$which]:-}
        m=${TIME[$scenario-mitogen-$which]:-} s=${TIME[$scenario-scp-$which]:-}
        echo "| $scenario | $which | ${t:-—} | ${a:-—} | ${m:-—} | ${s:-—} | $(bench_ratio "$t" "$a") |" \
            "$(bench_ratio "$t" "$m") | $(bench_ratio "$s" "$t") |"
    done
done
