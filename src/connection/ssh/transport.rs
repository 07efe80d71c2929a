//! The way to a host: a TCP connection, a direct-tcpip channel of the last jump host, or
//! a proxy command's stdio; then the SSH handshake with the host key check and the login
//! on that stream, each attempt tried again as `retry` says.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::host_key::{HostKeyGuard, host_key_preference};
use super::quick_ack::QuickAck;
use super::retry::{self, Failure};
use super::{Connection, auth, jump, proxy_command};
use crate::connection::known_hosts;
use crate::connection::{
    AddressFamily, ConnectError, ConnectionSpec, JumpHost, Proxy, Secret, SshSettings,
    StrictHostKeyChecking,
};

/// One SSH server on the way: a jump host or the host itself.
#[derive(Debug, Clone)]
pub(super) struct Hop {
    pub(super) address: String,
    pub(super) port: u16,
    pub(super) user: String,
    pub(super) identity_files: Vec<PathBuf>,
    pub(super) strict: StrictHostKeyChecking,
    pub(super) known_hosts_files: Vec<PathBuf>,
    pub(super) connect_timeout: Duration,
    pub(super) password: Option<Secret>,
    pub(super) retries: Option<u32>,
    /// Algorithms, keepalives, address family, bind address, agent and accept-new hashing.
    pub(super) ssh: SshSettings,
}

impl Hop {
    pub(super) fn target(spec: &ConnectionSpec) -> Hop {
        Hop {
            address: spec.address.clone(),
            port: spec.port,
            user: spec.user.clone(),
            identity_files: spec.identity_files.clone(),
            strict: spec.strict,
            known_hosts_files: spec.known_hosts_files.clone(),
            connect_timeout: spec.connect_timeout,
            password: spec.password.clone(),
            retries: spec.retries,
            ssh: spec.ssh.clone(),
        }
    }

    /// A jump host logs in with the keys its own ssh_config block names, then the host's
    /// keys and agent, never the host's password: that secret belongs to the host, not to
    /// every machine on the way.
    pub(super) fn bastion(spec: &ConnectionSpec, jump: &JumpHost) -> Hop {
        let mut identity_files = jump.identity_files.clone();
        for file in &spec.identity_files {
            if !identity_files.contains(file) {
                identity_files.push(file.clone());
            }
        }
        Hop {
            address: jump.address.clone(),
            port: jump.port.unwrap_or(22),
            user: jump.user.clone().unwrap_or_else(controller_user),
            identity_files,
            password: None,
            ..Hop::target(spec)
        }
    }
}

/// The user running turbo-play: a jump host's login when the chain names none, as
/// OpenSSH does.
pub(super) fn controller_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .or_else(|| crate::tilde::current_user_passwd().map(|(name, _)| name))
        .unwrap_or_else(|| "root".into())
}

/// The host's connection, logged in, by the way its spec says.
pub(super) async fn connect(spec: &ConnectionSpec) -> Result<Connection, ConnectError> {
    let hop = &Hop::target(spec);
    let seed = &spec.host;
    match &spec.proxy {
        Proxy::None => {
            retry::with_retries(hop.retries, seed, |_| async move {
                let _slot = retry::startup_slot(server_key("", hop)).await;
                let socket = tcp_connect(hop).await?;
                Ok(Connection::new(login(hop, socket).await?))
            })
            .await
        }
        Proxy::Jump(chain) => {
            let bastion = jump::through(spec, chain).await?;
            let bastion = &bastion;
            retry::with_retries(hop.retries, seed, |_| async move {
                let _slot = retry::startup_slot(server_key(bastion.route(), hop)).await;
                let handle = bastion.forward_and_login(hop).await?;
                let mut connection = Connection::new(handle);
                connection.keep.push(Box::new(bastion.clone()));
                Ok(connection)
            })
            .await
        }
        Proxy::Command(command) => {
            retry::with_retries(hop.retries, seed, |_| async move {
                let _slot = retry::startup_slot(server_key(command, hop)).await;
                proxy_command::connect(spec, hop, command).await
            })
            .await
        }
    }
}

