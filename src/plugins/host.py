# turbo-play's controller plugin host: runs the Python plugins a playbook ships (filter,
# test, lookup and action plugins) for turbo-play, which starts it once per run with the
# controller's Python (src/plugins/host.rs).
#
# It speaks JSON, one object a line, on the pipes it was started with; its own stdin and
# stdout are pointed at /dev/null and stderr first, so that a plugin's print() cannot
# corrupt the protocol.
#   turbo-play -> host: {"id": N, "op": ..., ...}       a request, answered on its own thread
#                       {"id": N, "reply": value}       the answer to the host's call N
#                       {"id": N, "fail": message}      the call failed
#                       {"id": N, "op": "abort"}        request N is abandoned
#   host -> turbo-play: {"id": N, "call": {...}}        request N needs turbo-play (a
#                                                       variable, a template, a module run)
#                       {"id": N, "done": value}        request N's answer
#                       {"id": N, "error": {...}}       request N failed
# Values cross as JSON; an undefined value (Ansible's Marker) is {"__turbo__": "undefined",
# "hint": text}.
import collections.abc
import datetime
import importlib
import importlib.util
import json
import os
import queue
import sys
import threading
import traceback

PROTO_IN = os.fdopen(os.dup(0), 'rb')
PROTO_OUT = os.fdopen(os.dup(1), 'wb')
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.close(_devnull)
os.dup2(2, 1)
sys.stdout = sys.stderr

WRITE_LOCK = threading.Lock()
WAITING = {}
WAITING_LOCK = threading.Lock()
SETTINGS = {'collection_roots': [], 'playbook_dir': os.getcwd()}


def send(message):
    line = json.dumps(message, default=to_jsonable, ensure_ascii=False).encode('utf-8', 'surrogateescape')
    with WRITE_LOCK:
        PROTO_OUT.write(line + b'\n')
        PROTO_OUT.flush()


class Abandoned(BaseException):
    """turbo-play no longer waits for this request (its task was cancelled)."""


class CallFailed(Exception):
    pass


class Channel:
    """One request's conversation: the calls it makes back to turbo-play."""

    def __init__(self, request_id):
        self.id = request_id
        self.answers = queue.Queue()
        self.closed = False

    def call(self, kind, **payload):
        if self.closed:
            raise CallFailed(f'turbo-play no longer answers this plugin ({kind} after its call ended)')
        payload['kind'] = kind
        send({'id': self.id, 'call': payload})
        answer = self.answers.get()
        if answer is ABANDONED:
            raise Abandoned()
        if 'fail' in answer:
            raise CallFailed(answer['fail'])
        return decode(answer.get('reply'))


ABANDONED = object()


# Values --------------------------------------------------------------------------------

_MARKER = None


def marker_class():
    """Ansible's UndefinedMarker where ansible-core is importable, else a stand-in."""
    global _MARKER
    if _MARKER is None:
        try:
            from ansible._internal._templating._jinja_common import UndefinedMarker
            _MARKER = UndefinedMarker
        except Exception:
            _MARKER = TurboUndefined
    return _MARKER


class TurboUndefined:
    def __init__(self, hint=None, **_):
        self._undefined_hint = hint

    def __bool__(self):
        raise CallFailed(self._undefined_hint or 'undefined value')

    def __repr__(self):
        return f'Undefined({self._undefined_hint!r})'


def make_undefined(hint):
    cls = marker_class()
    if cls is TurboUndefined:
        return TurboUndefined(hint)
    return cls(hint=hint, _no_template_source=True)


def is_undefined(value):
    if isinstance(value, TurboUndefined):
        return True
    cls = marker_class()
    if cls is TurboUndefined:
        return False
    try:
        from ansible._internal._templating._jinja_common import Marker
        return isinstance(value, Marker)
    except Exception:
        return False


def undefined_hint(value):
    for attr in ('_undefined_message', '_undefined_hint'):
        try:
            text = object.__getattribute__(value, attr)
            if text:
                return str(text)
        except Exception:
            pass
    return 'undefined value'


def decode(value):
    if isinstance(value, dict):
        if value.get('__turbo__') == 'undefined' and len(value) <= 2:
            return make_undefined(value.get('hint'))
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def to_jsonable(value):
    """What json.dumps cannot write itself: Ansible's values as JSON."""
    if is_undefined(value):
        return {'__turbo__': 'undefined', 'hint': undefined_hint(value)}
    if isinstance(value, collections.abc.Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)) or isinstance(value, collections.abc.Iterator):
        return list(value)
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    decrypt = getattr(value, '_decrypt', None)
    if callable(decrypt):
        return decrypt()
    return str(value)


