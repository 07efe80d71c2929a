//! `Op::Stat`: describe a path, through a final symlink only when asked. [`describe`] is
//! the one description of a path, shared with `ReadFile` and `ListTree`.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use turbo_proto::{Digest, FileKind, OpError, OpResult, StatInfo};

use super::realpath::realpath;
use super::{Agent, io_error, kind_of, lstat, stat_follow};
use crate::{sha1, sha256, sys};

/// st_mode's file type bits.
const S_IFMT: u32 = 0o170000;

pub fn stat(
    agent: &mut Agent,
    path: &str,
    checksum: Option<Digest>,
    follow: bool,
) -> Result<OpResult, OpError> {
    let path = agent.expand(path);
    let meta = if follow {
        stat_follow(&path)?
    } else {
        lstat(&path)?
    };
    let Some(meta) = meta else {
        return Ok(OpResult::Stat(StatInfo::missing(
            path.to_string_lossy().into_owned(),
        )));
    };
    let mut info = describe(agent, &path, &meta)?;
    if let Some(algorithm) = checksum.filter(|_| info.kind == FileKind::File) {
        info.checksum = Some(digest(&path, algorithm)?);
    }
    Ok(OpResult::Stat(info))
}

/// `path` as `meta` (its lstat, or stat when following) shows it, without a checksum.
pub fn describe(agent: &mut Agent, path: &Path, meta: &Metadata) -> Result<StatInfo, OpError> {
    let kind = kind_of(meta);
    let (link_target, lnk_source) = if kind == FileKind::Symlink {
        let target = std::fs::read_link(path).map_err(|e| io_error(e, path))?;
        (
            Some(target.to_string_lossy().into_owned()),
            Some(realpath(path).to_string_lossy().into_owned()),
        )
    } else {
        (None, None)
    };
    let (readable, writeable, executable) = sys::access_rwx(path);
    Ok(StatInfo {
        path: path.to_string_lossy().into_owned(),
        exists: true,
        kind,
        mode: meta.mode() & 0o7777,
        file_type: meta.mode() & S_IFMT,
        size: meta.size(),
        uid: meta.uid(),
        gid: meta.gid(),
        owner: agent.names.user(meta.uid()),
        group: agent.names.group(meta.gid()),
        mtime: meta.mtime(),
        mtime_nsec: meta.mtime_nsec() as u32,
        atime: meta.atime(),
        atime_nsec: meta.atime_nsec() as u32,
        ctime: meta.ctime(),
        ctime_nsec: meta.ctime_nsec() as u32,
        inode: meta.ino(),
        dev: meta.dev(),
        nlink: meta.nlink(),
        rdev: meta.rdev(),
        blocks: meta.blocks(),
        block_size: meta.blksize(),
        readable,
        writeable,
        executable,
        checksum: None,
        link_target,
        lnk_source,
    })
}

/// The digest of a file's content.
pub fn digest(path: &Path, algorithm: Digest) -> Result<Vec<u8>, OpError> {
    match algorithm {
        Digest::Sha256 => sha256::digest_file(path).map(|d| d.to_vec()),
        Digest::Sha1 => sha1::digest_file(path).map(|d| d.to_vec()),
    }
    .map_err(|e| io_error(e, path))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn info(agent: &mut Agent, path: &str, checksum: Option<Digest>) -> StatInfo {
        match stat(agent, path, checksum, false).unwrap() {
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

    fn followed(agent: &mut Agent, path: &str) -> StatInfo {
        match stat(agent, path, Some(Digest::Sha1), true).unwrap() {
            OpResult::Stat(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn follow_describes_the_target_and_a_dangling_link_is_missing() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), b"abc").unwrap();
        std::os::unix::fs::symlink("f", dir.join("l")).unwrap();
        std::os::unix::fs::symlink("gone", dir.join("dangling")).unwrap();
        let s = followed(&mut a, &dir.str("l"));
        assert_eq!((s.kind, s.size, s.link_target), (FileKind::File, 3, None));
        assert_eq!(s.path, dir.str("l"));
        assert!(
            s.checksum.is_some(),
            "a followed link to a file has a checksum"
        );
        assert_eq!(s.inode, info(&mut a, &dir.str("f"), None).inode);
        assert!(!followed(&mut a, &dir.str("dangling")).exists);
        let link = info(&mut a, &dir.str("dangling"), None);
        assert_eq!(link.kind, FileKind::Symlink);
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            link.lnk_source.as_deref(),
            Some(real.join("gone").to_str().unwrap())
        );
        assert!(!link.readable, "access(2) follows the dangling link");
    }

    #[test]
    fn the_fields_only_the_target_knows() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), vec![7u8; 5000]).unwrap();
        std::fs::hard_link(dir.join("f"), dir.join("g")).unwrap();
        std::fs::set_permissions(dir.join("f"), std::fs::Permissions::from_mode(0o750)).unwrap();
        let s = info(&mut a, &dir.str("f"), None);
        let meta = std::fs::symlink_metadata(dir.join("f")).unwrap();
        assert_eq!((s.inode, s.dev, s.nlink), (meta.ino(), meta.dev(), 2));
        assert_eq!(s.file_type, 0o100000);
        assert_eq!((s.blocks, s.block_size), (meta.blocks(), meta.blksize()));
        assert_eq!(
            (s.atime, s.atime_nsec, s.ctime, s.ctime_nsec),
            (
                meta.atime(),
                meta.atime_nsec() as u32,
                meta.ctime(),
                meta.ctime_nsec() as u32
            )
        );
        assert_eq!(s.mtime_nsec, meta.mtime_nsec() as u32);
        assert!(s.readable && s.writeable && s.executable);
        let null = info(&mut a, "/dev/null", None);
        assert_eq!((null.kind, null.file_type), (FileKind::Other, 0o020000));
        assert_eq!(null.rdev, std::fs::metadata("/dev/null").unwrap().rdev());
        assert_eq!(StatInfo::float_seconds(1, 500_000_000), 1.5);
    }
}
