//! The controller's Python: the interpreter that has ansible-core, found once per run the
//! way turbo-play looks for it everywhere (`TURBO_ANSIBLE_PYTHON`, else the interpreter of
//! `ansible-playbook` on PATH, else `python3`), with where its `ansible` and
//! `ansible_collections` packages are. Python modules take their `module_utils` from it;
//! the plugin host runs on it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A Python on the controller, as asked once.
#[derive(Debug, Clone, Default)]
pub struct ControllerPython {
    /// The interpreter (as it was named: a path, or a command found on PATH).
    pub python: PathBuf,
    /// Its version, `(3, 12)`.
    pub version: (u32, u32),
    /// ansible-core's package directory, when this Python has ansible-core.
    pub ansible_dir: Option<PathBuf>,
    /// The directories holding an `ansible_collections` package (the `ansible`
    /// distribution's collections).
    pub collection_roots: Vec<PathBuf>,
}

/// How to get ansible-core where turbo-play can find it.
pub const INSTALL_HINT: &str = "install ansible-core on the controller (`pip install ansible-core`, \
     or `pip install ansible` for the collections too), or point TURBO_ANSIBLE_PYTHON at a \
     Python that has it";

/// How to get a Python at all.
pub const PYTHON_HINT: &str = "install Python 3 on the controller (`apt-get install python3`, \
     `dnf install python3`), or point TURBO_ANSIBLE_PYTHON at one";

/// The Pythons turbo-play asks, in order, each once per run: the first that has
/// ansible-core, else the first that runs at all; `None` when no Python runs.
pub fn controller() -> Option<&'static ControllerPython> {
    static FOUND: OnceLock<Option<ControllerPython>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            // Asked in order until one has ansible-core: the later ones are not started.
            let mut first_that_ran = None;
            for python in candidates() {
                let Some(found) = ask(&python) else { continue };
                if found.ansible_dir.is_some() {
                    return Some(found);
                }
                first_that_ran.get_or_insert(found);
            }
            first_that_ran
        })
        .as_ref()
}

fn candidates() -> Vec<PathBuf> {
    let mut pythons: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("TURBO_ANSIBLE_PYTHON") {
        pythons.push(PathBuf::from(p));
    }
    if let Some(python) = on_path("ansible-playbook").and_then(|p| shebang_python(&p)) {
        pythons.push(python);
    }
    pythons.push(PathBuf::from("python3"));
    pythons.dedup();
    pythons
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The interpreter a Python script's `#!` line names (`#!/venv/bin/python3`).
pub(crate) fn shebang_python(script: &Path) -> Option<PathBuf> {
    let text = std::fs::read(script).ok()?;
    let first = text.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?.strip_prefix("#!")?;
    let mut words = line.split_whitespace();
    let program = words.next()?;
    if program.ends_with("/env") {
        return words.next().map(PathBuf::from);
    }
    Some(PathBuf::from(program))
}

/// What `python` answers, kept across runs while nothing it came from changed
/// (`controller_python.rs`).
fn ask(python: &Path) -> Option<ControllerPython> {
    super::controller_python::ask(python)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shebang_names_its_interpreter_directly_or_through_env() {
        let dir = tempfile::tempdir().unwrap();
        let direct = dir.path().join("a");
        std::fs::write(&direct, "#!/venv/bin/python3 -E\nprint()\n").unwrap();
        assert_eq!(
            shebang_python(&direct),
            Some(PathBuf::from("/venv/bin/python3"))
        );
        let env = dir.path().join("b");
        std::fs::write(&env, "#!/usr/bin/env python3.12\n").unwrap();
        assert_eq!(shebang_python(&env), Some(PathBuf::from("python3.12")));
        let none = dir.path().join("c");
        std::fs::write(&none, "echo\n").unwrap();
        assert_eq!(shebang_python(&none), None);
    }
}
