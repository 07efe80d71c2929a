//! Delta transfer, the matching both sides share: given the signatures one end made of
//! its old file (a weak rolling checksum and a strong digest per block), find the blocks
//! of the new file that end already has and describe the new file as ranges of the old
//! one plus literal bytes. The controller encodes what it pushes; an agent encodes what
//! it sends another agent (a pull, a copy between two hosts). The strong digest is the
//! first 16 bytes of SHA-256, which each side computes with its own code ([`Strong`]):
//! this crate stays free of a hashing crate.
//!
//! The encoder reads the new file as a stream and holds at most one batch of literal bytes
//! and a block or two of look-ahead, whatever the file's size.

use std::collections::HashMap;
use std::io::{self, Read};

use crate::rolling::{self, Rolling};
use crate::{
    BlockSignature, BlockSignatures, DELTA_BLOCK_MAX, DELTA_BLOCK_MIN, DELTA_BLOCKS_MAX,
    DeltaInstruction,
};

/// The strong digest of a block: the first 16 bytes of its SHA-256.
pub type Strong = fn(&[u8]) -> [u8; 16];

/// The block size for a file of `size` bytes: about 2,048 blocks (so the signatures stay
/// tens of KiB), a power of two between the protocol's bounds.
pub fn block_size_for(size: u64) -> u32 {
    let wanted = (size / 2048).max(1).next_power_of_two();
    let mut block = wanted.clamp(DELTA_BLOCK_MIN as u64, DELTA_BLOCK_MAX as u64);
    while size.div_ceil(block) > DELTA_BLOCKS_MAX && block < DELTA_BLOCK_MAX as u64 {
        block *= 2;
    }
    block as u32
}

/// The signature of one block.
pub fn signature(block: &[u8], strong: Strong) -> BlockSignature {
    BlockSignature {
        weak: rolling::weak(block),
        strong: strong(block),
    }
}

/// The signatures of `data`, as an agent makes them of a file.
pub fn signatures(data: &[u8], block_size: u32, strong: Strong) -> BlockSignatures {
    BlockSignatures {
        exists: true,
        size: data.len() as u64,
        block_size,
        blocks: data
            .chunks(block_size as usize)
            .map(|b| signature(b, strong))
            .collect(),
    }
}

/// Rebuilds a file from its old bytes and a delta, as the receiving agent does.
pub fn apply(basis: &[u8], instructions: &[DeltaInstruction]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for i in instructions {
        match i {
            DeltaInstruction::Copy { offset, len } => {
                let start = usize::try_from(*offset).ok()?;
                let end = start.checked_add(usize::try_from(*len).ok()?)?;
                out.extend_from_slice(basis.get(start..end)?);
            }
            DeltaInstruction::Literal(bytes) => out.extend_from_slice(bytes),
        }
    }
    Some(out)
}

/// The whole delta of `data` against `sigs` (for tests and small inputs).
pub fn delta(
    sigs: &BlockSignatures,
    data: &[u8],
    literal_cap: usize,
    strong: Strong,
) -> Vec<DeltaInstruction> {
    let mut encoder = DeltaEncoder::new(sigs, data, literal_cap, strong);
    let mut all = Vec::new();
    while let Some(batch) = encoder.next_batch().expect("reading a slice") {
        all.extend(batch);
    }
    all
}

/// Bytes of content a delta carries (literals), and the bytes it leaves to the target.
pub fn literal_bytes(instructions: &[DeltaInstruction]) -> u64 {
    instructions
        .iter()
        .map(|i| match i {
            DeltaInstruction::Literal(b) => b.len() as u64,
            DeltaInstruction::Copy { .. } => 0,
        })
        .sum()
}

/// How much is read from the new file at a time.
const READ_BYTES: usize = 256 << 10;

