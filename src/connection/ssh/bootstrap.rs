//! The agent bootstrap over exec channels: one channel when the agent is already cached
//! (a probe script that `exec`s it), three when it must be uploaded (probe, upload, probe
//! again).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use russh::ChannelMsg;
use russh::client::Handle;
use tokio::io::AsyncWriteExt;

use super::host_key::HostKeyGuard;
use crate::agent_binary::{AgentBinary, SUPPORTED_UNAME};
use crate::agent_session::{AgentSession, BootstrapReport, Prelude};
use crate::connection::{ConnectError, ConnectionSpec};

/// Output allowed before the probe's marker line (shell rc files may print things).
const PROBE_OUTPUT_LIMIT: usize = 4096;

/// stderr kept from the agent's channel, for error messages.
const STDERR_LIMIT: usize = 16 * 1024;

/// Exit status of the upload script when gzip is missing on the host.
const EXIT_NO_GZIP: u32 = 9;

const MARK_RUN: &str = "TP-RUN";
const MARK_UPLOAD: &str = "TP-UPLOAD";
const MARK_UNSUPPORTED: &str = "TP-UNSUPPORTED";

/// Runs `script` with /bin/sh whatever the user's login shell is.
fn sh_command(script: &str) -> String {
    debug_assert!(!script.contains('\''), "scripts are single-quoted");
    format!("exec /bin/sh -c '{script}'")
}

/// Shell functions over `$d` (the cache directory) and `$f` (the agent in it) that decide
/// whether the cached agent may run: `tp_trusted` is true only for a directory and a
/// regular executable file of the agent's size, neither a symlink, both owned by the
/// running user and writable by nobody else; only that user (or root) could then have
/// written the file. `tp_private_dir` makes `$d` such a directory, moving an untrusted one
/// aside (and removing what it can of it), so a file someone else could have planted in
/// it is never run. `ls -ldn` is POSIX; its first field is the mode, its fifth the size.
pub(in crate::connection) fn cache_checks(size: usize) -> String {
    format!(
        "set -f; \
         tp_safe() {{ [ ! -L \"$1\" ] && [ -O \"$1\" ] || return 1; set -- $(ls -ldn \"$1\"); \
         case \"$1\" in ?????w*|????????w*) return 1;; esac; tp_size=$5; }}; \
         tp_dir_ok() {{ [ -d \"$d\" ] && tp_safe \"$d\"; }}; \
         tp_trusted() {{ tp_dir_ok && [ -f \"$f\" ] && [ -x \"$f\" ] && tp_safe \"$f\" && [ \"$tp_size\" = {size} ]; }}; \
         tp_private_dir() {{ \
         if ! tp_dir_ok && {{ [ -e \"$d\" ] || [ -L \"$d\" ]; }}; then \
         mv -f \"$d\" \"$d.untrusted.$$\" 2>/dev/null; rm -rf \"$d.untrusted.$$\" 2>/dev/null; fi; \
         mkdir -p \"$d\" 2>/dev/null; [ -L \"$d\" ] || chmod 700 \"$d\" 2>/dev/null; \
         tp_dir_ok || {{ echo \"$d is not a directory that only $(id -un) can write, and could not be replaced\" >&2; return 1; }}; }}; "
    )
}

/// Prints `uname -sm`, then exactly one marker: run the cached agent (`exec`, so its
/// stdout continues this channel), ask for an upload, or give up on this platform. The
/// agent checks its own sha256 before its hello; on a mismatch it exits, and the
/// bootstrap replaces it as any program that is not an agent.
pub(in crate::connection) fn probe_script(agent: &AgentBinary) -> String {
    let name = agent.remote_name();
    let checks = cache_checks(agent.bytes.len());
    let sha256 = &agent.sha256;
    sh_command(&format!(
        "u=$(uname -sm); echo \"$u\"; \
         if [ \"$u\" != \"{SUPPORTED_UNAME}\" ]; then echo {MARK_UNSUPPORTED}; exit 0; fi; \
         d=\"$HOME/.cache/turbo-play\"; f=\"$d/{name}\"; {checks}\
         if tp_trusted; then echo {MARK_RUN}; exec \"$f\" --expect-sha256 {sha256}; fi; \
         echo {MARK_UPLOAD}"
    ))
}

