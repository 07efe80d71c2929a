# turbo-play's warm module runner, started by the agent once per interpreter for the
# session. It reads requests on fd 3 and answers on fd 4 (the agent's pipes), each field
# an 8-byte big-endian length and its bytes:
#   request:  the count N of modules, then N times: payload dir, module fqn, serialization
#             profile, JSON args, timeout seconds (empty for none; counted from the
#             module's start), environment ("K=V" entries joined by NUL)
#   answer:   per module, as each ends: rc, the milliseconds it ran when killed at the
#             timeout (empty when it was not), stdout, stderr
# A loop's items come as one request, so they cost the agent one exchange, not one each.
#
# This process never runs a module itself: it keeps what every module needs imported and
# compiled (ansible-core's module_utils, the payloads' code, what earlier calls imported
# from the standard library and their payload) and forks a worker per module, which runs
# that module's calls (a loop's items, and later tasks' calls) one after another inside
# itself, each as Ansible's AnsiballZ wrapper runs it, and puts the process back as it
# found it between two calls (see `Baseline`): a fork costs ~10 ms of CPU, a call in a
# warm worker a tenth of that. A worker waits for its module's next call (the last few
# used are kept) and retires, the next call getting a new one, when a call leaves what
# cannot be put back (a thread, a new import, another user or process group...); a call
# that ends its worker (os._exit, a crash) or runs past its timeout (its process group is
# stopped) fails alone. What a call imported the runner imports too, for its next
# workers, when it is the standard library's or the payload's; a third-party package the
# module's next workers import themselves before their first call. Modules known to hold
# process-wide state (`ALONE`) get a worker per call. The calls' files and the sockets to the workers are the workers' only link
# to this process: a worker whose socket ends (this process ended) ends too.
import array
import gc
import importlib
import importlib.machinery
import importlib.util
import marshal
import opcode
import os
import select
import signal
import _signal
import socket
import struct
import sys
import sysconfig
import time
import traceback
import types

try:
    import resource
except ImportError:
    resource = None

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


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def write_fields(fields):
    write_all(PROTO_OUT, b''.join(struct.pack('>Q', len(f)) + f for f in fields))


# Compiled code of the payloads' files, by path: an import or runpy in a worker finds the
# code this process compiled instead of compiling the source again. A payload's files never
# change (its directory is named by their digest), so their code is also kept beside them,
# all of it in one file per interpreter (`BUNDLE`), read at once when the runner first
# meets the payload: one file to read, and the first time to write, where bytecode files
# would be one per source file (sixty for ansible-core's basic module_utils).
CODE = {}
BUNDLE = '__turbo_code__.%s' % (sys.implementation.cache_tag,)
BUNDLE_HEAD = importlib.util.MAGIC_NUMBER + b'turbo-play code 1\n'
# Per payload directory: how many of its files its bundle on disk holds.
BUNDLED = {}
# Whether this process compiled code its bundles lack.
COMPILED = [False]
# The bundle being written, removed if the runner is stopped meanwhile.
SAVING = [None]


class CachingLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        path = self.get_filename(fullname)
        code = CODE.get(path)
        if code is None and COMPILING[0] is not None:
            COMPILING[0].take()
            code = CODE.get(path)
        if code is None:
            code = CODE[path] = self.source_to_code(self.get_data(path), path)
            COMPILED[0] = True
        return code


