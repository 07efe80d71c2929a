#!/usr/bin/env bash
# The fleet benchmark (issue 11, many hosts): N hosts, each a throw-away user with its own
# home on one of several loopback sshds, a play that writes 10 files per host (a 10-item
# copy loop), first run (agent uploaded to every home) and rerun (nothing changes);
# turbo-play directly and through one bastion (ProxyJump: one connection to the bastion,
# a direct-tcpip channel per host), and Ansible+Mitogen on a smaller fleet. Wall time, the
# controller's peak memory (max RSS) and CPU (user + system), from GNU time, and the
# targets' CPU (sshds, sessions, agents; a cpuacct cgroup). Every run's
# recap is checked (all hosts ok, the rerun changed=0). Needs root (useradd, sshd).
# Prints a Markdown table; not a test.
#
#   tests/bench/fleet.sh
#   BENCH_FLEETS="100 500" BENCH_MITOGEN_HOSTS=50 tests/bench/fleet.sh
#
# Knobs (environment):
#   BENCH_TURBO_BIN      turbo-play binary (default target/release/turbo-play; build it first)
#   BENCH_VENV           a venv with ansible-core and mitogen (default .bench/venv, else
#                        /work/main/.bench/venv); without one Mitogen's rows are left out
#   BENCH_FLEETS         fleet sizes for turbo-play (default "100 500")
#   BENCH_MITOGEN_HOSTS  fleet size for Ansible+Mitogen, 0 for none (default 50)
#   BENCH_SSHDS          how many sshds share the hosts (default 5)
#   BENCH_BASTION        1 to also run every fleet through a bastion (default 1)
#   BENCH_TURBO_ARGS     extra arguments for turbo-play (e.g. "-f 200")
#   BENCH_KEEP           keep the work directory and users
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
FLEETS=${BENCH_FLEETS:-100 500}
MITOGEN_HOSTS=${BENCH_MITOGEN_HOSTS:-50}
SSHDS=${BENCH_SSHDS:-5}
BASTION=${BENCH_BASTION:-1}
read -r -a TURBO_ARGS <<<"${BENCH_TURBO_ARGS:-}"
[[ $EUID -eq 0 ]] || { echo "fleet: run as root (it creates users and starts sshds)" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "fleet: $BIN not built (cargo build --release)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "fleet: GNU time not found (apt-get install time)" >&2; exit 1; }

MAX=0
for n in $FLEETS $MITOGEN_HOSTS; do (( n > MAX )) && MAX=$n; done
PREFIX=tpfleet
WORK=$(mktemp -d /tmp/bench-fleet.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [[ -n "${CGROUP:-}" ]] && rmdir "$CGROUP" 2>/dev/null
    if [[ -z "${BENCH_KEEP:-}" ]]; then
        for i in $(seq "$MAX"); do userdel "$PREFIX$i" 2>/dev/null || true; done
        userdel "${PREFIX}jump" 2>/dev/null || true
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.1
    done
}

# Users with their own homes and /bin/sh (no login-shell start-up to measure); one key,
# one authorized_keys for all, named by the sshds.
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
chmod 644 "$WORK/authorized_keys"
mkdir -p "$WORK/homes" /run/sshd
echo "[fleet $(date +%T)] creating $MAX users" >&2
for i in $(seq "$MAX") jump; do
    user=$PREFIX$i
    id "$user" >/dev/null 2>&1 && userdel "$user" 2>/dev/null
    useradd --no-user-group --gid nogroup --home-dir "$WORK/homes/$user" --create-home \
        --shell /bin/sh "$user"
    usermod -p '*' "$user"
done

PORTS=()
for _ in $(seq "$SSHDS"); do
    port=$(free_port)
    /usr/sbin/sshd -D -f /dev/null -p "$port" -o ListenAddress=127.0.0.1 -h "$WORK/host_key" \
        -o AuthorizedKeysFile="$WORK/authorized_keys" -o StrictModes=no -o UsePAM=no \
        -o MaxSessions=1000 -o MaxStartups=100:30:200 -o PidFile=none -o LogLevel=ERROR \
        2>>"$WORK/sshd.log" &
    PIDS+=($!)
    PORTS+=("$port")
done
for port in "${PORTS[@]}"; do wait_port "$port"; done
# The targets' CPU (every sshd, session, shell and agent: what a real fleet spreads over
# its own machines, and this one pays on the same two cores), from a cpuacct cgroup.
CGROUP=/sys/fs/cgroup/cpuacct/bench-fleet-$$
if mkdir "$CGROUP" 2>/dev/null; then
    for p in "${PIDS[@]}"; do echo "$p" >"$CGROUP/tasks"; done
fi
target_cpu() { cat "$CGROUP/cpuacct.usage" 2>/dev/null || echo 0; }
JUMP_PORT=${PORTS[0]}

cat >"$WORK/site.yml" <<'EOF'
- hosts: all
  gather_facts: false
  tasks:
    - name: ten files
      copy:
        dest: "~/f{{ item }}"
        content: "file {{ item }} of {{ inventory_hostname }}\n"
        mode: "0644"
      loop: "{{ range(10) | list }}"
EOF
printf '[defaults]\nhost_key_checking = False\nretry_files_enabled = False\n' >"$WORK/ansible.cfg"

# inventory N [jump]: host i is user i on sshd i mod SSHDS.
inventory() {
    local n=$1 jump=${2:-} i
    for i in $(seq "$n"); do
        printf 'h%s ansible_host=127.0.0.1 ansible_port=%s ansible_user=%s%s ansible_ssh_private_key_file=%s ansible_python_interpreter=/usr/bin/python3' \
            "$i" "${PORTS[$(( i % SSHDS ))]}" "$PREFIX" "$i" "$WORK/user_key"
        [[ -n $jump ]] && printf " ansible_ssh_common_args='-J %sjump@127.0.0.1:%s'" "$PREFIX" "$JUMP_PORT"
        printf '\n'
    done
}

# floor N: OpenSSH's own client logging in to every host to run `true`, 50 at a time: what
# connecting alone costs this machine (the targets' side of it above all).
floor() {
    local n=$1 cpu_before start end
    cpu_before=$(target_cpu)
    start=$(date +%s.%N)
    for i in $(seq "$n"); do echo "$i"; done | xargs -P 50 -I{} sh -c \
        'ssh -q -i "$0" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
            -p "$(echo "$1" | cut -d" " -f$(( $2 % $3 + 1 )))" "$4$2@127.0.0.1" true' \
        "$WORK/user_key" "${PORTS[*]}" {} "$SSHDS" "$PREFIX"
    end=$(date +%s.%N)
    printf '| floor | ssh true | %s | | %.1f s | | | %.1f s | |\n' "$n" "$(echo "$end - $start" | bc -l)" \
        "$(echo "($(target_cpu) - $cpu_before) / 1000000000" | bc -l)"
}

# run LABEL TOOL N [jump]: prints a row.
run() {
    local label=$1 tool=$2 n=$3 jump=${4:-} inv cmd=() env=(ANSIBLE_HOST_KEY_CHECKING=False) rc=0
    inv="$WORK/hosts-$n-${jump:-direct}"
    inventory "$n" "$jump" >"$inv"
    case $tool in
        turbo-play) cmd=("$BIN" -i "$inv" "$WORK/site.yml" "${TURBO_ARGS[@]}") ;;
        mitogen)
            cmd=("$VENV/bin/ansible-playbook" -i "$inv" "$WORK/site.yml" -f "$n")
            env+=(ANSIBLE_CONFIG="$WORK/ansible.cfg" ANSIBLE_NOCOLOR=1
                ANSIBLE_DEPRECATION_WARNINGS=False ANSIBLE_STRATEGY=mitogen_linear
                ANSIBLE_STRATEGY_PLUGINS="$(echo "$VENV"/lib/python3*/site-packages/ansible_mitogen/plugins/strategy)")
            ;;
    esac
    local cpu_before
    cpu_before=$(target_cpu)
    env "${env[@]}" /usr/bin/time -f '%e %M %U %S' -o "$WORK/time" "${cmd[@]}" >"$WORK/last.out" 2>&1 || rc=$?
    cp "$WORK/last.out" "$WORK/$label-$tool-$n-${jump:-direct}.out"
    local wall rss user sys check targets
    read -r wall rss user sys <"$WORK/time"
    targets=$(echo "($(target_cpu) - $cpu_before) / 1000000000" | bc -l)
    local ok changed
    ok=$(grep -cE '^h[0-9]+ +: ok=1 +changed=[01] +unreachable=0 +failed=0' "$WORK/last.out" || true)
    changed=$(grep -cE '^h[0-9]+ +: ok=1 +changed=1 ' "$WORK/last.out" || true)
    check="$ok/$n ok, $changed changed"
    [[ $rc = 0 ]] || check="exit $rc, $check: $(grep -m1 -E 'UNREACHABLE|FAILED|ERROR' "$WORK/last.out" | cut -c1-120)"
    printf '| %s | %s | %s | %s | %.1f s | %.0f MiB (%.2f MiB/host) | %.1f s | %.1f s | %s |\n' \
        "$label" "$tool" "$n" "${jump:+bastion}" "$wall" "$(echo "$rss / 1024" | bc -l)" \
        "$(echo "$rss / 1024 / $n" | bc -l)" "$(echo "$user + $sys" | bc -l)" "$targets" "$check"
}

