//! The SSH transport: TCP connect, host key verification against known_hosts, public-key
//! authentication, and the agent bootstrap over exec channels.
//!
//! The bootstrap costs one channel when the agent is already cached (probe script that
//! `exec`s it), three when it must be uploaded (probe, upload, probe again).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::agent::AgentIdentity;
use russh::keys::agent::client::AgentClient;
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use russh::{ChannelMsg, Disconnect};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::known_hosts::{self, CertificateStatus, HostKeyStatus};
use super::{ConnectError, ConnectionSpec, StrictHostKeyChecking, agent_for};
use crate::agent_binary::{AgentBinary, SUPPORTED_UNAME};
use crate::agent_session::{AgentSession, BootstrapReport};
use crate::tilde::expand_user_path as expand_tilde;

/// Output allowed before the probe's marker line (shell rc files may print things).
mod escalator;
pub use escalator::Escalator;

const PROBE_OUTPUT_LIMIT: usize = 4096;

/// stderr kept from the agent's channel, for error messages.
const STDERR_LIMIT: usize = 16 * 1024;

/// Exit status of the upload script when gzip is missing on the host.
const EXIT_NO_GZIP: u32 = 9;

const MARK_RUN: &str = "TP-RUN";
const MARK_UPLOAD: &str = "TP-UPLOAD";
const MARK_UNSUPPORTED: &str = "TP-UNSUPPORTED";

pub(super) async fn open_agent(
    spec: &ConnectionSpec,
) -> Result<(AgentSession, Escalator), ConnectError> {
    let agent = agent_for(&spec.host)?;
    let handle = connect(spec).await?;
    let connection = Arc::new(Connection {
        handle: Some(handle),
    });
    let session = bootstrap(spec, agent, connection.handle()).await?;
    session.keep_alive(Box::new(connection.clone()));
    Ok((
        session,
        Escalator {
            connection,
            spec: spec.clone(),
        },
    ))
}

/// Owns the SSH connection for the session's lifetime and says goodbye when dropped.
struct Connection {
    handle: Option<Handle<HostKeyGuard>>,
}

impl Connection {
    fn handle(&self) -> &Handle<HostKeyGuard> {
        self.handle.as_ref().expect("handle present until drop")
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let (Some(handle), Ok(runtime)) =
            (self.handle.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                let _ = handle.disconnect(Disconnect::ByApplication, "", "en").await;
            });
        }
    }
}

// ---------------------------------------------------------------------------------------
// Connecting

async fn connect(spec: &ConnectionSpec) -> Result<Handle<HostKeyGuard>, ConnectError> {
    let socket = tcp_connect(spec).await?;
    let known_types =
        known_hosts::known_key_types(&spec.known_hosts_files, &spec.address, spec.port);
    let mut preferred = spec
        .ssh
        .algorithms
        .preferred(|keys| host_key_preference(&known_types, keys));
    // Ask for a host certificate only where an @cert-authority line can vouch for one.
    if known_hosts::has_cert_authority(&spec.known_hosts_files, &spec.address, spec.port) {
        preferred.host_key_certificates = preferred.key.clone();
    }
    let config = Arc::new(client::Config {
        nodelay: true,
        preferred,
        // Notice a dead peer in a long run instead of waiting on TCP forever, unless
        // ServerAliveInterval says otherwise (0: never).
        keepalive_interval: match spec.ssh.server_alive_interval {
            Some(interval) if interval.is_zero() => None,
            Some(interval) => Some(interval),
            None => Some(Duration::from_secs(30)),
        },
        keepalive_max: spec.ssh.server_alive_count_max.map_or(4, |n| n as usize),
        ..Default::default()
    });
    let verdict = Arc::new(Mutex::new(None));
    let guard = HostKeyGuard {
        address: spec.address.clone(),
        port: spec.port,
        strict: spec.strict,
        hash: spec.ssh.hash_known_hosts,
        files: spec.known_hosts_files.clone(),
        verdict: verdict.clone(),
    };
    let ssh_error = |message: String| ConnectError::Ssh {
        address: spec.address.clone(),
        port: spec.port,
        message,
    };
    let handshake = tokio::time::timeout(
        spec.connect_timeout,
        client::connect_stream(config, socket, guard),
    )
    .await;
    let mut handle = match handshake {
        Ok(Ok(handle)) => handle,
        Ok(Err(e)) => {
            if let Some(refusal) = verdict.lock().expect("verdict lock").take() {
                return Err(refusal);
            }
            return Err(ssh_error(format!("handshake failed: {e}")));
        }
        Err(_) => {
            return Err(ssh_error(format!(
                "no SSH handshake within {} s",
                spec.connect_timeout.as_secs_f64()
            )));
        }
    };
    authenticate(&mut handle, spec).await?;
    Ok(handle)
}

