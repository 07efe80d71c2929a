//! Modules: Ansible's task actions, each declared data and a pure planner. A module
//! declares its arguments ([`spec::Spec`], checked with Ansible's messages before it plans)
//! and what the executor must know of it ([`Caps`]); it turns its validated [`Args`] into
//! agent [`Op`]s or an immediate outcome, and the agent's [`OpResult`]s into the result
//! Ansible would register. Nothing here does I/O on the target; the executor sends the ops.
//!
//! Adding a module = one file with a `Module` impl + one row in [`registry`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use turbo_proto::{Op, OpResult};

use crate::template::{Templar, TemplateError};

mod accounts;
pub mod action_plugin;
mod apt;
mod apt_key;
mod apt_repository;
mod assemble;
mod assemble_fragments;
mod assert;
pub mod async_status;
mod blockinfile;
mod command;
mod command_expand;
mod copy;
mod copy_tree;
mod cron;
mod cron_tab;
mod deb822_python_debian;
mod deb822_repository;
mod debconf;
mod debug;
mod dnf;
mod download;
mod dpkg_selections;
mod fetch;
mod fetch_dest;
mod fetch_local;
mod file;
mod file_args;
mod find;
mod find_filters;
mod flow;
mod gather_facts;
mod getent;
mod group;
mod hostname;
mod include;
mod include_vars;
mod inventory_edit;
mod known_hosts;
mod lineinfile;
mod local_source;
mod meta;
pub mod module_defaults;
mod package;
mod package_facts;
mod pause;
mod ping;
mod pip;
mod protomatter_debug;
pub mod python;
mod raw;
pub(crate) mod reboot;
pub mod registry;
mod replace;
mod rpm_key;
mod script;
mod service;
mod service_detect;
mod service_facts;
mod service_listing;
mod service_run;
mod service_status;
mod service_systemctl;
mod set_fact;
mod set_stats;
mod setup;
mod setup_local;
mod slurp;
pub mod spec;
mod stat;
mod synchronize;
mod synchronize_relay;
mod synchronize_route;
mod synchronize_source;
mod synchronize_transfer;
mod synchronize_upload;
mod system_library;
mod systemd;
mod sysvinit;
mod tempfile;
mod template;
pub mod templated_action;
mod text_file;
mod unarchive;
mod unarchive_tar;
mod user;
mod user_commands;
mod validate_argument_spec;
mod wait_for;
pub(crate) mod wait_for_connection;
mod wait_for_probe;
mod would_write;
mod yum_repository;

pub use flow::{Flow, FlowStep};
pub use registry::{all, collection_module, find, is_implemented, suggest};
pub use setup::with_task_environment;
pub use spec::{Args, Spec};

