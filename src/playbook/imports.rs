//! Static reuse, resolved at load time: `import_playbook`, `import_tasks` and
//! `import_role` (and the old `include`). Every imported file gets its own [`Loader`], so
//! its errors point into it at file:line:col; the tasks come out inlined in the play's
//! one task list.

use std::path::{Path, PathBuf};

use super::keyword_table::{At, Places, Taken, names_at};
use super::loader::{Inherited, Loader, dir_of};
use super::roles::{ROLE_ARGS, RoleEntry, RoleUse};
use super::shared::normalize;
use super::{Playbook, Task};
use crate::template::is_template;
use crate::yaml::{LoadError, Node, Source, Span, Value};

/// The task keywords that inline other tasks, by their short names.
pub(super) const INCLUDE_KINDS: &[&str] = &[
    "import_tasks",
    "include_tasks",
    "import_role",
    "include_role",
    "include",
];

impl Loader<'_> {
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
        // What the import hands to every imported play, as Ansible's PlaybookInclude:
        // its vars above the play's own, its tags and its `when` on every task.
        let (mut vars, mut tags, mut when) = (serde_json::Map::new(), Vec::new(), Vec::new());
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                _ if is_import(k) => {}
                "name" => {}
                "tags" => tags = self.tags(v)?,
                "when" => when = self.conditions(v, key)?,
                "vars" => vars = self.mapping(v, "vars")?,
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for import_playbook"),
                        Some(
                            "an import_playbook entry takes `name`, `tags`, `vars` and `when`"
                                .into(),
                        ),
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
        let mut playbooks = self.shared.load_playbook_source(&source)?;
        for play in playbooks.iter_mut().flat_map(|p| p.plays.iter_mut()) {
            play.vars.extend(vars.clone());
            play.tags.extend(tags.iter().cloned());
            for task in play.tasks.iter_mut().chain(play.handlers.iter_mut()) {
                task.tags.extend(tags.iter().cloned());
                let mut all = when.clone();
                all.append(&mut task.when);
                task.when = all;
            }
        }
        Ok(Some(playbooks))
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
                "notify" => inner.notify.extend(self.names(v, key)?),
                "check_mode" => inner.check_mode = Some(self.boolean(v, key)?),
                "diff" => inner.diff = Some(self.boolean(v, key)?),
                "loop" | "loop_control" => return Err(self.loop_error(k.span, kind)),
                _ if key.starts_with("with_") => return Err(self.loop_error(k.span, kind)),
                _ if short(k).is_some() => {
                    return Err(self.err(
                        k.span,
                        format!("conflicting action statements: {kind}, {key}"),
                        Some("split them into two tasks".into()),
                    ));
                }
                _ => {
                    let at = At {
                        place: Places::IMPORT,
                        label: kind,
                    };
                    let (keywords, unsupported) = (&mut inner.keywords, &mut inner.unsupported);
                    if self.table_keyword(&at, k, v, keywords, unsupported)? == Taken::No {
                        let takes: Vec<&str> = names_at(Places::IMPORT).collect();
                        return Err(self.err(
                            k.span,
                            format!("'{key}' is not supported on {kind} (it is resolved when the playbook loads)"),
                            Some(format!("{kind} takes {}", takes.join(", "))),
                        ));
                    }
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
                let (written, span) = self.tasks_file_arg(kind, value, extra_args, &inner)?;
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

    pub(super) fn loop_error(&self, span: Span, kind: &str) -> LoadError {
        self.err(
            span,
            format!("a loop on {kind} is not supported yet"),
            Some("put the loop on the tasks of the included file instead".into()),
        )
    }

    /// The file an `import_tasks`/`include_tasks` names: `import_tasks: x.yml`, or
    /// `include_tasks: {file: x.yml}`.
    pub(super) fn tasks_file_arg(
        &self,
        kind: &str,
        value: &Node,
        extra_args: Option<&Node>,
        inherited: &Inherited,
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
        let mut written = self.scalar(node, kind)?;
        // `import_tasks: file=x.yml` is Ansible's k=v form (parse_kv, raw params allowed).
        if matches!(node.value, Value::Str(_)) {
            let parsed = crate::kv_args::parse_kv(&written, None);
            if parsed.raw.trim().is_empty()
                && let Some((_, file)) = parsed.pairs.iter().rev().find(|(k, _)| k == "file")
            {
                written = file.clone();
            }
        }
        if is_template(&written) {
            return match self.render_at_load(&written, inherited) {
                Ok(rendered) => Ok((rendered, node.span)),
                Err(e) => Err(self.err(
                    node.span,
                    format!(
                        "{kind} is resolved when the playbook loads, and its path cannot be \
                         templated then: {e}"
                    ),
                    Some(
                        "name the file with what is known at load (role_path, playbook_dir, \
                         the role's defaults and vars), or use include_tasks, which is \
                         resolved when the task runs"
                            .into(),
                    ),
                )),
            };
        }
        Ok((written, node.span))
    }

    /// A static import's templated path, rendered with what is known before any host
    /// runs: the role's defaults, vars and `role_path`/`role_name`, the variables of the
    /// blocks around, and `playbook_dir`.
    fn render_at_load(
        &self,
        template: &str,
        inherited: &Inherited,
    ) -> Result<String, crate::template::TemplateError> {
        let mut vars = serde_json::Map::new();
        if let Some(role) = &inherited.role {
            vars.extend(role.defaults.clone());
            vars.extend(role.vars.clone());
            vars.insert("role_path".into(), role.path.display().to_string().into());
            vars.insert("role_name".into(), role.name.clone().into());
        }
        vars.extend(inherited.vars.clone());
        vars.insert(
            "playbook_dir".into(),
            self.playbook_dir.display().to_string().into(),
        );
        crate::template::Templar::new()
            .render_str(template, &minijinja::Value::from_serialize(&vars))
    }

    /// A tasks file as Ansible finds it: inside a role its `tasks/` first, then beside the
    /// including file, then beside the playbook.
    pub(super) fn find_tasks_file(
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
    pub(super) fn role_args(
        &self,
        kind: &str,
        value: &Node,
        extra_args: Option<&Node>,
    ) -> Result<RoleEntry, LoadError> {
        let mut name: Option<&Node> = None;
        let mut from: [Option<String>; 4] = Default::default();
        let mut public = false;
        let mut validate = true;
        let mut kv_forms = Vec::new();
        for node in [Some(value), extra_args].into_iter().flatten() {
            // `import_role: name=web tasks_from=x`, Ansible's k=v form of the mapping.
            if let Value::Str(text) = &node.value {
                let parsed = crate::kv_args::parse_kv(text, None);
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
                    // Ansible takes `role:` for `name:` as well.
                    "name" | "role" => name = Some(v),
                    "public" => public = self.boolean(v, key)?,
                    "tasks_from" => from[0] = Some(self.scalar(v, key)?),
                    "vars_from" => from[1] = Some(self.scalar(v, key)?),
                    "defaults_from" => from[2] = Some(self.scalar(v, key)?),
                    "handlers_from" => from[3] = Some(self.scalar(v, key)?),
                    "rolespec_validate" => validate = self.boolean(v, key)?,
                    _ if ROLE_ARGS.contains(&key) => {}
                    "apply" | "rescuable" if kind == "include_role" => {}
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
        entry.validate = validate;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::playbook::test_support::tree::*;
    use serde_json::{Value as Json, json};

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

    /// Ansible templates a static import's path when it loads the play: inside a role,
    /// `role_path` and the role's defaults are known; a host's variables are not.
    #[test]
    fn import_tasks_paths_may_be_templates_of_what_is_known_at_load() {
        let dir = tree(&[
            ("roles/r/defaults/main.yml", "part: extra\n"),
            (
                "roles/r/tasks/main.yml",
                "- import_tasks: \"{{ role_path }}/tests/{{ part }}.yml\"\n",
            ),
            ("roles/r/tests/extra.yml", "- name: from tests\n  ping:\n"),
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        assert_eq!(names(&play.tasks), ["from tests"]);

        let dir = tree(&[(
            "site.yml",
            "- hosts: all\n  tasks:\n    - import_tasks: \"{{ inventory_hostname }}.yml\"\n",
        )]);
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("import_tasks is resolved when the playbook loads")
                && err.contains("'inventory_hostname' is undefined"),
            "{err}"
        );
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
    - import_tasks: file='tasks/b.yml'
    - include_tasks: file='tasks/b.yml'
",
            ),
        ]);
        let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
        assert_eq!(
            names(&play.tasks),
            [
                "a1",
                "b1",
                "include_tasks",
                "b1",
                "r",
                "b1",
                "include_tasks"
            ]
        );
        assert_eq!(play.tasks[2].args["file"], json!("tasks/b.yml"));
        // Ansible's k=v form, quotes and all (dpkg_selections' `file='x.yaml'`).
        assert_eq!(play.tasks[6].args["file"], json!("tasks/b.yml"));
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
        // The import's vars, tags and when reach every imported play and task.
        let dir = tree(&[
            (
                "site.yml",
                "- import_playbook: x.yml\n  when: go\n  tags: [imp]\n  vars: {a: from_import}\n",
            ),
            (
                "x.yml",
                "- hosts: all\n  vars: {a: own, b: 2}\n  tasks:\n    - ping:\n      when: more\n",
            ),
        ]);
        let pb = load(&dir).unwrap();
        let play = &pb.plays[0];
        assert_eq!(play.vars["a"], json!("from_import"));
        assert_eq!(play.vars["b"], json!(2));
        assert!(play.tags.contains(&"imp".to_string()));
        assert_eq!(play.tasks[0].when, ["go", "more"]);
        assert!(play.tasks[0].tags.contains(&"imp".to_string()));
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
}
