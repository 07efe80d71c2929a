//! Variable files: the YAML or JSON mappings behind `group_vars/`, `host_vars/`,
//! `vars_files` and `include_vars`, and Ansible's rules for finding them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

#[cfg(test)]
use crate::template::Templar;
use crate::template::{TemplateError, is_template};
use crate::yaml::{LoadError, Source};

pub type Vars = Map<String, Value>;

/// Extensions Ansible tries after the bare name (`C.YAML_FILENAME_EXTENSIONS`).
const EXTENSIONS: [&str; 3] = [".yml", ".yaml", ".json"];

/// Reads one variables file: a mapping (an empty file is no variables), else an error at
/// file:line:col.
pub fn read_vars_file(path: &Path) -> Result<Vars, LoadError> {
    let source = Source::read(path)?;
    let root = source.parse()?;
    match root.to_json() {
        Value::Object(vars) => Ok(vars),
        Value::Null => Ok(Vars::new()),
        _ => Err(source.error(
            Some(root.span),
            format!(
                "a variables file must be a mapping, got {}",
                root.kind_name()
            ),
            Some("write `name: value` lines at the top level of the file".into()),
        )),
    }
}

/// The files that hold an entity's variables in a `group_vars/` or `host_vars/` directory,
/// as Ansible's `find_vars_files`: the first of `<name>`, `<name>.yml`, `<name>.yaml`,
/// `<name>.json` that exists; a directory stands for every vars file inside it (sorted,
/// recursively). `listing` is the directory's entries, read once.
pub fn entity_vars_files(dir: &Path, listing: &HashSet<String>, name: &str) -> Vec<PathBuf> {
    let candidates = std::iter::once(name.to_string())
        .chain(EXTENSIONS.iter().map(|ext| format!("{name}{ext}")));
    for candidate in candidates {
        if !listing.contains(&candidate) {
            continue;
        }
        let path = dir.join(&candidate);
        return if path.is_dir() {
            files_in_vars_dir(&path)
        } else {
            vec![path]
        };
    }
    Vec::new()
}

/// Ansible's `_get_dir_vars_files`: sorted; hidden files and `~` backups skipped; files
/// with no extension or a vars extension; subdirectories without an extension recursed.
fn files_in_vars_dir(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => return Vec::new(),
    };
    names.sort();
    let mut found = Vec::new();
    for name in names {
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let path = dir.join(&name);
        let ext = Path::new(&name)
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()));
        match ext {
            None if path.is_dir() => found.extend(files_in_vars_dir(&path)),
            None => found.push(path),
            Some(ext) if path.is_file() && EXTENSIONS.contains(&ext.as_str()) => found.push(path),
            Some(_) => {}
        }
    }
    found
}

/// A directory's entry names, or none when it does not exist.
pub fn listing(dir: &Path) -> HashSet<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => HashSet::new(),
    }
}

/// Parsed variables files by path, so that `vars_files` are not re-read for every task on
/// every host.
#[derive(Debug, Default)]
pub struct VarsFileCache {
    files: Mutex<HashMap<PathBuf, Arc<Vars>>>,
}

impl VarsFileCache {
    pub fn read(&self, path: &Path) -> Result<Arc<Vars>, LoadError> {
        if let Some(vars) = self.files.lock().expect("vars file cache").get(path) {
            return Ok(vars.clone());
        }
        let vars = Arc::new(read_vars_file(path)?);
        self.files
            .lock()
            .expect("vars file cache")
            .insert(path.to_path_buf(), vars.clone());
        Ok(vars)
    }
}

/// Where a relative vars file is looked for, as Ansible's `path_dwim_relative_stack` for
/// a play: `<playbook_dir>/vars/<path>` (unless the path already starts with `vars/`),
/// then `<playbook_dir>/<path>`. Absolute and `~` paths are taken as written.
pub fn vars_file_candidates(playbook_dir: &Path, path: &str) -> Vec<PathBuf> {
    let written = crate::tilde::expand_user_path(path);
    if written.is_absolute() {
        return vec![written];
    }
    let mut out = Vec::new();
    if path.split('/').next() != Some("vars") {
        out.push(playbook_dir.join("vars").join(&written));
    }
    out.push(playbook_dir.join(&written));
    out
}

