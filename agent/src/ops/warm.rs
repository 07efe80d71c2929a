//! The warm Python runners of `Op::RunModule` (`module_runner.py`): one per interpreter
//! for the session, each with a forked worker per module that runs the module's calls one
//! after another in-process. A batch's new-style modules for one
//! interpreter (a loop's items) go to it as one request and come back one answer per
//! module, so a loop costs one exchange with the runner, not one per item.

use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use turbo_proto::{ErrorKind, ModuleRun, OpError};

use super::{Agent, child, op_error};
use crate::input::Input;
use crate::sys;

/// The runner's script: its protocol, payloads and workers, then the reset between a
/// worker's calls, then the call that starts it.
const RUNNER: &str = concat!(
    include_str!("module_runner.py"),
    "\n\n",
    include_str!("module_runner_reset.py"),
    "\n\nmain()\n"
);

/// One warm interpreter: its pipes, and the child to reap when the session ends.
pub struct Runner {
    interpreter: String,
    pub(super) child: Child,
    input: PipeWriter,
    output: PipeReader,
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

/// One module for the runner: where its payload is, what to run, and how long it may.
pub struct Item<'a> {
    pub dir: &'a std::path::Path,
    pub fqn: &'a str,
    pub profile: &'a str,
    pub args: &'a [u8],
    pub env: &'a [(String, String)],
    /// Counted from the module's start in the runner.
    pub timeout: Option<Duration>,
}

/// What became of one module of a request.
pub enum Answer {
    /// It ran; `ran_ms` is how long, when it was killed at its timeout.
    Ran {
        run: ModuleRun,
        ran_ms: Option<u64>,
    },
    Failed(OpError),
    /// The controller cancelled the request before it started.
    Skipped,
}

fn field(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    out.extend_from_slice(data);
}

fn encode(items: &[Item]) -> Vec<u8> {
    let mut out = Vec::new();
    field(&mut out, items.len().to_string().as_bytes());
    for item in items {
        let timeout = item
            .timeout
            .map(|t| format!("{:.3}", t.as_secs_f64()))
            .unwrap_or_default();
        let env: Vec<String> = item.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        field(&mut out, item.dir.to_string_lossy().as_bytes());
        field(&mut out, item.fqn.as_bytes());
        field(&mut out, item.profile.as_bytes());
        field(&mut out, item.args);
        field(&mut out, timeout.as_bytes());
        field(&mut out, env.join("\0").as_bytes());
    }
    out
}

