# The warm module runner's reset between calls (see module_runner.py, which this
# follows in the one script the agent runs): what a worker is before its first call,
# how it is put back after each, and what cannot be.


# Modules that keep process-wide state no reset reaches (a D-Bus connection cached in
# module_utils, libdnf's global logger, FreeIPA's API object): a worker per call.
ALONE = frozenset([
    'ansible.builtin.dnf', 'ansible.legacy.dnf', 'ansible.builtin.dnf5', 'ansible.legacy.dnf5',
    'ansible_collections.ansible.posix.plugins.modules.firewalld',
    'ansible_collections.ansible.posix.plugins.modules.firewalld_info',
])


def runs_alone(fqn):
    return (fqn in ALONE or fqn.startswith('ansible_collections.freeipa.')
            or fqn.endswith(('.dnf', '.dnf5')))


# Modules whose every global name is checked after a call, and whose containers (lists,
# dicts, sets bound to a global name) are put back: ansible-core's and the collections'
# module_utils, which keep a call's arguments, warnings and deprecations there. Other
# modules are watched (`WatchedModule`) instead: what a call sets on them from outside is
# undone, while what they rebind inside themselves (the standard library's own caches,
# as tempfile's name sequence) stays, as in any process that used them before; but for
# the standard library's modules whose functions set process-wide defaults in their own
# globals (`urllib.request.install_opener`, `mimetypes.init`...), whose global names are
# checked too.
OWN_STATE = ('ansible.', 'ansible_collections.')
STDLIB_STATE = frozenset([
    'urllib.request', 'mimetypes', 'http.client', 'http.cookiejar', 'ssl', 'socket',
    'tempfile', 'subprocess', 'shutil', 'os', 'sys', 'warnings', 'logging', 'json',
    'locale', 'codecs', 'email.charset', 'xml.sax', 'ftplib', 'smtplib',
])
# Never put back: this runner's own state.
NOT_RESET = frozenset(['__main__', '__mp_main__'])
UNSET = object()
# While a worker's call runs: what it set or deleted on a watched module, as
# (namespace, name, the value before or UNSET), undone in reverse after the call.
JOURNAL = []
WATCHING = [False]


class WatchedModule(types.ModuleType):
    """A module whose attributes set or deleted from outside (`json.x = 1`, a mock's
    setattr, `sys.stdout = ...`) are journaled while a call runs."""

    def __setattr__(self, name, value):
        if WATCHING[0]:
            JOURNAL.append((self.__dict__, name, self.__dict__.get(name, UNSET)))
        types.ModuleType.__setattr__(self, name, value)

    def __delattr__(self, name):
        if WATCHING[0]:
            JOURNAL.append((self.__dict__, name, self.__dict__.get(name, UNSET)))
        types.ModuleType.__delattr__(self, name)


def watch():
    """Makes every plain module imported here a `WatchedModule` (once: workers inherit),
    and tells which of ansible's must still be compared after each call (`REBINDING`)."""
    for name, module in list(sys.modules.items()):
        if type(module) is types.ModuleType and name not in NOT_RESET:
            try:
                module.__class__ = WatchedModule
            except TypeError:
                pass
        if name not in REBINDING and name.startswith(OWN_STATE):
            code = CODE.get(getattr(module, '__file__', None) or '')
            REBINDING[name] = code is None or rebinds_globals(code)


# Per ansible module imported here: whether its code may rebind its own global names,
# which no journal sees (`global x; x = ...`, or its namespace reached as a dict). Those
# are compared after each call (`Baseline`); what the others' globals are bound to changes
# only through their attributes, which `WatchedModule` journals. Unknown code (a module
# not compiled here) counts as rebinding. Comparing every module after every call took a
# fifth of a warm call.
REBINDING = {}
REBINDING_OPS = bytes(opcode.opmap[name] for name in ('STORE_GLOBAL', 'DELETE_GLOBAL'))
NAMESPACE_NAMES = frozenset(['globals', 'vars', 'exec', 'eval', '__dict__', 'f_globals'])


def rebinds_globals(code):
    """Whether `code` (a module's, with every function and class body in it) rebinds a
    global name or may reach its globals as a dict. Instructions are two bytes, the
    opcode first."""
    operations = code.co_code[::2]
    if any(op in operations for op in REBINDING_OPS):
        return True
    if not NAMESPACE_NAMES.isdisjoint(code.co_names):
        return True
    return any(rebinds_globals(c) for c in code.co_consts if isinstance(c, types.CodeType))


