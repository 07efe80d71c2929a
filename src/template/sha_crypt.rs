//! SHA-crypt (`$5$`/`$6$`), written from Ulrich Drepper's published specification
//! ("Unix crypt using SHA-256 and SHA-512"), for `password_hash`.

use sha2::{Digest, Sha256, Sha512};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Sha256,
    Sha512,
}

const ALPHABET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DEFAULT_ROUNDS: u32 = 5000;

fn hash(variant: Variant, parts: &[&[u8]]) -> Vec<u8> {
    match variant {
        Variant::Sha256 => {
            let mut h = Sha256::new();
            for p in parts {
                h.update(p);
            }
            h.finalize().to_vec()
        }
        Variant::Sha512 => {
            let mut h = Sha512::new();
            for p in parts {
                h.update(p);
            }
            h.finalize().to_vec()
        }
    }
}

/// `digest` repeated (whole, then a prefix) to exactly `len` bytes.
fn stretch(digest: &[u8], len: usize) -> Vec<u8> {
    digest.iter().copied().cycle().take(len).collect()
}

/// The crypt(3) string for `password`. `rounds: None` means the default 5000, which the
/// output then leaves out, as crypt(3) does.
pub fn sha_crypt(variant: Variant, password: &[u8], salt: &str, rounds: Option<u32>) -> String {
    let salt = salt.split('$').next().unwrap_or("");
    let salt = &salt.as_bytes()[..salt.len().min(16)];
    let round_count = rounds.unwrap_or(DEFAULT_ROUNDS).clamp(1000, 999_999_999);
    let size = match variant {
        Variant::Sha256 => 32,
        Variant::Sha512 => 64,
    };

    let b = hash(variant, &[password, salt, password]);
    let mut a_input: Vec<u8> = [password, salt].concat();
    a_input.extend(stretch(&b, password.len()));
    let mut n = password.len();
    while n > 0 {
        if n & 1 == 1 {
            a_input.extend_from_slice(&b);
        } else {
            a_input.extend_from_slice(password);
        }
        n >>= 1;
    }
    let mut a = hash(variant, &[&a_input]);

    let dp = hash(variant, &[&password.repeat(password.len())]);
    let p = stretch(&dp, password.len());
    let ds = hash(variant, &[&salt.repeat(16 + a[0] as usize)]);
    let s = stretch(&ds, salt.len());

    for i in 0..round_count {
        let mut input: Vec<u8> = Vec::with_capacity(size * 2 + p.len() * 2 + s.len());
        if i % 2 == 1 {
            input.extend_from_slice(&p);
        } else {
            input.extend_from_slice(&a);
        }
        if i % 3 != 0 {
            input.extend_from_slice(&s);
        }
        if i % 7 != 0 {
            input.extend_from_slice(&p);
        }
        if i % 2 == 1 {
            input.extend_from_slice(&a);
        } else {
            input.extend_from_slice(&p);
        }
        a = hash(variant, &[&input]);
    }

    let (id, groups, tail): (&str, &[[usize; 3]], &[usize]) = match variant {
        Variant::Sha256 => ("5", &SHA256_ORDER, &[0, 31, 30]),
        Variant::Sha512 => ("6", &SHA512_ORDER, &[63]),
    };
    let mut encoded = String::new();
    for g in groups {
        encode24(&mut encoded, a[g[0]], a[g[1]], a[g[2]], 4);
    }
    match tail {
        [x] => encode24(&mut encoded, 0, 0, a[*x], 2),
        [_, y, z] => encode24(&mut encoded, 0, a[*y], a[*z], 3),
        _ => {}
    }
    let salt_text = String::from_utf8_lossy(salt);
    match rounds {
        Some(_) => format!("${id}$rounds={round_count}${salt_text}${encoded}"),
        None => format!("${id}${salt_text}${encoded}"),
    }
}

fn encode24(out: &mut String, b2: u8, b1: u8, b0: u8, chars: usize) {
    let mut w = ((b2 as u32) << 16) | ((b1 as u32) << 8) | b0 as u32;
    for _ in 0..chars {
        out.push(ALPHABET[(w & 0x3f) as usize] as char);
        w >>= 6;
    }
}

const SHA512_ORDER: [[usize; 3]; 21] = [
    [0, 21, 42],
    [22, 43, 1],
    [44, 2, 23],
    [3, 24, 45],
    [25, 46, 4],
    [47, 5, 26],
    [6, 27, 48],
    [28, 49, 7],
    [50, 8, 29],
    [9, 30, 51],
    [31, 52, 10],
    [53, 11, 32],
    [12, 33, 54],
    [34, 55, 13],
    [56, 14, 35],
    [15, 36, 57],
    [37, 58, 16],
    [59, 17, 38],
    [18, 39, 60],
    [40, 61, 19],
    [62, 20, 41],
];

const SHA256_ORDER: [[usize; 3]; 10] = [
    [0, 10, 20],
    [21, 1, 11],
    [12, 22, 2],
    [3, 13, 23],
    [24, 4, 14],
    [15, 25, 5],
    [6, 16, 26],
    [27, 7, 17],
    [18, 28, 8],
    [9, 19, 29],
];

/// A salt of crypt's alphabet, from the OS's randomness.
pub fn random_salt(len: usize) -> String {
    let mut bytes = vec![0u8; len];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !filled {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let digest = Sha256::digest(seed.to_le_bytes());
        bytes = stretch(&digest, len);
    }
    bytes
        .iter()
        .map(|b| ALPHABET[(*b & 0x3f) as usize] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The specification's own test vectors.
    #[test]
    fn sha512_matches_the_specification() {
        assert_eq!(
            sha_crypt(Variant::Sha512, b"Hello world!", "saltstring", None),
            "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"
        );
        assert_eq!(
            sha_crypt(
                Variant::Sha512,
                b"Hello world!",
                "saltstringsaltstring",
                Some(10000)
            ),
            "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."
        );
    }

    #[test]
    fn sha256_matches_the_specification() {
        assert_eq!(
            sha_crypt(Variant::Sha256, b"Hello world!", "saltstring", None),
            "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
        );
    }

    #[test]
    fn random_salts_use_crypts_alphabet() {
        let salt = random_salt(16);
        assert_eq!(salt.len(), 16);
        assert!(salt.bytes().all(|b| ALPHABET.contains(&b)));
    }
}
