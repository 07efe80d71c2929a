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
#[path = "file_tests.rs"]
mod tests;
