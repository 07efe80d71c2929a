//! Static reuse, resolved at load time: `import_playbook`, `import_tasks`, roles (`roles:`,
//! `import_role`, meta dependencies) and, as static includes for now, `include_tasks` and
//! `include_role`. Every imported file gets its own [`Loader`], so its errors point into
//! it at file:line:col; the tasks come out inlined in the play's one task list, each
//! carrying its role ([`RoleInfo`]).

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::load::{IGNORED_TASK_KEYS, Inherited, LoadOptions, Loader, dir_of, load_plays};
use super::{Playbook, RoleInfo, Task, collections};
use crate::template::is_template;
use crate::yaml::{LoadError, Node, Source, Span, Value};

/// Loader state that outlives one file: block ids, the files being imported (to catch
/// cycles), and what the roles of the current play contribute.
pub(super) struct Shared {
    pub(super) next_block: Cell<usize>,
    roles_path: Vec<PathBuf>,
    collections_path: Vec<PathBuf>,
    /// Files and role directories being loaded, outermost first.
    importing: RefCell<Vec<PathBuf>>,
    play: RefCell<PlayRoles>,
    /// Parse the files of dynamic includes whose names are literal, for their load errors;
    /// off when the executor loads an included file (it parses each file once, on use).
    check_includes: bool,
}

#[derive(Default)]
struct PlayRoles {
    /// Handlers of `roles:` entries: they come before the play's own, as in Ansible.
    head_handlers: Vec<Task>,
    /// Handlers of `import_role`/`include_role`: after the play's own.
    tail_handlers: Vec<Task>,
    /// Role uses (directory, parameters) that already ran in this play: a role runs once
    /// per distinct parameters unless it allows duplicates. Each with the tag sets its
    /// copies inherited: a copy under other tags is kept, and the executor runs only the
    /// first copy that `--tags` selects (see [`RoleInfo::once_group`]), as Ansible skips a
    /// role that already ran.
    ran: Vec<RanRole>,
    /// Roles whose defaults and vars every task of the play sees, in load order.
    public: Vec<Arc<RoleInfo>>,
}

/// A role use that runs once per play, with the tag sets (sorted) its copies inherited.
/// The executor carries the play's list on to roles included at run time, whose
/// dependencies that already ran are not run again.
#[derive(Debug, Clone)]
pub struct RanRole {
    key: (PathBuf, Json),
    tag_sets: Vec<Vec<String>>,
}

impl Shared {
    pub(super) fn new(options: &LoadOptions) -> Shared {
        Shared {
            next_block: Cell::new(0),
            roles_path: options.roles_path.clone(),
            collections_path: options.collections_path.clone(),
            importing: RefCell::new(Vec::new()),
            play: RefCell::new(PlayRoles::default()),
            check_includes: true,
        }
    }

    /// A module named by its collection (`community.general.ufw`) that an installed
    /// collection ships: it loads, and fails on a host that runs it.
    pub(super) fn collection_module(
        &self,
        name: &str,
        playbook_dir: &Path,
    ) -> Option<&'static dyn crate::modules::Module> {
        super::collections::collection_has_module(name, playbook_dir, &self.collections_path)
            .then(|| crate::modules::collection_module(name))
    }

    pub(super) fn load_playbook_source(&self, source: &Source) -> Result<Vec<Playbook>, LoadError> {
        let root = source.parse()?;
        self.importing.borrow_mut().push(identity(&source.path));
        let mut out = Vec::new();
        let loaded = load_plays(self, source, &root, &mut out);
        self.importing.borrow_mut().pop();
        loaded.map(|()| out)
    }

    pub(super) fn start_play(&self) {
        *self.play.borrow_mut() = PlayRoles::default();
    }

    /// The role uses that ran once in the play so far.
    pub(super) fn ran_roles(&self) -> Vec<RanRole> {
        self.play.borrow().ran.clone()
    }

    /// The roles whose defaults and vars the whole play sees.
    pub(super) fn public_roles(&self) -> Vec<Arc<RoleInfo>> {
        std::mem::take(&mut self.play.borrow_mut().public)
    }

    /// The play's handler list: `roles:` handlers, its own, then imported roles' handlers.
    pub(super) fn play_handlers(&self, own: Vec<Task>) -> Vec<Task> {
        let mut play = self.play.borrow_mut();
        let mut all = std::mem::take(&mut play.head_handlers);
        all.extend(own);
        all.append(&mut play.tail_handlers);
        all
    }

    fn is_importing(&self, path: &Path) -> bool {
        let id = identity(path);
        self.importing.borrow().contains(&id)
    }
}

/// `a/b/../c` as `a/c`, so plays imported from `../x.yml` resolve paths as written there.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// A path as compared for import cycles.
fn identity(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The task keywords that inline other tasks, by their short names.
const INCLUDE_KINDS: &[&str] = &[
    "import_tasks",
    "include_tasks",
    "import_role",
    "include_role",
    "include",
];

/// Keywords an import/include takes besides its own key (others are rejected).
const INCLUDE_KEYS: &[&str] = &["name", "when", "vars", "tags", "args", "ignore_errors"];

/// Keys of `include_role` arguments: `import_role`'s, then `apply` (dynamic only).
pub const INCLUDE_ROLE_ARGS: &[&str] = &[
    "name",
    "tasks_from",
    "vars_from",
    "defaults_from",
    "handlers_from",
    "allow_duplicates",
    "public",
    "rolespec_validate",
    "apply",
];

/// Keys of `import_role` arguments.
const ROLE_ARGS: &[&str] = INCLUDE_ROLE_ARGS.split_at(INCLUDE_ROLE_ARGS.len() - 1).0;

/// Keywords on a role entry or an import that change what its tasks do but are not
/// implemented for them yet: refused rather than silently dropped.
const NOT_YET_ON_REUSE: &[&str] = &["delegate_to", "async", "poll", "loop_control"];

/// One use of a role, as written.
struct RoleEntry {
    name: String,
    span: Span,
    vars: serde_json::Map<String, Json>,
    params: serde_json::Map<String, Json>,
    when: Vec<String>,
    /// `tags:` of a `roles:` entry or dependency: every task of the role (and of its
    /// dependencies) takes them on, as in Ansible.
    tags: Vec<String>,
    ignore_errors: Option<bool>,
    check_mode: Option<bool>,
    diff: Option<bool>,
    /// `public:` of include_role: its defaults and vars reach the rest of the play.
    public: bool,
    tasks_from: Option<String>,
    vars_from: Option<String>,
    defaults_from: Option<String>,
    handlers_from: Option<String>,
}

impl RoleEntry {
    fn named(name: String, span: Span) -> RoleEntry {
        RoleEntry {
            name,
            span,
            vars: Default::default(),
            params: Default::default(),
            when: Vec::new(),
            tags: Vec::new(),
            ignore_errors: None,
            check_mode: None,
            diff: None,
            public: false,
            tasks_from: None,
            vars_from: None,
            defaults_from: None,
            handlers_from: None,
        }
    }
}

/// How a role came into the play.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RoleUse {
    /// Runs once per distinct parameters (`roles:` entries and dependencies), unless the
    /// role's meta allows duplicates; `import_role`/`include_role` run every time.
    once: bool,
    /// Its defaults and vars are seen by the whole play (`roles:`, `import_role`).
    public: bool,
    /// Its handlers come before the play's own (`roles:`), else after them.
    handlers_first: bool,
}

impl RoleUse {
    const PLAY: RoleUse = RoleUse {
        once: true,
        public: true,
        handlers_first: true,
    };
    const IMPORT: RoleUse = RoleUse {
        once: false,
        public: true,
        handlers_first: false,
    };
    const INCLUDE: RoleUse = RoleUse {
        once: false,
        public: false,
        handlers_first: false,
    };

    fn dependency(self) -> RoleUse {
        RoleUse { once: true, ..self }
    }
}

impl<'s> Loader<'s> {
    /// The loader of `source`, with `shared`'s state.
    fn of(source: &'s Source, shared: &'s Shared, playbook_dir: PathBuf) -> Loader<'s> {
        Loader {
            source,
            file: Arc::from(source.path.as_path()),
            shared,
            playbook_dir,
        }
    }
}

