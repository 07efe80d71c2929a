//! Ansible's Jinja tests (`x is version('1.2', '>=')`, `result is failed`...).

use std::cmp::Ordering;

use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind};

use super::pyregex::{Anchor, PyRegex};

pub fn register(env: &mut Environment<'static>) {
    env.add_test("truthy", truthy);
    env.add_test("falsy", falsy);
    env.add_test("succeeded", succeeded);
    env.add_test("success", succeeded);
    env.add_test("successful", succeeded);
    env.add_test("failed", failed);
    env.add_test("failure", failed);
    env.add_test("changed", changed);
    env.add_test("change", changed);
    env.add_test("skipped", skipped);
    env.add_test("skip", skipped);
    env.add_test("finished", finished);
    env.add_test("started", started);
    env.add_test("timedout", timedout);
    env.add_test("unreachable", unreachable);
    env.add_test("reachable", reachable);
    env.add_test("match", regex_match);
    env.add_test("search", regex_search);
    env.add_test("regex", regex_test);
    env.add_test("version", version);
    env.add_test("version_compare", version);
    env.add_test("subset", subset);
    env.add_test("issubset", subset);
    env.add_test("superset", superset);
    env.add_test("issuperset", superset);
    env.add_test("contains", contains);
    env.add_test("any", any);
    env.add_test("all", all);
    env.add_test("file", |p: &str| std::path::Path::new(p).is_file());
    env.add_test("is_file", |p: &str| std::path::Path::new(p).is_file());
    env.add_test("directory", |p: &str| std::path::Path::new(p).is_dir());
    env.add_test("is_dir", |p: &str| std::path::Path::new(p).is_dir());
    // Python's `os.path.exists` follows links (a broken one does not exist); `lexists`
    // does not.
    env.add_test("exists", |p: &str| std::path::Path::new(p).exists());
    env.add_test("link_exists", |p: &str| {
        std::fs::symlink_metadata(p).is_ok()
    });
    env.add_test("same_file", same_file);
    env.add_test("is_same_file", same_file);
    env.add_test("mount", is_mount);
    env.add_test("is_mount", is_mount);
    env.add_test("link", |p: &str| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    });
    env.add_test("is_link", |p: &str| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    });
    env.add_test("abs", |p: &str| p.starts_with('/'));
    env.add_test("is_abs", |p: &str| p.starts_with('/'));
    env.add_test("nan", is_nan);
    env.add_test("isnan", is_nan);
    env.add_test("uri", uri);
    env.add_test("url", url);
    env.add_test("urn", |value: &MjValue| {
        uri(value, Some(MjValue::from(vec!["urn"])))
    });
}

/// Python's `os.path.samefile`: the same device and inode (links followed); a missing
/// path is an error in Python, false here as a test.
fn same_file(a: &str, b: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Python's `os.path.ismount`: a directory (not a link) on another device than its
/// parent, or the same inode as its parent (`/`).
fn is_mount(p: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let path = std::path::Path::new(p);
    let Ok(own) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if own.file_type().is_symlink() || !own.is_dir() {
        return false;
    }
    let Ok(parent) = std::fs::symlink_metadata(path.join("..")) else {
        return false;
    };
    own.dev() != parent.dev() || own.ino() == parent.ino()
}

/// `nan`: only a float can be NaN; anything else (a string too) is not.
fn is_nan(value: &MjValue) -> bool {
    value.kind() == ValueKind::Number
        && !value.is_integer()
        && f64::try_from(value.clone()).is_ok_and(f64::is_nan)
}

/// `uri(schemes=None)`: Python's `urlparse` accepts nearly any text, so this only checks
/// the scheme against `schemes` when given.
fn uri(value: &MjValue, schemes: Option<MjValue>) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let (scheme, _) = super::filters::url_scheme(text);
    match schemes {
        Some(schemes) if schemes.is_true() => schemes
            .try_iter()
            .into_iter()
            .flatten()
            .any(|s| s.as_str() == Some(scheme.as_str())),
        _ => true,
    }
}

/// `url(schemes=None)`: a `uri` with a network location (`//host`), or a `file:` one.
fn url(value: &MjValue, schemes: Option<MjValue>) -> bool {
    if !uri(value, schemes) {
        return false;
    }
    let text = value.as_str().unwrap_or("");
    let (scheme, rest) = super::filters::url_scheme(text);
    let netloc = rest
        .strip_prefix("//")
        .map(|r| r.split(['/', '?', '#']).next().unwrap_or(""))
        .unwrap_or("");
    !netloc.is_empty() || scheme == "file"
}

