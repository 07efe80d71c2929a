//! Vault in templates: the function an inline `!vault` value is carried as (decrypted
//! with the run's secrets when the value is read), and Ansible's `vault` and `unvault`
//! filters, which take their password as an argument; the `vault_encrypted` and
//! `vaulted_file` tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State};
use serde::Deserialize;

use crate::vault::{self, Secret, Vault};

/// The label Ansible's filters encrypt under.
const FILTER_ID: &str = "filter_default";

/// The function a template calls for the input of `unvault` that is a bare variable
/// name (see `chain`): an inline `!vault` value no secret of the run decrypts fails
/// wherever it is used, but `unvault` opens it with the password it is given, as
/// Ansible's disarms its vault marker.
pub const SOURCE_FUNCTION: &str = "__tp_vault_source";

/// The context variable mapping each variable whose inline `!vault` value the run's
/// secrets cannot decrypt to its envelope (`executor::vars`), for [`SOURCE_FUNCTION`].
pub const UNDECRYPTABLE: &str = "__tp_undecryptable";

pub fn register(env: &mut Environment<'static>) {
    env.add_function(vault::INLINE_FUNCTION, inline);
    env.add_function(SOURCE_FUNCTION, source);
    env.add_filter("vault", encrypt);
    env.add_filter("ansible.builtin.vault", encrypt);
    env.add_filter("unvault", decrypt);
    env.add_filter("ansible.builtin.unvault", decrypt);
    env.add_test("vault_encrypted", vault_encrypted);
    env.add_test("vaulted_file", vaulted_file);
}

/// A text known as a vaulted value, and the envelope it was decrypted from.
struct Vaulted {
    envelope: String,
    /// An inline `!vault` value (what `vault_encrypted` is true of), not one the `vault`
    /// filter wrapped.
    inline: bool,
}

/// The plaintexts of the vaulted values of this run: inline `!vault` values read, and
/// what `vault(..., wrap_object=True)` made. Ansible tags the value itself with its
/// ciphertext, and the tag goes wherever the value goes unchanged (variables, set_fact)
/// and is lost by any change; variables here are plain data between templates, so a
/// value counts as vaulted when it is the text of one of them. A string that merely
/// equals a vaulted value's text is taken for it too: the one way this differs.
static VAULTED: Mutex<BTreeMap<String, Vaulted>> = Mutex::new(BTreeMap::new());

fn remember(text: &str, envelope: &str, inline: bool) {
    let mut known = VAULTED.lock().expect("vault values lock");
    let entry = known.entry(text.to_string()).or_insert_with(|| Vaulted {
        envelope: envelope.to_string(),
        inline,
    });
    entry.inline |= inline;
}

/// Whether `text` is a vaulted value (Ansible's `VaultedValue` tag).
pub(super) fn is_vaulted(text: &str) -> bool {
    VAULTED
        .lock()
        .expect("vault values lock")
        .contains_key(text)
}

/// `value is vault_encrypted`: one inline vault value, as it was decrypted.
fn vault_encrypted(value: &MjValue) -> bool {
    value.as_str().is_some_and(|text| {
        VAULTED
            .lock()
            .expect("vault values lock")
            .get(text)
            .is_some_and(|v| v.inline)
    })
}

/// `path is vaulted_file`: whether the file (relative to the working directory, as
/// Ansible opens it) starts with the vault header.
fn vaulted_file(path: &str) -> Result<bool, MjError> {
    use std::io::Read;
    let mut head = [0u8; vault::HEADER.len()];
    let mut file = std::fs::File::open(path)
        .map_err(|_| error(format!("Cannot test if the file '{path}' is a vault.")))?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => {
                return Err(error(format!(
                    "Cannot test if the file '{path}' is a vault."
                )));
            }
        }
    }
    Ok(vault::is_encrypted(&head[..read]))
}

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

fn inline(envelope: String, origin: String) -> Result<String, MjError> {
    let origin = if origin.is_empty() {
        "an inline !vault value".to_string()
    } else {
        origin
    };
    let plain = vault::installed()
        .decrypt(envelope.as_bytes())
        .map_err(|e| {
            error(format!(
                "Attempt to use undecryptable variable: {}",
                e.describe(&origin)
            ))
        })?;
    let text = String::from_utf8(plain)
        .map_err(|_| error(format!("the !vault value at {origin} is not UTF-8 text")))?;
    remember(&text, &envelope, true);
    Ok(text)
}