impl Loader<'_> {
    /// Another file's loader sharing this one's state.
    fn child<'c>(&'c self, source: &'c Source) -> Loader<'c> {
        Loader::of(source, self.shared, self.playbook_dir.clone())
    }

    /// A top-level `- import_playbook: other.yml`: its plays, in order; `None` when the
    /// entry is a play.
    pub(super) fn import_playbook(&self, item: &Node) -> Result<Option<Vec<Playbook>>, LoadError> {
        let Some(entries) = item.as_map() else {
            return Ok(None);
        };
        let is_import = |k: &Node| {
            matches!(
                k.as_str(),
                Some("import_playbook" | "ansible.builtin.import_playbook")
            )
        };
        let Some((_, value)) = entries.iter().find(|(k, _)| is_import(k)) else {
            return Ok(None);
        };
        for (k, _) in entries {
            let key = self.key(k)?;
            match key {
                _ if is_import(k) => {}
                "name" | "tags" => {}
                "when" | "vars" => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' on import_playbook is not supported yet"),
                        Some(format!(
                            "put `{key}:` on the plays of the imported playbook instead"
                        )),
                    ));
                }
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for import_playbook"),
                        Some("an import_playbook entry takes only `name` and `tags`".into()),
                    ));
                }
            }
        }
        let written = self.scalar(value, "import_playbook")?;
        if is_template(&written) {
            return Err(self.err(
                value.span,
                "templated import_playbook paths are not supported yet",
                Some("write the playbook's path literally".into()),
            ));
        }
        let path = normalize(&self.playbook_dir.join(&written));
        if !path.is_file() {
            return Err(self.err(
                value.span,
                format!("could not find the imported playbook '{written}'"),
                Some(format!("looked for {}", path.display())),
            ));
        }
        if self.shared.is_importing(&path) {
            return Err(self.err(
                value.span,
                format!("'{written}' imports itself (an import cycle)"),
                Some("remove the import that leads back to this playbook".into()),
            ));
        }
        let source = Source::read(&path)?;
        self.shared.load_playbook_source(&source).map(Some)
    }

    /// The play's `roles:` list, as tasks.
    pub(super) fn play_roles(&self, node: &Node) -> Result<Vec<Task>, LoadError> {
        let items = match &node.value {
            Value::Null => return Ok(Vec::new()),
            Value::Seq(items) => items,
            _ => {
                return Err(self.err(
                    node.span,
                    format!("roles must be a list of roles, got {}", node.kind_name()),
                    Some("write `roles:` followed by `- role_name` lines".into()),
                ));
            }
        };
        let mut out = Vec::new();
        for item in items {
            let entry = self.role_entry(item)?;
            self.expand_role(&entry, &Inherited::default(), RoleUse::PLAY, None, &mut out)?;
        }
        Ok(out)
    }

    /// A `roles:` or `dependencies:` entry: a name, or a mapping with `role:`/`name:`.
    fn role_entry(&self, node: &Node) -> Result<RoleEntry, LoadError> {
        let help = "write `- role_name` or `- role: role_name` (with its vars beside it)";
        let entries = match &node.value {
            Value::Str(_) => return Ok(RoleEntry::named(self.scalar(node, "role")?, node.span)),
            Value::Map(entries) => entries,
            _ => {
                return Err(self.err(
                    node.span,
                    format!(
                        "a role entry must be a role name or a mapping, got {}",
                        node.kind_name()
                    ),
                    Some(help.into()),
                ));
            }
        };
        let name_node = node
            .get("role")
            .or_else(|| node.get("name"))
            .ok_or_else(|| {
                self.err(
                    node.span,
                    "a role entry needs `role:` (the role's name)",
                    Some(help.into()),
                )
            })?;
        let mut entry = RoleEntry::named(self.scalar(name_node, "role")?, name_node.span);
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "role" | "name" => {}
                "tags" => entry.tags = self.tags(v)?,
                "vars" => entry.vars = self.mapping(v, key)?,
                "when" => entry.when = self.conditions(v, key)?,
                "ignore_errors" => entry.ignore_errors = Some(self.boolean(v, key)?),
                "check_mode" => entry.check_mode = Some(self.boolean(v, key)?),
                "diff" => entry.diff = Some(self.boolean(v, key)?),
                // What tasks accept and ignore, a role entry does too.
                _ if IGNORED_TASK_KEYS.contains(&key) => {}
                _ if NOT_YET_ON_REUSE.contains(&key) => {
                    return Err(self.not_yet_on_reuse(k.span, key, "a role"));
                }
                // Anything else is a role parameter, as Ansible takes it.
                _ => {
                    entry.params.insert(key.to_string(), v.to_json());
                }
            }
        }
        Ok(entry)
    }

    /// A role's directory: `roles/` beside the playbook, then `roles_path`, then (for a
    /// dependency) beside the role that depends on it, then the playbook's directory. A
    /// `namespace.collection.role` name is looked up in that collection first; a short
    /// name used inside a collection's role, in that collection first.
    fn find_role(
        &self,
        entry: &RoleEntry,
        dependent: Option<&Path>,
        enclosing: Option<&Path>,
    ) -> Result<PathBuf, LoadError> {
        let name = Path::new(&entry.name);
        // (directory searched, the role's directory if it is there)
        let mut searched: Vec<(PathBuf, PathBuf)> = Vec::new();
        let fqcn = collections::split_role_fqcn(&entry.name);
        if name.is_absolute() {
            searched.push((name.to_path_buf(), name.to_path_buf()));
        } else {
            if let Some((namespace, collection, role)) = fqcn {
                for dir in collections::collection_roles_dirs(
                    namespace,
                    collection,
                    &self.playbook_dir,
                    &self.shared.collections_path,
                ) {
                    let candidate = dir.join(role);
                    searched.push((dir, candidate));
                }
            } else if let Some(roles) = dependent
                .or(enclosing)
                .and_then(collections::enclosing_collection_roles)
            {
                searched.push((roles.to_path_buf(), roles.join(name)));
            }
            let mut dirs = vec![self.playbook_dir.join("roles")];
            dirs.extend(self.shared.roles_path.iter().cloned());
            if let Some(parent) = dependent.and_then(Path::parent) {
                dirs.push(parent.to_path_buf());
            }
            dirs.push(self.playbook_dir.clone());
            for dir in dirs {
                if !searched.iter().any(|(seen, _)| *seen == dir) {
                    let candidate = dir.join(name);
                    searched.push((dir, candidate));
                }
            }
        }
        if let Some((_, found)) = searched.iter().find(|(_, candidate)| candidate.is_dir()) {
            return Ok(found.clone());
        }
        let places: Vec<String> = searched
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect();
        let help = match fqcn {
            Some((namespace, collection, role)) => format!(
                "install the collection {namespace}.{collection} into a directory of \
                 collections_path in ansible.cfg (or ANSIBLE_COLLECTIONS_PATH), so that \
                 <that directory>/ansible_collections/{namespace}/{collection}/roles/{role} exists"
            ),
            None => format!(
                "create roles/{}/tasks/main.yml beside the playbook, or add the directory \
                 that holds it to roles_path in ansible.cfg (or ANSIBLE_ROLES_PATH)",
                entry.name
            ),
        };
        Err(self.err(
            entry.span,
            format!(
                "the role '{}' was not found in {}",
                entry.name,
                places.join(":")
            ),
            Some(help),
        ))
    }

    /// A role's tasks (after its dependencies'), appended to `out`; its handlers go to the
    /// play.
    fn expand_role(
        &self,
        entry: &RoleEntry,
        inherited: &Inherited,
        used: RoleUse,
        dependent: Option<&Path>,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let enclosing = inherited.role.as_ref().map(|r| r.path.as_path());
        let dir = self.find_role(entry, dependent, enclosing)?;
        if self.shared.is_importing(&dir) {
            return Err(self.err(
                entry.span,
                format!("the role '{}' depends on itself", entry.name),
                Some("remove the dependency that leads back to this role".into()),
            ));
        }
        let meta_source = read_role_file(&dir, "meta", None)?;
        let meta = match &meta_source {
            Some(source) => {
                let root = source.parse()?;
                let loader = self.child(source);
                loader.check_meta_root(&root)?;
                Some((root, loader))
            }
            None => None,
        };
        let allow_duplicates = match &meta {
            Some((root, loader)) => match root.get("allow_duplicates") {
                Some(v) => loader.boolean(v, "allow_duplicates")?,
                None => false,
            },
            None => false,
        };
        // As Ansible tells role uses apart: by parameters, vars, conditions and tags.
        let key = (
            identity(&dir),
            serde_json::json!({
                "params": entry.params,
                "vars": entry.vars,
                "when": entry.when,
                "tags": entry.tags,
            }),
        );
        let mut once_group = None;
        if used.once && !allow_duplicates {
            let mut tags: Vec<String> = inherited.tags.clone();
            tags.extend(entry.tags.iter().cloned());
            tags.sort();
            tags.dedup();
            let mut play = self.shared.play.borrow_mut();
            match play.ran.iter().position(|r| r.key == key) {
                Some(i) if play.ran[i].tag_sets.contains(&tags) => return Ok(()),
                Some(i) => {
                    play.ran[i].tag_sets.push(tags);
                    once_group = Some(i);
                }
                None => {
                    play.ran.push(RanRole {
                        key,
                        tag_sets: vec![tags],
                    });
                    once_group = Some(play.ran.len() - 1);
                }
            }
        }
        self.shared.importing.borrow_mut().push(identity(&dir));
        let expanded = self.expand_role_in(
            entry,
            inherited,
            used,
            (&dir, once_group),
            meta.as_ref(),
            out,
        );
        self.shared.importing.borrow_mut().pop();
        expanded?;
        Ok(())
    }

    fn expand_role_in(
        &self,
        entry: &RoleEntry,
        inherited: &Inherited,
        used: RoleUse,
        (dir, once_group): (&Path, Option<usize>),
        meta: Option<&(Node, Loader)>,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        // A role's conditions and tags hold for its dependencies too.
        let mut outer = inherited.clone();
        outer.role = None;
        outer.when.extend(entry.when.iter().cloned());
        outer.tags.extend(entry.tags.iter().cloned());
        if entry.ignore_errors.is_some() {
            outer.ignore_errors = entry.ignore_errors;
        }
        if entry.check_mode.is_some() {
            outer.check_mode = entry.check_mode;
        }
        if entry.diff.is_some() {
            outer.diff = entry.diff;
        }
        if let Some((root, loader)) = meta
            && let Some(deps) = root.get("dependencies")
        {
            for dep in deps.as_seq().unwrap_or_default() {
                let dep_entry = loader.role_entry(dep)?;
                loader.expand_role(&dep_entry, &outer, used.dependency(), Some(dir), out)?;
            }
        }
        let defaults = self.role_vars_file(dir, "defaults", entry.defaults_from.as_deref())?;
        let vars = self.role_vars_file(dir, "vars", entry.vars_from.as_deref())?;
        let info = Arc::new(RoleInfo {
            // A role given by its path is named by its directory, as in Ansible.
            name: Path::new(&entry.name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| entry.name.clone()),
            path: dir.to_path_buf(),
            defaults,
            vars,
            keyword_vars: entry.vars.clone(),
            params: entry.params.clone(),
            once_group,
        });
        if used.public {
            self.shared.play.borrow_mut().public.push(info.clone());
        }
        let mut inner = outer.clone();
        inner.role = Some(info.clone());
        match read_role_file(dir, "tasks", entry.tasks_from.as_deref())? {
            Some(source) => self.child(&source).tasks_source(&source, &inner, out)?,
            None if entry.tasks_from.is_some() => {
                return Err(self.missing_role_file(entry, dir, "tasks", &entry.tasks_from));
            }
            None => {}
        }
        match read_role_file(dir, "handlers", entry.handlers_from.as_deref())? {
            Some(source) => {
                // An included role's handlers see the include's vars, as its tasks do.
                let as_handlers = Inherited {
                    handler: true,
                    role: Some(info),
                    include_params: inherited.include_params.clone(),
                    ..Inherited::default()
                };
                let mut handlers = Vec::new();
                self.child(&source)
                    .tasks_source(&source, &as_handlers, &mut handlers)?;
                // A role's handlers are in the play once: the last use of the role wins,
                // at its place and with its variables, as ansible-playbook 2.19 runs them.
                let mut play = self.shared.play.borrow_mut();
                let same_role = |h: &Task| h.role.as_ref().is_some_and(|r| r.path == dir);
                play.head_handlers.retain(|h| !same_role(h));
                play.tail_handlers.retain(|h| !same_role(h));
                if used.handlers_first {
                    play.head_handlers.extend(handlers);
                } else {
                    play.tail_handlers.extend(handlers);
                }
            }
            None if entry.handlers_from.is_some() => {
                return Err(self.missing_role_file(entry, dir, "handlers", &entry.handlers_from));
            }
            None => {}
        }
        Ok(())
    }

    fn missing_role_file(
        &self,
        entry: &RoleEntry,
        dir: &Path,
        sub: &str,
        from: &Option<String>,
    ) -> LoadError {
        let name = from.as_deref().unwrap_or("main");
        self.err(
            entry.span,
            format!(
                "the role '{}' has no {sub} file '{name}' in {}",
                entry.name,
                dir.join(sub).display()
            ),
            Some(format!("create {}/{name}.yml", dir.join(sub).display())),
        )
    }

    /// `meta/main.yml` must be a mapping whose `dependencies` is a list.
    fn check_meta_root(&self, root: &Node) -> Result<(), LoadError> {
        match &root.value {
            Value::Null => Ok(()),
            Value::Map(_) => match root.get("dependencies") {
                Some(deps) if !deps.is_null() && deps.as_seq().is_none() => Err(self.err(
                    deps.span,
                    format!(
                        "dependencies must be a list of roles, got {}",
                        deps.kind_name()
                    ),
                    Some("write `dependencies:` followed by `- role: name` lines".into()),
                )),
                _ => Ok(()),
            },
            _ => Err(self.err(
                root.span,
                format!(
                    "a role's meta/main.yml must be a mapping, got {}",
                    root.kind_name()
                ),
                Some("write `dependencies: []` (and `galaxy_info:`) at the top level".into()),
            )),
        }
    }

    /// `defaults/` or `vars/` of a role: a mapping (an absent file is empty).
    fn role_vars_file(
        &self,
        dir: &Path,
        sub: &str,
        from: Option<&str>,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let Some(source) = read_role_file(dir, sub, from)? else {
            // `defaults/main/` (or `vars/<from>/`) as a directory: every file in it, in
            // sorted order, later ones winning, as Ansible reads it.
            let mut merged = serde_json::Map::new();
            for file in role_vars_dir_files(&dir.join(sub).join(from.unwrap_or("main"))) {
                let source = Source::read(&file)?;
                merged.extend(self.role_vars_source(&source, sub)?);
            }
            return Ok(merged);
        };
        self.role_vars_source(&source, sub)
    }

    fn role_vars_source(
        &self,
        source: &Source,
        sub: &str,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let root = source.parse()?;
        match &root.value {
            Value::Map(_) | Value::Null => self.child(source).mapping(&root, sub),
            _ => Err(self.child(source).err(
                root.span,
                format!(
                    "a role's {sub} file must be a mapping of variables, got {}",
                    root.kind_name()
                ),
                Some("write one `name: value` line per variable".into()),
            )),
        }
    }

    /// The tasks of a tasks file (a list, or nothing), appended to `out`.
    fn tasks_source(
        &self,
        source: &Source,
        inherited: &Inherited,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let root = source.parse()?;
        self.shared
            .importing
            .borrow_mut()
            .push(identity(&source.path));
        let loaded = self.tasks(&root, "a tasks file", inherited);
        self.shared.importing.borrow_mut().pop();
        out.extend(loaded?);
        Ok(())
    }

    /// `import_tasks`, `include_tasks`, `import_role`, `include_role` (and the old
    /// `include`): inlines what they name into `out`. False when `item` is none of these.
    pub(super) fn include(
        &self,
        item: &Node,
        inherited: &Inherited,
        out: &mut Vec<Task>,
    ) -> Result<bool, LoadError> {
        let Some(entries) = item.as_map() else {
            return Ok(false);
        };
        let short = |k: &Node| {
            let key = k.as_str()?;
            let name = key
                .strip_prefix("ansible.builtin.")
                .or_else(|| key.strip_prefix("ansible.legacy."))
                .unwrap_or(key);
            INCLUDE_KINDS.iter().copied().find(|kind| *kind == name)
        };
        let Some((kind, kind_key, value)) = entries
            .iter()
            .find_map(|(k, v)| short(k).map(|kind| (kind, k, v)))
        else {
            return Ok(false);
        };
        if matches!(kind, "include_tasks" | "include_role") {
            out.push(self.dynamic_include(item, kind, value, inherited)?);
            return Ok(true);
        }
        let mut inner = inherited.clone();
        let mut extra_args: Option<&Node> = None;
        for (k, v) in entries {
            let key = self.key(k)?;
            if std::ptr::eq(k, kind_key) {
                continue;
            }
            match key {
                "name" => {}
                "when" => inner.when.extend(self.conditions(v, key)?),
                // A dynamic include's vars are Ansible's include params (above set
                // facts); an import's are task vars.
                "vars" if kind.starts_with("include") => {
                    inner.include_params.extend(self.mapping(v, key)?)
                }
                "vars" => inner.vars.extend(self.mapping(v, key)?),
                "args" => extra_args = Some(v),
                "ignore_errors" => inner.ignore_errors = Some(self.boolean(v, key)?),
                "tags" => inner.tags.extend(self.tags(v)?),
                "check_mode" => inner.check_mode = Some(self.boolean(v, key)?),
                "diff" => inner.diff = Some(self.boolean(v, key)?),
                "loop" | "loop_control" => return Err(self.loop_error(k.span, kind)),
                _ if IGNORED_TASK_KEYS.contains(&key) => {}
                _ if NOT_YET_ON_REUSE.contains(&key) => {
                    return Err(self.not_yet_on_reuse(k.span, key, kind));
                }
                _ if key.starts_with("with_") => return Err(self.loop_error(k.span, kind)),
                _ if short(k).is_some() => {
                    return Err(self.err(
                        k.span,
                        format!("conflicting action statements: {kind}, {key}"),
                        Some("split them into two tasks".into()),
                    ));
                }
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not supported on {kind} (it is resolved when the playbook loads)"),
                        Some(format!("{kind} takes {}", INCLUDE_KEYS.join(", "))),
                    ));
                }
            }
        }
        match kind {
            "import_role" | "include_role" => {
                let entry = self.role_args(kind, value, extra_args)?;
                // include_role is loaded statically for now, but keeps its privacy.
                let used = match kind {
                    "import_role" => RoleUse::IMPORT,
                    _ => RoleUse {
                        public: entry.public,
                        ..RoleUse::INCLUDE
                    },
                };
                self.expand_role(&entry, &inner, used, None, out)?;
            }
            _ => {
                let (written, span) = self.tasks_file_arg(kind, value, extra_args)?;
                let path = self.find_tasks_file(&written, span, inherited)?;
                if self.shared.is_importing(&path) {
                    return Err(self.err(
                        span,
                        format!("'{written}' includes itself (an include cycle)"),
                        Some("remove the include that leads back to this file".into()),
                    ));
                }
                let source = Source::read(&path)?;
                self.child(&source).tasks_source(&source, &inner, out)?;
            }
        }
        Ok(true)
    }

    fn not_yet_on_reuse(&self, span: Span, key: &str, on: &str) -> LoadError {
        self.err(
            span,
            format!("'{key}' on {on} is not supported yet"),
            Some(format!("put `{key}:` on the tasks themselves")),
        )
    }

    fn loop_error(&self, span: Span, kind: &str) -> LoadError {
        self.err(
            span,
            format!("a loop on {kind} is not supported yet"),
            Some("put the loop on the tasks of the included file instead".into()),
        )
    }

    /// The file an `import_tasks`/`include_tasks` names: `import_tasks: x.yml`, or
    /// `include_tasks: {file: x.yml}`.
    fn tasks_file_arg(
        &self,
        kind: &str,
        value: &Node,
        extra_args: Option<&Node>,
    ) -> Result<(String, Span), LoadError> {
        let mut file: Option<&Node> = None;
        for node in [Some(value), extra_args].into_iter().flatten() {
            match &node.value {
                Value::Map(pairs) => {
                    for (k, v) in pairs {
                        match self.key(k)? {
                            "file" | "_raw_params" => file = Some(v),
                            other => {
                                return Err(self.err(
                                    k.span,
                                    format!("'{other}' is not supported on {kind}"),
                                    Some(format!("write `{kind}: path/to/tasks.yml`")),
                                ));
                            }
                        }
                    }
                }
                Value::Null => {}
                _ => file = Some(node),
            }
        }
        let node = file.ok_or_else(|| {
            self.err(
                value.span,
                format!("{kind} needs the tasks file to load"),
                Some(format!("write `{kind}: path/to/tasks.yml`")),
            )
        })?;
        let written = self.scalar(node, kind)?;
        if is_template(&written) {
            return Err(self.err(
                node.span,
                format!("templated {kind} paths are not supported yet"),
                Some("write the file's path literally".into()),
            ));
        }
        Ok((written, node.span))
    }

    /// A tasks file as Ansible finds it: inside a role its `tasks/` first, then beside the
    /// including file, then beside the playbook.
    fn find_tasks_file(
        &self,
        written: &str,
        span: Span,
        inherited: &Inherited,
    ) -> Result<PathBuf, LoadError> {
        let path = Path::new(written);
        let mut candidates: Vec<PathBuf> = Vec::new();
        if path.is_absolute() {
            candidates.push(path.to_path_buf());
        } else {
            if let Some(role) = &inherited.role {
                candidates.push(role.path.join("tasks").join(path));
            }
            candidates.push(dir_of(&self.source.path).join(path));
            candidates.push(self.playbook_dir.join(path));
            candidates.dedup();
        }
        if let Some(found) = candidates.iter().find(|c| c.is_file()) {
            return Ok(found.clone());
        }
        let looked: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        Err(self.err(
            span,
            format!("could not find or access '{written}'"),
            Some(format!("looked for {}", looked.join(", "))),
        ))
    }

    /// `import_role`/`include_role` arguments.
    fn role_args(
        &self,
        kind: &str,
        value: &Node,
        extra_args: Option<&Node>,
    ) -> Result<RoleEntry, LoadError> {
        let mut name: Option<&Node> = None;
        let mut from: [Option<String>; 4] = Default::default();
        let mut public = false;
        let mut kv_forms = Vec::new();
        for node in [Some(value), extra_args].into_iter().flatten() {
            // `import_role: name=web tasks_from=x`, Ansible's k=v form of the mapping.
            if let Value::Str(text) = &node.value {
                let parsed = super::parse_kv(text, None);
                if !parsed.raw.trim().is_empty() {
                    return Err(self.err(
                        node.span,
                        format!(
                            "{kind} takes name=... arguments, got '{}'",
                            parsed.raw.trim()
                        ),
                        Some(format!(
                            "write `{kind}: name=role_name` or `name: role_name` under it"
                        )),
                    ));
                }
                let at = |text: String| Node {
                    value: Value::Str(text),
                    span: node.span,
                };
                kv_forms.push(Node {
                    value: Value::Map(
                        parsed
                            .pairs
                            .into_iter()
                            .map(|(k, v)| (at(k), at(v)))
                            .collect(),
                    ),
                    span: node.span,
                });
            }
        }
        let given = [Some(value), extra_args].into_iter().flatten();
        for node in given.filter(|n| n.as_str().is_none()).chain(&kv_forms) {
            let Some(pairs) = node.as_map() else {
                return Err(self.err(
                    node.span,
                    format!("{kind} takes a mapping, got {}", node.kind_name()),
                    Some(format!("write `{kind}:` with `name: role_name` under it")),
                ));
            };
            for (k, v) in pairs {
                let key = self.key(k)?;
                match key {
                    "name" => name = Some(v),
                    "public" => public = self.boolean(v, key)?,
                    "tasks_from" => from[0] = Some(self.scalar(v, key)?),
                    "vars_from" => from[1] = Some(self.scalar(v, key)?),
                    "defaults_from" => from[2] = Some(self.scalar(v, key)?),
                    "handlers_from" => from[3] = Some(self.scalar(v, key)?),
                    _ if ROLE_ARGS.contains(&key) => {}
                    "apply" if kind == "include_role" => {}
                    _ => {
                        return Err(self.err(
                            k.span,
                            format!("'{key}' is not a valid argument of {kind}"),
                            crate::modules::closest(key, ROLE_ARGS.iter().copied())
                                .map(|s| format!("did you mean '{s}'?")),
                        ));
                    }
                }
            }
        }
        let name = name.ok_or_else(|| {
            self.err(
                value.span,
                format!("{kind} needs `name:` (the role to run)"),
                Some(format!("write `{kind}:` with `name: role_name` under it")),
            )
        })?;
        let mut entry = RoleEntry::named(self.scalar(name, "name")?, name.span);
        let [tasks, vars, defaults, handlers] = from;
        entry.tasks_from = tasks;
        entry.vars_from = vars;
        entry.defaults_from = defaults;
        entry.handlers_from = handlers;
        entry.public = public;
        Ok(entry)
    }
}