/// russh's host key algorithms with those already in known_hosts first: a host known by
/// its RSA key must not be asked for an ed25519 key we could not check.
fn host_key_preference(
    known_types: &[String],
    keys: Vec<russh::keys::Algorithm>,
) -> Vec<russh::keys::Algorithm> {
    let family = |algorithm: &russh::keys::Algorithm| {
        if matches!(algorithm, russh::keys::Algorithm::Rsa { .. }) {
            "ssh-rsa".to_string()
        } else {
            algorithm.as_str().to_string()
        }
    };
    let (mut known, other): (Vec<_>, Vec<_>) = keys
        .into_iter()
        .partition(|a| known_types.contains(&family(a)));
    known.extend(other);
    known
}

async fn tcp_connect(spec: &ConnectionSpec) -> Result<TcpStream, ConnectError> {
    let tcp_error = |reason: String| ConnectError::Tcp {
        address: spec.address.clone(),
        port: spec.port,
        reason,
    };
    let addresses: Vec<_> = tokio::time::timeout(
        spec.connect_timeout,
        tokio::net::lookup_host((spec.address.as_str(), spec.port)),
    )
    .await
    .map_err(|_| ConnectError::Resolve {
        address: spec.address.clone(),
        reason: "lookup timed out".into(),
    })?
    .map_err(|e| ConnectError::Resolve {
        address: spec.address.clone(),
        reason: io_reason(&e),
    })?
    .filter(|a: &std::net::SocketAddr| match spec.ssh.address_family {
        super::AddressFamily::Any => true,
        super::AddressFamily::Inet => a.is_ipv4(),
        super::AddressFamily::Inet6 => a.is_ipv6(),
    })
    .collect();
    let mut last_error = "Name or service not known".to_string();
    for address in addresses {
        let attempt = connect_from(address, spec.ssh.bind_address.as_deref());
        match tokio::time::timeout(spec.connect_timeout, attempt).await {
            Ok(Ok(socket)) => {
                let _ = socket.set_nodelay(true);
                return Ok(socket);
            }
            Ok(Err(e)) => last_error = io_reason(&e),
            Err(_) => last_error = "Connection timed out".into(),
        }
    }
    Err(tcp_error(last_error))
}

/// A TCP connection, from BindAddress when one is set.
async fn connect_from(
    address: std::net::SocketAddr,
    bind: Option<&str>,
) -> std::io::Result<TcpStream> {
    let Some(bind) = bind else {
        return TcpStream::connect(address).await;
    };
    let ip: std::net::IpAddr = bind.parse().map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("BindAddress {bind} is not an IP address"),
        )
    })?;
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.bind(std::net::SocketAddr::new(ip, 0))?;
    socket.connect(address).await
}

/// "Connection refused", as ssh says it, without Rust's " (os error 111)".
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

struct HostKeyGuard {
    address: String,
    port: u16,
    strict: StrictHostKeyChecking,
    /// HashKnownHosts: accept-new writes hashed names.
    hash: bool,
    files: Vec<PathBuf>,
    /// Why the key was refused: russh only reports "unknown key", we say more.
    verdict: Arc<Mutex<Option<ConnectError>>>,
}

impl client::Handler for HostKeyGuard {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match server_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key.clone(),
            PublicKeyOrCertificate::Certificate(cert) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let name = known_hosts::lookup_name(&self.address, self.port);
                let refusal = match known_hosts::check_certificate(
                    &self.files,
                    &self.address,
                    self.port,
                    cert,
                    now,
                ) {
                    Ok(CertificateStatus::Trusted) => return Ok(true),
                    Ok(CertificateStatus::NoAuthority) => None,
                    Ok(CertificateStatus::Invalid(why)) => Some(ConnectError::KnownHosts(format!(
                        "the host certificate of {name} is refused: {why}"
                    ))),
                    Ok(CertificateStatus::Revoked { file, line }) => {
                        Some(ConnectError::HostKeyRevoked { name, file, line })
                    }
                    Err(e) => Some(ConnectError::KnownHosts(e.to_string())),
                };
                if let Some(refusal) = refusal {
                    *self.verdict.lock().expect("verdict lock") = Some(refusal);
                    return Ok(false);
                }
                PublicKey::new(cert.public_key().clone(), "")
            }
        };
        match verify_host_key(
            &self.address,
            self.port,
            (self.strict, self.hash),
            &self.files,
            &key,
        ) {
            Ok(()) => Ok(true),
            Err(refusal) => {
                *self.verdict.lock().expect("verdict lock") = Some(refusal);
                Ok(false)
            }
        }
    }
}

