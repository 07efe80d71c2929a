//! Carrying synchronize's changes out, step by step, each step to the agent that must
//! do it: the receiver's directories, links and small files (one batch per 16 MiB), then
//! the files whose bytes come from elsewhere, then deletions and times.
//!
//! A file's bytes move as its two ends allow, never more than a few MiB in memory on
//! any side: within one host the agent copies it itself (`FileContent::CopyOf`, nothing
//! on the wire); from another agent (a pull to the controller's agent, or a copy between
//! two hosts) small files are read in one batch and written in the next, and a large one
//! goes page by page (`ReadFile` from the sender, `WriteChunk`s to the receiver's staging
//! file, checked against the SHA-256 of what passed); from the controller, a large file
//! that the receiver already holds another version of goes as a delta (its
//! `BlockSignatures`, the controller's `DeltaEncoder`, `WriteDelta`), else in chunks.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use sha2::{Digest as _, Sha256};
use turbo_proto::{CHUNK_BYTES, EnsureFile, FileContent, Op, OpResult, READ_BYTES_MAX};

use super::synchronize_route::Sender;
use super::{ModuleError, Next, Peer, Plan, TaskOutcome};

/// Content sent or read in one request.
pub(super) const BATCH_BYTES: u64 = 16 << 20;

/// Controller files up to this size go inline with the batch; larger ones are streamed
/// (and sent as a delta when the receiver has an older version).
pub(super) const INLINE_MAX: u64 = 1 << 20;

/// Ops per request, so that no single frame grows without bound.
const OPS_PER_BATCH: usize = 256;

/// Chunks of a whole upload per request.
const CHUNKS_PER_STEP: usize = 4;

/// Literal bytes per `WriteDelta`.
const DELTA_LITERAL_BYTES: usize = 2 << 20;

/// Upload ids of synchronize's staging files, apart from copy's.
static NEXT_UPLOAD: AtomicU64 = AtomicU64::new(1 << 48);

/// A file whose bytes are to come from the sender: `ensure` says where it goes and with
/// what mode and owner (its content is filled in as the bytes move).
#[derive(Debug, Clone)]
pub(super) struct Move {
    pub(super) from: String,
    pub(super) size: u64,
    pub(super) ensure: EnsureFile,
    /// The receiver holds a file there already (a delta may be cheaper).
    pub(super) basis: bool,
}

pub(super) enum Stage {
    /// Ops for the receiver, in one request.
    Receiver(Vec<Op>),
    /// Files to move.
    Moves(Vec<Move>),
}

/// What the task reports once every stage went (set up before the first).
pub(super) struct Carry {
    pub(super) sender: Sender,
    pub(super) receiver: Peer,
    /// The outcome to report when everything went; its `cmd` also for a failure.
    pub(super) outcome: TaskOutcome,
}

/// The stages one after another; the first refusal fails the task with the agent's words
/// (rsync's exit code 23: some files were not transferred).
pub(super) fn carry(mut stages: VecDeque<Stage>, carry: Carry) -> Plan {
    match stages.pop_front() {
        None => Plan::Done(carry.outcome),
        Some(Stage::Receiver(ops)) if ops.is_empty() => self::carry(stages, carry),
        Some(Stage::Receiver(ops)) => {
            let receiver = carry.receiver;
            Plan::Step(
                Op::Batch(ops),
                Next::new(move |reply| match refusal(reply) {
                    Some(message) => Ok(failed(&carry, message)),
                    None => Ok(self::carry(stages, carry)),
                })
                .on(receiver),
            )
        }
        Some(Stage::Moves(moves)) => {
            let mut moves: VecDeque<Move> = moves.into();
            match carry.sender {
                Sender::Agent(peer) if peer == carry.receiver => {
                    // Within one host: the agent copies, a batch of files at a time.
                    let batch: Vec<Op> = moves
                        .drain(..moves.len().min(OPS_PER_BATCH))
                        .map(|m| {
                            Op::EnsureFile(EnsureFile {
                                content: FileContent::CopyOf { path: m.from },
                                ..m.ensure
                            })
                        })
                        .collect();
                    if !moves.is_empty() {
                        stages.push_front(Stage::Moves(moves.into()));
                    }
                    stages.push_front(Stage::Receiver(batch));
                    self::carry(stages, carry)
                }
                Sender::Agent(peer) => relay(peer, moves, stages, carry),
                Sender::Controller => match moves.pop_front() {
                    Some(first) => {
                        if !moves.is_empty() {
                            stages.push_front(Stage::Moves(moves.into()));
                        }
                        upload(first, stages, carry)
                    }
                    None => self::carry(stages, carry),
                },
            }
        }
    }
}

fn failed(carry: &Carry, message: String) -> Plan {
    let mut outcome = TaskOutcome::failed(message);
    outcome.data.insert("rc".into(), json!(23));
    if let Some(cmd) = carry.outcome.data.get("cmd") {
        outcome.data.insert("cmd".into(), cmd.clone());
    }
    Plan::Done(outcome)
}

