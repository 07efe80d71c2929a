//! What a run holds: its options, each host's state, and the context every task of the
//! run shares (inventory, sessions, throttles, the event channel).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::chain;
use super::sessions::SessionCell;
use super::{custom_stats, flow, runtime_inventory};
use crate::connection::ConnectionDefaults;
use crate::inventory::Inventory;
use crate::playbook::{TagFilter, Task};
use crate::report::events::{Event, HostResult, HostStats, Status};
use crate::report::task_error::TaskOrigin;
use crate::template::Templar;

pub type EventSender = mpsc::UnboundedSender<Event>;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub forks: usize,
    pub check: bool,
    pub diff: bool,
    /// `-v` counted: templates read it as `ansible_verbosity`.
    pub verbosity: u8,
    pub limit: Option<String>,
    /// `--slice K/N`: only the inventory's hosts in this slice (hosts `add_host` makes
    /// are run by the slice that made them).
    pub slice: Option<crate::host_slice::HostSlice>,
    pub extra_vars: Map<String, Value>,
    pub connection_defaults: ConnectionDefaults,
    /// ansible.cfg `roles_path` / `ANSIBLE_ROLES_PATH`: where roles are searched after
    /// `roles/` beside the playbook.
    pub roles_path: Vec<std::path::PathBuf>,
    /// `--force-handlers`: notified handlers run even on hosts that failed.
    pub force_handlers: bool,
    /// `--tags`/`--skip-tags`.
    pub tags: TagFilter,
    /// `--start-at-task`: tasks before the first one whose name matches (a glob) are
    /// left out, across plays.
    pub start_at_task: Option<String>,
    /// `-c`: the connection of hosts that neither their variables nor their play set.
    pub connection: Option<String>,
    /// ansible.cfg `ansible_managed`, for templates.
    pub ansible_managed: Option<String>,
    /// `-b`, `--become-user`, `--become-method`, `-K`/`--become-password-file` and
    /// ansible.cfg's `[privilege_escalation]`: what tasks become when neither their
    /// keywords nor the host's variables say.
    pub become_defaults: BecomeDefaults,
    /// Send a host's next tasks ahead in one chain when their inputs cannot depend on the
    /// earlier ones' results (`chain/`); `[turbo_play] chains` / `TURBO_PLAY_CHAINS`.
    pub chains: bool,
    /// ansible.cfg `gathering` / `ANSIBLE_GATHERING`: which plays gather facts.
    pub gathering: crate::config::Gathering,
    /// ansible.cfg `facts_modules` / `ANSIBLE_FACTS_MODULES`: what fact gathering runs.
    pub facts_modules: Option<Vec<String>>,
    /// Where the playbooks' modules were found (library, collections, module_utils), for
    /// modules named only at run time (`ansible_facts_modules`).
    pub load_options: crate::playbook::LoadOptions,
    /// The run's Python plugins (filled as the playbooks loaded).
    pub plugins: Arc<crate::plugins::Catalog>,
}

/// The command line's and ansible.cfg's become settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BecomeDefaults {
    pub enabled: bool,
    pub user: Option<String>,
    pub method: Option<String>,
    pub flags: Option<String>,
    pub exe: Option<String>,
    pub sudo_chdir: Option<String>,
    /// Never shown (see the Debug impl).
    pub password: Option<String>,
}

impl std::fmt::Debug for BecomeDefaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BecomeDefaults")
            .field("enabled", &self.enabled)
            .field("user", &self.user)
            .field("method", &self.method)
            .field("flags", &self.flags)
            .field("exe", &self.exe)
            .field("sudo_chdir", &self.sudo_chdir)
            .field("password", &self.password.as_ref().map(|_| "********"))
            .finish()
    }
}

/// What ansible-playbook's exit code is made of.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub stats: Vec<HostStats>,
    /// The `--start-at-task` name no task matched (ansible-playbook reports it).
    pub start_at_unmatched: Option<String>,
    /// The run was stopped by an interrupt; `stats` are what had finished before it.
    pub interrupted: bool,
}

impl RunSummary {
    /// ansible-playbook's codes: 4 when a host was unreachable, 2 when one failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.stats.iter().any(|s| s.unreachable > 0) {
            4
        } else if self.stats.iter().any(|s| s.failed > 0) {
            2
        } else {
            0
        }
    }
}