/// Keywords that make no sense on a dynamic include (it is not a module run).
const NOT_ON_INCLUDE: &[&str] = &[
    "register",
    "notify",
    "changed_when",
    "failed_when",
    "until",
    "retries",
    "delay",
    "delegate_to",
    "delegate_facts",
    "local_action",
    "run_once",
    "async",
    "poll",
];

/// Keys of `apply:` besides the ignored task keywords.
const APPLY_KEYS: &[&str] = &[
    "tags",
    "when",
    "vars",
    "ignore_errors",
    "check_mode",
    "diff",
    "any_errors_fatal",
    "ignore_unreachable",
    "environment",
    "no_log",
    "throttle",
];

/// Nesting depth at which a dynamic include is refused: an include that keeps including
/// itself would otherwise run until memory runs out.
pub const MAX_INCLUDE_DEPTH: usize = 64;

/// Block ids of tasks loaded at run time start here, far above what the playbook's own
/// loading uses; every load takes a fresh range, so a file included twice (or once per
/// loop item) never shares a block id with another copy of itself.
const RUNTIME_BLOCK_BASE: usize = 1 << 40;
const RUNTIME_BLOCK_RANGE: usize = 1 << 20;
static NEXT_RUNTIME_BLOCK: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(RUNTIME_BLOCK_BASE);

