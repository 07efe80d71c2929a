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
    /// The play's `roles:` list, as tasks.
    pub(super) fn play_roles(&self, node: &Node) -> Result<Vec<Task>, LoadError> {
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
            self.expand_role(&entry, &Inherited::default(), RoleUse::PLAY, None, &mut out)?;
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
mod tests {
    use super::super::*;
    use crate::playbook::test_support::tree::*;
    use serde_json::{Value as Json, json};

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
        let written: Vec<_> = play.tasks.iter().filter(|t| !t.implicit).collect();
        let web = written[2].role.as_ref().unwrap();
        assert_eq!(web.name, "web");
        assert_eq!(web.path, dir.path().join("roles/web"));
        assert_eq!(
            Json::Object(web.defaults.clone()),
            json!({"port": 80, "level": "default"})
        );
        assert_eq!(Json::Object(web.vars.clone()), json!({"level": "role"}));
        let again = written[4].role.as_ref().unwrap();
        assert_eq!(Json::Object(again.vars.clone()), json!({"level": "role"}));
        assert_eq!(
            Json::Object(again.keyword_vars.clone()),
            json!({"port": 8080})
        );
        let public: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(public, ["common", "web", "web"]);
        assert_eq!(Json::Object(again.params.clone()), json!({"extra": 1}));
        let common = written[1].role.as_ref().unwrap();
        assert_eq!(
            Json::Object(common.params.clone()),
            json!({"greeting": "hi"})
        );
        assert!(written[0].role.is_none() && written[6].role.is_none());
        // The imported file inside the role: its own location, the role's identity.
        assert!(
            written[3]
                .location
                .to_string()
                .ends_with("roles/web/tasks/extra.yml:1:3")
        );
        assert_eq!(written[3].role.as_ref().unwrap().name, "web");
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
            "A malformed role declaration was encountered: ds ('web') should be a list but was a <class 'str'>"
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

    /// A role whose entry point has an argument spec starts with Ansible's check of it
    /// (role/__init__.py `_create_validation_task`), unless `rolespec_validate: false`.
    #[test]
    fn an_argument_spec_puts_its_check_first() {
        let dir = tree(&[
            (
                "roles/r/meta/argument_specs.yml",
                "argument_specs:\n  main:\n    short_description: Main entry.\n    options:\n      x: {type: int, required: true}\n  other:\n    options: {}\n",
            ),
            ("roles/r/tasks/main.yml", "- ping:\n"),
            ("roles/r/tasks/other.yml", "- ping:\n"),
            (
                "site.yml",
                "- hosts: all\n  roles:\n    - role: r\n      x: 1\n  tasks:\n    - import_role: {name: r, tasks_from: other}\n    - import_role: {name: r, rolespec_validate: false}\n",
            ),
        ]);
        let play = &load(&dir).unwrap().plays[0];
        let names: Vec<_> = play.tasks.iter().map(|t| t.banner_name()).collect();
        assert_eq!(
            names,
            [
                "r : Validating arguments against arg spec 'main' - Main entry.",
                "r : ping",
                "r : Validating arguments against arg spec 'other'",
                "r : ping",
                "r : ping",
            ]
        );
        let check = &play.tasks[0];
        assert_eq!(check.tags, ["always"]);
        assert_eq!(check.args["provided_arguments"], json!({"x": 1}));
        assert_eq!(
            check.args["argument_spec"],
            json!({"x": {"type": "int", "required": true}})
        );
        assert_eq!(check.args["validate_args_context"]["name"], json!("r"));
    }

    #[test]
    fn a_collection_roles_argument_spec_context_names_it_by_its_short_name() {
        let colls = tree(&[
            (
                "ansible_collections/ns/coll/roles/app/tasks/main.yml",
                "- ping:\n",
            ),
            (
                "ansible_collections/ns/coll/roles/app/meta/argument_specs.yml",
                "argument_specs:\n  main:\n    options: {}\n",
            ),
        ]);
        let dir = tree(&[("site.yml", "- hosts: all\n  roles: [ns.coll.app]\n")]);
        let options = LoadOptions {
            collections_path: vec![colls.path().to_path_buf()],
            ..LoadOptions::default()
        };
        let pb = load_playbooks(&dir.path().join("site.yml"), &options).unwrap();
        let check = &pb[0].plays[0].tasks[0];
        assert_eq!(check.args["validate_args_context"]["name"], json!("app"));
    }
}
