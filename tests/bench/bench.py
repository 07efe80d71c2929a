#!/usr/bin/env python3
"""The measuring half of tests/bench/run.sh: run.sh prepares the venv, sshd and users and
passes them in BENCH_* environment variables; this runs the matrix and writes the tables.
Not meant to be started by hand (see run.sh for the knobs)."""
import datetime
import glob
import importlib.metadata
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ENV = os.environ
ROOT = ENV["BENCH_ROOT"]
TMP = ENV["BENCH_TMP"]
OUT_DIR = ENV["BENCH_OUT_DIR"]
SSHD_PORT = int(ENV["BENCH_SSHD_PORT"])
KEY = ENV["BENCH_KEY"]
HOST_PUB = open(ENV["BENCH_HOST_KEY_PUB"]).read().split()[:2]
USERS = ENV["BENCH_USERS"].split()
VENV_BIN = ENV["BENCH_VENV_BIN"]
TURBO_BIN = ENV["BENCH_TURBO_BIN"]
TURBO_STATUS = ENV.get("BENCH_TURBO_STATUS", "")
DELAY_PROXY = ENV["BENCH_DELAY_PROXY"]
MITOGEN_STRATEGY_DIR = ENV["BENCH_MITOGEN_STRATEGY_DIR"]
TARGET_PYTHON = "/usr/bin/python3"

ALL_TOOLS = ["turbo-play", "ansible", "mitogen"]
TOOLS = [t for t in ENV.get("BENCH_TOOLS", " ".join(ALL_TOOLS)).split()]
NS = [int(x) for x in ENV.get("BENCH_N", "10 100 1000").split()]
HOST_COUNTS = [int(x) for x in ENV.get("BENCH_HOSTS", "1 3").split()]
PLAYBOOKS = ENV.get("BENCH_PLAYBOOKS", "file_creation bench_copy_files bench_template").split()
SCENARIOS = ENV.get("BENCH_SCENARIOS", "direct latency bytes").split()
LATENCY_NS = [int(x) for x in ENV.get("BENCH_LATENCY_N", "100").split()]
LATENCY_HOSTS = [int(x) for x in ENV.get("BENCH_LATENCY_HOSTS", "1").split()]
DELAY_MS = ENV.get("BENCH_DELAY_MS", "15")
BYTES_N = int(ENV.get("BENCH_BYTES_N", "100"))
FULL = ENV.get("BENCH_FULL") == "1"
MAX_SECONDS = float(ENV.get("BENCH_MAX_SECONDS", "0" if FULL else "1200"))
TIMEOUT = int(ENV.get("BENCH_TIMEOUT", "600"))
# Ansible's per-item cost measured on this kind of machine; used before any cell of its own.
ANSIBLE_SECONDS_PER_ITEM = 0.7

for tool in TOOLS:
    if tool not in ALL_TOOLS:
        sys.exit(f"bench: unknown tool {tool!r} in BENCH_TOOLS; use any of {' '.join(ALL_TOOLS)}")
for pb in PLAYBOOKS:
    if not os.path.exists(f"{ROOT}/playbooks/{pb}.yml"):
        sys.exit(f"bench: playbook playbooks/{pb}.yml not found (BENCH_PLAYBOOKS={' '.join(PLAYBOOKS)})")

HOMES = {f"host{i + 1}": f"{TMP}/home-{i + 1}" for i in range(len(USERS))}
SRC_DIR = f"{TMP}/src"
KNOWN_HOSTS = f"{TMP}/known_hosts"
LOG_DIR = f"{OUT_DIR}/logs"
known_ports = set()
children = []
results = []  # one dict per measured cell, see record()
LOAD_AT_START = " ".join(f"{x:.2f}" for x in os.getloadavg())


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- helpers


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what, proc=None):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within 15 s")


def start_child(cmd, port, what):
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
    children.append(proc)
    wait_port(port, what, proc)
    return proc


