//! Files from the controller to an agent, as flows with a few requests in flight, read
//! from disk as they are sent and hashed on the way: [`Uploads`] sends files whole, in
//! chunks; [`DeltaUpload`] sends a file the receiver holds another version of as the
//! controller's encoder describes it against the receiver's signatures.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read};

use sha2::{Digest as _, Sha256};
use turbo_proto::{BlockSignatures, CHUNK_BYTES, Op, OpResult};

use super::synchronize_transfer::{
    After, DELTA_LITERAL_BYTES, IN_FLIGHT, Move, next_upload, refusal,
};
use super::{Flow, FlowStep, ModuleError, Peer};

/// Chunks of a whole upload per request, as copy's uploads send them.
const CHUNKS_PER_REQUEST: usize = 2;

/// A local file as it is read, hashed and counted on the way.
struct Hashing {
    file: BufReader<File>,
    hasher: Sha256,
    size: u64,
}

impl Hashing {
    fn open(path: &str) -> Result<Hashing, String> {
        let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
        Ok(Hashing {
            file: BufReader::with_capacity(CHUNK_BYTES, file),
            hasher: Sha256::new(),
            size: 0,
        })
    }

    fn digest(&self) -> [u8; 32] {
        self.hasher.clone().finalize().into()
    }
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// Controller files to `receiver`, whole, one after another without a pause between.
pub(super) struct Uploads {
    receiver: Peer,
    todo: VecDeque<Move>,
    /// The file being read, and its staging file's id.
    reading: Option<(Move, Hashing, u64)>,
    out: usize,
    failure: Option<String>,
    after: Option<After>,
}

impl Uploads {
    pub(super) fn new(receiver: Peer, files: VecDeque<Move>, after: After) -> Uploads {
        Uploads {
            receiver,
            todo: files,
            reading: None,
            out: 0,
            failure: None,
            after: Some(after),
        }
    }

    /// The next request of chunks, the staged write after the last; `None` when every
    /// file went.
    fn next_request(&mut self) -> Result<Option<Op>, String> {
        if self.reading.is_none() {
            let Some(file) = self.todo.pop_front() else {
                return Ok(None);
            };
            let reader = Hashing::open(&file.from)?;
            self.reading = Some((file, reader, next_upload()));
        }
        let (file, reader, upload_id) = self.reading.as_mut().expect("a file being read");
        let mut ops = Vec::with_capacity(CHUNKS_PER_REQUEST + 1);
        let mut end = false;
        while ops.len() < CHUNKS_PER_REQUEST {
            let mut data = Vec::with_capacity(CHUNK_BYTES);
            reader
                .take(CHUNK_BYTES as u64)
                .read_to_end(&mut data)
                .map_err(|e| format!("{}: {e}", file.from))?;
            end = data.len() < CHUNK_BYTES;
            if !data.is_empty() {
                ops.push(Op::WriteChunk {
                    upload_id: *upload_id,
                    data,
                });
            }
            if end {
                break;
            }
        }
        if end {
            ops.push(file.staged(*upload_id, reader.size, reader.digest()));
            self.reading = None;
        }
        Ok(Some(Op::Batch(ops)))
    }
}

impl Flow for Uploads {
    fn next(&mut self) -> FlowStep {
        if let Some(message) = self.failure.take() {
            return FlowStep::Then(self.after.take().expect("ends once").fail(message));
        }
        if self.out < IN_FLIGHT {
            match self.next_request() {
                Ok(Some(op)) => {
                    self.out += 1;
                    return FlowStep::Send(self.receiver, op);
                }
                Ok(None) if self.out == 0 => {
                    return FlowStep::Then(self.after.take().expect("ends once").go());
                }
                Ok(None) => {}
                Err(message) => {
                    return FlowStep::Then(self.after.take().expect("ends once").fail(message));
                }
            }
        }
        FlowStep::Wait
    }

    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        self.out -= 1;
        if let Some(message) = refusal(reply) {
            self.failure.get_or_insert(message);
        }
        Ok(())
    }
}

type Encoder = crate::delta::DeltaEncoder<BlockSignatures, Hashing>;

/// A controller file the receiver has another version of, as a delta against the
/// receiver's signatures, then the staged write checked against the file's digest.
pub(super) struct DeltaUpload {
    receiver: Peer,
    file: Move,
    upload_id: u64,
    signatures: Option<BlockSignatures>,
    encoder: Option<Encoder>,
    finished: bool,
    out: usize,
    failure: Option<String>,
    after: Option<After>,
}

impl DeltaUpload {
    pub(super) fn new(
        receiver: Peer,
        file: Move,
        signatures: BlockSignatures,
        after: After,
    ) -> DeltaUpload {
        DeltaUpload {
            receiver,
            file,
            upload_id: next_upload(),
            signatures: Some(signatures),
            encoder: None,
            finished: false,
            out: 0,
            failure: None,
            after: Some(after),
        }
    }

    /// The next `WriteDelta`, with the staged write after the last batch.
    fn next_request(&mut self) -> Result<Op, String> {
        if let Some(signatures) = self.signatures.take() {
            let reader = Hashing::open(&self.file.from)?;
            self.encoder = Some(crate::delta::encoder(
                signatures,
                reader,
                DELTA_LITERAL_BYTES,
            ));
        }
        let encoder = self.encoder.as_mut().expect("opened above");
        let instructions = encoder
            .next_batch()
            .map_err(|e| format!("{}: {e}", self.file.from))?
            .unwrap_or_default();
        let mut ops = Vec::with_capacity(2);
        if !instructions.is_empty() {
            ops.push(Op::WriteDelta {
                upload_id: self.upload_id,
                basis: self.file.ensure.path.clone(),
                instructions,
            });
        }
        if encoder.finished() {
            let reader = self.encoder.take().expect("the encoder").into_reader();
            ops.push(
                self.file
                    .staged(self.upload_id, reader.size, reader.digest()),
            );
            self.finished = true;
        }
        Ok(Op::Batch(ops))
    }
}

impl Flow for DeltaUpload {
    fn next(&mut self) -> FlowStep {
        if let Some(message) = self.failure.take() {
            return FlowStep::Then(self.after.take().expect("ends once").fail(message));
        }
        if !self.finished && self.out < IN_FLIGHT {
            return match self.next_request() {
                Ok(op) => {
                    self.out += 1;
                    FlowStep::Send(self.receiver, op)
                }
                Err(message) => FlowStep::Then(self.after.take().expect("ends once").fail(message)),
            };
        }
        if self.out == 0 {
            return FlowStep::Then(self.after.take().expect("ends once").go());
        }
        FlowStep::Wait
    }

    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        self.out -= 1;
        if let Some(message) = refusal(reply) {
            self.failure.get_or_insert(message);
        }
        Ok(())
    }
}
