//! The sending half of a delta between two agents (`Op::EncodeDelta`): a file of this host
//! described against the signatures the receiving agent made of its own version, with the
//! matching the controller runs on what it pushes (`turbo_proto::delta`), one batch per
//! request. An encoding stays open between requests, so the file is read once and hashed
//! as it is read; its last batch carries the size and SHA-256 the receiver's staged file
//! is checked against. An encoding that ended answers its end again, so the controller can
//! keep requests in flight without knowing which batch will be the last.

use std::fs::File;
use std::io::{self, Read};

use turbo_proto::delta::DeltaEncoder;
use turbo_proto::{
    BlockSignatures, DELTA_BLOCK_MAX, DELTA_BLOCK_MIN, DELTA_BLOCKS_MAX, DeltaBatch, DeltaEnd,
    DeltaSource, EncodeDelta, ErrorKind, OpError, OpResult, READ_BYTES_MAX,
};

use super::{Agent, io_error, op_error};
use crate::sha256::Sha256;

/// Encodings kept open at once: one a transfer uses, and a few a failed task left behind
/// (the oldest is dropped; nothing but memory is held).
const OPEN_MAX: usize = 8;

/// Ended encodings remembered for the requests that were already on their way.
const ENDED_MAX: usize = 16;

/// The agent's encodings, by the controller's id, oldest first.
#[derive(Default)]
pub struct Encodings {
    open: Vec<(u64, Box<Encoder>)>,
    ended: Vec<(u64, DeltaEnd)>,
}

type Encoder = DeltaEncoder<BlockSignatures, Hashing>;

