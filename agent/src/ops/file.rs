//! `Op::EnsureFile` (copy/template's primitive) and `Op::WriteChunk` (its bulk upload).

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use turbo_proto::{EnsureFile, ErrorKind, FileContent, FileDiff, FileKind, OpError, OpResult};

use super::backup::back_up;
use super::{
    Agent, Flags, WantedIds, apply_ids, chmod, io_error, mode, op_error, stat_follow, text_diff,
};
use crate::sha256;

pub fn write_chunk(agent: &mut Agent, upload_id: u64, data: &[u8]) -> Result<OpResult, OpError> {
    let path = agent.staged_path(upload_id)?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io_error(e, &path))?;
    let before = file.metadata().map_err(|e| io_error(e, &path))?.len();
    file.write_all(data).map_err(|e| io_error(e, &path))?;
    let size = before + data.len() as u64;
    let hashed = agent
        .staged_digests
        .entry(upload_id)
        .or_insert_with(|| (sha256::Sha256::new(), 0));
    if hashed.1 == before {
        hashed.0.update(data);
        hashed.1 = size;
    } else {
        // Appended to by something else (a delta): checked by reading it back instead.
        agent.staged_digests.remove(&upload_id);
    }
    Ok(OpResult::Chunk { size })
}

/// Where the wanted bytes are.
enum Source {
    Bytes(Vec<u8>),
    /// A verified staging file.
    Staged(PathBuf),
    /// Another file on this host.
    Copy(PathBuf),
    /// The file already holds them (a matching digest).
    Existing,
}

pub fn ensure_file(agent: &mut Agent, spec: EnsureFile, flags: Flags) -> Result<OpResult, OpError> {
    let path = agent.expand(&spec.path);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(op_error(
            ErrorKind::NotFound,
            format!("Destination directory {} does not exist", parent.display()),
        ));
    }
    let ids = agent.wanted_ids(&spec.owner)?;
    let existing = stat_follow(&path)?;
    if let Some(meta) = &existing {
        if meta.is_dir() {
            return Err(op_error(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is a directory; a file op needs the full destination file path",
                    path.display()
                ),
            ));
        }
        if !meta.is_file() {
            return Err(op_error(
                ErrorKind::InvalidArgument,
                format!("{} exists and is not a regular file", path.display()),
            ));
        }
        if !spec.force {
            return Ok(OpResult::File(agent.outcome(&path, meta, false)));
        }
    }

    let (source, new_size, content_changed) = match spec.content {
        FileContent::Inline(bytes) => {
            let same = match &existing {
                Some(meta) if meta.size() == bytes.len() as u64 => {
                    fs::read(&path).map_err(|e| io_error(e, &path))? == bytes
                }
                _ => false,
            };
            let size = bytes.len() as u64;
            (Source::Bytes(bytes), size, !same)
        }
        FileContent::Digest { sha256, size } => {
            let same = match &existing {
                Some(meta) if meta.size() == size => {
                    sha256::digest_file(&path).map_err(|e| io_error(e, &path))? == sha256
                }
                _ => false,
            };
            if !same {
                return Ok(OpResult::NeedContent);
            }
            (Source::Existing, size, false)
        }
        FileContent::Replacing { bytes, was_sha256 } => {
            let holds = match &existing {
                Some(_) => {
                    sha256::digest_file(&path).map_err(|e| io_error(e, &path))? == was_sha256
                }
                None => false,
            };
            if !holds {
                return Err(op_error(
                    ErrorKind::Conflict,
                    format!("{} changed since it was read", path.display()),
                ));
            }
            let same = fs::read(&path).map_err(|e| io_error(e, &path))? == bytes;
            let size = bytes.len() as u64;
            (Source::Bytes(bytes), size, !same)
        }
        FileContent::CopyOf { path: from } => {
            let from = agent.expand(&from);
            let meta = fs::metadata(&from).map_err(|e| io_error(e, &from))?;
            if !meta.is_file() {
                return Err(op_error(
                    ErrorKind::InvalidArgument,
                    format!("{} is not a regular file", from.display()),
                ));
            }
            let same = match &existing {
                Some(there) if there.size() == meta.size() => {
                    same_bytes(&path, &from).map_err(|e| io_error(e, &path))?
                }
                _ => false,
            };
            (Source::Copy(from), meta.size(), !same)
        }
        FileContent::Staged { upload_id, sha256 } => {
            let staged = verified_staging_file(agent, upload_id, &sha256)?;
            let size = fs::metadata(&staged)
                .map_err(|e| io_error(e, &staged))?
                .len();
            let same = match &existing {
                Some(meta) if meta.size() == size => {
                    sha256::digest_file(&path).map_err(|e| io_error(e, &path))? == sha256
                }
                _ => false,
            };
            (Source::Staged(staged), size, !same)
        }
    };

    let result = apply(
        agent,
        &path,
        existing.as_ref(),
        &source,
        Change {
            new_size,
            content_changed,
            wanted_mode: spec.mode.as_ref(),
            ids,
            validate: spec.validate.as_deref(),
            backup: spec.backup,
        },
        flags,
    );
    if let Source::Staged(staged) = &source {
        // One use per upload: a later request stages again.
        let _ = fs::remove_file(staged);
    }
    result
}

