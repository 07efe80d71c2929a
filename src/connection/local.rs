//! `ansible_connection: local`: the agent runs as a child of the controller, installed in
//! the same cache path as on remote hosts so the same checks apply.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::privilege::{self, BecomeSpec, Negotiation, Step};
use super::{ConnectError, ConnectionSpec, agent_for, local_home};
use crate::agent_binary::AgentBinary;
use crate::agent_session::{AgentSession, BootstrapReport, Prelude};

const STDERR_LIMIT: usize = 16 * 1024;

pub(super) async fn open_agent(
    spec: &ConnectionSpec,
    prelude: &mut Prelude,
) -> Result<AgentSession, ConnectError> {
    let agent = agent_for(&spec.host)?;
    let error = |message: String| ConnectError::Bootstrap {
        host: spec.host.clone(),
        message,
    };
    let home = local_home()
        .ok_or_else(|| error("neither $HOME nor a passwd entry gives a home directory".into()))?;
    let path = home.join(".cache/turbo-play").join(agent.remote_name());

    let mut report = BootstrapReport::default();
    if !is_installed(&path, agent) {
        report.upload_bytes = install(&path, agent)
            .map_err(|e| error(format!("installing the agent at {}: {e}", path.display())))?;
        report.uploaded = true;
    }
    loop {
        let (mut child, stderr) = spawn(&path, &agent.sha256)
            .await
            .map_err(|e| error(format!("starting the agent {}: {e}", path.display())))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stdin = child.stdin.take().expect("piped stdin");
        // As over SSH: the agent reads them after its hello (a pipe holds them meanwhile);
        // one that fails its own check exits without reading, and they go again.
        if !prelude.is_empty() {
            let _ = stdin.write_all(prelude.bytes()).await;
        }
        match AgentSession::start_after(stdout, stdin, report.clone(), prelude).await {
            Ok(session) => {
                session.keep_alive(Box::new(child));
                return Ok(session);
            }
            Err(e) => {
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                let _ = child.start_kill();
                if e.is_not_an_agent() && !report.replaced_stale {
                    report.upload_bytes += install(&path, agent).map_err(|e| {
                        error(format!("installing the agent at {}: {e}", path.display()))
                    })?;
                    report.uploaded = true;
                    report.replaced_stale = true;
                    continue;
                }
                let stderr = String::from_utf8_lossy(&stderr.lock().expect("stderr"))
                    .trim()
                    .to_string();
                let stderr = if stderr.is_empty() {
                    String::new()
                } else {
                    format!(" (stderr: {stderr})")
                };
                return Err(error(format!(
                    "{} did not start as an agent: {e}{stderr}",
                    path.display()
                )));
            }
        }
    }
}

/// The cached agent may run only when it and its directory are this user's, no symlink,
/// and writable by nobody else (as the SSH probe checks); its sha256 the agent checks
/// itself (`--expect-sha256`).
fn is_installed(path: &Path, agent: &AgentBinary) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    let file_ok = std::fs::symlink_metadata(path).is_ok_and(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.len() == agent.bytes.len() as u64 && m.permissions().mode() & 0o100 != 0
    });
    file_ok && is_private(path) && is_private_dir(dir)
}

/// Owned by the user this process runs as (the owner of `/proc/self`) and writable by no
/// one else; a symlink never is.
fn is_private(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return false;
    };
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| !m.file_type().is_symlink() && m.uid() == me && m.mode() & 0o022 == 0)
}

fn is_private_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) && is_private(dir)
}

/// Writes a temp file beside `path` and renames it into place: a concurrent run never
/// executes a half-written agent.
fn install(path: &Path, agent: &AgentBinary) -> std::io::Result<u64> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().expect("cache path has a parent");
    // What others could have put in a directory they can write to goes with it.
    if std::fs::symlink_metadata(dir).is_ok() && !is_private_dir(dir) {
        let aside = dir.with_extension(format!("untrusted.{}", std::process::id()));
        std::fs::rename(dir, &aside)?;
        let _ = std::fs::remove_dir_all(&aside);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if !is_private_dir(dir) {
        return Err(std::io::Error::other(format!(
            "{} is not a directory that only this user can write",
            dir.display()
        )));
    }
    // Several local hosts of one run install at once: each writes its own temp file, and
    // the renames onto the same cached path are atomic either way.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp: PathBuf = dir.join(format!(
        ".{}.{}.{n}",
        agent.remote_name(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o700)
            .open(&temp)?;
        file.write_all(&agent.bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map(|()| agent.bytes.len() as u64)
}

/// Spawns the agent with piped stdio. Retries "text file busy": another thread's fork may
/// briefly hold a copy of the descriptor we just wrote the file through.
async fn spawn(path: &Path, sha256: &str) -> std::io::Result<(Child, Arc<Mutex<Vec<u8>>>)> {
    let mut attempts = 0;
    let mut child = loop {
        let spawned = Command::new(path)
            .args(["--expect-sha256", sha256])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        match spawned {
            Err(e) if e.raw_os_error() == Some(26) && attempts < 20 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            other => break other?,
        }
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut kept = sink.lock().expect("stderr");
                let room = STDERR_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        });
    }
    Ok((child, stderr))
}

