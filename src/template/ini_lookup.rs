//! The `ini` lookup: values from an INI file, read as Python's `configparser` reads it
//! (Ansible's plugin is built on it), or from a Java properties file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Value as MjValue};
use minijinja::{Error as MjError, ErrorKind};

use super::filters::python_string_repr as repr;
use super::pyregex::{Anchor, PyRegex};

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// The plugin's options, with Ansible's defaults; inline `key=value` words set them too.
#[derive(Debug, Clone)]
struct Options {
    kind: String,
    file: String,
    section: String,
    regex: bool,
    encoding: String,
    default: MjValue,
    case_sensitive: bool,
    allow_no_value: bool,
    interpolation: bool,
}

/// The option names inline `key=value` words may set.
const OPTION_NAMES: [&str; 9] = [
    "type",
    "file",
    "section",
    "re",
    "encoding",
    "default",
    "case_sensitive",
    "allow_no_value",
    "interpolation",
];

impl Options {
    fn from_kwargs(kwargs: &Kwargs) -> Result<Options, MjError> {
        let text = |name: &str, default: &str| -> Result<String, MjError> {
            Ok(kwargs
                .get::<Option<MjValue>>(name)?
                .map_or_else(|| default.to_string(), |v| text_of(&v)))
        };
        let flag = |name: &str| -> Result<Option<bool>, MjError> {
            kwargs
                .get::<Option<MjValue>>(name)?
                .map(|v| match v.as_str() {
                    Some(s) => parse_bool(name, s),
                    None => Ok(v.is_true()),
                })
                .transpose()
        };
        let options = Options {
            kind: text("type", "ini")?,
            file: text("file", "ansible.ini")?,
            section: text("section", "global")?,
            regex: flag("re")?.unwrap_or(false),
            encoding: text("encoding", "utf-8")?,
            default: kwargs
                .get::<Option<MjValue>>("default")?
                .unwrap_or_else(|| MjValue::from("")),
            case_sensitive: flag("case_sensitive")?.unwrap_or(false),
            allow_no_value: flag("allow_no_value")?
                .or(flag("allow_none")?)
                .unwrap_or(false),
            interpolation: flag("interpolation")?.unwrap_or(true),
        };
        // Ansible's plugin takes (and ignores) options it does not know.
        for name in kwargs.args() {
            let _: Option<MjValue> = kwargs.get(name)?;
        }
        options.check_kind()?;
        Ok(options)
    }

    fn check_kind(&self) -> Result<(), MjError> {
        match self.kind.as_str() {
            "ini" | "properties" => Ok(()),
            other => Err(error(format!(
                "Invalid value '{other}' for configuration option 'type', valid values are: ini, \
                 properties"
            ))),
        }
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), MjError> {
        match name {
            "type" => self.kind = value.to_string(),
            "file" => self.file = value.to_string(),
            "section" => self.section = value.to_string(),
            "re" => self.regex = parse_bool(name, value)?,
            "encoding" => self.encoding = value.to_string(),
            "default" => self.default = MjValue::from(value),
            "case_sensitive" => self.case_sensitive = parse_bool(name, value)?,
            "allow_no_value" => self.allow_no_value = parse_bool(name, value)?,
            "interpolation" => self.interpolation = parse_bool(name, value)?,
            other => return Err(error(format!("{} is not a valid option.", repr(other)))),
        }
        self.check_kind()
    }
}

fn text_of(value: &MjValue) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// Ansible's boolean option values.
fn parse_bool(name: &str, value: &str) -> Result<bool, MjError> {
    match value.to_ascii_lowercase().as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" => Ok(true),
        "n" | "no" | "off" | "0" | "false" | "f" | "" => Ok(false),
        _ => Err(error(format!(
            "Invalid value for option '{name}': '{value}' is not a valid boolean"
        ))),
    }
}