/// Runs `items` in order in the warm runner of `interpreter`: one answer per item.
pub fn run_warm(agent: &mut Agent, interpreter: &str, items: &[Item]) -> Vec<Answer> {
    let mut answers: Vec<Answer> = Vec::with_capacity(items.len());
    // A runner that died (a module that killed its parent group, an OOM kill) is
    // replaced, and the module it ran sent again once; a second failure is its task's.
    let mut retried = None;
    while answers.len() < items.len() {
        let index = match warm_runner(agent, interpreter) {
            Ok(index) => index,
            Err(e) => {
                while answers.len() < items.len() {
                    answers.push(Answer::Failed(e.clone()));
                }
                break;
            }
        };
        let request = encode(&items[answers.len()..]);
        match exchange(
            &mut agent.runners[index],
            agent.input.as_mut(),
            &request,
            items.len(),
            &mut answers,
        ) {
            Ok(true) => {}
            Ok(false) => {
                // Cancelled: dropping the runner stops the module it runs.
                agent.runners.remove(index);
                answers.push(Answer::Failed(op_error(
                    ErrorKind::Io,
                    "cancelled by the controller",
                )));
                while answers.len() < items.len() {
                    answers.push(Answer::Skipped);
                }
            }
            Err(e) => {
                agent.runners.retain(|r| r.interpreter != interpreter);
                if retried == Some(answers.len()) {
                    answers.push(Answer::Failed(op_error(
                        ErrorKind::Io,
                        format!("the Python runner of {interpreter} ended: {e}"),
                    )));
                } else {
                    retried = Some(answers.len());
                }
            }
        }
    }
    answers
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
    let spawn_error = |e: std::io::Error| {
        op_error(
            ErrorKind::NotFound,
            format!("cannot start {interpreter}: {e}"),
        )
    };
    // The requests and answers go on pipes of their own at fds 3 and 4, never on stdin
    // and stdout: whatever the interpreter prints there (a wrapper script's banner,
    // `py-spy record`'s progress) cannot be taken for an answer.
    let (request_read, input) = std::io::pipe().map_err(spawn_error)?;
    let (output, answer_write) = std::io::pipe().map_err(spawn_error)?;
    let child_fds = [request_read.as_raw_fd(), answer_write.as_raw_fd()];
    let mut command = Command::new(interpreter);
    command
        .arg("-c")
        .arg(BOOTSTRAP)
        .arg(runner_code_path(agent))
        .arg(RUNNER)
        .current_dir(&agent.home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: place_child_fds makes only async-signal-safe calls on descriptors.
    unsafe {
        command.pre_exec(move || sys::place_child_fds(child_fds));
    }
    let child = command.spawn().map_err(spawn_error)?;
    // The child's ends close here, so that either side sees the other's exit as EOF.
    drop((request_read, answer_write));
    agent.runners.push(Runner {
        interpreter: interpreter.to_string(),
        child,
        input,
        output,
    });
    Ok(agent.runners.len() - 1)
}

/// Starts the warm runner of `interpreter` ahead of its first request (while the
/// controller sends a payload the agent lacked), so that the interpreter's start and its
/// standard-library imports overlap that round trip. A runner that cannot start fails
/// the request that needs it, not this.
pub fn start_early(agent: &mut Agent, interpreter: &str) {
    let _ = warm_runner(agent, interpreter);
}

/// Runs the runner (`sys.argv[2]`) from its code compiled once per interpreter version
/// and kept at `sys.argv[1]` + its cache tag: compiling it took a third of the runner's
/// start (its imports the rest). Its pipes are fds 3 and 4; 0 and 1 are /dev/null, so a
/// module's stray read or print never touches the requests.
const BOOTSTRAP: &str = "import os, sys
# `-c` puts the working directory (the home) first: nothing is imported from there.
sys.path[:] = [p for p in sys.path if p not in ('', '.')]


def _runner_code(prefix, source):
    import marshal, importlib.util
    path = '%s.%s' % (prefix, sys.implementation.cache_tag)
    head = importlib.util.MAGIC_NUMBER + b'turbo-play runner\\n'
    try:
        with open(path, 'rb') as f:
            data = f.read()
        if data.startswith(head):
            return marshal.loads(data[len(head):])
    except Exception:
        pass
    code = compile(source, '<turbo-play runner>', 'exec')
    staging = '%s.%d' % (path, os.getpid())
    try:
        with open(staging, 'wb') as f:
            f.write(head + marshal.dumps(code))
        os.replace(staging, path)
    except OSError:
        try:
            os.unlink(staging)
        except OSError:
            pass
    return code


_code = _runner_code(sys.argv[1], sys.argv[2])
del _runner_code, sys.argv[1:]
exec(_code)
";

/// Where the runner's compiled code is kept: beside the agent, named by the runner's
/// digest (the agent's own code, the same for every module).
fn runner_code_path(agent: &Agent) -> std::path::PathBuf {
    let digest = crate::sha256::digest(RUNNER.as_bytes());
    agent.expand(&format!(
        "~/.cache/turbo-play/runner-{}",
        crate::md::hex(&digest[..8])
    ))
}

/// Sends one request to the runner and reads its answers into `answers` until it holds
/// `total`; `false` when the agent must stop first (the protocol input is polled while
/// the modules run).
fn exchange(
    runner: &mut Runner,
    mut input: Option<&mut Input>,
    request: &[u8],
    total: usize,
    answers: &mut Vec<Answer>,
) -> std::io::Result<bool> {
    // The runner reads the whole request before it runs anything, so this write never
    // waits on answers nobody reads.
    runner.input.write_all(request)?;
    runner.input.flush()?;
    while answers.len() < total {
        loop {
            let stopping = input
                .as_ref()
                .map_or_else(sys::stop_requested, |i| i.stopping());
            if stopping {
                return Ok(false);
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
            let len = u64::from_be_bytes(len);
            // Read as it comes, not allocated from the length: a length that is not the
            // runner's (its pipe written by something else) ends in an error, not an
            // allocation the agent aborts on.
            let mut data = Vec::new();
            (&mut runner.output).take(len).read_to_end(&mut data)?;
            if data.len() as u64 != len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            Ok(data)
        };
        let rc = String::from_utf8_lossy(&field()?).parse().unwrap_or(1);
        let ran_ms = String::from_utf8_lossy(&field()?).parse().ok();
        let stdout = field()?;
        let stderr = field()?;
        answers.push(Answer::Ran {
            run: ModuleRun {
                interpreter: String::new(),
                discovered: false,
                rc,
                stdout,
                stderr,
                timed_out: ran_ms.is_some(),
            },
            ran_ms,
        });
    }
    Ok(true)
}

#[cfg(test)]
#[path = "warm_tests.rs"]
mod tests;
