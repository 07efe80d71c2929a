//! The `password` lookup: a random password kept in a file on the controller (created
//! on first use, read afterwards), or a fresh one each time for `/dev/null`.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Error as MjError, ErrorKind};

use super::prng::Prng;
use super::sha_crypt::{Variant, sha_crypt};

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// The parameters a term's `key=value` words may set.
const VALID_PARAMS: [&str; 5] = ["length", "encrypt", "chars", "ident", "seed"];

const DEFAULT_LENGTH: usize = 20;

/// Python's `string` module sets that `chars` may name.
fn named_chars(name: &str) -> Option<String> {
    const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
    const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const DIGITS: &str = "0123456789";
    const PUNCTUATION: &str = r##"!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##;
    const WHITESPACE: &str = " \t\n\r\x0b\x0c";
    Some(match name {
        "ascii_letters" => format!("{LOWER}{UPPER}"),
        "ascii_lowercase" => LOWER.into(),
        "ascii_uppercase" => UPPER.into(),
        "digits" => DIGITS.into(),
        "hexdigits" => "0123456789abcdefABCDEF".into(),
        "octdigits" => "01234567".into(),
        "punctuation" => PUNCTUATION.into(),
        "whitespace" => WHITESPACE.into(),
        "printable" => format!("{DIGITS}{LOWER}{UPPER}{PUNCTUATION}{WHITESPACE}"),
        _ => return None,
    })
}

/// The hashes `encrypt=` may name: crypt(3)'s SHA-2 schemes, with passlib's rounds.
fn scheme(name: &str) -> Result<(Variant, u32), MjError> {
    match name {
        "sha256_crypt" => Ok((Variant::Sha256, 535_000)),
        "sha512_crypt" => Ok((Variant::Sha512, 656_000)),
        other => Err(error(format!(
            "password lookup: encrypt={other} is not supported by turbo-play (use \
             sha256_crypt or sha512_crypt)"
        ))),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Params {
    length: usize,
    encrypt: Option<String>,
    chars: Vec<String>,
    ident: Option<String>,
    seed: Option<String>,
}

impl Params {
    fn from_kwargs(kwargs: &Kwargs) -> Result<Params, MjError> {
        let text = |name: &str| -> Result<Option<String>, MjError> {
            Ok(kwargs
                .get::<Option<MjValue>>(name)?
                .filter(|v| !v.is_none())
                .map(|v| text_of(&v)))
        };
        let mut params = Params {
            length: DEFAULT_LENGTH,
            encrypt: text("encrypt")?,
            chars: vec!["ascii_letters".into(), "digits".into(), ".,:-_".into()],
            ident: text("ident")?,
            seed: text("seed")?,
        };
        if let Some(length) = kwargs.get::<Option<MjValue>>("length")? {
            params.set("length", &text_of(&length))?;
        }
        if let Some(chars) = kwargs.get::<Option<MjValue>>("chars")? {
            params.chars = match chars.kind() {
                ValueKind::Seq => chars.try_iter()?.map(|c| text_of(&c)).collect(),
                _ => split_chars(&text_of(&chars)),
            };
        }
        Ok(params)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), MjError> {
        let optional = |v: &str| (!v.is_empty()).then(|| v.to_string());
        match name {
            "length" => {
                self.length = value.trim().parse().map_err(|_| {
                    error(format!(
                        "Invalid type for configuration option 'length' for 'password' lookup \
                         plugin: {value:?} is not an integer"
                    ))
                })?
            }
            "encrypt" => self.encrypt = optional(value),
            "chars" => self.chars = split_chars(value),
            "ident" => self.ident = optional(value),
            "seed" => self.seed = optional(value),
            _ => unreachable!("checked against VALID_PARAMS"),
        }
        Ok(())
    }

    /// Every character the password may hold; quotes never.
    fn candidates(&self) -> Vec<char> {
        self.chars
            .iter()
            .flat_map(|spec| {
                named_chars(spec)
                    .unwrap_or_else(|| spec.clone())
                    .chars()
                    .collect::<Vec<_>>()
            })
            .filter(|c| *c != '"' && *c != '\'')
            .collect()
    }
}

fn text_of(value: &MjValue) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// `chars=digits,punctuation`: names split on commas, `,,` for a comma itself.
fn split_chars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.contains(",,") {
        out.push(",".to_string());
    }
    out.extend(
        text.replace(",,", ",")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    );
    out
}

/// `path key=value ...`: the path (which may hold spaces) and its parameters.
fn parse_term(term: &str, params: &mut Params) -> Result<String, MjError> {
    let Some((first, rest)) = term.split_once(' ') else {
        return Ok(term.to_string());
    };
    let parsed = crate::kv_args::parse_kv(rest, None);
    let mut path = first.to_string();
    if !parsed.raw.is_empty() {
        path = format!("{first} {}", parsed.raw);
        if !term.starts_with(&path) {
            return Err(error(
                "Unrecognized value after key=value parameters given to password lookup",
            ));
        }
    }
    let invalid: Vec<&str> = parsed
        .pairs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !VALID_PARAMS.contains(k))
        .collect();
    if !invalid.is_empty() {
        return Err(error(format!(
            "Unrecognized parameter(s) given to password lookup: {}",
            invalid.join(", ")
        )));
    }
    for (name, value) in &parsed.pairs {
        params.set(name, value)?;
    }
    Ok(path)
}

