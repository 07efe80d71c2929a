//! Host pattern syntax as ansible-playbook reads `hosts:` and `--limit`: splitting on `,`
//! (or `:`), the `&`/`!` operators, shell globs, `~regex`, and `[i]` / `[a:b]` subscripts.

use std::sync::LazyLock;

use regex::Regex;

use crate::fnmatch::Pattern;

use super::address::parse_address;

/// Ansible's `split_host_pattern`. Commas always separate; without a comma the text is one
/// pattern if it reads as an address (an IPv6 address or `web[1:3]`), else `:` separates.
pub fn split_host_pattern(pattern: &str) -> Vec<String> {
    let parts: Vec<String> = if pattern.contains(',') {
        pattern.split(',').map(str::to_string).collect()
    } else if parse_address(pattern, true).is_some() {
        vec![pattern.to_string()]
    } else {
        colon_separated(pattern)
    };
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Runs of characters other than whitespace, `:`, `[` and `]`, or whole `[...]` groups.
fn colon_separated(pattern: &str) -> Vec<String> {
    static PIECE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:[^\s:\[\]]|\[[^\]]*\])+").expect("valid regex"));
    PIECE
        .find_iter(pattern)
        .map(|m| m.as_str().to_string())
        .collect()
}

/// Unions first, then intersections (`&`), then exclusions (`!`); with no plain pattern the
/// operators apply to `all`.
pub fn order_patterns(patterns: &[String]) -> Vec<String> {
    let mut regular = Vec::new();
    let mut intersect = Vec::new();
    let mut exclude = Vec::new();
    for p in patterns.iter().filter(|p| !p.is_empty()) {
        if p.starts_with('!') {
            exclude.push(p.clone());
        } else if p.starts_with('&') {
            intersect.push(p.clone());
        } else {
            regular.push(p.clone());
        }
    }
    if regular.is_empty() {
        regular.push("all".to_string());
    }
    regular
        .into_iter()
        .chain(intersect)
        .chain(exclude)
        .collect()
}

/// `[i]` picks one host, `[a:b]` an inclusive slice, `[a:]` to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscript {
    Index(i64),
    Slice { start: usize, end: Option<usize> },
}

/// Separates a trailing subscript from the expression it applies to (not for `~regex`).
pub fn split_subscript(pattern: &str) -> (&str, Option<Subscript>) {
    static WITH_SUBSCRIPT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$").expect("valid regex")
    });
    if pattern.starts_with('~') {
        return (pattern, None);
    }
    let Some(caps) = WITH_SUBSCRIPT.captures(pattern) else {
        return (pattern, None);
    };
    let expr = caps.get(1).map_or(pattern, |m| m.as_str());
    if let Some(index) = caps.get(2) {
        return match index.as_str().parse() {
            Ok(i) => (expr, Some(Subscript::Index(i))),
            Err(_) => (pattern, None),
        };
    }
    let start = caps[3].parse().unwrap_or(usize::MAX);
    let end = match &caps[5] {
        "" => None,
        e => Some(e.parse().unwrap_or(usize::MAX)),
    };
    (expr, Some(Subscript::Slice { start, end }))
}

/// Applies a subscript as Python slicing does; `None` when a single index is out of range
/// (Ansible: "No hosts matched the subscripted pattern").
pub fn apply_subscript<T: Copy>(hosts: Vec<T>, subscript: Option<Subscript>) -> Option<Vec<T>> {
    let Some(subscript) = subscript else {
        return Some(hosts);
    };
    if hosts.is_empty() {
        return Some(hosts);
    }
    let len = hosts.len();
    match subscript {
        Subscript::Index(i) => {
            let at = if i < 0 { len as i64 + i } else { i };
            usize::try_from(at)
                .ok()
                .and_then(|at| hosts.get(at).copied())
                .map(|h| vec![h])
        }
        // Ansible treats an end of 0 like a missing end: `[0:0]` picks just the first host.
        Subscript::Slice {
            start,
            end: Some(0),
        } => hosts.get(start).map(|h| vec![*h]),
        Subscript::Slice { start, end } => {
            let end = end.map_or(len, |e| e.saturating_add(1).min(len));
            Some(
                hosts
                    .get(start..end.max(start))
                    .unwrap_or_default()
                    .to_vec(),
            )
        }
    }
}

/// Whether a pattern would be read as a glob or regex (and so is also tried on host names
/// even when it matched groups).
pub fn is_wildcard(pattern: &str) -> bool {
    pattern.starts_with('~') || pattern.contains(['.', '?', '*', '['])
}

/// A compiled name matcher: Python's `fnmatch` for plain patterns (whole-name, case
/// sensitive), or `re.match` (anchored at the start only) for `~regex`, as Ansible's
/// `InventoryManager._match_one_pattern`.
pub enum Matcher {
    Glob(Pattern),
    Regex(Regex),
}

