//! Host names as Ansible reads them from inventories and patterns: `host:port`,
//! `[v6::addr]:port`, and `[1:10]` / `[a:f]` / `[01:10:2]` ranges.

use std::sync::LazyLock;

use regex::Regex;

const NUMERIC_RANGE: &str = r"\[(?:[0-9]+:[0-9]+)(?::[0-9]+)?\]";
const ALPHANUMERIC_RANGE: &str = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]";

static BRACKETED_HOSTPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[(.+)\]:([0-9]+)$").expect("valid regex"));

static HOSTPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$").expect("valid regex"));

static IPV4: LazyLock<Regex> = LazyLock::new(|| {
    let c = format!(r"(?:[01]?[0-9]{{1,2}}|2[0-4][0-9]|25[0-5]|{NUMERIC_RANGE})");
    Regex::new(&format!(r"(?i)^(?:{c}\.){{3}}{c}$")).expect("valid regex")
});

static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    let c = format!(r"(?:[0-9a-f]{{1,4}}|{NUMERIC_RANGE})");
    let forms = [
        format!(r"(?:{c}:){{7}}{c}"),
        format!(r"(?:{c}:){{1,6}}:"),
        format!(r"(?:{c}:)(?::{c}){{1,6}}"),
        format!(r"(?:{c}:){{2}}(?::{c}){{1,5}}"),
        format!(r"(?:{c}:){{3}}(?::{c}){{1,4}}"),
        format!(r"(?:{c}:){{4}}(?::{c}){{1,3}}"),
        format!(r"(?:{c}:){{5}}(?::{c}){{1,2}}"),
        format!(r"(?:{c}:){{6}}(?::{c})"),
        format!(r":(?::{c}){{1,6}}"),
        format!(r"{c}?::"),
        format!(r"(?:0:){{6}}(?:{c}\.){{3}}{c}"),
        format!(r"::(?:ffff:)?(?:{c}\.){{3}}{c}"),
        format!(r"(?:0:){{5}}ffff:(?:{c}\.){{3}}{c}"),
    ];
    Regex::new(&format!(r"(?i)^(?:{})$", forms.join("|"))).expect("valid regex")
});

/// A DNS-like name whose labels may contain ranges; a label must not end in `-` or `_`
/// (spelled without look-behind, which the regex crate lacks).
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    let first = format!(r"(?:\w|{ALPHANUMERIC_RANGE})");
    let middle = format!(r"(?:[\w-]|{ALPHANUMERIC_RANGE})");
    let last = format!(r"(?:[^\W_]|{ALPHANUMERIC_RANGE})");
    let label = format!(r"(?:{last}|{first}{middle}*{last})");
    Regex::new(&format!(r"(?i)^{label}(?:\.{label})*$")).expect("valid regex")
});

/// Ansible's `parse_address`: splits an optional port off a host name, IPv4 or IPv6 address
/// (`[addr]:port` for IPv6). `None` when the text is none of those.
pub fn parse_address(address: &str, allow_ranges: bool) -> Option<(String, Option<u64>)> {
    let mut address = address.to_string();
    let mut port = None;
    for pattern in [&*BRACKETED_HOSTPORT, &*HOSTPORT] {
        if let Some(caps) = pattern.captures(&address) {
            port = Some(caps[2].parse::<u64>().ok()?);
            address = caps[1].to_string();
        }
    }
    let recognised =
        IPV4.is_match(&address) || IPV6.is_match(&address) || HOSTNAME.is_match(&address);
    if !recognised || (!allow_ranges && address.contains('[')) {
        return None;
    }
    Some((address, port))
}

/// The host names a pattern stands for, and the port it gives them.
pub type Expanded = (Vec<String>, Option<u64>);

/// Ansible's `_expand_hostpattern`: the host names a pattern such as `web[01:03]:2222`
/// stands for, and its port.
pub fn expand_host_pattern(pattern: &str) -> Result<Expanded, String> {
    let (base, port) = parse_address(pattern, true).unwrap_or_else(|| (pattern.to_string(), None));
    let names = if base.contains('[') {
        expand_hostname_range(&base)?
    } else {
        vec![base]
    };
    Ok((names, port))
}

