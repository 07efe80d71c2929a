//! Carrying synchronize's changes out, stage by stage, each to the agent that must do it:
//! the receiver's directories, links and small files (one batch per 16 MiB), then the
//! files whose bytes come from elsewhere, then deletions and times.
//!
//! A file's bytes move as its two ends allow, never more than a few MiB in memory on
//! any side: within one host the agent copies it itself (`FileContent::CopyOf`, nothing
//! on the wire). Between two agents (a pull to the controller's agent, a copy between
//! two hosts) and from the controller, the bytes go as a flow, requests in flight on both
//! ends at once (`synchronize_relay.rs`, `synchronize_upload.rs`): a large file the
//! receiver holds another version of goes as a delta (the receiver's `BlockSignatures`,
//! encoded by the sender: the controller's encoder, or the sending agent's
//! `EncodeDelta`), any other whole.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use turbo_proto::{BlockSignatures, EnsureFile, FileContent, Op, OpResult};

use super::synchronize_relay::{DeltaRelay, Relay};
use super::synchronize_route::Sender;
use super::synchronize_upload::{DeltaUpload, Uploads};
use super::{Next, Peer, Plan, TaskOutcome};

/// Content sent or read in one request.
pub(super) const BATCH_BYTES: u64 = 16 << 20;

/// Controller files up to this size go inline with the batch; larger ones are streamed.
/// From this size on, a file the receiver holds another version of goes as a delta.
pub(super) const INLINE_MAX: u64 = 1 << 20;

/// Ops per request, so that no single frame grows without bound.
pub(super) const OPS_PER_BATCH: usize = 256;

/// Requests a flow keeps in flight on each end: the agent works on one while the next
/// crosses the wire, as copy's uploads do.
pub(super) const IN_FLIGHT: usize = 3;

/// Literal bytes per `WriteDelta`.
pub(super) const DELTA_LITERAL_BYTES: usize = 2 << 20;

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

impl Move {
    /// Worth a delta: large, and the receiver has a version to rebuild it from.
    fn deltas(&self) -> bool {
        self.basis && self.size >= INLINE_MAX
    }

    /// The receiver's write of the file from its staged bytes (an empty file has none).
    pub(super) fn staged(&self, upload_id: u64, size: u64, sha256: [u8; 32]) -> Op {
        let content = if size == 0 {
            FileContent::Inline(Vec::new())
        } else {
            FileContent::Staged { upload_id, sha256 }
        };
        Op::EnsureFile(EnsureFile {
            content,
            ..self.ensure.clone()
        })
    }
}

pub(super) enum Stage {
    /// Ops for the receiver, in one request.
    Receiver(Vec<Op>),
    /// Files to move.
    Moves(Vec<Move>),
    /// Large files the receiver has another version of, one delta after another.
    Deltas(VecDeque<Move>),
}

/// What the task reports once every stage went (set up before the first).
pub(super) struct Carry {
    pub(super) sender: Sender,
    pub(super) receiver: Peer,
    /// The outcome to report when everything went; its `cmd` also for a failure.
    pub(super) outcome: TaskOutcome,
}

/// The stages still to go after the one running now, for a flow to go on with.
pub(super) struct After {
    stages: VecDeque<Stage>,
    carry: Carry,
}

impl After {
    pub(super) fn new(stages: VecDeque<Stage>, carry: Carry) -> After {
        After { stages, carry }
    }

    pub(super) fn go(self) -> Plan {
        carry(self.stages, self.carry)
    }

    pub(super) fn fail(self, message: String) -> Plan {
        failed(&self.carry, message)
    }
}