class Baseline:
    """What a worker is before its first call, and puts back after each: the working
    directory, umask, environment, signal handlers and mask, what was set on modules from
    outside them, ansible's module globals and containers, sys's hooks and streams, the
    locale. What it cannot put back (threads, file descriptors left open, imports,
    identity, process group, closed standard streams) makes the worker retire after the
    call."""

    def __init__(self):
        self.cwd = os.getcwd()
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.environ = dict(os.environ)
        # What os.environ keeps (encoded), to compare at C speed after each call.
        self.environ_data = dict(getattr(os.environ, '_data', self.environ))
        # The raw handlers (`signal.getsignal` makes an enum of each, ten times slower).
        self.signals = {}
        for number in signal.valid_signals():
            try:
                self.signals[number] = _signal.getsignal(number)
            except (OSError, ValueError):
                pass
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.recursion = sys.getrecursionlimit()
        self.collector = (gc.isenabled(), gc.get_threshold())
        self.timeout = socket.getdefaulttimeout()
        self.limits = {}
        if resource is not None:
            for name in dir(resource):
                if name.startswith('RLIMIT_'):
                    number = getattr(resource, name)
                    self.limits[number] = resource.getrlimit(number)
        self.locale = None
        if 'locale' in sys.modules:
            import locale
            self.locale = locale.setlocale(locale.LC_ALL)
        self.names = set(sys.modules)
        self.modules = []
        self.containers = []
        for name, module in list(sys.modules.items()):
            if name in NOT_RESET or not isinstance(module, types.ModuleType):
                continue
            own = name.startswith(OWN_STATE)
            watched = type(module) is WatchedModule
            if not own and watched and name not in STDLIB_STATE:
                continue
            space = module.__dict__
            if not (own and watched and not REBINDING.get(name, True)):
                self.modules.append((space, tuple(space), tuple(space.values())))
            if own:
                for key, value in space.items():
                    if type(value) in (list, dict, set) and not key.startswith('__'):
                        self.containers.append((value, value.copy()))
        for value in (sys.path, sys.meta_path, sys.path_hooks, sys.path_importer_cache):
            self.containers.append((value, value.copy()))
        warnings = sys.modules.get('warnings')
        if warnings is not None:
            self.containers.append((warnings.filters, warnings.filters.copy()))
        logging = sys.modules.get('logging')
        if logging is not None:
            self.containers.append((logging.root.handlers, logging.root.handlers.copy()))
            self.containers.append((logging.root.__dict__, logging.root.__dict__.copy()))
            manager = logging.Logger.manager
            self.containers.append((manager.loggerDict, manager.loggerDict.copy()))
            self.containers.append((manager.__dict__, manager.__dict__.copy()))
        fds = open_fds()
        self.fds = None if fds is None else {fd for fd in fds if is_open(fd)}
        self.identity = self.who()
        self.streams = self.stream_settings()

    @staticmethod
    def who():
        return (os.getresuid(), os.getresgid(), os.getgroups(), os.getpgrp(), os.getsid(0),
                os.getpriority(os.PRIO_PROCESS, 0))

    @staticmethod
    def stream_settings():
        return [(getattr(f, 'encoding', None), getattr(f, 'errors', None),
                 getattr(f, 'line_buffering', None))
                for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__)]

    def imported(self):
        return [name for name in sys.modules if name not in self.names]

    def restore(self):
        """Puts the process back; False when what the call left cannot be put back."""
        whole = True
        try:
            os.chdir(self.cwd)
        except OSError:
            whole = False
        os.umask(self.umask)
        if getattr(os.environ, '_data', os.environ) != self.environ_data:
            zone = os.environ.get('TZ')
            os.environ.clear()
            os.environ.update(self.environ)
            if zone != os.environ.get('TZ'):
                time.tzset()
        if socket.getdefaulttimeout() != self.timeout:
            socket.setdefaulttimeout(self.timeout)
        for number, limits in self.limits.items():
            if resource.getrlimit(number) != limits:
                try:
                    resource.setrlimit(number, limits)
                except (OSError, ValueError):
                    whole = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        for number, handler in self.signals.items():
            try:
                now = _signal.getsignal(number)
                if now is not handler and now != handler:
                    if handler is None:
                        whole = False
                    else:
                        signal.signal(number, handler)
            except (OSError, ValueError):
                whole = False
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        for space, name, before in reversed(JOURNAL):
            if before is UNSET:
                space.pop(name, None)
            else:
                space[name] = before
        del JOURNAL[:]
        for space, keys, values in self.modules:
            if len(space) != len(keys) or tuple(space.values()) != values:
                self.put_back(space, keys, values)
        for value, saved in self.containers:
            if value != saved:
                if type(value) is list:
                    value[:] = saved
                else:
                    value.clear()
                    value.update(saved)
        warnings = sys.modules.get('warnings')
        if warnings is not None and hasattr(warnings, '_filters_mutated'):
            warnings._filters_mutated()
        if sys.getrecursionlimit() != self.recursion:
            sys.setrecursionlimit(self.recursion)
        if (gc.isenabled(), gc.get_threshold()) != self.collector:
            gc.enable() if self.collector[0] else gc.disable()
            gc.set_threshold(*self.collector[1])
        sys.settrace(None)
        sys.setprofile(None)
        if self.locale is not None:
            import locale
            try:
                if locale.setlocale(locale.LC_ALL) != self.locale:
                    locale.setlocale(locale.LC_ALL, self.locale)
            except locale.Error:
                whole = False
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            if getattr(stream, 'closed', True):
                whole = False
        if self.stream_settings() != self.streams:
            # A stream reconfigured in place (its encoding, errors, buffering).
            whole = False
        if self.who() != self.identity:
            whole = False
        try:
            if len(os.listdir('/proc/self/task')) > 1:
                whole = False
        except OSError:
            pass
        if self.stray_fds():
            # Objects the call dropped may still hold theirs until collected.
            gc.collect()
            if self.stray_fds():
                whole = False
        return whole

    def stray_fds(self):
        """Whether file descriptors were left open, or ours closed."""
        now = open_fds()
        if self.fds is None or now is None:
            return False
        return not self.fds <= now or any(is_open(fd) for fd in now - self.fds)

    @staticmethod
    def put_back(space, keys, values):
        wanted = dict(zip(keys, values))
        for key in [k for k in space if k not in wanted]:
            del space[key]
        for key, value in wanted.items():
            if space.get(key, UNSET) is not value:
                space[key] = value


