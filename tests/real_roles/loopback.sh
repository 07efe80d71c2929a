# Sourced by record.sh and tests/bench/real_role.sh: a throw-away sshd on 127.0.0.1 that
# lets root in with a throw-away key (the roles set owner root), and the scenarios'
# inventory pointed at it. Needs root and openssh-server. The caller kills $sshd_pid.
#
#   loopback_sshd WORK        starts sshd; sets $port and $sshd_pid; writes WORK/known_hosts
#   loopback_inventory WORK PORT   writes WORK/inventory-PORT for that port; prints its path
#   real_roles_paths ROOT     sets $roles_path and $collections_path from target/real-roles

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
    for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return
        sleep 0.05
    done
    echo "port $1 never opened" >&2
    return 1
}

loopback_sshd() {
    local work=$1
    ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
    cp "$work/user_key.pub" "$work/authorized_keys"
    chmod 755 "$work"
    port=$(free_port)
    cat >"$work/sshd_config" <<EOC
ListenAddress 127.0.0.1:$port
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
PidFile $work/sshd.pid
LogLevel ERROR
MaxStartups 100
Subsystem sftp internal-sftp
EOC
    mkdir -p /run/sshd
    /usr/sbin/sshd -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
    sshd_pid=$!
    wait_port "$port"
    echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/host_key.pub")" >"$work/known_hosts"
}

loopback_inventory() {
    local work=$1 port=$2 here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    sed -e "s|@PORT@|$port|" -e "s|@KEY@|$work/user_key|" -e "s|@KNOWN_HOSTS@|$work/known_hosts|" \
        "$here/inventory.in" >"$work/inventory-$port"
    echo "$work/inventory-$port"
}

real_roles_paths() {
    roles_path=$(find "$1/target/real-roles" -mindepth 2 -maxdepth 2 -type d -name roles | sort | paste -sd:)
    collections_path=$(find "$1/target/real-roles" -mindepth 2 -maxdepth 2 -type d -name ansible_collections -printf '%h\n' | sort | paste -sd:)
}