/// What an `include_tasks`/`include_role` task needs to load its tasks when the executor
/// reaches it. The task itself carries the loop, `when`, `vars` (as include params) and
/// the raw file or role arguments, which the executor templates per host.
#[derive(Debug)]
pub struct DynamicInclude {
    /// What the included tasks inherit: the blocks, conditions, tags, vars and role
    /// around the include (not the include's own keywords, as in Ansible), plus `apply:`.
    children: Inherited,
    playbook_dir: PathBuf,
    roles_path: Vec<PathBuf>,
    collections_path: Vec<PathBuf>,
}

/// Included files parsed during a run, by path: each is read and parsed once.
#[derive(Default)]
pub struct IncludeCache {
    files: std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<(Source, Node)>>>,
}

impl IncludeCache {
    fn get(&self, path: &Path) -> Result<Arc<(Source, Node)>, String> {
        if let Some(parsed) = self.files.lock().expect("include cache lock").get(path) {
            return Ok(parsed.clone());
        }
        let source = Source::read(path).map_err(|e| e.to_string())?;
        let root = source.parse().map_err(|e| e.to_string())?;
        let parsed = Arc::new((source, root));
        self.files
            .lock()
            .expect("include cache lock")
            .insert(path.to_path_buf(), parsed.clone());
        Ok(parsed)
    }
}

/// An included role, loaded: its tasks, and the role itself when `public: yes` makes its
/// defaults and vars visible to the rest of the play.
pub struct IncludedRole {
    pub tasks: Vec<Task>,
    pub public: Vec<Arc<RoleInfo>>,
    /// The role's handlers (and its dependencies'), for a play that does not list them
    /// yet (a role whose name is a template is only known now).
    pub handlers: Vec<Task>,
}