/// `name`'s value, or the envelope of its inline `!vault` value when no secret of the run
/// decrypts it (see [`SOURCE_FUNCTION`]).
fn source(state: &State, name: &str) -> Result<MjValue, MjError> {
    let value = state.lookup(name).unwrap_or(MjValue::UNDEFINED);
    if value.kind() != ValueKind::Invalid {
        return Ok(value);
    }
    if let Some(envelope) = state
        .lookup(UNDECRYPTABLE)
        .and_then(|map| map.get_attr(name).ok())
        .filter(|envelope| envelope.as_str().is_some())
    {
        return Ok(envelope);
    }
    // The variable's own error, as reading it would have failed: minijinja hands an
    // invalid value's error out only through deserializing it.
    let error = serde::de::IgnoredAny::deserialize(value)
        .err()
        .map(|e| e.detail().unwrap_or_default().to_string())
        .unwrap_or_default();
    let message = error.strip_prefix("invalid operation: ").unwrap_or(&error);
    Err(self::error(message.to_string()))
}

/// `data | vault(secret, salt=None, vault_id='filter_default', wrap_object=False)`. With
/// `wrap_object` the result is the data as a vaulted value (Ansible's `VaultedValue`
/// tag, carrying the envelope), as the filter's documentation describes; Ansible 2.21's
/// `do_vault` tags the secret instead of the data, and the envelope's bytes' repr.
fn encrypt(data: &MjValue, secret: &MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    // Ansible's salt is any value, as text (`salt=7`).
    let salt: Option<MjValue> = kwargs.get("salt")?;
    let salt = salt
        .filter(|s| !s.is_none() && !s.is_undefined())
        .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string));
    let vault_id: Option<String> = kwargs.get("vault_id")?;
    let wrap: Option<bool> = kwargs.get("wrap_object")?;
    kwargs.assert_all_used()?;
    let secret = secret.as_str().ok_or_else(|| {
        error(format!(
            "Secret passed is required to be a string, instead we got {}.",
            python_class(secret)
        ))
    })?;
    let data = data.as_str().ok_or_else(|| {
        error(format!(
            "Can only vault strings, instead we got {}.",
            python_class(data)
        ))
    })?;
    let id = vault_id.unwrap_or_else(|| FILTER_ID.into());
    let envelope = match salt.filter(|s| !s.is_empty()) {
        Some(salt) => {
            vault::encrypt_with_salt(data.as_bytes(), secret.as_bytes(), &id, salt.as_bytes())
        }
        None => vault::encrypt(data.as_bytes(), secret.as_bytes(), &id)
            .map_err(|e| error(format!("Unable to encrypt: {e}")))?,
    };
    if wrap == Some(true) {
        remember(data, &envelope, false);
        return Ok(data.to_string());
    }
    Ok(envelope)
}

/// `vaulted | unvault(secret, vault_id='filter_default')`: a vaulted value is opened from
/// its envelope with this secret (a wrong one fails, as in Ansible, even where the run's
/// secrets decrypted it); text that is not encrypted comes back as it is.
fn decrypt(data: &MjValue, secret: &MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let vault_id: Option<String> = kwargs.get("vault_id")?;
    kwargs.assert_all_used()?;
    let secret = secret.as_str().ok_or_else(|| {
        error(format!(
            "Secret passed is required to be as string, instead we got {}.",
            python_class(secret)
        ))
    })?;
    let data = data.as_str().ok_or_else(|| {
        error(format!(
            "Vault should be in the form of a string, instead we got {}.",
            python_class(data)
        ))
    })?;
    let known = VAULTED
        .lock()
        .expect("vault values lock")
        .get(data)
        .map(|v| v.envelope.clone());
    let envelope = known.as_deref().unwrap_or(data);
    if !vault::is_encrypted(envelope.as_bytes()) {
        return Ok(data.to_string());
    }
    let id = vault_id.unwrap_or_else(|| FILTER_ID.into());
    let one = Vault::new(vec![Secret::new(id, secret.as_bytes().to_vec())], false);
    let plain = one
        .decrypt(envelope.as_bytes())
        .map_err(|e| error(format!("Unable to decrypt: {e}")))?;
    String::from_utf8(plain).map_err(|_| error("Unable to decrypt: the plaintext is not UTF-8"))
}