/// What `apply` is to make of the file, besides its bytes.
struct Change<'a> {
    new_size: u64,
    content_changed: bool,
    wanted_mode: Option<&'a turbo_proto::FileMode>,
    ids: WantedIds,
    validate: Option<&'a [String]>,
    backup: bool,
}

fn apply(
    agent: &mut Agent,
    path: &Path,
    existing: Option<&Metadata>,
    source: &Source,
    change: Change,
    flags: Flags,
) -> Result<OpResult, OpError> {
    let Change {
        new_size,
        content_changed,
        wanted_mode,
        ids,
        validate,
        backup,
    } = change;
    let current_mode = existing.map(|m| m.mode() & 0o7777);
    // A replaced file keeps its mode unless one is given, as Ansible's atomic move does.
    let base_mode = current_mode.unwrap_or_else(|| agent.default_mode(false));
    let target_mode = match wanted_mode {
        Some(m) => mode::resolve(m, base_mode, false, agent.umask)
            .map_err(|msg| op_error(ErrorKind::InvalidArgument, msg))?,
        None => base_mode,
    };
    let mode_changed = current_mode.is_some_and(|m| m != target_mode);
    let owner_changed = existing.is_some_and(|m| ids.differ(m));
    let changed = content_changed || mode_changed || owner_changed;

    let diff = if flags.diff && content_changed {
        content_diff(path, existing, source)
    } else {
        None
    };

    let mut outcome = if flags.check {
        let mut o = match existing {
            Some(meta) => agent.outcome(path, meta, changed),
            None => agent.predicted_outcome(path, FileKind::File, target_mode, new_size, changed),
        };
        o.mode = target_mode;
        o.size = new_size;
        agent.predict_ids(&mut o, ids);
        o
    } else {
        let mut backup_file = None;
        if content_changed {
            if let Some(meta) = existing.filter(|_| backup) {
                backup_file = Some(back_up(agent, path, meta)?);
            }
            write_atomically(agent, path, existing, source, target_mode, ids, validate)?;
        } else {
            if let Some(meta) = existing.filter(|_| owner_changed) {
                apply_ids(path, meta, ids, true, false)?;
            }
            // chown clears set-id bits, so the mode goes on after it.
            if mode_changed || (owner_changed && target_mode & 0o6000 != 0) {
                chmod(path, target_mode)?;
            }
        }
        let meta = fs::metadata(path).map_err(|e| io_error(e, path))?;
        let mut o = agent.outcome(path, &meta, changed);
        o.backup_file = backup_file.map(|b| b.to_string_lossy().into_owned());
        o
    };
    outcome.diff = diff;
    Ok(OpResult::File(outcome))
}

fn verified_staging_file(
    agent: &mut Agent,
    upload_id: u64,
    want: &[u8; 32],
) -> Result<PathBuf, OpError> {
    let staged = agent.staged_path(upload_id)?;
    let hashed = agent.staged_digests.remove(&upload_id);
    let read_back = || match hashed {
        Some((hasher, len)) if fs::metadata(&staged).is_ok_and(|m| m.len() == len) => {
            Ok(hasher.finish())
        }
        _ => sha256::digest_file(&staged),
    };
    let got = match read_back() {
        Ok(got) => got,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(op_error(
                ErrorKind::Protocol,
                format!("upload {upload_id} was never staged: send its WriteChunks first"),
            ));
        }
        Err(e) => return Err(io_error(e, &staged)),
    };
    if &got != want {
        let _ = fs::remove_file(&staged);
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!(
                "upload {upload_id} hashes to {} but {} was expected; it was discarded, send it again",
                sha256::hex(&got),
                sha256::hex(want)
            ),
        ));
    }
    Ok(staged)
}

