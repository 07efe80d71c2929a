//! SHA-1 (FIPS 180-4 §6.1), for the checksum Ansible's `stat` reports by default. Not for
//! anything that must resist collisions: the agent's own comparisons use SHA-256.

use std::io;
use std::path::Path;

use crate::md::{Compression, Hasher};

/// §5.3.1.
const H0: [u32; 5] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];

/// SHA-1: [`Hasher`] with FIPS 180-4's §6.1 compression.
pub type Sha1 = Hasher<Sha1Compression>;

pub struct Sha1Compression;

impl Compression for Sha1Compression {
    type State = [u32; 5];
    type Digest = [u8; 20];
    const INIT: [u32; 5] = H0;

    fn compress(state: &mut [u32; 5], block: &[u8; 64]) {
        compress(state, block)
    }
}

/// §6.1.2: one 512-bit block into the state.
fn compress(state: &mut [u32; 5], block: &[u8; 64]) {
    let mut w = [0u32; 80];
    for (t, word) in block.chunks_exact(4).enumerate() {
        w[t] = u32::from_be_bytes(word.try_into().expect("4 bytes"));
    }
    for t in 16..80 {
        w[t] = (w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]).rotate_left(1);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *state;
    for (t, wt) in w.iter().enumerate() {
        // §4.1.1 and §4.2.1: the function and constant of each group of 20 rounds.
        let (f, k) = match t {
            0..=19 => ((b & c) | (!b & d), 0x5a827999),
            20..=39 => (b ^ c ^ d, 0x6ed9eba1),
            40..=59 => ((b & c) | (b & d) | (c & d), 0x8f1bbcdc),
            _ => (b ^ c ^ d, 0xca62c1d6),
        };
        let temp = a
            .rotate_left(5)
            .wrapping_add(f)
            .wrapping_add(e)
            .wrapping_add(k)
            .wrapping_add(*wt);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = temp;
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e]) {
        *s = s.wrapping_add(v);
    }
}

pub fn digest_file(path: &Path) -> io::Result<[u8; 20]> {
    Sha1::digest_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::hex;

    fn digest(data: &[u8]) -> [u8; 20] {
        let mut h = Sha1::new();
        h.update(data);
        h.finish()
    }

    #[test]
    fn fips_test_vectors() {
        assert_eq!(
            hex(&digest(b"")),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        assert_eq!(
            hex(&digest(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(&digest(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        let mut h = Sha1::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(hex(&h.finish()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    }

    #[test]
    fn agrees_with_the_sha1_crate_across_block_boundaries() {
        use sha1::Digest as _;
        let data: Vec<u8> = (0..300u32).map(|i| (i * 17 + 3) as u8).collect();
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 299] {
            let want: [u8; 20] = sha1::Sha1::digest(&data[..len]).into();
            let mut h = Sha1::new();
            for piece in data[..len].chunks(7) {
                h.update(piece);
            }
            assert_eq!(h.finish(), want, "len {len}");
        }
    }
}
