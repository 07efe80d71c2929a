//! Ansible's filters (and the Jinja ones whose behaviour Ansible users rely on).

use base64::Engine;
use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind};
use serde_json::Value;

use super::collection_filters::{
    combine, dict2items, difference, flatten, intersect, items2dict, max, min, sum,
    symmetric_difference, union,
};
use super::prng::Prng;
use super::regex_filters::{regex_escape, regex_findall, regex_replace, regex_search};
use super::{python_json, to_json};

pub fn register(env: &mut Environment<'static>) {
    env.add_filter("bool", bool_filter);
    env.add_filter("int", int);
    env.add_filter("float", float);
    env.add_filter("to_json", to_json_filter);
    env.add_filter("to_nice_json", to_nice_json);
    env.add_filter("from_json", from_json);
    env.add_filter("to_yaml", to_yaml);
    env.add_filter("to_nice_yaml", to_nice_yaml);
    env.add_filter("indent", indent);
    env.add_filter("from_yaml", from_yaml);
    env.add_filter("basename", basename);
    env.add_filter("dirname", dirname);
    env.add_filter("expanduser", expanduser);
    env.add_filter("realpath", realpath);
    env.add_filter("splitext", splitext);
    env.add_filter("mandatory", mandatory);
    env.add_filter("ternary", ternary);
    env.add_filter("regex_replace", regex_replace);
    env.add_filter("regex_search", regex_search);
    env.add_filter("regex_findall", regex_findall);
    env.add_filter("regex_escape", regex_escape);
    env.add_filter("union", union);
    env.add_filter("difference", difference);
    env.add_filter("intersect", intersect);
    env.add_filter("symmetric_difference", symmetric_difference);
    env.add_filter("flatten", flatten);
    env.add_filter("min", min);
    env.add_filter("max", max);
    env.add_filter("sum", sum);
    env.add_filter("combine", combine);
    env.add_filter("dict2items", dict2items);
    env.add_filter("items2dict", items2dict);
    env.add_filter("b64encode", b64encode);
    env.add_filter("b64decode", b64decode);
    env.add_filter("quote", quote);
    env.add_filter("strftime", super::dates::strftime);
    env.add_filter("hash", hash);
    env.add_filter("checksum", checksum);
    env.add_filter("password_hash", password_hash);
    env.add_filter("type_debug", type_debug);
    env.add_filter("urlsplit", urlsplit);
    env.add_filter("center", center);
    env.add_filter("random", random);
    env.add_filter("shuffle", shuffle);
    env.add_filter("string", string);
    env.add_filter("extract", extract);
    env.add_filter("urldecode", urldecode);
    env.add_filter("urlencode", urlencode);
    env.add_filter("path_join", path_join);
    env.add_filter("unique", unique);
}

/// `extract(container, morekeys=None)`: `container[item]`, then deeper by each key
/// (`groups['web'] | map('extract', hostvars, 'ansible_host')`).
fn extract(
    item: MjValue,
    container: MjValue,
    morekeys: Option<MjValue>,
) -> Result<MjValue, MjError> {
    let mut value = container.get_item(&item)?;
    if let Some(keys) = morekeys {
        let keys: Vec<MjValue> = if keys.kind() == ValueKind::Seq {
            keys.try_iter()?.collect()
        } else {
            vec![keys]
        };
        for key in keys {
            value = value.get_item(&key)?;
        }
    }
    Ok(value)
}

/// Python's `str()`: what Ansible prints for a value inside text (`['a', 1]`,
/// `{'k': True}`, `None`).
pub fn python_str(value: &MjValue) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or("").to_string(),
        _ => python_repr(value),
    }
}

/// Python's `repr()` of a value (`'a'`, `1`, `['x']`), as Ansible's messages quote them.
pub fn python_repr_of(value: &MjValue) -> String {
    python_repr(value)
}

fn python_repr(value: &MjValue) -> String {
    match value.kind() {
        ValueKind::None | ValueKind::Undefined => "None".into(),
        ValueKind::Bool => if value.is_true() { "True" } else { "False" }.into(),
        ValueKind::String => python_string_repr(value.as_str().unwrap_or("")),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<String> = value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|v| python_repr(&v))
                .collect();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let entries: Vec<String> = value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|k| {
                    let v = value.get_item(&k).unwrap_or_default();
                    format!("{}: {}", python_repr(&k), python_repr(&v))
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        _ => value.to_string(),
    }
}