/// Temp file in the same directory, fsync, rename: readers see the old file or the new
/// one, never a half-written one.
fn write_atomically(
    agent: &mut Agent,
    path: &Path,
    existing: Option<&Metadata>,
    source: &Source,
    mode: u32,
    ids: WantedIds,
    validate: Option<&[String]>,
) -> Result<(), OpError> {
    let temp = agent.temp_path(path);
    let (uid, gid) = (agent.uid, agent.gid);
    let wanted = (
        ids.uid.or(existing.map(|m| m.uid())).unwrap_or(uid),
        ids.gid.or(existing.map(|m| m.gid())).unwrap_or(gid),
    );
    let result = (|| -> io::Result<()> {
        let create = || {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
        };
        let file = match source {
            // On the staging directory's filesystem the upload itself becomes the temp
            // file: a large file is not written twice.
            Source::Staged(staged) if fs::rename(staged, &temp).is_ok() => {
                OpenOptions::new().write(true).open(&temp)?
            }
            Source::Staged(staged) => {
                let mut file = create()?;
                io::copy(&mut File::open(staged)?, &mut file)?;
                file
            }
            Source::Bytes(bytes) => {
                let mut file = create()?;
                file.write_all(bytes)?;
                file
            }
            Source::Copy(from) => {
                let mut file = create()?;
                io::copy(&mut File::open(from)?, &mut file)?;
                file
            }
            Source::Existing => create()?,
        };
        // The new file gets its owner before it takes the old one's place. Without
        // `owner`/`group` it keeps the old owner when we may give it away (root); anyone
        // else gets EPERM and owns the new file, as with Ansible.
        if wanted != (uid, gid) {
            match std::os::unix::fs::fchown(&file, Some(wanted.0), Some(wanted.1)) {
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && ids.is_empty() => {}
                Err(e) => {
                    return Err(io::Error::new(e.kind(), format!("chown failed: {e}")));
                }
                Ok(()) => {}
            }
        }
        // After chown, which clears set-id bits.
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        if matches!(source, Source::Staged(_)) {
            // A large upload is worth its flush: after a crash the name holds the old
            // file or the whole new one, never a hole where its blocks were to be.
            file.sync_all()?;
        }
        drop(file);
        if let Some(argv) = validate {
            run_validator(argv, &temp)?;
        }
        // No fsync for small inline files: the rename already makes the change
        // all-or-nothing for readers, and Ansible does not fsync either; a flush per file
        // would make us the disk's bottleneck (1000 small files: 0.39 s with it, about a
        // third without).
        fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&temp);
        if e.kind() == io::ErrorKind::InvalidData {
            // The validator's verdict, already worded.
            op_error(ErrorKind::InvalidArgument, e.to_string())
        } else {
            io_error(e, path)
        }
    })
}

/// Runs `validate` on the new content at `temp` (`%s` in an argument is its path), as
/// Ansible's copy does before it moves a file into place.
fn run_validator(argv: &[String], temp: &Path) -> io::Result<()> {
    let temp = temp.to_string_lossy();
    let argv: Vec<String> = argv.iter().map(|a| a.replace("%s", &temp)).collect();
    let Some((program, args)) = argv.split_first() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "failed to validate: the validate command is empty",
        ));
    };
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("failed to validate: cannot run {program}: {e}"),
            )
        })?;
    if out.status.success() {
        return Ok(());
    }
    let detail = String::from_utf8_lossy(if out.stderr.is_empty() {
        &out.stdout
    } else {
        &out.stderr
    })
    .trim()
    .to_string();
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "failed to validate: {} exited with {}{}{detail}",
            argv.join(" "),
            out.status
                .code()
                .map_or("a signal".into(), |c| c.to_string()),
            if detail.is_empty() { "" } else { ": " }
        ),
    ))
}