def stop_child(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc in children:
        children.remove(proc)


def trust_port(port):
    """Every port that leads to the sshd gets the host key, so `ssh` (the floor) checks it strictly."""
    known_ports.add(port)
    with open(KNOWN_HOSTS, "w") as kh:
        for p in sorted(known_ports):
            kh.write(f"[127.0.0.1]:{p} {HOST_PUB[0]} {HOST_PUB[1]}\n")


def inventory(port, hosts):
    path = f"{TMP}/inventory-{port}-{hosts}.ini"
    with open(path, "w") as inv:
        for i in range(hosts):
            inv.write(
                f"host{i + 1} ansible_host=127.0.0.1 ansible_port={port} ansible_user={USERS[i]} "
                f"ansible_ssh_private_key_file={KEY} ansible_python_interpreter={TARGET_PYTHON}\n"
            )
    return path


def hosts_of(count):
    return [f"host{i + 1}" for i in range(count)]


def clean_homes(count, caches=False):
    """Runs as root on the local homes, so cleaning costs nothing inside the timed runs."""
    for host in hosts_of(count):
        home = HOMES[host]
        for path in glob.glob(f"{home}/file_*"):
            os.unlink(path)
        if caches:
            for sub in (".ansible", ".cache"):
                shutil.rmtree(f"{home}/{sub}", ignore_errors=True)


def make_sources(n):
    os.makedirs(SRC_DIR, exist_ok=True)
    for i in range(1, n + 1):
        path = f"{SRC_DIR}/f{i}.txt"
        if not os.path.exists(path):
            with open(path, "w") as src:
                src.write(expected_content("bench_copy_files", "host1", i))


def expected_content(playbook, host, i):
    if playbook == "file_creation":
        return f"test file {i}\n"
    if playbook == "bench_copy_files":
        return f"copied file {i}\n"
    if playbook == "bench_template":
        lines = [f"line {k} of file {i}\n" for k in range(3)]
        return f"# rendered for {host}\nitem: {i}\n" + "".join(lines)
    return None


def verify(playbook, n, count):
    """(files_ok, content_ok, message): all N files on every host, and first/last content."""
    for host in hosts_of(count):
        home = HOMES[host]
        found = len(glob.glob(f"{home}/file_*"))
        if found != n:
            return False, False, f"{host}: expected {n} files, found {found}"
        for i in sorted({1, n}):
            want = expected_content(playbook, host, i)
            if want is None:
                continue
            with open(f"{home}/file_{i}", errors="replace") as f:
                got = f.read()
            if got != want:
                return True, False, f"{host}: file_{i} is {got!r}, expected {want!r}"
    return True, True, ""


def close_masters(cpdir):
    """Ends the ControlPersist masters Ansible left behind so nothing outlives a cell."""
    for sock in glob.glob(f"{cpdir}/*"):
        subprocess.run(
            ["ssh", "-F", "/dev/null", "-o", f"ControlPath={sock}", "-O", "exit", "bench"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False,
        )


def tool_command(tool, playbook, inv, n):
    pb = f"{ROOT}/playbooks/{playbook}.yml"
    extra = ["-e", f"n={n}", "-e", f"src_dir={SRC_DIR}"]
    if tool == "turbo-play":
        return [TURBO_BIN, pb, "-i", inv, *extra, *shlex.split(ENV.get("BENCH_TURBO_ARGS", ""))]
    return [f"{VENV_BIN}/ansible-playbook", "-i", inv, pb, *extra]


def tool_env(tool, cpdir):
    env = dict(ENV)
    # Host keys are not checked by any tool (the floor's ssh does check them against known_hosts).
    env["ANSIBLE_HOST_KEY_CHECKING"] = "False"
    if tool in ("ansible", "mitogen"):
        env.update(
            ANSIBLE_CONFIG=f"{TMP}/ansible.cfg",
            ANSIBLE_PIPELINING="True",
            ANSIBLE_SSH_ARGS=(
                "-C -o ControlMaster=auto -o ControlPersist=60s "
                f"-o UserKnownHostsFile={KNOWN_HOSTS} -o IdentitiesOnly=yes"
            ),
            ANSIBLE_SSH_CONTROL_PATH_DIR=cpdir,
            ANSIBLE_RETRY_FILES_ENABLED="False",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORKS="10",
            ANSIBLE_DEPRECATION_WARNINGS="False",
            ANSIBLE_LOCALHOST_WARNING="False",
        )
    if tool == "mitogen":
        env["ANSIBLE_STRATEGY"] = "mitogen_linear"
        env["ANSIBLE_STRATEGY_PLUGINS"] = MITOGEN_STRATEGY_DIR
    return env


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd, env, logname, timeout):
    """Wall seconds, exit code and controller CPU seconds of one run (every descendant that
    was waited for: ansible's workers count, a detached ssh ControlPersist master does not).
    Output goes to .bench/logs/<logname>.log."""
    os.makedirs(LOG_DIR, exist_ok=True)
    logpath = f"{LOG_DIR}/{logname}.log"
    with open(logpath, "w") as out:
        for key in sorted(env):
            if key.startswith(("ANSIBLE_", "TURBO_PLAY")):
                out.write(f"# {key}={env[key]}\n")
        out.write("$ " + shlex.join(cmd) + "\n")
        out.flush()
        start, cpu_start = time.perf_counter(), children_cpu()
        rc = subprocess.run(
            ["timeout", "-k", "10", str(int(timeout)), *cmd],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, check=False,
        ).returncode
        seconds, cpu = time.perf_counter() - start, children_cpu() - cpu_start
    if rc != 0:
        why = "timed out" if rc in (124, 137) else f"exit {rc}"
        with open(logpath, errors="replace") as f:
            tail = f.read().splitlines()[-12:]
        log(f"  FAILED ({why}) after {seconds:.1f}s, log {logpath}:\n      " + "\n      ".join(tail))
    return seconds, rc, cpu


def first_line(text):
    return text.strip().splitlines()[0][:160] if text.strip() else ""


# ---------------------------------------------------------------- cells


def runs_for(tool, n):
    # BENCH_RUNS_ANSIBLE / BENCH_RUNS_MITOGEN / BENCH_RUNS_TURBO_PLAY override per tool.
    per_tool = "BENCH_RUNS_" + tool.upper().replace("-", "_")
    if per_tool in ENV:
        return max(1, int(ENV[per_tool]))
    if "BENCH_RUNS" in ENV:
        return max(1, int(ENV["BENCH_RUNS"]))
    # The Python tools take minutes per run above n=100: one run each there.
    return 1 if (tool != "turbo-play" and n > 100) else 3


def reruns_for(tool, n):
    return max(1, int(ENV["BENCH_RERUNS"])) if "BENCH_RERUNS" in ENV else runs_for(tool, n)


def estimate(tool, scenario, hosts, playbook, n):
    """Seconds for one run, scaled linearly from the nearest smaller n already measured for this
    playbook, else from the slowest other playbook measured at this n or below."""
    same, other = None, None
    for r in results:
        if (r["tool"], r["scenario"], r["hosts"]) != (tool, scenario, hosts):
            continue
        t = r.get("steady") or r.get("first")
        if not t:
            continue
        if r["playbook"] == playbook and r["n"] < n and (same is None or r["n"] > same[0]):
            same = (r["n"], t)
        if r["playbook"] != playbook and r["n"] <= n:
            scaled = t * n / r["n"]
            other = scaled if other is None else max(other, scaled)
    if same:
        return same[1] * n / same[0]
    if other:
        return other
    if tool == "ansible":
        return ANSIBLE_SECONDS_PER_ITEM * n
    return None


def record(**cell):
    results.append(cell)
    write_outputs()
    return cell


def run_tool_cell(scenario, port, hosts, playbook, n, tool):
    base = dict(scenario=scenario, hosts=hosts, playbook=playbook, n=n, tool=tool)
    runs, reruns = runs_for(tool, n), reruns_for(tool, n)
    if tool == "turbo-play" and TURBO_STATUS:
        return record(**base, skipped=TURBO_STATUS)
    if tool == "ansible" and n > 100 and not FULL:
        return record(**base, skipped="ansible above n=100 needs BENCH_FULL=1")
    est = estimate(tool, scenario, hosts, playbook, n)
    if est is not None and MAX_SECONDS > 0 and est * (1 + runs + reruns) > MAX_SECONDS:
        return record(**base, skipped=f"estimated {est * (1 + runs + reruns):.0f}s > BENCH_MAX_SECONDS={MAX_SECONDS:.0f}")
    timeout = max(TIMEOUT, 3 * est) if est else TIMEOUT
    inv = inventory(port, hosts)
    cpdir = f"{TMP}/cp/{scenario}-{tool}-{playbook}-{n}-{hosts}"
    os.makedirs(cpdir, exist_ok=True)
    env = tool_env(tool, cpdir)
    cmd = tool_command(tool, playbook, inv, n)
    tag = f"{scenario}-h{hosts}-{playbook}-n{n}-{tool}"
    log(f"{tag}: first run, {runs} steady, {reruns} rerun" + (f" (est. {est:.1f}s each)" if est else ""))
    cell = dict(base, runs=runs, reruns=reruns, steady_all=[], rerun_all=[])
    try:
        clean_homes(hosts, caches=True)
        secs, rc, _ = timed(cmd, env, f"{tag}-first", timeout)
        ok, content_ok, msg = verify(playbook, n, hosts) if rc == 0 else (False, False, f"exit {rc}")
        if not ok:
            return record(**cell, failed=f"first run: {msg}; see .bench/logs/{tag}-first.log")
        cell["first"] = secs
        if not content_ok:
            cell["content_warning"] = msg
        for i in range(runs):
            clean_homes(hosts)
            secs, rc, cpu = timed(cmd, env, f"{tag}-steady{i + 1}", timeout)
            ok, content_ok, msg = verify(playbook, n, hosts) if rc == 0 else (False, False, f"exit {rc}")
            if not ok:
                return record(**cell, failed=f"steady run {i + 1}: {msg}; see .bench/logs/{tag}-steady{i + 1}.log")
            cell["steady_all"].append(secs)
            cell.setdefault("steady_cpu_all", []).append(cpu)
        cell["steady"] = statistics.median(cell["steady_all"])
        cell["steady_cpu"] = statistics.median(cell["steady_cpu_all"])
        for i in range(reruns):
            secs, rc, _ = timed(cmd, env, f"{tag}-rerun{i + 1}", timeout)
            ok, _, msg = verify(playbook, n, hosts) if rc == 0 else (False, False, f"exit {rc}")
            if not ok:
                return record(**cell, failed=f"rerun {i + 1}: {msg}; see .bench/logs/{tag}-rerun{i + 1}.log")
            cell["rerun_all"].append(secs)
        cell["rerun"] = statistics.median(cell["rerun_all"])
        log(f"{tag}: first {cell['first']:.2f}s, steady {cell['steady']:.2f}s, rerun {cell['rerun']:.2f}s")
        return record(**cell)
    finally:
        close_masters(cpdir)


def floor_command(port, host, n):
    user = USERS[int(host[4:]) - 1]
    script = f'for i in $(seq 1 {n}); do echo "test file $i" > file_$i; done'
    return [
        "ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={KNOWN_HOSTS}", "-o", "StrictHostKeyChecking=yes",
        "-i", KEY, "-p", str(port), f"{user}@127.0.0.1", script,
    ]


def run_floor_once(port, hosts, n):
    """All hosts in parallel, as the tools do; the time is until the last one is done."""
    clean_homes(hosts)
    start = time.perf_counter()
    procs = [
        subprocess.Popen(floor_command(port, h, n), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for h in hosts_of(hosts)
    ]
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=TIMEOUT)
        if p.returncode != 0:
            errors.append(first_line(err.decode(errors="replace")) or f"exit {p.returncode}")
    secs = time.perf_counter() - start
    if errors:
        return secs, "; ".join(errors)
    ok, _, msg = verify("file_creation", n, hosts)
    return secs, ("" if ok else msg)


def run_floor_cell(scenario, port, hosts, n):
    base = dict(scenario=scenario, hosts=hosts, playbook="*", n=n, tool="ssh floor")
    runs = max(3, int(ENV.get("BENCH_RUNS", "3")))
    times = []
    for _ in range(runs):
        secs, err = run_floor_once(port, hosts, n)
        if err:
            return record(**base, failed=f"ssh floor: {err}")
        times.append(secs)
    log(f"{scenario}-h{hosts}-n{n}-floor: {statistics.median(times):.3f}s")
    return record(**base, runs=runs, steady_all=times, steady=statistics.median(times), first=times[0])


def run_matrix(scenario, port, host_counts, ns):
    trust_port(port)
    for hosts in host_counts:
        if hosts > len(USERS):
            sys.exit(f"bench: {hosts} hosts asked but run.sh made only {len(USERS)} users (BENCH_USERS_COUNT)")
        for n in ns:
            make_sources(n)
            run_floor_cell(scenario, port, hosts, n)
            for playbook in PLAYBOOKS:
                for tool in TOOLS:
                    run_tool_cell(scenario, port, hosts, playbook, n, tool)


def count_bytes(cmd, env, logname, counter_port):
    out = f"{TMP}/bytes-{counter_port}.json"
    proc = start_child([sys.executable, f"{ROOT}/tests/bench/count_proxy.py", str(counter_port), str(SSHD_PORT), out], counter_port, "count_proxy.py")
    try:
        secs, rc, _ = timed(cmd, env, logname, TIMEOUT)
    finally:
        stop_child(proc)
    with open(out) as f:
        totals = json.load(f)
    return secs, rc, totals


def run_bytes(n):
    """One run per tool through the counting forwarder, files re-created (steady state)."""
    port = free_port()
    trust_port(port)
    inv = inventory(port, 1)
    make_sources(n)
    base = dict(scenario="bytes", hosts=1, n=n)
    clean_homes(1)
    floor_cmd = floor_command(port, "host1", n)
    secs, rc, totals = count_bytes(floor_cmd, dict(ENV), f"bytes-n{n}-floor", port)
    ok = rc == 0 and verify("file_creation", n, 1)[0]
    record(**base, playbook="*", tool="ssh floor", bytes=totals, steady=secs, **({} if ok else {"failed": f"ssh floor exit {rc}"}))
    for playbook in PLAYBOOKS:
        for tool in TOOLS:
            cell = dict(base, playbook=playbook, tool=tool)
            if tool == "turbo-play" and TURBO_STATUS:
                record(**cell, skipped=TURBO_STATUS)
                continue
            cmd = tool_command(tool, playbook, inv, n)
            phases = [("first run", True), ("steady", False)] if tool == "turbo-play" else [("steady", False)]
            for phase, cold in phases:
                cpdir = f"{TMP}/cp/bytes-{tool}-{playbook}-{phase.replace(' ', '_')}"
                os.makedirs(cpdir, exist_ok=True)
                clean_homes(1, caches=cold)
                tag = f"bytes-{playbook}-n{n}-{tool}-{phase.replace(' ', '_')}"
                log(f"{tag}")
                try:
                    secs, rc, totals = count_bytes(cmd, tool_env(tool, cpdir), tag, port)
                finally:
                    close_masters(cpdir)
                files_ok, _, msg = verify(playbook, n, 1) if rc == 0 else (False, False, f"exit {rc}")
                extra = {} if files_ok else {"failed": f"{msg}; see .bench/logs/{tag}.log"}
                record(**cell, phase=phase, bytes=totals, steady=secs, **extra)
                if not files_ok:
                    break


# ---------------------------------------------------------------- output


def fmt_s(v):
    return "n/a" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")


def fmt_x(num, den):
    if num is None or den is None or den <= 0:
        return "n/a"
    return f"{num / den:.1f}×"


def find(scenario, hosts, playbook, n, tool, phase=None):
    for r in results:
        if (r["scenario"], r["hosts"], r["n"], r["tool"]) == (scenario, hosts, n, tool) and r["playbook"] in (playbook, "*"):
            if phase is None or r.get("phase") == phase:
                return r
    return None


def cell_text(r, key):
    if r is None:
        return "—"
    if "skipped" in r:
        return "skipped"
    if "failed" in r and r.get(key) is None:
        return "n/a"
    return fmt_s(r.get(key))


def versions():
    def ver(pkg):
        try:
            return importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    ssh = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    turbo = ENV.get("BENCH_TURBO_VERSION", "n/a")
    return [
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, host: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}",
        f"- turbo-play: {turbo}",
        f"- ansible-core {ver('ansible-core')}, mitogen {ver('mitogen')} (strategy mitogen_linear), controller Python {platform.python_version()}",
        f"- target: OpenSSH sshd on 127.0.0.1 ({ssh}), target Python {TARGET_PYTHON}",
        "- Ansible: pipelining on, ssh_args `-C -o ControlMaster=auto -o ControlPersist=60s`, forks 10; host key checking off for every tool",
    ]


