//! `Op::RunModule`: modules without a native planner, run on the target as Ansible runs
//! them. Their files live in the cache by digest (sent once, kept across runs); new-style
//! Python modules go to a warm runner (`warm.rs`, `module_runner.py`) started once per
//! interpreter, whose workers run each module's calls in-process; old-style, `WANT_JSON`
//! and binary modules are started here with an arguments file.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use turbo_proto::{
    ErrorKind, ModulePayload, ModuleRun, ModuleStyle, OpError, OpResult, PayloadFile, RunModule,
};

use super::warm::{self, Answer};
use super::{Agent, child, io_error, op_error};
use crate::md::hex;
use crate::sys;

pub fn run_module(agent: &mut Agent, spec: RunModule) -> Result<OpResult, OpError> {
    run_modules(agent, vec![spec])
        .pop()
        .expect("one result per module")
}

/// A module ready to run: its payload's directory and its interpreter.
struct Ready {
    dir: PathBuf,
    interpreter: String,
    needs_python: bool,
}

/// Consecutive `RunModule` ops of a request (a loop's items), in order: the new-style
/// ones for one interpreter go to its warm runner together; the others run one by one.
pub fn run_modules(agent: &mut Agent, specs: Vec<RunModule>) -> Vec<Result<OpResult, OpError>> {
    let mut results: Vec<Option<Result<OpResult, OpError>>> = Vec::new();
    // The new-style modules waiting for the runner: (index, ready, spec).
    let mut pending: Vec<(usize, Ready)> = Vec::new();
    let mut started_early = false;
    for (index, spec) in specs.iter().enumerate() {
        results.push(None);
        let ready = match prepare(agent, spec) {
            Ok(Some(ready)) => ready,
            Ok(None) => {
                // The payload comes back with the files: the runner starts meanwhile.
                if !started_early
                    && let ModuleStyle::NewStyle { .. } = spec.style
                    && let Some(interpreter) = find_interpreter(&spec.interpreters)
                {
                    warm::start_early(agent, &interpreter);
                    started_early = true;
                }
                results[index] = Some(Ok(OpResult::NeedContent));
                continue;
            }
            Err(e) => {
                results[index] = Some(Err(e));
                continue;
            }
        };
        if let ModuleStyle::NewStyle { .. } = spec.style {
            if pending
                .first()
                .is_some_and(|(_, first)| first.interpreter != ready.interpreter)
            {
                flush(agent, &specs, &mut pending, &mut results);
            }
            pending.push((index, ready));
        } else {
            flush(agent, &specs, &mut pending, &mut results);
            results[index] = Some(run_program_op(agent, spec, &ready));
        }
    }
    flush(agent, &specs, &mut pending, &mut results);
    results
        .into_iter()
        .map(|r| r.expect("every module answered"))
        .collect()
}

/// The payload's directory (`None`: not in the cache) and the interpreter of `spec`.
fn prepare(agent: &mut Agent, spec: &RunModule) -> Result<Option<Ready>, OpError> {
    let Some(dir) = payload_dir(agent, &spec.payload)? else {
        return Ok(None);
    };
    // Ansible makes its remote temp dir under `remote_tmp` before a module runs; modules
    // that make their own temp files there expect it (and warn when they must create it).
    let remote_tmp = agent.expand("~/.ansible/tmp");
    if !remote_tmp.is_dir() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&remote_tmp);
    }
    let needs_python = match &spec.style {
        ModuleStyle::NewStyle { .. } => true,
        ModuleStyle::Old { python, .. } | ModuleStyle::WantJson { python, .. } => *python,
        ModuleStyle::Binary { .. } => false,
    };
    let interpreter = if needs_python {
        find_interpreter(&spec.interpreters).ok_or_else(|| {
            op_error(
                ErrorKind::NotFound,
                format!(
                    "No python interpreters found on the target (tried {}); install python3 \
                     there or set ansible_python_interpreter",
                    spec.interpreters.join(", ")
                ),
            )
        })?
    } else {
        String::new()
    };
    Ok(Some(Ready {
        dir,
        interpreter,
        needs_python,
    }))
}

