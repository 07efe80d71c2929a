//! The `with_<lookup>` loop forms, `loop_control`, and `ansible_loop`.
//!
//! `with_<name>` runs the lookup of that name: the ones that combine lists (`with_nested`,
//! `with_together`, `with_subelements`, `with_indexed_items`) through
//! [`Combinator`] (in the templating layer, since `lookup('nested', ...)` is the same
//! lookup), the others through `Templar::query`, as Ansible runs them through its lookup
//! plugins.

use serde_json::{Map, Value};

use super::Location;

pub use crate::template::Combinator;

/// Lookups that `with_<name>` may name: those `query()` runs, plus the combinators here.
pub const LOOP_LOOKUPS: &[&str] = &[
    "items",
    "list",
    "sequence",
    "dict",
    "fileglob",
    "first_found",
    "file",
    "env",
    "template",
    "pipe",
    "vars",
    "lines",
    "ini",
    "csvfile",
    "random_choice",
    "password",
    "nested",
    "cartesian",
    "together",
    "subelements",
    "indexed_items",
];

/// The directory a `with_<lookup>` loop's relative names are looked up in first (under
/// the role, then the playbook), chosen by the task's action as Ansible's task executor
/// does: `templates` for template, `vars` for include_vars, else `files`.
pub fn lookup_subdir(action: &str) -> &'static str {
    ["template", "var", "file"]
        .into_iter()
        .find(|word| action.contains(word))
        .map_or("files", |word| match word {
            "template" => "templates",
            "var" => "vars",
            _ => "files",
        })
}

/// Whether an action is named as Ansible's debug (whose output its callback trims).
pub fn is_debug_action(action: &str) -> bool {
    matches!(
        action,
        "debug" | "ansible.builtin.debug" | "ansible.legacy.debug"
    )
}

/// A task's `loop_control`, raw (label and pause are templates).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoopControl {
    /// Shown instead of the item in the output, templated per item.
    pub label: Option<String>,
    /// A variable holding the item's 0-based index.
    pub index_var: Option<String>,
    /// `extended`: the `ansible_loop` variable.
    pub extended: bool,
    /// `extended_allitems: false` leaves `allitems` out of `ansible_loop` (it is big).
    pub extended_allitems: bool,
    /// Seconds between items, as written (a number or a template).
    pub pause: Option<Value>,
    /// `break_when`: after each item, the loop stops once all of these hold.
    pub break_when: Option<BreakWhen>,
    /// A value Ansible cannot use, in its words: the task fails with it when it runs.
    pub problem: Option<String>,
}

/// `loop_control.break_when` as written.
#[derive(Debug, Clone, PartialEq)]
pub enum BreakWhen {
    Conditions(Vec<WrittenCondition>),
    /// Something other than strings: each item's check fails, as in Ansible.
    NotStrings(Location),
}

/// A condition and where it is written: Ansible shows a failing one there.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenCondition {
    pub text: String,
    pub origin: Location,
}

impl LoopControl {
    pub fn new() -> LoopControl {
        LoopControl {
            extended_allitems: true,
            ..LoopControl::default()
        }
    }
}

/// Ansible's `ansible_loop` for item `index` of `items`.
pub fn ansible_loop(items: &[Value], index: usize, allitems: bool) -> Value {
    let length = items.len();
    let mut vars = Map::new();
    if allitems {
        vars.insert("allitems".into(), Value::Array(items.to_vec()));
    }
    vars.insert("index".into(), (index + 1).into());
    vars.insert("index0".into(), index.into());
    vars.insert("revindex".into(), (length - index).into());
    vars.insert("revindex0".into(), (length - index - 1).into());
    vars.insert("first".into(), (index == 0).into());
    vars.insert("last".into(), (index + 1 == length).into());
    vars.insert("length".into(), length.into());
    if index > 0 {
        vars.insert("previtem".into(), items[index - 1].clone());
    }
    if index + 1 < length {
        vars.insert("nextitem".into(), items[index + 1].clone());
    }
    Value::Object(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_lookups_search_the_directory_the_action_implies() {
        assert_eq!(lookup_subdir("include_vars"), "vars");
        assert_eq!(lookup_subdir("ansible.builtin.include_vars"), "vars");
        assert_eq!(lookup_subdir("template"), "templates");
        assert_eq!(lookup_subdir("copy"), "files");
        assert_eq!(lookup_subdir("file"), "files");
        assert_eq!(lookup_subdir("debug"), "files");
    }
    use serde_json::json;

    #[test]
    fn ansible_loop_describes_the_position() {
        let all = [json!("a"), json!("b"), json!("c")];
        assert_eq!(
            ansible_loop(&all, 0, true),
            json!({"allitems": ["a", "b", "c"], "index": 1, "index0": 0, "revindex": 3,
                   "revindex0": 2, "first": true, "last": false, "length": 3, "nextitem": "b"})
        );
        assert_eq!(
            ansible_loop(&all, 2, false),
            json!({"index": 3, "index0": 2, "revindex": 1, "revindex0": 0, "first": false,
                   "last": true, "length": 3, "previtem": "b"})
        );
    }

    #[test]
    fn combinators_by_lookup_name() {
        assert_eq!(
            Combinator::from_lookup("cartesian"),
            Some(Combinator::Nested)
        );
        assert_eq!(Combinator::from_lookup("dict"), None);
        for name in ["nested", "together", "subelements", "indexed_items"] {
            assert!(LOOP_LOOKUPS.contains(&name));
        }
    }
}