/// Where a tasks file named `written` may be, in Ansible's order: inside a role its
/// `tasks/` first, then beside the including file, then beside the playbook.
fn tasks_file_candidates(
    written: &str,
    role: Option<&RoleInfo>,
    including: &Path,
    playbook_dir: &Path,
) -> Vec<PathBuf> {
    let path = Path::new(written);
    if path.is_absolute() {
        return vec![path.to_path_buf()];
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(role) = role {
        candidates.push(role.path.join("tasks").join(path));
    }
    candidates.push(dir_of(including).join(path));
    candidates.push(playbook_dir.join(path));
    candidates.dedup();
    candidates
}

impl DynamicInclude {
    /// The file an `include_tasks` names (already templated), as found from the file
    /// that includes it; the error names every place it looked.
    pub fn find_tasks_file(&self, written: &str, including: &Path) -> Result<PathBuf, String> {
        let candidates = tasks_file_candidates(
            written,
            self.children.role.as_deref(),
            including,
            &self.playbook_dir,
        );
        if let Some(found) = candidates.iter().find(|c| c.is_file()) {
            // Absolute, as Ansible prints it in `included:` lines.
            let absolute = std::path::absolute(found).unwrap_or_else(|_| found.clone());
            return Ok(normalize(&absolute));
        }
        let looked: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        Err(format!(
            "Could not find or access '{written}' on the controller (looked for {})",
            looked.join(", ")
        ))
    }

    fn shared(&self) -> Shared {
        let shared = Shared::new(&LoadOptions {
            roles_path: self.roles_path.clone(),
            collections_path: self.collections_path.clone(),
        });
        let base =
            NEXT_RUNTIME_BLOCK.fetch_add(RUNTIME_BLOCK_RANGE, std::sync::atomic::Ordering::Relaxed);
        shared.next_block.set(base);
        Shared {
            check_includes: false,
            ..shared
        }
    }

    fn children_with(&self, params: serde_json::Map<String, Json>) -> Inherited {
        let mut children = self.children.clone();
        children.include_params = params;
        children
    }

    /// The tasks of an included tasks file, with `params` (the include's vars and loop
    /// variables) as their include params.
    pub fn load_tasks(
        &self,
        path: &Path,
        params: serde_json::Map<String, Json>,
        cache: &IncludeCache,
    ) -> Result<Vec<Task>, String> {
        let parsed = cache.get(path)?;
        let (source, root) = &*parsed;
        let shared = self.shared();
        let loader = Loader::of(source, &shared, self.playbook_dir.clone());
        loader
            .tasks(root, "a tasks file", &self.children_with(params))
            .map_err(|e| e.to_string())
    }

    /// The tasks of an included role. `args` are the include_role arguments, templated;
    /// `including` is the file the include is written in (where a missing role's error
    /// points).
    pub fn load_role(
        &self,
        args: &serde_json::Map<String, Json>,
        params: serde_json::Map<String, Json>,
        including: &Path,
        line: usize,
        cache: &IncludeCache,
        ran: &std::sync::Mutex<Vec<RanRole>>,
    ) -> Result<IncludedRole, String> {
        let text = |key: &str| -> Option<String> {
            args.get(key).map(|v| match v {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let Some(name) = text("name") else {
            return Err("include_role needs `name:` (the role to run)".into());
        };
        let public = match args.get("public") {
            None | Some(Json::Null) => false,
            Some(v) => crate::modules::spec::parse_bool(v)
                .map_err(|e| format!("argument 'public' of include_role: {e}"))?,
        };
        let parsed = cache.get(including)?;
        let (source, _) = &*parsed;
        let shared = self.shared();
        shared.play.borrow_mut().ran = ran.lock().expect("ran roles lock").clone();
        let loader = Loader::of(source, &shared, self.playbook_dir.clone());
        let mut entry = RoleEntry::named(name, Span { line, column: 1 });
        entry.tasks_from = text("tasks_from");
        entry.vars_from = text("vars_from");
        entry.defaults_from = text("defaults_from");
        entry.handlers_from = text("handlers_from");
        entry.public = public;
        let used = RoleUse {
            public,
            ..RoleUse::INCLUDE
        };
        let mut tasks = Vec::new();
        loader
            .expand_role(&entry, &self.children_with(params), used, None, &mut tasks)
            .map_err(|e| match e.span {
                // Errors about the role (not found, no such tasks_from) are about the
                // include; errors inside the role's files keep their file:line:col.
                Some(_) if e.file == including => match &e.help {
                    Some(help) => format!("{} ({help})", e.message),
                    None => e.message.clone(),
                },
                _ => e.to_string(),
            })?;
        *ran.lock().expect("ran roles lock") = shared.ran_roles();
        let public = shared.public_roles();
        let handlers = shared.play_handlers(Vec::new());
        Ok(IncludedRole {
            tasks,
            public,
            handlers,
        })
    }
}

impl Loader<'_> {
    /// An `include_tasks`/`include_role` task: the include itself, run when execution
    /// reaches it. Its `when`, `tags` and loop are its own; its `vars` become include
    /// params; the included tasks get what surrounds the include plus `apply:`. A literal
    /// file or role is loaded here once too, so its mistakes are reported before any
    /// host is contacted.
    fn dynamic_include(
        &self,
        item: &Node,
        kind: &str,
        value: &Node,
        inherited: &Inherited,
    ) -> Result<Task, LoadError> {
        if inherited.handler {
            return Err(self.err(
                item.span,
                format!("{kind} in handlers is not supported yet"),
                Some("use import_tasks/import_role in handlers, or notify the included tasks' own handlers".into()),
            ));
        }
        let entries = item.as_map().unwrap_or_default();
        let mut own_vars = serde_json::Map::new();
        let mut extra_args: Option<&Node> = None;
        for (k, v) in entries {
            let key = self.key(k)?;
            if NOT_ON_INCLUDE.contains(&key) {
                return Err(self.err(
                    k.span,
                    format!("'{key}' is not supported on {kind}"),
                    Some("put it on the included tasks instead".into()),
                ));
            }
            match key {
                "vars" => own_vars = self.mapping(v, key)?,
                "args" => extra_args = Some(v),
                _ => {}
            }
        }
        let mut task = self.task(item, inherited)?;
        // The include's vars are include params: above set facts, and seen by the
        // included tasks too.
        task.vars = inherited.vars.clone();
        task.include_params.extend(own_vars);
        let apply = [Some(value), extra_args]
            .into_iter()
            .flatten()
            .find_map(|n| n.get("apply"));
        task.args.remove("apply");
        let mut children = inherited.clone();
        if let Some(apply) = apply {
            self.apply(apply, kind, &mut children)?;
        }
        if kind == "include_role" {
            let entry = self.role_args(kind, value, extra_args)?;
            self.check_included_role(&entry, &children)?;
        } else {
            let file = task
                .args
                .get("file")
                .or_else(|| task.args.get("_raw_params"))
                .and_then(Json::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    self.err(
                        value.span,
                        format!("{kind} needs the tasks file to load"),
                        Some(format!("write `{kind}: path/to/tasks.yml`")),
                    )
                })?;
            task.args = [("file".to_string(), Json::String(file.clone()))]
                .into_iter()
                .collect();
            self.check_included_file(&file, &children)?;
        }
        task.include = Some(Arc::new(DynamicInclude {
            children,
            playbook_dir: self.playbook_dir.clone(),
            roles_path: self.shared.roles_path.clone(),
            collections_path: self.shared.collections_path.clone(),
        }));
        Ok(task)
    }

    /// `apply:` keywords, handed to the included tasks.
    fn apply(&self, node: &Node, kind: &str, into: &mut Inherited) -> Result<(), LoadError> {
        let Some(entries) = node.as_map() else {
            return Err(self.err(
                node.span,
                format!(
                    "apply must be a mapping of keywords, got {}",
                    node.kind_name()
                ),
                Some("write `apply:` with e.g. `tags: [x]` under it".into()),
            ));
        };
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "tags" => into.tags.extend(self.tags(v)?),
                "when" => into.when.extend(self.conditions(v, key)?),
                "vars" => into.vars.extend(self.mapping(v, key)?),
                "ignore_errors" => into.ignore_errors = Some(self.boolean(v, key)?),
                "check_mode" => into.check_mode = Some(self.boolean(v, key)?),
                "diff" => into.diff = Some(self.boolean(v, key)?),
                _ if APPLY_KEYS.contains(&key) => self.run_keyword(key, v, &mut into.keywords)?,
                _ if IGNORED_TASK_KEYS.contains(&key) => {}
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not supported in apply on {kind}"),
                        Some(format!("apply takes {}", APPLY_KEYS.join(", "))),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Loads a literal included file once, for its errors; what comes out is thrown
    /// away (the executor loads it again, with the variables of the moment). A file that
    /// is missing now, or being loaded already (a recursive include), is left to run time.
    fn check_included_file(&self, written: &str, children: &Inherited) -> Result<(), LoadError> {
        if !self.shared.check_includes || is_template(written) {
            return Ok(());
        }
        let candidates = tasks_file_candidates(
            written,
            children.role.as_deref(),
            &self.source.path,
            &self.playbook_dir,
        );
        let Some(path) = candidates.into_iter().find(|c| c.is_file()) else {
            return Ok(());
        };
        if self.shared.is_importing(&path) {
            return Ok(());
        }
        let source = Source::read(&path)?;
        let mut ignored = Vec::new();
        self.child(&source)
            .tasks_source(&source, children, &mut ignored)
    }

    /// For a literal include_role: load the role once so its handlers join the play's
    /// (notified handlers need them) and its files are checked. A role missing now is
    /// left to run time, where Ansible reports it.
    fn check_included_role(
        &self,
        entry: &RoleEntry,
        children: &Inherited,
    ) -> Result<(), LoadError> {
        let literal = [
            Some(&entry.name),
            entry.tasks_from.as_ref(),
            entry.vars_from.as_ref(),
            entry.defaults_from.as_ref(),
            entry.handlers_from.as_ref(),
        ]
        .into_iter()
        .flatten()
        .all(|s| !is_template(s));
        if !self.shared.check_includes || !literal {
            return Ok(());
        }
        let enclosing = children.role.as_ref().map(|r| r.path.as_path());
        let Ok(dir) = self.find_role(entry, None, enclosing) else {
            return Ok(());
        };
        if self.shared.is_importing(&dir) {
            return Ok(());
        }
        let mut ignored = Vec::new();
        let used = RoleUse {
            public: false,
            ..RoleUse::INCLUDE
        };
        self.expand_role(entry, children, used, None, &mut ignored)
    }
}

/// `<role>/<sub>/<name>` with Ansible's extensions (`.yml`, `.yaml`, `.json`, none);
/// `name` defaults to `main`.
fn read_role_file(dir: &Path, sub: &str, name: Option<&str>) -> Result<Option<Source>, LoadError> {
    let name = name.unwrap_or("main");
    let base = dir.join(sub);
    for ext in ["", ".yml", ".yaml", ".json"] {
        let candidate = base.join(format!("{name}{ext}"));
        if candidate.is_file() {
            return Source::read(&candidate).map(Some);
        }
    }
    Ok(None)
}

/// The variables files in a role's `defaults/main/`-style directory, as Ansible lists
/// them: sorted by name, subdirectories (without an extension) searched in place, hidden
/// files and `~` backups skipped, only `.yml`, `.yaml`, `.json` or no extension.
fn role_vars_dir_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    let mut files = Vec::new();
    for name in names {
        let text = name.to_string_lossy();
        if text.starts_with('.') || text.ends_with('~') {
            continue;
        }
        let path = dir.join(&name);
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        if path.is_dir() && ext.is_none() {
            files.extend(role_vars_dir_files(&path));
        } else if path.is_file()
            && ext
                .as_deref()
                .is_none_or(|e| matches!(e, "yml" | "yaml" | "json"))
        {
            files.push(path);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::super::load::{load_playbook, load_playbooks};
    use super::*;
    use serde_json::json;

    /// A directory of files, `(relative path, text)`.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn load(dir: &tempfile::TempDir) -> Result<Playbook, LoadError> {
        load_playbook(&dir.path().join("site.yml"))
    }

    /// The tasks' own names (without the `role : ` of the banner).
    fn names(tasks: &[Task]) -> Vec<String> {
        tasks
            .iter()
            .map(|t| t.name.clone().unwrap_or_else(|| t.action.clone()))
            .collect()
    }

    fn tail(err: &LoadError, dir: &tempfile::TempDir) -> String {
        err.to_string()
            .replace(&dir.path().display().to_string(), "DIR")
    }

    const ROLE_FILES: &[(&str, &str)] = &[
        (
            "roles/web/tasks/main.yml",
            "- name: web task\n  debug: msg={{ port }}\n  notify: restart web\n- import_tasks: extra.yml\n",
        ),
        ("roles/web/tasks/extra.yml", "- name: web extra\n  ping:\n"),
        ("roles/web/tasks/other.yml", "- name: web other\n  ping:\n"),
        (
            "roles/web/handlers/main.yml",
            "- name: restart web\n  ping:\n",
        ),
        ("roles/web/defaults/main.yml", "port: 80\nlevel: default\n"),
        ("roles/web/vars/main.yml", "level: role\n"),
        (
            "roles/web/meta/main.yml",
            "dependencies:\n  - role: common\n    greeting: hi\n",
        ),
        (
            "roles/common/tasks/main.yml",
            "- name: common task\n  ping:\n",
        ),
    ];

    #[test]
    fn roles_run_after_pre_tasks_with_dependencies_first_and_once() {
        let dir = tree(ROLE_FILES);
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all
  tasks:
    - name: own task
      ping:
  roles:
    - web
    - role: web
      vars: {port: 8080}
      extra: 1
    - web
  pre_tasks:
    - name: pre
      ping:
  handlers:
    - name: play handler
      ping:
",
        )
        .unwrap();
        let pb = load(&dir).unwrap_or_else(|e| panic!("{e}"));
        let play = &pb.plays[0];
        assert_eq!(
            names(&play.tasks),
            [
                "pre",
                "common task",
                "web task",
                "web extra",
                // different parameters: the role runs again, its dependency does not
                "web task",
                "web extra",
                "own task",
            ]
        );
        let web = play.tasks[2].role.as_ref().unwrap();
        assert_eq!(web.name, "web");
        assert_eq!(web.path, dir.path().join("roles/web"));
        assert_eq!(
            Json::Object(web.defaults.clone()),
            json!({"port": 80, "level": "default"})
        );
        assert_eq!(Json::Object(web.vars.clone()), json!({"level": "role"}));
        let again = play.tasks[4].role.as_ref().unwrap();
        assert_eq!(Json::Object(again.vars.clone()), json!({"level": "role"}));
        assert_eq!(
            Json::Object(again.keyword_vars.clone()),
            json!({"port": 8080})
        );
        let public: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(public, ["common", "web", "web"]);
        assert_eq!(Json::Object(again.params.clone()), json!({"extra": 1}));
        let common = play.tasks[1].role.as_ref().unwrap();
        assert_eq!(
            Json::Object(common.params.clone()),
            json!({"greeting": "hi"})
        );
        assert!(play.tasks[0].role.is_none() && play.tasks[6].role.is_none());
        // The imported file inside the role: its own location, the role's identity.
        assert!(
            play.tasks[3]
                .location
                .to_string()
                .ends_with("roles/web/tasks/extra.yml:1:3")
        );
        assert_eq!(play.tasks[3].role.as_ref().unwrap().name, "web");
        // `roles:` handlers (once per role) come before the play's own.
        assert_eq!(names(&play.handlers), ["restart web", "play handler"]);
        assert_eq!(play.handlers[0].display_name(), "web : restart web");
        // A role's handler answers to its name and to `role : name`.
        let handler = &play.handlers[0];
        assert!(handler.answers_to("restart web") && handler.answers_to("web : restart web"));
        assert!(
            handler.answers_to("web:restart web") && !handler.answers_to("common : restart web")
        );
        assert!(!play.handlers[1].answers_to("web : play handler"));
        // The last use of the role brings its handlers, with its variables.
        let handler_role = play.handlers[0].role.as_ref().unwrap();
        assert_eq!(
            Json::Object(handler_role.params.clone()),
            json!({"extra": 1})
        );
        assert!(play.handlers[0].role.is_some() && play.handlers[1].role.is_none());
    }

    #[test]
    fn import_role_and_include_role_inline_with_tasks_from() {
        let dir = tree(ROLE_FILES);
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all
  tasks:
    - import_role:
        name: web
        tasks_from: other
      when: x == 1
      vars: {port: 1}
    - include_role:
        name: common
      vars: {iv: 1}
    - include_role: {name: common, public: yes}
    - ansible.builtin.import_role: {name: common}
  handlers:
    - name: play handler
      ping:
",
        )
        .unwrap();
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        // include_role stays a task of its own, its banner as Ansible's.
        assert_eq!(
            names(&play.tasks),
            [
                "common task",
                "web other",
                "include_role",
                "include_role",
                "common task"
            ]
        );
        assert_eq!(play.tasks[2].banner_name(), "include_role : common");
        assert!(play.tasks[2].include.is_some() && play.tasks[0].include.is_none());
        assert_eq!(play.tasks[2].module.name(), "include_role");
        assert_eq!(play.tasks[3].args["public"], json!(true));
        // The import's `when` and `vars` hold for the role's dependency and tasks.
        for task in &play.tasks[..2] {
            assert_eq!(task.when, ["x == 1"]);
            assert_eq!(Json::Object(task.vars.clone()), json!({"port": 1}));
        }
        assert!(play.tasks[2].when.is_empty());
        // A dynamic include's vars are include params, above set facts.
        assert_eq!(
            Json::Object(play.tasks[2].include_params.clone()),
            json!({"iv": 1})
        );
        assert!(play.tasks[2].vars.is_empty() && play.tasks[0].include_params.is_empty());
        // import_role's roles are public; include_role's become so only when it runs.
        let public: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(public, ["common", "web", "common"]);
        // Handlers of imported roles come after the play's own.
        assert_eq!(names(&play.handlers), ["play handler", "restart web"]);
    }

    #[test]
    fn import_tasks_inline_relative_to_the_including_file() {
        let dir = tree(&[
            (
                "tasks/a.yml",
                "- name: a1\n  ping:\n- import_tasks: b.yml\n  vars: {v: 2}\n",
            ),
            ("tasks/b.yml", "- name: b1\n  debug: msg={{ v }}\n"),
            (
                "site.yml",
                "- hosts: all
  tasks:
    - import_tasks: tasks/a.yml
      when: go
      vars: {v: 1, w: 1}
    - include_tasks:
        file: tasks/b.yml
    - block:
        - ansible.builtin.import_tasks: tasks/b.yml
      rescue:
        - name: r
          ping:
",
            ),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        assert_eq!(names(&play.tasks), ["a1", "b1", "include_tasks", "b1", "r"]);
        assert_eq!(play.tasks[2].args["file"], json!("tasks/b.yml"));
        assert_eq!(play.tasks[0].when, ["go"]);
        assert_eq!(
            Json::Object(play.tasks[1].vars.clone()),
            json!({"v": 2, "w": 1})
        );
        assert!(play.tasks[2].when.is_empty());
        assert_eq!(play.tasks[3].frames.len(), 1);
        assert!(
            play.tasks[1]
                .location
                .to_string()
                .ends_with("tasks/b.yml:1:3")
        );
    }

    #[test]
    fn import_playbook_runs_the_imported_plays_in_place() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: a\n- import_playbook: sub/other.yml\n- hosts: c\n",
            ),
            (
                "sub/other.yml",
                "- hosts: b\n- import_playbook: ../same.yml\n",
            ),
            ("same.yml", "- hosts: d\n"),
        ]);
        let parts = load_playbooks(&dir.path().join("site.yml"), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let shape: Vec<(PathBuf, Vec<String>)> = parts
            .iter()
            .map(|p| {
                let dir = p.dir.strip_prefix(dir.path()).unwrap().to_path_buf();
                (dir, p.plays.iter().map(|p| p.hosts.clone()).collect())
            })
            .collect();
        assert_eq!(
            shape,
            [
                (PathBuf::from(""), vec!["a".to_string()]),
                (PathBuf::from("sub"), vec!["b".to_string()]),
                (PathBuf::from(""), vec!["d".to_string(), "c".to_string()]),
            ]
        );
        let merged = load(&dir).unwrap();
        let hosts: Vec<&str> = merged.plays.iter().map(|p| p.hosts.as_str()).collect();
        assert_eq!(hosts, ["a", "b", "d", "c"]);
    }

    #[test]
    fn import_errors_point_at_file_line_col() {
        let dir = tree(&[
            ("site.yml", "- import_playbook: loop.yml\n"),
            ("loop.yml", "- hosts: all\n- import_playbook: site.yml\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir).starts_with("DIR/loop.yml:2:20: 'site.yml' imports itself"),
            "{e}"
        );
        let dir = tree(&[("site.yml", "- import_playbook: x.yml\n  when: yes\n")]);
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "'when' on import_playbook is not supported yet");
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all\n  tasks:\n    - import_tasks: t.yml\n",
            ),
            ("t.yml", "- name: ok\n  ping:\n- name: bad\n  cpy: {}\n"),
        ]);
        let e = load(&dir).unwrap_err();
        let text = tail(&e, &dir);
        assert!(
            text.starts_with("DIR/t.yml:4:3: couldn't resolve module/action 'cpy'"),
            "{text}"
        );
        assert!(text.contains("4 |   cpy: {}"), "{text}");
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all\n  tasks:\n    - import_tasks: t.yml\n",
            ),
            ("t.yml", "- import_tasks: t.yml\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir).starts_with("DIR/t.yml:1:17: 't.yml' includes itself"),
            "{e}"
        );
    }

    #[test]
    fn include_tasks_are_tasks_of_their_own() {
        let dir = tree(&[
            ("t.yml", "- ping:\n"),
            ("self.yml", "- include_tasks: self.yml\n  when: n < 3\n"),
        ]);
        let at = |play: &str| {
            std::fs::write(dir.path().join("site.yml"), play).unwrap();
            let e = load(&dir).unwrap_err();
            let s = e.span.unwrap();
            (tail(&e, &dir), s.line, s.column)
        };
        let ok = |play: &str| {
            std::fs::write(dir.path().join("site.yml"), play).unwrap();
            load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0)
        };
        let play = ok("- hosts: all
  tasks:
    - block:
        - include_tasks: '{{ f }}.yml'
          when: go
          tags: [own]
          vars: {v: 1}
          loop: [a, b]
          loop_control: {loop_var: x}
      when: outer
      tags: [blk]
      vars: {bv: 2}
    - include_tasks:
        file: t.yml
        apply:
          tags: [applied]
          when: later
          ignore_errors: yes
    - include_tasks: self.yml
      vars: {n: 0}
    - include_tasks: missing.yml
");
        let include = &play.tasks[0];
        assert_eq!(include.args["file"], json!("{{ f }}.yml"));
        assert_eq!(include.when, ["outer", "go"]);
        assert_eq!(include.tags, ["blk", "own"]);
        assert_eq!(include.loop_var, "x");
        assert!(include.loop_spec.is_some());
        assert_eq!(Json::Object(include.vars.clone()), json!({"bv": 2}));
        assert_eq!(
            Json::Object(include.include_params.clone()),
            json!({"v": 1})
        );
        // The included tasks get what surrounds the include, not its own keywords.
        let children = &include.include.as_ref().unwrap().children;
        assert_eq!(children.when, ["outer"]);
        assert_eq!(children.tags, ["blk"]);
        assert_eq!(children.frames.len(), 1);
        let applied = &play.tasks[1].include.as_ref().unwrap().children;
        assert_eq!(applied.tags, ["applied"]);
        assert_eq!(applied.when, ["later"]);
        assert_eq!(applied.ignore_errors, Some(true));
        assert!(!play.tasks[1].args.contains_key("apply"));
        assert_eq!(play.tasks.len(), 4);
        // A literal file is loaded at load time for its mistakes.
        std::fs::write(dir.path().join("bad.yml"), "- name: x\n  cpy: {}\n").unwrap();
        let (text, line, column) = at("- hosts: all\n  tasks:\n    - include_tasks: bad.yml\n");
        assert!(
            text.starts_with("DIR/bad.yml:2:3: couldn't resolve module/action 'cpy'"),
            "{text}"
        );
        assert_eq!((line, column), (2, 3));
        assert_eq!(
            at("- hosts: all\n  tasks:\n    - include_tasks: t.yml\n      register: r\n"),
            (
                "DIR/site.yml:4:7: 'register' is not supported on include_tasks\n  |\n4 |       register: r\n  |       ^\nhelp: put it on the included tasks instead".into(),
                4,
                7
            )
        );
        let (text, ..) =
            at("- hosts: all\n  tasks:\n    - include_tasks: {file: t.yml, apply: {loop: [1]}}\n");
        assert!(
            text.contains("'loop' is not supported in apply on include_tasks"),
            "{text}"
        );
        assert_eq!(
            at("- hosts: all\n  tasks:\n    - import_tasks: t.yml\n      register: r\n")
                .0
                .lines()
                .next()
                .unwrap(),
            "DIR/site.yml:4:7: 'register' is not supported on import_tasks (it is resolved when the playbook loads)"
        );
        let (text, ..) = at("- hosts: all\n  tasks:\n    - import_role: {name: r, task_from: x}\n");
        assert!(
            text.contains("'task_from' is not a valid argument of import_role"),
            "{text}"
        );
    }

    /// The include task of the play's first task.
    fn first_include(play: &super::super::Play) -> &DynamicInclude {
        play.tasks[0].include.as_deref().expect("an include")
    }

    #[test]
    fn included_files_are_found_in_ansibles_order_and_missing_ones_named() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
            ("roles/r/tasks/main.yml", "- include_tasks: x.yml\n"),
            ("roles/r/tasks/x.yml", "- name: in the role\n  ping:\n"),
            ("x.yml", "- name: beside the playbook\n  ping:\n"),
            ("only-here.yml", "- ping:\n"),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        let include = first_include(&play);
        let including = dir.path().join("roles/r/tasks/main.yml");
        let found = include.find_tasks_file("x.yml", &including).unwrap();
        assert_eq!(found, dir.path().join("roles/r/tasks/x.yml"));
        let found = include
            .find_tasks_file("only-here.yml", &including)
            .unwrap();
        assert_eq!(found, dir.path().join("only-here.yml"));
        let err = include.find_tasks_file("nope.yml", &including).unwrap_err();
        // The role's tasks/ is also the including file's directory: looked at once.
        assert_eq!(
            err.replace(&dir.path().display().to_string(), "DIR"),
            "Could not find or access 'nope.yml' on the controller \
             (looked for DIR/roles/r/tasks/nope.yml, DIR/nope.yml)"
        );
    }

    #[test]
    fn loading_an_include_gives_fresh_blocks_params_and_the_surrounding_keywords() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all
  tasks:
    - block:
        - include_tasks: inc.yml
          when: own
          tags: [own]
      when: outer
      tags: [outer]
