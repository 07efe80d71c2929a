//! Playbooks as validated types. The loader ([`load_playbook`]) checks everything that can
//! be checked before connecting (play keys, task keywords, module names, argument names)
//! and reports mistakes at `file:line:col`; the executor only sees these types.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::template::{Templar, TemplateError, sequence_items};

mod action;
mod block;
mod collections;
mod dynamic_include;
mod imports;
mod keyword_table;
mod keywords;
mod loader;
mod loops;
mod module_defaults;
mod play;
mod play_argspec;
mod play_templates;
mod resolve;
mod role_files;
mod roles;
mod routing;
mod shared;
mod tags;
mod task;
#[cfg(test)]
mod test_support;
mod values;

pub use crate::modules::module_defaults::{
    DefaultsError, defaults_for, fallback_fqcn, templated_defaults,
};
pub use action::{RAW_PARAMS, is_possibly_all_template};
pub use collections::{default_collections_path, split_role_fqcn};
pub use dynamic_include::{
    DynamicInclude, IncludeCache, IncludedRole, MAX_INCLUDE_DEPTH, RoleLoadError,
};
pub use keywords::{BatchSize, HostOrder, PlayKeywords, batches, too_many_failed};
pub use loader::{load_playbook, load_playbook_text, load_playbooks, load_playbooks_text};
pub use loops::{
    BreakWhen, Combinator, LOOP_LOOKUPS, LoopControl, WrittenCondition, ansible_loop,
    is_debug_action, lookup_subdir,
};
pub use module_defaults::{DefaultsEntry, ModuleDefaultsLevel, set_validate_group_metadata};
pub use play_templates::{PlayKeywordError, render_templated_play_keywords};
pub use roles::INCLUDE_ROLE_ARGS;
pub use shared::{LoadOptions, RanRole};
pub use tags::{TagFilter, render_templated_tags, select_tasks, selected, split_tags};
pub use task::VARIABLE_PARAMS;
pub use values::is_reserved_name;

/// Where something was written, 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: Arc<Path>,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

#[derive(Debug, Clone)]
pub struct Playbook {
    pub path: PathBuf,
    /// Where `files/`, `templates/` and relative `src:` paths are looked up.
    pub dir: PathBuf,
    pub plays: Vec<Play>,
}

#[derive(Debug, Clone)]
pub struct Play {
    /// `strategy`, `order`, `gather_facts` or `serial` written as templates, until
    /// `render_templated_play_keywords` renders them.
    pub templated_keywords: Vec<TemplatedKeyword>,
    /// The play's `name`, else its hosts pattern (what Ansible prints).
    pub name: String,
    /// Whether the play has a `name` of its own.
    pub named: bool,
    /// `validate_argspec` as written (once rendered), and the spec it names once found.
    pub validate_argspec: ValidateArgspec,
    pub argspec: Option<PlayArgspec>,
    /// The hosts pattern; a YAML list is joined with ','.
    pub hosts: String,
    /// `hosts` as Ansible holds it: a YAML list's items, or the one string as written
    /// (what `--list-hosts` prints as the play's `pattern`).
    pub host_patterns: Vec<String>,
    /// The play's own `tags` (every task of the play inherits them).
    pub tags: Vec<String>,
    pub vars: serde_json::Map<String, Value>,
    /// `vars_files`, raw (templated per host at run time): each entry lists the paths to
    /// try, relative to the playbook, and the first that exists is read.
    pub vars_files: Vec<Vec<String>>,
    /// `vars_prompt` entries still to answer: ansible-playbook asks them on the terminal
    /// (answers go to `vars`); without one, `-e` or the default gives the value, else
    /// the variable stays undefined (with a warning).
    pub vars_prompt: Vec<VarsPrompt>,
    /// Play vars never templated: `vars_prompt` answers given with `unsafe: true`.
    pub unsafe_vars: std::collections::BTreeSet<String>,
    /// `gather_facts` as written; unset, `gathering` in ansible.cfg decides.
    pub gather_facts: Option<bool>,
    /// `check_mode` as written on the play (its tasks carry it too); unset, `--check`
    /// decides.
    pub check_mode: Option<bool>,
    /// The play's `gather_subset` for its fact gathering; empty means Ansible's default.
    pub gather_subset: Vec<String>,
    /// The play's `fact_path` for its fact gathering (setup's own default when `None`).
    pub fact_path: Option<String>,
    /// The play's own `module_defaults` (its fact gathering takes those for `setup`).
    pub module_defaults: Vec<ModuleDefaultsLevel>,
    /// `pre_tasks`, then `tasks`, then `post_tasks`; blocks flattened (see [`BlockFrame`]).
    pub tasks: Vec<Task>,
    /// `handlers`, in the order they run.
    pub handlers: Vec<Task>,
    /// `force_handlers`: notified handlers run even on hosts that failed.
    pub force_handlers: bool,
    /// Roles of `roles:` and `import_role` (with their dependencies): as in Ansible, every
    /// task of the play sees their defaults and `vars/main.yml`.
    pub roles: Vec<Arc<RoleInfo>>,
    /// The role uses that run once (see [`RanRole`]), for roles included at run time.
    pub ran_roles: Vec<RanRole>,
    /// The play's `connection`, `remote_user` and `port` keywords. As in Ansible, a host's
    /// `ansible_connection`/`ansible_user`/`ansible_port` variables win over them.
    pub connection: Option<String>,
    pub remote_user: Option<String>,
    pub port: Option<String>,
    /// The play's `environment` (a mapping or a template), below blocks' and tasks'.
    pub environment: Option<Value>,
    /// serial, order, any_errors_fatal, max_fail_percentage.
    pub keywords: PlayKeywords,
    /// Keywords used but not supported yet (the executor warns).
    pub unsupported: Vec<UnsupportedKeyword>,
    pub location: Location,
}

