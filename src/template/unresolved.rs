//! Variables whose template names an undefined variable (`a: "{{ nope }}"`).
//!
//! Ansible templates variables lazily: such a variable is undefined where a template
//! reads it (`a | default(1)` is 1, `a is defined` is false), and a template that needs
//! its value fails with the error of the variable's own template ("'nope' is undefined"),
//! not with its text. The executor resolves a task's variables before the task runs, so it
//! leaves these out of the variables and lists them under [`UNRESOLVED_VARS`], each with
//! its text as written (a loop item may still define what it names) and its error.

use minijinja::value::Value as MjValue;
use serde_json::{Value, json};

use super::TemplateError;

/// The key of the variables under which the unresolved ones are listed, by name; `__tp_`
/// names are hidden from `varnames` and from the variables a template can list.
pub const UNRESOLVED_VARS: &str = "__tp_unresolved";

/// The entry of a variable written as `text` whose template failed with `error`, an
/// undefined variable.
pub fn entry(text: &Value, error: &TemplateError) -> Value {
    let (name, missing) = match error {
        TemplateError::Undefined { name, missing, .. } => (name.clone(), missing.clone()),
        other => (other.to_string(), None),
    };
    json!({"text": text, "name": name, "missing": missing})
}

/// The error of a template that reads the unresolved variable `variable`: its own
/// template's, quoting `shown`. None when `variable` is not one.
pub(super) fn error_reading(vars: &MjValue, variable: &str, shown: &str) -> Option<TemplateError> {
    let entry = vars
        .get_attr(UNRESOLVED_VARS)
        .ok()?
        .get_attr(variable)
        .ok()
        .filter(|entry| !entry.is_undefined())?;
    let name = entry.get_attr("name").ok()?.as_str()?.to_string();
    let missing = entry
        .get_attr("missing")
        .ok()
        .and_then(|m| m.as_str().map(str::to_string));
    Some(TemplateError::Undefined {
        name,
        expr: shown.to_string(),
        missing,
    })
}

/// The key of a value that stands for an undefined variable with a reason (a register
/// projection that failed): `{"__tp_undefined": "why"}`.
const UNDEFINED_BECAUSE: &str = "__tp_undefined";

/// A value that leaves its variable undefined, `why` being the error where it is read.
pub fn undefined_value(why: &str) -> Value {
    json!({ UNDEFINED_BECAUSE: why })
}

/// Why `value` stands for an undefined variable, if it does.
pub fn undefined_because(value: &Value) -> Option<&str> {
    let map = value.as_object().filter(|m| m.len() == 1)?;
    map.get(UNDEFINED_BECAUSE)?.as_str()
}

/// The entry of a variable that is undefined for the reason `why`: no text to render
/// again.
pub fn entry_because(name: &str, why: &str) -> Value {
    json!({"text": null, "name": name, "missing": why})
}

/// The unresolved variables listed in `vars` that have a text: each name with its text
/// as written.
pub fn listed(vars: &MjValue) -> Vec<(String, Value)> {
    let Ok(table) = vars.get_attr(UNRESOLVED_VARS) else {
        return Vec::new();
    };
    let Ok(keys) = table.try_iter() else {
        return Vec::new();
    };
    keys.filter_map(|key| {
        let name = key.as_str()?.to_string();
        let text = table.get_attr(&name).ok()?.get_attr("text").ok()?;
        match serde_json::to_value(&text).ok()? {
            Value::Null => None,
            text => Some((name, text)),
        }
    })
    .collect()
}
