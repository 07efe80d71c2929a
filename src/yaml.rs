//! YAML as Ansible reads it (YAML 1.1: `yes`/`no`/`on`/`off` booleans, `0644` octal),
//! parsed into a tree where every node knows its line and column. Loaders turn this tree
//! into validated types; nothing past the loaders sees raw YAML.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A position in a source file, 1-based as editors show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Keys in document order; duplicate keys are rejected by the parser.
    Map(Vec<(Node, Node)>),
}

/// The text of a file, kept so that errors can quote the offending line.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub text: Arc<str>,
    /// The file was vault-encrypted: its errors never quote its plaintext.
    pub secret: bool,
}

impl Source {
    /// Reads a file, decrypting it first when it is vault-encrypted (Ansible's loader
    /// decrypts every YAML file it reads: playbooks, vars files, inventories).
    pub fn read(path: &Path) -> Result<Source, LoadError> {
        let error = |message: String, help: Option<String>| LoadError {
            file: path.to_path_buf(),
            span: None,
            message,
            line_text: None,
            help,
        };
        let raw = std::fs::read(path)
            .map_err(|e| error(crate::vault::ReadError::Io(e.to_string()).to_string(), None))?;
        let secret = crate::vault::is_encrypted(&raw);
        let bytes = crate::vault::installed()
            .decrypt_if_encrypted(raw)
            .map_err(|vault| error(vault.to_string(), Some(vault.help())))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            error(
                "could not read the file: stream did not contain valid UTF-8".into(),
                None,
            )
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text: text.into(),
            secret,
        })
    }

    pub fn from_text(path: impl Into<PathBuf>, text: impl Into<Arc<str>>) -> Source {
        Source {
            path: path.into(),
            text: text.into(),
            secret: false,
        }
    }

    /// Parses the whole file as one YAML document (an empty file is `Null`).
    pub fn parse(&self) -> Result<Node, LoadError> {
        self.parse_with(DuplicateKeys::current())
    }

    fn parse_with(&self, duplicate_keys: DuplicateKeys) -> Result<Node, LoadError> {
        if self.text.trim().is_empty() {
            return Ok(Node {
                value: Value::Null,
                span: Span { line: 1, column: 1 },
            });
        }
        let options = serde_saphyr::options! {
            legacy_octal_numbers: true,
            strict_booleans: false,
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
            // PyYAML loads `!!binary` as bytes, whatever they hold; the text stays
            // base64 here rather than failing the file when it is not UTF-8.
            ignore_binary_tag_for_string: true,
        };
        DUPLICATES.with(|d| d.borrow_mut().clear());
        let parsed = serde_saphyr::from_str_with_options::<Spanned<Node>>(&self.text, options);
        let duplicates = DUPLICATES.with(|d| std::mem::take(&mut *d.borrow_mut()));
        match parsed {
            Ok(node) => {
                self.judge_duplicates(duplicates, duplicate_keys)?;
                let mut node = unspan(node);
                self.restore_pyyaml_booleans(&mut node);
                if self.text.contains("!vault") {
                    self.mark_inline_vault_values(&mut node);
                }
                if self.text.contains("!unsafe") {
                    self.mark_unsafe_values(&mut node, false);
                }
                Ok(node)
            }
            Err(e) => {
                let span = e.location().map(|l| Span {
                    line: l.line() as usize,
                    column: l.column() as usize,
                });
                // The library's message leads with its own "line N column M"; we print ours.
                let message = first_line_without_location(&e.to_string());
                Err(self.error(span, format!("YAML syntax error: {message}"), None))
            }
        }
    }

    /// Ansible's `DUPLICATE_YAML_DICT_KEY`: the last value was kept; warn (once per key
    /// and place), refuse, or say nothing.
    fn judge_duplicates(
        &self,
        duplicates: Vec<(String, Span)>,
        policy: DuplicateKeys,
    ) -> Result<(), LoadError> {
        for (key, span) in duplicates {
            let found = format!("Found duplicate mapping key {}.", python_quoted(&key));
            match policy {
                DuplicateKeys::Ignore => {}
                DuplicateKeys::Error => {
                    return Err(self.error(
                        Some(span),
                        format!("YAML parsing failed: {found}"),
                        Some("remove one of the two".into()),
                    ));
                }
                DuplicateKeys::Warn => {
                    let origin = format!("{}:{}:{}", self.path.display(), span.line, span.column);
                    LOAD_WARNINGS
                        .lock()
                        .expect("load warnings lock")
                        .push(format!(
                            "{found}\nOrigin: {origin}\n\nUsing last defined value only."
                        ));
                }
            }
        }
        Ok(())
    }

    /// The parser reads YAML 1.1 booleans case-blind and with `y`/`n`; Ansible's PyYAML
    /// knows only yes/no/on/off/true/false in three spellings. Anything else it reads is
    /// put back to the string that was written, so `n: 5` is a variable named "n".
    fn restore_pyyaml_booleans(&self, node: &mut Node) {
        match &mut node.value {
            Value::Bool(_) => {
                if let Some(token) = self.plain_token_at(node.span)
                    && crate::booleans::pyyaml(token).is_none()
                {
                    node.value = Value::Str(token.to_string());
                }
            }
            Value::Seq(items) => items
                .iter_mut()
                .for_each(|n| self.restore_pyyaml_booleans(n)),
            Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                self.restore_pyyaml_booleans(k);
                self.restore_pyyaml_booleans(v);
            }),
            _ => {}
        }
    }

    /// The parser drops application tags, so a `!vault` value is found again by its
    /// text (an envelope) and the tag written before it; it becomes the expression that
    /// decrypts it when a template reads it (see `crate::vault::inline_expression`).
    fn mark_inline_vault_values(&self, node: &mut Node) {
        match &mut node.value {
            Value::Str(s)
                if s.trim_start().starts_with(crate::vault::HEADER)
                    && self.tagged_vault_at(node.span) =>
            {
                let origin = format!(
                    "{}:{}:{}",
                    self.path.display(),
                    node.span.line,
                    node.span.column
                );
                *s = crate::vault::inline_expression(s, &origin);
            }
            Value::Seq(items) => items
                .iter_mut()
                .for_each(|n| self.mark_inline_vault_values(n)),
            Value::Map(entries) => entries
                .iter_mut()
                .for_each(|(_, v)| self.mark_inline_vault_values(v)),
            _ => {}
        }
    }

    /// Whether `!vault` (or `!vault-encrypted`) is the tag of the scalar at `span`.
    fn tagged_vault_at(&self, span: Span) -> bool {
        matches!(self.tag_at(span), Some("!vault" | "!vault-encrypted"))
    }

    /// The tag written before the node at `span`, if any: the last token before it, past
    /// a block scalar's `|`/`>` indicator.
    fn tag_at(&self, span: Span) -> Option<&str> {
        let offset = self.offset_of(span)?;
        let before = self.text[..offset].trim_end();
        let before = match before.rfind(|c: char| c.is_whitespace()) {
            Some(at) if before[at..].trim_start().starts_with(['|', '>']) => {
                before[..at].trim_end()
            }
            None if before.starts_with(['|', '>']) => "",
            _ => before,
        };
        let tag_start = before
            .rfind(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | '[' | '{' | ','))
            .map_or(0, |at| at + 1);
        let token = &before[tag_start..];
        token.starts_with('!').then_some(token)
    }

    /// `!unsafe` text is never templated, wherever it flows: the parser drops the tag, so
    /// it is found again before the node, and every string under it becomes an expression
    /// that gives the text back as it was written (see [`unsafe_expression`]). A scalar
    /// tagged itself is a string whatever it looks like, as PyYAML's str constructor makes it.
    fn mark_unsafe_values(&self, node: &mut Node, inherited: bool) {
        let tagged = inherited || self.tag_at(node.span) == Some("!unsafe");
        match &mut node.value {
            Value::Str(s) if tagged => *s = unsafe_expression(s),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) if tagged && !inherited => {
                if let Some(token) = self.plain_token_at(node.span) {
                    node.value = Value::Str(unsafe_expression(token));
                }
            }
            Value::Seq(items) => items
                .iter_mut()
                .for_each(|n| self.mark_unsafe_values(n, tagged)),
            Value::Map(entries) => entries
                .iter_mut()
                .for_each(|(_, v)| self.mark_unsafe_values(v, tagged)),
            _ => {}
        }
    }

    fn offset_of(&self, span: Span) -> Option<usize> {
        let mut line_start = 0;
        for _ in 1..span.line {
            line_start += self.text[line_start..].find('\n')? + 1;
        }
        let line = &self.text[line_start..];
        let column = line
            .char_indices()
            .nth(span.column.checked_sub(1)?)
            .map_or(line.len(), |(at, _)| at);
        Some(line_start + column)
    }

    fn plain_token_at(&self, span: Span) -> Option<&str> {
        let line = self.text.lines().nth(span.line.checked_sub(1)?)?;
        let start = line.char_indices().nth(span.column.checked_sub(1)?)?.0;
        let rest = &line[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}' | ':' | '#'))
            .unwrap_or(rest.len());
        Some(&rest[..end])
    }

    /// An error pointing into this file, quoting the line.
    pub fn error(
        &self,
        span: Option<Span>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> LoadError {
        let line_text = span
            .filter(|_| !self.secret)
            .and_then(|s| self.text.lines().nth(s.line.saturating_sub(1)))
            .map(str::to_string);
        LoadError {
            file: self.path.clone(),
            span,
            message: message.into(),
            line_text,
            help,
        }
    }
}