/// A keyword written on a play, block, role entry, import or task that turbo-play does
/// not act on yet: the executor warns about it (once per run for each keyword).
#[derive(Debug, Clone, PartialEq)]
pub struct UnsupportedKeyword {
    pub keyword: String,
    /// Where it is written.
    pub location: Location,
}

#[derive(Debug, Clone)]
pub struct Task {
    pub name: Option<String>,
    /// The action as the user wrote it (e.g. "ansible.builtin.copy").
    pub action: String,
    /// The FQCN Ansible resolves the action to (an action plugin's, else the module's):
    /// what `module_defaults` are matched by.
    pub resolved_action: String,
    pub module: &'static dyn crate::modules::Module,
    /// Raw, not yet templated; a free-form string is already split into arguments.
    pub args: serde_json::Map<String, Value>,
    pub loop_spec: Option<LoopSpec>,
    pub loop_var: String,
    /// The rest of `loop_control` (label, index_var, extended, pause).
    pub loop_control: LoopControl,
    /// Raw Jinja expressions, all of which must hold.
    pub when: Vec<String>,
    /// `register: name`: the result under that name (Ansible's projection
    /// `name: _task.polymorphic_result`).
    pub register: Option<String>,
    /// `register:` as a mapping (Ansible 2.21's register projections): each variable and
    /// the expression (or value) it takes, evaluated against `_task` once the task is done
    /// and, from its first result on, while it runs.
    pub register_projections: Vec<(String, Value)>,
    pub ignore_errors: bool,
    /// `changed_when`: when set, these conditions (all must hold) decide `changed` instead
    /// of the module. Evaluated per item once its result is known.
    pub changed_when: Option<Vec<String>>,
    /// `failed_when`: when set, these conditions (all must hold) decide `failed`.
    pub failed_when: Option<Vec<String>>,
    /// `until`/`retries`/`delay`: re-run the item until the conditions hold.
    pub until: Option<Until>,
    /// `async`/`poll` as written (ints or templates): run as a detached job on the target.
    pub async_job: AsyncKeywords,
    /// Handler names or `listen` topics to notify when the task changed something.
    pub notify: Vec<String>,
    /// A handler's `listen` topics (empty for tasks).
    pub listen: Vec<String>,
    /// The blocks this task sits in, outermost first; empty outside any block.
    pub frames: Vec<BlockFrame>,
    /// The task's tags with those of its play and blocks (what `--tags` selects on).
    pub tags: Vec<String>,
    /// `check_mode` on the task, its blocks or its play: forces check mode on or off
    /// whatever `--check` says; `None` follows `--check`.
    pub check_mode: Option<bool>,
    /// `diff` on the task, its blocks, role or play: shows (or hides) the task's diffs
    /// whatever `--diff` says; `None` follows `--diff`. `ansible_diff_mode` still tells
    /// `--diff` only, as in Ansible.
    pub diff: Option<bool>,
    pub vars: serde_json::Map<String, Value>,
    /// The role this task (or handler) comes from; `None` for the play's own tasks.
    pub role: Option<Arc<RoleInfo>>,
    /// `vars` of the `include_tasks`/`include_role` this task came from: Ansible's include
    /// params, above set facts and role parameters.
    pub include_params: serde_json::Map<String, Value>,
    /// Where and how the task runs: run_once, delegate_to, environment, no_log, throttle.
    pub keywords: RunKeywords,
    /// Keywords that were accepted but are not implemented yet (the executor warns):
    /// the task's own and those of its play's blocks, roles and imports around it.
    pub unsupported: Vec<UnsupportedKeyword>,
    pub location: Location,
    /// For `include_tasks`/`include_role`: how to load what they include when the
    /// executor reaches them.
    pub include: Option<Arc<DynamicInclude>>,
    /// A task Ansible adds itself and never shows (the `meta: flush_handlers` after
    /// pre_tasks and after tasks): no banner, not listed.
    pub implicit: bool,
}

