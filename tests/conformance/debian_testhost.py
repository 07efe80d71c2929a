"""A fresh Debian 12 host as `testhost`, for the targets ansible-test runs in a container.

ansible-test runs a `destructive` target only where it may change the system: with
`--docker` or `--remote`, where `testhost` is a throw-away machine reached over ssh (as
root in a container, as a user with sudo on a remote VM). This is that machine here: an
overlay of the debootstrap base that tests/debian/build-base.sh caches in target/debian/,
in its own mount, UTS and PID namespaces, its sshd on a loopback port, as
tests/debian/host.sh and tests/integration/support/debian.rs start one. One host per target
(its setup targets included), stopped and removed after it, so nothing a target does
reaches this machine.

There is no systemd inside as PID 1: a small init is (INIT, named `init`, which Ansible's
service_mgr fact does not trust, as on a container started with an init), which starts
sshd and reaps the orphans that daemons leave, so `ansible_service_mgr` is `sysvinit` and
services start through their init scripts.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

# The login, as ansible-test reaches its targets: `root` as in a docker container, or
# `deploy`, who escalates with sudo (no password), as on a remote VM.
LOGINS = ("root", "deploy")


# PID 1 inside: sshd as its child, every orphan reaped (a daemon an init script stopped
# must not linger as a zombie that `kill -0` still finds), gone when sshd is.
INIT = """
import os, sys
sshd = os.fork()
if sshd == 0:
    os.execv("/usr/sbin/sshd", ["/usr/sbin/sshd"] + sys.argv[1:])
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        sys.exit(1)
    if pid == sshd:
        sys.exit(1)
"""


# What ansible-test's target images have and the debootstrap base does not, installed on
# every testhost: lsb-release (Ansible's `lsb` facts, which targets read) and coverage in
# the system's Python (ansible-test's images have its requirements installed; pip's
# no_setuptools.yml installs the version it finds there into a virtual environment), and
# rsync (apt's apt_update.yml restores apt's lists with it).
IMAGE_PACKAGES = ["lsb-release", "python3-coverage", "rsync"]


def wants_debian_host(aliases: list[str]) -> bool:
    """Whether ansible-test would run this target only on a throw-away target host.

    A `destructive` target changes the system it runs on; ansible-test runs it where
    that system is a container or VM. A `context/controller` target tests the controller
    itself, which stays this machine (ansible-test runs those against its controller
    whatever the target host is)."""
    return "destructive/" in aliases and "context/controller/" not in aliases


def base_dir(repo: Path) -> Path | None:
    """The built base for the current build-base.sh (named by its digest), or None."""
    stamp = hashlib.sha256((repo / "tests/debian/build-base.sh").read_bytes()).hexdigest()[:16]
    base = repo / "target" / "debian" / f"bookworm-{stamp}"
    return base if (base / ".ready").is_file() else None


class DebianHostError(Exception):
    pass


class DebianTestHost:
    """One running host; `stop()` ends it and removes its files."""

    def __init__(self, base: Path, directory: Path, apt_archives: Path, name: str = "testhost"):
        """`apt_archives` is mounted as the host's /var/cache/apt/archives: the packages
        one host downloaded are there for the next (and the next run), as behind a
        caching proxy."""
        self.base = base
        self.apt_archives = apt_archives
        self.dir = directory
        self.name = name
        self.port = 0
        self.init_pid = 0
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        for sub in ("upper", "root"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        last_error = ""
        # The free port can be taken between the probe and sshd's bind: try a few.
        for _ in range(5):
            work = self.dir / "work"
            subprocess.run(["rm", "-rf", str(work)], check=False)
            work.mkdir()
            self.port = free_port()
            self.process = self.spawn_sshd()
            error = self.wait_listening()
            if error is None:
                self.init_pid = self.namespace_init()
                if self.init_pid:
                    self.prepare()
                    return
                error = "sshd listens but its process is not found"
            self.kill()
            last_error = error
        raise DebianHostError(f"the Debian host's sshd did not start: {last_error}")

    def spawn_sshd(self) -> subprocess.Popen:
        """unshare mounts the overlay, /proc and a devpts of the host's own, names it, gives
        it this machine's resolv.conf (apt inside uses this machine's network and mirror)
        and runs INIT chrooted as the namespace's PID 1 (Python run through a link named
        `init`, which is what /proc/1/comm then says), and sshd under it. LogLevel=INFO
        makes sshd say "Server listening on" when it is ready."""
        root, name, port = self.dir / "root", self.name, self.port
        archives = self.apt_archives
        (archives / "partial").mkdir(parents=True, exist_ok=True)
        # apt downloads as its own user (_apt, uid 42 in Debian), into partial/.
        os.chown(archives / "partial", 42, 0)
        os.chmod(archives / "partial", 0o700)
        script = f"""set -e
