//! Files from one agent to another, through the controller (a pull to the controller's
//! own agent, a copy between two hosts), as flows: the sender's reads and the receiver's
//! writes in flight at once, a few on each end, so neither agent nor link waits for the
//! other. The controller holds at most [`HELD_MAX`] pages of content at a time.
//!
//! [`Relay`] moves files whole: small ones read a batch at a time, a large one page by
//! page into the receiver's staging file, checked against the SHA-256 of what passed.
//! [`DeltaRelay`] moves a large file the receiver has another version of: the sender's
//! agent encodes it against the receiver's signatures (`EncodeDelta`), and only the
//! changed parts cross the wire.

use std::collections::VecDeque;

use sha2::{Digest as _, Sha256};
use turbo_proto::{
    BlockSignatures, CHUNK_BYTES, DeltaEnd, DeltaSource, EncodeDelta, EnsureFile, FileContent,
    FileRead, Op, OpResult,
};

use super::synchronize_transfer::{
    After, DELTA_LITERAL_BYTES, IN_FLIGHT, Move, OPS_PER_BATCH, next_upload, refusal, vanished,
};
use super::{Flow, FlowStep, ModuleError, Peer};

/// Bytes read from the sender per request: a page of a large file, or a batch of small
/// files (each at most a page).
pub(super) const PAGE_BYTES: u64 = 4 << 20;

/// Pages the controller holds at once: read requests in flight, writes waiting to go and
/// writes in flight.
const HELD_MAX: usize = 6;

/// What a request in flight was, in the order they went.
enum Sent {
    /// Small files, read whole in one batch.
    Reads(Vec<Move>),
    /// A page of the file being paged.
    Page,
    /// Ops for the receiver.
    Write,
}

/// Files from `sender` to `receiver`, whole.
pub(super) struct Relay {
    sender: Peer,
    receiver: Peer,
    todo: VecDeque<Move>,
    paging: Option<Paging>,
    sent: VecDeque<Sent>,
    writes: VecDeque<Op>,
    reads_out: usize,
    writes_out: usize,
    failure: Option<String>,
    after: Option<After>,
}

/// A large file read page by page into the receiver's staging file.
struct Paging {
    file: Move,
    upload_id: u64,
    hasher: Sha256,
    /// The offset of the next page to ask for.
    asked: u64,
    /// The offset the next page answered must start at.
    received: u64,
    pages_out: usize,
    /// The end was read; pages asked past it are answered and dropped.
    eof: bool,
}

impl Relay {
    pub(super) fn new(sender: Peer, receiver: Peer, files: VecDeque<Move>, after: After) -> Relay {
        Relay {
            sender,
            receiver,
            todo: files,
            paging: None,
            sent: VecDeque::new(),
            writes: VecDeque::new(),
            reads_out: 0,
            writes_out: 0,
            failure: None,
            after: Some(after),
        }
    }

    /// The next read to send, if there is one to start now.
    fn next_read(&mut self) -> Option<Op> {
        if let Some(paging) = &mut self.paging {
            // Past the listed size only when the file grew: one page at a time then.
            if paging.eof || (paging.asked >= paging.file.size && paging.pages_out > 0) {
                return None;
            }
            let op = Op::ReadFile {
                path: paging.file.from.clone(),
                offset: paging.asked,
                limit: Some(PAGE_BYTES),
            };
            paging.asked += PAGE_BYTES;
            paging.pages_out += 1;
            self.sent.push_back(Sent::Page);
            return Some(op);
        }
        if self.todo.front()?.size > PAGE_BYTES {
            let file = self.todo.pop_front().expect("a file");
            self.paging = Some(Paging {
                file,
                upload_id: next_upload(),
                hasher: Sha256::new(),
                asked: 0,
                received: 0,
                pages_out: 0,
                eof: false,
            });
            return self.next_read();
        }
        let mut batch = Vec::new();
        let mut bytes = 0;
        while let Some(file) = self.todo.front() {
            let fits = bytes + file.size <= PAGE_BYTES || batch.is_empty();
            if file.size > PAGE_BYTES || !fits || batch.len() == OPS_PER_BATCH {
                break;
            }
            bytes += file.size;
            batch.extend(self.todo.pop_front());
        }
        let reads = batch
            .iter()
            .map(|m| Op::ReadFile {
                path: m.from.clone(),
                offset: 0,
                limit: None,
            })
            .collect();
        self.sent.push_back(Sent::Reads(batch));
        Some(Op::Batch(reads))
    }