/// Walks the new file once, a window of one block sliding over it.
pub struct DeltaEncoder<S, R> {
    /// The signatures, borrowed or owned (an encoder kept across a task's steps owns them).
    sigs: S,
    /// Weak checksum → indices of the full-size blocks that have it.
    by_weak: HashMap<u32, Vec<u32>>,
    /// A bit per folded weak checksum present: most offsets are rejected without hashing.
    filter: Vec<u64>,
    block: usize,
    reader: R,
    eof: bool,
    finished: bool,
    /// Bytes read and not yet described: `buf[lit_start..pos]` is literal so far,
    /// `buf[pos..pos + block]` the window.
    buf: Vec<u8>,
    lit_start: usize,
    pos: usize,
    rolling: Option<Rolling>,
    /// A copy that may still grow with the next block.
    pending_copy: Option<(u64, u64)>,
    literal_cap: usize,
    out: Vec<DeltaInstruction>,
    out_literal: usize,
    strong: Strong,
}

impl<S: std::borrow::Borrow<BlockSignatures>, R: Read> DeltaEncoder<S, R> {
    /// `literal_cap`: most literal bytes per batch (and per instruction).
    pub fn new(sigs: S, reader: R, literal_cap: usize, strong: Strong) -> Self {
        let all: &BlockSignatures = sigs.borrow();
        let block = all.block_size as usize;
        let mut by_weak: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut filter = vec![0u64; 1 << 10];
        if all.exists && block > 0 {
            for (index, sig) in all.blocks.iter().enumerate() {
                if block_len(all, index) == block as u64 {
                    by_weak.entry(sig.weak).or_default().push(index as u32);
                    let slot = ((sig.weak ^ (sig.weak >> 16)) & 0xffff) as usize;
                    filter[slot / 64] |= 1 << (slot % 64);
                }
            }
        }
        DeltaEncoder {
            sigs,
            by_weak,
            filter,
            block,
            reader,
            eof: false,
            finished: false,
            buf: Vec::new(),
            lit_start: 0,
            pos: 0,
            rolling: None,
            pending_copy: None,
            literal_cap: literal_cap.max(1),
            out: Vec::new(),
            out_literal: 0,
            strong,
        }
    }

    /// The next instructions, in order, with at most `literal_cap` literal bytes among
    /// them; `None` once the whole file is described.
    pub fn next_batch(&mut self) -> io::Result<Option<Vec<DeltaInstruction>>> {
        if self.finished {
            return Ok(None);
        }
        while self.out_literal < self.literal_cap && !self.finished {
            self.step()?;
        }
        self.out_literal = 0;
        Ok(Some(std::mem::take(&mut self.out)))
    }

    /// Whether the whole file is described: the batch just returned was the last.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Literal bytes per batch from the next batch on.
    pub fn set_literal_cap(&mut self, literal_cap: usize) {
        self.literal_cap = literal_cap.max(1);
    }

    /// The reader, once the encoder is done with it (what it counted or hashed).
    pub fn into_reader(self) -> R {
        self.reader
    }

    /// Advances by one match or one byte.
    fn step(&mut self) -> io::Result<()> {
        self.fill()?;
        let available = self.buf.len() - self.pos;
        if self.block == 0 || available < self.block || self.by_weak.is_empty() {
            if self.eof || self.block == 0 || self.by_weak.is_empty() && available >= self.block {
                return self.tail_or_literal(available);
            }
            return Ok(());
        }
        if self.rolling.is_none() {
            self.rolling = Some(Rolling::new(&self.buf[self.pos..self.pos + self.block]));
        }
        let mut rolling = self.rolling.expect("set above");
        // The byte-by-byte scan, kept tight: most offsets miss the filter at once.
        loop {
            let weak = rolling.value();
            if self.may_have(weak)
                && let Some(index) = self.matching_block(weak, self.pos, self.pos + self.block)
            {
                self.flush_literal(self.pos);
                self.push_copy(index as u64 * self.block as u64, self.block as u64);
                self.pos += self.block;
                self.lit_start = self.pos;
                self.rolling = None;
                return Ok(());
            }
            let end = self.pos + self.block;
            if end >= self.buf.len() {
                // More bytes are needed to slide on; the window is computed afresh then.
                self.rolling = None;
                if self.eof {
                    return self.tail_or_literal(self.buf.len() - self.pos);
                }
                return Ok(());
            }
            rolling.roll(self.buf[self.pos], self.buf[end]);
            self.pos += 1;
            if self.pos - self.lit_start >= self.literal_cap {
                self.flush_literal(self.pos);
                self.rolling = Some(rolling);
                return Ok(());
            }
        }
    }

