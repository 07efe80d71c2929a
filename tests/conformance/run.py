#!/usr/bin/env python3
"""Runs Ansible's own integration test targets against turbo-play.

This does for each POSIX controller target what `ansible-test integration` does, without
ansible-test: the target and the targets it depends on are copied into a fresh directory
whose name ends in non-ASCII letters, an inventory holds `testhost` on the local
connection, setup targets run first, and then either

- a role-style target (tasks/main.yml) runs as a play applying the role to `testhost`, or
- a `runme.sh` target runs its script,

with ansible-test's environment variables, and `ansible-playbook`, `ansible` and
`ansible-inventory` resolving to turbo-play through a directory of links put first on PATH.
A target ansible-test runs only on a throw-away host (`destructive`, see
debian_testhost.py) gets a fresh Debian 12 host as `testhost`, reached over ssh as root
(`--debian-login deploy`: as deploy, with sudo), started before its setup targets and
removed after it.
Commands turbo-play does not provide yet (`ansible-config`, `ansible-vault`, ...) resolve to
stubs there: a target that fails after
calling one is reported as skipped, with the command named.

The targets run are those in targets.txt; changes to their files are only those in
patches.diff (applied to a copy, never to the fetched tree); skipped.txt names the targets
that cannot run here, each with its reason, which the table shows. slow.txt names the
targets that take minutes each (on a Debian testhost, installing from the archive and
PyPI): they run only with --with-slow or when named, so CI's run stays short. Prints one row per target
and `conformance: N passed, N failed, N skipped`. With --check-baseline it exits non-zero
only when a target listed in passing.txt does not pass.

Usage: tests/conformance/run.sh [--check-baseline] [--write-baseline] [--keep]
                                [--binary PATH] [--timeout SECONDS]
                                [--debian-login root|deploy] [--with-ansible VENV]
                                [--with-slow] [TARGET ...]

--with-ansible runs the targets with Python Ansible's commands from VENV instead (a
virtual environment with ansible-core 2.21.5 installed), on the same kind of testhost: what
turbo-play's result is compared with.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ci_files import CiFiles
from debian_testhost import LOGINS, DebianHostError, DebianTestHost, base_dir, wants_debian_host

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FETCHED = REPO / "target" / "conformance"
TARGETS = FETCHED / "targets"
ANSIBLE_VERSION = "2.21.5"

# ansible-test's suffix for its temporary work directories: targets must cope with
# non-ASCII paths.
UNICODE_SUFFIX = "-\u00c5\u00d1\u015a\u00cc\u03b2\u0141\u00c8"

# Ansible's commands that the turbo-play binary is when invoked under their names.
PROVIDED = ["ansible-playbook", "ansible", "ansible-inventory"]

# Ansible's commands that turbo-play does not provide yet; each resolves to a stub that
# records the call.
NOT_PROVIDED = [
    "ansible-config",
    "ansible-console",
    "ansible-doc",
    "ansible-galaxy",
    "ansible-pull",
    "ansible-vault",
    "ansible-test",
]

# Seconds a target on a Debian testhost may take at least (see Runner.target_timeout).
DEBIAN_TIMEOUT = 900.0

# Aliases with which ansible-test would not run a target here.
SKIP_ALIASES = {
    "hidden/": "hidden: ansible-test runs it only as a dependency of other targets",
    "disabled/": "disabled in ansible-core",
    "unsupported/": "unsupported in ansible-core's CI",
    "needs/httptester/": "needs ansible-test's HTTP test container",
    "needs/ssh/": "needs an ssh connection to testhost",
}

# Targets that wait longer than --timeout by design: seconds they may take at least.
# callback_default runs test_non_lockstep.yml (three `sleep 12` on one host) under three
# strategies: 108 s of sleeping before anything else it does.
SLOW_TARGETS = {
    "callback_default": 300.0,
}


@dataclasses.dataclass
class Outcome:
    status: str  # pass, fail, skip
    seconds: float
    detail: str = ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="targets to run (default: targets.txt)")
    parser.add_argument("--binary", help="turbo-play binary (default: $TURBO_PLAY, else the "
                        "newer of target/release and target/debug)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per target")
    parser.add_argument("--check-baseline", action="store_true",
                        help="exit non-zero only if a target in passing.txt does not pass")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directories (printed at the end) for debugging")
    parser.add_argument("--write-baseline", action="store_true",
                        help="rewrite passing.txt with the targets that pass")
    parser.add_argument("--debian-login", choices=LOGINS, default="root",
                        help="how testhost is reached when it is a Debian host (default: root, "
                        "as in ansible-test's containers; deploy escalates with sudo)")
    parser.add_argument("--with-slow", action="store_true",
                        help="also run the targets of slow.txt (minutes each on a Debian testhost)")
    parser.add_argument("--with-ansible", metavar="VENV",
                        help="run Python Ansible's commands from this virtual environment "
                        "instead of turbo-play, for comparison")
    args = parser.parse_args()

    if not (FETCHED / ".fetched").is_file():
        sys.exit("conformance: no targets fetched; run `bash tests/conformance/fetch.sh` first")
    binary = find_binary(args.binary)
    names = args.targets or without_slow(read_list(HERE / "targets.txt"), args.with_slow)
    source = patched_tree()
    controller, missing = controller_python()
    if controller is None:
        print(f"conformance: {missing}; targets with Python plugins are skipped")

    run_root = Path(tempfile.mkdtemp(prefix="turbo-conformance-"))
    logs = FETCHED / ("logs-ansible" if args.with_ansible else "logs")
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    runner = Runner(binary, source, run_root, logs, args.timeout, controller, missing)
    runner.debian_login = args.debian_login
    if args.with_ansible:
        use_python_ansible(runner.bin_dir, Path(args.with_ansible))
        binary = Path(args.with_ansible)
    results: dict[str, Outcome] = {}
    started = time.monotonic()
    try:
        width = max(len(n) for n in names)
        print(f"conformance: {len(names)} targets with {binary}, logs in {logs.relative_to(REPO)}/")
        print(f"{'target':<{width}}  result  seconds  first failure")
        for name in names:
            outcome = runner.run_target(name)
            # The work directories are gone after the run: paths read from inside the tree.
            outcome.detail = re.sub(re.escape(str(run_root)) + r"/[^/]+/test/integration/(?:targets/)?",
                                    "", outcome.detail)
            results[name] = outcome
            print(f"{name:<{width}}  {outcome.status:<6}  {outcome.seconds:7.1f}  {outcome.detail}",
                  flush=True)
    finally:
        if runner.ci_files is not None:
            runner.ci_files.stop()
        if args.keep:
            print(f"conformance: work directories kept in {run_root}")
        else:
            shutil.rmtree(run_root, ignore_errors=True)

    counts = {s: sum(1 for o in results.values() if o.status == s) for s in ("pass", "fail", "skip")}
    print(f"conformance: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped"
          f" ({time.monotonic() - started:.0f} s)")

    if args.write_baseline:
        passing = [n for n in names if results[n].status == "pass"]
        (HERE / "passing.txt").write_text(
            "# Targets that pass; tests/conformance/run.sh --check-baseline fails if one stops.\n"
            + "".join(f"{n}\n" for n in passing))
    if args.check_baseline:
        baseline = read_list(HERE / "passing.txt")
        regressed = [n for n in baseline if n in results and results[n].status != "pass"]
        for name in regressed:
            print(f"conformance: {name} is in tests/conformance/passing.txt but now "
                  f"{results[name].status}s: {results[name].detail}", file=sys.stderr)
        return 1 if regressed else 0
    return 1 if counts["fail"] else 0


def find_binary(explicit: str | None) -> Path:
    if explicit or os.environ.get("TURBO_PLAY"):
        path = Path(explicit or os.environ["TURBO_PLAY"]).resolve()
        if not path.is_file():
            sys.exit(f"conformance: no turbo-play binary at {path}")
        return path
    built = [p for p in (REPO / "target/release/turbo-play", REPO / "target/debug/turbo-play")
             if p.is_file()]
    if not built:
        sys.exit("conformance: no turbo-play binary; run `cargo build` (or pass --binary)")
    return max(built, key=lambda p: p.stat().st_mtime)


def controller_python() -> tuple[Path | None, str]:
    """The Python turbo-play runs the targets' Python plugins with: a venv with ansible-core
    (pinned), made once under target/ by tests/controller_python/make.sh; None and why not
    when there is no Python >= 3.12 to make it with."""
    made = subprocess.run(["bash", str(REPO / "tests/controller_python/make.sh")],
                          capture_output=True, text=True)
    lines = made.stdout.strip().splitlines()
    if made.returncode == 0 and lines and Path(lines[-1]).is_file():
        return Path(lines[-1]), ""
    why = (made.stderr.strip().splitlines() or ["tests/controller_python/make.sh failed"])[-1]
    return None, why.removeprefix("controller-python: ")


def needs_plugins(target_dir: Path) -> bool:
    """Whether a target ships controller plugins (action, filter, test or lookup ones,
    beside its playbooks or in a collection), which need ansible-core's Python."""
    for root, dirs, files in os.walk(target_dir):
        name = Path(root).name
        parent = Path(root).parent.name
        if any(f.endswith(".py") for f in files) and (
                name in ("action_plugins", "filter_plugins", "test_plugins", "lookup_plugins")
                or (parent == "plugins" and name in ("action", "filter", "test", "lookup"))):
            return True
    return False