/// The stages one after another; the first refusal fails the task with the agent's words
/// (rsync's exit code 23: some files were not transferred).
pub(super) fn carry(mut stages: VecDeque<Stage>, carry: Carry) -> Plan {
    let receiver = carry.receiver;
    match stages.pop_front() {
        None => Plan::Done(carry.outcome),
        Some(Stage::Receiver(ops)) if ops.is_empty() => self::carry(stages, carry),
        Some(Stage::Receiver(ops)) => Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| match refusal(reply) {
                Some(message) => Ok(failed(&carry, message)),
                None => Ok(self::carry(stages, carry)),
            })
            .on(receiver),
        ),
        Some(Stage::Moves(moves)) => match carry.sender {
            Sender::Agent(peer) if peer == receiver => {
                // Within one host: the agent copies, a batch of files at a time.
                let mut moves: VecDeque<Move> = moves.into();
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
            sender => {
                let (deltas, whole): (VecDeque<Move>, VecDeque<Move>) =
                    moves.into_iter().partition(Move::deltas);
                if !deltas.is_empty() {
                    stages.push_front(Stage::Deltas(deltas));
                }
                if whole.is_empty() {
                    return self::carry(stages, carry);
                }
                let after = After::new(stages, carry);
                match sender {
                    Sender::Agent(peer) => {
                        Plan::Flow(Box::new(Relay::new(peer, receiver, whole, after)))
                    }
                    Sender::Controller => {
                        Plan::Flow(Box::new(Uploads::new(receiver, whole, after)))
                    }
                }
            }
        },
        Some(Stage::Deltas(mut files)) => {
            let Some(file) = files.pop_front() else {
                return self::carry(stages, carry);
            };
            if !files.is_empty() {
                stages.push_front(Stage::Deltas(files));
            }
            delta(file, After::new(stages, carry))
        }
    }
}

/// One large file the receiver has another version of: its signatures, then the delta
/// the sender encodes against them (whole when the receiver's file turned out gone).
fn delta(file: Move, after: After) -> Plan {
    let receiver = after.carry.receiver;
    let asked = Op::BlockSignatures {
        path: file.ensure.path.clone(),
        block_size: crate::delta::block_size_for(file.size),
    };
    Plan::Step(
        asked,
        Next::new(move |reply| {
            let sigs: Option<BlockSignatures> = match reply {
                OpResult::Signatures(sigs) if sigs.exists && sigs.size > 0 => Some(sigs),
                _ => None,
            };
            let sender = after.carry.sender;
            let flow: Box<dyn super::Flow> = match (sender, sigs) {
                (Sender::Agent(peer), Some(sigs)) => {
                    Box::new(DeltaRelay::new(peer, receiver, file, sigs, after))
                }
                (Sender::Controller, Some(sigs)) => {
                    Box::new(DeltaUpload::new(receiver, file, sigs, after))
                }
                (Sender::Agent(peer), None) => {
                    Box::new(Relay::new(peer, receiver, VecDeque::from([file]), after))
                }
                (Sender::Controller, None) => {
                    Box::new(Uploads::new(receiver, VecDeque::from([file]), after))
                }
            };
            Ok(Plan::Flow(flow))
        })
        .on(receiver),
    )
}

pub(super) fn failed(carry: &Carry, message: String) -> Plan {
    let mut outcome = TaskOutcome::failed(message);
    outcome.data.insert("rc".into(), json!(23));
    if let Some(cmd) = carry.outcome.data.get("cmd") {
        outcome.data.insert("cmd".into(), cmd.clone());
    }
    Plan::Done(outcome)
}

/// The agent's first refusal in a reply, if any.
pub(super) fn refusal(reply: OpResult) -> Option<String> {
    let results = match reply {
        OpResult::Batch(results) => results,
        other => vec![other],
    };
    results.into_iter().find_map(|r| match r {
        OpResult::Error(e) => Some(e.message),
        _ => None,
    })
}

pub(super) fn next_upload() -> u64 {
    NEXT_UPLOAD.fetch_add(1, Ordering::Relaxed)
}

/// What rsync says of a file that went away while it was being sent.
pub(super) fn vanished(path: &str) -> String {
    format!("rsync: [sender] read errors mapping \"{path}\": No such file or directory (2)")
}

#[cfg(test)]
#[path = "synchronize_flow_tests.rs"]
mod flow_tests;
