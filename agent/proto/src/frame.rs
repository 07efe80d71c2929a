//! Framing: length prefix + zlib + bincode, with hard caps so that a corrupt or hostile
//! peer yields an error, never a panic or an unbounded allocation.
//!
//! The top bit of the length prefix ([`STORED_FLAG`]) marks a payload sent as plain
//! bincode: a large message whose sample does not shrink (already-compressed or random
//! file content) skips zlib, which would cost CPU on both sides for nothing.

use std::fmt;
use std::io::{self, Read, Write};

use bincode::Options;
use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{MAX_FRAME_BYTES, MAX_MESSAGE_BYTES};

#[derive(Debug)]
pub enum FrameError {
    Io(io::Error),
    /// The peer closed the stream in the middle of a frame.
    Truncated {
        expected: usize,
        got: usize,
    },
    /// The length prefix announces more than [`MAX_FRAME_BYTES`].
    TooLarge {
        len: usize,
    },
    /// The payload inflates past [`MAX_MESSAGE_BYTES`].
    TooLargeDecompressed,
    /// Not zlib, or not a message of the expected type.
    Corrupt(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "i/o error on the agent stream: {e}"),
            FrameError::Truncated { expected, got } => {
                write!(f, "stream ended inside a frame ({got} of {expected} bytes)")
            }
            FrameError::TooLarge { len } => write!(
                f,
                "frame of {len} bytes exceeds the {MAX_FRAME_BYTES}-byte limit"
            ),
            FrameError::TooLargeDecompressed => write!(
                f,
                "frame inflates past the {MAX_MESSAGE_BYTES}-byte message limit"
            ),
            FrameError::Corrupt(why) => write!(f, "corrupt frame: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

fn bincode_options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(MAX_MESSAGE_BYTES as u64)
        .reject_trailing_bytes()
}

/// Set in the length prefix when the payload is stored bincode, not zlib.
pub const STORED_FLAG: u32 = 1 << 31;

/// Messages at least this large are sampled before they are compressed.
const SAMPLE_FROM: usize = 256 << 10;
const SAMPLE_BYTES: usize = 64 << 10;

/// Whether zlib would earn its CPU on `raw`: a sample from its middle (past the headers
/// of the message) must shrink by a tenth. Small messages are always compressed.
fn worth_compressing(raw: &[u8]) -> bool {
    if raw.len() < SAMPLE_FROM {
        return true;
    }
    let start = raw.len() / 2 - SAMPLE_BYTES / 2;
    let sample = &raw[start..start + SAMPLE_BYTES];
    let mut z = ZlibEncoder::new(Vec::with_capacity(SAMPLE_BYTES), Compression::fast());
    if z.write_all(sample).is_err() {
        return true;
    }
    z.finish()
        .map_or(true, |out| out.len() < SAMPLE_BYTES - SAMPLE_BYTES / 10)
}

/// One whole frame (length prefix included) holding `msg`.
pub fn encode_frame<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let raw = bincode_options()
        .serialize(msg)
        .map_err(|e| FrameError::Corrupt(e.to_string()))?;
    if !worth_compressing(&raw) {
        let len = raw.len();
        if len > MAX_FRAME_BYTES {
            return Err(FrameError::TooLarge { len });
        }
        let mut out = Vec::with_capacity(len + 4);
        out.extend_from_slice(&(len as u32 | STORED_FLAG).to_be_bytes());
        out.extend_from_slice(&raw);
        return Ok(out);
    }
    let mut out = Vec::with_capacity(raw.len() / 2 + 16);
    out.extend_from_slice(&[0; 4]);
    let mut z = ZlibEncoder::new(out, Compression::fast());
    z.write_all(&raw)?;
    let mut out = z.finish()?;
    let len = out.len() - 4;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge { len });
    }
    out[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(out)
}

/// The payload's length and whether it is stored, from a length prefix.
fn split_prefix(prefix: [u8; 4]) -> (usize, bool) {
    let word = u32::from_be_bytes(prefix);
    ((word & !STORED_FLAG) as usize, word & STORED_FLAG != 0)
}

/// Decodes one frame's payload (the bytes after the length prefix), inflating it unless
/// the prefix marked it stored.
fn decode_body<T: DeserializeOwned>(payload: &[u8], stored: bool) -> Result<T, FrameError> {
    if stored {
        return bincode_options()
            .deserialize(payload)
            .map_err(|e| FrameError::Corrupt(format!("bincode: {e}")));
    }
    decode_payload(payload)
}

/// Inflates and decodes one compressed frame's payload (the bytes after the length prefix).
pub fn decode_payload<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    let mut raw = Vec::new();
    ZlibDecoder::new(payload)
        .take(MAX_MESSAGE_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| FrameError::Corrupt(format!("zlib: {e}")))?;
    if raw.len() > MAX_MESSAGE_BYTES {
        return Err(FrameError::TooLargeDecompressed);
    }
    bincode_options()
        .deserialize(&raw)
        .map_err(|e| FrameError::Corrupt(format!("bincode: {e}")))
}

/// Writes one frame and flushes: every frame is a complete message for the peer.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> Result<(), FrameError> {
    w.write_all(&encode_frame(msg)?)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame. `Ok(None)` is a clean end of stream between frames.
pub fn read_frame<R: Read, T: DeserializeOwned>(r: &mut R) -> Result<Option<T>, FrameError> {
    let mut len_buf = [0u8; 4];
    let got = read_full(r, &mut len_buf)?;
    if got == 0 {
        return Ok(None);
    }
    if got < 4 {
        return Err(FrameError::Truncated { expected: 4, got });
    }
    let (len, stored) = split_prefix(len_buf);
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge { len });
    }
    // Grown as bytes arrive rather than allocated up front: a peer that announces 64 MiB
    // and then hangs up costs what it sent, not what it announced.
    let mut payload = Vec::with_capacity(len.min(64 << 10));
    r.take(len as u64).read_to_end(&mut payload)?;
    if payload.len() < len {
        return Err(FrameError::Truncated {
            expected: len,
            got: payload.len(),
        });
    }
    decode_body(&payload, stored).map(Some)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Push-style decoder for async readers: feed it whatever bytes arrived, take out whole
/// messages. Holds at most one partial frame.
#[derive(Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
}

impl FrameDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, `Ok(None)` when more bytes are needed.
    // Not an Iterator: the message type is chosen per call and "need more bytes" is not
    // the end of the stream.
    #[allow(clippy::should_implement_trait)]
    pub fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let (len, stored) = split_prefix(self.buf[..4].try_into().expect("4 bytes"));
        if len > MAX_FRAME_BYTES {
            return Err(FrameError::TooLarge { len });
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let msg = decode_body(&self.buf[4..4 + len], stored);
        self.buf.drain(..4 + len);
        msg.map(Some)
    }

    /// Bytes held that do not yet make a frame; non-zero at end of stream means truncation.
    pub fn pending_bytes(&self) -> usize {
        self.buf.len()
    }
}

// The wire format pinned (golden bytes, every message, when frames go stored) and, in
// frame_hostile_tests.rs, what hostile or broken input does.
#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
