//! SHA-256 as FIPS 180-4 describes it, so the agent needs no hashing crate. Used to decide
//! whether a file already holds the wanted bytes and to verify staged uploads.

use std::io;
use std::path::Path;

pub use crate::md::hex;
use crate::md::{Compression, Hasher};

/// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the
/// first 64 primes (a test below derives them again).
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// FIPS 180-4 §5.3.3: the first 32 bits of the fractional parts of the square roots of the
/// first 8 primes.
const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256: [`Hasher`] with FIPS 180-4's §6.2 compression.
pub type Sha256 = Hasher<Sha256Compression>;

pub struct Sha256Compression;

impl Compression for Sha256Compression {
    type State = [u32; 8];
    type Digest = [u8; 32];
    const INIT: [u32; 8] = H0;

    fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
        #[cfg(target_arch = "x86_64")]
        if sha_ni::available() {
            // SAFETY: the CPU has just been asked for every feature the function enables.
            unsafe { sha_ni::compress(state, block) };
            return;
        }
        compress(state, block)
    }
}

/// The x86 SHA extensions (most CPUs since 2017): the agent hashes every file it compares
/// or receives, and in software that was the largest part of a big copy's CPU on the target.
#[cfg(target_arch = "x86_64")]
mod sha_ni {
    use std::arch::x86_64::*;

    use super::K;

    pub fn available() -> bool {
        std::is_x86_feature_detected!("sha")
            && std::is_x86_feature_detected!("sse4.1")
            && std::is_x86_feature_detected!("ssse3")
    }

    /// FIPS 180-4 §6.2.2 for one block, four rounds per step: the state lives in two
    /// registers as (A, B, E, F) and (C, D, G, H), the order `sha256rnds2` works in.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
        // The message words are big-endian.
        let swap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
        // SAFETY: every load and store is unaligned and within `state`, `block` or `K`.
        unsafe {
            let dcba = _mm_loadu_si128(state.as_ptr().cast());
            let hgfe = _mm_loadu_si128(state.as_ptr().add(4).cast());
            let cdab = _mm_shuffle_epi32(dcba, 0xB1);
            let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
            let mut abef = _mm_alignr_epi8(cdab, efgh, 8);
            let mut cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
            let (abef_in, cdgh_in) = (abef, cdgh);

            let words = block.as_ptr().cast::<__m128i>();
            let mut w = [
                _mm_shuffle_epi8(_mm_loadu_si128(words), swap),
                _mm_shuffle_epi8(_mm_loadu_si128(words.add(1)), swap),
                _mm_shuffle_epi8(_mm_loadu_si128(words.add(2)), swap),
                _mm_shuffle_epi8(_mm_loadu_si128(words.add(3)), swap),
            ];
            for step in 0..16 {
                let k = _mm_loadu_si128(K.as_ptr().add(4 * step).cast());
                let wk = _mm_add_epi32(w[0], k);
                cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
                abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
                // §6.2.2 step 1: W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16].
                let next = if step < 12 {
                    let w_minus_7 = _mm_alignr_epi8(w[3], w[2], 4);
                    let partial = _mm_add_epi32(_mm_sha256msg1_epu32(w[0], w[1]), w_minus_7);
                    _mm_sha256msg2_epu32(partial, w[3])
                } else {
                    w[0]
                };
                w = [w[1], w[2], w[3], next];
            }

            abef = _mm_add_epi32(abef, abef_in);
            cdgh = _mm_add_epi32(cdgh, cdgh_in);
            let feba = _mm_shuffle_epi32(abef, 0x1B);
            let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
            let dcba = _mm_blend_epi16(feba, dchg, 0xF0);
            let hgfe = _mm_alignr_epi8(dchg, feba, 8);
            _mm_storeu_si128(state.as_mut_ptr().cast(), dcba);
            _mm_storeu_si128(state.as_mut_ptr().add(4).cast(), hgfe);
        }
    }
}

/// §6.2.2: one 512-bit block into the state, in portable code.
fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    let mut w = [0u32; 64];
    for (t, word) in block.chunks_exact(4).enumerate() {
        w[t] = u32::from_be_bytes(word.try_into().expect("4 bytes"));
    }
    for t in 16..64 {
        let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
        let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
        w[t] = s1
            .wrapping_add(w[t - 7])
            .wrapping_add(s0)
            .wrapping_add(w[t - 16]);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in 0..64 {
        let big_s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(big_s1)
            .wrapping_add(ch)
            .wrapping_add(K[t])
            .wrapping_add(w[t]);
        let big_s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = big_s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

pub fn digest(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(data);
    h.finish()
}

pub fn digest_file(path: &Path) -> io::Result<[u8; 32]> {
    Sha256::digest_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips_test_vectors() {
        assert_eq!(
            hex(&digest(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&digest(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let mut h = Sha256::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(
            hex(&h.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn agrees_with_sha2_across_block_boundaries_and_split_updates() {
        use sha2::Digest as _;
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in [
            0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 999, 1000,
        ] {
            let want: [u8; 32] = sha2::Sha256::digest(&data[..len]).into();
            assert_eq!(digest(&data[..len]), want, "len {len}");
            let mut h = Sha256::new();
            for piece in data[..len].chunks(13) {
                h.update(piece);
            }
            assert_eq!(h.finish(), want, "len {len} in pieces");
        }
        assert_eq!(
            Sha256::digest_reader(&data[..]).unwrap(),
            <[u8; 32]>::from(sha2::Sha256::digest(&data))
        );
    }

    /// Both compression functions from the same states and blocks, chained so that every
    /// output feeds the next input.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_sha_extensions_compress_as_the_portable_code_does() {
        if !sha_ni::available() {
            eprintln!("this CPU has no SHA extensions: only the portable code runs here");
            return;
        }
        let mut portable = H0;
        let mut extensions = H0;
        let mut block = [0u8; 64];
        for round in 0..2000u32 {
            for (i, byte) in block.iter_mut().enumerate() {
                *byte = (round.wrapping_mul(2654435761) >> (i % 24)) as u8 ^ i as u8;
            }
            compress(&mut portable, &block);
            // SAFETY: available() said the CPU has the features.
            unsafe { sha_ni::compress(&mut extensions, &block) };
            assert_eq!(extensions, portable, "after block {round}");
        }
    }

    const PRIMES: [u64; 64] = [
        2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89,
        97, 101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179, 181,
        191, 193, 197, 199, 211, 223, 227, 229, 233, 239, 241, 251, 257, 263, 269, 271, 277, 281,
        283, 293, 307, 311,
    ];

    /// The constants are checked against their definition in exact integer arithmetic:
    /// x = floor(root * 2^32) is right when x^n <= p * 2^(32n) < (x+1)^n.
    #[test]
    fn constants_are_the_prime_roots_fips_defines() {
        for (p, k) in PRIMES.iter().zip(K) {
            let whole = (*p as f64).cbrt().floor() as u128;
            let x = (whole << 32) | u128::from(k);
            let target = u128::from(*p) << 96;
            assert!(
                x * x * x <= target && (x + 1) * (x + 1) * (x + 1) > target,
                "K for {p}"
            );
        }
        for (p, h) in PRIMES.iter().zip(H0) {
            let whole = (*p as f64).sqrt().floor() as u128;
            let x = (whole << 32) | u128::from(h);
            let target = u128::from(*p) << 64;
            assert!(x * x <= target && (x + 1) * (x + 1) > target, "H0 for {p}");
        }
    }
}