/// One use of a role (a `roles:` entry, `import_role`, `include_role` or a meta
/// dependency): what its tasks see besides the play's variables.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleInfo {
    /// The name as written (`role_name`).
    pub name: String,
    /// The role's directory (`role_path`; `files/` and `templates/` are looked up in it).
    pub path: PathBuf,
    /// `defaults/main.yml`: the lowest precedence, below inventory variables.
    pub defaults: serde_json::Map<String, Value>,
    /// `vars/main.yml`: above play vars.
    pub vars: serde_json::Map<String, Value>,
    /// What the role's own tasks see below `vars`: the roles that depend on it (their
    /// `vars:` keyword and vars/main.yml, outermost first), then its dependencies'
    /// vars/main.yml, as Ansible's `Role.get_vars` layers them.
    pub inherited_vars: serde_json::Map<String, Value>,
    /// The `vars:` keyword of the role's entry: above `vars/main.yml`, for the role's own
    /// tasks only.
    pub keyword_vars: serde_json::Map<String, Value>,
    /// Inline parameters of the entry (`- {role: x, port: 80}`): above set facts.
    pub params: serde_json::Map<String, Value>,
    /// For a role that runs once per play (`roles:` entries and dependencies): the uses
    /// it shares with other copies of itself that inherited other tags. Of these copies
    /// only the first one `--tags` selects runs ([`select_tasks`]).
    pub once_group: Option<usize>,
    /// Reached through another role's `dependencies`.
    pub dependency: bool,
    /// The roles that imported or included this one, the nearest first, with their
    /// directories (`ansible_parent_role_names`, `ansible_parent_role_paths`).
    pub parents: Vec<(String, PathBuf)>,
}

/// One `vars_prompt` entry, with Ansible's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct VarsPrompt {
    pub name: String,
    /// Templated with the play's vars; `input for NAME` when unset.
    pub prompt: Option<String>,
    pub default: Option<Value>,
    /// No echo (the default).
    pub private: bool,
    /// Asked twice until both answers match.
    pub confirm: bool,
    /// A `password_hash` scheme the answer is hashed with.
    pub encrypt: Option<String>,
    pub salt: Option<String>,
    pub salt_size: Option<u64>,
    /// The answer is never templated.
    pub unsafe_: bool,
}