    /// Small files read: their writes, each with its content inline.
    fn read_whole(&mut self, files: Vec<Move>, reply: OpResult) {
        let results = match reply {
            OpResult::Batch(results) if results.len() == files.len() => results,
            other => {
                self.failure =
                    Some(refusal(other).unwrap_or_else(|| "synchronize: unexpected reply".into()));
                return;
            }
        };
        let mut writes = Vec::with_capacity(files.len());
        for (file, result) in files.into_iter().zip(results) {
            match result {
                OpResult::Read(read) if read.stat.exists && read.eof => {
                    writes.push(Op::EnsureFile(EnsureFile {
                        content: FileContent::Inline(read.data),
                        ..file.ensure
                    }));
                }
                other => {
                    self.failure = Some(refusal(other).unwrap_or_else(|| vanished(&file.from)));
                    return;
                }
            }
        }
        self.writes.push_back(Op::Batch(writes));
    }

    /// A page of the file being paged: its chunks for the staging file, and at the end
    /// the write that checks them.
    fn page(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        let paging = self
            .paging
            .as_mut()
            .expect("a page answers the file being paged");
        paging.pages_out -= 1;
        if paging.eof {
            if paging.pages_out == 0 {
                self.paging = None;
            }
            return Ok(());
        }
        let read: FileRead = match reply {
            OpResult::Read(read) if read.stat.exists => read,
            other => {
                self.failure = Some(refusal(other).unwrap_or_else(|| vanished(&paging.file.from)));
                return Ok(());
            }
        };
        // A page from another offset, or a short one that is not the end, would corrupt
        // the copy or ask for ever.
        let short = (read.data.len() as u64) < PAGE_BYTES;
        if read.offset != paging.received || (short && !read.eof) {
            return Err(ModuleError::Invalid(format!(
                "agent protocol error: asked for {} from byte {}, got {} bytes from byte {}",
                paging.file.from,
                paging.received,
                read.data.len(),
                read.offset
            )));
        }
        paging.hasher.update(&read.data);
        paging.received += read.data.len() as u64;
        let mut ops: Vec<Op> = read
            .data
            .chunks(CHUNK_BYTES)
            .map(|piece| Op::WriteChunk {
                upload_id: paging.upload_id,
                data: piece.to_vec(),
            })
            .collect();
        if read.eof {
            paging.eof = true;
            let sha256: [u8; 32] = paging.hasher.clone().finalize().into();
            ops.push(
                paging
                    .file
                    .staged(paging.upload_id, paging.received, sha256),
            );
            if paging.pages_out == 0 {
                self.paging = None;
            }
        }
        self.writes.push_back(Op::Batch(ops));
        Ok(())
    }
}

impl Flow for Relay {
    fn next(&mut self) -> FlowStep {
        if let Some(message) = self.failure.take() {
            return FlowStep::Then(self.after.take().expect("ends once").fail(message));
        }
        // Writes first: they free what the controller holds.
        if self.writes_out < IN_FLIGHT
            && let Some(op) = self.writes.pop_front()
        {
            self.writes_out += 1;
            self.sent.push_back(Sent::Write);
            return FlowStep::Send(self.receiver, op);
        }
        let held = self.reads_out + self.writes.len() + self.writes_out;
        if self.reads_out < IN_FLIGHT
            && held < HELD_MAX
            && let Some(op) = self.next_read()
        {
            self.reads_out += 1;
            return FlowStep::Send(self.sender, op);
        }
        if self.sent.is_empty() {
            return FlowStep::Then(self.after.take().expect("ends once").go());
        }
        FlowStep::Wait
    }

    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        match self.sent.pop_front() {
            Some(Sent::Write) => {
                self.writes_out -= 1;
                if let Some(message) = refusal(reply) {
                    self.failure.get_or_insert(message);
                }
            }
            Some(Sent::Reads(files)) => {
                self.reads_out -= 1;
                self.read_whole(files, reply);
            }
            Some(Sent::Page) => {
                self.reads_out -= 1;
                self.page(reply)?;
            }
            None => return Err(unasked()),
        }
        Ok(())
    }
}