/// Receives the agent on stdin into a temp file next to the cache path, then renames it
/// into place, so a concurrent run never executes a half-written file; the directory is
/// made private first.
pub(in crate::connection) fn upload_script(agent: &AgentBinary, gzip: bool) -> String {
    let name = agent.remote_name();
    let checks = cache_checks(agent.bytes.len());
    let receive = if gzip {
        format!("command -v gzip >/dev/null 2>&1 || exit {EXIT_NO_GZIP}; gzip -dc")
    } else {
        "cat".to_string()
    };
    sh_command(&format!(
        "umask 077; d=\"$HOME/.cache/turbo-play\"; f=\"$d/{name}\"; t=\"$d/.{name}.$$\"; {checks}\
         tp_private_dir || exit 8; \
         {receive} > \"$t\" && chmod 700 \"$t\" && mv -f \"$t\" \"$f\" || {{ rm -f \"$t\"; exit 8; }}"
    ))
}

pub(in crate::connection) fn compressed_agent(agent: &AgentBinary) -> &'static [u8] {
    static COMPRESSED: OnceLock<Vec<u8>> = OnceLock::new();
    COMPRESSED.get_or_init(|| {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(
            Vec::with_capacity(agent.bytes.len() / 2),
            flate2::Compression::best(),
        );
        gz.write_all(&agent.bytes).expect("gzip into memory");
        gz.finish().expect("gzip into memory")
    })
}

enum Probe {
    Run(RunningAgent),
    Upload,
    Unsupported(String),
}

/// The agent's stdout (a pipe fed by a pump task) and stdin (the channel).
pub(super) struct RunningAgent {
    pub(super) stdout: tokio::io::DuplexStream,
    pub(super) stdin: russh::ChannelWriteHalf<russh::client::Msg>,
    pub(super) diagnostics: Arc<Mutex<Diagnostics>>,
    pub(super) pump: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
pub(super) struct Diagnostics {
    pub(super) stderr: Vec<u8>,
    pub(super) exit_status: Option<u32>,
    /// The signal that killed the program, and whether it dumped core.
    pub(super) exit_signal: Option<(russh::Sig, bool)>,
}

impl Diagnostics {
    pub(super) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(status) = self.exit_status {
            parts.push(format!("exit status {status}"));
        }
        let stderr = String::from_utf8_lossy(&self.stderr);
        let stderr = stderr.trim();
        if !stderr.is_empty() {
            parts.push(format!("stderr: {stderr}"));
        }
        parts.join(", ")
    }
}

pub(super) async fn bootstrap(
    spec: &ConnectionSpec,
    agent: &AgentBinary,
    handle: &Handle<HostKeyGuard>,
    prelude: &mut Prelude,
) -> Result<AgentSession, ConnectError> {
    let mut report = BootstrapReport::default();
    loop {
        match probe(spec, agent, handle, prelude).await? {
            Probe::Unsupported(uname) => return Err(ConnectError::Unsupported { uname }),
            Probe::Upload => {
                if report.uploaded {
                    return Err(bootstrap_error(
                        spec,
                        "the agent was uploaded but the probe still does not find it executable in ~/.cache/turbo-play".into(),
                    ));
                }
                report.upload_bytes += upload(spec, agent, handle).await?;
                report.uploaded = true;
            }
            Probe::Run(running) => {
                let RunningAgent {
                    stdout,
                    stdin,
                    diagnostics,
                    pump,
                } = running;
                let writer = stdin.make_writer();
                match AgentSession::start_after(stdout, writer, report.clone(), prelude).await {
                    Ok(session) => {
                        session.add_end_witness(super::channel_witness(diagnostics));
                        session.keep_alive(Box::new(PumpGuard(pump)));
                        session.keep_alive(Box::new(stdin));
                        return Ok(session);
                    }
                    Err(e) => {
                        // Let the pump collect the dying program's stderr and status.
                        let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
                        let detail = diagnostics.lock().expect("diagnostics lock").describe();
                        let detail = if detail.is_empty() {
                            String::new()
                        } else {
                            format!(" ({detail})")
                        };
                        if e.is_not_an_agent() && !report.replaced_stale {
                            report.upload_bytes += upload(spec, agent, handle).await?;
                            report.uploaded = true;
                            report.replaced_stale = true;
                            continue;
                        }
                        return Err(bootstrap_error(
                            spec,
                            format!(
                                "~/.cache/turbo-play/{} did not start as an agent: {e}{detail}",
                                agent.remote_name()
                            ),
                        ));
                    }
                }
            }
        }
    }
}

