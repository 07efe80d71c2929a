//! `copy` with a directory as `src`: the whole tree goes to the agent as one `Batch` of
//! primitive ops (a directory op per directory, a file op per file), each file described
//! by its digest. The agent leaves alone what already matches and asks for the rest
//! (`NeedContent`), which goes in one more batch: a rerun costs one round trip and no
//! content bytes, and a changed file costs only its own bytes.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use turbo_proto::{
    EnsureFile, EnsurePath, FileContent, FileMode, Op, OpResult, Ownership, PathState,
};

use super::{ModuleError, Next, Plan, TaskOutcome, local_digest, read_local, read_local_decrypted};

/// More than this of changed content in one tree would make a request too large to
/// carry (the frame cap is 64 MiB): such trees want an archive (`unarchive`) rather than
/// `copy`.
const TREE_LIMIT: u64 = 32 << 20;

/// Files this small go inline at once: their digest would be about as many bytes.
const INLINE_AT_ONCE: u64 = 64;

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

/// A file of the tree described by its digest: its op's place in the batch, the op, and
/// where its bytes are on the controller.
struct DigestFile {
    index: usize,
    op: EnsureFile,
    source: PathBuf,
}

/// The plan that makes `dest` hold the tree at `root`: every directory and file in one
/// batch, then the files the agent asked for in another, then the result, shaped by
/// `finish` (copy's check mode reports only what would change).
/// `shape` adds what every file op of the copy carries (backup, validate).
pub(super) fn tree_plan(
    root: &Path,
    spec: &TreeSpec,
    args_src: Option<Value>,
    shape: impl FnOnce(Op) -> Result<Op, ModuleError>,
    finish: fn(TaskOutcome) -> TaskOutcome,
) -> Result<Plan, ModuleError> {
    let (op, sources) = tree_op(root, spec)?;
    let op = shape(op)?;
    let Op::Batch(planned) = &op else {
        unreachable!("a tree copy is planned as one batch")
    };
    let files: Vec<DigestFile> = sources
        .into_iter()
        .filter_map(|(index, source)| match &planned[index] {
            Op::EnsureFile(op) => Some(DigestFile {
                index,
                op: op.clone(),
                source,
            }),
            _ => None,
        })
        .collect();
    let dest = spec.dest.to_string();
    let decrypt = spec.decrypt;
    let done = move |results: Vec<OpResult>| {
        Plan::Done(finish(tree_result(args_src.as_ref(), &dest, results)))
    };
    Ok(Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::Batch(mut results) = reply else {
                return Ok(done(vec![reply]));
            };
            let wanted: Vec<DigestFile> = files
                .into_iter()
                .filter(|f| matches!(results.get(f.index), Some(OpResult::NeedContent)))
                .collect();
            if wanted.is_empty() {
                return Ok(done(results));
            }
            let changed: u64 = wanted
                .iter()
                .map(|f| match f.op.content {
                    FileContent::Digest { size, .. } => size,
                    _ => 0,
                })
                .sum();
            if changed > TREE_LIMIT {
                return Err(too_large(&wanted[0].source, changed));
            }
            let mut places = Vec::with_capacity(wanted.len());
            let mut ops = Vec::with_capacity(wanted.len());
            for file in wanted {
                let bytes = if decrypt {
                    read_local_decrypted(&file.source)?
                } else {
                    read_local(&file.source)?
                };
                places.push(file.index);
                ops.push(Op::EnsureFile(EnsureFile {
                    content: FileContent::Inline(bytes),
                    ..file.op
                }));
            }
            Ok(Plan::Step(
                Op::Batch(ops),
                Next::new(move |reply| {
                    let OpResult::Batch(written) = reply else {
                        return Ok(done(vec![reply]));
                    };
                    for (place, result) in places.into_iter().zip(written) {
                        results[place] = result;
                    }
                    Ok(done(results))
                }),
            ))
        }),
    ))
}

fn too_large(root: &Path, bytes: u64) -> ModuleError {
    ModuleError::Invalid(format!(
        "{} holds {} MiB to copy; a directory copy carries at most {} MiB (copy an archive with unarchive, or split the tree)",
        root.display(),
        bytes >> 20,
        TREE_LIMIT >> 20
    ))
}

/// The first batch of a tree copy, and the files in it that went as digests.
fn tree_op(root: &Path, spec: &TreeSpec) -> Result<(Op, Vec<(usize, PathBuf)>), ModuleError> {
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
    let mut digests = Vec::new();
    for (path, source) in files {
        let content = if spec.decrypt {
            // What lands is the decrypted text, so that is what is compared.
            let bytes = read_local_decrypted(&source)?;
            described(bytes)
        } else {
            let (sha256, size) = local_digest(&source)?;
            if size <= INLINE_AT_ONCE {
                FileContent::Inline(read_local(&source)?)
            } else {
                FileContent::Digest { sha256, size }
            }
        };
        let op = EnsureFile {
            path,
            content,
            mode: spec.mode.clone(),
            force: spec.force,
            owner: spec.owner.clone(),
            validate: None,
            backup: false,
        };
        if matches!(op.content, FileContent::Digest { .. }) {
            digests.push((ops.len(), source));
        }
        ops.push(Op::EnsureFile(op));
    }
    Ok((Op::Batch(ops), digests))
}

