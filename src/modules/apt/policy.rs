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
    /// The first package file of the installed (`***`) version, as apt lists it
    /// (`http://mirror.example.org/debian bookworm/main amd64 Packages`, `/var/lib/dpkg/status`).
    pub installed_from: Option<String>,
}

/// The policies by the name apt printed (a name apt does not know is absent). A name
/// with only a header and no versions is virtual: something may provide it.
pub fn parse(stdout: &str) -> BTreeMap<String, Policy> {
    let mut out: BTreeMap<String, Policy> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_table = false;
    let mut in_installed = false;
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
            in_installed = trimmed.starts_with("***");
            let text = trimmed.strip_prefix("***").unwrap_or(trimmed).trim_start();
            if let Some(version) = text.split_whitespace().next() {
                policy.versions.push(version.to_string());
            }
        } else if in_table && in_installed && policy.installed_from.is_none() {
            // `        500 http://... Packages`: a priority, then the file.
            if let Some((_, file)) = trimmed.split_once(' ') {
                policy.installed_from = Some(file.trim().to_string());
            }
        }
    }
    out
}

/// `apt-cache policy`'s `Package files:` without names: each file and its Release's
/// `o=` (origin), `""` for files without one (dpkg's status, a repository without Origin).
pub fn package_file_origins(stdout: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut file: Option<String> = None;
    for line in stdout.lines() {
        if line.starts_with("Pinned packages:") {
            break;
        }
        let trimmed = line.trim_start();
        if let Some(release) = trimmed.strip_prefix("release ") {
            if let Some(file) = file.take() {
                let origin = release
                    .split(',')
                    .find_map(|f| f.strip_prefix("o="))
                    .unwrap_or("");
                out.insert(file, origin.to_string());
            }
        } else if line.starts_with(' ')
            && !trimmed.starts_with("origin ")
            && let Some((priority, name)) = trimmed.split_once(' ')
            && priority.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        {
            out.entry(name.trim().to_string()).or_default();
            file = Some(name.trim().to_string());
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
                versions: vec!["2.0".into(), "1.0".into()],
                installed_from: Some("file:/opt/repo ./ Packages".into()),
            }
        );
        assert_eq!(p["mail-transport-agent"], Policy::default());
        assert!(!p.contains_key("nothing-of-that-name"));
    }

    #[test]
    fn reads_the_origin_of_each_package_file() {
        let out = "Package files:\n 100 /var/lib/dpkg/status\n     release a=now\n 500 http://mirror.example.org/debian bookworm/main amd64 Packages\n     release v=12.12,o=Debian,a=oldstable,n=bookworm,l=Debian,c=main,b=amd64\n     origin mirror.example.org\n 500 file:/opt/turbo-repo ./ Packages\n     release o=turbo-play,a=turbo-tests,l=turbo-play,c=\nPinned packages:\n";
        let origins = package_file_origins(out);
        assert_eq!(origins["/var/lib/dpkg/status"], "");
        assert_eq!(
            origins["http://mirror.example.org/debian bookworm/main amd64 Packages"],
            "Debian"
        );
        assert_eq!(origins["file:/opt/turbo-repo ./ Packages"], "turbo-play");
    }
}
