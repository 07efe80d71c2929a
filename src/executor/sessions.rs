//! A host's agents: one per connection, login, address and port, opened the first time
//! a task needs it, and the become agents opened beside a login agent.

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::{HostState, RunContext};
use crate::agent_session::{AgentSession, Prelude};
use crate::connection::{BecomeSpec, ConnectError, ConnectionSpec, Escalator, open_host_with};
use crate::playbook::Play;
use crate::report::events::Event;

/// A host's agent for one connection (and become user), opened the first time a task
/// needs it, with what opens become agents beside a login agent.
pub(super) type SessionCell =
    Arc<OnceCell<Result<(AgentSession, Option<Escalator>), SessionFailure>>>;

/// Why a task could not get its agent: the host is unreachable, or only this task fails
/// (privilege escalation refused, in Ansible's words; the host stays in the play).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionFailure {
    Unreachable(String),
    Failed(String),
}

impl RunContext {
    /// The host's agent session for this task, connecting on first use: one per kind,
    /// login, address and port, so a task whose `connection`, `remote_user` or `port`
    /// differs from the play's gets a session of its own. Connecting happens inside the
    /// host's own job, so hosts connect concurrently. With `become`, the agent running as
    /// the become user beside the login agent.
    pub(crate) async fn session(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
        become_: Option<&BecomeSpec>,
    ) -> Result<AgentSession, SessionFailure> {
        let (login_key, login) = self.login_session(host, play, task).await?;
        let Some(become_) = become_ else {
            return Ok(login.0);
        };
        let escalator = login.1.expect("a login session has its escalator");
        let key = format!("{login_key}|{}", become_.session_key());
        let cell = host
            .sessions
            .lock()
            .expect("sessions lock")
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            // Ansible wraps what the connection raised as the task's error.
            let shown = |line: &str| {
                self.emit(Event::Verbose {
                    level: 3,
                    text: format!("<{}> EXEC {line}", host.name),
                })
            };
            let session = escalator.open(become_, &shown).await.map_err(|e| match e {
                ConnectError::Become(message) => {
                    SessionFailure::Failed(format!("Task failed: {message}"))
                }
                ConnectError::BecomeTimeout(message) => {
                    SessionFailure::Unreachable(format!("Task failed: {message}"))
                }
                other => SessionFailure::Unreachable(other.to_string()),
            })?;
            Ok((session, None))
        })
        .await
        .clone()
        .map(|(session, _)| session)
    }

    /// An agent on the controller, as the user running turbo-play (Ansible's synchronize
    /// makes a `local` connection of its own for the controller's side, whatever the
    /// inventory says of localhost). Opened once per run.
    pub(crate) async fn controller_session(&self) -> Result<AgentSession, SessionFailure> {
        self.controller
            .get_or_init(|| async {
                let mut vars = serde_json::Map::new();
                vars.insert("ansible_connection".into(), "local".into());
                let spec = ConnectionSpec::from_host_vars(
                    "localhost",
                    &vars,
                    &self.opts.connection_defaults,
                )
                .map_err(|e| SessionFailure::Failed(e.to_string()))?;
                let (session, _) = open_host_with(&spec, &mut Prelude::default(), None)
                    .await
                    .map_err(|e| SessionFailure::Failed(e.to_string()))?;
                Ok(session)
            })
            .await
            .clone()
    }

    /// The key of the session a task's ops go to (as [`Self::session`] would open it),
    /// without connecting.
    pub(crate) fn session_key(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
        become_: Option<&BecomeSpec>,
    ) -> Result<String, SessionFailure> {
        let (login_key, _) = self.login_target(host, play, task)?;
        Ok(match become_ {
            Some(become_) => format!("{login_key}|{}", become_.session_key()),
            None => login_key,
        })
    }

    /// The session of `key` when it is open.
    pub(crate) fn open_session(&self, host: &HostState, key: &str) -> Option<AgentSession> {
        let cell = host
            .sessions
            .lock()
            .expect("sessions lock")
            .get(key)?
            .clone();
        cell.get()
            .and_then(|opened| opened.as_ref().ok())
            .map(|(session, _)| session.clone())
    }

    /// The task's login session, opened with `prelude` sent to the agent as it starts
    /// when it is not open yet (the prelude is left as it was when it is).
    pub(crate) async fn login_session_with(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
        prelude: &mut Prelude,
    ) -> Result<AgentSession, SessionFailure> {
        let (key, spec) = self.login_target(host, play, task)?;
        let ((session, _), _) = self.open_login(host, key, spec, prelude).await?;
        Ok(session)
    }

    async fn login_session(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
    ) -> Result<(String, (AgentSession, Option<Escalator>)), SessionFailure> {
        let (key, spec) = self.login_target(host, play, task)?;
        let (opened, key) = self
            .open_login(host, key, spec, &mut Prelude::default())
            .await?;
        Ok((key, opened))
    }

    async fn open_login(
        &self,
        host: &HostState,
        key: String,
        spec: ConnectionSpec,
        prelude: &mut Prelude,
    ) -> Result<((AgentSession, Option<Escalator>), String), SessionFailure> {
        let cell = host
            .sessions
            .lock()
            .expect("sessions lock")
            .entry(key.clone())
            .or_default()
            .clone();
        let opened = cell
            .get_or_init(|| async {
                let (session, escalator) =
                    open_host_with(&spec, prelude, Some(&self.early_connections))
                        .await
                        .map_err(|e| SessionFailure::Unreachable(e.to_string()))?;
                let b = session.bootstrap();
                self.emit(Event::AgentReady {
                    host: host.name.clone(),
                    uploaded: b.uploaded,
                    upload_bytes: b.upload_bytes,
                    replaced_stale: b.replaced_stale,
                });
                Ok((session, Some(escalator)))
            })
            .await
            .clone()?;
        Ok((opened, key))
    }

    /// Starts the login of the task's session while the task is still planned, when the
    /// host has no such session yet and the task needs its host: the first open of that
    /// session then takes the login as it ends. A login nothing takes is never reported
    /// (Ansible does not connect for a play whose tasks all skip its host).
    pub(crate) fn connect_ahead(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
    ) {
        if !task.module.caps().requires_connection || task.keywords.delegate_to.is_some() {
            return;
        }
        let Ok((key, spec)) = self.login_target(host, play, task) else {
            return;
        };
        if host
            .sessions
            .lock()
            .expect("sessions lock")
            .contains_key(&key)
        {
            return;
        }
        self.early_connections.start(&spec);
    }

    /// Whether the task reaches its host through `connection: local` (where `reboot`
    /// would restart the controller).
    pub(crate) fn connects_locally(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
    ) -> bool {
        self.login_target(host, play, task)
            .is_ok_and(|(_, spec)| spec.kind == crate::connection::ConnectionKind::Local)
    }

    /// The key and connection of the task's login session.
    fn login_target(
        &self,
        host: &HostState,
        play: &Play,
        task: &crate::playbook::Task,
    ) -> Result<(String, ConnectionSpec), SessionFailure> {
        let unreachable = |e: String| SessionFailure::Unreachable(e);
        // group_vars/ and host_vars/ beside the playbook file count too (its directory is
        // the playbook's, as the loader sets it).
        let playbook_dir = match play.location.file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => std::path::Path::new("."),
        };
        let mut vars = self
            .runtime
            .lock()
            .expect("runtime lock")
            .inventory_vars(&self.inventory(), &host.name, playbook_dir)
            .map_err(|e| unreachable(e.to_string()))?;
        // Keywords give way to the host's own variables, as in Ansible; a task's (or its
        // blocks') to the play's.
        let own = &task.keywords;
        let keywords = [
            (
                "ansible_connection",
                own.connection
                    .as_ref()
                    .or(play.connection.as_ref())
                    .or(self.opts.connection.as_ref()),
            ),
            (
                "ansible_user",
                own.remote_user.as_ref().or(play.remote_user.as_ref()),
            ),
            ("ansible_port", own.port.as_ref().or(play.port.as_ref())),
        ];
        for (var, keyword) in keywords {
            if let Some(value) = keyword
                && !vars.contains_key(var)
            {
                vars.insert(var.to_string(), value.clone().into());
            }
        }
        let spec =
            ConnectionSpec::from_host_vars(&host.name, &vars, &self.opts.connection_defaults)
                .map_err(|e| unreachable(e.to_string()))?;
        for warning in &spec.ssh.warnings {
            self.warn_once(&format!("{warning} (said once per run)"));
        }
        let key = format!(
            "{:?}|{}|{}|{}",
            spec.kind, spec.user, spec.address, spec.port
        );
        Ok((key, spec))
    }

    /// Forgets `session`, whose agent died on the host: that fails the task it was running,
    /// as a killed module does in Ansible, and the host's next task starts another agent,
    /// as Ansible's next task starts another module process. Forgotten only once the
    /// death is reported: replies the agent sent before it died (a chain's earlier
    /// tasks) are still taken from it.
    pub(crate) fn forget_session(&self, host: &HostState, session: &AgentSession) {
        host.sessions
            .lock()
            .expect("sessions lock")
            .retain(|_, cell| {
                !cell
                    .get()
                    .and_then(|opened| opened.as_ref().ok())
                    .is_some_and(|(open, _)| open.same_as(session))
            });
    }

    pub(super) fn open_sessions(&self, host: &HostState) -> Vec<AgentSession> {
        let cells: Vec<SessionCell> = host
            .sessions
            .lock()
            .expect("sessions lock")
            .values()
            .cloned()
            .collect();
        cells
            .iter()
            .filter_map(|c| {
                c.get()
                    .and_then(|r| r.as_ref().ok())
                    .map(|(s, _)| s.clone())
            })
            .collect()
    }
}