/// Python's `repr(str)`: single quotes unless the text has one and no double quote.
pub(super) fn python_string_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn string(value: MjValue) -> MjValue {
    if value.kind() == ValueKind::String {
        return value;
    }
    MjValue::from(python_str(&value))
}

pub(super) fn invalid(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// [`json_of`] for a filter that dumps the whole value (`to_json`, `to_yaml`): a value
/// holding an undefined one (a dict variable with an undefined leaf) fails to dump, as
/// Ansible's does.
fn dumped(value: &MjValue) -> Result<Value, MjError> {
    if super::native::holds_undefined(value) {
        return Err(MjError::from(ErrorKind::UndefinedError));
    }
    json_of(value)
}

pub(super) fn json_of(value: &MjValue) -> Result<Value, MjError> {
    to_json(value).map_err(invalid)
}

pub(super) fn items(value: &MjValue) -> Result<Vec<MjValue>, MjError> {
    Ok(value.try_iter()?.collect())
}

/// The `bool` filter, as ansible-core 2.21's `to_bool` (see `booleans::bool_filter`).
pub fn bool_filter(value: MjValue) -> bool {
    to_json(&value).is_ok_and(|v| crate::booleans::bool_filter(&v))
}

/// Jinja's `int(default=0, base=10)`: text that is not a number gives the default, and
/// float text is truncated.
fn int(value: MjValue, default: Option<MjValue>, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let default: MjValue = match kwargs.get::<Option<MjValue>>("default")? {
        Some(d) => d,
        None => default.unwrap_or(MjValue::from(0)),
    };
    let base: u32 = kwargs.get::<Option<u32>>("base")?.unwrap_or(10);
    kwargs.assert_all_used()?;
    Ok(match value.kind() {
        ValueKind::Bool => MjValue::from(value.is_true() as i64),
        ValueKind::Number => match i64::try_from(value.clone()) {
            Ok(i) => MjValue::from(i),
            Err(_) => f64::try_from(value).map_or(default, |f| MjValue::from(f.trunc() as i64)),
        },
        ValueKind::String => {
            let text = value.as_str().unwrap_or("").trim().replace('_', "");
            let (neg, digits) = match text.strip_prefix('-') {
                Some(d) => (true, d.to_string()),
                None => (false, text.trim_start_matches('+').to_string()),
            };
            let digits = match base {
                16 => digits.trim_start_matches("0x").trim_start_matches("0X"),
                8 => digits.trim_start_matches("0o").trim_start_matches("0O"),
                2 => digits.trim_start_matches("0b").trim_start_matches("0B"),
                _ => &digits,
            };
            match i64::from_str_radix(digits, base) {
                Ok(i) => MjValue::from(if neg { -i } else { i }),
                Err(_) if base == 10 => text
                    .parse::<f64>()
                    .map_or(default, |f| MjValue::from(f.trunc() as i64)),
                Err(_) => default,
            }
        }
        _ => default,
    })
}

fn float(value: MjValue, default: Option<MjValue>) -> MjValue {
    let default = default.unwrap_or(MjValue::from(0.0));
    match value.kind() {
        ValueKind::Bool => MjValue::from(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value).map_or(default, MjValue::from),
        ValueKind::String => value
            .as_str()
            .unwrap_or("")
            .trim()
            .parse::<f64>()
            .map_or(default, MjValue::from),
        _ => default,
    }
}

fn to_json_filter(value: MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let _: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    Ok(python_json(
        &dumped(&value)?,
        indent,
        sort_keys.unwrap_or(false),
    ))
}

fn to_nice_json(value: MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let _: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    Ok(python_json(
        &dumped(&value)?,
        Some(indent.unwrap_or(4)),
        true,
    ))
}

fn from_json(text: &str) -> Result<MjValue, MjError> {
    serde_json::from_str::<Value>(text)
        .map(MjValue::from_serialize)
        .map_err(|e| invalid(format!("from_json: {e}")))
}

fn to_yaml(value: MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let flow: Option<bool> = kwargs.get("default_flow_style")?;
    kwargs.assert_all_used()?;
    let style = match flow {
        Some(false) => super::yaml_dump::Style::Block,
        _ => super::yaml_dump::Style::FlowLeaves,
    };
    Ok(super::yaml_dump::dump(
        &dumped(&value)?,
        indent.unwrap_or(2),
        style,
    ))
}

fn to_nice_yaml(value: MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    Ok(super::yaml_dump::dump(
        &dumped(&value)?,
        indent.unwrap_or(4),
        super::yaml_dump::Style::Block,
    ))
}

/// Jinja2's `indent` (minijinja's drops a trailing newline, which templates that indent
/// `to_nice_yaml` output rely on): the text's lines after the first (and the first with
/// `first`) get `width` spaces (or the `width` string); empty lines only with `blank`.
fn indent(
    text: &str,
    width: Option<MjValue>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<String, MjError> {
    let width = match width {
        Some(w) => Some(w),
        None => kwargs.get::<Option<MjValue>>("width")?,
    };
    let first = first.map_or_else(|| kwargs.get::<Option<bool>>("first"), |f| Ok(Some(f)))?;
    let blank = blank.map_or_else(|| kwargs.get::<Option<bool>>("blank"), |b| Ok(Some(b)))?;
    kwargs.assert_all_used()?;
    let padding = match width {
        None => "    ".to_string(),
        Some(w) => match w.as_str() {
            Some(s) => s.to_string(),
            None => " ".repeat(
                usize::try_from(w.clone())
                    .map_err(|_| invalid(format!("indent: width must be a count, got {w}")))?,
            ),
        },
    };
    // As Jinja2 does: a newline is added before Python's splitlines, so a text ending in
    // a newline keeps it.
    let text = format!("{text}\n");
    let lines: Vec<&str> = text
        .split_inclusive(['\n', '\r'])
        .scan(false, |after_cr, piece| {
            // "\r\n" is one line end: the "\n" piece after a "\r" is no empty line.
            let skip = *after_cr && piece == "\n";
            *after_cr = piece.ends_with('\r');
            Some((skip, piece))
        })
        .filter(|(skip, _)| !skip)
        .map(|(_, piece)| piece.trim_end_matches(['\n', '\r']))
        .collect();
    let mut out = String::new();
    if blank.unwrap_or(false) {
        out = lines.join(&format!("\n{padding}"));
    } else {
        let mut rest = lines.iter();
        out.push_str(rest.next().copied().unwrap_or(""));
        for line in rest {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&padding);
            }
            out.push_str(line);
        }
    }
    if first.unwrap_or(false) {
        out.insert_str(0, &padding);
    }
    Ok(out)
}

