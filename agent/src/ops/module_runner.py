# turbo-play's warm module runner, started by the agent once per interpreter for the
# session. It reads requests on fd 3 and answers on fd 4 (the agent's pipes), each field
# an 8-byte big-endian length and its bytes:
#   request:  the count N of modules, then N times: payload dir, module fqn, serialization
#             profile, JSON args, timeout seconds (empty for none; counted from the
#             module's start), environment ("K=V" entries joined by NUL)
#   answer:   per module, as each ends: rc, the milliseconds it ran when killed at the
#             timeout (empty when it was not), stdout, stderr
# A loop's items come as one request, so they cost the agent one exchange, not one each.
# Each module runs in a child forked from this process, so what one module imports or
# changes never reaches the next, while what this process imported and compiled once is
# already there for every child: ansible-core's module_utils, the module's code, and what
# an earlier call of it imported (the standard library and its payload's module_utils).
import gc
import importlib
import importlib.machinery
import importlib.util
import os
import select
import signal
import struct
import sys
import sysconfig
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


# Compiled code of the payloads' files, by path, mtime and size: a child's import or
# runpy finds the code this process compiled instead of compiling the source again
# (payload files are never rewritten in place, and bytecode files may not be written).
CODE = {}


class CachingLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        path = self.get_filename(fullname)
        try:
            st = os.stat(path)
        except OSError:
            return super().get_code(fullname)
        key = (path, st.st_mtime_ns, st.st_size)
        code = CODE.get(key)
        if code is None:
            code = CODE[key] = super().get_code(fullname)
        return code


PAYLOAD_DIRS = []


def payload_finder(path):
    """The path hook for directories inside a payload: their sources load through
    `CachingLoader`; any other directory is left to the usual finders."""
    for root in PAYLOAD_DIRS:
        if path == root or path.startswith(root + os.sep):
            return importlib.machinery.FileFinder(
                path, (CachingLoader, importlib.machinery.SOURCE_SUFFIXES))
    raise ImportError('not a payload directory')


sys.path_hooks.insert(0, payload_finder)


def add_payload(payload_dir, known):
    """Puts a payload directory first on sys.path, and into the packages already
    imported from earlier payloads, so their new submodules are found."""
    if payload_dir in known:
        return
    known.add(payload_dir)
    PAYLOAD_DIRS.append(payload_dir)
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


def prefer(payload_dir):
    """In the child: this payload's files before those of payloads added after it (two
    roles' library modules may share a name)."""
    if sys.path[0] == payload_dir:
        return
    sys.path.remove(payload_dir)
    sys.path.insert(0, payload_dir)
    for name, module in list(sys.modules.items()):
        if not (name == 'ansible' or name.startswith(('ansible.', 'ansible_collections'))):
            continue
        path = getattr(module, '__path__', None)
        candidate = os.path.join(payload_dir, *name.split('.'))
        if isinstance(path, list) and candidate in path:
            path.remove(candidate)
            path.insert(0, candidate)


def warm_module(fqn):
    """Compiles the module here, once, and imports its packages, so that its children
    only run it."""
    try:
        package = fqn.rpartition('.')[0]
        if package:
            importlib.import_module(package)
        spec = importlib.util.find_spec(fqn)
        if spec is not None and hasattr(spec.loader, 'get_code'):
            spec.loader.get_code(fqn)
    except BaseException:
        pass


STDLIB = tuple(sorted({sysconfig.get_paths()[k] + os.sep for k in ('stdlib', 'platstdlib')}))


def shareable(name, payload_dir, fqn):
    """Whether a module a child imported may be imported here for the later children:
    the standard library, and the payload's module_utils; never a module's own code,
    nor third-party packages (which may start threads or hold state at import)."""
    if name == fqn or not all(part.isidentifier() for part in name.split('.')):
        return False
    if name.startswith(('ansible.modules.', 'ansible.legacy.')) or '.plugins.modules.' in name:
        return False
    path = getattr(sys.modules.get(name), '__file__', None)
    if path is None:
        return name in sys.builtin_module_names
    if path.startswith(payload_dir + os.sep):
        return True
    return path.startswith(STDLIB) and not ('site-packages' in path or 'dist-packages' in path)


def learn(names):
    """Imports here what a child imported (see `shareable`); one that fails is left to the
    children."""
    for name in names:
        if name and name not in sys.modules:
            try:
                importlib.import_module(name)
            except BaseException:
                pass


def run_child(payload_dir, fqn, profile, args, env, out_w, err_w, learn_w):
    """In the forked child: becomes the module, as Ansible's AnsiballZ wrapper runs it."""
    code = 1
    before = set(sys.modules)
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
        prefer(payload_dir)
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
    try:
        names = [n for n in list(sys.modules) if n not in before and shareable(n, payload_dir, fqn)]
        data = '\n'.join(names).encode()
        while data:
            data = data[os.write(learn_w, data):]
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


def collect(pid, out_r, err_r, learn_r, deadline):
    """The child's output, exit code and what it imported; stops it (and what it
    started) at the deadline, or when the agent's end of the requests closes (the agent
    is gone)."""
    buffers = {out_r: [], err_r: [], learn_r: []}
    open_fds = [out_r, err_r, learn_r]
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
    for fd in (out_r, err_r, learn_r):
        os.close(fd)
    if status is None:
        _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        rc = -os.WTERMSIG(status)
    else:
        rc = os.WEXITSTATUS(status)
    learned = b''.join(buffers[learn_r]).decode(errors='replace').split('\n')
    return rc, timed_out, b''.join(buffers[out_r]), b''.join(buffers[err_r]), learned


def run_one(known, warmed, payload_dir, fqn, profile, args, timeout, env):
    """Runs one module in a forked child: its answer's fields, and what it imported."""
    global current
    add_payload(payload_dir, known)
    if (payload_dir, fqn) not in warmed:
        warmed.add((payload_dir, fqn))
        warm_module(fqn)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    learn_r, learn_w = os.pipe()
    # What this process holds stays out of the collector's sight, so a child's
    # collections never touch (and copy) the pages it shares with it.
    if hasattr(gc, 'freeze'):
        gc.freeze()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for fd in (out_r, err_r, learn_r):
            os.close(fd)
        run_child(payload_dir, fqn, profile, args, env, out_w, err_w, learn_w)
    # Set here too, so the group exists before the runner may have to stop it.
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    current = pid
    for fd in (out_w, err_w, learn_w):
        os.close(fd)
    deadline = started + float(timeout) if timeout else None
    rc, timed_out, out, err, learned = collect(pid, out_r, err_r, learn_r, deadline)
    current = None
    ran = str(int((time.monotonic() - started) * 1000)).encode() if timed_out else b''
    return [str(rc).encode(), ran, out, err], learned


def main():
    signal.signal(signal.SIGTERM, on_stop)
    known = set()
    warmed = set()
    sys.path = [p for p in sys.path if p not in ('', '.')]
    while True:
        try:
            count = int(read_field())
        except EOFError:
            return
        requests = []
        for _ in range(count):
            payload_dir = read_field().decode()
            fqn = read_field().decode()
            profile = read_field().decode()
            args = read_field()
            timeout = read_field().decode()
            env = [e for e in read_field().decode().split('\0') if e]
            requests.append((payload_dir, fqn, profile, args, timeout, env))
        for request in requests:
            answer, learned = run_one(known, warmed, *request)
            # Answered first: the agent need not wait for what only later modules use.
            write_fields(answer)
            learn(learned)


main()
