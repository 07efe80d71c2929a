//! `--expect-sha256 HEX`: the bootstrap names the sha256 of the agent it would have
//! uploaded, and a cached file that was corrupted or altered (same size) exits before its
//! hello, which the controller takes as "not an agent" and replaces.
//!
//! Hashing the whole binary costs 5-10 ms of CPU at every connection, which a fleet of
//! hosts on one machine (or one small host connected to often) pays again and again. So
//! once the file has hashed right, a stamp beside it (`verified/<name>` in its directory)
//! notes the file's device, inode, size, mtime and ctime with the digest; while all of them
//! are unchanged the file is the one that was hashed, and hashing is skipped. Any write to
//! the file, a rename over it or a chmod changes its ctime, which no user can set back.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::sha256;

pub fn check(args: impl Iterator<Item = String>) -> Result<(), String> {
    let mut args = args.skip_while(|a| a != "--expect-sha256");
    if args.next().is_none() {
        return Ok(());
    }
    let expected = args
        .next()
        .ok_or("--expect-sha256 needs the hex sha256 of the agent")?
        .to_ascii_lowercase();
    let exe = Path::new("/proc/self/exe");
    let stamp = stamp_path(exe);
    let identity = identity(exe, &expected);
    if let (Some(stamp), Some(identity)) = (&stamp, &identity)
        && std::fs::read_to_string(stamp).is_ok_and(|noted| noted == *identity)
    {
        return Ok(());
    }
    let digest = sha256::digest_file(exe)
        .map_err(|e| format!("cannot read {} to check its sha256: {e}", exe.display()))?;
    let actual: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if actual != expected {
        return Err(format!(
            "refusing to run: this file's sha256 is {actual}, expected {expected} (a corrupt or altered cached agent)"
        ));
    }
    if let (Some(stamp), Some(identity)) = (stamp, identity) {
        // A stamp that cannot be written (a read-only cache) only costs the next hash.
        let _ = write_stamp(&stamp, &identity);
    }
    Ok(())
}

/// `<dir>/verified/<name>` for the running file, or none when it has no path any more
/// (replaced after it started: /proc says "(deleted)").
fn stamp_path(exe: &Path) -> Option<PathBuf> {
    let real = std::fs::read_link(exe).ok()?;
    let name = real.file_name()?.to_str()?;
    if name.ends_with(" (deleted)") {
        return None;
    }
    Some(real.parent()?.join("verified").join(name))
}

/// What must be unchanged for the file to be the one hashed.
fn identity(exe: &Path, digest: &str) -> Option<String> {
    let m = std::fs::metadata(exe).ok()?;
    Some(format!(
        "{} {} {} {}.{:09} {}.{:09} {digest}\n",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

fn write_stamp(stamp: &Path, identity: &str) -> std::io::Result<()> {
    let dir = stamp.parent().expect("a stamp has a directory");
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(".stamp-{}", std::process::id()));
    std::fs::write(&temp, identity)?;
    std::fs::rename(&temp, stamp).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_digest_is_checked_only_when_asked_for() {
        assert!(check(args(&[]).into_iter()).is_ok());
        let own = sha256::digest_file(Path::new("/proc/self/exe")).unwrap();
        let own: String = own.iter().map(|b| format!("{b:02x}")).collect();
        assert!(check(args(&["--expect-sha256", &own]).into_iter()).is_ok());
        let wrong = "0".repeat(64);
        let err = check(args(&["--expect-sha256", &wrong]).into_iter()).unwrap_err();
        assert!(err.contains(&own) && err.contains(&wrong), "{err}");
        assert!(check(args(&["--expect-sha256"]).into_iter()).is_err());
    }

    #[test]
    fn a_stamp_names_the_file_as_hashed_and_any_change_unnames_it() {
        let dir = tempfile_dir();
        let file = dir.join("agent-x");
        std::fs::write(&file, b"one").unwrap();
        let before = identity(&file, "abc").unwrap();
        assert_eq!(identity(&file, "abc").unwrap(), before);
        assert_ne!(identity(&file, "abd").unwrap(), before, "another digest");
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&file, b"two").unwrap();
        assert_ne!(
            identity(&file, "abc").unwrap(),
            before,
            "rewritten, same size"
        );
        let stamp = dir.join("verified/agent-x");
        write_stamp(&stamp, &before).unwrap();
        assert_eq!(std::fs::read_to_string(&stamp).unwrap(), before);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("own-digest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
