//! Where vault secrets come from, as ansible-playbook gathers them (`setup_vault_secrets`):
//! ansible.cfg's `vault_identity_list`, then each `--vault-id label@source`, then each
//! `--vault-password-file` (and `vault_password_file`) under the default label, then the
//! `--ask-vault-pass` prompt. A source is a file (its content, stripped), an executable
//! (its stdout; a `*-client` script is asked `--vault-id <label>`), or `prompt`. A source
//! that fails is a warning while another one works, as in Ansible.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{DEFAULT_ID, Vault};

/// One vault password and its label. Never printed.
#[derive(Clone)]
pub struct Secret {
    pub id: String,
    password: Vec<u8>,
}

impl Secret {
    pub fn new(id: impl Into<String>, password: impl Into<Vec<u8>>) -> Secret {
        Secret {
            id: id.into(),
            password: password.into(),
        }
    }

    pub fn password(&self) -> &[u8] {
        &self.password
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({}, <hidden>)", self.id)
    }
}

/// What the command line, the environment and ansible.cfg say about vault secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretSources {
    /// `vault_identity_list` / `ANSIBLE_VAULT_IDENTITY_LIST`, tried before the flags.
    pub identity_list: Vec<String>,
    /// `--vault-id`, in order.
    pub vault_ids: Vec<String>,
    /// `--vault-password-file`, then `vault_password_file` / `ANSIBLE_VAULT_PASSWORD_FILE`.
    pub password_files: Vec<PathBuf>,
    /// `-J`/`--ask-vault-pass` (or `ask_vault_pass`).
    pub ask_vault_pass: bool,
    /// `vault_identity`: the label of a secret that names none.
    pub default_id: Option<String>,
    /// `vault_id_match`.
    pub id_match: bool,
}

/// How a prompt source asks: the prompt text in, the typed password out (without echo).
pub type Prompter<'a> = &'a mut dyn FnMut(&str) -> Result<String, String>;

impl SecretSources {
    fn default_id(&self) -> &str {
        self.default_id.as_deref().unwrap_or(DEFAULT_ID)
    }

    /// Ansible's `build_vault_ids`: every source as a `label@source` slug, in the order
    /// they are tried.
    pub fn slugs(&self) -> Vec<String> {
        let mut slugs: Vec<String> = self.identity_list.clone();
        slugs.extend(self.vault_ids.iter().cloned());
        for file in &self.password_files {
            slugs.push(format!("{}@{}", self.default_id(), file.display()));
        }
        if self.ask_vault_pass {
            slugs.push(format!("{}@prompt_ask_vault_pass", self.default_id()));
        }
        slugs
    }

    pub fn is_empty(&self) -> bool {
        self.slugs().is_empty()
    }

    /// Reads every source: the run's [`Vault`] and the warnings to print. A prompt that
    /// fails stops the run; a file that fails is a warning unless no source worked.
    pub fn load(&self, prompt: Prompter) -> Result<(Vault, Vec<String>), String> {
        let mut secrets: Vec<Secret> = Vec::new();
        let mut warnings = Vec::new();
        let mut last_error = None;
        for slug in self.slugs() {
            let (label, source) = match slug.split_once('@') {
                Some((label, source)) => (Some(label.to_string()), source.to_string()),
                None => (None, slug.clone()),
            };
            let shown = label.clone().unwrap_or_else(|| "None".into());
            if source == "prompt" || source == "prompt_ask_vault_pass" {
                let id = label.unwrap_or_else(|| self.default_id().to_string());
                let text = if source == "prompt" {
                    format!("Vault password ({id}): ")
                } else {
                    "Vault password: ".to_string()
                };
                let typed = prompt(&text)?;
                let typed = typed.trim();
                if typed.is_empty() {
                    return Err("Invalid vault password was provided".into());
                }
                secrets.push(Secret::new(id, typed.as_bytes()));
                continue;
            }
            // A password file may itself be encrypted with a secret given before it.
            let so_far = Vault::new(secrets.clone(), self.id_match);
            match read_source(Path::new(&source), label.as_deref(), &so_far) {
                Ok(password) => {
                    let id = label.unwrap_or_else(|| self.default_id().to_string());
                    secrets.push(Secret::new(id, password));
                }
                Err(message) => {
                    warnings.push(format!(
                        "Error getting vault password file ({shown}): {message}"
                    ));
                    last_error = Some(message);
                }
            }
        }
        if secrets.is_empty()
            && let Some(message) = last_error
        {
            return Err(message);
        }
        Ok((Vault::new(secrets, self.id_match), warnings))
    }
}

