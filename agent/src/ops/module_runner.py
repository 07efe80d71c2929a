# turbo-play's warm module runner, started by the agent once per interpreter for the
# session. It reads requests on fd 3 and answers on fd 4 (the agent's pipes), each field
# an 8-byte big-endian length and its bytes:
#   request:  payload dir, module fqn, serialization profile, JSON args, timeout seconds
#             (empty for none), environment ("K=V" entries joined by NUL)
#   answer:   rc, "1" when killed at the timeout, stdout, stderr
# Each module runs in a child forked from this process, so what one module imports or
# changes never reaches the next, while the module_utils this process imported once are
# already there for every child.
import os
import select
import signal
import struct
import sys
import time

PROTO_IN = 3
PROTO_OUT = 4


def read_exact(n):
    chunks = []
    while n:
        chunk = os.read(PROTO_IN, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b''.join(chunks)


def read_field():
    (n,) = struct.unpack('>Q', read_exact(8))
    return read_exact(n)


def write_fields(fields):
    data = b''.join(struct.pack('>Q', len(f)) + f for f in fields)
    while data:
        data = data[os.write(PROTO_OUT, data):]


def add_payload(payload_dir, known):
    """Puts a payload directory first on sys.path, and into the packages already
    imported from earlier payloads, so their new submodules are found."""
    if payload_dir in known:
        return
    known.add(payload_dir)
    sys.path.insert(0, payload_dir)
    for name, module in list(sys.modules.items()):
        if not (name == 'ansible' or name.startswith(('ansible.', 'ansible_collections'))):
            continue
        path = getattr(module, '__path__', None)
        if not isinstance(path, list):
            continue
        candidate = os.path.join(payload_dir, *name.split('.'))
        if candidate not in path and os.path.isdir(candidate):
            path.insert(0, candidate)
    # Each payload warms this process with the ansible-core module_utils it carries, so
    # every later child finds them imported; one that fails to import is left to the
    # module, which reports it as it would.
    try:
        import ansible.module_utils.basic  # noqa: F401
        from ansible.module_utils._internal._ansiballz import _loader  # noqa: F401
    except Exception:
        return
    import importlib
    utils = os.path.join(payload_dir, 'ansible', 'module_utils')
    for root, dirs, files in os.walk(utils):
        dirs.sort()
        relative = os.path.relpath(root, payload_dir).split(os.sep)
        for name in sorted(files):
            if not name.endswith('.py') or name == '__init__.py':
                continue
            dotted = '.'.join(relative + [name[:-3]])
            if dotted in sys.modules:
                continue
            try:
                importlib.import_module(dotted)
            except BaseException:
                pass


def run_child(payload_dir, fqn, profile, args, env, out_w, err_w):
    """In the forked child: becomes the module, as Ansible's AnsiballZ wrapper runs it."""
    code = 1
    try:
        os.close(PROTO_IN)
        os.close(PROTO_OUT)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        os.setpgid(0, 0)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        for entry in env:
            key, _, value = entry.partition('=')
            os.environ[key] = value
        sys.argv = [fqn]
        # Imported by the warm parent from an earlier payload: its idea of where the
        # `ansible` package lives must be this payload's, or a deprecation would not be
        # attributed to this module.
        deprecator = sys.modules.get('ansible.module_utils._internal._deprecator')
        if deprecator is not None:
            import pathlib
            deprecator._ANSIBLE_MODULE_BASE_PATH = pathlib.Path(payload_dir, 'ansible')
        from ansible.module_utils._internal._ansiballz import _loader
        _loader.run_module(
            json_params=args,
            profile=profile,
            module_fqn=fqn,
            modlib_path=payload_dir,
            extensions={},
        )
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            sys.stderr.write('%s\n' % (e.code,))
            code = 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xff)


GRACE = 1.0
# The module child running now, stopped when the runner is told to stop.
current = None


def stop_group(pid):
    """TERM to the module's process group, KILL once the grace is over. Returns the
    module's wait status when it was reaped meanwhile."""
    status = None
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        return status
    end = time.monotonic() + GRACE
    while time.monotonic() < end:
        try:
            if status is None:
                reaped, st = os.waitpid(pid, os.WNOHANG)
                if reaped:
                    status = st
            # A zombie leader still counts as a member of its group.
            os.killpg(pid, 0)
        except OSError:
            return status
        time.sleep(0.005)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    return status


def on_stop(signum, frame):
    # The agent stops (cancelled, or its session ended): the module goes with it.
    if current is not None:
        stop_group(current)
    os._exit(0)


def collect(pid, out_r, err_r, deadline):
    """The child's output and exit code; stops it (and what it started) at the deadline,
    or when the agent's end of the requests closes (the agent is gone)."""
    buffers = {out_r: [], err_r: []}
    open_fds = [out_r, err_r]
    timed_out = False
    while open_fds:
        wait = None
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                timed_out = True
                break
        ready, _, _ = select.select(open_fds + [PROTO_IN], [], [], wait)
        for fd in ready:
            if fd == PROTO_IN:
                # No request comes while a module runs: readable means the end.
                stop_group(pid)
                os._exit(0)
            chunk = os.read(fd, 65536)
            if chunk:
                buffers[fd].append(chunk)
            else:
                open_fds.remove(fd)
    status = stop_group(pid) if timed_out else None
    os.close(out_r)
    os.close(err_r)
    if status is None:
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        rc = -os.WTERMSIG(status)
    else:
        rc = os.WEXITSTATUS(status)
    return rc, timed_out, b''.join(buffers[out_r]), b''.join(buffers[err_r])


def main():
    global current
    signal.signal(signal.SIGTERM, on_stop)
    known = set()
    sys.path = [p for p in sys.path if p not in ('', '.')]
    while True:
        try:
            payload_dir = read_field().decode()
        except EOFError:
            return
        fqn = read_field().decode()
        profile = read_field().decode()
        args = read_field()
        timeout = read_field().decode()
        env = [e for e in read_field().decode().split('\0') if e]
        add_payload(payload_dir, known)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(out_r)
            os.close(err_r)
            run_child(payload_dir, fqn, profile, args, env, out_w, err_w)
        # Set here too, so the group exists before the runner may have to stop it.
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        current = pid
        os.close(out_w)
        os.close(err_w)
        deadline = time.monotonic() + float(timeout) if timeout else None
        rc, timed_out, out, err = collect(pid, out_r, err_r, deadline)
        current = None
        write_fields([str(rc).encode(), b'1' if timed_out else b'', out, err])


main()