/// How long a module may run: the request's `timeout_ms` (answered `TimedOut`) and the
/// module's own `timeout_secs` (which keeps its module-shaped answer), the sooner.
fn time_limit(agent: &Agent, spec: &RunModule) -> Option<Duration> {
    let own = spec.timeout_secs.map(Duration::from_secs);
    match (agent.op_timeout(), own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn answered(
    agent: &Agent,
    spec: &RunModule,
    ready: &Ready,
    run: ModuleRun,
    ran_ms: u64,
) -> OpResult {
    if run.timed_out && agent.op_timeout().is_some() {
        return OpResult::TimedOut { after_ms: ran_ms };
    }
    OpResult::Module(ModuleRun {
        discovered: ready.needs_python && spec.interpreters.len() > 1,
        interpreter: ready.interpreter.clone(),
        ..run
    })
}

/// Runs the new-style modules waiting in `pending` in their warm runner.
fn flush(
    agent: &mut Agent,
    specs: &[RunModule],
    pending: &mut Vec<(usize, Ready)>,
    results: &mut [Option<Result<OpResult, OpError>>],
) {
    let Some((_, first)) = pending.first() else {
        return;
    };
    let interpreter = first.interpreter.clone();
    let items: Vec<warm::Item> = pending
        .iter()
        .map(|(index, ready)| {
            let spec = &specs[*index];
            let ModuleStyle::NewStyle { fqn, profile } = &spec.style else {
                unreachable!("only new-style modules wait for the runner")
            };
            warm::Item {
                dir: &ready.dir,
                fqn,
                profile,
                args: &spec.args,
                env: &spec.env,
                timeout: time_limit(agent, spec),
            }
        })
        .collect();
    let answers = warm::run_warm(agent, &interpreter, &items);
    drop(items);
    for ((index, ready), answer) in pending.drain(..).zip(answers) {
        let spec = &specs[index];
        results[index] = Some(match answer {
            Answer::Ran { run, ran_ms } => {
                let limit = time_limit(agent, spec).map_or(0, |t| t.as_millis() as u64);
                Ok(answered(agent, spec, &ready, run, ran_ms.unwrap_or(limit)))
            }
            Answer::Failed(e) => Err(e),
            Answer::Skipped => Ok(OpResult::ChainSkipped),
        });
    }
}

fn run_program_op(agent: &mut Agent, spec: &RunModule, ready: &Ready) -> Result<OpResult, OpError> {
    let started = Instant::now();
    let deadline = time_limit(agent, spec).map(|t| started + t);
    let (ModuleStyle::Old { path, .. }
    | ModuleStyle::WantJson { path, .. }
    | ModuleStyle::Binary { path }) = &spec.style
    else {
        unreachable!("new-style modules go to the runner")
    };
    let program = ready.dir.join(path);
    let run = run_program(agent, &ready.interpreter, &program, spec, deadline)?;
    let ran_ms = started.elapsed().as_millis() as u64;
    Ok(answered(agent, spec, ready, run, ran_ms))
}

/// The payload's directory in the cache, written from `payload.files` when it is not
/// there yet; `None` when it is missing and no files came with the request.
pub(crate) fn payload_dir(
    agent: &mut Agent,
    payload: &ModulePayload,
) -> Result<Option<PathBuf>, OpError> {
    let root = agent.expand("~/.cache/turbo-play/modules");
    let dir = root.join(hex(&payload.sha256));
    if dir.is_dir() {
        return Ok(Some(dir));
    }
    let Some(files) = &payload.files else {
        return Ok(None);
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|e| io_error(e, &root))?;
    // Written aside and renamed into place, so a half-written payload is never used.
    let staging = agent.temp_path(&dir);
    let _ = std::fs::remove_dir_all(&staging);
    write_files(&staging, files)?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => {}
        // Another agent (another become user's session shares no cache, but two runs may)
        // put it there first: theirs is the same bytes.
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&staging);
        }
        Err(e) => return Err(io_error(e, &dir)),
    }
    Ok(Some(dir))
}

fn write_files(dir: &Path, files: &[PayloadFile]) -> Result<(), OpError> {
    for file in files {
        let relative = Path::new(&file.path);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(op_error(
                ErrorKind::InvalidArgument,
                format!("payload path {} leaves its directory", file.path),
            ));
        }
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| io_error(e, parent))?;
        }
        std::fs::write(&path, &file.data).map_err(|e| io_error(e, &path))?;
        let mode = if file.executable { 0o700 } else { 0o600 };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_error(e, &path))?;
    }
    Ok(())
}

