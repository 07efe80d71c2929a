//! Where a run's Python plugins are, found the way Ansible's plugin loader finds them:
//! `<kind>_plugins/` beside each playbook and in each (non-collection) role, in the order
//! they were loaded, then the configured paths (ansible.cfg's `filter_plugins`... or
//! `ANSIBLE_FILTER_PLUGINS`..., each path's subdirectories before it), for short and
//! `ansible.legacy.` names; a collection's `plugins/<kind>/` for `ns.coll.name`, and for
//! a short name under the task's `collections:`. ansible-core's own plugins come last,
//! and turbo-play runs those natively where it can.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// The kinds of controller plugin turbo-play runs from Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Filter,
    Test,
    Lookup,
    Action,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Filter, Kind::Test, Kind::Lookup, Kind::Action];

    /// The word Ansible uses: `filter`, `test`, `lookup`, `action` (also the directory
    /// under a collection's `plugins/` and ansible-core's `ansible/plugins/`).
    pub fn word(self) -> &'static str {
        match self {
            Kind::Filter => "filter",
            Kind::Test => "test",
            Kind::Lookup => "lookup",
            Kind::Action => "action",
        }
    }

    /// The directory beside a playbook or in a role: `filter_plugins`...
    pub fn local_dir(self) -> &'static str {
        match self {
            Kind::Filter => "filter_plugins",
            Kind::Test => "test_plugins",
            Kind::Lookup => "lookup_plugins",
            Kind::Action => "action_plugins",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One plugin file and the name Python imports it under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PluginFile {
    /// The plugin's name (a filter or test file's: the file's stem).
    pub name: String,
    pub path: PathBuf,
    /// `ansible.plugins.<kind>.<stem>` for a legacy plugin,
    /// `ansible_collections.<ns>.<coll>.plugins.<kind>.<stem>` for a collection's.
    pub import_name: String,
    /// `ns.coll` for a collection's plugin.
    pub collection: Option<String>,
}

impl PluginFile {
    /// The name Ansible reports the plugin by: `ns.coll.name`, or the short name.
    pub fn fqcn(&self) -> String {
        match &self.collection {
            Some(c) => format!("{c}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The directories each kind of plugin is configured in (ansible.cfg, the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfiguredPaths {
    pub filter: Vec<PathBuf>,
    pub test: Vec<PathBuf>,
    pub lookup: Vec<PathBuf>,
    pub action: Vec<PathBuf>,
}

impl ConfiguredPaths {
    fn of(&self, kind: Kind) -> &[PathBuf] {
        match kind {
            Kind::Filter => &self.filter,
            Kind::Test => &self.test,
            Kind::Lookup => &self.lookup,
            Kind::Action => &self.action,
        }
    }

    /// Ansible's defaults: `~/.ansible/plugins/<kind>` and `/usr/share/ansible/plugins/<kind>`.
    pub fn defaults(home: Option<&Path>) -> ConfiguredPaths {
        let of = |word: &str| -> Vec<PathBuf> {
            home.map(|h| h.join(".ansible/plugins").join(word))
                .into_iter()
                .chain(std::iter::once(
                    Path::new("/usr/share/ansible/plugins").join(word),
                ))
                .collect()
        };
        ConfiguredPaths {
            filter: of("filter"),
            test: of("test"),
            lookup: of("lookup"),
            action: of("action"),
        }
    }
}

/// The run's plugin search path: grows as playbooks and roles load (a role's plugins are
/// visible from when it loaded on, as in Ansible).
#[derive(Debug, Default)]
pub struct Catalog {
    state: RwLock<State>,
    /// Each kind's existing directories, as of a generation: the loader asks for every
    /// task's action.
    dirs: std::sync::Mutex<std::collections::HashMap<Kind, (u64, Vec<PathBuf>)>>,
}

#[derive(Debug, Default, Clone)]
struct State {
    /// Playbook and role directories, in load order (each once).
    roots: Vec<PathBuf>,
    /// Per kind, the configured directories as Ansible expands them.
    configured: [Vec<PathBuf>; 4],
    collection_roots: Vec<PathBuf>,
    /// Bumped whenever the search path changes.
    generation: u64,
}

impl Catalog {
    pub fn new(configured: &ConfiguredPaths) -> Catalog {
        let mut state = State::default();
        for kind in Kind::ALL {
            state.configured[kind.index()] = expand_configured(configured.of(kind));
        }
        Catalog {
            state: RwLock::new(state),
            dirs: Default::default(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// A playbook's or a legacy role's directory: its `<kind>_plugins/` join the search
    /// path (after those already there). Roles inside a collection bring none, as in
    /// Ansible.
    pub fn add_root(&self, dir: &Path) {
        if dir
            .components()
            .any(|c| c.as_os_str() == "ansible_collections")
        {
            return;
        }
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if self.read().roots.contains(&dir) {
            return;
        }
        let mut state = self.write();
        if !state.roots.contains(&dir) {
            state.roots.push(dir);
            state.generation += 1;
        }
    }

    /// The playbook and legacy role directories joined so far, in load order.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.read().roots.clone()
    }

    /// Directories holding an `ansible_collections` package, searched in order.
    pub fn add_collection_roots(&self, roots: &[PathBuf]) {
        let mut state = self.write();
        for root in roots {
            // Python imports from it after the working directory may have changed.
            let root = std::path::absolute(root).unwrap_or_else(|_| root.clone());
            if !state.collection_roots.contains(&root) {
                state.collection_roots.push(root);
                state.generation += 1;
            }
        }
    }

    /// The roots collections are imported from: those of the playbooks and the
    /// configuration, then the controller Python's `ansible_collections`.
    pub fn collection_roots(&self) -> Vec<PathBuf> {
        let mut roots = self.read().collection_roots.clone();
        for root in installed_roots() {
            if !roots.contains(root) {
                roots.push(root.clone());
            }
        }
        roots
    }

    /// Changes whenever the search path does.
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// The legacy directories of `kind`, in search order (existing ones only).
    pub fn dirs(&self, kind: Kind) -> Vec<PathBuf> {
        let generation = self.generation();
        let mut cache = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, dirs)) = cache.get(&kind)
            && *at == generation
        {
            return dirs.clone();
        }
        let dirs = self.existing_dirs(kind);
        cache.insert(kind, (generation, dirs.clone()));
        dirs
    }

    fn existing_dirs(&self, kind: Kind) -> Vec<PathBuf> {
        let state = self.read();
        let mut dirs: Vec<PathBuf> = state
            .roots
            .iter()
            .map(|r| r.join(kind.local_dir()))
            .chain(state.configured[kind.index()].iter().cloned())
            .filter(|d| d.is_dir())
            .collect();
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        dirs
    }

    /// Every legacy plugin file of `kind`, in search order (each directory's files by
    /// name): filters and tests are many to a file.
    pub fn files(&self, kind: Kind) -> Vec<PluginFile> {
        self.dirs(kind)
            .iter()
            .flat_map(|dir| python_files(dir))
            .map(|path| legacy_file(kind, path))
            .collect()
    }

    /// The plugin `name` of `kind`: a short or `ansible.legacy.` name in the legacy
    /// directories (after the collections of the task's `collections:` for a short
    /// name), `ns.coll.name` in that collection. `ansible.builtin.` names are
    /// ansible-core's own, never found here.
    pub fn find(&self, kind: Kind, name: &str, collections: &[String]) -> Option<PluginFile> {
        if name.starts_with("ansible.builtin.") {
            return None;
        }
        if let Some(short) = name.strip_prefix("ansible.legacy.") {
            return self.legacy(kind, short);
        }
        if let Some((collection, short)) = split_fqcn(name) {
            return self.in_collection(kind, &collection, short);
        }
        if !is_file_stem(name) {
            return None;
        }
        collections
            .iter()
            .filter(|c| !c.starts_with("ansible.builtin") && !c.starts_with("ansible.legacy"))
            .find_map(|c| self.in_collection(kind, c, name))
            .or_else(|| self.legacy(kind, name))
    }

    fn legacy(&self, kind: Kind, name: &str) -> Option<PluginFile> {
        if !is_file_stem(name) {
            return None;
        }
        self.dirs(kind).into_iter().find_map(|dir| {
            let path = dir.join(format!("{name}.py"));
            path.is_file().then(|| legacy_file(kind, path))
        })
    }

    /// The directory of collection `ns.coll` (the first root that has it).
    pub fn collection_dir(&self, collection: &str) -> Option<PathBuf> {
        let (ns, coll) = collection.split_once('.')?;
        if !is_identifier(ns) || !is_identifier(coll) {
            return None;
        }
        let in_root = |root: &PathBuf| {
            let dir = root.join("ansible_collections").join(ns).join(coll);
            dir.is_dir().then_some(dir)
        };
        // The controller Python is asked only for a collection found nowhere else.
        let known = self.read().collection_roots.iter().find_map(in_root);
        known.or_else(|| installed_roots().iter().find_map(in_root))
    }

    fn in_collection(&self, kind: Kind, collection: &str, name: &str) -> Option<PluginFile> {
        let dir = self.collection_dir(collection)?;
        let mut parts: Vec<&str> = name.split('.').collect();
        if parts.iter().any(|p| !is_identifier(p)) {
            return None;
        }
        let stem = parts.pop()?;
        let mut path = dir.join("plugins").join(kind.word());
        for part in &parts {
            path.push(part);
        }
        path.push(format!("{stem}.py"));
        path.is_file().then(|| PluginFile {
            name: name.to_string(),
            import_name: format!(
                "ansible_collections.{collection}.plugins.{}.{name}",
                kind.word()
            ),
            path,
            collection: Some(collection.to_string()),
        })
    }

    /// Every plugin file of `kind` in collection `ns.coll`, by name.
    pub fn collection_files(&self, kind: Kind, collection: &str) -> Vec<PluginFile> {
        let Some(dir) = self.collection_dir(collection) else {
            return Vec::new();
        };
        python_files(&dir.join("plugins").join(kind.word()))
            .into_iter()
            .filter_map(|path| {
                let stem = path.file_stem()?.to_str()?.to_string();
                Some(PluginFile {
                    import_name: format!(
                        "ansible_collections.{collection}.plugins.{}.{stem}",
                        kind.word()
                    ),
                    name: stem,
                    path,
                    collection: Some(collection.to_string()),
                })
            })
            .collect()
    }
}

fn installed_roots() -> &'static [PathBuf] {
    super::python::controller().map_or(&[], |p| p.collection_roots.as_slice())
}

fn legacy_file(kind: Kind, path: PathBuf) -> PluginFile {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    PluginFile {
        import_name: format!("ansible.plugins.{}.{stem}", kind.word()),
        name: stem,
        path,
        collection: None,
    }
}

/// `ns.coll.name` (or `ns.coll.sub.name`) as the collection and the rest.
fn split_fqcn(name: &str) -> Option<(String, &str)> {
    let mut parts = name.splitn(3, '.');
    let (ns, coll, rest) = (parts.next()?, parts.next()?, parts.next()?);
    (is_identifier(ns) && is_identifier(coll)).then(|| (format!("{ns}.{coll}"), rest))
}

/// A directory's Python files (not `__init__.py` nor private ones), by name.
fn python_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "py")
                && p.file_stem()
                    .and_then(|s| s.to_str())
                    .is_some_and(|s| !s.starts_with('_') && is_file_stem(s))
                && p.is_file()
        })
        .collect();
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files
}