/// One host's state for the whole run: its connection, registered variables, counters.
pub(crate) struct HostState {
    pub name: String,
    /// One session per distinct connection (plays may connect as another user or
    /// locally); in the usual case exactly one for the whole run.
    pub(super) sessions: Mutex<HashMap<String, SessionCell>>,
    /// Registered results. With `set_facts`, Ansible's one layer of "set_facts and
    /// registered vars": the later of the two writes of a name wins (see [`Self::register`]).
    pub registered: Mutex<Map<String, Value>>,
    /// Gathered facts (`setup`): below play vars in precedence, as in Ansible.
    pub facts: Mutex<Map<String, Value>>,
    /// The facts a module returned without the `ansible_` prefix (getent's `getent_passwd`,
    /// setup's `module_setup`): Ansible injects those as variables under their own name.
    pub plain_facts: Mutex<std::collections::BTreeSet<String>>,
    /// Variables `include_vars` loaded: above task vars, below set facts (Ansible's
    /// vars cache).
    pub included_vars: Mutex<Map<String, Value>>,
    /// Facts a task set (`set_fact`, any module's `ansible_facts` but setup's): above
    /// include_vars, as in Ansible.
    pub set_facts: Mutex<Map<String, Value>>,
    pub stats: Mutex<HostStats>,
    /// Failed or unreachable hosts sit out the rest of the run, as in Ansible.
    pub out: AtomicBool,
    /// Unreachable until `meta: clear_host_errors` (the recap's count stays).
    pub unreachable: AtomicBool,
    /// The host's path through the current play (blocks, handlers, meta).
    pub flow: Mutex<flow::Flow>,
    /// Ops of its next tasks already on their way to the agent (`chain/`).
    pub(super) sent_ahead: Mutex<chain::SentAheadMap>,
}

impl HostState {
    pub(super) fn new(name: &str) -> Self {
        HostState {
            name: name.to_string(),
            sessions: Mutex::new(HashMap::new()),
            registered: Mutex::new(Map::new()),
            facts: Mutex::new(Map::new()),
            plain_facts: Mutex::default(),
            included_vars: Mutex::new(Map::new()),
            set_facts: Mutex::new(Map::new()),
            stats: Mutex::new(HostStats {
                host: name.to_string(),
                ..Default::default()
            }),
            out: AtomicBool::new(false),
            unreachable: AtomicBool::new(false),
            flow: Mutex::new(flow::Flow::default()),
            sent_ahead: Mutex::default(),
        }
    }

    pub fn stat(&self, f: impl FnOnce(&mut HostStats)) {
        f(&mut self.stats.lock().expect("stats lock"));
    }

    /// `register:` a result. It replaces a fact of that name set earlier: Ansible keeps
    /// both in one layer.
    pub fn register(&self, name: &str, value: Value) {
        self.set_facts.lock().expect("set_facts lock").remove(name);
        self.registered
            .lock()
            .expect("registered lock")
            .insert(name.to_string(), value);
    }

    /// Facts a task set; each replaces a registered result of that name.
    pub fn set_facts_from(&self, new: &Map<String, Value>) {
        {
            let mut registered = self.registered.lock().expect("registered lock");
            for k in new.keys() {
                registered.remove(k);
            }
        }
        let mut set = self.set_facts.lock().expect("set_facts lock");
        for (k, v) in new {
            set.insert(k.clone(), v.clone());
        }
    }

    pub fn include_vars_from(&self, new: &Map<String, Value>) {
        let mut included = self.included_vars.lock().expect("included_vars lock");
        for (k, v) in new {
            included.insert(k.clone(), v.clone());
        }
    }
}

/// Shared by every host job of a run.
pub(crate) struct RunContext {
    /// Replaced whole by `meta: refresh_inventory`; read through [`RunContext::inventory`].
    pub inventory: std::sync::RwLock<Arc<Inventory>>,
    pub opts: RunOptions,
    pub templar: Arc<Templar>,
    pub events: EventSender,
    pub hosts: Mutex<HashMap<String, Arc<HostState>>>,
    /// Play `vars_files`, read once for every host and task.
    pub vars_files: crate::vars_file::VarsFileCache,
    /// `--start-at-task` until a task matched it.
    pub start_at: Mutex<Option<String>>,
    /// This context itself, for the lazy `hostvars` object templates hold on to.
    pub me: std::sync::Weak<RunContext>,
    /// Hosts and groups `add_host`/`group_by` added.
    pub runtime: Mutex<runtime_inventory::RuntimeInventory>,
    /// Files of dynamic includes, parsed once per run.
    pub includes: crate::playbook::IncludeCache,
    /// Roles of the current play that `include_role` with `public: yes` ran: from then
    /// on every task of the play sees their defaults and vars, as in Ansible.
    pub public_roles: Mutex<Vec<Arc<crate::playbook::RoleInfo>>>,
    /// Handlers of roles the current play included at run time, after the play's own.
    pub dynamic_handlers: Mutex<Vec<Arc<crate::playbook::Task>>>,
    /// Role uses that ran once in the current play: a role included at run time does not
    /// run such a dependency again.
    pub ran_roles: Mutex<Vec<crate::playbook::RanRole>>,
    /// Task keywords already warned about: once per run is enough to be told.
    pub(super) warned_keywords: Mutex<std::collections::HashSet<String>>,
    /// What `set_stats` tasks returned, for the recap.
    pub custom_stats: custom_stats::CustomStats,
    /// Set when an interrupt stops the run: what the aborted tasks would still report is
    /// not shown.
    pub(super) interrupted: std::sync::atomic::AtomicBool,
    /// An agent on the controller itself (connection local), opened for the first task
    /// that works on the controller's files through an agent (synchronize's pull).
    pub(super) controller:
        tokio::sync::OnceCell<Result<crate::agent_session::AgentSession, super::SessionFailure>>,
    /// Logins started while their host's first task was planned (`connect_ahead`).
    pub(super) early_connections: crate::connection::EarlyConnections,
}

