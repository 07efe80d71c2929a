//! Where a module without a native planner lives on the controller, found as Ansible's
//! module loader finds it: `library/` beside the playbook and in the task's role, the
//! configured library path, collections (beside the playbook, `collections_path`, the
//! installed `ansible_collections` package), and ansible-core's own `ansible/modules/`.

use crate::plugins::catalog::is_identifier;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A module file and the name it is imported by on the target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleSource {
    pub path: PathBuf,
    /// `ansible.legacy.<name>`, `ansible.modules.<name>` or
    /// `ansible_collections.<ns>.<coll>.plugins.modules.<name>`.
    pub fqn: String,
    /// For a collection module, `<root>/ansible_collections/<ns>/<coll>`: its
    /// `plugins/module_utils` and `plugins/action` are there.
    pub collection: Option<PathBuf>,
}

/// What ansible-core installed on the controller provides: its package directory (for
/// `ansible.builtin` modules and `ansible.module_utils`) and the directories holding an
/// `ansible_collections` package (the `ansible` distribution's collections).
#[derive(Debug, Clone, Default)]
pub struct Installed {
    pub ansible_dir: Option<PathBuf>,
    pub collection_roots: Vec<PathBuf>,
}

pub use crate::plugins::python::INSTALL_HINT;

/// Asked once per run: what the controller Python that has ansible-core provides (see
/// `plugins::python::controller`).
pub fn installed() -> &'static Installed {
    static FOUND: OnceLock<Installed> = OnceLock::new();
    FOUND.get_or_init(|| match crate::plugins::python::controller() {
        Some(python) => Installed {
            ansible_dir: python.ansible_dir.clone(),
            collection_roots: python.collection_roots.clone(),
        },
        None => Installed::default(),
    })
}

/// Where a short module name may be a library module, in Ansible's order: the task's
/// role's `library/`, `library/` beside the playbook, then the configured library path.
pub fn library_dirs(
    role_dir: Option<&Path>,
    playbook_dir: &Path,
    configured: &[PathBuf],
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = role_dir
        .map(|r| r.join("library"))
        .into_iter()
        .chain(std::iter::once(playbook_dir.join("library")))
        .chain(configured.iter().cloned())
        .collect();
    dirs.dedup();
    dirs
}

/// A library module `name` in `dirs`: `<name>.py`, or any file whose name without its
/// extension is `name` (a shell script, a binary), as Ansible's loader indexes them.
pub fn library_module(name: &str, dirs: &[PathBuf]) -> Option<ModuleSource> {
    if name.contains(['/', '.']) || name.is_empty() {
        return None;
    }
    let found = dirs.iter().find_map(|dir| {
        let py = dir.join(format!("{name}.py"));
        if py.is_file() {
            return Some(py);
        }
        let bare = dir.join(name);
        if bare.is_file() {
            return Some(bare);
        }
        let mut others: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.file_stem().is_some_and(|s| s == name))
            .collect();
        others.sort();
        others.into_iter().next()
    })?;
    Some(ModuleSource {
        path: found,
        fqn: format!("ansible.legacy.{name}"),
        collection: None,
    })
}

/// The roots searched for collections, in order: `collections/` beside the playbook, the
/// configured (or default) collections path, then the installed `ansible_collections`.
pub fn collection_roots(playbook_dir: &Path, collections_path: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = std::iter::once(playbook_dir.join("collections"))
        .chain(collections_path.iter().cloned())
        .collect();
    roots.extend(installed().collection_roots.iter().cloned());
    roots.dedup();
    roots
}

/// The module `namespace.collection.name` of an installed collection.
pub fn collection_module(fqcn: &str, roots: &[PathBuf]) -> Option<ModuleSource> {
    let mut parts = fqcn.split('.');
    let (Some(ns), Some(coll), Some(name), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if [ns, coll, name].iter().any(|p| !is_identifier(p)) {
        return None;
    }
    roots.iter().find_map(|root| {
        let collection = root.join("ansible_collections").join(ns).join(coll);
        let path = collection
            .join("plugins/modules")
            .join(format!("{name}.py"));
        path.is_file().then(|| ModuleSource {
            path,
            fqn: format!("ansible_collections.{ns}.{coll}.plugins.modules.{name}"),
            collection: Some(collection),
        })
    })
}

/// ansible-core's own module `name` (`ansible.builtin.get_url`).
pub fn builtin_module(name: &str) -> Result<ModuleSource, String> {
    let dir = installed().ansible_dir.as_ref().ok_or_else(|| {
        format!(
            "the 'ansible.builtin.{name}' module runs from ansible-core's own code, which \
             turbo-play could not find on the controller: {INSTALL_HINT}"
        )
    })?;
    let path = dir.join("modules").join(format!("{name}.py"));
    if !path.is_file() {
        return Err(format!(
            "the installed ansible-core ({}) has no module '{name}'",
            dir.display()
        ));
    }
    Ok(ModuleSource {
        path,
        fqn: format!("ansible.modules.{name}"),
        collection: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_modules_are_found_by_stem_role_first() {
        let dir = tempfile::tempdir().unwrap();
        let role = dir.path().join("roles/r");
        std::fs::create_dir_all(role.join("library")).unwrap();
        std::fs::create_dir_all(dir.path().join("library")).unwrap();
        std::fs::write(dir.path().join("library/hello.py"), "").unwrap();
        std::fs::write(role.join("library/hello.py"), "").unwrap();
        std::fs::write(dir.path().join("library/script.sh"), "").unwrap();
        let dirs = library_dirs(Some(&role), dir.path(), &[]);
        let hello = library_module("hello", &dirs).unwrap();
        assert_eq!(hello.path, role.join("library/hello.py"));
        assert_eq!(hello.fqn, "ansible.legacy.hello");
        let script = library_module("script", &dirs).unwrap();
        assert_eq!(script.path, dir.path().join("library/script.sh"));
        assert!(library_module("nope", &dirs).is_none());
        assert!(library_module("a.b", &dirs).is_none());
    }

    #[test]
    fn collection_modules_by_fqcn() {
        let dir = tempfile::tempdir().unwrap();
        let coll = dir.path().join("ansible_collections/ns/c");
        std::fs::create_dir_all(coll.join("plugins/modules")).unwrap();
        std::fs::create_dir_all(coll.join("plugins/action")).unwrap();
        std::fs::write(coll.join("plugins/modules/m.py"), "").unwrap();
        std::fs::write(coll.join("plugins/modules/a.py"), "").unwrap();
        std::fs::write(coll.join("plugins/action/a.py"), "").unwrap();
        let roots = [dir.path().to_path_buf()];
        let m = collection_module("ns.c.m", &roots).unwrap();
        assert_eq!(m.fqn, "ansible_collections.ns.c.plugins.modules.m");
        assert!(collection_module("ns.c.a", &roots).is_some());
        assert!(collection_module("ns.c.x", &roots).is_none());
        assert!(collection_module("m", &roots).is_none());
    }
}