/// The first of Ansible's candidates that exists: a bare name on PATH (as `command -v`),
/// a path when it is executable.
fn find_interpreter(candidates: &[String]) -> Option<String> {
    let path_var = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    candidates.iter().find_map(|candidate| {
        let runnable = |p: &Path| p.is_file() && sys::access_rwx(p).2;
        if candidate.contains('/') {
            runnable(Path::new(candidate)).then(|| candidate.clone())
        } else {
            path_var
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(candidate))
                .find(|p| runnable(p))
                .map(|p| p.to_string_lossy().into_owned())
        }
    })
}

/// An old-style, `WANT_JSON` or binary module: the program given the path of a file
/// holding its arguments, as Ansible starts them.
fn run_program(
    agent: &mut Agent,
    interpreter: &str,
    program: &Path,
    spec: &RunModule,
    deadline: Option<Instant>,
) -> Result<ModuleRun, OpError> {
    let staging = agent.staging_dir()?;
    let args_file = agent.temp_path(&staging.join("args"));
    std::fs::write(&args_file, &spec.args).map_err(|e| io_error(e, &args_file))?;
    let mut command = if interpreter.is_empty() {
        Command::new(program)
    } else {
        let mut c = Command::new(interpreter);
        c.arg(program);
        c
    };
    command
        .arg(&args_file)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&agent.home)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let result = capture(agent, command, deadline, program);
    let _ = std::fs::remove_file(&args_file);
    result
}