def plain(value):
    """A value turbo-play can read back: nested containers made plain lists and dicts."""
    return json.loads(json.dumps(value, default=to_jsonable))


def message_of(ex):
    """An exception's message with its causes, as Ansible's error summary joins them."""
    parts = []
    seen = set()
    while ex is not None and id(ex) not in seen:
        seen.add(id(ex))
        text = getattr(ex, 'message', None)
        if not isinstance(text, str) or not text:
            text = str(ex) or type(ex).__name__
        if not parts or parts[-1] != text:
            parts.append(text)
        ex = ex.__cause__ or (None if ex.__suppress_context__ else ex.__context__)
    joined = parts[0] if parts else ''
    for part in parts[1:]:
        joined = joined.rstrip('.') + ': ' + part
    return joined


# Loading plugin files --------------------------------------------------------------------

MODULES = {}
MODULES_LOCK = threading.RLock()
_ANSIBLE = {'state': None, 'error': None}


def ansible_ready():
    """Imports ansible-core's plugin machinery once and lets it find the run's collections;
    None when ansible-core is importable, else why not."""
    with MODULES_LOCK:
        if _ANSIBLE['state'] is None:
            try:
                from ansible.plugins import loader
                loader.init_plugin_loader(prefix_collections_path=SETTINGS['collection_roots'])
                _ANSIBLE['state'] = True
            except Exception as ex:
                _ANSIBLE['state'] = False
                _ANSIBLE['error'] = message_of(ex)
                for root in SETTINGS['collection_roots']:
                    if root not in sys.path:
                        sys.path.append(root)
        return None if _ANSIBLE['state'] else _ANSIBLE['error']


def load_file(path, import_name):
    """The plugin file at `path` imported (once) as `import_name`; a collection's plugin is
    imported through the import system, so that its relative and collection imports work."""
    with MODULES_LOCK:
        if path in MODULES:
            return MODULES[path]
        if import_name.startswith('ansible_collections.'):
            ansible_ready()
            module = importlib.import_module(import_name)
        else:
            name = import_name
            if name in sys.modules:
                name = f'{import_name}_{abs(hash(path))}'
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        MODULES[path] = module
        return module


# Filters and tests ------------------------------------------------------------------------

JINJA = {}
JINJA_LOCK = threading.Lock()


def op_jinja_list(request, chan):
    """The filters (or tests) each file defines, first definition of a name winning (for a
    collection's files: the last), each with whether it takes undefined arguments."""
    kind = request['kind']
    method = 'filters' if kind == 'filter' else 'tests'
    cls_name = 'FilterModule' if kind == 'filter' else 'TestModule'
    found = {}
    order = []
    skipped = []
    later_wins = request.get('later_wins', False)
    for file in request['files']:
        try:
            module = load_file(file['path'], file['import_name'])
            plugins = getattr(getattr(module, cls_name)(), method)()
            items = list(plugins.items())
        except Exception as ex:
            skipped.append({'path': file['path'], 'message': message_of(ex)})
            continue
        for name, func in items:
            if not isinstance(name, str) or '.' in name:
                continue
            if name in found and not later_wins:
                continue
            entry = {'name': name, 'path': file['path'], 'markers': False, 'error': None}
            try:
                entry['markers'] = bool(getattr(func, 'accept_args_markers', False))
                getattr(func, 'accept_lazy_markers', False)
            except Exception as ex:
                entry['error'] = message_of(ex)
            with JINJA_LOCK:
                key = len(JINJA)
                JINJA[key] = func
            entry['id'] = key
            if name not in found:
                order.append(name)
            found[name] = entry
    return {'plugins': [found[name] for name in order], 'skipped': skipped}


def op_jinja_call(request, chan):
    func = JINJA[request['plugin']]
    args = decode(request.get('args', []))
    kwargs = decode(request.get('kwargs', {}))
    result = func(*args, **kwargs)
    if isinstance(result, (collections.abc.Iterator, range, collections.abc.KeysView,
                           collections.abc.ValuesView, collections.abc.ItemsView)):
        result = list(result)
    return {'value': plain(result)}


# Templar and variables seen by plugins ----------------------------------------------------------