fn from_yaml(text: &str) -> Result<MjValue, MjError> {
    let node = crate::yaml::Source::from_text("<from_yaml>", text.to_string())
        .parse()
        .map_err(|e| invalid(format!("from_yaml: {e}")))?;
    Ok(MjValue::from_serialize(node.to_json()))
}

/// Python's `os.path.basename`: the text after the last `/` ("" for "a/").
pub fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or("").to_string()
}

/// Python's `os.path.dirname`: the text before the last `/`, trailing slashes trimmed
/// unless it is all slashes.
pub fn dirname(path: &str) -> String {
    match path.rfind('/') {
        None => String::new(),
        Some(i) => {
            let head = &path[..=i];
            let trimmed = head.trim_end_matches('/');
            if trimmed.is_empty() {
                head.to_string()
            } else {
                trimmed.to_string()
            }
        }
    }
}

/// On the controller, as in Ansible (Python's `os.path.expanduser`).
pub fn expanduser(path: &str) -> String {
    crate::tilde::expand_user(path)
}

/// Python's `os.path.realpath`: symlinks resolved where they exist, the rest normalised.
fn realpath(path: &str) -> String {
    let absolute = if path.starts_with('/') {
        std::path::PathBuf::from(path)
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    if let Ok(p) = std::fs::canonicalize(&absolute) {
        return p.display().to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    let text = absolute.to_string_lossy().to_string();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Python's `os.path.splitext`: a leading dot of the file name is not an extension.
fn splitext(path: &str) -> Vec<String> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let name = &path[name_start..];
    let dots = name.len() - name.trim_start_matches('.').len();
    match name[dots..].rfind('.') {
        Some(i) => {
            let at = name_start + dots + i;
            vec![path[..at].to_string(), path[at..].to_string()]
        }
        None => vec![path.to_string(), String::new()],
    }
}

/// Undefined is an error: the user's own message when given (as Ansible), else the
/// usual "'x' is undefined".
fn mandatory(value: &MjValue, msg: Option<String>) -> Result<MjValue, MjError> {
    if value.is_undefined() {
        return Err(match msg {
            Some(msg) => MjError::new(ErrorKind::InvalidOperation, msg),
            None => MjError::new(ErrorKind::UndefinedError, "Mandatory variable not defined."),
        });
    }
    Ok(value.clone())
}

fn ternary(
    value: MjValue,
    true_val: MjValue,
    false_val: MjValue,
    none_val: Option<MjValue>,
) -> MjValue {
    if let Some(none_val) = none_val
        && value.is_none()
    {
        return none_val;
    }
    if value.is_true() { true_val } else { false_val }
}

/// The text of a value as `str()` would give it (numbers included).
pub(super) fn value_text(value: &MjValue) -> String {
    match value.as_str() {
        Some(s) => s.to_string(),
        None => value.to_string(),
    }
}

fn b64encode(value: MjValue) -> String {
    base64::engine::general_purpose::STANDARD.encode(value_text(&value))
}

fn b64decode(text: &str) -> Result<String, MjError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| invalid(format!("b64decode: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Python's `shlex.quote`.
pub fn quote(value: MjValue) -> String {
    let s = value_text(&value);
    if s.is_empty() {
        return "''".into();
    }
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c))
    {
        return s;
    }
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

fn hash(value: MjValue, algorithm: Option<&str>) -> Result<String, MjError> {
    let data = value_text(&value);
    digest_hex(algorithm.unwrap_or("sha1"), data.as_bytes())
}

pub fn digest_hex(algorithm: &str, data: &[u8]) -> Result<String, MjError> {
    use sha2::Digest;
    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
    Ok(match algorithm {
        "md5" => format!("{:x}", md5::compute(data)),
        "sha1" => hex(&sha1::Sha1::digest(data)),
        "sha224" => hex(&sha2::Sha224::digest(data)),
        "sha256" => hex(&sha2::Sha256::digest(data)),
        "sha384" => hex(&sha2::Sha384::digest(data)),
        "sha512" => hex(&sha2::Sha512::digest(data)),
        other => {
            return Err(invalid(format!(
                "hash: unsupported algorithm {other:?} (use md5, sha1, sha224, sha256, sha384 \
                 or sha512)"
            )));
        }
    })
}

fn checksum(value: MjValue) -> Result<String, MjError> {
    digest_hex("sha1", value_text(&value).as_bytes())
}

/// `password_hash('sha512', salt=None, rounds=5000)` as crypt(3)'s SHA-crypt.
fn password_hash(
    value: MjValue,
    scheme: Option<&str>,
    salt: Option<String>,
    kwargs: Kwargs,
) -> Result<String, MjError> {
    let salt = match kwargs.get::<Option<String>>("salt")? {
        Some(s) => Some(s),
        None => salt,
    };
    let rounds: Option<u32> = kwargs.get("rounds")?;
    kwargs.assert_all_used()?;
    let password = value_text(&value);
    let salt = salt.unwrap_or_else(|| super::sha_crypt::random_salt(16));
    match scheme.unwrap_or("sha512") {
        "sha512" | "sha512_crypt" => Ok(super::sha_crypt::sha_crypt(
            super::sha_crypt::Variant::Sha512,
            password.as_bytes(),
            &salt,
            rounds,
        )),
        "sha256" | "sha256_crypt" => Ok(super::sha_crypt::sha_crypt(
            super::sha_crypt::Variant::Sha256,
            password.as_bytes(),
            &salt,
            rounds,
        )),
        other => Err(invalid(format!(
            "password_hash: unsupported scheme {other:?} (use sha512 or sha256)"
        ))),
    }
}

/// Python's `repr()` of a value that came from YAML or a template (`['42', 'web']`).
pub fn python_repr_json(value: &Value) -> String {
    python_repr(&MjValue::from_serialize(value))
}

/// Python's type name of a value that came from YAML or a template.
pub fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

pub(super) fn mj_type_name(value: &MjValue) -> &'static str {
    match value.kind() {
        ValueKind::Undefined => "AnsibleUndefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

/// Python's type names, which is what Ansible shows.
fn type_debug(value: MjValue) -> &'static str {
    mj_type_name(&value)
}

/// The scheme (lowercased, empty without one) and the rest, as Python's `urlsplit` finds
/// them: letters, digits and `+-.` before the first `:`, starting with a letter.
pub(super) fn url_scheme(url: &str) -> (String, &str) {
    match url.split_once(':') {
        Some((s, r))
            if !s.is_empty()
                && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (s.to_ascii_lowercase(), r)
        }
        _ => (String::new(), url),
    }
}

/// Python's `urllib.parse.urlsplit`, as a dict, or one field of it.
fn urlsplit(url: &str, query: Option<&str>) -> Result<MjValue, MjError> {
    let (scheme, rest) = url_scheme(url);
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query_text) = rest.split_once('?').unwrap_or((rest, ""));
    let (netloc, path) = match rest.strip_prefix("//") {
        Some(r) => match r.find('/') {
            Some(i) => (&r[..i], &r[i..]),
            None => (r, ""),
        },
        None => ("", rest),
    };
    let (userinfo, hostport) = match netloc.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, netloc),
    };
    let (username, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((n, p)) => (MjValue::from(n), MjValue::from(p)),
            None => (MjValue::from(u), MjValue::from(())),
        },
        None => (MjValue::from(()), MjValue::from(())),
    };
    let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
        let (h, after) = r.split_once(']').unwrap_or((r, ""));
        (h.to_string(), after.strip_prefix(':').unwrap_or(""))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (hostport.to_string(), ""),
        }
    };
    let hostname = if host.is_empty() {
        MjValue::from(())
    } else {
        MjValue::from(host.to_ascii_lowercase())
    };
    let port = port.parse::<u16>().map_or(MjValue::from(()), MjValue::from);
    let fields: Vec<(&str, MjValue)> = vec![
        ("fragment", MjValue::from(fragment)),
        ("hostname", hostname),
        ("netloc", MjValue::from(netloc)),
        ("password", password),
        ("path", MjValue::from(path)),
        ("port", port),
        ("query", MjValue::from(query_text)),
        ("scheme", MjValue::from(scheme)),
        ("username", username),
    ];
    match query {
        None | Some("") => Ok(MjValue::from_iter(fields)),
        Some(q) => fields
            .into_iter()
            .find(|(k, _)| *k == q)
            .map(|(_, v)| v)
            .ok_or_else(|| invalid(format!("urlsplit: unknown URL component {q:?}"))),
    }
}