def read_list(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines()
            if line.split("#")[0].strip()]


def without_slow(names: list[str], with_slow: bool) -> list[str]:
    """targets.txt's names less slow.txt's (`target: why` a line), unless asked for: those
    are not run at all, so --check-baseline does not expect them."""
    slow = read_skipped(HERE / "slow.txt")
    left_out = [n for n in names if n in slow]
    if with_slow or not left_out:
        return names
    print(f"conformance: not running {len(left_out)} slow targets ({', '.join(left_out)}; "
          "tests/conformance/slow.txt): --with-slow runs them")
    return [n for n in names if n not in slow]


def read_skipped(path: Path) -> dict[str, str]:
    """skipped.txt: `target: reason` a line (# comments), the targets that cannot run here."""
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, reason = line.partition(":")
            found[name.strip()] = reason.strip()
    return found


def patched_tree() -> Path:
    """The fetched targets with patches.diff applied, rebuilt when either changes."""
    patch_file = HERE / "patches.diff"
    key = hashlib.sha256((FETCHED / ".fetched").read_bytes() + patch_file.read_bytes()).hexdigest()
    tree = FETCHED / "patched"
    stamp = FETCHED / ".patched"
    if stamp.is_file() and stamp.read_text() == key and tree.is_dir():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(TARGETS, tree, symlinks=True)
    if not any(line.startswith("--- ") for line in patch_file.read_text().splitlines()):
        stamp.write_text(key)
        return tree
    done = subprocess.run(["patch", "-p1", "--quiet", "--forward", "--no-backup-if-mismatch",
                           "-d", str(tree), "-i", str(patch_file)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"conformance: {patch_file.relative_to(REPO)} does not apply to the fetched "
                 f"targets:\n{done.stdout}{done.stderr}")
    stamp.write_text(key)
    return tree


class Runner:
    def __init__(self, binary: Path, source: Path, run_root: Path, logs: Path, timeout: float,
                 controller: Path | None, missing: str):
        self.controller = controller
        self.missing = missing
        self.source = source
        self.run_root = run_root
        self.logs = logs
        self.timeout = timeout
        self.setup_once_done: set[str] = set()
        self.skipped = read_skipped(HERE / "skipped.txt")
        self.last_timeout = timeout
        self.debian_login = "root"
        # The Debian host of the target being run, if it has one.
        self.testhost: DebianTestHost | None = None
        self.archives: Path | None = None
        # ci-files.testing.ansible.com's stand-in, started with the first Debian host.
        self.ci_files: CiFiles | None = None
        self.stub_log = run_root / "stub-calls"
        self.bin_dir = run_root / "bin"
        self.make_bin_dir(binary)

    def make_bin_dir(self, binary: Path) -> None:
        """ansible-test's entry-point directory: Ansible's commands and its Python."""
        self.bin_dir.mkdir()
        for name in PROVIDED:
            (self.bin_dir / name).symlink_to(binary)
        for name in NOT_PROVIDED:
            stub = self.bin_dir / name
            stub.write_text(
                "#!/bin/sh\n"
                f"echo {name} >> '{self.stub_log}'\n"
                f"echo 'conformance: `{name}` is not provided by turbo-play yet' >&2\n"
                "exit 1\n")
            stub.chmod(0o755)
        # Scripts call `python` and `source virtualenv.sh` as under ansible-test, whose
        # controller Python they mean; turbo-play has none, so it is this one.
        for name in ("python", "python3"):
            (self.bin_dir / name).symlink_to(sys.executable)
        # The ansible-core an ansible-test controller has installed: turbo-play runs the
        # targets' Python plugins with it and packs its module_utils for their `library/`
        # modules. The venv tests/controller_python/make.sh made, else the package
        # fetch.sh unpacked (enough for modules). Only turbo-play is pointed at it
        # (TURBO_ANSIBLE_PYTHON), so the targets' scripts still see no Python Ansible.
        if self.controller is not None:
            (self.bin_dir / "ansible-core-python").write_text(
                f"#!/bin/sh\nexec '{self.controller}' \"$@\"\n")
        else:
            (self.bin_dir / "ansible-core-python").write_text(
                "#!/bin/sh\n"
                f"PYTHONPATH='{FETCHED / 'lib'}' exec '{sys.executable}' \"$@\"\n")
        (self.bin_dir / "ansible-core-python").chmod(0o755)
        (self.bin_dir / "virtualenv.sh").write_text(
            "# Sourced by targets: a fresh virtual environment in OUTPUT_DIR, activated.\n"
            'rm -rf "${OUTPUT_DIR}/venv"\n'
            '"${ANSIBLE_TEST_PYTHON_INTERPRETER}" -m venv --system-site-packages "${OUTPUT_DIR}/venv"\n'
            "set +ux\n"
            'source "${OUTPUT_DIR}/venv/bin/activate"\n'
            "set -ux\n")

    def run_target(self, name: str) -> Outcome:
        started = time.monotonic()
        target_dir = self.source / name
        if not target_dir.is_dir():
            return Outcome("fail", 0.0, f"no target {name} in ansible-core {ANSIBLE_VERSION}")
        aliases = read_aliases(target_dir)
        if name in self.skipped:
            return Outcome("skip", 0.0, self.skipped[name])
        if is_hidden(target_dir):
            return Outcome("skip", 0.0, SKIP_ALIASES["hidden/"])
        for alias, reason in SKIP_ALIASES.items():
            if alias in aliases:
                return Outcome("skip", 0.0, reason)
        if self.controller is None and any(needs_plugins(self.source / d)
                                           for d in dependencies(self.source, name)):
            return Outcome("skip", 0.0, f"its Python plugins need ansible-core's Python: {self.missing}")
        log_path = self.logs / f"{name}.log"
        if self.stub_log.exists():
            self.stub_log.unlink()
        with open(log_path, "w", encoding="utf-8", errors="replace") as log:
            try:
                self.start_testhost(name, aliases, log)
                self.run_setup_targets(name, aliases, log)
                rc, timed_out, work = self.run_one(name, log)
            except SetupFailed as failed:
                return Outcome("fail", time.monotonic() - started, str(failed))
            except NoTesthost as missing:
                return Outcome("skip", time.monotonic() - started, str(missing))
            finally:
                self.stop_testhost()
        seconds = time.monotonic() - started
        if rc == 0 and not timed_out:
            return Outcome("pass", seconds)
        if self.stub_log.exists() and not timed_out:
            called = sorted(set(self.stub_log.read_text().split()))
            return Outcome("skip", seconds, "calls " + ", ".join(f"`{c}`" for c in called)
                           + ", which turbo-play does not provide yet")
        output = log_path.read_text(encoding="utf-8", errors="replace")
        script = is_script(target_dir)
        found = problems(output)
        if not found and script:
            # Scripts often send ansible-playbook's output to a file and grep it.
            found = problems_in_written_files([work, self.run_root / "output_dir"], started)
        # A rescued failure is followed by more tasks: the last failure is what ended the run.
        detail = (found[-1] if found else last_words(output))
        warned = unsupported_warnings(output)
        if warned:
            detail += f" (after the warning: {one_line(warned[0])})"
        if timed_out:
            detail = f"timed out after {self.last_timeout:.0f} s; {detail}"
        return Outcome("fail", seconds, detail)

    def run_setup_targets(self, name: str, aliases: list[str], log) -> None:
        for alias in aliases:
            match = re.match(r"setup/(always|once)/([^/]+)/$", alias)
            if not match:
                continue
            when, setup = match.groups()
            # A Debian testhost is fresh for each target: its setup runs again.
            if when == "once" and setup in self.setup_once_done and self.testhost is None:
                continue
            log.write(f"conformance: setup target {setup}\n")
            log.flush()
            rc, timed_out, _ = self.run_one(setup, log)
            if rc != 0 or timed_out:
                raise SetupFailed(f"setup target {setup} failed (see the log)")
            self.setup_once_done.add(setup)

    def run_one(self, name: str, log) -> tuple[int, bool, Path]:
        """Runs one target as ansible-test does; returns its exit code, whether it hung,
        and its work directory (kept until the end of the run)."""
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", suffix=UNICODE_SUFFIX, dir=self.run_root))
        integration_dir = work / "test" / "integration"
        targets_dir = integration_dir / "targets"
        targets_dir.mkdir(parents=True)
        needed = sorted(dependencies(self.source, name))
        for dependency in needed:
            shutil.copytree(self.source / dependency, targets_dir / dependency, symlinks=True)
        copy_ansible_test_data(work)
        inventory = integration_dir / "inventory"
        inventory.write_text(json.dumps({"testgroup": {"hosts": {"testhost": self.testhost_vars()}}},
                                        indent=4) + "\n")
        config = integration_dir / "integration.cfg"
        config.write_text("")
        output_dir = self.run_root / "output_dir"
        shutil.rmtree(output_dir, ignore_errors=True)
        output_dir.mkdir()

        env = self.environment(name, output_dir, inventory, config)
        if self.ci_files is not None:
            env["CONFORMANCE_CI_FILES"] = self.ci_files.url
        roots = collection_roots(targets_dir, needed)
        if roots:
            env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(str(r) for r in roots)
        target_dir = targets_dir / name
        if is_script(target_dir):
            command = ["./runme.sh"]
            cwd = target_dir
        else:
            aliases = read_aliases(target_dir)
            gather_facts = "gather_facts/no/" not in aliases
            play = {
                "gather_facts": gather_facts,
                "hosts": "testhost",
                "roles": [name],
                "vars": {"output_dir": str(output_dir)},
                "vars_files": [],
            }
            playbook = integration_dir / f"{name}-{os.urandom(4).hex()}.yml"
            playbook.write_text(json.dumps([play], indent=4, sort_keys=True))
            command = ["ansible-playbook", playbook.name, "-i", "inventory"]
            cwd = integration_dir
            env["ANSIBLE_ROLES_PATH"] = str(targets_dir)
        env["ANSIBLE_PLAYBOOK_DIR"] = str(cwd)
        log.write(f"conformance: running {' '.join(command)} in {cwd}\n")
        log.flush()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self.last_timeout = self.target_timeout(name)
            return process.wait(timeout=self.last_timeout), False, work
        except subprocess.TimeoutExpired:
            # The script's children (turbo-play, sleeps) are in its session: end them all.
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return -9, True, work

    def target_timeout(self, name: str) -> float:
        """A target on a Debian host installs packages from the archive (setup targets
        too): it gets DEBIAN_TIMEOUT at least; SLOW_TARGETS' their own."""
        floor = DEBIAN_TIMEOUT if self.testhost is not None else 0.0
        return max(self.timeout, SLOW_TARGETS.get(name, 0.0), floor)

    def testhost_vars(self) -> dict[str, str]:
        if self.testhost is not None:
            return self.testhost.inventory_vars(self.debian_login)
        return {
            "ansible_connection": "local",
            "ansible_pipelining": "yes",
            "ansible_python_interpreter": sys.executable,
        }

    def start_testhost(self, name: str, aliases: list[str], log) -> None:
        """A fresh Debian host as testhost for a target that wants one (see
        debian_testhost.py); NoTesthost when there is no base to start it from."""
        if not wants_debian_host(aliases):
            return
        base = base_dir(REPO)
        if base is None:
            raise NoTesthost("destructive: needs a Debian test host; build its base with "
                             "`bash tests/debian/build-base.sh` (as root)")
        host = DebianTestHost(base, Path(tempfile.mkdtemp(prefix=f"debian-{name}-", dir=self.run_root)),
                              self.apt_archives())
        try:
            host.start()
        except DebianHostError as error:
            host.stop()
            raise SetupFailed(str(error)) from error
        self.testhost = host
        if self.ci_files is None:
            self.ci_files = CiFiles(self.run_root / "ci-files", base / "rootfs")
            self.ci_files.start()
        log.write(f"conformance: testhost is a fresh Debian host on 127.0.0.1:{host.port}, "
                  f"login {self.debian_login}\n")
        log.flush()

    def apt_archives(self) -> Path:
        """The apt archive cache the testhosts share: target/conformance/apt-archives,
        unless another run holds it (then one of this run's own)."""
        if self.archives is None:
            import fcntl
            shared = FETCHED / "apt-archives"
            shared.mkdir(exist_ok=True)
            self.archives_lock = open(FETCHED / "apt-archives.lock", "w")
            try:
                fcntl.flock(self.archives_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.archives = shared
            except OSError:
                self.archives = self.run_root / "apt-archives"
        return self.archives

    def stop_testhost(self) -> None:
        if self.testhost is not None:
            self.testhost.stop()
            self.testhost = None

    def environment(self, name: str, output_dir: Path, inventory: Path, config: Path) -> dict[str, str]:
        """ansible-test's environment for a target (ansible_util.ansible_environment and
        commands/integration's integration_environment), less what only concerns Python
        Ansible (PYTHONPATH, coverage, its lib root)."""
        env = {
            "LC_ALL": configured_locale(),
            "PATH": os.pathsep.join([str(self.bin_dir)] + without_ansible(os.environ.get("PATH", os.defpath))),
            "HOME": os.environ["HOME"],
            "TURBO_ANSIBLE_PYTHON": str(self.bin_dir / "ansible-core-python"),
        }
        for optional in ("LD_LIBRARY_PATH", "SSH_AUTH_SOCK", "SSH_SK_PROVIDER", "ANSIBLE_KEEP_REMOTE_FILES",
                         "LDFLAGS", "CFLAGS"):
            if optional in os.environ:
                env[optional] = os.environ[optional]
        env.update({
            "ANSIBLE_PYTHON_MODULE_RLIMIT_NOFILE": "1024",
            "ANSIBLE_INVENTORY_PLUGIN_EXTS": ".yaml, .yml, .json, .winrm, .networking",
            "ANSIBLE_FORCE_COLOR": "false",
            "ANSIBLE_FORCE_HANDLERS": "true",
            "ANSIBLE_HOST_PATTERN_MISMATCH": "error",
            "ANSIBLE_INVENTORY": "/dev/null",
            "ANSIBLE_DEPRECATION_WARNINGS": "false",
            "ANSIBLE_HOST_KEY_CHECKING": "false",
            "ANSIBLE_RETRY_FILES_ENABLED": "false",
            "ANSIBLE_DISPLAY_TRACEBACK": "never",
            "ANSIBLE_CONFIG": str(config),
            "ANSIBLE_LIBRARY": "/dev/null",
            "ANSIBLE_DEVEL_WARNING": "false",
            "PAGER": "/bin/cat",
            "ANSIBLE_WORKER_SHUTDOWN_POLL_COUNT": "100",
            "ANSIBLE_WORKER_SHUTDOWN_POLL_DELAY": "0.1",
            "ANSIBLE_PYTHON_INTERPRETER": "/set/ansible_python_interpreter/in/inventory",
            "JUNIT_OUTPUT_DIR": str(self.run_root / "junit"),
            "JUNIT_TASK_RELATIVE_PATH": str(inventory.parent.parent.parent),
            "JUNIT_REPLACE_OUT_OF_TREE_PATH": "out-of-tree:",
            "ANSIBLE_CALLBACKS_ENABLED": "junit",
            "ANSIBLE_TEST_CI": "",
            "ANSIBLE_TEST_COVERAGE": "",
            "ANSIBLE_TEST_ANSIBLE_VERSION": ANSIBLE_VERSION,
            "OUTPUT_DIR": str(output_dir),
            "INVENTORY_PATH": str(inventory),
            "ANSIBLE_TEST_PYTHON_VERSION": f"{sys.version_info.major}.{sys.version_info.minor}",
            "ANSIBLE_TEST_PYTHON_INTERPRETER": sys.executable,
        })
        env.update(env_set_aliases(read_aliases(self.source / name)))
        # Not ansible-test's: a destructive target (its testhost a Debian host) must not
        # pip-install into this machine's Pythons from the controller side (a virtual
        # environment of its own is fine); where one does, it fails instead.
        if self.testhost is not None:
            env["PIP_REQUIRE_VIRTUALENV"] = "true"
        return env


def use_python_ansible(bin_dir: Path, venv: Path) -> None:
    """Points Ansible's commands and `python` in the runner's bin directory at the
    virtual environment's, for running a target with Python Ansible."""
    for name in PROVIDED + NOT_PROVIDED + ["python", "python3"]:
        (bin_dir / name).unlink()
        (bin_dir / name).symlink_to(venv / "bin" / name)


class SetupFailed(Exception):
    pass


class NoTesthost(Exception):
    pass


def is_script(target_dir: Path) -> bool:
    return (target_dir / "runme.sh").is_file()


def is_hidden(target_dir: Path) -> bool:
    """ansible-test's hidden targets: by alias, or named setup_* or prepare_*."""
    return ("hidden/" in read_aliases(target_dir)
            or target_dir.name.startswith(("setup_", "prepare_")))


def read_aliases(target_dir: Path) -> list[str]:
    """A target's aliases as ansible-test normalises them: a group alias ends in `/`."""
    path = target_dir / "aliases"
    if not path.is_file():
        return []
    aliases = []
    for line in path.read_text().splitlines():
        alias = line.split("#")[0].strip()
        if alias:
            aliases.append(alias if alias.endswith("/") else alias + "/")
    return aliases


def env_set_aliases(aliases: list[str]) -> dict[str, str]:
    found = {}
    for alias in aliases:
        match = re.match(r"env/set/([^/]+)/(.*)/$", alias)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def dependencies(source: Path, name: str) -> set[str]:
    """The target and, transitively, the targets ansible-test copies with it: setup and
    needs/target aliases, links into other targets, and hidden role targets named in a
    role's meta files (ansible-test's own primitive scan)."""
    hidden_roles = None
    found = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in found or not (source / current).is_dir():
            continue
        found.add(current)
        target_dir = source / current
        for alias in read_aliases(target_dir):
            match = re.match(r"(?:setup/(?:always|once)|needs/target)/([^/]+)/$", alias)
            if match:
                pending.append(match.group(1))
        for root, dirs, files in os.walk(target_dir):
            for entry in dirs + files:
                path = Path(root) / entry
                if path.is_symlink():
                    real = path.resolve()
                    if real.is_relative_to(source.resolve()):
                        pending.append(real.relative_to(source.resolve()).parts[0])
        meta = target_dir / "meta"
        if meta.is_dir():
            if hidden_roles is None:
                hidden_roles = [t.name for t in source.iterdir() if is_hidden(t) and not is_script(t)]
            for path in meta.rglob("*"):
                if not path.is_file():
                    continue
                try:
                    text = path.read_text()
                except UnicodeDecodeError:
                    continue
                for line in text.splitlines():
                    if line.strip() and not re.match(r"^ *#", line):
                        pending.extend(h for h in hidden_roles if h in line)
    return found


def copy_ansible_test_data(work: Path) -> None:
    """ansible-test's files that targets read from beside them (test/lib/ansible_test, as
    in ansible-core's source tree): its constraints file."""
    path = Path("test/lib/ansible_test/_data/requirements/constraints.txt")
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FETCHED / path, work / path)


def collection_roots(targets_dir: Path, needed: list[str]) -> list[Path]:
    """The targets that hold a test collection of their own
    (<target>/ansible_collections/ansible_test/<target, dashes as underscores>), which
    ansible-test puts on ANSIBLE_COLLECTIONS_PATH."""
    return [targets_dir / name for name in needed
            if (targets_dir / name / "ansible_collections" / "ansible_test"
                / name.replace("-", "_")).is_dir()]


def without_ansible(path: str) -> list[str]:
    """PATH without directories holding Python Ansible, so no target reaches it by accident."""
    return [d for d in path.split(os.pathsep)
            if d and not (Path(d) / "ansible-playbook").exists()]


def configured_locale() -> str:
    """ansible-test's choice: en_US.UTF-8 where it exists, else C.UTF-8."""
    available = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
    return "en_US.UTF-8" if "en_us.utf8" in available or "en_us.utf-8" in available else "C.UTF-8"


FAILURE = re.compile(r"^(?:fatal|failed): \[([^\]]*)\](?: \(item=.*?\))?: (?:FAILED|UNREACHABLE)! => (.*)$")
FAILURE_ITEM = re.compile(r"^failed: \[([^\]]*)\] \((item=.*?)\) => (.*)$")
TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.*)\] \**$")
HEADER = re.compile(r"^(?:PLAY|PLAY RECAP|NO MORE HOSTS LEFT)\b.*\*+$")


