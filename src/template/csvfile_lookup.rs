//! The `csvfile` lookup: a column of the row whose key column holds the search key, the
//! file read as Python's `csv` module reads the `excel` dialect.

use std::path::PathBuf;

use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Error as MjError, ErrorKind};

use super::filters::python_string_repr as repr;

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

#[derive(Debug, Clone)]
struct Options {
    col: i64,
    keycol: i64,
    default: Option<MjValue>,
    delimiter: String,
    file: String,
    encoding: String,
}

impl Options {
    fn from_kwargs(kwargs: &Kwargs) -> Result<Options, MjError> {
        let text = |name: &str, default: &str| -> Result<String, MjError> {
            Ok(kwargs
                .get::<Option<MjValue>>(name)?
                .map_or_else(|| default.to_string(), |v| text_of(&v)))
        };
        let int = |name: &str, default: i64| -> Result<i64, MjError> {
            match kwargs.get::<Option<MjValue>>(name)? {
                None => Ok(default),
                Some(v) if v.kind() == ValueKind::Number => i64::try_from(v),
                Some(v) => parse_int(name, &text_of(&v)),
            }
        };
        let options = Options {
            col: int("col", 1)?,
            keycol: int("keycol", 0)?,
            default: kwargs.get("default")?,
            delimiter: text("delimiter", "TAB")?,
            file: text("file", "ansible.csv")?,
            encoding: text("encoding", "utf-8")?,
        };
        // Ansible's plugin takes (and ignores) options it does not know.
        for name in kwargs.args() {
            let _: Option<MjValue> = kwargs.get(name)?;
        }
        Ok(options)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), MjError> {
        match name {
            "col" => self.col = parse_int(name, value)?,
            "keycol" => self.keycol = parse_int(name, value)?,
            "default" => self.default = Some(MjValue::from(value)),
            "delimiter" => self.delimiter = value.to_string(),
            "file" => self.file = value.to_string(),
            "encoding" => self.encoding = value.to_string(),
            other => return Err(error(format!("{} is not a valid option", repr(other)))),
        }
        Ok(())
    }
}

fn text_of(value: &MjValue) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

fn parse_int(name: &str, value: &str) -> Result<i64, MjError> {
    value.trim().parse().map_err(|_| {
        error(format!(
            "Config '{name}' for 'csvfile' lookup plugin from 'Direct' has an invalid value: \
             Invalid value provided for 'int': {}",
            repr(value)
        ))
    })
}

/// `lookup('csvfile', key, file=..., delimiter=..., col=...)`, or the older inline form
/// (`'key file=f delimiter=, col=2'`). `locate` finds a file on Ansible's search path.
pub(super) fn csvfile(
    terms: &[String],
    kwargs: &Kwargs,
    locate: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Vec<MjValue>, MjError> {
    let mut options = Options::from_kwargs(kwargs)?;
    if terms.is_empty() {
        return Err(error("Search key is required but was not found"));
    }
    let mut out = Vec::new();
    for term in terms {
        let parsed = crate::kv_args::parse_kv(term, None);
        if parsed.raw.is_empty() {
            return Err(error("Search key is required but was not found"));
        }
        for (name, value) in &parsed.pairs {
            options.set(name, value)?;
        }
        // `TAB` (the default) and a written `\t` both mean a tab.
        let delimiter = match options.delimiter.as_str() {
            "TAB" | "\\t" => "\t".to_string(),
            other => other.to_string(),
        };
        let mut chars = delimiter.chars();
        let (Some(delimiter), None) = (chars.next(), chars.next()) else {
            return Err(error(format!(
                "\"delimiter\" must be a 1-character string, got {}",
                repr(&delimiter)
            )));
        };
        let path = locate(&options.file).ok_or_else(|| {
            error(format!(
                "expected str, bytes or os.PathLike object, not NoneType (Unable to find {} in \
                 expected paths)",
                repr(&options.file)
            ))
        })?;
        let text = super::ini_lookup::read_text(&path, &options.encoding)?;
        let column = |row: &[String], index: i64| -> Result<String, MjError> {
            let at = if index < 0 {
                row.len() as i64 + index
            } else {
                index
            };
            usize::try_from(at)
                .ok()
                .and_then(|i| row.get(i))
                .cloned()
                .ok_or_else(|| error("list index out of range"))
        };
        let mut found = None;
        for row in read_rows(&text, delimiter) {
            if !row.is_empty() && column(&row, options.keycol)? == parsed.raw {
                found = Some(MjValue::from(column(&row, options.col)?));
                break;
            }
        }
        match found.or_else(|| options.default.clone()) {
            Some(value) if value.kind() == ValueKind::Seq => out.extend(value.try_iter()?),
            Some(value) if !value.is_none() => out.push(value),
            _ => {}
        }
    }
    Ok(out)
}

/// The rows of a CSV text in Python's `excel` dialect: `"` quotes a field (`""` inside
/// is one quote, and delimiters and line breaks are kept), lines end in `\n`, `\r\n` or
/// `\r`, and an empty line is an empty row.
fn read_rows(text: &str, delimiter: char) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    // A field has started (so a line ending ends a row holding it).
    let mut started = false;
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                other => field.push(other),
            }
            continue;
        }
        match c {
            // A quote opens a quoted field only at the field's start.
            '"' if field.is_empty() => {
                quoted = true;
                started = true;
            }
            c if c == delimiter => {
                row.push(std::mem::take(&mut field));
                started = true;
            }
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                if started || !field.is_empty() {
                    row.push(std::mem::take(&mut field));
                }
                rows.push(std::mem::take(&mut row));
                started = false;
            }
            other => {
                field.push(other);
                started = true;
            }
        }
    }
    if started || !field.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod unit {
    use super::read_rows;

    #[test]
    fn reads_the_excel_dialect() {
        assert_eq!(
            read_rows(
                "a,b\r\n\"x, \"\"y\"\"\",z\n\nq,\"multi\nline\"\nplain\"quote,1",
                ','
            ),
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["x, \"y\"".into(), "z".into()],
                vec![],
                vec!["q".into(), "multi\nline".into()],
                vec!["plain\"quote".into(), "1".into()],
            ]
        );
        assert_eq!(
            read_rows("k\tv\t\n", '\t'),
            vec![vec!["k".to_string(), "v".into(), "".into()]]
        );
    }
}
