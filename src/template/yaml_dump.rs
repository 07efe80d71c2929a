//! YAML as Ansible's `to_yaml`/`to_nice_yaml` (PyYAML's `dump`, keys sorted) write it:
//! users diff these files against what Ansible produced.

use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `to_nice_yaml` (`default_flow_style=False`): block style throughout.
    Block,
    /// `to_yaml` (`default_flow_style=None`): a collection of scalars only is written
    /// inline (`[1, 2]`, `{a: 1}`), the rest in block style.
    FlowLeaves,
}

pub fn dump(value: &Value, indent: usize, style: Style) -> String {
    let indent = indent.clamp(2, 9);
    let mut out = String::new();
    if style == Style::FlowLeaves && is_leaf_collection(value) {
        out.push_str(&flow(value));
        out.push('\n');
        return out;
    }
    match value {
        Value::Array(a) if !a.is_empty() => write_seq(&mut out, a, 0, indent, style),
        Value::Object(m) if !m.is_empty() => write_map(&mut out, m, 0, indent, style),
        scalar => {
            write_scalar(&mut out, scalar, indent);
            out.push('\n');
            // PyYAML ends a lone plain scalar document with an explicit end marker.
            if !matches!(scalar, Value::Array(_) | Value::Object(_)) {
                out.push_str("...\n");
            }
        }
    }
    out
}

fn is_leaf_collection(value: &Value) -> bool {
    let scalar = |v: &Value| match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => true,
    };
    match value {
        Value::Array(a) => !a.is_empty() && a.iter().all(scalar),
        Value::Object(m) => !m.is_empty() && m.values().all(scalar),
        _ => false,
    }
}

fn flow(value: &Value) -> String {
    match value {
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}: {}", flow_string(k), flow(&m[k])))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::String(s) => flow_string(s),
        other => scalar_text(other),
    }
}

/// Inside `[...]`/`{...}` the flow indicators need quoting too.
fn flow_string(s: &str) -> String {
    if s.contains([',', '[', ']', '{', '}']) && !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    string_text(s)
}

fn write_map(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    col: usize,
    indent: usize,
    style: Style,
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            pad(out, col);
        }
        out.push_str(&string_text(key));
        out.push(':');
        let value = &map[key];
        if style == Style::FlowLeaves && is_leaf_collection(value) {
            out.push(' ');
            out.push_str(&flow(value));
            out.push('\n');
            continue;
        }
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                pad(out, col + indent);
                write_map(out, m, col + indent, indent, style);
            }
            // PyYAML does not indent a list under a mapping key.
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                pad(out, col);
                write_seq(out, a, col, indent, style);
            }
            v => {
                out.push(' ');
                write_scalar(out, v, col + indent);
                out.push('\n');
            }
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], col: usize, indent: usize, style: Style) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            pad(out, col);
        }
        out.push('-');
        out.push_str(&" ".repeat(indent - 1));
        let inner = col + indent;
        if style == Style::FlowLeaves && is_leaf_collection(item) {
            out.push_str(&flow(item));
            out.push('\n');
            continue;
        }
        match item {
            Value::Object(m) if !m.is_empty() => write_map(out, m, inner, indent, style),
            Value::Array(a) if !a.is_empty() => write_seq(out, a, inner, indent, style),
            v => {
                write_scalar(out, v, inner);
                out.push('\n');
            }
        }
    }
}

fn pad(out: &mut String, col: usize) {
    out.extend(std::iter::repeat_n(' ', col));
}

/// PyYAML's `best_width`: past this column a plain or single-quoted scalar breaks its
/// line at the next single space.
const BEST_WIDTH: usize = 80;