def scenario_title(scenario, hosts):
    link = "loopback" if scenario == "direct" else f"loopback + {DELAY_MS} ms each way (delay-proxy.py)"
    return f"{link}, {hosts} host{'s' if hosts > 1 else ''}"


def render():
    lines = ["# turbo-play benchmark", ""] + versions() + [
        "",
        "Times are wall seconds. *first* = first run with empty target caches (turbo-play uploads its agent),",
        "*steady* = median of runs that re-create every file (agent cached), *rerun* = median of runs where",
        "nothing changes. *× floor* = steady / one plain `ssh` running a shell loop that writes the same N files.",
        "*turbo-play speedup* = other tool's steady time / turbo-play's steady time (rerun in brackets).",
        "*controller CPU s* = user+system CPU of the tool's processes on the controller, median of the steady runs.",
        f"Load average when the run started: {LOAD_AT_START} (the machine may be shared: wall times are noisy).",
        "",
    ]
    for scenario in ("direct", "latency"):
        sc = [r for r in results if r["scenario"] == scenario]
        for hosts in sorted({r["hosts"] for r in sc}):
            lines += [f"## {scenario_title(scenario, hosts)}", ""]
            ns = sorted({r["n"] for r in sc if r["hosts"] == hosts})
            others = [t for t in TOOLS if t != "turbo-play"] if "turbo-play" in TOOLS else []
            header = ["playbook", "n", "ssh floor s"] + [f"{t} s" for t in TOOLS] + [f"turbo-play vs {t}" for t in others]
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            for playbook in PLAYBOOKS:
                for n in ns:
                    floor = find(scenario, hosts, playbook, n, "ssh floor")
                    row = [playbook, str(n), cell_text(floor, "steady")]
                    turbo = find(scenario, hosts, playbook, n, "turbo-play")
                    for tool in TOOLS:
                        row.append(cell_text(find(scenario, hosts, playbook, n, tool), "steady"))
                    for tool in others:
                        other = find(scenario, hosts, playbook, n, tool)
                        t_s = turbo.get("steady") if turbo else None
                        o_s = other.get("steady") if other else None
                        t_r = turbo.get("rerun") if turbo else None
                        o_r = other.get("rerun") if other else None
                        row.append(f"{fmt_x(o_s, t_s)} ({fmt_x(o_r, t_r)})")
                    lines.append("| " + " | ".join(row) + " |")
            lines += ["", "Details:", "",
                      "| playbook | n | tool | first s | steady s (runs) | rerun s (runs) | × floor | controller CPU s | note |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for playbook in PLAYBOOKS:
                for n in ns:
                    floor = find(scenario, hosts, playbook, n, "ssh floor")
                    floor_s = floor.get("steady") if floor else None
                    for tool in TOOLS:
                        r = find(scenario, hosts, playbook, n, tool)
                        if r is None:
                            continue
                        note = r.get("skipped") or r.get("failed") or r.get("content_warning", "")
                        if r.get("content_warning"):
                            note = "output differs from Ansible's: " + note
                        steady = f"{cell_text(r, 'steady')} ({r.get('runs', '-')})"
                        rerun = f"{cell_text(r, 'rerun')} ({r.get('reruns', '-')})"
                        lines.append(f"| {playbook} | {n} | {tool} | {cell_text(r, 'first')} | {steady} | {rerun} | "
                                     f"{fmt_x(r.get('steady'), floor_s)} | {cell_text(r, 'steady_cpu')} | {note.replace('|', '/')} |")
            lines.append("")
    by = [r for r in results if r["scenario"] == "bytes"]
    if by:
        n = by[0]["n"]
        lines += [f"## Bytes on the wire (loopback, 1 host, n={n}, one run each, files re-created)", "",
                  "Counted by tests/bench/count_proxy.py between the tool and sshd (so after ssh's own compression).", "",
                  "| playbook | tool | connections | KB up | KB down | KB total | s | note |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in by:
            b = r.get("bytes") or {}
            tool = r["tool"] + (f" ({r['phase']})" if r.get("phase") == "first run" else "")
            if "skipped" in r:
                lines.append(f"| {r['playbook']} | {tool} | | | | | | {r['skipped']} |")
                continue
            if "failed" in r:
                lines.append(f"| {r['playbook']} | {tool} | | n/a | n/a | n/a | | {r['failed']} |")
                continue
            up, down = b.get("up", 0) / 1024, b.get("down", 0) / 1024
            lines.append(f"| {r['playbook']} | {tool} | {b.get('connections', '')} | {up:.1f} | {down:.1f} | {up + down:.1f} | "
                         f"{fmt_s(r.get('steady'))} | {r.get('failed', '')} |")
        lines.append("")
    return "\n".join(lines)


def write_outputs():
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(f"{OUT_DIR}/results.md", "w") as f:
        f.write(render())
    with open(f"{OUT_DIR}/results.json", "w") as f:
        json.dump(results, f, indent=1)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open(f"{TMP}/ansible.cfg", "w") as cfg:
        cfg.write("[defaults]\n")
    log(f"tools: {' '.join(TOOLS)}; scenarios: {' '.join(SCENARIOS)}; n: {NS}; hosts: {HOST_COUNTS}; "
        f"playbooks: {' '.join(PLAYBOOKS)}; max seconds per cell: {MAX_SECONDS or 'unlimited'}")
    if TURBO_STATUS and "turbo-play" in TOOLS:
        log(f"turbo-play: {TURBO_STATUS}")
    try:
        if "direct" in SCENARIOS:
            run_matrix("direct", SSHD_PORT, HOST_COUNTS, NS)
        if "latency" in SCENARIOS:
            port = free_port()
            start_child([sys.executable, DELAY_PROXY, str(port), str(SSHD_PORT), DELAY_MS], port, "delay-proxy.py")
            run_matrix("latency", port, LATENCY_HOSTS, LATENCY_NS)
        if "bytes" in SCENARIOS:
            run_bytes(BYTES_N)
    finally:
        for proc in list(children):
            stop_child(proc)
        write_outputs()
    print(render())
    log(f"written {OUT_DIR}/results.md and results.json; logs in {LOG_DIR}/")


if __name__ == "__main__":
    main()
