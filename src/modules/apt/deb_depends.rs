//! A `.deb` file's dependencies, as Ansible's `install_deb` reads them with python-apt's
//! `DebPackage`: each `Depends`/`Pre-Depends` group that nothing installed satisfies adds
//! its first alternative to what apt-get installs before dpkg installs the file, and with
//! `install_recommends` so does each `Recommends` group not installed. Those packages are
//! then marked automatically installed.

use std::cmp::Ordering;

use super::dpkg_status::Known;
use super::version;
use std::collections::BTreeMap;

/// One alternative of a dependency group: `name`, optionally `(op version)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Alternative {
    pub name: String,
    pub relation: Option<(String, String)>,
}

/// `a (>= 1), b | c:any` → groups of alternatives.
pub(super) fn parse(field: &str) -> Vec<Vec<Alternative>> {
    field
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(|group| group.split('|').filter_map(alternative).collect())
        .filter(|g: &Vec<Alternative>| !g.is_empty())
        .collect()
}

fn alternative(text: &str) -> Option<Alternative> {
    let text = text.trim();
    // Architecture restrictions ([amd64]) and build profiles (<!nocheck>) do not concern
    // a binary package's fields; they are dropped.
    let text = text.split(['[', '<']).next().unwrap_or("").trim();
    let (name, relation) = match text.split_once('(') {
        Some((name, rest)) => {
            let inner = rest.trim_end().trim_end_matches(')').trim();
            let op_len = inner
                .find(|c: char| !matches!(c, '<' | '>' | '='))
                .unwrap_or(inner.len());
            let (op, version) = inner.split_at(op_len);
            (
                name.trim(),
                Some((op.to_string(), version.trim().to_string())),
            )
        }
        None => (text, None),
    };
    let name = name.split(':').next().unwrap_or("").trim();
    (!name.is_empty()).then(|| Alternative {
        name: name.to_string(),
        relation,
    })
}

/// Every name the groups mention, for one dpkg-query.
pub(super) fn names(groups: &[Vec<Alternative>]) -> Vec<String> {
    let mut names: Vec<String> = groups.iter().flatten().map(|a| a.name.clone()).collect();
    names.sort();
    names.dedup();
    names
}

/// Whether an installed package satisfies the alternative (apt_pkg.check_dep).
fn satisfied(alternative: &Alternative, known: &BTreeMap<String, Known>) -> bool {
    let Some(installed) = known.get(&alternative.name).filter(|k| k.installed) else {
        return false;
    };
    let Some((op, wanted)) = &alternative.relation else {
        return true;
    };
    let order = version::compare(&installed.version, wanted);
    match op.as_str() {
        ">=" => order != Ordering::Less,
        "<=" => order != Ordering::Greater,
        ">>" | ">" => order == Ordering::Greater,
        "<<" | "<" => order == Ordering::Less,
        _ => order == Ordering::Equal,
    }
}

/// The first alternative of each group nothing installed satisfies.
pub(super) fn missing(groups: &[Vec<Alternative>], known: &BTreeMap<String, Known>) -> Vec<String> {
    let mut names = Vec::new();
    for group in groups {
        if group.iter().any(|a| satisfied(a, known)) {
            continue;
        }
        if let Some(first) = group.first()
            && !names.contains(&first.name)
        {
            names.push(first.name.clone());
        }
    }
    names
}

/// `Depends: a\n b` as dpkg-deb prints a folded field: its lines joined.
pub(super) fn field(output: &str, name: &str) -> String {
    let mut value = String::new();
    let mut inside = false;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix(&format!("{name}: ")) {
            value.push_str(rest);
            inside = true;
        } else if inside && line.starts_with([' ', '\t']) {
            value.push(' ');
            value.push_str(line.trim());
        } else {
            inside = false;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(entries: &[(&str, &str)]) -> BTreeMap<String, Known> {
        entries
            .iter()
            .map(|(name, version)| {
                (
                    name.to_string(),
                    Known {
                        installed: true,
                        version: version.to_string(),
                        ..Known::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn groups_not_satisfied_by_installed_packages_need_their_first_alternative() {
        let groups = parse("libc6 (>= 2.34), vim-tiny | vim, packagetwo:any, zlib1g (>> 1:1.3)");
        assert_eq!(
            names(&groups),
            ["libc6", "packagetwo", "vim", "vim-tiny", "zlib1g"]
        );
        let installed = known(&[
            ("libc6", "2.36-9"),
            ("vim", "2:9.0"),
            ("zlib1g", "1:1.2.13"),
        ]);
        assert_eq!(missing(&groups, &installed), ["packagetwo", "zlib1g"]);
        assert_eq!(missing(&parse(""), &installed), Vec::<String>::new());
    }

    #[test]
    fn reads_a_folded_field_of_dpkg_deb() {
        let out = "Package: baz\nDepends: a,\n b\nRecommends: rolldice, uidmap\n";
        assert_eq!(field(out, "Depends"), "a, b");
        assert_eq!(field(out, "Recommends"), "rolldice, uidmap");
        assert_eq!(field(out, "Pre-Depends"), "");
    }
}