/// Ansible's `INJECT_INVOCATION` for the run (ansible.cfg, the environment), set once by
/// the CLI.
static INJECT_INVOCATION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_inject_invocation(on: bool) {
    INJECT_INVOCATION.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a module's result carries its arguments as `invocation.module_args`: the
/// `ansible_inject_invocation` variable, else the run's setting.
pub fn inject_invocation(vars: Option<&minijinja::Value>) -> bool {
    vars.and_then(|v| v.get_attr("ansible_inject_invocation").ok())
        .filter(|v| !v.is_undefined() && !v.is_none())
        .map(|v| crate::booleans::lenient(&serde_json::to_value(&v).unwrap_or(Value::Bool(false))))
        .unwrap_or_else(|| INJECT_INVOCATION.load(std::sync::atomic::Ordering::Relaxed))
}

/// Arguments after templating, before they are checked against the module's spec.
pub type ModuleArgs = serde_json::Map<String, Value>;

pub struct PlanContext<'a> {
    pub playbook_dir: &'a Path,
    /// The task's role directory: its `files/`/`templates/` come before the playbook's.
    pub role_dir: Option<&'a Path>,
    /// The directory of the file the task is written in (an imported tasks file's), searched
    /// after the role's and before the playbook's, as Ansible's task search path.
    pub task_dir: Option<&'a Path>,
    pub check_mode: bool,
    pub diff: bool,
    /// The task's variables, for modules that template on the controller (template, debug var=).
    pub vars: Option<&'a minijinja::Value>,
    pub templar: Option<&'a Templar>,
    /// ansible.cfg's `ansible_managed`; `None` means Ansible's default text.
    pub ansible_managed: Option<&'a str>,
    /// The task's `no_log` (modules run through Python are told it).
    pub no_log: bool,
    /// The task's `timeout:` in seconds.
    pub timeout: Option<u64>,
    /// The task has `delegate_to`: it runs on another host than the one it is for.
    pub delegated: bool,
    /// For an action that runs another module (service, package: [`Module::backends`]),
    /// the task's `module_defaults` for each of those it has some for, templated: the
    /// action puts them under the arguments it hands on, as Ansible's
    /// `_apply_action_arg_defaults`.
    pub backend_defaults: Option<&'a ModuleArgs>,
    /// Finds modules by name as the playbook's loader does: for a module that runs
    /// modules it only learns the names of at run time (gather_facts'
    /// `ansible_facts_modules`).
    pub modules: Option<&'a dyn ModuleFinder>,
    /// ansible.cfg's `facts_modules` / `ANSIBLE_FACTS_MODULES`.
    pub facts_modules: Option<&'a [String]>,
    /// The task's `module_defaults`, as written, for the modules such a module runs.
    pub module_defaults: &'a [module_defaults::ModuleDefaultsLevel],
    /// The host `delegate_to` names, templated (`None` when the task is not delegated or
    /// the name cannot be rendered here).
    pub delegate_to: Option<String>,
    /// The task's `become` on this host, when it escalates.
    pub escalation: Option<Escalation>,
    /// For a Python action plugin: its task, owned, for the steps of its run.
    pub controller: Option<std::sync::Arc<dyn action_plugin::ControllerTask>>,
}

/// How the task escalates on its host, as decided for it (the host's `ansible_become*`
/// over the keywords): for a module that must tell another program how to escalate, as
/// synchronize's `--rsync-path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// The become plugin's name: `sudo`, `su`.
    pub method: &'static str,
    pub user: String,
}

impl<'a> PlanContext<'a> {
    pub fn new(playbook_dir: &'a Path) -> PlanContext<'a> {
        PlanContext {
            playbook_dir,
            role_dir: None,
            task_dir: None,
            check_mode: false,
            diff: false,
            vars: None,
            templar: None,
            ansible_managed: None,
            no_log: false,
            timeout: None,
            delegated: false,
            backend_defaults: None,
            modules: None,
            facts_modules: None,
            module_defaults: &[],
            delegate_to: None,
            escalation: None,
            controller: None,
        }
    }

    /// The `module_defaults` for `backend`, when the task has some (see
    /// [`PlanContext::backend_defaults`]).
    pub fn defaults_of(&self, backend: &str) -> ModuleArgs {
        match self.backend_defaults.and_then(|all| all.get(backend)) {
            Some(serde_json::Value::Object(defaults)) => defaults.clone(),
            _ => ModuleArgs::new(),
        }
    }
}

/// Modules by name, found as a task's are found (`library/`, Ansible's own, installed
/// collections) from the playbook's and the task's role's directories.
pub trait ModuleFinder: Sync {
    fn find_module(
        &self,
        name: &str,
        playbook_dir: &Path,
        role_dir: Option<&Path>,
    ) -> Option<&'static dyn Module>;
}

/// What a module wants done next.
pub enum Plan {
    /// Nothing (more) to send to the target (debug, or skipped in check mode).
    Done(TaskOutcome),
    /// Send this op; its reply goes to [`Module::finish`]. Loop items' ops of this kind go
    /// into one `Batch`, and the op depends on nothing the target says first.
    Remote(Op),
    /// Send this op; its reply decides what comes next (read the file, decide, write):
    /// a module that must look before it writes.
    Step(Op, Next),
    /// Send requests that need not wait for each other's replies (a transfer), then go on
    /// with the plan the flow ends with.
    Flow(Box<dyn Flow>),
}

/// The rest of a plan, given the reply to its op.
pub struct Next {
    then: Box<dyn FnOnce(OpResult) -> Result<Plan, ModuleError> + Send + Sync>,
    squash: Option<Squash>,
    touches: Option<String>,
    peer: Peer,
    check: Option<bool>,
}

/// Which agent a step's op goes to. Every module but synchronize talks to the task's one
/// session; synchronize copies between two places, each with its own agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Peer {
    /// The task's session: its host, or the host it is delegated to (with its become).
    #[default]
    Task,
    /// The host the task runs for, even when it is delegated (with the task's become).
    Host,
    /// The host the task runs for, as its login user: without the task's become, which
    /// ansible.posix's synchronize passes on to rsync's remote end only through sudo.
    HostAsLogin,
    /// The host the task is delegated to, without privilege escalation (Ansible runs
    /// rsync there as the login user).
    Delegate,
    /// An agent on the controller itself, as the user running turbo-play.
    Controller,
}

