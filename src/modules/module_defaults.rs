//! `module_defaults` matched to a module and templated when its task runs (the loader
//! reads them into levels): for the executor, and for an action that runs other modules
//! (gather_facts' facts modules), each with its own defaults.

use std::sync::Arc;

use serde_json::Value as Json;

/// One entry of a `module_defaults` level, its name resolved at load as Ansible resolves
/// it: an action's or module's FQCN, or `group/<ns.coll.group>` with the actions the
/// group holds.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultsEntry {
    /// The resolved FQCN, or `group/` and the group's fully qualified name.
    pub key: String,
    /// For a group: the FQCNs of its actions (its extended groups' included).
    pub members: Arc<Vec<String>>,
    /// A mapping, or a template of one.
    pub defaults: Json,
}

impl DefaultsEntry {
    /// An action's (or module's) defaults.
    pub fn action(fqcn: impl Into<String>, defaults: Json) -> DefaultsEntry {
        DefaultsEntry {
            key: fqcn.into(),
            members: Arc::default(),
            defaults,
        }
    }

    fn is_group(&self) -> bool {
        self.key.starts_with("group/")
    }
}

/// One level's `module_defaults` (a play's, a block's, a task's...), in the order written.
pub type ModuleDefaultsLevel = Vec<DefaultsEntry>;

/// The defaults that apply to the action Ansible resolved as `fqcn`, in the order they
/// merge: the levels make one dictionary (a later level's entry replacing an earlier one
/// of the same name, in its place), then each group holding the action gives its
/// defaults, in that order, and the action's own go over them (Ansible's
/// `_get_action_arg_defaults`).
pub fn defaults_for<'l>(levels: &'l [ModuleDefaultsLevel], fqcn: &str) -> Vec<&'l Json> {
    let mut merged: Vec<&'l DefaultsEntry> = Vec::new();
    for entry in levels.iter().flatten() {
        match merged.iter_mut().find(|e| e.key == entry.key) {
            Some(slot) => *slot = entry,
            None => merged.push(entry),
        }
    }
    let groups = merged
        .iter()
        .filter(|e| e.is_group() && e.members.iter().any(|m| m == fqcn));
    let own = merged.iter().filter(|e| e.key == fqcn);
    groups.chain(own).map(|e| &e.defaults).collect()
}

/// The FQCN a module named in code resolves to (`setup`, `ansible.legacy.setup`: ansible-core's
/// own).
pub fn builtin_fqcn(name: &str) -> String {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    if short.contains('.') {
        short.to_string()
    } else {
        format!("ansible.builtin.{short}")
    }
}

/// Ansible's `AnsibleCollectionRef.is_valid_fqcr`: `ns.coll.name` (the name may have
/// dots of its own).
pub fn is_fqcr(name: &str) -> bool {
    let identifier = crate::plugins::catalog::is_identifier;
    let mut parts = name.splitn(3, '.');
    matches!((parts.next(), parts.next(), parts.next()),
        (Some(ns), Some(coll), Some(rest)) if identifier(ns) && identifier(coll)
            && rest.split('.').all(identifier))
}

/// A task's FQCN when the loaders' walk found nothing (a name turbo-play runs itself that
/// no installed ansible-core routes, a templated action): written fully qualified, or
/// one of ansible-core's.
pub fn fallback_fqcn(written: &str, module_name: &str) -> String {
    let written = match written.strip_prefix("ansible.legacy.") {
        Some(short) if super::registry::is_builtin(short) => short,
        _ => written,
    };
    if is_fqcr(written) {
        return written.to_string();
    }
    if is_fqcr(module_name) {
        return module_name.to_string();
    }
    format!("ansible.builtin.{written}")
}

/// Why a module's defaults could not be templated.
#[derive(Debug)]
pub enum DefaultsError {
    Template(crate::template::TemplateError),
    /// Ansible's words for defaults that are no mapping.
    NotADict(String),
}

