//! `Op::Stat`: describe a path without following a final symlink.

use std::os::unix::fs::MetadataExt;

use turbo_proto::{Digest, FileKind, OpError, OpResult, StatInfo};

use super::{Agent, io_error, kind_of, lstat};
use crate::{sha1, sha256};

pub fn stat(agent: &mut Agent, path: &str, checksum: Option<Digest>) -> Result<OpResult, OpError> {
    let path = agent.expand(path);
    let shown = path.to_string_lossy().into_owned();
    let Some(meta) = lstat(&path)? else {
        return Ok(OpResult::Stat(StatInfo {
            path: shown,
            exists: false,
            kind: FileKind::Missing,
            mode: 0,
            size: 0,
            uid: 0,
            gid: 0,
            owner: String::new(),
            group: String::new(),
            mtime: 0,
            checksum: None,
            link_target: None,
        }));
    };
    let kind = kind_of(&meta);
    let checksum = match checksum.filter(|_| kind == FileKind::File) {
        Some(Digest::Sha256) => sha256::digest_file(&path).map(|d| d.to_vec()),
        Some(Digest::Sha1) => sha1::digest_file(&path).map(|d| d.to_vec()),
        None => Ok(Vec::new()),
    }
    .map_err(|e| io_error(e, &path))?;
    let link_target = if kind == FileKind::Symlink {
        let target = std::fs::read_link(&path).map_err(|e| io_error(e, &path))?;
        Some(target.to_string_lossy().into_owned())
    } else {
        None
    };
    Ok(OpResult::Stat(StatInfo {
        path: shown,
        exists: true,
        kind,
        mode: meta.mode() & 0o7777,
        size: meta.size(),
        uid: meta.uid(),
        gid: meta.gid(),
        owner: agent.names.user(meta.uid()),
        group: agent.names.group(meta.gid()),
        mtime: meta.mtime(),
        checksum: (!checksum.is_empty()).then_some(checksum),
        link_target,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn info(agent: &mut Agent, path: &str, checksum: Option<Digest>) -> StatInfo {
        match stat(agent, path, checksum).unwrap() {
            OpResult::Stat(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn regular_file_with_and_without_checksum() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), b"abc").unwrap();
        std::fs::set_permissions(dir.join("f"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let s = info(&mut a, "~/f", Some(Digest::Sha256));
        assert!(s.exists);
        assert_eq!(s.kind, FileKind::File);
        assert_eq!(s.mode, 0o640);
        assert_eq!(s.size, 3);
        assert_eq!(s.path, dir.str("f"));
        assert_eq!(s.checksum, Some(sha256::digest(b"abc").to_vec()));
        assert!(s.mtime > 0);
        assert_eq!(info(&mut a, &dir.str("f"), None).checksum, None);
        let sha1 = info(&mut a, &dir.str("f"), Some(Digest::Sha1))
            .checksum
            .unwrap();
        assert_eq!(
            crate::md::hex(&sha1),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }

    #[test]
    fn missing_path_is_not_an_error() {
        let dir = TempDir::new();
        let s = info(&mut agent(dir.path()), &dir.str("nope"), Some(Digest::Sha1));
        assert!(!s.exists);
        assert_eq!(s.kind, FileKind::Missing);
    }

    #[test]
    fn symlinks_are_described_not_followed() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::os::unix::fs::symlink("somewhere/else", dir.join("l")).unwrap();
        let s = info(&mut a, &dir.str("l"), Some(Digest::Sha1));
        assert_eq!(s.kind, FileKind::Symlink);
        assert_eq!(s.link_target.as_deref(), Some("somewhere/else"));
        assert_eq!(s.checksum, None);
        assert_eq!(info(&mut a, "~", None).kind, FileKind::Directory);
    }
}