class LazyVariables(collections.abc.Mapping):
    """The task's variables, each fetched from turbo-play when a plugin reads it."""

    def __init__(self, chan, known=None):
        self._chan = chan
        self._cache = dict(known or {})
        self._names = None

    def _fetch(self, name):
        if name not in self._cache:
            answer = self._chan.call('var', name=name)
            self._cache[name] = answer
        return self._cache[name]

    def __getitem__(self, name):
        answer = self._fetch(name)
        if not isinstance(answer, dict) or not answer.get('found'):
            raise KeyError(name)
        return answer['value']

    def __contains__(self, name):
        return isinstance(self._fetch(name), dict) and self._fetch(name).get('found', False)

    def _all_names(self):
        if self._names is None:
            self._names = list(self._chan.call('var_names'))
        return self._names

    def __iter__(self):
        return iter(self._all_names())

    def __len__(self):
        return len(self._all_names())

    def copy(self):
        return dict(self.items())


def wrap_found(value):
    return {'found': True, 'value': value}


class TurboTemplar:
    """What plugins use of Ansible's Templar: templates rendered by turbo-play."""

    def __init__(self, chan, variables):
        self._chan = chan
        self._variables = variables

    @property
    def available_variables(self):
        return self._variables

    @available_variables.setter
    def available_variables(self, value):
        self._variables = value

    def template(self, variable, *args, **kwargs):
        # As Ansible's: only a template the playbook wrote (trusted) is rendered; a string
        # a plugin made, or a value already rendered, comes back as it is.
        if not self.is_template(variable) or not trusted(variable):
            return variable
        options = {k: v for k, v in kwargs.items() if k in ('convert_bare', 'fail_on_undefined', 'escape_backslashes')}
        return self._chan.call('template', value=plain(variable), options=options)

    def is_template(self, data):
        if isinstance(data, str):
            return '{{' in data or '{%' in data or '{#' in data
        if isinstance(data, (dict, list)):
            return self.is_template(json.dumps(data, default=to_jsonable))
        return False

    is_possibly_template = is_template

    def resolve_to_container(self, variable, options=None):
        return self.template(variable)

    def evaluate_expression(self, expression, **kwargs):
        return self._chan.call('expression', expression=str(expression))

    def evaluate_conditional(self, conditional):
        return bool(self._chan.call('expression', expression=str(conditional)))

    def copy_with_new_env(self, **kwargs):
        return self

    def set_temporary_context(self, **kwargs):
        import contextlib
        return contextlib.nullcontext()

    def __getattr__(self, name):
        raise NotSupported(f"self._templar.{name} (turbo-play's templar renders templates, "
                           "evaluates expressions and lists the task's variables)")