impl RunContext {
    /// The inventory as it is now (`meta: refresh_inventory` may replace it).
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory.read().expect("inventory lock").clone()
    }

    /// The hosts an Ansible pattern selects now: `add_host`'s hosts included, `--limit`
    /// not applied (Ansible's `inventory_hostnames` reads the `groups` variable).
    pub(super) fn hosts_matching(&self, pattern: &str) -> Result<Vec<String>, String> {
        let runtime = self.runtime.lock().expect("runtime lock");
        if runtime.is_empty() {
            drop(runtime);
            return self.inventory().select(pattern).map_err(|e| e.to_string());
        }
        Ok(runtime.select(&self.inventory(), pattern))
    }

    /// Warns about the task's keywords that turbo-play ignores, the first time each is met.
    pub fn warn_unsupported(&self, task: &crate::playbook::Task) {
        self.warn_keywords(&task.unsupported);
    }

    /// Warns about keywords turbo-play ignores (of a play, or of a task and what surrounds
    /// it), once per run for each keyword wherever it is written.
    pub fn warn_keywords(&self, keywords: &[crate::playbook::UnsupportedKeyword]) {
        for unsupported in keywords {
            let first = self
                .warned_keywords
                .lock()
                .expect("warned lock")
                .insert(unsupported.keyword.clone());
            if first {
                self.emit(Event::Warning(format!(
                    "{}: '{}' is not supported yet and was ignored (said once per run)",
                    unsupported.location, unsupported.keyword
                )));
            }
        }
    }

    /// A warning said once per run, as Ansible's display says a repeated warning once.
    pub fn warn_once(&self, message: &str) {
        let first = self
            .warned_keywords
            .lock()
            .expect("warned lock")
            .insert(format!("\u{0}{message}"));
        if first {
            self.emit(Event::Warning(message.to_string()));
        }
    }

    pub fn emit(&self, event: Event) {
        if self.interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        // The reporter outlives the run; a closed channel only means output is gone.
        let _ = self.events.send(event);
    }

    pub(super) fn host(&self, name: &str) -> Arc<HostState> {
        let mut hosts = self.hosts.lock().expect("hosts lock");
        hosts
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(HostState::new(name)))
            .clone()
    }

    /// Marks a host unreachable and reports it the way Ansible does, showing `data` (an
    /// `unreachable_result`, censored under no_log).
    pub fn unreachable(&self, task: &Task, host: &HostState, data: Map<String, Value>) {
        host.out.store(true, Ordering::SeqCst);
        host.unreachable.store(true, Ordering::SeqCst);
        host.stat(|s| s.unreachable += 1);
        self.emit_unreachable(task, host, data, false);
    }

    pub fn emit_unreachable(
        &self,
        task: &Task,
        host: &HostState,
        data: Map<String, Value>,
        ignored: bool,
    ) {
        self.emit(Event::HostResult(HostResult {
            host: host.name.clone(),
            status: Status::Unreachable,
            item: None,
            data,
            ignored,
            verbose_always: false,
            origin: Some(TaskOrigin::of(task)),
        }));
    }
}

/// Ansible's result for a host it could not reach. ansible-playbook 2.21.5 words what the
/// connection raised as the task's error: "Task failed: Failed to connect to the host via
/// ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused" (checked); a message
/// that already says "Task failed:" (a become prompt that never came) keeps its words.
pub(crate) fn unreachable_result(message: &str) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("changed".into(), false.into());
    let msg = match message.starts_with("Task failed: ") {
        true => message.to_string(),
        false => format!("Task failed: Failed to connect to the host via ssh: {message}"),
    };
    data.insert("msg".into(), msg.into());
    data.insert("unreachable".into(), true.into());
    data
}