#[derive(Debug, thiserror::Error)]
pub enum VarsFilesError {
    #[error("vars file {entry} was not found (looked for {looked_for})")]
    NotFound { entry: String, looked_for: String },
    #[error(
        "an undefined variable was found when attempting to template the vars_files item '{entry}': {error}"
    )]
    Template {
        entry: String,
        #[source]
        error: TemplateError,
    },
    #[error("{0}")]
    Load(#[from] LoadError),
}

/// How an entry's path is templated with the variables in scope: the executor resolves
/// the templates those variables hold first (`_files: ['vars/{{ os }}.yml']` means the
/// file of this host's `os`), as Ansible's lazy templating does.
pub type RenderEntry<'a> = &'a dyn Fn(&str, &Vars) -> Result<String, TemplateError>;

/// A play's `vars_files`, layered onto `vars` in order. Each entry's paths are templated
/// (`render`) with the variables so far (earlier files included) under `above` (extra
/// vars and magic variables, which files never override); the first path that exists is
/// read. As in Ansible, an entry naming an undefined variable is skipped until facts are
/// gathered, and is an error after.
pub fn layer_play_vars_files(
    entries: &[Vec<String>],
    playbook_dir: &Path,
    render: RenderEntry,
    vars: &mut Vars,
    above: &Vars,
    facts_gathered: bool,
    cache: &VarsFileCache,
) -> Result<(), VarsFilesError> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut scope = vars.clone();
    scope.extend(above.clone());
    'entries: for entry in entries {
        let mut looked_for = Vec::new();
        for raw in entry {
            let rendered = if is_template(raw) {
                render(raw, &scope)
            } else {
                Ok(raw.clone())
            };
            let path = match rendered {
                Ok(path) => path,
                Err(TemplateError::Undefined { .. }) if !facts_gathered => continue 'entries,
                Err(error) => {
                    return Err(VarsFilesError::Template {
                        entry: entry_text(entry),
                        error,
                    });
                }
            };
            for candidate in vars_file_candidates(playbook_dir, &path) {
                if candidate.is_file() {
                    let loaded = cache.read(&candidate)?;
                    for (k, v) in loaded.iter() {
                        crate::hash_merge::set(vars, k, v.clone());
                        if !above.contains_key(k) {
                            scope.insert(k.clone(), v.clone());
                        }
                    }
                    continue 'entries;
                }
                looked_for.push(candidate.display().to_string());
            }
        }
        return Err(VarsFilesError::NotFound {
            entry: entry_text(entry),
            looked_for: looked_for.join(", "),
        });
    }
    Ok(())
}

fn entry_text(entry: &[String]) -> String {
    match entry {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_yaml_json_and_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = write(dir.path(), "a.yml", "x: 1\nflag: yes\n");
        let json_file = write(dir.path(), "b.json", r#"{"y": [1, 2]}"#);
        let empty = write(dir.path(), "c", "# nothing\n");
        assert_eq!(
            Value::Object(read_vars_file(&yaml).unwrap()),
            json!({"x": 1, "flag": true})
        );
        assert_eq!(
            Value::Object(read_vars_file(&json_file).unwrap()),
            json!({"y": [1, 2]})
        );
        assert!(read_vars_file(&empty).unwrap().is_empty());
    }

    #[test]
    fn a_list_is_an_error_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "bad.yml", "\n- 1\n- 2\n");
        let err = read_vars_file(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}:2:1: a variables file must be a mapping, got a list",
                path.display()
            )),
            "{err}"
        );
        let broken = write(dir.path(), "broken.yml", "a: 1\nb: [\n");
        let err = read_vars_file(&broken).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:", broken.display())), "{err}");
    }

    #[test]
    fn entity_files_first_form_wins_and_dirs_are_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "web.yml", "a: 1\n");
        write(d, "web.json", "{}");
        write(d, "db/20-b.yaml", "b: 1\n");
        write(d, "db/10-a.yml", "a: 1\n");
        write(d, "db/nested/x", "x: 1\n");
        write(d, "db/.hidden.yml", "h: 1\n");
        write(d, "db/old.yml~", "o: 1\n");
        write(d, "db/notes.txt", "n\n");
        write(d, "all", "z: 1\n");
        let list = listing(d);
        assert_eq!(entity_vars_files(d, &list, "web"), [d.join("web.yml")]);
        assert_eq!(
            entity_vars_files(d, &list, "db"),
            [
                d.join("db/10-a.yml"),
                d.join("db/20-b.yaml"),
                d.join("db/nested/x")
            ]
        );
        assert_eq!(entity_vars_files(d, &list, "all"), [d.join("all")]);
        assert!(entity_vars_files(d, &list, "nope").is_empty());
    }

    #[test]
    fn cache_reads_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "v.yml", "a: 1\n");
        let cache = VarsFileCache::default();
        assert_eq!(cache.read(&path).unwrap()["a"], json!(1));
        std::fs::write(&path, "a: 2\n").unwrap();
        assert_eq!(cache.read(&path).unwrap()["a"], json!(1));
    }
}

