//! Every rule by which turbo-play reads a boolean out of text or a JSON value, one function
//! per rule, each named after the Ansible (or Python, or PyYAML) code it mirrors.
//!
//! Ansible has no single rule: its `boolean()` is strict for keywords and module arguments
//! but lenient in its config and action plugins, the `bool` filter has a smaller set of
//! spellings, tests and assertions use Python truthiness, YAML has its own, and a
//! `#jinja2:` header takes Python literals. Callers pick the rule Ansible uses at their
//! place; nothing else in `src/` spells out `"yes" | "on"`.
//!
//! This module sits at the bottom of the dependency graph: it uses nothing from the crate.

use serde_json::Value;

/// Why a value is not a boolean under [`strict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotABoolean {
    /// A string or number that is not one of Ansible's `BOOLEANS`.
    Spelling,
    /// Null, a list or a mapping: never a boolean, whatever it holds.
    Type,
}

/// Ansible's `boolean(value)` (strict), module_utils/parsing/convert_bool.py: the strings
/// y/yes/on/1/true/t and n/no/off/0/false/f (any case, surrounding space ignored), the
/// numbers 1 and 0 (also 1.0 and 0.0), and booleans. The text "1.0" is not one of them.
/// Module arguments of `type='bool'` and playbook keywords go through this rule.
pub fn strict(value: &Value) -> Result<bool, NotABoolean> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Ok(true),
            Some(0.0) => Ok(false),
            _ => Err(NotABoolean::Spelling),
        },
        Value::String(s) => strict_text(s).ok_or(NotABoolean::Spelling),
        Value::Null | Value::Array(_) | Value::Object(_) => Err(NotABoolean::Type),
    }
}

/// [`strict`] for text alone: `None` when the text is not one of Ansible's spellings.
pub fn strict_text(text: &str) -> Option<bool> {
    match text.trim().to_lowercase().as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
        "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
        _ => None,
    }
}

/// Ansible's `boolean(value, strict=False)`: true for what [`strict`] reads as true,
/// false for everything else. Ansible's config (ansible.cfg, `ANSIBLE_*`, connection
/// options: `ensure_type(value, 'bool')` in config/manager.py) and many action plugins'
/// own arguments (copy's `force`, subelements' `skip_missing`...) read booleans this way.
pub fn lenient(value: &Value) -> bool {
    strict(value).unwrap_or(false)
}

/// [`lenient`] for text: an ansible.cfg entry or an environment variable.
pub fn lenient_text(text: &str) -> bool {
    strict_text(text).unwrap_or(false)
}