/// Ansible's split of an inline term (`value1 section=s file=f re=true`) into words:
/// text after `name=` of a known option belongs to that option up to the next one, the
/// rest to the key.
fn inline_params(term: &str) -> Vec<String> {
    let mut params: BTreeMap<&str, String> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut current = "key";
    for (i, phrase) in term.split_whitespace().enumerate() {
        if phrase.contains('=') {
            for name in OPTION_NAMES {
                if phrase.contains(&format!("{name}=")) {
                    current = name;
                }
            }
        }
        let slot = params.entry(current).or_default();
        if i == 0 || slot.is_empty() {
            *slot = phrase.to_string();
            order.push(current);
        } else {
            slot.push(' ');
            slot.push_str(phrase);
        }
    }
    order.iter().map(|name| params[name].clone()).collect()
}

/// `lookup('ini', key, file=..., section=..., ...)`. `locate` finds a file as Ansible's
/// search path does (the role's and playbook's `files/`, then themselves).
pub(super) fn ini(
    terms: &[String],
    kwargs: &Kwargs,
    locate: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Vec<MjValue>, MjError> {
    let mut options = Options::from_kwargs(kwargs)?;
    let mut out = Vec::new();
    for term in terms {
        let mut key = term.clone();
        if term.contains('=') || term.trim().contains(' ') {
            let params = inline_params(term);
            let mut key_given = false;
            for param in &params {
                if param.contains('=') {
                    let parts: Vec<&str> = param.split('=').collect();
                    let [name, value] = parts[..] else {
                        let shown: Vec<String> = params.iter().map(|p| repr(p)).collect();
                        return Err(error(format!(
                            "Could not use {} from [{}].",
                            repr(param),
                            shown.join(", ")
                        )));
                    };
                    if !OPTION_NAMES.contains(&name) {
                        return Err(error(format!("{} is not a valid option.", repr(name))));
                    }
                    options.set(name, value)?;
                } else if !key_given {
                    // The first word only: this form never took several keys.
                    key = param.clone();
                    key_given = true;
                }
            }
            if !key_given {
                return Err(error(format!(
                    "No key to look up was provided as first term within string inline \
                     options: {term}"
                )));
            }
        }
        let path = locate(&options.file).ok_or_else(|| {
            error(format!(
                "Invalid filename None. (Unable to find {} in expected paths.)",
                repr(&options.file)
            ))
        })?;
        let mut text = String::new();
        let mut section = options.section.clone();
        if options.kind == "properties" {
            text.push_str("[java_properties]\n");
            section = "java_properties".into();
        }
        text.push_str(&read_text(&path, &options.encoding)?);
        let parser = Parser {
            allow_no_value: options.allow_no_value,
            case_sensitive: options.case_sensitive,
        };
        let config = parser.parse(&text).map_err(|e| match e {
            ParseError::DuplicateOption(detail) => error(format!(
                "Duplicate option in {}: {detail}",
                repr(&options.file)
            )),
            ParseError::Other(message) => error(message),
        })?;
        let no_section = || {
            error(format!(
                "No section {} in {}.",
                repr(&section),
                repr(&options.file)
            ))
        };
        if options.regex {
            let pattern = PyRegex::new(&key, Anchor::Start, false, false)
                .map_err(|e| error(e.to_string()))?;
            for (name, raw) in config.items(&section).ok_or_else(no_section)? {
                if pattern.is_match(&name).map_err(|e| error(e.to_string()))? {
                    out.push(config.value(&section, &name, raw, options.interpolation)?);
                }
            }
        } else {
            let name = parser.option_name(&key);
            match config.get(&section, &name).ok_or_else(no_section)? {
                Some(raw) => {
                    let value = config.value(&section, &name, raw, options.interpolation)?;
                    if !value.is_none() {
                        out.push(value);
                    }
                }
                None => out.push(options.default.clone()),
            }
        }
    }
    Ok(out)
}

/// A file's text in a lookup's `encoding` (UTF-8, or Latin-1/-15).
pub(super) fn read_text(path: &Path, encoding: &str) -> Result<String, MjError> {
    let bytes = std::fs::read(path)
        .map_err(|e| error(format!("Unable to read {}: {e}", path.display())))?;
    let name = encoding.to_ascii_lowercase().replace(['-', '_'], "");
    match name.as_str() {
        "utf8" => String::from_utf8(bytes).map_err(|e| {
            error(format!(
                "{} could not be decoded as {encoding}: {e}",
                path.display()
            ))
        }),
        "latin1" | "iso88591" | "l1" => Ok(bytes.iter().map(|&b| b as char).collect()),
        "iso885915" | "latin9" => Ok(bytes.iter().map(|&b| latin9(b)).collect()),
        _ => Err(error(format!("unknown encoding: {encoding}"))),
    }
}

/// ISO-8859-15: Latin-1 but for eight code points (the euro sign, and letters).
fn latin9(b: u8) -> char {
    match b {
        0xA4 => '€',
        0xA6 => 'Š',
        0xA8 => 'š',
        0xB4 => 'Ž',
        0xB8 => 'ž',
        0xBC => 'Œ',
        0xBD => 'œ',
        0xBE => 'Ÿ',
        other => other as char,
    }
}

/// One option's raw value: `None` for a key without `=` (with `allow_no_value`).
type Raw = Option<String>;

/// What was read: `DEFAULT`'s options, and each section's, in file order.
#[derive(Debug, Default)]
struct Config {
    defaults: Vec<(String, Raw)>,
    sections: Vec<(String, Vec<(String, Raw)>)>,
}

const DEFAULT_SECTION: &str = "DEFAULT";

impl Config {
    fn section(&self, name: &str) -> Option<&Vec<(String, Raw)>> {
        if name == DEFAULT_SECTION {
            return Some(&self.defaults);
        }
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o)
    }

    /// The section's options over `DEFAULT`'s, in `configparser`'s order (defaults
    /// first); `None` for a missing section.
    fn items(&self, section: &str) -> Option<Vec<(String, Raw)>> {
        let own = self.section(section)?;
        let mut merged = self.defaults.clone();
        for (name, raw) in own {
            match merged.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = raw.clone(),
                None => merged.push((name.clone(), raw.clone())),
            }
        }
        Some(merged)
    }

    /// `None` for a missing section, `Some(None)` for a missing option.
    fn get(&self, section: &str, name: &str) -> Option<Option<Raw>> {
        let items = self.items(section)?;
        Some(items.into_iter().find(|(n, _)| n == name).map(|(_, r)| r))
    }

    /// The value as `configparser.get` returns it: with `BasicInterpolation` (`%(name)s`,
    /// `%%`) unless it is off.
    fn value(
        &self,
        section: &str,
        option: &str,
        raw: Raw,
        interpolation: bool,
    ) -> Result<MjValue, MjError> {
        let Some(raw) = raw else {
            return Ok(MjValue::from(()));
        };
        if !interpolation {
            return Ok(MjValue::from(raw));
        }
        let map = self.items(section).unwrap_or_default();
        let mut out = String::new();
        interpolate(&map, section, option, &raw, &raw, 1, &mut out)?;
        Ok(MjValue::from(out))
    }
}

