//! synchronize's side on the controller: the source tree walked as rsync's sender walks
//! it (sorted, links kept or followed, what rsync skips noted where it says so) and the
//! `--include`/`--exclude` rules of `rsync_opts`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use turbo_proto::{FileKind, StatInfo};

use super::ModuleError;
use super::synchronize::Options;

/// One `--include`/`--exclude` rule: the first that matches a path decides.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Filter {
    pub(super) exclude: bool,
    pub(super) pattern: String,
    /// A leading `/`: matched from the transfer's root only.
    pub(super) anchored: bool,
    /// A trailing `/`: directories only.
    pub(super) dirs_only: bool,
}

impl Filter {
    pub(super) fn new(exclude: bool, written: &str) -> Filter {
        let anchored = written.starts_with('/');
        let dirs_only = written.len() > 1 && written.ends_with('/');
        let pattern = written.trim_start_matches('/').trim_end_matches('/');
        Filter {
            exclude,
            pattern: pattern.to_string(),
            anchored,
            dirs_only,
        }
    }

    /// rsync's matching: a pattern with a `/` (or `**`) against the whole relative path
    /// (unanchored, against any tail of whole components), else against the last name.
    pub(super) fn matches(&self, rel: &str, is_dir: bool) -> bool {
        if self.dirs_only && !is_dir {
            return false;
        }
        if self.pattern.contains("**") {
            let whole = crate::fnmatch::fnmatch(&self.pattern.replace("**", "*"), rel);
            return whole
                || (!self.anchored
                    && rel.match_indices('/').any(|(at, _)| {
                        crate::fnmatch::fnmatch(&self.pattern.replace("**", "*"), &rel[at + 1..])
                    }));
        }
        let pattern: Vec<&str> = self.pattern.split('/').collect();
        let path: Vec<&str> = rel.split('/').collect();
        if pattern.len() > path.len() {
            return false;
        }
        let tail_matches = |from: usize| {
            pattern
                .iter()
                .zip(&path[from..])
                .all(|(p, name)| crate::fnmatch::fnmatch(p, name))
        };
        if self.anchored {
            pattern.len() == path.len() && tail_matches(0)
        } else {
            tail_matches(path.len() - pattern.len())
        }
    }
}

pub(super) fn excluded(filters: &[Filter], rel: &str, is_dir: bool) -> bool {
    filters
        .iter()
        .find(|f| f.matches(rel, is_dir))
        .is_some_and(|f| f.exclude)
}

/// The rsync options that change what is copied and that this copy honours; any other
/// fails the task, naming it, rather than being passed over.
pub(super) fn parse_rsync_opts(opts: &[String]) -> Result<Vec<Filter>, ModuleError> {
    let mut words = Vec::new();
    for opt in opts {
        words.extend(
            crate::shell_words::split(opt).map_err(|e| {
                ModuleError::Invalid(format!("rsync_opts: cannot split '{opt}': {e}"))
            })?,
        );
    }
    let mut filters = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (word.clone(), None),
        };
        match name.as_str() {
            "--exclude" | "--include" => {
                let value = match inline {
                    Some(value) => value,
                    None => words.next().ok_or_else(|| {
                        ModuleError::Invalid(format!("rsync_opts: {name} needs a pattern"))
                    })?,
                };
                filters.push(Filter::new(name == "--exclude", &value));
            }
            "--no-motd" | "--quiet" | "-q" => {}
            _ => {
                return Err(ModuleError::Invalid(format!(
                    "rsync_opts: '{word}' is not supported by turbo-play's synchronize, which \
                     copies without rsync (it takes --exclude, --include and --no-motd); \
                     remove it, or run this task with ansible-playbook"
                )));
            }
        }
    }
    Ok(filters)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EntryKind {
    File,
    Dir,
    Link,
}

/// One thing under `src` on the controller.
#[derive(Debug, Clone)]
pub(super) struct SourceEntry {
    /// Relative to the transfer's root ("" for the root itself).
    pub(super) rel: String,
    pub(super) kind: EntryKind,
    pub(super) mode: u32,
    pub(super) size: u64,
    pub(super) mtime: (i64, u32),
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) link: Option<String>,
    /// Where the sender reads it: a controller path, or the path on the sender's host.
    pub(super) path: PathBuf,
    /// The content's SHA-256 when the sender's agent listed it with `checksum`.
    pub(super) checksum: Option<Vec<u8>>,
    /// Owner and group names as the sender's agent found them (the controller's own
    /// files are named from its /etc/passwd and /etc/group instead).
    pub(super) names: Option<(String, String)>,
    pub(super) children: Vec<SourceEntry>,
}

