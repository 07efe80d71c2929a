#!/usr/bin/env bash
# Task chains benchmark: playbooks/bench_role40.yml (40 role-shaped tasks) on one host
# behind ../shared/delay-proxy.py, turbo-play with chains on and off, first run and rerun,
# with the bytes and the turns of direction counted (count_proxy.py). Needs root (sshd).
#
#   tests/bench/chains.sh                 # 30 ms round trip
#   BENCH_DELAY_MS=50 tests/bench/chains.sh   # one-way delay in ms (default 15)
#   BENCH_TURBO_BIN=target/release/turbo-play tests/bench/chains.sh
set -euo pipefail
ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$ROOT"
BIN=${BENCH_TURBO_BIN:-target/debug/turbo-play}
ONE_WAY=${BENCH_DELAY_MS:-15}
WORK=$(mktemp -d /tmp/bench-chains.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$WORK" /tmp/bench40' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SSHD_PORT=$(free_port); DELAY_PORT=$(free_port); COUNT_PORT=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key"
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
mkdir -p /run/sshd
/usr/sbin/sshd -D -f /dev/null -p "$SSHD_PORT" -o ListenAddress=127.0.0.1 -h "$WORK/host_key" \
    -o AuthorizedKeysFile="$WORK/authorized_keys" -o PermitRootLogin=yes -o StrictModes=no \
    -o PidFile=none 2>"$WORK/sshd.log" &
python3 ../shared/delay-proxy.py "$DELAY_PORT" "$SSHD_PORT" "$ONE_WAY" &
wait_port() { # the readiness probe: connect, say nothing, close
    for _ in $(seq 50); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.1
    done
}
wait_port "$SSHD_PORT"; wait_port "$DELAY_PORT"
cat > "$WORK/hosts" <<INV
h ansible_host=127.0.0.1 ansible_port=$COUNT_PORT ansible_user=root ansible_ssh_private_key_file=$WORK/user_key
INV
run() { # label chains
    python3 tests/bench/count_proxy.py "$COUNT_PORT" "$DELAY_PORT" "$WORK/count.json" &
    local proxy=$!
    wait_port "$COUNT_PORT"
    local start end
    start=$(date +%s.%N)
    ANSIBLE_HOST_KEY_CHECKING=False TURBO_PLAY_CHAINS=$2 "$BIN" -i "$WORK/hosts" playbooks/bench_role40.yml >"$WORK/$1.out" 2>&1 || true
    end=$(date +%s.%N)
    kill "$proxy"; wait "$proxy" 2>/dev/null || true
    printf '| %-22s | %6.2f s | %s | %s |\n' "$1" "$(echo "$end - $start" | bc)" \
        "$(python3 -c "import json; d=json.load(open('$WORK/count.json')); print(f\"{d['turns']//2} round trips, {d['up']+d['down']} bytes\")")" \
        "$(grep -E '^h +:' "$WORK/$1.out" | tr -s ' ')"
}
echo "| run ($((ONE_WAY * 2)) ms RTT, 1 host) | time | on the wire | recap |"
echo "|---|---|---|---|"
for chains in 1 0; do
    rm -rf /tmp/bench40
    label=$([[ $chains = 1 ]] && echo chained || echo unchained)
    # A first connection that uploads the agent is not what is measured.
    ANSIBLE_HOST_KEY_CHECKING=False "$BIN" -i "$WORK/hosts" -m ping all >/dev/null 2>&1 || \
        ANSIBLE_HOST_KEY_CHECKING=False "$BIN" -i "$WORK/hosts" playbooks/bench_role40.yml -t none >/dev/null 2>&1 || true
    run "$label first run" $chains
    run "$label rerun" $chains
done