/// The template function an `!unsafe` string is carried as.
pub const UNSAFE_FUNCTION: &str = "__tp_unsafe";

/// The expression that renders to `text` untouched: the text goes hex-encoded, so no
/// quote, backslash or delimiter in it means anything to the template engine.
pub fn unsafe_expression(text: &str) -> String {
    let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{{{{ {UNSAFE_FUNCTION}('{hex}') }}}}")
}

/// The text an [`unsafe_expression`] carries (None if `hex` is not what it writes).
pub fn unsafe_text(hex: &str) -> Option<String> {
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

fn first_line_without_location(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or(msg);
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "line 4 column 5: while parsing ..." -> "while parsing ..."
    if first.starts_with("line ")
        && let Some((_, rest)) = first.split_once(": ")
    {
        return rest.to_string();
    }
    first.to_string()
}

/// A load-time error: what, where (file:line:column, with the line quoted) and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub file: PathBuf,
    pub span: Option<Span>,
    pub message: String,
    pub line_text: Option<String>,
    pub help: Option<String>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.span {
            Some(s) => write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                s.line,
                s.column,
                self.message
            )?,
            None => write!(f, "{}: {}", self.file.display(), self.message)?,
        }
        if let (Some(s), Some(text)) = (self.span, &self.line_text) {
            let gutter = s.line.to_string().len();
            write!(
                f,
                "\n{:gutter$} |\n{} | {}\n{:gutter$} | {:>col$}",
                "",
                s.line,
                text,
                "",
                "^",
                col = s.column.max(1)
            )?;
        }
        if let Some(help) = &self.help {
            write!(f, "\nhelp: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// A scalar as Ansible would stringify it (keys, free-form args, names).
    pub fn scalar_to_string(&self) -> Option<String> {
        match &self.value {
            Value::Null => Some(String::new()),
            Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(x) => Some(x.to_string()),
            Value::Str(s) => Some(s.clone()),
            Value::Seq(_) | Value::Map(_) => None,
        }
    }

    /// Looks up a key in a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    pub fn kind_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The name of the Python class PyYAML loads the node as, for Ansible's messages.
    pub fn python_class(&self) -> &'static str {
        match self.value {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Seq(_) => "list",
            Value::Map(_) => "dict",
        }
    }

    /// The node as plain data, for variables and module arguments.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(x) => serde_json::Number::from_f64(*x)
                .map(J::Number)
                .unwrap_or(J::Null),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.scalar_to_string().unwrap_or_default(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        // Only ever deserialized inside `Spanned`, which supplies the span.
        d.deserialize_any(NodeVisitor).map(|value| Node {
            value,
            span: Span::default(),
        })
    }
}

