//! `Op::Rename`: rename(2), the atomic move modules build on (a staged file into place,
//! a backup aside).

use std::io;
use std::path::Path;

use turbo_proto::{OpError, OpResult};

use super::{Agent, Flags, io_error};

/// EXDEV: rename(2) cannot cross filesystems.
const CROSS_DEVICE: i32 = 18;

pub fn rename(agent: &mut Agent, from: &str, to: &str, flags: Flags) -> Result<OpResult, OpError> {
    let (from, to) = (agent.expand(from), agent.expand(to));
    let meta = std::fs::symlink_metadata(&from).map_err(|e| failed(e, &from, &to))?;
    if !flags.check {
        std::fs::rename(&from, &to).map_err(|e| failed(e, &from, &to))?;
    }
    // In check mode `to` is predicted to be what `from` is now.
    let meta = if flags.check {
        meta
    } else {
        std::fs::symlink_metadata(&to).map_err(|e| io_error(e, &to))?
    };
    Ok(OpResult::File(agent.outcome(&to, &meta, true)))
}

/// "cannot rename A to B: <why>", of the kind the error is.
fn failed(e: io::Error, from: &Path, to: &Path) -> OpError {
    let why = match e.kind() {
        io::ErrorKind::NotFound if std::fs::symlink_metadata(from).is_err() => {
            format!("{} does not exist", from.display())
        }
        _ if e.raw_os_error() == Some(CROSS_DEVICE) => {
            format!("{e}; both paths must be on one filesystem (copy, then remove the original)")
        }
        _ => e.to_string(),
    };
    let mut err = io_error(e, to);
    err.message = format!(
        "cannot rename {} to {}: {why}",
        from.display(),
        to.display()
    );
    err
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use turbo_proto::{ErrorKind, FileKind};

    #[test]
    fn moves_replaces_and_names_both_paths_when_it_cannot() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("a"), b"new").unwrap();
        std::fs::write(dir.join("b"), b"old").unwrap();
        let check = Flags {
            check: true,
            diff: false,
        };
        let r = rename(&mut a, "~/a", "~/b", check).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.changed && o.path == dir.str("b")));
        assert!(dir.join("a").exists(), "check mode moves nothing");
        let r = rename(&mut a, "~/a", "~/b", Flags::default()).unwrap();
        assert!(matches!(r, OpResult::File(ref o) if o.kind == FileKind::File && o.size == 3));
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"new");
        assert!(!dir.join("a").exists());

        let err = rename(&mut a, "~/a", "~/c", Flags::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert_eq!(
            err.message,
            format!(
                "cannot rename {} to {}: {} does not exist",
                dir.str("a"),
                dir.str("c"),
                dir.str("a")
            )
        );
        let err = rename(&mut a, "~/b", "~/no/c", Flags::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(
            err.message.starts_with(&format!(
                "cannot rename {} to {}: No such file or directory",
                dir.str("b"),
                dir.str("no/c")
            )),
            "{}",
            err.message
        );
        std::fs::create_dir_all(dir.join("d/full")).unwrap();
        std::fs::write(dir.join("d/full/x"), b"").unwrap();
        let err = rename(&mut a, "~/b", "~/d/full", Flags::default()).unwrap_err();
        assert!(err.message.contains("Is a directory"), "{}", err.message);
    }
}