/// Task keywords that change where and how a task runs, not what its module does. Blocks
/// hand them down to their tasks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunKeywords {
    /// Run on the first host only; every host gets its result, as in Ansible.
    pub run_once: bool,
    /// Run the module through this host's connection (a template), with the task's host's
    /// variables; `local_action` is `delegate_to: localhost`.
    pub delegate_to: Option<String>,
    /// Facts the task sets go to the delegated host instead.
    pub delegate_facts: bool,
    /// `environment` layers, outermost block first (the play's is [`Play::environment`]);
    /// each a mapping or a template of one. Only command/shell take them.
    pub environment: Vec<Value>,
    /// Results are hidden in the output.
    pub no_log: bool,
    /// `no_log` is written on the task or around it (else ansible.cfg's decides).
    pub no_log_written: bool,
    /// At most this many hosts run the task at once.
    pub throttle: Option<u64>,
    /// `throttle` written as a template, rendered when the task runs.
    pub throttle_template: Option<String>,
    /// `timeout` as written (seconds, or a template), decided per host when the task
    /// runs: a task (each loop item) that runs longer fails, its process stopped.
    pub timeout: Option<String>,
    /// `any_errors_fatal` on the task or a block (else the play's decides).
    pub any_errors_fatal: Option<bool>,
    /// An unreachable host counts as ok (and ignored) and stays in the play.
    pub ignore_unreachable: bool,
    /// `connection`, `remote_user` and `port` of the task or its blocks, roles or imports:
    /// its ops go through a session of that kind, login and port (the play's keywords
    /// when unset; a host's own `ansible_connection`/`ansible_user`/`ansible_port` win
    /// over both, as in Ansible).
    pub connection: Option<String>,
    pub remote_user: Option<String>,
    pub port: Option<String>,
    /// `become` and its settings on the task or around it, as written (each may be a
    /// template): decided per host when the task runs.
    pub become_: BecomeKeywords,
    /// `no_log` and `ignore_errors` written as templates (`"{{ ansible_check_mode }}"`):
    /// decided per host when the task runs, where they replace the fixed values.
    pub templated: TemplatedSwitches,
    /// `module_defaults` of the task and around it, outermost first.
    pub module_defaults: Vec<ModuleDefaultsLevel>,
}

/// A play's `validate_argspec`: off, the spec named as the play is (`true`), or one named.
#[derive(Debug, Clone, PartialEq)]
pub enum ValidateArgspec {
    Off,
    PlayName,
    Named(String),
}

/// The argument spec a play's variables are checked against before its tasks (after fact
/// gathering), from the playbook's `<playbook>.meta.yml`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayArgspec {
    pub name: String,
    pub options: serde_json::Map<String, Value>,
    pub path: PathBuf,
}

/// A play keyword written as a template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplatedKeyword {
    pub key: String,
    pub template: String,
    pub location: Location,
}

/// `become`, `become_user`, `become_method`, `become_flags`, `become_exe` as written; the
/// innermost one set wins, field by field, as in Ansible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BecomeKeywords {
    pub enabled: Layered,
    pub user: Layered,
    pub method: Layered,
    pub flags: Layered,
    pub exe: Layered,
}

/// One keyword as the task and the blocks, role and play around it wrote it, innermost
/// first. Only templates keep the levels under them: one that renders to `omit` leaves the
/// keyword as the level around it set it, as Ansible resets an omitted keyword to its
/// inherited value; a plain value hides everything around it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layered(Vec<String>);

impl Layered {
    pub fn set(&mut self, written: String) {
        if !crate::template::is_template(&written) {
            self.0.clear();
        }
        self.0.insert(0, written);
    }

    /// Innermost first.
    pub fn levels(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }
}

/// Yes/no keywords whose value is a template, rendered with the task's variables and read
/// as Ansible reads a boolean.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplatedSwitches {
    /// Decided with each host's variables in turn before the task runs (the first host
    /// for which it holds runs the task for all, as Ansible's linear strategy).
    pub run_once: Option<String>,
    pub no_log: Option<String>,
    pub ignore_errors: Option<String>,
    pub check_mode: Option<String>,
    pub diff: Option<String>,
}

impl TemplatedSwitches {
    pub fn is_empty(&self) -> bool {
        self.run_once.is_none()
            && self.no_log.is_none()
            && self.ignore_errors.is_none()
            && self.check_mode.is_none()
            && self.diff.is_none()
    }
}

