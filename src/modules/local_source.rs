//! Controller-side source files: where a relative `src` is looked for, how its bytes
//! are read (decrypted when vaulted) and digested for an upload.

use std::path::{Path, PathBuf};

use super::{ModuleError, PlanContext};

/// A controller-side source file as Ansible finds it: absolute (or `~`) as written,
/// else in a role `<role>/<subdir>/<src>`, `<role>/<src>`, then the same beside the task's
/// own file, then `<playbook_dir>/<subdir>/<src>`, then `<playbook_dir>/<src>`.
/// The controller directories a relative source is looked for in, in Ansible's order: the
/// role's, the task file's and the playbook's, each's `subdir` first.
pub(crate) fn local_search_dirs(ctx: &PlanContext, subdir: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in [ctx.role_dir, ctx.task_dir, Some(ctx.playbook_dir)]
        .into_iter()
        .flatten()
    {
        for candidate in [dir.join(subdir), dir.to_path_buf()] {
            if !dirs.contains(&candidate) {
                dirs.push(candidate);
            }
        }
    }
    dirs
}

pub(crate) fn find_local_source(
    src: &str,
    ctx: &PlanContext,
    subdir: &str,
) -> Result<PathBuf, ModuleError> {
    let written = crate::tilde::expand_user_path(src);
    if written.is_absolute() {
        return if written.exists() {
            Ok(written)
        } else {
            Err(ModuleError::SrcNotFound {
                path: src.to_string(),
                looked_in: written
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            })
        };
    }
    let dirs = local_search_dirs(ctx, subdir);
    for dir in &dirs {
        let candidate = dir.join(&written);
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(ModuleError::SrcNotFound {
        path: src.to_string(),
        looked_in: looked.join(", "),
    })
}

/// Where the bytes of a file to upload are: in memory (rendered, decrypted, small), or
/// in a controller file read as it is sent, so a file of any size costs a chunk of memory.
#[derive(Debug, Clone, PartialEq)]
pub enum FileSource {
    Bytes(Vec<u8>),
    Local(PathBuf),
}

impl FileSource {
    /// All the bytes (for tests and small sources).
    pub fn into_bytes(self) -> Result<Vec<u8>, ModuleError> {
        match self {
            FileSource::Bytes(b) => Ok(b),
            FileSource::Local(path) => read_local(&path),
        }
    }
}

/// The SHA-256 and size of a controller file, read in pieces; remembered per path, size,
/// inode and mtime, because a task is planned more than once (chains look ahead).
pub(crate) fn local_digest(path: &Path) -> Result<([u8; 32], u64), ModuleError> {
    local_digests(path, false).map(|(sha256, size, _)| (sha256, size))
}

/// [`local_digest`] and the file's SHA-1 (hex), Ansible's `checksum` of it, from the
/// same read.
pub(crate) fn local_digest_and_sha1(path: &Path) -> Result<([u8; 32], u64, String), ModuleError> {
    local_digests(path, true).map(|(sha256, size, sha1)| (sha256, size, sha1.unwrap_or_default()))
}

fn local_digests(
    path: &Path,
    with_sha1: bool,
) -> Result<([u8; 32], u64, Option<String>), ModuleError> {
    use sha2::Digest as _;
    use std::collections::HashMap;
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;
    type Key = (PathBuf, u64, u64, i64, i64);
    type Sums = ([u8; 32], Option<String>);
    static SEEN: Mutex<Option<HashMap<Key, Sums>>> = Mutex::new(None);
    let read_error = |e: std::io::Error| ModuleError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(read_error)?;
    let key = (
        path.to_path_buf(),
        meta.len(),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
    );
    if let Some((sum, sha1)) = SEEN
        .lock()
        .expect("digest cache")
        .as_ref()
        .and_then(|m| m.get(&key))
        .filter(|(_, sha1)| sha1.is_some() || !with_sha1)
    {
        return Ok((*sum, meta.len(), sha1.clone()));
    }
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    let mut hasher = sha2::Sha256::new();
    let mut sha1 = with_sha1.then(sha1::Sha1::new);
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(read_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        if let Some(sha1) = &mut sha1 {
            sha1.update(&buf[..n]);
        }
        size += n as u64;
    }
    let sum: [u8; 32] = hasher.finalize().into();
    let sha1 = sha1.map(|h| {
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    });
    SEEN.lock()
        .expect("digest cache")
        .get_or_insert_with(HashMap::new)
        .insert(key, (sum, sha1.clone()));
    Ok((sum, size, sha1))
}

pub(crate) fn read_local(path: &Path) -> Result<Vec<u8>, ModuleError> {
    std::fs::read(path).map_err(|e| ModuleError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// A controller file as the copy and template actions read it: decrypted when it is
/// vault-encrypted (Ansible's `get_real_file(decrypt=True)`).
pub(crate) fn read_local_decrypted(path: &Path) -> Result<Vec<u8>, ModuleError> {
    crate::vault::read_file(path).map_err(|e| match e {
        crate::vault::ReadError::Vault(vault) => {
            ModuleError::Invalid(vault.describe(&path.display().to_string()))
        }
        crate::vault::ReadError::Io(message) => ModuleError::Read {
            path: path.display().to_string(),
            message,
        },
    })
}