pub(super) fn verify_host_key(
    address: &str,
    port: u16,
    (strict, hash): (StrictHostKeyChecking, bool),
    files: &[PathBuf],
    key: &PublicKey,
) -> Result<(), ConnectError> {
    let name = known_hosts::lookup_name(address, port);
    let status = known_hosts::check(files, address, port, key)
        .map_err(|e| ConnectError::KnownHosts(e.to_string()))?;
    match status {
        HostKeyStatus::Known => Ok(()),
        HostKeyStatus::Changed { file, line } => {
            Err(ConnectError::HostKeyChanged { name, file, line })
        }
        HostKeyStatus::Revoked { file, line } => {
            Err(ConnectError::HostKeyRevoked { name, file, line })
        }
        HostKeyStatus::Unknown => match strict {
            StrictHostKeyChecking::No => Ok(()),
            StrictHostKeyChecking::AcceptNew => {
                if let Some(file) = files.first().filter(|f| !is_dev_null(f)) {
                    known_hosts::append(file, address, port, key, hash).map_err(|e| {
                        ConnectError::KnownHosts(format!(
                            "adding the key for {name} to {}: {e}",
                            file.display()
                        ))
                    })?;
                }
                Ok(())
            }
            StrictHostKeyChecking::Yes => {
                let target = files
                    .first()
                    .filter(|f| !is_dev_null(f))
                    .map(|f| tilde_display(f))
                    .unwrap_or_else(|| "~/.ssh/known_hosts".into());
                let port_flag = if port == 22 {
                    String::new()
                } else {
                    format!("-p {port} ")
                };
                Err(ConnectError::UnknownHostKey {
                    name,
                    key_type: key_type_name(key),
                    fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
                    keyscan: format!("ssh-keyscan {port_flag}{address} >> {target}"),
                })
            }
        },
    }
}

fn is_dev_null(path: &Path) -> bool {
    path == Path::new("/dev/null")
}