def problems(output: str) -> list[str]:
    """Failed tasks (with their messages) and errors, in order, read from Ansible-shaped
    output. A failure a block rescues is followed by more tasks, and a script often runs
    playbooks that are meant to fail, so the last one is what ended the run."""
    lines = output.splitlines()
    found = []
    # A task's failures count once its last item is shown and no `...ignoring` follows.
    pending = []
    task = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "...ignoring":
            pending = []
        elif (m := TASK.match(line)) or HEADER.match(line):
            found += pending
            pending = []
            task = m.group(1) if m else task
        elif (m := FAILURE.match(line) or FAILURE_ITEM.match(line)):
            body, i = json_block(lines, i, m.group(m.lastindex))
            pending.append(f"task [{task}]: {failure_message(body)}")
        elif line.startswith("ERROR! ") or line.startswith("error: "):
            found += pending
            pending = []
            found.append(line.strip())
        i += 1
    return found + pending


def unsupported_warnings(output: str) -> list[str]:
    """turbo-play's warnings that it ignored something the target relies on."""
    return [line.removeprefix("[WARNING]: ").strip() for line in output.splitlines()
            if line.startswith("[WARNING]: ") and "not supported" in line]


def problems_in_written_files(directories: list[Path], since: float) -> list[str]:
    since_epoch = time.time() - (time.monotonic() - since)
    found = []
    for directory in directories:
        for path in sorted(directory.rglob("*")):
            try:
                if (not path.is_file() or path.is_symlink() or path.stat().st_size > 1 << 20
                        or path.stat().st_mtime < since_epoch):
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            found += [f"in {path.name}: {p}" for p in problems(text)]
    return found


