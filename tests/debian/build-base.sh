#!/usr/bin/env bash
# Builds the Debian 12 (bookworm) system that tests/integration/support/debian.rs copies for
# every Debian test host, once, with debootstrap: target/debian/bookworm-<stamp>/ holds
#   rootfs/          the system (sshd configured, users deploy/admin/plain, see below)
#   client_ed25519   the throw-away private key every user accepts (.pub beside it)
#   host_ed25519.pub the system's sshd host key, for known_hosts
#   .ready           written last: the base is complete
# <stamp> is a hash of this script, so editing it (a package, a user) builds a new base and
# removes the old ones; an unchanged script reuses the cached base in well under a second.
#
# The packages come from the Debian archive this machine's apt is configured with (read
# from /etc/apt/sources.list and /etc/apt/sources.list.d/ at run time; DEBIAN_MIRROR
# overrides it): no archive address is kept in the repository.
#
# Users inside (all with the password in TEST_PASSWORD, all accepting client_ed25519):
#   deploy  the login user; sudo without a password
#   admin   sudo that asks for the password
#   plain   no sudo: a target for su and for a non-root become_user
# root's password is TEST_PASSWORD too (for become_method su).
#
# Without root or debootstrap it says why and exits 0 (the Debian tests then skip), except
# under CI=true, where a base that cannot be built fails the run.
#
# Usage (as root): bash tests/debian/build-base.sh
set -euo pipefail

SUITE=bookworm
# What the tests' playbooks and Ansible's side of the comparisons use on the target:
# python3-apt because Ansible's apt module installs it itself when it is missing (and the
# two tools' package lists would then differ); acl because Ansible's become to an
# unprivileged user (plain) hands its temporary files over with setfacl and fails without
# it; ca-certificates for an archive over https;
# init-system-helpers (service, invoke-rc.d) and sysvinit-utils (init-functions) for the
# services' init scripts; python3-pip and python3-venv for pip and its virtualenvs (both
# tools' pip modules need them on the target); dnf (with rpm) for dnf/yum into an
# installroot; systemd for its unit files and systemctl's offline verbs (enable, mask: it
# is never PID 1 here).
PACKAGES=openssh-server,sudo,passwd,python3,python3-apt,acl,procps,ca-certificates,init-system-helpers,sysvinit-utils,python3-pip,python3-venv,dnf,systemd
USERS="deploy admin plain"
TEST_PASSWORD=turbo-test-password

repo=$(cd "$(dirname "$0")/../.." && pwd)
cache="$repo/target/debian"
stamp=$(sha256sum "$0" | cut -c1-16)
base="$cache/$SUITE-$stamp"

say() { echo "debian-base: $*"; }

cannot_build() {
    if [[ "${CI:-}" == true ]]; then
        say "cannot build the base: $*" >&2
        exit 1
    fi
    say "cannot build the base: $*; the Debian target tests will be skipped"
    exit 0
}

if [[ -f "$base/.ready" ]]; then
    say "$base is built"
    exit 0
fi
[[ $(id -u) == 0 ]] || cannot_build "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || cannot_build "debootstrap is not installed (apt-get install debootstrap)"