",
            ),
            (
                "inc.yml",
                "- block:\n    - name: inner\n      ping:\n  rescue:\n    - name: saved\n      ping:\n",
            ),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        let include = first_include(&play);
        let cache = IncludeCache::default();
        let path = dir.path().join("inc.yml");
        let params: serde_json::Map<String, Json> =
            [("item".to_string(), json!("a"))].into_iter().collect();
        let first = include.load_tasks(&path, params.clone(), &cache).unwrap();
        let second = include.load_tasks(&path, params, &cache).unwrap();
        assert_eq!(names(&first), ["inner", "saved"]);
        // The enclosing block's frame, then the file's own block, numbered afresh per load.
        assert_eq!(first[0].frames.len(), 2);
        assert_eq!(first[0].frames[0], play.tasks[0].frames[0]);
        assert_ne!(first[0].frames[1].block, second[0].frames[1].block);
        assert!(first[1].frames[1].block >= RUNTIME_BLOCK_BASE);
        // What surrounds the include reaches its tasks; its own when and tags do not.
        assert_eq!(first[0].when, ["outer"]);
        assert_eq!(first[0].tags, ["outer"]);
        assert_eq!(
            Json::Object(first[0].include_params.clone()),
            json!({"item": "a"})
        );
        // The file was read and parsed once.
        let a = cache.get(&path).unwrap();
        assert!(Arc::ptr_eq(&a, &cache.get(&path).unwrap()));
    }

    #[test]
    fn an_included_role_loads_with_its_defaults_handlers_and_privacy() {
        let dir = tree(ROLE_FILES);
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all\n  tasks:\n    - include_role: {name: \"{{ r }}\"}\n",
        )
        .unwrap();
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        // Nothing of a templated role is known before it runs.
        assert!(play.handlers.is_empty() && play.roles.is_empty());
        let include = first_include(&play);
        let cache = IncludeCache::default();
        let site = dir.path().join("site.yml");
        let args = |extra: Json| {
            let mut args = json!({"name": "web", "tasks_from": "other"});
            args.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            args.as_object().unwrap().clone()
        };
        let fresh = || std::sync::Mutex::new(Vec::new());
        let ran = fresh();
        let role = include
            .load_role(&args(json!({})), Default::default(), &site, 3, &cache, &ran)
            .unwrap();
        assert_eq!(names(&role.tasks), ["common task", "web other"]);
        // Its dependency ran in this play now: the next include of web does not run it again.
        let again = include
            .load_role(&args(json!({})), Default::default(), &site, 3, &cache, &ran)
            .unwrap();
        assert_eq!(names(&again.tasks), ["web other"]);
        assert_eq!(
            role.tasks[1].role.as_ref().unwrap().defaults["port"],
            json!(80)
        );
        assert!(role.public.is_empty());
        assert_eq!(names(&role.handlers), ["restart web"]);
        let public = include
            .load_role(
                &args(json!({"public": true})),
                Default::default(),
                &site,
                3,
                &cache,
                &fresh(),
            )
            .unwrap();
        let names_public: Vec<&str> = public.public.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names_public, ["common", "web"]);
        let err = include
            .load_role(
                &json!({"name": "nope"}).as_object().unwrap().clone(),
                Default::default(),
                &site,
                3,
                &cache,
                &fresh(),
            )
            .err()
            .unwrap();
        assert!(
            err.starts_with("the role 'nope' was not found in "),
            "{err}"
        );
    }

    #[test]
    fn includes_in_handlers_are_refused() {
        let dir = tree(&[(
            "site.yml",
            "- hosts: all\n  handlers:\n    - name: h\n      include_tasks: x.yml\n",
        )]);
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "include_tasks in handlers is not supported yet");
    }

    #[test]
    fn missing_roles_and_bad_entries_are_load_errors() {
        let dir = tree(&[("site.yml", "- hosts: all\n  roles:\n    - nope\n")]);
        let e = load(&dir).unwrap_err();
        let text = tail(&e, &dir);
        assert!(
            text.starts_with("DIR/site.yml:3:7: the role 'nope' was not found in DIR/roles:DIR\n"),
            "{text}"
        );
        assert!(text.contains("3 |     - nope"), "{text}");
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles:\n    - a\n"),
            ("roles/a/meta/main.yml", "dependencies:\n  - {role: b}\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir).starts_with(
                "DIR/roles/a/meta/main.yml:2:12: the role 'b' was not found in DIR/roles:DIR\n"
            ),
            "{e}"
        );
        let dir = tree(&[("site.yml", "- hosts: all\n  roles:\n    - 42\n")]);
        let e = load(&dir).unwrap_err();
        assert_eq!(
            (
                e.message.as_str(),
                e.span.unwrap().line,
                e.span.unwrap().column
            ),
            (
                "a role entry must be a role name or a mapping, got an integer",
                3,
                7
            )
        );
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all\n  roles:\n    - vars: {a: 1}\n",
        )
        .unwrap();
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "a role entry needs `role:` (the role's name)");
        std::fs::write(dir.path().join("site.yml"), "- hosts: all\n  roles: web\n").unwrap();
        assert_eq!(
            load(&dir).unwrap_err().message,
            "roles must be a list of roles, got a string"
        );
    }

    #[test]
    fn roles_path_is_searched_between_roles_dir_and_playbook_dir() {
        let shared = tempfile::tempdir().unwrap();
        let role = shared.path().join("r/tasks");
        std::fs::create_dir_all(&role).unwrap();
        std::fs::write(role.join("main.yml"), "- name: shared\n  ping:\n").unwrap();
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
            ("r/tasks/main.yml", "- name: beside the playbook\n  ping:\n"),
        ]);
        let site = dir.path().join("site.yml");
        let options = LoadOptions {
            roles_path: vec![shared.path().to_path_buf()],
            ..LoadOptions::default()
        };
        let pb = load_playbooks(&site, &options).unwrap();
        assert_eq!(names(&pb[0].plays[0].tasks), ["shared"]);
        let pb = load_playbooks(&site, &LoadOptions::default()).unwrap();
        assert_eq!(names(&pb[0].plays[0].tasks), ["beside the playbook"]);
    }

    #[test]
    fn collection_roles_are_found_by_their_fqcn_and_find_their_siblings() {
        let colls = tree(&[
            (
                "ansible_collections/ns/coll/roles/app/tasks/main.yml",
                "- name: app\n  ping:\n- ansible.builtin.import_role: {name: helper}\n",
            ),
            (
                "ansible_collections/ns/coll/roles/app/meta/main.yml",
                "dependencies: [base]\n",
            ),
            (
                "ansible_collections/ns/coll/roles/base/tasks/main.yml",
                "- name: collection base\n  ping:\n",
            ),
            (
                "ansible_collections/ns/coll/roles/helper/tasks/main.yml",
                "- name: collection helper\n  ping:\n",
            ),
        ]);
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all\n  roles: [ns.coll.app]\n  tasks:\n    - include_role: {name: ns.coll.helper}\n",
            ),
            // A short name inside the collection means the collection's role, not this.
            (
                "roles/base/tasks/main.yml",
                "- name: playbook base\n  ping:\n",
            ),
        ]);
        let options = LoadOptions {
            collections_path: vec![colls.path().to_path_buf()],
            ..LoadOptions::default()
        };
        let pb = load_playbooks(&dir.path().join("site.yml"), &options).unwrap();
        let play = &pb[0].plays[0];
        assert_eq!(
            names(&play.tasks),
            [
                "collection base",
                "app",
                "collection helper",
                "include_role"
            ]
        );
        let app = play.tasks[1].role.as_ref().unwrap();
        assert_eq!(
            app.path,
            colls.path().join("ansible_collections/ns/coll/roles/app")
        );

        let err = load_playbooks(&dir.path().join("site.yml"), &LoadOptions::default())
            .unwrap_err()
            .to_string()
            .replace(&dir.path().display().to_string(), "DIR");
        assert!(
            err.starts_with(
                "DIR/site.yml:2:11: the role 'ns.coll.app' was not found in \
                 DIR/collections/ansible_collections/ns/coll/roles:DIR/roles:DIR\n"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "help: install the collection ns.coll into a directory of collections_path"
            ),
            "{err}"
        );
    }

    #[test]
    fn role_defaults_and_vars_may_be_directories_of_files() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
            ("roles/r/tasks/main.yml", "- ping:\n"),
            ("roles/r/defaults/main/a.yml", "a: 1\nshared: a\n"),
            ("roles/r/defaults/main/b.yaml", "b: 2\nshared: b\n"),
            ("roles/r/defaults/main/c/d.yml", "d: 4\nshared: d\n"),
            ("roles/r/defaults/main/.hidden.yml", "hidden: 1\n"),
            ("roles/r/defaults/main/notes.txt", "txt: 1\n"),
            ("roles/r/defaults/main/e.yml~", "backup: 1\n"),
            ("roles/r/vars/main/v.yml", "v: 1\n"),
        ]);
        let pb = load(&dir).unwrap();
        let role = pb.plays[0].tasks[0].role.as_ref().unwrap();
        assert_eq!(
            Json::Object(role.defaults.clone()),
            json!({"a": 1, "shared": "d", "b": 2, "d": 4})
        );
        assert_eq!(Json::Object(role.vars.clone()), json!({"v": 1}));
    }

    #[test]
    fn paths_normalize_lexically() {
        assert_eq!(normalize(Path::new("a/./b/../c")), Path::new("a/c"));
        assert_eq!(normalize(Path::new("../x")), Path::new("../x"));
        assert_eq!(normalize(Path::new("/r/a/../../b")), Path::new("/b"));
        assert_eq!(normalize(Path::new("a/..")), Path::new("."));
    }

    #[test]
    fn a_role_use_with_other_conditions_or_allowed_duplicates_runs_again() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all
  roles:
    - a
    - {role: a, when: x}
    - a
    - d
    - d
