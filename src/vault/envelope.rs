//! The text around an encrypted payload: a header line
//! (`$ANSIBLE_VAULT;1.1;AES256` or `$ANSIBLE_VAULT;1.2;AES256;<vault id>`), then the
//! payload hexlified and cut into 80-column lines. The payload, once unhexlified, is three
//! lines of hex again: the salt, the HMAC, the ciphertext.

use super::VaultError;

pub const HEADER: &str = "$ANSIBLE_VAULT";

/// A parsed envelope, still encrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub version: String,
    pub cipher: String,
    /// The 1.2 format's label; `None` for 1.1 (Ansible then reads it as the default id).
    pub vault_id: Option<String>,
    pub salt: Vec<u8>,
    pub hmac: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// Whether `data` is vault-encrypted (Ansible's `is_encrypted`: it starts with the header).
pub fn is_encrypted(data: &[u8]) -> bool {
    data.starts_with(HEADER.as_bytes())
}

fn unhexlify(hex: &[u8]) -> Result<Vec<u8>, VaultError> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if !hex.len().is_multiple_of(2) {
        return Err(VaultError::Format("Vault format unhexlify error."));
    }
    hex.chunks(2)
        .map(|pair| match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => Ok(high << 4 | low),
            _ => Err(VaultError::Format("Vault format unhexlify error.")),
        })
        .collect()
}

fn hexlify(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Envelope {
    /// Ansible's `parse_vaulttext_envelope` and `parse_vaulttext`. The header ends at the
    /// first newline (or, for the one-line form inline values are carried in, the first
    /// space); every line after it is payload.
    pub fn parse(text: &[u8]) -> Result<Envelope, VaultError> {
        let envelope_error = VaultError::Format("Vault envelope format error.");
        let text = std::str::from_utf8(text).map_err(|_| envelope_error.clone())?;
        let text = text.trim_start();
        let (header, payload) = text
            .split_once('\n')
            .or_else(|| text.split_once(' '))
            .unwrap_or((text, ""));
        let fields: Vec<&str> = header.trim().split(';').map(str::trim).collect();
        if fields.len() < 3 || fields[0] != HEADER {
            return Err(envelope_error);
        }
        let payload: Vec<u8> = payload
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        let inner = unhexlify(&payload)?;
        let mut parts = inner.splitn(3, |&b| b == b'\n');
        let (Some(salt), Some(hmac), Some(ciphertext)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(VaultError::Format("Vault vaulttext format error."));
        };
        Ok(Envelope {
            version: fields[1].to_string(),
            cipher: fields[2].to_string(),
            vault_id: fields.get(3).map(|id| id.to_string()),
            salt: unhexlify(salt)?,
            hmac: unhexlify(hmac)?,
            ciphertext: unhexlify(ciphertext)?,
        })
    }

    /// The envelope as `ansible-vault` writes it: 1.2 when a vault id other than
    /// `default` is given, 80 columns, a final newline.
    pub fn format(&self) -> String {
        let inner = [
            hexlify(&self.salt),
            hexlify(&self.hmac),
            hexlify(&self.ciphertext),
        ]
        .join("\n");
        let outer = hexlify(inner.as_bytes());
        let mut out = match &self.vault_id {
            Some(id) if id != "default" => format!("{HEADER};1.2;{};{id}\n", self.cipher),
            _ => format!("{HEADER};1.1;{}\n", self.cipher),
        };
        for line in outer.as_bytes().chunks(80) {
            out.push_str(std::str::from_utf8(line).expect("hex is ASCII"));
            out.push('\n');
        }
        out
    }
}