mount -t overlay overlay -o 'volatile,lowerdir={self.base}/rootfs,upperdir={self.dir}/upper,workdir={self.dir}/work' '{root}'
mount --bind '{archives}' '{root}/var/cache/apt/archives'
mount -t proc proc '{root}/proc'
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts '{root}/dev/pts'
echo '{name}' >'{root}/etc/hostname'
cat /etc/resolv.conf >'{root}/etc/resolv.conf'
printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' '{name}' >'{root}/etc/hosts'
hostname '{name}'
mkdir -p '{root}/run/testhost'
ln -sf /usr/bin/python3 '{root}/run/testhost/init'
cat >'{root}/run/testhost/init.py' <<'INIT'
{INIT}
INIT
exec chroot '{root}' /run/testhost/init -I /run/testhost/init.py -D -e -p {port} -o ListenAddress=127.0.0.1:{port} -o LogLevel=INFO
"""
        log = open(self.dir / "sshd.log", "wb")
        try:
            return subprocess.Popen(
                ["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--mount", "--uts", "--pid",
                 "--fork", "--kill-child", "--propagation", "private", "--", "sh", "-c", script],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        finally:
            log.close()

    def wait_listening(self) -> str | None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = (self.dir / "sshd.log").read_text(errors="replace")
            if "Server listening on" in text:
                return None
            if self.process.poll() is not None:
                return f"sshd exited: {' '.join(text.split())}"
            time.sleep(0.02)
        return "sshd did not listen within 30 s"

    def namespace_init(self) -> int:
        """unshare's child, the namespace's PID 1 (INIT), from this machine's /proc."""
        pid = self.process.pid
        for _ in range(100):
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                children = []
            if children:
                return int(children[0])
            time.sleep(0.01)
        return 0

    def prepare(self) -> None:
        """What an ansible-test target container has and the base does not: root logs in
        with the key; and what the host needs to use this machine's network as this
        machine does (its extra trust anchors, its pip settings)."""
        (self.dir / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} {(self.base / 'host_ed25519.pub').read_text().strip()}\n")
        key = (self.base / "client_ed25519.pub").read_text()
        self.run(["sh", "-c", "install -d -m 700 /root/.ssh && cat >/root/.ssh/authorized_keys"
                  " && chmod 600 /root/.ssh/authorized_keys"], stdin=key)
        self.trust_local_anchors()
        # What ansible-test's bootstrap.sh does to a docker target: pip may install into the
        # system's Python (no PEP 668 marker), and services may start (no policy-rc.d).
        self.run(["sh", "-c", "rm -f /usr/sbin/policy-rc.d && /usr/bin/python3 -c 'import pathlib, "
                  "sysconfig; (pathlib.Path(sysconfig.get_path(\"stdlib\")) / "
                  "\"EXTERNALLY-MANAGED\").unlink(missing_ok=True)'"])
        # ansible-test's Debian and Ubuntu images have source indexes too (apt's build-dep
        # tests need them).
        self.run(["sh", "-c", "grep -q '^deb-src ' /etc/apt/sources.list || sed -n "
                  "'s/^deb /deb-src /p' /etc/apt/sources.list >>/etc/apt/sources.list"])
        if Path("/etc/pip.conf").is_file():
            self.run(["sh", "-c", "cat >/etc/pip.conf"], stdin=Path("/etc/pip.conf").read_text())
        self.install_image_packages()

    def install_image_packages(self) -> None:
        """IMAGE_PACKAGES, from the shared archive cache once a host fetched them."""
        self.run(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
                  "--no-install-recommends"] + IMAGE_PACKAGES)

    def trust_local_anchors(self) -> None:
        """Certificates this machine trusts and Debian's ca-certificates does not (a proxy's
        own authority, say) are added as a local authority inside, where
        update-ca-certificates keeps them, and to the bundle, as it would."""
        ours = pem_blocks(Path(BUNDLE).read_text(errors="replace")) if Path(BUNDLE).is_file() else []
        theirs = set(pem_blocks(self.run(["cat", BUNDLE])))
        extra = [block for block in ours if block not in theirs]
        if not extra:
            return
        for n, block in enumerate(extra):
            self.run(["sh", "-c", f"cat >/usr/local/share/ca-certificates/conformance-{n}.crt"],
                     stdin=block)
        self.run(["sh", "-c", f"cat >>{BUNDLE}"], stdin="".join(extra))

    def run(self, command: list[str], stdin: str = "") -> str:
        """Runs `command` as root inside the host; its output, or DebianHostError."""
        done = subprocess.run(
            ["nsenter", f"--target={self.init_pid}", "--mount", "--uts", "--pid", "--root",
             "--wd=/", "--"] + command,
            input=stdin, capture_output=True, text=True,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"})
        if done.returncode != 0:
            raise DebianHostError(f"{shlex.join(command)} in the Debian host: {done.stderr.strip()}")
        return done.stdout

    def inventory_vars(self, login: str) -> dict[str, str]:
        """testhost's variables as ansible-test's create_posix_inventory writes them for an
        ssh target (with this host's own known_hosts instead of none)."""
        variables = {
            "ansible_connection": "ssh",
            "ansible_pipelining": "yes",
            "ansible_python_interpreter": "/usr/bin/python3",
            "ansible_host": "127.0.0.1",
            "ansible_port": str(self.port),
            "ansible_user": login,
            "ansible_ssh_private_key_file": str(self.base / "client_ed25519"),
            "ansible_ssh_extra_args": shlex.join(
                ["-o", f"UserKnownHostsFile={self.dir / 'known_hosts'}"]),
        }
        if login != "root":
            variables.update(ansible_become="yes", ansible_become_method="sudo")
        return variables

    def kill(self) -> None:
        """SIGKILL to the namespace's PID 1 ends everything inside and, with it, the mounts;
        unshare, which waits for it, then exits."""
        if self.process is None:
            return
        if self.init_pid:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            self.process.kill()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
        self.init_pid = 0

    def stop(self) -> None:
        self.kill()
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.dir)], check=False)


BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def pem_blocks(text: str) -> list[str]:
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", text, re.S)
    return [block + "\n" for block in blocks]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