",
            ),
            (
                "roles/a/tasks/main.yml",
                "- name: a
  ping:
",
            ),
            (
                "roles/d/tasks/main.yml",
                "- name: d
  ping:
",
            ),
            (
                "roles/d/meta/main.yml",
                "allow_duplicates: yes
",
            ),
        ]);
        let play = load(&dir).unwrap().plays.remove(0);
        assert_eq!(names(&play.tasks), ["a", "a", "d", "d"]);
        assert_eq!(play.tasks[1].when, ["x"]);
    }

    /// ansible-playbook 2.21 (checked) takes `import_role`'s arguments as k=v too.
    #[test]
    fn import_role_takes_key_value_arguments() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all\n  tasks:\n    - import_role: name=web tasks_from=other\n",
            ),
            ("roles/web/tasks/other.yml", "- name: other\n  ping:\n"),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        assert_eq!(names(&play.tasks), ["other"]);
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all\n  tasks:\n    - import_role: web\n",
        )
        .unwrap();
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "import_role takes name=... arguments, got 'web'");
    }

    /// ansible-playbook 2.21 (checked): a role entry's `tags` go to every task of the role
    /// and of its dependencies, before the tasks' own; the same role with other tags is
    /// another use and runs again; `import_role`'s tags reach its tasks too.
    #[test]
    fn tags_on_role_entries_and_import_role_reach_every_task() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all
  tags: p
  roles:
    - {role: web, tags: [a, b]}
    - role: web
      tags: c
  tasks:
    - import_role:
        name: common
      tags: i
