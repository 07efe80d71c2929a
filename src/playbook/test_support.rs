//! What the loader's tests share: playbooks from text, and trees of files.

/// A playbook written inline, loaded as `site.yml`.
pub mod text {
    use std::path::Path;

    use crate::playbook::{Playbook, Task, load_playbook_text};
    use crate::yaml::LoadError;

    pub fn load(text: &str) -> Result<Playbook, LoadError> {
        load_playbook_text(Path::new("site.yml"), text)
    }

    pub fn ok(text: &str) -> Playbook {
        load(text).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn err(text: &str) -> LoadError {
        load(text).expect_err("should fail")
    }

    /// One task, written without indentation, loaded inside a play.
    pub fn task(text: &str) -> Task {
        let mut body = String::new();
        for (i, line) in text.trim_start_matches('\n').lines().enumerate() {
            body.push_str(if i == 0 { "    - " } else { "      " });
            body.push_str(line);
            body.push('\n');
        }
        let handlers = "  handlers:\n    - name: restart\n      ping:\n";
        ok(&format!("- hosts: all\n  tasks:\n{body}{handlers}")).plays[0].tasks[0].clone()
    }

    pub fn message_at(text: &str) -> (String, usize, usize) {
        let e = err(text);
        let span = e.span.expect("has a span");
        (e.message.clone(), span.line, span.column)
    }
}

/// A playbook in a directory of files.
pub mod tree {
    use crate::playbook::{Playbook, Task, load_playbook};
    use crate::yaml::LoadError;

    /// A directory of files, `(relative path, text)`.
    pub fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    pub fn load(dir: &tempfile::TempDir) -> Result<Playbook, LoadError> {
        load_playbook(&dir.path().join("site.yml"))
    }

    /// The tasks' own names (without the `role : ` of the banner).
    /// The tasks' names as written (the implicit handler flushes left out).
    pub fn names(tasks: &[Task]) -> Vec<String> {
        tasks
            .iter()
            .filter(|t| !t.implicit)
            .map(|t| t.name.clone().unwrap_or_else(|| t.action.clone()))
            .collect()
    }

    pub fn tail(err: &LoadError, dir: &tempfile::TempDir) -> String {
        err.to_string()
            .replace(&dir.path().display().to_string(), "DIR")
    }

    pub const ROLE_FILES: &[(&str, &str)] = &[
        (
            "roles/web/tasks/main.yml",
            "- name: web task\n  debug: msg={{ port }}\n  notify: restart web\n- import_tasks: extra.yml\n",
        ),
        ("roles/web/tasks/extra.yml", "- name: web extra\n  ping:\n"),
        ("roles/web/tasks/other.yml", "- name: web other\n  ping:\n"),
        (
            "roles/web/handlers/main.yml",
            "- name: restart web\n  ping:\n",
        ),
        ("roles/web/defaults/main.yml", "port: 80\nlevel: default\n"),
        ("roles/web/vars/main.yml", "level: role\n"),
        (
            "roles/web/meta/main.yml",
            "dependencies:\n  - role: common\n    greeting: hi\n",
        ),
        (
            "roles/common/tasks/main.yml",
            "- name: common task\n  ping:\n",
        ),
    ];
}
