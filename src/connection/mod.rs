//! Getting an agent running on a host: what to connect to (from inventory vars, the way
//! Ansible's ssh plugin reads them), the SSH connection itself, the agent bootstrap, and
//! the local "connection" that runs the agent as a child process.

pub mod known_hosts;
mod local;
mod privilege;
mod pty;
mod spec;
mod ssh;
mod ssh_config;

pub use privilege::{BecomeMethod, BecomeSpec};
pub use spec::{JumpHost, Proxy, Secret, parse_proxy_command, parse_proxy_jump};
pub use ssh::EarlyConnections;
pub use ssh_config::{AddressFamily, Algorithms, ConfigFiles, SshSettings};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent_session::{AgentSession, Prelude};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionKind {
    Ssh,
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictHostKeyChecking {
    /// Unknown and changed keys are refused.
    Yes,
    /// Unknown keys are accepted without recording them; changed keys are still refused.
    No,
    /// Unknown keys are accepted and appended to the first known_hosts file.
    AcceptNew,
}

/// Everything needed to reach one host, resolved from its inventory vars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSpec {
    /// The inventory name, for messages.
    pub host: String,
    pub kind: ConnectionKind,
    /// `ansible_host`, else the inventory name.
    pub address: String,
    pub port: u16,
    pub user: String,
    /// Tried in order before the ssh-agent and the default keys.
    pub identity_files: Vec<PathBuf>,
    pub strict: StrictHostKeyChecking,
    /// Read in order: UserKnownHostsFile's, then GlobalKnownHostsFile's; accept-new appends
    /// to the first (`/dev/null` first when UserKnownHostsFile is none).
    pub known_hosts_files: Vec<PathBuf>,
    pub connect_timeout: Duration,
    /// Direct, through jump hosts, or over a command's stdio.
    pub proxy: Proxy,
    /// `ansible_password` (or `-k`, `--connection-password-file`): tried after the keys,
    /// as a password and as the answer to keyboard-interactive prompts. Never sent to a
    /// jump host.
    pub password: Option<Secret>,
    /// How many times a connection that failed before authentication is tried again
    /// (`ansible_ssh_retries`, ConnectionAttempts - 1). None: turbo-play's default, which
    /// rides out sshd's MaxStartups drops (see `ssh::retry`).
    pub retries: Option<u32>,
    /// The rest of what ssh_config and the ssh args say.
    pub ssh: SshSettings,
}

/// Settings from the command line / ansible.cfg that host vars override.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionDefaults {
    pub remote_user: Option<String>,
    pub private_key: Option<PathBuf>,
    pub host_key_checking: Option<bool>,
    pub timeout: Option<Duration>,
    /// ansible.cfg `[ssh_connection] ssh_args` / `ANSIBLE_SSH_ARGS`: first on Ansible's ssh
    /// command line, so their `-o` options (and proxy) win over everything else.
    pub ssh_args: Option<String>,
    /// `--ssh-common-args` / `--ssh-extra-args`, under the host's `ansible_ssh_*_args`.
    pub ssh_common_args: Option<String>,
    pub ssh_extra_args: Option<String>,
    /// The ssh_config files when the ssh args name none (`-F`); `None`: `~/.ssh/config`
    /// then `/etc/ssh/ssh_config`.
    pub ssh_config: Option<ConfigFiles>,
    /// `-k` / `--connection-password-file`, under the host's `ansible_password`.
    pub password: Option<Secret>,
    /// `ANSIBLE_SSH_RETRIES` / ansible.cfg `[ssh_connection] retries`.
    pub retries: Option<u32>,
}

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The host's vars do not describe a usable connection.
    #[error("host {host}: {message}")]
    Config { host: String, message: String },
    #[error("ssh: Could not resolve hostname {address}: {reason}")]
    Resolve { address: String, reason: String },
    #[error("ssh: connect to host {address} port {port}: {reason}")]
    Tcp {
        address: String,
        port: u16,
        reason: String,
    },
    #[error(
        "host key for {name} is not known ({key_type} {fingerprint}): add it with `{keyscan}`, or set ANSIBLE_HOST_KEY_CHECKING=False"
    )]
    UnknownHostKey {
        name: String,
        key_type: String,
        fingerprint: String,
        keyscan: String,
    },
    #[error(
        "REMOTE HOST IDENTIFICATION HAS CHANGED for {name} ({} line {line}): refusing to connect; if the host was reinstalled, remove the old key with `ssh-keygen -R '{name}'`",
        .file.display()
    )]
    HostKeyChanged {
        name: String,
        file: PathBuf,
        line: usize,
    },
    #[error("host key for {name} is marked @revoked ({} line {line}): refusing to connect", .file.display())]
    HostKeyRevoked {
        name: String,
        file: PathBuf,
        line: usize,
    },
    #[error("known_hosts: {0}")]
    KnownHosts(String),
    #[error("Permission denied ({}) for user {user}: {}", .methods.join(","), tried_list(.tried))]
    AuthFailed {
        user: String,
        /// The methods turbo-play tried, in OpenSSH's words (publickey, password,
        /// keyboard-interactive).
        methods: Vec<String>,
        tried: Vec<String>,
    },
    /// A bastion of the ProxyJump chain could not be reached or logged into; the message
    /// is its own failure, in the words above.
    #[error("jump host {hop}: {message}")]
    Jump { hop: String, message: String },
    /// The ProxyCommand ended (or could not start) before the SSH handshake was done.
    #[error("ProxyCommand `{command}` {outcome}")]
    ProxyCommand { command: String, outcome: String },
    #[error("ssh to {address} port {port}: {message}")]
    Ssh {
        address: String,
        port: u16,
        message: String,
    },
    #[error("agent not available for {uname}: turbo-play ships an agent for Linux x86_64 only")]
    Unsupported { uname: String },
    #[error("agent bootstrap on {host}: {message}")]
    Bootstrap { host: String, message: String },
    /// Privilege escalation failed, in Ansible's words: the task fails, the host stays
    /// reachable.
    #[error("{0}")]
    Become(String),
    /// The become prompt (or the agent) never came in time: Ansible counts the host
    /// unreachable.
    #[error("{0}")]
    BecomeTimeout(String),
}