fn tilde_display(path: &Path) -> String {
    if let Some(home) = super::local_home()
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

/// ED25519, ECDSA, RSA: the names ssh prints next to fingerprints.
fn key_type_name(key: &PublicKey) -> String {
    let algorithm = key.algorithm();
    let name = algorithm.as_str();
    if name.contains("ed25519") {
        "ED25519".into()
    } else if name.contains("ecdsa") {
        "ECDSA".into()
    } else if name.contains("rsa") {
        "RSA".into()
    } else {
        name.to_ascii_uppercase()
    }
}

// ---------------------------------------------------------------------------------------
// Authentication

async fn authenticate(
    handle: &mut Handle<HostKeyGuard>,
    spec: &ConnectionSpec,
) -> Result<(), ConnectError> {
    let mut tried: Vec<String> = Vec::new();
    let mut rsa_hash: Option<Option<HashAlg>> = None;

    let mut key_files: Vec<(PathBuf, bool)> = spec
        .identity_files
        .iter()
        .map(|p| (p.clone(), true))
        .collect();
    let defaults: Vec<PathBuf> = ["~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"]
        .iter()
        .map(|p| expand_tilde(p))
        .filter(|p| p.exists() && !spec.identity_files.contains(p))
        .collect();

    // Explicit keys first, then the ssh-agent, then the default key files.
    for (path, _) in &key_files {
        if try_key_file(handle, spec, path, &mut rsa_hash, &mut tried).await? {
            return Ok(());
        }
    }
    // IdentitiesOnly: the configured files only (OpenSSH would still take an agent's
    // signature for one of them; turbo-play leaves the agent out altogether).
    if !spec.ssh.identities_only && try_ssh_agent(handle, spec, &mut rsa_hash, &mut tried).await? {
        return Ok(());
    }
    key_files = defaults
        .into_iter()
        .filter(|_| !spec.ssh.identities_only || spec.identity_files.is_empty())
        .map(|p| (p, false))
        .collect();
    for (path, _) in &key_files {
        if try_key_file(handle, spec, path, &mut rsa_hash, &mut tried).await? {
            return Ok(());
        }
    }
    Err(ConnectError::AuthFailed {
        user: spec.user.clone(),
        tried,
    })
}

/// The RSA signature hash the server accepts, asked once (it waits for the server's
/// extension info, so only when an RSA key is actually tried).
async fn rsa_hash_for(
    handle: &Handle<HostKeyGuard>,
    key: &PublicKey,
    cached: &mut Option<Option<HashAlg>>,
) -> Option<HashAlg> {
    if !key.algorithm().is_rsa() {
        return None;
    }
    if cached.is_none() {
        let best = handle
            .best_supported_rsa_hash()
            .await
            .ok()
            .flatten()
            .flatten();
        *cached = Some(best);
    }
    cached.flatten()
}

async fn try_key_file(
    handle: &mut Handle<HostKeyGuard>,
    spec: &ConnectionSpec,
    path: &Path,
    rsa_hash: &mut Option<Option<HashAlg>>,
    tried: &mut Vec<String>,
) -> Result<bool, ConnectError> {
    let shown = tilde_display(path);
    if !path.exists() {
        tried.push(format!("{shown} (missing)"));
        return Ok(false);
    }
    let key = match russh::keys::load_secret_key(path, None) {
        Ok(key) => key,
        Err(russh::keys::Error::KeyIsEncrypted) => {
            tried.push(format!(
                "{shown} (passphrase-protected: load it into ssh-agent)"
            ));
            return Ok(false);
        }
        Err(e) => {
            tried.push(format!("{shown} (unreadable: {e})"));
            return Ok(false);
        }
    };
    let hash = rsa_hash_for(handle, key.public_key(), rsa_hash).await;
    let result = handle
        .authenticate_publickey(
            spec.user.clone(),
            PrivateKeyWithHashAlg::new(Arc::new(key), hash),
        )
        .await
        .map_err(|e| auth_transport_error(spec, e.to_string()))?;
    tried.push(shown);
    Ok(result.success())
}

async fn try_ssh_agent(
    handle: &mut Handle<HostKeyGuard>,
    spec: &ConnectionSpec,
    rsa_hash: &mut Option<Option<HashAlg>>,
    tried: &mut Vec<String>,
) -> Result<bool, ConnectError> {
    // IdentityAgent: a socket, `none`, or (the default) $SSH_AUTH_SOCK.
    let socket = match spec.ssh.identity_agent.as_deref() {
        Some("none") => None,
        Some(path) if path != "SSH_AUTH_SOCK" => Some(PathBuf::from(path)),
        _ => std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from),
    };
    let Some(socket) = socket else {
        return Ok(false);
    };
    let Ok(mut agent) = AgentClient::connect_uds(&socket).await else {
        return Ok(false);
    };
    let Ok(identities) = agent.request_identities().await else {
        return Ok(false);
    };
    for identity in identities {
        let AgentIdentity::PublicKey { key, comment } = identity else {
            continue;
        };
        let hash = rsa_hash_for(handle, &key, rsa_hash).await;
        let label = if comment.is_empty() {
            format!("ssh-agent key {}", key.fingerprint(HashAlg::Sha256))
        } else {
            format!("ssh-agent key {comment}")
        };
        let result = handle
            .authenticate_publickey_with(spec.user.clone(), key, hash, &mut agent)
            .await;
        tried.push(label);
        match result {
            Ok(r) if r.success() => return Ok(true),
            Ok(_) => {}
            // The agent refused to sign (e.g. a confirm-only key): try the next one.
            Err(_) => {}
        }
    }
    Ok(false)
}

fn auth_transport_error(spec: &ConnectionSpec, message: String) -> ConnectError {
    ConnectError::Ssh {
        address: spec.address.clone(),
        port: spec.port,
        message: format!("during authentication as {}: {message}", spec.user),
    }
}

// ---------------------------------------------------------------------------------------
// Bootstrap

/// Runs `script` with /bin/sh whatever the user's login shell is.
fn sh_command(script: &str) -> String {
    debug_assert!(!script.contains('\''), "scripts are single-quoted");
    format!("exec /bin/sh -c '{script}'")
}

/// Prints `uname -sm`, then exactly one marker: run the cached agent (`exec`, so its
/// stdout continues this channel), ask for an upload, or give up on this platform.
pub(super) fn probe_script(agent: &AgentBinary) -> String {
    let name = agent.remote_name();
    let size = agent.bytes.len();
    sh_command(&format!(
        "u=$(uname -sm); echo \"$u\"; \
         if [ \"$u\" != \"{SUPPORTED_UNAME}\" ]; then echo {MARK_UNSUPPORTED}; exit 0; fi; \
         f=\"$HOME/.cache/turbo-play/{name}\"; \
         if [ -x \"$f\" ] && [ $(wc -c < \"$f\") -eq {size} ] 2>/dev/null; then echo {MARK_RUN}; exec \"$f\"; fi; \
         echo {MARK_UPLOAD}"
    ))
}