pub(super) struct Source {
    pub(super) root: SourceEntry,
    /// The name the root is listed under (`src/` for a directory without a trailing
    /// slash, the file's name for a file), `None` for `dir/`.
    pub(super) root_name: Option<String>,
    /// What rsync says it skips ("skipping non-regular file", "skipping directory"), by
    /// the directory it is in: rsync says so when it lists that directory, before its
    /// files go. The root's own skip is under "..".
    pub(super) skipped: HashMap<String, Vec<String>>,
}

pub(super) fn walk_source(
    src: &Path,
    contents_only: bool,
    opts: &Options,
) -> Result<Source, ModuleError> {
    let meta = std::fs::metadata(src).map_err(|e| read_error(src, &e))?;
    let root_name = if contents_only && meta.is_dir() {
        None
    } else {
        Some(
            src.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| ".".into()),
        )
    };
    let mut skipped = HashMap::new();
    let mut root = entry(src, String::new(), &meta)?;
    if root.kind == EntryKind::Dir {
        if !opts.recursive && !opts.dirs {
            skipped.insert(
                "..".to_string(),
                vec![format!(
                    "skipping directory {}",
                    root_name.as_deref().unwrap_or(".")
                )],
            );
            return Ok(Source {
                root,
                root_name,
                skipped,
            });
        }
        let prefix = root_name.clone();
        root.children = walk_dir(src, prefix.as_deref(), "", opts, &mut skipped)?;
    }
    Ok(Source {
        root,
        root_name,
        skipped,
    })
}

pub(super) fn walk_dir(
    dir: &Path,
    prefix: Option<&str>,
    rel: &str,
    opts: &Options,
    skipped: &mut HashMap<String, Vec<String>>,
) -> Result<Vec<SourceEntry>, ModuleError> {
    fn skip(skipped: &mut HashMap<String, Vec<String>>, rel: &str, line: String) {
        skipped.entry(rel.to_string()).or_default().push(line);
    }
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| read_error(dir, &e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let child_rel = child_rel(rel, &name);
        if name == ".rsync-filter" {
            return Err(filter_file_refused(&path.display()));
        }
        let link_meta = std::fs::symlink_metadata(&path).map_err(|e| read_error(&path, &e))?;
        let meta = if link_meta.file_type().is_symlink() && opts.copy_links {
            std::fs::metadata(&path).map_err(|e| read_error(&path, &e))?
        } else {
            link_meta
        };
        let shown = shown_name(prefix, &child_rel);
        if excluded(&opts.filters, &child_rel, meta.is_dir()) {
            continue;
        }
        if meta.file_type().is_symlink() && !opts.links {
            skip(
                skipped,
                rel,
                format!("skipping non-regular file \"{shown}\""),
            );
            continue;
        }
        if !meta.is_dir() && !meta.is_file() && !meta.file_type().is_symlink() {
            skip(
                skipped,
                rel,
                format!("skipping non-regular file \"{shown}\""),
            );
            continue;
        }
        let mut item = entry(&path, child_rel.clone(), &meta)?;
        if item.kind == EntryKind::Dir {
            if !opts.recursive {
                if !opts.dirs {
                    skip(skipped, rel, format!("skipping directory {shown}"));
                    continue;
                }
            } else {
                item.children = walk_dir(&path, prefix, &child_rel, opts, skipped)?;
            }
        }
        out.push(item);
    }
    Ok(out)
}

pub(super) fn entry(
    path: &Path,
    rel: String,
    meta: &std::fs::Metadata,
) -> Result<SourceEntry, ModuleError> {
    let kind = if meta.file_type().is_symlink() {
        EntryKind::Link
    } else if meta.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    };
    let link = if kind == EntryKind::Link {
        Some(
            std::fs::read_link(path)
                .map_err(|e| read_error(path, &e))?
                .to_string_lossy()
                .into_owned(),
        )
    } else {
        None
    };
    Ok(SourceEntry {
        rel,
        kind,
        mode: meta.mode() & 0o7777,
        size: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec() as u32),
        uid: meta.uid(),
        gid: meta.gid(),
        link,
        path: path.to_path_buf(),
        checksum: None,
        names: None,
        children: Vec::new(),
    })
}

