//! Logging in, in OpenSSH's order: the ssh-agent's keys (those matching a given key file
//! first), the key files given, the default key files, then the password (as `password`,
//! else as the answer to keyboard-interactive prompts). RSA keys sign with the SHA-2 hash
//! the server accepts. An encrypted key is decrypted once per run: its passphrase is asked
//! on the terminal (without echo) once, and the decoded key is kept for every other host.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use russh::MethodKind;
use russh::client::{AuthResult, Handle, KeyboardInteractiveAuthResponse};
use russh::keys::agent::AgentIdentity;
use russh::keys::agent::client::AgentClient;
use russh::keys::{Certificate, HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use super::host_key::{HostKeyGuard, tilde_display};
use super::retry::Failure;
use super::transport::Hop;
use crate::connection::ConnectError;
use crate::tilde::expand_user_path as expand_tilde;

/// What the login has tried so far, for the failure message.
struct Attempts {
    methods: Vec<&'static str>,
    tried: Vec<String>,
    /// The server's answer to the last failed attempt; None until one failed.
    remaining: Option<Vec<MethodKind>>,
    rsa_hash: Option<Option<HashAlg>>,
}

impl Attempts {
    fn used(&mut self, method: &'static str) {
        if !self.methods.contains(&method) {
            self.methods.push(method);
        }
    }

    fn server_allows(&self, method: MethodKind) -> bool {
        self.remaining.as_ref().is_none_or(|m| m.contains(&method))
    }

    /// true on success.
    fn record(&mut self, result: AuthResult) -> bool {
        match result {
            AuthResult::Success => true,
            AuthResult::Failure {
                remaining_methods, ..
            } => {
                self.remaining = Some(remaining_methods.to_vec());
                false
            }
        }
    }
}

pub(super) async fn authenticate(
    handle: &mut Handle<HostKeyGuard>,
    hop: &Hop,
) -> Result<(), Failure> {
    let mut attempts = Attempts {
        methods: Vec::new(),
        tried: Vec::new(),
        remaining: None,
        rsa_hash: None,
    };
    let given: Vec<PathBuf> = hop.identity_files.clone();
    // IdentitiesOnly with files given: those files only, no default keys.
    let identities_only = hop.ssh.identities_only;
    let defaults: Vec<PathBuf> = ["~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"]
        .iter()
        .map(|p| expand_tilde(p))
        .filter(|p| p.exists() && !given.contains(p))
        .filter(|_| !identities_only || given.is_empty())
        .collect();

    let from_agent = try_ssh_agent(handle, hop, &given, &mut attempts).await?;
    if from_agent.success {
        return Ok(());
    }
    for path in given.iter().chain(&defaults) {
        if from_agent.tried_files.contains(path) {
            continue;
        }
        if try_key_file(handle, hop, path, &mut attempts).await? {
            return Ok(());
        }
    }
    if let Some(password) = &hop.password {
        if attempts.server_allows(MethodKind::Password) {
            attempts.used("password");
            let result = handle
                .authenticate_password(hop.user.clone(), password.0.clone())
                .await
                .map_err(|e| transport_error(hop, e))?;
            attempts.tried.push("the password".into());
            if attempts.record(result) {
                return Ok(());
            }
        }
        if attempts.server_allows(MethodKind::KeyboardInteractive)
            && try_keyboard_interactive(handle, hop, &password.0, &mut attempts).await?
        {
            return Ok(());
        }
    }
    // A server that drops the connection mid-login answers every attempt with a failure:
    // that is a dropped connection (worth another try), not a refusal.
    if handle.is_closed() {
        return Err(Failure::Transient(ConnectError::Ssh {
            address: hop.address.clone(),
            port: hop.port,
            message: format!(
                "the server closed the connection during authentication as {}",
                hop.user
            ),
        }));
    }
    if attempts.methods.is_empty() {
        attempts.methods.push("publickey");
    }
    Err(Failure::Final(ConnectError::AuthFailed {
        user: hop.user.clone(),
        methods: attempts.methods.iter().map(|m| m.to_string()).collect(),
        tried: attempts.tried,
    }))
}

/// The RSA signature hash the server accepts, asked once (it waits for the server's
/// extension info, so only when an RSA key is actually tried).
async fn rsa_hash_for(
    handle: &Handle<HostKeyGuard>,
    key: &PublicKey,
    cached: &mut Option<Option<HashAlg>>,
) -> Option<HashAlg> {
    if !key.algorithm().is_rsa() {
        return None;
    }
    if cached.is_none() {
        let best = handle
            .best_supported_rsa_hash()
            .await
            .ok()
            .flatten()
            .flatten();
        *cached = Some(best);
    }
    cached.flatten()
}

async fn try_key_file(
    handle: &mut Handle<HostKeyGuard>,
    hop: &Hop,
    path: &Path,
    attempts: &mut Attempts,
) -> Result<bool, Failure> {
    let shown = tilde_display(path);
    if !path.exists() {
        attempts.tried.push(format!("{shown} (missing)"));
        return Ok(false);
    }
    if !attempts.server_allows(MethodKind::PublicKey) {
        return Ok(false);
    }
    let key = match load_key(path).await {
        Ok(key) => key,
        Err(why) => {
            attempts.tried.push(format!("{shown} ({why})"));
            return Ok(false);
        }
    };
    attempts.used("publickey");
    if let Some((cert_path, cert)) = certificate_for(hop, path, key.public_key()) {
        let result = handle
            .authenticate_openssh_cert(hop.user.clone(), key.clone(), cert)
            .await
            .map_err(|e| transport_error(hop, e))?;
        attempts.tried.push(tilde_display(&cert_path));
        if attempts.record(result) {
            return Ok(true);
        }
    }
    let hash = rsa_hash_for(handle, key.public_key(), &mut attempts.rsa_hash).await;
    let result = handle
        .authenticate_publickey(hop.user.clone(), PrivateKeyWithHashAlg::new(key, hash))
        .await
        .map_err(|e| transport_error(hop, e))?;
    attempts.tried.push(shown);
    Ok(attempts.record(result))
}

/// The certificate to offer with the key at `path`: the first of CertificateFile's, then
/// `<path>-cert.pub` (OpenSSH's own guess), whose public key is the key's. A file that is
/// missing, unreadable or for another key is passed over, as OpenSSH does.
fn certificate_for(hop: &Hop, path: &Path, key: &PublicKey) -> Option<(PathBuf, Certificate)> {
    let mut beside = path.as_os_str().to_owned();
    beside.push("-cert.pub");
    hop.ssh
        .certificate_files
        .iter()
        .cloned()
        .chain(std::iter::once(PathBuf::from(beside)))
        .filter(|file| file.exists())
        .find_map(|file| {
            let cert = russh::keys::load_openssh_certificate(&file).ok()?;
            (cert.public_key() == key.key_data()).then_some((file, cert))
        })
}

/// Decoded keys by path, for the whole run: the passphrase is asked once, and the key
/// derivation (deliberately slow) runs once, however many hosts use the key.
type KeyCache = tokio::sync::Mutex<HashMap<PathBuf, Result<Arc<PrivateKey>, String>>>;

fn key_cache() -> &'static KeyCache {
    static CACHE: OnceLock<KeyCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The key at `path`, decrypted with a passphrase asked on the terminal when it is
/// encrypted. The error says why the key cannot be used, for the failure message.
async fn load_key(path: &Path) -> Result<Arc<PrivateKey>, String> {
    // Held while asking, so concurrent hosts wait for the one prompt.
    let mut cache = key_cache().lock().await;
    if let Some(known) = cache.get(path) {
        return known.clone();
    }
    let loaded = match russh::keys::load_secret_key(path, None) {
        Ok(key) => Ok(Arc::new(key)),
        Err(russh::keys::Error::KeyIsEncrypted) => decrypt_with_prompt(path).await,
        Err(e) => Err(format!("unreadable: {e}")),
    };
    cache.insert(path.to_path_buf(), loaded.clone());
    loaded
}

async fn decrypt_with_prompt(path: &Path) -> Result<Arc<PrivateKey>, String> {
    let prompt = format!("Enter passphrase for key '{}': ", path.display());
    let asked = tokio::task::spawn_blocking(move || crate::become_password::ask_hidden(&prompt))
        .await
        .map_err(|e| format!("asking for its passphrase: {e}"))?;
    let passphrase = asked.map_err(|_| {
        "passphrase-protected and no terminal to ask for the passphrase: load it into \
         ssh-agent with `ssh-add`"
            .to_string()
    })?;
    russh::keys::load_secret_key(path, Some(&passphrase))
        .map(Arc::new)
        .map_err(|e| format!("the passphrase did not decrypt it: {e}"))
}

struct AgentOutcome {
    success: bool,
    /// Key files whose public key the agent offered: not offered again from the file.
    tried_files: Vec<PathBuf>,
}

async fn try_ssh_agent(
    handle: &mut Handle<HostKeyGuard>,
    hop: &Hop,
    given: &[PathBuf],
    attempts: &mut Attempts,
) -> Result<AgentOutcome, Failure> {
    let mut outcome = AgentOutcome {
        success: false,
        tried_files: Vec::new(),
    };
    // IdentityAgent: a socket, `none`, or (the default) $SSH_AUTH_SOCK.
    let socket = match hop.ssh.identity_agent.as_deref() {
        Some("none") => None,
        Some(path) if path != "SSH_AUTH_SOCK" => Some(PathBuf::from(path)),
        _ => std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from),
    };
    let Some(socket) = socket else {
        return Ok(outcome);
    };
    let Ok(mut agent) = AgentClient::connect_uds(&socket).await else {
        return Ok(outcome);
    };
    let Ok(identities) = agent.request_identities().await else {
        return Ok(outcome);
    };
    // The agent's keys that are also given as files first, in the files' order, as
    // OpenSSH does: a server's MaxAuthTries is spent on the likeliest keys.
    let given_public: Vec<(PathBuf, PublicKey)> = given
        .iter()
        .filter_map(|path| {
            let public =
                path.with_file_name(format!("{}.pub", path.file_name()?.to_string_lossy()));
            Some((path.clone(), russh::keys::load_public_key(public).ok()?))
        })
        .collect();
    let mut keys: Vec<(Option<PathBuf>, PublicKey, String)> = identities
        .into_iter()
        .filter_map(|identity| match identity {
            AgentIdentity::PublicKey { key, comment } => {
                let file = given_public
                    .iter()
                    .find(|(_, public)| public.key_data() == key.key_data())
                    .map(|(path, _)| path.clone());
                // IdentitiesOnly: the agent signs only for the files given, as in OpenSSH.
                if hop.ssh.identities_only && file.is_none() {
                    return None;
                }
                Some((file, key, comment))
            }
            _ => None,
        })
        .collect();
    keys.sort_by_key(|(file, _, _)| {
        file.as_ref()
            .and_then(|f| given.iter().position(|g| g == f))
            .unwrap_or(usize::MAX)
    });
    for (file, key, comment) in keys {
        if !attempts.server_allows(MethodKind::PublicKey) {
            break;
        }
        attempts.used("publickey");
        let hash = rsa_hash_for(handle, &key, &mut attempts.rsa_hash).await;
        let label = if comment.is_empty() {
            format!("ssh-agent key {}", key.fingerprint(HashAlg::Sha256))
        } else {
            format!("ssh-agent key {comment}")
        };
        let result = handle
            .authenticate_publickey_with(hop.user.clone(), key, hash, &mut agent)
            .await;
        attempts.tried.push(label);
        if let Some(file) = file {
            outcome.tried_files.push(file);
        }
        // An error is the agent refusing to sign (e.g. a confirm-only key): try the next.
        if let Ok(result) = result
            && attempts.record(result)
        {
            outcome.success = true;
            return Ok(outcome);
        }
    }
    Ok(outcome)
}