/// Aborts the pump task when the session goes away.
pub(super) struct PumpGuard(pub(super) tokio::task::JoinHandle<()>);

impl Drop for PumpGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn bootstrap_error(spec: &ConnectionSpec, message: String) -> ConnectError {
    ConnectError::Bootstrap {
        host: spec.host.clone(),
        message,
    }
}

pub(super) fn channel_error(spec: &ConnectionSpec, what: &str, e: russh::Error) -> ConnectError {
    bootstrap_error(spec, format!("{what}: {e}"))
}

async fn probe(
    spec: &ConnectionSpec,
    agent: &AgentBinary,
    handle: &Handle<HostKeyGuard>,
    prelude: &Prelude,
) -> Result<Probe, ConnectError> {
    let channel = handle
        .channel_open_session()
        .await
        .map_err(|e| channel_error(spec, "opening a session channel", e))?;
    channel
        .exec(true, probe_script(agent))
        .await
        .map_err(|e| channel_error(spec, "running the probe", e))?;
    let (mut read, write) = channel.split();
    // The first requests go behind the exec, read by the agent the script execs (the
    // script itself reads no input); when it asks for an upload instead, they are lost
    // with its input and go again behind the next probe.
    if !prelude.is_empty() {
        write
            .data(prelude.bytes())
            .await
            .map_err(|e| channel_error(spec, "sending the first requests", e))?;
    }
    let mut stdout: Vec<u8> = Vec::new();
    let mut diagnostics = Diagnostics::default();
    loop {
        if let Some((marker, rest_at)) = find_marker(&stdout) {
            let before = String::from_utf8_lossy(&stdout[..rest_at]).to_string();
            return Ok(match marker {
                MARK_UNSUPPORTED => Probe::Unsupported(uname_before(&before, MARK_UNSUPPORTED)),
                MARK_UPLOAD => Probe::Upload,
                _ => {
                    let leftover = stdout[rest_at..].to_vec();
                    Probe::Run(start_pump(read, write, leftover, diagnostics))
                }
            });
        }
        if stdout.len() > PROBE_OUTPUT_LIMIT {
            return Err(bootstrap_error(
                spec,
                format!(
                    "the probe printed {} bytes without a TP-* line; does a shell startup file print to stdout? Output starts: {:?}",
                    stdout.len(),
                    String::from_utf8_lossy(&stdout[..200.min(stdout.len())])
                ),
            ));
        }
        match read.wait().await {
            Some(ChannelMsg::Data { data }) => stdout.extend_from_slice(&data),
            Some(ChannelMsg::ExtendedData { data, .. }) => {
                append_bounded(&mut diagnostics.stderr, &data)
            }
            Some(ChannelMsg::ExitStatus { exit_status }) => {
                diagnostics.exit_status = Some(exit_status)
            }
            Some(ChannelMsg::Failure) => {
                return Err(bootstrap_error(
                    spec,
                    "the server refused to run a command (exec request failed)".into(),
                ));
            }
            Some(_) => {}
            None => {
                return Err(bootstrap_error(
                    spec,
                    format!(
                        "the probe ended without a TP-* line (stdout: {:?}; {})",
                        String::from_utf8_lossy(&stdout).trim(),
                        diagnostics.describe()
                    ),
                ));
            }
        }
    }
}

