//! Loader state that outlives one file, and the settings a load starts from.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::{RoleInfo, Task};

/// Loader state that outlives one file: block ids, the files being imported (to catch
/// cycles), and what the roles of the current play contribute.
pub(super) struct Shared {
    pub(super) next_block: Cell<usize>,
    pub(super) roles_path: Vec<PathBuf>,
    pub(super) collections_path: Vec<PathBuf>,
    pub(super) library: Vec<PathBuf>,
    pub(super) module_utils: Vec<PathBuf>,
    pub(super) default_strategy: Option<String>,
    pub(super) plugins: Arc<crate::plugins::Catalog>,
    pub(super) default_no_log: bool,
    /// Files and role directories being loaded, outermost first.
    pub(super) importing: RefCell<Vec<PathBuf>>,
    pub(super) play: RefCell<PlayRoles>,
    /// `module_defaults` names (short) no library had yet when read, each with its
    /// error: a role the play loads later may bring the module in its `library/`, as
    /// Ansible's loader has the play's roles before it resolves them.
    pub(super) unresolved_defaults: RefCell<Vec<(String, crate::yaml::LoadError)>>,
    /// Names resolved so far (see `Loader::resolve_plugin`).
    pub(super) resolved: RefCell<
        std::collections::HashMap<
            super::resolve::ResolveKey,
            Result<Option<super::resolve::Resolved>, String>,
        >,
    >,
    /// Parse the files of dynamic includes whose names are literal, for their load errors;
    /// off when the executor loads an included file (it parses each file once, on use).
    pub(super) check_includes: bool,
}

#[derive(Default)]
pub(super) struct PlayRoles {
    /// Handlers of `roles:` entries: they come before the play's own, as in Ansible.
    pub(super) head_handlers: Vec<Task>,
    /// Handlers of `import_role`/`include_role`: after the play's own.
    pub(super) tail_handlers: Vec<Task>,
    /// Role uses (directory, parameters) that already ran in this play: a role runs once
    /// per distinct parameters unless it allows duplicates. Each with the tag sets its
    /// copies inherited: a copy under other tags is kept, and the executor runs only the
    /// first copy that `--tags` selects (see [`RoleInfo::once_group`]), as Ansible skips a
    /// role that already ran.
    pub(super) ran: Vec<RanRole>,
    /// Roles whose defaults and vars every task of the play sees, in load order.
    pub(super) public: Vec<Arc<RoleInfo>>,
    /// Each role's exported vars (its dependencies', then its own vars/main.yml), by
    /// directory: what a role that depends on it layers below its own.
    pub(super) exported: std::collections::HashMap<PathBuf, serde_json::Map<String, Json>>,
    /// The exported vars of the role [`super::Loader::expand_role`] reached last (also
    /// when it was not expanded again).
    pub(super) last_exported: serde_json::Map<String, Json>,
    /// Action groups `module_defaults` named, resolved once per play (Ansible caches them
    /// on the play): each group's FQCN with its actions'.
    pub(super) groups: std::collections::HashMap<String, Arc<Vec<String>>>,
}

/// A role use that runs once per play, with the tag sets (sorted) its copies inherited.
/// The executor carries the play's list on to roles included at run time, whose
/// dependencies that already ran are not run again.
#[derive(Debug, Clone)]
pub struct RanRole {
    pub(super) key: (PathBuf, Json),
    pub(super) tag_sets: Vec<Vec<String>>,
}

impl Shared {
    pub(super) fn new(options: &LoadOptions) -> Shared {
        Shared {
            next_block: Cell::new(0),
            roles_path: options.roles_path.clone(),
            collections_path: options.collections_path.clone(),
            library: options.library.clone(),
            module_utils: options.module_utils.clone(),
            default_strategy: options.default_strategy.clone(),
            plugins: options.plugins.clone(),
            default_no_log: options.default_no_log,
            importing: RefCell::new(Vec::new()),
            play: RefCell::new(PlayRoles::default()),
            unresolved_defaults: RefCell::new(Vec::new()),
            resolved: RefCell::default(),
            check_includes: true,
        }
    }

