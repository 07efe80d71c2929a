//! Warnings and deprecations as ansible-playbook 2.21 shows them: on stderr, before the
//! result line they came with, each text once per run (Ansible's display deduplicates at
//! display time, so registered results keep every copy), `[DEPRECATION WARNING]: ...` in
//! the words of Ansible's `get_deprecation_message_with_plugin_info`, preceded once by the
//! note on how to turn them off, and none at all under `deprecation_warnings = False`.
//! Results' own `warnings`/`deprecations` leave the dump: the lines above said them.

use std::collections::HashSet;

use serde_json::{Map, Value};

/// The note Ansible's display prints (as a warning, so once) before any deprecation.
const DISABLE_NOTE: &str =
    "Deprecation warnings can be disabled by setting `deprecation_warnings=False` in ansible.cfg.";

/// What a line is, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Warning,
    Deprecation,
}

/// The run's display state: which texts were already shown.
#[derive(Debug)]
pub struct Warnings {
    deprecations_enabled: bool,
    warned: HashSet<String>,
    deprecated: HashSet<String>,
}

impl Warnings {
    /// `deprecations_enabled`: ansible.cfg's `deprecation_warnings`
    /// (`ANSIBLE_DEPRECATION_WARNINGS`), true unless turned off.
    pub fn new(deprecations_enabled: bool) -> Self {
        Warnings {
            deprecations_enabled,
            warned: HashSet::new(),
            deprecated: HashSet::new(),
        }
    }

    /// `[WARNING]: text` to print, or nothing when the same text was printed before.
    /// The text ends in its line break (two after a message of several lines).
    pub fn warning(&mut self, msg: &str) -> Option<String> {
        let text = format!("[WARNING]: {}", format_message(msg));
        self.warned.insert(text.clone()).then_some(text)
    }

    /// The lines one deprecation (a result's entry, as registered) prints: the note the
    /// first time, then the deprecation unless it was printed before.
    pub fn deprecation(&mut self, entry: &Value) -> Vec<(Kind, String)> {
        if !self.deprecations_enabled {
            return Vec::new();
        }
        let mut lines = Vec::new();
        if let Some(note) = self.warning(DISABLE_NOTE) {
            lines.push((Kind::Warning, note));
        }
        let text = format!(
            "[DEPRECATION WARNING]: {}",
            format_message(&deprecation_message(entry))
        );
        if self.deprecated.insert(text.clone()) {
            lines.push((Kind::Deprecation, text));
        }
        lines
    }

    /// The lines a deprecation already in Ansible's words prints (the command line's own,
    /// such as `-o`'s): the note the first time, then the text unless printed before.
    pub fn deprecation_text(&mut self, text: &str) -> Vec<(Kind, String)> {
        if !self.deprecations_enabled {
            return Vec::new();
        }
        let mut lines = Vec::new();
        if let Some(note) = self.warning(DISABLE_NOTE) {
            lines.push((Kind::Warning, note));
        }
        let text = format!("[DEPRECATION WARNING]: {}", format_message(text));
        if self.deprecated.insert(text.clone()) {
            lines.push((Kind::Deprecation, text));
        }
        lines
    }

    /// The lines a result's `warnings` and `deprecations` print, in Ansible's order:
    /// every warning, then every deprecation.
    pub fn from_result(&mut self, data: &Map<String, Value>) -> Vec<(Kind, String)> {
        let mut lines = Vec::new();
        if let Some(Value::Array(warnings)) = data.get("warnings") {
            for warning in warnings {
                let msg = match warning {
                    Value::String(s) => s.clone(),
                    other => crate::modules::spec::python_text(other),
                };
                if let Some(text) = self.warning(&msg) {
                    lines.push((Kind::Warning, text));
                }
            }
        }
        if let Some(Value::Array(deprecations)) = data.get("deprecations") {
            for entry in deprecations {
                lines.extend(self.deprecation(entry));
            }
        }
        lines
    }
}

/// The result without what the warning lines already said (Ansible's `_dump_results`
/// pops both keys).
pub fn without_warnings(data: &Map<String, Value>) -> Option<Map<String, Value>> {
    if !data.contains_key("warnings") && !data.contains_key("deprecations") {
        return None;
    }
    let mut copy = data.clone();
    copy.remove("warnings");
    copy.remove("deprecations");
    Some(copy)
}

/// Ansible's `format_event`: the message stripped, ending in one line break, or in a blank
/// line when it has several lines.
fn format_message(msg: &str) -> String {
    let msg = msg.trim();
    if msg.contains('\n') {
        format!("{msg}\n\n")
    } else {
        format!("{msg}\n")
    }
}

/// Who deprecated something: a plugin's or collection's resolved name and the plugin's
/// type (`None` for a collection, or when nobody could be told).
struct Deprecator<'a> {
    resolved_name: Option<&'a str>,
    plugin_type: Option<&'a str>,
}

/// A registered deprecation (`{msg, version | date, collection_name, deprecator}`, or an
/// older module's `{msg, version, collection_name}`) in Ansible's displayed words.
pub fn deprecation_message(entry: &Value) -> String {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    let msg = match entry.get("msg") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => crate::modules::spec::python_text(other),
        None => String::new(),
    };
    let deprecator = match entry.get("deprecator") {
        Some(Value::Object(d)) => Some(Deprecator {
            resolved_name: d.get("resolved_name").and_then(Value::as_str),
            plugin_type: d.get("type").and_then(Value::as_str),
        }),
        // `deprecator_from_collection_name`: a collection, no plugin.
        _ => text("collection_name")
            .filter(|c| !c.is_empty())
            .map(|c| Deprecator {
                resolved_name: Some(c),
                plugin_type: None,
            }),
    };
    let version = entry.get("version").and_then(scalar_text);
    let date = text("date");
    join_sentences(&msg, &removal_sentence(deprecator.as_ref(), version, date))
}

