//! `Op::SetTimes`: a file's, directory's or symlink's modification time set to a given one, as
//! rsync's `--times` leaves what it copied (`synchronize` compares by size and time, so a
//! copy that kept the time of writing would be sent again on every run).

use std::os::unix::fs::MetadataExt;

use turbo_proto::{OpError, OpResult};

use super::{Agent, Flags, io_error};

pub fn set_times(
    agent: &mut Agent,
    path: &str,
    mtime: i64,
    mtime_nsec: u32,
    flags: Flags,
) -> Result<OpResult, OpError> {
    let path = agent.expand(path);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| io_error(e, &path))?;
    let changed = (meta.mtime(), meta.mtime_nsec()) != (mtime, i64::from(mtime_nsec));
    if changed && !flags.check {
        crate::sys::set_mtime(&path, mtime, mtime_nsec).map_err(|e| io_error(e, &path))?;
    }
    let meta = std::fs::symlink_metadata(&path).map_err(|e| io_error(e, &path))?;
    Ok(OpResult::File(agent.outcome(&path, &meta, changed)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn sets_a_file_a_directory_and_a_link_itself_and_says_when_nothing_changed() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), b"x").unwrap();
        std::fs::create_dir(dir.join("d")).unwrap();
        std::os::unix::fs::symlink("f", dir.join("l")).unwrap();
        for name in ["f", "d", "l"] {
            let path = dir.join(name).display().to_string();
            let Ok(OpResult::File(out)) =
                set_times(&mut a, &path, 1_600_000_000, 5, Flags::default())
            else {
                panic!("no file outcome for {name}");
            };
            assert!(out.changed, "{name}");
            let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
            assert_eq!(
                (meta.mtime(), meta.mtime_nsec()),
                (1_600_000_000, 5),
                "{name}"
            );
            let Ok(OpResult::File(again)) =
                set_times(&mut a, &path, 1_600_000_000, 5, Flags::default())
            else {
                panic!("no file outcome for {name}");
            };
            assert!(!again.changed, "{name}");
        }
    }

    #[test]
    fn check_mode_changes_nothing_and_a_missing_path_is_an_error() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), b"x").unwrap();
        let before = std::fs::metadata(dir.join("f")).unwrap().mtime();
        let path = dir.join("f").display().to_string();
        let Ok(OpResult::File(out)) = set_times(
            &mut a,
            &path,
            1_000,
            0,
            Flags {
                check: true,
                diff: false,
            },
        ) else {
            panic!("no file outcome");
        };
        assert!(out.changed);
        assert_eq!(std::fs::metadata(dir.join("f")).unwrap().mtime(), before);
        let missing = dir.join("nope").display().to_string();
        assert!(set_times(&mut a, &missing, 1_000, 0, Flags::default()).is_err());
    }
}