fn unspan(s: Spanned<Node>) -> Node {
    let loc = s.referenced;
    Node {
        value: s.value.value,
        span: Span {
            line: loc.line() as usize,
            column: loc.column() as usize,
        },
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        Ok(i64::try_from(u)
            .map(Value::Int)
            .unwrap_or(Value::Float(u as f64)))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
        Ok(Value::Float(x))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::Str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(unspan(item));
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(Node, Node)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<Spanned<Node>, Spanned<Node>>()? {
            let (k, v) = (unspan(k), unspan(v));
            // A repeated key keeps its first place and takes the later value, as a
            // Python dict does; whether that is allowed is `judge_duplicates`'s.
            if let Some(slot) = entries.iter_mut().find(|(key, _)| key.value == k.value) {
                let name = k.scalar_to_string().unwrap_or_default();
                DUPLICATES.with(|d| d.borrow_mut().push((name, k.span)));
                slot.1 = v;
                continue;
            }
            entries.push((k, v));
        }
        Ok(Value::Map(entries))
    }
}

/// What a YAML file with a repeated mapping key gets (`DUPLICATE_YAML_DICT_KEY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateKeys {
    Warn,
    Error,
    Ignore,
}

static DUPLICATE_POLICY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Warnings from loading YAML, for the run to show (see [`take_load_warnings`]).
static LOAD_WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