/// `urldecode`: Python's `unquote_plus`: `+` is a space, `%XX` a byte; bytes that are no
/// UTF-8 become U+FFFD, and a `%` not followed by two hex digits stays as it is.
fn urldecode(value: MjValue) -> String {
    let text = value_text(&value);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match (
                    bytes.get(i + 1).and_then(|&b| hex(b)),
                    bytes.get(i + 2).and_then(|&b| hex(b)),
                ) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `urlencode`: Jinja's: a string (or any scalar) percent-encoded with `/` kept; a dict,
/// or a list of pairs, as a query string (`k=v&k2=v2`, spaces as `+`).
fn urlencode(value: MjValue) -> Result<String, MjError> {
    fn quote(text: &str, for_query: bool) -> String {
        let mut out = String::with_capacity(text.len());
        for b in text.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                    out.push(b as char)
                }
                b'/' if !for_query => out.push('/'),
                b' ' if for_query => out.push('+'),
                other => out.push_str(&format!("%{other:02X}")),
            }
        }
        out
    }
    let pairs: Vec<(MjValue, MjValue)> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| {
                let v = value.get_item(&k).unwrap_or_default();
                (k, v)
            })
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => value
            .try_iter()?
            .map(|pair| {
                let mut parts = pair.try_iter()?;
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(k), Some(v), None) => Ok((k, v)),
                    _ => Err(invalid(format!(
                        "urlencode: {} is no (key, value) pair",
                        python_str(&pair)
                    ))),
                }
            })
            .collect::<Result<_, MjError>>()?,
        _ => return Ok(quote(&python_str(&value), false)),
    };
    Ok(pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                quote(&python_str(k), true),
                quote(&python_str(v), true)
            )
        })
        .collect::<Vec<_>>()
        .join("&"))
}

