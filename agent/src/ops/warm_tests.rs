//! The warm runner's workers: a loop's calls run one after another in one process, each
//! finding it as the first call did; what cannot be put back, or ends the process, costs
//! only that call and a new worker.

use std::path::Path;
use std::time::{Duration, Instant};

use turbo_proto::{ModuleRun, Op, OpResult, Request, RunModule};

use super::super::module::tests::{PYTHON, payload, payload_file, payload_named, request};
use super::super::testutil::{TempDir, agent};
use super::Agent;

fn python() -> bool {
    let found = Path::new(PYTHON).is_file();
    if !found {
        eprintln!("skipped: no {PYTHON}");
    }
    found
}

/// One request holding `calls`, as a loop's items go; each call's `ModuleRun`.
fn batch(a: &mut Agent, calls: Vec<RunModule>) -> Vec<ModuleRun> {
    let result = a.handle(Request {
        id: 1,
        check: false,
        diff: false,
        chain: 0,
        timeout_ms: None,
        op: Op::Batch(calls.into_iter().map(Op::RunModule).collect()),
    });
    let OpResult::Batch(results) = result else {
        panic!("{result:?}")
    };
    results
        .into_iter()
        .map(|r| match r {
            OpResult::Module(run) => run,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The call of `spec` with `{"x": n}` as its arguments.
fn with_x(spec: &RunModule, n: u32) -> RunModule {
    RunModule {
        args: format!("{{\"x\": {n}}}").into_bytes(),
        ..spec.clone()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a call printed on its first line, `name=value` fields apart.
fn seen(run: &ModuleRun) -> Vec<(String, String)> {
    let out = text(&run.stdout);
    let line = out.lines().next().unwrap_or_default();
    assert!(!line.is_empty(), "{out}\n{}", text(&run.stderr));
    line.split('|')
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap_or((f, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn field(seen: &[(String, String)], name: &str) -> String {
    seen.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {seen:?}"))
}

/// Reports what it finds, then changes all of it.
const MEDDLER: &str = r#"
import atexit, gc, json, os, resource, signal, socket, sys, time, urllib.request
from ansible.module_utils._internal._ansiballz import _loader
umask = os.umask(0o077)
print('|'.join('%s=%s' % kv for kv in [
    ('pid', os.getpid()),
    ('cwd', os.getcwd()),
    ('env', os.environ.get('LEAK')),
    ('task_env', os.environ.get('TURBO_TEST')),
    ('umask', umask),
    ('usr1_default', signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL),
    ('stdlib_attr', hasattr(json, 'left')),
    ('own_global', getattr(_loader, 'LEFT', None)),
    ('sys_path', sys.path[-1] == '/leak'),
    ('argv', sys.argv),
    ('excepthook', sys.excepthook is sys.__excepthook__),
    ('gc', gc.isenabled()),
    ('socket_timeout', socket.getdefaulttimeout()),
    ('open_files', resource.getrlimit(resource.RLIMIT_NOFILE)[0]),
    ('tz', time.tzname),
    ('opener', urllib.request._opener is None),
    ('x', json.loads(_loader.ARGS)['x']),
]))
sys.stdout.flush()
os.system('echo from-a-shell')
os.chdir('/')
os.environ['LEAK'] = '1'
signal.signal(signal.SIGUSR1, lambda *a: None)
json.left = True
_loader.LEFT = 1
sys.path.append('/leak')
sys.excepthook = None
gc.disable()
socket.setdefaulttimeout(3)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
os.environ['TZ'] = 'NZST-12'
time.tzset()
urllib.request.install_opener(urllib.request.build_opener())
atexit.register(print, 'atexit ran')
"#;

#[test]
fn a_loops_calls_share_one_worker_and_each_finds_it_as_the_first_did() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let spec = request(payload(MEDDLER, 20), None);
    let runs = batch(&mut a, (0..4).map(|n| with_x(&spec, n)).collect());
    let first = seen(&runs[0]);
    let expected = [
        ("cwd", home.path().to_str().unwrap()),
        ("env", "None"),
        ("task_env", "yes"),
        ("usr1_default", "True"),
        ("stdlib_attr", "False"),
        ("own_global", "None"),
        ("sys_path", "False"),
        ("excepthook", "True"),
        ("gc", "True"),
        ("socket_timeout", "None"),
        ("opener", "True"),
    ];
    for (name, value) in expected {
        assert_eq!(field(&first, name), value, "{name}");
    }
    for (n, run) in runs.iter().enumerate() {
        assert_eq!(run.rc, 0, "{}", text(&run.stderr));
        let got = seen(run);
        assert_eq!(field(&got, "x"), n.to_string());
        // The first call may have imported what the first worker lacked (json's own
        // modules): a second worker then runs the rest.
        if n >= 2 {
            assert_eq!(
                field(&got, "pid"),
                field(&seen(&runs[1]), "pid"),
                "one worker"
            );
        }
        let rest = |s: Vec<(String, String)>| -> Vec<(String, String)> {
            s.into_iter()
                .filter(|(k, _)| k != "pid" && k != "x")
                .collect()
        };
        assert_eq!(
            rest(got),
            rest(first.clone()),
            "call {n} found what an earlier call left"
        );
        // Each call's output is its own: its line, its shell's, its atexit's.
        assert_eq!(
            text(&run.stdout).lines().skip(1).collect::<Vec<_>>(),
            ["from-a-shell", "atexit ran"],
            "call {n}"
        );
    }
}

#[test]
fn a_call_that_ends_its_worker_or_overstays_fails_alone() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let module = "import json, os, sys, time\n\
                  from ansible.module_utils._internal._ansiballz import _loader\n\
                  x = json.loads(_loader.ARGS)['x']\n\
                  print('call', x, os.getpid(), flush=True)\n\
                  if x == 1: os._exit(7)\n\
                  if x == 2: raise ValueError('boom')\n\
                  if x == 3: time.sleep(30)\n\
                  if x == 4: sys.exit(3)\n\
                  if x == 5: os.kill(os.getpid(), 11)\n";
    let spec = request(payload(module, 21), None);
    let mut calls: Vec<RunModule> = (0..7).map(|n| with_x(&spec, n)).collect();
    calls[3].timeout_secs = Some(1);
    // Once to import what a traceback or an exit needs the first time (a call that
    // imports something new retires its worker), then for the workers' sake.
    batch(&mut a, vec![with_x(&spec, 2), with_x(&spec, 4)]);
    let started = Instant::now();
    let runs = batch(&mut a, calls);
    assert!(started.elapsed() < Duration::from_secs(10));
    let rcs: Vec<i32> = runs.iter().map(|r| r.rc).collect();
    assert_eq!(rcs[..3], [0, 7, 1]);
    assert!(runs[3].timed_out);
    assert_eq!(rcs[4..], [3, -11, 0]);
    for (n, run) in runs.iter().enumerate() {
        assert!(
            text(&run.stdout).starts_with(&format!("call {n} ")),
            "call {n}: {}",
            text(&run.stdout)
        );
    }
    assert!(text(&runs[2].stderr).contains("ValueError: boom"));
    let pid = |n: usize| {
        text(&runs[n].stdout)
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    // A worker goes on after a call that raised or called sys.exit.
    assert_eq!(pid(2), pid(3));
    assert_eq!(pid(4), pid(5));
    assert_ne!(pid(5), pid(6));
    // And the runner serves the next request.
    let again = batch(&mut a, vec![with_x(&spec, 0)]);
    assert_eq!(again[0].rc, 0);
}

#[test]
fn a_call_that_leaves_a_thread_or_imports_something_new_gets_the_next_call_a_new_worker() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let module = "import json, os, sys, threading, time\n\
                  from ansible.module_utils._internal._ansiballz import _loader\n\
                  x = json.loads(_loader.ARGS)['x']\n\
                  print(os.getpid(), 'colorsys' in sys.modules)\n\
                  if x == 2: threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n\
                  if x == 4: import colorsys\n";
    let spec = request(payload(module, 22), None);
    // The first call imports what the runner had not imported yet: the second worker
    // starts with it.
    let runs = batch(&mut a, (0..7).map(|n| with_x(&spec, n)).collect());
    let out: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            assert_eq!(r.rc, 0, "{}", text(&r.stderr));
            text(&r.stdout)
                .split_whitespace()
                .map(String::from)
                .collect()
        })
        .collect();
    assert_eq!(out[1][0], out[2][0]);
    assert_ne!(out[2][0], out[3][0], "the thread's worker retired");
    assert_eq!(out[3][0], out[4][0]);
    assert_ne!(out[4][0], out[5][0], "the importer's worker retired");
    assert_eq!(out[5][0], out[6][0]);
    // What the call imported from the standard library, the runner imported for the
    // next worker.
    assert_eq!(out[4][1], "False");
    assert_eq!(out[5][1], "True");
}

#[test]
fn a_call_runs_once_when_its_worker_retired_while_the_runner_sent_it_more() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    // (The first call of a payload retires its worker: it imports what the runner had
    // not.) The second call's large output keeps the runner busy while the worker runs
    // the third, which retires the worker (a new import) and ends it: the runner's next
    // call for it finds its socket closed. The third's answer still counts, and the calls
    // sent after it, which the worker never started, go to the next worker: none runs
    // twice.
    let module = "import json, sys\n\
                  from ansible.module_utils._internal._ansiballz import _loader\n\
                  x = json.loads(_loader.ARGS)['x']\n\
                  with open('ran', 'a') as f:\n    f.write('%d\\n' % x)\n\
                  if x == 1: sys.stdout.write('.' * (16 << 20) + '\\n')\n\
                  if x == 2: import colorsys\n\
                  print(x)\n";
    let spec = request(payload(module, 37), None);
    let runs = batch(&mut a, (0..24).map(|n| with_x(&spec, n)).collect());
    for (n, run) in runs.iter().enumerate() {
        assert_eq!(run.rc, 0, "{}", text(&run.stderr));
        let out = text(&run.stdout);
        assert_eq!(out.lines().last(), Some(n.to_string().as_str()));
        assert_eq!(out.lines().count(), if n == 1 { 2 } else { 1 }, "call {n}");
    }
    let ran = std::fs::read_to_string(home.path().join("ran")).unwrap();
    let expected: String = (0..24).map(|n| format!("{n}\n")).collect();
    assert_eq!(ran, expected);
}

#[test]
fn a_module_known_to_keep_process_state_gets_a_worker_per_call() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let module = "import os\nprint(os.getpid())\n";
    let mut spec = request(payload_named("dnf", module, 23), None);
    spec.style = turbo_proto::ModuleStyle::NewStyle {
        fqn: "ansible.legacy.dnf".into(),
        profile: "legacy".into(),
    };
    let runs = batch(&mut a, vec![spec.clone(), spec]);
    assert_eq!(runs[0].rc, 0, "{}", text(&runs[0].stderr));
    assert_ne!(runs[0].stdout, runs[1].stdout);
}

#[test]
fn separate_requests_of_one_module_share_its_worker_which_ends_with_the_runner() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let module = "import os\nprint(os.getpid())\n";
    let first = request(payload(module, 24), None);
    let other = request(payload(module, 25), None);
    let pid = |run: ModuleRun| text(&run.stdout).trim().to_string();
    // The first call of a payload may import what its runner lacked: its worker retires.
    batch(&mut a, vec![first.clone()]);
    batch(&mut a, vec![other.clone()]);
    let one = pid(batch(&mut a, vec![first.clone()]).remove(0));
    let between = pid(batch(&mut a, vec![other]).remove(0));
    let again = pid(batch(&mut a, vec![first]).remove(0));
    assert_eq!(one, again, "the module's worker waited for its next call");
    assert_ne!(one, between);
    a.runners.clear();
    for worker in [one, between] {
        let stat = format!("/proc/{worker}/stat");
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z "))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            std::fs::read_to_string(&stat).map_or(true, |s| s.contains(") Z ")),
            "worker {worker} outlived its runner"
        );
    }
}