class CompileAhead:
    """A payload met without its bundle (its first run on this host) has all its sources
    to compile, about as long as importing them: a forked helper compiles them from the
    last (in import order, roughly the names' order) while this process imports from the
    first, and sends each compiled module back (`take` reads what has come), so that on a
    second core both halves go at once. What this process reaches first it compiles
    itself; the helper is stopped once the imports are done."""

    def __init__(self, payload_dir):
        self.pid = None
        self.fd = None
        self.buffer = bytearray()
        sources = []
        for root, dirs, files in os.walk(payload_dir):
            dirs.sort()
            sources.extend(os.path.join(root, name) for name in sorted(files)
                           if name.endswith('.py'))
        sources = [path for path in sources if path not in CODE]
        if len(sources) < 8:
            return
        readable, writable = os.pipe()
        try:
            import fcntl
            fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, 1 << 20)
        except (ImportError, AttributeError, OSError):
            pass
        try:
            pid = os.fork()
        except OSError:
            os.close(readable)
            os.close(writable)
            return
        if pid == 0:
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                for fd in (readable, PROTO_IN, PROTO_OUT):
                    os.close(fd)
                for other in workers:
                    other.sock.close()
                for path in reversed(sources):
                    try:
                        with open(path, 'rb') as f:
                            code = compile(f.read(), path, 'exec', dont_inherit=True)
                    except Exception:
                        # Left to the import, which reports it as it would.
                        continue
                    data = marshal.dumps((path, code))
                    write_all(writable, fields([data]))
            except BaseException:
                pass
            os._exit(0)
        os.close(writable)
        self.pid = pid
        self.fd = readable

    def take(self):
        """Adds to `CODE` what the helper compiled so far."""
        if self.fd is None:
            return
        while select.select([self.fd], [], [], 0)[0]:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                break
            self.buffer.extend(chunk)
        while len(self.buffer) >= 8:
            (n,) = struct.unpack('>Q', bytes(self.buffer[:8]))
            if len(self.buffer) < 8 + n:
                break
            path, code = marshal.loads(bytes(self.buffer[8:8 + n]))
            del self.buffer[:8 + n]
            if path not in CODE:
                CODE[path] = code
                COMPILED[0] = True

    def end(self):
        """Takes what the helper finished (the module itself, say) and stops it."""
        self.take()
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(self.pid, 0)
            os.close(self.fd)
            self.pid = self.fd = None


# The helper compiling the payload being imported now, if any.
COMPILING = [None]
# Helpers started before their payload's import (`compile_early`), by payload directory.
EARLY = {}
# Payload directories whose bundle was read (or found missing).
LOOKED_AT = set()


def compile_early(payload_dir):
    """Reads the payload's bundle, the first time; a payload without one gets its helper
    (`CompileAhead`) now, which its import takes over."""
    if payload_dir in LOOKED_AT:
        return
    LOOKED_AT.add(payload_dir)
    load_bundle(payload_dir)
    if payload_dir not in BUNDLED:
        EARLY[payload_dir] = CompileAhead(payload_dir)


def load_bundle(payload_dir):
    try:
        with open(os.path.join(payload_dir, BUNDLE), 'rb') as f:
            data = f.read()
        if not data.startswith(BUNDLE_HEAD):
            return
        codes = marshal.loads(data[len(BUNDLE_HEAD):])
    except Exception:
        return
    for relative, code in codes.items():
        CODE.setdefault(os.path.join(payload_dir, relative), code)
    BUNDLED[payload_dir] = len(codes)


def save_bundles():
    """Writes the bundle of each payload whose code this process compiled more of."""
    if not COMPILED[0]:
        return
    COMPILED[0] = False
    for payload_dir in PAYLOAD_DIRS:
        prefix = payload_dir + os.sep
        codes = {p[len(prefix):]: c for p, c in CODE.items() if p.startswith(prefix)}
        if len(codes) <= BUNDLED.get(payload_dir, 0):
            continue
        path = os.path.join(payload_dir, BUNDLE)
        SAVING[0] = staging = '%s.%d' % (path, os.getpid())
        try:
            with open(staging, 'wb') as f:
                f.write(BUNDLE_HEAD + marshal.dumps(codes))
            os.replace(staging, path)
            BUNDLED[payload_dir] = len(codes)
        except Exception:
            try:
                os.unlink(staging)
            except OSError:
                pass
        SAVING[0] = None


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
    compile_early(payload_dir)
    COMPILING[0] = EARLY.pop(payload_dir, None)
    try:
        import_payload(payload_dir)
    finally:
        helper, COMPILING[0] = COMPILING[0], None
        if helper is not None:
            helper.end()


def import_payload(payload_dir):
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
    # every later worker finds them imported; one that fails to import is left to the
    # module, which reports it as it would.
    try:
        import ansible.module_utils.basic  # noqa: F401
        from ansible.module_utils._internal._ansiballz import _loader  # noqa: F401
    except Exception:
        return
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
    """In the worker: this payload's files before those of payloads added after it (two
    roles' library modules may share a name)."""
    if sys.path[0] != payload_dir:
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
    # Imported here from an earlier payload: its idea of where the `ansible` package lives
    # must be this payload's, or a deprecation would not be attributed to this module.
    deprecator = sys.modules.get('ansible.module_utils._internal._deprecator')
    if deprecator is not None:
        import pathlib
        deprecator._ANSIBLE_MODULE_BASE_PATH = pathlib.Path(payload_dir, 'ansible')


