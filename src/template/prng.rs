//! Random choices for filters and lookups (`random`, `shuffle`, `random_choice`,
//! a seeded `password`).

use minijinja::value::Value as MjValue;

/// A small PRNG (splitmix64): Ansible's `seed=` makes output repeatable, not
/// cryptographic; the sequence is not Python's.
pub struct Prng(u64);

impl Prng {
    pub fn new(seed: Option<&MjValue>) -> Prng {
        let seed = match seed {
            Some(s) => {
                use sha2::Digest;
                let digest = sha2::Sha256::digest(
                    s.as_str()
                        .map_or_else(|| s.to_string(), str::to_string)
                        .as_bytes(),
                );
                u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8]))
            }
            None => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                nanos ^ (std::process::id() as u64).rotate_left(32)
            }
        };
        Prng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}
