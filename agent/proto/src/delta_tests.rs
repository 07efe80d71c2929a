use std::io::Read;

use super::*;
use crate::DeltaInstruction::{Copy, Literal};

/// A stand-in for the strong digest: the encoder only compares digests, so any function
/// that tells these blocks apart will do (the two ends' SHA-256 are pinned where they live).
fn strong(block: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (half, seed) in [(0, 0xcbf2_9ce4_8422_2325u64), (8, 0x84222325cbf29ce4)] {
        let mut h = seed;
        for &b in block {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        out[half..half + 8].copy_from_slice(&h.to_le_bytes());
    }
    out
}

fn sigs_of(data: &[u8], block_size: u32) -> BlockSignatures {
    signatures(data, block_size, strong)
}

fn whole(sigs: &BlockSignatures, data: &[u8], cap: usize) -> Vec<DeltaInstruction> {
    delta(sigs, data, cap, strong)
}

/// Bytes with no repeats at the block sizes used here.
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

#[test]
fn block_sizes_keep_the_signatures_small() {
    assert_eq!(block_size_for(0), 1024);
    assert_eq!(block_size_for(1 << 20), 1024);
    assert_eq!(block_size_for(100 << 20), 64 << 10);
    assert_eq!(block_size_for(1 << 30), 512 << 10);
    assert_eq!(block_size_for(1 << 40), 1 << 20);
}

#[test]
fn signatures_are_weak_and_strong_per_block() {
    let data = noise(2500, 1);
    let sigs = sigs_of(&data, 1024);
    assert_eq!(sigs.size, 2500);
    assert_eq!(sigs.blocks.len(), 3);
    assert_eq!(sigs.blocks[2].weak, rolling::weak(&data[2048..]));
    assert_eq!(sigs.blocks[0].strong, strong(&data[..1024]));
}

#[test]
fn an_identical_file_is_one_copy() {
    let data = noise(10_000, 2);
    let sigs = sigs_of(&data, 1024);
    assert_eq!(
        whole(&sigs, &data, 1 << 20),
        [Copy {
            offset: 0,
            len: 10_000
        }]
    );
}

#[test]
fn a_changed_middle_is_copy_literal_copy() {
    let old = noise(8 * 1024, 3);
    let mut new = old.clone();
    new[3000..3010].copy_from_slice(b"0123456789");
    let sigs = sigs_of(&old, 1024);
    let got = whole(&sigs, &new, 1 << 20);
    assert_eq!(
        got,
        [
            Copy {
                offset: 0,
                len: 2048
            },
            Literal(new[2048..3072].to_vec()),
            Copy {
                offset: 3072,
                len: 5120
            },
        ]
    );
    assert_eq!(apply(&old, &got).unwrap(), new);
}

#[test]
fn inserted_bytes_shift_the_rest_which_is_still_found() {
    let old = noise(6 * 1024, 4);
    let mut new = old[..1500].to_vec();
    new.extend_from_slice(b"inserted");
    new.extend_from_slice(&old[1500..]);
    let sigs = sigs_of(&old, 1024);
    let got = whole(&sigs, &new, 1 << 20);
    assert_eq!(
        got,
        [
            Copy {
                offset: 0,
                len: 1024
            },
            Literal(new[1024..2056].to_vec()),
            Copy {
                offset: 2048,
                len: 4096
            },
        ]
    );
    assert_eq!(apply(&old, &got).unwrap(), new);
}

#[test]
fn a_short_last_block_matches_at_the_end_only() {
    let old = noise(2 * 1024 + 100, 5);
    let sigs = sigs_of(&old, 1024);
    assert_eq!(
        whole(&sigs, &old, 1 << 20),
        [Copy {
            offset: 0,
            len: 2148
        }]
    );
    let mut new = old.clone();
    new.extend_from_slice(b"x");
    assert_eq!(
        whole(&sigs, &new, 1 << 20),
        [
            Copy {
                offset: 0,
                len: 2048
            },
            Literal(new[2048..].to_vec())
        ]
    );
}

#[test]
fn nothing_in_common_is_literal_in_capped_pieces() {
    let old = noise(4096, 20);
    let new = noise(5000, 31);
    let sigs = sigs_of(&old, 1024);
    let got = whole(&sigs, &new, 2000);
    let sizes: Vec<usize> = got
        .iter()
        .map(|i| match i {
            Literal(b) => b.len(),
            Copy { .. } => panic!("{i:?}"),
        })
        .collect();
    assert_eq!(sizes, [2000, 2000, 1000]);
    assert_eq!(apply(&old, &got).unwrap(), new);
    let missing = BlockSignatures {
        exists: false,
        size: 0,
        block_size: 1024,
        blocks: vec![],
    };
    assert_eq!(whole(&missing, b"abc", 100), [Literal(b"abc".to_vec())]);
    assert_eq!(whole(&sigs, b"", 100), Vec::<DeltaInstruction>::new());
}

/// A reader that hands out a few bytes at a time, as a pipe might.
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(buf.len()).min(self.1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn streaming_in_batches_gives_the_same_file_and_bounds_each_batch() {
    let old = noise(600 << 10, 8);
    let mut new = old.clone();
    new[100_000..400_000].copy_from_slice(&noise(300_000, 9));
    new.splice(500_000..500_000, noise(777, 10));
    let sigs = sigs_of(&old, 4096);
    let mut encoder = DeltaEncoder::new(&sigs, Trickle(&new, 3000), 64 << 10, strong);
    let mut all = Vec::new();
    while let Some(batch) = encoder.next_batch().unwrap() {
        assert!(
            literal_bytes(&batch) <= (64 << 10) + 4096,
            "{}",
            literal_bytes(&batch)
        );
        all.extend(batch);
    }
    assert_eq!(apply(&old, &all).unwrap(), new);
    // The changed 300,000 bytes touch 75 blocks; the insertion one more.
    let literal = literal_bytes(&all);
    assert!(literal <= 300_000 + 2 * 4096 + 777 + 4096, "{literal}");
    assert_eq!(all, whole(&sigs, &new, 64 << 10));
}

#[test]
fn apply_refuses_ranges_past_the_basis() {
    assert_eq!(apply(b"abc", &[Copy { offset: 2, len: 2 }]), None);
    assert_eq!(
        apply(
            b"abc",
            &[Copy { offset: 1, len: 2 }, Literal(b"!".to_vec())]
        ),
        Some(b"bc!".to_vec())
    );
}