impl Matcher {
    pub fn new(pattern: &str) -> Result<Matcher, regex::Error> {
        match pattern.strip_prefix('~') {
            Some(re) => Ok(Matcher::Regex(Regex::new(&format!("^(?:{re})"))?)),
            None => Ok(Matcher::Glob(Pattern::new(pattern))),
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Regex(re) => re.is_match(name),
            Matcher::Glob(pattern) => pattern.matches(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(p: &str) -> Vec<String> {
        split_host_pattern(p)
    }

    #[test]
    fn splits_like_ansible() {
        assert_eq!(split("web:db"), ["web", "db"]);
        assert_eq!(split("web:&db"), ["web", "&db"]);
        assert_eq!(split("web:!db"), ["web", "!db"]);
        assert_eq!(split("a, b ,c,"), ["a", "b", "c"]);
        assert_eq!(split("web[0:2]"), ["web[0:2]"]);
        assert_eq!(split("web[0:2]:db"), ["web[0:2]", "db"]);
        assert_eq!(split("fe80::1"), ["fe80::1"]);
        assert_eq!(split("host:22"), ["host:22"]);
        assert_eq!(split(""), Vec::<String>::new());
    }

    #[test]
    fn orders_unions_then_intersections_then_exclusions() {
        let p: Vec<String> = ["!c", "a", "&b", "d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(order_patterns(&p), ["a", "d", "&b", "!c"]);
        let only_ops: Vec<String> = vec!["!c".into()];
        assert_eq!(order_patterns(&only_ops), ["all", "!c"]);
    }

    #[test]
    fn reads_subscripts() {
        assert_eq!(
            split_subscript("web[0]"),
            ("web", Some(Subscript::Index(0)))
        );
        assert_eq!(
            split_subscript("web[-1]"),
            ("web", Some(Subscript::Index(-1)))
        );
        assert_eq!(
            split_subscript("web[1:2]"),
            (
                "web",
                Some(Subscript::Slice {
                    start: 1,
                    end: Some(2)
                })
            )
        );
        assert_eq!(
            split_subscript("web[1:]"),
            (
                "web",
                Some(Subscript::Slice {
                    start: 1,
                    end: None
                })
            )
        );
        assert_eq!(split_subscript("~web[0]"), ("~web[0]", None));
        assert_eq!(split_subscript("web[a]"), ("web[a]", None));
    }

    #[test]
    fn applies_subscripts_as_python_slices() {
        let hosts = vec![10, 11, 12, 13];
        let sub = |s| apply_subscript(hosts.clone(), Some(s));
        assert_eq!(sub(Subscript::Index(0)), Some(vec![10]));
        assert_eq!(sub(Subscript::Index(-1)), Some(vec![13]));
        assert_eq!(sub(Subscript::Index(4)), None);
        assert_eq!(sub(Subscript::Index(-5)), None);
        assert_eq!(
            sub(Subscript::Slice {
                start: 1,
                end: Some(2)
            }),
            Some(vec![11, 12])
        );
        assert_eq!(
            sub(Subscript::Slice {
                start: 2,
                end: None
            }),
            Some(vec![12, 13])
        );
        assert_eq!(
            sub(Subscript::Slice {
                start: 3,
                end: Some(9)
            }),
            Some(vec![13])
        );
        assert_eq!(
            sub(Subscript::Slice {
                start: 7,
                end: Some(9)
            }),
            Some(vec![])
        );
        assert_eq!(
            sub(Subscript::Slice {
                start: 0,
                end: Some(0)
            }),
            Some(vec![10])
        );
        assert_eq!(
            apply_subscript(Vec::<u8>::new(), Some(Subscript::Index(3))),
            Some(vec![])
        );
    }

    #[test]
    fn globs_match_whole_names() {
        let m = |p: &str, n: &str| Matcher::new(p).unwrap().matches(n);
        assert!(m("web*", "web1"));
        assert!(m("web*", "web"));
        assert!(!m("web*", "xweb1"));
        assert!(m("*.example.com", "a.example.com"));
        assert!(!m("*.example.com", "a.example.org"));
        assert!(m("db?", "db1"));
        assert!(!m("db?", "db12"));
        assert!(m("h[12]", "h2"));
        assert!(!m("h[!12]", "h2"));
        assert!(m("h[a-c]x", "hbx"));
        assert!(m("a[b", "a[b"));
        assert!(m("*b*c", "abxbc"));
        assert!(!m("Web*", "web1"));
    }

    #[test]
    fn regexes_anchor_at_the_start_only() {
        let m = |p: &str, n: &str| Matcher::new(p).unwrap().matches(n);
        assert!(m(r"~web\d+", "web12"));
        assert!(m(r"~web\d", "web12x"));
        assert!(!m(r"~web\d", "xweb1"));
        assert!(m("~(a|b)x", "bx"));
        assert!(Matcher::new("~web(").is_err());
    }
}
