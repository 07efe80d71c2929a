//! `include_tasks` and `include_role`: a task of their own, whose tasks the executor
//! loads when it reaches them ([`DynamicInclude`]); a literal file or role is also loaded
//! once at load time, for its errors and a role's handlers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::keyword_table::{At, Places, Taken, keyword, names_at};
use super::loader::{Inherited, Loader, dir_of};
use super::roles::{RoleEntry, RoleUse};
use super::shared::{LoadOptions, RanRole, Shared, normalize};
use super::{RoleInfo, Task};
use crate::template::is_template;
use crate::yaml::{LoadError, Node, Source, Span};

/// Nesting depth at which a dynamic include is refused: an include that keeps including
/// itself would otherwise run until memory runs out.
pub const MAX_INCLUDE_DEPTH: usize = 64;

/// Block ids of tasks loaded at run time start here, far above what the playbook's own
/// loading uses; every load takes a fresh range, so a file included twice (or once per
/// loop item) never shares a block id with another copy of itself.
pub(super) const RUNTIME_BLOCK_BASE: usize = 1 << 40;

pub(super) const RUNTIME_BLOCK_RANGE: usize = 1 << 20;

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
    /// The load's settings: where included roles, collections, modules and plugins are.
    options: LoadOptions,
    /// Where an include_role's `name:` is written, where Ansible shows an error about
    /// the role (not found, no such tasks file).
    role_name_at: Option<Span>,
}

/// Why an included role could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleLoadError {
    pub message: String,
    /// The error is about the role the include names (not an error inside the role's
    /// files, which names its own file): shown at the `name:`, line and column.
    pub at_name: Option<(usize, usize)>,
}

impl std::fmt::Display for RoleLoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for RoleLoadError {
    fn from(message: String) -> Self {
        RoleLoadError {
            message,
            at_name: None,
        }
    }
}

/// Included files parsed during a run, by path: each is read and parsed once.
#[derive(Default)]
pub struct IncludeCache {
    files: std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<(Source, Node)>>>,
}