impl Task {
    /// This task with its templated switches decided for one host; `None` when it has
    /// none (the common case: no copy).
    pub fn with_switches_decided(
        &self,
        templar: &Templar,
        vars: &minijinja::Value,
    ) -> Result<Option<Task>, String> {
        let switches = &self.keywords.templated;
        if switches.is_empty() {
            return Ok(None);
        }
        // None for `omit`; Some(None) for a template that renders to None.
        let decide = |what: &str, template: &str| -> Result<Option<Option<bool>>, String> {
            let rendered = templar
                .render_value(&Value::String(template.to_string()), vars)
                .map_err(|e| format!("{what}: {e}"))?;
            // Ansible's strict boolean() for `isa='bool'` keywords; a template rendering
            // to None leaves the keyword at its default, one rendering to `omit` at what
            // the levels around the task set (kept in the fixed value).
            if rendered.is_null() {
                return Ok(Some(None));
            }
            if rendered.as_str() == Some(crate::template::OMIT) {
                return Ok(None);
            }
            crate::booleans::strict(&rendered).map(|b| Some(Some(b))).map_err(|_| {
                let shown = match &rendered {
                    Value::String(s) => format!("'{s}'"),
                    other => other.to_string(),
                };
                format!(
                    "Task failed: Error processing keyword '{what}': The value {shown} could not be converted to 'bool'."
                )
            })
        };
        let mut decided = self.clone();
        if let Some(template) = &switches.run_once {
            decided.keywords.run_once = match decide("run_once", template)? {
                Some(value) => value.unwrap_or(false),
                None => self.keywords.run_once,
            };
        }
        if let Some(template) = &switches.no_log {
            decided.keywords.no_log = match decide("no_log", template)? {
                Some(value) => value.unwrap_or(false),
                None => self.keywords.no_log,
            };
        }
        if let Some(template) = &switches.ignore_errors {
            decided.ignore_errors = match decide("ignore_errors", template)? {
                Some(value) => value.unwrap_or(false),
                None => self.ignore_errors,
            };
        }
        if let Some(template) = &switches.check_mode {
            decided.check_mode = decide("check_mode", template)?
                .flatten()
                .or(self.check_mode);
        }
        if let Some(template) = &switches.diff {
            decided.diff = decide("diff", template)?.flatten().or(self.diff);
        }
        decided.keywords.templated = TemplatedSwitches::default();
        Ok(Some(decided))
    }
}

impl Task {
    /// A task with every keyword at its default, for tasks the executor makes itself
    /// (Gathering Facts); the loader sets every field from the YAML instead.
    pub fn new(
        action: &str,
        module: &'static dyn crate::modules::Module,
        args: serde_json::Map<String, Value>,
        location: Location,
    ) -> Task {
        Task {
            name: None,
            action: action.to_string(),
            resolved_action: fallback_fqcn(action, module.name()),
            module,
            args,
            loop_spec: None,
            loop_var: "item".into(),
            loop_control: LoopControl::new(),
            when: Vec::new(),
            register: None,
            register_projections: Vec::new(),
            ignore_errors: false,
            changed_when: None,
            failed_when: None,
            until: None,
            async_job: AsyncKeywords::default(),
            notify: Vec::new(),
            listen: Vec::new(),
            frames: Vec::new(),
            tags: Vec::new(),
            check_mode: None,
            diff: None,
            role: None,
            include_params: serde_json::Map::new(),
            vars: serde_json::Map::new(),
            keywords: RunKeywords::default(),
            unsupported: Vec::new(),
            location,
            include: None,
            implicit: false,
        }
    }

    /// The variables the task registers: its `register` name or its projections'.
    pub fn registered_names(&self) -> Vec<String> {
        self.register
            .iter()
            .cloned()
            .chain(
                self.register_projections
                    .iter()
                    .map(|(name, _)| name.clone()),
            )
            .collect()
    }

    /// The `meta: flush_handlers` Ansible runs after a play's pre_tasks and after its
    /// roles and tasks, whatever `--tags` selects.
    pub fn implicit_flush(location: Location) -> Task {
        let mut args = serde_json::Map::new();
        args.insert("_raw_params".into(), Value::String("flush_handlers".into()));
        let meta = crate::modules::find("meta").expect("meta is a registered module");
        let mut task = Task::new("meta", meta, args, location);
        task.tags = vec!["always".into()];
        task.implicit = true;
        task
    }

    /// Whether a `notify` of `name` reaches this handler: its name, a `listen` topic, or
    /// (for a role's handler) `role : name`.
    pub fn answers_to(&self, name: &str) -> bool {
        self.is_named(name) || self.listens_to(name)
    }

    /// A handler's own name, or `role : name` (with the role's short or full collection
    /// name).
    pub fn is_named(&self, name: &str) -> bool {
        let Some(own) = &self.name else {
            return false;
        };
        own == name
            || self.role.as_ref().is_some_and(|role| {
                let short = split_role_fqcn(&role.name).map_or(role.name.as_str(), |n| n.2);
                [role.name.as_str(), short].iter().any(|role_name| {
                    name.strip_prefix(role_name)
                        .and_then(|rest| rest.trim_start().strip_prefix(':'))
                        .is_some_and(|rest| rest.trim_start() == own)
                })
            })
    }