fn invalid(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// `truthy(convert_bool=False)`: with `convert_bool`, boolean spellings count as what
/// they spell ('no' is false), anything else by Python truthiness.
fn truthy(value: &MjValue, convert_bool: Option<bool>, kwargs: Kwargs) -> Result<bool, MjError> {
    let convert = kwargs.get::<Option<bool>>("convert_bool")?.or(convert_bool);
    kwargs.assert_all_used()?;
    if convert.unwrap_or(false)
        && let Ok(json) = super::to_json(value)
    {
        return Ok(crate::booleans::truthy_converting(&json));
    }
    Ok(value.is_true())
}

fn falsy(value: &MjValue, convert_bool: Option<bool>, kwargs: Kwargs) -> Result<bool, MjError> {
    truthy(value, convert_bool, kwargs).map(|t| !t)
}

/// Ansible's task-result tests refuse anything but a registered result.
fn result_field(value: &MjValue, test: &str, field: &str) -> Result<MjValue, MjError> {
    if value.kind() != ValueKind::Map {
        return Err(invalid(format!(
            "The '{test}' test expects a dictionary (a registered task result)"
        )));
    }
    Ok(value.get_attr(field).unwrap_or_default())
}

fn failed(value: &MjValue) -> Result<bool, MjError> {
    Ok(result_field(value, "failed", "failed")?.is_true())
}

fn succeeded(value: &MjValue) -> Result<bool, MjError> {
    Ok(!result_field(value, "succeeded", "failed")?.is_true())
}

/// A loop's result is changed when any item changed.
fn changed(value: &MjValue) -> Result<bool, MjError> {
    let own = result_field(value, "changed", "changed")?;
    if !own.is_undefined() {
        return Ok(own.is_true());
    }
    let results = value.get_attr("results").unwrap_or_default();
    if results.kind() == ValueKind::Seq {
        for item in results.try_iter()? {
            if item.get_attr("changed").is_ok_and(|c| c.is_true()) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn skipped(value: &MjValue) -> Result<bool, MjError> {
    Ok(result_field(value, "skipped", "skipped")?.is_true())
}

fn finished(value: &MjValue) -> Result<bool, MjError> {
    let f = result_field(value, "finished", "finished")?;
    Ok(f.is_undefined() || f.is_true())
}

/// A result without `started` is not an async task's: Ansible counts it as started.
fn started(value: &MjValue) -> Result<bool, MjError> {
    let f = result_field(value, "started", "started")?;
    Ok(f.is_undefined() || f.is_true())
}

/// Ansible's `timedout`: the task ran out of its `timeout` (a `timedout` with a period).
fn timedout(value: &MjValue) -> Result<bool, MjError> {
    let t = result_field(value, "timedout", "timedout")?;
    Ok(t.is_true() && t.get_attr("period").is_ok_and(|p| p.is_true()))
}

fn unreachable(value: &MjValue) -> Result<bool, MjError> {
    Ok(result_field(value, "unreachable", "unreachable")?.is_true())
}

fn reachable(value: &MjValue) -> Result<bool, MjError> {
    Ok(!unreachable(value)?)
}

fn text_of(value: &MjValue) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// Python's `re.search`, `re.match` (anchored at the start, not the end) and
/// `re.fullmatch`, with look-around and back-references (see `pyregex`).
fn regex_matches(
    value: &MjValue,
    pattern: &str,
    anchor: Anchor,
    kwargs: &Kwargs,
) -> Result<bool, MjError> {
    let ignorecase = kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let multiline = kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    PyRegex::new(pattern, anchor, ignorecase, multiline)
        .and_then(|re| re.is_match(&text_of(value)))
        .map_err(|e| invalid(e.to_string()))
}

fn regex_search(value: &MjValue, pattern: &str, kwargs: Kwargs) -> Result<bool, MjError> {
    regex_matches(value, pattern, Anchor::Search, &kwargs)
}

fn regex_match(value: &MjValue, pattern: &str, kwargs: Kwargs) -> Result<bool, MjError> {
    regex_matches(value, pattern, Anchor::Start, &kwargs)
}

fn regex_test(value: &MjValue, pattern: &str, kwargs: Kwargs) -> Result<bool, MjError> {
    let match_type = kwargs
        .get::<Option<String>>("match_type")?
        .unwrap_or_else(|| "search".into());
    let anchor = match match_type.as_str() {
        "match" => Anchor::Start,
        "search" => Anchor::Search,
        "fullmatch" => Anchor::Full,
        _ => {
            return Err(invalid(
                "Invalid match_type specified. Expected one of: search, match, fullmatch.",
            ));
        }
    };
    regex_matches(value, pattern, anchor, &kwargs)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Num(u64),
    Text(String),
}

impl PartialOrd for Part {
    fn partial_cmp(&self, other: &Part) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Part {
    fn cmp(&self, other: &Part) -> Ordering {
        match (self, other) {
            (Part::Num(a), Part::Num(b)) => a.cmp(b),
            (Part::Text(a), Part::Text(b)) => a.cmp(b),
            // Python 3 cannot compare these at all; a number sorting after text keeps
            // "1.0" > "1.0rc" style comparisons sensible.
            (Part::Num(_), Part::Text(_)) => Ordering::Greater,
            (Part::Text(_), Part::Num(_)) => Ordering::Less,
        }
    }
}

/// LooseVersion: runs of digits (numbers) and of letters, every other character a
/// separator.
fn loose_parts(v: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, parts: &mut Vec<Part>| {
        if current.is_empty() {
            return;
        }
        let part = match current.parse::<u64>() {
            Ok(n) => Part::Num(n),
            Err(_) => Part::Text(std::mem::take(current)),
        };
        current.clear();
        parts.push(part);
    };
    for c in v.chars() {
        let same_kind = current
            .chars()
            .next()
            .is_none_or(|p| p.is_ascii_digit() == c.is_ascii_digit());
        if c == '.' || !c.is_ascii_alphanumeric() {
            flush(&mut current, &mut parts);
        } else {
            if !same_kind {
                flush(&mut current, &mut parts);
            }
            current.push(c.to_ascii_lowercase());
        }
    }
    flush(&mut current, &mut parts);
    parts
}

/// StrictVersion's parts: three numbers and an optional `a`/`b` pre-release.
type StrictVersion = (Vec<u64>, Option<(char, u64)>);

/// StrictVersion: `N.N[.N][(a|b)N]`.
fn strict_parts(v: &str) -> Result<StrictVersion, MjError> {
    let bad = || {
        invalid(format!(
            "Version comparison failed: invalid version number '{v}'"
        ))
    };
    let (nums, pre) = match v.find(['a', 'b']) {
        Some(i) => {
            let tag = v[i..].chars().next().unwrap_or('a');
            let n = v[i + 1..].parse::<u64>().map_err(|_| bad())?;
            (&v[..i], Some((tag, n)))
        }
        None => (v, None),
    };
    let mut numbers: Vec<u64> = nums
        .split('.')
        .map(|p| p.parse::<u64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if !(2..=3).contains(&numbers.len()) {
        return Err(bad());
    }
    numbers.resize(3, 0);
    Ok((numbers, pre))
}

fn compare_semver(a: &str, b: &str) -> Result<Ordering, MjError> {
    fn parse(v: &str) -> Result<(Vec<u64>, Option<Vec<Part>>), MjError> {
        let v = v.split('+').next().unwrap_or(v);
        let (core, pre) = match v.split_once('-') {
            Some((c, p)) => (c, Some(loose_parts(p))),
            None => (v, None),
        };
        let nums: Vec<u64> = core
            .split('.')
            .map(|p| p.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                invalid(format!(
                    "Version comparison failed: invalid semantic version '{v}'"
                ))
            })?;
        if nums.len() != 3 {
            return Err(invalid(format!(
                "Version comparison failed: invalid semantic version '{v}'"
            )));
        }
        Ok((nums, pre))
    }
    let (an, ap) = parse(a)?;
    let (bn, bp) = parse(b)?;
    Ok(an.cmp(&bn).then_with(|| match (ap, bp) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y),
    }))
}

/// `version(other, operator='eq', strict=None, version_type=None)`, as Ansible's
/// `version_compare`: the arguments by position or name, in its order of checks and words.
fn version(
    value: &MjValue,
    other: &MjValue,
    operator: Option<&str>,
    strict: Option<MjValue>,
    kwargs: Kwargs,
) -> Result<bool, MjError> {
    let operator = match kwargs.get::<Option<String>>("operator")? {
        Some(op) => op,
        None => operator.unwrap_or("eq").to_string(),
    };
    let strict = match kwargs.get::<Option<MjValue>>("strict")? {
        Some(s) => Some(s),
        None => strict,
    }
    .filter(|s| !s.is_none());
    let version_type = kwargs.get::<Option<String>>("version_type")?;
    kwargs.assert_all_used()?;
    if strict.is_some() && version_type.is_some() {
        return Err(invalid("Cannot specify both 'strict' and 'version_type'"));
    }
    let (a, b) = (text_of(value), text_of(other));
    if !value.is_true() {
        return Err(invalid("Input version value cannot be empty"));
    }
    if !other.is_true() {
        return Err(invalid(
            "Version parameter to compare against cannot be empty",
        ));
    }
    let version_type = match (strict.is_some_and(|s| s.is_true()), version_type) {
        (true, _) => "strict".to_string(),
        (false, Some(t)) => t,
        (false, None) => "loose".to_string(),
    };
    let failed = |e: String| invalid(format!("Version comparison failed: {e}"));
    let ordering = match version_type.as_str() {
        "loose" => loose_parts(&a).cmp(&loose_parts(&b)),
        "strict" => {
            let (an, ap) = strict_parts(&a)?;
            let (bn, bp) = strict_parts(&b)?;
            an.cmp(&bn).then_with(|| match (ap, bp) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) => x.cmp(&y),
            })
        }
        "semver" | "semantic" => compare_semver(&a, &b)?,
        "pep440" => {
            let parse = |v: &str| {
                crate::pep440::Version::parse(v)
                    .ok_or_else(|| failed(format!("Invalid version: '{v}'")))
            };
            parse(&a)?.cmp(&parse(&b)?)
        }
        other => {
            return Err(invalid(format!(
                "Invalid version type ({other}). Must be one of 'loose', 'strict', 'semver', \
                 'semantic', 'pep440'"
            )));
        }
    };
    Ok(match operator.as_str() {
        "==" | "=" | "eq" => ordering == Ordering::Equal,
        "!=" | "<>" | "ne" => ordering != Ordering::Equal,
        "<" | "lt" => ordering == Ordering::Less,
        "<=" | "le" => ordering != Ordering::Greater,
        ">" | "gt" => ordering == Ordering::Greater,
        ">=" | "ge" => ordering != Ordering::Less,
        other => {
            return Err(invalid(format!(
                "Invalid operator type ({other}). Must be one of '==', '=', 'eq', '<', 'lt', \
                 '<=', 'le', '>', 'gt', '>=', 'ge', '!=', '<>', 'ne'"
            )));
        }
    })
}

fn members(value: &MjValue) -> Result<Vec<MjValue>, MjError> {
    Ok(value.try_iter()?.collect())
}

fn subset(value: &MjValue, of: &MjValue) -> Result<bool, MjError> {
    let big = members(of)?;
    Ok(members(value)?.iter().all(|v| big.contains(v)))
}

fn superset(value: &MjValue, of: &MjValue) -> Result<bool, MjError> {
    subset(of, value)
}

/// `contains`: Python's `item in value`, so a substring of a string counts.
fn contains(value: &MjValue, item: &MjValue) -> Result<bool, MjError> {
    if let (Some(text), Some(part)) = (value.as_str(), item.as_str()) {
        return Ok(text.contains(part));
    }
    Ok(members(value)?.contains(item))
}

fn any(value: &MjValue) -> Result<bool, MjError> {
    Ok(value.try_iter()?.any(|v| v.is_true()))
}

fn all(value: &MjValue) -> Result<bool, MjError> {
    Ok(value.try_iter()?.all(|v| v.is_true()))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn loose_versions_compare_like_looseversion() {
        let cmp = |a: &str, b: &str| loose_parts(a).cmp(&loose_parts(b));
        assert_eq!(cmp("1.10", "1.9"), Ordering::Greater);
        assert_eq!(cmp("1.2.0", "1.2"), Ordering::Greater);
        assert_eq!(cmp("2.4.1", "2.4.1"), Ordering::Equal);
        assert_eq!(cmp("1.0a", "1.0"), Ordering::Greater);
        assert_eq!(cmp("3.10.0-1160.el7", "3.9"), Ordering::Greater);
    }
}
