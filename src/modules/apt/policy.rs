//! `apt-cache policy NAME...`: what apt would install of each name (its candidate) and
//! every version it knows, asked only when a task needs a version it cannot read from
//! dpkg's database (a package not installed, a version pin, `state: latest`).

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// `None` for `(none)`.
    pub candidate: Option<String>,
    /// The version table's versions, highest first as apt prints them.
    pub versions: Vec<String>,
}

/// The policies by the name apt printed (a name apt does not know is absent). A name
/// with only a header and no versions is virtual: something may provide it.
pub fn parse(stdout: &str) -> BTreeMap<String, Policy> {
    let mut out: BTreeMap<String, Policy> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_table = false;
    for line in stdout.lines() {
        if !line.starts_with(' ') {
            if let Some(name) = line.strip_suffix(':') {
                current = Some(name.to_string());
                in_table = false;
                out.entry(name.to_string()).or_default();
            }
            continue;
        }
        let Some(policy) = current.as_ref().and_then(|n| out.get_mut(n)) else {
            continue;
        };
        let trimmed = line.trim_start();
        if let Some(v) = trimmed.strip_prefix("Candidate:") {
            let v = v.trim();
            policy.candidate = (v != "(none)").then(|| v.to_string());
        } else if trimmed.starts_with("Version table:") {
            in_table = true;
        } else if in_table && !line.starts_with("        ") {
            // A version line: ` *** 1.0 100` (the installed one) or `     1.1 500`.
            let text = trimmed.strip_prefix("***").unwrap_or(trimmed).trim_start();
            if let Some(version) = text.split_whitespace().next() {
                policy.versions.push(version.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_candidates_and_version_tables() {
        let out = "turbo-multi:\n  Installed: 1.0\n  Candidate: 2.0\n  Version table:\n     2.0 500\n        500 file:/opt/repo ./ Packages\n *** 1.0 500\n        500 file:/opt/repo ./ Packages\n        100 /var/lib/dpkg/status\n\
                   mail-transport-agent:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n";
        let p = parse(out);
        assert_eq!(
            p["turbo-multi"],
            Policy {
                candidate: Some("2.0".into()),
                versions: vec!["2.0".into(), "1.0".into()]
            }
        );
        assert_eq!(p["mail-transport-agent"], Policy::default());
        assert!(!p.contains_key("nothing-of-that-name"));
    }
}
