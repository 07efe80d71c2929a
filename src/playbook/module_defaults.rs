//! `module_defaults` on plays, roles, blocks and tasks: arguments a module takes when the
//! task does not give them. Read once at load into levels; matched to the task's module and
//! templated when the task runs, below everything the task writes, as Ansible layers them.

use serde_json::{Map, Value as Json};

use super::loader::Loader;
use crate::yaml::{LoadError, Node, Value};

pub use crate::modules::module_defaults::ModuleDefaultsLevel;

/// Whether any level names an action group, which turbo-play does not resolve yet.
pub fn names_a_group(levels: &[ModuleDefaultsLevel]) -> bool {
    levels
        .iter()
        .flatten()
        .any(|(name, _)| name.starts_with("group/"))
}

impl Loader<'_> {
    /// A `module_defaults` value: a mapping of action names, or a list of them.
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
                level.push((name, defaults));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::module_defaults::defaults_for;
    use serde_json::json;

    fn level(pairs: &[(&str, Json)]) -> ModuleDefaultsLevel {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn the_innermost_entry_naming_the_module_wins_whole() {
        let levels = vec![
            level(&[
                ("file", json!({"mode": "0644"})),
                ("debug", json!({"msg": "outer"})),
            ]),
            level(&[("ansible.builtin.debug", json!({}))]),
        ];
        assert_eq!(defaults_for(&levels, "debug", "debug"), Some(&json!({})));
        assert_eq!(
            defaults_for(&levels, "file", "ansible.legacy.file"),
            Some(&json!({"mode": "0644"}))
        );
        assert_eq!(defaults_for(&levels, "copy", "copy"), None);
        // A collection module matches by its full name only.
        let coll = vec![level(&[("ns.coll.echo", json!({"a": 1}))])];
        assert_eq!(
            defaults_for(&coll, "ns.coll.echo", "ns.coll.echo"),
            Some(&json!({"a": 1}))
        );
        assert!(!names_a_group(&levels));
        assert!(names_a_group(&[level(&[("group/ns.coll.g", json!({}))])]));
    }

    #[test]
    fn a_template_for_the_whole_is_refused_at_load_as_in_ansible() {
        let err = crate::playbook::load_playbook_text(
            std::path::Path::new("site.yml"),
            "- hosts: all\n  module_defaults: '{{ x }}'\n  tasks: []\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("site.yml:2:20") && err.contains("supposed to be a dictionary"),
            "{err}"
        );
        let ok = crate::playbook::load_playbook_text(
            std::path::Path::new("site.yml"),
            "- hosts: all\n  module_defaults: [{file: {mode: '0600'}}, {ping: '{{ p }}'}]\n  tasks: [debug:]\n",
        )
        .unwrap();
        assert_eq!(
            ok.plays[0].tasks[0].keywords.module_defaults,
            vec![level(&[
                ("file", json!({"mode": "0600"})),
                ("ping", json!("{{ p }}"))
            ])]
        );
    }
}