impl Next {
    pub fn new(
        then: impl FnOnce(OpResult) -> Result<Plan, ModuleError> + Send + Sync + 'static,
    ) -> Next {
        Next {
            then: Box::new(then),
            squash: None,
            touches: None,
            peer: Peer::Task,
            check: None,
        }
    }

    /// A step whose op goes to the agent in check mode or not whatever the task's own
    /// setting makes of its ops: a module an action plugin runs keeps its own rule (the
    /// plugin's commands run even in check mode, a native module's ops are checked).
    pub fn in_check_mode(mut self, check: bool) -> Next {
        self.check = Some(check);
        self
    }

    pub fn check_mode(&self) -> Option<bool> {
        self.check
    }

    /// A step whose op the loop's other items may share: see [`Squash`].
    pub fn squashable(
        squash: Squash,
        then: impl FnOnce(OpResult) -> Result<Plan, ModuleError> + Send + Sync + 'static,
    ) -> Next {
        Next {
            then: Box::new(then),
            squash: Some(squash),
            touches: None,
            peer: Peer::Task,
            check: None,
        }
    }

    /// The one thing this step and every later step of the item read and write (a file's
    /// path on the target, a destination on the controller). A loop's items that look
    /// before they write go one after another, as Ansible runs them, so each sees what the
    /// one before wrote; items that each touch a thing of their own step together instead,
    /// one batch per step for the whole loop.
    pub fn touching(mut self, what: impl Into<String>) -> Next {
        self.touches = Some(what.into());
        self
    }

    pub fn touches(&self) -> Option<&str> {
        self.touches.as_deref()
    }

    /// This step's op goes to `peer` instead of the task's session.
    pub fn on(mut self, peer: Peer) -> Next {
        self.peer = peer;
        self
    }

    pub fn peer(&self) -> Peer {
        self.peer
    }

    pub fn resume(self, reply: OpResult) -> Result<Plan, ModuleError> {
        (self.then)(reply)
    }

    /// This step followed by `after` on the plan it gives, keeping whether its op may be
    /// squashed (a module that runs another module's plan, as `package` does).
    pub fn and_then(
        self,
        after: impl FnOnce(Plan) -> Result<Plan, ModuleError> + Send + Sync + 'static,
    ) -> Next {
        let then = self.then;
        Next {
            then: Box::new(move |reply| after(then(reply)?)),
            squash: self.squash,
            touches: self.touches,
            peer: self.peer,
            check: self.check,
        }
    }

    pub fn squash(&self) -> Option<&Squash> {
        self.squash.as_ref()
    }
}

