//! `module_defaults` on plays, roles, blocks and tasks: arguments a module takes when the
//! task does not give them. Read once at load into levels; matched to the task's module and
//! templated when the task runs, below everything the task writes, as Ansible layers them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value as Json};

use super::loader::Loader;
use super::resolve::is_fqcr;
use super::routing::RouteKind;
use crate::yaml::{LoadError, Node, Value};

pub use crate::modules::module_defaults::{DefaultsEntry, ModuleDefaultsLevel};

/// ansible.cfg's `validate_action_group_metadata` (on unless turned off): a group's
/// malformed `metadata` is warned about.
static VALIDATE_GROUP_METADATA: AtomicBool = AtomicBool::new(true);

/// Sets `VALIDATE_ACTION_GROUP_METADATA` for the run (the CLI installs it).
pub fn set_validate_group_metadata(on: bool) {
    VALIDATE_GROUP_METADATA.store(on, Ordering::Relaxed);
}

impl Loader<'_> {
    /// A `module_defaults` value: a mapping of action names, or a list of them, each name
    /// resolved as Ansible resolves it at load (an action or group it cannot resolve is
    /// refused there, as in Ansible).
    pub(super) fn module_defaults(&self, node: &Node) -> Result<ModuleDefaultsLevel, LoadError> {
        let refuse = |at: &Node| {
            self.err(
                at.span,
                "The field 'module_defaults' is supposed to be a dictionary or list of dictionaries, \
                 the keys of which must be static action, module, or group names. Only the values \
                 may contain templates. For example: {'ping': \"{{ ping_defaults }}\"}",
                Some("write e.g. `module_defaults: {file: {mode: '0644'}}`".into()),
            )
        };
        // Not the task's role: module_defaults ignore where they are written, as in Ansible.
        let role_dir: Option<std::path::PathBuf> = None;
        let mut level = ModuleDefaultsLevel::new();
        let mut take = |map: &Node| -> Result<(), LoadError> {
            let Value::Map(entries) = &map.value else {
                return Err(refuse(map));
            };
            for (key, defaults) in entries {
                let Some(name) = key.scalar_to_string() else {
                    return Err(refuse(key));
                };
                let defaults = match defaults.to_json() {
                    Json::Null => Json::Object(Map::new()),
                    other => other,
                };
                let mut put =
                    |entry: DefaultsEntry| match level.iter_mut().find(|e| e.key == entry.key) {
                        Some(slot) => *slot = entry,
                        None => level.push(entry),
                    };
                if let Some(group) = name.strip_prefix("group/") {
                    let (fq, members) = self
                        .resolve_group(group, true, role_dir.as_deref())
                        .map_err(|message| self.err(key.span, message, None))?;
                    put(DefaultsEntry {
                        key: format!("group/{fq}"),
                        members,
                        defaults,
                    });
                    continue;
                }
                // Not fully qualified: ansible.legacy's, whose defaults ansible.builtin's
                // action of the name takes too.
                let qualified = if name.split('.').count() < 3 {
                    format!("ansible.legacy.{name}")
                } else {
                    name.clone()
                };
                match self.resolve_defaults_action(&qualified, true, role_dir.as_deref()) {
                    Ok(Some(fqcn)) => put(DefaultsEntry::action(fqcn, defaults.clone())),
                    Ok(None) => {}
                    // Checked again once the play's roles are loaded (see
                    // `check_unresolved_defaults`); a library module would be this.
                    Err(message) if qualified.starts_with("ansible.legacy.") => {
                        let error = self.err(key.span, message, None);
                        let short = qualified["ansible.legacy.".len()..].to_string();
                        self.shared
                            .unresolved_defaults
                            .borrow_mut()
                            .push((short, error));
                        put(DefaultsEntry::action(qualified.clone(), defaults.clone()));
                    }
                    Err(message) => return Err(self.err(key.span, message, None)),
                }
                if let Some(short) = qualified.strip_prefix("ansible.legacy.")
                    && let Ok(Some(fqcn)) = self.resolve_defaults_action(
                        &format!("ansible.builtin.{short}"),
                        false,
                        role_dir.as_deref(),
                    )
                {
                    put(DefaultsEntry::action(fqcn, defaults));
                }
            }
            Ok(())
        };
        match &node.value {
            Value::Null => {}
            Value::Map(_) => take(node)?,
            Value::Seq(items) => {
                for item in items {
                    take(item)?;
                }
            }
            _ => return Err(refuse(node)),
        }
        Ok(level)
    }

    /// A `module_defaults` name's FQCN (Ansible's `_resolve_action`): the module's, unless
    /// an action plugin of the name resolves and the module's routing names none.
    fn resolve_defaults_action(
        &self,
        name: &str,
        mandatory: bool,
        role_dir: Option<&std::path::Path>,
    ) -> Result<Option<String>, String> {
        let resolve = |kind| {
            self.resolve_plugin(kind, name, &[], role_dir, mandatory)
                .or_else(|e| if mandatory { Err(e) } else { Ok(None) })
        };
        let found = match resolve(RouteKind::Module)? {
            Some(module) if module.action_plugin.is_none() => {
                Some(resolve(RouteKind::Action)?.unwrap_or(module))
            }
            Some(module) => Some(module),
            None => resolve(RouteKind::Action)?,
        };
        match found {
            Some(found) => Ok(Some(found.fqcn)),
            None if name
                .strip_prefix("ansible.legacy.")
                .is_some_and(|short| self.in_a_role_library(short)) =>
            {
                Ok(Some(name.to_string()))
            }
            None if mandatory => Err(format!(
                "Could not resolve action {name} in module_defaults"
            )),
            None => Ok(None),
        }
    }

    /// Whether a role loaded so far has module `short` in its `library/`, which Ansible's
    /// module loader searches from the role's load on.
    fn in_a_role_library(&self, short: &str) -> bool {
        let libraries: Vec<std::path::PathBuf> = self
            .shared
            .plugins
            .roots()
            .iter()
            .map(|root| root.join("library"))
            .collect();
        crate::modules::python::finding::library_module(short, &libraries).is_some()
    }

    /// The `module_defaults` names no library had when read, checked once the play's
    /// roles are loaded: one still found nowhere fails the load, as in Ansible.
    pub(super) fn check_unresolved_defaults(&self) -> Result<(), LoadError> {
        let pending = std::mem::take(&mut *self.shared.unresolved_defaults.borrow_mut());
        for (short, error) in pending {
            if !self.in_a_role_library(&short) {
                return Err(error);
            }
        }
        Ok(())
    }

    /// Action group `name` (short names are ansible.builtin's) and the FQCNs of its
    /// actions and of its extended groups', as Ansible's `_resolve_group` (cached per
    /// play). A group not found is refused when `mandatory`, else empty.
    pub(super) fn resolve_group(
        &self,
        name: &str,
        mandatory: bool,
        role_dir: Option<&std::path::Path>,
    ) -> Result<(String, Arc<Vec<String>>), String> {
        let (collection, fq) = if is_fqcr(name) {
            let mut parts = name.splitn(3, '.');
            let collection = format!(
                "{}.{}",
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default()
            );
            (collection, name.to_string())
        } else {
            (
                "ansible.builtin".to_string(),
                format!("ansible.builtin.{name}"),
            )
        };
        if let Some(members) = self.shared.play.borrow().groups.get(&fq) {
            return Ok((fq, members.clone()));
        }
        let missing = || {
            if mandatory {
                Err(format!(
                    "Error loading module_defaults: could not resolve the module_defaults group {fq}"
                ))
            } else {
                Ok((fq.clone(), Arc::new(Vec::new())))
            }
        };
        let Some(meta) = self.runtime_meta(&collection) else {
            return missing();
        };
        let resource = fq.strip_prefix(&format!("{collection}.")).unwrap_or(&fq);
        let Some(entries) = meta
            .action_group(&fq)
            .or_else(|| meta.action_group(resource))
        else {
            return missing();
        };
        let mut members = Vec::new();
        let mut extends: Vec<String> = Vec::new();
        let mut found_metadata = false;
        for entry in entries {
            let Json::String(action) = entry else {
                warn_on_metadata(entry, found_metadata, &fq);
                if let Some(Json::Object(metadata)) = entry.get("metadata") {
                    found_metadata = true;
                    extends = match metadata.get("extend_group") {
                        Some(Json::String(one)) => vec![one.clone()],
                        Some(Json::Array(many)) => many
                            .iter()
                            .filter_map(|g| g.as_str().map(str::to_string))
                            .collect(),
                        _ => Vec::new(),
                    };
                }
                continue;
            };
            let action = if is_fqcr(action) {
                action.clone()
            } else {
                format!("{collection}.{action}")
            };
            if let Ok(Some(fqcn)) = self.resolve_defaults_action(&action, false, role_dir) {
                members.push(fqcn);
            }
        }
        // Cached before the groups it extends resolve, so groups extending each other end.
        self.shared
            .play
            .borrow_mut()
            .groups
            .insert(fq.clone(), Arc::new(members.clone()));
        for extended in extends {
            let extended = if is_fqcr(&extended) {
                extended
            } else {
                format!("{collection}.{extended}")
            };
            let (_, more) = self.resolve_group(&extended, false, role_dir)?;
            members.extend(more.iter().cloned());
        }
        let members = Arc::new(members);
        self.shared
            .play
            .borrow_mut()
            .groups
            .insert(fq.clone(), members.clone());
        Ok((fq, members))
    }
}

