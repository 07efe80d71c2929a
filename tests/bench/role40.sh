#!/usr/bin/env bash
# The 40-task role benchmark (issue 16, task chains): playbooks/bench_role40.yml, first run
# and rerun, on 3 loopback hosts and on 1 and 3 hosts behind ../shared/delay-proxy.py at
# 30 ms and 100 ms round trip; turbo-play with chains on and off, ansible-playbook
# (pipelining, ControlPersist) and Ansible+Mitogen (mitogen_linear). Every connection goes
# through count_proxy.py, which counts the bytes and the round trips (turns of direction
# / 2, summed over the run's connections). Needs root (sshd, root logins on 127.0.0.1).
# Prints a Markdown table; not a test.
#
#   tests/bench/role40.sh
#   BENCH_TOOLS="chained unchained" BENCH_LINKS="30:1" tests/bench/role40.sh
#
# Knobs (environment):
#   BENCH_TURBO_BIN  turbo-play binary (default target/release/turbo-play; build it first)
#   BENCH_VENV       a venv with ansible-core and mitogen (default .bench/venv, else
#                    /work/main/.bench/venv; tests/bench/run.sh makes one)
#   BENCH_TOOLS      chained unchained ansible mitogen
#   BENCH_LINKS      round trip in ms:host count, 0 = loopback (default "0:3 30:1 30:3 100:1 100:3")
#   BENCH_PLAYBOOK   another playbook to run instead (default playbooks/bench_role40.yml)
#   BENCH_USER       the login: "plain" (default) is a throw-away user with /bin/sh and its
#                    own home, made for the run; "root" logs in as root, whose login shell on
#                    some machines (pyenv in .bashrc) costs every tool 0.1-0.5 s a connection
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
TOOLS=${BENCH_TOOLS:-chained unchained ansible mitogen}
LINKS=${BENCH_LINKS:-0:3 30:1 30:3 100:1 100:3}
PLAYBOOK=${BENCH_PLAYBOOK:-playbooks/bench_role40.yml}
DELAY_PROXY="$ROOT/../shared/delay-proxy.py"
[[ -x "$BIN" ]] || { echo "role40: $BIN not built (cargo build --release)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/bench-role40.XXXXXX)
chmod 755 "$WORK"
PIDS=()
LOGIN=root
if [[ ${BENCH_USER:-plain} = plain ]]; then
    LOGIN=tprole40
    id "$LOGIN" >/dev/null 2>&1 && userdel "$LOGIN"
    useradd --no-user-group --gid nogroup --home-dir "$WORK/home" --create-home --shell /bin/sh "$LOGIN"
    usermod -p '*' "$LOGIN"
    TARGET_HOME=$WORK/home
else
    TARGET_HOME=$WORK
fi
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; [[ $LOGIN = root ]] || userdel "$LOGIN" 2>/dev/null; [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # the readiness probe: connect, say nothing, close
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.1
    done
}
SSHD_PORT=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
mkdir -p /run/sshd
/usr/sbin/sshd -D -f /dev/null -p "$SSHD_PORT" -o ListenAddress=127.0.0.1 -h "$WORK/host_key" \
    -o AuthorizedKeysFile="$WORK/authorized_keys" -o PermitRootLogin=yes -o StrictModes=no \
    -o MaxSessions=100 -o MaxStartups=100:30:200 -o PidFile=none 2>"$WORK/sshd.log" &
PIDS+=($!)
wait_port "$SSHD_PORT"
printf '[defaults]\n' >"$WORK/ansible.cfg"
# The targets' Python for Ansible's modules (a pyenv shim would add a shell per module).
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || PYTHON=$(command -v python3)
printf -- '- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n' >"$WORK/warm.yml"
printf 'h1 ansible_host=127.0.0.1 ansible_port=%s ansible_user=%s ansible_ssh_private_key_file=%s\n' \
    "$SSHD_PORT" "$LOGIN" "$WORK/user_key" >"$WORK/warm-hosts"

# run LABEL TOOL HOSTS TARGET_PORT: one run through a fresh count proxy; prints a row.
run() {
    local label=$1 tool=$2 hosts=$3 target=$4 count_port inv i
    count_port=$(free_port)
    inv="$WORK/hosts-$hosts-$count_port"
    for i in $(seq "$hosts"); do
        echo "h$i ansible_host=127.0.0.1 ansible_port=$count_port ansible_user=$LOGIN" \
            "ansible_ssh_private_key_file=$WORK/user_key ansible_python_interpreter=$PYTHON" \
            "bench_root=$TARGET_HOME/root/h$i"
    done >"$inv"
    python3 tests/bench/count_proxy.py "$count_port" "$target" "$WORK/count.json" &
    local proxy=$!
    wait_port "$count_port"
    local cmd=() env=(ANSIBLE_HOST_KEY_CHECKING=False)
    case $tool in
        chained | unchained)
            cmd=("$BIN" -i "$inv" "$PLAYBOOK")
            env+=(TURBO_PLAY_CHAINS=$([[ $tool = chained ]] && echo 1 || echo 0))
            ;;
        ansible | mitogen)
            cmd=("$VENV/bin/ansible-playbook" -i "$inv" "$PLAYBOOK")
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
    local recap
    recap=$(grep -E '^h1 +:' "$WORK/last.out" | sed -E 's/ +/ /g; s/(rescued|ignored)=[0-9]+ ?//g' || true)
    [[ $rc = 0 ]] || recap="exit $rc: $(tail -n 3 "$WORK/last.out" | tr '\n' ' ')"
    cp "$WORK/last.out" "$WORK/$label-$tool-$hosts.out"
    printf '| %s | %s | %s | %.2f s | %s | %s |\n' "$label" "$tool" "$hosts" \
        "$(echo "$end - $start" | bc)" \
        "$(python3 -c "import json; d=json.load(open('$WORK/count.json')); print(d['turns']//2)")" \
        "$recap"
}

echo "| link | tool | hosts | time | round trips | recap (h1) |"
echo "|---|---|---|---|---|---|"
for link in $LINKS; do
    rtt=${link%%:*} hosts=${link##*:} target=$SSHD_PORT
    if [[ $rtt != 0 ]]; then
        target=$(free_port)
        python3 "$DELAY_PROXY" "$target" "$SSHD_PORT" "$((rtt / 2))" &
        PIDS+=($!)
        wait_port "$target"
    fi
    name=$([[ $rtt = 0 ]] && echo loopback || echo "$rtt ms")
    for tool in $TOOLS; do
        if [[ $tool = ansible || $tool = mitogen ]] && [[ -z "$VENV" ]]; then
            echo "| $name | $tool | $hosts | no venv with ansible-core and mitogen (BENCH_VENV) | | |"
            continue
        fi
        rm -rf "$TARGET_HOME/root"
        # The agent is cached on the host before the first measured run.
        [[ $tool = chained ]] && ANSIBLE_HOST_KEY_CHECKING=False "$BIN" -i "$WORK/warm-hosts" \
            "$WORK/warm.yml" >/dev/null 2>&1
        run "$name first" "$tool" "$hosts" "$target"
        run "$name rerun" "$tool" "$hosts" "$target"
    done
done
