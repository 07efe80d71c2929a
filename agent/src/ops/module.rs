//! `Op::RunModule`: modules without a native planner, run on the target as Ansible runs
//! them. Their files live in the cache by digest (sent once, kept across runs); new-style
//! Python modules go to a warm runner (`module_runner.py`) started once per interpreter,
//! which forks a child per module; old-style, `WANT_JSON` and binary modules are started
//! here with an arguments file.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use turbo_proto::{
    ErrorKind, ModulePayload, ModuleRun, ModuleStyle, OpError, OpResult, PayloadFile, RunModule,
};

use super::{Agent, child, io_error, op_error};
use crate::input::Input;
use crate::md::hex;
use crate::sys;

const RUNNER: &str = include_str!("module_runner.py");

/// One warm interpreter: its pipes, and the child to reap when the session ends.
pub struct Runner {
    interpreter: String,
    child: Child,
    input: ChildStdin,
    output: ChildStdout,
}

impl Drop for Runner {
    fn drop(&mut self) {
        // TERM makes the runner stop the module it runs (its own process group) before it
        // exits; KILL, which would leave that module running, only if it does not.
        sys::signal_process(self.child.id(), sys::SIGTERM);
        let end = Instant::now() + 2 * child::GRACE;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run_module(agent: &mut Agent, spec: RunModule) -> Result<OpResult, OpError> {
    let Some(dir) = payload_dir(agent, &spec.payload)? else {
        return Ok(OpResult::NeedContent);
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
    // The request's deadline (the task's `timeout:`) answers `TimedOut`; the module's own
    // `timeout_secs` keeps its module-shaped answer.
    let by_request = agent.deadline.is_some();
    let started = Instant::now();
    let own = spec.timeout_secs.map(|s| started + Duration::from_secs(s));
    let deadline = match (agent.deadline, own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let run = match &spec.style {
        ModuleStyle::NewStyle { fqn, profile } => {
            run_warm(agent, &interpreter, &dir, fqn, profile, &spec, deadline)?
        }
        ModuleStyle::Old { path, .. }
        | ModuleStyle::WantJson { path, .. }
        | ModuleStyle::Binary { path } => {
            run_program(agent, &interpreter, &dir.join(path), &spec, deadline)?
        }
    };
    if run.timed_out && by_request {
        return Ok(OpResult::TimedOut {
            after_ms: started.elapsed().as_millis() as u64,
        });
    }
    Ok(OpResult::Module(ModuleRun {
        discovered: needs_python && spec.interpreters.len() > 1,
        interpreter,
        ..run
    }))
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

fn run_warm(
    agent: &mut Agent,
    interpreter: &str,
    dir: &Path,
    fqn: &str,
    profile: &str,
    spec: &RunModule,
    deadline: Option<Instant>,
) -> Result<ModuleRun, OpError> {
    // What is left of the deadline, in seconds: the runner stops the module at it.
    let timeout = deadline
        .map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            format!("{:.3}", left.as_secs_f64())
        })
        .unwrap_or_default();
    let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let request = [
        dir.to_string_lossy().as_bytes(),
        fqn.as_bytes(),
        profile.as_bytes(),
        &spec.args,
        timeout.as_bytes(),
        env.join("\0").as_bytes(),
    ]
    .iter()
    .fold(Vec::new(), |mut out, field| {
        out.extend_from_slice(&(field.len() as u64).to_be_bytes());
        out.extend_from_slice(field);
        out
    });
    // A runner that died (a module that killed its parent group, an OOM kill) is
    // replaced once; a second failure is the task's.
    for attempt in 0..2 {
        let index = warm_runner(agent, interpreter)?;
        match exchange(&mut agent.runners[index], agent.input.as_mut(), &request) {
            Ok(Some(run)) => return Ok(run),
            Ok(None) => {
                // Cancelled: dropping the runner stops the module it runs.
                agent.runners.remove(index);
                return Err(op_error(ErrorKind::Io, "cancelled by the controller"));
            }
            Err(e) => {
                agent.runners.retain(|r| r.interpreter != interpreter);
                if attempt == 1 {
                    return Err(op_error(
                        ErrorKind::Io,
                        format!("the Python runner of {interpreter} ended: {e}"),
                    ));
                }
            }
        }
    }
    unreachable!("the second attempt returns")
}

/// The index of the warm runner for `interpreter`, started when there is none.
fn warm_runner(agent: &mut Agent, interpreter: &str) -> Result<usize, OpError> {
    if let Some(i) = agent
        .runners
        .iter()
        .position(|r| r.interpreter == interpreter)
    {
        return Ok(i);
    }
    // The runner moves its pipes to fds 3 and 4 and points 0 and 1 at /dev/null, so a
    // module's stray read or print never touches the requests.
    let bootstrap = format!(
        "import os\nos.dup2(0, 3)\nos.dup2(1, 4)\nn = os.open(os.devnull, os.O_RDWR)\n\
         os.dup2(n, 0)\nos.dup2(n, 1)\nos.close(n)\n{RUNNER}"
    );
    let mut child = Command::new(interpreter)
        .arg("-c")
        .arg(bootstrap)
        .current_dir(&agent.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            op_error(
                ErrorKind::NotFound,
                format!("cannot start {interpreter}: {e}"),
            )
        })?;
    let input = child.stdin.take().expect("piped stdin");
    let output = child.stdout.take().expect("piped stdout");
    agent.runners.push(Runner {
        interpreter: interpreter.to_string(),
        child,
        input,
        output,
    });
    Ok(agent.runners.len() - 1)
}

/// Sends one request to the runner and reads its answer; `None` when the agent must
/// stop first (the protocol input is polled while the module runs).
fn exchange(
    runner: &mut Runner,
    mut input: Option<&mut Input>,
    request: &[u8],
) -> std::io::Result<Option<ModuleRun>> {
    runner.input.write_all(request)?;
    runner.input.flush()?;
    loop {
        let stopping = input
            .as_ref()
            .map_or_else(sys::stop_requested, |i| i.stopping());
        if stopping {
            return Ok(None);
        }
        let mut fds = vec![sys::PollFd::readable(runner.output.as_raw_fd())];
        fds.extend(input.as_ref().map(|i| sys::PollFd::readable(i.fd())));
        sys::wait_readable(&mut fds, 500)?;
        if fds.len() > 1
            && fds[1].ready()
            && let Some(input) = input.as_mut()
        {
            input.absorb();
        }
        if fds[0].ready() {
            break;
        }
    }
    let mut field = || -> std::io::Result<Vec<u8>> {
        let mut len = [0u8; 8];
        runner.output.read_exact(&mut len)?;
        let mut data = vec![0u8; u64::from_be_bytes(len) as usize];
        runner.output.read_exact(&mut data)?;
        Ok(data)
    };
    let rc = String::from_utf8_lossy(&field()?).parse().unwrap_or(1);
    let timed_out = !field()?.is_empty();
    let stdout = field()?;
    let stderr = field()?;
    Ok(Some(ModuleRun {
        interpreter: String::new(),
        discovered: false,
        rc,
        stdout,
        stderr,
        timed_out,
    }))
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
mod tests {
    use super::super::testutil::{TempDir, agent};
    use super::*;

    const PYTHON: &str = "/usr/bin/python3";

    /// A payload with a stand-in for ansible-core's loader: it runs the module as
    /// `__main__` with the arguments in `ARGS`, as the real one does.
    fn payload(module: &str, sha: u8) -> ModulePayload {
        let file = |path: &str, data: &str| PayloadFile {
            path: path.into(),
            data: data.as_bytes().to_vec(),
            executable: false,
        };
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
                file("ansible/legacy/m.py", module),
            ]),
        }
    }

    fn request(payload: ModulePayload, timeout_secs: Option<u64>) -> RunModule {
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
}