/// Ansible's `get_file_vault_secret` and its `load`: a file's content, or a script's
/// output, with surrounding whitespace taken off.
fn read_source(written: &Path, label: Option<&str>, so_far: &Vault) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = absolute(written);
    let shown = path.display();
    let meta = std::fs::metadata(&path)
        .map_err(|_| format!("The vault password file {shown} was not found"))?;
    if meta.is_dir() {
        return Err(format!(
            "The vault password file provided '{shown}' can not be a directory"
        ));
    }
    if meta.permissions().mode() & 0o111 != 0 {
        let client = path
            .file_stem()
            .is_some_and(|stem| stem.to_string_lossy().ends_with("-client"));
        let mut command = Command::new(&path);
        if client && let Some(label) = label {
            command.args(["--vault-id", label]);
        }
        // Ansible leaves the script's stdin and (for a plain script) stderr on the
        // terminal, so that it can ask the user itself.
        command.stdout(Stdio::piped());
        if client {
            command.stderr(Stdio::piped());
        }
        let what = if client {
            "vault password client script"
        } else {
            "vault password script"
        };
        let out = command.output().map_err(|e| {
            format!(
                "Problem running {what} {shown} ({e}). If this is not a script, remove the executable bit from the file."
            )
        })?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {}
            Some(2) if client => {
                return Err(format!(
                    "Vault password client script {shown} did not find a secret for vault-id={}: {}",
                    label.unwrap_or("None"),
                    stderr.trim()
                ));
            }
            code => {
                let code = code.map_or_else(|| out.status.to_string(), |c| c.to_string());
                return Err(if client {
                    format!(
                        "Vault password client script {shown} returned non-zero ({code}) when getting secret for vault-id={}: {}",
                        label.unwrap_or("None"),
                        stderr.trim()
                    )
                } else {
                    format!("Vault password script {shown} returned non-zero ({code})")
                });
            }
        }
        let password = trim_newlines(&out.stdout).to_vec();
        if password.is_empty() {
            return Err(format!(
                "Invalid vault password was provided from script ({shown})"
            ));
        }
        return Ok(password);
    }
    let data = std::fs::read(&path)
        .map_err(|e| format!("Could not read vault password file '{shown}': {e}"))?;
    let data = so_far
        .decrypt_if_encrypted(data.trim_ascii().to_vec())
        .map_err(|e| e.describe(&shown.to_string()))?;
    let password = trim_newlines(&data).to_vec();
    if password.is_empty() {
        return Err(format!(
            "Invalid vault password was provided from file ({shown})"
        ));
    }
    Ok(password)
}

/// Python's `bytes.strip(b'\r\n')`.
fn trim_newlines(data: &[u8]) -> &[u8] {
    let start = data
        .iter()
        .position(|b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(data.len());
    let end = data
        .iter()
        .rposition(|b| !matches!(b, b'\r' | b'\n'))
        .map_or(start, |e| e + 1);
    &data[start..end]
}

/// Ansible's `unfrackpath(follow=False)`: `~` expanded, made absolute, not resolved.
fn absolute(path: &Path) -> PathBuf {
    let expanded = crate::tilde::expand_user_path(&path.to_string_lossy());
    if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&expanded))
            .unwrap_or(expanded)
    }
}