/// Answers every hidden prompt with the password (sshd's PAM asks "Password: "); a round
/// with prompts we cannot answer, or the same question three times, gives up.
async fn try_keyboard_interactive(
    handle: &mut Handle<HostKeyGuard>,
    hop: &Hop,
    password: &str,
    attempts: &mut Attempts,
) -> Result<bool, Failure> {
    attempts.used("keyboard-interactive");
    attempts
        .tried
        .push("keyboard-interactive with the password".into());
    let mut reply = handle
        .authenticate_keyboard_interactive_start(hop.user.clone(), None)
        .await
        .map_err(|e| transport_error(hop, e))?;
    let mut answered = 0;
    loop {
        match reply {
            KeyboardInteractiveAuthResponse::Success => return Ok(true),
            KeyboardInteractiveAuthResponse::Failure {
                remaining_methods, ..
            } => {
                attempts.remaining = Some(remaining_methods.to_vec());
                return Ok(false);
            }
            KeyboardInteractiveAuthResponse::InfoRequest { prompts, .. } => {
                let secret_prompts = prompts.iter().filter(|p| !p.echo).count();
                if secret_prompts > 1 || answered >= 3 {
                    return Ok(false);
                }
                if secret_prompts == 1 {
                    answered += 1;
                }
                let responses = prompts
                    .iter()
                    .map(|p| {
                        if p.echo {
                            String::new()
                        } else {
                            password.to_string()
                        }
                    })
                    .collect();
                reply = handle
                    .authenticate_keyboard_interactive_respond(responses)
                    .await
                    .map_err(|e| transport_error(hop, e))?;
            }
        }
    }
}

/// The connection broke while logging in: a drop under load, worth another try.
fn transport_error(hop: &Hop, e: russh::Error) -> Failure {
    Failure::Transient(ConnectError::Ssh {
        address: hop.address.clone(),
        port: hop.port,
        message: format!("during authentication as {}: {e}", hop.user),
    })
}