#[test]
fn a_payloads_compiled_code_is_kept_in_one_file_beside_it() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let spec = request(payload("print('{}')\n", 26), None);
    assert_eq!(batch(&mut a, vec![spec.clone()])[0].rc, 0);
    a.runners.clear();
    let dir = home.join(".cache/turbo-play/modules").join("1a".repeat(32));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("__turbo_code__.")),
        "{names:?}"
    );
    let mut bytecode = Vec::new();
    let mut walk = vec![dir];
    while let Some(d) = walk.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk.push(path.clone());
            }
            if path.file_name().is_some_and(|n| n == "__pycache__") {
                bytecode.push(path);
            }
        }
    }
    assert_eq!(bytecode, Vec::<std::path::PathBuf>::new());
    // A new runner reads it and runs as before.
    let mut b = agent(home.path());
    assert_eq!(batch(&mut b, vec![spec])[0].stdout, b"{}\n");
}

#[test]
fn a_worker_imports_what_its_module_took_from_third_party_packages_before_its_first_call() {
    if !python() {
        return;
    }
    let has_yaml = std::process::Command::new(PYTHON)
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_yaml {
        eprintln!("skipped: no PyYAML for {PYTHON} to stand for a third-party package");
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    let module = "import os, sys\n\
                  imported = 'yaml' in sys.modules\n\
                  import yaml\n\
                  print(os.getpid(), imported, hasattr(yaml, 'left'))\n\
                  yaml.left = 1\n";
    let spec = request(payload(module, 27), None);
    let runs = batch(&mut a, (0..4).map(|n| with_x(&spec, n)).collect());
    let out: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            assert_eq!(r.rc, 0, "{}", text(&r.stderr));
            text(&r.stdout)
                .split_whitespace()
                .map(String::from)
                .collect()
        })
        .collect();
    // The first call imported it (its worker retired); the next worker imported it
    // first, and keeps running the calls, each finding the package as imported.
    assert_eq!(out[0][1], "False");
    assert_ne!(out[0][0], out[1][0]);
    for call in &out[1..] {
        assert_eq!(call[0], out[1][0], "one worker: {out:?}");
        assert_eq!(call[1..], ["True", "False"]);
    }
}

