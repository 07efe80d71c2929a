//! The wire format pinned: golden bytes, every message through both decoders, and when a
//! frame goes stored instead of compressed.

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
const GOLDEN_HELLO_BINCODE: &str = "00000000100000000500000000000000302e312e3006000000000000006465706c6f79e8030000e80300000c000000000000002f686f6d652f6465706c6f7992100000";
const GOLDEN_HELLO_FRAME: &str = "0000003f78012589bb090020104303a2958593f8d949c142395bd7704ac73087e13d080998402d55722c313b6db4b635645f03a89e8b92bacc96fe7702f000f7010aae";
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
        FileContent::Replacing {
            bytes: b"new".to_vec(),
            was_sha256: [2; 32],
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
    ops.push(Op::EncodeDelta(EncodeDelta {
        delta_id: 9,
        start: Some(DeltaSource {
            path: "~/big".into(),
            signatures: BlockSignatures {
                exists: true,
                size: 10,
                block_size: 1024,
                blocks: vec![BlockSignature {
                    weak: 7,
                    strong: [1; 16],
                }],
            },
        }),
        literal_cap: 2 << 20,
    }));
    ops.push(Op::EncodeDelta(EncodeDelta {
        delta_id: 9,
        start: None,
        literal_cap: 1,
    }));
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
        OpResult::Delta(DeltaBatch {
            instructions: vec![
                DeltaInstruction::Literal(vec![1, 2]),
                DeltaInstruction::Copy { offset: 0, len: 9 },
            ],
            end: Some(DeltaEnd {
                size: 11,
                sha256: [5; 32],
            }),
        }),
        OpResult::Delta(DeltaBatch {
            instructions: vec![],
            end: None,
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

#[path = "frame_hostile_tests.rs"]
mod hostile;