# Prints the first archive URI that apt would use for $SUITE: one-line entries
# ("deb [options] URI suite component...") and deb822 stanzas (Types/URIs/Suites/Enabled).
mirror_from_apt() {
    local files=()
    [[ -f /etc/apt/sources.list ]] && files+=(/etc/apt/sources.list)
    local f
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] && files+=("$f")
    done
    ((${#files[@]})) || return 0
    awk -v suite="$SUITE" '
        function has(list, word,   n, i, parts) {
            n = split(list, parts, /[ \t]+/)
            for (i = 1; i <= n; i++) if (parts[i] == word) return 1
            return 0
        }
        function first_word(list,   parts) { split(list, parts, /[ \t]+/); return parts[1] }
        function stanza_end() {
            if (has(types, "deb") && has(suites, suite) && tolower(enabled) != "no" && uris != "" && !found) {
                print first_word(uris); found = 1
            }
            types = uris = suites = enabled = last = ""; delete field
        }
        FNR == 1 { if (deb822) stanza_end(); deb822 = FILENAME ~ /\.sources$/ }
        deb822 {
            if ($0 ~ /^[ \t]*#/) next
            if ($0 ~ /^[ \t]*$/) { stanza_end(); next }
            if ($0 ~ /^[ \t]/) { value = $0; sub(/^[ \t]+/, "", value); field[last] = field[last] " " value }
            else {
                last = tolower(substr($0, 1, index($0, ":") - 1))
                value = substr($0, index($0, ":") + 1); sub(/^[ \t]+/, "", value); sub(/[ \t]+$/, "", value)
                field[last] = value
            }
            types = field["types"]; uris = field["uris"]; suites = field["suites"]; enabled = field["enabled"]
            next
        }
        {
            line = $0; sub(/#.*/, "", line); gsub(/\[[^]]*\]/, "", line)
            n = split(line, w, /[ \t]+/)
            i = (w[1] == "") ? 2 : 1
            if (w[i] == "deb" && w[i + 2] == suite && !found) { print w[i + 1]; found = 1 }
        }
        END { if (deb822) stanza_end() }
    ' "${files[@]}" | grep -v '^cdrom:' | head -n 1
}

mirror=${DEBIAN_MIRROR:-$(mirror_from_apt)}
[[ -n "$mirror" ]] || cannot_build "no Debian archive for $SUITE in this machine's apt sources; set DEBIAN_MIRROR to one"

mkdir -p "$cache"
exec 9>"$cache/.lock"
# Another run may be building the same base: wait for it, then use what it built.
flock 9
if [[ -f "$base/.ready" ]]; then
    say "$base is built"
    exit 0
fi

started=$(date +%s)
building="$cache/.building-$stamp"
rm -rf "$building"
mkdir -p "$building" "$cache/debs"
root="$building/rootfs"
say "debootstrap $SUITE from this machine's apt mirror into $building (takes a few minutes once)"
# The downloaded .debs are kept in target/debian/debs: a base rebuilt after an edit to this
# script downloads only what changed. debootstrap mounts /proc and /sys inside the new
# system while it installs: in a mount namespace of its own they vanish with it, even when
# it fails, and a later rm -rf of the directory cannot reach into them.
# The second stage runs dpkg with force-unsafe-io: its fsync after every file buys nothing
# for a base that is thrown away when incomplete; it is synced once at the end instead.
install_base() {
    debootstrap --foreign --variant=minbase --include="$PACKAGES" --cache-dir="$cache/debs" \
        "$SUITE" "$root" "$mirror" &&
        echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/zz-build-unsafe-io" &&
        unshare --mount --propagation private -- chroot "$root" /debootstrap/debootstrap --second-stage &&
        rm "$root/etc/dpkg/dpkg.cfg.d/zz-build-unsafe-io"
}
if ! install_base >"$building/debootstrap.log" 2>&1; then
    tail -n 30 "$building/debootstrap.log" >&2
    say "debootstrap failed; its log is $building/debootstrap.log" >&2
    exit 1
fi

in_root() { chroot "$root" "$@"; }

echo "turbo-debian" >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tturbo-debian\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    >"$root/etc/hosts"
# debootstrap copies these from this machine, modes included; a Debian install has 644.
# (Each test host gets this machine's resolv.conf anew when it starts.)
chmod 644 "$root/etc/hostname" "$root/etc/hosts" "$root/etc/resolv.conf"

# One host key of one type keeps known_hosts to one line per host.
rm -f "$root"/etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N '' -C '' -f "$root/etc/ssh/ssh_host_ed25519_key"
cut -d' ' -f1,2 "$root/etc/ssh/ssh_host_ed25519_key.pub" >"$building/host_ed25519.pub"
# Debian's sshd_config includes sshd_config.d/ first, and sshd keeps the first value of a
# setting: these win. Without PAM there is no session setup to fail inside a chroot.
cat >"$root/etc/ssh/sshd_config.d/10-turbo-tests.conf" <<'EOF'
UsePAM no
HostKey /etc/ssh/ssh_host_ed25519_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
PrintMotd no
LogLevel ERROR
MaxStartups 100
EOF
mkdir -p "$root/run/sshd"
chmod 755 "$root/run/sshd"

ssh-keygen -q -t ed25519 -N '' -C '' -f "$building/client_ed25519"
for user in $USERS; do
    in_root useradd --create-home --shell /bin/bash "$user"
    install -d -m 700 "$root/home/$user/.ssh"
    install -m 600 "$building/client_ed25519.pub" "$root/home/$user/.ssh/authorized_keys"
    in_root chown -R "$user:$user" "/home/$user/.ssh"
done
# One fixed salt: every build of the base has the same /etc/shadow (chpasswd's random salt
# would make each build's differ, and the Debian scenarios compare /etc's digests with
# the ones recorded on another build).
hash=$(in_root python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], "$6$turbotestsalt$"))' "$TEST_PASSWORD")
printf '%s\n' root $USERS | sed "s|\$|:$hash|" | in_root chpasswd -e
in_root usermod -aG sudo admin
echo 'deploy ALL=(ALL:ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/deploy"
chmod 440 "$root/etc/sudoers.d/deploy"
in_root visudo -cq

# ptmx through the devpts instance that support/debian.rs mounts at start.
ln -sf pts/ptmx "$root/dev/ptmx"
# The archive's package lists, as on any installed Debian: a test can install a package
# from the archive without updating the cache first (and one that updates it sees a cache
# with a known age).
in_root apt-get update -qq
in_root apt-get clean
rm -f "$root"/var/log/*.log

sync -f "$root"
mv "$building" "$base"
touch "$base/.ready"
for old in "$cache/$SUITE"-*; do
    [[ "$old" == "$base" ]] || rm -rf "$old"
done
say "built $base in $(($(date +%s) - started))s ($(du -sh "$base/rootfs" | cut -f1))"