    pub fn listens_to(&self, topic: &str) -> bool {
        self.listen.iter().any(|l| l == topic)
    }

    /// What Ansible prints in the task banner: the name, else the action; a role's task
    /// as `role : name`.
    pub fn display_name(&self) -> String {
        let own = self.name.clone().unwrap_or_else(|| self.action.clone());
        match &self.role {
            Some(role) => format!("{} : {own}", role.name),
            None => own,
        }
    }

    /// The `TASK [...]` banner: [`Task::display_name`], except that an unnamed
    /// include_role shows the role it names, as Ansible's banner does
    /// (`include_role : web`; `--list-tasks` shows just `include_role`).
    pub fn banner_name(&self) -> String {
        match (&self.name, self.args.get("name")) {
            (None, Some(Value::String(role)))
                if self.module.caps().control == crate::modules::Control::IncludeRole =>
            {
                let own = format!("{} : {role}", self.action);
                match &self.role {
                    Some(outer) => format!("{} : {own}", outer.name),
                    None => own,
                }
            }
            _ => self.display_name(),
        }
    }

    /// Whether `--start-at-task PATTERN` names this task: its name (or, unnamed, its
    /// action) equal to the pattern or matching it as a shell glob, as Ansible's fnmatch.
    pub fn matches_name(&self, pattern: &str) -> bool {
        let name = self.display_name();
        name == pattern || crate::fnmatch::fnmatch(pattern, &name)
    }
}

/// Which part of a block a task belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Block,
    Rescue,
    Always,
}

/// One enclosing block of a task. Blocks are flattened into the play's task list; each
/// host's executor state uses the frames to decide whether it runs a task (a `rescue`
/// task only runs on a host that failed in that block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockFrame {
    /// Unique within the play.
    pub block: usize,
    pub section: Section,
    pub has_rescue: bool,
    pub has_always: bool,
}

/// A task's `async` (the job's time limit in seconds) and `poll` (seconds between status
/// checks; 0 fires and forgets), raw: both may be templates. Ansible's `poll` default is 15.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AsyncKeywords {
    pub limit: Option<Value>,
    pub poll: Option<Value>,
}

impl AsyncKeywords {
    pub const DEFAULT_POLL: u64 = 15;
}

/// A task's `until` with its `retries` and `delay`, raw: both may be templates.
#[derive(Debug, Clone, PartialEq)]
pub struct Until {
    pub conditions: Vec<String>,
    /// `retries` as written (an int or a template); Ansible's default is 3.
    pub retries: Option<Value>,
    /// Seconds between attempts as written; Ansible's default is 5.
    pub delay: Option<Value>,
}

impl Until {
    pub const DEFAULT_RETRIES: u64 = 3;
    pub const DEFAULT_DELAY: u64 = 5;
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoopSpec {
    /// `loop`, `with_list`, `with_items` (which flattens one level of nested lists).
    Items { value: Value, flatten: bool },
    /// `with_sequence`, raw (e.g. `start=1 end={{ n }}`): template it, then [`sequence_items`].
    Sequence(String),
    /// `with_<lookup>` (dict, fileglob, first_found, ...): the lookup run on the templated
    /// terms, as `query(name, terms)`.
    Lookup { name: String, terms: Value },
    /// `with_nested`, `with_together`, `with_subelements`, `with_indexed_items`.
    Combine { how: Combinator, terms: Value },
}

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("Invalid data passed to 'loop', it requires a list, got this instead: {0}")]
    NotAList(String),
    #[error("The lookup plugin 'sequence' failed: {0}")]
    Sequence(String),
    #[error("{0}")]
    Lookup(String),
}

fn is_first_found(lookup: &str) -> bool {
    matches!(lookup, "first_found" | "ansible.builtin.first_found")
}