fn unasked() -> ModuleError {
    ModuleError::Invalid("agent protocol error: a reply to nothing in flight".into())
}

/// What a [`DeltaRelay`] request in flight was.
enum DeltaSent {
    Encode,
    Write,
}

/// A large file the receiver holds another version of, as the sender's agent encodes it
/// against the receiver's signatures: `EncodeDelta` batches from the sender become
/// `WriteDelta`s into the receiver's staging file, and the last batch's digest checks it.
pub(super) struct DeltaRelay {
    sender: Peer,
    receiver: Peer,
    file: Move,
    delta_id: u64,
    upload_id: u64,
    /// Sent with the first request.
    signatures: Option<BlockSignatures>,
    sent: VecDeque<DeltaSent>,
    encodes_out: usize,
    writes_out: usize,
    writes: VecDeque<Op>,
    end: Option<DeltaEnd>,
    failure: Option<String>,
    after: Option<After>,
}

impl DeltaRelay {
    pub(super) fn new(
        sender: Peer,
        receiver: Peer,
        file: Move,
        signatures: BlockSignatures,
        after: After,
    ) -> DeltaRelay {
        let id = next_upload();
        DeltaRelay {
            sender,
            receiver,
            file,
            delta_id: id,
            upload_id: id,
            signatures: Some(signatures),
            sent: VecDeque::new(),
            encodes_out: 0,
            writes_out: 0,
            writes: VecDeque::new(),
            end: None,
            failure: None,
            after: Some(after),
        }
    }

    fn batch(&mut self, reply: OpResult) {
        let batch = match reply {
            OpResult::Delta(batch) => batch,
            other => {
                self.failure = Some(refusal(other).unwrap_or_else(|| vanished(&self.file.from)));
                return;
            }
        };
        if !batch.instructions.is_empty() {
            self.writes.push_back(Op::WriteDelta {
                upload_id: self.upload_id,
                basis: self.file.ensure.path.clone(),
                instructions: batch.instructions,
            });
        }
        if let Some(end) = batch.end {
            self.end = Some(end);
            self.writes
                .push_back(self.file.staged(self.upload_id, end.size, end.sha256));
        }
    }
}

impl Flow for DeltaRelay {
    fn next(&mut self) -> FlowStep {
        if let Some(message) = self.failure.take() {
            return FlowStep::Then(self.after.take().expect("ends once").fail(message));
        }
        if self.writes_out < IN_FLIGHT
            && let Some(op) = self.writes.pop_front()
        {
            self.writes_out += 1;
            self.sent.push_back(DeltaSent::Write);
            return FlowStep::Send(self.receiver, op);
        }
        let held = self.encodes_out + self.writes.len() + self.writes_out;
        if self.end.is_none() && self.encodes_out < IN_FLIGHT && held < HELD_MAX {
            let start = self.signatures.take().map(|signatures| DeltaSource {
                path: self.file.from.clone(),
                signatures,
            });
            self.encodes_out += 1;
            self.sent.push_back(DeltaSent::Encode);
            return FlowStep::Send(
                self.sender,
                Op::EncodeDelta(EncodeDelta {
                    delta_id: self.delta_id,
                    start,
                    literal_cap: DELTA_LITERAL_BYTES as u32,
                }),
            );
        }
        if self.sent.is_empty() {
            return FlowStep::Then(self.after.take().expect("ends once").go());
        }
        FlowStep::Wait
    }

    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        match self.sent.pop_front() {
            Some(DeltaSent::Write) => {
                self.writes_out -= 1;
                if let Some(message) = refusal(reply) {
                    self.failure.get_or_insert(message);
                }
            }
            // Requests sent before the end was seen answer it again.
            Some(DeltaSent::Encode) if self.end.is_some() => self.encodes_out -= 1,
            Some(DeltaSent::Encode) => {
                self.encodes_out -= 1;
                self.batch(reply);
            }
            None => return Err(unasked()),
        }
        Ok(())
    }
}
