//! What SHA-1 and SHA-256 share (FIPS 180-4 §5.1.1, §5.2.1): 64-byte blocks, and the
//! padding of a 1 bit, zeros and the big-endian bit length. Each hash brings only its
//! state and compression function.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// What sets one hash apart: its state, its initial value and its compression function.
/// The state is 32-bit words written out big-endian as the digest.
pub trait Compression {
    type State: Copy + AsRef<[u32]>;
    type Digest: Default + AsMut<[u8]>;
    const INIT: Self::State;
    fn compress(state: &mut Self::State, block: &[u8; 64]);
}

/// An incremental hasher: feed with [`Hasher::update`], finish with [`Hasher::finish`].
pub struct Hasher<C: Compression> {
    state: C::State,
    blocks: Blocks,
}

impl<C: Compression> Default for Hasher<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Compression> Hasher<C> {
    pub fn new() -> Self {
        Hasher {
            state: C::INIT,
            blocks: Blocks::new(),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        let state = &mut self.state;
        self.blocks
            .update(data, &mut |block| C::compress(state, block));
    }

    pub fn finish(self) -> C::Digest {
        let mut state = self.state;
        self.blocks
            .finish(&mut |block| C::compress(&mut state, block));
        let mut out = C::Digest::default();
        for (chunk, word) in out.as_mut().chunks_exact_mut(4).zip(state.as_ref()) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// The digest of everything `r` yields.
    pub fn digest_reader<R: Read>(r: R) -> io::Result<C::Digest> {
        let mut h = Self::new();
        read_all(r, |piece| h.update(piece))?;
        Ok(h.finish())
    }

    pub fn digest_file(path: &Path) -> io::Result<C::Digest> {
        Self::digest_reader(File::open(path)?)
    }
}

/// Bytes not yet making up a whole block, and the running length.
pub struct Blocks {
    block: [u8; 64],
    len: usize,
    total_bytes: u64,
}

impl Blocks {
    pub const fn new() -> Self {
        Blocks {
            block: [0; 64],
            len: 0,
            total_bytes: 0,
        }
    }

    /// Feeds `data`, handing every completed block to `compress`.
    pub fn update(&mut self, mut data: &[u8], compress: &mut impl FnMut(&[u8; 64])) {
        self.total_bytes = self.total_bytes.wrapping_add(data.len() as u64);
        if self.len > 0 {
            let take = (64 - self.len).min(data.len());
            self.block[self.len..self.len + take].copy_from_slice(&data[..take]);
            self.len += take;
            data = &data[take..];
            if self.len < 64 {
                return;
            }
            compress(&self.block);
            self.len = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            compress(block.try_into().expect("64-byte chunk"));
        }
        let rest = blocks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
    }

    /// Pads the message and hands the last block(s) to `compress`.
    pub fn finish(mut self, compress: &mut impl FnMut(&[u8; 64])) {
        let bit_len = self.total_bytes.wrapping_mul(8);
        let mut padding = [0u8; 72];
        padding[0] = 0x80;
        let pad_len = if self.len < 56 {
            56 - self.len
        } else {
            120 - self.len
        };
        padding[pad_len..pad_len + 8].copy_from_slice(&bit_len.to_be_bytes());
        self.update(&padding[..pad_len + 8], compress);
        debug_assert_eq!(self.len, 0);
    }
}

/// Reads `r` to its end in large pieces, handing each to `update`.
pub fn read_all<R: Read>(mut r: R, mut update: impl FnMut(&[u8])) -> io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Lower-case hex, as Ansible prints checksums.
pub fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(digest.len() * 2);
    for b in digest {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}
