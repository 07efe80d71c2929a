//! Jump hosts (ProxyJump): one SSH connection per bastion, shared by every host behind
//! it, each next hop reached over a direct-tcpip channel of the one before (no `ssh`
//! process). A bastion is keyed by its login and the chain that leads to it, so
//! `-J a,b` and `-J b` are different connections to b.
//!
//! Opening channels is bounded per bastion by [`OPENING_PER_BASTION`]. sshd's MaxSessions
//! does not apply: it counts shell, exec and subsystem sessions, never forwarded channels
//! (a bastion with the default MaxSessions 10 carries 40 hosts at once in the tests). What
//! protects the hosts behind it is the per-server bound of `retry::startup_slot` (their
//! MaxStartups); this one only keeps a very large fleet from queueing thousands of
//! channel opens and handshakes in the bastion's one sshd process at once. It covers the
//! opening and the login, not the channel's life. At 10 (sshd's MaxSessions, the earlier
//! bound) 500 hosts behind one bastion logged in ten at a time: 12.7 s for a rerun that
//! takes 7.0 s directly.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::Semaphore;

use super::Connection;
use super::retry::{self, Failure};
use super::transport::{self, Hop};
use crate::connection::{ConnectError, ConnectionSpec, JumpHost};

/// Channel opens and logins in flight through one bastion.
pub(super) const OPENING_PER_BASTION: usize = 100;

/// A logged-in bastion.
pub(super) struct Bastion {
    connection: Connection,
    /// `user@host:port`, for messages.
    label: String,
    /// The chain up to and including this bastion, its key in the pool.
    route: String,
    opening: Semaphore,
}

impl Bastion {
    /// A direct-tcpip channel to `hop`, and the SSH handshake and login over it.
    pub(super) async fn forward_and_login(
        &self,
        hop: &Hop,
    ) -> Result<transport::LoggedIn, Failure> {
        let _permit = self
            .opening
            .acquire()
            .await
            .expect("semaphore never closed");
        let channel = self
            .connection
            .handle()
            .channel_open_direct_tcpip(hop.address.clone(), hop.port.into(), "127.0.0.1", 0)
            .await
            .map_err(|e| {
                Failure::Network(ConnectError::Tcp {
                    address: hop.address.clone(),
                    port: hop.port,
                    reason: format!("jump host {} could not open it: {e}", self.label),
                })
            })?;
        transport::login(hop, channel.into_stream()).await
    }

    pub(super) fn route(&self) -> &str {
        &self.route
    }

    fn alive(&self) -> bool {
        !self.connection.handle().is_closed()
    }
}

/// The last bastion of `chain`, connected through the ones before it.
pub(super) async fn through(
    spec: &ConnectionSpec,
    chain: &[JumpHost],
) -> Result<Arc<Bastion>, ConnectError> {
    let mut previous: Option<Arc<Bastion>> = None;
    for end in 1..=chain.len() {
        previous = Some(bastion(spec, &chain[..end], previous).await?);
    }
    previous.ok_or_else(|| ConnectError::Config {
        host: spec.host.clone(),
        message: "ProxyJump names no jump host".into(),
    })
}

/// One pool entry. Hosts waiting while another connects share its outcome: a bastion
/// that cannot be reached fails every host behind it once, not once per host.
#[derive(Default)]
struct Slot {
    /// Connection attempts finished, for waiters to see whether one ended while they
    /// waited.
    finished: AtomicU64,
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Weak: the bastion goes when the last host behind it has gone.
    bastion: Weak<Bastion>,
    failure: Option<(String, String)>,
}

fn pool() -> &'static Mutex<HashMap<String, Arc<Slot>>> {
    static POOL: OnceLock<Mutex<HashMap<String, Arc<Slot>>>> = OnceLock::new();
    POOL.get_or_init(Default::default)
}

async fn bastion(
    spec: &ConnectionSpec,
    chain: &[JumpHost],
    previous: Option<Arc<Bastion>>,
) -> Result<Arc<Bastion>, ConnectError> {
    let jump = chain.last().expect("a chain of one or more");
    let hop = Hop::bastion(spec, jump);
    let label = jump.describe(&hop.user);
    let key = chain
        .iter()
        .map(|j| j.describe(&Hop::bastion(spec, j).user))
        .collect::<Vec<_>>()
        .join(",");
    let slot = pool()
        .lock()
        .expect("bastion pool lock")
        .entry(key.clone())
        .or_default()
        .clone();
    let seen = slot.finished.load(Ordering::Acquire);
    let mut state = slot.state.lock().await;
    if let Some(bastion) = state.bastion.upgrade()
        && bastion.alive()
    {
        return Ok(bastion);
    }
    if slot.finished.load(Ordering::Acquire) != seen
        && let Some((hop, message)) = &state.failure
    {
        return Err(ConnectError::Jump {
            hop: hop.clone(),
            message: message.clone(),
        });
    }
    let hop = &hop;
    let previous_ref = &previous;
    let route = previous.as_ref().map(|p| p.route.as_str()).unwrap_or("");
    let connected = retry::with_retries(hop.retries, &label, |_| async move {
        let _slot = retry::startup_slot(transport::server_key(route, hop)).await;
        let handle = match previous_ref {
            None => transport::login(hop, transport::tcp_connect(hop).await?).await?,
            Some(before) => before.forward_and_login(hop).await?,
        };
        Ok(handle)
    })
    .await;
    slot.finished.fetch_add(1, Ordering::Release);
    match connected {
        Ok(handle) => {
            let mut connection = Connection::new(handle);
            if let Some(before) = previous {
                connection.keep.push(Box::new(before));
            }
            let bastion = Arc::new(Bastion {
                connection,
                label,
                route: key,
                opening: Semaphore::new(OPENING_PER_BASTION),
            });
            state.bastion = Arc::downgrade(&bastion);
            state.failure = None;
            Ok(bastion)
        }
        Err(e) => {
            // A bastion's own failure already names it; one behind it says which it was.
            let (hop, message) = match e {
                ConnectError::Jump { hop, message } => (hop, message),
                other => (label, other.to_string()),
            };
            state.failure = Some((hop.clone(), message.clone()));
            Err(ConnectError::Jump { hop, message })
        }
    }
}