",
            ),
            (
                "roles/web/tasks/main.yml",
                "- name: web
  ping:
  tags: own
",
            ),
            (
                "roles/web/meta/main.yml",
                "dependencies: [common]
",
            ),
            (
                "roles/common/tasks/main.yml",
                "- name: common
  ping:
",
            ),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        let tags: Vec<(String, Vec<String>)> = play
            .tasks
            .iter()
            .map(|t| (t.name.clone().unwrap(), t.tags.clone()))
            .collect();
        let t = |name: &str, tags: &[&str]| {
            (
                name.to_string(),
                tags.iter().map(|s| s.to_string()).collect(),
            )
        };
        assert_eq!(
            tags,
            [
                t("common", &["p", "a", "b"]),
                t("web", &["p", "a", "b", "own"]),
                t("common", &["p", "c"]),
                t("web", &["p", "c", "own"]),
                t("common", &["p", "i"]),
            ]
        );
        // The dependency is one role use reached under two tag sets: the executor runs
        // the first copy that the tags select (Ansible skips a role that already ran).
        let group = |i: usize| play.tasks[i].role.as_ref().unwrap().once_group;
        assert_eq!(group(0), group(2));
        assert!(group(0).is_some() && group(4).is_none());
        let select = |tags: &str, skip: &str| {
            let list = |s: &str| {
                s.split(' ')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            };
            super::super::select_tasks(
                &play.tasks,
                &super::super::TagFilter::from_args(&list(tags), &list(skip)),
            )
        };
        assert_eq!(select("", ""), [0, 1, 3, 4]);
        assert_eq!(select("c", ""), [2, 3]);
        assert_eq!(select("", "a"), [2, 3, 4]);
        assert_eq!(select("own", ""), [1, 3]);
    }

    #[test]
    fn keywords_on_roles_and_imports_reach_their_tasks_or_are_refused() {
        let dir = tree(&[
            ("roles/a/tasks/main.yml", "- name: a\n  ping:\n"),
            ("t.yml", "- name: t\n  ping:\n"),
        ]);
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all
  roles:
    - {role: a, ignore_errors: yes, become: yes, diff: no, check_mode: yes}
  tasks:
    - import_tasks: t.yml
      become: yes
      ignore_errors: true
      diff: true
    - import_tasks: t.yml
",
        )
        .unwrap();
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        let ignoring: Vec<bool> = play.tasks.iter().map(|t| t.ignore_errors).collect();
        assert_eq!(ignoring, [true, true, false]);
        assert!(play.tasks[0].role.as_ref().unwrap().params.is_empty());
        // `diff` and `check_mode` on a role entry or an import are keywords for its tasks.
        let diffs: Vec<Option<bool>> = play.tasks.iter().map(|t| t.diff).collect();
        assert_eq!(diffs, [Some(false), Some(true), None]);
        assert_eq!(play.tasks[0].check_mode, Some(true));
        std::fs::write(
            dir.path().join("site.yml"),
            "- hosts: all\n  roles:\n    - {role: a, delegate_to: x}\n",
        )
        .unwrap();
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "'delegate_to' on a role is not supported yet");
        assert_eq!((e.span.unwrap().line, e.span.unwrap().column), (3, 17));
    }

    #[test]
    fn roles_by_path_and_bad_role_files() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [lib/r]\n"),
            ("lib/r/tasks/main.yml", "- name: t\n  ping:\n"),
            ("lib/r/defaults/main.yml", "- not\n- a mapping\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir).starts_with("DIR/lib/r/defaults/main.yml:1:1: a role's defaults file must be a mapping of variables, got a list"),
            "{e}"
        );
        std::fs::write(dir.path().join("lib/r/defaults/main.yml"), "x: 1\n").unwrap();
        let play = load(&dir).unwrap().plays.remove(0);
        assert_eq!(play.tasks[0].display_name(), "r : t");
        assert_eq!(
            play.tasks[0].role.as_ref().unwrap().path,
            dir.path().join("lib/r")
        );
    }

    #[test]
    fn ansibles_default_roles_path() {
        assert_eq!(
            LoadOptions::default_roles_path(Some(Path::new("/home/u"))),
            [
                PathBuf::from("/home/u/.ansible/roles"),
                PathBuf::from("/usr/share/ansible/roles"),
                PathBuf::from("/etc/ansible/roles"),
            ]
        );
    }

    #[test]
    fn role_dependency_cycles_are_errors() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [a]\n"),
            ("roles/a/meta/main.yml", "dependencies: [b]\n"),
            ("roles/b/meta/main.yml", "dependencies: [a]\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir)
                .starts_with("DIR/roles/b/meta/main.yml:1:16: the role 'a' depends on itself"),
            "{e}"
        );
    }
}