/// The server `hop` is, as reached by `route` (nothing, a jump chain, a proxy command).
pub(super) fn server_key(route: &str, hop: &Hop) -> String {
    format!("{route}>{}:{}", hop.address, hop.port)
}

/// A logged-in connection, and where its handler writes why it ended.
pub(super) struct LoggedIn {
    pub(super) handle: Handle<HostKeyGuard>,
    pub(super) lost: super::ConnectionLoss,
}

/// Handshake (with the host key check) and login over `stream`.
pub(super) async fn login<S>(hop: &Hop, stream: S) -> Result<LoggedIn, Failure>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let known_types = known_hosts::known_key_types(&hop.known_hosts_files, &hop.address, hop.port);
    let mut preferred = hop
        .ssh
        .algorithms
        .preferred(|keys| host_key_preference(&known_types, keys));
    // Ask for a host certificate only where an @cert-authority line can vouch for one.
    if known_hosts::has_cert_authority(&hop.known_hosts_files, &hop.address, hop.port) {
        preferred.host_key_certificates = preferred.key.clone();
    }
    let (keepalive_interval, keepalive_max) = keepalives(&hop.ssh);
    let config = Arc::new(client::Config {
        nodelay: true,
        preferred,
        keepalive_interval,
        keepalive_max,
        inactivity_timeout: write_stall_limit(keepalive_interval, keepalive_max),
        ..Default::default()
    });
    let lost = super::ConnectionLoss::default();
    let verdict = Arc::new(Mutex::new(None));
    let guard = HostKeyGuard {
        address: hop.address.clone(),
        port: hop.port,
        strict: hop.strict,
        hash: hop.ssh.hash_known_hosts,
        files: hop.known_hosts_files.clone(),
        verdict: verdict.clone(),
        lost: lost.clone(),
        keepalive: (keepalive_interval, keepalive_max),
    };
    let ssh_error = |message: String| ConnectError::Ssh {
        address: hop.address.clone(),
        port: hop.port,
        message,
    };
    let handshake = tokio::time::timeout(
        hop.connect_timeout,
        client::connect_stream(config, stream, guard),
    )
    .await;
    let mut handle = match handshake {
        Ok(Ok(handle)) => handle,
        Ok(Err(e)) => {
            if let Some(refusal) = verdict.lock().expect("verdict lock").take() {
                return Err(Failure::Final(refusal));
            }
            return Err(Failure::Transient(ssh_error(format!(
                "handshake failed: {e}"
            ))));
        }
        Err(_) => {
            return Err(Failure::Network(ssh_error(format!(
                "no SSH handshake within {} s",
                hop.connect_timeout.as_secs_f64()
            ))));
        }
    };
    auth::authenticate(&mut handle, hop).await?;
    Ok(LoggedIn { handle, lost })
}

/// Without ServerAliveInterval, a keepalive every 15 s and the connection given up after
/// 3 unanswered (ssh's default ServerAliveCountMax): a peer that silently vanished (a cut
/// cable, a firewall dropping the flow) is noticed within a minute, where ssh itself would
/// wait for TCP's own keepalive (two hours on Linux). 0 turns them off, as in ssh.
pub(super) const DEFAULT_SERVER_ALIVE_INTERVAL: Duration = Duration::from_secs(15);
pub(super) const DEFAULT_SERVER_ALIVE_COUNT_MAX: usize = 3;

/// russh's keepalive interval and count from ServerAliveInterval/ServerAliveCountMax.
pub(super) fn keepalives(ssh: &SshSettings) -> (Option<Duration>, usize) {
    let interval = match ssh.server_alive_interval {
        Some(interval) if interval.is_zero() => None,
        Some(interval) => Some(interval),
        None => Some(DEFAULT_SERVER_ALIVE_INTERVAL),
    };
    let max = ssh
        .server_alive_count_max
        .map_or(DEFAULT_SERVER_ALIVE_COUNT_MAX, |n| n as usize);
    (interval, max)
}

