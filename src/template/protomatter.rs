//! ansible-core's internal test plugins (its `ansible._protomatter` collection), as far as
//! turbo-play can answer them faithfully: they read the tags Ansible puts on values, and
//! turbo-play keeps only some of what those tags say (which texts are vaulted values,
//! where an environment lookup's text came from). A question about a tag it does not
//! keep fails, rather than answer what Ansible would not.

use minijinja::value::Value as MjValue;
use minijinja::{Environment, Error as MjError, ErrorKind};

const PREFIX: &str = "ansible._protomatter.";

/// Ansible's tag types by name (its `_known_tag_type_map`), and whether turbo-play knows
/// which values carry that tag.
const TAGS: &[(&str, bool)] = &[
    ("VaultedValue", true),
    ("Origin", false),
    ("TrustedAsTemplate", false),
    ("SourceWasEncrypted", false),
    ("Deprecated", false),
    ("_JinjaConstTemplate", false),
];

pub fn register(env: &mut Environment<'static>) {
    env.add_test(format!("{PREFIX}tagged_with"), tagged_with);
}

/// `value is ansible._protomatter.tagged_with(name)`.
fn tagged_with(value: &MjValue, tag_name: &str) -> Result<bool, MjError> {
    match TAGS.iter().find(|(name, _)| *name == tag_name) {
        None => Err(error(format!("Unknown tag name '{tag_name}'."))),
        Some(("VaultedValue", _)) => Ok(value
            .as_str()
            .is_some_and(super::vault_filters::is_vaulted)),
        Some(_) => Err(error(format!(
            "turbo-play does not keep Ansible's '{tag_name}' tag on values, so it cannot \
             tell whether a value carries it"
        ))),
    }
}

fn error(message: String) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message)
}
