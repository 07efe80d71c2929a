//! Vault in templates: the function an inline `!vault` value is carried as (decrypted
//! with the run's secrets when the value is read), and Ansible's `vault` and `unvault`
//! filters, which take their password as an argument; the `vault_encrypted` and
//! `vaulted_file` tests.

use std::collections::BTreeSet;
use std::sync::Mutex;

use minijinja::value::{Kwargs, Value as MjValue};
use minijinja::{Environment, Error as MjError, ErrorKind};

use crate::vault::{self, Secret, Vault};

/// The label Ansible's filters encrypt under.
const FILTER_ID: &str = "filter_default";

pub fn register(env: &mut Environment<'static>) {
    env.add_function(vault::INLINE_FUNCTION, inline);
    env.add_filter("vault", encrypt);
    env.add_filter("ansible.builtin.vault", encrypt);
    env.add_filter("unvault", decrypt);
    env.add_filter("ansible.builtin.unvault", decrypt);
    env.add_test("vault_encrypted", vault_encrypted);
    env.add_test("vaulted_file", vaulted_file);
}

/// The plaintexts of the inline `!vault` values read this run. Ansible tags the value
/// itself, and the tag goes wherever the value goes unchanged (variables, set_fact)
/// and is lost by any change; variables here are plain data between templates, so a
/// value counts as vaulted when it is the text of one of them. A string that merely
/// equals a vaulted value's text is taken for it too: the one way this differs.
static DECRYPTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// `value is vault_encrypted`: one inline vault value, as it was decrypted.
fn vault_encrypted(value: &MjValue) -> bool {
    value
        .as_str()
        .is_some_and(|text| DECRYPTED.lock().expect("vault values lock").contains(text))
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
    DECRYPTED
        .lock()
        .expect("vault values lock")
        .insert(text.clone());
    Ok(text)
}

/// `data | vault(secret, salt=None, vault_id='filter_default')`.
fn encrypt(data: String, secret: String, kwargs: Kwargs) -> Result<String, MjError> {
    let salt: Option<String> = kwargs.get("salt")?;
    let vault_id: Option<String> = kwargs.get("vault_id")?;
    let _: Option<bool> = kwargs.get("wrap_object")?;
    kwargs.assert_all_used()?;
    let id = vault_id.unwrap_or_else(|| FILTER_ID.into());
    match salt.filter(|s| !s.is_empty()) {
        Some(salt) => Ok(vault::encrypt_with_salt(
            data.as_bytes(),
            secret.as_bytes(),
            &id,
            salt.as_bytes(),
        )),
        None => vault::encrypt(data.as_bytes(), secret.as_bytes(), &id)
            .map_err(|e| error(format!("Unable to encrypt: {e}"))),
    }
}

/// `vaulted | unvault(secret, vault_id='filter_default')`: text that is not encrypted
/// (an inline value is already decrypted when the filter sees it) comes back as it is.
fn decrypt(data: String, secret: String, kwargs: Kwargs) -> Result<String, MjError> {
    let vault_id: Option<String> = kwargs.get("vault_id")?;
    kwargs.assert_all_used()?;
    if !vault::is_encrypted(data.as_bytes()) {
        return Ok(data);
    }
    let id = vault_id.unwrap_or_else(|| FILTER_ID.into());
    let one = Vault::new(vec![Secret::new(id, secret.into_bytes())], false);
    let plain = one
        .decrypt(data.as_bytes())
        .map_err(|e| error(format!("Unable to decrypt: {e}")))?;
    String::from_utf8(plain).map_err(|_| error("Unable to decrypt: the plaintext is not UTF-8"))
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