/// A value scalar in block style, as PyYAML writes it: strings may fold onto lines
/// indented to `indent`, and line breaks make single-quoted text with blank lines.
fn write_scalar(out: &mut String, value: &Value, indent: usize) {
    let Value::String(s) = value else {
        out.push_str(&scalar_text(value));
        return;
    };
    let breaks = s.contains('\n');
    let special = s.chars().any(|c| c.is_control() && c != '\n');
    if special || s.contains(" \n") || s.contains("\n ") {
        out.push_str(&double_quoted(s));
    } else if !breaks && is_plain_safe(s) {
        write_folded(out, s, indent, false);
    } else {
        write_folded(out, s, indent, true);
    }
}

fn current_column(out: &str) -> usize {
    out[out.rfind('\n').map_or(0, |i| i + 1)..].chars().count()
}

/// PyYAML's `write_plain`/`write_single_quoted`: a lone space after the line passed
/// `BEST_WIDTH` becomes a line break (not at either end of quoted text); in quoted text a
/// line break is written as a blank line and `'` doubles.
fn write_folded(out: &mut String, text: &str, indent: usize, quoted: bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut column = current_column(out);
    let emit = |out: &mut String, piece: &[char], column: &mut usize| {
        out.extend(piece);
        *column += piece.len();
    };
    let newline_indent = |out: &mut String, column: &mut usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent));
        *column = indent;
    };
    if quoted {
        out.push('\'');
        column += 1;
    }
    let (mut spaces, mut breaks) = (false, false);
    let mut start = 0;
    for end in 0..=chars.len() {
        let ch = chars.get(end).copied();
        if spaces {
            if ch != Some(' ') {
                let lone = start + 1 == end;
                let inside = !quoted || (start != 0 && end != chars.len());
                if lone && column > BEST_WIDTH && inside {
                    newline_indent(out, &mut column);
                } else {
                    emit(out, &chars[start..end], &mut column);
                }
                start = end;
            }
        } else if breaks {
            if ch != Some('\n') {
                // One more break than the text has: a lone break would read as a space.
                out.push('\n');
                for _ in start..end {
                    out.push('\n');
                }
                out.extend(std::iter::repeat_n(' ', indent));
                column = indent;
                start = end;
            }
        } else if (ch.is_none() || matches!(ch, Some(' ' | '\n' | '\''))) && start < end {
            emit(out, &chars[start..end], &mut column);
            start = end;
        }
        if quoted && ch == Some('\'') {
            emit(out, &['\'', '\''], &mut column);
            start = end + 1;
        }
        if let Some(c) = ch {
            spaces = c == ' ';
            breaks = c == '\n';
        }
    }
    if quoted {
        out.push('\'');
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            _ => n.to_string(),
        },
        Value::String(s) => string_text(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn string_text(s: &str) -> String {
    if s.chars().any(|c| c.is_control()) {
        return double_quoted(s);
    }
    if is_plain_safe(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Would a plain scalar read back as this same string?
fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return false;
    }
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        let second = s.chars().nth(1);
        let dash_like = matches!(first, '-' | '?' | ':');
        if !(dash_like && second.is_some_and(|c| !c.is_whitespace())) {
            return false;
        }
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    !resolves_to_non_string(s)
}

/// YAML 1.1 implicit types, as PyYAML resolves plain scalars.
fn resolves_to_non_string(s: &str) -> bool {
    if crate::booleans::pyyaml(s).is_some()
        || matches!(
            s,
            "~" | "null"
                | "Null"
                | "NULL"
                | ".inf"
                | "-.inf"
                | "+.inf"
                | ".Inf"
                | ".INF"
                | ".nan"
                | ".NaN"
                | ".NAN"
                | "<<"
                | "="
        )
    {
        return true;
    }
    let digits = s.trim_start_matches(['-', '+']).replace('_', "");
    if digits.is_empty() {
        return false;
    }
    let numeric = digits.parse::<f64>().is_ok() && !digits.contains(['i', 'n', 'I', 'N'])
        || digits.starts_with("0x") && u64::from_str_radix(&digits[2..], 16).is_ok()
        || digits.starts_with("0b") && u64::from_str_radix(&digits[2..], 2).is_ok()
        || digits.split(':').count() > 1 && digits.split(':').all(|p| p.parse::<u32>().is_ok());
    // Dates (2001-12-14) are timestamps to PyYAML.
    let date =
        s.len() >= 8 && s.as_bytes()[..4].iter().all(u8::is_ascii_digit) && s.as_bytes()[4] == b'-';
    numeric || date
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_style_with_sorted_keys() {
        let v = json!({"b": [1, "two", {"x": null}], "a": {"k": "v: w", "e": ""}, "t": "yes"});
        assert_eq!(
            dump(&v, 2, Style::Block),
            "a:\n  e: ''\n  k: 'v: w'\nb:\n- 1\n- two\n- x: null\nt: 'yes'\n"
        );
        assert_eq!(
            dump(&v, 4, Style::Block),
            "a:\n    e: ''\n    k: 'v: w'\nb:\n-   1\n-   two\n-   x: null\nt: 'yes'\n"
        );
    }

    #[test]
    fn scalars_and_empties() {
        assert_eq!(dump(&json!("abc"), 2, Style::Block), "abc\n...\n");
        assert_eq!(
            dump(
                &json!({"a": [], "b": {}, "c": 1.0, "d": "1.5", "e": [{}]}),
                2,
                Style::Block
            ),
            "a: []\nb: {}\nc: 1.0\nd: '1.5'\ne:\n- {}\n"
        );
        assert_eq!(dump(&json!(["a\nb"]), 2, Style::Block), "- 'a\n\n  b'\n");
    }

    /// What PyYAML 6 (`yaml.dump(v, allow_unicode=True, default_flow_style=False)`)
    /// wrote for each.
    #[test]
    fn long_and_multi_line_strings_fold_as_pyyaml_folds_them() {
        let block = |v: Value| dump(&v, 2, Style::Block);
        assert_eq!(
            block(json!({"k": "line one\nline two\n"})),
            "k: 'line one\n\n  line two\n\n  '\n"
        );
        assert_eq!(block(json!({"m": "\nlead"})), "m: '\n\n  lead'\n");
        assert_eq!(block(json!({"x": "a \nb"})), "x: \"a \\nb\"\n");
        assert_eq!(block(json!({"t": "tab\there"})), "t: \"tab\\there\"\n");
        assert_eq!(
            block(json!({"long": "word ".repeat(25)})),
            "long: 'word word word word word word word word word word word word word word word\n  word word word word word word word word word word '\n"
        );
        assert_eq!(
            block(json!([format!("{}end", "word ".repeat(20))])),
            "- word word word word word word word word word word word word word word word word\n  word word word word end\n"
        );
        assert_eq!(
            block(
                json!({"q": "it's a quite long single quoted: value that should be folded at the eighty col mark yes"})
            ),
            "q: 'it''s a quite long single quoted: value that should be folded at the eighty col\n  mark yes'\n"
        );
        assert_eq!(
            block(json!({"a": {"b": {"c": format!("{} y z", "x".repeat(90))}}})),
            format!("a:\n  b:\n    c: {}\n      y z\n", "x".repeat(90))
        );
        assert_eq!(
            block(
                json!({"sp": "two  spaces  between words make no fold points here at all, nope, none at all really"})
            ),
            "sp: two  spaces  between words make no fold points here at all, nope, none at all\n  really\n"
        );
    }

    #[test]
    fn to_yaml_writes_collections_of_scalars_inline() {
        let v = json!({"b": [1, "x,y"], "a": {"k": "v"}, "c": [{"d": 1}, [2, 3]], "n": {"m": {"o": true}}});
        assert_eq!(
            dump(&v, 2, Style::FlowLeaves),
            "a: {k: v}\nb: [1, 'x,y']\nc:\n- {d: 1}\n- [2, 3]\nn:\n  m: {o: true}\n"
        );
        assert_eq!(dump(&json!({"a": 1}), 2, Style::FlowLeaves), "{a: 1}\n");
    }
}
