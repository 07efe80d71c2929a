//! Ansible's undefined values chain: `missing.attr | default('x')` is 'x' and
//! `a.b.c is defined` is false when `a.b` is missing, where minijinja's strict mode fails on
//! the attribute access before `default` runs. Rather than loosen strictness everywhere
//! (printing, `if`, loops and arithmetic on undefined must still fail), the attribute chains
//! that feed `default`/`d`/`is defined`/`is undefined` are rewritten into a call of
//! [`CHAIN_FN`], which walks the chain and yields undefined at the first missing link.

use minijinja::value::{Rest, Value as MjValue, ValueKind};

/// The global function a rewritten chain calls.
pub const CHAIN_FN: &str = "__tp_chain";

/// `__tp_chain(a, 'b', x)` is `a.b[x]`, or undefined as soon as one link is missing.
pub fn chain(first: MjValue, keys: Rest<MjValue>) -> MjValue {
    let mut current = first;
    for key in keys.iter() {
        if current.is_undefined() || current.is_none() {
            return MjValue::UNDEFINED;
        }
        let next = match (current.kind(), key.as_str()) {
            // `list.0` is an index, as in Jinja.
            (ValueKind::Seq, Some(s)) if s.parse::<i64>().is_ok() => current
                .get_item(&MjValue::from(s.parse::<i64>().unwrap_or(0)))
                .ok(),
            _ => current.get_item(key).ok(),
        };
        match next {
            Some(v) if !v.is_undefined() => current = v,
            _ => return MjValue::UNDEFINED,
        }
    }
    current
}

/// Cheap test for "could this template need the rewrite at all".
pub fn may_need_rewrite(source: &str) -> bool {
    (source.contains("default")
        || source.contains(FQCN_PREFIX)
        || source.contains("defined")
        || source.contains("d(")
        || source.contains("mandatory")
        || source.contains("unvault"))
        && !source.contains("{% raw")
        && !source.contains("{%- raw")
}

/// Rewrites every `{{ }}`/`{% %}` tag of a template (comments and text left alone).
pub fn rewrite_template(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 32);
    let mut rest = source;
    loop {
        let Some(open) = rest.find('{') else {
            out.push_str(rest);
            return out;
        };
        let after = &rest[open..];
        let close = if after.starts_with("{{") {
            "}}"
        } else if after.starts_with("{%") {
            "%}"
        } else if after.starts_with("{#") {
            "#}"
        } else {
            out.push_str(&rest[..open + 1]);
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&rest[..open + 2]);
        let body = &rest[open + 2..];
        let end = if close == "#}" {
            body.find(close)
        } else {
            tag_end(body, close)
        };
        let Some(end) = end else {
            out.push_str(body);
            return out;
        };
        if close == "#}" {
            out.push_str(&body[..end]);
        } else {
            out.push_str(&rewrite_expr(&body[..end]));
        }
        out.push_str(close);
        rest = &body[end + 2..];
    }
}

/// Where `close` ends a tag body, skipping string literals that may contain it.
pub(super) fn tag_end(body: &str, close: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' => i = skip_string(bytes, i),
            // Bytes, not `body[i..]`: `i` steps through multi-byte characters too.
            _ if bytes[i..].starts_with(close.as_bytes()) => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The index after the string literal starting at `start`.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Rewrites the chains in one expression (the inside of a tag, or a bare `when:`).
pub fn rewrite_expr(expr: &str) -> String {
    let bytes = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\'' || b == b'"' {
            i = skip_string(bytes, i);
            continue;
        }
        let starts_word = is_ident_start(b) && (i == 0 || !is_ident(bytes[i - 1]));
        // `x | ansible.builtin.to_json`, `x is ansible.builtin.version(...)`: the
        // collection prefix is the plain name here.
        if starts_word && expr[i..].starts_with(FQCN_PREFIX) && names_filter_or_test(&expr[..i]) {
            out.push_str(&expr[copied..i]);
            i += FQCN_PREFIX.len();
            copied = i;
            continue;
        }
        let after_dot = previous_significant(bytes, i) == Some(b'.');
        if !starts_word || after_dot {
            i += 1;
            continue;
        }
        let (end, keys) = parse_chain(expr, i);
        let name = &expr[i..i + ident_len(bytes, i)];
        if keys.is_empty() && feeds_unvault(&expr[end..]) && !NOT_VARIABLES.contains(&name) {
            out.push_str(&expr[copied..i]);
            out.push_str(&format!(
                "{}('{name}')",
                super::vault_filters::SOURCE_FUNCTION
            ));
            copied = end;
        } else if !keys.is_empty() && feeds_undefined_check(&expr[end..]) {
            out.push_str(&expr[copied..i]);
            out.push_str(CHAIN_FN);
            out.push('(');
            out.push_str(&expr[i..i + ident_len(bytes, i)]);
            for key in keys {
                out.push_str(", ");
                out.push_str(&key);
            }
            out.push(')');
            copied = end;
        }
        i = end.max(i + 1);
    }
    out.push_str(&expr[copied..]);
    out
}

