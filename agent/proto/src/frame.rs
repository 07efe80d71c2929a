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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn inflate(frame: &[u8]) -> Vec<u8> {
        let mut raw = Vec::new();
        ZlibDecoder::new(&frame[4..]).read_to_end(&mut raw).unwrap();
        raw
    }

    /// A frame with a correct length prefix around arbitrary payload bytes.
    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(payload);
        out
    }

    fn zlib(raw: &[u8]) -> Vec<u8> {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
        z.write_all(raw).unwrap();
        z.finish().unwrap()
    }

    fn golden_hello() -> AgentMsg {
        AgentMsg::Hello(AgentHello {
            protocol_version: crate::PROTOCOL_VERSION,
            agent_version: "0.1.0".into(),
            user: "deploy".into(),
            uid: 1000,
            gid: 1000,
            home: "/home/deploy".into(),
            pid: 4242,
        })
    }

    fn golden_request() -> ControllerMsg {
        ControllerMsg::Request(Request {
            id: 7,
            check: false,
            diff: true,
            chain: 3,
            timeout_ms: Some(1500),
            op: Op::Batch(vec![
                Op::EnsureFile(EnsureFile {
                    path: "/etc/motd".into(),
                    content: FileContent::Inline(b"hello\n".to_vec()),
                    mode: Some(FileMode::Bits(0o644)),
                    force: true,
                    owner: Ownership {
                        user: Some("root".into()),
                        group: None,
                    },
                    validate: None,
                    backup: true,
                }),
                Op::Exec(Exec {
                    command: Command::Argv(vec!["echo".into(), "hi".into()]),
                    chdir: None,
                    creates: Some("/tmp/x".into()),
                    removes: None,
                    env: vec![("LANG".into(), "C".into())],
                    stdin: None,
                    umask: Some(0o022),
                }),
                Op::ReadFile {
                    path: "/etc/hosts".into(),
                    offset: 8,
                    limit: Some(4096),
                },
            ]),
        })
    }

    // The wire format, committed. If one of these fails, the messages (or bincode's
    // options) changed: bump PROTOCOL_VERSION and update the constants on purpose.
    const GOLDEN_HELLO_BINCODE: &str = "000000000c0000000500000000000000302e312e3006000000000000006465706c6f79e8030000e80300000c000000000000002f686f6d652f6465706c6f7992100000";
    const GOLDEN_HELLO_FRAME: &str = "0000003f7801258abb090020104303a2958593f8d949c142395bd7704ac73087210f4212509e58a2ceb1c4ec3491dad6907d0da0e88d255297d9d2df4e001ef6050aaa";
    const GOLDEN_REQUEST_BINCODE: &str = "0000000007000000000000000001030000000000000001dc050000000000000500000003000000000000000100000009000000000000002f6574632f6d6f746400000000060000000000000068656c6c6f0a0100000000a401000001010400000000000000726f6f740000010400000000000000020000000000000004000000000000006563686f02000000000000006869000106000000000000002f746d702f7800010000000000000004000000000000004c414e47010000000000000043000112000000070000000a000000000000002f6574632f686f7374730800000000000000010010000000000000";
    const GOLDEN_REQUEST_FRAME: &str = "0000008878013d4fdb0d0241081c7c7b5fc646b606e3873fc626ce4dd6e42e188f0f0bb22c8b71c07013069881905d105b3242965100f9ae11f0329b74f6a447a9d69751edee62e3896c7518b41376f8308bacbc255faa06cc72813f725cfba6e9b50724ef151b9fe50d9e8afd5cbf9e6e97f4ce902387fe838ed5239ed674b269e792141c10f80114101300";

    #[test]
    fn golden_hello_bytes() {
        let frame = encode_frame(&golden_hello()).unwrap();
        // The bincode check comes first: it is the wire contract. The frame check also
        // pins the compressor, so a flate2 upgrade that changes its output shows up here.
        assert_eq!(
            hex(&inflate(&frame)),
            GOLDEN_HELLO_BINCODE,
            "bincode changed"
        );
        assert_eq!(hex(&frame), GOLDEN_HELLO_FRAME, "zlib output changed");
    }

    #[test]
    fn golden_request_bytes() {
        let frame = encode_frame(&golden_request()).unwrap();
        assert_eq!(
            hex(&inflate(&frame)),
            GOLDEN_REQUEST_BINCODE,
            "bincode changed"
        );
        assert_eq!(hex(&frame), GOLDEN_REQUEST_FRAME, "zlib output changed");
    }

    #[test]
    fn golden_frames_decode_to_the_messages() {
        let unhex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let hello: AgentMsg = read_frame(&mut &unhex(GOLDEN_HELLO_FRAME)[..])
            .unwrap()
            .unwrap();
        assert_eq!(hello, golden_hello());
        let req: ControllerMsg = read_frame(&mut &unhex(GOLDEN_REQUEST_FRAME)[..])
            .unwrap()
            .unwrap();
        assert_eq!(req, golden_request());
    }

    fn every_op() -> Vec<Op> {
        let mut ops = vec![
            Op::Stat {
                path: "~/x".into(),
                checksum: Some(Digest::Sha1),
                follow: true,
            },
            Op::ReadFile {
                path: "~/r".into(),
                offset: 1 << 40,
                limit: None,
            },
            Op::ListTree {
                path: "/srv".into(),
                max_depth: Some(2),
                follow: false,
                checksum: Some(Digest::Sha256),
            },
            Op::Rename {
                from: "/a".into(),
                to: "/b".into(),
            },
            Op::WriteChunk {
                upload_id: 3,
                data: vec![0, 1, 2, 255],
            },
        ];
        for content in [
            FileContent::Inline(b"abc".to_vec()),
            FileContent::Staged {
                upload_id: 9,
                sha256: [7; 32],
            },
            FileContent::Digest {
                sha256: [1; 32],
                size: 12,
            },
        ] {
            ops.push(Op::EnsureFile(EnsureFile {
                path: "/a".into(),
                content,
                mode: Some(FileMode::Symbolic("u=rw,g=r".into())),
                force: false,
                owner: Ownership::default(),
                validate: None,
                backup: false,
            }));
        }
        for state in [
            PathState::File,
            PathState::Directory,
            PathState::Absent,
            PathState::Touch,
            PathState::Link {
                target: "/t".into(),
                force: true,
            },
            PathState::AsFound { follow: false },
        ] {
            ops.push(Op::EnsurePath(EnsurePath {
                path: "/p".into(),
                state,
                mode: None,
                recurse_parents: true,
                owner: Ownership {
                    user: Some("0".into()),
                    group: Some("wheel".into()),
                },
            }));
        }
        ops.push(Op::Exec(Exec {
            command: Command::Shell {
                script: "echo hi >&2".into(),
                executable: Some("/bin/bash".into()),
            },
            chdir: Some("/tmp".into()),
            creates: None,
            removes: Some("/r".into()),
            env: vec![],
            stdin: Some(b"in".to_vec()),
            umask: None,
        }));
        ops.push(Op::BlockSignatures {
            path: "~/big".into(),
            block_size: 4096,
        });
        ops.push(Op::WriteDelta {
            upload_id: 4,
            basis: "/srv/big".into(),
            instructions: vec![
                DeltaInstruction::Copy {
                    offset: 1 << 33,
                    len: 4096,
                },
                DeltaInstruction::Literal(vec![9, 8, 7]),
            ],
        });
        ops.push(Op::Facts {
            subsets: vec!["all".into(), "!hardware".into()],
        });
        for style in [
            ModuleStyle::NewStyle {
                fqn: "ansible.legacy.m".into(),
                profile: "legacy".into(),
            },
            ModuleStyle::Old {
                path: "m".into(),
                python: true,
            },
            ModuleStyle::WantJson {
                path: "m.sh".into(),
                python: false,
            },
            ModuleStyle::Binary { path: "m".into() },
        ] {
            ops.push(Op::RunModule(RunModule {
                interpreters: vec!["python3".into(), "/usr/bin/python3".into()],
                payload: ModulePayload {
                    sha256: [3; 32],
                    files: Some(vec![PayloadFile {
                        path: "ansible/__init__.py".into(),
                        data: b"".to_vec(),
                        executable: false,
                    }]),
                },
                style,
                args: b"{}".to_vec(),
                timeout_secs: Some(5),
                env: vec![("A".into(), "1".into())],
            }));
        }
        let nested = Op::Batch(ops.clone());
        ops.push(nested);
        ops
    }

    fn a_stat() -> StatInfo {
        StatInfo {
            path: "/s".into(),
            exists: true,
            kind: FileKind::Symlink,
            mode: 0o777,
            file_type: 0o120000,
            size: 4,
            uid: 0,
            gid: 0,
            owner: "root".into(),
            group: "wheel".into(),
            mtime: -5,
            mtime_nsec: 999_999_999,
            atime: 1_700_000_000,
            atime_nsec: 1,
            ctime: i64::MAX,
            ctime_nsec: 0,
            inode: u64::MAX,
            dev: 2049,
            nlink: 1,
            rdev: 0,
            blocks: 8,
            block_size: 4096,
            readable: true,
            writeable: false,
            executable: true,
            checksum: Some(vec![2; 20]),
            link_target: Some("/t".into()),
            lnk_source: Some("/real/t".into()),
        }
    }

    fn every_result() -> Vec<OpResult> {
        let mut results = vec![
            OpResult::Signatures(BlockSignatures {
                exists: true,
                size: 5000,
                block_size: 4096,
                blocks: vec![
                    BlockSignature {
                        weak: 0xdead_beef,
                        strong: [3; 16],
                    },
                    BlockSignature {
                        weak: 1,
                        strong: [0; 16],
                    },
                ],
            }),
            OpResult::Stat(a_stat()),
            OpResult::Stat(StatInfo::missing("/gone".into())),
            OpResult::Read(FileRead {
                stat: a_stat(),
                offset: 3,
                data: vec![0, 255, 10],
                eof: false,
            }),
            OpResult::Tree(TreeListing {
                root: a_stat(),
                entries: vec![a_stat(), StatInfo::default()],
                skipped: vec![SkippedPath {
                    path: "/s/private".into(),
                    message: "Permission denied (os error 13)".into(),
                }],
            }),
            OpResult::Exec(ExecOutcome {
                ran: true,
                rc: -9,
                stdout: b"out".to_vec(),
                stderr: b"err".to_vec(),
                start_unix_micros: 1_700_000_000_000_000,
                duration_micros: 12,
                msg: String::new(),
            }),
            OpResult::Chunk { size: 1 << 20 },
            OpResult::NeedContent,
            OpResult::Module(ModuleRun {
                interpreter: "/usr/bin/python3".into(),
                discovered: true,
                rc: 1,
                stdout: b"{}".to_vec(),
                stderr: b"Traceback".to_vec(),
                timed_out: true,
            }),
            OpResult::Facts(vec![
                ("null".into(), FactValue::Null),
                ("bool".into(), FactValue::Bool(true)),
                ("int".into(), FactValue::Int(-42)),
                ("float".into(), FactValue::Float(0.25)),
                ("str".into(), FactValue::Str("Debian".into())),
                (
                    "nested".into(),
                    FactValue::List(vec![FactValue::Map(vec![(
                        "address".into(),
                        FactValue::Str("127.0.0.1".into()),
                    )])]),
                ),
            ]),
        ];
        for kind in [
            FileKind::Missing,
            FileKind::File,
            FileKind::Directory,
            FileKind::Other,
        ] {
            results.push(OpResult::File(FileOutcome {
                changed: true,
                path: "/f".into(),
                kind,
                mode: 0o644,
                size: 3,
                uid: 1,
                gid: 2,
                owner: "o".into(),
                group: "g".into(),
                diff: Some(FileDiff {
                    before: Some("a".into()),
                    after: "b".into(),
                }),
                backup_file: Some("/f.1.2026-01-01@00:00:00~".into()),
            }));
        }
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::PermissionDenied,
            ErrorKind::InvalidArgument,
            ErrorKind::Io,
            ErrorKind::Protocol,
        ] {
            results.push(OpResult::Error(OpError {
                kind,
                message: "m".into(),
            }));
        }
        let nested = OpResult::Batch(results.clone());
        results.push(nested);
        results
    }

    #[test]
    fn every_message_round_trips_through_both_decoders() {
        let mut controller: Vec<ControllerMsg> = every_op()
            .into_iter()
            .enumerate()
            .map(|(i, op)| {
                ControllerMsg::Request(Request {
                    id: i as u64,
                    check: i % 2 == 0,
                    diff: i % 3 == 0,
                    chain: i as u64 % 4,
                    timeout_ms: None,
                    op,
                })
            })
            .collect();
        controller.push(golden_request());
        let mut agent: Vec<AgentMsg> = every_result()
            .into_iter()
            .enumerate()
            .map(|(i, result)| {
                AgentMsg::Reply(Reply {
                    id: i as u64,
                    result,
                })
            })
            .collect();
        agent.push(golden_hello());

        let mut stream = Vec::new();
        for msg in &controller {
            write_frame(&mut stream, msg).unwrap();
        }
        let mut r = &stream[..];
        for msg in &controller {
            assert_eq!(
                &read_frame::<_, ControllerMsg>(&mut r).unwrap().unwrap(),
                msg
            );
        }
        assert!(read_frame::<_, ControllerMsg>(&mut r).unwrap().is_none());

        // The push decoder gets the bytes in awkward pieces, as a socket delivers them.
        let mut stream = Vec::new();
        for msg in &agent {
            stream.extend(encode_frame(msg).unwrap());
        }
        let mut dec = FrameDecoder::new();
        let mut got = Vec::new();
        for piece in stream.chunks(7) {
            dec.push(piece);
            while let Some(msg) = dec.next::<AgentMsg>().unwrap() {
                got.push(msg);
            }
        }
        assert_eq!(got, agent);
        assert_eq!(dec.pending_bytes(), 0);
    }

    #[test]
    fn truncated_frames_are_reported() {
        let frame = encode_frame(&golden_request()).unwrap();
        for cut in [1, 3] {
            match read_frame::<_, ControllerMsg>(&mut &frame[..cut]) {
                Err(FrameError::Truncated { expected: 4, got }) => assert_eq!(got, cut),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        for cut in [4, 5, frame.len() - 1] {
            match read_frame::<_, ControllerMsg>(&mut &frame[..cut]) {
                Err(FrameError::Truncated { expected, got }) => {
                    assert_eq!(expected, frame.len() - 4);
                    assert_eq!(got, cut - 4);
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        let mut dec = FrameDecoder::new();
        dec.push(&frame[..frame.len() - 1]);
        assert!(dec.next::<ControllerMsg>().unwrap().is_none());
        assert_eq!(dec.pending_bytes(), frame.len() - 1);
        dec.push(&frame[frame.len() - 1..]);
        assert_eq!(
            dec.next::<ControllerMsg>().unwrap().unwrap(),
            golden_request()
        );
        assert_eq!(dec.pending_bytes(), 0);
    }

    #[test]
    fn oversized_length_prefix_is_rejected_before_reading_the_body() {
        let len = MAX_FRAME_BYTES as u32 + 1;
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"short");
        match read_frame::<_, ControllerMsg>(&mut &bytes[..]) {
            Err(FrameError::TooLarge { len: l }) => assert_eq!(l, len as usize),
            other => panic!("{other:?}"),
        }
        let mut dec = FrameDecoder::new();
        dec.push(&u32::MAX.to_be_bytes());
        assert!(matches!(
            dec.next::<ControllerMsg>(),
            Err(FrameError::TooLarge { len }) if len == !STORED_FLAG as usize
        ));
    }

    #[test]
    fn announced_but_missing_body_is_truncation_not_a_big_allocation() {
        let bytes = (MAX_FRAME_BYTES as u32).to_be_bytes();
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Truncated { got: 0, .. })
        ));
    }

    /// Bytes zlib cannot shrink, as a compressed file's are.
    fn incompressible(len: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    fn chunk_request(data: Vec<u8>) -> ControllerMsg {
        ControllerMsg::Request(Request {
            id: 1,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: None,
            op: Op::WriteChunk { upload_id: 1, data },
        })
    }

    #[test]
    fn incompressible_content_is_stored_and_compressible_content_compressed() {
        let random = chunk_request(incompressible(1 << 20));
        let frame = encode_frame(&random).unwrap();
        let prefix = u32::from_be_bytes(frame[..4].try_into().unwrap());
        assert_ne!(prefix & STORED_FLAG, 0, "random bytes go stored");
        assert_eq!((prefix & !STORED_FLAG) as usize, frame.len() - 4);
        let raw = bincode_options().serialize(&random).unwrap();
        assert_eq!(
            &frame[4..],
            &raw[..],
            "a stored payload is the bincode itself"
        );
        assert_eq!(
            read_frame::<_, ControllerMsg>(&mut &frame[..]).unwrap(),
            Some(random.clone())
        );
        let mut dec = FrameDecoder::new();
        dec.push(&frame);
        assert_eq!(dec.next::<ControllerMsg>().unwrap(), Some(random));

        let text = chunk_request(b"a line of a config file\n".repeat(50_000));
        let frame = encode_frame(&text).unwrap();
        let prefix = u32::from_be_bytes(frame[..4].try_into().unwrap());
        assert_eq!(prefix & STORED_FLAG, 0, "text is compressed");
        assert!(frame.len() < 50_000, "{}", frame.len());
        assert_eq!(
            read_frame::<_, ControllerMsg>(&mut &frame[..]).unwrap(),
            Some(text)
        );
    }

    #[test]
    fn a_stored_frame_that_is_not_bincode_is_corrupt() {
        let mut bytes = (3 | STORED_FLAG).to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0xff, 0xff, 0xff]);
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Corrupt(_))
        ));
    }

    /// A valid zlib stream of MAX_MESSAGE_BYTES + 1 zeros, about 1.7 MB. Written by hand
    /// (one fixed-Huffman block: a literal 0, then back-references of 258 bytes at
    /// distance 1) because running a compressor over 256 MiB is slow in debug builds.
    fn zlib_bomb() -> Vec<u8> {
        struct Bits {
            out: Vec<u8>,
            acc: u64,
            n: u32,
        }
        impl Bits {
            // Deflate packs fields LSB first...
            fn put(&mut self, value: u64, count: u32) {
                self.acc |= value << self.n;
                self.n += count;
                while self.n >= 8 {
                    self.out.push(self.acc as u8);
                    self.acc >>= 8;
                    self.n -= 8;
                }
            }
            // ...but Huffman codes MSB first.
            fn code(&mut self, code: u64, len: u32) {
                let reversed = (0..len).fold(0, |r, i| (r << 1) | ((code >> i) & 1));
                self.put(reversed, len);
            }
        }
        let total = MAX_MESSAGE_BYTES as u64 + 1;
        let mut bits = Bits {
            out: vec![0x78, 0x01],
            acc: 0,
            n: 0,
        };
        bits.put(1, 1); // BFINAL
        bits.put(1, 2); // BTYPE = fixed Huffman
        bits.code(0b0011_0000, 8); // literal 0
        let mut written = 1u64;
        while written + 258 <= total {
            bits.code(0b1100_0101, 8); // length code 285 = 258 bytes
            bits.code(0, 5); // distance code 0 = 1 byte back
            written += 258;
        }
        while written < total {
            bits.code(0b0011_0000, 8);
            written += 1;
        }
        bits.code(0, 7); // end of block
        bits.put(0, 7); // pad to a byte
        // Adler-32 of zeros: a stays 1, b grows by 1 per byte.
        let adler = ((total % 65521) << 16) | 1;
        bits.out.extend_from_slice(&(adler as u32).to_be_bytes());
        bits.out
    }

    #[test]
    fn hand_made_bomb_is_valid_zlib() {
        // Checked on a small scale so the real bomb can be trusted to be a bomb, not junk.
        let mut raw = Vec::new();
        ZlibDecoder::new(&zlib_bomb()[..])
            .take(1 << 20)
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw.len(), 1 << 20);
        assert!(raw.iter().all(|&b| b == 0));
    }

    #[test]
    fn zlib_bomb_stops_at_the_message_limit() {
        let bomb = framed(&zlib_bomb());
        assert!(bomb.len() < MAX_FRAME_BYTES);
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bomb[..]),
            Err(FrameError::TooLargeDecompressed)
        ));
        let mut dec = FrameDecoder::new();
        dec.push(&bomb);
        assert!(matches!(
            dec.next::<ControllerMsg>(),
            Err(FrameError::TooLargeDecompressed)
        ));
    }

    #[test]
    fn garbage_is_corrupt_never_a_panic() {
        // Not zlib at all.
        let bytes = framed(b"this is not a zlib stream");
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Corrupt(_))
        ));
        // Valid zlib, but an enum variant that does not exist.
        let bytes = framed(&zlib(&[9, 0, 0, 0]));
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Corrupt(_))
        ));
        // A message of the other direction: decodes to nothing sensible.
        let hello = encode_frame(&golden_hello()).unwrap();
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &hello[..]),
            Err(FrameError::Corrupt(_))
        ));
        // Trailing bytes after a whole message.
        let mut raw = inflate(&encode_frame(&golden_request()).unwrap());
        raw.push(0);
        let bytes = framed(&zlib(&raw));
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Corrupt(_))
        ));
        // A WriteChunk whose byte vector claims 2^60 bytes: bincode's limit refuses it
        // instead of allocating.
        let mut raw = Vec::new();
        raw.extend_from_slice(&0u32.to_le_bytes()); // ControllerMsg::Request
        raw.extend_from_slice(&1u64.to_le_bytes()); // id
        raw.extend_from_slice(&[0, 0]); // check, diff
        raw.extend_from_slice(&3u32.to_le_bytes()); // Op::WriteChunk
        raw.extend_from_slice(&5u64.to_le_bytes()); // upload_id
        raw.extend_from_slice(&(1u64 << 60).to_le_bytes()); // data length
        let bytes = framed(&zlib(&raw));
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &bytes[..]),
            Err(FrameError::Corrupt(_))
        ));
    }

    /// bincode of an `AgentMsg::Reply` whose result is `levels` `Batch`es, each holding the
    /// next one (the innermost one empty).
    fn nested_batch_reply(levels: usize) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend_from_slice(&1u32.to_le_bytes()); // AgentMsg::Reply
        raw.extend_from_slice(&1u64.to_le_bytes()); // id
        for level in 0..levels {
            raw.extend_from_slice(&5u32.to_le_bytes()); // OpResult::Batch
            let len = if level + 1 == levels { 0u64 } else { 1 };
            raw.extend_from_slice(&len.to_le_bytes());
        }
        raw
    }

    // Found by the frame fuzz target: a 96 KB frame inflating to a million nested Batches
    // overflowed the stack and aborted the controller, every host with it.
    #[test]
    fn deeply_nested_batches_are_corrupt_not_a_stack_overflow() {
        let bytes = framed(&zlib(&nested_batch_reply(1_000_000)));
        assert!(bytes.len() < 200_000);
        match read_frame::<_, AgentMsg>(&mut &bytes[..]) {
            Err(FrameError::Corrupt(why)) => assert!(why.contains("nests deeper"), "{why}"),
            other => panic!("{other:?}"),
        }
        let mut dec = FrameDecoder::new();
        dec.push(&bytes);
        assert!(matches!(
            dec.next::<AgentMsg>(),
            Err(FrameError::Corrupt(_))
        ));
        // The same on the agent's side, and for facts nested in facts.
        let mut raw = Vec::new();
        raw.extend_from_slice(&0u32.to_le_bytes()); // ControllerMsg::Request
        raw.extend_from_slice(&1u64.to_le_bytes()); // id
        raw.extend_from_slice(&[0, 0]); // check, diff
        raw.extend_from_slice(&0u64.to_le_bytes()); // chain
        for _ in 0..100_000 {
            raw.extend_from_slice(&9u32.to_le_bytes()); // Op::Batch
            raw.extend_from_slice(&1u64.to_le_bytes());
        }
        assert!(matches!(
            read_frame::<_, ControllerMsg>(&mut &framed(&zlib(&raw))[..]),
            Err(FrameError::Corrupt(_))
        ));
        let mut deep = FactValue::Null;
        for _ in 0..crate::MAX_NESTING + 1 {
            deep = FactValue::List(vec![deep]);
        }
        let frame = encode_frame(&AgentMsg::Reply(Reply {
            id: 1,
            result: OpResult::Facts(vec![("deep".into(), deep)]),
        }))
        .unwrap();
        assert!(matches!(
            read_frame::<_, AgentMsg>(&mut &frame[..]),
            Err(FrameError::Corrupt(_))
        ));
    }

    #[test]
    fn nesting_up_to_the_limit_still_decodes_and_the_count_resets() {
        let bytes = framed(&zlib(&nested_batch_reply(crate::MAX_NESTING)));
        let mut dec = FrameDecoder::new();
        // Twice: a refused frame before must not leave levels counted on this thread.
        dec.push(&framed(&zlib(&nested_batch_reply(crate::MAX_NESTING + 1))));
        assert!(dec.next::<AgentMsg>().is_err());
        for _ in 0..2 {
            dec.push(&bytes);
            assert!(matches!(
                dec.next::<AgentMsg>(),
                Ok(Some(AgentMsg::Reply(_)))
            ));
        }
    }

    #[test]
    fn random_payloads_never_panic() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let valid = inflate(&encode_frame(&golden_request()).unwrap());
        for round in 0..2000 {
            let payload: Vec<u8> = if round % 2 == 0 {
                let n = (next() % 300) as usize;
                (0..n).map(|_| next() as u8).collect()
            } else {
                // Valid zlib around a mutated valid message reaches deep into bincode.
                let mut raw = valid.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % raw.len();
                    raw[at] = next() as u8;
                }
                zlib(&raw)
            };
            let _ = read_frame::<_, ControllerMsg>(&mut &framed(&payload)[..]);
            let mut dec = FrameDecoder::new();
            dec.push(&framed(&payload));
            let _ = dec.next::<AgentMsg>();
        }
    }
}
