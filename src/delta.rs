//! Delta transfer, the controller's side: the strong digest through `sha2` (the CPU's SHA
//! instructions where it has them) for the matching `turbo_proto::delta` holds, which the
//! agents run too. `executor/host_task/transport.rs` and synchronize's uploads encode with
//! it what the controller sends; the agents encode what they send each other.

use std::borrow::Borrow;
use std::io::Read;

use sha2::{Digest, Sha256};
use turbo_proto::BlockSignatures;
pub use turbo_proto::delta::{apply, block_size_for, literal_bytes};

/// The strong digest of a block: the first 16 bytes of its SHA-256.
pub fn strong(block: &[u8]) -> [u8; 16] {
    let full = Sha256::digest(block);
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// The streaming encoder with the controller's strong digest.
pub type DeltaEncoder<S, R> = turbo_proto::delta::DeltaEncoder<S, R>;

/// An encoder of what `reader` yields against `sigs`, at most `literal_cap` literal bytes
/// per batch.
pub fn encoder<S: Borrow<BlockSignatures>, R: Read>(
    sigs: S,
    reader: R,
    literal_cap: usize,
) -> DeltaEncoder<S, R> {
    DeltaEncoder::new(sigs, reader, literal_cap, strong)
}

/// The signatures of `data`, as an agent makes them of a file.
pub fn signatures(data: &[u8], block_size: u32) -> BlockSignatures {
    turbo_proto::delta::signatures(data, block_size, strong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strong_digest_is_sha256s_first_half() {
        // SHA-256("abc"), FIPS 180-2's first example.
        assert_eq!(
            strong(b"abc"),
            [
                0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
                0x22, 0x23
            ]
        );
    }

    #[test]
    fn a_changed_middle_goes_as_copies_around_the_changed_block() {
        let mut x = 88_172_645_463_325_252u64;
        let old: Vec<u8> = (0..64 << 10)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let mut new = old.clone();
        new[40_000] ^= 0xff;
        let sigs = signatures(&old, 4096);
        let mut encoder = encoder(&sigs, &new[..], 1 << 20);
        let mut all = Vec::new();
        while let Some(batch) = encoder.next_batch().unwrap() {
            all.extend(batch);
        }
        assert_eq!(literal_bytes(&all), 4096);
        assert_eq!(apply(&old, &all).unwrap(), new);
    }
}
