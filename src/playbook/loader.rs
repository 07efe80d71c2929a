//! YAML tree -> [`Playbook`], with Ansible's rules and file:line:col errors: the entry
//! points, the [`Loader`] of one file, and what enclosing blocks, roles and imports hand
//! down to the tasks inside them ([`Inherited`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::shared::{LoadOptions, Shared, identity};
use super::{BlockFrame, Location, Playbook, RunKeywords, UnsupportedKeyword};
use crate::yaml::{LoadError, Node, Source, Span, Value};

/// What a block (or an import, or a role) hands down to the tasks inside it.
#[derive(Debug, Clone, Default)]
pub(super) struct Inherited {
    pub(super) frames: Vec<BlockFrame>,
    pub(super) when: Vec<String>,
    pub(super) vars: serde_json::Map<String, Json>,
    pub(super) ignore_errors: Option<bool>,
    pub(super) handler: bool,
    pub(super) tags: Vec<String>,
    /// Handlers a block, an import or an include's `apply:` notifies for every task inside.
    pub(super) notify: Vec<String>,
    pub(super) check_mode: Option<bool>,
    pub(super) diff: Option<bool>,
    pub(super) role: Option<Arc<super::RoleInfo>>,
    /// For a role's dependencies: the variables of the roles that depend on it (each
    /// one's `vars:` keyword, then its vars/main.yml, outermost first), Ansible's
    /// inherited role vars.
    pub(super) dep_chain_vars: serde_json::Map<String, Json>,
    pub(super) include_params: serde_json::Map<String, Json>,
    pub(super) keywords: RunKeywords,
    /// Keywords written around the tasks that turbo-play does not act on yet.
    pub(super) unsupported: Vec<UnsupportedKeyword>,
    /// The innermost `collections:` (the play's, a block's, the task's own), which
    /// replaces those around it: where a short module name is also looked for
    /// (`ns.coll.<name>`).
    pub(super) collections: Vec<String>,
}

/// Keeps the first of each repeated tag.
pub(super) fn dedup_in_order(tags: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    tags.retain(|t| seen.insert(t.clone()));
}

/// Loads a playbook and every playbook it imports (`import_playbook`), in run order. Plays
/// from another directory come as a playbook of their own, so their relative paths
/// (`files/`, `vars_files`, `group_vars/`) resolve beside the file that wrote them.
pub fn load_playbooks(path: &Path, options: &LoadOptions) -> Result<Vec<Playbook>, LoadError> {
    let source = Source::read(path)?;
    let shared = Shared::new(options);
    shared.load_playbook_source(&source)
}

/// [`load_playbooks`] with default options, its plays as one playbook (the top file's).
pub fn load_playbook(path: &Path) -> Result<Playbook, LoadError> {
    let source = Source::read(path)?;
    merged(
        &source,
        Shared::new(&LoadOptions::default()).load_playbook_source(&source)?,
    )
}

/// Loads playbook text as if read from `path` (tests, and playbooks from stdin).
pub fn load_playbook_text(path: &Path, text: &str) -> Result<Playbook, LoadError> {
    let source = Source::from_text(path, text);
    merged(
        &source,
        Shared::new(&LoadOptions::default()).load_playbook_source(&source)?,
    )
}

/// Loads playbook text as if read from `path`, with the run's options: the one-task play
/// of an ad-hoc command.
pub fn load_playbooks_text(
    path: &Path,
    text: &str,
    options: &LoadOptions,
) -> Result<Vec<Playbook>, LoadError> {
    Shared::new(options).load_playbook_source(&Source::from_text(path, text))
}

pub(super) fn merged(source: &Source, parts: Vec<Playbook>) -> Result<Playbook, LoadError> {
    let plays = parts.into_iter().flat_map(|p| p.plays).collect();
    Ok(Playbook {
        path: source.path.clone(),
        dir: dir_of(&source.path),
        plays,
    })
}

/// The directory a file's relative paths resolve against.
pub(super) fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// One playbook file's plays, from the playbook file itself.
pub(super) fn load_plays(
    shared: &Shared,
    source: &Source,
    root: &Node,
    out: &mut Vec<Playbook>,
) -> Result<(), LoadError> {
    let dir = dir_of(&source.path);
    shared.plugins.add_root(&dir);
    let mut collection_roots = vec![dir.join("collections")];
    collection_roots.extend(shared.collections_path.iter().cloned());
    shared.plugins.add_collection_roots(&collection_roots);
    let loader = Loader {
        source,
        file: Arc::from(source.path.as_path()),
        shared,
        playbook_dir: dir.clone(),
    };
    let items = match &root.value {
        Value::Null => return Ok(()),
        Value::Seq(items) if items.is_empty() => {
            return Err(loader.err(
                root.span,
                format!(
                    "A playbook must contain at least one play: {}",
                    source.path.display()
                ),
                Some("start each play with `- hosts: ...`".into()),
            ));
        }
        Value::Seq(items) => items,
        _ => {
            return Err(loader.err(
                root.span,
                format!(
                    "a playbook must be a list of plays, got {}",
                    root.kind_name()
                ),
                Some("start each play with `- hosts: ...`".into()),
            ));
        }
    };
    for item in items {
        if let Some(imported) = loader.import_playbook(item)? {
            out.extend(imported);
            continue;
        }
        let play = loader.play(item)?;
        match out.last_mut() {
            Some(last) if last.dir == dir => last.plays.push(play),
            _ => out.push(Playbook {
                path: source.path.clone(),
                dir: dir.clone(),
                plays: vec![play],
            }),
        }
    }
    Ok(())
}

impl Shared {
    pub(super) fn load_playbook_source(&self, source: &Source) -> Result<Vec<Playbook>, LoadError> {
        let root = source.parse()?;
        self.importing.borrow_mut().push(identity(&source.path));
        let mut out = Vec::new();
        let loaded = load_plays(self, source, &root, &mut out);
        self.importing.borrow_mut().pop();
        loaded.map(|()| out)
    }
}

pub(super) struct Loader<'s> {
    pub(super) source: &'s Source,
    pub(super) file: Arc<Path>,
    pub(super) shared: &'s Shared,
    /// The directory of the playbook this play comes from (`roles/` is looked up there).
    pub(super) playbook_dir: PathBuf,
}

impl<'s> Loader<'s> {
    /// The loader of `source`, with `shared`'s state.
    pub(super) fn of(source: &'s Source, shared: &'s Shared, playbook_dir: PathBuf) -> Loader<'s> {
        Loader {
            source,
            file: Arc::from(source.path.as_path()),
            shared,
            playbook_dir,
        }
    }
}

impl Loader<'_> {
    /// Another file's loader sharing this one's state.
    pub(super) fn child<'c>(&'c self, source: &'c Source) -> Loader<'c> {
        Loader::of(source, self.shared, self.playbook_dir.clone())
    }

    pub(super) fn err(
        &self,
        span: Span,
        message: impl Into<String>,
        help: Option<String>,
    ) -> LoadError {
        self.source.error(Some(span), message, help)
    }

    pub(super) fn location(&self, span: Span) -> Location {
        Location {
            file: self.file.clone(),
            line: span.line,
            column: span.column,
        }
    }

    pub(super) fn key<'n>(&self, key: &'n Node) -> Result<&'n str, LoadError> {
        key.as_str().ok_or_else(|| {
            self.err(
                key.span,
                format!("keys here must be strings, got {}", key.kind_name()),
                None,
            )
        })
    }
}
