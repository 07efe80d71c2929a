//! The files of a role: `meta/`, `defaults/` and `vars/` (a file or a directory of
//! files), found with Ansible's extensions.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::loader::Loader;
use crate::yaml::{LoadError, Node, Source, Value};

impl Loader<'_> {
    /// `meta/main.yml` must be a mapping whose `dependencies` is a list.
    pub(super) fn check_meta_root(&self, root: &Node) -> Result<(), LoadError> {
        match &root.value {
            Value::Null => Ok(()),
            Value::Map(_) => match root.get("dependencies") {
                Some(deps) if !deps.is_null() && deps.as_seq().is_none() => Err(self.err(
                    deps.span,
                    format!(
                        "dependencies must be a list of roles, got {}",
                        deps.kind_name()
                    ),
                    Some("write `dependencies:` followed by `- role: name` lines".into()),
                )),
                _ => Ok(()),
            },
            _ => Err(self.err(
                root.span,
                format!(
                    "a role's meta/main.yml must be a mapping, got {}",
                    root.kind_name()
                ),
                Some("write `dependencies: []` (and `galaxy_info:`) at the top level".into()),
            )),
        }
    }

    /// `defaults/` or `vars/` of a role: a mapping (an absent file is empty).
    pub(super) fn role_vars_file(
        &self,
        dir: &Path,
        sub: &str,
        from: Option<&str>,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let Some(source) = read_role_file(dir, sub, from)? else {
            // `defaults/main/` (or `vars/<from>/`) as a directory: every file in it, in
            // sorted order, later ones winning, as Ansible reads it.
            let mut merged = serde_json::Map::new();
            for file in role_vars_dir_files(&dir.join(sub).join(from.unwrap_or("main"))) {
                let source = Source::read(&file)?;
                merged.extend(self.role_vars_source(&source, sub)?);
            }
            return Ok(merged);
        };
        self.role_vars_source(&source, sub)
    }

    pub(super) fn role_vars_source(
        &self,
        source: &Source,
        sub: &str,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        let root = source.parse()?;
        match &root.value {
            Value::Map(_) | Value::Null => self.child(source).mapping(&root, sub),
            _ => Err(self.child(source).err(
                root.span,
                format!(
                    "a role's {sub} file must be a mapping of variables, got {}",
                    root.kind_name()
                ),
                Some("write one `name: value` line per variable".into()),
            )),
        }
    }
}

/// `<role>/<sub>/<name>` with Ansible's extensions (`.yml`, `.yaml`, `.json`, none);
/// `name` defaults to `main`.
pub(super) fn read_role_file(
    dir: &Path,
    sub: &str,
    name: Option<&str>,
) -> Result<Option<Source>, LoadError> {
    let name = name.unwrap_or("main");
    let base = dir.join(sub);
    for ext in ["", ".yml", ".yaml", ".json"] {
        let candidate = base.join(format!("{name}{ext}"));
        if candidate.is_file() {
            return Source::read(&candidate).map(Some);
        }
    }
    Ok(None)
}

/// The task Ansible puts first in a role whose entry point has an argument spec
/// (`meta/argument_specs.yml`, or `argument_specs` in `meta/main.yml`): a
/// validate_argument_spec of the role's parameters and variables, tagged `always`, as a
/// task file of one task (JSON is YAML) for the loader to read like the role's own.
pub(super) fn argument_spec_task(
    dir: &Path,
    role_name: &str,
    entry_point: Option<&str>,
    params: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<Source>, LoadError> {
    let entry_point = entry_point.unwrap_or("main");
    let (path, specs) = match read_role_file(dir, "meta", Some("argument_specs"))? {
        Some(source) => (source.path.clone(), source.parse()?.to_json()),
        None => match read_role_file(dir, "meta", None)? {
            Some(source) => (source.path.clone(), source.parse()?.to_json()),
            None => return Ok(None),
        },
    };
    let Some(spec) = specs
        .get("argument_specs")
        .and_then(|s| s.get(entry_point))
        .filter(|s| s.is_object())
    else {
        return Ok(None);
    };
    let mut name = format!("Validating arguments against arg spec '{entry_point}'");
    if let Some(short) = spec.get("short_description").and_then(|s| s.as_str()) {
        name = format!("{name} - {short}");
    }
    let task = serde_json::json!([{
        "name": name,
        "ansible.builtin.validate_argument_spec": {
            "argument_spec": spec.get("options").cloned().unwrap_or_else(|| serde_json::json!({})),
            "provided_arguments": params,
            "validate_args_context": {
                "type": "role",
                "name": role_name,
                "argument_spec_name": entry_point,
                "path": std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()).display().to_string(),
            },
        },
        "tags": ["always"],
    }]);
    Ok(Some(Source::from_text(path, task.to_string())))
}

/// The variables files in a role's `defaults/main/`-style directory, as Ansible lists
/// them: sorted by name, subdirectories (without an extension) searched in place, hidden
/// files and `~` backups skipped, only `.yml`, `.yaml`, `.json` or no extension.
pub(super) fn role_vars_dir_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    let mut files = Vec::new();
    for name in names {
        let text = name.to_string_lossy();
        if text.starts_with('.') || text.ends_with('~') {
            continue;
        }
        let path = dir.join(&name);
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        if path.is_dir() && ext.is_none() {
            files.extend(role_vars_dir_files(&path));
        } else if path.is_file()
            && ext
                .as_deref()
                .is_none_or(|e| matches!(e, "yml" | "yaml" | "json"))
        {
            files.push(path);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use crate::playbook::test_support::tree::*;
    use serde_json::{Value as Json, json};

    #[test]
    fn role_defaults_and_vars_may_be_directories_of_files() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [r]\n"),
            ("roles/r/tasks/main.yml", "- ping:\n"),
            ("roles/r/defaults/main/a.yml", "a: 1\nshared: a\n"),
            ("roles/r/defaults/main/b.yaml", "b: 2\nshared: b\n"),
            ("roles/r/defaults/main/c/d.yml", "d: 4\nshared: d\n"),
            ("roles/r/defaults/main/.hidden.yml", "hidden: 1\n"),
            ("roles/r/defaults/main/notes.txt", "txt: 1\n"),
            ("roles/r/defaults/main/e.yml~", "backup: 1\n"),
            ("roles/r/vars/main/v.yml", "v: 1\n"),
        ]);
        let pb = load(&dir).unwrap();
        let role = pb.plays[0].tasks[0].role.as_ref().unwrap();
        assert_eq!(
            Json::Object(role.defaults.clone()),
            json!({"a": 1, "shared": "d", "b": 2, "d": 4})
        );
        assert_eq!(Json::Object(role.vars.clone()), json!({"v": 1}));
    }

    #[test]
    fn roles_by_path_and_bad_role_files() {
        let dir = tree(&[
            ("site.yml", "- hosts: all\n  roles: [lib/r]\n"),
            ("lib/r/tasks/main.yml", "- name: t\n  ping:\n"),
            ("lib/r/defaults/main.yml", "- not\n- a mapping\n"),
        ]);
        let e = load(&dir).unwrap_err();
        assert!(
            tail(&e, &dir).starts_with("DIR/lib/r/defaults/main.yml:1:1: a role's defaults file must be a mapping of variables, got a list"),
            "{e}"
        );
        std::fs::write(dir.path().join("lib/r/defaults/main.yml"), "x: 1\n").unwrap();
        let play = load(&dir).unwrap().plays.remove(0);
        assert_eq!(play.tasks[0].display_name(), "r : t");
        assert_eq!(
            play.tasks[0].role.as_ref().unwrap().path,
            dir.path().join("lib/r")
        );
    }
}
