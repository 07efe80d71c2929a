//! SSH logins started while the run still plans what the host's first task sends, so
//! that the handshake and authentication (most of a connection's wait, spent in the
//! server) overlap the planning. The agent's bootstrap then runs on the connection that
//! is ready, with the planned requests riding its exec as before.

use std::sync::Mutex;

use tokio::task::JoinHandle;

use super::{Connection, transport};
use crate::connection::{ConnectError, ConnectionKind, ConnectionSpec};

type Login = JoinHandle<Result<Connection, ConnectError>>;

/// A run's logins started ahead of their use, each taken by the first open of an agent
/// with the same spec; the ones never taken are dropped (logged out) with the run.
#[derive(Default)]
pub struct EarlyConnections {
    started: Mutex<Vec<(ConnectionSpec, Login)>>,
}

impl EarlyConnections {
    /// Starts logging in by `spec` (SSH only; a local agent has nothing to wait for),
    /// unless a login by the same spec is already under way.
    pub fn start(&self, spec: &ConnectionSpec) {
        if spec.kind != ConnectionKind::Ssh {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut started = self.started.lock().expect("early connections lock");
        if started.iter().any(|(s, _)| s == spec) {
            return;
        }
        let owned = spec.clone();
        let login = runtime.spawn(async move { transport::connect(&owned).await });
        started.push((spec.clone(), login));
    }

    /// The connection by `spec` started ahead, as it ends (its error is the open's:
    /// connecting again by the same spec would meet the same), or None.
    pub(super) async fn take(
        &self,
        spec: &ConnectionSpec,
    ) -> Option<Result<Connection, ConnectError>> {
        let login = {
            let mut started = self.started.lock().expect("early connections lock");
            let at = started.iter().position(|(s, _)| s == spec)?;
            started.swap_remove(at).1
        };
        // A login task that panicked leaves the open to connect itself.
        login.await.ok()
    }
}

impl Drop for EarlyConnections {
    fn drop(&mut self) {
        let started = self.started.get_mut().expect("early connections lock");
        for (_, login) in started.drain(..) {
            login.abort();
        }
    }
}