/// Receives the agent on stdin into a temp file next to the cache path, then renames it
/// into place, so a concurrent run never executes a half-written file.
pub(super) fn upload_script(agent: &AgentBinary, gzip: bool) -> String {
    let name = agent.remote_name();
    let receive = if gzip {
        format!("command -v gzip >/dev/null 2>&1 || exit {EXIT_NO_GZIP}; gzip -dc")
    } else {
        "cat".to_string()
    };
    sh_command(&format!(
        "umask 077; d=\"$HOME/.cache/turbo-play\"; t=\"$d/.{name}.$$\"; \
         mkdir -p \"$d\" || exit 8; \
         {receive} > \"$t\" && chmod 700 \"$t\" && mv -f \"$t\" \"$d/{name}\" || {{ rm -f \"$t\"; exit 8; }}"
    ))
}

pub(super) fn compressed_agent(agent: &AgentBinary) -> &'static [u8] {
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
struct RunningAgent {
    stdout: tokio::io::DuplexStream,
    stdin: russh::ChannelWriteHalf<russh::client::Msg>,
    diagnostics: Arc<Mutex<Diagnostics>>,
    pump: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Diagnostics {
    stderr: Vec<u8>,
    exit_status: Option<u32>,
}

impl Diagnostics {
    fn describe(&self) -> String {
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

async fn bootstrap(
    spec: &ConnectionSpec,
    agent: &AgentBinary,
    handle: &Handle<HostKeyGuard>,
) -> Result<AgentSession, ConnectError> {
    let mut report = BootstrapReport::default();
    loop {
        match probe(spec, agent, handle).await? {
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
                match AgentSession::start(stdout, writer, report.clone()).await {
                    Ok(session) => {
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
struct PumpGuard(tokio::task::JoinHandle<()>);

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

fn channel_error(spec: &ConnectionSpec, what: &str, e: russh::Error) -> ConnectError {
    bootstrap_error(spec, format!("{what}: {e}"))
}

async fn probe(
    spec: &ConnectionSpec,
    agent: &AgentBinary,
    handle: &Handle<HostKeyGuard>,
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
fn start_pump(
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

    #[test]
    fn known_host_key_types_are_asked_for_first() {
        use russh::keys::Algorithm;
        let defaults = host_key_preference(&[], russh::Preferred::DEFAULT.key.to_vec());
        assert_eq!(defaults[0], Algorithm::Ed25519);
        let rsa_first = host_key_preference(
            &["ssh-rsa".to_string()],
            russh::Preferred::DEFAULT.key.to_vec(),
        );
        assert!(
            matches!(rsa_first[0], Algorithm::Rsa { .. }),
            "{rsa_first:?}"
        );
        assert_eq!(rsa_first.len(), defaults.len());
        let ecdsa_first = host_key_preference(
            &["ecdsa-sha2-nistp384".to_string()],
            russh::Preferred::DEFAULT.key.to_vec(),
        );
        assert_eq!(ecdsa_first[0].as_str(), "ecdsa-sha2-nistp384");
    }

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

    #[test]
    fn unknown_key_message_says_how_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("k");
        assert!(
            std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&key_path)
                .status()
                .unwrap()
                .success()
        );
        let key = russh::keys::load_public_key(key_path.with_extension("pub")).unwrap();
        let files = vec![dir.path().join("known_hosts")];
        let err = verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::Yes, false),
            &files,
            &key,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("host key for [127.0.0.1]:2222 is not known (ED25519 SHA256:"),
            "{err}"
        );
        assert!(err.contains("`ssh-keyscan -p 2222 127.0.0.1 >> "), "{err}");
        assert!(
            err.ends_with("or set ANSIBLE_HOST_KEY_CHECKING=False"),
            "{err}"
        );

        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::No, false),
            &files,
            &key,
        )
        .unwrap();
        assert!(
            !files[0].exists(),
            "StrictHostKeyChecking=no records nothing"
        );
        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::AcceptNew, false),
            &files,
            &key,
        )
        .unwrap();
        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::Yes, false),
            &files,
            &key,
        )
        .unwrap();
    }
}