/// `value` rendered with what is undefined left out, at any depth (None when the whole is
/// undefined), as Ansible's first_found takes the terms of a `with_first_found` loop: a
/// list variable one of whose items names an undefined variable still gives the others.
fn render_omitting_undefined(
    templar: &Templar,
    value: &Value,
    vars: &minijinja::Value,
    depth: usize,
) -> Result<Option<Value>, TemplateError> {
    match value {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.extend(render_omitting_undefined(templar, item, vars, depth)?);
            }
            Ok(Some(Value::Array(out)))
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (key, item) in map {
                if let Some(rendered) = render_omitting_undefined(templar, item, vars, depth)? {
                    out.insert(key.clone(), rendered);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Value::String(text) => match templar.render_value(value, vars) {
            Ok(rendered) => Ok(Some(rendered)),
            Err(TemplateError::Undefined { .. }) => {
                // `{{ files }}` where `files` itself is a list holding an undefined item:
                // its text as written, item by item (bounded, for variables that name
                // each other).
                match unresolved_text(text, vars) {
                    Some(written) if depth < 8 => {
                        render_omitting_undefined(templar, &written, vars, depth + 1)
                    }
                    _ => Ok(None),
                }
            }
            Err(e) => Err(e),
        },
        other => Ok(Some(other.clone())),
    }
}

/// The text as written of the unresolved variable a lone `{{ name }}` reads, if it is one.
fn unresolved_text(text: &str, vars: &minijinja::Value) -> Option<Value> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    if inner.is_empty() || !inner.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    crate::template::unresolved::listed(vars)
        .into_iter()
        .find(|(name, _)| name == inner)
        .map(|(_, written)| written)
}

impl LoopSpec {
    /// The loop's items for one host: templated with its variables, then shaped as Ansible
    /// does (`with_items` flattens one level and turns a lone value into a list of one).
    pub fn items(
        &self,
        templar: &Templar,
        vars: &minijinja::Value,
    ) -> Result<Vec<Value>, LoopError> {
        self.items_searching(templar, vars, "files")
    }

