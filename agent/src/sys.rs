//! The few libc calls std does not wrap. Declared by hand because the agent links nothing
//! but std and turbo-proto: the libc crate would be a dependency for a few prototypes.
//! None of them keeps a pointer past the call.

use std::ffi::{CString, c_char, c_void};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

// mode_t, uid_t and gid_t are unsigned 32-bit on every Linux target the agent is built for.
unsafe extern "C" {
    fn dup2(oldfd: i32, newfd: i32) -> i32;
    fn fcntl(fd: i32, cmd: i32, arg: i32) -> i32;
    fn close(fd: i32) -> i32;
    fn umask(mask: u32) -> u32;
    fn geteuid() -> u32;
    fn getegid() -> u32;
    fn utimensat(dirfd: i32, path: *const c_char, times: *const c_void, flags: i32) -> i32;
    fn getuid() -> u32;
    fn getgid() -> u32;
    fn uname(buf: *mut Utsname) -> i32;
    fn tzset();
    fn localtime_r(time: *const i64, tm: *mut Tm) -> *mut Tm;
    fn gmtime_r(time: *const i64, tm: *mut Tm) -> *mut Tm;
    fn strftime(s: *mut c_char, max: usize, format: *const c_char, tm: *const Tm) -> usize;
    fn getifaddrs(ifap: *mut *mut IfAddrs) -> i32;
    fn freeifaddrs(ifa: *mut IfAddrs);
    fn statvfs(path: *const c_char, buf: *mut StatVfs) -> i32;
    fn access(path: *const c_char, mode: i32) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
    fn signal(sig: i32, handler: extern "C" fn(i32)) -> usize;
    fn siginterrupt(sig: i32, flag: i32) -> i32;
    static tzname: [*const c_char; 2];
}

/// glibc's `struct utsname`: six fields of _UTSNAME_LENGTH (65) bytes.
#[repr(C)]
pub struct Utsname {
    fields: [[u8; 65]; 6],
}

/// glibc's `struct tm` on 64-bit Linux.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Tm {
    tm_sec: i32,
    tm_min: i32,
    tm_hour: i32,
    tm_mday: i32,
    tm_mon: i32,
    tm_year: i32,
    tm_wday: i32,
    tm_yday: i32,
    tm_isdst: i32,
    tm_gmtoff: i64,
    tm_zone: *const c_char,
}

#[repr(C)]
pub struct IfAddrs {
    ifa_next: *mut IfAddrs,
    ifa_name: *const c_char,
    ifa_flags: u32,
    ifa_addr: *const SockAddr,
    ifa_netmask: *const SockAddr,
    ifa_broadaddr: *const SockAddr,
    ifa_data: *mut c_void,
}

/// The common head of every sockaddr.
#[repr(C)]
struct SockAddr {
    family: u16,
}

/// glibc's `struct statvfs` on 64-bit Linux.
#[repr(C)]
#[derive(Default)]
pub struct StatVfs {
    pub f_bsize: u64,
    pub f_frsize: u64,
    pub f_blocks: u64,
    pub f_bfree: u64,
    pub f_bavail: u64,
    pub f_files: u64,
    pub f_ffree: u64,
    pub f_favail: u64,
    f_fsid: u64,
    f_flag: u64,
    f_namemax: u64,
    spare: [i32; 6],
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

/// For a child between fork and exec: makes `sources[i]` its fd `3 + i`, open across
/// exec, whatever numbers the sources have (one of them may already be 3 or 4). Uses
/// only async-signal-safe calls.
pub fn place_child_fds<const N: usize>(sources: [RawFd; N]) -> io::Result<()> {
    const F_DUPFD: i32 = 0;
    let mut high = [-1; N];
    for (copy, &source) in high.iter_mut().zip(&sources) {
        // SAFETY: fcntl(F_DUPFD) only manipulates the descriptor table.
        *copy = unsafe { fcntl(source, F_DUPFD, 10) };
        if *copy < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    for (target, &copy) in (3..).zip(high.iter()) {
        redirect_fd(copy, target)?;
        // SAFETY: `copy` is this function's own duplicate, closed once.
        unsafe { close(copy) };
    }
    Ok(())
}

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;

/// Sends `sig` to the process group `pgid` (a command or module the agent started as the
/// leader of its own group, and whatever that started). False when no process is left
/// in the group; a group that is gone is not an error here.
pub fn signal_group(pgid: u32, sig: i32) -> bool {
    // SAFETY: kill(2) takes plain integers.
    unsafe { kill(-(pgid as i32), sig) == 0 }
}

/// Sends `sig` to one process.
pub fn signal_process(pid: u32, sig: i32) {
    // SAFETY: kill(2) takes plain integers; a process that is gone gives ESRCH.
    unsafe {
        kill(pid as i32, sig);
    }
}

/// Set by the agent's handler of SIGTERM, SIGHUP and SIGINT: the agent stops what runs
/// and exits, as when its input ends, rather than dying and leaving its children.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_stop(_sig: i32) {
    // An atomic store is async-signal-safe.
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Installs the stop handlers. They interrupt blocking calls (no SA_RESTART), so a read
/// or poll in progress returns EINTR and the flag is seen. Handlers, unlike an ignored
/// signal, are reset to the default in the programs the agent starts.
pub fn install_stop_handlers() {
    for sig in [SIGTERM, SIGHUP, SIGINT] {
        // SAFETY: the handler only stores to an atomic; signal and siginterrupt take
        // plain integers and a function pointer that lives for the whole program.
        unsafe {
            signal(sig, note_stop);
            siginterrupt(sig, 1);
        }
    }
}

/// Whether a stop signal has arrived.
pub fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::SeqCst)
}