pub(super) fn read_error(path: &Path, e: &std::io::Error) -> ModuleError {
    ModuleError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// The path of `name` in the directory at `rel` ("" for the root), relative to the root.
fn child_rel(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// The refusal of an `.rsync-filter` found at `path` in the source tree.
fn filter_file_refused(path: &dyn std::fmt::Display) -> ModuleError {
    ModuleError::Invalid(format!(
        "{path}: rsync's per-directory filter files (-F, which synchronize passes with \
         delay_updates) are not read by turbo-play's synchronize; remove the file or \
         run this task with ansible-playbook"
    ))
}

/// A path as rsync's `%n` names it: under the root's name unless `src` ended in `/`,
/// directories with a trailing `/` (added by the caller).
pub(super) fn shown_name(prefix: Option<&str>, rel: &str) -> String {
    match (prefix, rel.is_empty()) {
        (Some(prefix), true) => prefix.to_string(),
        (Some(prefix), false) => format!("{prefix}/{rel}"),
        (None, true) => ".".to_string(),
        (None, false) => rel.to_string(),
    }
}

/// The source tree as another host's agent listed it (`ListTree` of `src`), walked as
/// [`walk_source`] walks the controller's: the same names, order, filters and skips.
/// `Err` holds rsync's words for a source that is not there.
pub(super) fn source_from_tree(
    written: &str,
    root: StatInfo,
    entries: Vec<StatInfo>,
    opts: &Options,
) -> Result<Result<Source, String>, ModuleError> {
    if !root.exists {
        return Ok(Err(format!(
            "rsync: [sender] link_stat \"{}\" failed: No such file or directory (2)\n\
             rsync error: some files/attrs were not transferred (see previous errors) \
             (code 23) at main.c(1394) [sender=3.5.0]\n",
            root.path
        )));
    }
    let contents_only = written.ends_with('/') && root.kind == FileKind::Directory;
    let root_name = if contents_only {
        None
    } else {
        Some(
            Path::new(written.trim_end_matches('/'))
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| ".".into()),
        )
    };
    let mut by_parent: HashMap<String, Vec<StatInfo>> = HashMap::new();
    let prefix = format!("{}/", root.path.trim_end_matches('/'));
    for entry in entries {
        let Some(rel) = entry.path.strip_prefix(&prefix).map(str::to_string) else {
            continue;
        };
        let parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_string();
        by_parent.entry(parent).or_default().push(entry);
    }
    let mut skipped = HashMap::new();
    let mut top = remote_entry(&root, String::new());
    if top.kind == EntryKind::Dir {
        if !opts.recursive && !opts.dirs {
            skipped.insert(
                "..".to_string(),
                vec![format!(
                    "skipping directory {}",
                    root_name.as_deref().unwrap_or(".")
                )],
            );
            return Ok(Ok(Source {
                root: top,
                root_name,
                skipped,
            }));
        }
        top.children = remote_dir(&mut by_parent, root_name.as_deref(), "", opts, &mut skipped)?;
    }
    Ok(Ok(Source {
        root: top,
        root_name,
        skipped,
    }))
}

fn remote_dir(
    by_parent: &mut HashMap<String, Vec<StatInfo>>,
    prefix: Option<&str>,
    rel: &str,
    opts: &Options,
    skipped: &mut HashMap<String, Vec<String>>,
) -> Result<Vec<SourceEntry>, ModuleError> {
    let mut listed = by_parent.remove(rel).unwrap_or_default();
    listed.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = Vec::new();
    for stat in listed {
        let name = stat.path.rsplit('/').next().unwrap_or_default().to_string();
        let child_rel = child_rel(rel, &name);
        if name == ".rsync-filter" {
            return Err(filter_file_refused(&stat.path));
        }
        let is_dir = stat.kind == FileKind::Directory;
        let shown = shown_name(prefix, &child_rel);
        if excluded(&opts.filters, &child_rel, is_dir) {
            continue;
        }
        let line = match stat.kind {
            FileKind::Symlink if !opts.links => {
                Some(format!("skipping non-regular file \"{shown}\""))
            }
            FileKind::Directory | FileKind::File | FileKind::Symlink => None,
            _ => Some(format!("skipping non-regular file \"{shown}\"")),
        };
        if let Some(line) = line {
            skipped.entry(rel.to_string()).or_default().push(line);
            continue;
        }
        let mut item = remote_entry(&stat, child_rel.clone());
        if is_dir {
            if !opts.recursive {
                if !opts.dirs {
                    skipped
                        .entry(rel.to_string())
                        .or_default()
                        .push(format!("skipping directory {shown}"));
                    continue;
                }
            } else {
                item.children = remote_dir(by_parent, prefix, &child_rel, opts, skipped)?;
            }
        }
        out.push(item);
    }
    Ok(out)
}

fn remote_entry(stat: &StatInfo, rel: String) -> SourceEntry {
    SourceEntry {
        rel,
        kind: match stat.kind {
            FileKind::Directory => EntryKind::Dir,
            FileKind::Symlink => EntryKind::Link,
            _ => EntryKind::File,
        },
        mode: stat.mode & 0o7777,
        size: stat.size,
        mtime: (stat.mtime, stat.mtime_nsec),
        uid: stat.uid,
        gid: stat.gid,
        link: stat.link_target.clone(),
        path: PathBuf::from(&stat.path),
        checksum: stat.checksum.clone(),
        names: Some((stat.owner.clone(), stat.group.clone())),
        children: Vec::new(),
    }
}