impl IncludeCache {
    pub(super) fn get(&self, path: &Path) -> Result<Arc<(Source, Node)>, String> {
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
pub(super) fn tasks_file_candidates(
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

    pub(super) fn shared(&self) -> Shared {
        let shared = Shared::new(&self.options);
        let base =
            NEXT_RUNTIME_BLOCK.fetch_add(RUNTIME_BLOCK_RANGE, std::sync::atomic::Ordering::Relaxed);
        shared.next_block.set(base);
        Shared {
            check_includes: false,
            ..shared
        }
    }

    pub(super) fn children_with(&self, params: serde_json::Map<String, Json>) -> Inherited {
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
        let tasks = loader
            .tasks(root, "a tasks file", &self.children_with(params))
            .map_err(|e| e.to_string())?;
        // Its `module_defaults` names are checked as a play's are once its roles load.
        loader
            .check_unresolved_defaults()
            .map_err(|e| e.to_string())?;
        Ok(tasks)
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
    ) -> Result<IncludedRole, RoleLoadError> {
        let text = |key: &str| -> Option<String> {
            args.get(key).map(|v| match v {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let Some(name) = text("name").or_else(|| text("role")) else {
            return Err(String::from("include_role needs `name:` (the role to run)").into());
        };
        let public = match args.get("public") {
            None | Some(Json::Null) => false,
            Some(v) => crate::modules::spec::parse_bool(v)
                .map_err(|e| format!("argument 'public' of include_role: {e}"))
                .map_err(RoleLoadError::from)?,
        };
        let parsed = cache.get(including)?;
        let (source, _) = &*parsed;
        let shared = self.shared();
        shared.play.borrow_mut().ran = ran.lock().expect("ran roles lock").clone();
        let loader = Loader::of(source, &shared, self.playbook_dir.clone());
        let at = self.role_name_at.unwrap_or(Span { line, column: 1 });
        let mut entry = RoleEntry::named(name, at);
        entry.tasks_from = text("tasks_from");
        entry.vars_from = text("vars_from");
        entry.defaults_from = text("defaults_from");
        entry.handlers_from = text("handlers_from");
        entry.public = public;
        entry.validate = match args.get("rolespec_validate") {
            None | Some(Json::Null) => true,
            Some(v) => crate::modules::spec::parse_bool(v)
                .map_err(|e| format!("argument 'rolespec_validate' of include_role: {e}"))
                .map_err(RoleLoadError::from)?,
        };
        let used = RoleUse {
            public,
            ..RoleUse::INCLUDE
        };
        let mut tasks = Vec::new();
        loader
            .expand_role(&entry, &self.children_with(params), used, None, &mut tasks)
            .map_err(|e| match e.span {
                // Errors about the role (not found, no such tasks_from) are about the
                // include, in Ansible's words alone; errors inside the role's files keep
                // their file:line:col.
                Some(span) if e.file == including => RoleLoadError {
                    message: e.message.clone(),
                    at_name: Some((span.line, span.column)),
                },
                _ => RoleLoadError::from(e.to_string()),
            })?;
        loader
            .check_unresolved_defaults()
            .map_err(|e| RoleLoadError::from(e.to_string()))?;
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
    /// role is loaded here once too, for its handlers.
    pub(super) fn dynamic_include(
        &self,
        item: &Node,
        kind: &str,
        value: &Node,
        inherited: &Inherited,
    ) -> Result<Task, LoadError> {
        // A handler that includes tasks runs them when notified; a role's handlers
        // arriving from inside a handler are not run here yet.
        if inherited.handler && kind == "include_role" {
            return Err(self.err(
                item.span,
                format!("{kind} in handlers is not supported yet"),
                Some("use import_role or include_tasks in handlers".into()),
            ));
        }
        let entries = item.as_map().unwrap_or_default();
        let mut own_vars = serde_json::Map::new();
        let mut extra_args: Option<&Node> = None;
        for (k, v) in entries {
            let key = self.key(k)?;
            self.check_include_keyword(kind, k)?;
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
        let mut role_name_at = None;
        if kind == "include_role" {
            let entry = self.role_args(kind, value, extra_args)?;
            self.check_included_role(&entry, &children)?;
            role_name_at = Some(entry.span);
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
            // Ansible reads the file only when a host reaches the include: a broken one
            // fails there (and can be rescued), never the load.
            task.args = [("file".to_string(), Json::String(file))]
                .into_iter()
                .collect();
        }
        task.include = Some(Arc::new(DynamicInclude {
            children,
            playbook_dir: self.playbook_dir.clone(),
            options: self.shared.options(),
            role_name_at,
        }));
        Ok(task)
    }

    /// A key of an `include_tasks`/`include_role` task: the include itself, a loop, or
    /// one of the few keywords Ansible takes on a dynamic include (it refuses the others:
    /// they go under `apply:`).
    fn check_include_keyword(&self, kind: &str, k: &Node) -> Result<(), LoadError> {
        let key = self.key(k)?;
        let bare = key
            .strip_prefix("ansible.builtin.")
            .or_else(|| key.strip_prefix("ansible.legacy."))
            .unwrap_or(key);
        if bare == kind || key.starts_with("with_") {
            return Ok(());
        }
        match keyword(key) {
            Some(found) if found.places.has(Places::INCLUDE) => {
                if found.refused.has(Places::INCLUDE) {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not supported on {kind}"),
                        Some("put it on the included tasks instead".into()),
                    ));
                }
                Ok(())
            }
            _ => {
                let class = if kind == "include_role" {
                    "IncludeRole"
                } else {
                    "TaskInclude"
                };
                let takes: Vec<&str> = names_at(Places::INCLUDE).collect();
                Err(self.err(
                    k.span,
                    format!("'{key}' is not a valid attribute for a {class}"),
                    Some(format!(
                        "{kind} takes {}; keywords for the included tasks go under `apply:`",
                        takes.join(", ")
                    )),
                ))
            }
        }
    }

    /// `apply:` keywords, handed to the included tasks.
    pub(super) fn apply(
        &self,
        node: &Node,
        kind: &str,
        into: &mut Inherited,
    ) -> Result<(), LoadError> {
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
                "notify" => into.notify.extend(self.names(v, key)?),
                "when" => into.when.extend(self.conditions(v, key)?),
                "vars" => into.vars.extend(self.mapping(v, key)?),
                "ignore_errors" => into.ignore_errors = Some(self.boolean(v, key)?),
                "check_mode" => into.check_mode = Some(self.boolean(v, key)?),
                "diff" => into.diff = Some(self.boolean(v, key)?),
                _ => {
                    let label = format!("apply on {kind}");
                    let at = At {
                        place: Places::BLOCK,
                        label: &label,
                    };
                    let (keywords, unsupported) = (&mut into.keywords, &mut into.unsupported);
                    if self.table_keyword(&at, k, v, keywords, unsupported)? == Taken::No {
                        let takes: Vec<&str> = names_at(Places::BLOCK)
                            .filter(|k| !matches!(*k, "name" | "block" | "rescue" | "always"))
                            .collect();
                        return Err(self.err(
                            k.span,
                            format!("'{key}' is not supported in apply on {kind}"),
                            Some(format!("apply takes {}", takes.join(", "))),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// For a literal include_role: load the role once so its handlers join the play's
    /// (notified handlers need them). A role missing or broken now is left to run time,
    /// where Ansible reports it (and a rescue can take it).
    pub(super) fn check_included_role(
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
        if self
            .shared
            .is_importing(&super::roles::role_import_key(&dir, entry))
        {
            return Ok(());
        }
        let mut ignored = Vec::new();
        let used = RoleUse {
            public: false,
            ..RoleUse::INCLUDE
        };
        // A broken role fails the include when it runs (rescuable), as in Ansible.
        let _ = self.expand_role(entry, children, used, None, &mut ignored);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::playbook::test_support::tree::*;
    use serde_json::{Value as Json, json};

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
        // An included file's mistakes are the include's when it runs, as in Ansible
        // (include_when_parent_is_dynamic): the load does not read the file.
        std::fs::write(dir.path().join("bad.yml"), "- name: x\n  cpy: {}\n").unwrap();
        std::fs::write(dir.path().join("nested.yml"), "- include_tasks: bad.yml\n").unwrap();
        ok("- hosts: all\n  tasks:\n    - include_tasks: bad.yml\n");
        ok("- hosts: all\n  tasks:\n    - include_tasks: nested.yml\n");
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
            err.to_string()
                .starts_with("The role 'nope' was not found in: "),
            "{err}"
        );
        // Shown where the include writes the role's name, as Ansible shows it.
        assert_eq!(err.at_name, Some((3, 28)), "{err}");
    }

    #[test]
    fn include_role_in_handlers_is_refused() {
        let dir = tree(&[(
            "site.yml",
            "- hosts: all\n  handlers:\n    - name: h\n      include_role: {name: x}\n",
        )]);
        let e = load(&dir).unwrap_err();
        assert_eq!(e.message, "include_role in handlers is not supported yet");
    }
}