const FQCN_PREFIX: &str = "ansible.builtin.";

/// Does the text before a name end in `|`, `is` or `is not` (so the name is a filter or a
/// test)?
fn names_filter_or_test(before: &str) -> bool {
    let t = before.trim_end();
    t.ends_with('|')
        || [" is", " not"]
            .iter()
            .any(|w| t.ends_with(w) || t == w.trim_start())
}

fn previous_significant(bytes: &[u8], i: usize) -> Option<u8> {
    bytes[..i]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .copied()
}

fn ident_len(bytes: &[u8], start: usize) -> usize {
    bytes[start..].iter().take_while(|&&b| is_ident(b)).count()
}

/// `a.b['c'][x]` from `start`: where it ends and each key as an expression
/// (`'b'`, `'c'`, `(x)`).
fn parse_chain(expr: &str, start: usize) -> (usize, Vec<String>) {
    let bytes = expr.as_bytes();
    let mut i = start + ident_len(bytes, start);
    let mut keys = Vec::new();
    loop {
        match bytes.get(i) {
            Some(b'.') if bytes.get(i + 1).is_some_and(|&b| is_ident(b)) => {
                let len = ident_len(bytes, i + 1);
                keys.push(format!("'{}'", &expr[i + 1..i + 1 + len]));
                i += 1 + len;
            }
            Some(b'[') => {
                let Some(close) = matching_bracket(bytes, i) else {
                    return (i, keys);
                };
                let inner = &expr[i + 1..close];
                if inner.contains(':') {
                    // A slice is not a key.
                    return (start, Vec::new());
                }
                keys.push(format!("({})", rewrite_expr(inner)));
                i = close + 1;
            }
            _ => return (i, keys),
        }
    }
}

