//! Ansible Vault: the `$ANSIBLE_VAULT;1.1;AES256` and `1.2;AES256;<vault id>` formats
//! (`envelope.rs`), their cipher (`cipher.rs`), and the secrets that open them
//! (`secrets.rs`: password files, scripts, prompts, vault ids).
//!
//! The command line loads the secrets once and [`install`]s them; every reader of a file
//! Ansible would decrypt (YAML files, `copy`/`template` sources, the file lookups) asks
//! [`installed`]. Inline `!vault` values stay encrypted in the YAML tree as a call that the
//! templating layer makes when, and only when, a template reads the value
//! ([`inline_expression`]), so a value for a vault id nobody gave is an error only where
//! it is used, as in Ansible.

mod cipher;
mod envelope;
pub mod secrets;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

pub use envelope::{Envelope, HEADER, is_encrypted};
pub use secrets::{Secret, SecretSources};

/// The label of a secret, or of a 1.1 envelope, that names none (`vault_identity`).
pub const DEFAULT_ID: &str = "default";

/// The name templates call to decrypt an inline `!vault` value (see [`inline_expression`]).
pub const INLINE_FUNCTION: &str = "__tp_vault_inline";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    #[error("Attempting to decrypt but no vault secrets found.")]
    NoSecrets,
    /// Every secret tried failed its HMAC: a wrong password, or a changed file.
    #[error("Decryption failed (no vault secrets were found that could decrypt).")]
    NoSecretDecrypts { tried: Vec<String> },
    #[error("{0}")]
    Format(&'static str),
    #[error("Cipher '{0}' could not be found.")]
    UnknownCipher(String),
}

impl VaultError {
    /// How to get past it, for the line under the error.
    pub fn help(&self) -> String {
        match self {
            VaultError::NoSecrets => "give the vault password with --vault-password-file, \
                --vault-id label@file or --ask-vault-pass (or ansible.cfg's vault_password_file)"
                .to_string(),
            VaultError::NoSecretDecrypts { tried } => format!(
                "the HMAC did not match with any of the vault secrets tried ({}): a wrong \
                 password, or the file was changed after it was encrypted",
                tried.join(", ")
            ),
            VaultError::Format(_) | VaultError::UnknownCipher(_) => {
                "the data starts with $ANSIBLE_VAULT but is not what ansible-vault writes; \
                 encrypt it again with ansible-vault"
                    .to_string()
            }
        }
    }

    /// `<message> on <origin>` and the help: the whole text for a one-line error.
    pub fn describe(&self, origin: &str) -> String {
        let message = self.to_string();
        let message = message.strip_suffix('.').unwrap_or(&message);
        format!("{message} on {origin} ({})", self.help())
    }
}

/// The secrets of a run, in the order they were given, and the plaintexts already opened.
#[derive(Default)]
pub struct Vault {
    secrets: Vec<Secret>,
    /// `vault_id_match`: only the secret of an envelope's own vault id is tried.
    id_match: bool,
    /// PBKDF2 costs 10000 rounds per try; a value read on every host is opened once.
    opened: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault")
            .field("secrets", &self.secrets)
            .field("id_match", &self.id_match)
            .finish_non_exhaustive()
    }
}

impl Vault {
    pub fn new(secrets: Vec<Secret>, id_match: bool) -> Vault {
        Vault {
            secrets,
            id_match,
            opened: Mutex::default(),
        }
    }

    pub fn secrets(&self) -> &[Secret] {
        &self.secrets
    }

    /// Ansible's `VaultLib.decrypt`: the envelope's own vault id is tried first, then
    /// (unless `vault_id_match`) every other secret in the order given.
    pub fn decrypt(&self, data: &[u8]) -> Result<Vec<u8>, VaultError> {
        if let Some(plain) = self.opened.lock().expect("vault cache").get(data) {
            return Ok(plain.clone());
        }
        let envelope = Envelope::parse(data)?;
        if envelope.cipher != "AES256" {
            return Err(VaultError::UnknownCipher(envelope.cipher));
        }
        if self.secrets.is_empty() {
            return Err(VaultError::NoSecrets);
        }
        let own = envelope.vault_id.as_deref().unwrap_or(DEFAULT_ID);
        let mut order: Vec<&Secret> = self.secrets.iter().filter(|s| s.id == own).collect();
        if !self.id_match {
            order.extend(self.secrets.iter().filter(|s| s.id != own));
        }
        for secret in &order {
            if let Ok(plain) = cipher::decrypt(
                secret.password(),
                &envelope.salt,
                &envelope.hmac,
                &envelope.ciphertext,
            ) {
                self.opened
                    .lock()
                    .expect("vault cache")
                    .insert(data.to_vec(), plain.clone());
                return Ok(plain);
            }
        }
        Err(VaultError::NoSecretDecrypts {
            tried: order.iter().map(|s| s.id.clone()).collect(),
        })
    }