/// Ansible's warning for a group entry that is not a name and not a well-formed
/// `metadata` mapping (`_validate_action_group_metadata`).
fn warn_on_metadata(entry: &Json, found_metadata: bool, group: &str) {
    if !VALIDATE_GROUP_METADATA.load(Ordering::Relaxed) {
        return;
    }
    let mut problems: Vec<String> = Vec::new();
    let metadata_only =
        matches!(entry, Json::Object(m) if m.len() == 1 && m.contains_key("metadata"));
    if !metadata_only {
        let mut keys: Vec<String> = match entry {
            Json::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        keys.sort();
        problems.push(format!(
            "The only expected key is metadata, but got keys: {}",
            keys.join(", ")
        ));
    } else {
        if found_metadata {
            problems.push("The group contains multiple metadata entries.".into());
        }
        match entry.get("metadata") {
            Some(Json::Object(metadata)) => {
                let unexpected: Vec<&str> = metadata
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "extend_group")
                    .collect();
                if !unexpected.is_empty() {
                    problems.push(format!(
                        "The metadata contains unexpected keys: {}",
                        unexpected.join(", ")
                    ));
                }
                if let Some(value) = metadata.get("extend_group")
                    && !matches!(value, Json::String(_) | Json::Array(_))
                {
                    problems.push(format!(
                        "The metadata contains unexpected key types: extend_group is {} \
                         (expected type list)",
                        crate::template::python_repr_json(value)
                    ));
                }
            }
            other => problems.push(format!(
                "The metadata is not a dictionary. Got {}",
                crate::template::python_repr_json(other.unwrap_or(&Json::Null))
            )),
        }
    }
    if !problems.is_empty() {
        crate::yaml::push_load_warning(format!(
            "Invalid metadata was found for action_group {group} while loading module_defaults. {}",
            problems.join(" ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::modules::module_defaults::defaults_for;
    use serde_json::json;

    fn load(text: &str) -> Result<crate::playbook::Playbook, String> {
        crate::playbook::load_playbook_text(std::path::Path::new("site.yml"), text)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn names_are_keyed_by_what_they_resolve_to() {
        let book = load(
            "- hosts: all\n  module_defaults:\n    file: {mode: '0644'}\n    debug: {msg: outer}\n  tasks:\n  - debug:\n    module_defaults:\n      ansible.builtin.debug: {}\n  - ansible.legacy.file: {path: /x}\n  - copy: {dest: /x}\n",
        )
        .unwrap();
        let tasks = &book.plays[0].tasks;
        assert_eq!(tasks[0].resolved_action, "ansible.builtin.debug");
        let debug = defaults_for(
            &tasks[0].keywords.module_defaults,
            &tasks[0].resolved_action,
        );
        assert_eq!(debug, vec![&json!({})]);
        assert_eq!(tasks[1].resolved_action, "ansible.builtin.file");
        let file = defaults_for(
            &tasks[1].keywords.module_defaults,
            &tasks[1].resolved_action,
        );
        assert_eq!(file, vec![&json!({"mode": "0644"})]);
        assert!(
            defaults_for(
                &tasks[2].keywords.module_defaults,
                &tasks[2].resolved_action
            )
            .is_empty()
        );
    }

    /// ansible-core 2.21 has no yum module: its action routing makes `yum` the dnf
    /// action, so yum's defaults are dnf's and a yum task takes dnf's.
    #[test]
    fn yum_is_the_dnf_action() {
        let book = load(
            "- hosts: all\n  module_defaults:\n    yum: {name: a}\n  tasks:\n  - yum: {state: latest}\n  - dnf: {state: latest}\n",
        )
        .unwrap();
        let tasks = &book.plays[0].tasks;
        assert_eq!(tasks[0].resolved_action, "ansible.builtin.dnf");
        assert_eq!(tasks[1].resolved_action, "ansible.builtin.dnf");
        for task in tasks {
            let found = defaults_for(&task.keywords.module_defaults, &task.resolved_action);
            assert_eq!(found, vec![&json!({"name": "a"})]);
        }
    }

    #[test]
    fn an_action_no_loader_resolves_is_refused_at_load_as_in_ansible() {
        let err =
            load("- hosts: all\n  module_defaults:\n    fiel: {}\n  tasks: []\n").unwrap_err();
        assert!(
            err.contains("site.yml:3:5")
                && err.contains("Could not resolve action ansible.legacy.fiel in module_defaults"),
            "{err}"
        );
    }

    #[test]
    fn a_template_for_the_whole_is_refused_at_load_as_in_ansible() {
        let err = load("- hosts: all\n  module_defaults: '{{ x }}'\n  tasks: []\n").unwrap_err();
        assert!(
            err.contains("site.yml:2:20") && err.contains("supposed to be a dictionary"),
            "{err}"
        );
        let ok = load(
            "- hosts: all\n  module_defaults: [{file: {mode: '0600'}}, {ping: '{{ p }}'}]\n  tasks: [debug:]\n",
        )
        .unwrap();
        let keys: Vec<(String, serde_json::Value)> = ok.plays[0].tasks[0].keywords.module_defaults
            [0]
        .iter()
        .map(|e| (e.key.clone(), e.defaults.clone()))
        .collect();
        assert_eq!(
            keys,
            vec![
                ("ansible.builtin.file".to_string(), json!({"mode": "0600"})),
                ("ansible.builtin.ping".to_string(), json!("{{ p }}"))
            ]
        );
    }
}
