//! The SSH transport: the way to the host (direct TCP, jump hosts over direct-tcpip
//! channels, or a proxy command's stdio), host key verification, authentication, retries
//! under load, and the agent bootstrap over exec channels.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::Handle;
use russh::{Disconnect, Sig};

use super::{ConnectError, ConnectionSpec, agent_for};
use crate::agent_session::{AgentSession, EndWitness, Prelude, StreamEnd};

mod auth;
mod bootstrap;
mod early;
mod escalator;
mod host_key;
mod jump;
mod proxy_command;
mod quick_ack;
mod retry;
mod transport;

pub(super) use bootstrap::{cache_checks, compressed_agent};
pub use early::EarlyConnections;
pub use escalator::Escalator;

use bootstrap::{Diagnostics, PumpGuard, RunningAgent, channel_error, start_pump};
use host_key::HostKeyGuard;

pub(super) async fn open_agent(
    spec: &ConnectionSpec,
    prelude: &mut Prelude,
    early: Option<&EarlyConnections>,
) -> Result<(AgentSession, Escalator), ConnectError> {
    let agent = agent_for(&spec.host)?;
    let ahead = match early {
        Some(early) => early.take(spec).await,
        None => None,
    };
    let connection = Arc::new(match ahead {
        Some(connected) => connected?,
        None => transport::connect(spec).await?,
    });
    let session = bootstrap::bootstrap(spec, agent, connection.handle(), prelude)
        .await
        .map_err(|e| with_lost_cause(e, &connection))?;
    session.add_end_witness(connection_witness(&connection));
    session.set_goodbye(goodbye(&connection));
    session.keep_alive(Box::new(connection.clone()));
    Ok((
        session,
        Escalator {
            connection,
            spec: spec.clone(),
        },
    ))
}

/// Owns an SSH connection for its users' lifetime and says goodbye when dropped; `keep`
/// holds what the connection's stream depends on (the jump host it goes through, the
/// proxy command's child).
struct Connection {
    handle: Option<Handle<HostKeyGuard>>,
    lost: ConnectionLoss,
    keep: Vec<Box<dyn Any + Send + Sync>>,
}

/// Why a logged-in connection ended, in ssh's words, once it has.
type ConnectionLoss = Arc<Mutex<Option<String>>>;

impl Connection {
    fn new(logged_in: transport::LoggedIn) -> Connection {
        Connection {
            handle: Some(logged_in.handle),
            lost: logged_in.lost,
            keep: Vec::new(),
        }
    }

    fn handle(&self) -> &Handle<HostKeyGuard> {
        self.handle.as_ref().expect("handle present until drop")
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let keep = std::mem::take(&mut self.keep);
        if let (Some(handle), Ok(runtime)) =
            (self.handle.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(async move {
                let _ = handle.disconnect(Disconnect::ByApplication, "", "en").await;
                // The stream under this connection goes only after the goodbye went out.
                drop(keep);
            });
        }
    }
}

