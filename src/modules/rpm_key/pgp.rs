//! The key IDs and fingerprints of an ASCII-armored OpenPGP public key, computed as
//! Ansible's rpm_key computes them (RFC 4880's v4 SHA-1 fingerprint, RFC 9580's v6
//! SHA-256 one), for the primary key and every subkey, in the order they appear.

use base64::Engine;
use sha1::Digest;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// 16 hex digits, upper case.
    pub keyid: String,
    pub fingerprint: String,
}

const PUBLIC_KEY: u8 = 6;
const PUBLIC_SUBKEY: u8 = 14;

/// Every armored block of `text`, each as its identified keys.
pub fn blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        match line.trim() {
            "-----BEGIN PGP PUBLIC KEY BLOCK-----" => current = Some(vec![line]),
            "-----END PGP PUBLIC KEY BLOCK-----" => {
                if let Some(mut block) = current.take() {
                    block.push(line);
                    out.push(block.join("\n"));
                }
            }
            _ => {
                if let Some(block) = current.as_mut() {
                    block.push(line);
                }
            }
        }
    }
    out
}

/// The keys in one armored block; an error when it is not one.
pub fn identify(armor: &str) -> Result<Vec<KeyInfo>, String> {
    let packets = dearmor(armor).ok_or("Unable to parse PGP key armor")?;
    let mut keys = Vec::new();
    let mut at = 0;
    while let Some((tag, body, next)) = packet(&packets, at) {
        if tag == PUBLIC_KEY || tag == PUBLIC_SUBKEY {
            match body.first() {
                Some(4) => {
                    let mut hash = sha1::Sha1::new();
                    hash.update([0x99, (body.len() >> 8) as u8, body.len() as u8]);
                    hash.update(body);
                    let fpr = hex(&hash.finalize());
                    keys.push(KeyInfo {
                        keyid: fpr[fpr.len() - 16..].to_string(),
                        fingerprint: fpr,
                    });
                }
                Some(6) => {
                    let mut hash = sha2::Sha256::new();
                    hash.update([0x9b]);
                    hash.update((body.len() as u32).to_be_bytes());
                    hash.update(body);
                    let fpr = hex(&hash.finalize());
                    keys.push(KeyInfo {
                        keyid: fpr[..16].to_string(),
                        fingerprint: fpr,
                    });
                }
                Some(v) => return Err(format!("Unhandled key version {v:#04x}")),
                None => break,
            }
        }
        at = next;
    }
    Ok(keys)
}

/// The packets under the armor: the base64 lines between the headers' blank line and the
/// `=` checksum line.
fn dearmor(armor: &str) -> Option<Vec<u8>> {
    let mut lines = armor.lines().map(str::trim);
    lines.find(|l| *l == "-----BEGIN PGP PUBLIC KEY BLOCK-----")?;
    let mut body = String::new();
    let mut in_headers = true;
    for line in lines {
        if line.starts_with("-----END") {
            break;
        }
        if in_headers {
            if line.is_empty() {
                in_headers = false;
            } else if !line.contains(':') {
                in_headers = false;
                body.push_str(line);
            }
            continue;
        }
        if line.starts_with('=') {
            break;
        }
        body.push_str(line);
    }
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()
        .filter(|b| !b.is_empty())
}

/// The packet at `at`: its tag, its body and where the next one starts (old and new
/// header formats; partial lengths end the walk, as in Ansible's).
fn packet(data: &[u8], at: usize) -> Option<(u8, &[u8], usize)> {
    let first = *data.get(at)?;
    let (tag, len, header) = if first & 0x40 != 0 {
        let tag = first & 0x3f;
        let l0 = *data.get(at + 1)? as usize;
        match l0 {
            0..=191 => (tag, l0, 2),
            192..=223 => (
                tag,
                ((l0 - 192) << 8) + *data.get(at + 2)? as usize + 192,
                3,
            ),
            255 => {
                let b = data.get(at + 2..at + 6)?;
                (
                    tag,
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                    6,
                )
            }
            _ => return None,
        }
    } else {
        let tag = (first >> 2) & 0x0f;
        match first & 0x03 {
            0 => (tag, *data.get(at + 1)? as usize, 2),
            1 => {
                let b = data.get(at + 1..at + 3)?;
                (tag, u16::from_be_bytes([b[0], b[1]]) as usize, 3)
            }
            2 => {
                let b = data.get(at + 1..at + 5)?;
                (
                    tag,
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize,
                    5,
                )
            }
            _ => return None,
        }
    };
    let body = data.get(at + header..at + header + len)?;
    Some((tag, body, at + header + len))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Made with `gpg --quick-gen-key` (ed25519); gpg gives its fingerprint as below.
    pub const KEY: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEaw9OLBYJKwYBBAHaRw8BAQdA7A1yRZcplLWHVGfIf59+DVCmbdc3tvDWUqth
qEs0Awa0JHR1cmJvLXBsYXkgdGVzdCA8dHBAZXhhbXBsZS5pbnZhbGlkPoiQBBMW
CAA4FiEEOl1vkRfA08qrifHAj10pGvl74bsFAmsPTiwCGwMFCwkIBwIGFQoJCAsC
BBYCAwECHgECF4AACgkQj10pGvl74bsPWAD+OubaPzs7Z4uUWt/ORsy+MV+y7Z6z
HqI14IFmKsr4wmEA/i/AF9LaYn+B7lWMbcM7pCARKL8QdaAGrl61O68aYssP
=OTYG
-----END PGP PUBLIC KEY BLOCK-----
";

    #[test]
    fn fingerprints_as_gpg_gives_them() {
        assert_eq!(
            identify(KEY).unwrap(),
            [KeyInfo {
                keyid: "8F5D291AF97BE1BB".into(),
                fingerprint: "3A5D6F9117C0D3CAAB89F1C08F5D291AF97BE1BB".into(),
            }]
        );
        assert_eq!(
            identify("not a key").unwrap_err(),
            "Unable to parse PGP key armor"
        );
    }

    #[test]
    fn finds_the_blocks_in_rpms_descriptions() {
        let text = format!("Version: rpm-4.18\n{KEY}junk\n{KEY}");
        let found = blocks(&text);
        assert_eq!(found.len(), 2);
        assert_eq!(identify(&found[1]).unwrap()[0].keyid, "8F5D291AF97BE1BB");
    }
}
