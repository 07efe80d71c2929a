//! Requirement strings as Ansible's pip module reads its `name` and `version` arguments
//! (`_recover_package_name`, its `Package` class over `packaging`'s `Requirement`), and the
//! lines of a requirements file that can be decided without pip.

use crate::pep440::{Specifier, parse_specifiers};

/// PEP 503's normalized project name: lowercase, runs of `-_.` as one `-`.
pub fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            out.extend(c.to_lowercase());
            in_run = false;
        }
    }
    out
}

/// One entry of `name`: a parsed requirement, or something pip alone understands (a URL,
/// a path, a VCS reference), which Ansible passes on as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Package {
    Plain(Requirement),
    Other(String),
}

/// `name[extras] specifiers`, without an environment marker or URL (those are `Other`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub name: String,
    pub extras: Vec<String>,
    pub specifiers: Vec<Specifier>,
}

impl Requirement {
    /// PEP 508 without markers and URLs; `None` for anything else.
    pub fn parse(text: &str) -> Option<Requirement> {
        let text = text.trim();
        let name_end = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(text.len());
        let name = &text[..name_end];
        let well_formed_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && name
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if !well_formed_name {
            return None;
        }
        let mut rest = text[name_end..].trim_start();
        let mut extras = Vec::new();
        if let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']')?;
            for extra in inner[..close].split(',') {
                let extra = extra.trim();
                if !extra.is_empty() {
                    extras.push(extra.to_string());
                }
            }
            rest = inner[close + 1..].trim_start();
        }
        if rest.contains([';', '@']) {
            return None;
        }
        let rest = match rest.strip_prefix('(') {
            Some(inner) => inner.strip_suffix(')')?,
            None => rest,
        };
        let specifiers = parse_specifiers(rest)?;
        Some(Requirement {
            name: name.to_string(),
            extras,
            specifiers,
        })
    }

    pub fn canonical(&self) -> String {
        canonical_name(&self.name)
    }

    /// Whether an installed `version` satisfies every specifier.
    pub fn satisfied_by(&self, version: &str) -> bool {
        self.specifiers.iter().all(|s| s.contains(version))
    }
}

/// `str(Requirement)` as packaging writes it, which is what Ansible hands pip: the name as
/// written, sorted extras, the specifiers sorted as strings and joined by commas.
impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if !self.extras.is_empty() {
            let mut extras = self.extras.clone();
            extras.sort();
            write!(f, "[{}]", extras.join(","))?;
        }
        let mut specs: Vec<String> = self
            .specifiers
            .iter()
            .map(|s| format!("{}{}", s.op, s.version))
            .collect();
        specs.sort();
        f.write_str(&specs.join(","))
    }
}

impl Package {
    pub fn parse(text: &str) -> Package {
        match Requirement::parse(text) {
            Some(req) => Package::Plain(req),
            None => Package::Other(text.to_string()),
        }
    }

    /// Ansible's `Package(name, version)`: a version starting with a digit means `==`.
    pub fn with_version(&self, version: &str) -> Package {
        let version = version.trim_start();
        let separator = if version.starts_with(|c: char| c.is_ascii_digit()) {
            "=="
        } else {
            " "
        };
        Package::parse(&format!("{self}{separator}{version}"))
    }

    pub fn has_specifier(&self) -> bool {
        matches!(self, Package::Plain(r) if !r.specifiers.is_empty())
    }
}

impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Package::Plain(req) => req.fmt(f),
            Package::Other(text) => f.write_str(text),
        }
    }
}