/// poll(2)'s `struct pollfd`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

pub const POLLIN: i16 = 0x1;
pub const POLLERR: i16 = 0x8;
pub const POLLHUP: i16 = 0x10;
pub const POLLNVAL: i16 = 0x20;

impl PollFd {
    pub fn readable(fd: RawFd) -> PollFd {
        PollFd {
            fd,
            events: POLLIN,
            revents: 0,
        }
    }

    /// Data, the end of the stream or an error waits: a read will not block.
    pub fn ready(&self) -> bool {
        self.revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0
    }
}

/// Waits until one of `fds` is ready or `timeout_ms` passes (-1: no limit). A signal
/// ends the wait early with nothing ready, as a timeout does.
pub fn wait_readable(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
    for fd in fds.iter_mut() {
        fd.revents = 0;
    }
    // SAFETY: fds is a valid, writable array of pollfd of the length given.
    let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as u64, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
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

/// Sets the process umask and returns the one it replaces. Children inherit it; the agent
/// is single-threaded when it spawns, so setting it around a spawn affects nothing else.
pub fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask cannot fail and touches no memory.
    unsafe { umask(mask & 0o777) }
}

/// What access(2) grants the real user on `path` (through a final symlink), as
/// (read, write, execute): Python's `os.access`, which Ansible's `stat` reports.
pub fn access_rwx(path: &Path) -> (bool, bool, bool) {
    const R_OK: i32 = 4;
    const W_OK: i32 = 2;
    const X_OK: i32 = 1;
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return (false, false, false);
    };
    // SAFETY: c_path is NUL-terminated and outlives each call.
    let may = |mode| unsafe { access(c_path.as_ptr(), mode) } == 0;
    (may(R_OK), may(W_OK), may(X_OK))
}

pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { geteuid() }
}

pub fn effective_gid() -> u32 {
    // SAFETY: getegid cannot fail and touches no memory.
    unsafe { getegid() }
}

pub fn real_uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { getuid() }
}

pub fn real_gid() -> u32 {
    // SAFETY: getgid cannot fail and touches no memory.
    unsafe { getgid() }
}

fn c_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// uname(2) as (sysname, nodename, release, version, machine).
pub fn uname_fields() -> Option<[String; 5]> {
    let mut buf = Utsname {
        fields: [[0; 65]; 6],
    };
    // SAFETY: buf is a properly sized, writable utsname.
    if unsafe { uname(&mut buf) } < 0 {
        return None;
    }
    let f = &buf.fields;
    Some([
        c_text(&f[0]),
        c_text(&f[1]),
        c_text(&f[2]),
        c_text(&f[3]),
        c_text(&f[4]),
    ])
}

/// A moment formatted by strftime(3), in local time or UTC.
pub struct BrokenDownTime {
    tm: Tm,
}

impl BrokenDownTime {
    pub fn local(epoch: i64) -> Option<Self> {
        // SAFETY: tzset reads TZ and /etc/localtime into libc's own globals; the agent is
        // single-threaded.
        unsafe { tzset() };
        Self::convert(epoch, localtime_r)
    }

    pub fn utc(epoch: i64) -> Option<Self> {
        Self::convert(epoch, gmtime_r)
    }

    fn convert(
        epoch: i64,
        f: unsafe extern "C" fn(*const i64, *mut Tm) -> *mut Tm,
    ) -> Option<Self> {
        let mut tm = Tm {
            tm_sec: 0,
            tm_min: 0,
            tm_hour: 0,
            tm_mday: 0,
            tm_mon: 0,
            tm_year: 0,
            tm_wday: 0,
            tm_yday: 0,
            tm_isdst: 0,
            tm_gmtoff: 0,
            tm_zone: std::ptr::null(),
        };
        // SAFETY: both pointers are valid for the call; the result points into `tm`.
        let ok = !unsafe { f(&epoch, &mut tm) }.is_null();
        ok.then_some(BrokenDownTime { tm })
    }

