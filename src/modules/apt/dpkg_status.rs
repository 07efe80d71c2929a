//! What dpkg's database says of the names a task asks about, read with one
//! `dpkg-query -W` (no apt started), and apt's record of which packages were installed
//! automatically (`/var/lib/apt/extended_states`).

use std::collections::{BTreeMap, BTreeSet};

/// dpkg-query's format: one line a package (and architecture) it knows.
pub const QUERY_FORMAT: &str = "${Package}\\t${Architecture}\\t${db:Status-Abbrev}\\t${Version}\\n";

/// One package as dpkg knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Known {
    /// `db:Status-Abbrev`'s second letter is `i`: unpacked and configured (Ansible's
    /// `CURSTATE_INSTALLED`), held or not.
    pub installed: bool,
    /// Anything of it is left on disk (installed, or only its conffiles: `rc`), which is
    /// what `purge` removes.
    pub has_files: bool,
    pub version: String,
}

/// dpkg-query's lines by package name (an architecture qualifier, as in `name:i386`,
/// keys the same name); a package known in several architectures counts as installed when
/// any is.
pub fn parse_query(stdout: &str) -> BTreeMap<String, Known> {
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    for line in stdout.lines() {
        let mut fields = line.split('\t');
        let (Some(name), Some(_arch), Some(status), Some(version)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let current = status.as_bytes().get(1).copied().unwrap_or(b'n');
        let entry = Known {
            installed: current == b'i',
            has_files: current != b'n',
            version: version.to_string(),
        };
        match known.get_mut(name) {
            Some(seen) if seen.installed => {}
            Some(seen) => {
                let has_files = seen.has_files || entry.has_files;
                *seen = Known { has_files, ..entry };
            }
            None => {
                known.insert(name.to_string(), entry);
            }
        }
    }
    known
}

/// The package name without an architecture qualifier (`libc6:amd64` → `libc6`).
pub fn base_name(name: &str) -> &str {
    name.split_once(':').map_or(name, |(n, _)| n)
}

/// The packages apt marks `Auto-Installed: 1` in extended_states (stanzas of
/// `Package:`, `Architecture:`, `Auto-Installed:`).
pub fn auto_installed(extended_states: &str) -> BTreeSet<String> {
    let mut auto = BTreeSet::new();
    for stanza in extended_states.split("\n\n") {
        let mut name = None;
        let mut is_auto = false;
        for line in stanza.lines() {
            if let Some(v) = line.strip_prefix("Package:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("Auto-Installed:") {
                is_auto = v.trim() == "1";
            }
        }
        if let (Some(name), true) = (name, is_auto) {
            auto.insert(name);
        }
    }
    auto
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_installed_removed_and_multiarch_lines() {
        let out = "tree\tamd64\tii \t2.1.0-1\n\
                   turbo-conf\tall\trc \t1.0\n\
                   libfoo\ti386\tun \t\n\
                   libfoo\tamd64\tii \t3.2\n\
                   held\tamd64\thi \t1\n";
        let known = parse_query(out);
        assert_eq!(
            known["tree"],
            Known {
                installed: true,
                has_files: true,
                version: "2.1.0-1".into()
            }
        );
        assert!(!known["turbo-conf"].installed);
        assert!(known["turbo-conf"].has_files);
        assert!(known["libfoo"].installed);
        assert_eq!(known["libfoo"].version, "3.2");
        assert!(known["held"].installed);
        assert!(!known.contains_key("missing"));
        assert_eq!(base_name("libc6:amd64"), "libc6");
    }

    #[test]
    fn reads_auto_installed_marks() {
        let text = "Package: a\nArchitecture: amd64\nAuto-Installed: 1\n\n\
                    Package: b\nArchitecture: amd64\nAuto-Installed: 0\n\n\
                    Package: c\nArchitecture: all\nAuto-Installed: 1\n";
        let auto: Vec<String> = auto_installed(text).into_iter().collect();
        assert_eq!(auto, ["a", "c"]);
    }
}
