//! A task's action: the module it names (`copy:`, `action:`, `local_action:`) and its
//! arguments, parsed and checked against what the module takes.

use serde_json::Value as Json;

use super::keyword_table::{Places, names_at};
use super::loader::{Inherited, Loader};
use crate::kv_args::{FREE_FORM_OPTIONS, parse_kv};
use crate::modules::{self, Module, closest};
use crate::yaml::{LoadError, Node, Span, Value};

/// A task's module arguments as written: the value under the module key, the text after
/// the module name in `action: copy src=a`, or the rest of an `action:` mapping.
pub(super) enum ActionArgs<'n> {
    Node(&'n Node),
    Text(String),
    /// `action: {module: copy src=a, dest: b, args: {...}}`: the mapping's other keys, the
    /// `k=v` text after the module's name (over them), its `args:` (over both).
    Mapping {
        pairs: Vec<&'n (Node, Node)>,
        kv: String,
    },
}

pub(super) fn module_list() -> String {
    modules::all()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Loader<'_> {
    pub(super) fn set_action<'n>(
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
    ///
    /// `Err` is Ansible's message for a name its routing refuses (removed, a loop).
    pub(super) fn find_module(
        &self,
        name: &str,
        inherited: &Inherited,
    ) -> Result<Option<&'static dyn Module>, String> {
        if let Some(plugin) = self.action_plugin(name, inherited) {
            return Ok(Some(plugin));
        }
        if let Some(routed) = self.routed_module(name, inherited)? {
            return Ok(Some(routed));
        }
        Ok(self.module_by_name(name, inherited))
    }

    /// A name collection routing sends elsewhere: an action redirected to another action
    /// plugin, a module whose routing names the action plugin that runs it, or a module
    /// redirected to another (`None` when routing changes nothing).
    fn routed_module(
        &self,
        name: &str,
        inherited: &Inherited,
    ) -> Result<Option<&'static dyn Module>, String> {
        use super::routing::RouteKind;
        let role_dir = inherited.role.as_ref().map(|r| r.path.as_path());
        let collections = &inherited.collections;
        let module = self.resolve_plugin(RouteKind::Module, name, collections, role_dir, true)?;
        let module_name = module.as_ref().map_or(name, |m| m.fqcn.as_str());
        if let Some(action) =
            self.resolve_plugin(RouteKind::Action, name, collections, role_dir, true)?
            && action.redirected
            && let Some(plugin) = self.plugin_at(&action.fqcn, module_name, inherited)
        {
            return Ok(Some(plugin));
        }
        let Some(module) = module else {
            return Ok(None);
        };
        if let Some(via) = &module.action_plugin
            && let Some(action) =
                self.resolve_plugin(RouteKind::Action, via, collections, role_dir, true)?
            && let Some(plugin) = self.plugin_at(&action.fqcn, &module.fqcn, inherited)
        {
            return Ok(Some(plugin));
        }
        Ok(if module.redirected {
            self.module_by_name(&module.fqcn, inherited)
        } else {
            None
        })
    }

    /// The action plugin `fqcn` (a collection's or a legacy one) running module `module`.
    fn plugin_at(
        &self,
        fqcn: &str,
        module: &str,
        inherited: &Inherited,
    ) -> Option<&'static dyn Module> {
        let file = self
            .shared
            .plugins
            .find(crate::plugins::Kind::Action, fqcn, &[])?;
        Some(crate::modules::action_plugin::ActionPlugin::shared(
            module,
            file,
            self.module_search(inherited),
        ))
    }

    /// A module by name, no routing followed: a library module, Ansible's own, a
    /// collection's.
    fn module_by_name(&self, name: &str, inherited: &Inherited) -> Option<&'static dyn Module> {
        let role_dir = inherited.role.as_ref().map(|r| r.path.as_path());
        self.shared
            .library_module(name, &self.playbook_dir, role_dir)
            .or_else(|| modules::find(name))
            .or_else(|| {
                self.shared
                    .collection_module(name, &self.playbook_dir, role_dir)
            })
            .or_else(|| {
                // A short name under `collections:` may be one of theirs.
                (!name.contains('.')).then_some(())?;
                inherited.collections.iter().find_map(|collection| {
                    self.shared.collection_module(
                        &format!("{collection}.{name}"),
                        &self.playbook_dir,
                        role_dir,
                    )
                })
            })
            .or_else(|| {
                let role = inherited.role.as_ref()?;
                let fqcn = super::collections::enclosing_collection_module(&role.path, name)?;
                self.shared
                    .collection_module(&fqcn, &self.playbook_dir, role_dir)
                    .or_else(|| Some(modules::collection_module(&fqcn)))
            })
    }

    /// A Python action plugin by the name a task uses, found as Ansible's action loader
    /// finds it (the task's collections, then the playbook's, roles' and configured
    /// `action_plugins`): it comes before a module of that name, whose run it decides. A
    /// plugin that only re-exports one of Ansible's actions is that action.
    fn action_plugin(&self, name: &str, inherited: &Inherited) -> Option<&'static dyn Module> {
        use crate::modules::action_plugin::{ActionPlugin, reexported_builtin};
        let file =
            self.shared
                .plugins
                .find(crate::plugins::Kind::Action, name, &inherited.collections)?;
        let role_dir = inherited.role.as_ref().map(|r| r.path.as_path());
        let source = std::fs::read_to_string(&file.path).unwrap_or_default();
        match reexported_builtin(&source).as_deref() {
            // The normal action runs the module of the task's name.
            Some("normal") => {
                if let Some(module) = self
                    .shared
                    .library_module(name, &self.playbook_dir, role_dir)
                    .or_else(|| modules::find(name))
                    .or_else(|| {
                        self.shared
                            .collection_module(name, &self.playbook_dir, role_dir)
                    })
                {
                    return Some(module);
                }
            }
            Some(builtin) if modules::is_implemented(builtin) => return modules::find(builtin),
            _ => {}
        }
        Some(ActionPlugin::shared(
            name,
            file,
            self.module_search(inherited),
        ))
    }

    /// Where an action plugin's `_execute_module` looks for the modules it runs.
    fn module_search(&self, inherited: &Inherited) -> crate::modules::action_plugin::ModuleSearch {
        use crate::modules::python::finding;
        let role_dir = inherited.role.as_ref().map(|r| r.path.as_path());
        let mut collection_roots = vec![self.playbook_dir.join("collections")];
        collection_roots.extend(self.shared.collections_path.iter().cloned());
        let mut module_utils: Vec<std::path::PathBuf> = role_dir
            .map(|r| r.join("module_utils"))
            .into_iter()
            .chain(std::iter::once(self.playbook_dir.join("module_utils")))
            .chain(self.shared.module_utils.iter().cloned())
            .filter(|d| d.is_dir())
            .collect();
        module_utils.dedup();
        crate::modules::action_plugin::ModuleSearch {
            library: finding::library_dirs(role_dir, &self.playbook_dir, &self.shared.library),
            collection_roots,
            module_utils,
            collections: inherited.collections.clone(),
        }
    }

    pub(super) fn unknown_action(&self, key: &str, span: Span) -> LoadError {
        let suggestion = modules::suggest(key).or_else(|| closest(key, names_at(Places::TASK)));
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
    pub(super) fn action_keyword<'n>(
        &self,
        node: &'n Node,
        inherited: &Inherited,
    ) -> Result<(String, &'static dyn Module, ActionArgs<'n>), LoadError> {
        let (written, args) = match &node.value {
            Value::Str(s) => {
                let s = s.trim_start();
                // The name may itself be a template with spaces inside (`{{ prefix }}file`).
                let end = crate::kv_args::split_args(s)
                    .first()
                    .map_or(s.len(), |token| token.end);
                let (name, rest) = s.split_at(end);
                (
                    name.to_string(),
                    ActionArgs::Text(rest.trim_start().to_string()),
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
                // `module:` may carry arguments after the name, as `action: copy a=b`.
                let module = module.trim_start();
                let end = crate::kv_args::split_args(module)
                    .first()
                    .map_or(module.len(), |token| token.end);
                let (name, kv) = module.split_at(end);
                (
                    name.to_string(),
                    ActionArgs::Mapping {
                        pairs: rest,
                        kv: kv.trim_start().to_string(),
                    },
                )
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
        // A templated name is rendered, and its module found, per host when the task runs.
        if modules::templated_action::is_templated(&written) {
            return Ok((written, &modules::templated_action::TemplatedAction, args));
        }
        let module = self
            .find_module(&written, inherited)
            .map_err(|message| self.err(node.span, message, None))?
            .ok_or_else(|| self.unknown_action(&written, node.span))?;
        Ok((written, module, args))
    }

    pub(super) fn module_args(
        &self,
        module: &dyn Module,
        args: ActionArgs,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        match args {
            ActionArgs::Node(node) => match &node.value {
                Value::Null => Ok(serde_json::Map::new()),
                Value::Map(entries) => self.pairs(entries.iter()),
                Value::Str(s) => self.free_text(module, s),
                // `command: 42` is a (strange) free-form command line.
                Value::Int(_) | Value::Float(_) | Value::Bool(_) if module.caps().free_form => {
                    self.free_text(module, &node.scalar_to_string().unwrap_or_default())
                }
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
            ActionArgs::Text(text) => self.free_text(module, &text),
            ActionArgs::Mapping { pairs, kv } => {
                let nested = pairs.iter().find(|(k, _)| k.as_str() == Some("args"));
                let mut out = self.pairs(
                    pairs
                        .iter()
                        .copied()
                        .filter(|(k, _)| k.as_str() != Some("args")),
                )?;
                if !kv.is_empty() {
                    out.extend(self.free_text(module, &kv)?);
                }
                match nested.map(|(_, v)| v) {
                    Some(v) if v.as_str().is_some() => {
                        out.extend(self.free_text(module, v.as_str().unwrap_or_default())?)
                    }
                    Some(v) => out.extend(self.pairs(v.as_map().unwrap_or_default().iter())?),
                    None => {}
                }
                Ok(out)
            }
        }
    }

    pub(super) fn pairs<'n>(
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

    pub(super) fn free_text(
        &self,
        module: &dyn Module,
        text: &str,
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
        // Raw params of a module that takes none fail the task when it runs, unless they
        // are one template making the whole mapping (`add_host: "{{ host_data }}"`), as
        // Ansible's task finalizer decides.
        if !parsed.raw.is_empty() {
            out.insert(RAW_PARAMS.into(), Json::String(parsed.raw));
        }
        for (k, v) in parsed.pairs {
            out.insert(k, Json::String(v));
        }
        Ok(out)
    }
}

/// The name raw params travel under in a task's arguments.
pub const RAW_PARAMS: &str = "_raw_params";

/// Ansible's `is_possibly_all_template`: the whole text is one `{{ }}` expression.
pub fn is_possibly_all_template(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("{{") && t.ends_with("}}") && t.len() >= 4
}

#[cfg(test)]
mod tests {
    use crate::playbook::test_support::text::*;
    use serde_json::{Value as Json, json};

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
        // A templated name waits for the host's variables; its arguments are k=v already.
        let t = task("action: \"{{ prefix }}file path=/x state=absent\"");
        assert_eq!(t.action, "{{ prefix }}file");
        assert!(crate::modules::templated_action::is_stand_in(t.module));
        assert_eq!(
            Json::Object(t.args),
            json!({"path": "/x", "state": "absent"})
        );
        let t = task("action:\n  module: '{{ m }}'\n  msg: hi");
        assert_eq!(t.action, "{{ m }}");
        assert!(crate::modules::templated_action::is_stand_in(t.module));
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
        // Raw params fail the task when it runs, as in Ansible.
        assert!(load(&play("    - file: /tmp/x\n")).is_ok());
        let e = err(&play("    - copy: [1]\n"));
        assert_eq!(
            e.message,
            "arguments of copy must be a mapping or a `key=value` string, got a list"
        );
    }
}

#[cfg(test)]
mod plugin_tests {
    use crate::playbook::test_support::tree::{load, tree};

    const PLUGIN: &str = "from ansible.plugins.action import ActionBase\n\nclass ActionModule(ActionBase):\n    def run(self, tmp=None, task_vars=None):\n        return {}\n";

    #[test]
    fn action_plugins_resolve_before_modules_as_ansibles_loader_finds_them() {
        let dir = tree(&[
            (
                "site.yml",
                "- hosts: all\n  roles: [r]\n  tasks:\n    - mine: {a: 1}\n    - debug: msg=x\n    - ansible.builtin.debug: msg=x\n    - alias: msg=x\n    - ns.coll.act:\n    - {block: [{name: short, act: }], collections: [ns.coll]}\n    - role_act:\n",
            ),
            ("action_plugins/mine.py", PLUGIN),
            // A playbook's own debug takes the place of Ansible's, but not of
            // ansible.builtin.debug.
            ("action_plugins/debug.py", PLUGIN),
            (
                "action_plugins/alias.py",
                "from ansible.plugins.action.debug import ActionModule\n\nassert ActionModule\n",
            ),
            (
                "collections/ansible_collections/ns/coll/plugins/action/act.py",
                PLUGIN,
            ),
            ("roles/r/tasks/main.yml", "- role_act:\n"),
            ("roles/r/action_plugins/role_act.py", PLUGIN),
        ]);
        let pb = load(&dir).unwrap();
        let tasks: Vec<_> = pb.plays[0].tasks.iter().filter(|t| !t.implicit).collect();
        let plugin = |i: usize| tasks[i].module.caps().controller_action;
        // The role's task first, then the play's.
        assert_eq!(tasks[0].action, "role_act");
        assert!(plugin(0));
        assert_eq!(tasks[1].action, "mine");
        assert!(plugin(1));
        assert_eq!(tasks[1].module.fqcn(), "ansible.legacy.mine");
        assert!(plugin(2), "a playbook's debug plugin");
        assert!(!plugin(3), "ansible.builtin.debug stays Ansible's");
        assert_eq!(tasks[4].action, "alias");
        assert!(!plugin(4), "a re-export of debug is debug");
        assert_eq!(tasks[4].module.name(), "debug");
        assert!(plugin(5));
        assert_eq!(tasks[5].module.fqcn(), "ns.coll.act");
        assert!(plugin(6), "a short name under collections:");
        // A role's plugins are visible to the play's tasks once the role loaded.
        assert!(plugin(7));
    }
}
