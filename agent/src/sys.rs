//! The few libc calls std does not wrap. Declared by hand because the agent links nothing
//! but std and turbo-proto: the libc crate would be a dependency for five prototypes.
//! None of them keeps a pointer past the call.

use std::ffi::{CString, c_char, c_void};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// mode_t, uid_t and gid_t are unsigned 32-bit on every Linux target the agent is built for.
unsafe extern "C" {
    fn dup2(oldfd: i32, newfd: i32) -> i32;
    fn umask(mask: u32) -> u32;
    fn geteuid() -> u32;
    fn getegid() -> u32;
    fn utimensat(dirfd: i32, path: *const c_char, times: *const c_void, flags: i32) -> i32;
}

/// utimensat's "relative to the working directory" dirfd.
const AT_FDCWD: i32 = -100;

/// Makes `target` refer to what `source` refers to (dup2(2)).
pub fn redirect_fd(source: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 only manipulates the descriptor table; bad fds give EBADF.
    if unsafe { dup2(source, target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The process umask. umask(2) can only be read by setting it, so it is set back at once;
/// call this once at startup, before any thread exists.
pub fn current_umask() -> u32 {
    // SAFETY: umask cannot fail and touches no memory.
    unsafe {
        let old = umask(0);
        umask(old);
        old
    }
}

pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { geteuid() }
}

pub fn effective_gid() -> u32 {
    // SAFETY: getegid cannot fail and touches no memory.
    unsafe { getegid() }
}

/// Sets a path's access and modification times to now, as touch(1) does. Unlike setting
/// explicit times (File::set_times), "now" only needs write access, not ownership, and
/// needs no open file, so write-only files and directories work too.
pub fn touch_times(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: c_path is a valid NUL-terminated string that outlives the call; a null
    // `times` means "both to the current time".
    if unsafe { utimensat(AT_FDCWD, c_path.as_ptr(), std::ptr::null(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn ids_match_what_the_kernel_reports_for_our_own_files() {
        let meta = std::fs::metadata("/proc/self").unwrap();
        assert_eq!(meta.uid(), effective_uid());
        assert_eq!(meta.gid(), effective_gid());
    }

    #[test]
    fn umask_is_read_without_being_changed() {
        let first = current_umask();
        assert_eq!(current_umask(), first);
        assert_eq!(first & !0o777, 0);
    }

    #[test]
    fn touch_sets_mtime_to_now() {
        let path = std::env::temp_dir().join(format!("turbo-agent-touch-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        touch_times(&path).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(mtime.elapsed().unwrap().as_secs() < 60);
        assert!(touch_times(Path::new("/nonexistent/x")).is_err());
    }
}