    /// [`LoopSpec::items`], with a `with_<lookup>`'s relative names looked up in `subdir`
    /// (see [`lookup_subdir`]).
    pub fn items_searching(
        &self,
        templar: &Templar,
        vars: &minijinja::Value,
        subdir: &str,
    ) -> Result<Vec<Value>, LoopError> {
        match self {
            LoopSpec::Sequence(raw) => {
                let spec = templar.render_str(raw, vars)?;
                Ok(sequence_items(&spec)
                    .map_err(LoopError::Sequence)?
                    .into_iter()
                    .map(Value::String)
                    .collect())
            }
            LoopSpec::Lookup { name, terms } => {
                let terms = match terms {
                    // first_found passes over a term that names an undefined variable, as
                    // Ansible's does: the next may be found.
                    terms if is_first_found(name) => {
                        render_omitting_undefined(templar, terms, vars, 0)?
                            .unwrap_or(Value::Array(Vec::new()))
                    }
                    _ => templar.render_value(terms, vars)?,
                };
                Ok(templar.query_in(name, &terms, vars, subdir)?)
            }
            LoopSpec::Combine { how, terms } => {
                let terms = templar.render_value(terms, vars)?;
                how.items(terms).map_err(LoopError::Lookup)
            }
            LoopSpec::Items { value, flatten } => {
                let value = templar.render_value(value, vars)?;
                match (value, flatten) {
                    (Value::Array(items), false) => Ok(items),
                    (Value::Array(items), true) => Ok(items
                        .into_iter()
                        .flat_map(|item| match item {
                            Value::Array(inner) => inner,
                            other => vec![other],
                        })
                        .collect()),
                    (Value::Null, true) => Ok(Vec::new()),
                    (other, true) => Ok(vec![other]),
                    (other, false) => Err(LoopError::NotAList(other.to_string())),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_roles_handler_answers_to_its_short_and_full_role_name() {
        let mut handler = Task::new(
            "ping",
            crate::modules::find("ping").expect("ping"),
            Default::default(),
            Location {
                file: Arc::from(Path::new("handlers/main.yml")),
                line: 1,
                column: 3,
            },
        );
        handler.name = Some("Restart it".into());
        handler.listen = vec!["restarts".into()];
        handler.role = Some(Arc::new(RoleInfo {
            name: "ns.coll.app".into(),
            path: PathBuf::from("/c/ansible_collections/ns/coll/roles/app"),
            defaults: Default::default(),
            vars: Default::default(),
            inherited_vars: Default::default(),
            keyword_vars: Default::default(),
            params: Default::default(),
            once_group: None,
            dependency: false,
            parents: Vec::new(),
        }));
        for name in ["Restart it", "app : Restart it", "ns.coll.app : Restart it"] {
            assert!(handler.is_named(name), "{name}");
        }
        assert!(!handler.is_named("restarts") && handler.listens_to("restarts"));
        assert!(!handler.is_named("other : Restart it"));
        assert!(handler.answers_to("restarts") && handler.answers_to("app : Restart it"));
    }

    #[test]
    fn loop_items_are_templated_and_shaped() {
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(
            serde_json::json!({"n": 3, "l": [[1, 2], 3], "s": "one"}),
        );
        let items = |spec: LoopSpec| spec.items(&templar, &vars);
        assert_eq!(
            items(LoopSpec::Sequence("start=1 end={{ n }}".into())).unwrap(),
            [Value::from("1"), Value::from("2"), Value::from("3")]
        );
        let flat = LoopSpec::Items {
            value: Value::from("{{ l }}"),
            flatten: true,
        };
        assert_eq!(
            items(flat).unwrap(),
            [Value::from(1), Value::from(2), Value::from(3)]
        );
        let nested = LoopSpec::Items {
            value: serde_json::json!(["{{ s }}", "{{ n }}"]),
            flatten: false,
        };
        assert_eq!(items(nested).unwrap(), [Value::from("one"), Value::from(3)]);
        let lone = LoopSpec::Items {
            value: Value::from("{{ s }}"),
            flatten: true,
        };
        assert_eq!(items(lone).unwrap(), [Value::from("one")]);
        let not_list = LoopSpec::Items {
            value: Value::from("{{ s }}"),
            flatten: false,
        };
        assert_eq!(
            items(not_list).unwrap_err().to_string(),
            "Invalid data passed to 'loop', it requires a list, got this instead: \"one\""
        );
        let undefined = LoopSpec::Sequence("end={{ nope }}".into());
        assert_eq!(
            items(undefined).unwrap_err().to_string(),
            "'nope' is undefined"
        );
    }

    /// The benchmark playbook's task, as the executor will run it: loop items, then the
    /// copy args templated per item, then planned.
    #[test]
    fn file_creation_task_plans_one_op_per_item() {
        use crate::modules::{Plan, PlanContext};
        use turbo_proto::{EnsureFile, FileContent, Op};
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/file_creation.yml");
        let pb = load_playbook(&path).unwrap();
        let task = &pb.plays[0].tasks[0];
        let templar = Templar::new();
        let mut vars = serde_json::Map::new();
        vars.insert("n".into(), Value::from(3));
        let host_vars = minijinja::Value::from_serialize(&vars);
        let items = task
            .loop_spec
            .as_ref()
            .unwrap()
            .items(&templar, &host_vars)
            .unwrap();
        assert_eq!(items.len(), 3);
        let mut ops = Vec::new();
        for item in items {
            vars.insert(task.loop_var.clone(), item);
            let item_vars = minijinja::Value::from_serialize(&vars);
            let args = templar
                .render_value(&Value::Object(task.args.clone()), &item_vars)
                .unwrap();
            let ctx = PlanContext::new(&pb.dir);
            match crate::modules::try_plan(task.module, args, &ctx).unwrap() {
                Plan::Remote(op) => ops.push(op),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            ops[1],
            Op::EnsureFile(EnsureFile {
                path: "~/file_2".into(),
                content: FileContent::Inline(b"test file 2\n".to_vec()),
                mode: None,
                force: true,
                owner: Default::default(),
                validate: None,
                backup: false,
            })
        );
    }

    #[test]
    fn start_at_task_matches_names_and_unnamed_actions() {
        let pb = load_playbook_text(
            Path::new("site.yml"),
            "- hosts: all\n  tasks:\n    - name: Install web\n      command: x\n    - command: y\n",
        )
        .unwrap();
        let tasks = &pb.plays[0].tasks;
        assert!(tasks[0].matches_name("Install web"));
        assert!(tasks[0].matches_name("Install*"));
        assert!(!tasks[0].matches_name("install*"));
        assert!(tasks[1].matches_name("command"));
        assert!(!tasks[1].matches_name("y"));
    }

    #[test]
    fn location_displays_as_file_line_col() {
        let loc = Location {
            file: Arc::from(Path::new("site.yml")),
            line: 3,
            column: 7,
        };
        assert_eq!(loc.to_string(), "site.yml:3:7");
    }
}