    /// `data` itself when it is not vault-encrypted, else its plaintext.
    pub fn decrypt_if_encrypted(&self, data: Vec<u8>) -> Result<Vec<u8>, VaultError> {
        if is_encrypted(&data) {
            self.decrypt(&data)
        } else {
            Ok(data)
        }
    }
}

/// `plaintext` encrypted as `ansible-vault encrypt --vault-id <id>` would (a fresh random
/// salt; 1.2 with the id unless it is `default`).
pub fn encrypt(plaintext: &[u8], password: &[u8], vault_id: &str) -> std::io::Result<String> {
    let mut salt = [0u8; 32];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(&mut salt)?;
    Ok(encrypt_with_salt(plaintext, password, vault_id, &salt))
}

/// [`encrypt`] with a given salt (Ansible's `vault_encrypt_salt`), for repeatable output.
pub fn encrypt_with_salt(plaintext: &[u8], password: &[u8], vault_id: &str, salt: &[u8]) -> String {
    let (hmac, ciphertext) = cipher::encrypt(password, salt, plaintext);
    Envelope {
        version: String::new(),
        cipher: "AES256".into(),
        vault_id: Some(vault_id.to_string()),
        salt: salt.to_vec(),
        hmac: hmac.to_vec(),
        ciphertext,
    }
    .format()
}

static INSTALLED: OnceLock<Vault> = OnceLock::new();

/// Makes `vault` the run's secrets (once, before anything is read).
pub fn install(vault: Vault) {
    let _ = INSTALLED.set(vault);
}

/// The run's secrets; none before [`install`].
pub fn installed() -> &'static Vault {
    INSTALLED.get_or_init(Vault::default)
}

/// A file's bytes, decrypted with the run's secrets when it is vault-encrypted, as
/// Ansible's loader reads every file it decrypts. The error names the file.
pub fn read_file(path: &Path) -> Result<Vec<u8>, ReadError> {
    let data = std::fs::read(path).map_err(|e| ReadError::Io(e.to_string()))?;
    installed()
        .decrypt_if_encrypted(data)
        .map_err(ReadError::Vault)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("could not read the file: {0}")]
    Io(String),
    #[error("{0}")]
    Vault(VaultError),
}

/// The template expression that stands for an inline `!vault` value in the YAML tree:
/// the envelope on one line and where it was written, decrypted when a template reads it.
pub fn inline_expression(envelope: &str, origin: &str) -> String {
    let one_line: Vec<&str> = envelope.split_whitespace().collect();
    let (header, payload) = one_line.split_first().unwrap_or((&"", &[]));
    // A quote in a vault id would end the string early; without the id every secret is
    // still tried.
    let header = if header.contains(['\'', '\\']) {
        header.split(';').take(3).collect::<Vec<_>>().join(";")
    } else {
        header.to_string()
    };
    // Neither hex nor the header holds a quote; an origin with one is left out.
    let origin = if origin.contains(['\'', '\\']) {
        ""
    } else {
        origin
    };
    format!(
        "{{{{ {INLINE_FUNCTION}('{header} {}', '{origin}') }}}}",
        payload.concat()
    )
}

/// The envelope (on one line) of a value that is exactly an [`inline_expression`], as
/// an unresolved variable keeps it.
pub fn inline_envelope(text: &str) -> Option<&str> {
    let call = text.strip_prefix("{{ ")?.strip_suffix(" }}")?;
    let args = call.strip_prefix(INLINE_FUNCTION)?.strip_prefix("('")?;
    let (envelope, rest) = args.split_once("', '")?;
    rest.ends_with("')").then_some(envelope)
}

#[cfg(test)]
mod tests;