/// A configured path as Ansible's loader expands it: the directories one and two levels
/// below it, then the path itself.
fn expand_configured(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let path = crate::tilde::expand_user_path(&path.to_string_lossy());
        let children = sorted_dirs(&path);
        let grandchildren: Vec<PathBuf> = children.iter().flat_map(|c| sorted_dirs(c)).collect();
        let below = children.into_iter().chain(grandchildren);
        for dir in below.chain(std::iter::once(path)) {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// A plugin file's name as Ansible finds it by: any file name without a dot or a slash
/// (`my-filters.py` is a plugin file too).
fn is_file_stem(name: &str) -> bool {
    !name.is_empty() && !name.contains(['.', '/', '\\']) && !name.starts_with('-')
}

pub(crate) fn is_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }

    #[test]
    fn playbook_and_role_plugins_come_before_configured_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        touch(&root.join("play/lookup_plugins/mine.py"));
        touch(&root.join("role/lookup_plugins/mine.py"));
        touch(&root.join("role/lookup_plugins/theirs.py"));
        touch(&root.join("conf/sub/deeper.py"));
        touch(&root.join("conf/mine.py"));
        let configured = ConfiguredPaths {
            lookup: vec![root.join("conf")],
            ..ConfiguredPaths::default()
        };
        let catalog = Catalog::new(&configured);
        catalog.add_root(&root.join("play"));
        catalog.add_root(&root.join("role"));
        let mine = catalog.find(Kind::Lookup, "mine", &[]).unwrap();
        assert_eq!(mine.path, root.join("play/lookup_plugins/mine.py"));
        assert_eq!(mine.import_name, "ansible.plugins.lookup.mine");
        assert_eq!(
            catalog
                .find(Kind::Lookup, "ansible.legacy.theirs", &[])
                .unwrap()
                .path,
            root.join("role/lookup_plugins/theirs.py")
        );
        assert_eq!(
            catalog.find(Kind::Lookup, "deeper", &[]).unwrap().path,
            root.join("conf/sub/deeper.py")
        );
        assert!(
            catalog
                .find(Kind::Lookup, "ansible.builtin.mine", &[])
                .is_none()
        );
        assert!(catalog.find(Kind::Action, "mine", &[]).is_none());
        let files: Vec<String> = catalog
            .files(Kind::Lookup)
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(files, ["mine", "mine", "theirs", "deeper", "mine"]);
    }

    #[test]
    fn collection_plugins_by_fqcn_and_under_collections() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        touch(&root.join("ansible_collections/ns/coll/plugins/action/act.py"));
        touch(&root.join("ansible_collections/ns/coll/plugins/filter/f.py"));
        touch(&root.join("play/action_plugins/act.py"));
        let catalog = Catalog::new(&ConfiguredPaths::default());
        catalog.add_collection_roots(std::slice::from_ref(&root));
        catalog.add_root(&root.join("play"));
        let act = catalog.find(Kind::Action, "ns.coll.act", &[]).unwrap();
        assert_eq!(
            act.import_name,
            "ansible_collections.ns.coll.plugins.action.act"
        );
        assert_eq!(act.fqcn(), "ns.coll.act");
        let under = catalog
            .find(Kind::Action, "act", &["ns.coll".to_string()])
            .unwrap();
        assert_eq!(under.collection.as_deref(), Some("ns.coll"));
        let legacy = catalog.find(Kind::Action, "act", &[]).unwrap();
        assert_eq!(legacy.collection, None);
        assert!(catalog.find(Kind::Action, "ns.coll.nope", &[]).is_none());
        let filters = catalog.collection_files(Kind::Filter, "ns.coll");
        assert_eq!(filters.len(), 1);
        assert_eq!(
            filters[0].import_name,
            "ansible_collections.ns.coll.plugins.filter.f"
        );
    }

    #[test]
    fn roles_inside_collections_add_no_plugins() {
        let dir = tempfile::tempdir().unwrap();
        let role = dir.path().join("ansible_collections/ns/coll/roles/r");
        touch(&role.join("action_plugins/x.py"));
        let catalog = Catalog::new(&ConfiguredPaths::default());
        catalog.add_root(&role);
        assert!(catalog.find(Kind::Action, "x", &[]).is_none());
    }
}