/// How the items of a loop over package names share one manager call (`Caps::squash_loop`):
/// items whose current steps have the same `key` (the same command but for the names) run
/// `build` over all their names once, and each item reads that one reply as its own. A
/// merged call that fails is run again item by item, so a failure is the item's own, as
/// in Ansible.
#[derive(Clone)]
pub struct Squash {
    pub key: String,
    pub names: Vec<String>,
    /// The packages `names` concern (`foo` for `foo=1.0`): an item shares a call only with
    /// items that name the same things or none of its packages, so two versions of one
    /// package are never asked of the manager in one call.
    pub packages: Vec<String>,
    pub build: SquashBuild,
}

/// The op over the names of every item that shares a [`Squash`].
pub type SquashBuild = Arc<dyn Fn(&[String]) -> Op + Send + Sync>;

impl Squash {
    /// A step every item may share as it is (one cache update for the whole loop).
    pub fn same(op: &Op) -> Squash {
        let shared = op.clone();
        Squash {
            key: format!("{op:?}"),
            names: Vec::new(),
            packages: Vec::new(),
            build: Arc::new(move |_| shared.clone()),
        }
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Plan::Done(outcome) => f.debug_tuple("Done").field(outcome).finish(),
            Plan::Remote(op) => f.debug_tuple("Remote").field(op).finish(),
            Plan::Step(op, _) => f.debug_tuple("Step").field(op).finish(),
            Plan::Flow(_) => f.write_str("Flow"),
        }
    }
}

/// Plans compare by what they send: a step's continuation is code.
impl PartialEq for Plan {
    fn eq(&self, other: &Plan) -> bool {
        match (self, other) {
            (Plan::Done(a), Plan::Done(b)) => a == b,
            (Plan::Remote(a), Plan::Remote(b)) | (Plan::Step(a, _), Plan::Step(b, _)) => a == b,
            _ => false,
        }
    }
}

/// How the console shows a module's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The registered result (with -v).
    Result,
    /// Only what the module was asked to show, always (debug).
    OwnData,
    /// Never the data, even with -v (setup's facts: Ansible's `_ansible_verbose_override`).
    Nothing,
}

/// Which variables layer a result's `ansible_facts` go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactsLayer {
    /// Host facts (setup, and any module returning facts), also as `ansible_facts.X`.
    Gathered,
    /// set_fact's layer, above task vars.
    SetFact,
    /// include_vars' layer, below set facts.
    IncludeVars,
}

/// Tasks the executor acts on itself instead of planning them for a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    None,
    /// `meta: flush_handlers`, `end_play`...
    Meta,
    IncludeTasks,
    IncludeRole,
}

/// What the executor needs to know of a module, declared instead of found by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// A plain string argument is the command line or file itself (`_raw_params`).
    pub free_form: bool,
    /// Runs once for all the play's hosts (Ansible's `BYPASS_HOST_LOOP`: pause, add_host).
    pub bypass_host_loop: bool,
    /// Loop items' ops may travel to the agent as one batch.
    pub batchable: bool,
    pub shown: Shown,
    pub facts: FactsLayer,
    pub control: Control,
    /// The module does its own check mode (Ansible's `supports_check_mode` modules that
    /// ask a tool to simulate, as apt-get's `--simulate`): its ops go to the agent without
    /// the check flag, so its read-only and simulating commands run, and its planner,
    /// reading `PlanContext::check_mode`, plans nothing that changes the target.
    pub own_check_mode: bool,
    /// A loop's items step together and share their manager calls ([`Squash`]): the
    /// items of a loop over package names go to apt, dnf or pip in one call.
    pub squash_loop: bool,
    /// Runs controller-side code (a Python action plugin): planning it runs that code,
    /// so it is never planned ahead of its turn, and its failures are an action's.
    pub controller_action: bool,
    /// The module's work needs the host: false for the modules that work on the
    /// controller alone (Ansible's `_requires_connection = False`: debug, set_fact,
    /// assert...; and pause, meta and the includes, which never reach the host either).
    /// Only for the others is the host's login started while the task is still planned.
    pub requires_connection: bool,
}