def open_fds():
    """The numbers of the open file descriptors (and of the one listing them)."""
    try:
        return set(os.listdir('/proc/self/fd'))
    except OSError:
        return None


def is_open(fd):
    try:
        os.fstat(int(fd))
        return True
    except OSError:
        return False


class CallExits:
    """What a call registers with atexit, run when the call ends, as it would have run when
    its process ended (AnsibleModule's temp directory goes so). The runner's own callbacks
    are dropped: they are not a call's. Callbacks of the standard library's machinery
    (weakref's finalizers, logging, threads, executors), which mark the whole process as
    shutting down once run, are not run: a worker's os._exit never runs them either. A
    call that registered past the wrapper (with an `atexit.register` bound before it) has
    all of those run, and its worker retires (`whole` is False)."""

    MACHINERY = frozenset(['weakref', 'logging', 'threading', 'concurrent', 'multiprocessing'])

    def __init__(self):
        import atexit
        self.atexit = atexit
        self.real = (atexit.register, atexit.unregister)
        atexit._clear()
        self.registered = []
        self.whole = True
        atexit.register = self.register
        atexit.unregister = self.unregister

    def register(self, func, *args, **kwargs):
        self.registered.append((func, args, kwargs))
        return func

    def unregister(self, func):
        self.registered[:] = [r for r in self.registered if r[0] != func]
        self.real[1](func)

    def run(self):
        while self.registered:
            func, args, kwargs = self.registered.pop()
            module = getattr(func, '__module__', None) or ''
            if module.partition('.')[0] in self.MACHINERY:
                continue
            try:
                func(*args, **kwargs)
            except BaseException:
                traceback.print_exc()
        if self.atexit._ncallbacks():
            self.whole = False
            try:
                self.atexit._run_exitfuncs()
            except BaseException:
                pass
