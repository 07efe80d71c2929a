//! YAML tree -> [`Playbook`], with Ansible's rules and file:line:col errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::include::Shared;
use super::kv::{FREE_FORM_OPTIONS, parse_kv};
use super::{
    BatchSize, BlockFrame, Combinator, HostOrder, LOOP_LOOKUPS, Location, LoopControl, LoopSpec,
    Play, PlayKeywords, Playbook, RunKeywords, Section, Task, Until,
};
use crate::modules::{self, Module, closest};
use crate::yaml::{LoadError, Node, Source, Span, Value};

/// Play keys Ansible accepts that turbo-play loads and ignores for now.
/// Play keywords accepted but not acted on yet; the executor warns about each one used,
/// because ignoring them silently would change what the play does.
const UNSUPPORTED_PLAY_KEYS: &[&str] = &[
    "become",
    "become_user",
    "become_method",
    "run_once",
    "module_defaults",
];

/// Play keywords with no effect on the outcome here: accepted silently.
const IGNORED_PLAY_KEYS: &[&str] = &[
    "collections",
    "no_log",
    "timeout",
    "debugger",
    "gather_timeout",
    "fact_path",
];

const PLAY_KEYS: &[&str] = &[
    "name",
    "hosts",
    "vars",
    "vars_files",
    "gather_facts",
    "gather_subset",
    "tasks",
    "pre_tasks",
    "post_tasks",
    "connection",
    "remote_user",
    "port",
    "handlers",
    "force_handlers",
    "vars_prompt",
    "ignore_errors",
    "tags",
    "check_mode",
    "diff",
    "roles",
    "environment",
    "serial",
    "order",
    "any_errors_fatal",
    "max_fail_percentage",
    "strategy",
    "throttle",
    "ignore_unreachable",
];

/// Task keywords loaded and not acted on: `become` (warned about when true, see
/// `Loader::task`) and keywords that do not change what a task does here.
pub(super) const IGNORED_TASK_KEYS: &[&str] = &[
    "become",
    "become_user",
    "become_method",
    "remote_user",
    "connection",
    "timeout",
    "debugger",
    "collections",
    "module_defaults",
];

/// Task keywords that change behaviour but are not implemented yet: loaded, and listed in
/// [`Task::unsupported`] so the executor can warn.
const UNSUPPORTED_TASK_KEYS: &[&str] = &["async", "poll"];

const TASK_KEYS: &[&str] = &[
    "name",
    "loop",
    "with_items",
    "with_list",
    "with_sequence",
    "when",
    "register",
    "ignore_errors",
    "changed_when",
    "failed_when",
    "until",
    "retries",
    "delay",
    "notify",
    "vars",
    "loop_control",
    "args",
    "action",
    "local_action",
    "tags",
    "check_mode",
    "diff",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
];

const LOOP_CONTROL_KEYS: &[&str] = &[
    "loop_var",
    "index_var",
    "label",
    "pause",
    "extended",
    "extended_allitems",
    "break_when",
];

/// Keys a block takes besides the ignored task keywords.
const BLOCK_KEYS: &[&str] = &[
    "block",
    "rescue",
    "always",
    "name",
    "when",
    "vars",
    "ignore_errors",
    "tags",
    "check_mode",
    "diff",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
    "any_errors_fatal",
    "ignore_unreachable",
];

/// Play keywords that every task of the play takes on (a task's own wins).
const PLAY_RUN_KEYWORDS: [&str; 2] = ["throttle", "ignore_unreachable"];

/// Keywords a block hands down, parsed by `run_keyword`.
const RUN_KEYWORDS: &[&str] = &[
    "any_errors_fatal",
    "ignore_unreachable",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
];

/// `meta:` actions the executor knows.
pub const META_ACTIONS: &[&str] = &[
    "flush_handlers",
    "noop",
    "end_play",
    "end_host",
    "end_batch",
    "clear_host_errors",
    "refresh_inventory",
    "reset_connection",
    "clear_facts",
    "role_complete",
];

/// What a block (or an import, or a role) hands down to the tasks inside it.
#[derive(Debug, Clone, Default)]
pub(super) struct Inherited {
    pub(super) frames: Vec<BlockFrame>,
    pub(super) when: Vec<String>,
    pub(super) vars: serde_json::Map<String, Json>,
    pub(super) ignore_errors: Option<bool>,
    pub(super) handler: bool,
    pub(super) tags: Vec<String>,
    pub(super) check_mode: Option<bool>,
    pub(super) diff: Option<bool>,
    pub(super) role: Option<Arc<super::RoleInfo>>,
    pub(super) include_params: serde_json::Map<String, Json>,
    pub(super) keywords: RunKeywords,
}

/// Settings that change how a playbook loads.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// ansible.cfg `roles_path` / `ANSIBLE_ROLES_PATH`: searched for roles after `roles/`
    /// beside the playbook and before the playbook's own directory.
    pub roles_path: Vec<PathBuf>,
    /// ansible.cfg `collections_path` / `ANSIBLE_COLLECTIONS_PATH`: where
    /// `namespace.collection.role` names are found (after `collections/` beside the
    /// playbook).
    pub collections_path: Vec<PathBuf>,
}

/// Keeps the first of each repeated tag.
fn dedup_in_order(tags: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    tags.retain(|t| seen.insert(t.clone()));
}

impl LoadOptions {
    /// Ansible's `roles_path` when none is configured: `~/.ansible/roles` (where
    /// `ansible-galaxy` installs), `/usr/share/ansible/roles`, `/etc/ansible/roles`.
    pub fn default_roles_path(home: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = home.map(|h| h.join(".ansible/roles")).into_iter().collect();
        dirs.extend(["/usr/share/ansible/roles", "/etc/ansible/roles"].map(PathBuf::from));
        dirs
    }
}

/// Loads a playbook and every playbook it imports (`import_playbook`), in run order. Plays
/// from another directory come as a playbook of their own, so their relative paths
/// (`files/`, `vars_files`, `group_vars/`) resolve beside the file that wrote them.
pub fn load_playbooks(path: &Path, options: &LoadOptions) -> Result<Vec<Playbook>, LoadError> {
    let source = Source::read(path)?;
    let shared = Shared::new(options);
    shared.load_playbook_source(&source)
}

/// [`load_playbooks`] with default options, its plays as one playbook (the top file's).
pub fn load_playbook(path: &Path) -> Result<Playbook, LoadError> {
    let source = Source::read(path)?;
    merged(
        &source,
        Shared::new(&LoadOptions::default()).load_playbook_source(&source)?,
    )
}

/// Loads playbook text as if read from `path` (tests, and playbooks from stdin).
pub fn load_playbook_text(path: &Path, text: &str) -> Result<Playbook, LoadError> {
    let source = Source::from_text(path, text);
    merged(
        &source,
        Shared::new(&LoadOptions::default()).load_playbook_source(&source)?,
    )
}

fn merged(source: &Source, parts: Vec<Playbook>) -> Result<Playbook, LoadError> {
    let plays = parts.into_iter().flat_map(|p| p.plays).collect();
    Ok(Playbook {
        path: source.path.clone(),
        dir: dir_of(&source.path),
        plays,
    })
}

/// The directory a file's relative paths resolve against.
pub(super) fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// One playbook file's plays, from the playbook file itself.
pub(super) fn load_plays(
    shared: &Shared,
    source: &Source,
    root: &Node,
    out: &mut Vec<Playbook>,
) -> Result<(), LoadError> {
    let dir = dir_of(&source.path);
    let loader = Loader {
        source,
        file: Arc::from(source.path.as_path()),
        shared,
        playbook_dir: dir.clone(),
    };
    let items = match &root.value {
        Value::Null => return Ok(()),
        Value::Seq(items) => items,
        _ => {
            return Err(loader.err(
                root.span,
                format!(
                    "a playbook must be a list of plays, got {}",
                    root.kind_name()
                ),
                Some("start each play with `- hosts: ...`".into()),
            ));
        }
    };
    for item in items {
        if let Some(imported) = loader.import_playbook(item)? {
            out.extend(imported);
            continue;
        }
        let play = loader.play(item)?;
        match out.last_mut() {
            Some(last) if last.dir == dir => last.plays.push(play),
            _ => out.push(Playbook {
                path: source.path.clone(),
                dir: dir.clone(),
                plays: vec![play],
            }),
        }
    }
    Ok(())
}

pub(super) struct Loader<'s> {
    pub(super) source: &'s Source,
    pub(super) file: Arc<Path>,
    pub(super) shared: &'s Shared,
    /// The directory of the playbook this play comes from (`roles/` is looked up there).
    pub(super) playbook_dir: PathBuf,
}

