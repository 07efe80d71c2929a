//! The SSH transport: the way to the host (direct TCP, jump hosts over direct-tcpip
//! channels, or a proxy command's stdio), host key verification, authentication, retries
//! under load, and the agent bootstrap over exec channels.

use std::any::Any;
use std::sync::Arc;

use russh::Disconnect;
use russh::client::Handle;

use super::{ConnectError, ConnectionSpec, agent_for};
use crate::agent_session::AgentSession;

mod auth;
mod bootstrap;
mod escalator;
mod host_key;
mod jump;
mod proxy_command;
mod retry;
mod transport;

pub(super) use bootstrap::{cache_checks, compressed_agent};
pub use escalator::Escalator;

use bootstrap::{Diagnostics, PumpGuard, RunningAgent, channel_error, start_pump};
use host_key::HostKeyGuard;

pub(super) async fn open_agent(
    spec: &ConnectionSpec,
) -> Result<(AgentSession, Escalator), ConnectError> {
    let agent = agent_for(&spec.host)?;
    let connection = Arc::new(transport::connect(spec).await?);
    let session = bootstrap::bootstrap(spec, agent, connection.handle()).await?;
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
    keep: Vec<Box<dyn Any + Send + Sync>>,
}

impl Connection {
    fn new(handle: Handle<HostKeyGuard>) -> Connection {
        Connection {
            handle: Some(handle),
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
