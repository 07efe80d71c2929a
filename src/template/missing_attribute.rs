//! Ansible's words for an attribute a defined value lacks: "object of type 'dict' has no
//! attribute 'name'", where no variable is undefined (`{'a': 1}.b`,
//! `things | map(attribute='name')` over an item without it). minijinja gives only an
//! undefined value there, so the attribute is found again from the expression's text: its
//! last `.name`/`['name']`, or a top-level `map(attribute=...)` without a default.

use minijinja::Environment;
use minijinja::value::Value as MjValue;

use super::filters::mj_type_name;

/// The message for `expr` (the inside of `{{ }}`) when its value came out undefined
/// though every variable it names is defined; `None` when the text shows no such access.
pub(super) fn message(env: &Environment<'_>, expr: &str, vars: &MjValue) -> Option<String> {
    let expr = expr.trim();
    mapped_attribute(env, expr, vars).or_else(|| trailing_attribute(env, expr, vars))
}

fn eval(env: &Environment<'_>, expr: &str, vars: &MjValue) -> Option<MjValue> {
    let compiled = super::engine_guarded(expr, || env.compile_expression(expr))
        .ok()?
        .ok()?;
    compiled.eval(vars).ok().filter(|v| !v.is_undefined())
}

fn no_attribute(owner: &MjValue, attr: &str) -> String {
    format!(
        "object of type '{}' has no attribute '{attr}'",
        mj_type_name(owner)
    )
}

/// `base | map(attribute='a.b')` as the expression's last filter: the first item of
/// `base` whose path stops, named by the owner of the missing segment.
fn mapped_attribute(env: &Environment<'_>, expr: &str, vars: &MjValue) -> Option<String> {
    let at = expr.rfind("map(")?;
    let base = expr[..at].trim_end().strip_suffix('|')?;
    let call = &expr[at + "map(".len()..];
    let args = call.strip_suffix(')')?;
    if args.contains("default") || args.contains(')') {
        return None;
    }
    let value = args.trim().strip_prefix("attribute")?.trim_start();
    let path = unquote(value.strip_prefix('=')?.trim())?;
    let items = eval(env, base, vars)?;
    for item in items.try_iter().ok()? {
        let mut owner = item;
        for segment in path.split('.') {
            let next = owner.get_attr(segment).ok()?;
            if next.is_undefined() {
                return Some(no_attribute(&owner, segment));
            }
            owner = next;
        }
    }
    None
}

/// `base.name` or `base['name']` at the end of the expression, `base` defined.
fn trailing_attribute(env: &Environment<'_>, expr: &str, vars: &MjValue) -> Option<String> {
    let (base, attr) = if let Some(inner) = expr.strip_suffix(']') {
        let open = inner.rfind('[')?;
        (&inner[..open], unquote(inner[open + 1..].trim())?)
    } else {
        let dot = expr.rfind('.')?;
        let name = &expr[dot + 1..];
        let is_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !is_name {
            return None;
        }
        (&expr[..dot], name.to_string())
    };
    let owner = eval(env, base.trim_end(), vars)?;
    owner
        .get_attr(&attr)
        .ok()
        .filter(MjValue::is_undefined)
        .map(|_| no_attribute(&owner, &attr))
}

fn unquote(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote)).then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(expr: &str) -> Option<String> {
        let env = Environment::new();
        let vars = MjValue::from_serialize(json!({
            "things": [{"name": "one"}, {"notname": "three"}],
            "d": {"a": {"b": 1}},
        }));
        message(&env, expr, &vars)
    }

    #[test]
    fn names_the_missing_attribute_and_its_owner() {
        assert_eq!(
            msg(r#"things|map(attribute="name")"#).as_deref(),
            Some("object of type 'dict' has no attribute 'name'")
        );
        assert_eq!(
            msg("{'a': 1}.b").as_deref(),
            Some("object of type 'dict' has no attribute 'b'")
        );
        assert_eq!(
            msg("d.a['c']").as_deref(),
            Some("object of type 'dict' has no attribute 'c'")
        );
        assert_eq!(msg("things | map(attribute='name', default=1)"), None);
        assert_eq!(msg("d.a.b"), None);
        assert_eq!(msg("nope.x"), None);
    }
}