/// `defaults` (what [`defaults_for`] found for the action written `action`) templated
/// with `vars`: each resolved to a mapping and merged, then only the arguments not in
/// `given` rendered, so that a default a task overrides is never rendered.
pub fn templated_defaults(
    templar: &crate::template::Templar,
    action: &str,
    defaults: &[&Json],
    vars: &minijinja::Value,
    given: &serde_json::Map<String, Json>,
) -> Result<serde_json::Map<String, Json>, DefaultsError> {
    let mut merged = serde_json::Map::new();
    for defaults in defaults {
        let defaults = match defaults {
            Json::String(_) => templar
                .render_value(defaults, vars)
                .map_err(DefaultsError::Template)?,
            other => (*other).clone(),
        };
        let Json::Object(defaults) = defaults else {
            return Err(DefaultsError::NotADict(format!(
                "module_defaults for '{action}' must resolve to a 'dict' not '{}'.",
                crate::template::python_type(&defaults)
            )));
        };
        merged.extend(defaults);
    }
    let missing: serde_json::Map<String, Json> = merged
        .into_iter()
        .filter(|(k, _)| !given.contains_key(k))
        .collect();
    templar
        .render_map(&missing, vars)
        .map_err(DefaultsError::Template)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group(name: &str, members: &[&str], defaults: Json) -> DefaultsEntry {
        DefaultsEntry {
            key: format!("group/{name}"),
            members: Arc::new(members.iter().map(|m| m.to_string()).collect()),
            defaults,
        }
    }

    #[test]
    fn groups_holding_the_action_come_first_then_its_own_defaults() {
        let levels = vec![
            vec![
                DefaultsEntry::action("ns.c.echo", json!({"a": 1})),
                group("ns.c.g", &["ns.c.echo", "ns.c.other"], json!({"g": 1})),
            ],
            vec![group(
                "ansible.builtin.h",
                &["ansible.builtin.ping"],
                json!({}),
            )],
        ];
        assert_eq!(
            defaults_for(&levels, "ns.c.echo"),
            vec![&json!({"g": 1}), &json!({"a": 1})]
        );
        assert_eq!(defaults_for(&levels, "ns.c.other"), vec![&json!({"g": 1})]);
        assert!(defaults_for(&levels, "ns.c.none").is_empty());
    }

    #[test]
    fn an_inner_level_replaces_an_entry_whole() {
        let levels = vec![
            vec![DefaultsEntry::action(
                "ansible.builtin.debug",
                json!({"msg": "a"}),
            )],
            vec![DefaultsEntry::action("ansible.builtin.debug", json!({}))],
        ];
        assert_eq!(
            defaults_for(&levels, "ansible.builtin.debug"),
            vec![&json!({})]
        );
    }

    #[test]
    fn names_in_code_are_ansible_cores() {
        assert_eq!(builtin_fqcn("setup"), "ansible.builtin.setup");
        assert_eq!(
            builtin_fqcn("ansible.legacy.setup"),
            "ansible.builtin.setup"
        );
        assert_eq!(builtin_fqcn("ns.c.facts"), "ns.c.facts");
    }

    #[test]
    fn fully_qualified_names_as_ansible_tells_them() {
        assert!(is_fqcr("ns.coll.name"));
        assert!(is_fqcr("ns.coll.sub.name"));
        assert!(!is_fqcr("ns.name"));
        assert!(!is_fqcr("name"));
        assert!(!is_fqcr("ns.coll.{{ x }}"));
    }

    #[test]
    fn a_task_no_loader_resolves_is_named_as_written_or_as_ansible_cores() {
        assert_eq!(fallback_fqcn("copy", "copy"), "ansible.builtin.copy");
        assert_eq!(
            fallback_fqcn("ansible.legacy.setup", "setup"),
            "ansible.builtin.setup"
        );
        assert_eq!(fallback_fqcn("ns.c.m", "ns.c.m"), "ns.c.m");
        assert_eq!(
            fallback_fqcn("synchronize", "ansible.posix.synchronize"),
            "ansible.posix.synchronize"
        );
    }
}