/// `path_join`: Python's `os.path.join` over a list (a string is returned as it is): an
/// absolute part starts the path again.
fn path_join(paths: MjValue) -> Result<String, MjError> {
    if let Some(s) = paths.as_str() {
        return Ok(s.to_string());
    }
    if !matches!(paths.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return Err(invalid(format!(
            "|path_join expects string or sequence, got <class '{}'> instead.",
            mj_type_name(&paths)
        )));
    }
    let mut joined = String::new();
    for part in paths.try_iter()? {
        let part = value_text(&part);
        if part.starts_with('/') || joined.is_empty() {
            joined = part;
        } else {
            if !joined.ends_with('/') {
                joined.push('/');
            }
            joined.push_str(&part);
        }
    }
    Ok(joined)
}

/// `unique(case_sensitive=None, attribute=None)`: Jinja's (strings compared ignoring case
/// unless `case_sensitive`, by `attribute` when given, first one kept), falling back as
/// Ansible does to plain equality when a key is a dict or list, which Jinja cannot hash,
/// unless the parameters ask for what that fallback cannot do.
fn unique(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let case_sensitive: Option<bool> = kwargs.get("case_sensitive")?;
    let attribute: Option<MjValue> = kwargs.get("attribute")?;
    kwargs.assert_all_used()?;
    let items: Vec<MjValue> = match value.kind() {
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => value.try_iter()?.collect(),
        ValueKind::String => value
            .as_str()
            .unwrap_or("")
            .chars()
            .map(|c| MjValue::from(c.to_string()))
            .collect(),
        _ => {
            return Err(invalid(format!(
                "'{}' object is not iterable",
                mj_type_name(&value)
            )));
        }
    };
    let key_of = |item: &MjValue| -> Result<MjValue, MjError> {
        let mut key = item.clone();
        if let Some(attribute) = &attribute {
            let path = value_text(attribute);
            for part in path.split('.') {
                key = match part.parse::<i64>() {
                    Ok(index) => key.get_item(&MjValue::from(index))?,
                    Err(_) => key.get_attr(part)?,
                };
            }
        }
        Ok(match key.as_str() {
            Some(s) if !case_sensitive.unwrap_or(false) => MjValue::from(s.to_lowercase()),
            _ => key,
        })
    };
    let mut seen: Vec<MjValue> = Vec::new();
    let mut kept: Vec<MjValue> = Vec::new();
    for item in &items {
        let key = key_of(item)?;
        if matches!(key.kind(), ValueKind::Map | ValueKind::Seq) {
            if case_sensitive == Some(false) || attribute.is_some() {
                return Err(invalid(
                    "Jinja2's unique filter failed and we cannot fall back to Ansible's version \
                     as it does not support the parameters supplied.",
                ));
            }
            let mut plain: Vec<MjValue> = Vec::new();
            for item in &items {
                if !plain.contains(item) {
                    plain.push(item.clone());
                }
            }
            return Ok(MjValue::from(plain));
        }
        if !seen.contains(&key) {
            seen.push(key);
            kept.push(item.clone());
        }
    }
    Ok(MjValue::from(kept))
}

