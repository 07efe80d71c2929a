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
/// template's, quoting `shown`. None when `variable` is not one. A dict or list variable
/// with undefined leaves gives its error only when `leaf` (an undefined leaf of it is
/// read, not a key it lacks).
pub(super) fn error_reading(
    vars: &MjValue,
    variable: &str,
    shown: &str,
    leaf: bool,
) -> Option<TemplateError> {
    let entry = vars
        .get_attr(UNRESOLVED_VARS)
        .ok()?
        .get_attr(variable)
        .ok()
        .filter(|entry| !entry.is_undefined())?;
    if entry.get_attr("partial").is_ok_and(|p| p.is_true()) && !leaf {
        return None;
    }
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

/// The error of a dict or list variable with undefined leaves that `expr` names, when
/// `expr` came out holding an undefined value and no undefined name explains it
/// (`{{ a_dict }}`, `{{ a_dict | to_json }}`).
pub(super) fn partial_error_in(vars: &MjValue, expr: &str, shown: &str) -> Option<TemplateError> {
    let table = vars.get_attr(UNRESOLVED_VARS).ok()?;
    expr.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .find(|word| {
            table
                .get_attr(word)
                .and_then(|entry| entry.get_attr("partial"))
                .is_ok_and(|p| p.is_true())
        })
        .and_then(|word| error_reading(vars, word, shown, true))
}

/// Whether the path `name` (`a.b`, `a['b']`, `a[0]`) reaches a key or item that its owner
/// holds undefined: an undefined leaf of a dict or list variable, not a key it lacks.
pub(super) fn reads_undefined_leaf(vars: &MjValue, name: &str) -> bool {
    let steps = path_steps(name);
    let mut current = vars.clone();
    for step in steps {
        let held = current
            .try_iter()
            .map(|mut keys| match current.kind() {
                minijinja::value::ValueKind::Map => keys.any(|k| k == step),
                minijinja::value::ValueKind::Seq => step
                    .as_i64()
                    .is_some_and(|i| i >= 0 && (i as usize) < current.len().unwrap_or(0)),
                _ => false,
            })
            .unwrap_or(false);
        let Ok(next) = current.get_item(&step) else {
            return false;
        };
        if next.is_undefined() {
            return held;
        }
        current = next;
    }
    false
}

/// The keys and indexes of a path (`a.b`, `a['b']`, `a[0]`), in order.
fn path_steps(name: &str) -> Vec<MjValue> {
    let mut steps = Vec::new();
    for segment in name.split('.') {
        let mut parts = segment.split('[');
        if let Some(head) = parts.next().filter(|h| !h.is_empty()) {
            steps.push(MjValue::from(head.trim()));
        }
        for part in parts {
            let inner = part.trim_end_matches(']').trim_matches(['\'', '"']);
            steps.push(match inner.parse::<i64>() {
                Ok(index) => MjValue::from(index),
                Err(_) => MjValue::from(inner),
            });
        }
    }
    steps
}

/// What the path `name` (`x`, `x.c`, `x['c'][0]`) reaches in the text as written of a
/// dict or list variable some of whose leaves are undefined: where those leaves' own
/// templates are, to say why each is undefined.
pub fn partial_text(vars: &MjValue, name: &str) -> Option<Value> {
    let mut steps = path_steps(name).into_iter();
    let root = steps.next()?;
    let entry = vars.get_attr(UNRESOLVED_VARS).ok()?.get_item(&root).ok()?;
    if !entry.get_attr("partial").is_ok_and(|p| p.is_true()) {
        return None;
    }
    let mut text = serde_json::to_value(entry.get_attr("text").ok()?).ok()?;
    for step in steps {
        text = match (&text, step.as_str(), step.as_i64()) {
            (Value::Object(map), Some(key), _) => map.get(key)?.clone(),
            (Value::Array(items), _, Some(index)) => {
                items.get(usize::try_from(index).ok()?)?.clone()
            }
            _ => return None,
        };
    }
    Some(text)
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

/// Whether `value` holds a [`undefined_value`] somewhere inside (a dict or list variable
/// some of whose leaves name an undefined variable).
pub fn holds_undefined_leaf(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            undefined_because(value).is_some() || map.values().any(holds_undefined_leaf)
        }
        Value::Array(items) => items.iter().any(holds_undefined_leaf),
        _ => false,
    }
}

/// `value` as a template reads it: every [`undefined_value`] inside it undefined. Ansible
/// templates a dict or list variable lazily, so it stays a dict or list whose failing
/// leaves alone are undefined.
pub fn template_value(value: &Value) -> MjValue {
    if !holds_undefined_leaf(value) {
        return MjValue::from_serialize(value);
    }
    match value {
        v if undefined_because(v).is_some() => MjValue::UNDEFINED,
        Value::Array(items) => items.iter().map(template_value).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), template_value(v)))
            .collect(),
        other => MjValue::from_serialize(other),
    }
}

/// A map of variables as templates read them (see [`template_value`]).
pub fn template_vars(vars: &serde_json::Map<String, Value>) -> MjValue {
    if !vars.values().any(holds_undefined_leaf) {
        return MjValue::from_serialize(vars);
    }
    vars.iter()
        .map(|(k, v)| (k.clone(), template_value(v)))
        .collect()
}

/// The entry of a dict or list variable written as `text` some of whose leaves failed
/// with `error`: the variable itself is defined (it stays in the variables); the entry
/// gives its undefined leaves their error, and its text to render again with a loop item.
pub fn partial_entry(text: &Value, error: &TemplateError) -> Value {
    let mut entry = entry(text, error);
    entry["partial"] = Value::Bool(true);
    entry
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;

    /// What a task's templates see of `a_dict: {a_key: "{{ not_defined }}", b_key: 5}` and
    /// `a_list: [1, "{{ not_defined }}"]`, as ansible-playbook 2.21 words each failure.
    #[test]
    fn an_undefined_leaf_fails_with_its_error_and_a_missing_key_as_missing() {
        let why = "'not_defined' is undefined";
        let error = TemplateError::Undefined {
            name: "not_defined".into(),
            expr: "{{ not_defined }}".into(),
            missing: None,
        };
        let vars: serde_json::Map<String, Value> = serde_json::from_value(json!({
            "a_dict": {"a_key": undefined_value(why), "b_key": 5},
            "a_list": [1, undefined_value(why)],
            UNRESOLVED_VARS: {
                "a_dict": partial_entry(&json!({"a_key": "{{ not_defined }}"}), &error),
                "a_list": partial_entry(&json!([1, "{{ not_defined }}"]), &error),
            },
        }))
        .unwrap();
        let vars = template_vars(&vars);
        let t = Templar::new();
        let render = |text: &str| t.render_str(text, &vars).map_err(|e| e.to_string());
        assert_eq!(render("{{ [a_dict.a_key, 42][1] }}").unwrap(), "42");
        assert_eq!(render("{{ a_dict.a_key | default(1) }}").unwrap(), "1");
        assert_eq!(render("{{ a_list[1] is defined }}").unwrap(), "False");
        for text in [
            "{{ a_dict.a_key }}",
            "{{ a_dict['a_key'] }}",
            "{{ a_list[1] }}",
            "{{ a_dict }}",
            "{{ a_dict | to_json }}",
        ] {
            assert_eq!(render(text).unwrap_err(), why, "{text}");
        }
        assert_eq!(
            render("{{ a_dict.missing }}").unwrap_err(),
            "object of type 'dict' has no attribute 'missing'"
        );
    }
}