#[cfg(test)]
mod play_vars_files_tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Vars {
        v.as_object().unwrap().clone()
    }

    fn layer(
        dir: &Path,
        entries: &[&[&str]],
        vars: Value,
        above: Value,
        facts: bool,
    ) -> Result<Vars, VarsFilesError> {
        let entries: Vec<Vec<String>> = entries
            .iter()
            .map(|e| e.iter().map(|s| s.to_string()).collect())
            .collect();
        let mut vars = obj(vars);
        layer_play_vars_files(
            &entries,
            dir,
            &|raw, scope| Templar::new().render_str(raw, &minijinja::Value::from_serialize(scope)),
            &mut vars,
            &obj(above),
            facts,
            &VarsFileCache::default(),
        )?;
        Ok(vars)
    }

    #[test]
    fn candidates_prefer_the_vars_subdir() {
        let dir = Path::new("/pb");
        assert_eq!(
            vars_file_candidates(dir, "a.yml"),
            [PathBuf::from("/pb/vars/a.yml"), PathBuf::from("/pb/a.yml")]
        );
        assert_eq!(
            vars_file_candidates(dir, "vars/a.yml"),
            [PathBuf::from("/pb/vars/a.yml")]
        );
        assert_eq!(
            vars_file_candidates(dir, "/etc/x.yml"),
            [PathBuf::from("/etc/x.yml")]
        );
    }

    #[test]
    fn files_layer_in_order_templated_first_found() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("vars")).unwrap();
        std::fs::write(
            d.join("common.yml"),
            "a: common\nwhich: prod\nx: from_file\n",
        )
        .unwrap();
        std::fs::write(d.join("vars/prod.yml"), "a: prod\n").unwrap();
        std::fs::write(d.join("default.yml"), "a: default\n").unwrap();
        let vars = layer(
            d,
            &[
                &["common.yml"],
                &["{{ which }}_missing.yml", "{{ which }}.yml", "default.yml"],
            ],
            json!({"a": "play", "x": "play"}),
            json!({"x": "extra"}),
            false,
        )
        .unwrap();
        assert_eq!(vars["a"], json!("prod"));
        // The file still sets it; extra vars win later, when vars.rs layers them.
        assert_eq!(vars["x"], json!("from_file"));
        let vars = layer(
            d,
            &[&["nope.yml", "default.yml"]],
            json!({}),
            json!({}),
            false,
        )
        .unwrap();
        assert_eq!(vars["a"], json!("default"));
    }

    #[test]
    fn missing_files_and_undefined_variables() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let err = layer(d, &[&["nope.yml"]], json!({}), json!({}), false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "vars file nope.yml was not found (looked for {}, {})",
                d.join("vars/nope.yml").display(),
                d.join("nope.yml").display()
            )
        );
        // Undefined before facts: skipped; after: an error naming the entry.
        assert!(
            layer(d, &[&["{{ os }}.yml"]], json!({}), json!({}), false)
                .unwrap()
                .is_empty()
        );
        let err = layer(d, &[&["{{ os }}.yml"]], json!({}), json!({}), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("vars_files item '{{ os }}.yml'"), "{err}");
        std::fs::write(d.join("bad.yml"), "[1]\n").unwrap();
        let err = layer(d, &[&["bad.yml"]], json!({}), json!({}), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.yml:1:1: a variables file must be a mapping"),
            "{err}"
        );
    }
}