/// Python's `type(x)` as the filters' TypeErrors print it.
fn python_class(value: &MjValue) -> String {
    format!("<class '{}'>", super::filters::mj_type_name(value))
}

#[cfg(test)]
mod tests {
    use crate::template::Templar;
    use serde_json::json;

    #[test]
    fn vault_and_unvault_filters_round_trip() {
        let t = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"pw": "s3"}));
        let vaulted = t
            .render_str("{{ 'hello' | vault(pw, salt='abc') }}", &vars)
            .unwrap();
        assert!(
            vaulted.starts_with("$ANSIBLE_VAULT;1.2;AES256;filter_default\n"),
            "{vaulted}"
        );
        let vars = minijinja::Value::from_serialize(json!({"pw": "s3", "v": vaulted}));
        assert_eq!(
            t.render_str("{{ v | unvault(pw) }}", &vars).unwrap(),
            "hello"
        );
        assert_eq!(
            t.render_str("{{ 'plain' | unvault(pw) }}", &vars).unwrap(),
            "plain"
        );
        let err = t
            .render_str("{{ v | unvault('wrong') }}", &vars)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Unable to decrypt"), "{err}");
    }

    #[test]
    fn a_wrapped_value_is_the_data_and_carries_its_envelope() {
        let t = Templar::new();
        let vars = minijinja::Value::from(());
        let render = |text: &str| t.render_str(text, &vars).unwrap();
        assert_eq!(
            render("{{ 'wrapped-data' | vault('pw', wrap_object=True) }}"),
            "wrapped-data"
        );
        assert_eq!(
            render(
                "{{ [('wrapped-data' | vault('pw', wrap_object=True)) is ansible._protomatter.tagged_with('VaultedValue'), ('plain-data' | vault('pw')) is ansible._protomatter.tagged_with('VaultedValue'), 'wrapped-data' is vault_encrypted] }}"
            ),
            "[True, False, False]"
        );
        assert_eq!(
            render("{{ 'wrapped-data' | unvault('pw') }}"),
            "wrapped-data"
        );
        let err = t
            .render_str("{{ 'wrapped-data' | unvault('wrong') }}", &vars)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Unable to decrypt"), "{err}");
        let err = t
            .render_str(
                "{{ 'x' is ansible._protomatter.tagged_with('Bogus') }}",
                &vars,
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("Unknown tag name 'Bogus'."), "{err}");
    }

    /// A variable the run cannot decrypt is an error wherever it is read, but `unvault`
    /// reads its envelope.
    #[test]
    fn unvault_opens_an_undecryptable_variable_with_its_password() {
        let t = Templar::new();
        let envelope = crate::vault::encrypt_with_salt(b"opened", b"pw", "dev", b"salt");
        let one_line = crate::vault::inline_envelope(&crate::vault::inline_expression(
            &envelope,
            "vars.yml:2:3",
        ))
        .unwrap()
        .to_string();
        let broken = minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            "Attempt to use undecryptable variable",
        );
        let vars = minijinja::context! {
            v => minijinja::Value::from(broken),
            __tp_undecryptable => minijinja::context! { v => one_line },
        };
        assert_eq!(
            t.render_str("{{ v | unvault('pw') }}", &vars).unwrap(),
            "opened"
        );
        for text in [
            "{{ v }}",
            "{{ v | upper }}",
            "{{ w | default(v) | unvault('pw') }}",
        ] {
            let err = t.render_str(text, &vars).unwrap_err().to_string();
            assert!(
                err.contains("Attempt to use undecryptable variable"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn an_inline_value_without_secrets_fails_where_it_is_read() {
        let t = Templar::new();
        let envelope = crate::vault::encrypt_with_salt(b"x", b"pw", "dev", b"salt");
        let expr = crate::vault::inline_expression(&envelope, "vars.yml:2:3");
        let err = t
            .render_value(&json!(expr), &minijinja::Value::from(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Attempt to use undecryptable variable: Attempting to decrypt but no vault secrets found on vars.yml:2:3"),
            "{err}"
        );
    }
}