/// The first whole line that is a marker, and the offset just past it.
fn find_marker(stdout: &[u8]) -> Option<(&'static str, usize)> {
    let mut start = 0;
    while let Some(newline) = stdout[start..].iter().position(|&b| b == b'\n') {
        let line = &stdout[start..start + newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        for marker in [MARK_RUN, MARK_UPLOAD, MARK_UNSUPPORTED] {
            if line == marker.as_bytes() {
                return Some((marker, start + newline + 1));
            }
        }
        start += newline + 1;
    }
    None
}

/// The `uname -sm` line: the last line before the marker.
fn uname_before(output: &str, marker: &str) -> String {
    output
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && *l != marker)
        .unwrap_or("an unknown system")
        .to_string()
}

fn append_bounded(buffer: &mut Vec<u8>, data: &[u8]) {
    let room = STDERR_LIMIT.saturating_sub(buffer.len());
    buffer.extend_from_slice(&data[..room.min(data.len())]);
}

/// Moves the channel's stdout into a pipe that `AgentSession` reads, starting with the
/// bytes that arrived together with the TP-RUN line; keeps stderr for messages.
pub(super) fn start_pump(
    mut read: russh::ChannelReadHalf,
    write: russh::ChannelWriteHalf<russh::client::Msg>,
    leftover: Vec<u8>,
    diagnostics: Diagnostics,
) -> RunningAgent {
    let (stdout, mut sink) = tokio::io::duplex(256 * 1024);
    let diagnostics = Arc::new(Mutex::new(diagnostics));
    let shared = diagnostics.clone();
    let pump = tokio::spawn(async move {
        let mut sink_open = sink.write_all(&leftover).await.is_ok();
        while let Some(msg) = read.wait().await {
            match msg {
                ChannelMsg::Data { data } if sink_open => {
                    sink_open = sink.write_all(&data).await.is_ok();
                }
                ChannelMsg::ExtendedData { data, .. } => {
                    append_bounded(&mut shared.lock().expect("diagnostics").stderr, &data)
                }
                ChannelMsg::ExitStatus { exit_status } => {
                    shared.lock().expect("diagnostics").exit_status = Some(exit_status)
                }
                ChannelMsg::ExitSignal {
                    signal_name,
                    core_dumped,
                    ..
                } => {
                    shared.lock().expect("diagnostics").exit_signal =
                        Some((signal_name, core_dumped))
                }
                ChannelMsg::Eof => {
                    let _ = sink.shutdown().await;
                    sink_open = false;
                }
                ChannelMsg::Close => break,
                _ => {}
            }
        }
        // Dropping the sink ends the agent's stdout for the session's reader.
    });
    RunningAgent {
        stdout,
        stdin: write,
        diagnostics,
        pump,
    }
}

/// Sends the agent to the host (gzip-compressed when the host has gzip). Returns the
/// bytes sent.
async fn upload(
    spec: &ConnectionSpec,
    agent: &AgentBinary,
    handle: &Handle<HostKeyGuard>,
) -> Result<u64, ConnectError> {
    let compressed = compressed_agent(agent);
    let (status, diagnostics) =
        run_with_input(spec, handle, &upload_script(agent, true), compressed).await?;
    let (status, diagnostics, sent) = if status == Some(EXIT_NO_GZIP) {
        let (status, diagnostics) =
            run_with_input(spec, handle, &upload_script(agent, false), &agent.bytes).await?;
        (status, diagnostics, agent.bytes.len())
    } else {
        (status, diagnostics, compressed.len())
    };
    if status != Some(0) {
        return Err(bootstrap_error(
            spec,
            format!(
                "uploading the agent to ~/.cache/turbo-play failed ({})",
                diagnostics.describe()
            ),
        ));
    }
    Ok(sent as u64)
}