impl Loader<'_> {
    pub(super) fn err(
        &self,
        span: Span,
        message: impl Into<String>,
        help: Option<String>,
    ) -> LoadError {
        self.source.error(Some(span), message, help)
    }

    fn location(&self, span: Span) -> Location {
        Location {
            file: self.file.clone(),
            line: span.line,
            column: span.column,
        }
    }

    pub(super) fn key<'n>(&self, key: &'n Node) -> Result<&'n str, LoadError> {
        key.as_str().ok_or_else(|| {
            self.err(
                key.span,
                format!("keys here must be strings, got {}", key.kind_name()),
                None,
            )
        })
    }

    pub(super) fn play(&self, node: &Node) -> Result<Play, LoadError> {
        let Some(entries) = node.as_map() else {
            return Err(self.err(
                node.span,
                format!("a play must be a mapping, got {}", node.kind_name()),
                Some("a play looks like `- hosts: all` followed by `tasks:`".into()),
            ));
        };
        let mut name = None;
        let mut hosts = None;
        let mut vars = serde_json::Map::new();
        let mut vars_files = Vec::new();
        let mut vars_prompt = Vec::new();
        let mut gather_facts = true;
        let mut gather_subset = Vec::new();
        let (mut connection, mut remote_user, mut port) = (None, None, None);
        let mut unsupported = Vec::new();
        let mut sections: [Vec<Task>; 3] = Default::default();
        let mut handlers = Vec::new();
        let mut force_handlers = false;
        let mut tags = Vec::new();
        let mut check_mode = None;
        let mut diff = None;
        let mut host_patterns = Vec::new();
        let mut roles = Vec::new();
        let mut environment = None;
        let mut keywords = PlayKeywords::default();
        // Play keywords every task takes on; read first because `tasks:` may come before them.
        let mut top = Inherited::default();
        for key in PLAY_RUN_KEYWORDS {
            if let Some(v) = node.get(key) {
                self.run_keyword(key, v, &mut top.keywords)?;
            }
        }
        if let Some(v) = node.get("ignore_errors") {
            top.ignore_errors = Some(self.boolean(v, "ignore_errors")?);
        }
        self.shared.start_play();
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "roles" => roles = self.play_roles(v)?,
                "name" => name = Some(self.scalar(v, "name")?),
                "hosts" => {
                    hosts = Some(self.hosts(v)?);
                    host_patterns = match &v.value {
                        Value::Seq(items) => items
                            .iter()
                            .map(|i| i.scalar_to_string().unwrap_or_default())
                            .collect(),
                        _ => vec![v.scalar_to_string().unwrap_or_default()],
                    };
                }
                "tags" => tags = self.tags(v)?,
                "check_mode" => check_mode = Some(self.boolean(v, key)?),
                "diff" => diff = Some(self.boolean(v, key)?),
                "vars" => vars = self.mapping(v, "vars")?,
                "vars_files" => vars_files = self.vars_files(v)?,
                "vars_prompt" => vars_prompt = self.vars_prompt(v)?,
                // Read before the tasks (above): every task takes it on.
                "ignore_errors" => {}
                "gather_facts" => gather_facts = self.boolean(v, "gather_facts")?,
                "gather_subset" => gather_subset = self.string_list(v, "gather_subset")?,
                "pre_tasks" => sections[0] = self.tasks(v, key, &top)?,
                "tasks" => sections[1] = self.tasks(v, key, &top)?,
                "post_tasks" => sections[2] = self.tasks(v, key, &top)?,
                "handlers" => {
                    let as_handlers = Inherited {
                        handler: true,
                        keywords: top.keywords.clone(),
                        ..Inherited::default()
                    };
                    handlers = self.tasks(v, key, &as_handlers)?;
                }
                "force_handlers" => force_handlers = self.boolean(v, key)?,
                "connection" => connection = Some(self.scalar(v, "connection")?),
                "remote_user" => remote_user = Some(self.scalar(v, "remote_user")?),
                "port" => port = Some(self.scalar(v, "port")?),
                "environment" => environment = self.environment(v)?,
                _ if PLAY_RUN_KEYWORDS.contains(&key) => {}
                "any_errors_fatal" => keywords.any_errors_fatal = self.boolean(v, key)?,
                "max_fail_percentage" => {
                    keywords.max_fail_percentage = Some(self.percentage(v)?);
                }
                "serial" => keywords.serial = self.serial(v)?,
                "strategy" => {
                    keywords.free = match self.scalar(v, key)?.as_str() {
                        "linear" | "ansible.builtin.linear" | "debug" => false,
                        "free"
                        | "ansible.builtin.free"
                        | "host_pinned"
                        | "ansible.builtin.host_pinned" => true,
                        other => {
                            return Err(self.err(
                                v.span,
                                format!("Invalid play strategy specified: {other}"),
                                Some("use `linear` or `free`".into()),
                            ));
                        }
                    }
                }
                "order" => {
                    let text = self.scalar(v, key)?;
                    keywords.order = HostOrder::parse(&text).ok_or_else(|| {
                        self.err(
                            v.span,
                            format!("invalid play host order '{text}'"),
                            Some(format!("use one of: {}", HostOrder::NAMES.join(", "))),
                        )
                    })?;
                }
                _ if UNSUPPORTED_PLAY_KEYS.contains(&key) => unsupported.push(key.to_string()),
                _ if IGNORED_PLAY_KEYS.contains(&key) => {}
                _ => {
                    let all = PLAY_KEYS
                        .iter()
                        .chain(UNSUPPORTED_PLAY_KEYS)
                        .chain(IGNORED_PLAY_KEYS)
                        .copied();
                    let help = closest(key, all)
                        .map(|s| format!("did you mean '{s}'?"))
                        .or_else(|| {
                            (modules::find(key).is_some()).then(|| {
                                format!("'{key}' is a module: put it in a task under `tasks:`")
                            })
                        });
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for a Play"),
                        help,
                    ));
                }
            }
        }
        let hosts = hosts.ok_or_else(|| {
            self.err(
                node.span,
                "the field 'hosts' is required but was not set",
                Some("add `hosts: all` (or a group or host pattern) to the play".into()),
            )
        })?;
        let [pre, main, post] = sections;
        // Ansible runs roles after pre_tasks and before tasks.
        let mut tasks: Vec<Task> = pre
            .into_iter()
            .chain(roles)
            .chain(main)
            .chain(post)
            .collect();
        let mut handlers = self.shared.play_handlers(handlers);
        // Play keywords may follow `tasks:` in the mapping, so they are handed down last.
        for task in &mut tasks {
            task.tags.splice(0..0, tags.iter().cloned());
            dedup_in_order(&mut task.tags);
            task.check_mode = task.check_mode.or(check_mode);
            task.diff = task.diff.or(diff);
        }
        for handler in &mut handlers {
            handler.check_mode = handler.check_mode.or(check_mode);
            handler.diff = handler.diff.or(diff);
        }
        let play = Play {
            ran_roles: self.shared.ran_roles(),
            roles: self.shared.public_roles(),
            name: name.unwrap_or_else(|| hosts.clone()),
            hosts,
            host_patterns,
            tags,
            vars,
            vars_files,
            vars_prompt,
            gather_facts,
            gather_subset,
            tasks,
            handlers,
            force_handlers,
            connection,
            remote_user,
            port,
            environment,
            keywords,
            unsupported,
            location: self.location(node.span),
        };
        self.check_notify(&play)?;
        Ok(play)
    }

    /// `vars_files`: a list whose items are paths, or lists of paths of which the first
    /// that exists is read; a lone path is a list of one, as Ansible takes it.
    /// `vars_prompt`: a list of `{name, prompt, default, private, ...}`.
    fn vars_prompt(&self, node: &Node) -> Result<Vec<(String, Option<Json>)>, LoadError> {
        let Some(items) = node.as_seq() else {
            return Err(self.err(
                node.span,
                format!("vars_prompt must be a list, got {}", node.kind_name()),
                Some("write `vars_prompt: [{name: x, prompt: \"X?\", default: y}]`".into()),
            ));
        };
        items
            .iter()
            .map(|item| {
                let name = item.get("name").and_then(Node::as_str).ok_or_else(|| {
                    self.err(
                        item.span,
                        "each vars_prompt entry needs a `name`",
                        Some("write `- name: x` with an optional `default:`".into()),
                    )
                })?;
                Ok((name.to_string(), item.get("default").map(Node::to_json)))
            })
            .collect()
    }

    fn vars_files(&self, node: &Node) -> Result<Vec<Vec<String>>, LoadError> {
        let path = |n: &Node| self.scalar(n, "vars_files");
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items
                .iter()
                .map(|item| match &item.value {
                    Value::Seq(alternatives) => alternatives.iter().map(path).collect(),
                    _ => Ok(vec![path(item)?]),
                })
                .collect(),
            _ => Ok(vec![vec![path(node)?]]),
        }
    }

    fn hosts(&self, node: &Node) -> Result<String, LoadError> {
        match &node.value {
            Value::Seq(items) => Ok(items
                .iter()
                .map(|i| self.scalar(i, "hosts"))
                .collect::<Result<Vec<_>, _>>()?
                .join(",")),
            Value::Null => Err(self.err(
                node.span,
                "hosts must not be empty",
                Some("use `hosts: all`, a group name, or a host pattern".into()),
            )),
            _ => self.scalar(node, "hosts"),
        }
    }

    /// A list of scalars, or one comma-separated string (as `gather_subset: "!all,network"`).
    fn string_list(&self, node: &Node, what: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items.iter().map(|i| self.scalar(i, what)).collect(),
            _ => Ok(self
                .scalar(node, what)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()),
        }
    }

    /// `tags`: a list (nested lists flattened, as Ansible does) or a comma-separated string.
    pub(super) fn tags(&self, node: &Node) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Str(s) => Ok(super::split_tags(s)),
            Value::Seq(items) => {
                let mut tags = Vec::new();
                for item in items {
                    match &item.value {
                        Value::Seq(inner) => {
                            for i in inner {
                                tags.push(self.scalar(i, "a tag")?);
                            }
                        }
                        _ => tags.push(self.scalar(item, "a tag")?),
                    }
                }
                Ok(tags)
            }
            _ => Err(self.err(
                node.span,
                "tags must be specified as a list",
                Some("write `tags: [web, db]` or `tags: web,db`".into()),
            )),
        }
    }

    pub(super) fn scalar(&self, node: &Node, what: &str) -> Result<String, LoadError> {
        match &node.value {
            Value::Seq(_) | Value::Map(_) | Value::Null => Err(self.err(
                node.span,
                format!("{what} must be a string, got {}", node.kind_name()),
                None,
            )),
            _ => Ok(node.scalar_to_string().unwrap_or_default()),
        }
    }

    pub(super) fn mapping(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        match &node.value {
            Value::Null => Ok(serde_json::Map::new()),
            Value::Map(_) => match node.to_json() {
                Json::Object(map) => Ok(map),
                _ => unreachable!("a mapping node converts to an object"),
            },
            _ => Err(self.err(
                node.span,
                format!("{what} must be a mapping, got {}", node.kind_name()),
                Some(format!(
                    "write `{what}:` followed by indented `key: value` lines"
                )),
            )),
        }
    }

    pub(super) fn boolean(&self, node: &Node, what: &str) -> Result<bool, LoadError> {
        match &node.value {
            Value::Bool(b) => Ok(*b),
            Value::Str(s) => match s.to_ascii_lowercase().as_str() {
                "yes" | "true" | "on" | "y" | "1" => Ok(true),
                "no" | "false" | "off" | "n" | "0" => Ok(false),
                _ => Err(self.bool_error(node, what)),
            },
            Value::Int(1) => Ok(true),
            Value::Int(0) => Ok(false),
            _ => Err(self.bool_error(node, what)),
        }
    }

    /// A yes/no keyword that may also be a template, decided when the task runs:
    /// `Ok(value)` or `Err(template)`.
    pub(super) fn switch(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<Result<bool, String>, LoadError> {
        match &node.value {
            Value::Str(s) if crate::template::is_template(s) => Ok(Err(s.clone())),
            _ => self.boolean(node, what).map(Ok),
        }
    }

    fn bool_error(&self, node: &Node, what: &str) -> LoadError {
        let shown = node
            .scalar_to_string()
            .map(|s| format!("'{s}'"))
            .unwrap_or_else(|| node.kind_name().to_string());
        self.err(
            node.span,
            format!("{what} must be a boolean, got {shown}"),
            Some("use yes/no or true/false".into()),
        )
    }

    /// A task list, blocks flattened into it: each task carries its blocks' frames and
    /// what they hand down (`when`, `vars`, `ignore_errors`).
    pub(super) fn tasks(
        &self,
        node: &Node,
        section: &str,
        inherited: &Inherited,
    ) -> Result<Vec<Task>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => {
                let mut out = Vec::new();
                for item in items {
                    if item.get("block").is_some() {
                        self.block(item, inherited, &mut out)?;
                    } else if self.include(item, inherited, &mut out)? {
                        // An import or role, inlined.
                    } else {
                        out.push(self.task(item, inherited)?);
                    }
                }
                Ok(out)
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{section} must be a list of tasks, got {}",
                    node.kind_name()
                ),
                Some("start each task with `- name: ...`".into()),
            )),
        }
    }

    fn block(
        &self,
        node: &Node,
        inherited: &Inherited,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let entries = node.as_map().unwrap_or_default();
        let mut sections: [Option<&Node>; 3] = [None; 3];
        let mut inner = inherited.clone();
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "block" => sections[0] = Some(v),
                "rescue" => sections[1] = Some(v),
                "always" => sections[2] = Some(v),
                "name" => {
                    self.scalar(v, "name")?;
                }
                // The block's conditions hold for each of its tasks, judged per task.
                "when" => inner.when.extend(self.conditions(v, key)?),
                // Block vars sit below the task's own.
                "vars" => inner.vars.extend(self.mapping(v, key)?),
                "ignore_errors" => match self.switch(v, key)? {
                    Ok(fixed) => {
                        inner.ignore_errors = Some(fixed);
                        inner.keywords.templated.ignore_errors = None;
                    }
                    Err(template) => {
                        inner.ignore_errors = None;
                        inner.keywords.templated.ignore_errors = Some(template);
                    }
                },
                "tags" => inner.tags.extend(self.tags(v)?),
                "check_mode" => inner.check_mode = Some(self.boolean(v, key)?),
                "diff" => inner.diff = Some(self.boolean(v, key)?),
                _ if RUN_KEYWORDS.contains(&key) => {
                    self.run_keyword(key, v, &mut inner.keywords)?
                }
                _ if IGNORED_TASK_KEYS.contains(&key) => {}
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for a Block"),
                        closest(key, BLOCK_KEYS.iter().copied())
                            .map(|s| format!("did you mean '{s}'?"))
                            .or_else(|| {
                                Some(format!(
                                    "a block takes {}; put '{key}' on the tasks inside it",
                                    BLOCK_KEYS.join(", ")
                                ))
                            }),
                    ));
                }
            }
        }
        let block = self.shared.next_block.get();
        self.shared.next_block.set(block + 1);
        let filled =
            |n: Option<&Node>| n.is_some_and(|n| n.as_seq().is_some_and(|s| !s.is_empty()));
        let (has_rescue, has_always) = (filled(sections[1]), filled(sections[2]));
        let names = ["block", "rescue", "always"];
        let kinds = [Section::Block, Section::Rescue, Section::Always];
        for ((node, section), name) in sections.iter().zip(kinds).zip(names) {
            let Some(node) = node else { continue };
            let mut scoped = inner.clone();
            scoped.frames.push(BlockFrame {
                block,
                section,
                has_rescue,
                has_always,
            });
            out.extend(self.tasks(node, name, &scoped)?);
        }
        Ok(())
    }

    pub(super) fn task(&self, node: &Node, inherited: &Inherited) -> Result<Task, LoadError> {
        let Some(entries) = node.as_map() else {
            return Err(self.err(
                node.span,
                format!("a task must be a mapping, got {}", node.kind_name()),
                Some("a task looks like `- name: ...` followed by a module, e.g. `copy:`".into()),
            ));
        };
        let mut name = None;
        // (action as written, module, its argument node, the key's span)
        let mut action: Option<(String, &'static dyn Module, ActionArgs, Span)> = None;
        let mut extra_args = serde_json::Map::new();
        let mut extra_args_node: Option<&Node> = None;
        let mut loop_spec: Option<(LoopSpec, &str)> = None;
        let mut loop_var = "item".to_string();
        let mut loop_control = LoopControl::new();
        let mut when = Vec::new();
        let mut register = None;
        let mut ignore_errors = None;
        let mut notify = Vec::new();
        let mut listen = Vec::new();
        let (mut changed_when, mut failed_when, mut until) = (None, None, None);
        let (mut retries, mut delay): (Option<&Node>, Option<&Node>) = (None, None);
        let mut vars = serde_json::Map::new();
        let mut unsupported = Vec::new();
        let mut tags = inherited.tags.clone();
        let mut check_mode = inherited.check_mode;
        let mut diff = inherited.diff;
        let mut keywords = inherited.keywords.clone();

        for (k, v) in entries {
            let key = self.key(k)?;
            let mut set_loop = |spec: LoopSpec| -> Result<(), LoadError> {
                if let Some((_, earlier)) = &loop_spec {
                    return Err(self.err(
                        k.span,
                        format!(
                            "only one loop keyword per task: '{earlier}' and '{key}' both given"
                        ),
                        Some("keep one of them".into()),
                    ));
                }
                loop_spec = Some((spec, key));
                Ok(())
            };
            match key {
                "name" => name = Some(self.scalar(v, "name")?),
                "loop" | "with_list" | "with_items" => set_loop(LoopSpec::Items {
                    value: v.to_json(),
                    flatten: key == "with_items",
                })?,
                "with_sequence" => {
                    let spec = match &v.value {
                        Value::Map(pairs) => pairs
                            .iter()
                            .map(|(pk, pv)| {
                                format!(
                                    "{}={}",
                                    pk.scalar_to_string().unwrap_or_default(),
                                    pv.scalar_to_string().unwrap_or_default()
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                        _ => self.scalar(v, "with_sequence")?,
                    };
                    set_loop(LoopSpec::Sequence(spec))?
                }
                "when" => when = self.conditions(v, key)?,
                "changed_when" => changed_when = Some(self.conditions(v, key)?),
                "failed_when" => failed_when = Some(self.conditions(v, key)?),
                "until" => until = Some(self.conditions(v, key)?),
                "retries" => retries = Some(self.count(v, key)?),
                "delay" => delay = Some(self.count(v, key)?),
                "register" => register = Some(self.scalar(v, "register")?),
                "ignore_errors" => match self.switch(v, key)? {
                    Ok(fixed) => {
                        ignore_errors = Some(fixed);
                        keywords.templated.ignore_errors = None;
                    }
                    Err(template) => keywords.templated.ignore_errors = Some(template),
                },
                "notify" => notify = self.names(v, key)?,
                "listen" if inherited.handler => listen = self.names(v, key)?,
                "listen" => {
                    return Err(self.err(
                        k.span,
                        "'listen' is only valid on a handler",
                        Some("move this task under the play's `handlers:`".into()),
                    ));
                }
                "rescue" | "always" => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' needs a `block:` beside it"),
                        Some(format!(
                            "write `- block:` with the tasks to protect, then `{key}:`"
                        )),
                    ));
                }
                "vars" => vars = self.mapping(v, "vars")?,
                "tags" => tags.extend(self.tags(v)?),
                "check_mode" => check_mode = Some(self.boolean(v, key)?),
                "diff" => diff = Some(self.boolean(v, key)?),
                "loop_control" => {
                    let (var, control) = self.loop_control(v)?;
                    if let Some(var) = var {
                        loop_var = var;
                    }
                    loop_control = control;
                    // Stopping a loop part-way needs the items one at a time; not yet.
                    if v.get("break_when").is_some() {
                        unsupported.push("loop_control.break_when".to_string());
                    }
                }
                "args" => {
                    extra_args = self.mapping(v, "args")?;
                    extra_args_node = Some(v);
                }
                _ if RUN_KEYWORDS.contains(&key) => self.run_keyword(key, v, &mut keywords)?,
                "action" | "local_action" => {
                    if key == "local_action" {
                        keywords.delegate_to = Some("localhost".to_string());
                    }
                    let (written, module, args) = self.action_keyword(v, inherited)?;
                    self.set_action(&mut action, written, module, args, k.span)?;
                }
                _ if key.starts_with("with_") => {
                    let lookup = &key["with_".len()..];
                    if !LOOP_LOOKUPS.contains(&lookup) {
                        let help = closest(lookup, LOOP_LOOKUPS.iter().copied())
                            .map(|s| format!("did you mean 'with_{s}'?"))
                            .unwrap_or_else(|| {
                                format!("loop lookups: with_{}", LOOP_LOOKUPS.join(", with_"))
                            });
                        return Err(self.err(
                            k.span,
                            format!("lookup plugin '{lookup}' for '{key}' is not supported"),
                            Some(help),
                        ));
                    }
                    let terms = v.to_json();
                    set_loop(match Combinator::from_lookup(lookup) {
                        Some(how) => LoopSpec::Combine { how, terms },
                        None => LoopSpec::Lookup {
                            name: lookup.to_string(),
                            terms,
                        },
                    })?
                }
                // Running as the login user when `become` asks for another changes what
                // a task can do: say so (`become: false` changes nothing).
                "become" if !matches!(v.value, Value::Bool(false)) => {
                    unsupported.push(key.to_string())
                }
                _ if IGNORED_TASK_KEYS.contains(&key) => {}
                _ if UNSUPPORTED_TASK_KEYS.contains(&key) => {
                    if !unsupported.iter().any(|u| u == key) {
                        unsupported.push(key.to_string());
                    }
                }
                _ => match self.find_module(key, inherited) {
                    Some(module) => {
                        let args = ActionArgs::Node(v);
                        self.set_action(&mut action, key.to_string(), module, args, k.span)?
                    }
                    None => return Err(self.unknown_action(key, k.span)),
                },
            }
        }

        let Some((written, module, args_node, key_span)) = action else {
            return Err(self.err(
                node.span,
                "no module/action detected in task.",
                Some(format!(
                    "add a module to the task, one of: {}",
                    module_list()
                )),
            ));
        };
        // Where each argument key was written, for pointing at a bad one.
        let mut arg_keys: Vec<&Node> = Vec::new();
        match &args_node {
            ActionArgs::Node(n) => {
                arg_keys.extend(n.as_map().unwrap_or_default().iter().map(|(k, _)| k))
            }
            ActionArgs::Pairs(pairs) => arg_keys.extend(pairs.iter().map(|(k, _)| k)),
            ActionArgs::Text(..) => {}
        }
        if let Some(n) = extra_args_node {
            arg_keys.extend(n.as_map().unwrap_or_default().iter().map(|(k, _)| k));
        }
        let module_args = self.module_args(module, args_node)?;
        // `args:` gives defaults; what is written on the module wins (as Ansible merges).
        let mut args = extra_args;
        args.extend(module_args);
        let mut when_all = inherited.when.clone();
        when_all.extend(when);
        let mut task_vars = inherited.vars.clone();
        task_vars.extend(vars);
        if module.caps().control == modules::Control::Meta {
            self.check_meta(&args, key_span)?;
        }
        Ok(Task {
            name,
            action: written,
            module,
            args,
            loop_spec: loop_spec.map(|(spec, _)| spec),
            loop_var,
            loop_control,
            when: when_all,
            register,
            ignore_errors: ignore_errors.or(inherited.ignore_errors).unwrap_or(false),
            changed_when,
            failed_when,
            // `retries`/`delay` without `until` do nothing in Ansible either.
            until: until.map(|conditions| Until {
                conditions,
                retries: retries.map(Node::to_json),
                delay: delay.map(Node::to_json),
            }),
            notify,
            listen,
            frames: inherited.frames.clone(),
            tags: {
                dedup_in_order(&mut tags);
                tags
            },
            check_mode,
            diff,
            role: inherited.role.clone(),
            include_params: inherited.include_params.clone(),
            vars: task_vars,
            keywords,
            unsupported,
            location: self.location(node.span),
            include: None,
        })
    }

    fn set_action<'n>(
        &self,
        slot: &mut Option<(String, &'static dyn Module, ActionArgs<'n>, Span)>,
        written: String,
        module: &'static dyn Module,
        args: ActionArgs<'n>,
        span: Span,
    ) -> Result<(), LoadError> {
        if let Some((earlier, ..)) = slot {
            return Err(self.err(
                span,
                format!("conflicting action statements: {earlier}, {written}"),
                Some("a task runs exactly one module: split it into two tasks".into()),
            ));
        }
        *slot = Some((written, module, args, span));
        Ok(())
    }

    /// A module by the name a task uses: Ansible's own, or one an installed collection
    /// ships (which only fails when a host runs it). Inside a collection's role a short
    /// name may be one of that collection's modules, as Ansible resolves it there.
    fn find_module(&self, name: &str, inherited: &Inherited) -> Option<&'static dyn Module> {
        modules::find(name)
            .or_else(|| self.shared.collection_module(name, &self.playbook_dir))
            .or_else(|| {
                let role = inherited.role.as_ref()?;
                let fqcn = super::collections::enclosing_collection_module(&role.path, name)?;
                Some(modules::collection_module(&fqcn))
            })
    }

    fn unknown_action(&self, key: &str, span: Span) -> LoadError {
        let suggestion = modules::suggest(key).or_else(|| {
            let keywords = TASK_KEYS
                .iter()
                .chain(IGNORED_TASK_KEYS)
                .chain(UNSUPPORTED_TASK_KEYS)
                .copied();
            closest(key, keywords)
        });
        match suggestion {
            Some(s) => self.err(
                span,
                format!("couldn't resolve module/action '{key}'. Did you mean '{s}'?"),
                None,
            ),
            None => self.err(
                span,
                format!("couldn't resolve module/action '{key}'"),
                Some(format!("modules turbo-play runs: {}", module_list())),
            ),
        }
    }

    /// `action: copy src=a dest=b`, or `action: {module: copy, src: a}`.
    fn action_keyword<'n>(
        &self,
        node: &'n Node,
        inherited: &Inherited,
    ) -> Result<(String, &'static dyn Module, ActionArgs<'n>), LoadError> {
        let (written, args) = match &node.value {
            Value::Str(s) => {
                let s = s.trim_start();
                let (name, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
                (
                    name.to_string(),
                    ActionArgs::Text(rest.to_string(), node.span),
                )
            }
            Value::Map(entries) => {
                let module = node.get("module").and_then(Node::as_str).ok_or_else(|| {
                    self.err(
                        node.span,
                        "an action mapping needs a `module:` key",
                        Some("write `action: {module: copy, dest: ...}`".into()),
                    )
                })?;
                let rest: Vec<&(Node, Node)> = entries
                    .iter()
                    .filter(|(k, _)| k.as_str() != Some("module"))
                    .collect();
                (module.to_string(), ActionArgs::Pairs(rest))
            }
            _ => {
                return Err(self.err(
                    node.span,
                    format!(
                        "action must be a string or a mapping, got {}",
                        node.kind_name()
                    ),
                    None,
                ));
            }
        };
        let module = self
            .find_module(&written, inherited)
            .ok_or_else(|| self.unknown_action(&written, node.span))?;
        Ok((written, module, args))
    }

    fn module_args(
        &self,
        module: &dyn Module,
        args: ActionArgs,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        match args {
            ActionArgs::Node(node) => match &node.value {
                Value::Null => Ok(serde_json::Map::new()),
                Value::Map(entries) => self.pairs(entries.iter()),
                Value::Str(s) => self.free_text(module, s, node.span),
                // `command: 42` is a (strange) free-form command line.
                Value::Int(_) | Value::Float(_) | Value::Bool(_) if module.caps().free_form => self
                    .free_text(
                        module,
                        &node.scalar_to_string().unwrap_or_default(),
                        node.span,
                    ),
                _ => Err(self.err(
                    node.span,
                    format!(
                        "arguments of {} must be a mapping or a `key=value` string, got {}",
                        module.name(),
                        node.kind_name()
                    ),
                    None,
                )),
            },
            ActionArgs::Text(text, span) => self.free_text(module, &text, span),
            ActionArgs::Pairs(entries) => self.pairs(entries.into_iter()),
        }
    }

    fn pairs<'n>(
        &self,
        entries: impl Iterator<Item = &'n (Node, Node)>,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let mut out = serde_json::Map::new();
        for (k, v) in entries {
            let key = k.scalar_to_string().unwrap_or_default();
            out.insert(key, v.to_json());
        }
        Ok(out)
    }

    fn free_text(
        &self,
        module: &dyn Module,
        text: &str,
        span: Span,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let mut out = serde_json::Map::new();
        if module.caps().free_form {
            let parsed = parse_kv(text, Some(FREE_FORM_OPTIONS));
            if !parsed.raw.is_empty() {
                out.insert("_raw_params".into(), Json::String(parsed.raw));
            }
            for (k, v) in parsed.pairs {
                out.insert(k, Json::String(v));
            }
            return Ok(out);
        }
        let parsed = parse_kv(text, None);
        if !parsed.raw.is_empty() {
            return Err(self.err(
                span,
                format!(
                    "{} takes key=value arguments, but '{}' is not one",
                    module.name(),
                    parsed.raw
                ),
                Some(format!(
                    "write `name=value` pairs separated by spaces, e.g. `{}: {}=...`",
                    module.name(),
                    module.spec().args.first().map_or("arg", |a| a.name)
                )),
            ));
        }
        for (k, v) in parsed.pairs {
            out.insert(k, Json::String(v));
        }
        Ok(out)
    }

    /// `when`, `changed_when`, `failed_when`, `until`: one condition or a list (all must hold).
    pub(super) fn conditions(&self, node: &Node, keyword: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Seq(items) => items.iter().map(|i| self.condition(i, keyword)).collect(),
            Value::Null => Ok(Vec::new()),
            _ => Ok(vec![self.condition(node, keyword)?]),
        }
    }

    fn condition(&self, node: &Node, keyword: &str) -> Result<String, LoadError> {
        match &node.value {
            Value::Str(s) => Ok(s.clone()),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                Ok(node.scalar_to_string().unwrap_or_default())
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{keyword} must be a condition or a list of conditions, got {}",
                    node.kind_name()
                ),
                Some(format!(
                    "write a Jinja expression without braces, e.g. `{keyword}: x == 1`"
                )),
            )),
        }
    }

    /// `notify`/`listen`: one name or a list of names.
    fn names(&self, node: &Node, keyword: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Seq(items) => items.iter().map(|i| self.scalar(i, keyword)).collect(),
            Value::Null => Ok(Vec::new()),
            _ => Ok(vec![self.scalar(node, keyword)?]),
        }
    }

    fn check_meta(
        &self,
        args: &serde_json::Map<String, Json>,
        span: Span,
    ) -> Result<(), LoadError> {
        let action = args.get("_raw_params").and_then(Json::as_str).unwrap_or("");
        if META_ACTIONS.contains(&action.trim()) {
            return Ok(());
        }
        Err(self.err(
            span,
            format!("invalid meta action requested: {action}"),
            Some(format!("meta takes one of: {}", META_ACTIONS.join(", "))),
        ))
    }

    /// Every `notify` must name a handler or a `listen` topic of the play (templated
    /// names are checked when they are known, at run time).
    fn check_notify(&self, play: &Play) -> Result<(), LoadError> {
        let known = |name: &str| play.handlers.iter().any(|h| h.answers_to(name));
        for task in play.tasks.iter().chain(&play.handlers) {
            for name in &task.notify {
                if !crate::template::is_template(name) && !known(name) {
                    // A role's or an imported file's task: quote its own file.
                    let other = (*task.location.file != *self.file)
                        .then(|| Source::read(&task.location.file).ok())
                        .flatten();
                    return Err(other.as_ref().unwrap_or(self.source).error(
                        Some(Span {
                            line: task.location.line,
                            column: task.location.column,
                        }),
                        format!(
                            "The requested handler '{name}' was not found in either the main handlers list nor in the listening handlers list"
                        ),
                        Some("add a handler with this `name:` (or `listen:`) under the play's `handlers:`".into()),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `retries`/`delay`: a non-negative integer, or a template deciding it at run time.
    fn count<'n>(&self, node: &'n Node, keyword: &str) -> Result<&'n Node, LoadError> {
        match &node.value {
            Value::Int(n) if *n >= 0 => Ok(node),
            Value::Str(s) if crate::template::is_template(s) || s.trim().parse::<u64>().is_ok() => {
                Ok(node)
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{keyword} must be a non-negative integer, got {}",
                    node.scalar_to_string()
                        .map(|s| format!("'{s}'"))
                        .unwrap_or_else(|| node.kind_name().to_string())
                ),
                Some(format!("write e.g. `{keyword}: 3`")),
            )),
        }
    }

    /// `max_fail_percentage`: a number from 0 to 100.
    fn percentage(&self, node: &Node) -> Result<f64, LoadError> {
        let value = match &node.value {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            Value::Str(s) => s.trim().trim_end_matches('%').parse().ok(),
            _ => None,
        };
        value.filter(|p| (0.0..=100.0).contains(p)).ok_or_else(|| {
            self.err(
                node.span,
                "max_fail_percentage must be a number from 0 to 100",
                Some("write e.g. `max_fail_percentage: 30`".into()),
            )
        })
    }

    /// `serial`: a count, a percentage, or a list of them (the last repeats).
    fn serial(&self, node: &Node) -> Result<Vec<BatchSize>, LoadError> {
        let one = |n: &Node| -> Result<BatchSize, LoadError> {
            n.scalar_to_string()
                .and_then(|s| BatchSize::parse(&s))
                .ok_or_else(|| {
                    self.err(
                        n.span,
                        "serial must be a number of hosts or a percentage",
                        Some("write e.g. `serial: 2`, `serial: \"30%\"` or `serial: [1, 5, \"50%\"]`".into()),
                    )
                })
        };
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items.iter().map(one).collect(),
            _ => Ok(vec![one(node)?]),
        }
    }

    /// A keyword of [`RunKeywords`] on a task or a block.
    pub(super) fn run_keyword(
        &self,
        key: &str,
        v: &Node,
        into: &mut RunKeywords,
    ) -> Result<(), LoadError> {
        match key {
            "run_once" => into.run_once = self.boolean(v, key)?,
            "delegate_to" => into.delegate_to = Some(self.scalar(v, key)?),
            "delegate_facts" => into.delegate_facts = self.boolean(v, key)?,
            "no_log" => match self.switch(v, key)? {
                Ok(fixed) => {
                    into.no_log = fixed;
                    into.templated.no_log = None;
                }
                Err(template) => into.templated.no_log = Some(template),
            },
            "any_errors_fatal" => into.any_errors_fatal = Some(self.boolean(v, key)?),
            "ignore_unreachable" => into.ignore_unreachable = self.boolean(v, key)?,
            "environment" => into.environment.extend(self.environment(v)?),
            "throttle" => {
                let n = self.count(v, key)?;
                into.throttle = match &n.value {
                    Value::Int(n) => Some(*n as u64),
                    Value::Str(s) => s.trim().parse().ok(),
                    _ => None,
                }
                .filter(|n| *n > 0);
            }
            _ => unreachable!("RUN_KEYWORDS lists what run_keyword takes"),
        }
        Ok(())
    }

    /// `environment`: a mapping (values templated later) or one template of a mapping.
    fn environment(&self, node: &Node) -> Result<Option<Json>, LoadError> {
        match &node.value {
            Value::Null => Ok(None),
            Value::Map(_) => Ok(Some(node.to_json())),
            Value::Str(s) if crate::template::is_template(s) => Ok(Some(node.to_json())),
            _ => Err(self.err(
                node.span,
                format!("environment must be a mapping, got {}", node.kind_name()),
                Some("write e.g. `environment: {LANG: C}`".into()),
            )),
        }
    }

    fn loop_control(&self, node: &Node) -> Result<(Option<String>, LoopControl), LoadError> {
        let mut control = LoopControl::new();
        let Some(entries) = node.as_map() else {
            if node.is_null() {
                return Ok((None, control));
            }
            return Err(self.err(
                node.span,
                format!("loop_control must be a mapping, got {}", node.kind_name()),
                None,
            ));
        };
        let mut loop_var = None;
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "loop_var" => loop_var = Some(self.scalar(v, key)?),
                "index_var" => control.index_var = Some(self.scalar(v, key)?),
                "label" => control.label = Some(self.scalar(v, key)?),
                "extended" => control.extended = self.boolean(v, key)?,
                "extended_allitems" => control.extended_allitems = self.boolean(v, key)?,
                "pause" => match &v.value {
                    Value::Int(n) if *n >= 0 => control.pause = Some(v.to_json()),
                    Value::Float(f) if *f >= 0.0 => control.pause = Some(v.to_json()),
                    Value::Str(s) if crate::template::is_template(s) => {
                        control.pause = Some(v.to_json())
                    }
                    _ => {
                        return Err(self.err(
                            v.span,
                            "loop_control.pause must be a number of seconds",
                            Some("write e.g. `pause: 2`".into()),
                        ));
                    }
                },
                _ if LOOP_CONTROL_KEYS.contains(&key) => {}
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for a LoopControl"),
                        closest(key, LOOP_CONTROL_KEYS.iter().copied())
                            .map(|s| format!("did you mean '{s}'?")),
                    ));
                }
            }
        }
        Ok((loop_var, control))
    }
}