/// The end of the run for the sessions on `connection`: SSH's disconnect, which the
/// server answers with nothing (closing the agent's channel first would make it send the
/// agent's exit status and close back, a round trip nobody needs). Waits only until
/// russh's session has written it and ended, bounded.
fn goodbye(connection: &Arc<Connection>) -> crate::agent_session::Goodbye {
    let connection = Arc::downgrade(connection);
    Box::new(move || {
        let connection = connection.clone();
        Box::pin(async move {
            let Some(connection) = connection.upgrade() else {
                return;
            };
            let handle = connection.handle();
            if handle
                .disconnect(Disconnect::ByApplication, "", "en")
                .await
                .is_err()
            {
                return;
            }
            let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
            while !handle.is_closed() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    })
}

/// A bootstrap that failed because the connection went away says why it did (russh's
/// channel errors only say "Disconnected").
fn with_lost_cause(error: ConnectError, connection: &Connection) -> ConnectError {
    let lost = connection.lost.lock().expect("lost lock").clone();
    match (error, lost) {
        (ConnectError::Bootstrap { host, message }, Some(words)) => ConnectError::Bootstrap {
            host,
            message: format!("{message} (the connection was lost: {words})"),
        },
        (error, _) => error,
    }
}

/// What russh's end of a connection means, in the words ssh uses for it.
fn lost_words(error: &russh::Error, (interval, max): (Option<Duration>, usize)) -> String {
    let every = interval.map_or(String::new(), |i| {
        format!(" sent every {} s", i.as_secs_f64())
    });
    match error {
        // The stall limit is the keepalives' too (transport::write_stall_limit).
        russh::Error::KeepaliveTimeout | russh::Error::InactivityTimeout => format!(
            "Timeout, server not responding: no answer to {max} keepalives{every} \
             (ServerAliveInterval, ServerAliveCountMax)"
        ),
        russh::Error::IO(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "Connection closed by remote host".into()
        }
        russh::Error::IO(e) => transport::io_reason(e),
        russh::Error::HUP | russh::Error::Disconnect => "Connection closed by remote host".into(),
        other => other.to_string(),
    }
}

/// Tells why the agent's stream ended when the connection under it did: the handler's
/// words, or the bare fact once russh's session is gone without any.
fn connection_witness(connection: &Arc<Connection>) -> EndWitness {
    let connection = Arc::downgrade(connection);
    Box::new(move || {
        let connection = connection.upgrade()?;
        if let Some(words) = connection.lost.lock().expect("lost lock").clone() {
            return Some(StreamEnd::ConnectionLost(words));
        }
        connection
            .handle()
            .is_closed()
            .then(|| StreamEnd::ConnectionLost("Connection closed".into()))
    })
}

/// Tells why the agent's stream ended from its channel: the exit-signal or exit-status
/// sshd sent for the agent's process.
fn channel_witness(diagnostics: Arc<Mutex<Diagnostics>>) -> EndWitness {
    Box::new(move || {
        let diagnostics = diagnostics.lock().expect("diagnostics lock");
        if let Some((signal, core_dumped)) = &diagnostics.exit_signal {
            return Some(StreamEnd::AgentKilled {
                signal: signal_name(signal),
                core_dumped: *core_dumped,
            });
        }
        diagnostics.exit_status.map(StreamEnd::AgentExited)
    })
}

/// The signal's name as RFC 4254 spells it ("KILL"), or what the server sent.
fn signal_name(signal: &Sig) -> String {
    match signal {
        Sig::ABRT => "ABRT",
        Sig::ALRM => "ALRM",
        Sig::FPE => "FPE",
        Sig::HUP => "HUP",
        Sig::ILL => "ILL",
        Sig::INT => "INT",
        Sig::KILL => "KILL",
        Sig::PIPE => "PIPE",
        Sig::QUIT => "QUIT",
        Sig::SEGV => "SEGV",
        Sig::TERM => "TERM",
        Sig::USR1 => "USR1",
        Sig::Custom(name) => name,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_worded_as_ssh_words_them() {
        let keepalive = (Some(Duration::from_secs(1)), 2);
        assert_eq!(
            lost_words(&russh::Error::KeepaliveTimeout, keepalive),
            "Timeout, server not responding: no answer to 2 keepalives sent every 1 s (ServerAliveInterval, ServerAliveCountMax)"
        );
        assert_eq!(
            lost_words(&russh::Error::InactivityTimeout, keepalive),
            lost_words(&russh::Error::KeepaliveTimeout, keepalive)
        );
        let reset = std::io::Error::from_raw_os_error(104);
        assert_eq!(
            lost_words(&russh::Error::IO(reset), keepalive),
            "Connection reset by peer"
        );
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(
            lost_words(&russh::Error::IO(eof), keepalive),
            "Connection closed by remote host"
        );
    }

    #[test]
    fn the_channel_witness_prefers_the_signal_to_the_status() {
        let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
        let witness = channel_witness(diagnostics.clone());
        assert_eq!(witness(), None);
        diagnostics.lock().unwrap().exit_status = Some(1);
        assert_eq!(witness(), Some(StreamEnd::AgentExited(1)));
        diagnostics.lock().unwrap().exit_signal = Some((Sig::SEGV, true));
        assert_eq!(
            witness(),
            Some(StreamEnd::AgentKilled {
                signal: "SEGV".into(),
                core_dumped: true
            })
        );
    }
}