#[test]
fn what_a_call_registers_with_atexit_runs_when_the_call_ends_and_only_then() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    // A temp directory made as AnsibleModule makes its own, a finalizer as tempfile's
    // objects use: both must work in every call, not only in the first.
    let module = "import atexit, os, shutil, sys, tempfile, weakref\n\
                  d = tempfile.mkdtemp()\n\
                  atexit.register(shutil.rmtree, d)\n\
                  class Box: pass\n\
                  box = Box()\n\
                  done = []\n\
                  weakref.finalize(box, done.append, 1)\n\
                  del box\n\
                  print(d, bool(done), os.getpid())\n";
    let spec = request(payload(module, 28), None);
    let runs = batch(&mut a, (0..4).map(|n| with_x(&spec, n)).collect());
    for run in &runs {
        assert_eq!(run.rc, 0, "{}", text(&run.stderr));
        let out = text(&run.stdout);
        let words: Vec<&str> = out.split_whitespace().collect();
        assert!(
            !Path::new(words[0]).exists(),
            "{} outlived its call",
            words[0]
        );
        assert_eq!(words[1], "True", "the finalizer ran: {out}");
    }
    let pid = |n: usize| {
        text(&runs[n].stdout)
            .split_whitespace()
            .nth(2)
            .map(String::from)
    };
    assert_eq!(pid(2), pid(3));
}

