//! The host key check: known_hosts (with the key types already known asked for first)
//! and StrictHostKeyChecking, with messages that say how to fix a refusal.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use russh::client;
use russh::keys::{HashAlg, PublicKey, PublicKeyOrCertificate};

use super::super::known_hosts::{self, CertificateStatus, HostKeyStatus};
use crate::connection::{ConnectError, StrictHostKeyChecking};

/// russh's host key algorithms with those already in known_hosts first: a host known by
/// its RSA key must not be asked for an ed25519 key we could not check.
pub(super) fn host_key_preference(
    known_types: &[String],
    keys: Vec<russh::keys::Algorithm>,
) -> Vec<russh::keys::Algorithm> {
    let family = |algorithm: &russh::keys::Algorithm| {
        if matches!(algorithm, russh::keys::Algorithm::Rsa { .. }) {
            "ssh-rsa".to_string()
        } else {
            algorithm.as_str().to_string()
        }
    };
    let (mut known, other): (Vec<_>, Vec<_>) = keys
        .into_iter()
        .partition(|a| known_types.contains(&family(a)));
    known.extend(other);
    known
}

pub(super) struct HostKeyGuard {
    pub(super) address: String,
    pub(super) port: u16,
    pub(super) strict: StrictHostKeyChecking,
    /// HashKnownHosts: accept-new writes hashed names.
    pub(super) hash: bool,
    pub(super) files: Vec<PathBuf>,
    /// Why the key was refused: russh only reports "unknown key", we say more.
    pub(super) verdict: Arc<Mutex<Option<ConnectError>>>,
    /// Why the connection ended once it was up, for the agent's session to tell.
    pub(super) lost: super::ConnectionLoss,
    /// ServerAliveInterval and ServerAliveCountMax as russh applies them, for the words
    /// of a keepalive timeout.
    pub(super) keepalive: (Option<std::time::Duration>, usize),
}

impl client::Handler for HostKeyGuard {
    type Error = russh::Error;

    async fn disconnected(
        &mut self,
        reason: client::DisconnectReason<Self::Error>,
    ) -> Result<(), Self::Error> {
        let (words, result) = match reason {
            client::DisconnectReason::ReceivedDisconnect(info) => {
                let message = info.message.trim();
                let words = if message.is_empty() {
                    "the server closed the connection".to_string()
                } else {
                    format!("the server closed the connection: {message}")
                };
                (words, Ok(()))
            }
            client::DisconnectReason::Error(e) => (super::lost_words(&e, self.keepalive), Err(e)),
        };
        self.lost.lock().expect("lost lock").get_or_insert(words);
        result
    }

    async fn check_server_key(
        &mut self,
        server_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match server_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key.clone(),
            PublicKeyOrCertificate::Certificate(cert) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let name = known_hosts::lookup_name(&self.address, self.port);
                let refusal = match known_hosts::check_certificate(
                    &self.files,
                    &self.address,
                    self.port,
                    cert,
                    now,
                ) {
                    Ok(CertificateStatus::Trusted) => return Ok(true),
                    Ok(CertificateStatus::NoAuthority) => None,
                    Ok(CertificateStatus::Invalid(why)) => Some(ConnectError::KnownHosts(format!(
                        "the host certificate of {name} is refused: {why}"
                    ))),
                    Ok(CertificateStatus::Revoked { file, line }) => {
                        Some(ConnectError::HostKeyRevoked { name, file, line })
                    }
                    Err(e) => Some(ConnectError::KnownHosts(e.to_string())),
                };
                if let Some(refusal) = refusal {
                    *self.verdict.lock().expect("verdict lock") = Some(refusal);
                    return Ok(false);
                }
                PublicKey::new(cert.public_key().clone(), "")
            }
        };
        match verify_host_key(
            &self.address,
            self.port,
            (self.strict, self.hash),
            &self.files,
            &key,
        ) {
            Ok(()) => Ok(true),
            Err(refusal) => {
                *self.verdict.lock().expect("verdict lock") = Some(refusal);
                Ok(false)
            }
        }
    }
}