    /// A module named by its collection (`community.general.ufw`) that an installed
    /// collection ships: it loads, and fails on a host that runs it.
    pub(super) fn collection_module(
        &self,
        name: &str,
        playbook_dir: &Path,
        role_dir: Option<&Path>,
    ) -> Option<&'static dyn crate::modules::Module> {
        use crate::modules::python::{PythonModule, finding, utils_paths};
        let roots = finding::collection_roots(playbook_dir, &self.collections_path);
        let source = finding::collection_module(name, &roots)?;
        let utils = utils_paths(role_dir, playbook_dir, &self.module_utils, roots);
        Some(PythonModule::shared(name, Ok(source), utils))
    }

    /// A module in `library/` (the role's, the playbook's, the configured ones) by its
    /// short or `ansible.legacy.` name: it comes before Ansible's own, as in Ansible.
    pub(super) fn library_module(
        &self,
        name: &str,
        playbook_dir: &Path,
        role_dir: Option<&Path>,
    ) -> Option<&'static dyn crate::modules::Module> {
        use crate::modules::python::{PythonModule, finding, utils_paths};
        let short = name.strip_prefix("ansible.legacy.").unwrap_or(name);
        let dirs = finding::library_dirs(role_dir, playbook_dir, &self.library);
        let source = finding::library_module(short, &dirs)?;
        let roots = finding::collection_roots(playbook_dir, &self.collections_path);
        let utils = utils_paths(role_dir, playbook_dir, &self.module_utils, roots);
        Some(PythonModule::shared(short, Ok(source), utils))
    }

    /// The settings this load started from.
    pub(super) fn options(&self) -> LoadOptions {
        LoadOptions {
            roles_path: self.roles_path.clone(),
            collections_path: self.collections_path.clone(),
            library: self.library.clone(),
            module_utils: self.module_utils.clone(),
            default_strategy: self.default_strategy.clone(),
            plugins: self.plugins.clone(),
            default_no_log: self.default_no_log,
        }
    }

    pub(super) fn start_play(&self) {
        *self.play.borrow_mut() = PlayRoles::default();
    }

    /// The role uses that ran once in the play so far.
    pub(super) fn ran_roles(&self) -> Vec<RanRole> {
        self.play.borrow().ran.clone()
    }

    /// The roles whose defaults and vars the whole play sees.
    pub(super) fn public_roles(&self) -> Vec<Arc<RoleInfo>> {
        std::mem::take(&mut self.play.borrow_mut().public)
    }

    /// The play's handler list: `roles:` handlers, its own, then imported roles' handlers.
    pub(super) fn play_handlers(&self, own: Vec<Task>) -> Vec<Task> {
        let mut play = self.play.borrow_mut();
        let mut all = std::mem::take(&mut play.head_handlers);
        all.extend(own);
        all.append(&mut play.tail_handlers);
        all
    }

    pub(super) fn is_importing(&self, path: &Path) -> bool {
        let id = identity(path);
        self.importing.borrow().contains(&id)
    }
}

/// A module by the name a task would give it, for a run that only learns the name as it
/// runs (gather_facts' `ansible_facts_modules`): as the loader finds a task's module, a
/// `library/` module first (the role's, the playbook's, the configured ones), then
/// Ansible's own, then an installed collection's.
impl crate::modules::ModuleFinder for LoadOptions {
    fn find_module(
        &self,
        name: &str,
        playbook_dir: &Path,
        role_dir: Option<&Path>,
    ) -> Option<&'static dyn crate::modules::Module> {
        let shared = Shared::new(self);
        shared
            .library_module(name, playbook_dir, role_dir)
            .or_else(|| crate::modules::find(name))
            .or_else(|| shared.collection_module(name, playbook_dir, role_dir))
    }
}

/// Settings that change how a playbook loads.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// ansible.cfg `roles_path` / `ANSIBLE_ROLES_PATH`: searched for roles after `roles/`
    /// beside the playbook and before the playbook's own directory.
    pub roles_path: Vec<PathBuf>,
    /// ansible.cfg `collections_path` / `ANSIBLE_COLLECTIONS_PATH`: where
    /// `namespace.collection.role` names are found (after `collections/` beside the
    /// playbook).
    pub collections_path: Vec<PathBuf>,
    /// ansible.cfg `library` / `ANSIBLE_LIBRARY`: module directories after `library/`
    /// beside the playbook and in roles.
    pub library: Vec<PathBuf>,
    /// ansible.cfg `module_utils` / `ANSIBLE_MODULE_UTILS`.
    pub module_utils: Vec<PathBuf>,
    /// ansible.cfg `strategy` / `ANSIBLE_STRATEGY`: the strategy of plays that name none.
    pub default_strategy: Option<String>,
    /// The run's Python plugins: the directories of playbooks and roles join it as they
    /// load (shared by every playbook of the run, as Ansible's plugin loader is).
    pub plugins: Arc<crate::plugins::Catalog>,
    /// ansible.cfg `no_log` / `ANSIBLE_NO_LOG`: the `no_log` of tasks that do not say.
    pub default_no_log: bool,
}

impl LoadOptions {
    /// Ansible's `roles_path` when none is configured: `~/.ansible/roles` (where
    /// `ansible-galaxy` installs), `/usr/share/ansible/roles`, `/etc/ansible/roles`.
    pub fn default_roles_path(home: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = home.map(|h| h.join(".ansible/roles")).into_iter().collect();
        dirs.extend(["/usr/share/ansible/roles", "/etc/ansible/roles"].map(PathBuf::from));
        dirs
    }
}

/// `a/b/../c` as `a/c`, so plays imported from `../x.yml` resolve paths as written there.
pub(super) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// A path as compared for import cycles.
pub(super) fn identity(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    #[test]
    fn paths_normalize_lexically() {
        assert_eq!(normalize(Path::new("a/./b/../c")), Path::new("a/c"));
        assert_eq!(normalize(Path::new("../x")), Path::new("../x"));
        assert_eq!(normalize(Path::new("/r/a/../../b")), Path::new("/b"));
        assert_eq!(normalize(Path::new("a/..")), Path::new("."));
    }

    #[test]
    fn ansibles_default_roles_path() {
        assert_eq!(
            LoadOptions::default_roles_path(Some(Path::new("/home/u"))),
            [
                PathBuf::from("/home/u/.ansible/roles"),
                PathBuf::from("/usr/share/ansible/roles"),
                PathBuf::from("/etc/ansible/roles"),
            ]
        );
    }
}
