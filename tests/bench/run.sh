#!/usr/bin/env bash
# Benchmark: turbo-play vs ansible-playbook (pipelining) vs Ansible+Mitogen, same playbooks,
# inventories and hosts, against a throw-away sshd on 127.0.0.1. Not a test; not run in CI.
#
#   sudo tests/bench/run.sh            # everything (Ansible only up to n=100)
#   BENCH_N="10 100" BENCH_HOSTS=1 BENCH_TOOLS="ansible mitogen" tests/bench/run.sh
#
# Prints Markdown tables and writes .bench/results.md (+ results.json, logs/). Needs root:
# it adds users tpb1..tpbK and runs sshd. Knobs (environment):
#   BENCH_TOOLS        turbo-play ansible mitogen       which tools
#   BENCH_N            10 100 1000                      items per loop (files per host)
#   BENCH_HOSTS        1 3                              host counts for the loopback matrix
#   BENCH_PLAYBOOKS    file_creation bench_copy_files bench_template  (playbooks/<name>.yml)
#   BENCH_SCENARIOS    direct latency bytes             which parts to run
#   BENCH_LATENCY_N    100      BENCH_LATENCY_HOSTS 1   BENCH_DELAY_MS 15   (latency matrix)
#   BENCH_BYTES_N      100                              n for the bytes-on-the-wire runs
#   BENCH_RUNS         steady-state runs per cell (default 3; 1 for ansible/mitogen above n=100)
#   BENCH_RUNS_ANSIBLE, BENCH_RUNS_MITOGEN, BENCH_RUNS_TURBO_PLAY   the same, per tool
#   BENCH_RERUNS       "nothing changed" runs per cell (default = runs)
#   BENCH_MAX_SECONDS  skip a cell whose estimated total exceeds this (default 1200; 0 = never)
#   BENCH_FULL=1       also run Ansible above n=100 (~12 min per run at n=1000) and drop the cutoff
#   BENCH_TIMEOUT      seconds per single run (default 600)
#   BENCH_SKIP_BUILD=1 use ./target/release/turbo-play as it is
#   BENCH_TURBO_BIN    turbo-play binary to run (default ./target/release/turbo-play; still built unless BENCH_SKIP_BUILD=1)
#   BENCH_TURBO_ARGS   extra arguments for turbo-play
set -euo pipefail

die() { echo "bench: $*" >&2; exit 1; }
say() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$ROOT"
OUT_DIR="$ROOT/.bench"
VENV="$OUT_DIR/venv"
USER_PREFIX=${BENCH_USER_PREFIX:-tpb}
USER_COUNT=${BENCH_USERS_COUNT:-3}
DELAY_PROXY="$ROOT/../shared/delay-proxy.py"

[[ $EUID -eq 0 ]] || die "run as root: it creates throw-away users and starts an sshd"
[[ -x /usr/sbin/sshd ]] || die "/usr/sbin/sshd not found (apt-get install openssh-server)"
for tool in ssh ssh-keygen useradd userdel usermod timeout; do
    command -v "$tool" >/dev/null || die "$tool not found on PATH"
done
if [[ " ${BENCH_SCENARIOS:-latency} " == *" latency "* && ! -f "$DELAY_PROXY" ]]; then
    die "$DELAY_PROXY not found (shared/ must sit beside the clone), or set BENCH_SCENARIOS without latency"
fi

# ---------------------------------------------------------------- venv with ansible-core + mitogen
find_python() {
    local candidate
    for candidate in /root/.pyenv/versions/3.12.1/bin/python3 /root/.pyenv/versions/3.13.0/bin/python3 \
        "$(command -v python3.12 || true)" "$(command -v python3.13 || true)"; do
        [[ -n "$candidate" && -x "$candidate" ]] || continue
        "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$candidate"; return; }
    done
    die "no Python >= 3.12 found (tried pyenv 3.12.1/3.13.0, python3.12, python3.13)"
}
if [[ ! -x "$VENV/bin/python" ]]; then
    PY=$(find_python)
    say "creating $VENV with $PY"
    mkdir -p "$OUT_DIR"
    "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import ansible, ansible_mitogen' 2>/dev/null; then
    say "installing ansible-core and mitogen into $VENV"
    "$VENV/bin/pip" install --quiet ansible-core mitogen || die "pip install ansible-core mitogen failed"
fi
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
MITOGEN_STRATEGY_DIR="$SITE/ansible_mitogen/plugins/strategy"
[[ -f "$MITOGEN_STRATEGY_DIR/mitogen_linear.py" ]] || die "mitogen strategy plugins not found in $MITOGEN_STRATEGY_DIR"

