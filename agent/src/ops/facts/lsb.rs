//! Ansible's `lsb` facts: what `lsb_release -a` says when it is installed, else what
//! /etc/lsb-release holds; an empty mapping when neither has anything (the fact is always
//! there, as Ansible's collector always sets it).

use std::path::Path;

use turbo_proto::FactValue;

/// The characters Ansible strips from both ends of each value.
const STRIP_QUOTES: &[char] = &['\'', '"', '\\'];

pub fn lsb() -> (String, FactValue) {
    let mut found = find_lsb_release()
        .and_then(|program| {
            let out = std::process::Command::new(program)
                .arg("-a")
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| parse_lsb_release_output(&String::from_utf8_lossy(&out.stdout)))
        })
        .unwrap_or_default();
    if found.is_empty() {
        found = std::fs::read_to_string("/etc/lsb-release")
            .map(|text| parse_lsb_release_file(&text))
            .unwrap_or_default();
    }
    ("lsb".to_string(), FactValue::Map(finish(found)))
}

/// `get_bin_path('lsb_release')`: PATH, then the sbin directories.
fn find_lsb_release() -> Option<std::path::PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .filter(|d| !d.is_empty())
        .chain(["/sbin", "/usr/sbin", "/usr/local/sbin"])
        .map(|d| Path::new(d).join("lsb_release"))
        .find(|p| p.is_file())
}

/// `lsb_release -a` as Ansible reads it: the first of its labels each line contains.
pub fn parse_lsb_release_output(out: &str) -> Vec<(String, String)> {
    let mut facts: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        let Some((_, value)) = line.split_once(':') else {
            continue;
        };
        let key = if line.contains("LSB Version:") {
            "release"
        } else if line.contains("Distributor ID:") {
            "id"
        } else if line.contains("Description:") {
            "description"
        } else if line.contains("Release:") {
            "release"
        } else if line.contains("Codename:") {
            "codename"
        } else {
            continue;
        };
        set(&mut facts, key, value.trim());
    }
    facts
}

/// /etc/lsb-release as Ansible reads it.
pub fn parse_lsb_release_file(text: &str) -> Vec<(String, String)> {
    let mut facts: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let Some((_, value)) = line.split_once('=') else {
            continue;
        };
        let key = if line.contains("DISTRIB_ID") {
            "id"
        } else if line.contains("DISTRIB_RELEASE") {
            "release"
        } else if line.contains("DISTRIB_DESCRIPTION") {
            "description"
        } else if line.contains("DISTRIB_CODENAME") {
            "codename"
        } else {
            continue;
        };
        set(&mut facts, key, value.trim());
    }
    facts
}

/// A later line replaces an earlier value in its place (a Python dict's assignment).
fn set(facts: &mut Vec<(String, String)>, key: &str, value: &str) {
    match facts.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => facts.push((key.to_string(), value.to_string())),
    }
}

/// `major_release` from `release`, and the quotes stripped from every non-empty value.
fn finish(mut facts: Vec<(String, String)>) -> Vec<(String, FactValue)> {
    if let Some((_, release)) = facts.iter().find(|(k, _)| k == "release") {
        let major = release.split('.').next().unwrap_or_default().to_string();
        facts.push(("major_release".into(), major));
    }
    facts
        .into_iter()
        .map(|(k, v)| {
            let v = if v.is_empty() {
                v
            } else {
                v.trim_matches(STRIP_QUOTES).to_string()
            };
            (k, FactValue::Str(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsb_release_and_its_file_read_as_ansible_reads_them() {
        let out = "No LSB modules are available.\nDistributor ID:\tDebian\nDescription:\tDebian GNU/Linux 12 (bookworm)\nRelease:\t12\nCodename:\tbookworm\n";
        let facts = finish(parse_lsb_release_output(out));
        let text = |k: &str| match facts.iter().find(|(n, _)| n == k) {
            Some((_, FactValue::Str(v))) => v.clone(),
            _ => panic!("{k}: {facts:?}"),
        };
        assert_eq!(text("id"), "Debian");
        assert_eq!(text("description"), "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(text("release"), "12");
        assert_eq!(text("major_release"), "12");
        assert_eq!(text("codename"), "bookworm");

        let file = "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=24.04\nDISTRIB_CODENAME=noble\nDISTRIB_DESCRIPTION=\"Ubuntu 24.04.1 LTS\"\n";
        let facts = finish(parse_lsb_release_file(file));
        assert!(facts.contains(&(
            "description".into(),
            FactValue::Str("Ubuntu 24.04.1 LTS".into())
        )));
        assert!(facts.contains(&("major_release".into(), FactValue::Str("24".into()))));
        assert!(finish(parse_lsb_release_file("")).is_empty());
    }
}