def trusted(value):
    """Whether a value holds a string Ansible trusts as a template (tagged so by the
    plugin itself: the values turbo-play hands plugins are rendered already)."""
    try:
        from ansible._internal._datatag._tags import TrustedAsTemplate
    except Exception:
        return False
    if isinstance(value, str):
        return TrustedAsTemplate.is_tagged_on(value)
    if isinstance(value, collections.abc.Mapping):
        return any(trusted(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(trusted(v) for v in value)
    return False


class NotSupported(Exception):
    """A piece of Ansible's controller internals a plugin reached for that turbo-play lacks."""


class NoAnsible(Exception):
    """The controller's Python lacks the ansible-core a plugin needs."""


def data_loader(playbook_dir):
    from ansible.parsing.dataloader import DataLoader
    loader = DataLoader()
    loader.set_basedir(playbook_dir)
    return loader


# Lookups ------------------------------------------------------------------------------

CONFIGURED = set()


def plugin_options(kind, name, module, path):
    """Registers a plugin's documented options with Ansible's configuration, as its plugin
    loader does, so that get_option and set_options work."""
    key = (kind, name)
    if key in CONFIGURED:
        return
    CONFIGURED.add(key)
    doc = getattr(module, 'DOCUMENTATION', '')
    if not doc:
        return
    from ansible import constants as C
    import yaml
    parsed = yaml.safe_load(doc)
    if not isinstance(parsed, dict):
        return
    try:
        from ansible.plugins.loader import fragment_loader
        from ansible.utils.plugin_docs import add_fragments
        add_fragments(parsed, path, fragment_loader=fragment_loader, is_module=False, section='DOCUMENTATION')
    except Exception:
        pass
    if isinstance(parsed.get('options'), dict) and not C.config.has_configuration_definition(kind, name):
        C.config.initialize_plugin_configuration_definitions(kind, name, parsed['options'])


def name_plugin(instance, name, path, fqcn):
    instance._load_name = name
    instance._original_path = path
    instance._redirected_names = [name]
    instance.ansible_name = fqcn
    instance.ansible_aliases = [name]


def op_lookup(request, chan):
    """Runs a lookup plugin as Ansible's templar does: a fresh instance per call, the
    terms, the task's variables and the keyword arguments; returns what run returned."""
    path = request['path']
    name = request['name']
    try:
        module = load_file(path, request['import_name'])
        cls = module.LookupModule
    except Exception as ex:
        raise PluginLoadError(ex)
    terms = decode(request.get('terms', []))
    kwargs = decode(request.get('kwargs', {}))
    if not getattr(cls, 'accept_args_markers', False):
        for term in list(terms) + list(kwargs.values()):
            if is_undefined(term):
                return {'value': term}
    variables = LazyVariables(chan)
    templar = TurboTemplar(chan, variables)
    loader = None
    if ansible_ready() is None:
        loader = data_loader(request.get('playbook_dir') or SETTINGS['playbook_dir'])
        plugin_options('lookup', name, module, path)
    try:
        instance = cls(loader=loader, templar=templar)
    except Exception as ex:
        raise PluginLoadError(ex)
    name_plugin(instance, name, path, request.get('fqcn') or name)
    result = instance.run(terms, variables=variables, **kwargs)
    if isinstance(result, collections.abc.Iterator):
        result = list(result)
    if not isinstance(result, collections.abc.Sequence) or isinstance(result, (str, bytes)):
        raise TypeError(f"returned {type(result)} instead of {list}")
    return {'value': plain(list(result))}


class PluginLoadError(Exception):
    def __init__(self, cause):
        super().__init__(message_of(cause))
        self.cause = cause


# Action plugins -----------------------------------------------------------------------------

CURRENT = threading.local()
PATCHED = []


def current_channel():
    chan = getattr(CURRENT, 'chan', None)
    if chan is None:
        raise NotSupported('a call to the host outside of the action\'s run')
    return chan


def patch_action_base():
    """Points ActionBase's ways to the host at turbo-play: a module runs through turbo-play's
    own module paths, a command through its agent; the rest of ActionBase is Ansible's."""
    if PATCHED:
        return
    from ansible.plugins.action import ActionBase

    def _execute_module(self, module_name=None, module_args=None, tmp=None, task_vars=None,
                        persist_files=False, delete_remote_tmp=None, wrap_async=False,
                        ignore_unknown_opts=False):
        if module_name is None:
            module_name = self._task.action
        if module_args is None:
            module_args = self._task.args
        if wrap_async:
            raise NotSupported('running a module asynchronously from an action plugin (wrap_async)')
        result = current_channel().call('execute_module', module=str(module_name), args=plain(dict(module_args)),
                                        ignore_unknown_opts=bool(ignore_unknown_opts))
        return result

    def _low_level_execute_command(self, cmd, sudoable=True, in_data=None, executable=None,
                                   encoding_errors='surrogate_then_replace', chdir=None):
        if isinstance(in_data, bytes):
            in_data = in_data.decode('utf-8', 'surrogateescape')
        return current_channel().call('command', cmd=str(cmd), stdin=in_data, executable=executable,
                                      chdir=chdir)

    def _transfer_data(self, remote_path, data):
        if isinstance(data, str):
            data = data.encode('utf-8', 'surrogateescape')
        import base64
        current_channel().call('write_file', path=str(remote_path), data=base64.b64encode(data).decode('ascii'))
        return remote_path

    def _transfer_file(self, local_path, remote_path):
        with open(local_path, 'rb') as f:
            return _transfer_data(self, remote_path, f.read())

    def _make_tmp_path(self, remote_user=None):
        path = current_channel().call('make_tmp')
        self._connection._shell.tmpdir = path
        return path

    def _remove_tmp_path(self, tmp_path, force=False):
        if tmp_path and (force or self._should_remove_tmp_path(tmp_path)):
            current_channel().call('command', cmd=f"rm -rf '{tmp_path}' > /dev/null 2>&1", stdin=None,
                                   executable=None, chdir=None)
            if self._connection._shell.tmpdir == tmp_path:
                self._connection._shell.tmpdir = None

    def _remote_expand_user(self, path, sudoable=True, pathsep=None):
        if not path.startswith('~'):
            return path
        result = current_channel().call('command', cmd=f'echo {path}', stdin=None, executable=None, chdir=None)
        expanded = (result.get('stdout') or '').strip()
        return expanded or path

    def _fixup_perms2(self, remote_paths, remote_user=None, execute=True):
        # turbo-play's agent writes as the user the task runs as: nothing to hand over.
        return remote_paths

    def _compute_environment_string(self, raw_environment_out=None):
        return ''

    def _get_remote_user(self):
        return self._play_context.remote_user

    for name, func in list(locals().items()):
        if callable(func) and name.startswith('_') and name != 'ActionBase':
            setattr(ActionBase, name, func)
    PATCHED.append(True)


class Attributes:
    """A plain object whose missing attributes name the piece turbo-play lacks."""

    _what = 'object'

    def __init__(self, **values):
        self.__dict__.update(values)

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise NotSupported(f'{self._what}.{name}')


class FakeShell(Attributes):
    _what = 'self._connection._shell'

    def join_path(self, *args):
        return os.path.join(*args)

    def get_remote_filename(self, path):
        return os.path.basename(path)

    def quote(self, text):
        import shlex
        return shlex.quote(text)


class FakeConnection(Attributes):
    _what = 'self._connection'


class FakePlayContext(Attributes):
    _what = 'self._play_context'


class FakeRole(Attributes):
    _what = 'self._task._role'


class FakeTask(Attributes):
    _what = 'self._task'

    def get_search_path(self):
        return list(self.search_path)

    def copy(self, *args, **kwargs):
        return FakeTask(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()})

    def get_name(self):
        return self.name

    def __repr__(self):
        return f'TASK: {self.name}'


def action_result(result):
    if not isinstance(result, collections.abc.Mapping):
        raise TypeError(f'the action returned {type(result).__name__}, not a dict')
    return plain(dict(result))


def op_action(request, chan):
    """Runs an action plugin's ActionModule for one task on one host (one loop item)."""
    path = request['path']
    name = request['name']
    problem = ansible_ready()
    if problem is not None:
        raise NoAnsible(f"ansible-core, which every action plugin imports its ActionBase from, in the "
                        f"controller's Python ({sys.executable}: {problem})")
    try:
        module = load_file(path, request['import_name'])
        cls = module.ActionModule
    except Exception as ex:
        raise PluginLoadError(ex)
    patch_action_base()
    from ansible import errors as ansible_errors
    task_info = decode(request['task'])
    play = decode(request.get('play_context', {}))
    variables = LazyVariables(chan)
    templar = TurboTemplar(chan, variables)
    role = None
    if task_info.get('role_path'):
        role = FakeRole(_role_path=task_info['role_path'], _role_name=task_info.get('role_name'),
                        get_name=lambda *a, **k: task_info.get('role_name'))
    task = FakeTask(
        args=task_info.get('args', {}),
        action=task_info['action'],
        resolved_action=task_info.get('resolved_action') or task_info['action'],
        _resolved_action=task_info.get('resolved_action') or task_info['action'],
        name=task_info.get('name') or task_info['action'],
        async_val=task_info.get('async_val', 0),
        poll=task_info.get('poll', 15),
        check_mode=task_info.get('check_mode', False),
        diff=task_info.get('diff', False),
        no_log=task_info.get('no_log', False),
        environment=list(task_info.get('environment') or []),
        delegate_to=task_info.get('delegate_to'),
        delegate_facts=task_info.get('delegate_facts'),
        become=play.get('become', False),
        become_user=play.get('become_user'),
        become_method=play.get('become_method', 'sudo'),
        collections=task_info.get('collections') or [],
        module_defaults=task_info.get('module_defaults') or [],
        ignore_errors=task_info.get('ignore_errors', False),
        ignore_unreachable=False,
        loop=None,
        notify=None,
        register=task_info.get('register'),
        search_path=task_info.get('search_path') or [],
        _role=role,
        _parent=None,
        _uuid=task_info.get('uuid', ''),
        _ansible_internal_redirect_list=[],
    )
    shell = FakeShell(tmpdir=None, _IS_WINDOWS=False, SHELL_FAMILY='sh', executable='/bin/sh')
    play_context = FakePlayContext(
        check_mode=task.check_mode, diff=task.diff, become=play.get('become', False),
        become_user=play.get('become_user'), become_method=play.get('become_method', 'sudo'),
        remote_user=play.get('remote_user'), remote_addr=play.get('remote_addr'),
        port=play.get('port'), connection=play.get('connection', 'ssh'),
        verbosity=play.get('verbosity', 0), shell='sh', executable='/bin/sh',
        no_log=task.no_log, timeout=play.get('timeout', 10), password=None, become_pass=None,
        private_key_file=None, pipelining=True,
    )
    connection = FakeConnection(
        _shell=shell, _play_context=play_context, transport=play.get('connection', 'ssh'),
        become=None, has_pipelining=True, always_pipeline_modules=True, _remote_is_local=False,
        get_option=lambda option, hostvars=None: play.get('connection_options', {}).get(option),
    )
    loader = data_loader(request.get('playbook_dir') or SETTINGS['playbook_dir'])
    CURRENT.chan = chan
    instance = None
    try:
        try:
            instance = cls(task=task, connection=connection, play_context=play_context, loader=loader,
                           templar=templar, shared_loader_obj=None)
        except Exception as ex:
            raise PluginLoadError(ex)
        name_plugin(instance, name, path, request.get('fqcn') or name)
        try:
            result = action_result(instance.run(task_vars=variables))
        except (ansible_errors.AnsibleActionSkip, ansible_errors.AnsibleActionFail) as ex:
            result = plain(dict(getattr(ex, '_result', None) or {}))
            if isinstance(ex, ansible_errors.AnsibleActionSkip):
                result.update(skipped=True, changed=False)
            else:
                result['failed'] = True
            result['msg'] = message_of(ex)
        except ansible_errors._ActionDone as ex:
            result = plain(dict(getattr(ex, '_result', None) or {}))
        except NotSupported as ex:
            raise
        except (Abandoned, CallFailed):
            raise
        except Exception as ex:
            result = {'failed': True, 'changed': False, 'msg': 'Task failed: ' + message_of(ex),
                      'exception': '(traceback unavailable)'}
        try:
            instance.cleanup()
        except (NotSupported, Abandoned, CallFailed):
            raise
        except Exception:
            pass
        return {'result': result}
    finally:
        CURRENT.chan = None


# The loop ------------------------------------------------------------------------------------

def op_hello(request, chan):
    SETTINGS['collection_roots'] = list(request.get('collection_roots') or [])
    SETTINGS['playbook_dir'] = request.get('playbook_dir') or SETTINGS['playbook_dir']
    version = None
    try:
        from ansible.release import __version__ as version
    except Exception:
        pass
    return {'python': '.'.join(map(str, sys.version_info[:3])), 'executable': sys.executable,
            'ansible': version}


# Requests that never call back and are short: served on the reading thread, which
# saves starting a thread for each filter or test call.
INLINE = {'jinja_call'}

OPS = {
    'hello': op_hello,
    'jinja_list': op_jinja_list,
    'jinja_call': op_jinja_call,
    'lookup': op_lookup,
    'action': op_action,
}


def serve(request):
    chan = Channel(request['id'])
    with WAITING_LOCK:
        WAITING[chan.id] = chan
    try:
        try:
            done = OPS[request['op']](request, chan)
        except Abandoned:
            return
        except PluginLoadError as ex:
            error = {'kind': 'load', 'message': message_of(ex.cause)}
        except NotSupported as ex:
            error = {'kind': 'unsupported', 'message': str(ex)}
        except NoAnsible as ex:
            error = {'kind': 'no_ansible', 'message': str(ex)}
        except CallFailed as ex:
            error = {'kind': 'call', 'message': str(ex)}
        except Exception as ex:
            error = {'kind': 'runtime', 'message': message_of(ex),
                     'type': type(ex).__name__,
                     'traceback': ''.join(traceback.format_exception(ex))}
        except BaseException as ex:
            error = {'kind': 'runtime', 'message': f'{type(ex).__name__}: {ex}', 'type': type(ex).__name__}
        else:
            send({'id': chan.id, 'done': done})
            return
        send({'id': chan.id, 'error': error})
    finally:
        chan.closed = True
        with WAITING_LOCK:
            WAITING.pop(chan.id, None)


def main():
    for line in PROTO_IN:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        request_id = message.get('id')
        if 'op' in message:
            if message['op'] == 'abort':
                with WAITING_LOCK:
                    chan = WAITING.get(request_id)
                if chan is not None:
                    chan.answers.put(ABANDONED)
                continue
            if message['op'] in INLINE:
                serve(message)
            else:
                threading.Thread(target=serve, args=(message,), daemon=True).start()
        else:
            with WAITING_LOCK:
                chan = WAITING.get(request_id)
            if chan is not None:
                chan.answers.put(message)
    os._exit(0)


main()
