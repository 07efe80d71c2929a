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
BIN=${BENCH_TURBO_BIN:-target/release/turbo-play}
VENV=${BENCH_VENV:-}
if [[ -z "$VENV" ]]; then
    for candidate in "$ROOT/.bench/venv" /work/main/.bench/venv; do
        [[ -x "$candidate/bin/ansible-playbook" ]] && { VENV=$candidate; break; }
    done
fi
TOOLS=${BENCH_TOOLS:-turbo ansible mitogen}
HOST_COUNTS=${BENCH_HOSTS:-1 3}
SHAPES=${BENCH_SHAPES:-tasks loop}
CALLS=${BENCH_CALLS:-100}
COLLECTIONS="$ROOT/target/python-modules/collections"
die() { echo "python_modules: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || die "run as root: it creates throw-away users and starts an sshd"
[[ -x "$BIN" ]] || die "$BIN not built (cargo build --release)"
[[ -d "$COLLECTIONS/ansible_collections/community/general" ]] ||
    die "no community.general in $COLLECTIONS (bash tests/python_modules/fetch.sh)"
MAX_HOSTS=0
for n in $HOST_COUNTS; do ((n > MAX_HOSTS)) && MAX_HOSTS=$n; done
USER_PREFIX=${BENCH_USER_PREFIX:-tpm}

WORK=$(mktemp -d /tmp/bench-pymod.XXXXXX)
chmod 755 "$WORK"
PIDS=()
USERS=()
cleanup() {
    local p user
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for user in "${USERS[@]}"; do
        # Only the throw-away user's processes: its sessions, agents and interpreters.
        pkill -KILL -u "$user" 2>/dev/null || true
        userdel "$user" 2>/dev/null || echo "python_modules: userdel $user failed" >&2
    done
    [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # the readiness probe: connect, say nothing, close
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.1
    done
}

for i in $(seq "$MAX_HOSTS"); do
    user="$USER_PREFIX$i"
    id "$user" >/dev/null 2>&1 && die "user $user already exists (an aborted run?): check and 'userdel $user'"
    useradd -M -d "$WORK/home-$i" -s /bin/sh "$user"
    USERS+=("$user")
    mkdir -p "$WORK/home-$i"
    chown "$user:" "$WORK/home-$i"
    chmod 700 "$WORK/home-$i"
    # With UsePAM no, sshd refuses accounts whose password field is locked ("!").
    usermod -p '*' "$user"
done
SSHD_PORT=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
chmod 644 "$WORK/authorized_keys"
mkdir -p /run/sshd
/usr/sbin/sshd -D -f /dev/null -p "$SSHD_PORT" -o ListenAddress=127.0.0.1 -h "$WORK/host_key" \
    -o AuthorizedKeysFile="$WORK/authorized_keys" -o UsePAM=no -o StrictModes=no \
    -o PasswordAuthentication=no -o MaxSessions=100 -o MaxStartups=100:30:200 \
    -o PidFile=none 2>"$WORK/sshd.log" &
PIDS+=($!)
wait_port "$SSHD_PORT"
printf '[defaults]\n' >"$WORK/ansible.cfg"
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
    local shape=$1 tool=$2 hosts=$3 which=$4 count_port inv i
    count_port=$(free_port)
    inv="$WORK/hosts-$hosts-$count_port"
    inventory "$hosts" "$count_port" >"$inv"
    if [[ $which = first ]]; then
        for i in $(seq "$hosts"); do
            rm -rf "$WORK/home-$i/bench.ini" "$WORK/home-$i/.cache/turbo-play/modules"
        done
    fi
    python3 tests/bench/count_proxy.py "$count_port" "$SSHD_PORT" "$WORK/count.json" &
    local proxy=$!
    wait_port "$count_port"
    local cmd=() env=(ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS")
    case $tool in
        turbo)
            cmd=("$BIN" -i "$inv" "$WORK/$shape.yml")
            env+=(TURBO_ANSIBLE_PYTHON="$VENV/bin/python")
            if [[ -n "${BENCH_TURBO_AGENT:-}" ]]; then env+=(TURBO_PLAY_AGENT="$BENCH_TURBO_AGENT"); fi
            ;;
        ansible | mitogen)
            cmd=("$VENV/bin/ansible-playbook" -i "$inv" "$WORK/$shape.yml")
            mkdir -p "$WORK/cp-$count_port"
            env+=(ANSIBLE_CONFIG="$WORK/ansible.cfg" ANSIBLE_PIPELINING=True ANSIBLE_FORKS=10
                ANSIBLE_SSH_ARGS="-C -o ControlMaster=auto -o ControlPersist=60s -o IdentitiesOnly=yes"
                ANSIBLE_SSH_CONTROL_PATH_DIR="$WORK/cp-$count_port" ANSIBLE_RETRY_FILES_ENABLED=False
                ANSIBLE_NOCOLOR=1 ANSIBLE_DEPRECATION_WARNINGS=False)
            [[ $tool = mitogen ]] && env+=(ANSIBLE_STRATEGY=mitogen_linear
                ANSIBLE_STRATEGY_PLUGINS="$(echo "$VENV"/lib/python3*/site-packages/ansible_mitogen/plugins/strategy)")
            ;;
    esac
    local start end rc=0
    start=$(date +%s.%N)
    env "${env[@]}" "${cmd[@]}" >"$WORK/last.out" 2>&1 || rc=$?
    end=$(date +%s.%N)
    kill "$proxy"; wait "$proxy" 2>/dev/null || true
    # The ssh masters lost their connection with the proxy; let them go.
    for sock in "$WORK/cp-$count_port"/*; do
        [[ -S "$sock" ]] && ssh -o ControlPath="$sock" -O exit x >/dev/null 2>&1 || true
    done
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
    TIME[$shape-$tool-$hosts-$which]=$secs
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
            run "$shape" "$tool" "$hosts" first
            run "$shape" "$tool" "$hosts" rerun
        done
    done
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| calls | hosts | run | turbo-play | ansible | mitogen | vs ansible | vs mitogen |"
echo "|---|---|---|---|---|---|---|---|"
ratio() { [[ -n "${1:-}" && -n "${2:-}" ]] && printf '%.1fx' "$(echo "$2 / $1" | bc -l)" || echo —; }
for shape in $SHAPES; do
    for hosts in $HOST_COUNTS; do
        for which in first rerun; do
            t=${TIME[$shape-turbo-$hosts-$which]:-} a=${TIME[$shape-ansible-$hosts-$which]:-}
            m=${TIME[$shape-mitogen-$hosts-$which]:-}
            echo "| $shape | $hosts | $which | ${t:-—} | ${a:-—} | ${m:-—} | $(ratio "$t" "$a") | $(ratio "$t" "$m") |"
        done
    done
done
