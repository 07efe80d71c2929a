//! Ansible's `backup: yes` (`AnsibleModule.backup_local`): before a file is replaced, a copy
//! named `<path>.<pid>.<YYYY-MM-DD@HH:MM:SS~>` in local time, with the old file's mode,
//! times and (when we may give it away) owner.

use std::ffi::OsString;
use std::fs::{self, File, FileTimes, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use turbo_proto::OpError;

use super::{Agent, io_error};
use crate::sys::BrokenDownTime;

/// The backup name of `path` at `epoch` seconds, as Ansible forms it.
pub fn backup_name(path: &Path, pid: u32, epoch: i64) -> PathBuf {
    let stamp = BrokenDownTime::local(epoch)
        .map(|t| t.format("%Y-%m-%d@%H:%M:%S~"))
        .unwrap_or_default();
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".{pid}.{stamp}"));
    PathBuf::from(name)
}

/// Copies `path` (whose metadata is `meta`) to its backup name and returns that name.
pub fn back_up(agent: &Agent, path: &Path, meta: &Metadata) -> Result<PathBuf, OpError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let dest = backup_name(path, agent.pid, now);
    preserved_copy(path, &dest, meta).map_err(|e| {
        let mut err = io_error(e, path);
        err.message = format!(
            "Could not make backup of {} to {}: {}",
            path.display(),
            dest.display(),
            err.message
        );
        err
    })?;
    Ok(dest)
}

/// shutil.copy2 and then chown, as Ansible's `preserved_copy`: content, mode and times,
/// and the owner unless we may not give the file away (EPERM is not an error there).
fn preserved_copy(src: &Path, dest: &Path, meta: &Metadata) -> io::Result<()> {
    let mut from = File::open(src)?;
    // A backup of the same file in the same second (a batch) is replaced, as Ansible's
    // copy2 replaces it; removing it first means its mode cannot stop the write.
    match fs::remove_file(dest) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)?;
    io::copy(&mut from, &mut to)?;
    to.set_times(
        FileTimes::new()
            .set_accessed(meta.accessed()?)
            .set_modified(meta.modified()?),
    )?;
    match std::os::unix::fs::fchown(&to, Some(meta.uid()), Some(meta.gid())) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
        other => other?,
    }
    // After chown, which clears set-id bits.
    to.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o7777))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn name_is_ansibles_and_the_copy_keeps_content_mode_and_times() {
        assert_eq!(
            backup_name(Path::new("/etc/motd"), 42, 0)
                .to_string_lossy()
                .len(),
            "/etc/motd.42.1970-01-01@00:00:00~".len()
        );
        let dir = TempDir::new();
        let a = agent(dir.path());
        let p = dir.join("f");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        let old = UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let meta = fs::metadata(&p).unwrap();
        let dest = back_up(&a, &p, &meta).unwrap();
        let name = dest.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!("f.{}.", a.pid)), "{name}");
        assert!(name.ends_with('~'), "{name}");
        assert_eq!(fs::read(&dest).unwrap(), b"old");
        let copied = fs::metadata(&dest).unwrap();
        assert_eq!(copied.mode() & 0o7777, 0o640);
        assert_eq!(copied.modified().unwrap(), old);
        assert_eq!((copied.uid(), copied.gid()), (meta.uid(), meta.gid()));
        // Again in the same second: the backup is replaced, not an error.
        assert_eq!(back_up(&a, &p, &meta).unwrap().parent(), dest.parent());
    }
}