impl Caps {
    /// An ordinary module: planned per host, its items batched, its result shown with -v.
    pub const TASK: Caps = Caps {
        free_form: false,
        bypass_host_loop: false,
        batchable: true,
        shown: Shown::Result,
        facts: FactsLayer::Gathered,
        control: Control::None,
        own_check_mode: false,
        squash_loop: false,
        controller_action: false,
        requires_connection: true,
    };

    pub const fn free_form(mut self) -> Caps {
        self.free_form = true;
        self
    }
    pub const fn bypass_host_loop(mut self) -> Caps {
        self.bypass_host_loop = true;
        self
    }
    pub const fn shown(mut self, shown: Shown) -> Caps {
        self.shown = shown;
        self
    }
    pub const fn facts(mut self, facts: FactsLayer) -> Caps {
        self.facts = facts;
        self
    }
    pub const fn squash_loop(mut self) -> Caps {
        self.squash_loop = true;
        self
    }
    pub const fn own_check_mode(mut self) -> Caps {
        self.own_check_mode = true;
        self
    }
    pub const fn controller_action(mut self) -> Caps {
        self.controller_action = true;
        self
    }
    /// Works on the controller alone (Ansible's `_requires_connection = False`).
    pub const fn no_connection(mut self) -> Caps {
        self.requires_connection = false;
        self
    }
    pub const fn control(mut self, control: Control) -> Caps {
        self.control = control;
        self
    }
}

pub trait Module: Send + Sync {
    /// The short name, e.g. "copy".
    fn name(&self) -> &'static str;
    /// The declared arguments, checked before `plan` with Ansible's messages.
    fn spec(&self) -> &'static Spec;
    fn caps(&self) -> Caps {
        Caps::TASK
    }
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError>;
    /// The agent's reply to a `Plan::Remote` op as the task's outcome. Modules that only
    /// ever plan `Plan::Done` (debug, set_fact, assert...) keep this default: a reply can
    /// only be an error.
    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let _ = args;
        unexpected(self.name(), result)
    }
    /// Whether free-form text after the module's name is its own (`_raw_params`), rather
    /// than a mistake unless it is one template making the arguments.
    fn takes_raw_params(&self) -> bool {
        self.caps().free_form
    }
    /// The name Ansible resolves the module to (`ansible.builtin.copy`), as its messages
    /// say it.
    fn fqcn(&self) -> String {
        let name = self.name();
        if name.contains('.') {
            name.to_string()
        } else {
            format!("ansible.builtin.{name}")
        }
    }
    /// Whether it adds its arguments to its result itself when asked (`invocation`, as
    /// AnsibleModule does under Ansible's `INJECT_INVOCATION`): Python modules do, and
    /// the executor adds them for the others.
    fn reports_own_invocation(&self) -> bool {
        false
    }
    /// Whether the names of its arguments are templates too (set_fact's, whose names are
    /// the facts'); Ansible renders no other action's.
    fn templates_arg_names(&self) -> bool {
        false
    }
    /// Arguments taken as written, not templated with the others before the module sees
    /// them (assert's `that`: conditions it evaluates itself, as Ansible's action does).
    fn untemplated_args(&self) -> &'static [&'static str] {
        &[]
    }
    /// [`Module::finish`] for a request made in check mode (nothing was changed).
    fn finish_check(&self, args: &Args, result: OpResult) -> TaskOutcome {
        self.finish(args, result)
    }
    /// [`Module::finish`] (or, `check`, [`Module::finish_check`]) of a `Plan::Remote` op,
    /// given the op that was sent, for a result that tells what the op carried (copy's
    /// and template's `checksum` of the content).
    /// `home` is the agent's user's (see [`Module::finish_at_home`]).
    fn finish_sent(
        &self,
        args: &Args,
        sent: &Op,
        result: OpResult,
        check: bool,
        home: &str,
    ) -> TaskOutcome {
        let _ = sent;
        match check {
            true => self.finish_check(args, result),
            false => self.finish_at_home(args, result, home),
        }
    }
    /// The modules this action may hand its task to, whose `module_defaults` the executor
    /// gives it in [`PlanContext::backend_defaults`].
    fn backends(&self) -> &'static [&'static str] {
        &[]
    }

    /// [`Module::finish`] given the home of the user the agent runs as: for a result that
    /// names a place on the target under it (copy's `src`, the file under `remote_tmp`
    /// Ansible's copy module reads).
    fn finish_at_home(&self, args: &Args, result: OpResult, home: &str) -> TaskOutcome {
        let _ = home;
        self.finish(args, result)
    }
    /// The bytes behind a planned `FileContent::Digest`, for when the agent answers
    /// `NeedContent`. Only modules that plan digests (copy, template) return `Some`.
    fn content(&self, args: &Args, ctx: &PlanContext) -> Result<Option<FileSource>, ModuleError> {
        let _ = (args, ctx);
        Ok(None)
    }
}