fn tried_list(tried: &[String]) -> String {
    if tried.is_empty() {
        "no private key to try (set ansible_ssh_private_key_file, load a key into ssh-agent, or create ~/.ssh/id_ed25519)".to_string()
    } else {
        format!("tried {}", tried.join(", "))
    }
}

/// Connects (one SSH connection for the whole run), bootstraps the agent, returns the
/// session and what opens become agents beside it. For `ConnectionKind::Local` the agent
/// runs as a child of this process.
pub async fn open_host(spec: &ConnectionSpec) -> Result<(AgentSession, Escalator), ConnectError> {
    open_host_with(spec, &mut Prelude::default(), None).await
}

/// [`open_host`], with `prelude`'s requests written to the agent as it starts, ahead of
/// its hello (over SSH, a round trip saved): once the session is open, their replies come
/// to the prelude's callers. After a failed open they never come (drop the prelude).
/// A login by the same spec in `early` is taken rather than another started.
pub async fn open_host_with(
    spec: &ConnectionSpec,
    prelude: &mut Prelude,
    early: Option<&EarlyConnections>,
) -> Result<(AgentSession, Escalator), ConnectError> {
    match spec.kind {
        ConnectionKind::Ssh => {
            let (session, escalator) = ssh::open_agent(spec, prelude, early).await?;
            Ok((session, Escalator::Ssh(Arc::new(escalator))))
        }
        ConnectionKind::Local => {
            let session = local::open_agent(spec, prelude).await?;
            Ok((session, Escalator::Local(Box::new(spec.clone()))))
        }
    }
}

/// The login agent alone, for callers that never become another user.
pub async fn open_agent(spec: &ConnectionSpec) -> Result<AgentSession, ConnectError> {
    open_host(spec).await.map(|(session, _)| session)
}

/// Opens agents that run as another user, beside a host's login agent: on another channel
/// of its SSH connection, or as another local child.
#[derive(Clone)]
pub enum Escalator {
    Ssh(Arc<ssh::Escalator>),
    Local(Box<ConnectionSpec>),
}

/// Told the command line an escalation runs, before it runs (Ansible shows its `EXEC`
/// line at -vvv).
pub type ExecShown<'a> = &'a (dyn Fn(&str) + Send + Sync);

impl Escalator {
    pub async fn open(
        &self,
        become_: &BecomeSpec,
        shown: ExecShown<'_>,
    ) -> Result<AgentSession, ConnectError> {
        match self {
            Escalator::Ssh(ssh) => ssh.open(become_, shown).await,
            Escalator::Local(spec) => local::open_become(spec, become_, shown).await,
        }
    }
}

/// The agent bytes for this run, or a bootstrap error naming the host.
fn agent_for(host: &str) -> Result<&'static crate::agent_binary::AgentBinary, ConnectError> {
    crate::agent_binary::agent_binary().map_err(|message| ConnectError::Bootstrap {
        host: host.to_string(),
        message,
    })
}

/// The controller user's home, for `~` in paths and the default keys.
pub(crate) fn local_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    crate::tilde::current_user_passwd().map(|(_, home)| PathBuf::from(home))
}
