//! Roles: `roles:` entries and meta dependencies, found on the roles path or in a
//! collection, and expanded into their tasks (dependencies first, once per play) with
//! their handlers going to the play.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::keyword_table::{At, Places, Taken, keyword, record_unsupported};
use super::loader::{Inherited, Loader};
use super::role_files::read_role_file;
use super::shared::{RanRole, identity};
use super::{RoleInfo, RunKeywords, Task, UnsupportedKeyword, collections};
use crate::yaml::{LoadError, Node, Span, Value};

/// Keys of `include_role` arguments: `import_role`'s, then `apply` and `rescuable`
/// (dynamic only).
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
    "rescuable",
];

/// Keys of `import_role` arguments.
pub(super) const ROLE_ARGS: &[&str] = INCLUDE_ROLE_ARGS.split_at(INCLUDE_ROLE_ARGS.len() - 2).0;

/// One use of a role, as written.
pub(super) struct RoleEntry {
    pub(super) name: String,
    pub(super) span: Span,
    pub(super) vars: serde_json::Map<String, Json>,
    pub(super) params: serde_json::Map<String, Json>,
    pub(super) when: Vec<String>,
    /// `tags:` of a `roles:` entry or dependency: every task of the role (and of its
    /// dependencies) takes them on, as in Ansible.
    pub(super) tags: Vec<String>,
    pub(super) ignore_errors: Option<bool>,
    pub(super) check_mode: Option<bool>,
    pub(super) diff: Option<bool>,
    /// `public:` of include_role: its defaults and vars reach the rest of the play.
    pub(super) public: bool,
    pub(super) tasks_from: Option<String>,
    pub(super) vars_from: Option<String>,
    pub(super) defaults_from: Option<String>,
    pub(super) handlers_from: Option<String>,
    /// `rolespec_validate`: the role's argument spec is checked first (Ansible's default).
    pub(super) validate: bool,
    /// Run keywords written on the entry (`environment`, `connection`, ...), as written:
    /// read into what the role's tasks inherit when it is expanded.
    pub(super) keywords: Vec<(Node, Node)>,
    /// Keywords on the entry that turbo-play does not act on yet.
    pub(super) unsupported: Vec<UnsupportedKeyword>,
}

impl RoleEntry {
    pub(super) fn named(name: String, span: Span) -> RoleEntry {
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
            validate: true,
            keywords: Vec::new(),
            unsupported: Vec::new(),
        }
    }
}

/// How a role came into the play.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct RoleUse {
    /// Runs once per distinct parameters (`roles:` entries and dependencies), unless the
    /// role's meta allows duplicates; `import_role`/`include_role` run every time.
    pub(super) once: bool,
    /// Its defaults and vars are seen by the whole play (`roles:`, `import_role`).
    pub(super) public: bool,
    /// Its handlers come before the play's own (`roles:`), else after them.
    pub(super) handlers_first: bool,
    /// Reached through another role's `dependencies` (`ansible_dependent_role_names`).
    pub(super) dependency: bool,
}

impl RoleUse {
    pub(super) const PLAY: RoleUse = RoleUse {
        once: true,
        public: true,
        handlers_first: true,
        dependency: false,
    };
    pub(super) const IMPORT: RoleUse = RoleUse {
        once: false,
        public: true,
        handlers_first: false,
        dependency: false,
    };
    pub(super) const INCLUDE: RoleUse = RoleUse {
        once: false,
        public: false,
        handlers_first: false,
        dependency: false,
    };

    pub(super) fn dependency(self) -> RoleUse {
        RoleUse {
            once: true,
            dependency: true,
            ..self
        }
    }
}

const AT_ROLE: At = At {
    place: Places::ROLE,
    label: "a role",
};