def warm_module(fqn):
    """Compiles the module here, once, and imports its packages, so that its workers
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


def module_code(name, fqn):
    """Whether an imported name is a module's own code (never imported ahead of a call)."""
    return (name == fqn or not all(part.isidentifier() for part in name.split('.'))
            or name.startswith(('ansible.modules.', 'ansible.legacy.'))
            or '.plugins.modules.' in name)


def shareable(name, payload_dir, fqn):
    """Whether a module a call imported may be imported here for the later workers: the
    standard library, and the payload's module_utils; never a module's own code, nor
    third-party packages (which may start threads or hold state at import: a worker
    imports those itself, before its first call, see `AHEAD`)."""
    if module_code(name, fqn):
        return False
    path = getattr(sys.modules.get(name), '__file__', None)
    if path is None:
        return name in sys.builtin_module_names
    if path.startswith(payload_dir + os.sep):
        return True
    return path.startswith(STDLIB) and not ('site-packages' in path or 'dist-packages' in path)


def learn(names):
    """Imports here what a call imported (see `shareable`); one that fails is left to the
    workers."""
    for name in names:
        if name and name not in sys.modules:
            try:
                importlib.import_module(name)
            except BaseException:
                pass


class Call:
    """One module call of a request."""

    def __init__(self, payload_dir, fqn, profile, args, timeout, env):
        self.payload_dir = payload_dir
        self.fqn = fqn
        self.profile = profile
        self.args = args
        self.timeout = float(timeout) if timeout else None
        self.env = env


def fields(values):
    return b''.join(struct.pack('>Q', len(v)) + v for v in values)


def split_fields(data):
    values = []
    while data:
        (n,) = struct.unpack('>Q', data[:8])
        values.append(data[8:8 + n])
        data = data[8 + n:]
    return values


def recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b''.join(chunks)


def send_call(sock, call, out, err):
    """To a worker: one call, with the files for its stdout and stderr."""
    body = fields([call.profile.encode(), call.args, '\0'.join(call.env).encode()])
    sock.sendmsg([struct.pack('>Q', len(body))],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [out, err]))])
    sock.sendall(body)