    fn may_have(&self, weak: u32) -> bool {
        let slot = ((weak ^ (weak >> 16)) & 0xffff) as usize;
        self.filter[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// Without a window's worth of bytes left (or no blocks to match): the rest is the
    /// short last block of the old file, or literal.
    fn tail_or_literal(&mut self, available: usize) -> io::Result<()> {
        if !self.eof {
            // Nothing can match: move on a cap's worth at a time.
            let take = available.min(self.literal_cap - (self.pos - self.lit_start));
            self.pos += take.max(1).min(available);
            if self.pos - self.lit_start >= self.literal_cap {
                self.flush_literal(self.pos);
            }
            return Ok(());
        }
        let rest = &self.buf[self.pos..];
        let sigs: &BlockSignatures = self.sigs.borrow();
        let last = sigs.blocks.len().checked_sub(1);
        let tail_match = last.filter(|&index| {
            sigs.exists
                && !rest.is_empty()
                && block_len(sigs, index) == rest.len() as u64
                && (rest.len() < self.block || self.block == 0)
                && sigs.blocks[index].weak == rolling::weak(rest)
                && sigs.blocks[index].strong == (self.strong)(rest)
        });
        match tail_match {
            Some(index) => {
                let len = rest.len() as u64;
                self.flush_literal(self.pos);
                self.push_copy(index as u64 * self.block as u64, len);
                self.pos = self.buf.len();
                self.lit_start = self.pos;
            }
            None => {
                self.pos = self.buf.len();
                while self.pos - self.lit_start > self.literal_cap {
                    self.flush_literal(self.lit_start + self.literal_cap);
                }
                self.flush_literal(self.pos);
            }
        }
        self.flush_copy();
        self.finished = true;
        Ok(())
    }

    fn matching_block(&self, weak: u32, start: usize, end: usize) -> Option<u32> {
        let candidates = self.by_weak.get(&weak)?;
        let digest = (self.strong)(&self.buf[start..end]);
        // The block right after the last copy first: runs of unchanged blocks merge.
        let next = self
            .pending_copy
            .map(|(offset, len)| ((offset + len) / self.block as u64) as u32);
        let mut found = None;
        for &index in candidates {
            if self.sigs.borrow().blocks[index as usize].strong == digest {
                if Some(index) == next {
                    return Some(index);
                }
                found.get_or_insert(index);
            }
        }
        found
    }

    /// Keeps at least one window and the next byte in `buf`, dropping what is described.
    fn fill(&mut self) -> io::Result<()> {
        while !self.eof && self.buf.len() - self.pos <= self.block {
            if self.lit_start > 0 {
                self.buf.drain(..self.lit_start);
                self.pos -= self.lit_start;
                self.lit_start = 0;
            }
            let old = self.buf.len();
            self.buf.resize(old + READ_BYTES, 0);
            let n = loop {
                match self.reader.read(&mut self.buf[old..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            };
            self.buf.truncate(old + n);
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    fn flush_literal(&mut self, end: usize) {
        if end > self.lit_start {
            self.flush_copy();
            let bytes = self.buf[self.lit_start..end].to_vec();
            self.out_literal += bytes.len();
            self.out.push(DeltaInstruction::Literal(bytes));
            self.lit_start = end;
        }
    }

    fn push_copy(&mut self, offset: u64, len: u64) {
        match &mut self.pending_copy {
            Some((start, run)) if *start + *run == offset => *run += len,
            _ => {
                self.flush_copy();
                self.pending_copy = Some((offset, len));
            }
        }
    }

    fn flush_copy(&mut self) {
        if let Some((offset, len)) = self.pending_copy.take() {
            self.out.push(DeltaInstruction::Copy { offset, len });
        }
    }
}

/// The length of block `index` of the file the signatures describe.
fn block_len(sigs: &BlockSignatures, index: usize) -> u64 {
    let block = sigs.block_size as u64;
    let start = index as u64 * block;
    sigs.size.saturating_sub(start).min(block)
}

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
