//! Check mode for a module that does its own (`Caps::own_check_mode`, so that the reads it
//! needs still run): its writes (`EnsureFile`, `EnsurePath`) become looks at their paths,
//! and whether each would change anything is decided from what is there.

use turbo_proto::{
    Digest, EnsureFile, EnsurePath, FileContent, FileKind, FileMode, Op, OpResult, PathState,
};

/// The look that stands in for `op` in check mode (the op itself when it writes nothing).
pub(super) fn look(op: &Op) -> Op {
    match op {
        Op::EnsureFile(EnsureFile { path, .. }) => Op::Stat {
            path: path.clone(),
            checksum: Some(Digest::Sha1),
            follow: true,
        },
        Op::EnsurePath(EnsurePath { path, .. }) => Op::Stat {
            path: path.clone(),
            checksum: None,
            follow: false,
        },
        other => other.clone(),
    }
}

/// Whether `op` would change its path, given the reply to [`look`]; `Err` with the
/// agent's message when the look failed. A symbolic mode is not compared.
pub(super) fn would_change(op: &Op, looked: &OpResult) -> Result<bool, String> {
    let stat = match looked {
        OpResult::Stat(s) => s,
        OpResult::Error(e) => return Err(e.message.clone()),
        _ => return Ok(false),
    };
    let mode_differs = |mode: &Option<FileMode>| matches!(mode, Some(FileMode::Bits(bits)) if stat.mode & 0o7777 != *bits);
    Ok(match op {
        Op::EnsureFile(file) => {
            let content_differs = match &file.content {
                FileContent::Inline(bytes) => {
                    stat.checksum.as_deref().map(hex) != Some(super::copy::sha1_hex(bytes))
                }
                _ => true,
            };
            !stat.exists
                || stat.kind != FileKind::File
                || content_differs
                || mode_differs(&file.mode)
        }
        Op::EnsurePath(path) => match path.state {
            PathState::Absent => stat.exists,
            PathState::Directory => {
                !stat.exists || stat.kind != FileKind::Directory || mode_differs(&path.mode)
            }
            _ => true,
        },
        _ => false,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::StatInfo;

    fn file(content: &[u8], mode: u32) -> Op {
        Op::EnsureFile(EnsureFile {
            path: "/etc/x".into(),
            content: FileContent::Inline(content.to_vec()),
            mode: Some(FileMode::Bits(mode)),
            force: true,
            owner: Default::default(),
            validate: None,
            backup: false,
        })
    }

    fn stat(kind: FileKind, mode: u32, sha1_of: Option<&[u8]>) -> OpResult {
        use sha1::Digest as _;
        OpResult::Stat(StatInfo {
            exists: kind != FileKind::Missing,
            kind,
            mode,
            checksum: sha1_of.map(|b| sha1::Sha1::digest(b).to_vec()),
            ..StatInfo::default()
        })
    }

    #[test]
    fn a_file_changes_unless_its_bytes_and_mode_are_there() {
        let op = file(b"a\n", 0o644);
        assert!(matches!(
            look(&op),
            Op::Stat {
                checksum: Some(Digest::Sha1),
                ..
            }
        ));
        assert_eq!(
            would_change(&op, &stat(FileKind::File, 0o644, Some(b"a\n"))),
            Ok(false)
        );
        assert_eq!(
            would_change(&op, &stat(FileKind::File, 0o600, Some(b"a\n"))),
            Ok(true)
        );
        assert_eq!(
            would_change(&op, &stat(FileKind::File, 0o644, Some(b"b\n"))),
            Ok(true)
        );
        assert_eq!(
            would_change(&op, &stat(FileKind::Missing, 0, None)),
            Ok(true)
        );
        let gone = Op::EnsurePath(EnsurePath {
            path: "/etc/x".into(),
            state: PathState::Absent,
            mode: None,
            recurse_parents: false,
            owner: Default::default(),
        });
        assert_eq!(
            would_change(&gone, &stat(FileKind::File, 0o644, None)),
            Ok(true)
        );
        assert_eq!(
            would_change(&gone, &stat(FileKind::Missing, 0, None)),
            Ok(false)
        );
    }
}