def receive_call(sock):
    """In a worker: the next call's (profile, args, env) and its two files; None when
    the runner is gone."""
    head = b''
    fds = []
    while len(head) < 8:
        data, ancillary, _, _ = sock.recvmsg(8 - len(head), socket.CMSG_SPACE(2 * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array('i', payload[:len(payload) - len(payload) % 4]))
        if not data:
            return None
        head += data
    (n,) = struct.unpack('>Q', head)
    profile, args, env = split_fields(recv_exact(sock, n))
    env = [e for e in env.decode().split('\0') if e]
    return profile.decode(), args, env, fds


def run_call(payload_dir, fqn, profile, args, env):
    """Runs one module here as Ansible's AnsiballZ wrapper runs it: its exit code."""
    for entry in env:
        key, _, value = entry.partition('=')
        os.environ[key] = value
    sys.argv = [fqn]
    try:
        from ansible.module_utils._internal._ansiballz import _loader
        _loader.run_module(
            json_params=args,
            profile=profile,
            module_fqn=fqn,
            modlib_path=payload_dir,
            extensions={},
        )
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        sys.stderr.write('%s\n' % (e.code,))
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


# Calls a worker runs before it retires, so that what no reset reaches (memory a module
# leaked, caches it filled) stays bounded.
WORKER_CALLS = 1000


def worker(sock, payload_dir, fqn, ahead):
    """In the forked worker: imports `ahead` (what earlier calls of the module imported
    from elsewhere than the standard library and the payload), then runs the calls of the
    module the runner sends on `sock`, one after another, each writing to the two files
    that came with it; after each, one answer on `sock`: its exit code, whether this worker
    retires, what the call imported that the runner may import for later workers, and what
    else it imported. Never returns."""
    me = os.getpid()
    try:
        os.setpgid(0, 0)
        gc.enable()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        prefer(payload_dir)
        exits = CallExits()
        for name in ahead:
            try:
                importlib.import_module(name)
            except BaseException:
                pass
        baseline = None
        calls = 0
        while True:
            received = receive_call(sock)
            if received is None:
                break
            profile, args, env, files = received
            os.dup2(files[0], 1)
            os.dup2(files[1], 2)
            for fd in files:
                os.close(fd)
            if baseline is None:
                baseline = Baseline()
            del JOURNAL[:]
            WATCHING[0] = True
            code = run_call(payload_dir, fqn, profile, args, env)
            if os.getpid() != me:
                # A process the module forked came back here: it ends as the module would.
                os._exit(code & 0xff)
            exits.run()
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    stream.flush()
                except BaseException:
                    pass
            WATCHING[0] = False
            new = baseline.imported()
            learned = [n for n in new if shareable(n, payload_dir, fqn)]
            others = [n for n in new if n not in learned and not module_code(n, fqn)]
            calls += 1
            retire = (bool(new) or runs_alone(fqn) or calls >= WORKER_CALLS
                      or not exits.whole or not baseline.restore())
            # The call's files go: a process it left behind writes nowhere anyone reads.
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.close(null)
            message = b'%d\n%d\n%s\n%s' % (code & 0xff, retire, ' '.join(learned).encode(),
                                         ' '.join(others).encode())
            sock.sendall(struct.pack('>Q', len(message)) + message)
            if retire:
                break
    except BaseException:
        # The worker's own failure: the call it was at fails with it.
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(1)
    os._exit(0)


GRACE = 1.0


def stop_group(pid):
    """TERM to the worker's process group, KILL once the grace is over. Returns the
    worker's wait status when it was reaped meanwhile."""
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


def anonymous_file():
    """A file with no name for one call's stdout or stderr: what the call wrote is there
    even when it ended its worker."""
    if hasattr(os, 'memfd_create'):
        try:
            return os.memfd_create('turbo-play-module')
        except OSError:
            pass
    import tempfile
    with tempfile.TemporaryFile() as f:
        return os.dup(f.fileno())


def contents(fd):
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0) if size else b''
    os.close(fd)
    return data