/// Expands the first `[begin:end(:step)]` of `line`, then recursively any later ones.
pub fn expand_hostname_range(line: &str) -> Result<Vec<String>, String> {
    let Some((head, rest)) = line.split_once('[') else {
        return Ok(vec![line.to_string()]);
    };
    let Some((range, tail)) = rest.split_once(']') else {
        return Err("the range has no closing `]`".into());
    };
    let bounds: Vec<&str> = range.split(':').collect();
    if bounds.len() != 2 && bounds.len() != 3 {
        return Err("host range must be begin:end or begin:end:step".into());
    }
    let begin = if bounds[0].is_empty() { "0" } else { bounds[0] };
    let end = bounds[1];
    if end.is_empty() {
        return Err("host range must specify end value".into());
    }
    let step_text = bounds.get(2).copied().unwrap_or("1");
    let width = if begin.len() > 1 && begin.starts_with('0') {
        if begin.len() != end.len() {
            return Err("host range must specify equal-length begin and end formats".into());
        }
        begin.len()
    } else {
        0
    };
    let parse_int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{s}` is not a number or a single letter"))
    };
    const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let step = parse_int(step_text)?;
    if step <= 0 {
        return Err("the step of a host range must be a positive number".into());
    }
    let items: Vec<String> = match (LETTERS.find(begin), LETTERS.find(end)) {
        (Some(b), Some(e)) => {
            if b > e {
                return Err("host range must have begin <= end".into());
            }
            LETTERS[b..=e]
                .chars()
                .step_by(step as usize)
                .map(String::from)
                .collect()
        }
        _ => {
            let (b, e) = (parse_int(begin)?, parse_int(end)?);
            (b..=e)
                .step_by(step as usize)
                .map(|n| format!("{n:0width$}"))
                .collect()
        }
    };
    let mut names = Vec::new();
    for item in items {
        let name = format!("{head}{item}{tail}");
        if name.contains('[') {
            names.extend(expand_hostname_range(&name)?);
        } else {
            names.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Option<(String, Option<u64>)> {
        parse_address(s, true)
    }

    #[test]
    fn splits_ports() {
        assert_eq!(
            addr("127.0.0.1:2222"),
            Some(("127.0.0.1".into(), Some(2222)))
        );
        assert_eq!(addr("web1:22"), Some(("web1".into(), Some(22))));
        assert_eq!(addr("[::1]:2200"), Some(("::1".into(), Some(2200))));
        assert_eq!(addr("::1"), Some(("::1".into(), None)));
        assert_eq!(addr("fe80::1:22"), Some(("fe80::1:22".into(), None)));
        assert_eq!(addr("web[01:03]:22"), Some(("web[01:03]".into(), Some(22))));
        assert_eq!(
            addr("db-[a:f].example.com"),
            Some(("db-[a:f].example.com".into(), None))
        );
    }

    #[test]
    fn rejects_non_addresses() {
        assert_eq!(addr("web:db"), None);
        assert_eq!(addr("web*"), None);
        assert_eq!(addr("bad-"), None);
        assert_eq!(addr("web[1:x]"), None);
        assert_eq!(parse_address("web[1:3]", false), None);
        assert_eq!(addr("under_score"), Some(("under_score".into(), None)));
    }

    #[test]
    fn expands_ranges() {
        assert_eq!(
            expand_hostname_range("web[01:03]").unwrap(),
            ["web01", "web02", "web03"]
        );
        assert_eq!(
            expand_hostname_range("h[1:10:4]").unwrap(),
            ["h1", "h5", "h9"]
        );
        assert_eq!(
            expand_hostname_range("db-[a:c]").unwrap(),
            ["db-a", "db-b", "db-c"]
        );
        assert_eq!(expand_hostname_range("[:2]x").unwrap(), ["0x", "1x", "2x"]);
        assert_eq!(
            expand_hostname_range("r[1:2]c[a:b]").unwrap(),
            ["r1ca", "r1cb", "r2ca", "r2cb"]
        );
        assert!(expand_hostname_range("web[1:x]").is_err());
        assert!(expand_hostname_range("web[01:100]").is_err());
        assert!(expand_hostname_range("web[1]").is_err());
        assert!(expand_hostname_range("web[1:]").is_err());
        assert!(expand_hostname_range("web[1:3").is_err());
    }

    #[test]
    fn expands_patterns_with_ports() {
        let (names, port) = expand_host_pattern("h[2:3]:2200").unwrap();
        assert_eq!(names, ["h2", "h3"]);
        assert_eq!(port, Some(2200));
        let (names, port) = expand_host_pattern("plain").unwrap();
        assert_eq!((names, port), (vec!["plain".to_string()], None));
    }
}