    pub fn format(&self, format: &str) -> String {
        let Ok(c_format) = CString::new(format) else {
            return String::new();
        };
        let mut buf = [0u8; 256];
        // SAFETY: buf's size is passed; strftime writes at most that many bytes and
        // reads the tm this struct owns.
        let n = unsafe {
            strftime(
                buf.as_mut_ptr().cast(),
                buf.len(),
                c_format.as_ptr(),
                &self.tm,
            )
        };
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// libc's name for the time zone's daylight-saving variant (Python's `time.tzname[1]`).
pub fn dst_zone_name() -> String {
    // SAFETY: tzset fills tzname with pointers to static strings; read once, copied.
    unsafe {
        tzset();
        let p = std::ptr::addr_of!(tzname).read()[1];
        if p.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// One address of one interface, as getifaddrs(3) lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct InterfaceAddress {
    pub interface: String,
    pub flags: u32,
    pub address: std::net::IpAddr,
    pub netmask: Option<std::net::IpAddr>,
    pub broadcast: Option<std::net::IpAddr>,
}

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;
/// IFF_BROADCAST: ifa_broadaddr holds a broadcast address, not a peer's.
const IFF_BROADCAST: u32 = 0x2;

/// SAFETY: `sa` is null or points to a sockaddr of the family it names.
unsafe fn ip_of(sa: *const SockAddr) -> Option<std::net::IpAddr> {
    if sa.is_null() {
        return None;
    }
    let bytes = sa.cast::<u8>();
    // Only the bytes the named family has are read: sockaddr_in is family, port, then 4
    // bytes of address; sockaddr_in6 is family, port, flowinfo (4), then 16 bytes.
    let read = |offset: usize, out: &mut [u8]| {
        // SAFETY: offset + out.len() stays within the sockaddr of this family.
        unsafe { std::ptr::copy_nonoverlapping(bytes.add(offset), out.as_mut_ptr(), out.len()) }
    };
    // SAFETY: every sockaddr starts with its family.
    let family = unsafe { (*sa).family };
    match family {
        AF_INET => {
            let mut octets = [0u8; 4];
            read(4, &mut octets);
            Some(std::net::IpAddr::from(octets))
        }
        AF_INET6 => {
            let mut octets = [0u8; 16];
            read(8, &mut octets);
            Some(std::net::IpAddr::from(octets))
        }
        _ => None,
    }
}

/// Every IPv4 and IPv6 address of every interface.
pub fn interface_addresses() -> io::Result<Vec<InterfaceAddress>> {
    let mut head: *mut IfAddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list that is freed below, after it is copied out.
    if unsafe { getifaddrs(&mut head) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: cursor walks the list getifaddrs returned, which stays valid until freed.
        let entry = unsafe { &*cursor };
        if let Some(address) = unsafe { ip_of(entry.ifa_addr) } {
            let broadcast = if entry.ifa_flags & IFF_BROADCAST != 0 {
                unsafe { ip_of(entry.ifa_broadaddr) }
            } else {
                None
            };
            out.push(InterfaceAddress {
                // SAFETY: ifa_name is a NUL-terminated string in the list.
                interface: unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) }
                    .to_string_lossy()
                    .into_owned(),
                flags: entry.ifa_flags,
                address,
                netmask: unsafe { ip_of(entry.ifa_netmask) },
                broadcast,
            });
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: head came from getifaddrs and nothing points into it any more.
    unsafe { freeifaddrs(head) };
    Ok(out)
}

/// statvfs(3) of a mounted path.
pub fn fs_stats(path: &str) -> io::Result<StatVfs> {
    let c_path = CString::new(path)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut buf = StatVfs::default();
    // SAFETY: c_path is NUL-terminated and buf is a writable statvfs.
    if unsafe { statvfs(c_path.as_ptr(), &mut buf) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buf)
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

/// `struct timespec` of 64-bit Linux.
#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// utimensat(2): leave this time as it is.
const UTIME_OMIT: i64 = (1 << 30) - 2;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;

/// Sets a path's modification time (the access time is left alone), of a symlink itself
/// rather than what it points to, as rsync's `--times` does.
pub fn set_mtime(path: &Path, secs: i64, nsec: u32) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let times = [
        Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        Timespec {
            tv_sec: secs,
            tv_nsec: i64::from(nsec.min(999_999_999)),
        },
    ];
    // SAFETY: c_path is NUL-terminated and outlives the call; `times` is the two
    // timespecs utimensat reads.
    let rc = unsafe {
        utimensat(
            AT_FDCWD,
            c_path.as_ptr(),
            times.as_ptr().cast(),
            AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc < 0 {
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
    fn access_reports_what_the_user_may_do() {
        assert_eq!(
            access_rwx(Path::new("/nonexistent/x")),
            (false, false, false)
        );
        let (r, _, x) = access_rwx(Path::new("/"));
        assert!(r && x);
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
