//! Vault's one cipher, `AES256`: PBKDF2-HMAC-SHA256 (10000 rounds) stretches the password
//! and a per-file salt into an AES-256 key, an HMAC-SHA256 key and a CTR counter block;
//! the HMAC covers the ciphertext and is checked, in constant time, before anything is
//! decrypted; the plaintext is PKCS#7-padded to the AES block even though CTR needs no
//! padding, because that is the format.

use aes::Aes256;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

const ROUNDS: u32 = 10_000;
const KEY_LEN: usize = 32;
const IV_LEN: usize = 16;
const BLOCK: usize = 16;

type Aes256Ctr = ctr::Ctr128BE<Aes256>;

/// Why one secret did not open one payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CipherError {
    /// The HMAC does not match: another password, or the file was changed.
    Hmac,
    /// The HMAC matched but the padding is wrong: only a broken encrypter writes that.
    Padding,
}

struct Keys {
    aes: [u8; KEY_LEN],
    mac: [u8; KEY_LEN],
    iv: [u8; IV_LEN],
}

fn derive(password: &[u8], salt: &[u8]) -> Keys {
    let mut out = [0u8; 2 * KEY_LEN + IV_LEN];
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, ROUNDS, &mut out);
    let mut keys = Keys {
        aes: [0; KEY_LEN],
        mac: [0; KEY_LEN],
        iv: [0; IV_LEN],
    };
    keys.aes.copy_from_slice(&out[..KEY_LEN]);
    keys.mac.copy_from_slice(&out[KEY_LEN..2 * KEY_LEN]);
    keys.iv.copy_from_slice(&out[2 * KEY_LEN..]);
    keys
}

fn mac_of(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

fn keystream(keys: &Keys, data: &mut [u8]) {
    Aes256Ctr::new_from_slices(&keys.aes, &keys.iv)
        .expect("key and counter block have AES-256-CTR's sizes")
        .apply_keystream(data);
}

/// The plaintext, when `password` is the one `ciphertext` was made with.
pub fn decrypt(
    password: &[u8],
    salt: &[u8],
    hmac: &[u8],
    ciphertext: &[u8],
) -> Result<Vec<u8>, CipherError> {
    let keys = derive(password, salt);
    let expected = mac_of(&keys.mac, ciphertext);
    if !bool::from(expected.as_slice().ct_eq(hmac)) {
        return Err(CipherError::Hmac);
    }
    let mut plain = ciphertext.to_vec();
    keystream(&keys, &mut plain);
    let pad = *plain.last().ok_or(CipherError::Padding)? as usize;
    if pad == 0 || pad > BLOCK || pad > plain.len() {
        return Err(CipherError::Padding);
    }
    if plain[plain.len() - pad..]
        .iter()
        .any(|&b| b as usize != pad)
    {
        return Err(CipherError::Padding);
    }
    plain.truncate(plain.len() - pad);
    Ok(plain)
}

/// `(hmac, ciphertext)` of `plaintext` under `password` and `salt`.
pub fn encrypt(password: &[u8], salt: &[u8], plaintext: &[u8]) -> ([u8; 32], Vec<u8>) {
    let keys = derive(password, salt);
    let pad = BLOCK - plaintext.len() % BLOCK;
    let mut data = plaintext.to_vec();
    data.extend(std::iter::repeat_n(pad as u8, pad));
    keystream(&keys, &mut data);
    (mac_of(&keys.mac, &data), data)
}
