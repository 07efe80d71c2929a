//! JSON written as Python's `json.dumps` writes it.

use serde_json::Value;

/// JSON as Python's `json.dumps` writes it (", " and ": " separators; with an indent,
/// "," at line ends), since Ansible's to_json output ends up in users' files.
pub fn python_json(value: &Value, indent: Option<usize>, sort_keys: bool) -> String {
    let mut out = String::new();
    write_python_json(&mut out, value, indent, sort_keys, 0);
    out
}

fn write_python_json(
    out: &mut String,
    value: &Value,
    indent: Option<usize>,
    sort_keys: bool,
    depth: usize,
) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * depth));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                write_python_json(out, item, indent, sort_keys, depth + 1);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            let mut entries: Vec<_> = map.iter().collect();
            if sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                out.push_str(&python_json_string(k));
                out.push_str(": ");
                write_python_json(out, v, indent, sort_keys, depth + 1);
            }
            newline(out, depth);
            out.push('}');
        }
        Value::String(s) => out.push_str(&python_json_string(s)),
        other => out.push_str(&other.to_string()),
    }
}

/// Python escapes every non-ASCII character (`ensure_ascii=True`).
fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