fn capture(
    agent: &mut Agent,
    mut command: Command,
    deadline: Option<Instant>,
    program: &Path,
) -> Result<ModuleRun, OpError> {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ok(ModuleRun {
                interpreter: String::new(),
                discovered: false,
                rc: 127,
                stdout: Vec::new(),
                stderr: format!("{e}: {}", program.display()).into_bytes(),
                timed_out: false,
            });
        }
    };
    let request_deadline = std::mem::replace(&mut agent.deadline, deadline);
    let finished = child::supervise(agent, &mut child, Instant::now());
    agent.deadline = request_deadline;
    let finished =
        finished.map_err(|e| op_error(ErrorKind::Io, format!("waiting for module: {e}")))?;
    let (rc, timed_out) = match finished.ending {
        child::Ending::Exited(status) => (
            status
                .code()
                .unwrap_or_else(|| -status.signal().unwrap_or(0)),
            false,
        ),
        child::Ending::TimedOut { .. } => (-(sys::SIGKILL), true),
        child::Ending::Cancelled => {
            return Err(op_error(ErrorKind::Io, "cancelled by the controller"));
        }
    };
    Ok(ModuleRun {
        interpreter: String::new(),
        discovered: false,
        rc,
        stdout: finished.stdout,
        stderr: finished.stderr,
        timed_out,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testutil::{TempDir, agent};
    use super::*;
    use turbo_proto::Op;

    pub(crate) const PYTHON: &str = "/usr/bin/python3";

    /// A payload with a stand-in for ansible-core's loader: it runs the module as
    /// `__main__` with the arguments in `ARGS`, as the real one does.
    pub(crate) fn payload(module: &str, sha: u8) -> ModulePayload {
        payload_named("m", module, sha)
    }

    /// A payload's file, not executable.
    pub(crate) fn payload_file(path: &str, data: &str) -> PayloadFile {
        PayloadFile {
            path: path.into(),
            data: data.as_bytes().to_vec(),
            executable: false,
        }
    }

    /// A payload whose module is `ansible.legacy.<name>`.
    pub(crate) fn payload_named(name: &str, module: &str, sha: u8) -> ModulePayload {
        let file = payload_file;
        ModulePayload {
            sha256: [sha; 32],
            files: Some(vec![
                file("ansible/__init__.py", ""),
                file("ansible/module_utils/__init__.py", ""),
                file("ansible/module_utils/_internal/__init__.py", ""),
                file("ansible/module_utils/_internal/_ansiballz/__init__.py", ""),
                file(
                    "ansible/module_utils/_internal/_ansiballz/_loader.py",
                    "import runpy\nARGS = None\n\
                     def run_module(json_params, profile, module_fqn, modlib_path, extensions):\n    \
                     global ARGS\n    ARGS = json_params\n    \
                     runpy.run_module(module_fqn, run_name='__main__', alter_sys=True)\n",
                ),
                file("ansible/legacy/__init__.py", ""),
                file(&format!("ansible/legacy/{name}.py"), module),
            ]),
        }
    }

    pub(crate) fn request(payload: ModulePayload, timeout_secs: Option<u64>) -> RunModule {
        RunModule {
            interpreters: vec!["/nonexistent/python".into(), PYTHON.into()],
            payload,
            style: ModuleStyle::NewStyle {
                fqn: "ansible.legacy.m".into(),
                profile: "legacy".into(),
            },
            args: b"{\"x\": 1}".to_vec(),
            timeout_secs,
            env: vec![("TURBO_TEST".into(), "yes".into())],
        }
    }

    fn run(a: &mut Agent, spec: RunModule) -> ModuleRun {
        match run_module(a, spec).unwrap() {
            OpResult::Module(run) => run,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_module_runs_in_a_warm_child_from_its_cached_payload() {
        if !Path::new(PYTHON).is_file() {
            eprintln!("skipped: no {PYTHON}");
            return;
        }
        let home = TempDir::new();
        let mut a = agent(home.path());
        let module = "import os, sys\nfrom ansible.module_utils._internal._ansiballz import _loader\n\
                      print('{\"args\": %s, \"env\": \"%s\"}' % (_loader.ARGS.decode(), os.environ['TURBO_TEST']))\n\
                      sys.exit(3)\n";
        let mut without_files = payload(module, 1);
        without_files.files = None;
        assert_eq!(
            run_module(&mut a, request(without_files.clone(), None)).unwrap(),
            OpResult::NeedContent
        );
        let first = run(&mut a, request(payload(module, 1), None));
        assert_eq!(first.interpreter, PYTHON);
        assert!(first.discovered);
        assert_eq!(first.rc, 3, "{}", String::from_utf8_lossy(&first.stderr));
        assert_eq!(
            String::from_utf8_lossy(&first.stdout),
            "{\"args\": {\"x\": 1}, \"env\": \"yes\"}\n"
        );
        // Cached now, and the same runner answers.
        let pid = a.runners[0].child.id();
        let again = run(&mut a, request(without_files, None));
        assert_eq!(again.stdout, first.stdout);
        assert_eq!(a.runners.len(), 1);
        assert_eq!(a.runners[0].child.id(), pid);
    }

    #[test]
    fn a_crash_or_a_hang_ends_only_that_module() {
        if !Path::new(PYTHON).is_file() {
            eprintln!("skipped: no {PYTHON}");
            return;
        }
        let home = TempDir::new();
        let mut a = agent(home.path());
        let crashed = run(
            &mut a,
            request(payload("raise ValueError('boom')\n", 2), None),
        );
        assert_eq!(crashed.rc, 1);
        assert!(String::from_utf8_lossy(&crashed.stderr).contains("ValueError: boom"));
        let started = Instant::now();
        let hung = run(
            &mut a,
            request(payload("import time\ntime.sleep(30)\n", 3), Some(1)),
        );
        assert!(hung.timed_out);
        assert!(started.elapsed() < Duration::from_secs(10));
        let fine = run(&mut a, request(payload("print('{}')\n", 4), None));
        assert_eq!((fine.rc, fine.stdout), (0, b"{}\n".to_vec()));
    }

    #[test]
    fn the_requests_deadline_stops_a_warm_module_and_answers_timed_out() {
        if !Path::new(PYTHON).is_file() {
            eprintln!("skipped: no {PYTHON}");
            return;
        }
        let home = TempDir::new();
        let mut a = agent(home.path());
        let pid_file = home.join("pid");
        let module = format!(
            "import os, time\nopen({:?}, 'w').write(str(os.getpid()))\ntime.sleep(30)\n",
            pid_file.display().to_string()
        );
        let started = Instant::now();
        let result = a.handle(turbo_proto::Request {
            id: 1,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: Some(1000),
            op: turbo_proto::Op::RunModule(request(payload(&module, 5), None)),
        });
        assert!(matches!(result, OpResult::TimedOut { .. }), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "the module still runs"
        );
        // The warm runner answers the next module as before.
        let fine = run(&mut a, request(payload("print('{}')\n", 6), None));
        assert_eq!(fine.rc, 0);
    }

    #[test]
    fn a_batchs_modules_go_to_one_runner_together() {
        if !Path::new(PYTHON).is_file() {
            eprintln!("skipped: no {PYTHON}");
            return;
        }
        let home = TempDir::new();
        let mut a = agent(home.path());
        // What a module leaves in its interpreter never reaches the next one; what it
        // imported from the standard library is there, imported by the warm runner for
        // the next worker (warm_tests.rs tests the workers themselves).
        let module = "import json, os, sys\n\
                      from ansible.module_utils._internal._ansiballz import _loader\n\
                      n = json.loads(_loader.ARGS)['x']\n\
                      seen = ['colorsys' in sys.modules, hasattr(json, 'left')]\n\
                      json.left = True\n\
                      import colorsys\n\
                      if n == 2: os._exit(7)\n\
                      if n == 3: os.kill(os.getppid(), 9)\n\
                      print(n, os.getpid(), *seen)\n";
        let item = |x: u32| {
            let mut spec = request(payload(module, 7), None);
            spec.args = format!("{{\"x\": {x}}}").into_bytes();
            Op::RunModule(spec)
        };
        let result = a.handle(turbo_proto::Request {
            id: 1,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: None,
            op: Op::Batch(vec![item(0), item(1), item(2), item(4)]),
        });
        let OpResult::Batch(results) = result else {
            panic!("{result:?}")
        };
        let runs: Vec<ModuleRun> = results
            .into_iter()
            .map(|r| match r {
                OpResult::Module(run) => run,
                other => panic!("{other:?}"),
            })
            .collect();
        let out = |i: usize| -> Vec<String> {
            let text = String::from_utf8_lossy(&runs[i].stdout).into_owned();
            assert!(
                !text.is_empty(),
                "{}",
                String::from_utf8_lossy(&runs[i].stderr)
            );
            text.split_whitespace().map(String::from).collect()
        };
        assert_eq!(
            [&out(0)[0], &out(0)[2], &out(0)[3]],
            ["0", "False", "False"]
        );
        assert_eq!([&out(1)[2], &out(1)[3]], ["True", "False"]);
        assert_ne!(out(0)[1], out(1)[1], "the importer's worker retired");
        assert_eq!(runs[2].rc, 7);
        assert_eq!(out(3)[0], "4");
        assert_eq!(a.runners.len(), 1);
        // A module that kills its runner fails alone, once sent again to a new one;
        // the batch goes on in a third runner.
        let pid = a.runners[0].child.id();
        let result = a.handle(turbo_proto::Request {
            id: 2,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: None,
            op: Op::Batch(vec![item(3), item(5)]),
        });
        let OpResult::Batch(results) = result else {
            panic!("{result:?}")
        };
        assert!(
            matches!(&results[0], OpResult::Error(e) if e.message.contains("runner")),
            "{:?}",
            results[0]
        );
        let OpResult::Module(last) = &results[1] else {
            panic!("{:?}", results[1])
        };
        assert!(String::from_utf8_lossy(&last.stdout).starts_with("5 "));
        assert_ne!(a.runners[0].child.id(), pid);
    }

    #[test]
    fn two_payloads_with_one_module_name_each_run_their_own() {
        if !Path::new(PYTHON).is_file() {
            eprintln!("skipped: no {PYTHON}");
            return;
        }
        let home = TempDir::new();
        let mut a = agent(home.path());
        // Two roles' library/ modules of one name: each payload runs its own file.
        let first = run(&mut a, request(payload("print('a')\n", 12), None));
        let second = run(&mut a, request(payload("print('b')\n", 13), None));
        let again = run(&mut a, request(payload("print('a')\n", 12), None));
        assert_eq!(
            [first.stdout, second.stdout, again.stdout],
            [b"a\n".to_vec(), b"b\n".to_vec(), b"a\n".to_vec()]
        );
    }
}
