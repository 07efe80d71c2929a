//! Variable files: the YAML or JSON mappings behind `group_vars/`, `host_vars/`,
//! `vars_files` and `include_vars`, and Ansible's rules for finding them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

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
