//! `copy` with a directory as `src`: the whole tree goes to the agent as one `Batch` of
//! primitive ops (a directory op per directory, a file op per file, contents inline), so a
//! tree of any shape costs one round trip, and unchanged files are left alone by the agent.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use turbo_proto::{
    EnsureFile, EnsurePath, FileContent, FileMode, Op, OpResult, Ownership, PathState,
};

use super::{ModuleError, TaskOutcome, read_local, read_local_decrypted};

/// More than this in one tree would make a request too large to carry (the frame cap is
/// 64 MiB): such trees want an archive (`unarchive`) rather than `copy`.
const TREE_LIMIT: u64 = 32 << 20;

/// What a directory copy needs besides the tree itself.
pub(super) struct TreeSpec<'a> {
    /// `src` as written: a trailing `/` copies the directory's contents, none copies the
    /// directory itself into `dest` (rsync's and Ansible's rule).
    pub written_src: &'a str,
    pub dest: &'a str,
    pub mode: Option<FileMode>,
    pub directory_mode: Option<FileMode>,
    pub owner: Ownership,
    pub force: bool,
    /// `decrypt`: vault-encrypted files are written decrypted.
    pub decrypt: bool,
}

/// The ops that make `dest` hold the tree at `root`, parents before children, in name
/// order so that runs are reproducible.
pub(super) fn tree_op(root: &Path, spec: &TreeSpec) -> Result<Op, ModuleError> {
    let dest_root = if spec.written_src.ends_with('/') {
        spec.dest.trim_end_matches('/').to_string()
    } else {
        let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
        format!(
            "{}/{}",
            spec.dest.trim_end_matches('/'),
            name.unwrap_or_default()
        )
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut dirs: Vec<String> = vec![dest_root.clone()];
    walk(root, &dest_root, &mut dirs, &mut files)?;
    let mut total = 0u64;
    for (_, path) in &files {
        total += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    }
    if total > TREE_LIMIT {
        return Err(ModuleError::Invalid(format!(
            "{} holds {} MiB; a directory copy carries at most {} MiB (copy an archive with unarchive, or split the tree)",
            root.display(),
            total >> 20,
            TREE_LIMIT >> 20
        )));
    }
    let mut ops: Vec<Op> = dirs
        .into_iter()
        .map(|path| {
            Op::EnsurePath(EnsurePath {
                path,
                state: PathState::Directory,
                mode: spec.directory_mode.clone(),
                recurse_parents: true,
                owner: spec.owner.clone(),
            })
        })
        .collect();
    for (path, source) in files {
        // Inline whatever the size (the tree is capped above): the agent still compares
        // before it writes.
        ops.push(Op::EnsureFile(EnsureFile {
            path,
            content: FileContent::Inline(if spec.decrypt {
                read_local_decrypted(&source)?
            } else {
                read_local(&source)?
            }),
            mode: spec.mode.clone(),
            force: spec.force,
            owner: spec.owner.clone(),
            validate: None,
            backup: false,
        }));
    }
    Ok(Op::Batch(ops))
}

/// Directories and files below `dir` (symlinks followed, as Ansible's `local_follow`).
fn walk(
    dir: &Path,
    dest: &str,
    dirs: &mut Vec<String>,
    files: &mut Vec<(String, PathBuf)>,
) -> Result<(), ModuleError> {
    let read_error = |e: std::io::Error| ModuleError::Read {
        path: dir.display().to_string(),
        message: e.to_string(),
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let target = format!("{dest}/{name}");
        if path.is_dir() {
            dirs.push(target.clone());
            walk(&path, &target, dirs, files)?;
        } else {
            files.push((target, path));
        }
    }
    Ok(())
}

/// The result of a tree copy: changed when any op changed something, the first error
/// otherwise failing it, and every file's diff.
pub(super) fn tree_result(
    args_src: Option<&Value>,
    dest: &str,
    results: Vec<OpResult>,
) -> TaskOutcome {
    let mut changed = false;
    let mut diffs = Vec::new();
    for result in results {
        match result {
            OpResult::File(f) => {
                changed |= f.changed;
                if let Some(diff) = f.diff {
                    diffs.push(super::copy::diff_json(&f.path, diff));
                }
            }
            OpResult::Error(e) => return TaskOutcome::failed(e.message),
            other => {
                return TaskOutcome::failed(format!(
                    "internal error: copy got an unexpected reply from the agent: {other:?}"
                ));
            }
        }
    }
    let mut data = serde_json::Map::new();
    data.insert("dest".into(), json!(dest));
    if let Some(src) = args_src {
        data.insert("src".into(), src.clone());
    }
    if !diffs.is_empty() {
        data.insert("diff".into(), Value::Array(diffs));
    }
    TaskOutcome {
        changed,
        data,
        ..TaskOutcome::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::{FileKind, FileOutcome, OpError};

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("conf.d/sub")).unwrap();
        std::fs::write(dir.path().join("conf.d/b.conf"), "b\n").unwrap();
        std::fs::write(dir.path().join("conf.d/a.conf"), "a\n").unwrap();
        std::fs::write(dir.path().join("conf.d/sub/c.conf"), "c\n").unwrap();
        dir
    }

    fn paths(op: &Op) -> Vec<(String, Option<Vec<u8>>)> {
        let Op::Batch(ops) = op else { panic!("{op:?}") };
        ops.iter()
            .map(|op| match op {
                Op::EnsurePath(p) => (p.path.clone(), None),
                Op::EnsureFile(f) => match &f.content {
                    FileContent::Inline(b) => (f.path.clone(), Some(b.clone())),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn spec(src: &str) -> TreeSpec<'_> {
        TreeSpec {
            written_src: src,
            dest: "/etc/app/",
            mode: Some(FileMode::Bits(0o640)),
            directory_mode: Some(FileMode::Bits(0o750)),
            owner: Ownership::default(),
            force: true,
            decrypt: true,
        }
    }

    #[test]
    fn a_trailing_slash_copies_the_contents_else_the_directory_itself() {
        let dir = tree();
        let root = dir.path().join("conf.d");
        let contents = tree_op(&root, &spec("conf.d/")).unwrap();
        assert_eq!(
            paths(&contents),
            vec![
                ("/etc/app".into(), None),
                ("/etc/app/sub".into(), None),
                ("/etc/app/a.conf".into(), Some(b"a\n".to_vec())),
                ("/etc/app/b.conf".into(), Some(b"b\n".to_vec())),
                ("/etc/app/sub/c.conf".into(), Some(b"c\n".to_vec())),
            ]
        );
        let itself = tree_op(&root, &spec("conf.d")).unwrap();
        assert_eq!(paths(&itself)[0].0, "/etc/app/conf.d");
        assert_eq!(paths(&itself)[4].0, "/etc/app/conf.d/sub/c.conf");
        let Op::Batch(ops) = itself else { panic!() };
        let Op::EnsurePath(d) = &ops[0] else { panic!() };
        assert_eq!(d.mode, Some(FileMode::Bits(0o750)));
        let Op::EnsureFile(f) = &ops[2] else { panic!() };
        assert_eq!(f.mode, Some(FileMode::Bits(0o640)));
    }

    #[test]
    fn results_add_up_and_the_first_error_fails() {
        let file = |changed| {
            OpResult::File(FileOutcome {
                changed,
                path: "/etc/app/a.conf".into(),
                kind: FileKind::File,
                mode: 0o640,
                size: 2,
                uid: 0,
                gid: 0,
                owner: "root".into(),
                group: "root".into(),
                diff: None,
                backup_file: None,
            })
        };
        let src = json!("conf.d/");
        assert!(!tree_result(Some(&src), "/etc/app", vec![file(false), file(false)]).changed);
        let out = tree_result(Some(&src), "/etc/app", vec![file(false), file(true)]);
        assert!(out.changed && !out.failed);
        assert_eq!(out.data["dest"], json!("/etc/app"));
        let error = OpResult::Error(OpError {
            kind: turbo_proto::ErrorKind::PermissionDenied,
            message: "Permission denied: /etc/app/a.conf".into(),
        });
        let out = tree_result(Some(&src), "/etc/app", vec![file(true), error]);
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("Permission denied: /etc/app/a.conf")
        );
    }
}
