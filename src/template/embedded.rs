//! Templates written inside a condition's string constants (`when: x == '{{ y }}'`,
//! `that: lookup('a', '{{ b }}')`): Ansible still renders those (`ALLOW_EMBEDDED_TEMPLATES`,
//! deprecated, on until 2.23), as if the constant were the value its template gives.
//! minijinja has no hook on constants, so the condition is rewritten: each such constant
//! becomes a call of [`EMBEDDED_FN`], which renders it with the condition's variables.

use minijinja::value::Value as MjValue;
use minijinja::{Error as MjError, ErrorKind, State};

pub(super) const EMBEDDED_FN: &str = "__tp_embedded";

/// Whether Ansible's `ALLOW_EMBEDDED_TEMPLATES` is on (its default).
pub(super) fn allowed() -> bool {
    std::env::var("ANSIBLE_ALLOW_EMBEDDED_TEMPLATES")
        .map(|v| crate::booleans::lenient(&serde_json::Value::String(v)))
        .unwrap_or(true)
}

/// `expr` with each string constant that holds a template made a call that renders it,
/// or `None` when it has none.
pub(super) fn rewrite(expr: &str) -> Option<String> {
    if !(expr.contains("{{") || expr.contains("{%")) || !allowed() {
        return None;
    }
    let bytes = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 32);
    let mut copied = 0;
    let mut found = false;
    let mut i = 0;
    while i < bytes.len() {
        let quote = bytes[i];
        if quote != b'\'' && quote != b'"' {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < bytes.len() && bytes[end] != quote {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        if end >= bytes.len() {
            break;
        }
        let literal = &expr[i..=end];
        if literal.contains("{{") || literal.contains("{%") {
            out.push_str(&expr[copied..i]);
            out.push_str(EMBEDDED_FN);
            out.push('(');
            out.push_str(literal);
            out.push(')');
            copied = end + 1;
            found = true;
        }
        i = end + 1;
    }
    out.push_str(&expr[copied..]);
    found.then_some(out)
}

/// The value of a constant's template, rendered with the variables of the condition it is
/// written in: one `{{ }}` keeps its value's type, and an undefined one stays undefined.
pub(super) fn embedded(state: &State, text: String) -> Result<MjValue, MjError> {
    super::python_plugins::render_in_state(state, &serde_json::Value::String(text))
        .map_err(|e| MjError::new(ErrorKind::InvalidOperation, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_with_templates_become_calls() {
        assert_eq!(rewrite("x == 1"), None);
        assert_eq!(
            rewrite("lookup('a', '{{ [b, 42] }}')[1] == 42").as_deref(),
            Some("lookup('a', __tp_embedded('{{ [b, 42] }}'))[1] == 42")
        );
        assert_eq!(
            rewrite(r#"x == "{{ y }}" and z == 'plain'"#).as_deref(),
            Some(r#"x == __tp_embedded("{{ y }}") and z == 'plain'"#)
        );
    }
}