/// The file as the encoder reads it, hashed and counted on the way.
pub struct Hashing {
    file: File,
    hasher: Sha256,
    size: u64,
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// The strong digest both ends compute: the first 16 bytes of the block's SHA-256.
pub fn strong(block: &[u8]) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(block);
    let full = h.finish();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

pub fn encode_delta(agent: &mut Agent, request: EncodeDelta) -> Result<OpResult, OpError> {
    let EncodeDelta {
        delta_id,
        start,
        literal_cap,
    } = request;
    let cap = (literal_cap as usize).clamp(1, READ_BYTES_MAX);
    if let Some(start) = start {
        let encoder = open(agent, start, cap)?;
        let encodings = &mut agent.encodings;
        encodings.open.retain(|(id, _)| *id != delta_id);
        encodings.ended.retain(|(id, _)| *id != delta_id);
        if encodings.open.len() >= OPEN_MAX {
            encodings.open.remove(0);
        }
        encodings.open.push((delta_id, Box::new(encoder)));
    }
    agent.encodings.next(delta_id, cap)
}

fn open(agent: &Agent, start: DeltaSource, cap: usize) -> Result<Encoder, OpError> {
    let DeltaSource { path, signatures } = start;
    let block = signatures.block_size;
    if !(DELTA_BLOCK_MIN..=DELTA_BLOCK_MAX).contains(&block) {
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!("block size {block} is outside {DELTA_BLOCK_MIN}..={DELTA_BLOCK_MAX}"),
        ));
    }
    let blocks = signatures.size.div_ceil(block as u64);
    if signatures.exists && (blocks > DELTA_BLOCKS_MAX || blocks != signatures.blocks.len() as u64)
    {
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!(
                "{} signatures do not describe {} bytes in blocks of {block}",
                signatures.blocks.len(),
                signatures.size
            ),
        ));
    }
    let path = agent.expand(&path);
    let file = File::open(&path).map_err(|e| io_error(e, &path))?;
    let meta = file.metadata().map_err(|e| io_error(e, &path))?;
    if !meta.is_file() {
        return Err(op_error(
            ErrorKind::InvalidArgument,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let reader = Hashing {
        file,
        hasher: Sha256::new(),
        size: 0,
    };
    Ok(DeltaEncoder::new(signatures, reader, cap, strong))
}

impl Encodings {
    fn next(&mut self, delta_id: u64, cap: usize) -> Result<OpResult, OpError> {
        if let Some((_, end)) = self.ended.iter().find(|(id, _)| *id == delta_id) {
            return Ok(OpResult::Delta(DeltaBatch {
                instructions: Vec::new(),
                end: Some(*end),
            }));
        }
        let Some(at) = self.open.iter().position(|(id, _)| *id == delta_id) else {
            return Err(op_error(
                ErrorKind::Protocol,
                format!("delta {delta_id} is not open: its first request names the file"),
            ));
        };
        let encoder = &mut self.open[at].1;
        encoder.set_literal_cap(cap);
        let instructions = match encoder.next_batch() {
            Ok(batch) => batch.unwrap_or_default(),
            Err(e) => {
                self.open.remove(at);
                return Err(op_error(
                    ErrorKind::Io,
                    format!("reading for delta {delta_id}: {e}"),
                ));
            }
        };
        if !encoder.finished() {
            return Ok(OpResult::Delta(DeltaBatch {
                instructions,
                end: None,
            }));
        }
        let (_, encoder) = self.open.remove(at);
        let read = encoder.into_reader();
        let end = DeltaEnd {
            size: read.size,
            sha256: read.hasher.finish(),
        };
        if self.ended.len() >= ENDED_MAX {
            self.ended.remove(0);
        }
        self.ended.push((delta_id, end));
        Ok(OpResult::Delta(DeltaBatch {
            instructions,
            end: Some(end),
        }))
    }
}

#[cfg(test)]
mod tests {
    use sha2::Digest;
    use turbo_proto::DeltaInstruction;

    use super::super::testutil::{TempDir, agent};
    use super::*;

    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    fn request(delta_id: u64, start: Option<DeltaSource>, cap: u32) -> EncodeDelta {
        EncodeDelta {
            delta_id,
            start,
            literal_cap: cap,
        }
    }

    fn batch(result: Result<OpResult, OpError>) -> DeltaBatch {
        match result {
            Ok(OpResult::Delta(batch)) => batch,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_strong_digest_is_the_controllers() {
        let block = noise(5000, 3);
        assert_eq!(strong(&block)[..], sha2::Sha256::digest(&block)[..16]);
    }

    #[test]
    fn batches_rebuild_the_file_and_the_last_carries_its_digest() {
        let dir = TempDir::new();
        let mut agent = agent(dir.path());
        let old = noise(64 << 10, 1);
        let mut new = old.clone();
        new[10_000..30_000].copy_from_slice(&noise(20_000, 2));
        std::fs::write(dir.join("new"), &new).unwrap();
        let sigs = turbo_proto::delta::signatures(&old, 1024, strong);
        let start = DeltaSource {
            path: dir.str("new"),
            signatures: sigs,
        };
        let mut all: Vec<DeltaInstruction> = Vec::new();
        let mut got = batch(encode_delta(&mut agent, request(5, Some(start), 8 << 10)));
        let mut requests = 1;
        while got.end.is_none() {
            all.append(&mut got.instructions);
            got = batch(encode_delta(&mut agent, request(5, None, 8 << 10)));
            requests += 1;
        }
        all.append(&mut got.instructions);
        assert!(
            requests > 2,
            "{requests} requests for 20 KB of literals in 8 KiB batches"
        );
        assert_eq!(turbo_proto::delta::apply(&old, &all).unwrap(), new);
        let end = got.end.unwrap();
        assert_eq!(end.size, new.len() as u64);
        assert_eq!(end.sha256[..], sha2::Sha256::digest(&new)[..]);
        // Literal bytes: the changed 20,000 and what is left of the blocks they touch.
        let literal = turbo_proto::delta::literal_bytes(&all);
        assert!((20_000..=22_528).contains(&literal), "{literal}");
        // A request sent before the end was seen answers the end again.
        let again = batch(encode_delta(&mut agent, request(5, None, 8 << 10)));
        assert_eq!((again.instructions.len(), again.end), (0, Some(end)));
    }

    #[test]
    fn an_unknown_encoding_a_missing_file_and_bad_signatures_are_refused() {
        let dir = TempDir::new();
        let mut agent = agent(dir.path());
        assert!(encode_delta(&mut agent, request(1, None, 100)).is_err());
        let sigs = turbo_proto::delta::signatures(b"abc", 1024, strong);
        let missing = DeltaSource {
            path: dir.str("missing"),
            signatures: sigs.clone(),
        };
        let refused = encode_delta(&mut agent, request(2, Some(missing), 100)).unwrap_err();
        assert_eq!(refused.kind, ErrorKind::NotFound);
        std::fs::write(dir.join("f"), b"abcd").unwrap();
        let mut short = sigs;
        short.blocks.clear();
        let bad = DeltaSource {
            path: dir.str("f"),
            signatures: short,
        };
        assert!(encode_delta(&mut agent, request(3, Some(bad), 100)).is_err());
    }

    #[test]
    fn an_empty_file_ends_at_once() {
        let dir = TempDir::new();
        let mut agent = agent(dir.path());
        std::fs::write(dir.join("empty"), b"").unwrap();
        let start = DeltaSource {
            path: dir.str("empty"),
            signatures: turbo_proto::delta::signatures(b"old", 1024, strong),
        };
        let got = batch(encode_delta(&mut agent, request(4, Some(start), 100)));
        assert!(got.instructions.is_empty());
        assert_eq!(got.end.unwrap().size, 0);
    }
}
