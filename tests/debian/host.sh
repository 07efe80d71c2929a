# Sourced by record.sh: one Debian test host started as tests/integration/support/debian.rs
# starts it (an overlay on the base built by build-base.sh, in its own mount, UTS and PID
# namespaces, sshd on a loopback port). Needs root.
#
#   debian_base ROOT             sets $base to the built base for this build-base.sh, or fails
#   debian_host_start DIR NAME   starts an overlay of the base (changes in DIR/upper); sets
#                                $port, $host_pid (unshare's), $host_root (its / from
#                                outside while it runs); writes DIR/known_hosts
#   debian_host_line DIR NAME    the INI line for it, logging in as deploy
#   debian_host_run CMD...       runs CMD as root inside the started host
#   debian_host_stop             stops it (the caller removes DIR)

debian_base() {
    local stamp
    stamp=$(sha256sum "$1/tests/debian/build-base.sh" | cut -c1-16)
    base="$1/target/debian/bookworm-$stamp"
    [[ -f "$base/.ready" ]] || {
        echo "no Debian base at $base: run bash tests/debian/build-base.sh" >&2
        return 1
    }
}

debian_host_start() {
    local dir=$1 name=$2
    mkdir -p "$dir/upper" "$dir/work" "$dir/root"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    setpriv --pdeathsig KILL -- unshare --mount --uts --pid --fork --kill-child --propagation private -- \
        sh -c "set -e
mount -t overlay overlay -o 'volatile,lowerdir=$base/rootfs,upperdir=$dir/upper,workdir=$dir/work' '$dir/root'
mount -t proc proc '$dir/root/proc'
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts '$dir/root/dev/pts'
echo '$name' >'$dir/root/etc/hostname'
cat /etc/resolv.conf >'$dir/root/etc/resolv.conf'
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' '$name' >'$dir/root/etc/hosts'
hostname '$name'
exec chroot '$dir/root' /usr/sbin/sshd -D -e -p $port -o ListenAddress=127.0.0.1:$port" \
        2>"$dir/sshd.log" </dev/null &
    host_pid=$!
    local _
    for _ in $(seq 200); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
        sleep 0.05
    done
    echo "[127.0.0.1]:$port $(cat "$base/host_ed25519.pub")" >"$dir/known_hosts"
    host_init=$(cut -d' ' -f1 "/proc/$host_pid/task/$host_pid/children")
    host_root=/proc/$host_init/root
}

debian_host_line() {
    echo "$2 ansible_host=127.0.0.1 ansible_port=$port ansible_user=deploy" \
        "ansible_ssh_private_key_file=$base/client_ed25519 ansible_python_interpreter=/usr/bin/python3" \
        "ansible_ssh_common_args='-o UserKnownHostsFile=$1/known_hosts'"
}

debian_host_run() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \
        nsenter --target="$host_init" --mount --uts --pid --root --wd=/ -- "$@"
}

debian_host_stop() {
    if [[ -n "${host_pid:-}" ]]; then
        # The namespace's PID 1 first: unshare reaps it (and so everything inside is gone)
        # before it exits itself.
        kill -KILL "$host_init" 2>/dev/null || kill -KILL "$host_pid" 2>/dev/null || true
        wait "$host_pid" 2>/dev/null || true
        host_pid=
    fi
}
