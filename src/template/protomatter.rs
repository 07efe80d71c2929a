//! ansible-core's internal test plugins (its `ansible._protomatter` collection), as far as
//! turbo-play can answer them faithfully: they read the tags Ansible puts on values, and
//! turbo-play keeps only some of what those tags say (which texts are vaulted values,
//! where an environment lookup's text came from). A question about a tag it does not
//! keep fails, rather than answer what Ansible would not.

use std::collections::BTreeMap;
use std::sync::Mutex;

use minijinja::value::Value as MjValue;
use minijinja::{Environment, Error as MjError, ErrorKind};

const PREFIX: &str = "ansible._protomatter.";

/// Ansible's tag types by name (its `_known_tag_type_map`).
const TAGS: &[&str] = &[
    "VaultedValue",
    "Origin",
    "TrustedAsTemplate",
    "SourceWasEncrypted",
    "Deprecated",
    "_JinjaConstTemplate",
];

pub fn register(env: &mut Environment<'static>) {
    env.add_test(format!("{PREFIX}tagged_with"), tagged_with);
    env.add_filter(format!("{PREFIX}origin"), origin);
}

/// Where the texts whose origin turbo-play knows came from, as Ansible's `Origin` tag
/// prints (`<environment variable 'HOME'>`): what the `env` lookup returned. Like
/// vaulted values (`vault_filters`), a text stands for the value: another string with
/// the same text is taken for it.
static ORIGINS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// `text` came from `origin` (the first origin known for a text stays).
pub(super) fn remember_origin(text: &str, origin: String) {
    ORIGINS
        .lock()
        .expect("origins lock")
        .entry(text.to_string())
        .or_insert(origin);
}

/// `value | ansible._protomatter.origin`: where the value came from. Ansible also knows
/// the file, line and column of every value read from YAML, which turbo-play does not
/// keep past loading: asked about such a value, it fails rather than answer None.
fn origin(value: &MjValue) -> Result<MjValue, MjError> {
    let known = value
        .as_str()
        .and_then(|text| ORIGINS.lock().expect("origins lock").get(text).cloned());
    known.map(MjValue::from).ok_or_else(|| {
        error(
            "turbo-play knows the origin of environment lookups' values only, not where \
             this value was written"
                .into(),
        )
    })
}

/// `value is ansible._protomatter.tagged_with(name)`.
fn tagged_with(value: &MjValue, tag_name: &str) -> Result<bool, MjError> {
    match tag_name {
        _ if !TAGS.contains(&tag_name) => Err(error(format!("Unknown tag name '{tag_name}'."))),
        "VaultedValue" => Ok(value.as_str().is_some_and(super::vault_filters::is_vaulted)),
        // A known origin answers yes; of the others turbo-play cannot say.
        "Origin" if origin(value).is_ok() => Ok(true),
        _ => Err(error(format!(
            "turbo-play does not keep Ansible's '{tag_name}' tag on values, so it cannot \
             tell whether this value carries it"
        ))),
    }
}

fn error(message: String) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message)
}