impl std::fmt::Debug for dyn Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({})", self.name())
    }
}

/// Something a result asks of the run beyond its registered data, typed rather than
/// smuggled in result keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// add_host: a new host (or more groups and variables for a known one).
    AddHost {
        name: String,
        groups: Vec<String>,
        vars: serde_json::Map<String, Value>,
    },
    /// group_by: the host joins `group` (and its parent groups).
    JoinGroup { group: String, parents: Vec<String> },
    /// pause: wait this long on the controller before the result is shown.
    Wait(std::time::Duration),
    /// wait_for_connection: the executor tries the host until it answers (the result
    /// becomes what that wait gave).
    Reconnect(wait_for_connection::Reconnect),
    /// reboot: the executor restarts the host and waits for it (the result becomes what
    /// that gave).
    Reboot(Box<reboot::RebootSpec>),
}

/// A failure's cause written in another file than the task (a template file), shown
/// below the task's origin as Ansible's `<<< caused by >>>` part; or, `alone`, an error
/// Ansible raises apart from the task's, shown instead of it where its expression is
/// written (a `break_when` that failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCause {
    pub message: String,
    pub file: PathBuf,
    /// The line the error is on, when Ansible shows one (a syntax error).
    pub line: Option<usize>,
    /// The column, for an error about an expression of the task.
    pub column: Option<usize>,
    /// The error is shown alone, at its own origin, instead of below the task's (an
    /// error Ansible raises about a value of the task, not the task's failure).
    pub alone: bool,
}

impl ErrorCause {
    /// An error shown alone, in place of the task's, at `file:line:column`.
    pub fn alone(message: String, file: PathBuf, line: usize, column: usize) -> ErrorCause {
        ErrorCause {
            message,
            file,
            line: Some(line),
            column: Some(column),
            alone: true,
        }
    }
}

/// What a task did on one host (or for one loop item).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskOutcome {
    pub changed: bool,
    pub failed: bool,
    pub skipped: bool,
    pub msg: Option<String>,
    /// The registered result's other keys, in Ansible's shape (`rc`, `stdout`, `dest`...).
    pub data: serde_json::Map<String, Value>,
    /// Shown without -v (assert, as Ansible's `_ansible_verbose_always`).
    pub verbose_always: bool,
    pub effects: Vec<Effect>,
    /// Where the failure came from when that is not the task itself (a template file's
    /// line), for the error block; never part of the result.
    pub cause: Option<ErrorCause>,
    /// The result asks to be shown censored, as `no_log` shows it (an action plugin's
    /// `_ansible_no_log`); the registered value keeps it all.
    pub no_log: bool,
}

impl TaskOutcome {
    pub fn failed(msg: impl Into<String>) -> TaskOutcome {
        TaskOutcome {
            failed: true,
            msg: Some(msg.into()),
            ..TaskOutcome::default()
        }
    }