/// How long the connection may go without hearing from the server while keepalives are
/// on. russh does not poll its keepalive timer while a write is blocked (on a real link
/// a dead peer ACKs nothing, and an upload fills the small send buffer at once; TCP
/// would retry for about 15 minutes): its inactivity timer, which it does poll then,
/// bounds that stall. Answered keepalives reset it, so an idle but live
/// connection never reaches it; without keepalives nothing bounds an idle connection, as
/// in ssh.
fn write_stall_limit(interval: Option<Duration>, max: usize) -> Option<Duration> {
    let interval = interval?;
    let unanswered = u32::try_from(max.max(1))
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    Some(interval.saturating_mul(unanswered))
}

pub(super) async fn tcp_connect(hop: &Hop) -> Result<QuickAck, Failure> {
    let tcp_error = |reason: String| ConnectError::Tcp {
        address: hop.address.clone(),
        port: hop.port,
        reason,
    };
    let addresses: Vec<_> = tokio::time::timeout(
        hop.connect_timeout,
        tokio::net::lookup_host((hop.address.as_str(), hop.port)),
    )
    .await
    .map_err(|_| {
        Failure::Final(ConnectError::Resolve {
            address: hop.address.clone(),
            reason: "lookup timed out".into(),
        })
    })?
    .map_err(|e| {
        Failure::Final(ConnectError::Resolve {
            address: hop.address.clone(),
            reason: resolve_reason(&e),
        })
    })?
    .filter(|a: &std::net::SocketAddr| match hop.ssh.address_family {
        AddressFamily::Any => true,
        AddressFamily::Inet => a.is_ipv4(),
        AddressFamily::Inet6 => a.is_ipv6(),
    })
    .collect();
    let mut last_error = "Name or service not known".to_string();
    let mut reset = false;
    for address in addresses {
        let attempt = connect_from(address, hop.ssh.bind_address.as_deref());
        match tokio::time::timeout(hop.connect_timeout, attempt).await {
            Ok(Ok(socket)) => {
                let _ = socket.set_nodelay(true);
                return Ok(QuickAck(socket));
            }
            Ok(Err(e)) => {
                reset = e.kind() == std::io::ErrorKind::ConnectionReset;
                last_error = io_reason(&e);
            }
            Err(_) => last_error = "Connection timed out".into(),
        }
    }
    if reset {
        return Err(Failure::Transient(tcp_error(last_error)));
    }
    Err(Failure::Network(tcp_error(last_error)))
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
pub(super) fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// getaddrinfo's words, as ssh prints them ("Name or service not known").
fn resolve_reason(e: &std::io::Error) -> String {
    let text = io_reason(e);
    text.strip_prefix("failed to lookup address information: ")
        .map(str::to_string)
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalives_default_to_15_s_times_3_and_zero_turns_them_off() {
        let mut ssh = SshSettings::default();
        assert_eq!(keepalives(&ssh), (Some(Duration::from_secs(15)), 3));
        ssh.server_alive_interval = Some(Duration::from_secs(1));
        ssh.server_alive_count_max = Some(2);
        assert_eq!(keepalives(&ssh), (Some(Duration::from_secs(1)), 2));
        ssh.server_alive_interval = Some(Duration::ZERO);
        assert_eq!(keepalives(&ssh).0, None);
    }

    #[test]
    fn a_stalled_write_is_bounded_only_while_keepalives_are_on() {
        // As long as the unanswered keepalives take: interval x (count + 1).
        assert_eq!(
            write_stall_limit(Some(Duration::from_secs(15)), 3),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            write_stall_limit(Some(Duration::from_secs(1)), 0),
            Some(Duration::from_secs(2))
        );
        assert_eq!(write_stall_limit(None, 3), None);
    }
}