/// The agent's first refusal in a reply, if any.
fn refusal(reply: OpResult) -> Option<String> {
    let results = match reply {
        OpResult::Batch(results) => results,
        other => vec![other],
    };
    results.into_iter().find_map(|r| match r {
        OpResult::Error(e) => Some(e.message),
        _ => None,
    })
}

fn next_upload() -> u64 {
    NEXT_UPLOAD.fetch_add(1, Ordering::Relaxed)
}

/// Files from another agent: the small ones read in one request and written in the next,
/// then the first large one page by page.
fn relay(
    sender: Peer,
    mut moves: VecDeque<Move>,
    mut stages: VecDeque<Stage>,
    carry: Carry,
) -> Plan {
    let mut small = Vec::new();
    let mut bytes = 0;
    while let Some(m) = moves.front() {
        if m.size > READ_BYTES_MAX as u64 || bytes + m.size > BATCH_BYTES && !small.is_empty() {
            break;
        }
        bytes += m.size;
        small.extend(moves.pop_front());
    }
    if small.is_empty() {
        let Some(large) = moves.pop_front() else {
            return self::carry(stages, carry);
        };
        if !moves.is_empty() {
            stages.push_front(Stage::Moves(moves.into()));
        }
        let paging = Paging {
            sender,
            upload_id: next_upload(),
            hasher: Sha256::new(),
            offset: 0,
            file: large,
        };
        return paging.read(stages, carry);
    }
    if !moves.is_empty() {
        stages.push_front(Stage::Moves(moves.into()));
    }
    let reads: Vec<Op> = small
        .iter()
        .map(|m| Op::ReadFile {
            path: m.from.clone(),
            offset: 0,
            limit: None,
        })
        .collect();
    Plan::Step(
        Op::Batch(reads),
        Next::new(move |reply| {
            let results = match reply {
                OpResult::Batch(results) if results.len() == small.len() => results,
                other => {
                    return Ok(failed(
                        &carry,
                        refusal(other).unwrap_or_else(|| "synchronize: unexpected reply".into()),
                    ));
                }
            };
            let mut writes = Vec::with_capacity(small.len());
            for (m, result) in small.into_iter().zip(results) {
                match result {
                    OpResult::Read(read) if read.stat.exists && read.eof => {
                        writes.push(Op::EnsureFile(EnsureFile {
                            content: FileContent::Inline(read.data),
                            ..m.ensure
                        }));
                    }
                    OpResult::Read(_) => {
                        return Ok(failed(&carry, vanished(&m.from)));
                    }
                    other => {
                        return Ok(failed(
                            &carry,
                            refusal(other).unwrap_or_else(|| vanished(&m.from)),
                        ));
                    }
                }
            }
            stages.push_front(Stage::Receiver(writes));
            Ok(self::carry(stages, carry))
        })
        .on(sender),
    )
}

fn vanished(path: &str) -> String {
    format!("rsync: [sender] read errors mapping \"{path}\": No such file or directory (2)")
}

/// A large file read page by page from one agent into the other's staging file.
struct Paging {
    sender: Peer,
    upload_id: u64,
    hasher: Sha256,
    offset: u64,
    file: Move,
}

impl Paging {
    fn read(self, stages: VecDeque<Stage>, carry: Carry) -> Plan {
        let sender = self.sender;
        let op = Op::ReadFile {
            path: self.file.from.clone(),
            offset: self.offset,
            limit: Some(READ_BYTES_MAX as u64),
        };
        Plan::Step(
            op,
            Next::new(move |reply| {
                let read = match reply {
                    OpResult::Read(read) if read.stat.exists => read,
                    other => {
                        let message = refusal(other).unwrap_or_else(|| vanished(&self.file.from));
                        return Ok(failed(&carry, message));
                    }
                };
                // A page from another offset, or an empty one that is not the end, would
                // corrupt the copy or ask for ever.
                if read.offset != self.offset || (read.data.is_empty() && !read.eof) {
                    return Err(ModuleError::Invalid(format!(
                        "agent protocol error: asked for {} from byte {}, got {} bytes from byte {}",
                        self.file.from,
                        self.offset,
                        read.data.len(),
                        read.offset
                    )));
                }
                Ok(self.write(read.data, read.eof, stages, carry))
            })
            .on(sender),
        )
    }

    fn write(mut self, data: Vec<u8>, eof: bool, stages: VecDeque<Stage>, carry: Carry) -> Plan {
        self.hasher.update(&data);
        self.offset += data.len() as u64;
        let mut ops: Vec<Op> = data
            .chunks(CHUNK_BYTES)
            .map(|piece| Op::WriteChunk {
                upload_id: self.upload_id,
                data: piece.to_vec(),
            })
            .collect();
        drop(data);
        if eof {
            let sha256: [u8; 32] = self.hasher.clone().finalize().into();
            if ops.is_empty() && self.offset == 0 {
                // An empty file has nothing to stage.
                ops.push(Op::EnsureFile(EnsureFile {
                    content: FileContent::Inline(Vec::new()),
                    ..self.file.ensure.clone()
                }));
            } else {
                ops.push(Op::EnsureFile(EnsureFile {
                    content: FileContent::Staged {
                        upload_id: self.upload_id,
                        sha256,
                    },
                    ..self.file.ensure.clone()
                }));
            }
        }
        let receiver = carry.receiver;
        Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                if let Some(message) = refusal(reply) {
                    return Ok(failed(&carry, message));
                }
                if eof {
                    return Ok(self::carry(stages, carry));
                }
                Ok(self.read(stages, carry))
            })
            .on(receiver),
        )
    }
}