    /// A module's refusal as its task's failure. A template file that fails names its
    /// cause as Ansible does: the message alone, and where in the file it is.
    pub fn from_error(error: ModuleError) -> TaskOutcome {
        match error {
            ModuleError::Template { src, error } => {
                let message = error.cause();
                TaskOutcome {
                    cause: Some(ErrorCause {
                        message: message.clone(),
                        file: PathBuf::from(src),
                        line: error.syntax_line(),
                        column: None,
                        alone: false,
                    }),
                    ..TaskOutcome::failed(format!("Task failed: {message}"))
                }
            }
            other => TaskOutcome::failed(other.to_string()),
        }
    }

    /// The result as `register:` stores it in Ansible: `data` plus `changed` and `failed`
    /// always, `skipped` when true, and `msg` when there is one; `stdout_lines` and
    /// `stderr_lines` beside a `stdout` or `stderr` that has none, as Ansible's task result
    /// adds them to every result (its `as_result_dict`).
    pub fn registered(&self) -> serde_json::Map<String, Value> {
        let mut out = self.data.clone();
        for key in ["stdout", "stderr"] {
            let lines = format!("{key}_lines");
            if let Some(value) = out.get(key)
                && !out.contains_key(&lines)
            {
                let text = match value {
                    Value::String(text) => text.as_str(),
                    // Ansible's `or ''`: a null or false stream has no lines.
                    _ => "",
                };
                let split: Vec<Value> = text_file::split_lines(text)
                    .into_iter()
                    .map(|l| Value::String(l.to_string()))
                    .collect();
                out.insert(lines, Value::Array(split));
            }
        }
        out.insert("changed".into(), Value::Bool(self.changed));
        out.insert("failed".into(), Value::Bool(self.failed));
        if self.skipped {
            out.insert("skipped".into(), Value::Bool(true));
        }
        if let Some(msg) = &self.msg {
            out.insert("msg".into(), Value::String(msg.clone()));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("mode must be octal or symbolic, got '{0}'")]
    InvalidMode(String),
    #[error("{0}")]
    Invalid(String),
    #[error("src file not found: {path} (looked in {looked_in})")]
    SrcNotFound { path: String, looked_in: String },
    #[error("could not read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{0} is not supported yet")]
    NotSupported(&'static str),
    #[error("template {src}: {error}")]
    Template {
        src: String,
        #[source]
        error: TemplateError,
    },
}

/// The candidate within a small edit distance of `word`, if any (for "did you mean").
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(crate) use file_args::ownership;
pub use file_args::{mode_string, parse_mode};
pub use local_source::FileSource;
pub(crate) use local_source::{
    find_local_source, local_digest, local_digest_and_sha1, local_search_dirs, read_local,
    read_local_decrypted,
};

/// The outcome for a reply that is not the kind this module's op produces.
pub(crate) fn unexpected(module: &str, result: OpResult) -> TaskOutcome {
    match result {
        OpResult::Error(e) => TaskOutcome::failed(e.message),
        other => TaskOutcome::failed(format!(
            "internal error: {module} got an unexpected reply from the agent: {other:?}"
        )),
    }
}

/// A module's arguments as its spec validates them, for planner tests.
#[cfg(test)]
pub(crate) fn check(module: &dyn Module, args: Value) -> Args {
    let raw = args.as_object().expect("arguments are a mapping");
    module
        .spec()
        .validate(module.name(), raw)
        .unwrap_or_else(|e| panic!("{}: {e}", module.name()))
}

/// Validates and plans, as the executor does: an error is the task's failure message.
#[cfg(test)]
pub(crate) fn try_plan(
    module: &dyn Module,
    args: Value,
    ctx: &PlanContext,
) -> Result<Plan, String> {
    let raw = args.as_object().expect("arguments are a mapping");
    let args = module.spec().validate(module.name(), raw)?;
    module.plan(&args, ctx).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use turbo_proto::FileMode;

    #[test]
    fn a_roles_files_come_before_the_playbooks() {
        let dir = ::tempfile::tempdir().unwrap();
        let role = dir.path().join("roles/r");
        for file in ["files/a", "roles/r/files/a", "b", "roles/r/c"] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, file).unwrap();
        }
        let in_role = PlanContext {
            role_dir: Some(&role),
            ..PlanContext::new(dir.path())
        };
        let found = |src: &str, ctx: &PlanContext| {
            find_local_source(src, ctx, "files")
                .map(|p| p.strip_prefix(dir.path()).unwrap().to_path_buf())
        };
        assert_eq!(found("a", &in_role).unwrap(), Path::new("roles/r/files/a"));
        assert_eq!(found("c", &in_role).unwrap(), Path::new("roles/r/c"));
        assert_eq!(found("b", &in_role).unwrap(), Path::new("b"));
        let outside = PlanContext::new(dir.path());
        assert_eq!(found("a", &outside).unwrap(), Path::new("files/a"));
        let tasks_dir = dir.path().join("roles");
        let imported = PlanContext {
            task_dir: Some(&tasks_dir),
            ..PlanContext::new(dir.path())
        };
        assert_eq!(found("r/c", &imported).unwrap(), Path::new("roles/r/c"));
        let missing = found("zz", &in_role).unwrap_err().to_string();
        assert!(missing.contains("roles/r/files"), "{missing}");
    }