pub(in crate::connection) fn verify_host_key(
    address: &str,
    port: u16,
    (strict, hash): (StrictHostKeyChecking, bool),
    files: &[PathBuf],
    key: &PublicKey,
) -> Result<(), ConnectError> {
    let name = known_hosts::lookup_name(address, port);
    let status = known_hosts::check(files, address, port, key)
        .map_err(|e| ConnectError::KnownHosts(e.to_string()))?;
    match status {
        HostKeyStatus::Known => Ok(()),
        HostKeyStatus::Changed { file, line } => {
            Err(ConnectError::HostKeyChanged { name, file, line })
        }
        HostKeyStatus::Revoked { file, line } => {
            Err(ConnectError::HostKeyRevoked { name, file, line })
        }
        HostKeyStatus::Unknown => match strict {
            StrictHostKeyChecking::No => Ok(()),
            StrictHostKeyChecking::AcceptNew => {
                if let Some(file) = files.first().filter(|f| !is_dev_null(f)) {
                    known_hosts::append(file, address, port, key, hash).map_err(|e| {
                        ConnectError::KnownHosts(format!(
                            "adding the key for {name} to {}: {e}",
                            file.display()
                        ))
                    })?;
                }
                Ok(())
            }
            StrictHostKeyChecking::Yes => {
                let target = files
                    .first()
                    .filter(|f| !is_dev_null(f))
                    .map(|f| tilde_display(f))
                    .unwrap_or_else(|| "~/.ssh/known_hosts".into());
                let port_flag = if port == 22 {
                    String::new()
                } else {
                    format!("-p {port} ")
                };
                Err(ConnectError::UnknownHostKey {
                    name,
                    key_type: key_type_name(key),
                    fingerprint: key.fingerprint(HashAlg::Sha256).to_string(),
                    keyscan: format!("ssh-keyscan {port_flag}{address} >> {target}"),
                })
            }
        },
    }
}

fn is_dev_null(path: &Path) -> bool {
    path == Path::new("/dev/null")
}

pub(super) fn tilde_display(path: &Path) -> String {
    if let Some(home) = crate::connection::local_home()
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

/// ED25519, ECDSA, RSA: the names ssh prints next to fingerprints.
fn key_type_name(key: &PublicKey) -> String {
    let algorithm = key.algorithm();
    let name = algorithm.as_str();
    if name.contains("ed25519") {
        "ED25519".into()
    } else if name.contains("ecdsa") {
        "ECDSA".into()
    } else if name.contains("rsa") {
        "RSA".into()
    } else {
        name.to_ascii_uppercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_host_key_types_are_asked_for_first() {
        use russh::keys::Algorithm;
        let defaults = host_key_preference(&[], russh::Preferred::DEFAULT.key.to_vec());
        assert_eq!(defaults[0], Algorithm::Ed25519);
        let rsa_first = host_key_preference(
            &["ssh-rsa".to_string()],
            russh::Preferred::DEFAULT.key.to_vec(),
        );
        assert!(
            matches!(rsa_first[0], Algorithm::Rsa { .. }),
            "{rsa_first:?}"
        );
        assert_eq!(rsa_first.len(), defaults.len());
        let ecdsa_first = host_key_preference(
            &["ecdsa-sha2-nistp384".to_string()],
            russh::Preferred::DEFAULT.key.to_vec(),
        );
        assert_eq!(ecdsa_first[0].as_str(), "ecdsa-sha2-nistp384");
    }

    #[test]
    fn unknown_key_message_says_how_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("k");
        assert!(
            std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&key_path)
                .status()
                .unwrap()
                .success()
        );
        let key = russh::keys::load_public_key(key_path.with_extension("pub")).unwrap();
        let files = vec![dir.path().join("known_hosts")];
        let err = verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::Yes, false),
            &files,
            &key,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("host key for [127.0.0.1]:2222 is not known (ED25519 SHA256:"),
            "{err}"
        );
        assert!(err.contains("`ssh-keyscan -p 2222 127.0.0.1 >> "), "{err}");
        assert!(
            err.ends_with("or set ANSIBLE_HOST_KEY_CHECKING=False"),
            "{err}"
        );

        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::No, false),
            &files,
            &key,
        )
        .unwrap();
        assert!(
            !files[0].exists(),
            "StrictHostKeyChecking=no records nothing"
        );
        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::AcceptNew, false),
            &files,
            &key,
        )
        .unwrap();
        verify_host_key(
            "127.0.0.1",
            2222,
            (StrictHostKeyChecking::Yes, false),
            &files,
            &key,
        )
        .unwrap();
    }
}