/// A large controller file: as a delta against the receiver's version when it has one,
/// else whole, in chunks read as they are sent.
fn upload(file: Move, stages: VecDeque<Stage>, carry: Carry) -> Plan {
    let (sha256, _) = match super::local_digest(std::path::Path::new(&file.from)) {
        Ok(digest) => digest,
        Err(e) => return failed(&carry, e.to_string()),
    };
    let upload = Upload {
        upload_id: next_upload(),
        sha256,
        file,
    };
    if !upload.file.basis || upload.file.size < INLINE_MAX {
        return upload.whole(0, stages, carry);
    }
    let receiver = carry.receiver;
    let asked = Op::BlockSignatures {
        path: upload.file.ensure.path.clone(),
        block_size: crate::delta::block_size_for(upload.file.size),
    };
    Plan::Step(
        asked,
        Next::new(move |reply| match reply {
            OpResult::Signatures(sigs) if sigs.exists && sigs.size > 0 => {
                let reader = match std::fs::File::open(&upload.file.from) {
                    Ok(file) => std::io::BufReader::new(file),
                    Err(e) => return Ok(failed(&carry, format!("{}: {e}", upload.file.from))),
                };
                let encoder = crate::delta::encoder(sigs, reader, DELTA_LITERAL_BYTES);
                Ok(upload.delta(encoder, stages, carry))
            }
            _ => Ok(upload.whole(0, stages, carry)),
        })
        .on(receiver),
    )
}

type Encoder =
    crate::delta::DeltaEncoder<turbo_proto::BlockSignatures, std::io::BufReader<std::fs::File>>;

struct Upload {
    upload_id: u64,
    sha256: [u8; 32],
    file: Move,
}

impl Upload {
    fn finish(&self) -> Op {
        Op::EnsureFile(EnsureFile {
            content: FileContent::Staged {
                upload_id: self.upload_id,
                sha256: self.sha256,
            },
            ..self.file.ensure.clone()
        })
    }

    fn delta(self, mut encoder: Encoder, stages: VecDeque<Stage>, carry: Carry) -> Plan {
        let op = match encoder.next_batch() {
            Ok(Some(instructions)) => Op::Batch(vec![Op::WriteDelta {
                upload_id: self.upload_id,
                basis: self.file.ensure.path.clone(),
                instructions,
            }]),
            Ok(None) => Op::Batch(vec![self.finish()]),
            Err(e) => return failed(&carry, format!("{}: {e}", self.file.from)),
        };
        let last = matches!(&op, Op::Batch(ops) if matches!(ops.first(), Some(Op::EnsureFile(_))));
        let receiver = carry.receiver;
        Plan::Step(
            op,
            Next::new(move |reply| {
                if let Some(message) = refusal(reply) {
                    return Ok(failed(&carry, message));
                }
                if last {
                    return Ok(self::carry(stages, carry));
                }
                Ok(self.delta(encoder, stages, carry))
            })
            .on(receiver),
        )
    }

    fn whole(self, offset: u64, stages: VecDeque<Stage>, carry: Carry) -> Plan {
        use std::io::{Read, Seek};
        let mut ops = Vec::with_capacity(CHUNKS_PER_STEP + 1);
        let read = (|| -> std::io::Result<(Vec<Op>, u64, bool)> {
            let mut file = std::fs::File::open(&self.file.from)?;
            file.seek(std::io::SeekFrom::Start(offset))?;
            let mut at = offset;
            let mut end = false;
            while ops.len() < CHUNKS_PER_STEP {
                let mut data = Vec::with_capacity(CHUNK_BYTES);
                (&mut file)
                    .take(CHUNK_BYTES as u64)
                    .read_to_end(&mut data)?;
                at += data.len() as u64;
                let short = data.len() < CHUNK_BYTES;
                if !data.is_empty() {
                    ops.push(Op::WriteChunk {
                        upload_id: self.upload_id,
                        data,
                    });
                }
                if short {
                    end = true;
                    break;
                }
            }
            Ok((std::mem::take(&mut ops), at, end))
        })();
        let (mut ops, at, end) = match read {
            Ok(read) => read,
            Err(e) => return failed(&carry, format!("{}: {e}", self.file.from)),
        };
        if end {
            ops.push(self.finish());
        }
        let receiver = carry.receiver;
        Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                if let Some(message) = refusal(reply) {
                    return Ok(failed(&carry, message));
                }
                if end {
                    return Ok(self::carry(stages, carry));
                }
                Ok(self.whole(at, stages, carry))
            })
            .on(receiver),
        )
    }
}