/// Bytes in hand as the first batch carries them: small ones inline, others by digest.
fn described(bytes: Vec<u8>) -> FileContent {
    if bytes.len() as u64 <= INLINE_AT_ONCE {
        FileContent::Inline(bytes)
    } else {
        FileContent::Digest {
            sha256: Sha256::digest(&bytes).into(),
            size: bytes.len() as u64,
        }
    }
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

    /// The agent's answer for a file of the tree (root's, mode 0640).
    fn file_reply(path: &str, changed: bool) -> OpResult {
        OpResult::File(FileOutcome {
            changed,
            path: path.into(),
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
    }

    #[test]
    fn a_trailing_slash_copies_the_contents_else_the_directory_itself() {
        let dir = tree();
        let root = dir.path().join("conf.d");
        let contents = tree_op(&root, &spec("conf.d/")).unwrap().0;
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
        let itself = tree_op(&root, &spec("conf.d")).unwrap().0;
        assert_eq!(paths(&itself)[0].0, "/etc/app/conf.d");
        assert_eq!(paths(&itself)[4].0, "/etc/app/conf.d/sub/c.conf");
        let Op::Batch(ops) = itself else { panic!() };
        let Op::EnsurePath(d) = &ops[0] else { panic!() };
        assert_eq!(d.mode, Some(FileMode::Bits(0o750)));
        let Op::EnsureFile(f) = &ops[2] else { panic!() };
        assert_eq!(f.mode, Some(FileMode::Bits(0o640)));
    }

    /// Files past a digest's size go as digests; only those the agent asks for follow,
    /// with their bytes, and every reply lands in its file's place in the result.
    #[test]
    fn only_the_files_the_agent_asks_for_are_sent() {
        let dir = tree();
        let root = dir.path().join("conf.d");
        let big_a = "a".repeat(100);
        let big_b = "b".repeat(100);
        std::fs::write(root.join("a.conf"), &big_a).unwrap();
        std::fs::write(root.join("b.conf"), &big_b).unwrap();
        let mut spec = spec("conf.d/");
        spec.decrypt = false;
        let Plan::Step(Op::Batch(first), next) = tree_plan(
            &root,
            &spec,
            Some(json!("conf.d/")),
            Ok,
            std::convert::identity,
        )
        .unwrap() else {
            panic!("a tree copy starts with one batch")
        };
        let Op::EnsureFile(a) = &first[2] else {
            panic!()
        };
        assert_eq!(
            a.content,
            FileContent::Digest {
                sha256: Sha256::digest(big_a.as_bytes()).into(),
                size: 100
            }
        );
        assert!(
            matches!(&first[4], Op::EnsureFile(c) if c.content == FileContent::Inline(b"c\n".to_vec()))
        );
        let file = file_reply;
        let dir_ok = || file("/etc/app", false);
        // b.conf already matches; a.conf does not.
        let replies = vec![
            dir_ok(),
            dir_ok(),
            OpResult::NeedContent,
            file("/etc/app/b.conf", false),
            file("/etc/app/sub/c.conf", false),
        ];
        let Plan::Step(Op::Batch(second), next) = next.resume(OpResult::Batch(replies)).unwrap()
        else {
            panic!("the asked-for files follow")
        };
        assert_eq!(second.len(), 1);
        let Op::EnsureFile(sent) = &second[0] else {
            panic!()
        };
        assert_eq!(sent.path, "/etc/app/a.conf");
        assert_eq!(sent.content, FileContent::Inline(big_a.into_bytes()));
        assert_eq!(sent.mode, Some(FileMode::Bits(0o640)));
        let Plan::Done(out) = next
            .resume(OpResult::Batch(vec![file("/etc/app/a.conf", true)]))
            .unwrap()
        else {
            panic!("then the result")
        };
        assert!(out.changed && !out.failed, "{out:?}");
        // A rerun: nothing asked for, no second batch.
        let Plan::Step(_, next) =
            tree_plan(&root, &spec, None, Ok, std::convert::identity).unwrap()
        else {
            panic!()
        };
        let unchanged = (0..5).map(|_| dir_ok()).collect();
        let Plan::Done(out) = next.resume(OpResult::Batch(unchanged)).unwrap() else {
            panic!("nothing more to send")
        };
        assert!(!out.changed);
    }

    #[test]
    fn results_add_up_and_the_first_error_fails() {
        let file = |changed| file_reply("/etc/app/a.conf", changed);
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