/// A task's module arguments as written: the value under the module key, the text after
/// the module name in `action: copy src=a`, or the rest of an `action:` mapping.
enum ActionArgs<'n> {
    Node(&'n Node),
    Text(String, Span),
    Pairs(Vec<&'n (Node, Node)>),
}

fn module_list() -> String {
    modules::all()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::TemplatedSwitches;
    use crate::template::Templar;
    use serde_json::json;

    fn load(text: &str) -> Result<Playbook, LoadError> {
        load_playbook_text(Path::new("site.yml"), text)
    }

    fn ok(text: &str) -> Playbook {
        load(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(text: &str) -> LoadError {
        load(text).expect_err("should fail")
    }

    /// One task, written without indentation, loaded inside a play.
    fn task(text: &str) -> Task {
        let mut body = String::new();
        for (i, line) in text.trim_start_matches('\n').lines().enumerate() {
            body.push_str(if i == 0 { "    - " } else { "      " });
            body.push_str(line);
            body.push('\n');
        }
        let handlers = "  handlers:\n    - name: restart\n      ping:\n";
        ok(&format!("- hosts: all\n  tasks:\n{body}{handlers}")).plays[0].tasks[0].clone()
    }

    #[test]
    fn loads_the_file_creation_playbook() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/file_creation.yml");
        let pb = load_playbook(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pb.dir, path.parent().unwrap());
        assert_eq!(pb.plays.len(), 1);
        let play = &pb.plays[0];
        assert_eq!(play.name, "all");
        assert_eq!(play.hosts, "all");
        assert!(!play.gather_facts);
        assert_eq!(play.location.line, 1);
        let t = &play.tasks[0];
        assert_eq!(t.display_name(), "Create files with copy content module");
        assert_eq!(t.action, "copy");
        assert_eq!(t.module.name(), "copy");
        assert_eq!(
            Json::Object(t.args.clone()),
            json!({"content": "test file {{ item }}\n", "dest": "~/file_{{ item }}"})
        );
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end={{ n }}".into()))
        );
        assert_eq!(t.loop_var, "item");
        assert!(t.when.is_empty() && t.unsupported.is_empty());
        assert_eq!((t.location.line, t.location.column), (4, 7));
        assert!(t.location.to_string().ends_with("file_creation.yml:4:7"));
    }

    #[test]
    fn play_fields() {
        let pb = ok("
- name: Web
  hosts: [web, db]
  gather_facts: no
  become: yes
  vars:
    port: 80
    list: [1, 2]
  pre_tasks:
    - ping:
  tasks:
    - debug: msg=main
  post_tasks:
    - debug:
        msg: post
  handlers:
    - name: h
      debug:
- hosts: all
");
        let play = &pb.plays[0];
        assert_eq!(play.name, "Web");
        assert_eq!(play.hosts, "web,db");
        assert!(!play.gather_facts);
        assert_eq!(
            Json::Object(play.vars.clone()),
            json!({"port": 80, "list": [1, 2]})
        );
        let actions: Vec<_> = play.tasks.iter().map(|t| t.display_name()).collect();
        assert_eq!(actions, ["ping", "debug", "debug"]);
        assert_eq!(
            Json::Object(play.tasks[1].args.clone()),
            json!({"msg": "main"})
        );
        assert!(pb.plays[1].gather_facts);
        assert!(pb.plays[1].gather_subset.is_empty());
        assert!(pb.plays[1].tasks.is_empty());
        assert!(ok("").plays.is_empty());
    }

    #[test]
    fn gather_subset_is_a_list_or_a_comma_separated_string() {
        let pb = ok("
- hosts: all
  gather_subset: [min, network]
- hosts: all
  gather_subset: '!all, !min,hardware'
");
        assert_eq!(pb.plays[0].gather_subset, ["min", "network"]);
        assert_eq!(pb.plays[1].gather_subset, ["!all", "!min", "hardware"]);
    }

    #[test]
    fn set_fact_takes_any_names_and_include_vars_a_free_form_file() {
        let t = task("set_fact:\n  anything: 1\n  cacheable: yes\n");
        assert_eq!(
            Json::Object(t.args),
            json!({"anything": 1, "cacheable": true})
        );
        let t = task("set_fact: a=1 b=two\n");
        assert_eq!(Json::Object(t.args), json!({"a": "1", "b": "two"}));
        let t = task("include_vars: common.yml\n");
        assert_eq!(Json::Object(t.args), json!({"_raw_params": "common.yml"}));
        let t = task("include_vars:\n  file: a.yml\n  name: n\n");
        assert_eq!(t.module.name(), "include_vars");
    }

    #[test]
    fn vars_files_forms() {
        let pb = ok("
- hosts: all
  vars_files:
    - common.yml
    - ['{{ os }}.yml', default.yml]
- hosts: all
  vars_files: one.yml
- hosts: all
  vars_files:
");
        assert_eq!(
            pb.plays[0].vars_files,
            [
                vec!["common.yml".to_string()],
                vec!["{{ os }}.yml".to_string(), "default.yml".to_string()]
            ]
        );
        assert_eq!(pb.plays[1].vars_files, [vec!["one.yml".to_string()]]);
        assert!(pb.plays[2].vars_files.is_empty());
        assert!(pb.plays[0].unsupported.is_empty());
        assert_eq!(
            message_at("- hosts: all\n  vars_files:\n    - {a: 1}\n"),
            ("vars_files must be a string, got a mapping".into(), 3, 7)
        );
    }

    #[test]
    fn task_keywords() {
        let t = task(
            "
name: Many
ansible.builtin.copy:
  content: x
  dest: /tmp/{{ item }}
  mode: 0644
with_items:
  - [1, 2]
  - 3
when:
  - a == 1
  - true
register: out
ignore_errors: yes
vars:
  v: 1
loop_control:
  loop_var: f
  label: '{{ f }}'
tags: [x]
notify: restart
changed_when: false
",
        );
        assert_eq!(t.action, "ansible.builtin.copy");
        assert_eq!(t.display_name(), "Many");
        assert_eq!(t.args["mode"], json!(420));
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Items {
                value: json!([[1, 2], 3]),
                flatten: true
            })
        );
        assert_eq!(t.loop_var, "f");
        assert_eq!(t.when, ["a == 1", "True"]);
        assert_eq!(t.register.as_deref(), Some("out"));
        assert!(t.ignore_errors);
        assert_eq!(Json::Object(t.vars), json!({"v": 1}));
        assert!(t.unsupported.is_empty());
        assert_eq!(t.notify, ["restart"]);
        assert_eq!(t.changed_when, Some(vec!["False".to_string()]));
        assert_eq!(t.failed_when, None);
        assert_eq!(t.until, None);

        let t = task("file: path=/x state=absent\nloop: \"{{ things }}\"\nwhen: x");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Items {
                value: json!("{{ things }}"),
                flatten: false
            })
        );
        assert_eq!(t.when, ["x"]);
        assert_eq!(t.display_name(), "file");
    }

    #[test]
    fn control_keywords() {
        let t = task(
            "
command: /bin/true
register: r
changed_when:
  - r.rc == 0
  - \"'x' in r.stdout\"
failed_when: r.rc > 1
until: r is succeeded
retries: 5
delay: '{{ wait }}'
",
        );
        assert_eq!(
            t.changed_when,
            Some(vec!["r.rc == 0".to_string(), "'x' in r.stdout".to_string()])
        );
        assert_eq!(t.failed_when, Some(vec!["r.rc > 1".to_string()]));
        assert_eq!(
            t.until,
            Some(Until {
                conditions: vec!["r is succeeded".into()],
                retries: Some(json!(5)),
                delay: Some(json!("{{ wait }}")),
            })
        );
        assert!(t.unsupported.is_empty());
        let t = task(
            "ping:
until: x
",
        );
        assert_eq!(
            t.until,
            Some(Until {
                conditions: vec!["x".into()],
                retries: None,
                delay: None,
            })
        );
        // Without `until`, retries and delay mean nothing (as in Ansible).
        assert_eq!(
            task(
                "ping:
retries: 2
"
            )
            .until,
            None
        );
        assert_eq!(
            task(
                "ping:
failed_when: false
"
            )
            .failed_when,
            Some(vec!["False".to_string()])
        );
    }

    #[test]
    fn control_keyword_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - ping:\n      failed_when: {rc: 1}\n")),
            (
                "failed_when must be a condition or a list of conditions, got a mapping".into(),
                4,
                20
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: [[a]]\n")),
            (
                "until must be a condition or a list of conditions, got a list".into(),
                4,
                15
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: x\n      retries: many\n")),
            (
                "retries must be a non-negative integer, got 'many'".into(),
                5,
                16
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: x\n      delay: -1\n")),
            (
                "delay must be a non-negative integer, got '-1'".into(),
                5,
                14
            )
        );
    }

    #[test]
    fn blocks_flatten_with_frames_and_hand_down_keywords() {
        let pb = ok("
- hosts: all
  tasks:
    - name: outer
      when: a
      vars: {x: 1, y: 1}
      ignore_errors: true
      block:
        - command: one
          vars: {y: 2}
          when: b
        - block:
            - command: two
              ignore_errors: false
          rescue:
            - command: three
      always:
        - command: four
    - command: five
");
        let tasks = &pb.plays[0].tasks;
        let args: Vec<_> = tasks
            .iter()
            .map(|t| t.args["_raw_params"].clone())
            .collect();
        assert_eq!(args, ["one", "two", "three", "four", "five"]);
        let frame = |block, section, has_rescue, has_always| BlockFrame {
            block,
            section,
            has_rescue,
            has_always,
        };
        assert_eq!(tasks[0].frames, [frame(0, Section::Block, false, true)]);
        assert_eq!(
            tasks[1].frames,
            [
                frame(0, Section::Block, false, true),
                frame(1, Section::Block, true, false)
            ]
        );
        assert_eq!(tasks[2].frames[1], frame(1, Section::Rescue, true, false));
        assert_eq!(tasks[3].frames, [frame(0, Section::Always, false, true)]);
        assert!(tasks[4].frames.is_empty());
        assert_eq!(tasks[0].when, ["a", "b"]);
        assert_eq!(tasks[3].when, ["a"]);
        assert!(tasks[4].when.is_empty());
        assert_eq!(Json::Object(tasks[0].vars.clone()), json!({"x": 1, "y": 2}));
        assert_eq!(Json::Object(tasks[3].vars.clone()), json!({"x": 1, "y": 1}));
        assert!(tasks[0].ignore_errors && !tasks[1].ignore_errors && tasks[2].ignore_errors);
        assert!(!tasks[4].ignore_errors);
    }

    #[test]
    fn handlers_and_meta() {
        let pb = ok("
- hosts: all
  force_handlers: yes
  tasks:
    - command: x
      notify: [restart web, web changed]
    - meta: flush_handlers
  handlers:
    - name: restart web
      command: restart
    - name: reload
      command: reload
      listen:
        - web changed
      notify: restart web
");
        let play = &pb.plays[0];
        assert!(play.force_handlers);
        assert_eq!(play.tasks[0].notify, ["restart web", "web changed"]);
        assert_eq!(play.tasks[1].module.name(), "meta");
        assert_eq!(play.tasks[1].args["_raw_params"], json!("flush_handlers"));
        assert_eq!(play.handlers.len(), 2);
        assert_eq!(play.handlers[1].listen, ["web changed"]);
        assert_eq!(play.handlers[1].notify, ["restart web"]);
        // A templated name is only known at run time.
        ok("- hosts: all\n  tasks:\n    - ping:\n      notify: '{{ h }}'\n");
    }

    #[test]
    fn block_handler_and_meta_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - block:\n        - ping:\n      loop: [1]\n")),
            ("'loop' is not a valid attribute for a Block".into(), 5, 7)
        );
        let e = err(&play(
            "    - block:\n        - ping:\n      rescu:\n        - ping:\n",
        ));
        assert_eq!(e.help.as_deref(), Some("did you mean 'rescue'?"));
        assert_eq!(
            message_at(&play("    - block: {a: 1}\n")),
            ("block must be a list of tasks, got a mapping".into(), 3, 14)
        );
        assert_eq!(
            message_at(&play(
                "    - block:\n        - name: x\n          cpy: {}\n"
            )),
            (
                "couldn't resolve module/action 'cpy'. Did you mean 'copy'?".into(),
                5,
                11
            )
        );
        assert_eq!(
            message_at(&play("    - always:\n        - ping:\n")),
            ("'always' needs a `block:` beside it".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - ping:\n      notify: nobody\n")),
            (
                "The requested handler 'nobody' was not found in either the main handlers list nor in the listening handlers list".into(),
                3,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      listen: x\n")),
            ("'listen' is only valid on a handler".into(), 4, 7)
        );
        assert_eq!(
            message_at(&play("    - ping:\n      notify: {a: 1}\n")),
            ("notify must be a string, got a mapping".into(), 4, 15)
        );
        assert_eq!(
            message_at(&play("    - meta: flush_handler\n")),
            ("invalid meta action requested: flush_handler".into(), 3, 7)
        );
        assert_eq!(
            message_at("- hosts: all\n  handlers: {a: 1}\n"),
            (
                "handlers must be a list of tasks, got a mapping".into(),
                2,
                13
            )
        );
    }

    #[test]
    fn free_form_commands() {
        let t = task("shell: echo hi > /tmp/x chdir=/tmp creates=/tmp/x");
        assert_eq!(
            Json::Object(t.args),
            json!({"_raw_params": "echo hi > /tmp/x", "chdir": "/tmp", "creates": "/tmp/x"})
        );
        let t = task("command: echo {{ a }}\nargs:\n  chdir: /srv\n  creates: /x");
        assert_eq!(
            Json::Object(t.args),
            json!({"chdir": "/srv", "creates": "/x", "_raw_params": "echo {{ a }}"})
        );
        let t = task("shell: |\n  set -e\n  echo a\n  echo b\n");
        assert_eq!(t.args["_raw_params"], json!("set -e\necho a\necho b"));
        let t = task("command:\n  cmd: ls -l\n  chdir: /");
        assert_eq!(Json::Object(t.args), json!({"cmd": "ls -l", "chdir": "/"}));
    }

    #[test]
    fn action_keyword_forms() {
        let t = task("action: copy src=a.txt dest=/b");
        assert_eq!(t.action, "copy");
        assert_eq!(Json::Object(t.args), json!({"src": "a.txt", "dest": "/b"}));
        let t = task("action:\n  module: file\n  path: /x\n  state: directory");
        assert_eq!(t.action, "file");
        assert_eq!(
            Json::Object(t.args),
            json!({"path": "/x", "state": "directory"})
        );
        let t = task("local_action: command touch /x");
        assert_eq!(t.args["_raw_params"], json!("touch /x"));
        assert_eq!(t.keywords.delegate_to.as_deref(), Some("localhost"));
        assert!(t.unsupported.is_empty());
    }

    #[test]
    fn with_sequence_forms() {
        let t = task("debug: msg={{ item }}\nwith_sequence: start=1 end=5 format=%02d");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end=5 format=%02d".into()))
        );
        let t = task("debug: msg={{ item }}\nwith_sequence:\n  start: 1\n  end: 3");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end=3".into()))
        );
    }

    #[test]
    fn with_lookup_forms() {
        let t = task("debug: msg={{ item.key }}\nwith_dict: \"{{ users }}\"");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Lookup {
                name: "dict".into(),
                terms: Json::from("{{ users }}"),
            })
        );
        let t = task("debug: msg={{ item }}\nwith_fileglob: ['a/*', 'b/*']");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Lookup {
                name: "fileglob".into(),
                terms: serde_json::json!(["a/*", "b/*"]),
            })
        );
        for (key, how) in [
            ("with_nested", Combinator::Nested),
            ("with_cartesian", Combinator::Nested),
            ("with_together", Combinator::Together),
            ("with_subelements", Combinator::Subelements),
            ("with_indexed_items", Combinator::IndexedItems),
        ] {
            let t = task(&format!("debug: msg=x\n{key}: [[1], [2]]"));
            assert_eq!(
                t.loop_spec,
                Some(LoopSpec::Combine {
                    how,
                    terms: serde_json::json!([[1], [2]]),
                }),
                "{key}"
            );
        }
        assert_eq!(
            message_at("- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dcit: {}\n"),
            (
                "lookup plugin 'dcit' for 'with_dcit' is not supported".into(),
                4,
                7
            )
        );
        assert_eq!(
            message_at(
                "- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dict: {}\n      loop: []\n"
            )
            .0,
            "only one loop keyword per task: 'with_dict' and 'loop' both given"
        );
    }

    #[test]
    fn no_log_and_ignore_errors_may_be_templates_decided_per_host() {
        let t = task(
            "command: x\nno_log: \"{{ 'false' if quiet is undefined else 'true' }}\"\nignore_errors: \"{{ lenient | bool }}\"",
        );
        assert_eq!(
            t.keywords.templated,
            TemplatedSwitches {
                no_log: Some("{{ 'false' if quiet is undefined else 'true' }}".into()),
                ignore_errors: Some("{{ lenient | bool }}".into()),
            }
        );
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(serde_json::json!({"lenient": "yes"}));
        let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
        assert!(!decided.keywords.no_log && decided.ignore_errors);
        assert!(decided.keywords.templated.is_empty());
        let vars =
            minijinja::Value::from_serialize(serde_json::json!({"lenient": false, "quiet": 1}));
        let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
        assert!(decided.keywords.no_log && !decided.ignore_errors);
        // A fixed value on the task wins over a block's template.
        let pb = ok(
            "- hosts: all\n  tasks:\n    - block:\n        - command: x\n          ignore_errors: no\n      ignore_errors: \"{{ x }}\"\n",
        );
        let t = &pb.plays[0].tasks[0];
        assert!(t.keywords.templated.is_empty() && !t.ignore_errors);
        assert!(t.with_switches_decided(&templar, &vars).unwrap().is_none());
        // A value that is no template is still checked when the playbook loads.
        assert_eq!(
            err("- hosts: all\n  tasks:\n    - command: x\n      no_log: maybe\n").message,
            "no_log must be a boolean, got 'maybe'"
        );
    }

    #[test]
    fn run_keywords_on_tasks_blocks_and_plays() {
        let t = task(
            "command: x\nrun_once: true\ndelegate_to: \"{{ other }}\"\ndelegate_facts: yes\nno_log: true\nthrottle: 2\nenvironment:\n  A: \"{{ a }}\"",
        );
        assert_eq!(
            t.keywords,
            RunKeywords {
                run_once: true,
                delegate_to: Some("{{ other }}".into()),
                delegate_facts: true,
                environment: vec![serde_json::json!({"A": "{{ a }}"})],
                no_log: true,
                throttle: Some(2),
                any_errors_fatal: None,
                ignore_unreachable: false,
                templated: Default::default(),
            }
        );
        let pb = ok(
            "- hosts: all\n  environment: {P: 1}\n  tasks:\n    - block:\n        - command: x\n          environment: {T: 3}\n      environment: \"{{ block_env }}\"\n      run_once: true\n      no_log: true\n",
        );
        let play = &pb.plays[0];
        assert_eq!(play.environment, Some(serde_json::json!({"P": 1})));
        let t = &play.tasks[0];
        assert!(t.keywords.run_once && t.keywords.no_log);
        assert_eq!(
            t.keywords.environment,
            [
                serde_json::json!("{{ block_env }}"),
                serde_json::json!({"T": 3})
            ]
        );
        assert!(play.unsupported.is_empty());
        assert_eq!(
            message_at("- hosts: all\n  tasks:\n    - command: x\n      environment: [A]\n").0,
            "environment must be a mapping, got a list"
        );
    }

    #[test]
    fn play_run_keywords() {
        let pb = ok(
            "- hosts: all\n  serial: [1, '30%']\n  order: reverse_sorted\n  any_errors_fatal: true\n  max_fail_percentage: 25\n  tasks: []\n",
        );
        let play = &pb.plays[0];
        assert_eq!(
            play.keywords,
            PlayKeywords {
                serial: vec![BatchSize::Hosts(1), BatchSize::Percent(30.0)],
                order: HostOrder::ReverseSorted,
                any_errors_fatal: true,
                max_fail_percentage: Some(25.0),
                free: false,
            }
        );
        assert!(play.unsupported.is_empty());
        assert_eq!(
            ok("- hosts: all\n  serial: 2\n").plays[0].keywords.serial,
            [BatchSize::Hosts(2)]
        );
        assert_eq!(
            message_at("- hosts: all\n  order: random\n"),
            ("invalid play host order 'random'".into(), 2, 10)
        );
        assert_eq!(
            message_at("- hosts: all\n  serial: lots\n").0,
            "serial must be a number of hosts or a percentage"
        );
        assert_eq!(
            message_at("- hosts: all\n  max_fail_percentage: 120\n").0,
            "max_fail_percentage must be a number from 0 to 100"
        );
        assert!(
            ok("- hosts: all\n  strategy: free\n").plays[0]
                .keywords
                .free
        );
        assert_eq!(
            message_at("- hosts: all\n  strategy: fast\n").0,
            "Invalid play strategy specified: fast"
        );
        let t = task("ping:\nany_errors_fatal: false\nignore_unreachable: true");
        assert_eq!(t.keywords.any_errors_fatal, Some(false));
        assert!(t.keywords.ignore_unreachable);
    }

    #[test]
    fn loop_control_fields() {
        let t = task(
            "debug: msg=x\nloop: [1]\nloop_control:\n  loop_var: f\n  index_var: i\n  label: \"{{ f }}\"\n  extended: true\n  extended_allitems: false\n  pause: 0.5",
        );
        assert_eq!(t.loop_var, "f");
        assert_eq!(
            t.loop_control,
            LoopControl {
                label: Some("{{ f }}".into()),
                index_var: Some("i".into()),
                extended: true,
                extended_allitems: false,
                pause: Some(Json::from(0.5)),
            }
        );
        let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  break_when: item > 0");
        assert_eq!(t.unsupported, ["loop_control.break_when"]);
        let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  pause: \"{{ p }}\"");
        assert_eq!(t.loop_control.pause, Some(Json::from("{{ p }}")));
        assert!(t.loop_control.extended_allitems);
        assert_eq!(
            message_at(
                "- hosts: all\n  tasks:\n    - debug: msg=x\n      loop: [1]\n      loop_control:\n        pause: soon\n"
            )
            .0,
            "loop_control.pause must be a number of seconds"
        );
    }

    fn message_at(text: &str) -> (String, usize, usize) {
        let e = err(text);
        let span = e.span.expect("has a span");
        (e.message.clone(), span.line, span.column)
    }

    #[test]
    fn play_errors() {
        assert_eq!(
            message_at("- hosts: all\n  taks: []\n"),
            ("'taks' is not a valid attribute for a Play".into(), 2, 3)
        );
        let e = err("- hosts: all\n  taks: []\n");
        assert_eq!(e.help.as_deref(), Some("did you mean 'tasks'?"));
        let text = e.to_string();
        assert!(
            text.starts_with("site.yml:2:3: 'taks' is not a valid attribute for a Play"),
            "{text}"
        );
        assert!(text.contains("2 |   taks: []"), "{text}");
        assert_eq!(
            message_at("- import_playbook: other.yml\n"),
            (
                "could not find the imported playbook 'other.yml'".into(),
                1,
                20
            )
        );
        assert_eq!(
            message_at("- name: x\n  tasks: []\n"),
            ("the field 'hosts' is required but was not set".into(), 1, 3)
        );
        assert_eq!(
            message_at("hosts: all\n"),
            (
                "a playbook must be a list of plays, got a mapping".into(),
                1,
                1
            )
        );
        assert_eq!(
            message_at("- hosts: all\n  gather_facts: maybe\n"),
            ("gather_facts must be a boolean, got 'maybe'".into(), 2, 17)
        );
        assert_eq!(
            message_at("- hosts: all\n  vars: [1]\n"),
            ("vars must be a mapping, got a list".into(), 2, 9)
        );
    }

    #[test]
    fn ansible_modules_turbo_play_lacks_load_and_typos_do_not() {
        let t = task("service: name=chronyd state=restarted\nwhen: false");
        assert_eq!(t.action, "service");
        assert_eq!(t.module.name(), "service");
        assert_eq!(t.args["name"], json!("chronyd"));
        let t = task("ansible.builtin.lineinfile:\n  path: /x\n  line: y\n  create: yes");
        assert_eq!(t.module.name(), "lineinfile");
        assert_eq!(t.args["create"], json!(true));
        let t = task("action: ansible.legacy.package name=chrony");
        assert_eq!(t.module.name(), "package");
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - servce:\n        name: x\n")),
            (
                "couldn't resolve module/action 'servce'. Did you mean 'service'?".into(),
                3,
                7
            )
        );
        let e = err(&play("    - community.general.ufw: rule=allow\n"));
        assert_eq!(
            e.message,
            "couldn't resolve module/action 'community.general.ufw'"
        );
    }

    #[test]
    fn task_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - cpy:\n        dest: /x\n")),
            (
                "couldn't resolve module/action 'cpy'. Did you mean 'copy'?".into(),
                3,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - debug: msg=x\n      whn: x\n")),
            (
                "couldn't resolve module/action 'whn'. Did you mean 'when'?".into(),
                4,
                7
            )
        );
        let e = err(&play("    - frobnicate: x\n"));
        assert_eq!(e.message, "couldn't resolve module/action 'frobnicate'");
        assert!(e.help.unwrap().contains("command, copy, debug"));
        assert_eq!(
            message_at(&play(
                "    - copy: content=x dest=/x\n      file: path=/x\n"
            )),
            ("conflicting action statements: copy, file".into(), 4, 7)
        );
        assert_eq!(
            message_at(&play("    - name: nothing\n")),
            ("no module/action detected in task.".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - rescue:\n        - ping:\n")),
            ("'rescue' needs a `block:` beside it".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - import_tasks: x.yml\n")),
            ("could not find or access 'x.yml'".into(), 3, 21)
        );
        assert_eq!(
            message_at(&play(
                "    - ping:\n      loop: [1]\n      with_items: [2]\n"
            )),
            (
                "only one loop keyword per task: 'loop' and 'with_items' both given".into(),
                5,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      ignore_errors: sometimes\n")),
            (
                "ignore_errors must be a boolean, got 'sometimes'".into(),
                4,
                22
            )
        );
        assert_eq!(
            message_at(&play(
                "    - ping:\n      loop_control:\n        loop_vr: x\n"
            )),
            (
                "'loop_vr' is not a valid attribute for a LoopControl".into(),
                5,
                9
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      when: {a: 1}\n")),
            (
                "when must be a condition or a list of conditions, got a mapping".into(),
                4,
                13
            )
        );
    }

    #[test]
    fn unknown_module_arguments() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        // As in Ansible, a module's arguments are checked when the task runs: a task a
        // `when` skips never fails on them.
        for tasks in [
            "    - copy:\n        content: x\n        dest: /x\n        ownr: root\n",
            "    - copy: content=x dets=/x\n",
        ] {
            assert!(load(&play(tasks)).is_ok(), "{tasks} must load");
        }
        let e = err(&play("    - file: /tmp/x\n"));
        assert_eq!(
            e.message,
            "file takes key=value arguments, but '/tmp/x' is not one"
        );
        assert_eq!(
            e.span,
            Some(Span {
                line: 3,
                column: 13
            })
        );
        let e = err(&play("    - copy: [1]\n"));
        assert_eq!(
            e.message,
            "arguments of copy must be a mapping or a `key=value` string, got a list"
        );
    }

    #[test]
    fn tags_and_check_mode_are_inherited_from_play_and_blocks() {
        let pb = ok("
- hosts: all
  tasks:
    - name: own
      command: a
      tags: \"x, y\"
    - block:
        - name: nested
          command: b
          tags: [z, [w]]
          check_mode: yes
        - name: plain
          command: c
      tags: blk
      check_mode: no
    - name: untagged
      command: d
  check_mode: yes
  tags: play
  handlers:
    - name: h
      command: e
      tags: ignored
");
        let play = &pb.plays[0];
        assert_eq!(play.tags, ["play"]);
        assert_eq!(play.host_patterns, ["all"]);
        let tags: Vec<&Vec<String>> = play.tasks.iter().map(|t| &t.tags).collect();
        assert_eq!(tags[0], &["play", "x", "y"]);
        assert_eq!(tags[1], &["play", "blk", "z", "w"]);
        assert_eq!(tags[2], &["play", "blk"]);
        assert_eq!(tags[3], &["play"]);
        let check: Vec<Option<bool>> = play.tasks.iter().map(|t| t.check_mode).collect();
        assert_eq!(check, [Some(true), Some(true), Some(false), Some(true)]);
        assert_eq!(play.handlers[0].tags, ["ignored"]);

        let listed = ok("- hosts: [web, db]\n  tasks: []\n");
        assert_eq!(listed.plays[0].host_patterns, ["web", "db"]);
        assert_eq!(listed.plays[0].hosts, "web,db");
        assert!(listed.plays[0].tags.is_empty());

        let (message, line, _) =
            message_at("- hosts: all\n  tasks:\n    - command: a\n      tags: 3\n");
        assert!(
            message.contains("tags must be specified as a list"),
            "{message}"
        );
        assert_eq!(line, 4);
    }

    /// ansible-playbook 2.21 (checked): `diff` on a play, block or task shows or hides
    /// that task's diffs whatever `-D` says, the innermost one winning.
    #[test]
    fn the_diff_keyword_is_inherited_from_play_and_blocks() {
        let pb = ok("
- hosts: all
  diff: true
  tasks:
    - name: from the play
      command: a
    - block:
        - name: from the block
          command: b
        - name: own
          command: c
          diff: yes
      diff: false
  handlers:
    - name: h
      command: e
- hosts: all
  tasks:
    - name: unset
      command: a
");
        let diffs: Vec<Option<bool>> = pb.plays[0].tasks.iter().map(|t| t.diff).collect();
        assert_eq!(diffs, [Some(true), Some(false), Some(true)]);
        assert_eq!(pb.plays[0].handlers[0].diff, Some(true));
        assert_eq!(pb.plays[1].tasks[0].diff, None);
        assert!(pb.plays[0].unsupported.is_empty());
        let (message, line, _) =
            message_at("- hosts: all\n  tasks:\n    - command: a\n      diff: maybe\n");
        assert!(message.contains("diff"), "{message}");
        assert_eq!(line, 4);
    }
}