/// Runs `command` with `input` on its stdin (then EOF); returns its exit status.
async fn run_with_input(
    spec: &ConnectionSpec,
    handle: &Handle<HostKeyGuard>,
    command: &str,
    input: &[u8],
) -> Result<(Option<u32>, Diagnostics), ConnectError> {
    let channel = handle
        .channel_open_session()
        .await
        .map_err(|e| channel_error(spec, "opening a session channel", e))?;
    channel
        .exec(true, command)
        .await
        .map_err(|e| channel_error(spec, "running the upload", e))?;
    let (mut read, write) = channel.split();
    let send = async {
        if write.data(input).await.is_ok() {
            let _ = write.eof().await;
        }
    };
    tokio::pin!(send);
    let mut sending = true;
    let mut diagnostics = Diagnostics::default();
    loop {
        tokio::select! {
            _ = &mut send, if sending => sending = false,
            msg = read.wait() => match msg {
                Some(ChannelMsg::ExtendedData { data, .. }) => append_bounded(&mut diagnostics.stderr, &data),
                Some(ChannelMsg::ExitStatus { exit_status }) => diagnostics.exit_status = Some(exit_status),
                Some(ChannelMsg::Close) | None => break,
                Some(_) => {}
            },
        }
    }
    Ok((diagnostics.exit_status, diagnostics))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn markers_are_whole_lines() {
        assert_eq!(
            find_marker(b"Linux x86_64\nTP-RUN\n\x00\x00"),
            Some(("TP-RUN", 20))
        );
        assert_eq!(find_marker(b"Linux x86_64\nTP-RU"), None);
        assert_eq!(find_marker(b"say TP-RUN\n"), None);
        assert_eq!(
            find_marker(b"motd\r\nFreeBSD amd64\r\nTP-UNSUPPORTED\r\n").map(|m| m.0),
            Some("TP-UNSUPPORTED")
        );
        assert_eq!(
            uname_before("motd\nFreeBSD amd64\nTP-UNSUPPORTED\n", "TP-UNSUPPORTED"),
            "FreeBSD amd64"
        );
    }

    fn fake_agent() -> AgentBinary {
        AgentBinary {
            bytes: b"\x7fELF pretend".to_vec().into(),
            sha256: crate::agent_binary::sha256_hex(b"\x7fELF pretend"),
        }
    }

    /// Runs the probe script with sh locally against a fake $HOME.
    fn run_probe(home: &Path, agent: &AgentBinary) -> String {
        let command = probe_script(agent);
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&command)
            .env("HOME", home)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    #[test]
    fn probe_and_upload_scripts_work_with_sh() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let agent = fake_agent();
        let out = run_probe(home.path(), &agent);
        assert_eq!(out, "Linux x86_64\nTP-UPLOAD\n");

        // Upload through the gzip script, as the SSH path does.
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(upload_script(&agent, true))
            .env("HOME", home.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&agent.bytes).unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(&gz.finish().unwrap())
                .unwrap();
        }
        assert!(child.wait().unwrap().success());
        let path = home
            .path()
            .join(".cache/turbo-play")
            .join(agent.remote_name());
        assert_eq!(std::fs::read(&path).unwrap(), agent.bytes.as_ref());
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temp file left behind");

        // Now the probe runs it (exec fails on our fake, after the marker).
        assert!(run_probe(home.path(), &agent).starts_with("Linux x86_64\nTP-RUN\n"));

        // Same name, other size: upload again.
        std::fs::write(&path, b"short").unwrap();
        assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));

        // Raw upload via cat.
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(upload_script(&agent, false))
            .env("HOME", home.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&agent.bytes).unwrap();
        }
        assert!(child.wait().unwrap().success());
        assert_eq!(std::fs::read(&path).unwrap(), agent.bytes.as_ref());
    }

    fn upload_with_cat(home: &Path, agent: &AgentBinary) -> std::process::ExitStatus {
        use std::io::Write;
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(upload_script(agent, false))
            .env("HOME", home)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&agent.bytes).unwrap();
        child.wait().unwrap()
    }

    #[test]
    fn untrusted_caches_are_never_run_and_the_upload_makes_them_private() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let home = tempfile::tempdir().unwrap();
        let agent = fake_agent();
        let dir = home.path().join(".cache/turbo-play");
        let path = dir.join(agent.remote_name());
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
        let chmod = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        assert!(upload_with_cat(home.path(), &agent).success());
        assert_eq!(mode(&dir), 0o700);
        assert!(run_probe(home.path(), &agent).contains("TP-RUN"));

        // Writable by others: the file, then the directory.
        for m in [0o766, 0o727, 0o666] {
            chmod(&path, m);
            assert!(
                run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"),
                "{m:o}"
            );
            chmod(&path, 0o700);
        }
        chmod(&dir, 0o777);
        assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));
        // A directory others could write to is replaced whole, not just chmodded: what
        // they put in it goes with it.
        std::fs::write(dir.join("planted"), b"x").unwrap();
        assert!(upload_with_cat(home.path(), &agent).success());
        assert_eq!(mode(&dir), 0o700);
        assert!(!dir.join("planted").exists());
        assert!(run_probe(home.path(), &agent).contains("TP-RUN"));

        // A symlinked agent, and a symlinked directory.
        let elsewhere = home.path().join("elsewhere");
        std::fs::copy(&path, &elsewhere).unwrap();
        std::fs::remove_file(&path).unwrap();
        symlink(&elsewhere, &path).unwrap();
        assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));
        assert!(upload_with_cat(home.path(), &agent).success());
        assert!(
            !std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let other_dir = home.path().join("other-dir");
        std::fs::rename(&dir, &other_dir).unwrap();
        symlink(&other_dir, &dir).unwrap();
        assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));
        assert!(upload_with_cat(home.path(), &agent).success());
        assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
        assert_eq!(
            mode(&other_dir),
            0o700,
            "the symlink's target was left alone"
        );

        // Owned by someone else (needs root to arrange).
        if running_as_root() {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));
            assert!(upload_with_cat(home.path(), &agent).success());
            assert!(run_probe(home.path(), &agent).contains("TP-RUN"));
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            assert!(run_probe(home.path(), &agent).ends_with("TP-UPLOAD\n"));
            assert!(upload_with_cat(home.path(), &agent).success());
            use std::os::unix::fs::MetadataExt;
            assert_eq!(std::fs::metadata(&dir).unwrap().uid(), 0);
            assert!(run_probe(home.path(), &agent).contains("TP-RUN"));
        }
    }

    fn running_as_root() -> bool {
        use std::os::unix::fs::MetadataExt;
        // The owner of a file we just made is our effective uid.
        let probe = tempfile::NamedTempFile::new().unwrap();
        std::fs::metadata(probe.path()).unwrap().uid() == 0
    }

    #[test]
    fn probe_gives_up_on_other_platforms() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let uname = dir.path().join("uname");
        std::fs::write(&uname, "#!/bin/sh\necho FreeBSD amd64\n").unwrap();
        std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(probe_script(&fake_agent()))
            .env("HOME", dir.path())
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    dir.path().display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out, "FreeBSD amd64\nTP-UNSUPPORTED\n");
        let (marker, at) = find_marker(out.as_bytes()).unwrap();
        assert_eq!(marker, MARK_UNSUPPORTED);
        let uname = uname_before(&out[..at], MARK_UNSUPPORTED);
        assert_eq!(
            ConnectError::Unsupported { uname }.to_string(),
            "agent not available for FreeBSD amd64: turbo-play ships an agent for Linux x86_64 only"
        );
    }
}