    #[test]
    fn parses_modes_as_ansible() {
        assert_eq!(
            parse_mode(&json!(420)).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("0644")).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("644")).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("0o755")).unwrap(),
            Some(FileMode::Bits(0o755))
        );
        assert_eq!(
            parse_mode(&json!("1777")).unwrap(),
            Some(FileMode::Bits(0o1777))
        );
        assert_eq!(parse_mode(&json!(null)).unwrap(), None);
        assert_eq!(
            parse_mode(&json!("u=rw,g=r,o=r")).unwrap(),
            Some(FileMode::Symbolic("u=rw,g=r,o=r".into()))
        );
        assert_eq!(
            parse_mode(&json!("a+x")).unwrap(),
            Some(FileMode::Symbolic("a+x".into()))
        );
        assert_eq!(
            parse_mode(&json!("u+rw-x,go=u")).unwrap(),
            Some(FileMode::Symbolic("u+rw-x,go=u".into()))
        );
        for bad in [
            json!("abc"),
            json!("0899"),
            json!("u=rwz"),
            json!("77777"),
            json!(-1),
            json!(1.5),
            json!([1]),
            json!("u"),
            json!(""),
        ] {
            let err = parse_mode(&bad).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("mode must be octal or symbolic, got "),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            parse_mode(&json!("abc")).unwrap_err().to_string(),
            "mode must be octal or symbolic, got 'abc'"
        );
    }

    #[test]
    fn registered_results_have_ansible_keys() {
        let mut out = TaskOutcome {
            changed: true,
            msg: Some(String::new()),
            ..TaskOutcome::default()
        };
        out.data.insert("rc".into(), json!(0));
        assert_eq!(
            Value::Object(out.registered()),
            json!({"rc": 0, "changed": true, "failed": false, "msg": ""})
        );
        let skipped = TaskOutcome {
            skipped: true,
            ..TaskOutcome::default()
        };
        assert_eq!(
            Value::Object(skipped.registered()),
            json!({"changed": false, "failed": false, "skipped": true})
        );
        // Every result with a stdout or stderr gets its lines, unless it has them.
        let mut listed = TaskOutcome::default();
        listed.data.insert("stdout".into(), json!("a==1\r\nb==2\n"));
        listed.data.insert("stderr".into(), Value::Null);
        listed.data.insert("stderr_lines".into(), json!(["kept"]));
        let got = listed.registered();
        assert_eq!(got["stdout_lines"], json!(["a==1", "b==2"]));
        assert_eq!(got["stderr_lines"], json!(["kept"]));
    }

    #[test]
    fn mode_strings_are_zero_padded_octal() {
        assert_eq!(mode_string(0o644), "0644");
        assert_eq!(mode_string(0o100755), "0755");
        assert_eq!(mode_string(0o1777), "01777");
    }
}