# ---------------------------------------------------------------- turbo-play
TURBO_BIN=${BENCH_TURBO_BIN:-$ROOT/target/release/turbo-play}
TURBO_STATUS=""
if [[ " ${BENCH_TOOLS:-turbo-play} " == *" turbo-play "* ]]; then
    if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
        say "cargo build --release (turbo-play)"
        if ! timeout 3600 cargo build --release --bin turbo-play >"$OUT_DIR/cargo-build.log" 2>&1; then
            TURBO_STATUS="cargo build --release failed (see .bench/cargo-build.log)"
            tail -n 20 "$OUT_DIR/cargo-build.log" >&2
        fi
    fi
    if [[ -z "$TURBO_STATUS" && ! -x "$TURBO_BIN" ]]; then
        TURBO_STATUS="$TURBO_BIN not built"
    fi
fi
TURBO_VERSION="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src agent Cargo.toml Cargo.lock build.rs || echo '+dirty')"
if [[ -x "$TURBO_BIN" ]]; then
    TURBO_VERSION="$TURBO_VERSION, $(timeout 10 "$TURBO_BIN" --version 2>/dev/null | head -n1 || true)"
fi

# ---------------------------------------------------------------- throw-away sshd and users
TMP=$(mktemp -d /tmp/turbo-bench.XXXXXX)
chmod 755 "$TMP"
SSHD_PID=""
USERS=()

cleanup() {
    local rc=$? sock user
    trap - EXIT INT TERM
    for sock in "$TMP"/cp/*/*; do
        [[ -S "$sock" ]] && ssh -F /dev/null -o ControlPath="$sock" -O exit bench >/dev/null 2>&1 || true
    done
    if [[ -n "$SSHD_PID" ]]; then
        kill "$SSHD_PID" 2>/dev/null || true
        wait "$SSHD_PID" 2>/dev/null || true
    fi
    for user in "${USERS[@]}"; do
        # Only processes of the throw-away user: sshd sessions and agents left by an aborted run.
        pkill -KILL -u "$user" 2>/dev/null || true
        userdel "$user" 2>/dev/null || say "warning: userdel $user failed"
    done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for i in $(seq 1 "$USER_COUNT"); do
    user="$USER_PREFIX$i"
    if id "$user" >/dev/null 2>&1; then
        die "user $user already exists (a previous run that was killed hard?): check and 'userdel $user'"
    fi
    useradd -M -d "$TMP/home-$i" -s /bin/sh "$user"
    USERS+=("$user")
    mkdir -p "$TMP/home-$i"
    chown "$user:" "$TMP/home-$i"
    chmod 700 "$TMP/home-$i"
    # With UsePAM no, sshd refuses accounts whose password field is locked ("!").
    usermod -p '*' "$user"
done

ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$TMP/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C bench-user -f "$TMP/id_ed25519"
cp "$TMP/id_ed25519.pub" "$TMP/authorized_keys"
chmod 644 "$TMP/authorized_keys"

PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$TMP/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $TMP/host_ed25519
PidFile $TMP/sshd.pid
AuthorizedKeysFile $TMP/authorized_keys
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
MaxSessions 100
MaxStartups 100:30:200
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
EOF
mkdir -p /run/sshd
/usr/sbin/sshd -D -e -f "$TMP/sshd_config" 2>"$TMP/sshd.log" &
SSHD_PID=$!
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$SSHD_PID" 2>/dev/null || { cat "$TMP/sshd.log" >&2; die "sshd exited"; }
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || die "sshd does not accept on 127.0.0.1:$PORT"
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$TMP/host_ed25519.pub")" >"$TMP/known_hosts"
for user in "${USERS[@]}"; do
    ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o UserKnownHostsFile="$TMP/known_hosts" \
        -o StrictHostKeyChecking=yes -i "$TMP/id_ed25519" -p "$PORT" "$user@127.0.0.1" true ||
        { cat "$TMP/sshd.log" >&2; die "ssh $user@127.0.0.1:$PORT failed"; }
done
say "sshd on 127.0.0.1:$PORT (pid $SSHD_PID), users ${USERS[*]}, scratch $TMP"

export BENCH_ROOT="$ROOT" BENCH_TMP="$TMP" BENCH_OUT_DIR="$OUT_DIR" BENCH_SSHD_PORT="$PORT" \
    BENCH_KEY="$TMP/id_ed25519" BENCH_HOST_KEY_PUB="$TMP/host_ed25519.pub" BENCH_USERS="${USERS[*]}" \
    BENCH_VENV_BIN="$VENV/bin" BENCH_TURBO_BIN="$TURBO_BIN" BENCH_TURBO_STATUS="$TURBO_STATUS" \
    BENCH_TURBO_VERSION="$TURBO_VERSION" BENCH_DELAY_PROXY="$DELAY_PROXY" \
    BENCH_MITOGEN_STRATEGY_DIR="$MITOGEN_STRATEGY_DIR"
"$VENV/bin/python" "$ROOT/tests/bench/bench.py"