thread_local! {
    /// The repeated keys of the file being parsed, with where each repeat is.
    static DUPLICATES: std::cell::RefCell<Vec<(String, Span)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl DuplicateKeys {
    /// Ansible's setting's values (`warn` is its default).
    pub fn parse(text: &str) -> Option<DuplicateKeys> {
        match text.trim().to_ascii_lowercase().as_str() {
            "warn" => Some(DuplicateKeys::Warn),
            "error" => Some(DuplicateKeys::Error),
            "ignore" => Some(DuplicateKeys::Ignore),
            _ => None,
        }
    }

    /// Sets the policy for every file the run loads from now on.
    pub fn install(self) {
        DUPLICATE_POLICY.store(self as u8, std::sync::atomic::Ordering::Relaxed);
    }

    fn current() -> DuplicateKeys {
        match DUPLICATE_POLICY.load(std::sync::atomic::Ordering::Relaxed) {
            1 => DuplicateKeys::Error,
            2 => DuplicateKeys::Ignore,
            _ => DuplicateKeys::Warn,
        }
    }
}

/// A warning found while loading files (a reserved variable name...), for the run to show.
pub fn push_load_warning(text: String) {
    let mut warnings = LOAD_WARNINGS.lock().expect("load warnings lock");
    if !warnings.contains(&text) {
        warnings.push(text);
    }
}

/// Deprecations found while loading (a routed plugin's), in Ansible's words.
static LOAD_DEPRECATIONS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A deprecation found while loading, for the run to show (once).
pub fn push_load_deprecation(text: String) {
    let mut deprecations = LOAD_DEPRECATIONS.lock().expect("load deprecations lock");
    if !deprecations.contains(&text) {
        deprecations.push(text);
    }
}

/// The deprecations loading gave since the last call.
pub fn take_load_deprecations() -> Vec<String> {
    std::mem::take(&mut *LOAD_DEPRECATIONS.lock().expect("load deprecations lock"))
}

/// The warnings loading YAML gave since the last call.
pub fn take_load_warnings() -> Vec<String> {
    std::mem::take(&mut *LOAD_WARNINGS.lock().expect("load warnings lock"))
}

/// Python's `repr` of a string, as Ansible quotes a key.
fn python_quoted(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node {
        Source::from_text("t.yml", text).parse().expect("parses")
    }

    #[test]
    fn reads_yaml_1_1_booleans_and_octal() {
        let n = parse("a: yes\nb: no\nc: on\nd: Off\nmode: 0644\ns: '0644'\nn: 10\n");
        assert_eq!(n.get("a").unwrap().value, Value::Bool(true));
        assert_eq!(n.get("b").unwrap().value, Value::Bool(false));
        assert_eq!(n.get("c").unwrap().value, Value::Bool(true));
        assert_eq!(n.get("d").unwrap().value, Value::Bool(false));
        assert_eq!(n.get("mode").unwrap().value, Value::Int(0o644));
        assert_eq!(n.get("s").unwrap().value, Value::Str("0644".into()));
        assert_eq!(n.get("n").unwrap().value, Value::Int(10));
        let n = parse("y: n\nlist: [Y, tRue, True]\n");
        assert_eq!(n.get("y").unwrap().value, Value::Str("n".into()));
        let list: Vec<_> = n
            .get("list")
            .unwrap()
            .as_seq()
            .unwrap()
            .iter()
            .map(|n| n.value.clone())
            .collect();
        assert_eq!(
            list,
            vec![
                Value::Str("Y".into()),
                Value::Str("tRue".into()),
                Value::Bool(true)
            ]
        );
    }

    #[test]
    fn nodes_carry_line_and_column() {
        let n = parse("- hosts: all\n  tasks:\n    - copy:\n        dest: /x\n");
        let play = &n.as_seq().unwrap()[0];
        assert_eq!(play.span, Span { line: 1, column: 3 });
        let task = &play.get("tasks").unwrap().as_seq().unwrap()[0];
        let dest = task.get("copy").unwrap().get("dest").unwrap();
        assert_eq!(
            dest.span,
            Span {
                line: 4,
                column: 15
            }
        );
        let (key, _) = &task.as_map().unwrap()[0];
        assert_eq!(key.span, Span { line: 3, column: 7 });
    }

    #[test]
    fn syntax_error_names_file_line_and_quotes_it() {
        let err = Source::from_text(
            "site.yml",
            "- hosts: all\n  tasks:\n    - copy: {a: 1\n   b: [\n",
        )
        .parse()
        .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("site.yml:4:"), "{text}");
        assert!(text.contains("YAML syntax error"), "{text}");
        assert!(text.contains("4 |    b: ["), "{text}");
    }

    #[test]
    fn inline_vault_values_become_expressions_that_decrypt_them() {
        let n = parse(concat!(
            "a: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  3131\n",
            "b: !vault \"$ANSIBLE_VAULT;1.1;AES256 3232\"\n",
            "c:\n  - !vault |-\n      $ANSIBLE_VAULT;1.2;AES256;x\n      3333\n",
            "d: |\n  $ANSIBLE_VAULT;1.1;AES256\n  untagged\n",
        ));
        let text = |key: &str| n.get(key).unwrap().as_str().unwrap().to_string();
        assert_eq!(
            text("a"),
            "{{ __tp_vault_inline('$ANSIBLE_VAULT;1.1;AES256 3131', 't.yml:2:3') }}"
        );
        assert!(
            text("b").starts_with(
                "{{ __tp_vault_inline('$ANSIBLE_VAULT;1.1;AES256 3232', 't.yml:4:11')"
            )
        );
        let c = &n.get("c").unwrap().as_seq().unwrap()[0];
        assert!(
            c.as_str()
                .unwrap()
                .contains("'$ANSIBLE_VAULT;1.2;AES256;x 3333'")
        );
        assert_eq!(text("d"), "$ANSIBLE_VAULT;1.1;AES256\nuntagged\n");
    }

    #[test]
    fn unsafe_values_become_expressions_that_give_their_text_back() {
        let n = parse(concat!(
            "a: !unsafe b{{x}}\n",
            "b: !unsafe [ 'b{{x}}', 3]\n",
            "c: !unsafe\n  k: '{{ y }}'\n",
            "d: !unsafe yes\n",
            "e: '{{ plain }}'\n",
            "f:\n  - !unsafe |\n    {% raw %}'\\\n",
        ));
        let text = |node: &Node| {
            let s = node.as_str().unwrap();
            let hex = s
                .strip_prefix("{{ __tp_unsafe('")
                .and_then(|s| s.strip_suffix("') }}"))
                .unwrap_or_else(|| panic!("not marked: {s}"));
            unsafe_text(hex).unwrap()
        };
        assert_eq!(text(n.get("a").unwrap()), "b{{x}}");
        let b = n.get("b").unwrap().as_seq().unwrap();
        assert_eq!(text(&b[0]), "b{{x}}");
        assert_eq!(b[1].value, Value::Int(3));
        assert_eq!(text(n.get("c").unwrap().get("k").unwrap()), "{{ y }}");
        assert_eq!(text(n.get("d").unwrap()), "yes");
        assert_eq!(n.get("e").unwrap().as_str(), Some("{{ plain }}"));
        let f = &n.get("f").unwrap().as_seq().unwrap()[0];
        assert_eq!(text(f), "{% raw %}'\\\n");
    }

    #[test]
    fn a_binary_scalar_that_is_not_text_loads_as_its_base64() {
        let n = parse("b: !!binary |\n  R0lGODlh/wA=\n");
        assert_eq!(n.get("b").unwrap().as_str(), Some("R0lGODlh/wA=\n"));
    }

    #[test]
    fn empty_file_is_null() {
        assert!(parse("\n# nothing\n").is_null() || parse("\n").is_null());
    }

    #[test]
    fn converts_to_json() {
        let n = parse("a: [1, x, true]\nb: {c: 1.5}\n");
        assert_eq!(
            n.to_json(),
            serde_json::json!({"a": [1, "x", true], "b": {"c": 1.5}})
        );
    }

    /// A repeated key keeps the last value in the first key's place (Ansible's
    /// DUPLICATE_YAML_DICT_KEY: warn by default, error, ignore).
    #[test]
    fn duplicate_keys_keep_the_last_value_and_warn_or_refuse() {
        let source = Source::from_text("d.yml", "a: 1\nb: 2\na: 3\n");
        let node = source.parse_with(DuplicateKeys::Ignore).unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("a map")
        };
        let keys: Vec<_> = entries.iter().map(|(k, _)| k.value.clone()).collect();
        assert_eq!(keys, [Value::Str("a".into()), Value::Str("b".into())]);
        assert_eq!(node.get("a").unwrap().value, Value::Int(3));
        let e = source.parse_with(DuplicateKeys::Error).unwrap_err();
        assert_eq!(
            e.message,
            "YAML parsing failed: Found duplicate mapping key 'a'."
        );
        assert_eq!(e.span.map(|s| (s.line, s.column)), Some((3, 1)));
        source.parse_with(DuplicateKeys::Warn).unwrap();
        let warnings = take_load_warnings();
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("Found duplicate mapping key 'a'.\nOrigin: d.yml:3:1")),
            "{warnings:?}"
        );
    }
}
