//! TOML as the `tomli_w` library writes it, which `ansible-inventory --toml` uses: a
//! table's plain values first, then its sub-tables as `[a.b]` sections separated by a
//! blank line, arrays one item a line with a trailing comma.

use serde_json::{Map, Value};

const INDENT: &str = "    ";
const MAX_LINE: usize = 100;

pub fn dumps(value: &Value) -> Result<String, String> {
    let Value::Object(table) = value else {
        return Err("TOML documents are tables".into());
    };
    let mut out = String::new();
    table_chunks(table, "", false, &mut out)?;
    Ok(out)
}

fn is_array_of_tables(value: &Value) -> bool {
    matches!(value, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object))
}

fn suits_inline(table: &Map<String, Value>, nest: usize) -> Result<bool, String> {
    let rendered = format!("{}{},", INDENT.repeat(nest), inline_table(table)?);
    Ok(rendered.len() <= MAX_LINE && !rendered.contains('\n'))
}

fn table_chunks(
    table: &Map<String, Value>,
    name: &str,
    inside_aot: bool,
    out: &mut String,
) -> Result<(), String> {
    let mut literals = Vec::new();
    let mut tables: Vec<(&String, &Map<String, Value>, bool)> = Vec::new();
    for (key, value) in table {
        match value {
            Value::Object(sub) => tables.push((key, sub, false)),
            Value::Array(items) if is_array_of_tables(value) => {
                let all_inline = items
                    .iter()
                    .filter_map(Value::as_object)
                    .map(|t| suits_inline(t, 0))
                    .collect::<Result<Vec<_>, _>>()?
                    .into_iter()
                    .all(|ok| ok);
                if all_inline {
                    literals.push((key, value));
                } else {
                    tables.extend(
                        items
                            .iter()
                            .filter_map(Value::as_object)
                            .map(|t| (key, t, true)),
                    );
                }
            }
            _ => literals.push((key, value)),
        }
    }
    let mut yielded = false;
    if inside_aot || (!name.is_empty() && (!literals.is_empty() || tables.is_empty())) {
        yielded = true;
        if inside_aot {
            out.push_str(&format!("[[{name}]]\n"));
        } else {
            out.push_str(&format!("[{name}]\n"));
        }
    }
    for (key, value) in literals {
        yielded = true;
        out.push_str(&format!("{} = {}\n", key_part(key), literal(value, 0)?));
    }
    for (key, sub, in_aot) in tables {
        if yielded {
            out.push('\n');
        } else {
            yielded = true;
        }
        let display = if name.is_empty() {
            key_part(key)
        } else {
            format!("{name}.{}", key_part(key))
        };
        table_chunks(sub, &display, in_aot, out)?;
    }
    Ok(())
}

fn key_part(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare { key.to_string() } else { string(key) }
}

fn literal(value: &Value, nest: usize) -> Result<String, String> {
    Ok(match value {
        Value::Null => {
            return Err("Object of type <class 'NoneType'> is not TOML serializable".into());
        }
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.is_nan() => "nan".into(),
            Some(f) if n.is_f64() && f.is_infinite() => {
                if f > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            }
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            _ => n.to_string(),
        },
        Value::String(s) => string(s),
        Value::Array(items) if items.is_empty() => "[]".into(),
        Value::Array(items) => {
            let inner = INDENT.repeat(nest + 1);
            let lines = items
                .iter()
                .map(|item| Ok(format!("{inner}{}", literal(item, nest + 1)?)))
                .collect::<Result<Vec<_>, String>>()?;
            format!("[\n{},\n{}]", lines.join(",\n"), INDENT.repeat(nest))
        }
        Value::Object(table) => inline_table(table)?,
    })
}

fn inline_table(table: &Map<String, Value>) -> Result<String, String> {
    if table.is_empty() {
        return Ok("{}".into());
    }
    let pairs = table
        .iter()
        .map(|(k, v)| Ok(format!("{} = {}", key_part(k), literal(v, 0)?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(format!("{{ {} }}", pairs.join(", ")))
}

fn string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_after_plain_values_and_arrays_one_item_a_line() {
        let value = serde_json::json!({
            "all": {"children": ["web"]},
            "web": {"hosts": {"h1": {"x": 1, "l": ["a", "b"]}, "h2": {}}},
        });
        assert_eq!(
            dumps(&value).unwrap(),
            "[all]\nchildren = [\n    \"web\",\n]\n\n[web.hosts.h1]\nx = 1\nl = [\n    \"a\",\n    \"b\",\n]\n\n[web.hosts.h2]\n"
        );
    }
}