fn matching_bracket(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return (bytes[i] == b']').then_some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Words that read like variable names but are constants or operators.
const NOT_VARIABLES: &[&str] = &[
    "true", "false", "none", "True", "False", "None", "not", "and", "or", "in", "is", "if", "else",
];

/// Is the text after a name `| unvault` (a variable whose inline `!vault` value may be
/// one the run cannot decrypt, which only `unvault` may still open)?
fn feeds_unvault(after: &str) -> bool {
    let Some(f) = after.trim_start().strip_prefix('|') else {
        return false;
    };
    let f = f.trim_start();
    let f = f.strip_prefix(FQCN_PREFIX).unwrap_or(f);
    f.strip_prefix("unvault")
        .is_some_and(|r| r.as_bytes().first().is_none_or(|&b| !is_ident(b)))
}

/// Is the text after a chain `| default`, `| d`, `| mandatory`,
/// `is [not] defined/undefined`?
fn feeds_undefined_check(after: &str) -> bool {
    let t = after.trim_start();
    if let Some(f) = t.strip_prefix('|') {
        let f = f.trim_start();
        return ["default", "d", "mandatory"].iter().any(|name| {
            f.strip_prefix(name)
                .is_some_and(|r| r.as_bytes().first().is_none_or(|&b| !is_ident(b)))
        });
    }
    if let Some(r) = t.strip_prefix("is")
        && r.starts_with(char::is_whitespace)
    {
        let r = r.trim_start();
        let r = r
            .strip_prefix("not")
            .filter(|r| r.starts_with(char::is_whitespace))
            .map_or(r, str::trim_start);
        return ["defined", "undefined"].iter().any(|name| {
            r.strip_prefix(name)
                .is_some_and(|r| r.as_bytes().first().is_none_or(|&b| !is_ident(b)))
        });
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found by the template fuzz target: a non-ASCII character inside a tag panicked
    // ("byte index is not a char boundary"), taking the controller down with it.
    #[test]
    fn non_ascii_inside_a_tag_is_kept_not_a_panic() {
        let text =
            "{{\u{596}n~entory_hostname}} {{ x | d('é') ~ ž }}{% if ü.a is defined %}ß{% endif %}";
        let out = rewrite_template(text);
        assert!(out.contains("ž }}"), "{out}");
        assert!(out.contains("__tp_chain(ü") || out.contains("ü.a"), "{out}");
        assert!(out.ends_with("ß{% endif %}"), "{out}");
        let templar = super::super::Templar::new();
        let vars = minijinja::Value::from_serialize(serde_json::json!({}));
        assert!(templar.render_str("{{\u{596}n }}", &vars).is_err());
    }

    #[test]
    fn rewrites_chains_that_feed_default_or_defined() {
        assert_eq!(
            rewrite_expr(" a.b | default('x') "),
            " __tp_chain(a, 'b') | default('x') "
        );
        assert_eq!(
            rewrite_expr("a.b['c'][x].d|d(1)"),
            "__tp_chain(a, 'b', ('c'), (x), 'd')|d(1)"
        );
        assert_eq!(
            rewrite_expr("x.y is not defined and z.w is undefined"),
            "__tp_chain(x, 'y') is not defined and __tp_chain(z, 'w') is undefined"
        );
        assert_eq!(
            rewrite_expr("hostvars[h].v | default(omit)"),
            "__tp_chain(hostvars, (h), 'v') | default(omit)"
        );
    }

    #[test]
    fn a_bare_name_feeding_unvault_is_read_through_the_vault_source() {
        assert_eq!(
            rewrite_expr("v|unvault(pw) == x | ansible.builtin.unvault('p')"),
            "__tp_vault_source('v')|unvault(pw) == __tp_vault_source('x') | unvault('p')"
        );
        for expr in [
            "a.b | unvault(pw)",
            "lookup('file', f) | unvault(pw)",
            "v | unvaulted",
            "'v' | unvault(pw)",
            "none | unvault(pw)",
        ] {
            assert_eq!(rewrite_expr(expr), expr);
        }
    }

    #[test]
    fn drops_the_builtin_collection_prefix_of_filters_and_tests() {
        assert_eq!(rewrite_expr("x | ansible.builtin.to_json"), "x | to_json");
        assert_eq!(
            rewrite_expr(
                "v is ansible.builtin.version('1', '>') and v is not ansible.builtin.match('a')"
            ),
            "v is version('1', '>') and v is not match('a')"
        );
        assert_eq!(
            rewrite_expr("lookup('ansible.builtin.file', 'x')"),
            "lookup('ansible.builtin.file', 'x')"
        );
    }

    #[test]
    fn leaves_everything_else_alone() {
        for expr in [
            "a.b",
            "a | default('x')",
            "a.b | defaults",
            "a.b.split(',') | default([])",
            "'a.b | default(1)'",
            "a.b is definedx",
            "l[1:2] | default([])",
            "x | map(attribute='a.b') | default",
        ] {
            assert_eq!(rewrite_expr(expr), expr);
        }
    }

    #[test]
    fn rewrites_inside_tags_only() {
        assert_eq!(
            rewrite_template(
                "a.b | default {{ a.b | default(1) }} {# a.b | d #}{% if a.b is defined %}"
            ),
            "a.b | default {{ __tp_chain(a, 'b') | default(1) }} {# a.b | d #}{% if __tp_chain(a, 'b') is defined %}"
        );
        assert_eq!(
            rewrite_template("{{ '}}' ~ a.b | d('x') }}"),
            "{{ '}}' ~ __tp_chain(a, 'b') | d('x') }}"
        );
    }
}