/// `configparser`'s limit on nested `%(name)s` references.
const MAX_INTERPOLATION_DEPTH: usize = 10;

fn interpolate(
    map: &[(String, Raw)],
    section: &str,
    option: &str,
    raw: &str,
    mut rest: &str,
    depth: usize,
    out: &mut String,
) -> Result<(), MjError> {
    if depth > MAX_INTERPOLATION_DEPTH {
        return Err(error(format!(
            "Recursion limit exceeded in value substitution: option {} in section {} contains \
             an interpolation key which cannot be substituted in {MAX_INTERPOLATION_DEPTH} \
             steps. Raw value: {}",
            repr(option),
            repr(section),
            repr(raw)
        )));
    }
    while !rest.is_empty() {
        let Some(p) = rest.find('%') else {
            out.push_str(rest);
            return Ok(());
        };
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        if rest.starts_with("%%") {
            out.push('%');
            rest = &rest[2..];
        } else if rest.starts_with("%(") {
            let reference = rest[2..]
                .find(')')
                .filter(|&close| close > 0 && rest[2 + close + 1..].starts_with('s'))
                .map(|close| &rest[2..2 + close]);
            let Some(reference) = reference else {
                return Err(error(format!(
                    "bad interpolation variable reference {}",
                    repr(rest)
                )));
            };
            rest = &rest[2 + reference.len() + 2..];
            let name = reference.to_lowercase();
            let value = map
                .iter()
                .find(|(n, _)| n.to_lowercase() == name)
                .and_then(|(_, v)| v.clone())
                .ok_or_else(|| {
                    error(format!(
                        "Bad value substitution: option {} in section {} contains an \
                         interpolation key {} which is not a valid option name. Raw value: {}",
                        repr(option),
                        repr(section),
                        repr(&name),
                        repr(raw)
                    ))
                })?;
            if value.contains('%') {
                interpolate(map, section, option, raw, &value, depth + 1, out)?;
            } else {
                out.push_str(&value);
            }
        } else {
            return Err(error(format!(
                "'%' must be followed by '%' or '(', found: {}",
                repr(rest)
            )));
        }
    }
    Ok(())
}