/// What a password file holds: `password[ salt=SALT[ ident=IDENT]]`.
fn parse_content(content: &str) -> (String, Option<String>, Option<String>) {
    let Some(at) = content.rfind(" salt=") else {
        return (content.to_string(), None, None);
    };
    let password = content[..at].to_string();
    let rest = &content[at + " salt=".len()..];
    if rest.is_empty() {
        return (password, None, None);
    }
    match rest.rfind(" ident=") {
        Some(i) => (
            password,
            Some(rest[..i].to_string()),
            Some(rest[i + " ident=".len()..].to_string()),
        ),
        None => (password, Some(rest.to_string()), None),
    }
}

/// Random characters: from the OS's randomness, or repeatable from `seed`.
fn random_text(length: usize, chars: &[char], seed: Option<&str>) -> Result<String, MjError> {
    if chars.is_empty() {
        return Err(error(
            "password lookup: no characters to choose from (chars=)",
        ));
    }
    let n = chars.len() as u64;
    if let Some(seed) = seed {
        let mut rng = Prng::new(Some(&MjValue::from(seed)));
        return Ok((0..length).map(|_| chars[rng.below(n) as usize]).collect());
    }
    let mut urandom = std::fs::File::open("/dev/urandom")
        .map_err(|e| error(format!("password lookup: cannot read /dev/urandom: {e}")))?;
    let mut out = String::with_capacity(length);
    // Rejection sampling keeps every character equally likely.
    let limit = u64::MAX - u64::MAX % n;
    while out.chars().count() < length {
        let mut bytes = [0u8; 8];
        urandom
            .read_exact(&mut bytes)
            .map_err(|e| error(format!("password lookup: cannot read /dev/urandom: {e}")))?;
        let r = u64::from_le_bytes(bytes);
        if r < limit {
            out.push(chars[(r % n) as usize]);
        }
    }
    Ok(out)
}

/// Password files are read and written one lookup at a time (hosts run in parallel).
static FILES: Mutex<()> = Mutex::new(());