/// A version as Python's f-string shows it (a number stays a number).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(crate::modules::spec::python_text(other)),
    }
}

/// `get_deprecation_message_with_plugin_info`'s second sentence, for a deprecation not
/// yet removed.
fn removal_sentence(
    deprecator: Option<&Deprecator>,
    version: Option<String>,
    date: Option<&str>,
) -> String {
    let (collection, mut plugin) = match deprecator {
        Some(Deprecator {
            resolved_name: Some(name),
            plugin_type: Some(kind),
        }) => {
            let kind_name = if *kind == "module" {
                kind.to_string()
            } else {
                format!("{kind} plugin")
            };
            if *name == "ansible.builtin" {
                (Some(name.to_string()), format!("the {kind_name} API"))
            } else {
                let parts: Vec<&str> = name.split('.').collect();
                let plugin_name = parts.last().copied().unwrap_or_default();
                let collection = (parts.len() > 2).then(|| parts[..2].join("."));
                (collection, format!("{kind_name} '{plugin_name}'"))
            }
        }
        // A collection's resolved name without a type, or nobody.
        Some(d) => (d.resolved_name.map(str::to_string), String::new()),
        None => (None, String::new()),
    };
    if collection.is_some() && !plugin.is_empty() {
        plugin.push_str(" in");
    }
    let collection_part = match collection.as_deref() {
        Some("ansible.builtin") => "ansible-core".to_string(),
        Some(c) => format!("collection '{c}'"),
        None => String::new(),
    };
    let when = match (&collection, date, version) {
        (None, _, _) => "in the future".to_string(),
        (Some(_), Some(date), _) => format!("in a release after {date}"),
        (Some(_), None, Some(version)) => format!("version {version}"),
        (Some(_), None, None) => "in a future release".to_string(),
    };
    let from = if plugin.is_empty() && collection_part.is_empty() {
        ""
    } else {
        "from"
    };
    let parts = [
        "This feature will be removed",
        from,
        &plugin,
        &collection_part,
        &when,
    ];
    let mut sentence = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    sentence.push('.');
    sentence
}

/// Ansible's `join_sentences`: each ends in a full stop (or `!`/`?`), joined by a space.
fn join_sentences(first: &str, second: &str) -> String {
    let close = |s: &str| {
        let s = s.trim().to_string();
        if !s.is_empty() && !s.ends_with(['!', '?', '.']) {
            s + "."
        } else {
            s
        }
    };
    let (first, second) = (close(first), close(second));
    match (first.is_empty(), second.is_empty()) {
        (false, true) => first,
        (true, _) => second,
        (false, false) => format!("{first} {second}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deprecations_read_as_ansible_words_them() {
        let module = json!({"resolved_name": "ansible.legacy.warner", "type": "module"});
        let cases = [
            (
                json!({"msg": "old thing", "version": "2.99", "deprecator": module}),
                "old thing. This feature will be removed from module 'warner' in collection 'ansible.legacy' version 2.99.",
            ),
            (
                json!({"msg": "dated thing", "date": "2030-01-01", "deprecator": module}),
                "dated thing. This feature will be removed from module 'warner' in collection 'ansible.legacy' in a release after 2030-01-01.",
            ),
            (
                json!({"msg": "c", "version": "3.0.0", "deprecator": {"resolved_name": "acme.tools", "type": null}}),
                "c. This feature will be removed from collection 'acme.tools' version 3.0.0.",
            ),
            (
                json!({"msg": "legacy", "version": "3.0.0", "collection_name": "acme.tools"}),
                "legacy. This feature will be removed from collection 'acme.tools' version 3.0.0.",
            ),
            (
                json!({"msg": "nobody!", "version": null, "deprecator": {"resolved_name": null, "type": null}}),
                "nobody! This feature will be removed in the future.",
            ),
            (
                json!({"msg": "api", "version": "2.23", "deprecator": {"resolved_name": "ansible.builtin", "type": "lookup"}}),
                "api. This feature will be removed from the lookup plugin API in ansible-core version 2.23.",
            ),
            (
                json!({"msg": "m", "deprecator": {"resolved_name": "ns.col.thing", "type": "filter"}}),
                "m. This feature will be removed from filter plugin 'thing' in collection 'ns.col' in a future release.",
            ),
        ];
        for (entry, want) in cases {
            assert_eq!(deprecation_message(&entry), want, "{entry}");
        }
    }

    #[test]
    fn each_text_is_shown_once_and_the_note_comes_first() {
        let mut w = Warnings::new(true);
        let data = json!({
            "warnings": ["careful", "two\nlines"],
            "deprecations": [{"msg": "x", "collection_name": "a.b", "version": "1"}],
        });
        let data = data.as_object().unwrap();
        let lines: Vec<String> = w.from_result(data).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            lines,
            [
                "[WARNING]: careful\n",
                "[WARNING]: two\nlines\n\n",
                &format!("[WARNING]: {DISABLE_NOTE}\n"),
                "[DEPRECATION WARNING]: x. This feature will be removed from collection 'a.b' version 1.\n",
            ]
        );
        assert!(w.from_result(data).is_empty());
        let mut off = Warnings::new(false);
        assert_eq!(off.from_result(data).len(), 2);
    }
}
