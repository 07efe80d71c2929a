"""A stand-in for ci-files.testing.ansible.com, which some targets download from.

That server is on the internet, which this machine does not reach (only the Debian
archive and PyPI). patches.diff points those targets at `$CONFORMANCE_CI_FILES` instead:
this HTTP server on a loopback port (a Debian testhost shares this machine's network),
serving files made here that stand in for the originals: what the targets check of them
is their package name, version, architecture and dependencies, or that a key is a binary
OpenPGP one.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

# The targets' files, under test/integration/targets/ as on ci-files: a package's control
# fields, or (a key) None.
DEBS = {
    # apt and dpkg_selections install this old hello, then upgrade it from the archive.
    "apt/hello_2.10-2ubuntu2_{arch}.deb": {
        "Package": "hello", "Version": "2.10-2ubuntu2", "Architecture": "{arch}",
    },
    "dpkg_selections/hello_2.10-2ubuntu2_{arch}.deb": {
        "Package": "hello", "Version": "2.10-2ubuntu2", "Architecture": "{arch}",
    },
    # apt's deb URL with a dependency from a repository (packagetwo: setup_deb_repo's).
    "apt/packageone_1.0_all.deb": {
        "Package": "packageone", "Version": "1.0", "Architecture": "all", "Depends": "packagetwo",
    },
    # "a stupidly tiny one that has a dependency on vim-tiny", says the apt target.
    "apt/echo-hello_1.0_all.deb": {
        "Package": "echo-hello", "Version": "1.0", "Architecture": "all", "Depends": "vim-tiny",
    },
}
# A binary (not ASCII-armored) OpenPGP key, for deb822_repository's signed_by URL: the
# Debian archive's keyring of the testhost's base.
KEYS = {
    "test/integration/targets/apt_key/apt-key-example-binary.gpg":
        "usr/share/keyrings/debian-archive-keyring.gpg",
    # pkg.cloudflare.com's key, which deb822_repository fetches in check mode.
    "cloudflare-main.gpg": "usr/share/keyrings/debian-archive-keyring.gpg",
}


class CiFiles:
    """Made on first use, served until `stop()`; `url` is the base URL for the targets."""

    def __init__(self, root: Path, debian_rootfs: Path | None):
        self.root = root
        self.debian_rootfs = debian_rootfs
        self.server: http.server.ThreadingHTTPServer | None = None
        self.url = ""

    def start(self) -> str:
        if self.server is None:
            self.make()
            handler = functools.partial(_QuietHandler, directory=str(self.root))
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=self.server.serve_forever, daemon=True).start()
            self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def make(self) -> None:
        targets = self.root / "test" / "integration" / "targets"
        arch = _architecture()
        for name, fields in DEBS.items():
            path = targets / name.format(arch=arch)
            path.parent.mkdir(parents=True, exist_ok=True)
            _build_deb(path, {k: v.format(arch=arch) for k, v in fields.items()})
        for name, source in KEYS.items():
            if self.debian_rootfs is not None and (self.debian_rootfs / source).is_file():
                path = self.root / name
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.debian_rootfs / source, path)


# Paths answered 403 to Python's own user agent, as the servers they stand in for do
# (deb822_repository checks that its key is fetched with Ansible's).
AGENT_CHECKED = ("/cloudflare-main.gpg",)

# Paths answered 403 to everyone: apt's repository of a PPA that does not exist, as
# ppa.launchpad.net answers it (apt checks that a failed cache update says so).
FORBIDDEN = ("/ppa.launchpad.net/non-existing/",)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the base class's name
        agent = self.headers.get("User-Agent", "")
        if self.path in AGENT_CHECKED and agent.startswith("Python-urllib"):
            self.send_error(403, "Forbidden")
            return
        if self.path.startswith(FORBIDDEN):
            self.send_error(403, "Forbidden")
            return
        super().do_GET()

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def _architecture() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "amd64"


def _build_deb(path: Path, fields: dict[str, str]) -> None:
    """A package of those control fields holding one script, /usr/bin/<package>."""
    with tempfile.TemporaryDirectory() as work:
        tree = Path(work) / "tree"
        (tree / "DEBIAN").mkdir(parents=True)
        program = tree / "usr" / "bin" / fields["Package"]
        program.parent.mkdir(parents=True)
        program.write_text(f"#!/bin/sh\necho 'Hello from {fields['Package']} {fields['Version']}'\n")
        program.chmod(0o755)
        control = dict(fields)
        control.setdefault("Maintainer", "turbo-play conformance <conformance@localhost>")
        control.setdefault("Section", "misc")
        control.setdefault("Priority", "optional")
        control["Description"] = "stand-in for the ci-files package of ansible-core's tests"
        (tree / "DEBIAN" / "control").write_text("".join(f"{k}: {v}\n" for k, v in control.items()))
        subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(tree), str(path)],
                       check=True, capture_output=True)