/// `lookup('password', 'path length=8 chars=digits encrypt=sha512_crypt')`. Relative
/// paths are the playbook directory's.
pub(super) fn password(
    terms: &[String],
    kwargs: &Kwargs,
    playbook_dir: &Path,
) -> Result<Vec<MjValue>, MjError> {
    let defaults = Params::from_kwargs(kwargs)?;
    let mut out = Vec::new();
    for term in terms {
        let mut params = defaults.clone();
        let relpath = parse_term(term, &mut params)?;
        let path = if Path::new(&relpath).is_absolute() {
            PathBuf::from(&relpath)
        } else {
            playbook_dir.join(&relpath)
        };
        let discard = path == Path::new("/dev/null");
        let _guard = FILES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let content = if discard || !path.exists() {
            None
        } else {
            let text = std::fs::read(&path).map_err(|e| {
                error(format!(
                    "password lookup: cannot read {}: {e}",
                    path.display()
                ))
            })?;
            Some(String::from_utf8_lossy(&text).trim_end().to_string())
        };
        let mut changed = content.is_none();
        let (plaintext, mut salt, stored_ident) = match content {
            Some(content) => parse_content(&content),
            None => (
                random_text(params.length, &params.candidates(), params.seed.as_deref())?,
                None,
                None,
            ),
        };
        let encrypt = params.encrypt.as_deref().map(scheme).transpose()?;
        if encrypt.is_some() && salt.is_none() {
            changed = true;
            salt = Some(super::sha_crypt::random_salt(16));
        }
        if let (Some(stored), Some(wanted)) = (&stored_ident, &params.ident)
            && stored != wanted
        {
            return Err(error(format!(
                "The ident parameter provided ({stored}) does not match the stored one ({wanted})."
            )));
        }
        let ident = stored_ident.or(params.ident.clone());
        if changed && !discard {
            let content = match (&salt, &ident) {
                (Some(salt), Some(ident)) => format!("{plaintext} salt={salt} ident={ident}"),
                (Some(salt), None) => format!("{plaintext} salt={salt}"),
                _ => plaintext.clone(),
            };
            write_file(&path, &content)?;
        }
        out.push(MjValue::from(match (encrypt, salt) {
            (Some((variant, rounds)), Some(salt)) => {
                sha_crypt(variant, plaintext.as_bytes(), &salt, Some(rounds))
            }
            _ => plaintext,
        }));
    }
    Ok(out)
}

/// The file (and its missing directories) readable by the controller's user only.
fn write_file(path: &Path, content: &str) -> Result<(), MjError> {
    let failed = |e: std::io::Error| {
        error(format!(
            "password lookup: cannot write {}: {e}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(failed)?;
    file.write_all(format!("{content}\n").as_bytes())
        .map_err(failed)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn terms_carry_the_path_and_parameters() {
        let mut params = Params {
            length: 20,
            encrypt: None,
            chars: vec!["digits".into()],
            ident: None,
            seed: None,
        };
        let path =
            parse_term("/tmp/my pass length=8 chars=ascii_lowercase,,", &mut params).unwrap();
        assert_eq!(path, "/tmp/my pass");
        assert_eq!(params.length, 8);
        assert_eq!(params.chars, [",", "ascii_lowercase"]);
        assert_eq!(params.candidates().len(), 27);
        assert_eq!(
            parse_term("/tmp/p lenght=8", &mut params)
                .unwrap_err()
                .detail(),
            Some("Unrecognized parameter(s) given to password lookup: lenght")
        );
        assert!(parse_term("/tmp/p length=8 extra", &mut params).is_err());
    }

    #[test]
    fn stored_content_holds_salt_and_ident() {
        assert_eq!(parse_content("pw"), ("pw".into(), None, None));
        assert_eq!(
            parse_content("pw salt=abc"),
            ("pw".into(), Some("abc".into()), None)
        );
        assert_eq!(
            parse_content("pw salt=abc ident=2b"),
            ("pw".into(), Some("abc".into()), Some("2b".into()))
        );
    }

    #[test]
    fn seeds_repeat_and_the_os_does_not() {
        let chars: Vec<char> = "abc".chars().collect();
        let seeded = random_text(16, &chars, Some("foo")).unwrap();
        assert_eq!(seeded, random_text(16, &chars, Some("foo")).unwrap());
        assert!(seeded.chars().all(|c| chars.contains(&c)));
        let free = random_text(32, &chars, None).unwrap();
        assert_eq!(free.len(), 32);
        assert_ne!(free, random_text(32, &chars, None).unwrap());
    }
}