/// The local connection's become: sudo (or su, on a pty of its own) as another child, the
/// same conversation as over SSH (password after the prompt, the agent sent along when
/// the become user has none).
pub(super) async fn open_become(
    spec: &ConnectionSpec,
    become_: &BecomeSpec,
    shown: super::ExecShown<'_>,
) -> Result<AgentSession, ConnectError> {
    let agent = agent_for(&spec.host)?;
    let prompt = privilege::unique_prompt();
    let line = privilege::become_command(become_, agent, &prompt);
    shown(&format!("/bin/sh -c {}", privilege::shell_quote(&line)));
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(line).kill_on_drop(true);
    let method = become_.method.name();
    let starting = |e: std::io::Error| ConnectError::Become(format!("starting {method}: {e}"));
    let talk = Talk {
        spec,
        become_,
        agent,
        prompt: &prompt,
    };
    if become_.method.needs_pty() {
        let (master, terminal) = super::pty::open().map_err(starting)?;
        super::pty::child_terminal(&mut command, &terminal).map_err(starting)?;
        let child = command.spawn().map_err(starting)?;
        // Only the child keeps its side open: its output ends when it is gone.
        drop(command);
        drop(terminal);
        let writer = master.clone().hanging_up(child.id());
        talk.run(child, master, None::<tokio::io::Empty>, writer)
            .await
    } else {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(starting)?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let stdin = child.stdin.take().expect("piped stdin");
        talk.run(child, stdout, Some(stderr), stdin).await
    }
}

/// One become conversation with a local child.
struct Talk<'a> {
    spec: &'a ConnectionSpec,
    become_: &'a BecomeSpec,
    agent: &'a AgentBinary,
    prompt: &'a str,
}

impl Talk<'_> {
    /// Answers the child until its agent runs; `stderr` is `None` on a terminal, where
    /// everything comes on `stdout`.
    async fn run<R, E, W>(
        self,
        child: Child,
        mut stdout: R,
        mut stderr: Option<E>,
        mut stdin: W,
    ) -> Result<AgentSession, ConnectError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        E: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use tokio::io::AsyncWriteExt;
        let failed = ConnectError::Become;
        let mut talk = Negotiation::new(self.become_, self.prompt);
        let seconds = self
            .become_
            .timeout
            .unwrap_or(self.spec.connect_timeout)
            .as_secs()
            + 2;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
        let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
        let mut stderr_open = stderr.is_some();
        loop {
            let step = tokio::select! {
                read = stdout.read(&mut out_buf) => match read {
                    Ok(0) | Err(_) => talk.on_end(),
                    Ok(n) => talk.on_stdout(&out_buf[..n]),
                },
                read = read_some(&mut stderr, &mut err_buf), if stderr_open => match read {
                    Ok(0) | Err(_) => { stderr_open = false; Step::Wait }
                    Ok(n) => talk.on_stderr(&err_buf[..n]),
                },
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(ConnectError::BecomeTimeout(talk.timed_out(seconds)));
                }
            };
            match step {
                Step::Wait => {}
                Step::SendPassword => {
                    let mut line = self
                        .become_
                        .password
                        .clone()
                        .unwrap_or_default()
                        .into_bytes();
                    line.push(b'\n');
                    stdin
                        .write_all(&line)
                        .await
                        .map_err(|e| failed(format!("answering the password prompt: {e}")))?;
                }
                Step::SendAgent { gzip } => {
                    let bytes: &[u8] = if gzip {
                        super::ssh::compressed_agent(self.agent)
                    } else {
                        &self.agent.bytes
                    };
                    stdin
                        .write_all(bytes)
                        .await
                        .map_err(|e| failed(format!("sending the agent for become: {e}")))?;
                }
                Step::Fail(message) => return Err(failed(message)),
                Step::Run(leftover) => {
                    // Whatever the agent says on stderr is drained so that it never blocks.
                    let drained = stderr.map(|mut stderr| {
                        AbortOnDrop(tokio::spawn(async move {
                            let mut sink = tokio::io::sink();
                            let _ = tokio::io::copy(&mut stderr, &mut sink).await;
                        }))
                    });
                    let reader = std::io::Cursor::new(leftover).chain(stdout);
                    let session = AgentSession::start(reader, stdin, BootstrapReport::default())
                        .await
                        .map_err(|e| failed(format!("the become agent did not start: {e}")))?;
                    session.keep_alive(Box::new(child));
                    if let Some(drained) = drained {
                        session.keep_alive(Box::new(drained));
                    }
                    return Ok(session);
                }
            }
        }
    }
}

/// Reads from `pipe`, or never when there is none.
async fn read_some<E: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<E>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