/// Whether two files hold the same bytes, read a block at a time.
fn same_bytes(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut a, mut b) = (File::open(a)?, File::open(b)?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn content_diff(path: &Path, existing: Option<&Metadata>, source: &Source) -> Option<FileDiff> {
    const LIMIT: u64 = 1 << 20;
    let read_small = |p: &Path| -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        File::open(p)
            .ok()?
            .take(LIMIT)
            .read_to_end(&mut bytes)
            .ok()?;
        Some(bytes)
    };
    let before = match existing {
        Some(meta) if meta.size() >= LIMIT => return None,
        Some(_) => read_small(path)?,
        None => Vec::new(),
    };
    let (before, after) = match source {
        Source::Bytes(after) => text_diff(&before, after),
        Source::Staged(staged) | Source::Copy(staged) => text_diff(&before, &read_small(staged)?),
        Source::Existing => None,
    }?;
    Some(FileDiff {
        before: existing.map(|_| before),
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use turbo_proto::{FileMode, FileOutcome};

    fn ensure(
        a: &mut Agent,
        path: &str,
        content: FileContent,
        mode: Option<FileMode>,
        flags: Flags,
    ) -> Result<OpResult, OpError> {
        ensure_file(
            a,
            EnsureFile {
                path: path.into(),
                content,
                mode,
                force: true,
                owner: Default::default(),
                validate: None,
                backup: false,
            },
            flags,
        )
    }

    fn inline(a: &mut Agent, path: &str, bytes: &[u8]) -> FileOutcome {
        match ensure(
            a,
            path,
            FileContent::Inline(bytes.to_vec()),
            None,
            Flags::default(),
        ) {
            Ok(OpResult::File(o)) => o,
            other => panic!("{other:?}"),
        }
    }

    fn mode_of(p: &Path) -> u32 {
        fs::metadata(p).unwrap().mode() & 0o7777
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("turbo-tmp"))
            .collect()
    }

    #[test]
    fn creates_then_leaves_alone_then_replaces() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = inline(&mut a, "~/f", b"one\n");
        assert!(o.changed);
        assert_eq!(o.path, dir.str("f"));
        assert_eq!((o.kind, o.mode, o.size), (FileKind::File, 0o644, 4));
        assert_eq!(o.uid, a.uid);
        assert!(!o.owner.is_empty());
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"one\n");

        assert!(!inline(&mut a, "~/f", b"one\n").changed);
        // Same size, other bytes: must still be seen.
        assert!(inline(&mut a, "~/f", b"two\n").changed);
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"two\n");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_copy_of_another_file_on_the_host_is_written_as_any_content() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("from"), b"same host\n").unwrap();
        let copy = |a: &mut Agent, mode| match ensure(
            a,
            "~/to",
            FileContent::CopyOf {
                path: "~/from".into(),
            },
            mode,
            Flags::default(),
        ) {
            Ok(OpResult::File(o)) => o,
            other => panic!("{other:?}"),
        };
        let o = copy(&mut a, Some(FileMode::Bits(0o640)));
        assert!(o.changed);
        assert_eq!((o.mode, o.size), (0o640, 10));
        assert_eq!(fs::read(dir.join("to")).unwrap(), b"same host\n");
        assert!(!copy(&mut a, None).changed);
        // Same size, other bytes.
        fs::write(dir.join("from"), b"SAME HOST\n").unwrap();
        assert!(copy(&mut a, None).changed);
        assert_eq!(fs::read(dir.join("to")).unwrap(), b"SAME HOST\n");
        assert!(leftovers(dir.path()).is_empty());
        let missing = ensure(
            &mut a,
            "~/to",
            FileContent::CopyOf {
                path: "~/nothing".into(),
            },
            None,
            Flags::default(),
        );
        assert!(missing.is_err(), "{missing:?}");
    }

    #[test]
    fn replacing_keeps_the_old_owner_when_running_as_root() {
        if crate::sys::effective_uid() != 0 {
            return;
        }
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let p = dir.join("owned");
        fs::write(&p, b"old").unwrap();
        std::os::unix::fs::chown(&p, Some(1), Some(1)).unwrap();
        chmod(&p, 0o4755).unwrap();
        let o = inline(&mut a, &dir.str("owned"), b"new");
        assert!(o.changed);
        assert_eq!((o.uid, o.gid), (1, 1));
        assert_eq!(o.mode, 0o4755, "set-id bits survive the chown");
        assert_eq!(fs::read(&p).unwrap(), b"new");
    }

    fn owned(
        a: &mut Agent,
        path: &str,
        bytes: &[u8],
        user: &str,
        flags: Flags,
    ) -> Result<FileOutcome, OpError> {
        let spec = EnsureFile {
            path: path.into(),
            content: FileContent::Inline(bytes.to_vec()),
            mode: Some(FileMode::Bits(0o640)),
            force: true,
            owner: turbo_proto::Ownership {
                user: Some(user.into()),
                group: Some("2".into()),
            },
            validate: None,
            backup: false,
        };
        ensure_file(a, spec, flags).map(|r| match r {
            OpResult::File(o) => o,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn owner_and_group_are_set_on_new_and_existing_files() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let p = dir.join("conf");
        let err = owned(
            &mut a,
            &dir.str("conf"),
            b"x",
            "no-such-user-here",
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "chown failed: failed to look up user no-such-user-here"
        );
        assert!(!p.exists(), "nothing is written when the owner is unknown");
        if crate::sys::effective_uid() != 0 {
            let err = owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default()).unwrap_err();
            assert!(err.message.starts_with("chown failed: "), "{}", err.message);
            assert!(!p.exists(), "a refused chown leaves no file behind");
            return;
        }
        let o = owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default()).unwrap();
        assert!(o.changed);
        assert_eq!((o.uid, o.gid, o.mode), (1, 2, 0o640));
        let meta = fs::metadata(&p).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (1, 2));
        assert!(
            !owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default())
                .unwrap()
                .changed
        );
        // Only the owner differs: changed, content untouched.
        std::os::unix::fs::chown(&p, Some(0), Some(0)).unwrap();
        let check = Flags {
            check: true,
            diff: false,
        };
        let o = owned(&mut a, &dir.str("conf"), b"x", "1", check).unwrap();
        assert!(o.changed);
        assert_eq!((o.uid, o.gid), (1, 2), "check mode predicts the ids");
        assert_eq!(
            fs::metadata(&p).unwrap().uid(),
            0,
            "check mode changes nothing"
        );
        let o = owned(&mut a, &dir.str("conf"), b"x", "root", Flags::default()).unwrap();
        assert!(o.changed);
        assert_eq!((o.uid, o.gid, o.owner.as_str()), (0, 2, "root"));
        assert_eq!(fs::read(&p).unwrap(), b"x");
    }

    #[test]
    fn replacing_keeps_the_old_mode_unless_one_is_given() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let p = dir.join("f");
        fs::write(&p, b"old").unwrap();
        chmod(&p, 0o600).unwrap();
        inline(&mut a, &dir.str("f"), b"new");
        assert_eq!(mode_of(&p), 0o600);
        let o = ensure(
            &mut a,
            &dir.str("f"),
            FileContent::Inline(b"new".to_vec()),
            Some(FileMode::Bits(0o640)),
            Flags::default(),
        )
        .unwrap();
        assert!(matches!(o, OpResult::File(ref o) if o.changed && o.mode == 0o640));
        assert_eq!(mode_of(&p), 0o640);
        let o = ensure(
            &mut a,
            &dir.str("f"),
            FileContent::Inline(b"new".to_vec()),
            Some(FileMode::Symbolic("u=rw,g=r".into())),
            Flags::default(),
        )
        .unwrap();
        assert!(matches!(o, OpResult::File(ref o) if !o.changed && o.mode == 0o640));
    }

    #[test]
    fn new_file_with_symbolic_mode_starts_from_the_default() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        ensure(
            &mut a,
            &dir.str("x"),
            FileContent::Inline(vec![]),
            Some(FileMode::Symbolic("u+x".into())),
            Flags::default(),
        )
        .unwrap();
        assert_eq!(mode_of(&dir.join("x")), 0o744);
        let err = ensure(
            &mut a,
            &dir.str("x"),
            FileContent::Inline(vec![]),
            Some(FileMode::Symbolic("q+x".into())),
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
    }

    #[test]
    fn force_false_leaves_an_existing_file() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("f"), b"keep").unwrap();
        let spec = |force| EnsureFile {
            path: dir.str("f"),
            content: FileContent::Inline(b"other".to_vec()),
            mode: None,
            force,
            owner: Default::default(),
            validate: None,
            backup: false,
        };
        let r = ensure_file(&mut a, spec(false), Flags::default()).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if !o.changed));
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"keep");
        fs::remove_file(dir.join("f")).unwrap();
        let r = ensure_file(&mut a, spec(false), Flags::default()).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed));
    }

    #[test]
    fn validate_runs_on_the_new_content_and_a_refusal_keeps_the_old_file() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("f"), b"old\n").unwrap();
        let spec = |bytes: &[u8], argv: &[&str]| EnsureFile {
            path: dir.str("f"),
            content: FileContent::Inline(bytes.to_vec()),
            mode: None,
            force: true,
            owner: Default::default(),
            validate: Some(argv.iter().map(|s| s.to_string()).collect()),
            backup: false,
        };
        // grep sees the new content, not the old file.
        let refuse = spec(b"bad\n", &["grep", "-q", "good", "%s"]);
        let err = ensure_file(&mut a, refuse, Flags::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert!(
            err.message.starts_with("failed to validate: grep -q good ")
                && err.message.ends_with(" exited with 1"),
            "{}",
            err.message
        );
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"old\n");
        assert!(leftovers(dir.path()).is_empty());

        let accept = spec(b"good\n", &["grep", "-q", "good", "%s"]);
        let r = ensure_file(&mut a, accept, Flags::default()).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed));
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"good\n");
        // Unchanged content is not validated again (a validator that always refuses).
        let r = ensure_file(&mut a, spec(b"good\n", &["false"]), Flags::default()).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if !o.changed));
        // Nor in check mode.
        let check = Flags {
            check: true,
            ..Flags::default()
        };
        let r = ensure_file(&mut a, spec(b"new\n", &["false"]), check).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed));
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"good\n");
    }

    #[test]
    fn missing_directory_and_directory_destination_are_errors() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let err = ensure(
            &mut a,
            &dir.str("no/f"),
            FileContent::Inline(vec![1]),
            None,
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert_eq!(
            err.message,
            format!("Destination directory {} does not exist", dir.str("no"))
        );
        fs::create_dir(dir.join("d")).unwrap();
        let err = ensure(
            &mut a,
            &dir.str("d"),
            FileContent::Inline(vec![1]),
            None,
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert!(err.message.contains("is a directory"), "{}", err.message);
    }

    #[test]
    fn check_mode_reports_without_writing_and_diff_mode_shows_both_sides() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let check = Flags {
            check: true,
            diff: true,
        };
        let r = ensure(
            &mut a,
            &dir.str("f"),
            FileContent::Inline(b"new\n".to_vec()),
            None,
            check,
        )
        .unwrap();
        let OpResult::File(o) = r else { panic!() };
        assert!(o.changed);
        assert_eq!(
            o.diff,
            Some(FileDiff {
                before: None,
                after: "new\n".into()
            })
        );
        assert!(!dir.join("f").exists());

        fs::write(dir.join("f"), b"old\n").unwrap();
        let r = ensure(
            &mut a,
            &dir.str("f"),
            FileContent::Inline(b"new\n".to_vec()),
            None,
            check,
        )
        .unwrap();
        let OpResult::File(o) = r else { panic!() };
        assert!(o.changed);
        assert_eq!(
            o.diff,
            Some(FileDiff {
                before: Some("old\n".into()),
                after: "new\n".into()
            })
        );
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"old\n");

        // Binary content: changed, but no diff text.
        let diff_only = Flags {
            check: false,
            diff: true,
        };
        let r = ensure(
            &mut a,
            &dir.str("f"),
            FileContent::Inline(vec![0xff, 0]),
            None,
            diff_only,
        )
        .unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed && o.diff.is_none()));
    }

    #[test]
    fn digest_only_asks_for_content_when_it_differs() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("f"), b"abc").unwrap();
        let digest = |sha256, size| FileContent::Digest { sha256, size };
        let r = ensure(
            &mut a,
            &dir.str("f"),
            digest(sha256::digest(b"abc"), 3),
            None,
            Flags::default(),
        )
        .unwrap();
        assert!(matches!(r, OpResult::File(ref o) if !o.changed));
        let r = ensure(
            &mut a,
            &dir.str("f"),
            digest(sha256::digest(b"abd"), 3),
            None,
            Flags::default(),
        )
        .unwrap();
        assert_eq!(r, OpResult::NeedContent);
        let r = ensure(
            &mut a,
            &dir.str("g"),
            digest(sha256::digest(b"abc"), 3),
            None,
            Flags::default(),
        )
        .unwrap();
        assert_eq!(r, OpResult::NeedContent);
        // Matching content with another mode only needs a chmod.
        let r = ensure(
            &mut a,
            &dir.str("f"),
            digest(sha256::digest(b"abc"), 3),
            Some(FileMode::Bits(0o600)),
            Flags::default(),
        )
        .unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed && o.mode == 0o600));
    }

    #[test]
    fn replacing_writes_only_over_the_content_it_was_computed_from() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("f"), b"one\n").unwrap();
        let replacing = |bytes: &[u8], was: &[u8]| FileContent::Replacing {
            bytes: bytes.to_vec(),
            was_sha256: sha256::digest(was),
        };
        let path = dir.str("f");
        let r = ensure(
            &mut a,
            &path,
            replacing(b"one\ntwo\n", b"one\n"),
            None,
            Flags::default(),
        );
        assert!(matches!(r, Ok(OpResult::File(ref o)) if o.changed), "{r:?}");
        // Computed from what the file held before: refused, the file left as it is.
        let r = ensure(
            &mut a,
            &path,
            replacing(b"one\nthree\n", b"one\n"),
            None,
            Flags::default(),
        );
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Conflict);
        assert_eq!(e.message, format!("{path} changed since it was read"));
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"one\ntwo\n");
        let r = ensure(
            &mut a,
            &dir.str("g"),
            replacing(b"x", b""),
            None,
            Flags::default(),
        );
        assert_eq!(r.unwrap_err().kind, ErrorKind::Conflict);
        assert!(!dir.join("g").exists());
    }

    #[test]
    fn staged_uploads_are_verified_used_once_and_cleaned() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        assert_eq!(
            write_chunk(&mut a, 5, b"hello ").unwrap(),
            OpResult::Chunk { size: 6 }
        );
        assert_eq!(
            write_chunk(&mut a, 5, b"world").unwrap(),
            OpResult::Chunk { size: 11 }
        );
        let staging = dir.join(".cache/turbo-play/staging");
        assert_eq!(mode_of(&staging), 0o700);
        let staged = |upload_id, sha256| FileContent::Staged { upload_id, sha256 };
        let r = ensure(
            &mut a,
            &dir.str("f"),
            staged(5, sha256::digest(b"hello world")),
            None,
            Flags::default(),
        )
        .unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed && o.size == 11));
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"hello world");
        assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);

        let err = ensure(
            &mut a,
            &dir.str("f"),
            staged(5, sha256::digest(b"x")),
            None,
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);

        write_chunk(&mut a, 6, b"corrupted").unwrap();
        let err = ensure(
            &mut a,
            &dir.str("f"),
            staged(6, sha256::digest(b"expected")),
            None,
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
        assert!(err.message.contains("send it again"), "{}", err.message);
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"hello world");

        write_chunk(&mut a, 7, b"left over").unwrap();
        a.clean_staging();
        assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);
    }

    #[test]
    fn backup_copies_the_old_file_only_when_the_content_changes() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let spec = |bytes: &[u8]| EnsureFile {
            path: dir.str("f"),
            content: FileContent::Inline(bytes.to_vec()),
            mode: None,
            force: true,
            owner: Default::default(),
            validate: None,
            backup: true,
        };
        let outcome = |r| match r {
            Ok(OpResult::File(o)) => o,
            other => panic!("{other:?}"),
        };
        let o = outcome(ensure_file(&mut a, spec(b"one"), Flags::default()));
        assert_eq!(o.backup_file, None, "nothing to back up");
        chmod(&dir.join("f"), 0o600).unwrap();
        let o = outcome(ensure_file(&mut a, spec(b"one"), Flags::default()));
        assert_eq!((o.changed, o.backup_file), (false, None));
        let check = Flags {
            check: true,
            diff: false,
        };
        let o = outcome(ensure_file(&mut a, spec(b"two"), check));
        assert_eq!((o.changed, o.backup_file), (true, None));
        let o = outcome(ensure_file(&mut a, spec(b"two"), Flags::default()));
        let backup = PathBuf::from(o.backup_file.expect("a backup"));
        assert_eq!(fs::read(&backup).unwrap(), b"one");
        assert_eq!(mode_of(&backup), 0o600);
        assert_eq!(fs::read(dir.join("f")).unwrap(), b"two");
        assert!(leftovers(dir.path()).is_empty());
    }
}
