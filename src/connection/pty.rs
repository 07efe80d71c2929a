//! A pseudo-terminal for a local child that reads its password from a terminal only (su):
//! the child's stdin, stdout and stderr are the terminal, which is its controlling
//! terminal in a session of its own; the controller reads and writes the other side,
//! without blocking a thread.
//!
//! std has no call for these, and the libc crate is not a dependency: the three C
//! functions used come from the C library std already links.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const O_NOCTTY: i32 = 0o400;
const O_NONBLOCK: i32 = 0o4000;
const EIO: i32 = 5;
// Linux's ioctl numbers (asm-generic): unlock the pty, its number, make it the
// controlling terminal.
const TIOCSPTLCK: u64 = 0x4004_5431;
const TIOCGPTN: u64 = 0x8004_5430;
const TIOCSCTTY: u64 = 0x540E;

unsafe extern "C" {
    fn ioctl(fd: i32, request: u64, ...) -> i32;
    fn setsid() -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
}

const SIGHUP: i32 = 1;

/// The controller's side of a pty; clones share it (one reads, one writes).
#[derive(Clone)]
pub(super) struct PtyMaster(Arc<Shared>, Option<i32>);

struct Shared {
    fd: AsyncFd<File>,
    /// Set by the writer's shutdown: the reader ends at once.
    ended: AtomicBool,
    reader: Mutex<Option<Waker>>,
}

impl PtyMaster {
    /// Shutting this down hangs up the session `leader` started (see `poll_shutdown`).
    pub(super) fn hanging_up(self, leader: Option<u32>) -> PtyMaster {
        PtyMaster(self.0, leader.and_then(|pid| i32::try_from(pid).ok()))
    }
}

/// A new pty: the controller's side, and the child's (to hand to [`child_terminal`]).
pub(super) fn open() -> io::Result<(PtyMaster, File)> {
    let master = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(O_NOCTTY | O_NONBLOCK)
        .open("/dev/ptmx")?;
    let fd = master.as_raw_fd();
    let mut unlock: i32 = 0;
    let mut number: u32 = 0;
    // SAFETY: both requests take a pointer to an int, which lives across the call.
    unsafe {
        if ioctl(fd, TIOCSPTLCK, &mut unlock as *mut i32) != 0 {
            return Err(io::Error::last_os_error());
        }
        if ioctl(fd, TIOCGPTN, &mut number as *mut u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let child = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(O_NOCTTY)
        .open(format!("/dev/pts/{number}"))?;
    // SAFETY: the File owns its descriptor, which nothing else closes or replaces while
    // the AsyncFd holds it.
    let master = unsafe { AsyncFd::register(master) }.map_err(io::Error::from)?;
    let shared = Shared {
        fd: master,
        ended: AtomicBool::new(false),
        reader: Mutex::new(None),
    };
    Ok((PtyMaster(Arc::new(shared), None), child))
}

/// Sets up `command` so that `terminal` is the child's stdio and controlling terminal.
pub(super) fn child_terminal(
    command: &mut tokio::process::Command,
    terminal: &File,
) -> io::Result<()> {
    command
        .stdin(terminal.try_clone()?)
        .stdout(terminal.try_clone()?)
        .stderr(terminal.try_clone()?);
    // SAFETY: setsid and ioctl are async-signal-safe, and nothing else runs between fork
    // and exec.
    unsafe {
        command.pre_exec(|| {
            if setsid() < 0 || ioctl(0, TIOCSCTTY, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

impl AsyncRead for PtyMaster {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        *self.0.reader.lock().expect("pty reader") = Some(cx.waker().clone());
        loop {
            if self.0.ended.load(Ordering::Acquire) {
                return Poll::Ready(Ok(()));
            }
            let mut guard = ready!(self.0.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|fd| fd.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // Every copy of the child's side is closed: the end of its output.
                Ok(Err(e)) if e.raw_os_error() == Some(EIO) => return Poll::Ready(Ok(())),
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for PtyMaster {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.0.fd.poll_write_ready(cx))?;
            match guard.try_io(|fd| fd.get_ref().write(data)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// A raw terminal has no end of file: what a closed pipe would tell the child, a
    /// hangup tells its session (the terminal's own processes, su and the agent); the
    /// reader ends at once, as it would at the end of a pipe.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.ended.store(true, Ordering::Release);
        if let Some(waker) = self.0.reader.lock().expect("pty reader").take() {
            waker.wake();
        }
        if let Some(leader) = self.1 {
            // SAFETY: a plain system call; the group is the child's own session.
            unsafe {
                kill(-leader, SIGHUP);
            }
        }
        Poll::Ready(Ok(()))
    }
}