echo "| run | tool | hosts | via | wall | controller peak RSS | controller CPU | targets' CPU | recap |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in $FLEETS; do
    floor "$n"
    for jump in "" $([[ $BASTION = 1 ]] && echo jump); do
        # A fresh fleet: no agent in any home, no files.
        for i in $(seq "$n"); do rm -rf "$WORK/homes/$PREFIX$i/.cache" "$WORK/homes/$PREFIX$i"/f*; done
        run first turbo-play "$n" "$jump"
        run rerun turbo-play "$n" "$jump"
    done
done
if (( MITOGEN_HOSTS > 0 )); then
    if [[ -z "$VENV" ]]; then
        echo "| | mitogen | $MITOGEN_HOSTS | | no venv with ansible-core and mitogen (BENCH_VENV) | | | | |"
    else
        for i in $(seq "$MITOGEN_HOSTS"); do rm -rf "$WORK/homes/$PREFIX$i"/f* "$WORK/homes/$PREFIX$i/.ansible"; done
        run first mitogen "$MITOGEN_HOSTS"
        run rerun mitogen "$MITOGEN_HOSTS"
        for i in $(seq "$MITOGEN_HOSTS"); do rm -rf "$WORK/homes/$PREFIX$i"/f*; done
        run first turbo-play "$MITOGEN_HOSTS"
        run rerun turbo-play "$MITOGEN_HOSTS"
    fi
fi