/// An INI text read as a default `configparser.ConfigParser` reads it (setup's local
/// facts): `None` when configparser would raise.
pub struct ConfigParser(Config);

impl ConfigParser {
    pub fn read(text: &str) -> Option<ConfigParser> {
        let parser = Parser {
            allow_no_value: false,
            case_sensitive: false,
        };
        parser.parse(text).ok().map(ConfigParser)
    }

    /// `sections()`: DEFAULT left out.
    pub fn sections(&self) -> impl Iterator<Item = &str> {
        self.0.sections.iter().map(|(n, _)| n.as_str())
    }

    /// `options(section)`: the section's own, then DEFAULT's it lacks.
    pub fn options(&self, section: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .section(section)
            .map(|own| own.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default();
        for (name, _) in &self.0.defaults {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// `get(section, option)`, interpolated; the error is configparser's message.
    pub fn get(&self, section: &str, option: &str) -> Result<String, String> {
        let raw = self.0.get(section, option).flatten().flatten();
        self.0
            .value(section, option, raw, true)
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .map_err(|e| e.detail().unwrap_or_default().to_string())
    }
}

#[derive(Debug)]
enum ParseError {
    DuplicateOption(String),
    Other(String),
}

/// `configparser.ConfigParser`'s reading, with its defaults: `=` and `:` delimiters,
/// `#` and `;` whole-line comments, indented lines continuing a value, strict about
/// duplicates, option names lowercased unless `case_sensitive`.
struct Parser {
    allow_no_value: bool,
    case_sensitive: bool,
}

impl Parser {
    fn option_name(&self, name: &str) -> String {
        if self.case_sensitive {
            name.to_string()
        } else {
            name.to_lowercase()
        }
    }

    fn parse(&self, text: &str) -> Result<Config, ParseError> {
        let mut config = Config::default();
        // Where the current section's options go: None before any header; Some(None) for
        // DEFAULT, Some(Some(i)) for a section.
        let mut current: Option<Option<usize>> = None;
        let mut option: Option<String> = None;
        let mut indent_level = 0usize;
        let mut seen_sections: Vec<String> = Vec::new();
        let mut seen_options: Vec<(String, String)> = Vec::new();
        let mut bad_lines: Vec<String> = Vec::new();
        let mut continued: BTreeMap<(Option<usize>, String), Vec<String>> = BTreeMap::new();
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let lineno = index + 1;
            let comment = ["#", ";"].iter().any(|p| line.trim().starts_with(p));
            let value = if comment { "" } else { line.trim() };
            if value.is_empty() {
                // An empty line belongs to the value being read, unless it was a comment.
                if !comment
                    && let (Some(at), Some(name)) = (current, &option)
                    && let Some(lines) = continued.get_mut(&(at, name.clone()))
                {
                    lines.push(String::new());
                }
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if let (Some(at), Some(name)) = (current, &option)
                && indent > indent_level
                && let Some(lines) = continued.get_mut(&(at, name.clone()))
            {
                lines.push(value.to_string());
                continue;
            }
            indent_level = indent;
            if let Some(header) = section_header(value) {
                let section = header.to_string();
                if header == DEFAULT_SECTION {
                    current = Some(None);
                } else if let Some(i) = config.sections.iter().position(|(n, _)| *n == section) {
                    if seen_sections.contains(&section) {
                        return Err(ParseError::Other(format!(
                            "While reading from '<???>' [line {lineno:2}]: section {} already \
                             exists",
                            repr(&section)
                        )));
                    }
                    current = Some(Some(i));
                } else {
                    config.sections.push((section.clone(), Vec::new()));
                    current = Some(Some(config.sections.len() - 1));
                }
                seen_sections.push(section);
                option = None;
                continue;
            }
            let Some(at) = current else {
                return Err(ParseError::Other(format!(
                    "File contains no section headers.\nfile: '<???>', line: {lineno}\n{}",
                    repr(line)
                )));
            };
            let Some((name, raw)) = self.option_line(value) else {
                bad_lines.push(format!("\n\t[line {lineno:2}]: {}", repr(line)));
                continue;
            };
            let name = self.option_name(&name);
            let section_name = match at {
                None => DEFAULT_SECTION.to_string(),
                Some(i) => config.sections[i].0.clone(),
            };
            if seen_options.contains(&(section_name.clone(), name.clone())) {
                return Err(ParseError::DuplicateOption(format!(
                    "While reading from '<???>' [line {lineno:2}]: option {} in section {} \
                     already exists",
                    repr(&name),
                    repr(&section_name)
                )));
            }
            seen_options.push((section_name, name.clone()));
            let options = match at {
                None => &mut config.defaults,
                Some(i) => &mut config.sections[i].1,
            };
            options.retain(|(n, _)| *n != name);
            options.push((name.clone(), None));
            match raw {
                Some(raw) => {
                    continued.insert((at, name.clone()), vec![raw]);
                }
                None => {
                    continued.remove(&(at, name.clone()));
                }
            }
            option = Some(name);
        }
        if !bad_lines.is_empty() {
            return Err(ParseError::Other(format!(
                "Source contains parsing errors: '<???>'{}",
                bad_lines.concat()
            )));
        }
        // Values are their lines joined, without the empty lines at their end.
        for ((at, name), lines) in continued {
            let joined = lines.join("\n").trim_end().to_string();
            let options = match at {
                None => &mut config.defaults,
                Some(i) => &mut config.sections[i].1,
            };
            if let Some(slot) = options.iter_mut().find(|(n, _)| *n == name) {
                slot.1 = Some(joined);
            }
        }
        Ok(config)
    }

    /// `name = value` / `name: value` (the first delimiter splits), or a bare `name`
    /// with `allow_no_value`.
    fn option_line(&self, value: &str) -> Option<(String, Raw)> {
        match value.find(['=', ':']) {
            Some(at) => {
                let name = value[..at].trim_end();
                (!name.is_empty())
                    .then(|| (name.to_string(), Some(value[at + 1..].trim().to_string())))
            }
            None if self.allow_no_value => Some((value.to_string(), None)),
            None => None,
        }
    }
}

/// `[name]`: the text between the first `[` and the last `]` (configparser's
/// `\[(?P<header>.+)\]`, matched at the start of the line).
fn section_header(value: &str) -> Option<&str> {
    let rest = value.strip_prefix('[')?;
    let close = rest.rfind(']')?;
    (close > 0).then(|| &rest[..close])
}

#[cfg(test)]
mod unit {
    use super::*;

    fn parse(text: &str, allow_no_value: bool, case_sensitive: bool) -> Config {
        Parser {
            allow_no_value,
            case_sensitive,
        }
        .parse(text)
        .unwrap()
    }

    fn get(config: &Config, section: &str, name: &str) -> Option<String> {
        let raw = config.get(section, name).unwrap()?;
        let value = config.value(section, name, raw, true).unwrap();
        Some(value.as_str().unwrap_or("None").to_string())
    }

    #[test]
    fn reads_sections_defaults_continuations_and_comments() {
        let config = parse(
            "[DEFAULT]\nbase = /srv\n[app]\n# comment\nPath: %(base)s/app\nlong = one\n  two\n\n  three\n\nnext=1\n",
            false,
            false,
        );
        assert_eq!(get(&config, "app", "path").as_deref(), Some("/srv/app"));
        assert_eq!(
            get(&config, "app", "long").as_deref(),
            Some("one\ntwo\n\nthree")
        );
        assert_eq!(get(&config, "app", "next").as_deref(), Some("1"));
        assert_eq!(get(&config, "app", "base").as_deref(), Some("/srv"));
        assert_eq!(get(&config, "app", "missing"), None);
        assert!(config.get("nope", "x").is_none());
        let names: Vec<String> = config
            .items("app")
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["base", "path", "long", "next"]);
    }

    #[test]
    fn refuses_what_configparser_refuses() {
        let strict = Parser {
            allow_no_value: false,
            case_sensitive: false,
        };
        match strict.parse("[s]\nname = a\nNAME = b\n") {
            Err(ParseError::DuplicateOption(m)) => assert_eq!(
                m,
                "While reading from '<???>' [line  3]: option 'name' in section 's' already exists"
            ),
            other => panic!("{other:?}"),
        }
        match strict.parse("[s]\nflag\n") {
            Err(ParseError::Other(m)) => {
                assert_eq!(
                    m,
                    "Source contains parsing errors: '<???>'\n\t[line  2]: 'flag\\n'"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(strict.parse("a = 1\n"), Err(ParseError::Other(m)) if m.starts_with("File contains no section headers."))
        );
        let sensitive = parse("[s]\nname = a\nNAME = b\nflag\n", true, true);
        assert_eq!(get(&sensitive, "s", "NAME").as_deref(), Some("b"));
        assert_eq!(sensitive.get("s", "flag").unwrap(), Some(None));
    }

    #[test]
    fn interpolation_as_basic_interpolation() {
        let config = parse("[g]\nx = 50%%\ny = run %u\nz = %(nope)s\n", false, false);
        assert_eq!(get(&config, "g", "x").as_deref(), Some("50%"));
        let raw = config.get("g", "y").unwrap().unwrap();
        assert_eq!(
            config
                .value("g", "y", raw.clone(), true)
                .unwrap_err()
                .detail(),
            Some("'%' must be followed by '%' or '(', found: '%u'")
        );
        assert_eq!(
            config.value("g", "y", raw, false).unwrap().as_str(),
            Some("run %u")
        );
        let raw = config.get("g", "z").unwrap().unwrap();
        assert!(
            config
                .value("g", "z", raw, true)
                .unwrap_err()
                .to_string()
                .contains("contains an interpolation key 'nope' which is not a valid option name")
        );
    }

    #[test]
    fn inline_terms_split_as_ansible_does() {
        assert_eq!(
            inline_params("value[1-2]        section=value_section file=lookup.ini re=true"),
            [
                "value[1-2]",
                "section=value_section",
                "file=lookup.ini",
                "re=true"
            ]
        );
        assert_eq!(
            inline_params("field.with.space  type=properties  file=my file.properties"),
            [
                "field.with.space",
                "type=properties",
                "file=my file.properties"
            ]
        );
        assert_eq!(
            inline_params("file=lookup.ini value1"),
            ["file=lookup.ini value1"]
        );
    }
}
