//! The protocol input, readable two ways: frame by frame by the serve loop, and polled
//! while a child runs, so that a `Cancel` (or the end of the input: the controller gone,
//! the SSH channel closed, a become pty hung up) is seen at once even though the agent
//! runs one request at a time. Frames read while polling are kept, in order, for the
//! serve loop.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};

use turbo_proto::{ControllerMsg, FrameError, MAX_FRAME_BYTES, read_frame};

use crate::sys;

/// Bytes read from the stream per read(2).
const READ_BYTES: usize = 256 << 10;

pub struct Input {
    file: File,
    /// Bytes read ahead and not yet handed out, from `pos`.
    buf: Vec<u8>,
    pos: usize,
    /// Requests decoded while polling, before the bytes still in `buf`.
    queued: VecDeque<ControllerMsg>,
    /// The stream ended (or broke) while polling.
    ended: bool,
    cancelled: bool,
    /// A frame read while polling did not decode: left in `buf` for the serve loop to
    /// report, and nothing after it is looked at.
    broken: bool,
}

impl Input {
    pub fn new(file: File) -> Input {
        Input {
            file,
            buf: Vec::new(),
            pos: 0,
            queued: VecDeque::new(),
            ended: false,
            cancelled: false,
            broken: false,
        }
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// The next message: those read while polling first, then from the stream. `None`
    /// at the end of the stream.
    pub fn next_message(&mut self) -> Result<Option<ControllerMsg>, FrameError> {
        if let Some(msg) = self.queued.pop_front() {
            return Ok(Some(msg));
        }
        read_frame(self)
    }

    /// Whether the agent must stop what it runs: a `Cancel` came, the stream ended or
    /// broke, or a stop signal arrived.
    pub fn stopping(&self) -> bool {
        self.cancelled || self.ended || self.broken || sys::stop_requested()
    }

    /// Reads what the stream has (call when poll says it is ready: the read does not
    /// block) and decodes the whole frames among it.
    pub fn absorb(&mut self) {
        if self.ended {
            return;
        }
        let mut chunk = vec![0u8; READ_BYTES];
        match self.file.read(&mut chunk) {
            Ok(0) => self.ended = true,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                self.decode_whole_frames();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A hung-up terminal answers EIO: the controller is gone all the same.
            Err(_) => self.ended = true,
        }
    }

    fn decode_whole_frames(&mut self) {
        while !self.broken {
            let rest = &self.buf[self.pos..];
            let Some(head) = rest.get(..4) else { break };
            let len = u32::from_be_bytes(head.try_into().expect("four bytes")) as usize;
            if len > MAX_FRAME_BYTES {
                self.broken = true;
                break;
            }
            let Some(frame) = rest.get(..4 + len) else {
                break;
            };
            match read_frame::<_, ControllerMsg>(&mut &frame[..]) {
                Ok(Some(ControllerMsg::Cancel)) => self.cancelled = true,
                Ok(Some(msg)) => self.queued.push_back(msg),
                Ok(None) | Err(_) => {
                    self.broken = true;
                    break;
                }
            }
            self.pos += 4 + len;
        }
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
    }
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.buf.len() {
            let n = out.len().min(self.buf.len() - self.pos);
            out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            if self.pos == self.buf.len() {
                self.buf.clear();
                self.pos = 0;
            }
            return Ok(n);
        }
        if self.ended {
            return Ok(0);
        }
        loop {
            match self.file.read(out) {
                // A stop signal while idle: nothing runs, so the agent just ends.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if sys::stop_requested() {
                        return Ok(0);
                    }
                }
                other => return other,
            }
        }
    }
}

#[cfg(test)]
pub mod testing {
    use super::*;
    use std::io::{Seek, Write};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A file holding `bytes`, read from its start, already unlinked.
    pub fn file_with(bytes: &[u8]) -> File {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "turbo-agent-input-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file.write_all(bytes).unwrap();
        file.rewind().unwrap();
        file
    }

    pub fn from_bytes(bytes: &[u8]) -> Input {
        Input::new(file_with(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::{Op, Request, encode_frame};

    fn request(id: u64) -> ControllerMsg {
        ControllerMsg::Request(Request {
            id,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: None,
            op: Op::Facts { subsets: vec![] },
        })
    }

    fn file_with(bytes: &[u8]) -> File {
        testing::file_with(bytes)
    }

    #[test]
    fn frames_read_while_polling_come_back_in_order_and_a_cancel_is_seen() {
        let mut bytes = Vec::new();
        for msg in [request(1), request(2), ControllerMsg::Cancel, request(3)] {
            bytes.extend(encode_frame(&msg).unwrap());
        }
        // Half of the last frame: read ahead, still handed out whole.
        let cut = bytes.len() - 3;
        let mut input = Input::new(file_with(&bytes[..cut]));
        input.absorb();
        assert!(input.stopping(), "the cancel overtakes the queued requests");
        assert!(matches!(input.next_message(), Ok(Some(m)) if m == request(1)));
        assert!(matches!(input.next_message(), Ok(Some(m)) if m == request(2)));
        // The cut frame is truncated: the serve loop reports it as it would unpolled.
        assert!(input.next_message().is_err());
    }

    #[test]
    fn the_end_of_the_stream_stops_and_a_corrupt_frame_is_left_for_the_serve_loop() {
        let mut input = Input::new(file_with(&[]));
        assert!(!input.stopping());
        input.absorb();
        assert!(input.stopping());
        assert!(matches!(input.next_message(), Ok(None)));

        let mut bytes = encode_frame(&request(1)).unwrap();
        bytes.extend_from_slice(&[0, 0, 0, 3, 1, 2, 3]);
        let mut input = Input::new(file_with(&bytes));
        input.absorb();
        assert!(input.stopping());
        assert!(matches!(input.next_message(), Ok(Some(m)) if m == request(1)));
        assert!(input.next_message().is_err());
    }
}
