# Shared by the benchmark scripts (sourced, never run): the venv with ansible-core and
# mitogen, throw-away users each with their own home, one loopback sshd for them, the byte
# counting proxy, and the environment that makes ansible-playbook pipeline (or run under
# Mitogen) the same way in every script. Every script that sources this must set BENCH_NAME
# (for messages) and BENCH_WORK (a scratch directory it owns) first, then call
# `bench_setup_cleanup`.

bench_die() { echo "${BENCH_NAME:-bench}: $*" >&2; exit 1; }

# bench_find_venv: prints the venv holding ansible-core and mitogen (BENCH_VENV, else the
# clone's .bench/venv, else /work/main's), or nothing; tests/bench/run.sh makes one.
bench_find_venv() {
    local candidate
    for candidate in "${BENCH_VENV:-}" "$ROOT/.bench/venv" /work/main/.bench/venv; do
        [[ -n "$candidate" && -x "$candidate/bin/ansible-playbook" ]] && { echo "$candidate"; return; }
    done
}

bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_wait_port PORT: the readiness probe (connect, say nothing, close), up to 5 s.
bench_wait_port() {
    local _
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.1
    done
    bench_die "nothing listens on 127.0.0.1:$1"
}

BENCH_PIDS=()
BENCH_USERS=()
bench_setup_cleanup() {
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
bench_cleanup() {
    local rc=$? p user sock
    trap - EXIT INT TERM
    for sock in "$BENCH_WORK"/cp-*/*; do
        [[ -S "$sock" ]] && ssh -F /dev/null -o ControlPath="$sock" -O exit x >/dev/null 2>&1 || true
    done
    for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for user in "${BENCH_USERS[@]}"; do
        # Only the throw-away user's processes: its sessions, agents and interpreters.
        pkill -KILL -u "$user" 2>/dev/null || true
        userdel "$user" 2>/dev/null || echo "${BENCH_NAME:-bench}: userdel $user failed" >&2
    done
    [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$BENCH_WORK"
    exit "$rc"
}

# bench_add_users PREFIX COUNT: users PREFIX1..PREFIXCOUNT with /bin/sh, each owning
# $BENCH_WORK/home-I (mode 700), so every host has its own caches and interpreters.
bench_add_users() {
    local prefix=$1 count=$2 i user
    for i in $(seq "$count"); do
        user="$prefix$i"
        id "$user" >/dev/null 2>&1 && bench_die "user $user already exists (an aborted run?): check and 'userdel $user'"
        useradd -M -d "$BENCH_WORK/home-$i" -s /bin/sh "$user"
        BENCH_USERS+=("$user")
        mkdir -p "$BENCH_WORK/home-$i"
        chown "$user:" "$BENCH_WORK/home-$i"
        chmod 700 "$BENCH_WORK/home-$i"
        # With UsePAM no, sshd refuses accounts whose password field is locked ("!").
        usermod -p '*' "$user"
    done
}

# bench_start_sshd: one sshd on a free loopback port (BENCH_SSHD_PORT) that lets every
# throw-away user in with $BENCH_WORK/user_key.
bench_start_sshd() {
    BENCH_SSHD_PORT=$(bench_free_port)
    ssh-keygen -q -t ed25519 -N '' -f "$BENCH_WORK/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$BENCH_WORK/user_key"
    cp "$BENCH_WORK/user_key.pub" "$BENCH_WORK/authorized_keys"
    chmod 644 "$BENCH_WORK/authorized_keys"
    mkdir -p /run/sshd
    /usr/sbin/sshd -D -f /dev/null -p "$BENCH_SSHD_PORT" -o ListenAddress=127.0.0.1 \
        -h "$BENCH_WORK/host_key" -o AuthorizedKeysFile="$BENCH_WORK/authorized_keys" \
        -o UsePAM=no -o StrictModes=no -o PasswordAuthentication=no -o MaxSessions=100 \
        -o MaxStartups=100:30:200 -o "Subsystem=sftp internal-sftp" -o PidFile=none 2>"$BENCH_WORK/sshd.log" &
    BENCH_PIDS+=($!)
    bench_wait_port "$BENCH_SSHD_PORT"
    printf '[defaults]\n' >"$BENCH_WORK/ansible.cfg"
}

# bench_tool_env TOOL CPDIR: fills BENCH_ENV with what ansible-playbook runs under for TOOL
# (ansible: pipelining over a ControlPersist master; mitogen: the same plus mitogen_linear);
# turbo-play needs nothing but host key checking off, as the others have it.
bench_tool_env() {
    local tool=$1 cpdir=$2
    BENCH_ENV=(ANSIBLE_HOST_KEY_CHECKING=False)
    [[ $tool = turbo ]] && return
    mkdir -p "$cpdir"
    BENCH_ENV+=(ANSIBLE_CONFIG="$BENCH_WORK/ansible.cfg" ANSIBLE_PIPELINING=True ANSIBLE_FORKS=10
        ANSIBLE_SSH_ARGS="-C -o ControlMaster=auto -o ControlPersist=60s -o IdentitiesOnly=yes"
        ANSIBLE_SSH_CONTROL_PATH_DIR="$cpdir" ANSIBLE_RETRY_FILES_ENABLED=False
        ANSIBLE_NOCOLOR=1 ANSIBLE_DEPRECATION_WARNINGS=False)
    if [[ $tool = mitogen ]]; then
        BENCH_ENV+=(ANSIBLE_STRATEGY=mitogen_linear
            ANSIBLE_STRATEGY_PLUGINS="$(echo "$BENCH_VENV_DIR"/lib/python3*/site-packages/ansible_mitogen/plugins/strategy)")
    fi
}

# bench_close_masters CPDIR: the ssh masters lost their connection with the proxy; let them go.
bench_close_masters() {
    local sock
    for sock in "$1"/*; do
        [[ -S "$sock" ]] && ssh -F /dev/null -o ControlPath="$sock" -O exit x >/dev/null 2>&1 || true
    done
}

# bench_count_start OUT_JSON: a count_proxy.py in front of the sshd on BENCH_COUNT_PORT.
bench_count_start() {
    BENCH_COUNT_PORT=$(bench_free_port)
    python3 "$ROOT/tests/bench/count_proxy.py" "$BENCH_COUNT_PORT" "$BENCH_SSHD_PORT" "$1" &
    BENCH_COUNT_PID=$!
    bench_wait_port "$BENCH_COUNT_PORT"
}
bench_count_stop() {
    kill "$BENCH_COUNT_PID"
    wait "$BENCH_COUNT_PID" 2>/dev/null || true
}

# bench_ratio FAST SLOW: "SLOW/FAST x", or a dash when either is missing.
bench_ratio() {
    [[ -n "${1:-}" && -n "${2:-}" ]] && printf '%.1fx' "$(echo "$2 / $1" | bc -l)" || echo —
}