#[test]
fn module_utils_globals_a_call_rebinds_or_sets_are_put_back_for_the_next_call() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    let mut a = agent(home.path());
    // Imported by the runner up front (a payload with `basic`): `counter` rebinds its
    // global from inside (`global`), `namespace` through `globals()`, and `plain`'s is
    // set from outside; every call must find all three as the first did, in one worker.
    let module = "import os\n\
                  from ansible.module_utils import counter, namespace, plain\n\
                  print(counter.bump(), namespace.mark(), plain.STATE, os.getpid())\n\
                  plain.STATE = 'dirty'\n";
    let mut payload = payload(module, 29);
    let extra = [
        ("ansible/module_utils/basic.py", ""),
        (
            "ansible/module_utils/counter.py",
            "COUNT = 0\ndef bump():\n    global COUNT\n    COUNT += 1\n    return COUNT\n",
        ),
        (
            "ansible/module_utils/namespace.py",
            "X = 'clean'\ndef mark():\n    before = X\n    globals()['X'] = 'dirty'\n    return before\n",
        ),
        ("ansible/module_utils/plain.py", "STATE = 'clean'\n"),
    ];
    let files = payload.files.as_mut().unwrap();
    for (path, data) in extra {
        files.push(payload_file(path, data));
    }
    let spec = request(payload, None);
    let runs = batch(&mut a, (0..4).map(|n| with_x(&spec, n)).collect());
    let mut pids = Vec::new();
    for run in &runs {
        assert_eq!(run.rc, 0, "{}", text(&run.stderr));
        let out = text(&run.stdout);
        let words: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(words[..3], ["1", "clean", "clean"], "{out}");
        pids.push(words[3].to_string());
    }
    assert_eq!(
        pids[1..],
        [pids[1].clone(), pids[1].clone(), pids[1].clone()]
    );
}