def last_words(output: str) -> str:
    """For a script that failed on a check of its own: its last command and output line."""
    tail = [l for l in output.splitlines() if l.strip() and not l.startswith("conformance: ")]
    commands = [l for l in tail if l.startswith("+")]
    last = one_line(tail[-1]) if tail else "no output"
    if commands and commands[-1] != tail[-1]:
        return f"after `{one_line(commands[-1].lstrip('+ '))}`: {last}"
    return f"script failed at `{one_line(last.lstrip('+ '))}`" if last.startswith("+") else last


def json_block(lines: list[str], i: int, first: str) -> tuple[str, int]:
    """The JSON value that starts on line i (pretty-printed, it spans lines); returns it and
    the index of its last line. Unparsable text is returned as its first line."""
    text = first
    for j in range(i, min(i + 400, len(lines))):
        if j > i:
            text += "\n" + lines[j]
        try:
            json.loads(text)
            return text, j
        except ValueError:
            continue
    return first, i


def failure_message(body: str) -> str:
    try:
        result = json.loads(body)
    except ValueError:
        return one_line(body)
    if not isinstance(result, dict):
        return one_line(body)
    message = str(result.get("msg", ""))
    for extra in ("stderr", "assertion"):
        if result.get(extra):
            message += f" ({extra}: {str(result[extra]).strip().splitlines()[0]})"
    return one_line(message or body)


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


if __name__ == "__main__":
    sys.exit(main())