impl Loader<'_> {
    /// The play's `roles:` list, as tasks, with what the play hands them (`around`).
    pub(super) fn play_roles(
        &self,
        node: &Node,
        around: &Inherited,
    ) -> Result<Vec<Task>, LoadError> {
        let items = match &node.value {
            Value::Null => return Ok(Vec::new()),
            Value::Seq(items) => items,
            _ => {
                return Err(self.err(
                    node.span,
                    format!(
                        "A malformed role declaration was encountered: ds ({}) should be a list but was a <class '{}'>",
                        crate::template::python_repr_json(&node.to_json()),
                        node.python_class()
                    ),
                    Some("write `roles:` followed by `- role_name` lines".into()),
                ));
            }
        };
        let mut out = Vec::new();
        for item in items {
            let entry = self.role_entry(item)?;
            self.expand_role(&entry, around, RoleUse::PLAY, None, &mut out)?;
        }
        Ok(out)
    }

    /// A `roles:` or `dependencies:` entry: a name, or a mapping with `role:`/`name:`.
    pub(super) fn role_entry(&self, node: &Node) -> Result<RoleEntry, LoadError> {
        let help = "write `- role_name` or `- role: role_name` (with its vars beside it)";
        let entries = match &node.value {
            // `name,version` was the old requirement style, refused by Ansible since.
            Value::Str(s) if s.contains(',') => {
                return Err(self.err(
                    node.span,
                    format!("Invalid old style role requirement: {s}"),
                    Some(help.into()),
                ));
            }
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
                _ => {
                    // Checked here, read when the role is expanded (below what surrounds it).
                    let mut checked = RunKeywords::default();
                    match self.table_keyword(
                        &AT_ROLE,
                        k,
                        v,
                        &mut checked,
                        &mut entry.unsupported,
                    )? {
                        Taken::Yes => {
                            if keyword(key).is_some_and(|found| found.is_run_keyword()) {
                                entry.keywords.push((k.clone(), v.clone()));
                            }
                        }
                        // Anything else is a role parameter, as Ansible takes it.
                        Taken::No => {
                            entry.params.insert(key.to_string(), v.to_json());
                        }
                    }
                }
            }
        }
        Ok(entry)
    }

    /// A role's directory: `roles/` beside the playbook, then `roles_path`, then (for a
    /// dependency) beside the role that depends on it, then the playbook's directory. A
    /// `namespace.collection.role` name is looked up in that collection first; a short
    /// name used inside a collection's role, in that collection first.
    pub(super) fn find_role(
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
        // Absolute, as Ansible lists them.
        let places: Vec<String> = searched
            .iter()
            .map(|(p, _)| {
                let absolute = std::path::absolute(p).unwrap_or_else(|_| p.clone());
                super::shared::normalize(&absolute).display().to_string()
            })
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
                "The role '{}' was not found in: {}",
                entry.name,
                places.join(":")
            ),
            Some(help),
        ))
    }

    /// A role's tasks (after its dependencies'), appended to `out`; its handlers go to the
    /// play.
    pub(super) fn expand_role(
        &self,
        entry: &RoleEntry,
        inherited: &Inherited,
        used: RoleUse,
        dependent: Option<&Path>,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let enclosing = inherited.role.as_ref().map(|r| r.path.as_path());
        let dir = self.find_role(entry, dependent, enclosing)?;
        // Its plugins are visible from now on, to every task, as in Ansible.
        self.shared.plugins.add_root(&dir);
        // A role that imports another of its own task files (`tasks_from`) is no cycle:
        // the role counts as being imported only with the same entry point.
        let importing = role_import_key(&dir, entry);
        {
            // A role that already ran (and is not expanded again) still exports its vars.
            let mut play = self.shared.play.borrow_mut();
            play.last_exported = play
                .exported
                .get(&identity(&dir))
                .cloned()
                .unwrap_or_default();
        }
        if self.shared.is_importing(&importing) {
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
        self.shared.importing.borrow_mut().push(importing);
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

    pub(super) fn missing_role_file(
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

    pub(super) fn expand_role_in(
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
        for (k, v) in &entry.keywords {
            self.run_keyword(self.key(k)?, v, &mut outer.keywords)?;
        }
        for u in &entry.unsupported {
            record_unsupported(&mut outer.unsupported, &u.keyword, u.location.clone());
        }
        let vars = self.role_vars_file(dir, "vars", entry.vars_from.as_deref())?;
        let mut deps_exported = serde_json::Map::new();
        if let Some((root, loader)) = meta
            && let Some(deps) = root.get("dependencies")
        {
            let mut dep_outer = outer.clone();
            crate::hash_merge::combine(&mut dep_outer.dep_chain_vars, &entry.vars);
            crate::hash_merge::combine(&mut dep_outer.dep_chain_vars, &vars);
            for dep in deps.as_seq().unwrap_or_default() {
                let dep_entry = loader.role_entry(dep)?;
                loader.expand_role(&dep_entry, &dep_outer, used.dependency(), Some(dir), out)?;
                let exported = std::mem::take(&mut self.shared.play.borrow_mut().last_exported);
                crate::hash_merge::combine(&mut deps_exported, &exported);
            }
        }
        let mut inherited_vars = inherited.dep_chain_vars.clone();
        crate::hash_merge::combine(&mut inherited_vars, &deps_exported);
        crate::hash_merge::combine(&mut deps_exported, &vars);
        {
            let mut play = self.shared.play.borrow_mut();
            play.exported.insert(identity(dir), deps_exported.clone());
            play.last_exported = deps_exported;
        }
        let defaults = self.role_vars_file(dir, "defaults", entry.defaults_from.as_deref())?;
        let info = Arc::new(RoleInfo {
            // A role given by its path is named by its directory, as in Ansible.
            name: Path::new(&entry.name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| entry.name.clone()),
            path: dir.to_path_buf(),
            defaults,
            vars,
            inherited_vars,
            keyword_vars: entry.vars.clone(),
            params: entry.params.clone(),
            once_group,
            dependency: used.dependency,
            // The role whose tasks import or include this one, and its own parents.
            parents: inherited
                .role
                .iter()
                .flat_map(|r| {
                    std::iter::once((r.name.clone(), r.path.clone())).chain(r.parents.clone())
                })
                .collect(),
        });
        if used.public {
            self.shared.play.borrow_mut().public.push(info.clone());
        }
        let mut inner = outer.clone();
        inner.role = Some(info.clone());
        // Ansible's context names a collection's role by its short name.
        let in_collection = dir
            .components()
            .any(|c| c.as_os_str() == "ansible_collections");
        let spec_name = match dir.file_name() {
            Some(short) if in_collection => short.to_string_lossy().into_owned(),
            _ => info.name.clone(),
        };
        inner.dep_chain_vars = serde_json::Map::new();
        if entry.validate
            && let Some(source) = super::role_files::argument_spec_task(
                dir,
                &spec_name,
                entry.tasks_from.as_deref(),
                &entry.params,
            )?
        {
            self.child(&source).tasks_source(&source, &inner, out)?;
        }
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
}

/// What a role's import counts as on the import stack: its directory and entry point
/// (`tasks_from`), so that only the same use of the same role is a cycle.
pub(super) fn role_import_key(dir: &Path, entry: &RoleEntry) -> PathBuf {
    identity(dir).join(format!(
        "@entry:{}",
        entry.tasks_from.as_deref().unwrap_or("main")
    ))
}

#[cfg(test)]
#[path = "roles_tests.rs"]
mod tests;