/// Python's `str.center`: an odd padding puts the extra space on the right unless the
/// width is odd too.
fn center(value: MjValue, width: Option<usize>) -> String {
    let s = value_text(&value);
    let width = width.unwrap_or(80);
    let len = s.chars().count();
    if len >= width {
        return s;
    }
    let margin = width - len;
    let left = margin / 2 + (margin & width & 1);
    format!("{}{s}{}", " ".repeat(left), " ".repeat(margin - left))
}

/// `random`: an element of a list, or an int in `[start, end)` with `step`.
fn random(
    value: MjValue,
    start: Option<i64>,
    step: Option<i64>,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let start = kwargs.get::<Option<i64>>("start")?.or(start).unwrap_or(0);
    let step = kwargs
        .get::<Option<i64>>("step")?
        .or(step)
        .unwrap_or(1)
        .max(1);
    let seed: Option<MjValue> = kwargs.get("seed")?;
    kwargs.assert_all_used()?;
    let mut rng = Prng::new(seed.as_ref());
    if value.kind() == ValueKind::Number {
        let end = i64::try_from(value)?;
        let choices = ((end - start).max(0) + step - 1) / step;
        if choices == 0 {
            return Err(invalid("random: empty range"));
        }
        return Ok(MjValue::from(
            start + step * rng.below(choices as u64) as i64,
        ));
    }
    let all = items(&value)?;
    if all.is_empty() {
        return Err(invalid("random: cannot choose from an empty sequence"));
    }
    Ok(all[rng.below(all.len() as u64) as usize].clone())
}

fn shuffle(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let seed: Option<MjValue> = kwargs.get("seed")?;
    kwargs.assert_all_used()?;
    let mut rng = Prng::new(seed.as_ref());
    let mut all = items(&value)?;
    for i in (1..all.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        all.swap(i, j);
    }
    Ok(MjValue::from(all))
}