/// The packages pip's `install --dry-run --report` would install, each as
/// `name==version` (what Ansible's `_resolve_package_names` makes of them).
pub fn resolved_from_report(report: &str) -> Vec<Package> {
    let Ok(report) = serde_json::from_str::<serde_json::Value>(report) else {
        return Vec::new();
    };
    report["install"]
        .as_array()
        .map(|installs| {
            installs
                .iter()
                .filter_map(|item| {
                    let meta = &item["metadata"];
                    let (name, version) = (meta["name"].as_str()?, meta["version"].as_str()?);
                    Some(Package::parse(&format!("{name}=={version}")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Ansible's `_is_vcs_url`: the name starts with `svn+`, `git+`, `hg+` or `bzr+`.
pub fn is_vcs_url(name: &str) -> bool {
    ["svn+", "git+", "hg+", "bzr+"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

const SPECIFIER_STARTS: [&str; 7] = [">=", "<=", ">", "<", "==", "!=", "~="];

/// Ansible's `_recover_package_name`: `name` split on commas (a list argument already
/// was), then a piece starting with a comparison joins the package before it, so
/// `["django>1.11.1", "<1.11.3"]` is one package; commas inside `[extras]` stay.
pub fn recover_package_names(names: &[String]) -> Vec<String> {
    let pieces: Vec<&str> = names.iter().flat_map(|n| n.split(',')).collect();
    let mut packages = Vec::new();
    let mut parts: Vec<&str> = Vec::new();
    let mut in_brackets = false;
    for piece in pieces {
        let is_name = !SPECIFIER_STARTS
            .iter()
            .any(|op| piece.trim_start().starts_with(op));
        if is_name && !in_brackets {
            if !parts.is_empty() {
                packages.push(parts.join(","));
            }
            parts.clear();
        }
        if piece.contains('[') {
            in_brackets = true;
        }
        if in_brackets && piece.contains(']') {
            in_brackets = false;
        }
        parts.push(piece);
    }
    packages.push(parts.join(","));
    packages
}

/// The requirements of a requirements file when every line is a plain requirement (or a
/// comment or blank); `None` when any line needs pip itself: an option (`-r`, `-e`,
/// `--index-url`...), a URL or path, an environment marker, a variable.
pub fn plain_requirements_file(text: &str) -> Option<Vec<Requirement>> {
    let joined = text.replace("\\\n", "");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = match line.find('#') {
            Some(0) => "",
            Some(i) if line[..i].ends_with([' ', '\t']) => &line[..i],
            _ => line,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('-') || line.contains("${") {
            return None;
        }
        out.push(Requirement::parse(line)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recovers_names_as_ansible() {
        assert_eq!(
            recover_package_names(&strings(&[
                "django>1.11.1",
                "<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0",
                "<2.0.0"
            ])),
            [
                "django>1.11.1,<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ]
        );
        assert_eq!(
            recover_package_names(&strings(&[
                "django>1.11.1,<1.11.3,ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ])),
            [
                "django>1.11.1,<1.11.3",
                "ipaddress",
                "simpleproject>1.1.0,<2.0.0"
            ]
        );
        assert_eq!(
            recover_package_names(&strings(&["requests[socks,security]>=2", "six"])),
            ["requests[socks,security]>=2", "six"]
        );
    }

    #[test]
    fn parses_requirements_as_packaging() {
        let req = Requirement::parse("Foo_Bar [b, a] >= 1.0 , <2").unwrap();
        assert_eq!(req.canonical(), "foo-bar");
        assert_eq!(req.to_string(), "Foo_Bar[a,b]<2,>=1.0");
        assert!(req.satisfied_by("1.5") && !req.satisfied_by("2.0"));
        assert_eq!(
            Requirement::parse("x (==1.0)").unwrap().to_string(),
            "x==1.0"
        );
        for other in [
            "git+https://example.invalid/x.git",
            "./local/dir",
            "/tmp/x.whl",
            "x ; python_version < '3'",
            "x @ file:///tmp/x",
            "x >= nonsense",
            "-e .",
        ] {
            assert_eq!(
                Package::parse(other),
                Package::Other(other.into()),
                "{other}"
            );
        }
        let plain = Package::parse("tinypkg");
        assert_eq!(plain.with_version("1.0").to_string(), "tinypkg==1.0");
        assert_eq!(
            plain.with_version(" >=1.0,<2").to_string(),
            "tinypkg<2,>=1.0"
        );
        assert!(plain.with_version("1.0").has_specifier() && !plain.has_specifier());
        assert_eq!(canonical_name("Zope.Interface__x"), "zope-interface-x");
    }

    #[test]
    fn reads_plain_requirements_files() {
        let reqs =
            plain_requirements_file("# pinned\ntinypkg==1.0  # why\n\nwithdep>=0.1 \\\n  ,<1\n")
                .unwrap();
        let shown: Vec<String> = reqs.iter().map(|r| r.to_string()).collect();
        assert_eq!(shown, ["tinypkg==1.0", "withdep<1,>=0.1"]);
        assert!(plain_requirements_file("-r other.txt\n").is_none());
        assert!(plain_requirements_file("--index-url x\nfoo\n").is_none());
        assert!(plain_requirements_file("https://x/y.whl\n").is_none());
        assert!(plain_requirements_file("foo; sys_platform == 'linux'\n").is_none());
        assert_eq!(plain_requirements_file("").unwrap(), []);
    }
}