#[test]
fn the_runner_compiles_itself_once_and_imports_nothing_from_the_home() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    // The runner starts in the home: a `json.py` there must not stand in for the
    // standard library's (the runner and ansible's module_utils import json).
    std::fs::write(
        home.join("json.py"),
        "raise SystemExit('the home json.py')\n",
    )
    .unwrap();
    let spec = request(payload("import json\nprint(json.dumps({}))\n", 30), None);
    let mut a = agent(home.path());
    assert_eq!(batch(&mut a, vec![spec.clone()])[0].stdout, b"{}\n");
    a.runners.clear();
    let cache = home.join(".cache/turbo-play");
    let compiled: Vec<std::path::PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("runner-"))
        })
        .collect();
    assert_eq!(compiled.len(), 1, "{compiled:?}");
    // A damaged copy is compiled again and replaced.
    std::fs::write(&compiled[0], b"not code").unwrap();
    let mut b = agent(home.path());
    assert_eq!(batch(&mut b, vec![spec])[0].stdout, b"{}\n");
    b.runners.clear();
    assert_ne!(std::fs::read(&compiled[0]).unwrap(), b"not code");
}

#[test]
fn a_new_payload_compiled_on_two_cores_runs_as_one_compiled_alone() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    // Enough files for the compiling helper, one of them never imported and broken: the
    // module runs, the broken file is left to whoever imports it.
    let module = "from ansible.module_utils import u0, u1, u2, u3, u4, u5\n\
                  print(u0.N + u1.N + u2.N + u3.N + u4.N + u5.N)\n";
    let mut payload = payload(module, 31);
    let files = payload.files.as_mut().unwrap();
    files.push(payload_file(
        "ansible/module_utils/broken.py",
        "def broken(:\n",
    ));
    for n in 0..6 {
        files.push(payload_file(
            &format!("ansible/module_utils/u{n}.py"),
            &format!("N = {n}\n"),
        ));
    }
    let spec = request(payload, None);
    let mut a = agent(home.path());
    let runs = batch(&mut a, (0..3).map(|n| with_x(&spec, n)).collect());
    for run in &runs {
        assert_eq!(run.rc, 0, "{}", text(&run.stderr));
        assert_eq!(run.stdout, b"15\n");
    }
    a.runners.clear();
    // The next run reads what was compiled and runs as before.
    let mut b = agent(home.path());
    assert_eq!(batch(&mut b, vec![spec])[0].stdout, b"15\n");
}

#[test]
fn what_the_interpreter_prints_on_its_own_stdout_is_not_taken_for_an_answer() {
    if !python() {
        return;
    }
    let home = TempDir::new();
    // A wrapper as `ansible_python_interpreter` (a profiler, a banner) writes on the
    // stdout it was given, before the runner starts and while it runs.
    let wrapper = home.join("python-wrapper");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\necho 'wrapper> starting'\n{PYTHON} \"$@\"\necho 'wrapper> done'\n"),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let spec = RunModule {
        interpreters: vec![wrapper.to_string_lossy().into_owned()],
        ..request(
            payload("import json\nprint(json.dumps({'ok': 1}))\n", 31),
            None,
        )
    };
    let mut a = agent(home.path());
    let runs = batch(&mut a, vec![spec.clone(), spec]);
    for run in &runs {
        assert_eq!(text(&run.stdout), "{\"ok\": 1}\n", "{}", text(&run.stderr));
        assert_eq!(run.rc, 0);
    }
}