def exit_code(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class Worker:
    """A forked worker, as the runner sees it: its pid and its end of the socket."""

    def __init__(self, key, pid, sock):
        self.key = key
        self.pid = pid
        self.sock = sock
        self.buffer = bytearray()

    def wait_answer(self, deadline):
        """The worker's answer to its call: ('answer', code, retire, learned, others),
        ('timeout',) at the deadline, or ('ended', status) when it ended without one.
        The agent's end of the requests closing (the agent is gone) stops the worker and
        this process."""
        fd = self.sock.fileno()
        while True:
            if len(self.buffer) >= 8:
                (n,) = struct.unpack('>Q', bytes(self.buffer[:8]))
                if len(self.buffer) >= 8 + n:
                    message = bytes(self.buffer[8:8 + n])
                    del self.buffer[:8 + n]
                    code, retire, learned, others = message.split(b'\n', 3)
                    return ('answer', int(code), retire == b'1',
                            learned.decode(errors='replace').split(),
                            others.decode(errors='replace').split())
            # The tick notices a worker that ended while something it started still
            # holds its end of the socket.
            wait = 0.5
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    return ('timeout',)
            ready, _, _ = select.select([fd, PROTO_IN], [], [], wait)
            if PROTO_IN in ready:
                # No request comes while a module runs: readable means the end.
                stop_group(self.pid)
                os._exit(0)
            if fd in ready:
                try:
                    chunk = self.sock.recv(65536)
                except OSError:
                    chunk = b''
                if chunk:
                    self.buffer.extend(chunk)
                    continue
            if fd in ready or not ready:
                reaped, status = os.waitpid(self.pid, os.WNOHANG)
                if reaped:
                    return ('ended', status)
                if fd in ready:
                    # The socket ended but the worker lives on: wait for it.
                    _, status = os.waitpid(self.pid, 0)
                    return ('ended', status)

    def close(self):
        """Lets an idle worker go: it ends when its socket does (or is stopped, should
        it not within the grace)."""
        self.sock.close()
        end = time.monotonic() + GRACE
        while time.monotonic() < end:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                return
            time.sleep(0.001)
        if stop_group(self.pid) is None:
            os.waitpid(self.pid, 0)


# Per module (payload dir, fqn): what its calls imported from neither the standard library
# nor the payload (third-party packages), which its next workers import before their first
# call, so that a call finds them imported and their state is what the call leaves and
# the worker puts back.
AHEAD = {}
# Idle workers kept for the next calls of their module, the most recently used last.
IDLE_WORKERS = 4
workers = []
# The worker running a call now, stopped when the runner is told to stop.
current = None


def end_workers():
    """Lets every idle worker go and reaps it: none outlives the runner."""
    while workers:
        try:
            workers.pop().close()
        except OSError:
            pass


def on_stop(signum, frame):
    # The agent stops (cancelled, or its session ended): the module goes with it.
    if current is not None:
        stop_group(current.pid)
    if SAVING[0] is not None:
        try:
            os.unlink(SAVING[0])
        except OSError:
            pass
    end_workers()
    os._exit(0)


def start_worker(key, inherited=()):
    """Forks a worker for the calls of `key` (payload dir, fqn); `inherited`: file
    descriptors of this process the worker must not keep."""
    watch()
    # What this process holds stays out of the collector's sight, so a worker's
    # collections never touch (and copy) the pages it shares with it.
    if hasattr(gc, 'freeze'):
        gc.freeze()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(PROTO_IN)
            os.close(PROTO_OUT)
            ours.close()
            for fd in inherited:
                os.close(fd)
            # Other workers end when their sockets do: no copy of ours may keep one.
            for other in workers:
                other.sock.close()
        except BaseException:
            os._exit(1)
        worker(theirs, key[0], key[1], AHEAD.get(key, ()))
    theirs.close()
    # Set here too, so the group exists before the runner may have to stop it.
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    return Worker(key, pid, ours)


# Calls sent to a worker ahead of its answers, which it runs back to back while this
# process relays the answers. Bounded so that the files and bytes in flight always fit
# (the socket's buffer: a worker's answers must never wait on a full one).
SENT_AHEAD = 16
SENT_AHEAD_BYTES = 1 << 16


def take_worker(key, inherited):
    """The idle worker of `key`, or a new one."""
    found = [w for w in workers if w.key == key]
    if found:
        workers.remove(found[0])
        return found[0], False
    return start_worker(key, inherited), True


def run_calls(known, warmed, calls):
    """Runs consecutive calls of one module in its worker (forked when there is none),
    sent ahead of the answers, and answers each as it ends; the worker waits for the
    module's next calls unless it retired."""
    global current
    key = (calls[0].payload_dir, calls[0].fqn)
    add_payload(key[0], known)
    if key not in warmed:
        warmed.add(key)
        warm_module(key[1])
    limit = 1 if runs_alone(key[1]) else SENT_AHEAD
    queue = []  # (call, out, err) not sent to `current`: none of them ever started
    sent = []  # (call, out, err) sent to `current`, unanswered, in order
    following = 0  # the next call to queue
    fresh = False
    refused = False  # `current`'s socket refused a call: it takes no more
    started = 0.0
    saved = False
    while sent or queue or following < len(calls):
        if current is None:
            # What the last worker was sent but never started goes to the next one.
            queue[:0] = sent
            sent = []
            current, fresh = take_worker(key, [fd for _, o, e in queue for fd in (o, e)])
            refused = False
            started = time.monotonic()
        while not refused and (queue or following < len(calls)) and len(sent) < limit:
            if not queue:
                queue.append((calls[following], anonymous_file(), anonymous_file()))
                following += 1
            item = queue[0]
            if sent and (sum(len(c.args) for c, _, _ in sent) + len(item[0].args)
                         > SENT_AHEAD_BYTES):
                break
            try:
                send_call(current.sock, *item)
            except OSError:
                # The worker ended, or retired after answering what it was sent: those
                # answers are read first, and the call goes to the next worker. An idle
                # worker that ended meanwhile, with nothing sent, is replaced at once; a
                # new one that ended at once is told by its first call.
                refused = True
                if fresh and not sent:
                    sent.append(queue.pop(0))
                break
            sent.append(queue.pop(0))
        if not sent:
            current.sock.close()
            os.waitpid(current.pid, 0)
            current = None
            continue
        call, out, err = sent[0]
        # What this process compiled for the module is saved while the worker runs its
        # first calls on the other core, not before they start (what later calls teach
        # it is saved once the request is answered, by `main`).
        if not saved:
            save_bundles()
            saved = True
        event = current.wait_answer(started + call.timeout if call.timeout else None)
        fresh = False
        ran = b''
        learned = []
        if event[0] == 'answer':
            _, code, retire, learned, others = event
            ahead = AHEAD.setdefault(key, [])
            ahead.extend(n for n in others if n not in ahead)
            if retire:
                current.close()
                current = None
        else:
            if event[0] == 'timeout':
                ran = str(int((time.monotonic() - started) * 1000)).encode()
                status = stop_group(current.pid)
                if status is None:
                    _, status = os.waitpid(current.pid, 0)
            else:
                status = event[1]
            current.sock.close()
            current = None
            code = exit_code(status)
        sent.pop(0)
        write_fields([str(code).encode(), ran, contents(out), contents(err)])
        learn(learned)
        started = time.monotonic()
    if current is not None and refused:
        # It ended after its last answer: nothing to keep.
        current.close()
        current = None
    if current is not None:
        workers.append(current)
        current = None
        if len(workers) > IDLE_WORKERS:
            workers.pop(0).close()


# The standard library that ansible-core's module_utils import (basic and what it
# imports: most of basic's import time), imported before the first request is read, so
# that a runner started while its first payload is on the way (see `start_early` in
# warm.rs) has them by the time the payload comes. A module that never needs them only
# finds them imported, as it would after any AnsibleModule-based module.
STDLIB_AHEAD = (
    'argparse', 'ast', 'bisect', 'copy', 'ctypes', 'dataclasses', 'datetime', 'decimal',
    'dis', 'encodings.idna', 'fcntl', 'fnmatch', 'gettext', 'grp', 'hashlib', 'inspect',
    'ipaddress', 'json', 'locale', 'logging', 'numbers', 'pathlib', 'pkgutil', 'platform',
    'pwd', 'random', 'runpy', 'shlex', 'shutil', 'string', 'subprocess', 'syslog',
    'tempfile', 'threading', 'typing', 'unicodedata', 'urllib.parse', 'weakref', 'zlib',
)


def read_request():
    """The next request's calls; EOFError when the agent is gone."""
    count = int(read_field())
    calls = []
    for _ in range(count):
        payload_dir = read_field().decode()
        fqn = read_field().decode()
        profile = read_field().decode()
        args = read_field()
        timeout = read_field().decode()
        env = [e for e in read_field().decode().split('\0') if e]
        calls.append(Call(payload_dir, fqn, profile, args, timeout, env))
    return calls


def import_stdlib_ahead():
    """Imports `STDLIB_AHEAD`. A request that comes meanwhile (its payload was on the way
    when this runner started) is read at once, and each payload of it never compiled on
    this host starts compiling on another core (`compile_early`) while these imports go
    on: its first run then waits for the longer of the two, not for both. Returns that
    request (None when none came)."""
    request = None
    for name in STDLIB_AHEAD:
        if request is None and select.select([PROTO_IN], [], [], 0)[0]:
            try:
                request = read_request()
            except EOFError:
                return None
            for call in request:
                compile_early(call.payload_dir)
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    return request


def main():
    # This process only imports and forks: its collector would only slow the imports
    # down (a seventh of the runner's start). Workers collect as usual.
    gc.disable()
    signal.signal(signal.SIGTERM, on_stop)
    known = set()
    warmed = set()
    first = import_stdlib_ahead()
    while True:
        try:
            calls = first if first is not None else read_request()
        except EOFError:
            end_workers()
            return
        first = None
        start = 0
        for end in range(1, len(calls) + 1):
            if end == len(calls) or (calls[end].payload_dir, calls[end].fqn) != (
                    calls[start].payload_dir, calls[start].fqn):
                run_calls(known, warmed, calls[start:end])
                start = end
        # What the calls taught this process, compiled, for the next runs.
        save_bundles()
