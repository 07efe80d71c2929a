//! The regular-expression filters (`regex_replace`, `regex_search`, `regex_findall`,
//! `regex_escape`) with Python's `re` semantics (see `pyregex`).

use minijinja::Error as MjError;
use minijinja::value::{Kwargs, Rest, Value as MjValue};

use super::filters::{invalid, value_text};
use super::pyregex::{Anchor, PyRegex, python_replacement};

/// A Python regex (look-around and back-references included, see `pyregex`).
fn compile_regex(pattern: &str, ignorecase: bool, multiline: bool) -> Result<PyRegex, MjError> {
    PyRegex::new(pattern, Anchor::Search, ignorecase, multiline).map_err(|e| invalid(e.to_string()))
}

fn regex_flags(kwargs: &Kwargs) -> Result<(bool, bool), MjError> {
    Ok((
        kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false),
        kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false),
    ))
}

pub(super) fn regex_replace(
    value: MjValue,
    pattern: &str,
    replacement: Option<&str>,
    kwargs: Kwargs,
) -> Result<String, MjError> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    let count: usize = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    kwargs.assert_all_used()?;
    let text = value_text(&value);
    let re = compile_regex(pattern, ignorecase, multiline)?;
    let replacement = python_replacement(replacement.unwrap_or(""));
    re.replacen(&text, count, &replacement)
        .map_err(|e| invalid(e.to_string()))
}

pub(super) fn regex_search(
    value: MjValue,
    pattern: &str,
    args: Rest<String>,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let text = value_text(&value);
    let re = compile_regex(pattern, ignorecase, multiline)?;
    let Some(caps) = re.captures(&text).map_err(|e| invalid(e.to_string()))? else {
        return Ok(MjValue::from(()));
    };
    let group = |i: Option<usize>| -> MjValue {
        match i.and_then(|i| caps.get(i)).cloned().flatten() {
            Some(text) => MjValue::from(text),
            None => MjValue::from(()),
        }
    };
    if args.is_empty() {
        return Ok(MjValue::from(caps[0].clone().unwrap_or_default()));
    }
    let mut groups = Vec::new();
    for arg in args.iter() {
        let index = if let Some(name) = arg.strip_prefix("\\g<").and_then(|a| a.strip_suffix('>')) {
            match name.parse::<usize>() {
                Ok(i) => Some(i),
                Err(_) => re.group_index(name),
            }
        } else if let Some(n) = arg.strip_prefix('\\').and_then(|a| a.parse::<usize>().ok()) {
            Some(n)
        } else {
            return Err(invalid(format!("regex_search: unknown argument {arg:?}")));
        };
        groups.push(group(index));
    }
    Ok(MjValue::from(groups))
}

/// Python's `re.findall`: whole matches, or the one group, or a list per match of all
/// groups.
pub(super) fn regex_findall(
    value: MjValue,
    pattern: &str,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let (ignorecase, multiline) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let text = value_text(&value);
    let re = compile_regex(pattern, ignorecase, multiline)?;
    let groups = re.group_count();
    let found: Vec<MjValue> = re
        .captures_all(&text, usize::MAX)
        .map_err(|e| invalid(e.to_string()))?
        .into_iter()
        .map(|caps| {
            let text_of = |i: usize| MjValue::from(caps[i].clone().unwrap_or_default());
            match groups {
                0 => text_of(0),
                1 => text_of(1),
                n => MjValue::from((1..=n).map(text_of).collect::<Vec<_>>()),
            }
        })
        .collect();
    Ok(MjValue::from(found))
}

/// Python 3.7+'s `re.escape`: only the characters special in a pattern.
pub(super) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\u{0b}\u{0c}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