/// The `bool` filter (`to_bool` in plugins/filter/core.py, ansible-core 2.21): the
/// strings yes/on/true/1 and no/off/false/0 in any case but without surrounding space;
/// integers through their text (so only 1 and 0); anything else is coerced (Ansible warns
/// that this is deprecated) by `value == 1`, which only the number 1.0 passes.
pub fn bool_filter(value: &Value) -> bool {
    let text = match value {
        Value::Bool(b) => return *b,
        Value::String(s) => s.to_lowercase(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => return n.as_f64() == Some(1.0),
        _ => return false,
    };
    matches!(text.as_str(), "yes" | "on" | "true" | "1")
}

/// Python's `bool(value)`: what `assert`'s conditions, `when` results and the `truthy`
/// test fall back to. Empty strings and collections, zero and null are false.
pub fn python_truthiness(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The `truthy(convert_bool=True)` test (plugins/test/core.py): [`strict`] where the
/// value is a boolean spelling, Python truthiness where it is not ("foo" is true).
pub fn truthy_converting(value: &Value) -> bool {
    strict(value).unwrap_or_else(|_| python_truthiness(value))
}

/// A plain YAML scalar PyYAML resolves to a boolean (its YAML 1.1 resolver in
/// yaml/resolver.py): yes/no/true/false/on/off in lower, Title or UPPER case only; not
/// `y`/`n`, not `yEs`.
pub fn pyyaml(token: &str) -> Option<bool> {
    match token {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// A boolean as Python's `ast.literal_eval` reads it: `True` or `False`, exactly (leading
/// blanks, which literal_eval strips, and trailing space are allowed). Ansible's
/// `#jinja2:` template header reads its values this way (`_extract_template_overrides` in
/// _internal/_templating/_jinja_bits.py).
pub fn python_literal(text: &str) -> Option<bool> {
    match text.trim() {
        "True" => Some(true),
        "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_takes_ansibles_booleans_only() {
        for yes in [
            json!("yes"),
            json!("On"),
            json!(" TRUE "),
            json!("y"),
            json!("t"),
            json!("1"),
            json!(1),
            json!(1.0),
            json!(true),
        ] {
            assert_eq!(strict(&yes), Ok(true), "{yes}");
        }
        for no in [
            json!("no"),
            json!("OFF"),
            json!("False"),
            json!("n"),
            json!("f"),
            json!("0"),
            json!(0),
            json!(0.0),
            json!(false),
        ] {
            assert_eq!(strict(&no), Ok(false), "{no}");
        }
        // ansible-playbook: "The value '1.0' is not a valid boolean", and '' for keywords.
        for bad in [
            json!("1.0"),
            json!("0.0"),
            json!(""),
            json!("maybe"),
            json!(2),
        ] {
            assert_eq!(strict(&bad), Err(NotABoolean::Spelling), "{bad}");
        }
        for bad in [json!(null), json!([1]), json!({"a": 1})] {
            assert_eq!(strict(&bad), Err(NotABoolean::Type), "{bad}");
        }
    }

    #[test]
    fn lenient_is_false_for_anything_not_true() {
        assert!(lenient_text(" Yes "));
        assert!(lenient_text("t"));
        assert!(lenient(&json!(1)));
        assert!(!lenient_text("garbage"));
        assert!(!lenient_text(""));
        assert!(!lenient(&json!(2)));
        assert!(!lenient(&json!(null)));
        assert!(!lenient(&json!(["yes"])));
    }

    #[test]
    fn bool_filter_as_ansible_2_21() {
        // Each pair checked with ansible-playbook 2.21: `{{ value | bool }}`.
        for (value, expected) in [
            (json!("y"), false),
            (json!(" yes "), false),
            (json!(2), false),
            (json!(1.0), true),
            (json!("True"), true),
            (json!(1), true),
            (json!(true), true),
            (json!("on"), true),
            (json!("1.0"), false),
            (json!("NO"), false),
            (json!(null), false),
        ] {
            assert_eq!(bool_filter(&value), expected, "{value}");
        }
    }

    #[test]
    fn python_truthiness_and_the_converting_truthy_test() {
        assert!(!python_truthiness(&json!("")));
        assert!(python_truthiness(&json!("no")));
        assert!(!python_truthiness(&json!(0.0)));
        assert!(!python_truthiness(&json!({})));
        assert!(python_truthiness(&json!([0])));
        // ansible-playbook 2.21: 'foo', 'n', 2, 'off', '' is truthy(convert_bool=True).
        let converted: Vec<bool> = [json!("foo"), json!("n"), json!(2), json!("off"), json!("")]
            .iter()
            .map(truthy_converting)
            .collect();
        assert_eq!(converted, [true, false, true, false, false]);
    }

    #[test]
    fn pyyaml_and_python_literal_spellings() {
        assert_eq!(pyyaml("Yes"), Some(true));
        assert_eq!(pyyaml("OFF"), Some(false));
        assert_eq!(pyyaml("yEs"), None);
        assert_eq!(pyyaml("y"), None);
        assert_eq!(python_literal(" True"), Some(true));
        assert_eq!(python_literal("False "), Some(false));
        assert_eq!(python_literal("true"), None);
        assert_eq!(python_literal("yes"), None);
    }
}
